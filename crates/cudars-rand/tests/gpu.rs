//! cuRAND on the GPU: the moments of 10⁷ samples of each distribution within
//! statistical bounds, reproducibility by seed, offsets, odd lengths and the typed
//! errors. Without a GPU each test prints `SKIPPED`; with
//! `CUDA_TEST_REQUIRE_GPU=1` it fails.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cudars_core::{Device, DeviceBuffer, InvalidKind, Stream, StreamOptions};
use cudars_rand::{Generator, RngKind};
use cudars_tests::require_gpu;

const N: usize = 10_000_000;
const KINDS: [RngKind; 3] = [RngKind::Philox4x32_10, RngKind::Xorwow, RngKind::Mrg32k3a];

fn setup() -> (Device, Stream) {
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = dev.create_stream(StreamOptions::default()).unwrap();
    (dev, s)
}

fn moments(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    (mean, var)
}

/// |got − want| within 6 standard errors.
fn within(got: f64, want: f64, se: f64, what: &str) {
    assert!(
        (got - want).abs() <= 6.0 * se,
        "{what}: {got} vs {want} (standard error {se})"
    );
}

#[test]
fn distributions_have_their_moments() {
    require_gpu!();
    let (dev, s) = setup();
    let n = N as f64;
    for kind in KINDS {
        let Some(mut g) = cudars_tests::needs_library_driver!(Generator::with_seed(kind, 1234, &s))
        else {
            return;
        };
        let mut x = DeviceBuffer::<f32>::allocate(&dev, N, &s).unwrap();
        // Uniform (0, 1]: mean 1/2, variance 1/12.
        g.fill_uniform(x.view_mut()).unwrap();
        let v: Vec<f64> = x.to_vec(&s).unwrap().into_iter().map(f64::from).collect();
        assert!(
            v.iter().all(|&u| u > 0.0 && u <= 1.0),
            "{kind:?}: uniform out of (0, 1]"
        );
        let (m, var) = moments(&v);
        within(
            m,
            0.5,
            (1.0 / 12.0 / n).sqrt(),
            &format!("{kind:?} uniform mean"),
        );
        within(
            var,
            1.0 / 12.0,
            (1.0 / 180.0 / n).sqrt(),
            &format!("{kind:?} uniform variance"),
        );
        // Normal(2, 3): variance 9, var of the sample variance 2σ⁴/n.
        g.fill_normal(x.view_mut(), 2.0, 3.0).unwrap();
        let v: Vec<f64> = x.to_vec(&s).unwrap().into_iter().map(f64::from).collect();
        let (m, var) = moments(&v);
        within(m, 2.0, (9.0 / n).sqrt(), &format!("{kind:?} normal mean"));
        within(
            var,
            9.0,
            (2.0 * 81.0 / n).sqrt(),
            &format!("{kind:?} normal variance"),
        );
        // Log-normal(μ 0.1, σ 0.5), in f64: mean exp(μ + σ²/2).
        let mut y = DeviceBuffer::<f64>::allocate(&dev, N, &s).unwrap();
        g.fill_log_normal(y.view_mut(), 0.1, 0.5).unwrap();
        let v = y.to_vec(&s).unwrap();
        assert!(v.iter().all(|&x| x > 0.0));
        let (m, _) = moments(&v);
        let want = (0.1f64 + 0.125).exp();
        let want_var = (0.25f64.exp() - 1.0) * (0.2f64 + 0.25).exp();
        within(
            m,
            want,
            (want_var / n).sqrt(),
            &format!("{kind:?} log-normal mean"),
        );
    }
}

#[test]
fn a_seed_reproduces_its_sequence_and_offsets_skip_ahead() {
    require_gpu!();
    let (dev, s) = setup();
    // On a driver older than cuRAND's CUDA major: the typed error, and the end.
    if cudars_tests::needs_library_driver!(Generator::new(KINDS[0], &s)).is_none() {
        return;
    }
    for kind in KINDS {
        let draw = |seed: u64, offset: u64, n: usize| {
            let mut g = Generator::with_seed(kind, seed, &s).unwrap();
            g.set_offset(offset).unwrap();
            let mut x = DeviceBuffer::<u32>::allocate(&dev, n, &s).unwrap();
            g.fill_u32(x.view_mut()).unwrap();
            x.to_vec(&s).unwrap()
        };
        let a = draw(7, 0, 4096);
        assert_eq!(a, draw(7, 0, 4096), "{kind:?}: one seed, one sequence");
        assert_ne!(
            a,
            draw(8, 0, 4096),
            "{kind:?}: another seed, another sequence"
        );
        // An offset of k continues the sequence k numbers in (cuRAND's default ordering).
        let b = draw(7, 1024, 1024);
        assert_eq!(b, a[1024..2048], "{kind:?}: offset 1024");
        // Reseeding restarts at offset 0.
        let Some(mut g) = cudars_tests::needs_library_driver!(Generator::with_seed(kind, 9, &s))
        else {
            return;
        };
        g.set_offset(5).unwrap();
        g.set_seed(7).unwrap();
        let mut x = DeviceBuffer::<u32>::allocate(&dev, 16, &s).unwrap();
        g.fill_u32(x.view_mut()).unwrap();
        assert_eq!(x.to_vec(&s).unwrap(), a[..16], "{kind:?}: reseeded");
    }
}

#[test]
fn odd_lengths_and_bad_parameters() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(mut g) =
        cudars_tests::needs_library_driver!(Generator::with_seed(RngKind::Philox4x32_10, 3, &s))
    else {
        return;
    };
    // An odd length is filled to its last element (a NaN sentinel would survive otherwise).
    let mut x = DeviceBuffer::from_host(&dev, &vec![f32::NAN; 1001], &s).unwrap();
    g.fill_normal(x.view_mut(), 0.0, 1.0).unwrap();
    assert!(x.to_vec(&s).unwrap().iter().all(|v| v.is_finite()));
    let mut one = DeviceBuffer::from_host(&dev, &[f64::NAN], &s).unwrap();
    g.fill_log_normal(one.view_mut(), 0.0, 1.0).unwrap();
    assert!(one.to_vec(&s).unwrap()[0] > 0.0);
    // A sub-view is filled and nothing around it.
    let mut z = DeviceBuffer::<f32>::zeroed(&dev, 10, &s).unwrap();
    g.fill_uniform(z.slice_mut(3..7).unwrap()).unwrap();
    let z = z.to_vec(&s).unwrap();
    assert!(
        z[..3].iter().chain(&z[7..]).all(|&v| v == 0.0) && z[3..7].iter().all(|&v| v > 0.0),
        "{z:?}"
    );
    // Bad parameters are refused before cuRAND is called.
    for (mean, sd) in [
        (0.0, 0.0),
        (0.0, -1.0),
        (f32::NAN, 1.0),
        (0.0, f32::INFINITY),
    ] {
        let e = g.fill_normal(x.view_mut(), mean, sd).unwrap_err();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::Other), "{}", e.report());
        assert!(e.to_string().contains("standard deviation"), "{e}");
    }
    // Empty views are nothing to do.
    g.fill_uniform(x.slice_mut(..0).unwrap()).unwrap();
    if cudars_tests::gpu_status().unwrap_or(0) >= 2 {
        let d1 = Device::new(1).unwrap();
        let s1 = d1.create_stream(StreamOptions::default()).unwrap();
        let mut y = DeviceBuffer::<f32>::allocate(&d1, 4, &s1).unwrap();
        let e = g.fill_uniform(y.view_mut()).unwrap_err();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::OtherDevice));
        assert_eq!(
            g.set_stream(&s1).unwrap_err().invalid_kind(),
            Some(InvalidKind::OtherDevice)
        );
    }
}

/// Issue 26, hole 11: generations on two streams shared the generator's state.
/// `set_stream` now makes the new stream wait for the old one, so a sequence
/// drawn across stream swaps is the one drawn on a single stream.
#[test]
fn generations_stay_ordered_across_set_stream() {
    require_gpu!();
    let (dev, s1) = setup();
    let s2 = dev.create_stream(StreamOptions::default()).unwrap();
    let (n, rounds) = (1usize << 20, 6);
    for kind in KINDS {
        let Some(mut single) =
            cudars_tests::needs_library_driver!(Generator::with_seed(kind, 11, &s1))
        else {
            return;
        };
        let mut want = Vec::new();
        for _ in 0..rounds {
            let mut x = DeviceBuffer::<u32>::allocate(&dev, n, &s1).unwrap();
            single.fill_u32(x.view_mut()).unwrap();
            want.extend(x.to_vec(&s1).unwrap());
        }

        let Some(mut g) = cudars_tests::needs_library_driver!(Generator::with_seed(kind, 11, &s1))
        else {
            return;
        };
        let mut outs = Vec::new();
        for r in 0..rounds {
            let s = if r % 2 == 0 { &s1 } else { &s2 };
            g.set_stream(s).unwrap();
            let mut x = DeviceBuffer::<u32>::allocate(&dev, n, s).unwrap();
            g.fill_u32(x.view_mut()).unwrap();
            outs.push(x);
        }
        g.set_stream(&s1).unwrap();
        let got: Vec<u32> = outs.iter().flat_map(|x| x.to_vec(&s1).unwrap()).collect();
        assert_eq!(got, want, "{kind:?}: swapped streams, one sequence");
    }
}
