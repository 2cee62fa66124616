//! FFT time at 2²⁴ points through cudars-fft, the workload of `benches/c/fft.c`
//! (the same cuFFT calls from C): one 1-D complex-to-complex forward transform
//! of 2²⁴ points, out of place, in single and double precision. For each: 5
//! warm-up transforms, then the median of 7 timings of 20 transforms between two
//! events. JSON lines (peer `cuda-rs`): microseconds per transform.

// Benchmark code: a failed step ends the run, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cudars_core::{Device, DeviceBuffer, Event, EventOptions, Stream, StreamOptions};
use cudars_fft::{Complex, Direction, Float, Kind, Plan};

const N: usize = 1 << 24;

fn micros<T: Float>(dev: &Device, s: &Stream) -> f64
where
    Complex<T>: bytemuck::Pod,
{
    let a = DeviceBuffer::<Complex<T>>::zeroed(dev, N, s).unwrap();
    let mut b = DeviceBuffer::<Complex<T>>::zeroed(dev, N, s).unwrap();
    let plan = Plan::<T>::new(&[N], 1, Kind::C2C, s).unwrap();
    let mut run = || {
        plan.c2c(a.view(), b.view_mut(), Direction::Forward)
            .unwrap()
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
    let mut us: Vec<f64> = (0..7)
        .map(|_| {
            s.record(&e0).unwrap();
            for _ in 0..20 {
                run();
            }
            s.record(&e1).unwrap();
            e1.sync().unwrap();
            e1.elapsed_since(&e0).unwrap().as_secs_f64() * 1e6 / 20.0
        })
        .collect();
    us.sort_by(f64::total_cmp);
    us[3]
}

fn main() {
    if cudars_tests::gpu_status().unwrap_or(0) < 1 {
        eprintln!("fft bench: no GPU; nothing to measure");
        return;
    }
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = dev.create_stream(StreamOptions::default()).unwrap();
    let line = |metric: &str, v: f64| {
        println!("{{\"peer\":\"cuda-rs\",\"metric\":\"{metric}\",\"value\":{v:.4}}}");
    };
    line("fft_c2c_2p24_f32_us", micros::<f32>(&dev, &s));
    line("fft_c2c_2p24_f64_us", micros::<f64>(&dev, &s));
}
