//! `cuda_core/tests/test_memory_peer_access.py` of `cuda.core` (the pinned commit
//! of `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says: the
//! tests of what `peer_accessible_by` reports. Two GPUs that can reach each
//! other; with fewer, each test prints why it skips, and fails when
//! `CUDA_TEST_REQUIRE_MULTI_GPU=1` (as `tests/multi_gpu.rs`).
//!
//! `DeviceMemoryResource(dev)` (the device's current pool, not owned) is
//! `DeviceMemoryResource::default_pool(&dev)`, `DeviceMemoryResource(dev,
//! DeviceMemoryResourceOptions())` (a pool of its own) `new_pool`;
//! `mr.peer_accessible_by = [...]` is `set_peer_accessible_by(&[...])?`, and the
//! set Python reads is `peer_accessible_by()?`, a `Vec<Device>` in ordinal
//! order. The tests of the Python set proxy's protocol (`MutableSet`
//! operators, `int` or `Device` members, `repr`, the one-driver-call spies) are
//! Python's object model; the copies that fail without pool access do not
//! fail here (porting guide, "Copies between devices need no pool access").

use std::sync::{Mutex, MutexGuard, PoisonError};

use cudars_core::{Device, DeviceMemoryPoolOptions, DeviceMemoryResource};

/// Held by the tests that change the access of device 0's default pool, which
/// the whole process shares (Python marks the file `thread_unsafe`).
static DEFAULT_POOL_ACCESS: Mutex<()> = Mutex::new(());

fn default_pool_access() -> MutexGuard<'static, ()> {
    DEFAULT_POOL_ACCESS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// `mempool_device_x2`: devices 0 and 1, with memory pools and able to reach
/// each other (`None`: skipped, printed).
fn mempool_device_x2() -> Option<(Device, Device)> {
    if !cudars_tests::require_gpus(&cudars_tests::current_test_name(), 2) {
        return None;
    }
    let (dev0, dev1) = (Device::new(0).unwrap(), Device::new(1).unwrap());
    for d in [dev0, dev1] {
        if !d.properties().memory_pools_supported().unwrap() {
            eprintln!("SKIPPED: Device does not support mempool operations");
            return None;
        }
    }
    if !dev0.can_access_peer(&dev1).unwrap() || !dev1.can_access_peer(&dev0).unwrap() {
        eprintln!("SKIPPED: devices 0 and 1 cannot access each other's memory");
        return None;
    }
    dev0.set_current().unwrap();
    Some((dev0, dev1))
}

#[test]
fn test_peer_access_shared_pool_queries_driver() {
    let Some((dev0, dev1)) = mempool_device_x2() else {
        return;
    };
    let _serial = default_pool_access();
    let dmr1 = DeviceMemoryResource::default_pool(&dev0).unwrap();
    dmr1.set_peer_accessible_by(&[dev1]).unwrap();
    let dmr2 = DeviceMemoryResource::default_pool(&dev0).unwrap();
    assert!(dmr2.peer_accessible_by().unwrap().contains(&dev1));

    dmr2.set_peer_accessible_by(&[]).unwrap();
    assert!(dmr1.peer_accessible_by().unwrap().is_empty());

    dmr1.set_peer_accessible_by(&[dev1]).unwrap();
    let dmr3 = DeviceMemoryResource::default_pool(&dev0).unwrap();
    assert_eq!(dmr1.peer_accessible_by().unwrap(), vec![dev1]);
    assert_eq!(dmr2.peer_accessible_by().unwrap(), vec![dev1]);
    assert_eq!(dmr3.peer_accessible_by().unwrap(), vec![dev1]);
    dmr3.set_peer_accessible_by(&[]).unwrap();
    assert!(
        DeviceMemoryResource::default_pool(&dev0)
            .unwrap()
            .peer_accessible_by()
            .unwrap()
            .is_empty()
    );
    assert!(dmr1.peer_accessible_by().unwrap().is_empty());
    assert!(dmr2.peer_accessible_by().unwrap().is_empty());
    assert!(dmr3.peer_accessible_by().unwrap().is_empty());
}

#[test]
fn test_peer_accessible_by_no_cache_across_proxies() {
    let Some((dev0, dev1)) = mempool_device_x2() else {
        return;
    };
    let _serial = default_pool_access();
    let dmr_a = DeviceMemoryResource::default_pool(&dev0).unwrap();
    let dmr_b = DeviceMemoryResource::default_pool(&dev0).unwrap();
    dmr_a.set_peer_accessible_by(&[]).unwrap();

    // Python's proxy, acquired before the change: each read asks the driver.
    dmr_b.set_peer_accessible_by(&[dev1]).unwrap();
    assert!(dmr_a.peer_accessible_by().unwrap().contains(&dev1));
    assert_eq!(dmr_a.peer_accessible_by().unwrap(), vec![dev1]);

    dmr_b.set_peer_accessible_by(&[]).unwrap();
    assert!(dmr_a.peer_accessible_by().unwrap().is_empty());
}

#[test]
fn test_peer_accessible_by_iteration_order_is_sorted() {
    let Some((dev0, dev1)) = mempool_device_x2() else {
        return;
    };
    let dmr = DeviceMemoryResource::new_pool(&dev0, DeviceMemoryPoolOptions::default()).unwrap();
    dmr.set_peer_accessible_by(&[dev1]).unwrap();
    let ids: Vec<usize> = dmr
        .peer_accessible_by()
        .unwrap()
        .iter()
        .map(Device::ordinal)
        .collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(ids, sorted);
}

/// `isolated_dmr_x2`: an owned pool on device 0 with no peers.
fn isolated_dmr_x2() -> Option<(DeviceMemoryResource, Device, Device)> {
    let (dev0, dev1) = mempool_device_x2()?;
    let dmr = DeviceMemoryResource::new_pool(&dev0, DeviceMemoryPoolOptions::default()).unwrap();
    dmr.set_peer_accessible_by(&[]).unwrap();
    Some((dmr, dev0, dev1))
}

/// The owner is left out of every write (`add`, `discard`, `|=`, `-=` are
/// whole sets here) and is never reported as a peer. Python's `add` of the
/// ordinal (`dev0.device_id`) is the same `Device` here.
#[test]
fn test_peer_accessible_by_silently_ignores_owner() {
    let Some((dmr, dev0, dev1)) = isolated_dmr_x2() else {
        return;
    };
    // `add(dev0)`
    dmr.set_peer_accessible_by(&[dev0]).unwrap();
    assert!(dmr.peer_accessible_by().unwrap().is_empty());
    // `discard(dev0)`
    let rest: Vec<Device> = dmr
        .peer_accessible_by()
        .unwrap()
        .into_iter()
        .filter(|d| *d != dev0)
        .collect();
    dmr.set_peer_accessible_by(&rest).unwrap();
    assert!(dmr.peer_accessible_by().unwrap().is_empty());
    assert!(!dmr.peer_accessible_by().unwrap().contains(&dev0));
    // `|= {dev0, dev1}`
    dmr.set_peer_accessible_by(&[dev0, dev1]).unwrap();
    assert_eq!(dmr.peer_accessible_by().unwrap(), vec![dev1]);
    // `-= {dev0, dev1}`
    dmr.set_peer_accessible_by(&[]).unwrap();
    assert!(dmr.peer_accessible_by().unwrap().is_empty());
}
