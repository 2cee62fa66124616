//! How many driver calls each hot operation of cudars-core makes once warm,
//! counted without a GPU: a child process loads the shim as `libcuda.so.1` in
//! its fake-driver mode (`CUDA_RS_SHIM_FAKE_DRIVER=1`, see the shim's `fake`
//! module), which counts every call of every driver function, and runs each
//! operation through the safe API between two readings of the counts.
//!
//! A timing cannot tell a regression of 20 ns from the machine's noise; a count
//! can. The expected counts are the floor: what C would call for the same work
//! (a launch is one `cuLaunchKernel`, a stream-ordered allocation one
//! `cuMemAllocFromPoolAsync`, a free on its own stream one `cuMemFreeAsync`),
//! plus exactly what the soundness contract adds where it applies (a typed
//! launch whose operand is freed on another stream orders that free after the
//! kernel with one event). A change that adds a call to a hot path fails here,
//! with the whole table of what each operation now calls.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;

use cudars_core::{
    Buffer, ContextScope, Device, DeviceBuffer, DeviceMemoryResource, EventOptions, LaunchConfig,
    Library, LibraryOptions, MutPtr, ObjectCode, Stream, StreamOptions, TypedKernel, launch,
};
use cudars_tests::DriverShim;

/// Set in the child: run the operations and count.
const CHILD: &str = "CUDA_RS_CALL_COUNTS_CHILD";

type Counts = BTreeMap<String, i64>;

/// The driver calls `op` makes, after running it `warm` times uncounted.
fn count(shim: &DriverShim, warm: usize, mut op: impl FnMut()) -> Counts {
    for _ in 0..warm {
        op();
    }
    shim.set_faults("");
    op();
    shim.counts("driver")
}

fn counts(pairs: &[(&str, i64)]) -> Counts {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn non_blocking(dev: &Device) -> Stream {
    dev.create_stream(StreamOptions {
        non_blocking: true,
        ..StreamOptions::default()
    })
    .unwrap()
}

/// The child's side: every operation, measured, checked against its floor.
fn child() {
    let shim = DriverShim::find().expect("the shim is the loaded driver");
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = non_blocking(&dev);
    let other = non_blocking(&dev);
    // The fake loads any image; the crate checks a cubin's ELF header (64-bit,
    // little-endian, no segments or sections here). Every kernel is
    // `(float*, int)`.
    let mut elf = vec![0u8; 64];
    elf[..6].copy_from_slice(b"\x7fELF\x02\x01");
    let code = ObjectCode::from_cubin(elf.clone()).unwrap();
    let library = Library::load(&code, &LibraryOptions::default()).unwrap();
    // Issue 43 point 2: an `ObjectCode` is loaded once: `to_library` is the
    // library its kernels come from (it loaded a second copy, whose variables
    // the kernels did not read), and other options once loaded are refused.
    let once = ObjectCode::from_cubin(elf.clone()).unwrap();
    let from_kernels = once.library().unwrap();
    assert_eq!(
        once.to_library(&LibraryOptions::default())
            .unwrap()
            .handle(),
        from_kernels.handle()
    );
    let preserved = LibraryOptions {
        binary_is_preserved: true,
        ..LibraryOptions::default()
    };
    assert!(matches!(
        once.to_library(&preserved),
        Err(cudars_core::Error::InvalidArgument { .. })
    ));
    assert_ne!(
        Library::load(&once, &preserved).unwrap().handle(),
        from_kernels.handle(),
        "Library::load is the separate copy"
    );
    let kernel = library.get_kernel("empty").unwrap();
    let typed = TypedKernel::<(MutPtr<f32>, i32)>::new(kernel.clone()).unwrap();
    let cfg = LaunchConfig::new(1, 32);
    let pool = dev.default_memory_resource().unwrap();
    // Issue 43 point 4: the default pool keeps freed memory, as cuda.core's
    // `DeviceMemoryResource(dev)` makes it (the driver's default threshold is 0).
    assert_eq!(pool.release_threshold().unwrap(), u64::MAX);
    let buf = pool.allocate(4096, &s).unwrap();
    let mut tbuf = DeviceBuffer::<f32>::allocate(&dev, 1024, &s).unwrap();
    let mut elsewhere = DeviceBuffer::<f32>::allocate(&dev, 1024, &other).unwrap();
    let src = pool.allocate(4096, &s).unwrap();
    let mut dst = pool.allocate(4096, &s).unwrap();
    let event = dev.create_event(EventOptions::default()).unwrap();
    let n0 = 0i32;

    let mut table: Vec<(&str, Counts, Counts)> = Vec::new();
    let mut check = |name: &'static str, got: Counts, want: &[(&str, i64)]| {
        table.push((name, got, counts(want)));
    };

    check(
        "launch (byte API, &Buffer)",
        count(&shim, 3, || {
            // SAFETY: the fake runs no kernel.
            unsafe { launch(&s, &cfg, &kernel, &[&buf, &n0]) }.unwrap()
        }),
        &[("cuLaunchKernel", 1)],
    );
    check(
        "typed launch, operand freed on the launch stream",
        count(&shim, 3, || {
            // SAFETY: as above.
            unsafe { typed.launch(&s, &cfg, (tbuf.view_mut(), 0)) }.unwrap()
        }),
        &[("cuLaunchKernel", 1)],
    );
    check(
        "typed launch, operand freed on another stream (rule 2: one event)",
        count(&shim, 3, || {
            // SAFETY: as above.
            unsafe { typed.launch(&s, &cfg, (elsewhere.view_mut(), 0)) }.unwrap()
        }),
        &[
            ("cuLaunchKernel", 1),
            // A capturing stream's work is not ordered (rule 2): asked first.
            ("cuStreamIsCapturing", 1),
            // The event is made in the current context: asked, not trusted.
            ("cuCtxGetCurrent", 1),
            ("cuEventCreate", 1),
            ("cuEventRecord", 1),
            ("cuStreamWaitEvent", 1),
            ("cuEventDestroy", 1),
        ],
    );
    // Issue 43 point 1: a read on a third stream is ordered after the buffer's
    // uses with one event (the free stream, which every use on another stream
    // was joined to, is waited for); on the free stream itself, nothing.
    check(
        "order_after_uses on the buffer's free stream (nothing to wait for)",
        count(&shim, 3, || elsewhere.order_after_uses(&other).unwrap()),
        &[],
    );
    check(
        "order_after_uses on another stream (one event)",
        count(&shim, 3, || elsewhere.order_after_uses(&s).unwrap()),
        &[
            ("cuCtxGetCurrent", 1),
            ("cuEventCreate", 1),
            ("cuEventRecord", 1),
            ("cuStreamWaitEvent", 1),
            ("cuEventDestroy", 1),
        ],
    );
    check(
        "Buffer alloc (Arc<DeviceMemoryResource>::allocate)",
        count(&shim, 3, || {
            std::mem::forget(pool.allocate(1 << 20, &s).unwrap())
        }),
        &[("cuMemAllocFromPoolAsync", 1)],
    );
    // Issue 43 point 12: `DeviceMemoryResource::default_pool(&dev)?.allocate(..)`
    // compiles, and is the process-wide resource `default_memory_resource`
    // hands out: the same direct path.
    let by_name = DeviceMemoryResource::default_pool(&dev).unwrap();
    assert!(std::sync::Arc::ptr_eq(&by_name, &pool));
    check(
        "Buffer alloc (DeviceMemoryResource::default_pool(&dev)?.allocate)",
        count(&shim, 3, || {
            std::mem::forget(
                DeviceMemoryResource::default_pool(&dev)
                    .unwrap()
                    .allocate(1 << 20, &s)
                    .unwrap(),
            )
        }),
        &[
            ("cuMemAllocFromPoolAsync", 1),
            // The release threshold, read (and raised were it 0) on each call,
            // as cuda.core's constructor does.
            ("cuMemPoolGetAttribute", 1),
        ],
    );
    check(
        "Buffer alloc (Device::allocate)",
        count(&shim, 3, || {
            std::mem::forget(dev.allocate(1 << 20, &s).unwrap())
        }),
        &[("cuMemAllocFromPoolAsync", 1)],
    );
    check(
        "DeviceBuffer<f32> alloc",
        count(&shim, 3, || {
            std::mem::forget(DeviceBuffer::<f32>::allocate(&dev, 1 << 18, &s).unwrap())
        }),
        &[("cuMemAllocFromPoolAsync", 1)],
    );
    let mut held: Vec<Buffer> = (0..4)
        .map(|_| pool.allocate(1 << 20, &s).unwrap())
        .collect();
    check(
        "Buffer free on its own stream",
        count(&shim, 3, || drop(held.pop().unwrap())),
        &[("cuMemFreeAsync", 1)],
    );
    let mut held: Vec<DeviceBuffer<f32>> = (0..4)
        .map(|_| DeviceBuffer::<f32>::allocate(&dev, 1 << 18, &s).unwrap())
        .collect();
    check(
        "DeviceBuffer<f32> free on its own stream",
        count(&shim, 3, || drop(held.pop().unwrap())),
        &[("cuMemFreeAsync", 1)],
    );
    check(
        "alloc + free, 1 MiB (alloc_free_async_us)",
        count(&shim, 3, || drop(pool.allocate(1 << 20, &s).unwrap())),
        &[("cuMemAllocFromPoolAsync", 1), ("cuMemFreeAsync", 1)],
    );
    check(
        "D2D copy of 4 KiB on the buffers' stream",
        count(&shim, 3, || dst.copy_from(&src, &s).unwrap()),
        &[("cuMemcpyAsync", 1)],
    );
    check(
        "DeviceBuffer<f32> alloc + free, 1 MiB (alloc_free_async_typed_us)",
        count(&shim, 3, || {
            drop(DeviceBuffer::<f32>::allocate(&dev, 1 << 18, &s).unwrap())
        }),
        &[("cuMemAllocFromPoolAsync", 1), ("cuMemFreeAsync", 1)],
    );
    let tsrc = DeviceBuffer::<f32>::allocate(&dev, 1024, &s).unwrap();
    check(
        "DeviceBuffer<f32> D2D copy of 4 KiB on the buffers' stream",
        count(&shim, 3, || tbuf.copy_from(tsrc.view(), &s).unwrap()),
        &[("cuMemcpyAsync", 1)],
    );
    // An NCCL collective's only context work: NCCL sets its own device, so on
    // a primary context's stream, with a primary context known current,
    // nothing (C makes no call either); the collective itself is NCCL's.
    check(
        "library scope of an NCCL collective (ContextScope::for_device_setting_library)",
        count(&shim, 3, || {
            let scope = ContextScope::for_device_setting_library(&s).unwrap();
            assert!(scope.is_none());
        }),
        &[],
    );
    // cuBLAS, cuFFT and cuRAND run in the current context: their scope asks
    // the driver on entry and checks what is current when it ends.
    check(
        "library scope of a cuBLAS/cuFFT/cuRAND call (ContextScope::for_stream)",
        count(&shim, 3, || drop(ContextScope::for_stream(&s).unwrap())),
        &[("cuCtxGetCurrent", 2)],
    );
    check(
        "event record",
        count(&shim, 3, || event.record(&s).unwrap()),
        &[("cuEventRecord", 1)],
    );
    check(
        "event query",
        count(&shim, 3, || assert!(event.is_done().unwrap())),
        &[("cuEventQuery", 1)],
    );

    // Code outside the crate leaves no context current (a raw call): the
    // launch that took the context on trust fails with CUDA_ERROR_INVALID_CONTEXT,
    // asks the driver, makes the context current and launches again.
    check(
        "launch after another library changed the current context",
        count(&shim, 0, || {
            // SAFETY: no context current is a valid state of the thread.
            let rc = unsafe { cudars_bindings::driver::cuCtxSetCurrent(std::ptr::null_mut()) };
            assert_eq!(rc, cudars_bindings::driver::CUDA_SUCCESS);
            shim.set_faults("");
            // SAFETY: the fake runs no kernel.
            unsafe { launch(&s, &cfg, &kernel, &[&buf, &n0]) }.unwrap();
        }),
        &[
            ("cuLaunchKernel", 2),
            ("cuCtxGetCurrent", 1),
            ("cuCtxSetCurrent", 1),
        ],
    );
    check(
        "launch once the context is current again",
        count(&shim, 0, || {
            // SAFETY: the fake runs no kernel.
            unsafe { launch(&s, &cfg, &kernel, &[&buf, &n0]) }.unwrap()
        }),
        &[("cuLaunchKernel", 1)],
    );

    let mut report = String::new();
    let mut failed = false;
    for (name, got, want) in &table {
        let ok = got == want;
        failed |= !ok;
        report.push_str(&format!(
            "{} {name}: {got:?}{}\n",
            if ok { "ok  " } else { "FAIL" },
            if ok {
                String::new()
            } else {
                format!(" (expected {want:?})")
            }
        ));
    }
    println!("{report}");
    assert!(!failed, "driver calls per operation:\n{report}");
}

#[test]
fn hot_operations_make_the_fewest_driver_calls() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    common::run_fake_driver_child(
        "hot_operations_make_the_fewest_driver_calls",
        CHILD,
        "ok   event query",
    );
}
