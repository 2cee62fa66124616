//! `cuda_core/tests/test_cuda_utils.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says: the tests
//! whose private helper has a public counterpart here. `_check_driver_error(code)`
//! is `Error::from_driver(context, DriverError::new(code))` (an `Error::Driver`
//! naming the code), and `_check_nvrtc_error(result, handle=prog)` after a failed
//! compile is the `Error::Compile` that `Program::compile` returns, with NVRTC's
//! log. Every `CUresult` code is read from the bindings' generated constants (the
//! bindings' enum, which Python iterates).

use cudars_core::cudars_bindings::driver::{CUDA_SUCCESS, CUresult, DriverError};
use cudars_core::{CompileTarget, Error, Program, ProgramOptions, SourceCode};

/// Every `CUDA_ERROR_*` (and `CUDA_SUCCESS`) of the bindings, with its number.
fn driver_codes() -> Vec<(String, i32)> {
    const TYPES: &str = include_str!("../../../cudars-bindings/src/generated/driver/types.rs");
    let mut codes: Vec<(String, i32)> = TYPES
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("pub const ")?;
            let (name, rest) = rest.split_once(": cudaError_enum = cudaError_enum(")?;
            let n = rest.strip_suffix(");")?.parse().ok()?;
            Some((name.to_owned(), n))
        })
        .collect();
    codes.sort();
    codes.dedup();
    codes
}

#[test]
fn test_check_driver_error() {
    cudars_tests::require_gpu!();
    let codes = driver_codes();
    assert!(codes.len() > 50, "{codes:?}");
    let mut num_unexpected = 0;
    for (name, n) in &codes {
        let code = CUresult(*n as _);
        if code == CUDA_SUCCESS {
            continue;
        }
        let e = Error::from_driver("checking a driver status", DriverError::new(code));
        assert_eq!(e.driver_code(), Some(code), "{name}: {e:?}");
        // The whole report, as a Rust program prints an error: each level says its
        // own part once, and the driver's name is the source's (Python's message
        // is one string).
        let msg = cudars_core::Report::new(&e).to_string();
        if msg.contains(name.as_str()) {
            continue;
        }
        num_unexpected += 1;
        println!("{name}: {msg}");
    }
    // Python's smoke check: most codes are named in the message.
    assert!(
        (num_unexpected as f64) < codes.len() as f64 * 0.5,
        "{num_unexpected} of {}",
        codes.len()
    );
}

/// A compile that fails carries NVRTC's log. NVRTC from the wheels; no GPU.
#[test]
fn test_check_nvrtc_error_with_handle() {
    cudars_tests::require_libs!("nvrtc");
    let options = ProgramOptions {
        arch: Some("sm_90".into()),
        ..ProgramOptions::default()
    };
    let r = Program::new(SourceCode::Cxx("invalid code!@#$"), options)
        .unwrap()
        .compile(CompileTarget::Ptx, &[]);
    match r {
        Err(Error::Compile { log, .. }) => assert!(!log.is_empty(), "empty log"),
        other => panic!("{other:?}"),
    }
}
