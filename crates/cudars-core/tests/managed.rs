//! Managed memory on the GPU: the stream-ordered managed pool (CUDA 13 drivers)
//! and `cuMemAllocManaged`, `ManagedBuffer`'s prefetches, discards and advice
//! read back, and host NUMA "current" locations. Features of newer drivers
//! check their typed error on older ones. Without a GPU each test prints
//! `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails.
// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use cudars_core::{
    Buffer, Device, DeviceBuffer, Error, InvalidKind, Location, ManagedBuffer,
    ManagedMemoryResource, ManagedMemoryResourceOptions, MemoryKind, MemoryResource, PoolReuse,
    Stream, StreamOptions, prefetch_batch,
};
use cudars_tests::{driver_version, needs_driver, require_gpu};

fn setup() -> (Device, Stream) {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    (d, s)
}

fn read(b: &Buffer, s: &Stream) -> Vec<u32> {
    let mut h = vec![0u32; b.size() / 4];
    b.copy_to_host(&mut h, s).unwrap();
    h
}

fn invalid_kind(e: Error) -> InvalidKind {
    match e {
        Error::InvalidArgument { kind, .. } => kind,
        other => panic!("expected InvalidArgument, got {}", other.report()),
    }
}

/// Whether the device can run managed pools (CUDA 13 and concurrent managed
/// access, which every Linux data-centre GPU has).
fn has_managed_pools(d: &Device) -> bool {
    driver_version() >= 13000 && d.properties().concurrent_managed_access().unwrap()
}

/// The resources a managed test runs on: the default one (the managed pool
/// where the driver has one) and `cuMemAllocManaged`.
fn resources(d: &Device) -> Vec<Arc<ManagedMemoryResource>> {
    vec![
        Arc::new(ManagedMemoryResource::new(d).unwrap()),
        Arc::new(ManagedMemoryResource::legacy(d, None)),
    ]
}

#[test]
fn the_default_resource_is_the_managed_pool_where_the_driver_has_one() {
    require_gpu!();
    let (d, s) = setup();
    let mr = Arc::new(ManagedMemoryResource::new(&d).unwrap());
    assert_eq!(mr.is_pool(), has_managed_pools(&d), "{mr:?}");
    assert_eq!(mr.is_stream_ordered(), mr.is_pool());
    assert_eq!(mr.handle().is_some(), mr.is_pool());
    assert!(!mr.is_handle_owned() && !mr.is_ipc_enabled());
    assert_eq!(mr.kind(), MemoryKind::Managed);
    if mr.is_pool() {
        // A pool needs the stream to allocate on.
        let e = mr.allocate(4096, None).unwrap_err();
        assert_eq!(invalid_kind(e), InvalidKind::Other);
        let attrs = mr.attributes().unwrap();
        assert!(attrs.reserved_mem_current >= attrs.used_mem_current);
    } else {
        assert!(matches!(mr.attributes(), Err(Error::Unsupported { .. })));
    }
    let b = mr.allocate(4096, &s).unwrap();
    assert!(b.is_managed() && b.is_host_accessible());
    assert_eq!(b.kind(), MemoryKind::Managed);
}

#[test]
fn an_own_managed_pool_reports_its_attributes() {
    require_gpu!();
    let (d, s) = setup();
    let options = ManagedMemoryResourceOptions {
        preferred_location: Some(Location::Device(d)),
        release_threshold: Some(1 << 20),
    };
    let Some(mr) = needs_driver!(13000, ManagedMemoryResource::new_pool(&d, options)) else {
        return;
    };
    let mr = Arc::new(mr);
    assert!(mr.is_pool() && mr.is_handle_owned() && mr.is_stream_ordered());
    assert_eq!(mr.preferred_location(), Some(Location::Device(d)));
    assert_eq!(mr.release_threshold().unwrap(), 1 << 20);
    mr.set_release_threshold(u64::MAX).unwrap();
    assert_eq!(mr.attributes().unwrap().release_threshold, u64::MAX);
    for policy in [
        PoolReuse::FollowEventDependencies,
        PoolReuse::AllowOpportunistic,
        PoolReuse::AllowInternalDependencies,
    ] {
        mr.set_reuse(policy, false).unwrap();
        assert!(!mr.reuse(policy).unwrap(), "{policy:?}");
        mr.set_reuse(policy, true).unwrap();
        assert!(mr.reuse(policy).unwrap(), "{policy:?}");
    }
    assert_eq!(mr.used_bytes().unwrap(), 0);
    const N: usize = 1 << 18;
    let mut b = mr.allocate(N * 4, &s).unwrap();
    let attrs = mr.attributes().unwrap();
    assert!(attrs.used_mem_current >= (N * 4) as u64, "{attrs:?}");
    assert!(
        attrs.reserved_mem_current >= attrs.used_mem_current,
        "{attrs:?}"
    );
    assert!(attrs.used_mem_high >= attrs.used_mem_current, "{attrs:?}");
    // Written from the host, read on the device.
    let data: Vec<u32> = (0..N as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    b.host_slice_mut::<u32>().unwrap().copy_from_slice(&data);
    b.prefetch(Location::Device(d), &s).unwrap();
    assert_eq!(read(&b, &s), data);
    b.close(None).unwrap();
    s.sync().unwrap();
    assert_eq!(mr.used_bytes().unwrap(), 0);
    mr.reset_used_high().unwrap();
    assert_eq!(mr.used_high_bytes().unwrap(), 0);
    mr.trim_to(0).unwrap();
    assert_eq!(mr.reserved_bytes().unwrap(), 0);
}

#[test]
fn a_pool_takes_no_numa_current_location() {
    require_gpu!();
    let (d, _s) = setup();
    let r = ManagedMemoryResource::new_pool(
        &d,
        ManagedMemoryResourceOptions::preferred_at(Location::HostNumaCurrent),
    );
    if driver_version() < 13000 {
        needs_driver!(13000, r.map(|_| ()));
    } else {
        assert_eq!(invalid_kind(r.unwrap_err()), InvalidKind::Other);
    }
}

#[test]
fn a_managed_buffer_is_written_from_the_host_prefetched_and_discarded() {
    require_gpu!();
    let (d, s) = setup();
    const N: usize = 1 << 20;
    for mr in resources(&d) {
        let mut b = mr.allocate(N * 4, &s).unwrap();
        let data: Vec<u32> = (0..N as u32).map(|i| i ^ 0x5a5a_5a5a).collect();
        b.host_slice_mut::<u32>().unwrap().copy_from_slice(&data);
        b.prefetch(Location::Device(d), &s).unwrap();
        s.sync().unwrap();
        assert_eq!(
            b.last_prefetch_location().unwrap(),
            Some(Location::Device(d))
        );
        assert_eq!(read(&b, &s), data, "{mr:?}");
        b.prefetch(Location::Host, &s).unwrap();
        s.sync().unwrap();
        assert_eq!(b.last_prefetch_location().unwrap(), Some(Location::Host));
        assert_eq!(b.host_slice_mut::<u32>().unwrap(), data.as_slice());
        // A typed view of managed memory, and the batch call on the buffer itself.
        assert_eq!(b.view::<u32>().unwrap().len(), N);
        if needs_driver!(13000, prefetch_batch(&[(&b, Location::Device(d))], &s)).is_some() {
            assert_eq!(read(&b, &s), data);
        }
        // Discarded, then written again: the new data is what is read.
        if needs_driver!(13000, b.discard(&s)).is_none() {
            needs_driver!(13000, b.discard_prefetch(Location::Device(d), &s));
            continue;
        }
        b.fill_u32(5, &s).unwrap();
        assert!(read(&b, &s).iter().all(|&x| x == 5));
        b.discard_prefetch(Location::Device(d), &s).unwrap();
        b.fill_u32(6, &s).unwrap();
        assert!(read(&b, &s).iter().all(|&x| x == 6));
    }
}

#[test]
fn managed_advice_is_read_back() {
    require_gpu!();
    let (d, s) = setup();
    // `cuMemAllocManaged` memory: pool memory takes no advice (the test below).
    for mr in [
        Arc::new(ManagedMemoryResource::legacy(&d, None)),
        Arc::new(ManagedMemoryResource::legacy(&d, Some(Location::Host))),
    ] {
        let b = mr.allocate(1 << 20, &s).unwrap();
        assert!(!b.read_mostly().unwrap());
        b.set_read_mostly(true).unwrap();
        assert!(b.read_mostly().unwrap());
        b.set_read_mostly(false).unwrap();
        assert!(!b.read_mostly().unwrap());
        b.set_preferred_location(Some(Location::Device(d))).unwrap();
        assert_eq!(b.preferred_location().unwrap(), Some(Location::Device(d)));
        b.set_preferred_location(Some(Location::Host)).unwrap();
        assert_eq!(b.preferred_location().unwrap(), Some(Location::Host));
        b.set_preferred_location(None).unwrap();
        assert_eq!(b.preferred_location().unwrap(), None);
        b.set_accessed_by(Location::Device(d), true).unwrap();
        assert_eq!(b.accessed_by().unwrap(), vec![Location::Device(d)]);
        b.set_accessed_by(Location::Host, true).unwrap();
        let mut both = b.accessed_by().unwrap();
        both.sort_by_key(|l| matches!(l, Location::Host));
        assert_eq!(both, vec![Location::Device(d), Location::Host]);
        b.set_accessed_by(Location::Device(d), false).unwrap();
        b.set_accessed_by(Location::Host, false).unwrap();
        assert_eq!(b.accessed_by().unwrap(), vec![]);
        // The accessed-by advice takes no NUMA node, before the driver is asked.
        for loc in [Location::HostNuma(0), Location::HostNumaCurrent] {
            let e = b.set_accessed_by(loc, true).unwrap_err();
            assert_eq!(invalid_kind(e), InvalidKind::Other, "{loc:?}");
        }
    }
}

#[test]
fn numa_current_locations_prefetch_and_prefer() {
    require_gpu!();
    let (d, s) = setup();
    let mr = Arc::new(ManagedMemoryResource::legacy(&d, None));
    let mut b = mr.allocate(1 << 20, &s).unwrap();
    b.fill_u32(0x77, &s).unwrap();
    let host_side = |l: Option<Location>| {
        matches!(
            l,
            Some(Location::HostNumaCurrent | Location::HostNuma(_) | Location::Host)
        )
    };
    if needs_driver!(12020, b.prefetch(Location::HostNumaCurrent, &s)).is_none() {
        needs_driver!(
            12020,
            b.set_preferred_location(Some(Location::HostNumaCurrent))
        );
        return;
    }
    s.sync().unwrap();
    // The driver may not say where a prefetch to "the current host NUMA node"
    // went (driver 580 in a VM without NUMA reports no location: `None`); when it
    // does, it is the host.
    let last = b.last_prefetch_location().unwrap();
    assert!(last.is_none() || host_side(last), "{last:?}");
    assert!(
        b.host_slice_mut::<u32>()
            .unwrap()
            .iter()
            .all(|&x| x == 0x77)
    );
    b.set_preferred_location(Some(Location::HostNumaCurrent))
        .unwrap();
    // As for the prefetch: "the current node" may be reported as no location.
    let pref = b.preferred_location().unwrap();
    assert!(pref.is_none() || host_side(pref), "{pref:?}");
}

#[test]
fn the_classic_path_allocates_without_a_stream_and_advises_its_preference() {
    require_gpu!();
    let (d, s) = setup();
    let mr = Arc::new(ManagedMemoryResource::legacy(&d, Some(Location::Device(d))));
    assert!(!mr.is_pool() && !mr.is_stream_ordered() && mr.handle().is_none());
    assert_eq!(mr.preferred_location(), Some(Location::Device(d)));
    let e = mr.attributes().unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
    let mut b = mr.allocate(4096, None).unwrap();
    assert_eq!(b.preferred_location().unwrap(), Some(Location::Device(d)));
    b.fill_u32(3, &s).unwrap();
    assert!(read(&b, &s).iter().all(|&x| x == 3));
    // With a preferred location, the default constructor's pool or advice
    // lands there too.
    let pref =
        Arc::new(ManagedMemoryResource::with_preferred_location(&d, Location::Host).unwrap());
    assert_eq!(pref.preferred_location(), Some(Location::Host));
    assert_eq!(pref.is_pool(), has_managed_pools(&d));
    let b = pref.allocate(4096, &s).unwrap();
    assert!(b.is_managed());
}

#[test]
fn buffers_become_managed_buffers_only_when_managed() {
    require_gpu!();
    let (d, s) = setup();
    let erased: Arc<dyn MemoryResource> = Arc::new(ManagedMemoryResource::new(&d).unwrap());
    let b: Buffer = erased.allocate(4096, &s).unwrap();
    let ptr = b.ptr();
    let mut m = ManagedBuffer::from_buffer(b).unwrap();
    assert_eq!(m.ptr(), ptr);
    m.fill_u32(9, &s).unwrap();
    m.prefetch(Location::Device(d), &s).unwrap();
    let back: Buffer = m.into();
    assert!(read(&back, &s).iter().all(|&x| x == 9));
    // Borrowed: the buffer of a typed array of managed memory.
    let typed = DeviceBuffer::<u32>::from_buffer(back).unwrap();
    let borrowed = ManagedBuffer::from_buffer_ref(typed.as_buffer()).unwrap();
    borrowed.prefetch(Location::Host, &s).unwrap();
    s.sync().unwrap();
    assert_eq!(
        borrowed.last_prefetch_location().unwrap(),
        Some(Location::Host)
    );
    assert!(typed.to_vec(&s).unwrap().iter().all(|&x| x == 9));
    // Device memory is refused, and handed back whole.
    let plain = d.allocate(4096, &s).unwrap();
    let e = ManagedBuffer::from_buffer_ref(&plain).unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
    let (e, plain) = ManagedBuffer::from_buffer(plain).unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
    assert_eq!(plain.size(), 4096);
    assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
}

#[test]
fn pool_memory_is_prefetched_but_advice_is_the_drivers_typed_refusal() {
    require_gpu!();
    let (d, s) = setup();
    let mr = Arc::new(ManagedMemoryResource::new(&d).unwrap());
    if !mr.is_pool() {
        println!("no managed pool on this driver: the advice test above covers it");
        return;
    }
    let mut b = mr.allocate(1 << 20, &s).unwrap();
    b.fill_u32(9, &s).unwrap();
    b.prefetch(Location::Device(d), &s).unwrap();
    assert!(read(&b, &s).iter().all(|&x| x == 9));
    // CUDA 13.0 drivers refuse every `cuMemAdvise` on pool memory; one that
    // takes it is fine too.
    let refused_or_taken = |what: &str, r: cudars_core::Result<()>| match r {
        Ok(()) => println!("this driver advises pool memory ({what})"),
        Err(e) => assert_eq!(
            e.driver_code(),
            Some(cudars_core::cudars_bindings::driver::CUDA_ERROR_NOT_SUPPORTED),
            "{what}: {e}"
        ),
    };
    refused_or_taken("read-mostly", b.set_read_mostly(true));
    refused_or_taken(
        "preferred location",
        b.set_preferred_location(Some(Location::Host)),
    );
    refused_or_taken("accessed by", b.set_accessed_by(Location::Device(d), true));
    // The getters answer either way.
    b.read_mostly().unwrap();
    b.preferred_location().unwrap();
    b.accessed_by().unwrap();
}
