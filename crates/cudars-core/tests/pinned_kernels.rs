//! A `PinnedBuffer<T>` given to kernels (issue 28, point 13): `view` and
//! `view_mut` are the `const T*` and `T*` arguments of a typed kernel (and of
//! `kernels!`' launch functions), as a `DeviceBuffer`'s are; and the tries to
//! break rule 3 of the soundness contract with them from safe code (a host slice
//! taken while a kernel is queued on the buffer, a forgotten view, a panic after
//! the launch, a dropped or forgotten buffer, host functions on other streams, a
//! capture). Each test holds its stream with a spinning kernel, so what it checks
//! is pending when it is tried. Without a GPU each test prints `SKIPPED`; with
//! `CUDA_TEST_REQUIRE_GPU=1` it fails.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cudars_core::{
    CaptureMode, Device, DeviceBuffer, Error, LaunchConfig, PinnedBuffer, Stream, StreamOptions,
};
use cudars_tests::require_gpu;

cudars_core::kernels! {
    /// Kernels that spin first, so that what follows them stays pending.
    struct Spinning = source r#"
        extern "C" __global__ void spin_then_fill(float* y, unsigned long long n, float v,
                                                  unsigned long long cycles) {
            unsigned long long t0 = clock64();
            while (clock64() - t0 < cycles) {}
            for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
                 i < n; i += (unsigned long long)gridDim.x * blockDim.x) {
                y[i] = v;
            }
        }
        extern "C" __global__ void spin_then_copy(const float* x, float* y, unsigned long long n,
                                                  unsigned long long cycles) {
            unsigned long long t0 = clock64();
            while (clock64() - t0 < cycles) {}
            for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
                 i < n; i += (unsigned long long)gridDim.x * blockDim.x) {
                y[i] = x[i];
            }
        }
    "#;
}

/// SM clock cycles in a millisecond on an H100 (about 2 GHz).
const CYCLES_PER_MS: u64 = 2_000_000;
/// About 50 ms of spinning on an H100.
const SPIN: u64 = 50 * CYCLES_PER_MS;
const N: usize = 1 << 16;

fn setup() -> (Device, Stream, Stream, Spinning) {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s1 = d.create_stream(StreamOptions::default()).unwrap();
    let s2 = d.create_stream(StreamOptions::default()).unwrap();
    let k = Spinning::load(&d).unwrap();
    (d, s1, s2, k)
}

/// One thread per element, from `usize` counts (`LaunchConfig::try_new`, issue
/// 28, point 13).
fn cfg() -> LaunchConfig {
    LaunchConfig::try_new(N.div_ceil(256), 256).unwrap()
}

/// Queues `spin_then_fill(out, N, v, SPIN)` on `s`.
fn fill_late(k: &Spinning, s: &Stream, out: cudars_core::DeviceViewMut<'_, f32>, v: f32) {
    // SAFETY: the kernel writes y[0..n], n = N = the view's length.
    unsafe { k.spin_then_fill(s, &cfg(), out, N as u64, v, SPIN) }.unwrap();
}

/// The kernel writes the pinned memory in place, and the host slice taken at
/// once sees what it wrote: `as_slice` waited for the kernel.
#[test]
fn a_host_slice_waits_for_a_kernel_writing_the_pinned_buffer() {
    require_gpu!();
    let (d, s, _, k) = setup();
    let mut out = PinnedBuffer::<f32>::zeroed(&d, N).unwrap();
    fill_late(&k, &s, out.view_mut().unwrap(), 7.0);
    assert!(out.as_slice().unwrap().iter().all(|&x| x == 7.0));
    // And again through the mutable host slice.
    fill_late(&k, &s, out.view_mut().unwrap(), 8.0);
    let host = out.as_mut_slice().unwrap();
    assert!(host.iter().all(|&x| x == 8.0));
    host[0] = 1.0;
    assert_eq!(out.as_slice().unwrap()[0], 1.0);
}

/// The kernel reads the pinned memory in place (a `const T*`), and a host write
/// made at once waits for it: the device copy holds the values from before.
#[test]
fn a_host_write_waits_for_a_kernel_reading_the_pinned_buffer() {
    require_gpu!();
    let (d, s, _, k) = setup();
    let src: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let mut input = PinnedBuffer::from_slice(&d, &src).unwrap();
    let mut copy = DeviceBuffer::<f32>::zeroed(&d, N, &s).unwrap();
    // SAFETY: the kernel reads x[0..n] and writes y[0..n], n = N, both views' length.
    unsafe { k.spin_then_copy(&s, &cfg(), input.view(), copy.view_mut(), N as u64, SPIN) }.unwrap();
    input.as_mut_slice().unwrap().fill(-1.0);
    assert_eq!(copy.to_vec(&s).unwrap(), src);
}

/// The state lives in the buffer: forgetting the view lent to the kernel skips
/// nothing (the view has no `Drop` that anything could rest on).
#[test]
#[allow(clippy::forget_non_drop)]
fn forgetting_the_view_skips_no_wait() {
    require_gpu!();
    let (d, s, _, k) = setup();
    let mut out = PinnedBuffer::<f32>::zeroed(&d, N).unwrap();
    let mut view = out.view_mut().unwrap();
    fill_late(&k, &s, view.reborrow(), 3.0);
    std::mem::forget(view);
    assert!(out.as_slice().unwrap().iter().all(|&x| x == 3.0));
}

/// A panic after the launch, while the view lives, skips nothing either.
#[test]
fn a_panic_after_the_launch_skips_no_wait() {
    require_gpu!();
    let (d, s, _, k) = setup();
    let mut out = PinnedBuffer::<f32>::zeroed(&d, N).unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut view = out.view_mut().unwrap();
        fill_late(&k, &s, view.reborrow(), 5.0);
        panic!("after the launch");
    }));
    assert!(r.is_err());
    assert!(out.as_mut_slice().unwrap().iter().all(|&x| x == 5.0));
}

/// Dropping the buffer while a kernel writes it waits for the kernel before the
/// memory is freed; forgetting it leaks it. The kernel finishes without a fault
/// either way.
#[test]
fn dropping_or_forgetting_the_buffer_under_a_kernel_frees_nothing_in_use() {
    require_gpu!();
    let (d, s, _, k) = setup();
    let mut out = PinnedBuffer::<f32>::zeroed(&d, N).unwrap();
    fill_late(&k, &s, out.view_mut().unwrap(), 1.0);
    drop(out);
    let mut leaked = PinnedBuffer::<f32>::zeroed(&d, N).unwrap();
    fill_late(&k, &s, leaked.view_mut().unwrap(), 2.0);
    std::mem::forget(leaked);
    s.sync().unwrap();
}

/// A host function on another stream, lent the elements, runs after the kernel
/// that writes them on the first.
#[test]
fn a_host_function_on_another_stream_runs_after_the_kernel() {
    require_gpu!();
    let (d, s1, s2, k) = setup();
    let mut out = PinnedBuffer::<f32>::zeroed(&d, N).unwrap();
    fill_late(&k, &s1, out.view_mut().unwrap(), 4.0);
    let saw = Arc::new(AtomicBool::new(false));
    let flag = saw.clone();
    s2.launch_host_func_with(&out, move |xs| {
        flag.store(xs.iter().all(|&x| x == 4.0), Ordering::Release);
    })
    .unwrap();
    s2.sync().unwrap();
    assert!(
        saw.load(Ordering::Acquire),
        "the host function ran before the kernel"
    );
}

/// A mutable view waits for a host function still lent the elements, so that
/// no kernel writes under its slice.
#[test]
fn a_mutable_view_waits_for_a_host_function_in_flight() {
    require_gpu!();
    let (d, s1, s2, k) = setup();
    let mut out = PinnedBuffer::<f32>::zeroed(&d, N).unwrap();
    // The host function waits behind a spin on s1.
    let mut scratch = DeviceBuffer::<f32>::zeroed(&d, 1, &s1).unwrap();
    // SAFETY: n = 0: the kernel only spins.
    unsafe { k.spin_then_fill(&s1, &cfg(), scratch.view_mut(), 0, 0.0, SPIN) }.unwrap();
    let saw = Arc::new(AtomicBool::new(false));
    let flag = saw.clone();
    s1.launch_host_func_with(&out, move |xs| {
        flag.store(xs.iter().all(|&x| x == 0.0), Ordering::Release);
    })
    .unwrap();
    // A kernel on s2 that does not spin: without the wait it would write first.
    let view = out.view_mut().unwrap();
    // SAFETY: the kernel writes y[0..n], n = N = the view's length.
    unsafe { k.spin_then_fill(&s2, &cfg(), view, N as u64, 9.0, 0) }.unwrap();
    assert!(out.as_slice().unwrap().iter().all(|&x| x == 9.0));
    assert!(
        saw.load(Ordering::Acquire),
        "the kernel wrote under the host function's slice"
    );
    s1.sync().unwrap();
}

/// A copy into the buffer on another stream is ordered after a kernel reading
/// it: the kernel's copy holds the values from before.
#[test]
fn a_copy_into_the_buffer_waits_for_a_kernel_reading_it() {
    require_gpu!();
    let (d, s1, s2, k) = setup();
    let src: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let mut input = PinnedBuffer::from_slice(&d, &src).unwrap();
    let mut copy = DeviceBuffer::<f32>::zeroed(&d, N, &s1).unwrap();
    let other = DeviceBuffer::from_host(&d, &vec![-2.0f32; N], &s2).unwrap();
    s1.sync().unwrap();
    s2.sync().unwrap();
    // SAFETY: the kernel reads x[0..n] and writes y[0..n], n = N, both views' length.
    unsafe { k.spin_then_copy(&s1, &cfg(), input.view(), copy.view_mut(), N as u64, SPIN) }
        .unwrap();
    other.view().copy_to_pinned(&mut input, &s2).unwrap();
    assert_eq!(copy.to_vec(&s1).unwrap(), src);
    assert!(input.as_slice().unwrap().iter().all(|&x| x == -2.0));
}

/// A launch captured into a graph would touch the host memory whenever the
/// graph runs: a pinned view on a capturing stream is refused before the launch.
#[test]
fn a_pinned_view_is_refused_on_a_capturing_stream() {
    require_gpu!();
    let (d, s, _, k) = setup();
    let mut out = PinnedBuffer::<f32>::zeroed(&d, N).unwrap();
    // SAFETY: nothing but the refused launch is captured.
    unsafe { s.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    // SAFETY: the kernel writes y[0..n], n = N = the view's length.
    let r = unsafe { k.spin_then_fill(&s, &cfg(), out.view_mut().unwrap(), N as u64, 1.0, 0) };
    let graph = s.end_capture().unwrap();
    let e = r.unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    assert!(e.to_string().contains("capturing"), "{e}");
    assert_eq!(graph.node_count().unwrap(), 0, "nothing was captured");
    assert!(out.as_slice().unwrap().iter().all(|&x| x == 0.0));
}
