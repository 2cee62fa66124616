//! What runs without a GPU: with cuRAND found (the CPU test run installs its
//! wheel) or missing, making a generator without a driver fails with a typed,
//! explained error and leaks nothing.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[test]
fn without_a_gpu_the_error_says_why() {
    if cudars_tests::gpu_status().is_ok() {
        return;
    }
    // No device: cudars-core's error comes first, before cuRAND is touched.
    let e = cudars_core::Device::new(0).unwrap_err();
    let e = cudars_rand::Error::from(e);
    if cudars_pathfinder::load_nvidia_dynamic_lib("cuda").is_err() {
        // No driver at all: the error says so, and its report names the library.
        assert!(e.is_unavailable(), "{}", e.report());
        assert!(e.report().to_string().contains("libcuda"), "{}", e.report());
    }
    // cuRAND itself loads (or says where it looked).
    match cudars_pathfinder::load_nvidia_dynamic_lib("curand") {
        Ok(_) => assert_eq!(cudars_bindings::curand::version().unwrap().major, 10),
        Err(_) => assert!(
            cudars_bindings::curand::version()
                .unwrap_err()
                .unavailable()
                .is_some()
        ),
    }
}
