//! [`ProgramCache`], what every cache is, and the compiles that go through one
//! ([`compile_cached`], [`compile_cached_with_headers`]).

use crate::code::cache::key::{ProgramCacheKey, make_program_cache_key};
use crate::code::object::ObjectCode;
use crate::error::Result;
use crate::{
    code::compile::options::ProgramOptions, code::compile::program::Program,
    code::compile::program::SourceCode, code::compile::target::CompileTarget,
};

/// A store of compiled programs by [`ProgramCacheKey`] (`cuda.core`'s
/// `ProgramCacheResource`).
///
/// Implementations are shared between threads (`Send + Sync`) and take `&self`.
#[doc(alias = "ProgramCacheResource")]
pub trait ProgramCache: Send + Sync {
    /// The entry stored under `key`, or `None` (a miss).
    ///
    /// # Errors
    /// The store's errors (I/O for [`FileProgramCache`](crate::cache::FileProgramCache)); a damaged entry is a
    /// miss, not an error.
    fn get(&self, key: &ProgramCacheKey) -> Result<Option<ObjectCode>>;

    /// Stores `code` under `key`, replacing any entry there.
    ///
    /// # Errors
    /// The store's errors.
    fn put(&self, key: &ProgramCacheKey, code: &ObjectCode) -> Result<()>;

    /// Removes the entry under `key`; whether there was one.
    ///
    /// # Errors
    /// The store's errors.
    fn remove(&self, key: &ProgramCacheKey) -> Result<bool>;

    /// Removes every entry.
    ///
    /// # Errors
    /// The store's errors.
    fn clear(&self) -> Result<()>;

    /// Whether an entry is stored under `key` (by [`get`](Self::get)).
    ///
    /// # Errors
    /// As [`get`](Self::get).
    fn contains(&self, key: &ProgramCacheKey) -> Result<bool> {
        Ok(self.get(key)?.is_some())
    }
}

/// Compiles `code` for `target` through `cache`: the cached [`ObjectCode`] when
/// there is one, else a [`Program`] compilation whose result is stored.
///
/// The key is [`make_program_cache_key`] with no extra headers; see
/// [`compile_cached_with_headers`] for programs that include files that may
/// change.
///
/// # Errors
/// As [`make_program_cache_key`], [`Program::new`] and [`Program::compile`]; the
/// cache's errors from [`get`](ProgramCache::get) and
/// [`put`](ProgramCache::put).
pub fn compile_cached(
    cache: &dyn ProgramCache,
    code: SourceCode<'_>,
    options: ProgramOptions,
    target: CompileTarget,
    name_expressions: &[&str],
) -> Result<ObjectCode> {
    compile_cached_with_headers(cache, code, options, target, name_expressions, &[])
}

/// [`compile_cached`] with `extra_headers` (name, contents) in the key: the
/// contents of the files the program includes, so that changing one misses.
///
/// # Errors
/// As [`compile_cached`].
pub fn compile_cached_with_headers(
    cache: &dyn ProgramCache,
    code: SourceCode<'_>,
    options: ProgramOptions,
    target: CompileTarget,
    name_expressions: &[&str],
    extra_headers: &[(&str, &[u8])],
) -> Result<ObjectCode> {
    // On the timeline (a profiler attached): the lookup, and the compile on a miss.
    let domain = cudars_nvtx::Domain::cuda_rs();
    let key = make_program_cache_key(&code, &options, target, name_expressions, extra_headers)?;
    if let Some(hit) = {
        let _r = domain.range(c"program cache: lookup");
        cache.get(&key)?
    } {
        // A store that returns another kind of code than the target is not
        // trusted: compile (and replace the entry).
        if hit.code_type() == target.code_type() {
            domain.mark(c"program cache: hit");
            return Ok(hit);
        }
    }
    let _r = domain.range(c"program cache: compile (miss)");
    let object = Program::new(code, options)?.compile(target, name_expressions)?;
    cache.put(&key, &object)?;
    Ok(object)
}
