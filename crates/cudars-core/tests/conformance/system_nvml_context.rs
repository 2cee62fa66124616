//! `cuda_core/tests/system/test_nvml_context.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says.
//!
//! `_nvml_context.initialize()`, `is_initialized()` and `validate()` are
//! `cudars_core::system::initialize()`, `is_initialized()` and `validate()`; Python's
//! private state `UNINITIALIZED` is `!is_initialized()` in a process that has not
//! touched NVML. Python runs each check in a fresh (spawned) process: here the test
//! re-runs itself in a child process (`cudars_tests::run_test_in_child`).

use cudars_core::system;

fn in_child(test: &str) -> bool {
    if cudars_tests::in_child() {
        return true;
    }
    cudars_tests::run_test_in_child(test, &[]);
    false
}

fn osrelease() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default()
}

/// A fresh process has not initialised NVML. No GPU needed.
#[test]
fn test_uninitialized() {
    if !in_child("system_nvml_context::test_uninitialized") {
        return;
    }
    assert!(!system::is_initialized());
}

#[test]
fn test_is_initialized() {
    cudars_tests::require_gpu!();
    if !in_child("system_nvml_context::test_is_initialized") {
        return;
    }
    system::initialize().unwrap();
    assert!(system::is_initialized());
}

#[test]
fn test_no_wsl() {
    if osrelease().contains("microsoft-standard") {
        println!("SKIPPED: Probably a WSL system");
        return;
    }
    assert!(!osrelease().contains("microsoft-standard"));
}

#[test]
fn test_wsl() {
    if !osrelease().contains("microsoft-standard") {
        println!("SKIPPED: Probably a non-WSL system");
        return;
    }
    assert!(osrelease().contains("microsoft-standard"));
}

#[test]
fn test_validate() {
    cudars_tests::require_gpu!();
    if !in_child("system_nvml_context::test_validate") {
        return;
    }
    system::initialize().unwrap();
    system::validate().unwrap();
}
