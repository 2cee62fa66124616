//! cuFile without a GPU: the library loads and says its version (or the error
//! says why it is missing, with every place searched), and opening the driver
//! either works or fails with cuFile's named status. The CPU test run installs
//! cuFile's wheel.
#![cfg(target_os = "linux")]
// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cudars_file::{Driver, DriverOptions, Error};
use cudars_tests::require_libs;

#[test]
fn version_or_why_cufile_is_missing() {
    match cudars_pathfinder::load_nvidia_dynamic_lib("cufile") {
        Ok(_) => {
            let v = cudars_file::version().unwrap();
            assert_eq!(v.major, 1, "cuFile {v}");
        }
        Err(pf) => {
            let e = cudars_file::version().unwrap_err();
            assert!(e.is_unavailable(), "{e:?}");
            let report = e.report().to_string();
            assert!(
                report.starts_with("asking cuFile its version (cuFileGetVersion): "),
                "{report}"
            );
            assert!(report.ends_with(&pf.to_string()), "{report}");
            assert!(matches!(Driver::open(), Err(Error::Unavailable { .. })));
        }
    }
}

/// Opening the driver needs a GPU (and `nvidia-fs` or compatibility mode). On a
/// machine without one it fails with cuFile's own status, saying what was done;
/// on a CUDA driver older than cuFile's CUDA major, with the typed error.
#[test]
fn driver_opens_or_fails_with_a_named_status() {
    require_libs!("cufile");
    let options = DriverOptions {
        allow_compat_mode: Some(true),
        force_compat_mode: None,
    };
    match Driver::open_with(&options) {
        Ok(driver) => {
            let p = driver.properties().unwrap();
            assert!(p.allow_compat_mode);
            if p.nvfs_version.is_none() {
                assert!(p.uses_compat_mode());
            }
            // The open driver is shared; its parameters can no longer be set.
            let again = Driver::open().unwrap();
            drop(again);
            match Driver::open_with(&options) {
                Err(e @ Error::InvalidArgument { .. }) => {
                    assert!(e.to_string().contains("already open"), "{e}")
                }
                other => panic!("{other:?}"),
            }
        }
        // A CUDA driver older than cuFile's CUDA major (the shim's, at 12.4):
        // the typed error, naming both.
        Err(e) if e.required_driver().is_some() => {
            assert!(cudars_tests::needs_library_driver!(Err::<Driver, _>(e)).is_none());
        }
        Err(e) => {
            let status = e.status().unwrap_or_else(|| panic!("{e:?}"));
            assert!(status.name().starts_with("CU_FILE_"), "{e}");
            assert!(
                e.to_string()
                    .starts_with("opening the cuFile driver (cuFileDriverOpen)"),
                "{e}"
            );
        }
    }
}
