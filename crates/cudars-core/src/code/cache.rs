//! Caching compiled programs, in memory or on disk (the counterpart of
//! `cuda.core.utils`' `make_program_cache_key`, `ProgramCacheResource`,
//! `InMemoryProgramCache` and `FileStreamProgramCache`).
//!
//! * [`make_program_cache_key`] hashes everything that decides what a compilation
//!   produces (the compiler and its version, the target, the options, the source,
//!   the name expressions, the headers) into a [`ProgramCacheKey`].
//! * [`ProgramCache`] is what a cache does: [`get`](ProgramCache::get) and
//!   [`put`](ProgramCache::put) [`ObjectCode`] by key.
//! * [`InMemoryProgramCache`] keeps entries in this process, optionally bounded,
//!   evicting the least recently used.
//! * [`FileProgramCache`] keeps one file per entry in a directory, shared safely by
//!   any number of processes: writes are atomic, and a damaged file is a miss.
//! * [`compile_cached`] puts it together: a hit, or a compilation that is stored.
//!
//! ```no_run
//! use cudars_core::cache::{FileProgramCache, compile_cached};
//! use cudars_core::{CompileTarget, ProgramOptions, SourceCode};
//!
//! let cache = FileProgramCache::open_default()?;
//! let options = ProgramOptions { arch: Some("sm_90".into()), ..Default::default() };
//! let src = "extern \"C\" __global__ void k(float* p) { p[threadIdx.x] *= 2.0f; }";
//! // Compiles the first time (in any process using this cache); a file read after.
//! let cubin = compile_cached(&cache, SourceCode::Cxx(src), options, CompileTarget::Cubin, &[])?;
//! # Ok::<(), cudars_core::Error>(())
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::PoisonError;
use std::time::{Duration, SystemTime};

use sha2::{Digest as _, Sha256};

use crate::code::object::{CodeType, ObjectCode};
use crate::error::{Error, Result};
use crate::sync::{Mutex, MutexGuard};
use crate::{
    code::compile::options::ProgramOptions, code::compile::program::CompileTarget,
    code::compile::program::Program, code::compile::program::SourceCode,
};

/// The first field hashed into every key: names the encoding.
const KEY_FORMAT: &[u8] = b"cuda-rs program cache key";
/// The version of the key encoding; changing the encoding changes it, so old keys
/// never match new entries.
const KEY_VERSION: u32 = 1;
/// The name a program gets when [`ProgramOptions::name`] is `None` (as
/// [`Program`] names it).
const DEFAULT_PROGRAM_NAME: &str = "default_program";

/// The identity of one compilation: a SHA-256 digest made by
/// [`make_program_cache_key`].
///
/// Displays (and [parses](FromStr)) as 64 lowercase hex digits, which
/// [`FileProgramCache`] uses as the file name.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProgramCacheKey([u8; 32]);

impl ProgramCacheKey {
    /// A key from its 32 bytes (for caches keyed by something other than
    /// [`make_program_cache_key`]).
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The key's 32 bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for ProgramCacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for ProgramCacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProgramCacheKey({self})")
    }
}

impl FromStr for ProgramCacheKey {
    type Err = Error;

    /// Parses 64 hex digits (either case).
    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            Error::invalid(
                "parsing a program cache key",
                format!("{s:?} is not 64 hex digits"),
            )
        };
        // `from_str_radix` alone would take a sign (`+f`): only hex digits pass.
        if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        // Every byte is a hex digit now, so decoding cannot fail.
        let nibble = |b: u8| match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => b - b'A' + 10,
        };
        let mut out = [0u8; 32];
        for (byte, pair) in out.iter_mut().zip(s.as_bytes().chunks_exact(2)) {
            *byte = (nibble(pair[0]) << 4) | nibble(pair[1]);
        }
        Ok(Self(out))
    }
}

/// SHA-256 over length-prefixed fields, so that no two different field
/// sequences hash the same bytes.
struct KeyHasher(Sha256);

impl KeyHasher {
    fn len(&mut self, n: usize) {
        self.0.update((n as u64).to_le_bytes());
    }

    fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.0.update(b);
    }

    /// A labelled field.
    fn field(&mut self, label: &str, value: &[u8]) {
        self.bytes(label.as_bytes());
        self.bytes(value);
    }

    /// A labelled list, its length first.
    fn list<'a>(&mut self, label: &str, items: impl ExactSizeIterator<Item = &'a [u8]>) {
        self.bytes(label.as_bytes());
        self.len(items.len());
        for item in items {
            self.bytes(item);
        }
    }

    /// A labelled list of (name, contents) pairs.
    fn pairs<'a>(
        &mut self,
        label: &str,
        items: impl ExactSizeIterator<Item = (&'a [u8], &'a [u8])>,
    ) {
        self.bytes(label.as_bytes());
        self.len(items.len());
        for (name, contents) in items {
            self.bytes(name);
            self.bytes(contents);
        }
    }
}

/// The linker that [`Program::compile`] uses for a cubin from PTX or NVVM IR
/// (nvJitLink, or the driver's), with its version.
fn linker_identity() -> Result<String> {
    use cudars_bindings::{driver, nvjitlink};
    if nvjitlink::is_available("nvJitLinkCreate") {
        let v = nvjitlink::version()
            .map_err(|e| Error::tool("querying the nvJitLink version for a cache key", e))?;
        Ok(format!("nvJitLink {}.{}", v.major, v.minor))
    } else {
        let v = driver::version()
            .map_err(|e| Error::from_driver("querying the driver version for a cache key", e))?;
        Ok(format!("driver {}.{}", v.major, v.minor))
    }
}

/// The key of compiling `code` with `options` to `target`, looking up
/// `name_expressions`, with `extra_headers` (name, contents) taking part.
///
/// The key is a SHA-256 digest over a versioned, length-prefixed encoding of:
///
/// * the encoding's version;
/// * the backend (`NVRTC` for C++, `NVVM` for NVVM IR, `PTX`) and the version of
///   the loaded compiler (NVRTC's or NVVM's, `major.minor`), and, for a cubin
///   made from PTX or NVVM IR, the linker that makes it and its version;
/// * the target;
/// * the canonical options: [`ProgramOptions::to_nvrtc_args`] for C++,
///   [`to_nvvm_args`](ProgramOptions::to_nvvm_args) for NVVM IR, the
///   [linker's](ProgramOptions::to_linker_options) options for PTX (when an
///   `arch` is given), and for every backend the program's name, the include paths
///   (in order), the `pre_include` headers, NVVM's `extra_sources` and, with
///   `use_libdevice`, which libdevice file (path, size, modification time);
/// * the source's bytes;
/// * the name expressions, sorted and without duplicates (their order does not
///   change what is compiled);
/// * `extra_headers`, sorted by name.
///
/// The key changes when any of these does and is the same in every run and on
/// every machine with the same compiler version. Files reached through
/// `include_path` are **not** read: a program that includes files that may
/// change should pass their contents in `extra_headers` (any name that
/// identifies them).
///
/// # Errors
/// [`Error::InvalidArgument`] for options the backend rejects;
/// [`Error::Tool`] (or [`Error::Driver`], for the driver's linker) when the
/// compiler's or linker's version cannot be had; [`Error::Unavailable`] when
/// its library cannot be loaded.
pub fn make_program_cache_key(
    code: &SourceCode<'_>,
    options: &ProgramOptions,
    target: CompileTarget,
    name_expressions: &[&str],
    extra_headers: &[(&str, &[u8])],
) -> Result<ProgramCacheKey> {
    let mut h = KeyHasher(Sha256::new());
    h.field("format", KEY_FORMAT);
    h.field("format-version", &KEY_VERSION.to_le_bytes());

    let (backend, version, args, source): (&str, String, Vec<String>, &[u8]) = match *code {
        SourceCode::Cxx(src) => {
            let version = crate::code::compile::nvrtc::version()?;
            (
                "NVRTC",
                version.to_string(),
                options.to_nvrtc_args()?,
                src.as_bytes(),
            )
        }
        SourceCode::Nvvm(ir) => {
            let v = cudars_bindings::nvvm::version()
                .map_err(|e| Error::tool("querying the NVVM version for a cache key", e))?;
            (
                "NVVM",
                format!("{}.{}", v.major, v.minor),
                options.to_nvvm_args()?,
                ir,
            )
        }
        SourceCode::Ptx(src) => {
            let args = if options.arch.is_some() {
                options.to_linker_options()?.to_nvjitlink_args()?
            } else {
                Vec::new()
            };
            ("PTX", String::new(), args, src.as_bytes())
        }
    };
    h.field("backend", backend.as_bytes());
    h.field("backend-version", version.as_bytes());
    h.field(
        "target",
        match target {
            CompileTarget::Ptx => b"ptx",
            CompileTarget::Cubin => b"cubin",
            CompileTarget::Ltoir => b"ltoir",
        },
    );
    let linker = match (code, target) {
        (SourceCode::Ptx(_) | SourceCode::Nvvm(_), CompileTarget::Cubin) => {
            let mut lopts = options.to_linker_options()?;
            if matches!(code, SourceCode::Nvvm(_)) && options.link_time_optimization {
                lopts.link_time_optimization = true;
            }
            let mut id = linker_identity()?;
            for arg in lopts.to_nvjitlink_args()? {
                id.push('\0');
                id.push_str(&arg);
            }
            id
        }
        _ => String::new(),
    };
    h.field("linker", linker.as_bytes());
    h.list("options", args.iter().map(|a| a.as_bytes()));
    h.field(
        "name",
        options
            .name
            .as_deref()
            .unwrap_or(DEFAULT_PROGRAM_NAME)
            .as_bytes(),
    );
    h.list(
        "include-path",
        options
            .include_path
            .iter()
            .map(|p| p.as_os_str().as_encoded_bytes()),
    );
    h.list(
        "pre-include",
        options.pre_include.iter().map(|p| p.as_bytes()),
    );
    h.pairs(
        "extra-sources",
        options
            .extra_sources
            .iter()
            .map(|(n, m)| (n.as_bytes(), m.as_slice())),
    );
    if options.use_libdevice {
        // Only when set, so that keys made before the option existed still match.
        // Which libdevice: its path, size and modification time (reading the
        // bitcode for every key would cost more than the lookup it keys).
        let id = cudars_pathfinder::find_bitcode_lib("libdevice")
            .ok()
            .and_then(|l| {
                let m = std::fs::metadata(&l.abs_path).ok()?;
                let modified = m
                    .modified()
                    .ok()?
                    .duration_since(std::time::UNIX_EPOCH)
                    .ok()?
                    .as_nanos();
                Some(format!("{}\0{}\0{modified}", l.abs_path.display(), m.len()))
            })
            .unwrap_or_default();
        h.field("libdevice", id.as_bytes());
    }
    h.field("source", source);

    let mut exprs: Vec<&str> = name_expressions.to_vec();
    exprs.sort_unstable();
    exprs.dedup();
    h.list("name-expressions", exprs.iter().map(|e| e.as_bytes()));

    let mut headers: Vec<(&str, &[u8])> = extra_headers.to_vec();
    headers.sort_unstable();
    h.pairs(
        "extra-headers",
        headers.iter().map(|(n, b)| (n.as_bytes(), *b)),
    );
    Ok(ProgramCacheKey(h.0.finalize().into()))
}

/// A store of compiled programs by [`ProgramCacheKey`] (`cuda.core`'s
/// `ProgramCacheResource`).
///
/// Implementations are shared between threads (`Send + Sync`) and take `&self`.
#[doc(alias = "ProgramCacheResource")]
pub trait ProgramCache: Send + Sync {
    /// The entry stored under `key`, or `None` (a miss).
    ///
    /// # Errors
    /// The store's errors (I/O for [`FileProgramCache`]); a damaged entry is a
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
    let key = make_program_cache_key(&code, &options, target, name_expressions, extra_headers)?;
    if let Some(hit) = cache.get(&key)? {
        // A store that returns another kind of code than the target is not
        // trusted: compile (and replace the entry).
        if hit.code_type() == target.code_type() {
            return Ok(hit);
        }
    }
    let object = Program::new(code, options)?.compile(target, name_expressions)?;
    cache.put(&key, &object)?;
    Ok(object)
}

/// The bytes an entry accounts for in a size limit: its code, name and mapping.
fn entry_size(code: &ObjectCode) -> u64 {
    let mapping: usize = code
        .symbol_mapping()
        .iter()
        .map(|(k, v)| k.len() + v.len())
        .sum();
    (code.code().len() + code.name().len() + mapping) as u64
}

/// A [`ProgramCache`] in this process's memory (`cuda.core`'s
/// `InMemoryProgramCache`), optionally bounded by a number of entries and/or a
/// number of bytes, beyond which the least recently used entries are evicted.
///
/// Entries are shared, not copied: a hit is a clone of the stored
/// [`ObjectCode`], which keeps the library it has loaded.
///
/// ```
/// use cudars_core::ObjectCode;
/// use cudars_core::cache::{InMemoryProgramCache, ProgramCache, ProgramCacheKey};
///
/// let cache = InMemoryProgramCache::new().with_max_entries(2);
/// let key = ProgramCacheKey::from_bytes([7; 32]);
/// cache.put(&key, &ObjectCode::from_ptx(".version 8.0")?)?;
/// assert_eq!(cache.get(&key)?.map(|c| c.code().to_vec()), Some(b".version 8.0".to_vec()));
/// assert_eq!(cache.len(), 1);
/// # Ok::<(), cudars_core::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct InMemoryProgramCache {
    state: Mutex<MemoryState>,
    max_entries: Option<usize>,
    max_size_bytes: Option<u64>,
}

#[derive(Debug, Default)]
struct MemoryState {
    entries: HashMap<ProgramCacheKey, MemoryEntry>,
    /// Advances on every use; an entry's `last_used` is the clock then.
    clock: u64,
    /// The sum of the entries' [`entry_size`]s.
    bytes: u64,
}

#[derive(Debug)]
struct MemoryEntry {
    code: ObjectCode,
    last_used: u64,
    size: u64,
}

impl InMemoryProgramCache {
    /// An unbounded cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps at most `n` entries (0 stores nothing).
    #[must_use]
    pub fn with_max_entries(mut self, n: usize) -> Self {
        self.max_entries = Some(n);
        self
    }

    /// Keeps at most `bytes` of entries (code, name and symbol mapping). The entry
    /// stored last is always kept, even when it alone is larger.
    #[must_use]
    pub fn with_max_size_bytes(mut self, bytes: u64) -> Self {
        self.max_size_bytes = Some(bytes);
        self
    }

    fn state(&self) -> MutexGuard<'_, MemoryState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many entries are stored.
    pub fn len(&self) -> usize {
        self.state().entries.len()
    }

    /// Whether no entry is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes the entries account for (code, names and symbol mappings).
    pub fn size_bytes(&self) -> u64 {
        self.state().bytes
    }

    /// Removes every entry.
    pub fn clear(&self) {
        let mut s = self.state();
        s.entries.clear();
        s.bytes = 0;
    }
}

impl ProgramCache for InMemoryProgramCache {
    fn get(&self, key: &ProgramCacheKey) -> Result<Option<ObjectCode>> {
        let mut s = self.state();
        s.clock += 1;
        let now = s.clock;
        Ok(s.entries.get_mut(key).map(|e| {
            e.last_used = now;
            e.code.clone()
        }))
    }

    fn put(&self, key: &ProgramCacheKey, code: &ObjectCode) -> Result<()> {
        if self.max_entries == Some(0) {
            return Ok(());
        }
        let mut s = self.state();
        s.clock += 1;
        let size = entry_size(code);
        let entry = MemoryEntry {
            code: code.clone(),
            last_used: s.clock,
            size,
        };
        if let Some(old) = s.entries.insert(*key, entry) {
            s.bytes = s.bytes.saturating_sub(old.size);
        }
        s.bytes += size;
        loop {
            let over_count = self.max_entries.is_some_and(|m| s.entries.len() > m);
            let over_size = self.max_size_bytes.is_some_and(|m| s.bytes > m);
            if !(over_count || over_size) {
                break;
            }
            let oldest = s
                .entries
                .iter()
                .filter(|(k, _)| *k != key)
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| *k);
            let Some(oldest) = oldest else { break };
            if let Some(old) = s.entries.remove(&oldest) {
                s.bytes = s.bytes.saturating_sub(old.size);
            }
        }
        Ok(())
    }

    fn remove(&self, key: &ProgramCacheKey) -> Result<bool> {
        let mut s = self.state();
        Ok(match s.entries.remove(key) {
            Some(old) => {
                s.bytes = s.bytes.saturating_sub(old.size);
                true
            }
            None => false,
        })
    }

    fn clear(&self) -> Result<()> {
        InMemoryProgramCache::clear(self);
        Ok(())
    }
}

/// The first bytes of every cache file.
const MAGIC: &[u8; 8] = b"CUDARSPC";
/// The version of the file format.
const FILE_VERSION: u32 = 1;
/// Magic, format version (u32), payload length (u64), SHA-256 of the payload.
const HEADER_LEN: usize = 8 + 4 + 8 + 32;
/// Entries are `<64 hex digits>.bin`.
const ENTRY_SUFFIX: &str = ".bin";
/// Entries being written are `.tmp-<random>.part`, renamed when complete.
const TEMP_PREFIX: &str = ".tmp-";
const TEMP_SUFFIX: &str = ".part";
/// A temporary file this old was left by a writer that died; cleaning up removes it.
const STALE_TEMP_AGE: Duration = Duration::from_secs(3600);

fn code_type_tag(t: CodeType) -> u8 {
    match t {
        CodeType::Cubin => 1,
        CodeType::Ptx => 2,
        CodeType::Ltoir => 3,
        CodeType::Fatbin => 4,
        CodeType::Object => 5,
        CodeType::Library => 6,
    }
}

fn code_type_from_tag(tag: u8) -> Option<CodeType> {
    Some(match tag {
        1 => CodeType::Cubin,
        2 => CodeType::Ptx,
        3 => CodeType::Ltoir,
        4 => CodeType::Fatbin,
        5 => CodeType::Object,
        6 => CodeType::Library,
        _ => return None,
    })
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u64).to_le_bytes());
    out.extend_from_slice(b);
}

/// The file for `code` under `key`: the header, then the payload: the key (32
/// bytes), the code type (u8), the name, the number of symbol-mapping entries
/// (u64) and each entry's source and mangled names, then the code; each string
/// and the code as a u64 length and bytes; all integers little-endian.
fn encode_entry(key: &ProgramCacheKey, code: &ObjectCode) -> Vec<u8> {
    let mut payload = Vec::with_capacity(128 + code.code().len());
    payload.extend_from_slice(key.as_bytes());
    payload.push(code_type_tag(code.code_type()));
    put_bytes(&mut payload, code.name().as_bytes());
    payload.extend_from_slice(&(code.symbol_mapping().len() as u64).to_le_bytes());
    for (source, mangled) in code.symbol_mapping() {
        put_bytes(&mut payload, source.as_bytes());
        put_bytes(&mut payload, mangled.as_bytes());
    }
    put_bytes(&mut payload, code.code());

    let mut file = Vec::with_capacity(HEADER_LEN + payload.len());
    file.extend_from_slice(MAGIC);
    file.extend_from_slice(&FILE_VERSION.to_le_bytes());
    file.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    file.extend_from_slice(&Sha256::digest(&payload));
    file.extend_from_slice(&payload);
    file
}

/// Reads a payload front to back; every read checks the bytes are there.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_le_bytes)
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u64()?).ok()?;
        self.take(n)
    }

    fn string(&mut self) -> Option<String> {
        std::str::from_utf8(self.bytes()?).ok().map(str::to_owned)
    }
}

/// The entry in `file` if it is whole, undamaged and stored under `key`; `None`
/// for anything else (wrong magic or version, short, checksum mismatch, bad
/// encoding, another key, a file `encode_entry` would not have written).
fn decode_entry(file: &[u8], key: &ProgramCacheKey) -> Option<ObjectCode> {
    let mut r = Reader(file);
    if r.take(MAGIC.len())? != MAGIC || u32::from_le_bytes(r.array()?) != FILE_VERSION {
        return None;
    }
    let len = usize::try_from(r.u64()?).ok()?;
    let digest: [u8; 32] = r.array()?;
    let payload = r.0;
    if payload.len() != len || Sha256::digest(payload).as_slice() != digest {
        return None;
    }

    let mut r = Reader(payload);
    if r.array::<32>()? != *key.as_bytes() {
        return None;
    }
    let code_type = code_type_from_tag(r.array::<1>()?[0])?;
    let name = r.string()?;
    let count = r.u64()?;
    let mut mapping = BTreeMap::new();
    for _ in 0..count {
        let source = r.string()?;
        let mangled = r.string()?;
        // In the order `encode_entry` writes them (a map's: sorted, no two
        // alike), so that one entry has exactly one file.
        if mapping
            .last_key_value()
            .is_some_and(|(last, _): (&String, _)| *last >= source)
        {
            return None;
        }
        mapping.insert(source, mangled);
    }
    let code = r.bytes()?;
    if code.is_empty() || !r.0.is_empty() {
        return None;
    }
    Some(ObjectCode::with_mapping(
        code.to_vec(),
        code_type,
        name,
        mapping,
    ))
}

fn io_error(context: String) -> impl FnOnce(io::Error) -> Error {
    move |source| Error::Io {
        context: context.into(),
        source,
    }
}

/// Whether `name` is an entry's file name: 64 lowercase hex digits and `.bin`.
fn is_entry_name(name: &str) -> bool {
    name.strip_suffix(ENTRY_SUFFIX).is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

fn is_temp_name(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX)
}

/// Removes a file; one already gone is not an error.
fn remove_if_present(path: &Path) -> io::Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// A [`ProgramCache`] on disk (`cuda.core`'s `FileStreamProgramCache`): one file
/// per entry, `<key>.bin`, in a directory that any number of threads and
/// processes may use at once.
///
/// * Writes are atomic: an entry is written to a temporary file in the same
///   directory, flushed to disk, then renamed over its final name, so a reader
///   sees the old file, the new one or none, never part of one. When several
///   processes store the same key at once, one of their (equivalent) entries wins.
/// * A damaged file (a torn write from a crash, a flipped byte, a file of another
///   format) is checked by magic, version, length, a SHA-256 of its contents and
///   its key; it reads as a miss and is removed, never an error.
/// * With [`with_max_size_bytes`](Self::with_max_size_bytes), each
///   [`put`](ProgramCache::put) removes the least recently used entries (by
///   modification time, which a hit refreshes) until the entries fit.
///
/// Only files named like entries (and temporary files a writer left more than an
/// hour ago) are ever removed, so a directory shared with other files is safe.
///
/// # File format
///
/// All integers little-endian: the magic `CUDARSPC`; the format version (u32);
/// the payload's length (u64); the payload's SHA-256 (32 bytes); the payload:
/// the key (32 bytes), the [`CodeType`] (u8), the name, the number of
/// symbol-mapping entries (u64) and each entry's two names (sorted by the first,
/// no two alike), then the code, each string and the code as a length (u64) and
/// bytes.
#[doc(alias = "FileStreamProgramCache")]
#[derive(Debug, Clone)]
pub struct FileProgramCache {
    dir: PathBuf,
    max_size_bytes: Option<u64>,
}

impl FileProgramCache {
    /// A cache in `dir`, which is created if missing.
    ///
    /// # Errors
    /// [`Error::Io`] when the directory cannot be created.
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(io_error(format!(
            "creating the program cache directory {}",
            dir.display()
        )))?;
        Ok(Self {
            dir,
            max_size_bytes: None,
        })
    }

    /// The default directory: `cuda-rs/programs` in the user's cache directory
    /// (`$XDG_CACHE_HOME` or `~/.cache` on Linux, `~/Library/Caches` on macOS,
    /// `%LOCALAPPDATA%` on Windows); `None` where there is none.
    pub fn default_dir() -> Option<PathBuf> {
        dirs::cache_dir().map(|d| d.join("cuda-rs").join("programs"))
    }

    /// A cache in [`default_dir`](Self::default_dir).
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the system has no user cache directory;
    /// as [`new`](Self::new).
    pub fn open_default() -> Result<Self> {
        let dir = Self::default_dir().ok_or_else(|| {
            Error::unsupported(
                "opening the default program cache",
                "this system has no user cache directory; name one with FileProgramCache::new",
            )
        })?;
        Self::new(dir)
    }

    /// Keeps the entries to at most `bytes` of files, evicting the least
    /// recently used on each [`put`](ProgramCache::put). The entry just stored is
    /// kept even when it alone is larger.
    #[must_use]
    pub fn with_max_size_bytes(mut self, bytes: u64) -> Self {
        self.max_size_bytes = Some(bytes);
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file that holds (or would hold) the entry under `key`.
    pub fn path_of(&self, key: &ProgramCacheKey) -> PathBuf {
        self.dir.join(format!("{key}{ENTRY_SUFFIX}"))
    }

    /// The entry files: path, size and modification time.
    fn entries(&self) -> Result<Vec<(PathBuf, u64, SystemTime)>> {
        let context = || format!("listing the program cache {}", self.dir.display());
        let mut out = Vec::new();
        let read_dir = match fs::read_dir(&self.dir) {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(io_error(context())(e)),
        };
        let now = SystemTime::now();
        for entry in read_dir {
            let entry = entry.map_err(io_error(context()))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let entry_file = is_entry_name(name);
            if !entry_file && !is_temp_name(name) {
                continue;
            }
            // Another process may remove the file between listing and looking.
            let Ok(meta) = entry.metadata() else { continue };
            let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            if entry_file {
                out.push((entry.path(), meta.len(), modified));
            } else if now
                .duration_since(modified)
                .is_ok_and(|age| age > STALE_TEMP_AGE)
            {
                // A writer that died left this; nobody will rename it.
                let _ = remove_if_present(&entry.path());
            }
        }
        Ok(out)
    }

    /// How many entries there are.
    ///
    /// # Errors
    /// [`Error::Io`] when the directory cannot be listed.
    pub fn len(&self) -> Result<usize> {
        Ok(self.entries()?.len())
    }

    /// Whether there are no entries.
    ///
    /// # Errors
    /// As [`len`](Self::len).
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// The total size of the entry files, in bytes.
    ///
    /// # Errors
    /// As [`len`](Self::len).
    pub fn size_bytes(&self) -> Result<u64> {
        Ok(self.entries()?.iter().map(|(_, len, _)| len).sum())
    }

    /// Removes every entry (and temporary files left by writers that died).
    ///
    /// # Errors
    /// [`Error::Io`] when the directory cannot be listed or a file removed.
    pub fn clear(&self) -> Result<()> {
        for (path, _, _) in self.entries()? {
            remove_if_present(&path)
                .map_err(io_error(format!("removing cache entry {}", path.display())))?;
        }
        Ok(())
    }

    /// Removes the least recently used entries, except `keep`, until the
    /// entries fit in `max` bytes.
    fn evict(&self, max: u64, keep: &Path) -> Result<()> {
        let mut entries = self.entries()?;
        let mut total: u64 = entries.iter().map(|(_, len, _)| len).sum();
        if total <= max {
            return Ok(());
        }
        entries.sort_by_key(|(_, _, modified)| *modified);
        for (path, len, _) in entries {
            if total <= max {
                break;
            }
            if path == keep {
                continue;
            }
            remove_if_present(&path)
                .map_err(io_error(format!("evicting cache entry {}", path.display())))?;
            total = total.saturating_sub(len);
        }
        Ok(())
    }

    /// A new temporary file in the directory (re-creating the directory if it
    /// was removed).
    fn temp_file(&self) -> Result<tempfile::NamedTempFile> {
        let make = || {
            tempfile::Builder::new()
                .prefix(TEMP_PREFIX)
                .suffix(TEMP_SUFFIX)
                .tempfile_in(&self.dir)
        };
        let context = || {
            format!(
                "creating a temporary file in the program cache {}",
                self.dir.display()
            )
        };
        match make() {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir_all(&self.dir).map_err(io_error(context()))?;
                make().map_err(io_error(context()))
            }
            r => r.map_err(io_error(context())),
        }
    }
}

impl ProgramCache for FileProgramCache {
    /// Reads `<key>.bin`. A missing file is a miss; a damaged one is a miss and
    /// is removed. A hit refreshes the file's modification time (for
    /// [`with_max_size_bytes`](FileProgramCache::with_max_size_bytes)'s eviction).
    fn get(&self, key: &ProgramCacheKey) -> Result<Option<ObjectCode>> {
        let path = self.path_of(key);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(io_error(format!("reading cache entry {}", path.display()))(
                    e,
                ));
            }
        };
        match decode_entry(&bytes, key) {
            Some(code) => {
                // Best effort: a read-only cache still serves hits.
                if let Ok(f) = fs::File::options().write(true).open(&path) {
                    let _ = f.set_modified(SystemTime::now());
                }
                Ok(Some(code))
            }
            None => {
                // Damaged: a miss. If another process has just replaced it with a
                // good entry, that entry is lost and will be stored again.
                let _ = fs::remove_file(&path);
                Ok(None)
            }
        }
    }

    /// Writes `<key>.bin` atomically (temporary file, flush to disk, rename),
    /// then evicts entries beyond the size limit.
    fn put(&self, key: &ProgramCacheKey, code: &ObjectCode) -> Result<()> {
        let path = self.path_of(key);
        let bytes = encode_entry(key, code);
        let mut tmp = self.temp_file()?;
        let context = || format!("writing cache entry {}", path.display());
        tmp.write_all(&bytes).map_err(io_error(context()))?;
        tmp.as_file().sync_all().map_err(io_error(context()))?;
        if let Err(e) = tmp.persist(&path) {
            // On systems that cannot replace a file that is open, another
            // writer's entry for the same key may be in the way: that one will do.
            if !path.is_file() {
                return Err(io_error(context())(e.error));
            }
        }
        #[cfg(unix)]
        if let Ok(dir) = fs::File::open(&self.dir) {
            // Best effort: makes the rename itself durable.
            let _ = dir.sync_all();
        }
        if let Some(max) = self.max_size_bytes {
            self.evict(max, &path)?;
        }
        Ok(())
    }

    fn remove(&self, key: &ProgramCacheKey) -> Result<bool> {
        let path = self.path_of(key);
        remove_if_present(&path)
            .map_err(io_error(format!("removing cache entry {}", path.display())))
    }

    fn clear(&self) -> Result<()> {
        FileProgramCache::clear(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ObjectCode {
        let mut mapping = BTreeMap::new();
        mapping.insert("add<float>".to_owned(), "_Z3addIfEvPT_S0_".to_owned());
        ObjectCode::with_mapping(b"\x7fELF...".to_vec(), CodeType::Cubin, "p".into(), mapping)
    }

    #[test]
    fn entries_round_trip() {
        let key = ProgramCacheKey([3; 32]);
        let code = sample();
        let file = encode_entry(&key, &code);
        let back = decode_entry(&file, &key);
        assert!(back.is_some_and(|b| b.code() == code.code()
            && b.code_type() == code.code_type()
            && b.name() == code.name()
            && b.symbol_mapping() == code.symbol_mapping()));
        // Another key's file is not this key's entry.
        assert!(decode_entry(&file, &ProgramCacheKey([4; 32])).is_none());
    }

    /// A file with a valid header around `payload`.
    fn with_header(payload: &[u8]) -> Vec<u8> {
        let mut file = MAGIC.to_vec();
        file.extend_from_slice(&FILE_VERSION.to_le_bytes());
        file.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        file.extend_from_slice(&Sha256::digest(payload));
        file.extend_from_slice(payload);
        file
    }

    #[test]
    fn bad_encodings_are_rejected() {
        let key = ProgramCacheKey([3; 32]);
        let good = encode_entry(&key, &sample());
        let payload = &good[HEADER_LEN..];
        assert!(decode_entry(&with_header(payload), &key).is_some());
        // Every truncation of the payload, with a checksum that matches it.
        for n in 0..payload.len() {
            assert!(
                decode_entry(&with_header(&payload[..n]), &key).is_none(),
                "{n}"
            );
        }
        // Trailing bytes.
        let mut long = payload.to_vec();
        long.push(0);
        assert!(decode_entry(&with_header(&long), &key).is_none());
        // An unknown code type.
        let mut bad = payload.to_vec();
        bad[32] = 99;
        assert!(decode_entry(&with_header(&bad), &key).is_none());
        // A huge length.
        let mut bad = payload.to_vec();
        bad[33..41].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode_entry(&with_header(&bad), &key).is_none());
        // Invalid UTF-8 in the name.
        let mut bad = payload.to_vec();
        bad[41] = 0xff;
        assert!(decode_entry(&with_header(&bad), &key).is_none());
        // Wrong version, wrong magic, garbage, nothing.
        let mut bad = good.clone();
        bad[8] = 2;
        assert!(decode_entry(&bad, &key).is_none());
        let mut bad = good.clone();
        bad[0] = b'X';
        assert!(decode_entry(&bad, &key).is_none());
        assert!(decode_entry(&[0xAB; 200], &key).is_none());
        assert!(decode_entry(&[], &key).is_none());
    }

    #[test]
    fn key_hex_round_trips() {
        let key = ProgramCacheKey(core::array::from_fn(|i| i as u8 * 7));
        let hex = key.to_string();
        assert_eq!(hex.len(), 64);
        assert!(is_entry_name(&format!("{hex}.bin")));
        assert_eq!(hex.parse::<ProgramCacheKey>().ok(), Some(key));
        assert_eq!(
            hex.to_uppercase().parse::<ProgramCacheKey>().ok(),
            Some(key)
        );
        assert!("xyz".parse::<ProgramCacheKey>().is_err());
        assert!("g".repeat(64).parse::<ProgramCacheKey>().is_err());
        assert!("é".repeat(32).parse::<ProgramCacheKey>().is_err());
        // A sign is not a hex digit (`u8::from_str_radix` takes `+f`).
        assert!("+f".repeat(32).parse::<ProgramCacheKey>().is_err());
    }

    mod hostile {
        //! Hostile cache files: decoding answers every byte string with an entry
        //! or a miss, and an entry only for the exact bytes that were stored.

        use super::*;
        use proptest::prelude::*;

        fn object() -> impl Strategy<Value = ObjectCode> {
            (
                proptest::collection::vec(any::<u8>(), 1..256),
                1u8..=6,
                ".{0,16}",
                proptest::collection::btree_map(".{0,8}", ".{0,8}", 0..4),
            )
                .prop_map(|(code, tag, name, mapping)| {
                    let kind = code_type_from_tag(tag).unwrap_or(CodeType::Cubin);
                    ObjectCode::with_mapping(code, kind, name, mapping)
                })
        }

        fn same(a: &ObjectCode, b: &ObjectCode) -> bool {
            a.code() == b.code()
                && a.code_type() == b.code_type()
                && a.name() == b.name()
                && a.symbol_mapping() == b.symbol_mapping()
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(cudars_tests::proptest_cases(256)))]

            /// A key parses exactly from 64 hex digits, and writes back the same
            /// digits in lowercase.
            #[test]
            #[cfg_attr(miri, ignore = "a property test of safe code, run natively with hundreds of cases; slow under Miri")]
            fn keys_parse_only_from_hex(text in prop_oneof!["[0-9a-fA-F+ -]{64}", ".{0,70}"]) {
                match text.parse::<ProgramCacheKey>() {
                    Ok(k) => prop_assert_eq!(k.to_string(), text.to_lowercase()),
                    Err(Error::InvalidArgument { .. }) => prop_assert!(
                        text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit())
                    ),
                    Err(other) => prop_assert!(false, "{other:?}"),
                }
            }

            #[test]
            #[cfg_attr(miri, ignore = "a property test of safe code, run natively with hundreds of cases; slow under Miri")]
            fn arbitrary_files_are_misses(file in proptest::collection::vec(any::<u8>(), 0..512)) {
                prop_assert!(decode_entry(&file, &ProgramCacheKey([1; 32])).is_none());
            }

            #[test]
            #[cfg_attr(miri, ignore = "a property test of safe code, run natively with hundreds of cases; slow under Miri")]
            fn entries_round_trip(code in object(), key in any::<[u8; 32]>()) {
                let key = ProgramCacheKey(key);
                let back = decode_entry(&encode_entry(&key, &code), &key);
                prop_assert!(back.is_some_and(|b| same(&b, &code)));
            }

            /// Damage to the file (bit flips, truncation, a grown tail) is a miss.
            #[test]
            #[cfg_attr(miri, ignore = "a property test of safe code, run natively with hundreds of cases; slow under Miri")]
            fn damaged_files_are_misses(
                code in object(),
                flips in proptest::collection::vec((any::<usize>(), 0u8..8), 1..4),
                cut in any::<Option<usize>>(),
            ) {
                let key = ProgramCacheKey([9; 32]);
                let mut file = encode_entry(&key, &code);
                let good = file.clone();
                for (at, bit) in flips {
                    let n = file.len();
                    file[at % n] ^= 1 << bit;
                }
                if let Some(cut) = cut {
                    file.truncate(cut % (file.len() + 1));
                }
                let back = decode_entry(&file, &key);
                if file == good {
                    prop_assert!(back.is_some_and(|b| same(&b, &code)));
                } else {
                    prop_assert!(back.is_none());
                }
            }

            /// The payload's parser behind a valid header and checksum: damaged
            /// or forged lengths (up to `u64::MAX`) are misses, never a panic or
            /// a huge allocation.
            #[test]
            #[cfg_attr(miri, ignore = "a property test of safe code, run natively with hundreds of cases; slow under Miri")]
            fn forged_payloads_are_misses_or_exact(
                code in object(),
                pokes in proptest::collection::vec((any::<usize>(), prop_oneof![any::<u64>(), Just(u64::MAX), 0u64..64]), 1..3),
                cut in any::<Option<usize>>(),
            ) {
                let key = ProgramCacheKey([5; 32]);
                let good = encode_entry(&key, &code);
                let mut payload = good[HEADER_LEN..].to_vec();
                for (at, value) in pokes {
                    let n = payload.len();
                    let at = at % n;
                    for (i, b) in value.to_le_bytes().iter().enumerate() {
                        if let Some(slot) = payload.get_mut(at + i) {
                            *slot = *b;
                        }
                    }
                }
                if let Some(cut) = cut {
                    payload.truncate(cut % (payload.len() + 1));
                }
                // Whatever decodes must encode back to the same file: one entry,
                // one file (a symbol mapping out of order once decoded too).
                if let Some(back) = decode_entry(&with_header(&payload), &key) {
                    prop_assert_eq!(encode_entry(&key, &back), with_header(&payload));
                }
            }
        }
    }
}

/// loom model checks (`RUSTFLAGS="--cfg loom" cargo test -p cudars-core --lib
/// --release loom`) of the in-memory cache's index as threads share it.
#[cfg(test)]
#[cfg(loom)]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    /// Two threads store different entries in a one-entry cache while a third
    /// reads one of them: the bound holds, the byte count is that of the entries
    /// kept, and a hit is the code stored under that key.
    #[test]
    fn loom_in_memory_cache_keeps_its_bound_and_byte_count() {
        loom::model(|| {
            let cache = Arc::new(InMemoryProgramCache::new().with_max_entries(1));
            let keys = [
                ProgramCacheKey::from_bytes([1; 32]),
                ProgramCacheKey::from_bytes([2; 32]),
            ];
            let ts: Vec<_> = keys
                .iter()
                .enumerate()
                .map(|(i, key)| {
                    let (cache, key) = (cache.clone(), *key);
                    loom::thread::spawn(move || {
                        let code = ObjectCode::from_ptx(vec![b'a'; i + 1]).unwrap();
                        cache.put(&key, &code).unwrap();
                    })
                })
                .collect();
            if let Some(hit) = cache.get(&keys[1]).unwrap() {
                assert_eq!(hit.code(), b"aa");
            }
            for t in ts {
                t.join().unwrap();
            }
            assert_eq!(cache.len(), 1);
            let s = cache.state();
            let sum: u64 = s.entries.values().map(|e| e.size).sum();
            assert_eq!(s.bytes, sum);
        });
    }
}
