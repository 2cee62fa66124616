//! `cuda_core/tests/memory_ipc/test_leaks.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `memory_ipc_memory_ipc.rs` says:
//! `test_alloc_handle`, no descriptor leaked by asking a pool for its allocation
//! handle (`export_handle`, an `OwnedFd` closed when dropped) ten times, counted in
//! `/proc/self/fd` in a child process of its own (Python marks the test
//! thread-unsafe: other tests' descriptors would disturb the count). The
//! `test_pass_object` cases test Python's pickling of objects into
//! `multiprocessing` children (the porting guide's IPC section).

use crate::memory_ipc_memory_ipc::{Kind, Mr, ipc_device};

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn alloc_handle(kind: Kind, test: &str) {
    if !cudars_tests::in_child() {
        cudars_tests::run_test_in_child(test, &[]);
        return;
    }
    let device = ipc_device();
    let mr = Mr::new(kind, &device);
    let before = open_fds();
    for _ in 0..10 {
        drop(mr.export_handle());
    }
    assert_eq!(open_fds(), before, "descriptors leaked");
}

#[test]
fn test_alloc_handle__DeviceMR() {
    cudars_tests::require_gpu!();
    alloc_handle(
        Kind::Device,
        "memory_ipc_leaks::test_alloc_handle__DeviceMR",
    );
}

#[test]
fn test_alloc_handle__PinnedMR() {
    cudars_tests::require_gpu!();
    alloc_handle(
        Kind::Pinned,
        "memory_ipc_leaks::test_alloc_handle__PinnedMR",
    );
}
