//! `cuda_core/tests/memory_ipc/test_peer_access.py` of `cuda.core` (the pinned commit
//! of `docs/reference/cuda-core-tests.txt`), ported as `memory_ipc_memory_ipc.rs`
//! says: `mr.peer_accessible_by` is `peer_accessible_by()` (a list of devices) and
//! `set_peer_accessible_by(&[…])`. Two GPUs, as Python's `ipc_mempool_device_x2`.

use std::os::fd::AsFd as _;
use std::sync::Arc;

use cudars_core::{Device, DeviceMemoryPoolOptions, DeviceMemoryResource, MemoryResource as _};

use crate::memory_ipc_memory_ipc::{POOL_SIZE, child_fd, env_uuid, role, spawn};

fn child() {
    let dev1 = Device::new(1).unwrap();
    dev1.set_current().unwrap();
    let dev0 = Device::new(0).unwrap();
    let mr = DeviceMemoryResource::import_registered(&dev1, child_fd(0), env_uuid()).unwrap();
    assert!(mr.is_mapped());
    assert_eq!(mr.device().ordinal(), 1);
    assert!(mr.peer_accessible_by().unwrap().is_empty());
    mr.set_peer_accessible_by(&[dev0]).unwrap();
    assert_eq!(mr.peer_accessible_by().unwrap(), vec![dev0]);
    mr.set_peer_accessible_by(&[]).unwrap();
    assert!(mr.peer_accessible_by().unwrap().is_empty());
}

#[test]
fn TestPeerAccessNotPreservedOnImport__test_main() {
    if role().is_some() {
        return child();
    }
    cudars_tests::require_gpus!(2);
    let (dev0, dev1) = (Device::new(0).unwrap(), Device::new(1).unwrap());
    dev1.set_current().unwrap();
    let mr = Arc::new(
        DeviceMemoryResource::new_pool(
            &dev1,
            DeviceMemoryPoolOptions {
                max_size: POOL_SIZE,
                ipc_enabled: true,
                ..Default::default()
            },
        )
        .unwrap(),
    );
    mr.set_peer_accessible_by(&[dev0]).unwrap();
    assert_eq!(mr.peer_accessible_by().unwrap(), vec![dev0]);
    let fd = mr.export_handle().unwrap();
    spawn(
        "memory_ipc_peer_access::TestPeerAccessNotPreservedOnImport__test_main",
        "child",
        &[fd.as_fd()],
        &[(
            "CONFORMANCE_IPC_UUID",
            cudars_tests::hex(&mr.uuid().unwrap().0),
        )],
    );
    assert_eq!(mr.peer_accessible_by().unwrap(), vec![dev0]);
    dev0.set_current().unwrap();
}
