//! Launch throughput with 1, 2, 4, 8 and 16 host threads, each on its own
//! stream, the workload of `benches/c/threads.c` (pthreads over the driver API)
//! and `benches/c/threads_cuda_core.py` (Python cuda.core with threads): every
//! thread (its stream non-blocking, as in C) launches an empty kernel (one block of 32 threads, a pointer and an
//! `int`) 10 000 times on its stream, then waits for it; the time runs from
//! releasing the threads together to the last one done. Median of 5 rounds per
//! thread count. JSON lines (peer `cuda-rs`): `launch_mt_<n>_mlaunch_per_s`,
//! millions of launches per second over all threads.
//!
//! Each round also runs the same workload through the raw bindings in the same
//! process (`cuLaunchKernel` on the same function, stream and pointer: C's calls),
//! the two alternating which goes first, and prints it as peer `cuda-rs-bindings`,
//! with `launch_mt_<n>_safe_over_raw`, the median of the per-round ratios of the
//! safe API's rate to the raw one's. Between processes the rate of one program
//! moves by up to 20 % (C against itself, 11 rounds on an H100: per-round ratios
//! 0.79-1.19), which hides a few per cent; within one process the pairs share
//! that state.

// Benchmark code: a failed step ends the run, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Barrier;
use std::time::Instant;

use cudars_core::cudars_bindings::driver as sys;
use cudars_core::{
    CompileTarget, Device, DeviceBuffer, LaunchConfig, MutPtr, Program, ProgramOptions, SourceCode,
    StreamOptions, TypedKernel,
};

const SRC: &str = "extern \"C\" __global__ void empty(float* p, int n) {}\n";
const PER_THREAD: usize = 10_000;

fn main() {
    if let Err(why) = cudars_tests::gpu_status() {
        eprintln!("threads bench: no GPU ({why}); nothing to measure");
        return;
    }
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let code = Program::new(
        SourceCode::Cxx(SRC),
        ProgramOptions::for_device(&dev).unwrap(),
    )
    .unwrap()
    .compile(CompileTarget::Cubin, &[])
    .unwrap();
    let empty = TypedKernel::<(MutPtr<f32>, i32)>::new(code.get_kernel("empty").unwrap()).unwrap();
    let cfg = LaunchConfig::new(1, 32);
    for threads in [1usize, 2, 4, 8, 16] {
        let (mut safe, mut raw, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..5 {
            let (s, r) = if round % 2 == 0 {
                let s = rate(&dev, &empty, &cfg, threads, false);
                (s, rate(&dev, &empty, &cfg, threads, true))
            } else {
                let r = rate(&dev, &empty, &cfg, threads, true);
                (rate(&dev, &empty, &cfg, threads, false), r)
            };
            safe.push(s);
            raw.push(r);
            ratio.push(s / r);
        }
        for (peer, metric, v) in [
            ("cuda-rs", "mlaunch_per_s", safe),
            ("cuda-rs-bindings", "mlaunch_per_s", raw),
            ("cuda-rs", "safe_over_raw", ratio),
        ] {
            println!(
                "{{\"peer\":\"{peer}\",\"metric\":\"launch_mt_{threads}_{metric}\",\"value\":{:.4}}}",
                median(v)
            );
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Millions of launches per second of `threads` threads, each launching `empty`
/// `PER_THREAD` times on a stream of its own, through the safe API or (`raw`) the
/// raw bindings on the same handles.
fn rate(
    dev: &Device,
    empty: &TypedKernel<(MutPtr<f32>, i32)>,
    cfg: &LaunchConfig,
    threads: usize,
    raw: bool,
) -> f64 {
    let start = Barrier::new(threads + 1);
    let start = &start;
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(move || {
                    dev.set_current().unwrap();
                    let s = dev
                        .create_stream(StreamOptions {
                            non_blocking: true,
                            ..StreamOptions::default()
                        })
                        .unwrap();
                    let mut buf = DeviceBuffer::<f32>::zeroed(dev, 256, &s).unwrap();
                    s.sync().unwrap();
                    let (f, stream) = (empty.kernel().handle(), s.handle());
                    let mut p = buf.view().ptr();
                    let mut zero = 0i32;
                    start.wait();
                    if raw {
                        let mut args: [*mut std::ffi::c_void; 2] =
                            [(&raw mut p).cast(), (&raw mut zero).cast()];
                        for _ in 0..PER_THREAD {
                            // SAFETY: C's call (benches/c/threads.c): the kernel's
                            // function, a live stream, and the addresses of a device
                            // pointer and an `int`, its two parameters; `empty`
                            // touches nothing.
                            let r = unsafe {
                                sys::cuLaunchKernel(
                                    f,
                                    1,
                                    1,
                                    1,
                                    32,
                                    1,
                                    1,
                                    0,
                                    stream,
                                    args.as_mut_ptr(),
                                    std::ptr::null_mut(),
                                )
                            };
                            assert_eq!(r, sys::CUDA_SUCCESS);
                        }
                    } else {
                        for _ in 0..PER_THREAD {
                            // SAFETY: `empty` touches nothing.
                            unsafe { empty.launch(&s, cfg, (buf.view_mut(), 0)) }.unwrap();
                        }
                    }
                    s.sync().unwrap();
                })
            })
            .collect();
        start.wait();
        let t = Instant::now();
        for w in workers {
            w.join().unwrap();
        }
        (threads * PER_THREAD) as f64 / t.elapsed().as_secs_f64() / 1e6
    })
}
