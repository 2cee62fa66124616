//! `cuda_core/tests/memory_ipc/test_errors.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `memory_ipc_memory_ipc.rs` says.
//!
//! Python's `ChildErrorHarness` runs `CHILD_ACTION` in a child and checks the
//! exception it sends back; here the child asserts the error itself (an `Err` of the
//! matching kind) and the parent checks that the child passed. Python's
//! `ValueError` is `Error::InvalidArgument`, its `TypeError` for allocating from an
//! imported pool `Error::Unsupported`, its `RuntimeError` for an unknown resource
//! `Error::InvalidArgument` (no pool registered under the UUID).

use std::os::fd::AsFd as _;

use cudars_core::cudars_bindings::driver as sys;
use cudars_core::{Buffer, Error, IpcBufferDescriptor};

use crate::memory_ipc_memory_ipc::{
    Kind, Mr, NBYTES, child_fd, desc_hex, env_desc, env_uuid, ipc_device, new_stream, role, spawn,
    uuid_hex,
};

/// `IPCBufferDescriptor._init(b"\x00" * 8, NBYTES)`: a descriptor of 8 payload
/// bytes is refused when read, before any import (the one way to make one here).
fn truncated() {
    let mut bytes = vec![0u8; 8];
    bytes.extend_from_slice(&(NBYTES as u64).to_le_bytes());
    let r = IpcBufferDescriptor::from_bytes(&bytes);
    assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
}

#[test]
fn test_import_truncated_buffer_descriptor__DeviceMR() {
    truncated();
}

#[test]
fn test_import_truncated_buffer_descriptor__PinnedMR() {
    truncated();
}

/// What each harness's child does with the parent's pool (imported and
/// registered, as Python's pickled `self.mr`).
fn child(kind: Kind, action: &str) {
    let dev = ipc_device();
    let s = new_stream(&dev);
    let mr = Mr::import_registered(kind, &dev, child_fd(0), env_uuid());
    match action {
        "oversized" => {
            let r = Buffer::from_registered_ipc_descriptor(env_uuid(), &env_desc("BUF"), &s);
            match r {
                Err(Error::InvalidArgument { message, .. }) => {
                    assert!(message.contains("exported allocation holds"), "{message}");
                }
                other => panic!("{other:?}"),
            }
        }
        "alloc" => {
            let r = mr.allocate(NBYTES, &s);
            assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
        }
        "wrong_mr" => {
            let r = mr.import_buffer(&env_desc("BUF"), &s);
            assert_eq!(
                r.as_ref().err().and_then(Error::driver_code),
                Some(sys::CUDA_ERROR_INVALID_VALUE),
                "{r:?}"
            );
        }
        "dangling" => {
            let uuid2 = cudars_core::PoolUuid(
                cudars_tests::unhex(&std::env::var("UUID2").unwrap())
                    .try_into()
                    .unwrap(),
            );
            let r = Buffer::from_registered_ipc_descriptor(uuid2, &env_desc("BUF"), &s);
            assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
        }
        other => unreachable!("{other}"),
    }
    s.sync().unwrap();
}

/// The parent: the fixture's pool, `PARENT_ACTION`'s objects, the child.
fn harness(kind: Kind, action: &str, test: &str) {
    if role().is_some() {
        return child(kind, action);
    }
    let device = ipc_device();
    let s = new_stream(&device);
    let mr = Mr::new(kind, &device);
    let fd = mr.export_handle();
    let mut envs = vec![("CONFORMANCE_IPC_UUID", uuid_hex(&mr))];
    let mut keep = Vec::new();
    let mut extra = Vec::new();
    match action {
        "oversized" => {
            let buffer = mr.allocate(NBYTES, &s).unwrap();
            let mut d = buffer.ipc_descriptor().unwrap();
            d.size = (NBYTES * 100) as u64;
            envs.push(("BUF", cudars_tests::hex(&d.to_bytes())));
            keep.push(buffer);
        }
        "alloc" => {}
        "wrong_mr" | "dangling" => {
            // A second device pool: its buffer is not the fixture pool's, and (for
            // `dangling`) the pool is never sent.
            let mr2 = Mr::new(Kind::Device, &device);
            let buffer = mr2.allocate(NBYTES, &s).unwrap();
            envs.push(("BUF", desc_hex(&buffer)));
            envs.push(("UUID2", uuid_hex(&mr2)));
            keep.push(buffer);
            extra.push(mr2);
        }
        other => unreachable!("{other}"),
    }
    s.sync().unwrap();
    spawn(test, "child", &[fd.as_fd()], &envs);
    drop(keep);
    s.sync().unwrap();
}

macro_rules! harness_tests {
    ($(#[test] fn $name:ident() = ($kind:ident, $action:literal);)*) => {$(
        #[test]
        fn $name() {
            if role().is_none() {
                cudars_tests::require_gpu!();
            }
            harness(
                Kind::$kind,
                $action,
                concat!("memory_ipc_errors::", stringify!($name)),
            );
        }
    )*};
}

harness_tests! {
    #[test]
    fn TestImportOversizedBufferDescriptorSize__test_main__DeviceMR() = (Device, "oversized");
    #[test]
    fn TestImportOversizedBufferDescriptorSize__test_main__PinnedMR() = (Pinned, "oversized");
    #[test]
    fn TestAllocFromImportedMr__test_main__DeviceMR() = (Device, "alloc");
    #[test]
    fn TestAllocFromImportedMr__test_main__PinnedMR() = (Pinned, "alloc");
    #[test]
    fn TestImportWrongMR__test_main__DeviceMR() = (Device, "wrong_mr");
    #[test]
    fn TestImportWrongMR__test_main__PinnedMR() = (Pinned, "wrong_mr");
    #[test]
    fn TestDanglingBuffer__test_main__DeviceMR() = (Device, "dangling");
    #[test]
    fn TestDanglingBuffer__test_main__PinnedMR() = (Pinned, "dangling");
}
