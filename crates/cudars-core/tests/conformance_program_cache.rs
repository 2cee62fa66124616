//! `cuda_core/tests/test_program_cache.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `conformance_program.rs` says:
//! so far the tests of `make_program_cache_key` whose inputs Rust can spell.
//! `cuda.core`'s `make_program_cache_key(code=, code_type=, options=, target_type=,
//! name_expressions=)` is `cache::make_program_cache_key(&SourceCode, &options,
//! CompileTarget, &name_expressions, &extra_headers)` here; the test's `_make_key`
//! baseline (C++ `"a"` for a cubin, `arch="sm_80"`) is `make_key` below. No GPU:
//! a key hashes the compiler's version, so NVRTC (C++) or nvJitLink (PTX) from the
//! wheels (each test skips, saying so, without it, and fails without it when
//! `CUDA_RS_REQUIRE_WHEELS=1`).

#![cfg(feature = "cache")]
// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// A parameter case's test is `<python name>__<case>`: the double underscore keeps the
// Python name whole, which the snake-case lint does not allow.
#![allow(non_snake_case)]

use cudars_core::cache::{ProgramCacheKey, make_program_cache_key};
use cudars_core::{CompileTarget, ProgramOptions, SourceCode};
use cudars_tests::require_libs;

/// The test's `_opts(**kw)`: `arch="sm_80"` unless given.
fn opts() -> ProgramOptions {
    ProgramOptions {
        arch: Some("sm_80".into()),
        ..Default::default()
    }
}

/// One call of the test's `_make_key`, with its defaults spelt out by the caller.
fn make_key(
    code: SourceCode<'_>,
    options: &ProgramOptions,
    target: CompileTarget,
    name_expressions: &[&str],
) -> ProgramCacheKey {
    make_program_cache_key(&code, options, target, name_expressions, &[]).unwrap()
}

/// `_make_key()`: C++ `"a"`, `_opts()`, a cubin.
fn base_key() -> ProgramCacheKey {
    make_key(SourceCode::Cxx("a"), &opts(), CompileTarget::Cubin, &[])
}

#[test]
fn test_make_program_cache_key_returns_bytes() {
    require_libs!("nvrtc");
    let key = base_key();
    let bytes: &[u8] = key.as_bytes();
    assert_eq!(bytes.len(), 32);
}

#[test]
fn test_make_program_cache_key_is_deterministic__c___void_k____() {
    require_libs!("nvrtc");
    let key = || {
        make_key(
            SourceCode::Cxx("void k(){}"),
            &opts(),
            CompileTarget::Cubin,
            &[],
        )
    };
    assert_eq!(key(), key());
}

#[test]
fn test_make_program_cache_key_is_deterministic__ptx__version_7_0() {
    require_libs!("nvJitLink");
    let key = || {
        make_key(
            SourceCode::Ptx(".version 7.0"),
            &opts(),
            CompileTarget::Cubin,
            &[],
        )
    };
    assert_eq!(key(), key());
}

#[test]
fn test_make_program_cache_key_differs_on__code() {
    require_libs!("nvrtc");
    assert_ne!(
        make_key(SourceCode::Cxx("a"), &opts(), CompileTarget::Cubin, &[]),
        make_key(SourceCode::Cxx("b"), &opts(), CompileTarget::Cubin, &[])
    );
}

#[test]
fn test_make_program_cache_key_differs_on__target_type() {
    require_libs!("nvrtc");
    assert_ne!(
        make_key(SourceCode::Cxx("a"), &opts(), CompileTarget::Ptx, &[]),
        make_key(SourceCode::Cxx("a"), &opts(), CompileTarget::Cubin, &[])
    );
}

#[test]
fn test_make_program_cache_key_differs_on__arch() {
    require_libs!("nvrtc");
    let with_arch = |arch: &str| ProgramOptions {
        arch: Some(arch.into()),
        ..opts()
    };
    assert_ne!(
        make_key(
            SourceCode::Cxx("a"),
            &with_arch("sm_80"),
            CompileTarget::Cubin,
            &[]
        ),
        make_key(
            SourceCode::Cxx("a"),
            &with_arch("sm_90"),
            CompileTarget::Cubin,
            &[]
        )
    );
}

#[test]
fn test_make_program_cache_key_differs_on__option() {
    require_libs!("nvrtc");
    let fast = |use_fast_math| ProgramOptions {
        use_fast_math,
        ..opts()
    };
    assert_ne!(
        make_key(SourceCode::Cxx("a"), &fast(true), CompileTarget::Cubin, &[]),
        make_key(
            SourceCode::Cxx("a"),
            &fast(false),
            CompileTarget::Cubin,
            &[]
        )
    );
}

#[test]
fn test_make_program_cache_key_differs_on__options_name() {
    require_libs!("nvrtc");
    let named = |name: &str| ProgramOptions {
        name: Some(name.into()),
        ..opts()
    };
    assert_ne!(
        make_key(
            SourceCode::Cxx("a"),
            &named("kernel-a"),
            CompileTarget::Cubin,
            &[]
        ),
        make_key(
            SourceCode::Cxx("a"),
            &named("kernel-b"),
            CompileTarget::Cubin,
            &[]
        )
    );
}

#[test]
fn test_make_program_cache_key_name_expressions_order_insensitive() {
    require_libs!("nvrtc");
    assert_eq!(
        make_key(
            SourceCode::Cxx("a"),
            &opts(),
            CompileTarget::Cubin,
            &["f", "g"]
        ),
        make_key(
            SourceCode::Cxx("a"),
            &opts(),
            CompileTarget::Cubin,
            &["g", "f"]
        )
    );
}

/// `test_make_program_cache_key_ignores_name_expressions_for_non_nvrtc[<case>]`.
fn check_ignores_name_expressions(code: SourceCode<'_>, target: CompileTarget) {
    let k_none = make_program_cache_key(&code, &opts(), target, &[], &[]);
    let k_with = make_program_cache_key(&code, &opts(), target, &["foo", "bar"], &[]);
    assert_eq!(k_none.unwrap(), k_with.unwrap());
}

#[test]
fn test_make_program_cache_key_ignores_name_expressions_for_non_nvrtc__nvvm() {
    require_libs!("nvvm");
    check_ignores_name_expressions(SourceCode::Nvvm(b"abc"), CompileTarget::Ptx);
}

#[test]
fn test_make_program_cache_key_ignores_name_expressions_for_non_nvrtc__ptx() {
    require_libs!("nvJitLink");
    check_ignores_name_expressions(SourceCode::Ptx(".version 7.0"), CompileTarget::Cubin);
}
