//! Cholesky throughput through cudars-solver, the workload of `benches/c/cholesky.c`
//! (the same cuSOLVER calls from C): a large factorisation (`potrf`, 8192×8192
//! `f64`, lower) and a batch of small ones (`potrfBatched`, 65,536 16×16 `f32`
//! matrices, lower). Each call restores the matrix from a pristine copy on the
//! device first (a factor is not positive definite in general) and reads
//! cuSOLVER's `info` back, as both sides must to see a failure: a timing is the
//! host's clock around 5 calls; 3 warm-up calls, then the median of 7 timings.
//! JSON lines (peer `cuda-rs`), milliseconds per call.

// Benchmark code: a failed step ends the run, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Instant;

use cudars_core::{Device, DeviceBuffer, Stream, StreamOptions};
use cudars_solver::{Element, Fill, MatMut, Solver};

const LARGE: usize = 8192;
const SMALL: usize = 16;
const BATCH: usize = 65_536;

/// `n·I` plus a small symmetric pattern: positive definite, `batch` times.
fn spd<T: Element>(n: usize, batch: usize, of: impl Fn(f64) -> T) -> Vec<T> {
    let mut v = Vec::with_capacity(n * n * batch);
    for _ in 0..batch {
        for j in 0..n {
            for i in 0..n {
                let x = if i == j {
                    n as f64
                } else {
                    (((i + j) % 7) as f64 - 3.0) * 0.01
                };
                v.push(of(x));
            }
        }
    }
    v
}

/// The median over 7 timings of 5 calls, in milliseconds per call.
fn median_ms(s: &Stream, mut call: impl FnMut()) -> f64 {
    for _ in 0..3 {
        call();
    }
    s.sync().unwrap();
    let mut ms: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..5 {
                call();
            }
            t.elapsed().as_secs_f64() * 1e3 / 5.0
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    ms[3]
}

fn large(solver: &Solver, dev: &Device, s: &Stream) -> f64 {
    let pristine = DeviceBuffer::from_host(dev, &spd(LARGE, 1, |x| x), s).unwrap();
    let mut a = DeviceBuffer::<f64>::zeroed(dev, LARGE * LARGE, s).unwrap();
    median_ms(s, || {
        a.copy_from(pristine.view(), s).unwrap();
        let mut m = MatMut::col_major(a.view_mut(), LARGE, LARGE).unwrap();
        solver.potrf(Fill::Lower, &mut m).unwrap();
    })
}

fn batched(solver: &Solver, dev: &Device, s: &Stream) -> f64 {
    let pristine = DeviceBuffer::from_host(dev, &spd(SMALL, BATCH, |x| x as f32), s).unwrap();
    let mut a = DeviceBuffer::<f32>::zeroed(dev, SMALL * SMALL * BATCH, s).unwrap();
    median_ms(s, || {
        a.copy_from(pristine.view(), s).unwrap();
        let mut m = MatMut::col_major(a.view_mut(), SMALL, SMALL).unwrap();
        solver
            .potrf_batched(Fill::Lower, &mut m, SMALL * SMALL, BATCH)
            .unwrap();
    })
}

fn main() {
    if cudars_tests::gpu_status().unwrap_or(0) < 1 {
        eprintln!("cholesky bench: no GPU; nothing to measure");
        return;
    }
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = dev.create_stream(StreamOptions::default()).unwrap();
    let solver = Solver::new(&s).unwrap();
    let line = |metric: &str, v: f64| {
        println!("{{\"peer\":\"cuda-rs\",\"metric\":\"{metric}\",\"value\":{v:.4}}}");
    };
    line("potrf_8192_f64_ms", large(&solver, &dev, &s));
    line(
        "potrf_batched_16x16x65536_f32_ms",
        batched(&solver, &dev, &s),
    );
}
