//! All-reduce bandwidth through cudars-nccl, the workload of `benches/c/allreduce.c`
//! (the same NCCL calls from C): one process drives every GPU
//! (`Communicator::init_all`), an out-of-place `f32` sum of 8 KiB to 1 GiB per
//! rank, the ranks' calls in one group, on cudars-core's default (pool) memory. For
//! each size: 5 warm-up all-reduces, then the median of 7 timings of k
//! all-reduces (k = 1 GiB / size, from 20 to 2000; wall clock, from the first
//! call to every stream's end). JSON lines (peer `cuda-rs`), GB/s:
//! `allreduce_algbw_<size>_gbps` (bytes per rank / time) and, with two or more
//! GPUs, `allreduce_busbw_<size>_gbps` (algbw × 2(n−1)/n, NCCL's bus bandwidth).

// Benchmark code: a failed step ends the run, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Instant;

use cudars_core::{Device, DeviceBuffer, Stream, StreamOptions};
use cudars_nccl::{Communicator, Group, ReduceOp};

/// Bytes per rank: 8 KiB to 1 GiB, ×8 each step.
const SIZES: [usize; 7] = [
    8 << 10,
    64 << 10,
    512 << 10,
    4 << 20,
    32 << 20,
    256 << 20,
    1 << 30,
];

fn label(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{}g", b >> 30),
        b if b >= 1 << 20 => format!("{}m", b >> 20),
        b => format!("{}k", b >> 10),
    }
}

fn main() {
    let n = cudars_tests::gpu_status().unwrap_or(0);
    if n < 1 {
        eprintln!("allreduce bench: no GPU; nothing to measure");
        return;
    }
    if cudars_nccl::version().is_err() {
        eprintln!("allreduce bench: NCCL not found; nothing to measure");
        return;
    }
    let devices = Device::all().unwrap();
    let n = devices.len();
    let comms = Communicator::init_all(&devices).unwrap();
    let streams: Vec<Stream> = devices
        .iter()
        .map(|d| d.create_stream(StreamOptions::default()).unwrap())
        .collect();
    let line = |metric: String, v: f64| {
        println!("{{\"peer\":\"cuda-rs\",\"metric\":\"{metric}\",\"value\":{v:.4}}}");
    };
    for bytes in SIZES {
        let len = bytes / 4;
        let send: Vec<_> = devices
            .iter()
            .zip(&streams)
            .map(|(d, s)| DeviceBuffer::<f32>::zeroed(d, len, s).unwrap())
            .collect();
        let mut recv: Vec<_> = devices
            .iter()
            .zip(&streams)
            .map(|(d, s)| DeviceBuffer::<f32>::zeroed(d, len, s).unwrap())
            .collect();
        let mut run = || {
            let mut g = Group::new();
            for (r, out) in recv.iter_mut().enumerate() {
                g.all_reduce(
                    &comms[r],
                    send[r].view(),
                    out.view_mut(),
                    ReduceOp::Sum,
                    &streams[r],
                )
                .unwrap();
            }
            g.launch().unwrap();
        };
        for _ in 0..5 {
            run();
        }
        streams.iter().for_each(|s| s.sync().unwrap());
        let iters = ((1usize << 30) / bytes).clamp(20, 2000);
        let mut secs: Vec<f64> = (0..7)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..iters {
                    run();
                }
                streams.iter().for_each(|s| s.sync().unwrap());
                t.elapsed().as_secs_f64() / iters as f64
            })
            .collect();
        secs.sort_by(f64::total_cmp);
        let algbw = bytes as f64 / secs[3] / 1e9;
        line(format!("allreduce_algbw_{}_gbps", label(bytes)), algbw);
        if n >= 2 {
            let busbw = algbw * 2.0 * (n as f64 - 1.0) / n as f64;
            line(format!("allreduce_busbw_{}_gbps", label(bytes)), busbw);
        }
    }
}
