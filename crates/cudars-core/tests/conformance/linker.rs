//! `cuda_core/tests/test_linker.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says:
//! each test named after its Python test, with its values, a Python exception an
//! `Err` of the matching kind, a port that fails because `cudars-core` does
//! otherwise `#[ignore = "differs: …"]`. These need no GPU and no library: the
//! option list and the input check come before any linker is loaded. The tests of
//! `test_linker.py` that link need a GPU (`ARCH` is the current device's) and are
//! not ported yet.


use cudars_core::{Error, Linker, LinkerOptions};

#[test]
fn test_linker_options_as_bytes_nvjitlink() {
    let options = LinkerOptions {
        debug: true,
        ftz: Some(true),
        max_register_count: Some(32),
        ..LinkerOptions::new("sm_80")
    };
    let options_str = options.to_nvjitlink_args().unwrap();
    for expected in ["-arch=sm_80", "-g", "-ftz=true", "-maxrregcount=32"] {
        assert!(
            options_str.iter().any(|o| o == expected),
            "{expected} not in {options_str:?}"
        );
    }
}

/// Python's `Linker()` takes default options; Rust's options name their
/// architecture, so the test names one.
#[test]
fn test_linker_empty_object_codes_raises() {
    match Linker::new(&[], LinkerOptions::new("sm_80")) {
        Err(Error::InvalidArgument { .. }) => {}
        Err(e) => panic!("expected Error::InvalidArgument (Python's ValueError), got {e:?}"),
        Ok(_) => panic!("a linker of no inputs was made"),
    }
}

/// `ARCH` is the current device's in Python; the options are only rendered,
/// so without a GPU any architecture does (`sm_90` then).
#[test]
fn test_linker_options_nvjitlink_options_as_str() {
    let arch = LinkerOptions::for_current_device()
        .map(|o| o.arch)
        .unwrap_or_else(|_| "sm_90".to_owned());
    let opts = LinkerOptions {
        debug: true,
        lineinfo: true,
        ..LinkerOptions::new(arch.clone())
    };
    let options: Vec<String> = opts.to_nvjitlink_args().unwrap();
    assert!(options.contains(&format!("-arch={arch}")), "{options:?}");
    assert!(options.iter().any(|o| o == "-g"), "{options:?}");
    assert!(options.iter().any(|o| o == "-lineinfo"), "{options:?}");
}
