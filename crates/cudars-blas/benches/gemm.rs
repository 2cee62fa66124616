//! GEMM throughput at 4096³ through cudars-blas, the workload of `benches/c/gemm.c`
//! (the same cuBLAS call from C) and `benches/c/gemm_cupy.py` (CuPy's `matmul`):
//! `f32` (SGEMM, FP32 compute), `f16` and `bf16` (FP32 accumulation), column-major,
//! no transposes, alpha 1 and beta 0. For each: 5 warm-up calls, then the median
//! of 7 timings of 20 calls between two events. JSON lines (peer `cuda-rs`), in
//! TFLOP/s.

// Benchmark code: a failed step ends the run, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cudars_blas::{Blas, Element, MatMut, MatRef, Op};
use cudars_core::half::{bf16, f16};
use cudars_core::{Device, DeviceBuffer, Event, EventOptions, Stream, StreamOptions};

const N: usize = 4096;

fn tflops<T: Element>(
    blas: &Blas,
    dev: &Device,
    s: &Stream,
    one: T::Scalar,
    zero: T::Scalar,
) -> f64 {
    let a = DeviceBuffer::<T>::zeroed(dev, N * N, s).unwrap();
    let b = DeviceBuffer::<T>::zeroed(dev, N * N, s).unwrap();
    let mut c = DeviceBuffer::<T>::zeroed(dev, N * N, s).unwrap();
    let mut run = || {
        blas.gemm(
            one,
            MatRef::col_major(a.view(), N, N).unwrap(),
            Op::N,
            MatRef::col_major(b.view(), N, N).unwrap(),
            Op::N,
            zero,
            &mut MatMut::col_major(c.view_mut(), N, N).unwrap(),
        )
        .unwrap();
    };
    for _ in 0..5 {
        run();
    }
    s.sync().unwrap();
    let timed = EventOptions {
        timing: true,
        ..EventOptions::default()
    };
    let (e0, e1) = (
        Event::new(dev, timed).unwrap(),
        Event::new(dev, timed).unwrap(),
    );
    let mut ms: Vec<f64> = (0..7)
        .map(|_| {
            s.record(&e0).unwrap();
            for _ in 0..20 {
                run();
            }
            s.record(&e1).unwrap();
            e1.sync().unwrap();
            e1.elapsed_since(&e0).unwrap().as_secs_f64() * 1e3 / 20.0
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    2.0 * (N as f64).powi(3) / (ms[3] * 1e-3) / 1e12
}

fn main() {
    if cudars_tests::gpu_status().unwrap_or(0) < 1 {
        eprintln!("gemm bench: no GPU; nothing to measure");
        return;
    }
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = dev.create_stream(StreamOptions::default()).unwrap();
    let blas = Blas::new(&s).unwrap();
    let line = |metric: &str, v: f64| {
        println!("{{\"peer\":\"cuda-rs\",\"metric\":\"{metric}\",\"value\":{v:.4}}}");
    };
    line(
        "sgemm_4096_tflops",
        tflops::<f32>(&blas, &dev, &s, 1.0, 0.0),
    );
    line(
        "hgemm_4096_tflops",
        tflops::<f16>(&blas, &dev, &s, 1.0, 0.0),
    );
    line(
        "bf16gemm_4096_tflops",
        tflops::<bf16>(&blas, &dev, &s, 1.0, 0.0),
    );
}
