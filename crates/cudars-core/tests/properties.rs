//! GPU test of `DeviceProperties`. Without a GPU it prints `SKIPPED`; with
//! `CUDA_TEST_REQUIRE_GPU=1` it fails.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;

use cudars_core::Device;
use cudars_core::cudars_bindings::driver as sys;

/// How many properties there are: every attribute CUDA 13 defines (less `..._MAX`
/// and the aliases of another attribute's number).
const PROPERTY_COUNT: usize = 147;

/// Properties a driver older than the bindings may not know (it answers
/// `CUDA_ERROR_INVALID_VALUE`): the attributes added in CUDA 12.5 and later.
const MAY_BE_UNKNOWN: &[&str] = &[
    "d3d12_cig_supported",
    "mem_decompress_algorithm_mask",
    "mem_decompress_maximum_length",
    "vulkan_cig_supported",
    "gpu_pci_device_id",
    "gpu_pci_subsystem_id",
    "host_numa_virtual_memory_management_supported",
    "host_numa_memory_pools_supported",
    "host_numa_multinode_ipc_supported",
    "host_memory_pools_supported",
    "host_virtual_memory_management_supported",
    "host_alloc_dma_buf_supported",
    "only_partial_host_native_atomic_supported",
];

#[test]
fn device_properties() {
    cudars_tests::require_gpu!();
    let d = Device::new(0).unwrap();
    let p = d.properties();
    assert_eq!(p.device(), d);

    let (major, minor) = d.compute_capability().unwrap();
    assert_eq!(p.compute_capability_major().unwrap(), major);
    assert_eq!(p.compute_capability_minor().unwrap(), minor);
    assert!(p.max_threads_per_block().unwrap() >= 1024);
    assert_eq!(p.warp_size().unwrap(), 32);
    assert!(p.multiprocessor_count().unwrap() > 0);
    assert!(p.unified_addressing().unwrap());
    assert!(p.max_block_dim_x().unwrap() >= 1024);
    assert!(p.max_grid_dim_x().unwrap() >= 65535);
    assert!(p.max_shared_memory_per_block().unwrap() >= 48 * 1024);
    assert!(
        p.max_shared_memory_per_block_optin().unwrap() >= p.max_shared_memory_per_block().unwrap()
    );
    assert!(p.l2_cache_size().unwrap() > 0);
    assert!(p.host_numa_id().unwrap() >= -1);
    assert!(p.numa_id().unwrap() >= -1);

    let all = p.all();
    assert_eq!(all.len(), PROPERTY_COUNT);
    let names: HashSet<_> = all.iter().map(|(name, _)| *name).collect();
    assert_eq!(names.len(), all.len(), "duplicate property names");
    let value = |name: &str| {
        all.iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| v.as_ref().ok().copied())
    };
    assert_eq!(value("warp_size"), Some(32));
    assert_eq!(value("compute_capability_major"), Some(i64::from(major)));
    assert_eq!(value("unified_addressing"), Some(1));

    for (name, v) in &all {
        match v {
            Ok(v) => println!("{name}: {v}"),
            Err(e) => {
                println!("{name}: {e}");
                assert!(
                    MAY_BE_UNKNOWN.contains(name),
                    "{name} failed, and is not one an older driver may not know: {e}"
                );
                // The attributes of CUDA 13 are refused before the driver is
                // asked when it is older; the others are the driver's answer.
                let too_old = e
                    .required_driver()
                    .is_some_and(|r| r.needs.major == 13 && cudars_tests::driver_version() < 13000);
                assert!(
                    too_old || e.driver_code() == Some(sys::CUDA_ERROR_INVALID_VALUE),
                    "{name}: {e}"
                );
            }
        }
    }
}
