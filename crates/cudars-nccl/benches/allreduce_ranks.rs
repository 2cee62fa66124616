//! All-reduce bandwidth with one process per GPU, the way a launcher starts a
//! job: each rank joins through [`World`] (torchrun's variables and
//! `NCCL_COMM_ID`), then an out-of-place `f32` sum of 8 KiB, 1 MiB and
//! 256 MiB per rank on cudars-core's default (pool) memory. The workload of
//! `benches/c/allreduce_ranks.c` (the same NCCL calls from C, blocking init).
//! For each size: 3 warm-up all-reduces, then the median of 5 timings of k
//! all-reduces (k = 1 GiB / size, from 10 to 1000; wall clock from the first
//! call to the stream's end, each timing started after a small all-reduce
//! that lines the ranks up). Rank 0 prints JSON lines (peer `cuda-rs`), GB/s:
//! `allreduce_ranks_busbw_<size>_gbps` (bytes per rank / time × 2(n−1)/n).
//!
//! Without a launcher's variables (as `bench.sh` runs it) there is nothing to
//! measure; `run-launchers.sh` starts it as one process per GPU.

// Benchmark code: a failed step ends the run, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use cudars_core::{DeviceBuffer, StreamOptions};
use cudars_nccl::{Launcher, ReduceOp, World};

const SIZES: [(usize, &str); 3] = [(8 << 10, "8k"), (1 << 20, "1m"), (256 << 20, "256m")];

fn main() {
    let world = World::from_env().unwrap();
    if world.launcher() == Launcher::None {
        eprintln!(
            "allreduce_ranks bench: no launcher variables; run-launchers.sh starts it per GPU"
        );
        return;
    }
    let n = world.size();
    let comm = world.join(Duration::from_secs(120)).unwrap();
    let dev = *comm.device();
    dev.set_current().unwrap();
    let s = dev.create_stream(StreamOptions::default()).unwrap();
    let mut flag = DeviceBuffer::<f32>::zeroed(&dev, 1, &s).unwrap();
    for (bytes, label) in SIZES {
        let len = bytes / 4;
        let send = DeviceBuffer::<f32>::zeroed(&dev, len, &s).unwrap();
        let mut recv = DeviceBuffer::<f32>::zeroed(&dev, len, &s).unwrap();
        let iters = ((1usize << 30) / bytes).clamp(10, 1000);
        for _ in 0..3 {
            comm.all_reduce(send.view(), recv.view_mut(), ReduceOp::Sum, &s)
                .unwrap();
        }
        let mut secs = Vec::new();
        for _ in 0..5 {
            comm.all_reduce_in_place(flag.view_mut(), ReduceOp::Sum, &s)
                .unwrap();
            s.sync().unwrap();
            let t = Instant::now();
            for _ in 0..iters {
                comm.all_reduce(send.view(), recv.view_mut(), ReduceOp::Sum, &s)
                    .unwrap();
            }
            s.sync().unwrap();
            secs.push(t.elapsed().as_secs_f64() / iters as f64);
        }
        secs.sort_by(f64::total_cmp);
        let algbw = bytes as f64 / secs[2] / 1e9;
        let busbw = algbw * 2.0 * (n - 1) as f64 / n as f64;
        if world.rank() == 0 {
            println!(
                "{{\"peer\":\"cuda-rs\",\"metric\":\"allreduce_ranks_busbw_{label}_gbps\",\"value\":{busbw:.4},\"ranks\":{n},\"us\":{:.2}}}",
                secs[2] * 1e6
            );
        }
    }
    comm.destroy().unwrap();
}
