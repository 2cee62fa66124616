//! `cuda_core/tests/system/test_system_system.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says.
//!
//! `system.get_user_mode_driver_version()` is `system::user_mode_driver_version()` (a
//! `Version`, `major`/`minor`), `get_kernel_mode_driver_version()` is
//! `kernel_mode_driver_version()` (its numbers), `get_nvml_version()` is
//! `nvml_version()` (NVML's string, `13.580.65.06`: split at the dots),
//! `get_process_name(pid)` is `process_name(pid)`, `get_num_devices()` is
//! `device_count()`, `get_driver_branch()` is `driver_branch()`. NVML comes with the
//! driver: the tests need a GPU.

use cudars_core::cudars_bindings::driver as sys;
use cudars_core::system;

#[test]
fn test_user_mode_driver_version() {
    cudars_tests::require_gpu!();
    let umd = system::user_mode_driver_version().unwrap();
    let mut version = 0;
    assert_eq!(
        // SAFETY: `version` is valid for writes.
        unsafe { sys::cuDriverGetVersion(&mut version) },
        sys::CUDA_SUCCESS
    );
    assert_eq!(
        (umd.major, umd.minor),
        (version / 1000, (version % 1000) / 10),
        "UMD driver version does not match expected value"
    );
}

#[test]
fn test_kernel_mode_driver_version() {
    cudars_tests::require_gpu!();
    let kmd = system::kernel_mode_driver_version().unwrap();
    assert!(matches!(kmd.len(), 2 | 3), "{kmd:?}");
    assert!((400..1000).contains(&kmd[0]), "{kmd:?}");
    if let Some(&patch) = kmd.get(2) {
        assert!(patch <= 99, "{kmd:?}");
    }
}

#[test]
fn test_nvml_version() {
    cudars_tests::require_gpu!();
    let s = system::nvml_version().unwrap();
    let v: Vec<u32> = s.split('.').map(|x| x.parse().unwrap()).collect();
    assert!(matches!(v.len(), 3 | 4), "{s}");
    assert!(v[0] >= 10, "{s}");
    assert!((400..1000).contains(&v[1]), "{s}");
    if let Some(&patch) = v.get(3) {
        assert!(patch <= 99, "{s}");
    }
}

/// Python's process is `python`; this one is the test binary, whose name is the
/// file name of its executable.
#[test]
fn test_get_process_name() {
    cudars_tests::require_gpu!();
    for device in system::SystemDevice::all().unwrap() {
        let _ = device.compute_running_processes();
    }
    let name = match system::process_name(std::process::id()) {
        Ok(n) => n,
        Err(e) if e.nvml_kind() == Some(system::NvmlErrorKind::NotFound) => {
            println!("SKIPPED: Process not found");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let exe = std::env::current_exe().unwrap();
    let stem = exe.file_name().unwrap().to_str().unwrap();
    assert!(
        name.contains(&stem[..stem.len().min(15)]),
        "{name} / {stem}"
    );
}

#[test]
fn test_device_count() {
    cudars_tests::require_gpu!();
    let _count: u32 = system::device_count().unwrap();
}

#[test]
fn test_get_driver_branch() {
    cudars_tests::require_gpu!();
    assert!(!system::driver_branch().unwrap().is_empty());
}
