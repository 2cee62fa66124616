//! cuFFT on the GPU against the CPU: complex round trips in 1, 2 and 3
//! dimensions, batched, in both precisions; real-to-complex against a direct
//! DFT; complex-to-real back; plan reuse; the typed errors. Without a GPU each
//! test prints `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cudars_core::{Device, DeviceBuffer, InvalidKind, Stream, StreamOptions};
use cudars_fft::{Complex, Complex64, Direction, Kind, Plan};
use cudars_tests::require_gpu;

fn setup() -> (Device, Stream) {
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = dev.create_stream(StreamOptions::default()).unwrap();
    (dev, s)
}

fn signal(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| ((i * 37 % 101) as f64 / 50.0 - 1.0) + (i as f64 * 0.1).sin())
        .collect()
}

#[test]
fn complex_round_trips_in_every_rank_and_precision() {
    require_gpu!();
    let (dev, s) = setup();
    for dims in [&[1000usize][..], &[48, 40][..], &[12, 10, 8][..]] {
        let batch = 3;
        let total: usize = dims.iter().product::<usize>() * batch;
        let x = signal(2 * total);
        // f64
        let host: Vec<Complex64> = (0..total)
            .map(|i| Complex::new(x[2 * i], x[2 * i + 1]))
            .collect();
        let a = DeviceBuffer::from_host(&dev, &host, &s).unwrap();
        let mut b = DeviceBuffer::<Complex64>::zeroed(&dev, total, &s).unwrap();
        let Some(plan) =
            cudars_tests::needs_library_driver!(Plan::<f64>::new(dims, batch, Kind::C2C, &s))
        else {
            return;
        };
        plan.c2c(a.view(), b.view_mut(), Direction::Forward)
            .unwrap();
        plan.c2c_in_place(b.view_mut(), Direction::Inverse).unwrap();
        let n = (total / batch) as f64;
        for (g, w) in b.to_vec(&s).unwrap().iter().zip(&host) {
            assert!(
                (g.re / n - w.re).abs() < 1e-10 && (g.im / n - w.im).abs() < 1e-10,
                "{dims:?} f64"
            );
        }
        // f32, the same plan run twice.
        let host: Vec<Complex<f32>> = host
            .iter()
            .map(|c| Complex::new(c.re as f32, c.im as f32))
            .collect();
        let a = DeviceBuffer::from_host(&dev, &host, &s).unwrap();
        let mut b = DeviceBuffer::<Complex<f32>>::zeroed(&dev, total, &s).unwrap();
        let mut c = DeviceBuffer::<Complex<f32>>::zeroed(&dev, total, &s).unwrap();
        let Some(plan) =
            cudars_tests::needs_library_driver!(Plan::<f32>::new(dims, batch, Kind::C2C, &s))
        else {
            return;
        };
        for _ in 0..2 {
            plan.c2c(a.view(), b.view_mut(), Direction::Forward)
                .unwrap();
            plan.c2c(b.view(), c.view_mut(), Direction::Inverse)
                .unwrap();
        }
        for (g, w) in c.to_vec(&s).unwrap().iter().zip(&host) {
            let (re, im) = (f64::from(g.re) / n, f64::from(g.im) / n);
            assert!(
                (re - f64::from(w.re)).abs() < 1e-4 && (im - f64::from(w.im)).abs() < 1e-4,
                "{dims:?} f32"
            );
        }
    }
}

#[test]
fn real_transforms_match_a_direct_dft() {
    require_gpu!();
    let (dev, s) = setup();
    let (n, batch) = (96, 2);
    let x = signal(n * batch);
    let dx = DeviceBuffer::from_host(&dev, &x, &s).unwrap();
    let h = n / 2 + 1;
    let mut spec = DeviceBuffer::<Complex64>::zeroed(&dev, h * batch, &s).unwrap();
    let Some(fwd) =
        cudars_tests::needs_library_driver!(Plan::<f64>::new(&[n], batch, Kind::R2C, &s))
    else {
        return;
    };
    fwd.r2c(dx.view(), spec.view_mut()).unwrap();
    let got = spec.to_vec(&s).unwrap();
    for b in 0..batch {
        for k in 0..h {
            let (mut re, mut im) = (0.0, 0.0);
            for j in 0..n {
                let t = -2.0 * std::f64::consts::PI * (j * k) as f64 / n as f64;
                re += x[b * n + j] * t.cos();
                im += x[b * n + j] * t.sin();
            }
            let g = got[b * h + k];
            assert!(
                (g.re - re).abs() < 1e-9 && (g.im - im).abs() < 1e-9,
                "batch {b} bin {k}: {g:?} vs {re} {im}"
            );
        }
    }
    // And back: C2R of the spectrum is n times the signal.
    let mut back = DeviceBuffer::<f64>::zeroed(&dev, n * batch, &s).unwrap();
    let Some(inv) =
        cudars_tests::needs_library_driver!(Plan::<f64>::new(&[n], batch, Kind::C2R, &s))
    else {
        return;
    };
    inv.c2r(spec.view_mut(), back.view_mut()).unwrap();
    for (g, w) in back.to_vec(&s).unwrap().iter().zip(&x) {
        assert!((g / n as f64 - w).abs() < 1e-10);
    }
}

#[test]
fn wrong_lengths_kinds_and_shapes_are_typed_errors() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(plan) = cudars_tests::needs_library_driver!(Plan::<f32>::new(&[64], 2, Kind::R2C, &s))
    else {
        return;
    };
    assert!(plan.work_size().is_ok());
    let x = DeviceBuffer::<f32>::zeroed(&dev, 128, &s).unwrap();
    // The half spectrum of 2 × 64 is 2 × 33.
    let mut y = DeviceBuffer::<Complex<f32>>::zeroed(&dev, 64, &s).unwrap();
    let e = plan.r2c(x.view(), y.view_mut()).unwrap_err();
    assert_eq!(
        e.invalid_kind(),
        Some(InvalidKind::OutOfRange),
        "{}",
        e.report()
    );
    assert!(
        e.to_string()
            .contains("the output holds 64 elements; the plan ([64] × 2) needs 66"),
        "{e}"
    );
    // A plan of another kind.
    let e = plan
        .c2c(
            y.view(),
            DeviceBuffer::<Complex<f32>>::zeroed(&dev, 64, &s)
                .unwrap()
                .view_mut(),
            Direction::Forward,
        )
        .unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::Other));
    // Shapes.
    assert_eq!(
        Plan::<f32>::new(&[], 1, Kind::C2C, &s)
            .unwrap_err()
            .invalid_kind(),
        Some(InvalidKind::Other)
    );
    assert_eq!(
        Plan::<f32>::new(&[8, 0], 1, Kind::C2C, &s)
            .unwrap_err()
            .invalid_kind(),
        Some(InvalidKind::ZeroSize)
    );
    assert_eq!(
        Plan::<f32>::new(&[8], 0, Kind::C2C, &s)
            .unwrap_err()
            .invalid_kind(),
        Some(InvalidKind::ZeroSize)
    );
    assert_eq!(
        Plan::<f32>::new(&[2, 2, 2, 2], 1, Kind::C2C, &s)
            .unwrap_err()
            .invalid_kind(),
        Some(InvalidKind::Other)
    );
}

/// The `cuStreamWaitEvent` calls the driver shim has counted, when the test
/// runs under it (`gpu-pkg/run-shim.sh real`).
fn shim_waits() -> Option<i64> {
    let shim = cudars_tests::DriverShim::find().ok()?;
    Some(
        shim.counts("calls")
            .get("cuStreamWaitEvent")
            .copied()
            .unwrap_or(0),
    )
}

/// Issue 26, hole 11: executions of one plan on two streams shared its work
/// area. `set_stream` now makes the new stream wait for the old one, so large
/// transforms swapped between two streams stay ordered (and the second reads
/// what the first wrote); under the shim, each swap is a counted wait.
#[test]
fn executions_stay_ordered_across_set_stream() {
    require_gpu!();
    let (dev, s1) = setup();
    let s2 = dev.create_stream(StreamOptions::default()).unwrap();
    let n = 1usize << 22;
    let x = signal(2 * n);
    let host: Vec<Complex<f32>> = (0..n)
        .map(|i| Complex::new(x[2 * i] as f32, x[2 * i + 1] as f32))
        .collect();
    let a = DeviceBuffer::from_host(&dev, &host, &s1).unwrap();
    let mut b = DeviceBuffer::<Complex<f32>>::zeroed(&dev, n, &s1).unwrap();
    let mut c = DeviceBuffer::<Complex<f32>>::zeroed(&dev, n, &s1).unwrap();
    let Some(mut plan) =
        cudars_tests::needs_library_driver!(Plan::<f32>::new(&[n], 1, Kind::C2C, &s1))
    else {
        return;
    };
    let before = shim_waits();
    let rounds = 4;
    for _ in 0..rounds {
        plan.c2c(a.view(), b.view_mut(), Direction::Forward)
            .unwrap();
        plan.set_stream(&s2).unwrap();
        plan.c2c(b.view(), c.view_mut(), Direction::Inverse)
            .unwrap();
        plan.set_stream(&s1).unwrap();
    }
    if let (Some(before), Some(after)) = (before, shim_waits()) {
        assert!(
            after - before >= 2 * rounds,
            "each set_stream to another stream waits for the old one ({before} -> {after})"
        );
    }
    let scale = n as f64;
    for (g, w) in c.to_vec(&s1).unwrap().iter().zip(&host) {
        let (re, im) = (f64::from(g.re) / scale, f64::from(g.im) / scale);
        assert!(
            (re - f64::from(w.re)).abs() < 1e-3 && (im - f64::from(w.im)).abs() < 1e-3,
            "a transform overlapped another through set_stream"
        );
    }
}
