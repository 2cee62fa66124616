//! Launch throughput with 1, 2, 4, 8 and 16 host threads, each on its own
//! stream, the workload of `benches/c/threads.c` (pthreads over the driver API)
//! and `benches/c/threads_cuda_core.py` (Python cuda.core with threads): every
//! thread (its stream non-blocking, as in C) launches an empty kernel (one block of 32 threads, a pointer and an
//! `int`) 10 000 times on its stream, then waits for it; the time runs from
//! releasing the threads together to the last one done. Median of 5 rounds per
//! thread count. JSON lines (peer `cuda-rs`): `launch_mt_<n>_mlaunch_per_s`,
//! millions of launches per second over all threads.

// Benchmark code: a failed step ends the run, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Barrier;
use std::time::Instant;

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
        let mut rounds: Vec<f64> = (0..5)
            .map(|_| {
                let start = Barrier::new(threads + 1);
                let (empty, cfg, start) = (&empty, &cfg, &start);
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
                                let mut buf = DeviceBuffer::<f32>::zeroed(&dev, 256, &s).unwrap();
                                s.sync().unwrap();
                                start.wait();
                                for _ in 0..PER_THREAD {
                                    // SAFETY: `empty` touches nothing.
                                    unsafe { empty.launch(&s, cfg, (buf.view_mut(), 0)) }.unwrap();
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
            })
            .collect();
        rounds.sort_by(f64::total_cmp);
        println!(
            "{{\"peer\":\"cuda-rs\",\"metric\":\"launch_mt_{threads}_mlaunch_per_s\",\"value\":{:.4}}}",
            rounds[2]
        );
    }
}
