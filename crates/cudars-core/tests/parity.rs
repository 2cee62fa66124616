//! `cuda.core` 1.2 parity: host callbacks on streams, adopting foreign streams and
//! kernels, pool attributes, the IPC pool registry, buffer owners, managed-memory
//! getters. The tests that need no GPU run everywhere; the others print `SKIPPED`
//! without one, and fail with `CUDA_TEST_REQUIRE_GPU=1`.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cudars_core::cudars_bindings::driver as sys;
use cudars_core::{
    Buffer, CallbackPanic, CaptureMode, CaptureStatus, CompileTarget, Context, ContextOptions,
    Device, DeviceMemoryPoolOptions, DeviceMemoryResource, Error, GraphCompleteOptions,
    InvalidKind, Kernel, LaunchConfig, LegacyPinnedMemoryResource, Location, ManagedMemoryResource,
    MemoryKind, ObjectCode, PinnedMemoryResource, PinnedMemoryResourceOptions, PoolReuse, Program,
    ProgramOptions, SourceCode, Stream, StreamOptions, launch,
};
use cudars_tests::{require_gpu, require_libs};

const SRC: &str = r#"
extern "C" __global__ void spin_then_write(int *out, long long cycles, int value) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
    *out = value;
}
extern "C" __global__ void add(int *x, int v) { x[threadIdx.x] += v; }
"#;

fn dev0() -> Device {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    d
}

fn compile(d: &Device) -> ObjectCode {
    Program::new(SourceCode::Cxx(SRC), ProgramOptions::for_device(d).unwrap())
        .unwrap()
        .compile(CompileTarget::Cubin, &[])
        .unwrap()
}

fn stream(d: &Device) -> Stream {
    d.create_stream(StreamOptions {
        non_blocking: true,
        priority: None,
    })
    .unwrap()
}

// ---- without a GPU ----------------------------------------------------------

#[test]
fn null_kernel_handles_are_refused_before_cuda() {
    // SAFETY: null is refused before the driver sees it.
    let e = unsafe { Kernel::from_handle(std::ptr::null_mut(), None) }.unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::Other), "{e}");
    // SAFETY: as above.
    let e = unsafe { Kernel::from_function(std::ptr::null_mut(), None) }.unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::Other), "{e}");
    assert!(e.to_string().contains("null"), "{e}");
}

#[cfg(all(unix, feature = "ipc"))]
#[test]
fn an_unknown_uuid_is_not_in_the_registry() {
    let uuid = cudars_core::PoolUuid([0xab; 16]);
    let e = DeviceMemoryResource::from_registry(uuid).unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::Other), "{e}");
    assert!(
        e.to_string()
            .contains("abababab-abab-abab-abab-abababababab"),
        "{e}"
    );
}

#[test]
fn a_callback_panic_says_how_many() {
    let one = CallbackPanic {
        message: "boom".into(),
        count: 1,
    };
    assert_eq!(one.to_string(), "a host callback panicked: boom");
    let e = Error::HostCallbackPanicked {
        context: "synchronising a stream".into(),
        panic: CallbackPanic { count: 3, ..one },
    };
    assert_eq!(
        e.report().to_string(),
        "synchronising a stream: a host callback panicked: boom (3 callbacks panicked; this \
         was the first)"
    );
}

// ---- host callbacks ---------------------------------------------------------

#[test]
fn host_callbacks_run_in_stream_order_after_the_kernels_before_them() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = dev0();
    let s = stream(&d);
    let code = compile(&d);
    let k = code.get_kernel("spin_then_write").unwrap();
    let mut out = Arc::new(LegacyPinnedMemoryResource::new(&d))
        .allocate(4, None)
        .unwrap();
    out.fill_pattern(0i32, &s).unwrap();
    // Long enough that a callback not ordered after the kernel would see 0.
    let cycles = i64::from(d.properties().clock_rate().unwrap()) * 50; // ~50 ms
    let order = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::new(AtomicI32::new(-1));
    for i in 0..3 {
        // SAFETY: the kernel writes one `int` to `out`, which holds four bytes.
        unsafe {
            launch(
                &s,
                &LaunchConfig::new(1, 1),
                &k,
                &[&out, &cycles, &(i + 10)],
            )
        }
        .unwrap();
        let (order, seen) = (order.clone(), seen.clone());
        let addr = out.ptr() as usize;
        s.launch_host_func(move || {
            // SAFETY: pinned host memory, which the kernel before this callback
            // has finished writing; nothing else writes it meanwhile.
            let v = unsafe { std::ptr::read_volatile(addr as *const i32) };
            seen.store(v, Ordering::SeqCst);
            order.lock().unwrap().push(v);
        })
        .unwrap();
    }
    s.sync().unwrap();
    assert_eq!(*order.lock().unwrap(), vec![10, 11, 12]);
    assert_eq!(seen.load(Ordering::SeqCst), 12);
    // Each closure, with its clones, was dropped after its call.
    assert_eq!(Arc::strong_count(&order), 1);
    assert_eq!(Arc::strong_count(&seen), 1);
}

#[test]
fn a_panicking_callback_is_reported_by_sync_and_the_stream_stays_usable() {
    require_gpu!();
    let d = dev0();
    let s = stream(&d);
    s.launch_host_func(|| panic!("boom in a callback")).unwrap();
    s.launch_host_func(|| panic!("a second one")).unwrap();
    let e = s.sync().unwrap_err();
    match &e {
        Error::HostCallbackPanicked { panic, .. } => {
            assert_eq!(panic.message, "boom in a callback");
            assert_eq!(panic.count, 2);
        }
        other => panic!("{other:?}"),
    }
    // Reported once; the stream works on.
    s.sync().unwrap();
    assert_eq!(s.take_callback_panic(), None);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    s.launch_host_func(move || {
        r.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    let mut buf = d.allocate(64, &s).unwrap();
    buf.fill_u32(7, &s).unwrap();
    s.sync().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    // take_callback_panic hands a record over without a sync reporting it.
    s.launch_host_func(|| panic!("taken")).unwrap();
    d.sync().unwrap();
    assert_eq!(
        s.take_callback_panic(),
        Some(CallbackPanic {
            message: "taken".into(),
            count: 1
        })
    );
    s.sync().unwrap();
}

#[test]
fn a_refused_callback_is_freed() {
    require_gpu!();
    let d = dev0();
    let s = stream(&d);
    let token = Arc::new(());
    // A capturing stream refuses a run-once callback: it is dropped at once.
    // SAFETY: nothing captured uses memory.
    unsafe { s.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    let t = token.clone();
    let e = s.launch_host_func(move || drop(t)).unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
    assert_eq!(Arc::strong_count(&token), 1);
    // Synchronising a capturing stream is illegal and invalidates the capture;
    // the driver then refuses the callback, whose box is freed.
    assert!(s.sync().is_err());
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::Invalidated);
    let t = token.clone();
    let e = s.launch_host_func(move || drop(t)).unwrap_err();
    assert_eq!(
        e.driver_code(),
        Some(sys::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
        "{e}"
    );
    assert_eq!(Arc::strong_count(&token), 1);
    let t = token.clone();
    assert!(
        s.launch_host_func_repeatable(move || drop(t.clone()))
            .is_err()
    );
    assert_eq!(Arc::strong_count(&token), 1);
    assert!(s.end_capture().is_err());
    // The stream works again.
    s.launch_host_func(|| {}).unwrap();
    s.sync().unwrap();
}

#[test]
fn a_captured_callback_runs_at_each_graph_launch() {
    require_gpu!();
    let d = dev0();
    let s = stream(&d);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    // SAFETY: nothing captured uses memory.
    unsafe { s.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    s.launch_host_func_repeatable(move || {
        r.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    s.launch_host_func_repeatable(|| panic!("captured panic"))
        .unwrap();
    let graph = s.end_capture().unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 0, "captured, not run");
    let exec = graph.instantiate(GraphCompleteOptions::default()).unwrap();
    for _ in 0..3 {
        exec.launch(&s).unwrap();
    }
    let e = s.sync().unwrap_err();
    match e {
        Error::HostCallbackPanicked { panic, .. } => {
            assert_eq!(panic.message, "captured panic");
            assert_eq!(panic.count, 3);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    // The graph owns the closure: still alive while the graph is.
    assert_eq!(Arc::strong_count(&runs), 2);
    drop(exec);
    drop(graph);
    // Outside a capture the repeatable form runs once.
    let r = runs.clone();
    s.launch_host_func_repeatable(move || {
        r.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    s.sync().unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 4);
}

// ---- adopting handles -------------------------------------------------------

#[test]
fn adopted_streams_are_borrowed_and_usable() {
    require_gpu!();
    let d = dev0();
    let theirs = stream(&d);
    // SAFETY: `theirs` outlives the adopted stream and the buffer freed on it.
    let ours = unsafe { Stream::from_handle(theirs.handle()) }.unwrap();
    assert_eq!(ours.handle(), theirs.handle());
    assert_eq!(ours.device(), &d);
    assert!(!ours.is_owned());
    assert!(ours.context().is_primary());
    assert!(ours.is_non_blocking().unwrap());
    let mut buf = d.allocate(1024, &ours).unwrap();
    buf.fill_u32(0x0102_0304, &ours).unwrap();
    let mut back = [0u32; 256];
    buf.copy_to_host(&mut back, &ours).unwrap();
    assert!(back.iter().all(|&v| v == 0x0102_0304));
    drop(buf);
    ours.sync().unwrap();
    drop(ours);
    // Still alive: the adopted stream did not destroy it.
    theirs.launch_host_func(|| {}).unwrap();
    theirs.sync().unwrap();

    // A stream of an explicit context: its context is adopted, borrowed too.
    let ctx = Context::create(&d, ContextOptions::default()).unwrap();
    let cs = ctx.create_stream(StreamOptions::default()).unwrap();
    // SAFETY: `cs` and `ctx` outlive the adopted stream.
    let adopted = unsafe { Stream::from_handle(cs.handle()) }.unwrap();
    assert_eq!(adopted.context().handle(), ctx.handle());
    assert!(!adopted.context().is_primary());
    adopted.sync().unwrap();
    drop(adopted);
    ctx.create_stream(StreamOptions::default())
        .unwrap()
        .sync()
        .unwrap();
    d.set_current().unwrap();
}

#[test]
fn adopted_kernels_launch_and_leave_their_library_alone() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = dev0();
    let s = stream(&d);
    let code = compile(&d);
    let lib = code.library().unwrap();
    assert_eq!(code.handle().unwrap(), lib.handle());
    assert_eq!(
        code.library().unwrap().handle(),
        lib.handle(),
        "loaded once"
    );
    let add = lib.get_kernel("add").unwrap();
    // SAFETY: `lib` (held below) keeps the kernel loaded.
    let adopted = unsafe { Kernel::from_handle(add.kernel_handle().unwrap(), None) }.unwrap();
    assert!(!adopted.owns_code());
    if cudars_tests::driver_version() >= 12030 {
        assert_eq!(adopted.name(), "add");
    }
    let mut x = d.allocate(32 * 4, &s).unwrap();
    x.fill_u32(1, &s).unwrap();
    // SAFETY: `add` touches 32 ints of `x`.
    unsafe { launch(&s, &LaunchConfig::new(1, 32), &adopted, &[&x, &41i32]) }.unwrap();
    let mut out = [0i32; 32];
    x.copy_to_host(&mut out, &s).unwrap();
    assert!(out.iter().all(|&v| v == 42), "{out:?}");
    drop(adopted);
    // The original still owns a loaded library.
    // SAFETY: as above.
    unsafe { launch(&s, &LaunchConfig::new(1, 32), &add, &[&x, &1i32]) }.unwrap();
    s.sync().unwrap();

    // With its library, kept and checked (the check asks `cuKernelGetLibrary`,
    // CUDA 12.5: an older driver gives the typed driver-version error).
    // SAFETY: a kernel of `lib`.
    let kept = cudars_tests::needs_driver!(12050, unsafe {
        Kernel::from_handle(add.kernel_handle().unwrap(), Some(lib.clone()))
    });
    if let Some(kept) = kept {
        assert!(kept.owns_code());
        let other = compile(&d).library().unwrap();
        // SAFETY: a live kernel (of `lib`, not of `other`).
        let e =
            unsafe { Kernel::from_handle(add.kernel_handle().unwrap(), Some(other)) }.unwrap_err();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::Other), "{e}");
    }

    // Module functions, through the object code's module.
    let ctx = d.context().unwrap();
    let module = code.get_module(&ctx).unwrap();
    assert_eq!(module.handle(), lib.get_module(&ctx).unwrap().handle());
    let f = module.get_function("add").unwrap();
    assert_eq!(f.kernel_handle(), None);
    // SAFETY: a function of `module`, which the adopted kernel keeps.
    let g = unsafe { Kernel::from_function(f.handle(), Some(module.clone())) }.unwrap();
    // SAFETY: as above.
    unsafe { launch(&s, &LaunchConfig::new(1, 32), &g, &[&x, &-43i32]) }.unwrap();
    x.copy_to_host(&mut out, &s).unwrap();
    assert!(out.iter().all(|&v| v == 0), "{out:?}");
}

// ---- memory -----------------------------------------------------------------

#[test]
fn pool_attributes_read_back_and_high_water_marks_reset() {
    require_gpu!();
    let d = dev0();
    let s = stream(&d);
    let pool =
        Arc::new(DeviceMemoryResource::new_pool(&d, DeviceMemoryPoolOptions::default()).unwrap());
    assert!(
        pool.is_handle_owned(),
        "a pool of its own is destroyed with it"
    );
    assert!(
        !DeviceMemoryResource::default_pool(&d)
            .unwrap()
            .is_handle_owned(),
        "the default pool is the driver's"
    );
    pool.set_release_threshold(8 << 20).unwrap();
    assert_eq!(pool.release_threshold().unwrap(), 8 << 20);
    for policy in [
        PoolReuse::FollowEventDependencies,
        PoolReuse::AllowOpportunistic,
        PoolReuse::AllowInternalDependencies,
    ] {
        pool.set_reuse(policy, false).unwrap();
        assert!(!pool.reuse(policy).unwrap(), "{policy:?}");
        pool.set_reuse(policy, true).unwrap();
        assert!(pool.reuse(policy).unwrap(), "{policy:?}");
    }
    pool.set_reuse(PoolReuse::AllowOpportunistic, false)
        .unwrap();
    let a = pool.attributes().unwrap();
    assert_eq!(a.release_threshold, 8 << 20);
    assert!(a.reuse_follow_event_dependencies && a.reuse_allow_internal_dependencies);
    assert!(!a.reuse_allow_opportunistic);
    assert_eq!(a.used_mem_current, 0);

    let buf = pool.allocate(4 << 20, &s).unwrap();
    s.sync().unwrap();
    assert!(pool.used_bytes().unwrap() >= 4 << 20);
    assert!(pool.used_high_bytes().unwrap() >= 4 << 20);
    assert!(pool.reserved_high_bytes().unwrap() >= 4 << 20);
    drop(buf);
    s.sync().unwrap();
    assert_eq!(pool.used_bytes().unwrap(), 0);
    assert!(pool.used_high_bytes().unwrap() >= 4 << 20, "the mark stays");
    pool.reset_used_high().unwrap();
    assert_eq!(pool.used_high_bytes().unwrap(), 0);
    pool.trim_to(0).unwrap();
    pool.reset_reserved_high().unwrap();
    assert_eq!(
        pool.reserved_high_bytes().unwrap(),
        pool.reserved_bytes().unwrap()
    );

    match PinnedMemoryResource::new(&d, PinnedMemoryResourceOptions::default()) {
        Ok(p) => {
            assert!(p.is_handle_owned());
            p.set_release_threshold(1 << 20).unwrap();
            assert_eq!(p.attributes().unwrap().release_threshold, 1 << 20);
        }
        Err(e) => assert_eq!(e.driver_code(), Some(sys::CUDA_ERROR_NOT_SUPPORTED), "{e}"),
    }
}

#[cfg(all(unix, feature = "ipc"))]
#[test]
fn ipc_pools_register_under_their_uuid() {
    require_gpu!();
    let d = dev0();
    let ipc = || {
        Arc::new(
            DeviceMemoryResource::new_pool(
                &d,
                DeviceMemoryPoolOptions {
                    ipc_enabled: true,
                    ..Default::default()
                },
            )
            .unwrap(),
        )
    };
    let (a, b) = (ipc(), ipc());
    let (ua, ub) = (a.uuid().unwrap(), b.uuid().unwrap());
    assert_ne!(ua, ub);
    assert!(!a.is_mapped());
    a.register(ua).unwrap();
    a.register(ua).unwrap();
    assert!(Arc::ptr_eq(
        &DeviceMemoryResource::from_registry(ua).unwrap(),
        &a
    ));
    // Another pool under the same UUID, a pool under another UUID than its own.
    let e = b.register(ua).unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::Other), "{e}");
    assert!(e.to_string().contains("another memory pool"), "{e}");
    assert!(b.register(cudars_core::PoolUuid([1; 16])).is_err());
    // Pools without IPC have no UUID and are not registered.
    let plain =
        Arc::new(DeviceMemoryResource::new_pool(&d, DeviceMemoryPoolOptions::default()).unwrap());
    assert_eq!(plain.uuid(), None);
    assert!(matches!(plain.register(ua), Err(Error::Unsupported { .. })));
    // The registry does not keep a pool alive.
    drop(a);
    assert!(DeviceMemoryResource::from_registry(ua).is_err());
    b.register(ua).unwrap_err();
    b.register(ub).unwrap();
}

#[test]
fn buffers_say_whether_they_are_mapped_and_who_owns_foreign_memory() {
    require_gpu!();
    let d = dev0();
    let s = stream(&d);
    let theirs = Arc::new(d.allocate(256, &s).unwrap());
    assert!(!theirs.is_mapped());
    assert!(theirs.owner().is_none());
    // SAFETY: `view` keeps `theirs`, whose 256 bytes outlive it; its work is
    // synchronised before it drops.
    let mut view = unsafe {
        Buffer::from_raw_with_owner(theirs.ptr(), 256, MemoryKind::Device, &d, theirs.clone())
    };
    assert!(!view.is_owned() && !view.is_mapped());
    let owner = view.owner().unwrap().downcast_ref::<Buffer>().unwrap();
    assert_eq!(owner.ptr(), theirs.ptr());
    assert_eq!(Arc::strong_count(&theirs), 2);
    view.fill_u32(5, &s).unwrap();
    let mut back = [0u32; 64];
    theirs.copy_to_host(&mut back, &s).unwrap();
    assert!(back.iter().all(|&v| v == 5));
    drop(view);
    assert_eq!(Arc::strong_count(&theirs), 1);
}

#[test]
fn managed_getters_read_what_the_setters_advised() {
    require_gpu!();
    let d = dev0();
    let s = stream(&d);
    // `cuMemAllocManaged` memory, which the driver advises (pool memory it does not).
    let buf = Arc::new(ManagedMemoryResource::legacy(&d, None))
        .allocate(1 << 20, &s)
        .unwrap();
    assert!(!buf.read_mostly().unwrap());
    buf.set_read_mostly(true).unwrap();
    assert!(buf.read_mostly().unwrap());
    buf.set_read_mostly(false).unwrap();
    assert!(!buf.read_mostly().unwrap());

    assert_eq!(buf.preferred_location().unwrap(), None);
    buf.set_preferred_location(Some(Location::Device(d)))
        .unwrap();
    assert_eq!(buf.preferred_location().unwrap(), Some(Location::Device(d)));
    buf.set_preferred_location(Some(Location::Host)).unwrap();
    assert_eq!(buf.preferred_location().unwrap(), Some(Location::Host));
    buf.set_preferred_location(None).unwrap();
    assert_eq!(buf.preferred_location().unwrap(), None);

    assert_eq!(buf.accessed_by().unwrap(), vec![]);
    buf.set_accessed_by(Location::Device(d), true).unwrap();
    assert_eq!(buf.accessed_by().unwrap(), vec![Location::Device(d)]);
    buf.set_accessed_by(Location::Device(d), false).unwrap();
    assert_eq!(buf.accessed_by().unwrap(), vec![]);

    assert_eq!(buf.last_prefetch_location().unwrap(), None);
    buf.prefetch(Location::Device(d), &s).unwrap();
    s.sync().unwrap();
    assert_eq!(
        buf.last_prefetch_location().unwrap(),
        Some(Location::Device(d))
    );

    // Device memory has none of these: it is no managed buffer.
    let plain = d.allocate(64, &s).unwrap();
    assert!(matches!(
        cudars_core::ManagedBuffer::from_buffer(plain),
        Err((Error::Unsupported { .. }, _))
    ));
}
