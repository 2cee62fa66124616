//! The workload of `../shared/reference/peers/bench.c` through the raw bindings,
//! printed as JSON lines with the metric names of `peers.md`, plus the cost of a call
//! through the resolved table beside a direct call of the same C function.
//!
//! Run: `cargo bench -p cudars-bindings` (or `bench.sh` from `cargo xtask package-tests`).
//! Without a GPU only the CPU figures (call overhead, NVRTC) are printed.

// Benchmark code: a failed step ends the run, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// SAFETY (for every `unsafe` block below): each calls the C API as bench.c does, with
// handles created here and pointers to live locals and buffers of the sizes passed.
#![allow(clippy::undocumented_unsafe_blocks)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::ffi::c_void;
use std::hint::black_box;
use std::time::Instant;

use cudars_bindings::IntoResult as _;
use cudars_bindings::driver::*;

const PEER: &str = "cuda-rs-bindings";

fn line(metric: &str, value: f64) {
    println!("{{\"peer\":\"{PEER}\",\"metric\":\"{metric}\",\"value\":{value:.4}}}");
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Nanoseconds per call of `f`, best of 5 runs of `n` calls.
fn per_call_ns(n: u32, mut f: impl FnMut()) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e9 / f64::from(n));
    }
    best
}

/// A call through the bindings' table against the same function called through a
/// pointer looked up directly: the dispatch overhead.
fn call_overhead() {
    let Ok(lib) = cudars_pathfinder::load_nvidia_dynamic_lib("nvrtc") else {
        eprintln!("driver bench: NVRTC not found; no call-overhead figures");
        return;
    };
    type VersionFn =
        unsafe extern "C" fn(*mut i32, *mut i32) -> cudars_bindings::nvrtc::nvrtcResult;
    let p = lib.symbol(c"nvrtcVersion").unwrap();
    let direct = unsafe { std::mem::transmute::<*mut c_void, VersionFn>(p.as_ptr()) };
    let direct = black_box(direct);
    let (mut a, mut b) = (0, 0);
    let bound = per_call_ns(10_000_000, || {
        black_box(unsafe { cudars_bindings::nvrtc::nvrtcVersion(&mut a, &mut b) });
    });
    let raw = per_call_ns(10_000_000, || {
        black_box(unsafe { direct(&mut a, &mut b) });
    });
    line("bindings_call_ns", bound);
    line("direct_call_ns", raw);
}

fn main() {
    let t_start = Instant::now();
    if let Err(why) = cudars_tests::gpu_status() {
        call_overhead();
        eprintln!("driver bench: no GPU ({why}); GPU figures skipped");
        return;
    }
    unsafe { cuInit(0) }.result().unwrap();
    let mut dev = 0;
    unsafe { cuDeviceGet(&mut dev, 0) }.result().unwrap();
    let mut ctx: CUcontext = std::ptr::null_mut();
    unsafe { cuDevicePrimaryCtxRetain(&mut ctx, dev) }
        .result()
        .unwrap();
    unsafe { cuCtxSetCurrent(ctx) }.result().unwrap();
    // What cudars-core's "is this context current?" check costs per operation.
    let get_current_ns = (0..5)
        .map(|_| {
            let mut cur: CUcontext = std::ptr::null_mut();
            let t = Instant::now();
            for _ in 0..1_000_000 {
                unsafe { cuCtxGetCurrent(std::hint::black_box(&mut cur)) };
            }
            assert_eq!(cur, ctx);
            t.elapsed().as_secs_f64() * 1e9 / 1e6
        })
        .fold(f64::INFINITY, f64::min);
    line("ctx_get_current_ns", get_current_ns);
    let arch = format!("--gpu-architecture={}", common::arch(dev));
    let compile = || {
        let t = Instant::now();
        let out = common::compile(common::BENCH_SRC, "bench.cu", &[&arch]).unwrap();
        (out.cubin, t.elapsed().as_secs_f64() * 1e3)
    };
    let (cubin, _) = compile();
    let nvrtc_ms = (0..4).map(|_| compile().1).fold(f64::INFINITY, f64::min);

    let mut module: CUmodule = std::ptr::null_mut();
    unsafe { cuModuleLoadData(&mut module, cubin.as_ptr().cast()) }
        .result()
        .unwrap();
    let (mut empty, mut saxpy): (CUfunction, CUfunction) =
        (std::ptr::null_mut(), std::ptr::null_mut());
    unsafe { cuModuleGetFunction(&mut empty, module, c"empty".as_ptr()) }
        .result()
        .unwrap();
    unsafe { cuModuleGetFunction(&mut saxpy, module, c"saxpy".as_ptr()) }
        .result()
        .unwrap();
    let mut s: CUstream = std::ptr::null_mut();
    unsafe { cuStreamCreate(&mut s, CU_STREAM_NON_BLOCKING.0) }
        .result()
        .unwrap();
    let mut buf: CUdeviceptr = 0;
    unsafe { cuMemAlloc(&mut buf, 1 << 20) }.result().unwrap();
    let mut n0: i32 = 0;
    let mut args: [*mut c_void; 2] = [(&raw mut buf).cast(), (&raw mut n0).cast()];

    {
        let n: usize = 1 << 20;
        let hx: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let mut hy = vec![1.0f32; n];
        let (mut dx, mut dy): (CUdeviceptr, CUdeviceptr) = (0, 0);
        unsafe { cuMemAlloc(&mut dx, n * 4) }.result().unwrap();
        unsafe { cuMemAlloc(&mut dy, n * 4) }.result().unwrap();
        unsafe { cuMemcpyHtoD(dx, hx.as_ptr().cast(), n * 4) }
            .result()
            .unwrap();
        unsafe { cuMemcpyHtoD(dy, hy.as_ptr().cast(), n * 4) }
            .result()
            .unwrap();
        let mut a = 2.0f32;
        let mut nn = n as u64;
        let mut sa: [*mut c_void; 4] = [
            (&raw mut a).cast(),
            (&raw mut dx).cast(),
            (&raw mut dy).cast(),
            (&raw mut nn).cast(),
        ];
        let grid = n.div_ceil(256) as u32;
        unsafe {
            cuLaunchKernel(
                saxpy,
                grid,
                1,
                1,
                256,
                1,
                1,
                0,
                s,
                sa.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .unwrap();
        unsafe { cuStreamSynchronize(s) }.result().unwrap();
        unsafe { cuMemcpyDtoH(hy.as_mut_ptr().cast(), dy, n * 4) }
            .result()
            .unwrap();
        for (i, v) in hy.iter().enumerate() {
            assert_eq!(*v, 2.0 * i as f32 + 1.0, "saxpy wrong at {i}");
        }
        line("first_result_ms", t_start.elapsed().as_secs_f64() * 1e3);
        unsafe { cuMemFree(dx) }.result().unwrap();
        unsafe { cuMemFree(dy) }.result().unwrap();
    }
    line("nvrtc_compile_ms", nvrtc_ms);

    let launch = |args: &mut [*mut c_void; 2]| {
        unsafe {
            cuLaunchKernel(
                empty,
                1,
                1,
                1,
                32,
                1,
                1,
                0,
                s,
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .unwrap();
    };
    for _ in 0..2000 {
        launch(&mut args);
    }
    unsafe { cuStreamSynchronize(s) }.result().unwrap();
    const BATCH: usize = 256;
    let mut per = Vec::with_capacity(400);
    for _ in 0..400 {
        let t = Instant::now();
        for _ in 0..BATCH {
            launch(&mut args);
        }
        per.push(t.elapsed().as_secs_f64() / BATCH as f64 * 1e6);
        unsafe { cuStreamSynchronize(s) }.result().unwrap();
    }
    line("launch_host_us", median(per));

    let r = 20_000;
    let t = Instant::now();
    for _ in 0..r {
        launch(&mut args);
        unsafe { cuStreamSynchronize(s) }.result().unwrap();
    }
    line(
        "launch_sync_us",
        t.elapsed().as_secs_f64() / f64::from(r) * 1e6,
    );

    let mut p: CUdeviceptr = 0;
    for _ in 0..1000 {
        unsafe { cuMemAllocAsync(&mut p, 1 << 20, s) }
            .result()
            .unwrap();
        unsafe { cuMemFreeAsync(p, s) }.result().unwrap();
    }
    unsafe { cuStreamSynchronize(s) }.result().unwrap();
    let a = 100_000;
    let t = Instant::now();
    for _ in 0..a {
        unsafe { cuMemAllocAsync(&mut p, 1 << 20, s) }
            .result()
            .unwrap();
        unsafe { cuMemFreeAsync(p, s) }.result().unwrap();
    }
    unsafe { cuStreamSynchronize(s) }.result().unwrap();
    line(
        "alloc_free_async_us",
        t.elapsed().as_secs_f64() / f64::from(a) * 1e6,
    );

    let b: usize = 256 << 20;
    let mut h: *mut c_void = std::ptr::null_mut();
    unsafe { cuMemAllocHost(&mut h, b) }.result().unwrap();
    unsafe { std::ptr::write_bytes(h.cast::<u8>(), 1, b) };
    let mut d: CUdeviceptr = 0;
    unsafe { cuMemAlloc(&mut d, b) }.result().unwrap();
    let (mut e0, mut e1): (CUevent, CUevent) = (std::ptr::null_mut(), std::ptr::null_mut());
    unsafe { cuEventCreate(&mut e0, 0) }.result().unwrap();
    unsafe { cuEventCreate(&mut e1, 0) }.result().unwrap();
    let (mut best_h2d, mut best_d2h) = (f32::INFINITY, f32::INFINITY);
    for _ in 0..10 {
        let mut ms = 0f32;
        unsafe { cuEventRecord(e0, s) }.result().unwrap();
        unsafe { cuMemcpyHtoDAsync(d, h, b, s) }.result().unwrap();
        unsafe { cuEventRecord(e1, s) }.result().unwrap();
        unsafe { cuEventSynchronize(e1) }.result().unwrap();
        unsafe { cuEventElapsedTime(&mut ms, e0, e1) }
            .result()
            .unwrap();
        best_h2d = best_h2d.min(ms);
        unsafe { cuEventRecord(e0, s) }.result().unwrap();
        unsafe { cuMemcpyDtoHAsync(h, d, b, s) }.result().unwrap();
        unsafe { cuEventRecord(e1, s) }.result().unwrap();
        unsafe { cuEventSynchronize(e1) }.result().unwrap();
        unsafe { cuEventElapsedTime(&mut ms, e0, e1) }
            .result()
            .unwrap();
        best_d2h = best_d2h.min(ms);
    }
    line(
        "h2d_pinned_gbps",
        b as f64 / (f64::from(best_h2d) * 1e-3) / 1e9,
    );
    line(
        "d2h_pinned_gbps",
        b as f64 / (f64::from(best_d2h) * 1e-3) / 1e9,
    );
    unsafe { cuMemFreeHost(h) }.result().unwrap();
    unsafe { cuMemFree(d) }.result().unwrap();
    unsafe { cuMemFree(buf) }.result().unwrap();
    unsafe { cuModuleUnload(module) }.result().unwrap();
    // Last, so that it does not count towards `first_result_ms`.
    call_overhead();
}
