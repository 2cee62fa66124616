//! What runs without a GPU: NCCL found or missing, its errors are typed and
//! explained; a unique id is made and read back when NCCL is there.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cudars_nccl::{Error, UniqueId};

#[test]
fn a_missing_nccl_is_unavailable_and_a_present_one_makes_ids() {
    match cudars_pathfinder::load_nvidia_dynamic_lib("nccl") {
        Ok(_) => {
            let (major, minor, _) = cudars_nccl::version().unwrap();
            assert_eq!(major, 2, "NCCL {major}.{minor}");
            // Making an id needs NCCL's bootstrap network, not a GPU.
            let id = UniqueId::new().unwrap();
            assert_ne!(id.as_bytes(), &[0; cudars_nccl::UNIQUE_ID_BYTES]);
            assert_eq!(id.to_string().parse::<UniqueId>().unwrap(), id);
        }
        Err(_) => {
            let e = UniqueId::new().unwrap_err();
            assert!(e.is_unavailable(), "{}", e.report());
            assert!(matches!(e, Error::Unavailable { .. }));
            let report = e.report().to_string();
            assert!(report.starts_with("making a NCCL unique id"), "{report}");
            assert!(report.contains("nccl"), "{report}");
            // The context is said once; the search list comes through `source()`.
            assert_eq!(report.matches("making a NCCL unique id").count(), 1);
            assert!(cudars_nccl::version().unwrap_err().is_unavailable());
        }
    }
}

#[test]
fn without_a_gpu_a_communicator_is_refused_before_nccl() {
    if cudars_tests::gpu_status().is_ok() {
        return;
    }
    // No device: cudars-core's error comes first, and says why.
    let e = Error::from(cudars_core::Device::new(0).unwrap_err());
    assert!(!e.report().to_string().is_empty());
    if cudars_pathfinder::load_nvidia_dynamic_lib("cuda").is_err() {
        assert!(e.is_unavailable(), "{}", e.report());
    }
}
