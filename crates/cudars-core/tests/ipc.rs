//! IPC between two real processes: a pool, a buffer and an event exported by this
//! process, imported by a child process (this test binary re-run), data checked
//! both ways. Without a GPU it prints `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it
//! fails.
#![cfg(unix)]
// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::fd::{AsFd as _, AsRawFd as _, BorrowedFd};
use std::sync::Arc;

use cudars_tests::{hex, unhex};

use cudars_core::{
    Buffer, Device, DeviceMemoryPoolOptions, DeviceMemoryResource, Event, EventOptions,
    IpcBufferDescriptor, MemoryKind, PinnedMemoryResource, PinnedMemoryResourceOptions, PoolUuid,
    StreamOptions,
};

#[test]
fn descriptors_round_trip_as_bytes() {
    let d = IpcBufferDescriptor {
        data: [7u8; 64],
        size: 1 << 20,
    };
    assert_eq!(IpcBufferDescriptor::from_bytes(&d.to_bytes()).unwrap(), d);
    assert!(IpcBufferDescriptor::from_bytes(&[0u8; 71]).is_err());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(cudars_tests::proptest_cases(256)))]

    /// Any bytes: a descriptor exactly when there are 72 of them, which writes
    /// back to the same bytes; a typed refusal otherwise.
    #[test]
    fn descriptor_bytes_of_any_length(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..160)) {
        match IpcBufferDescriptor::from_bytes(&bytes) {
            Ok(d) => proptest::prop_assert_eq!(&d.to_bytes()[..], &bytes[..]),
            Err(cudars_core::Error::InvalidArgument { .. }) => proptest::prop_assert_ne!(bytes.len(), 72),
            Err(other) => proptest::prop_assert!(false, "{other:?}"),
        }
    }
}

/// The child's side: import, wait for the exporter's event, check, write back.
fn child() {
    let fd: i32 = std::env::var("IPC_FD").unwrap().parse().unwrap();
    let desc =
        IpcBufferDescriptor::from_bytes(&unhex(&std::env::var("IPC_DESC").unwrap())).unwrap();
    let ev: [u8; 64] = unhex(&std::env::var("IPC_EVENT").unwrap())
        .try_into()
        .unwrap();
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = dev.create_stream(StreamOptions::default()).unwrap();
    // SAFETY: the parent left this descriptor open (no close-on-exec) for us.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let uuid = PoolUuid(
        unhex(&std::env::var("IPC_UUID").unwrap())
            .try_into()
            .unwrap(),
    );
    // Imported once per process: the second import finds the first in the registry.
    let pool = DeviceMemoryResource::import_registered(&dev, fd, uuid).unwrap();
    assert!(Arc::ptr_eq(
        &pool,
        &DeviceMemoryResource::import_registered(&dev, fd, uuid).unwrap()
    ));
    assert!(pool.is_mapped());
    assert_eq!(pool.uuid(), Some(uuid));
    // The exporter allocates an imported pool's memory.
    let e = pool.allocate(256, &s).unwrap_err();
    assert!(matches!(e, cudars_core::Error::Unsupported { .. }), "{e:?}");
    // A descriptor that claims more than was exported is refused (and the
    // pointer it imported released), never a buffer larger than its memory.
    let inflated = IpcBufferDescriptor {
        size: desc.size + 4096,
        ..desc
    };
    match Buffer::from_registered_ipc_descriptor(uuid, &inflated, &s) {
        Err(cudars_core::Error::InvalidArgument { message, .. }) => {
            assert!(message.contains("exported allocation holds"), "{message}");
        }
        other => panic!("an inflated descriptor was not refused: {other:?}"),
    }
    s.sync().unwrap();
    let mut buf = Buffer::from_registered_ipc_descriptor(uuid, &desc, &s).unwrap();
    assert!(buf.is_mapped());
    // Issue 26, hole 9: a second import of a live allocation would be a second
    // owner of one mapping (two frees, two `&mut` views). It is refused, typed,
    // before the driver is asked.
    match Buffer::from_registered_ipc_descriptor(uuid, &desc, &s) {
        Err(e) if e.invalid_kind() == Some(cudars_core::InvalidKind::AlreadyImported) => {}
        other => panic!("a live allocation was imported twice: {other:?}"),
    }
    let done = Event::from_ipc_handle(&dev.context().unwrap(), &ev).unwrap();
    s.wait_event(&done).unwrap();
    let mut seen = vec![0u32; desc.size as usize / 4];
    buf.copy_to_host(&mut seen, &s).unwrap();
    assert!(
        seen.iter().all(|&x| x == 0x1234_5678),
        "the child saw other data"
    );
    buf.fill_u32(0x0bad_f00d, &s).unwrap();
    s.sync().unwrap();
    drop(buf);
    // Its owner gone (the free still queued), the allocation imports again.
    let again = Buffer::from_registered_ipc_descriptor(uuid, &desc, &s).unwrap();
    assert!(again.is_mapped());
    drop(again);
    s.sync().unwrap();
}

#[test]
fn pool_buffer_and_event_shared_with_a_child_process() {
    if std::env::var_os("IPC_FD").is_some() {
        child();
        return;
    }
    cudars_tests::require_gpu!();
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = dev.create_stream(StreamOptions::default()).unwrap();
    let pool = Arc::new(
        DeviceMemoryResource::new_pool(
            &dev,
            DeviceMemoryPoolOptions {
                ipc_enabled: true,
                ..Default::default()
            },
        )
        .unwrap(),
    );
    let mut buf = pool.allocate(1 << 20, &s).unwrap();
    assert!(!buf.is_mapped() && !pool.is_mapped());
    // Exportable at once: before any sync, and before the pool itself is exported.
    assert_eq!(buf.ipc_descriptor().unwrap().size, 1 << 20);
    buf.fill_u32(0x1234_5678, &s).unwrap();
    let ev = Event::new(
        &dev,
        EventOptions {
            ipc: true,
            ..Default::default()
        },
    )
    .unwrap();
    ev.record(&s).unwrap();
    s.sync().unwrap();
    let fd = pool.export_handle().unwrap();
    cudars_tests::run_test_with_fd(
        "pool_buffer_and_event_shared_with_a_child_process",
        fd.as_fd(),
        &[
            ("IPC_FD", fd.as_raw_fd().to_string()),
            ("IPC_DESC", hex(&buf.ipc_descriptor().unwrap().to_bytes())),
            ("IPC_EVENT", hex(&ev.ipc_handle().unwrap())),
            ("IPC_UUID", hex(&pool.uuid().unwrap().0)),
        ],
    );
    // The child's write is visible here.
    let mut back = vec![0u32; 1 << 18];
    buf.copy_to_host(&mut back, &s).unwrap();
    assert!(back.iter().all(|&x| x == 0x0bad_f00d));
    // Pools and events without IPC refuse to export.
    let plain = DeviceMemoryResource::new_pool(&dev, DeviceMemoryPoolOptions::default()).unwrap();
    assert!(plain.export_handle().is_err());
    assert!(
        Event::new(&dev, EventOptions::default())
            .unwrap()
            .ipc_handle()
            .is_err()
    );
}

/// The child's side of the pinned test: import the host pool and its buffer,
/// check the exporter's data through the device and the host, write back.
fn pinned_child() {
    let fd: i32 = std::env::var("PINNED_IPC_FD").unwrap().parse().unwrap();
    let desc = IpcBufferDescriptor::from_bytes(&unhex(&std::env::var("PINNED_IPC_DESC").unwrap()))
        .unwrap();
    let uuid = PoolUuid(
        unhex(&std::env::var("PINNED_IPC_UUID").unwrap())
            .try_into()
            .unwrap(),
    );
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = dev.create_stream(StreamOptions::default()).unwrap();
    // SAFETY: the parent left this descriptor open (no close-on-exec) for us.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let pool = PinnedMemoryResource::import_registered(&dev, fd, uuid).unwrap();
    assert!(Arc::ptr_eq(
        &pool,
        &PinnedMemoryResource::from_registry(uuid).unwrap()
    ));
    assert!(pool.is_mapped() && pool.is_ipc_enabled());
    assert_eq!(pool.uuid(), Some(uuid));
    // The registry knows the pool's type: it is not a device pool.
    assert!(matches!(
        DeviceMemoryResource::from_registry(uuid),
        Err(cudars_core::Error::InvalidArgument { .. })
    ));
    // An imported pool is not exported again, nor allocated from.
    assert!(matches!(
        pool.export_handle(),
        Err(cudars_core::Error::Unsupported { .. })
    ));
    assert!(matches!(
        pool.allocate(256, &s),
        Err(cudars_core::Error::Unsupported { .. })
    ));
    let mut buf = Buffer::from_registered_ipc_descriptor(uuid, &desc, &s).unwrap();
    assert!(buf.is_mapped());
    assert_eq!(
        (buf.kind(), buf.size() as u64),
        (MemoryKind::Pinned, desc.size)
    );
    // Through the device: a copy.
    let mut seen = vec![0u32; desc.size as usize / 4];
    buf.copy_to_host(&mut seen, &s).unwrap();
    assert!(
        seen.iter().all(|&x| x == 0x00c0_ffee),
        "the child saw other data"
    );
    // Through the host: the imported pinned memory is host memory here too.
    assert!(
        buf.host_slice_mut::<u32>()
            .unwrap()
            .iter()
            .all(|&x| x == 0x00c0_ffee),
        "the child's host view shows other data"
    );
    buf.fill_u32(0xfeed_f00d, &s).unwrap();
    s.sync().unwrap();
    drop(buf);
    s.sync().unwrap();
}

#[test]
fn a_pinned_pool_and_its_buffer_shared_with_a_child_process() {
    if std::env::var_os("PINNED_IPC_FD").is_some() {
        pinned_child();
        return;
    }
    cudars_tests::require_gpu!();
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = dev.create_stream(StreamOptions::default()).unwrap();
    // Without `ipc_enabled`, nothing to export.
    let plain = PinnedMemoryResource::new(&dev, PinnedMemoryResourceOptions::default()).unwrap();
    assert!(!plain.is_ipc_enabled() && plain.uuid().is_none());
    assert!(matches!(
        plain.export_handle(),
        Err(cudars_core::Error::Unsupported { .. })
    ));
    let plain = Arc::new(plain);
    assert!(matches!(
        plain.register(PoolUuid([1; 16])),
        Err(cudars_core::Error::Unsupported { .. })
    ));
    // A descriptor that is not an exported pool is the driver's error, no pool.
    let not_a_pool = std::fs::File::open("/dev/null").unwrap();
    let e = PinnedMemoryResource::import(&dev, not_a_pool.as_fd()).unwrap_err();
    assert!(e.driver_code().is_some(), "{e}");
    let pool = Arc::new(
        PinnedMemoryResource::new(
            &dev,
            PinnedMemoryResourceOptions {
                ipc_enabled: true,
                ..Default::default()
            },
        )
        .unwrap(),
    );
    assert!(pool.is_ipc_enabled() && !pool.is_mapped());
    let uuid = pool.uuid().unwrap();
    pool.register(uuid).unwrap();
    assert!(Arc::ptr_eq(
        &pool,
        &PinnedMemoryResource::from_registry(uuid).unwrap()
    ));
    let mut buf = pool.allocate(1 << 20, &s).unwrap();
    assert_eq!(buf.kind(), MemoryKind::Pinned);
    buf.fill_u32(0x00c0_ffee, &s).unwrap();
    s.sync().unwrap();
    let fd = pool.export_handle().unwrap();
    cudars_tests::run_test_with_fd(
        "a_pinned_pool_and_its_buffer_shared_with_a_child_process",
        fd.as_fd(),
        &[
            ("PINNED_IPC_FD", fd.as_raw_fd().to_string()),
            (
                "PINNED_IPC_DESC",
                hex(&buf.ipc_descriptor().unwrap().to_bytes()),
            ),
            ("PINNED_IPC_UUID", hex(&uuid.0)),
        ],
    );
    // The child's write is visible here, through the host.
    assert!(
        buf.host_slice_mut::<u32>()
            .unwrap()
            .iter()
            .all(|&x| x == 0xfeed_f00d),
        "the child's write is not visible"
    );
}
