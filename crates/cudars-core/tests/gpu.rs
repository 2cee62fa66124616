//! GPU tests of devices, streams, events, buffers and memory resources. Without a
//! GPU each test prints `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use cudars_core::cudars_bindings::driver::{self as sys, CUdeviceptr};
use cudars_core::{
    Buffer, CompileTarget, Context, ContextOptions, Device, DeviceMemoryPoolOptions,
    DeviceMemoryResource, Error, Event, EventOptions, InvalidKind, LaunchConfig,
    LegacyPinnedMemoryResource, LinkerOptions, Location, ManagedMemoryResource, MemoryKind,
    MemoryResource, MemoryResourceExt, PinnedMemoryResource, PinnedMemoryResourceOptions,
    PreviousContext, Program, ProgramOptions, SourceCode, Stream, StreamOptions, launch,
};
use cudars_tests::{require_gpu, require_libs};
use half::f16;

/// Held by the tests that measure or fill the whole device's memory, so that one
/// does not see the other's allocations.
static DEVICE_MEMORY: Mutex<()> = Mutex::new(());

fn dev0() -> Device {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    d
}

/// A cheap deterministic pseudo-random sequence.
fn random_u32(n: usize, seed: u64) -> Vec<u32> {
    cudars_tests::xorshift64(seed)
        .take(n)
        .map(|x| x as u32)
        .collect()
}

/// Issue 43 point 4: the device's default pool keeps freed memory, as
/// `cuda.core`'s `DeviceMemoryResource(dev)` makes it: its release threshold,
/// read back from the driver, is raised from 0 to the maximum; a threshold set
/// to something else is kept. (No other test of this binary sets the default
/// pool's threshold.)
#[test]
fn the_default_pool_keeps_freed_memory_as_cuda_core_makes_it() {
    require_gpu!();
    let d = dev0();
    let pool = d.default_memory_resource().unwrap();
    assert_eq!(pool.release_threshold().unwrap(), u64::MAX);
    let again = DeviceMemoryResource::default_pool(&d).unwrap();
    assert_eq!(again.release_threshold().unwrap(), u64::MAX);
    // Set to the driver's 0 by hand: the next `default_pool` raises it again,
    // as cuda.core's constructor does.
    again.set_release_threshold(0).unwrap();
    assert_eq!(pool.release_threshold().unwrap(), 0);
    let raised = DeviceMemoryResource::default_pool(&d).unwrap();
    assert_eq!(raised.release_threshold().unwrap(), u64::MAX);
    // Any other value is the user's, and kept.
    raised.set_release_threshold(64 << 20).unwrap();
    let kept = DeviceMemoryResource::default_pool(&d).unwrap();
    assert_eq!(kept.release_threshold().unwrap(), 64 << 20);
    kept.set_release_threshold(u64::MAX).unwrap();
}

#[test]
fn device_identity() {
    require_gpu!();
    let d = dev0();
    assert!(Device::count().unwrap() >= 1);
    assert_eq!(Device::all().unwrap()[0], d);
    let name = d.name().unwrap();
    assert!(!name.is_empty());
    let (major, minor) = d.compute_capability().unwrap();
    assert!(major >= 5);
    assert_eq!(d.arch().unwrap(), format!("sm_{major}{minor}"));
    let uuid = d.uuid_string().unwrap();
    assert!(uuid.starts_with("GPU-") && uuid.len() == 40, "{uuid}");
    let pci = d.pci_bus_id().unwrap();
    assert_eq!(pci.matches(':').count(), 2, "{pci}");
    assert!(d.total_memory().unwrap() > 1 << 30);
    assert!(d.can_access_peer(&d).unwrap());
    d.enable_peer_access(&d).unwrap();
    d.sync().unwrap();
    let n = Device::count().unwrap();
    let e = Device::new(n).unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange), "{e}");
    println!("{name} {uuid} {pci}");
}

#[test]
fn streams_with_options() {
    require_gpu!();
    let d = dev0();
    let (least, greatest) = d.stream_priority_range().unwrap();
    assert!(greatest <= least);
    let s = d
        .create_stream(StreamOptions {
            non_blocking: true,
            priority: Some(greatest),
        })
        .unwrap();
    assert_eq!(s.priority().unwrap(), greatest);
    assert!(s.is_owned());
    s.sync().unwrap();
    assert!(s.is_done().unwrap());
    let bad = d.create_stream(StreamOptions {
        non_blocking: false,
        priority: Some(least + 1),
    });
    assert!(matches!(
        bad,
        Err(Error::InvalidArgument {
            kind: InvalidKind::OutOfRange,
            ..
        })
    ));
    let legacy = Stream::legacy_default(&d).unwrap();
    assert!(!legacy.is_owned());
    legacy.sync().unwrap();
    Stream::per_thread_default(&d).unwrap().sync().unwrap();
    assert!(s.is_non_blocking().unwrap());
    d.default_stream().unwrap().sync().unwrap();
    // A foreign handle is used but not destroyed.
    // SAFETY: `s` outlives `foreign`, which does not own the handle.
    let foreign = unsafe { Stream::from_raw(s.handle(), s.context()) };
    foreign.sync().unwrap();
    drop(foreign);
    s.sync().unwrap();
}

#[test]
fn the_driver_says_what_memory_a_pointer_is() {
    require_gpu!();
    let d = dev0();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let device = DeviceMemoryResource::default_pool(&d)
        .unwrap()
        .allocate(4096, &s)
        .unwrap();
    let pinned = Arc::new(LegacyPinnedMemoryResource::new(&d))
        .allocate(4096, &s)
        .unwrap();
    let managed = Arc::new(ManagedMemoryResource::legacy(&d, None))
        .allocate(4096, &s)
        .unwrap();
    for (b, kind) in [
        (&device, MemoryKind::Device),
        (&pinned, MemoryKind::Pinned),
        (&managed, MemoryKind::Managed),
    ] {
        assert_eq!(MemoryKind::of_pointer(b.ptr()).unwrap(), kind);
        // A foreign pointer wrapped with the driver's answer reports what
        // cuda.core's Buffer.from_handle reports for it.
        // SAFETY: `b` owns the memory and outlives the view, which issues no work.
        let view = unsafe {
            Buffer::from_raw(
                b.ptr(),
                b.size(),
                MemoryKind::of_pointer(b.ptr()).unwrap(),
                &d,
            )
        };
        assert_eq!(view.is_host_accessible(), kind != MemoryKind::Device);
        assert_eq!(view.is_managed(), kind == MemoryKind::Managed);
    }
    // Pageable host memory is not CUDA's.
    let on_the_stack = [0u8; 64];
    let e = MemoryKind::of_pointer(on_the_stack.as_ptr() as CUdeviceptr).unwrap_err();
    assert!(e.driver_code().is_some(), "{e}");
    s.sync().unwrap();
}

#[test]
fn buffers_round_trip_and_fill() {
    require_gpu!();
    let d = dev0();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let pool = DeviceMemoryResource::default_pool(&d).unwrap();
    let n = 1 << 20;
    let data = random_u32(n, 42);
    let mut a = pool.allocate(n * 4, &s).unwrap();
    assert_eq!(
        (a.size(), a.kind(), a.device()),
        (n * 4, MemoryKind::Device, &d)
    );
    assert!(a.is_device_accessible() && !a.is_host_accessible() && !a.is_managed());
    a.copy_from_host(&data, &s).unwrap();
    let mut b = Buffer::allocate(pool.clone(), n * 4, &s).unwrap();
    b.copy_from(&a, &s).unwrap();
    let mut back = vec![0u32; n];
    b.copy_to_host(&mut back, &s).unwrap();
    assert_eq!(back, data);
    // copy_to is copy_from the other way round.
    let mut c = pool.allocate(n * 4, &s).unwrap();
    b.copy_to(&mut c, &s).unwrap();
    c.copy_to_host(&mut back, &s).unwrap();
    assert_eq!(back, data);
    b.fill_u32(0xabcd_ef01, &s).unwrap();
    b.copy_to_host(&mut back, &s).unwrap();
    assert!(back.iter().all(|&x| x == 0xabcd_ef01));
    b.fill_u16(0x1234, &s).unwrap();
    b.copy_to_host(&mut back, &s).unwrap();
    assert!(back.iter().all(|&x| x == 0x1234_1234));
    b.fill_u8(0x5a, &s).unwrap();
    let mut bytes = vec![0u8; n * 4];
    b.copy_to_host(&mut bytes, &s).unwrap();
    assert!(bytes.iter().all(|&x| x == 0x5a));
    // Out-of-range and zero-size requests are errors, not crashes.
    let mut too_big = vec![0u32; n + 1];
    assert!(matches!(
        b.copy_to_host(&mut too_big, &s),
        Err(Error::InvalidArgument {
            kind: InvalidKind::OutOfRange,
            ..
        })
    ));
    assert!(matches!(
        b.copy_from_host(&too_big, &s),
        Err(Error::InvalidArgument {
            kind: InvalidKind::OutOfRange,
            ..
        })
    ));
    assert!(matches!(
        Buffer::allocate(pool.clone(), 0, &s),
        Err(Error::InvalidArgument {
            kind: InvalidKind::ZeroSize,
            ..
        })
    ));
    let mut odd = Buffer::allocate(pool.clone(), 3, &s).unwrap();
    assert!(matches!(
        odd.fill_u16(1, &s),
        Err(Error::InvalidArgument { .. })
    ));
    // The free stream can change, and close reports errors.
    let other = d
        .create_stream(StreamOptions {
            non_blocking: true,
            priority: None,
        })
        .unwrap();
    odd.set_free_stream(&other).unwrap();
    odd.close(None).unwrap();
    a.close(Some(&s)).unwrap();
    // Dropping the stream before the buffer is safe: the buffer keeps it.
    drop(s);
    drop(b);
    other.sync().unwrap();
}

#[test]
fn every_resource_allocates() {
    require_gpu!();
    let d = dev0();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let own = Arc::new(
        DeviceMemoryResource::new_pool(
            &d,
            DeviceMemoryPoolOptions {
                max_size: 0,
                release_threshold: Some(1 << 26),
                ipc_enabled: false,
            },
        )
        .unwrap(),
    );
    let resources: Vec<Arc<dyn MemoryResource>> = vec![
        DeviceMemoryResource::default_pool(&d).unwrap(),
        own.clone(),
        Arc::new(PinnedMemoryResource::new(&d, PinnedMemoryResourceOptions::default()).unwrap()),
        Arc::new(LegacyPinnedMemoryResource::new(&d)),
        Arc::new(ManagedMemoryResource::new(&d).unwrap()),
        Arc::new(ManagedMemoryResource::legacy(&d, None)),
    ];
    for mr in resources {
        let data = random_u32(4096, 7);
        let mut buf = Buffer::allocate(mr.clone(), 4096 * 4, &s).unwrap();
        buf.copy_from_host(&data, &s).unwrap();
        let mut back = vec![0u32; 4096];
        buf.copy_to_host(&mut back, &s).unwrap();
        assert_eq!(back, data, "{mr:?}");
        if buf.is_host_accessible() {
            // Host-visible kinds: a device-side fill is read by the host directly.
            buf.fill_u32(99, &s).unwrap();
            s.sync().unwrap();
            // SAFETY: host-accessible memory of 4096 u32s, the stream is idle.
            let host = unsafe { std::slice::from_raw_parts(buf.ptr() as *const u32, 4096) };
            assert!(host.iter().all(|&x| x == 99), "{mr:?}");
        }
    }
    assert!(own.reserved_bytes().unwrap() > 0);
}

#[test]
fn events_order_work_across_streams_and_time_it() {
    require_gpu!();
    let d = dev0();
    let a = d
        .create_stream(StreamOptions {
            non_blocking: true,
            priority: None,
        })
        .unwrap();
    let b = d
        .create_stream(StreamOptions {
            non_blocking: true,
            priority: None,
        })
        .unwrap();
    let pool = DeviceMemoryResource::default_pool(&d).unwrap();
    let n = 64 << 20;
    let mut x = pool.allocate(n, &a).unwrap();
    let mut y = pool.allocate(n, &a).unwrap();
    let timed = EventOptions {
        timing: true,
        ..Default::default()
    };
    let (start, end) = (
        Event::new(&d, timed).unwrap(),
        Event::new(&d, timed).unwrap(),
    );
    a.record(&start).unwrap();
    for i in 0..20u8 {
        x.fill_u8(i, &a).unwrap();
    }
    a.record(&end).unwrap();
    // b copies x only after a's fills.
    b.wait_event(&end).unwrap();
    y.copy_from(&x, &b).unwrap();
    y.set_free_stream(&b).unwrap();
    let mut back = vec![0u8; 1024];
    y.copy_to_host(&mut back, &b).unwrap();
    assert!(back.iter().all(|&v| v == 19));
    end.sync().unwrap();
    assert!(end.is_done().unwrap());
    let t = end.elapsed_since(&start).unwrap();
    assert!(t > Duration::ZERO && t < Duration::from_secs(5), "{t:?}");
    // Python's `stream.record()`: a new event of the stream's context, recorded
    // where it is made.
    let first = a.record_new_event(timed).unwrap();
    x.fill_u8(1, &a).unwrap();
    let second = a.record_new_event(timed).unwrap();
    assert!(second.context() == a.context() && second.options().timing);
    second.sync().unwrap();
    assert!(first.is_done().unwrap());
    second.elapsed_since(&first).unwrap();
    // Without timing, elapsed time is an error, not garbage.
    let plain = Event::new(&d, EventOptions::default()).unwrap();
    a.record(&plain).unwrap();
    plain.sync().unwrap();
    assert!(matches!(
        plain.elapsed_since(&start),
        Err(Error::Unsupported { .. })
    ));
    assert!(matches!(
        Event::new(
            &d,
            EventOptions {
                timing: true,
                ipc: true,
                blocking_sync: false
            }
        ),
        Err(Error::InvalidArgument { .. })
    ));
    b.wait_stream(&a).unwrap();
    b.sync().unwrap();
    x.set_free_stream(&b).unwrap();
}

#[test]
fn threads_and_devices() {
    require_gpu!();
    let devices = Device::all().unwrap();
    std::thread::scope(|scope| {
        for t in 0..8usize {
            let d = devices[t % devices.len()];
            scope.spawn(move || {
                let s = d
                    .create_stream(StreamOptions {
                        non_blocking: true,
                        priority: None,
                    })
                    .unwrap();
                let pool = DeviceMemoryResource::default_pool(&d).unwrap();
                for i in 0..50u32 {
                    let data = random_u32(1000, u64::from(i) * 31 + t as u64);
                    let mut buf = Buffer::allocate(pool.clone(), 4000, &s).unwrap();
                    buf.copy_from_host(&data, &s).unwrap();
                    let mut back = vec![0u32; 1000];
                    buf.copy_to_host(&mut back, &s).unwrap();
                    assert_eq!(back, data);
                }
            });
        }
    });
}

#[test]
fn no_leak_over_many_allocations_and_streams() {
    require_gpu!();
    let _whole_device = DEVICE_MEMORY.lock().unwrap_or_else(PoisonError::into_inner);
    let d = dev0();
    let free_bytes = || {
        let (mut f, mut t) = (0usize, 0usize);
        d.sync().unwrap();
        // SAFETY: both are valid for writes; a context is current.
        unsafe { cudars_core::cudars_bindings::driver::cuMemGetInfo(&mut f, &mut t) };
        f
    };
    let pool =
        Arc::new(DeviceMemoryResource::new_pool(&d, DeviceMemoryPoolOptions::default()).unwrap());
    let s = d.create_stream(StreamOptions::default()).unwrap();
    // Warm up the pool and the driver.
    drop(pool.allocate(1 << 20, &s).unwrap());
    let before = free_bytes();
    for _ in 0..1_000_000 {
        let b = pool.allocate(1 << 20, &s).unwrap();
        drop(b);
    }
    for _ in 0..10_000 {
        drop(d.create_stream(StreamOptions::default()).unwrap());
    }
    let after = free_bytes();
    assert!(
        after + (4 << 20) >= before,
        "free device memory fell from {before} to {after} bytes"
    );
}

#[test]
fn explicit_contexts_on_many_threads() {
    require_gpu!();
    let d = dev0();
    let primary = d.context().unwrap();
    assert!(primary.is_primary());
    let ctx = d.create_context(ContextOptions::default()).unwrap();
    assert!(!ctx.is_primary() && ctx != primary && ctx.device() == &d);
    let s = ctx.create_stream(StreamOptions::default()).unwrap();
    assert_eq!(s.context(), &ctx);
    // Work in the explicit context from several threads, each switching contexts.
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let (ctx, primary) = (ctx.clone(), primary.clone());
            scope.spawn(move || {
                for (i, c) in [&ctx, &primary].into_iter().enumerate() {
                    let s = c.create_stream(StreamOptions::default()).unwrap();
                    let pool = c.device().default_memory_resource().unwrap();
                    let data = random_u32(10_000, t * 2 + i as u64);
                    let mut b = Buffer::allocate(pool, 40_000, &s).unwrap();
                    b.copy_from_host(&data, &s).unwrap();
                    let mut back = vec![0u32; 10_000];
                    b.copy_to_host(&mut back, &s).unwrap();
                    assert_eq!(back, data);
                    let e = Event::in_context(c, EventOptions::default()).unwrap();
                    e.record(&s).unwrap();
                    e.sync().unwrap();
                }
            });
        }
    });
    // An event of one context cannot be recorded on a stream of another.
    let e = Event::new(&d, EventOptions::default()).unwrap();
    assert!(matches!(
        e.record(&s),
        Err(Error::InvalidArgument {
            kind: InvalidKind::OtherDevice,
            ..
        })
    ));
    // The stream keeps the context alive after the last other handle goes.
    drop(ctx);
    s.sync().unwrap();
    drop(s);
    d.set_current().unwrap();
}

/// `Device.set_current(ctx)`: the context replaced comes back, as the
/// `Context` the crate holds or, for one made outside it, as its handle.
#[test]
fn set_current_context_returns_the_context_it_replaced() {
    require_gpu!();
    // A thread of its own, whose current context only this test changes.
    std::thread::spawn(|| {
        let d = dev0();
        let primary = d.context().unwrap();
        // `dev0` made the primary context current: take it off the thread
        // behind the crate's back, as other code may.
        // SAFETY: no context current is a valid state of the thread.
        let rc = unsafe { sys::cuCtxSetCurrent(std::ptr::null_mut()) };
        assert_eq!(rc, sys::CUDA_SUCCESS);
        assert!(d.set_current_context(&primary).unwrap().is_none());
        let mine = d.create_context(ContextOptions::default()).unwrap();
        match d.set_current_context(&primary).unwrap() {
            Some(PreviousContext::Context(c)) => assert_eq!(c, mine),
            other => panic!("the explicit context came back as {other:?}"),
        }
        match d.set_current_context(&mine).unwrap() {
            Some(PreviousContext::Context(c)) => assert!(c.is_primary() && c == primary),
            other => panic!("the primary context came back as {other:?}"),
        }
        // Work runs in the context made current, and the streams of each
        // context work whichever is current.
        let s = mine.create_stream(StreamOptions::default()).unwrap();
        let mut b = Buffer::allocate(d.default_memory_resource().unwrap(), 64, &s).unwrap();
        b.fill_u32(7, &s).unwrap();
        let mut back = [0u32; 16];
        b.copy_to_host(&mut back, &s).unwrap();
        assert_eq!(back, [7; 16]);
        // A context made outside the crate comes back as its handle.
        let mut raw: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: `raw` is valid for writes; destroyed below.
        let rc = unsafe {
            if cudars_tests::driver_version() >= 12050 {
                sys::cuCtxCreate(&mut raw, std::ptr::null_mut(), 0, d.handle())
            } else {
                sys::cuda12::cuCtxCreate(&mut raw, 0, d.handle())
            }
        };
        assert_eq!(rc, sys::CUDA_SUCCESS);
        let prev = d.set_current_context(&primary).unwrap().unwrap();
        assert!(
            matches!(prev, PreviousContext::Foreign(h) if h == raw),
            "{prev:?}"
        );
        assert!(prev.context().is_none());
        // SAFETY: made above, no longer current, used by nothing.
        assert_eq!(unsafe { sys::cuCtxDestroy(raw) }, sys::CUDA_SUCCESS);
        // The primary context is current now, and a refusal changes nothing.
        let mut cur: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: `cur` is valid for writes.
        unsafe { sys::cuCtxGetCurrent(&mut cur) };
        assert_eq!(cur, primary.handle());
        if let Ok(d1) = Device::new(1) {
            let e = d1.set_current_context(&mine).unwrap_err();
            assert_eq!(e.invalid_kind(), Some(InvalidKind::OtherDevice));
            // SAFETY: as above.
            unsafe { sys::cuCtxGetCurrent(&mut cur) };
            assert_eq!(cur, primary.handle());
        }
    })
    .join()
    .unwrap();
}

#[test]
fn managed_memory_prefetch_and_advice() {
    require_gpu!();
    let d = dev0();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    // `cuMemAllocManaged` memory: the driver advises it (pool memory it does not,
    // see `tests/managed.rs`).
    let mr = Arc::new(ManagedMemoryResource::legacy(&d, Some(Location::Device(d))));
    assert_eq!(mr.preferred_location(), Some(Location::Device(d)));
    let n = 1 << 20;
    let mut b = mr.allocate(n * 4, &s).unwrap();
    assert!(b.is_managed() && b.is_host_accessible());
    b.prefetch(Location::Device(d), &s).unwrap();
    b.fill_u32(0x0bad_cafe, &s).unwrap();
    b.prefetch(Location::Host, &s).unwrap();
    s.sync().unwrap();
    // SAFETY: the stream is idle and nothing else writes the buffer.
    let host: &[u32] = unsafe { b.as_host_slice() }.unwrap();
    assert!(host.iter().all(|&x| x == 0x0bad_cafe));
    b.set_read_mostly(true).unwrap();
    b.set_read_mostly(false).unwrap();
    b.set_accessed_by(Location::Device(d), true).unwrap();
    b.set_accessed_by(Location::Device(d), false).unwrap();
    b.set_preferred_location(Some(Location::Host)).unwrap();
    b.set_preferred_location(None).unwrap();
    // Device memory is no managed buffer (its managed-only operations do not
    // compile: see `ManagedBuffer`'s doc test).
    let dev_buf = d.allocate(1024, &s).unwrap();
    // SAFETY: device memory is refused before anything is read.
    let refused = unsafe { dev_buf.as_host_slice::<u8>() };
    assert!(matches!(refused, Err(Error::Unsupported { .. })));
}

/// The process-wide allocation resource of a device: set, used, reset. Runs in a
/// child process, since it changes what every `Device::allocate` of the process uses.
#[test]
fn the_allocation_resource_of_a_device_can_be_replaced() {
    if !cudars_tests::in_child() {
        cudars_tests::require_gpu!();
        cudars_tests::run_test_in_child("the_allocation_resource_of_a_device_can_be_replaced", &[]);
        return;
    }
    let d = Device::new(0).unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let pool =
        Arc::new(cudars_core::DeviceMemoryResource::new_pool(&d, Default::default()).unwrap());
    d.set_memory_resource(Some(pool.clone())).unwrap();
    assert_eq!(d.memory_resource().unwrap().kind(), MemoryKind::Device);
    let b = d.allocate(1 << 20, &s).unwrap();
    assert!(b.is_owned() && b.free_stream().unwrap().handle() == s.handle());
    assert_eq!(b.memory_resource().unwrap().device(), d);
    s.sync().unwrap();
    assert!(pool.used_bytes().unwrap() >= 1 << 20);
    drop(b);
    s.sync().unwrap();
    assert_eq!(pool.used_bytes().unwrap(), 0);
    // Back to the default pool: the replaced one sees no more allocations.
    d.set_memory_resource(None).unwrap();
    let c = d.allocate(1 << 20, &s).unwrap();
    s.sync().unwrap();
    assert_eq!(pool.used_bytes().unwrap(), 0);
    // Memory a buffer does not own has no resource and no free stream.
    // SAFETY: a non-owning view of `c`'s live allocation, dropped before it.
    let view = unsafe { Buffer::from_raw(c.ptr(), c.size(), MemoryKind::Device, &d) };
    assert!(!view.is_owned() && view.memory_resource().is_none() && view.free_stream().is_none());
    drop(view);
    drop(c);
    s.sync().unwrap();
}

/// A resource of our own: forwards to another and counts raw allocations and frees.
#[derive(Debug)]
struct Counting {
    inner: Arc<dyn MemoryResource>,
    allocs: AtomicUsize,
    frees: AtomicUsize,
}

impl Counting {
    fn new(inner: Arc<dyn MemoryResource>) -> Self {
        Self {
            inner,
            allocs: AtomicUsize::new(0),
            frees: AtomicUsize::new(0),
        }
    }

    /// (raw allocations, frees) so far.
    fn counts(&self) -> (usize, usize) {
        (
            self.allocs.load(Ordering::SeqCst),
            self.frees.load(Ordering::SeqCst),
        )
    }
}

// SAFETY: every allocation and free is the inner resource's, unchanged.
unsafe impl MemoryResource for Counting {
    unsafe fn allocate_raw(
        &self,
        size: usize,
        stream: &Stream,
    ) -> cudars_core::Result<CUdeviceptr> {
        // SAFETY: our caller takes the memory over on the trait's terms, and returns
        // it through our `deallocate`, which hands it back to `inner`.
        let ptr = unsafe { self.inner.allocate_raw(size, stream) }?;
        self.allocs.fetch_add(1, Ordering::SeqCst);
        Ok(ptr)
    }

    unsafe fn deallocate(
        &self,
        ptr: CUdeviceptr,
        size: usize,
        stream: &Stream,
    ) -> cudars_core::Result<()> {
        // SAFETY: our caller keeps the trait's contract; `ptr` and `size` came from
        // `inner.allocate_raw` through ours.
        unsafe { self.inner.deallocate(ptr, size, stream) }?;
        self.frees.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn kind(&self) -> MemoryKind {
        self.inner.kind()
    }

    fn device(&self) -> Device {
        self.inner.device()
    }
}

/// The address of what an `Arc` points to, without the vtable.
fn addr<T: ?Sized>(a: &Arc<T>) -> *const () {
    Arc::as_ptr(a).cast()
}

/// Every spelling of the owning allocation (the `Arc` of your own type, the same
/// erased to `Arc<dyn MemoryResource>`, `Buffer::allocate`) allocates once and frees
/// once, when the buffer is dropped or closed.
#[test]
fn every_owning_allocate_frees_exactly_once() {
    require_gpu!();
    let d = dev0();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let counting = Arc::new(Counting::new(d.memory_resource().unwrap()));
    // `Arc<Counting>`: `MemoryResourceExt::allocate`.
    let b: Buffer = counting.allocate(4096, &s).unwrap();
    assert!(b.is_owned());
    assert_eq!((b.size(), b.kind()), (4096, MemoryKind::Device));
    assert_eq!(addr(b.memory_resource().unwrap()), addr(&counting));
    assert_eq!(counting.counts(), (1, 0));
    drop(b);
    assert_eq!(counting.counts(), (1, 1));
    // `Arc<dyn MemoryResource>`: the inherent `allocate` of `dyn MemoryResource`.
    let erased: Arc<dyn MemoryResource> = counting.clone();
    let mut b = erased.allocate(4096, &s).unwrap();
    b.fill_u32(7, &s).unwrap();
    assert_eq!(counting.counts(), (2, 1));
    b.close(None).unwrap();
    assert_eq!(counting.counts(), (2, 2));
    // `Buffer::allocate`, which the others are.
    drop(Buffer::allocate(counting.clone(), 4096, &s).unwrap());
    assert_eq!(counting.counts(), (3, 3));
    // A size refused before the resource is asked allocates nothing.
    assert!(matches!(
        erased.allocate(0, &s),
        Err(Error::InvalidArgument { .. })
    ));
    assert_eq!(counting.counts(), (3, 3));
    s.sync().unwrap();
}

/// `dev.memory_resource()?.allocate(n, &stream)?` is a `Buffer` that frees itself:
/// a quarter of the free memory, allocated and dropped until about three times the
/// whole device has gone through, would run out at the fifth round if a drop
/// leaked.
#[test]
fn the_devices_resource_allocates_buffers_that_free_themselves() {
    require_gpu!();
    let _whole_device = DEVICE_MEMORY.lock().unwrap_or_else(PoisonError::into_inner);
    let d = dev0();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let (free, total) = d.memory_info().unwrap();
    let chunk = (free / 4).max(1);
    let rounds = (total / chunk).saturating_mul(3).clamp(8, 64);
    for round in 0..rounds {
        let b = d
            .memory_resource()
            .unwrap()
            .allocate(chunk, &s)
            .unwrap_or_else(|e| panic!("round {round} of {rounds} ({chunk} bytes): {e}"));
        assert_eq!(b.size(), chunk);
        assert!(b.is_owned());
    }
    s.sync().unwrap();
    let (after, _) = d.memory_info().unwrap();
    assert!(
        after + chunk >= free,
        "free device memory fell from {free} to {after} bytes"
    );
}

/// A resource of your own, set as the device's: `dev.memory_resource()?.allocate`
/// goes through it and the buffer's drop returns the memory to it. In a child
/// process, since the device's resource is process-wide.
#[test]
fn a_resource_of_your_own_set_on_the_device_allocates_owning_buffers() {
    if !cudars_tests::in_child() {
        cudars_tests::require_gpu!();
        cudars_tests::run_test_in_child(
            "a_resource_of_your_own_set_on_the_device_allocates_owning_buffers",
            &[],
        );
        return;
    }
    let d = Device::new(0).unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let counting = Arc::new(Counting::new(d.default_memory_resource().unwrap()));
    d.set_memory_resource(Some(counting.clone())).unwrap();
    let b = d.memory_resource().unwrap().allocate(1 << 20, &s).unwrap();
    assert_eq!(counting.counts(), (1, 0));
    drop(b);
    assert_eq!(counting.counts(), (1, 1));
    drop(d.allocate(1 << 20, &s).unwrap());
    assert_eq!(counting.counts(), (2, 2));
    d.set_memory_resource(None).unwrap();
    s.sync().unwrap();
}

/// Whether a context is current on this thread.
fn has_current_context() -> bool {
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: `ctx` is valid for writes.
    let rc = unsafe { sys::cuCtxGetCurrent(&mut ctx) };
    assert_eq!(rc, sys::CUDA_SUCCESS);
    !ctx.is_null()
}

#[test]
fn the_current_device_is_the_current_contexts_or_device_0() {
    require_gpu!();
    // A new thread has no current context: device 0, as cuda.core's `Device()`
    // and the runtime's `cudaGetDevice`, and asking makes nothing current.
    std::thread::spawn(|| {
        assert!(!has_current_context());
        assert_eq!(Device::current().unwrap(), Device::new(0).unwrap());
        assert!(!has_current_context());
        // The last device made current (device 0 on a one-GPU machine).
        let last = Device::new(Device::count().unwrap() - 1).unwrap();
        last.set_current().unwrap();
        assert_eq!(Device::current().unwrap(), last);
        // The options for "the current device", as Python fills `arch` in.
        let arch = last.arch().unwrap();
        assert_eq!(
            ProgramOptions::for_current_device().unwrap().arch,
            Some(arch.clone())
        );
        assert_eq!(
            ProgramOptions::for_device(&last).unwrap().arch,
            Some(arch.clone())
        );
        assert_eq!(LinkerOptions::for_current_device().unwrap().arch, arch);
        assert_eq!(LinkerOptions::for_device(&last).unwrap().arch, arch);
        // An explicit context's device.
        let ctx = Context::create(&last, ContextOptions::default()).unwrap();
        ctx.set_current().unwrap();
        assert_eq!(Device::current().unwrap(), last);
    })
    .join()
    .unwrap();
}

/// Issue 28, point 1: Python's `buf.fill(42, stream)` fills bytes, and so does the
/// literal port: the unsuffixed literal is a `u8`, whatever the buffer's size.
#[test]
fn fill_with_an_unsuffixed_literal_fills_bytes_as_python_does() {
    require_gpu!();
    let d = dev0();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    // An odd size: a 4-byte fill would be refused, a byte fill is not.
    let mut b = d.allocate(1023, &s).unwrap();
    b.fill(42, &s).unwrap();
    let mut bytes = vec![0u8; 1023];
    b.copy_to_host(&mut bytes, &s).unwrap();
    assert!(bytes.iter().all(|&x| x == 42), "{:?}", &bytes[..8]);
    // The porter's loop: `(i + 1) % 256` cast to a byte, one byte pattern each.
    for i in 0..3usize {
        b.fill(((i + 1) % 256) as u8, &s).unwrap();
        b.copy_to_host(&mut bytes, &s).unwrap();
        assert!(bytes.iter().all(|&x| usize::from(x) == i + 1));
    }
}

#[test]
fn fill_takes_any_pod_value_of_1_2_or_4_bytes() {
    require_gpu!();
    let d = dev0();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let mut b = d.allocate(64, &s).unwrap();
    b.fill_pattern(1.5f32, &s).unwrap();
    let mut floats = [0f32; 16];
    b.copy_to_host(&mut floats, &s).unwrap();
    assert_eq!(floats, [1.5; 16]);
    b.fill_pattern(f16::from_f32(-2.0), &s).unwrap();
    let mut halves = [f16::ZERO; 32];
    b.copy_to_host(&mut halves, &s).unwrap();
    assert_eq!(halves, [f16::from_f32(-2.0); 32]);
    b.fill_pattern(-3i8, &s).unwrap();
    let mut bytes = [0i8; 64];
    b.copy_to_host(&mut bytes, &s).unwrap();
    assert_eq!(bytes, [-3; 64]);
    // The value's bytes repeat as they are in memory.
    b.fill_pattern([0x12u8, 0x34], &s).unwrap();
    let mut raw = [0u8; 64];
    b.copy_to_host(&mut raw, &s).unwrap();
    assert!(raw.chunks(2).all(|c| c == [0x12, 0x34]), "{raw:?}");
    b.fill_pattern(-7i32, &s).unwrap();
    let mut ints = [0i32; 16];
    b.copy_to_host(&mut ints, &s).unwrap();
    assert_eq!(ints, [-7; 16]);
    // A size the value does not divide is refused, and the contents stay.
    let mut odd = d.allocate(6, &s).unwrap();
    odd.fill(9u8, &s).unwrap();
    assert!(matches!(
        odd.fill_pattern(1.0f32, &s),
        Err(Error::InvalidArgument { .. })
    ));
    let mut six = [0u8; 6];
    odd.copy_to_host(&mut six, &s).unwrap();
    assert_eq!(six, [9; 6]);
}

/// Spins for about `cycles` clock cycles.
const SPIN: &str = r#"
extern "C" __global__ void spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
}
"#;

#[test]
fn host_views_of_pinned_and_managed_memory_wait_for_the_gpu_and_write_in_place() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = dev0();
    let spin = Program::new(
        SourceCode::Cxx(SPIN),
        ProgramOptions::for_device(&d).unwrap(),
    )
    .unwrap()
    .compile(CompileTarget::Cubin, &[])
    .unwrap()
    .get_kernel("spin")
    .unwrap();
    let clock_khz = i64::from(d.properties().clock_rate().unwrap());
    let work = d
        .create_stream(StreamOptions {
            non_blocking: true,
            priority: None,
        })
        .unwrap();
    let n = 1 << 16;
    let pattern = random_u32(n, 7);
    let mut src = d.allocate(n * 4, &work).unwrap();
    src.copy_from_host(&pattern, &work).unwrap();

    let mut resources: Vec<(&str, Arc<dyn MemoryResource>)> = vec![
        (
            "legacy pinned",
            Arc::new(LegacyPinnedMemoryResource::new(&d)),
        ),
        ("managed", Arc::new(ManagedMemoryResource::new(&d).unwrap())),
        (
            "legacy managed",
            Arc::new(ManagedMemoryResource::legacy(&d, None)),
        ),
    ];
    match PinnedMemoryResource::new(&d, PinnedMemoryResourceOptions::default()) {
        Ok(p) => resources.push(("pinned pool", Arc::new(p))),
        Err(e) => assert_eq!(e.driver_code(), Some(sys::CUDA_ERROR_NOT_SUPPORTED), "{e}"),
    }
    for (name, mr) in resources {
        // Allocated on (and freed on) another stream than the work below.
        let alloc = d.create_stream(StreamOptions::default()).unwrap();
        let mut buf = mr.allocate(n * 4, &alloc).unwrap();
        alloc.sync().unwrap();
        buf.fill_pattern(0u32, &work).unwrap();
        work.sync().unwrap();
        // 50 ms of spinning on `work`, then a copy into the buffer behind it: the
        // host view must wait for both.
        // SAFETY: `spin` takes one integer and touches no memory.
        unsafe { launch(&work, &LaunchConfig::new(1, 1), &spin, &[&(clock_khz * 50)]) }.unwrap();
        buf.copy_from(&src, &work).unwrap();
        let view: &mut [u32] = buf.host_slice_mut().unwrap();
        assert!(
            view == pattern.as_slice(),
            "{name}: the view did not wait for the copy"
        );
        // Zero-copy writes: the device sees them.
        for x in view.iter_mut() {
            *x = !*x;
        }
        let mut back = vec![0u32; n];
        buf.copy_to_host(&mut back, &work).unwrap();
        assert!(
            back.iter().zip(&pattern).all(|(b, p)| *b == !*p),
            "{name}: the device did not see the host's writes"
        );
        // The unchecked view, after a synchronisation of our own.
        buf.fill_pattern(5u32, &work).unwrap();
        work.sync().unwrap();
        // SAFETY: the fill, the only work queued on the buffer, has finished.
        let view: &mut [u32] = unsafe { buf.as_host_slice_mut() }.unwrap();
        assert!(view.iter().all(|&x| x == 5), "{name}");
        view[0] = 6;
        // SAFETY: as above, and the mutable view is gone.
        assert_eq!(unsafe { buf.as_host_slice::<u32>() }.unwrap()[..2], [6, 5]);
        // An element type the buffer does not divide into is refused.
        assert!(matches!(
            buf.host_slice_mut::<[u8; 3]>(),
            Err(Error::InvalidArgument { .. })
        ));
        // Memory the buffer does not own has no free stream to wait for.
        // SAFETY: `buf` outlives `alias`, which is never used for device work.
        let mut alias = unsafe { Buffer::from_raw(buf.ptr(), buf.size(), buf.kind(), &d) };
        assert!(matches!(
            alias.host_slice_mut::<u32>(),
            Err(Error::Unsupported { .. })
        ));
    }
    // Device memory has no host view.
    let mut device = d.allocate(64, &work).unwrap();
    assert!(matches!(
        device.host_slice_mut::<u32>(),
        Err(Error::Unsupported { .. })
    ));
    // SAFETY: never reached: device memory is refused before any view is made.
    assert!(unsafe { device.as_host_slice_mut::<u32>() }.is_err());
}

#[cfg(feature = "vmm")]
#[test]
fn resources_that_are_not_stream_ordered_allocate_without_a_stream() {
    use cudars_core::{VirtualMemoryOptions, VirtualMemoryResource};

    require_gpu!();
    let d = dev0();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let legacy = Arc::new(LegacyPinnedMemoryResource::new(&d));
    // cuda.core's -1: portable memory, bound to no device.
    assert_eq!(legacy.device_id(), None);
    let managed = Arc::new(ManagedMemoryResource::legacy(&d, None));
    let vmm = Arc::new(VirtualMemoryResource::new(&d, VirtualMemoryOptions::default()).unwrap());
    let pool = d.default_memory_resource().unwrap();
    assert!(!legacy.is_stream_ordered() && !managed.is_stream_ordered());
    assert!(!vmm.is_stream_ordered() && pool.is_stream_ordered());
    let data = random_u32(1024, 3);
    // The typed resources take `None` (and a stream as before).
    let typed = [
        legacy.allocate(4096, None).unwrap(),
        managed.allocate(4096, None).unwrap().into_buffer(),
        vmm.allocate(4096, None).unwrap(),
        legacy.allocate(4096, &s).unwrap(),
    ];
    let erased: [Arc<dyn MemoryResource>; 3] = [legacy.clone(), managed.clone(), vmm.clone()];
    let mut buffers: Vec<Buffer> = typed.into_iter().collect();
    for mr in erased {
        buffers.push(mr.allocate(4096, None).unwrap());
        buffers.push(Buffer::allocate(mr, 4096, None).unwrap());
    }
    for (i, mut b) in buffers.into_iter().enumerate() {
        let free = b.free_stream().unwrap().handle();
        if i == 3 {
            assert_eq!(free, s.handle());
        } else {
            // Freed on the device's legacy default stream.
            assert_eq!(free, sys::CU_STREAM_LEGACY, "buffer {i}");
        }
        b.copy_from_host(&data, &s).unwrap();
        let mut back = vec![0u32; 1024];
        b.copy_to_host(&mut back, &s).unwrap();
        assert_eq!(back, data, "buffer {i}");
        // Work on another stream is ordered before the free.
        b.fill(7u8, &s).unwrap();
        b.close(None).unwrap();
    }
    // A stream-ordered resource needs its stream.
    let erased: Arc<dyn MemoryResource> = pool.clone();
    for e in [
        erased.allocate(4096, None).unwrap_err(),
        Buffer::allocate(erased.clone(), 4096, None).unwrap_err(),
    ] {
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        assert!(e.to_string().contains("stream-ordered"), "{e}");
    }
    assert_eq!(pool.allocate(4096, &s).unwrap().size(), 4096);
}

/// `cuda.core`'s `peer_accessible_by` setter leaves the pool's own device out
/// (it was an `Error::InvalidArgument` here): granting it changes nothing.
#[test]
fn a_pools_own_device_in_its_peers_is_left_out() {
    require_gpu!();
    let d = dev0();
    let pool = DeviceMemoryResource::new_pool(&d, DeviceMemoryPoolOptions::default()).unwrap();
    pool.set_peer_accessible_by(&[d, d]).unwrap();
    assert_eq!(pool.peer_accessible_by().unwrap(), vec![]);
    pool.set_peer_accessible_by(&[]).unwrap();
    assert_eq!(pool.peer_accessible_by().unwrap(), vec![]);
}
