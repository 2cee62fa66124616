//! What runs without a GPU: with cuSOLVER found (the GPU machine's toolkit) or
//! missing (the CPU test run, which installs no cuSOLVER wheel: it needs cuBLAS's
//! and cuSPARSE's), its version or the pathfinder's reason, and making a handle
//! without a driver fails with a typed, explained error.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[test]
fn cusolver_reports_its_version_or_why_it_is_missing() {
    match cudars_pathfinder::load_nvidia_dynamic_lib("cusolver") {
        Ok(_) => {
            let v = cudars_bindings::cusolver::version().unwrap();
            // cuSOLVER 11 is CUDA 12's, 12 CUDA 13's.
            assert!(v.major == 11 || v.major == 12, "cuSOLVER {v}");
            cudars_tests::assert_expected_major("cuSOLVER", v.major + 1);
        }
        Err(pf) => {
            let e = cudars_bindings::cusolver::version().unwrap_err();
            let reason = e.unavailable().expect("a missing library is unavailable");
            assert_eq!(reason.api(), cudars_bindings::ApiKind::Cusolver);
            let shown =
                std::iter::successors(Some(&e as &(dyn std::error::Error + 'static)), |e| {
                    e.source()
                })
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(": ");
            assert!(shown.contains(&pf.to_string()), "{shown}");
        }
    }
}

#[test]
fn without_a_gpu_the_error_says_why() {
    if cudars_tests::gpu_status().is_ok() {
        return;
    }
    // No device: cudars-core's error comes first, before cuSOLVER is touched.
    let e = cudars_core::Device::new(0).unwrap_err();
    let e = cudars_solver::Error::from(e);
    if cudars_pathfinder::load_nvidia_dynamic_lib("cuda").is_err() {
        // No driver at all: the error says so, and its report names the library.
        assert!(e.is_unavailable(), "{}", e.report());
        assert!(e.report().to_string().contains("libcuda"), "{}", e.report());
    }
}
