//! `cuda_core/tests/memory/test_managed_ops.py` of `cuda.core` (the pinned commit
//! of `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says. Every
//! test but `TestLocationCoerce`'s needs a GPU with concurrent managed access.
//!
//! `ManagedBuffer`'s properties are methods here: `buf.read_mostly = v` is
//! `set_read_mostly(v)?`, `buf.preferred_location = loc` is
//! `set_preferred_location(Some(loc))?` (`None` unsets it),
//! `buf.accessed_by.add(loc)` / `.discard(loc)` are `set_accessed_by(loc,
//! true/false)?` and `loc in buf.accessed_by` is `accessed_by()?.contains(&loc)`.
//! `Device`/`Host()`/`Host(numa_id=n)`/`Host.numa_current()` are
//! `Location::Device(d)`/`Location::Host`/`Location::HostNuma(n)`/
//! `Location::HostNumaCurrent`. The free functions `prefetch_batch(stream, bufs,
//! locs)`, `discard_batch(stream, bufs)` and `discard_prefetch_batch(stream, bufs,
//! locs)` take `(buffer, location)` pairs (or the buffers) and then the stream.
//! The test helper `_last_prefetch_location(buf)` (an ordinal, -1 for the host)
//! is `last_prefetch_location()?`.
//!
//! The `managed_buffer` fixture's two sources: `pool` is
//! `ManagedMemoryResource::new(&dev)` (the driver's managed pool, Python's
//! `ManagedMemoryResource()`), `external` memory of `cuMemAllocManaged`
//! (`ManagedMemoryResource::legacy`) wrapped with `Buffer::from_raw` and taken
//! over by `ManagedBuffer::from_buffer` (Python's `ManagedBuffer.from_handle`).

use std::sync::Arc;

use cudars_core::{
    Buffer, Device, Error, Location, ManagedBuffer, ManagedMemoryResource, MemoryKind, Stream,
    StreamOptions, discard_batch, discard_prefetch_batch, prefetch_batch,
};

/// `mmap.PAGESIZE` on the x86-64 hosts the suite runs on: one buffer a page.
const PAGE_SIZE: usize = 4096;

/// `location_ops_device`: the current device, if it has concurrent managed
/// access (else a skip, printed).
fn location_ops_device() -> Option<Device> {
    let d = Device::new(0).unwrap();
    let p = d.properties();
    if !p.managed_memory().unwrap() || !p.concurrent_managed_access().unwrap() {
        eprintln!("SKIPPED: Device does not support concurrent managed memory access");
        return None;
    }
    d.set_current().unwrap();
    Some(d)
}

/// `discard_prefetch_device`: every visible device has concurrent managed access.
fn discard_prefetch_device() -> Option<Device> {
    let d = location_ops_device()?;
    for other in Device::all().unwrap() {
        if !other.properties().concurrent_managed_access().unwrap() {
            eprintln!(
                "SKIPPED: discard-prefetch requires concurrent managed access on all visible devices"
            );
            return None;
        }
    }
    Some(d)
}

/// `location_ops_mr`: `ManagedMemoryResource()`.
fn location_ops_mr(d: &Device) -> Arc<ManagedMemoryResource> {
    Arc::new(ManagedMemoryResource::new(d).unwrap())
}

fn stream(d: &Device) -> Stream {
    d.create_stream(StreamOptions::default()).unwrap()
}

/// A managed buffer of one page from `source` (`"pool"` or `"external"`), with
/// what must outlive it (`plain`, the external memory's owner).
fn managed_buffer(d: &Device, source: &str) -> (ManagedBuffer, Option<ManagedBuffer>) {
    let s = d.default_stream().unwrap();
    if source == "pool" {
        (location_ops_mr(d).allocate(PAGE_SIZE, &s).unwrap(), None)
    } else {
        let (buf, plain) = external_managed_buffer(d);
        (buf, Some(plain))
    }
}

/// `external_managed_buffer`: `cuMemAllocManaged` memory (`plain`) wrapped as a
/// `ManagedBuffer` that does not own it.
fn external_managed_buffer(d: &Device) -> (ManagedBuffer, ManagedBuffer) {
    let plain = Arc::new(ManagedMemoryResource::legacy(d, None))
        .allocate(PAGE_SIZE, None)
        .unwrap();
    // SAFETY: `plain`'s memory, managed; the callers drop the wrapper first.
    let wrapped = unsafe { Buffer::from_raw(plain.ptr(), plain.size(), MemoryKind::Managed, d) };
    let buf = ManagedBuffer::from_buffer(wrapped)
        .map_err(|(e, _)| e)
        .unwrap();
    (buf, plain)
}

fn is_invalid<T: std::fmt::Debug>(r: cudars_core::Result<T>) -> bool {
    matches!(r, Err(Error::InvalidArgument { .. }))
}

// ---------------------------------------------------------------------------
// TestLocationCoerce: `_coerce_location`'s accepted inputs are the variants
// of `Location`; its refusals (an int, a string, `None` where a location is
// required) do not compile.

#[test]
fn TestLocationCoerce__test_device_passthrough() {
    cudars_tests::require_gpu!();
    let dev = Device::new(0).unwrap();
    let spec = Location::Device(dev);
    assert!(matches!(spec, Location::Device(d) if d.ordinal() == dev.ordinal()));
}

#[test]
fn TestLocationCoerce__test_host_passthrough() {
    let spec = Location::Host;
    assert!(matches!(spec, Location::Host));
    assert_eq!(spec.numa_id(), None);
}

#[test]
fn TestLocationCoerce__test_host_numa_passthrough() {
    let spec = Location::HostNuma(3);
    assert_eq!(spec.numa_id(), Some(3));
    assert!(!spec.is_numa_current());
}

#[test]
fn TestLocationCoerce__test_host_numa_current_passthrough() {
    let spec = Location::HostNumaCurrent;
    assert!(spec.is_numa_current());
}

#[test]
fn TestLocationCoerce__test_none_when_allowed() {
    // `allow_none=True`: an `Option<Location>`, as `set_preferred_location` takes.
    let spec: Option<Location> = None;
    assert!(spec.is_none());
}

// ---------------------------------------------------------------------------
// The batch functions

#[test]
fn TestPrefetchBatch__test_same_location() {
    cudars_tests::require_gpu!();
    let Some(device) = location_ops_device() else {
        return;
    };
    let mr = location_ops_mr(&device);
    let ds = device.default_stream().unwrap();
    let bufs: Vec<ManagedBuffer> = (0..3)
        .map(|_| mr.allocate(PAGE_SIZE, &ds).unwrap())
        .collect();
    let stream = stream(&device);
    let items: Vec<(&ManagedBuffer, Location)> =
        bufs.iter().map(|b| (b, Location::Device(device))).collect();
    prefetch_batch(&items, &stream).unwrap();
    stream.sync().unwrap();
    for buf in &bufs {
        assert_eq!(
            buf.last_prefetch_location().unwrap(),
            Some(Location::Device(device))
        );
    }
}

fn page_base(b: &Buffer) -> u64 {
    b.ptr() & !(PAGE_SIZE as u64 - 1)
}

#[test]
fn TestPrefetchBatch__test_per_buffer_location() {
    cudars_tests::require_gpu!();
    let Some(device) = location_ops_device() else {
        return;
    };
    let mr = location_ops_mr(&device);
    let ds = device.default_stream().unwrap();
    let bufs: Vec<ManagedBuffer> = (0..2)
        .map(|_| mr.allocate(PAGE_SIZE, &ds).unwrap())
        .collect();
    assert_ne!(page_base(&bufs[0]), page_base(&bufs[1]));
    let stream = stream(&device);
    prefetch_batch(
        &[
            (&bufs[0], Location::Host),
            (&bufs[1], Location::Device(device)),
        ],
        &stream,
    )
    .unwrap();
    stream.sync().unwrap();
    assert_eq!(
        bufs[0].last_prefetch_location().unwrap(),
        Some(Location::Host)
    );
    assert_eq!(
        bufs[1].last_prefetch_location().unwrap(),
        Some(Location::Device(device))
    );
}

#[test]
fn TestDiscardBatch__test_basic() {
    cudars_tests::require_gpu!();
    let Some(device) = location_ops_device() else {
        return;
    };
    let mr = location_ops_mr(&device);
    let ds = device.default_stream().unwrap();
    let mut bufs: Vec<ManagedBuffer> = (0..3)
        .map(|_| mr.allocate(PAGE_SIZE, &ds).unwrap())
        .collect();
    let stream = stream(&device);
    let items: Vec<(&ManagedBuffer, Location)> =
        bufs.iter().map(|b| (b, Location::Device(device))).collect();
    prefetch_batch(&items, &stream).unwrap();
    stream.sync().unwrap();
    discard_batch(&mut bufs, &stream).unwrap();
    stream.sync().unwrap();
}

#[test]
fn TestDiscardPrefetchBatch__test_same_location() {
    cudars_tests::require_gpu!();
    let Some(device) = location_ops_device() else {
        return;
    };
    let mr = location_ops_mr(&device);
    let ds = device.default_stream().unwrap();
    let mut bufs: Vec<ManagedBuffer> = (0..2)
        .map(|_| mr.allocate(PAGE_SIZE, &ds).unwrap())
        .collect();
    let stream = stream(&device);
    let items: Vec<(&ManagedBuffer, Location)> = bufs.iter().map(|b| (b, Location::Host)).collect();
    prefetch_batch(&items, &stream).unwrap();
    stream.sync().unwrap();
    let mut items: Vec<(&mut ManagedBuffer, Location)> = bufs
        .iter_mut()
        .map(|b| (b, Location::Device(device)))
        .collect();
    discard_prefetch_batch(&mut items, &stream).unwrap();
    stream.sync().unwrap();
    for buf in &bufs {
        assert_eq!(
            buf.last_prefetch_location().unwrap(),
            Some(Location::Device(device))
        );
    }
}

// ---------------------------------------------------------------------------
// TestManagedBuffer

#[test]
fn TestManagedBuffer__test_allocate_returns_managed_buffer() {
    cudars_tests::require_gpu!();
    let Some(device) = location_ops_device() else {
        return;
    };
    let ds = device.default_stream().unwrap();
    // `isinstance(buf, ManagedBuffer)`: the return type says it.
    let buf: ManagedBuffer = location_ops_mr(&device).allocate(PAGE_SIZE, &ds).unwrap();
    assert!(buf.is_managed());
    buf.close(None).unwrap();
}

#[test]
fn TestManagedBuffer__test_from_handle() {
    cudars_tests::require_gpu!();
    let device = Device::new(0).unwrap();
    if !device.properties().managed_memory().unwrap() {
        eprintln!("SKIPPED: Device does not support managed memory operations");
        return;
    }
    device.set_current().unwrap();
    let (mbuf, plain) = external_managed_buffer(&device);
    // `isinstance(mbuf, Buffer)`: it dereferences to one.
    let as_buffer: &Buffer = &mbuf;
    assert_eq!(as_buffer.size(), plain.size());
    drop(mbuf);
}

#[test]
fn TestManagedBuffer__test_read_mostly_roundtrip() {
    cudars_tests::require_gpu!();
    let Some(device) = location_ops_device() else {
        return;
    };
    let (buf, _plain) = external_managed_buffer(&device);
    assert!(!buf.read_mostly().unwrap());
    buf.set_read_mostly(true).unwrap();
    assert!(buf.read_mostly().unwrap());
    buf.set_read_mostly(false).unwrap();
    assert!(!buf.read_mostly().unwrap());
}

#[test]
fn TestManagedBuffer__test_preferred_location_roundtrip() {
    cudars_tests::require_gpu!();
    let Some(device) = location_ops_device() else {
        return;
    };
    let (buf, _plain) = external_managed_buffer(&device);
    buf.set_preferred_location(Some(Location::Device(device)))
        .unwrap();
    let got = buf.preferred_location().unwrap();
    assert!(matches!(got, Some(Location::Device(d)) if d.ordinal() == device.ordinal()));
    buf.set_preferred_location(Some(Location::Host)).unwrap();
    assert_eq!(buf.preferred_location().unwrap(), Some(Location::Host));
    buf.set_preferred_location(None).unwrap();
    assert_eq!(buf.preferred_location().unwrap(), None);
}

#[test]
fn TestManagedBuffer__test_preferred_location_roundtrip_host_numa() {
    cudars_tests::require_gpu!();
    let Some(device) = location_ops_device() else {
        return;
    };
    let (buf, _plain) = external_managed_buffer(&device);
    if let Err(e) = buf.set_preferred_location(Some(Location::HostNuma(0))) {
        eprintln!(
            "SKIPPED: host_numa preferred_location not supported by this driver / hardware: {e}"
        );
        return;
    }
    let got = buf.preferred_location().unwrap();
    if got != Some(Location::HostNuma(0)) {
        eprintln!(
            "SKIPPED: host_numa preferred_location not supported by this driver / hardware ({got:?})"
        );
        return;
    }
    assert_eq!(got, Some(Location::HostNuma(0)));
}

#[test]
fn TestManagedBuffer__test_accessed_by_add_discard() {
    cudars_tests::require_gpu!();
    let Some(device) = location_ops_device() else {
        return;
    };
    let (buf, _plain) = external_managed_buffer(&device);
    let dev = Location::Device(device);
    assert!(!buf.accessed_by().unwrap().contains(&dev));
    buf.set_accessed_by(dev, true).unwrap();
    assert!(buf.accessed_by().unwrap().contains(&dev));
    buf.set_accessed_by(dev, false).unwrap();
    assert!(!buf.accessed_by().unwrap().contains(&dev));
}

/// `buf.accessed_by = {…}`: set exactly these (add the new, discard the rest).
fn assign_accessed_by(buf: &ManagedBuffer, set: &[Location]) -> cudars_core::Result<()> {
    // Every location is checked before any advice changes (Python's "validates
    // kind before mutation"): `set_accessed_by` refuses a NUMA location before
    // calling the driver, so try each refused kind first.
    for &l in set {
        if matches!(l, Location::HostNuma(_) | Location::HostNumaCurrent) {
            buf.set_accessed_by(l, true)?;
        }
    }
    for l in buf.accessed_by()? {
        if !set.contains(&l) {
            buf.set_accessed_by(l, false)?;
        }
    }
    for &l in set {
        buf.set_accessed_by(l, true)?;
    }
    Ok(())
}

#[test]
fn TestManagedBuffer__test_accessed_by_set_assignment() {
    cudars_tests::require_gpu!();
    let Some(device) = location_ops_device() else {
        return;
    };
    let (buf, _plain) = external_managed_buffer(&device);
    let dev = Location::Device(device);
    assign_accessed_by(&buf, &[dev]).unwrap();
    assert!(buf.accessed_by().unwrap().contains(&dev));
    assign_accessed_by(&buf, &[]).unwrap();
    assert!(!buf.accessed_by().unwrap().contains(&dev));
}

#[test]
fn TestManagedBuffer__test_accessed_by_set_assignment_validates_kind_before_mutation() {
    cudars_tests::require_gpu!();
    let Some(device) = location_ops_device() else {
        return;
    };
    let (buf, _plain) = external_managed_buffer(&device);
    let dev = Location::Device(device);
    assign_accessed_by(&buf, &[dev, Location::Host]).unwrap();
    let now = buf.accessed_by().unwrap();
    assert!(now.contains(&dev) && now.contains(&Location::Host));
    assert!(is_invalid(assign_accessed_by(
        &buf,
        &[dev, Location::HostNuma(0)]
    )));
    let now = buf.accessed_by().unwrap();
    assert!(now.contains(&dev) && now.contains(&Location::Host));
}

fn instance_prefetch(source: &str) {
    let Some(device) = location_ops_device() else {
        return;
    };
    let (buf, _plain) = managed_buffer(&device, source);
    let stream = stream(&device);
    buf.prefetch(Location::Device(device), &stream).unwrap();
    stream.sync().unwrap();
    assert_eq!(
        buf.last_prefetch_location().unwrap(),
        Some(Location::Device(device))
    );
}

#[test]
fn TestManagedBuffer__test_instance_prefetch__pool() {
    cudars_tests::require_gpu!();
    instance_prefetch("pool");
}

#[test]
fn TestManagedBuffer__test_instance_prefetch__external() {
    cudars_tests::require_gpu!();
    instance_prefetch("external");
}

fn instance_discard(source: &str) {
    let Some(device) = location_ops_device() else {
        return;
    };
    let (mut buf, _plain) = managed_buffer(&device, source);
    let stream = stream(&device);
    buf.prefetch(Location::Device(device), &stream).unwrap();
    stream.sync().unwrap();
    buf.discard(&stream).unwrap();
    stream.sync().unwrap();
}

#[test]
fn TestManagedBuffer__test_instance_discard__pool() {
    cudars_tests::require_gpu!();
    instance_discard("pool");
}

#[test]
fn TestManagedBuffer__test_instance_discard__external() {
    cudars_tests::require_gpu!();
    instance_discard("external");
}

#[test]
fn TestManagedBuffer__test_instance_discard_prefetch() {
    cudars_tests::require_gpu!();
    let Some(device) = discard_prefetch_device() else {
        return;
    };
    let ds = device.default_stream().unwrap();
    let mut buf = location_ops_mr(&device).allocate(PAGE_SIZE, &ds).unwrap();
    let stream = stream(&device);
    buf.prefetch(Location::Host, &stream).unwrap();
    stream.sync().unwrap();
    buf.discard_prefetch(Location::Device(device), &stream)
        .unwrap();
    stream.sync().unwrap();
    assert_eq!(
        buf.last_prefetch_location().unwrap(),
        Some(Location::Device(device))
    );
}

/// `prefetch(None)` does not compile (the location is required); a host NUMA
/// node for the accessed-by advice is refused.
fn operation_validation(source: &str) {
    let Some(device) = location_ops_device() else {
        return;
    };
    let (buf, _plain) = managed_buffer(&device, source);
    assert!(is_invalid(buf.set_accessed_by(Location::HostNuma(0), true)));
}

#[test]
fn TestManagedBuffer__test_operation_validation__pool() {
    cudars_tests::require_gpu!();
    operation_validation("pool");
}

#[test]
fn TestManagedBuffer__test_operation_validation__external() {
    cudars_tests::require_gpu!();
    operation_validation("external");
}

#[test]
fn TestManagedBuffer__test_advise_location_validation() {
    cudars_tests::require_gpu!();
    let Some(device) = location_ops_device() else {
        return;
    };
    let (buf, _plain) = external_managed_buffer(&device);
    buf.set_read_mostly(true).unwrap();
    buf.set_preferred_location(Some(Location::Device(device)))
        .unwrap();
    buf.set_preferred_location(Some(Location::Host)).unwrap();
    assert!(is_invalid(buf.set_accessed_by(Location::HostNuma(0), true)));
    assert!(is_invalid(
        buf.set_accessed_by(Location::HostNumaCurrent, true)
    ));
}
