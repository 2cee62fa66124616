//! `cuda_core/tests/test_program_compile_cache.py` of `cuda.core` (the pinned
//! commit of `docs/reference/cuda-core-tests.txt`): `Program.compile(target,
//! cache=cache)`, which is `cache::compile_cached(&cache, code, options, target,
//! &name_expressions)` here.
//!
//! The Python test's `_RecordingCache` (a dict that records every `get` and
//! `__setitem__`, and can be made to raise from either) is [`RecordingCache`];
//! its keys are [`ProgramCacheKey`]s and its values [`ObjectCode`]s. cuda.core's
//! tests replace the uncached compile (`_program_compile_uncached`) with a
//! sentinel; here the compile is NVRTC's, from the wheels (no GPU: `arch` is
//! `sm_80`), and a failing compile is a source NVRTC refuses.

use cudars_core::cache::{
    FileProgramCache, ProgramCache, ProgramCacheKey, compile_cached, make_program_cache_key,
};
use cudars_core::{CodeType, CompileTarget, Error, ObjectCode, ProgramOptions, SourceCode};
use cudars_tests::require_libs;
use std::collections::HashMap;
use std::sync::Mutex;

const KERNEL: &str = r#"extern "C" __global__ void k() {}"#;
const SENTINEL_BYTES: &[u8] = b"sentinel-cubin-bytes";

/// `ProgramOptions(arch="sm_80")`.
fn sm80() -> ProgramOptions {
    ProgramOptions {
        arch: Some("sm_80".into()),
        ..Default::default()
    }
}

/// The Python test's `_RecordingCache`.
#[derive(Default)]
struct RecordingCache {
    store: Mutex<HashMap<ProgramCacheKey, ObjectCode>>,
    get_calls: Mutex<Vec<ProgramCacheKey>>,
    set_calls: Mutex<Vec<(ProgramCacheKey, Vec<u8>)>>,
    /// `get_side_effect`: `get` fails with this message.
    get_error: Option<&'static str>,
    /// `set_side_effect`: `put` fails with this message (after recording).
    set_error: Option<&'static str>,
}

fn failure(message: &'static str) -> Error {
    Error::Io {
        context: "the recording cache".into(),
        source: std::io::Error::other(message),
    }
}

impl RecordingCache {
    fn preseeded(key: ProgramCacheKey, value: ObjectCode) -> Self {
        let cache = Self::default();
        cache.store.lock().unwrap().insert(key, value);
        cache
    }

    fn get_calls(&self) -> Vec<ProgramCacheKey> {
        self.get_calls.lock().unwrap().clone()
    }

    fn set_calls(&self) -> Vec<(ProgramCacheKey, Vec<u8>)> {
        self.set_calls.lock().unwrap().clone()
    }
}

impl ProgramCache for RecordingCache {
    fn get(&self, key: &ProgramCacheKey) -> cudars_core::Result<Option<ObjectCode>> {
        self.get_calls.lock().unwrap().push(*key);
        if let Some(message) = self.get_error {
            return Err(failure(message));
        }
        Ok(self.store.lock().unwrap().get(key).cloned())
    }

    fn put(&self, key: &ProgramCacheKey, code: &ObjectCode) -> cudars_core::Result<()> {
        self.set_calls
            .lock()
            .unwrap()
            .push((*key, code.code().to_vec()));
        if let Some(message) = self.set_error {
            return Err(failure(message));
        }
        self.store.lock().unwrap().insert(*key, code.clone());
        Ok(())
    }

    fn remove(&self, key: &ProgramCacheKey) -> cudars_core::Result<bool> {
        Ok(self.store.lock().unwrap().remove(key).is_some())
    }

    fn clear(&self) -> cudars_core::Result<()> {
        self.store.lock().unwrap().clear();
        Ok(())
    }
}

/// `program.compile("cubin", cache=cache)` of `KERNEL` with `options`.
fn compile(cache: &dyn ProgramCache, options: ProgramOptions) -> cudars_core::Result<ObjectCode> {
    compile_cached(
        cache,
        SourceCode::Cxx(KERNEL),
        options,
        CompileTarget::Cubin,
        &[],
    )
}

/// On a miss: one `get`, the compile, one `put` of what it made.
#[test]
fn test_cache_miss_runs_compile_then_stores() {
    require_libs!("nvrtc");
    let cache = RecordingCache::default();
    let result = compile(&cache, sm80()).unwrap();
    assert_eq!(cache.get_calls().len(), 1);
    let sets = cache.set_calls();
    assert_eq!(sets.len(), 1);
    assert_eq!(sets[0].1, result.code());
}

/// On a hit: the stored object code (the sentinel's bytes, a cubin named as the
/// options name it), no compile, no `put`.
#[test]
fn test_cache_hit_returns_object_code_reconstructed_from_bytes() {
    require_libs!("nvrtc");
    let options = ProgramOptions {
        name: Some("my_program".into()),
        ..sm80()
    };
    let key = make_program_cache_key(
        &SourceCode::Cxx(KERNEL),
        &options,
        CompileTarget::Cubin,
        &[],
        &[],
    )
    .unwrap();
    let stored = ObjectCode::new(SENTINEL_BYTES.to_vec(), CodeType::Cubin, "my_program").unwrap();
    let cache = RecordingCache::preseeded(key, stored);
    let result = compile(&cache, options).unwrap();
    assert_eq!(result.code(), SENTINEL_BYTES);
    assert_eq!(result.code_type(), CodeType::Cubin);
    assert_eq!(result.name(), "my_program");
    assert_eq!(cache.get_calls(), vec![key]);
    assert!(cache.set_calls().is_empty());
}

/// An empty `name_expressions` (the default) is the no-op case.
#[test]
fn test_cache_accepts_empty_name_expressions() {
    require_libs!("nvrtc");
    let cache = RecordingCache::default();
    compile(&cache, sm80()).unwrap();
    let empty: [&str; 0] = [];
    compile_cached(
        &cache,
        SourceCode::Cxx(KERNEL),
        sm80(),
        CompileTarget::Cubin,
        &empty,
    )
    .unwrap();
    compile_cached(
        &cache,
        SourceCode::Cxx(KERNEL),
        sm80(),
        CompileTarget::Cubin,
        &Vec::<&str>::new(),
    )
    .unwrap();
}

/// A refused key is an `InvalidArgument` naming `what`, before the cache is
/// asked anything.
#[track_caller]
fn assert_refused_before_lookup(options: ProgramOptions, what: &str) {
    let cache = RecordingCache::default();
    match compile(&cache, options) {
        Err(e @ Error::InvalidArgument { .. }) => {
            assert!(e.to_string().contains(what), "{e} does not name {what:?}");
        }
        other => panic!("expected an InvalidArgument naming {what:?}, got {other:?}"),
    }
    assert!(cache.get_calls().is_empty());
    assert!(cache.set_calls().is_empty());
}

/// `include_path` without extra headers (cuda.core's `extra_digest`).
#[test]
fn test_cache_raises_for_extra_digest_required_option() {
    require_libs!("nvrtc");
    assert_refused_before_lookup(
        ProgramOptions {
            include_path: vec!["/some/dir".into()],
            ..sm80()
        },
        "extra_headers",
    );
}

#[test]
fn test_cache_raises_for_nvrtc_name_with_dir_component() {
    require_libs!("nvrtc");
    assert_refused_before_lookup(
        ProgramOptions {
            name: Some("kernels/foo.cu".into()),
            ..sm80()
        },
        "directory component",
    );
}

#[test]
fn test_cache_raises_for_side_effect_option() {
    require_libs!("nvrtc");
    let tmp = tempfile::tempdir().unwrap();
    assert_refused_before_lookup(
        ProgramOptions {
            create_pch: Some(tmp.path().join("k.pch")),
            ..sm80()
        },
        "side effect",
    );
}

/// A compile that fails after a miss stores nothing (cuda.core's test makes the
/// compile raise; here NVRTC refuses the source).
#[test]
fn test_cache_miss_compile_failure_does_not_store() {
    require_libs!("nvrtc");
    let cache = RecordingCache::default();
    let r = compile_cached(
        &cache,
        SourceCode::Cxx(r#"extern "C" __global__ void k() { compile failed }"#),
        sm80(),
        CompileTarget::Cubin,
        &[],
    );
    assert!(matches!(r, Err(Error::Compile { .. })), "{r:?}");
    assert_eq!(cache.get_calls().len(), 1);
    assert!(cache.set_calls().is_empty());
}

/// The cache's `get` error comes back; nothing is compiled or stored.
#[test]
fn test_cache_read_exception_propagates() {
    require_libs!("nvrtc");
    let cache = RecordingCache {
        get_error: Some("broken"),
        ..Default::default()
    };
    let e = compile(&cache, sm80()).unwrap_err();
    assert!(
        matches!(&e, Error::Io { source, .. } if source.to_string() == "broken"),
        "{e:?}"
    );
    assert!(cache.set_calls().is_empty());
}

/// The cache's `put` error comes back, after the compile.
#[test]
fn test_cache_write_exception_propagates() {
    require_libs!("nvrtc");
    let cache = RecordingCache {
        set_error: Some("disk full"),
        ..Default::default()
    };
    let e = compile(&cache, sm80()).unwrap_err();
    assert!(
        matches!(&e, Error::Io { source, .. } if source.to_string() == "disk full"),
        "{e:?}"
    );
    assert_eq!(cache.get_calls().len(), 1);
    assert_eq!(cache.set_calls().len(), 1);
}

/// A real compile through a `FileProgramCache`, then a second through the
/// reopened cache: the same bytes and code type. (cuda.core's test asks for
/// `init_cuda`, but compiles for `sm_80`: no GPU is used.)
#[test]
fn test_filestream_hit_returns_byte_equal_object_code() {
    require_libs!("nvrtc");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fc");
    let first = compile(&FileProgramCache::new(&dir).unwrap(), sm80()).unwrap();
    let second = compile(&FileProgramCache::new(&dir).unwrap(), sm80()).unwrap();
    assert_eq!(second.code(), first.code());
    assert_eq!(second.code_type(), first.code_type());
}

/// Compiled through the cache once, then again through the reopened cache: a
/// hit (nothing stored the second time), the same bytes and the options' name.
#[test]
fn test_cache_kwarg_roundtrip_across_reopen() {
    require_libs!("nvrtc");
    let options = ProgramOptions {
        name: Some("cached_kernel".into()),
        ..sm80()
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fc");
    let first = compile(&FileProgramCache::new(&dir).unwrap(), options.clone()).unwrap();

    /// The reopened file cache, failing the test if the compile's result is
    /// stored (the compile ran: a miss).
    struct MustHit(FileProgramCache);
    impl ProgramCache for MustHit {
        fn get(&self, key: &ProgramCacheKey) -> cudars_core::Result<Option<ObjectCode>> {
            self.0.get(key)
        }
        fn put(&self, _: &ProgramCacheKey, _: &ObjectCode) -> cudars_core::Result<()> {
            panic!("cache miss: reopened cache didn't serve entry");
        }
        fn remove(&self, key: &ProgramCacheKey) -> cudars_core::Result<bool> {
            self.0.remove(key)
        }
        fn clear(&self) -> cudars_core::Result<()> {
            ProgramCache::clear(&self.0)
        }
    }
    let second = compile(&MustHit(FileProgramCache::new(&dir).unwrap()), options).unwrap();
    assert_eq!(second.code(), first.code());
    assert_eq!(second.name(), "cached_kernel");
}
