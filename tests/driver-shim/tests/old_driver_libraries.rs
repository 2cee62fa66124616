//! The library crates on a CUDA 12.4 driver, without a GPU: a child process
//! loads the shim as `libcuda.so.1` in its fake-driver mode at 12.4, finds the
//! real library wheels (the CPU test run installs cuRAND's and cuFile's, the GPU
//! packages' machines have them all), and makes a cuBLAS and a cuBLASLt handle,
//! a cuFFT plan, a cuSOLVER handle, a cuRAND generator and cuFile's driver session. A CUDA 13
//! library must be refused before it is called, with the typed
//! `LibraryError::DriverTooOld` naming the library, its version, the driver it
//! needs (13.0) and the one found (12.4); the refusal makes no driver call and
//! leaves no handle behind. A missing library is `Unavailable`, and a CUDA 12
//! library passes the check (a 12.4 driver runs it). NCCL, which does not say
//! its CUDA major, is called: a CUDA 13 NCCL's runtime refuses the driver, and
//! that refusal must be the same typed error, naming 13.0.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use cudars_core::cudars_bindings::Version;
use cudars_core::{Device, LibraryError, Stream, StreamOptions};
use cudars_tests::DriverShim;

/// `major.minor`.
fn v(major: i32, minor: i32) -> Version {
    Version { major, minor }
}

/// Set in the child: which library to check.
const CHILD: &str = "CUDA_RS_OLD_DRIVER_LIBRARY_CHILD";

/// The emulated driver: CUDA 12.4.
const DRIVER: &str = "12040";

/// Runs `test` again as a child at [`DRIVER`] on the fake driver, where the
/// pathfinder still finds the wheels it finds here.
fn in_child(test: &str) {
    common::run_fake_driver_child_with(
        test,
        &[(CHILD, "1"), ("CUDA_RS_SHIM_DRIVER_VERSION", DRIVER)],
        // Where the pathfinder looks for NVIDIA's libraries.
        &[
            "HOME",
            "VIRTUAL_ENV",
            "CONDA_PREFIX",
            "CUDA_HOME",
            "CUDA_PATH",
        ],
        &format!("{test} checked at {DRIVER}"),
    );
}

/// The child's side for one library: `found` is the library's version and
/// its CUDA major as the bindings see it (`None`: not found), `make` makes the
/// handle on a stream.
fn check<T, S, X>(
    test: &str,
    name: &str,
    found: Option<(Version, i32)>,
    make: impl FnOnce(&Stream) -> Result<T, LibraryError<S, X>>,
) where
    S: std::error::Error + 'static,
    X: std::error::Error + 'static,
{
    let shim = DriverShim::find().expect("the shim is the loaded driver");
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let live_before = shim.counts("live");
    let stream = dev.create_stream(StreamOptions::default()).unwrap();
    // Restarts the counts: what follows is the library's alone.
    shim.set_faults("");
    let result = make(&stream);
    let calls = shim.counts("driver");
    match found {
        None => {
            let e = result
                .as_ref()
                .err()
                .unwrap_or_else(|| panic!("{name} is missing but worked"));
            assert!(e.is_unavailable(), "{}", e.report());
            println!("{name} is not installed: {}", e.report());
        }
        Some((version, cuda)) if cuda > 12 => {
            let e = result.as_ref().err().unwrap_or_else(|| {
                panic!("{name} {version} (CUDA {cuda}) worked on a 12.4 driver")
            });
            let LibraryError::DriverTooOld {
                release, requires, ..
            } = e
            else {
                panic!("expected DriverTooOld, got: {}", e.report());
            };
            assert_eq!(release.library, name);
            assert_eq!(release.version, version);
            assert_eq!(release.cuda_major, cuda);
            assert_eq!(requires.needs, v(cuda, 0));
            assert_eq!(requires.driver, v(12, 4));
            assert_eq!(e.required_driver(), Some(&**requires));
            assert!(
                e.to_string().ends_with(&format!(
                    "{name} {version} needs a CUDA {cuda}.0 driver; this driver is CUDA 12.4"
                )),
                "{e}"
            );
            // Each level once: nothing below it.
            assert_eq!(e.report().to_string(), e.to_string());
            // Refused before anything was done: no context made current, no
            // library call reached the driver.
            assert!(
                calls
                    .iter()
                    .all(|(f, n)| *n == 0 || f == "cuDriverGetVersion"),
                "the refusal called the driver: {calls:?}"
            );
            println!("as expected: {}", e.report());
        }
        Some((version, cuda)) => {
            // A CUDA 12 library: a 12.4 driver runs it, the check lets it by
            // (what the library then does with a fake driver is its own affair).
            if let Err(e) = &result {
                assert!(
                    e.required_driver().is_none(),
                    "{name} {version}: {}",
                    e.report()
                );
            }
            println!("{name} {version} is CUDA {cuda}'s: not refused on a 12.4 driver");
        }
    }
    drop(result);
    drop(stream);
    assert_eq!(shim.counts("live"), live_before, "a handle leaked");
    println!("{test} checked at {DRIVER}");
}

/// The library's version and CUDA major, from its own query.
fn found<E>(
    version: Result<Version, E>,
    cuda: impl FnOnce(Version) -> i32,
) -> Option<(Version, i32)> {
    version.ok().map(|v| (v, cuda(v)))
}

#[test]
fn cublas_on_a_cuda_12_4_driver() {
    let test = "cublas_on_a_cuda_12_4_driver";
    if std::env::var_os(CHILD).is_none() {
        return in_child(test);
    }
    let cublas = found(cudars_core::cudars_bindings::cublas::version(), |v| v.major);
    check(test, "cuBLAS", cublas, cudars_blas::Blas::new);
}

#[test]
fn cublaslt_on_a_cuda_12_4_driver() {
    let test = "cublaslt_on_a_cuda_12_4_driver";
    if std::env::var_os(CHILD).is_none() {
        return in_child(test);
    }
    let lt = found(cudars_core::cudars_bindings::cublaslt::version(), |v| {
        v.major
    });
    // The workspace is allocated after the check: nothing to free.
    check(test, "cuBLASLt", lt, cudars_blas::BlasLt::new);
}

#[test]
fn cufft_on_a_cuda_12_4_driver() {
    let test = "cufft_on_a_cuda_12_4_driver";
    if std::env::var_os(CHILD).is_none() {
        return in_child(test);
    }
    // cuFFT numbers itself one behind CUDA.
    let cufft = found(cudars_core::cudars_bindings::cufft::version(), |v| {
        v.major + 1
    });
    check(test, "cuFFT", cufft, |s| {
        cudars_fft::Plan::<f32>::new(&[64], 1, cudars_fft::Kind::C2C, s)
    });
}

#[test]
fn cusolver_on_a_cuda_12_4_driver() {
    let test = "cusolver_on_a_cuda_12_4_driver";
    if std::env::var_os(CHILD).is_none() {
        return in_child(test);
    }
    // cuSOLVER numbers itself one behind CUDA, as cuFFT.
    let cusolver = found(cudars_core::cudars_bindings::cusolver::version(), |v| {
        v.major + 1
    });
    check(test, "cuSOLVER", cusolver, cudars_solver::Solver::new);
}

#[test]
fn curand_on_a_cuda_12_4_driver() {
    let test = "curand_on_a_cuda_12_4_driver";
    if std::env::var_os(CHILD).is_none() {
        return in_child(test);
    }
    // cuRAND 10.3 is CUDA 12's, 10.4 on CUDA 13's.
    let curand = found(cudars_core::cudars_bindings::curand::version(), |v| {
        if v.minor >= 4 { 13 } else { 12 }
    });
    check(test, "cuRAND", curand, |s| {
        cudars_rand::Generator::new(cudars_rand::RngKind::Philox4x32_10, s)
    });
}

#[test]
fn cufile_on_a_cuda_12_4_driver() {
    let test = "cufile_on_a_cuda_12_4_driver";
    if std::env::var_os(CHILD).is_none() {
        return in_child(test);
    }
    // cuFile 1.5 to 1.14 are CUDA 12's, 1.15 on CUDA 13's.
    let cufile = found(cudars_core::cudars_bindings::cufile::version(), |v| {
        if v.minor >= 15 { 13 } else { 12 }
    });
    let refused = cufile.is_some_and(|(_, cuda)| cuda > 12);
    check(test, "cuFile", cufile, |_| cudars_file::Driver::open());
    if refused {
        // cuFile was left untouched: asked again, with parameters (which it
        // takes only before its driver opens), it is the same refusal.
        let again = cudars_file::Driver::open_with(&cudars_file::DriverOptions {
            allow_compat_mode: Some(true),
            force_compat_mode: None,
        });
        assert!(
            matches!(again, Err(LibraryError::DriverTooOld { .. })),
            "{again:?}"
        );
    }
}

/// NCCL, which does not say its CUDA major, is called: a CUDA 13 NCCL's own
/// CUDA runtime refuses the 12.4 driver when a communicator is made, which
/// cudars-nccl reports as `DriverTooOld` naming the first major after the
/// driver's (13.0). A CUDA 12 NCCL is not refused for the driver (what it then
/// does on a fake driver is its own affair); a missing one is `Unavailable`.
#[test]
fn nccl_on_a_cuda_12_4_driver() {
    let test = "nccl_on_a_cuda_12_4_driver";
    if std::env::var_os(CHILD).is_none() {
        return in_child(test);
    }
    let dev = Device::new(0).unwrap();
    let result = cudars_nccl::Communicator::init_all(std::slice::from_ref(&dev));
    let Ok(nccl) = cudars_nccl::version() else {
        let e = result.expect_err("NCCL is missing but worked");
        assert!(e.is_unavailable(), "{}", e.report());
        println!("NCCL is not installed: {}", e.report());
        println!("{test} checked at {DRIVER}");
        return;
    };
    match &result {
        Err(
            e @ LibraryError::DriverTooOld {
                release, requires, ..
            },
        ) => {
            assert_eq!(release.library, "NCCL");
            assert_eq!(
                (
                    release.version.major,
                    release.version.minor,
                    release.cuda_major
                ),
                (nccl.0, nccl.1, 13)
            );
            assert_eq!(requires.needs, v(13, 0));
            assert_eq!(requires.driver, v(12, 4));
            assert_eq!(e.required_driver(), Some(&**requires));
            assert_eq!(
                e.to_string(),
                format!(
                    "making a NCCL communicator of 1 ranks in one process: NCCL {}.{} \
                     (built for a newer CUDA major) needs a CUDA 13.0 driver; this driver \
                     is CUDA 12.4",
                    nccl.0, nccl.1
                )
            );
            println!("as expected: {}", e.report());
        }
        Err(e) => assert!(
            !e.report()
                .to_string()
                .contains("driver version is insufficient"),
            "NCCL refused the driver, not reported as DriverTooOld: {}",
            e.report()
        ),
        Ok(_) => {}
    }
    if let Err(e) = &result {
        println!("NCCL {nccl:?}: {}", e.report());
    }
    let refused = matches!(result, Err(LibraryError::DriverTooOld { .. }));
    drop(result);
    if refused {
        // Joining by unique id is refused alike, blocking or not (the
        // non-blocking init is `World::join`'s).
        let id = cudars_nccl::UniqueId::new().unwrap();
        let config = cudars_nccl::CommConfig::default();
        for joined in [
            cudars_nccl::Communicator::init_rank(&dev, 1, &id, 0),
            cudars_nccl::Communicator::init_rank_timeout(
                &dev,
                1,
                &id,
                0,
                &config,
                std::time::Duration::from_secs(10),
            ),
        ] {
            let e = joined.expect_err("a refused NCCL joined");
            let req = e
                .required_driver()
                .unwrap_or_else(|| panic!("expected DriverTooOld, got: {}", e.report()));
            assert_eq!((req.needs, req.driver), (v(13, 0), v(12, 4)), "{e}");
            assert!(
                e.to_string().starts_with("joining a NCCL communicator"),
                "{e}"
            );
            println!("as expected: {}", e.report());
        }
    }
    println!("{test} checked at {DRIVER}");
}
