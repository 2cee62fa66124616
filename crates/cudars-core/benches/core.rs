//! The workload of `../shared/reference/peers/bench.c` through the safe API,
//! printed as JSON lines with the metric names of `peers.md` (peer `cuda-rs`).
//!
//! Run: `cargo bench -p cudars-core` (or `bench.sh` from `cargo xtask package-tests`).

// Benchmark code: a failed step ends the run, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Instant;

use cudars_core::{
    Buffer, CompileTarget, Device, DeviceBuffer, EventOptions, LaunchConfig, MutPtr, PinnedBuffer,
    PinnedMemoryResource, PinnedMemoryResourceOptions, Program, ProgramOptions, SourceCode,
    StreamOptions, TypedKernel, launch,
};

const SRC: &str = "extern \"C\" __global__ void empty(float* p, int n) {}\n\
extern \"C\" __global__ void saxpy(float a, const float* x, float* y, unsigned long long n) {\n\
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n\
  if (i < n) y[i] = a * x[i] + y[i];\n}\n";

fn line(metric: &str, value: f64) {
    println!("{{\"peer\":\"cuda-rs\",\"metric\":\"{metric}\",\"value\":{value:.4}}}");
}

fn main() {
    let t_start = Instant::now();
    if let Err(why) = cudars_tests::gpu_status() {
        eprintln!("core bench: no GPU ({why}); nothing to measure");
        return;
    }
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let options = ProgramOptions {
        arch: Some(dev.arch().unwrap()),
        ..Default::default()
    };
    let program = Program::new(SourceCode::Cxx(SRC), options).unwrap();
    let compile = || {
        let t = Instant::now();
        let code = program.compile(CompileTarget::Cubin, &[]).unwrap();
        (code, t.elapsed().as_secs_f64() * 1e3)
    };
    let (code, _) = compile();
    let nvrtc_ms = (0..4).map(|_| compile().1).fold(f64::INFINITY, f64::min);
    let empty = code.get_kernel("empty").unwrap();
    let saxpy = code.get_kernel("saxpy").unwrap();
    let s = dev
        .create_stream(StreamOptions {
            non_blocking: true,
            priority: None,
        })
        .unwrap();
    let pool = dev.default_memory_resource().unwrap();
    // What stays allocated while the allocations are timed comes from a pool of
    // its own, as C's `cuMemAlloc` keeps it out of the default pool: a default
    // pool holding live allocations makes each 1 MiB alloc + free slower (C's
    // own identical loop measured 0.72 µs in bench.c and 1.18 µs with two live
    // pool allocations, in one run).
    let side =
        Arc::new(cudars_core::DeviceMemoryResource::new_pool(&dev, Default::default()).unwrap());
    let buf = side.allocate(1 << 20, &s).unwrap();
    {
        let n: u64 = 1 << 20;
        let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let mut dx = side.allocate(x.len() * 4, &s).unwrap();
        let mut dy = side.allocate(x.len() * 4, &s).unwrap();
        dx.copy_from_host(&x, &s).unwrap();
        dy.copy_from_host(&vec![1.0f32; x.len()], &s).unwrap();
        // SAFETY: the kernel only touches the buffers passed, within their sizes.
        unsafe {
            launch(
                &s,
                &LaunchConfig::for_elements(n, 256),
                &saxpy,
                &[&2.0f32, &dx, &dy, &n],
            )
        }
        .unwrap();
        let mut y = vec![0f32; x.len()];
        dy.copy_to_host(&mut y, &s).unwrap();
        for (i, v) in y.iter().enumerate() {
            assert_eq!(*v, 2.0 * i as f32 + 1.0, "saxpy wrong at {i}");
        }
        line("first_result_ms", t_start.elapsed().as_secs_f64() * 1e3);
    }
    line("nvrtc_compile_ms", nvrtc_ms);

    let cfg = LaunchConfig::new(1, 32);
    let n0 = 0i32;
    for _ in 0..2000 {
        // SAFETY: the kernel only touches the buffers passed, within their sizes.
        unsafe { launch(&s, &cfg, &empty, &[&buf, &n0]) }.unwrap();
    }
    s.sync().unwrap();
    let mut per = Vec::with_capacity(400);
    for _ in 0..400 {
        let t = Instant::now();
        for _ in 0..256 {
            // SAFETY: the kernel only touches the buffers passed, within their sizes.
            unsafe { launch(&s, &cfg, &empty, &[&buf, &n0]) }.unwrap();
        }
        per.push(t.elapsed().as_secs_f64() / 256.0 * 1e6);
        s.sync().unwrap();
    }
    per.sort_by(f64::total_cmp);
    line("launch_host_us", per[per.len() / 2]);

    // The same launches through a typed handle: the signature checked once, the
    // arguments a tuple (a mutable view and an int).
    let typed = TypedKernel::<(MutPtr<f32>, i32)>::new(empty.clone()).unwrap();
    let mut tbuf = DeviceBuffer::<f32>::allocate_from(side.clone(), 1 << 18, &s).unwrap();
    for _ in 0..2000 {
        // SAFETY: `empty` touches nothing.
        unsafe { typed.launch(&s, &cfg, (tbuf.view_mut(), n0)) }.unwrap();
    }
    s.sync().unwrap();
    let mut per = Vec::with_capacity(400);
    for _ in 0..400 {
        let t = Instant::now();
        for _ in 0..256 {
            // SAFETY: as above.
            unsafe { typed.launch(&s, &cfg, (tbuf.view_mut(), n0)) }.unwrap();
        }
        per.push(t.elapsed().as_secs_f64() / 256.0 * 1e6);
        s.sync().unwrap();
    }
    per.sort_by(f64::total_cmp);
    line("launch_typed_host_us", per[per.len() / 2]);

    let r = 20_000;
    let t = Instant::now();
    for _ in 0..r {
        // SAFETY: the kernel only touches the buffers passed, within their sizes.
        unsafe { launch(&s, &cfg, &empty, &[&buf, &n0]) }.unwrap();
        s.sync().unwrap();
    }
    line(
        "launch_sync_us",
        t.elapsed().as_secs_f64() / f64::from(r) * 1e6,
    );

    for _ in 0..1000 {
        drop(pool.allocate(1 << 20, &s).unwrap());
    }
    s.sync().unwrap();
    let a = 100_000;
    let t = Instant::now();
    for _ in 0..a {
        drop(pool.allocate(1 << 20, &s).unwrap());
    }
    s.sync().unwrap();
    line(
        "alloc_free_async_us",
        t.elapsed().as_secs_f64() / f64::from(a) * 1e6,
    );

    // The same through `DeviceBuffer<T>` and the device's allocation resource.
    for _ in 0..1000 {
        drop(DeviceBuffer::<u8>::allocate(&dev, 1 << 20, &s).unwrap());
    }
    s.sync().unwrap();
    let t = Instant::now();
    for _ in 0..a {
        drop(DeviceBuffer::<u8>::allocate(&dev, 1 << 20, &s).unwrap());
    }
    s.sync().unwrap();
    line(
        "alloc_free_async_typed_us",
        t.elapsed().as_secs_f64() / f64::from(a) * 1e6,
    );

    // The same allocations and frees timed as the launches are: batches of 256,
    // the stream synchronised after each, the median batch (the totals above
    // include whatever the driver does when its queue fills, which varies from
    // run to run; `benches/c/hot.c` times C's the same way).
    line(
        "alloc_free_batch_us",
        batches(&s, || drop(pool.allocate(1 << 20, &s).unwrap())),
    );
    line(
        "alloc_free_typed_batch_us",
        batches(&s, || {
            drop(DeviceBuffer::<u8>::allocate(&dev, 1 << 20, &s).unwrap())
        }),
    );

    // Host time of an event record and query, and of a 4 KiB device-to-device
    // copy: batches of 256, median batch (as `launch_host_us`).
    let ev = dev.create_event(EventOptions::default()).unwrap();
    line(
        "event_record_query_us",
        batches(&s, || {
            ev.record(&s).unwrap();
            std::hint::black_box(ev.is_done().unwrap());
        }),
    );
    let src4k = side.allocate(4096, &s).unwrap();
    let mut dst4k = side.allocate(4096, &s).unwrap();
    line(
        "d2d_copy_4k_us",
        batches(&s, || dst4k.copy_from(&src4k, &s).unwrap()),
    );

    let bytes = 256 << 20;
    let pinned =
        Arc::new(PinnedMemoryResource::new(&dev, PinnedMemoryResourceOptions::default()).unwrap());
    let mut h = Buffer::allocate(pinned, bytes, &s).unwrap();
    h.fill_u8(1, &s).unwrap();
    let mut d = pool.allocate(bytes, &s).unwrap();
    let timed = EventOptions {
        timing: true,
        ..Default::default()
    };
    let (e0, e1) = (
        dev.create_event(timed).unwrap(),
        dev.create_event(timed).unwrap(),
    );
    let (mut best_h2d, mut best_d2h) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..10 {
        s.record(&e0).unwrap();
        d.copy_from(&h, &s).unwrap();
        s.record(&e1).unwrap();
        e1.sync().unwrap();
        best_h2d = best_h2d.min(e1.elapsed_since(&e0).unwrap().as_secs_f64());
        s.record(&e0).unwrap();
        h.copy_from(&d, &s).unwrap();
        s.record(&e1).unwrap();
        e1.sync().unwrap();
        best_d2h = best_d2h.min(e1.elapsed_since(&e0).unwrap().as_secs_f64());
    }
    line("h2d_pinned_gbps", bytes as f64 / best_h2d / 1e9);
    line("d2h_pinned_gbps", bytes as f64 / best_d2h / 1e9);

    // Typed and truly asynchronous: a `PinnedBuffer` (cuMemHostAlloc, as C's
    // cuMemAllocHost) to and from a `DeviceBuffer`, timed by events as above.
    let mut ph = PinnedBuffer::<u8>::from_slice(&dev, &vec![1u8; bytes]).unwrap();
    let mut pd = DeviceBuffer::<u8>::allocate(&dev, bytes, &s).unwrap();
    let (mut best_h2d, mut best_d2h) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..10 {
        s.record(&e0).unwrap();
        pd.view_mut().copy_from_pinned(&ph, &s).unwrap();
        s.record(&e1).unwrap();
        e1.sync().unwrap();
        best_h2d = best_h2d.min(e1.elapsed_since(&e0).unwrap().as_secs_f64());
        s.record(&e0).unwrap();
        pd.view().copy_to_pinned(&mut ph, &s).unwrap();
        s.record(&e1).unwrap();
        e1.sync().unwrap();
        best_d2h = best_d2h.min(e1.elapsed_since(&e0).unwrap().as_secs_f64());
    }
    assert!(ph.as_slice().unwrap().iter().all(|&b| b == 1));
    line("h2d_async_pinned_gbps", bytes as f64 / best_h2d / 1e9);
    line("d2h_async_pinned_gbps", bytes as f64 / best_d2h / 1e9);
    graphs(&s, &empty, &buf);
}

/// Host microseconds per call of `op`: 2000 calls to warm up, then 400 batches
/// of 256, the stream synchronised after each; the median batch.
fn batches(s: &cudars_core::Stream, mut op: impl FnMut()) -> f64 {
    for _ in 0..2000 {
        op();
    }
    s.sync().unwrap();
    let mut per = Vec::with_capacity(400);
    for _ in 0..400 {
        let t = Instant::now();
        for _ in 0..256 {
            op();
        }
        per.push(t.elapsed().as_secs_f64() / 256.0 * 1e6);
        s.sync().unwrap();
    }
    per.sort_by(f64::total_cmp);
    per[per.len() / 2]
}

/// `graph_launch_us`: one launch of a captured graph of 100 empty kernels, then a
/// sync; `launch_100_us`: the same 100 kernels launched one by one, then a sync.
fn graphs(s: &cudars_core::Stream, empty: &cudars_core::Kernel, buf: &Buffer) {
    use cudars_core::{CaptureMode, GraphCompleteOptions};
    let cfg = LaunchConfig::new(1, 32);
    let n0 = 0i32;
    // SAFETY: `buf` and `empty` outlive the graph and its instantiation.
    unsafe { s.begin_capture(CaptureMode::Global) }.unwrap();
    for _ in 0..100 {
        // SAFETY: the kernel only touches the buffers passed, within their sizes.
        unsafe { launch(s, &cfg, empty, &[buf, &n0]) }.unwrap();
    }
    let graph = s.end_capture().unwrap();
    let exec = graph.instantiate(GraphCompleteOptions::default()).unwrap();
    exec.upload(s).unwrap();
    let time = |f: &dyn Fn()| {
        for _ in 0..20 {
            f();
        }
        let mut v: Vec<f64> = (0..200)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let g = time(&|| {
        exec.launch(s).unwrap();
        s.sync().unwrap();
    });
    let l = time(&|| {
        for _ in 0..100 {
            // SAFETY: the kernel only touches the buffers passed, within their sizes.
            unsafe { launch(s, &cfg, empty, &[buf, &n0]) }.unwrap();
        }
        s.sync().unwrap();
    });
    line("graph_launch_us", g);
    line("launch_100_us", l);
}
