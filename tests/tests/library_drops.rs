//! The library crates' handles dropped on a driver callback thread (rule 6 of
//! the soundness contract), on the GPU: a safe `launch_host_func` closure owns
//! cuFFT plans, cuBLAS and cuBLASLt handles, cuRAND generators or a NCCL
//! communicator and drops them on the driver's thread, where CUDA calls are
//! forbidden. Their destroys (`cudars_core::release_or_defer`) must run later,
//! on an ordinary thread: the stream finishes (no hang), the deferred queue
//! empties, and the device's memory comes back (nothing leaked). Without a GPU
//! each test prints `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails.
//!
//! One binary of its own, its tests one at a time: each compares the device's
//! free memory before and after, which other work in the process would move.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use cudars_core::{Device, DeviceBuffer, Stream, StreamOptions};
use cudars_tests::require_gpu;

/// The tests take turns: each measures the device's free memory.
static SERIAL: Mutex<()> = Mutex::new(());

/// How long a stream or the deferred queue may take before the test calls it
/// a hang.
const BOUND: Duration = Duration::from_secs(60);

/// Free memory a test may end with below where it began: the driver's and
/// the libraries' own bookkeeping, far below what the handles hold.
const SLACK: usize = 48 << 20;

fn setup() -> (std::sync::MutexGuard<'static, ()>, Device, Stream) {
    let serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = dev.create_stream(StreamOptions::default()).unwrap();
    (serial, dev, s)
}

fn free_memory(dev: &Device) -> usize {
    dev.memory_info().unwrap().0
}

/// Waits for `s` on another thread for at most [`BOUND`]: a drop that hangs
/// the stream's host function fails the test instead of hanging it.
fn sync_bounded(s: &Stream, what: &str) {
    let s = s.clone();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(s.sync());
    });
    match rx.recv_timeout(BOUND) {
        Ok(r) => r.unwrap(),
        Err(_) => panic!(
            "{what}: the stream did not finish in {BOUND:?}: a drop on its host function hung"
        ),
    }
}

/// Drops `handles` inside a host function on `s` (on the driver's callback
/// thread) and checks that the drop returned there, the stream finished, the
/// deferred queue emptied on ordinary threads, and the device's free memory is
/// back to `baseline` (less [`SLACK`]): every destroy ran. Returns how many
/// releases waited in the deferred queue right after the drop, on the
/// callback thread.
fn drop_on_the_callback_thread<T: Send + 'static>(
    dev: &Device,
    s: &Stream,
    handles: T,
    baseline: usize,
    what: &str,
) -> usize {
    let held = free_memory(dev);
    let dropped = Arc::new(AtomicBool::new(false));
    let waiting = Arc::new(AtomicUsize::new(0));
    let (flag, count) = (dropped.clone(), waiting.clone());
    s.launch_host_func(move || {
        drop(handles);
        count.store(cudars_core::deferred_frees(), Ordering::SeqCst);
        flag.store(true, Ordering::SeqCst);
    })
    .unwrap();
    sync_bounded(s, what);
    assert!(
        dropped.load(Ordering::SeqCst),
        "{what}: the drop did not return"
    );
    let waiting = waiting.load(Ordering::SeqCst);
    println!("{what}: {waiting} releases deferred by the drop on the callback thread");
    // The destroys wait on the deferred queue until an ordinary thread (this
    // one's drain, or the queue's own thread) runs them.
    let deadline = Instant::now() + BOUND;
    while cudars_core::deferred_frees() > 0 {
        let r = cudars_core::drain_deferred_frees();
        assert!(
            Instant::now() < deadline,
            "{what}: the deferred queue never emptied: {r}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    dev.sync().unwrap();
    let after = free_memory(dev);
    assert!(
        after + SLACK >= baseline,
        "{what}: {} MiB of device memory not given back (held {} MiB before the drop)",
        (baseline - after) >> 20,
        (baseline.saturating_sub(held)) >> 20,
    );
    waiting
}

#[test]
fn fft_plans_dropped_on_a_driver_callback_thread_are_destroyed_later() {
    require_gpu!();
    use cudars_fft::{Kind, Plan};
    let (_serial, dev, s) = setup();
    // 2^24 points: a work area of about 128 MiB each.
    let n = 1usize << 24;
    let make = || cudars_tests::needs_library_driver!(Plan::<f32>::new(&[n], 1, Kind::C2C, &s));
    // Once dropped here first, so that cuFFT's own first-use state is in the baseline.
    let Some(warm) = make() else {
        return;
    };
    drop(warm);
    // Allocated before the baseline and freed after the check: only the
    // plans' own memory is measured.
    let mut data = DeviceBuffer::<cudars_fft::Complex<f32>>::zeroed(&dev, n, &s).unwrap();
    dev.sync().unwrap();
    let baseline = free_memory(&dev);
    let plans: Vec<Plan<f32>> = (0..4).map(|_| make().unwrap()).collect();
    // Each with an execution queued, which its destroy must wait for.
    for p in &plans {
        p.c2c_in_place(data.view_mut(), cudars_fft::Direction::Forward)
            .unwrap();
    }
    let held = baseline.saturating_sub(free_memory(&dev));
    println!("4 plans of 2^24 points hold {} MiB", held >> 20);
    assert!(
        held >= 64 << 20,
        "the plans hold {} MiB, less than expected: the check would prove nothing",
        held >> 20
    );
    let waiting = drop_on_the_callback_thread(&dev, &s, plans, baseline, "cuFFT plans");
    // A plan's destroy waits for its stream, which cannot finish while the
    // host function runs: all four were still waiting when it looked.
    assert!(
        waiting >= 4,
        "{waiting} releases deferred: the plans were not deferred"
    );
    drop(data);
}

#[test]
fn cublas_handles_dropped_on_a_driver_callback_thread_are_destroyed_later() {
    require_gpu!();
    use cudars_blas::{Blas, BlasLt, MatMut, MatRef, Op};
    let (_serial, dev, s) = setup();
    let Some(warm) = cudars_tests::needs_library_driver!(Blas::new(&s)) else {
        return;
    };
    // Allocated before the baseline: only the handles' memory is measured.
    let a = DeviceBuffer::from_host(&dev, &[1.0f32; 64 * 64], &s).unwrap();
    let c = std::cell::RefCell::new(DeviceBuffer::<f32>::zeroed(&dev, 64 * 64, &s).unwrap());
    let gemm = |blas: &Blas| {
        let mut c = c.borrow_mut();
        blas.gemm(
            1.0,
            MatRef::row_major(a.view(), 64, 64).unwrap(),
            Op::N,
            MatRef::row_major(a.view(), 64, 64).unwrap(),
            Op::N,
            0.0,
            &mut MatMut::row_major(c.view_mut(), 64, 64).unwrap(),
        )
        .unwrap();
    };
    gemm(&warm);
    drop(warm);
    drop(BlasLt::new(&s).unwrap());
    dev.sync().unwrap();
    let baseline = free_memory(&dev);
    let handles: Vec<Blas> = (0..4)
        .map(|_| {
            let b = Blas::new(&s).unwrap();
            gemm(&b);
            b
        })
        .collect();
    // Each with a 32 MiB workspace, freed after its handle is destroyed.
    let lts: Vec<BlasLt> = (0..4).map(|_| BlasLt::new(&s).unwrap()).collect();
    let _ = drop_on_the_callback_thread(&dev, &s, (handles, lts), baseline, "cuBLAS handles");
}

#[test]
fn curand_generators_dropped_on_a_driver_callback_thread_are_destroyed_later() {
    require_gpu!();
    use cudars_rand::{Generator, RngKind};
    let (_serial, dev, s) = setup();
    // Allocated before the baseline: only the generators' memory is measured.
    let out = std::cell::RefCell::new(DeviceBuffer::<f32>::zeroed(&dev, 1 << 20, &s).unwrap());
    let make = || {
        let mut g = cudars_tests::needs_library_driver!(Generator::with_seed(
            RngKind::Philox4x32_10,
            42,
            &s
        ))?;
        g.fill_uniform(out.borrow_mut().view_mut()).unwrap();
        Some(g)
    };
    let Some(warm) = make() else {
        return;
    };
    drop(warm);
    dev.sync().unwrap();
    let baseline = free_memory(&dev);
    let gens: Vec<Generator> = (0..4).map(|_| make().unwrap()).collect();
    let _ = drop_on_the_callback_thread(&dev, &s, gens, baseline, "cuRAND generators");
}

#[test]
fn cusolver_handles_dropped_on_a_driver_callback_thread_are_destroyed_later() {
    require_gpu!();
    use cudars_solver::{Fill, MatMut, Solver};
    let (_serial, dev, s) = setup();
    // Allocated before the baseline: only the handles' memory is measured.
    let spd: Vec<f64> = (0..64 * 64)
        .map(|k| if k % 65 == 0 { 2.0 } else { 0.0 })
        .collect();
    let a = std::cell::RefCell::new(DeviceBuffer::from_host(&dev, &spd, &s).unwrap());
    let make = || {
        let solver = cudars_tests::needs_library_driver!(Solver::new(&s))?;
        let mut a = a.borrow_mut();
        a.copy_from_host(&spd, &s).unwrap();
        solver
            .potrf(
                Fill::Lower,
                &mut MatMut::col_major(a.view_mut(), 64, 64).unwrap(),
            )
            .unwrap();
        Some(solver)
    };
    let Some(warm) = make() else {
        return;
    };
    drop(warm);
    dev.sync().unwrap();
    let baseline = free_memory(&dev);
    let handles: Vec<Solver> = (0..4).map(|_| make().unwrap()).collect();
    let _ = drop_on_the_callback_thread(&dev, &s, handles, baseline, "cuSOLVER handles");
}

#[test]
fn a_nccl_communicator_dropped_on_a_driver_callback_thread_is_destroyed_later() {
    require_gpu!();
    use cudars_nccl::Communicator;
    let (_serial, dev, s) = setup();
    let make =
        || cudars_tests::needs_library_driver!(Communicator::init_all(std::slice::from_ref(&dev)));
    let Some(warm) = make() else {
        return;
    };
    drop(warm);
    dev.sync().unwrap();
    let baseline = free_memory(&dev);
    let comms: Vec<Communicator> = (0..2).flat_map(|_| make().unwrap()).collect();
    let _ = drop_on_the_callback_thread(&dev, &s, comms, baseline, "NCCL communicators");
}

/// A cuBLAS operation (`scal`) called from a host function gets the library
/// crate's error carrying the core refusal (`CUDA_ERROR_NOT_PERMITTED`, from
/// `ContextScope`, before cuBLAS is called), sent out through a channel; the
/// stream then finishes within a bounded wait, nothing was scaled, and the
/// handle works as before on an ordinary thread.
#[test]
fn a_cublas_op_in_a_host_function_is_refused_and_the_stream_finishes() {
    require_gpu!();
    use cudars_blas::Blas;
    let (_serial, dev, s) = setup();
    let Some(blas) = cudars_tests::needs_library_driver!(Blas::new(&s)) else {
        return;
    };
    let blas = Arc::new(Mutex::new(blas));
    let x = Arc::new(Mutex::new(
        DeviceBuffer::from_host(&dev, &[1.0f32; 256], &s).unwrap(),
    ));
    let (tx, rx) = mpsc::channel();
    let (b2, x2) = (blas.clone(), x.clone());
    s.launch_host_func(move || {
        let r = b2
            .lock()
            .unwrap()
            .scal(2.0f32, x2.lock().unwrap().view_mut());
        let _ = tx.send(r.map_err(|e| e.to_string()));
    })
    .unwrap();
    let got = rx
        .recv_timeout(BOUND)
        .expect("the host function ran and reported (no hang)");
    let message = got.expect_err("a cuBLAS call on a driver callback thread is refused");
    assert!(message.contains("driver callback thread"), "{message}");
    sync_bounded(&s, "the stream after a refused cuBLAS call");
    let b = blas.lock().unwrap();
    assert_eq!(x.lock().unwrap().to_vec(&s).unwrap(), vec![1.0f32; 256]);
    b.scal(2.0f32, x.lock().unwrap().view_mut()).unwrap();
    assert_eq!(x.lock().unwrap().to_vec(&s).unwrap(), vec![2.0f32; 256]);
}
