//! cudars-core's kit for the library crates, on the GPU: [`ContextScope`]
//! (nesting, panics, threads, out-of-order drops, `mem::forget`; rule 11 of the
//! soundness contract) and cuBLAS, cuFFT, cuRAND and NCCL running on a
//! green-context stream, which `Context::set_current` refuses. Without a GPU
//! each test prints `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails.
// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cudars_core::cudars_bindings::driver as sys;
use cudars_core::{
    Context, ContextOptions, ContextScope, Device, DeviceBuffer, SmResourceOptions, Stream,
    StreamOptions,
};
use cudars_tests::require_gpu;

/// The driver version green-context streams need (`cuGreenCtxStreamCreate`).
const GREEN_STREAMS: i32 = 12050;

/// A stream in the green context `g`; on a driver older than CUDA 12.5, `None`
/// once the typed error saying so has been checked and printed.
fn green_stream_in(g: &Context) -> Option<Stream> {
    cudars_tests::needs_driver!(GREEN_STREAMS, g.create_stream(StreamOptions::default()))
}

/// The context current on this thread (null for none).
fn current() -> sys::CUcontext {
    let mut c: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: `c` is valid for writes.
    let rc = unsafe { sys::cuCtxGetCurrent(&mut c) };
    assert_eq!(rc, sys::CUDA_SUCCESS);
    c
}

/// A green context on one group of (at least) 8 of `d`'s SMs.
fn green(d: &Device) -> Context {
    let group = d
        .resources()
        .unwrap()
        .sm
        .split(SmResourceOptions {
            count: 8,
            groups: Some(1),
            ..Default::default()
        })
        .unwrap()
        .groups[0];
    Context::create_green(d, &[group]).unwrap()
}

fn setup() -> (Device, Context) {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let g = green(&d);
    (d, g)
}

#[test]
fn scopes_nest_and_restore_what_was_current() {
    require_gpu!();
    let (d, g) = setup();
    let primary = Context::primary(&d).unwrap();
    let explicit = Context::create(&d, ContextOptions::default()).unwrap();
    primary.set_current().unwrap();
    // What the scope is for: set_current refuses a green context.
    assert!(g.set_current().is_err());
    {
        let outer = ContextScope::enter(&explicit).unwrap();
        assert_eq!(current(), explicit.handle());
        {
            let _green = ContextScope::enter(&g).unwrap();
            assert_eq!(current(), g.handle());
            {
                // Entering the green context again on this thread does not wait.
                let _again = ContextScope::enter(&g).unwrap();
                assert_eq!(current(), g.handle());
                // cudars-core's own operations nest inside it (they make
                // their own context current: an allocation the device's
                // primary one)… (On a driver without green-context streams,
                // their typed error, then a primary-context stream's work.)
                let s = green_stream_in(&g)
                    .unwrap_or_else(|| d.create_stream(StreamOptions::default()).unwrap());
                let b = DeviceBuffer::from_host(&d, &[1u32, 2, 3], &s).unwrap();
                assert_eq!(b.to_vec(&s).unwrap(), [1, 2, 3]);
            }
            // …and the scope puts back what was current before it.
            assert_eq!(current(), g.handle());
        }
        assert_eq!(current(), explicit.handle());
        assert_eq!(outer.context(), &explicit);
    }
    assert_eq!(current(), primary.handle());
}

#[test]
fn a_panic_inside_a_scope_restores_and_releases() {
    require_gpu!();
    let (d, g) = setup();
    let primary = Context::primary(&d).unwrap();
    primary.set_current().unwrap();
    let g2 = g.clone();
    let r = std::panic::catch_unwind(move || {
        let _scope = ContextScope::enter(&g2).unwrap();
        panic!("inside the scope");
    });
    assert!(r.is_err());
    assert_eq!(current(), primary.handle());
    // The lock went with the unwinding scope: another thread gets in.
    let g3 = g.clone();
    std::thread::spawn(move || {
        let _scope = ContextScope::enter(&g3).unwrap();
        assert_eq!(current(), g3.handle());
    })
    .join()
    .unwrap();
}

#[test]
fn one_thread_at_a_time_has_a_green_context_current() {
    require_gpu!();
    let (d, g) = setup();
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (d, g, inside, most) = (d, g.clone(), inside.clone(), most.clone());
            std::thread::spawn(move || {
                d.set_current().unwrap();
                let before = current();
                // The work is on a green stream where the driver has them
                // (else their typed error, and a primary-context stream: the
                // scope's lock is what is tested).
                let s = green_stream_in(&g)
                    .unwrap_or_else(|| d.create_stream(StreamOptions::default()).unwrap());
                for i in 0..50u32 {
                    let _scope = ContextScope::enter(&g).unwrap();
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    assert_eq!(current(), g.handle());
                    // Real work while holding it, so the threads overlap.
                    let b = DeviceBuffer::from_host(&d, &[i; 64], &s).unwrap();
                    assert_eq!(b.to_vec(&s).unwrap(), [i; 64]);
                    inside.fetch_sub(1, Ordering::SeqCst);
                }
                // Each thread's own current context is back.
                assert_eq!(current(), before);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(most.load(Ordering::SeqCst), 1);
}

#[test]
fn out_of_order_drops_never_leave_an_unheld_green_context_current() {
    require_gpu!();
    let (d, g) = setup();
    let explicit = Context::create(&d, ContextOptions::default()).unwrap();
    Context::primary(&d).unwrap().set_current().unwrap();
    let green_scope = ContextScope::enter(&g).unwrap();
    let inner = ContextScope::enter(&explicit).unwrap();
    assert_eq!(current(), explicit.handle());
    // The green scope goes first: the thread no longer holds the green context…
    drop(green_scope);
    // …so the inner scope does not put it back: the device's primary context
    // is current instead.
    drop(inner);
    assert_eq!(current(), Context::primary(&d).unwrap().handle());
    // Another thread gets the green context, and this one works on as before.
    let g2 = g.clone();
    std::thread::spawn(move || drop(ContextScope::enter(&g2).unwrap()))
        .join()
        .unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    assert_eq!(
        DeviceBuffer::from_host(&d, &[7u8; 3], &s)
            .unwrap()
            .to_vec(&s)
            .unwrap(),
        [7; 3]
    );
}

#[test]
fn a_forgotten_scope_is_safe() {
    require_gpu!();
    let (d, _) = setup();
    // A green context of its own: forgetting a scope holds it for good.
    let forgotten = green(&d);
    let explicit = Context::create(&d, ContextOptions::default()).unwrap();
    std::thread::spawn(move || {
        d.set_current().unwrap();
        std::mem::forget(ContextScope::enter(&explicit).unwrap());
        // The context stays current; everything made current on its own next.
        assert_eq!(current(), explicit.handle());
        let s = d.create_stream(StreamOptions::default()).unwrap();
        let b = DeviceBuffer::from_host(&d, &[5u16; 9], &s).unwrap();
        assert_eq!(b.to_vec(&s).unwrap(), [5; 9]);
        std::mem::forget(ContextScope::enter(&forgotten).unwrap());
        assert_eq!(current(), forgotten.handle());
        // This thread still holds the green context: it uses it (where the
        // driver has green-context streams), and others.
        if let Some(gs) = green_stream_in(&forgotten) {
            let b = DeviceBuffer::from_host(&d, &[6u16; 9], &gs).unwrap();
            assert_eq!(b.to_vec(&gs).unwrap(), [6; 9]);
        }
        let b = DeviceBuffer::from_host(&d, &[8u16; 9], &s).unwrap();
        assert_eq!(b.to_vec(&s).unwrap(), [8; 9]);
        drop(ContextScope::enter(&forgotten).unwrap());
        // Nested scopes over the forgotten one still restore.
        let primary = Context::primary(&d).unwrap();
        primary.set_current().unwrap();
        drop(ContextScope::enter(&forgotten).unwrap());
        assert_eq!(current(), primary.handle());
    })
    .join()
    .unwrap();
}

/// A device, a green context on it and a stream in that; `None` on a driver
/// without green-context streams, once their typed error has been checked (the
/// test then ends: what it tests is a library on such a stream).
fn green_stream() -> Option<(Device, Context, Stream)> {
    let (d, g) = setup();
    let s = green_stream_in(&g)?;
    Some((d, g, s))
}

#[test]
fn cublas_runs_on_a_green_context_stream() {
    require_gpu!();
    use cudars_blas::{Blas, MatMut, MatRef, Op};
    let Some((d, _g, s)) = green_stream() else {
        return;
    };
    let before = current();
    let Some(blas) = cudars_tests::needs_library_driver!(Blas::new(&s)) else {
        return;
    };
    assert_eq!(current(), before, "the scope restores the context");
    let a = DeviceBuffer::from_host(&d, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &s).unwrap();
    let b = DeviceBuffer::from_host(&d, &[1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0], &s).unwrap();
    let mut c = DeviceBuffer::<f32>::zeroed(&d, 4, &s).unwrap();
    blas.gemm(
        1.0,
        MatRef::row_major(a.view(), 2, 3).unwrap(),
        Op::N,
        MatRef::row_major(b.view(), 3, 2).unwrap(),
        Op::N,
        0.0,
        &mut MatMut::row_major(c.view_mut(), 2, 2).unwrap(),
    )
    .unwrap();
    assert_eq!(c.to_vec(&s).unwrap(), [4.0, 5.0, 10.0, 11.0]);
}

#[test]
fn cufft_runs_on_a_green_context_stream() {
    require_gpu!();
    use cudars_fft::{Complex, Direction, Kind, Plan};
    let Some((d, _g, s)) = green_stream() else {
        return;
    };
    let n = 256;
    let host: Vec<Complex<f32>> = (0..n)
        .map(|i| Complex::new((i % 7) as f32 - 3.0, (i % 5) as f32))
        .collect();
    let a = DeviceBuffer::from_host(&d, &host, &s).unwrap();
    let mut b = DeviceBuffer::<Complex<f32>>::zeroed(&d, n, &s).unwrap();
    let Some(plan) = cudars_tests::needs_library_driver!(Plan::<f32>::new(&[n], 1, Kind::C2C, &s))
    else {
        return;
    };
    plan.c2c(a.view(), b.view_mut(), Direction::Forward)
        .unwrap();
    // The DC term is the sum of the input.
    let (re, im) = host
        .iter()
        .fold((0.0f32, 0.0f32), |(r, i), x| (r + x.re, i + x.im));
    let spectrum = b.to_vec(&s).unwrap();
    let dc = spectrum[0];
    assert!(
        (dc.re - re).abs() < 1e-3 && (dc.im - im).abs() < 1e-3,
        "{dc:?} ({re}, {im})"
    );
    plan.c2c_in_place(b.view_mut(), Direction::Inverse).unwrap();
    let n = n as f32;
    for (g, w) in b.to_vec(&s).unwrap().iter().zip(&host) {
        assert!(
            (g.re / n - w.re).abs() < 1e-4 && (g.im / n - w.im).abs() < 1e-4,
            "{g:?} {w:?}"
        );
    }
}

#[test]
fn curand_runs_on_a_green_context_stream() {
    require_gpu!();
    use cudars_rand::{Generator, RngKind};
    let Some((d, g, s)) = green_stream() else {
        return;
    };
    let mut x = DeviceBuffer::<f32>::zeroed(&d, 4096, &s).unwrap();
    let Some(mut rng) =
        cudars_tests::needs_library_driver!(Generator::with_seed(RngKind::Philox4x32_10, 42, &s))
    else {
        return;
    };
    rng.fill_uniform(x.view_mut()).unwrap();
    let v = x.to_vec(&s).unwrap();
    assert!(v.iter().all(|&u| u > 0.0 && u <= 1.0));
    let mean = v.iter().sum::<f32>() / v.len() as f32;
    assert!((mean - 0.5).abs() < 0.05, "{mean}");
    // Moving the generator to another green stream keeps it going.
    let s2 = g.create_stream(StreamOptions::default()).unwrap();
    rng.set_stream(&s2).unwrap();
    rng.fill_uniform(x.view_mut()).unwrap();
    assert_ne!(x.to_vec(&s2).unwrap(), v);
}

#[test]
fn cusolver_runs_on_a_green_context_stream() {
    require_gpu!();
    use cudars_solver::{Fill, MatMut, Solver};
    let Some((d, g, s)) = green_stream() else {
        return;
    };
    let Some(mut solver) = cudars_tests::needs_library_driver!(Solver::new(&s)) else {
        return;
    };
    // [[4, 2], [2, 3]]·x = [2, 1] has x = [0.5, 0]; the Cholesky factor is exact.
    let mut a = DeviceBuffer::from_host(&d, &[4.0f64, 2.0, 2.0, 3.0], &s).unwrap();
    let mut b = DeviceBuffer::from_host(&d, &[2.0f64, 1.0], &s).unwrap();
    let mut am = MatMut::col_major(a.view_mut(), 2, 2).unwrap();
    solver.potrf(Fill::Lower, &mut am).unwrap();
    solver
        .potrs(
            Fill::Lower,
            am.as_ref(),
            &mut MatMut::col_major(b.view_mut(), 2, 1).unwrap(),
        )
        .unwrap();
    assert_eq!(b.to_vec(&s).unwrap(), [0.5, 0.0]);
    // Moved to another green stream, it keeps solving; an indefinite matrix is
    // still the typed error.
    let s2 = g.create_stream(StreamOptions::default()).unwrap();
    solver.set_stream(&s2).unwrap();
    let mut a = DeviceBuffer::from_host(&d, &[1.0f64, 2.0, 2.0, 1.0], &s2).unwrap();
    let e = solver
        .potrf(
            Fill::Lower,
            &mut MatMut::col_major(a.view_mut(), 2, 2).unwrap(),
        )
        .unwrap_err();
    assert!(
        matches!(&e, cudars_solver::Error::Extra(x)
            if x.kind == cudars_solver::SolverErrorKind::NotPositiveDefinite { order: 2 }),
        "{e}"
    );
}

#[test]
fn nccl_runs_on_a_green_context_stream() {
    require_gpu!();
    use cudars_nccl::{Communicator, ReduceOp};
    let Some((d, _g, s)) = green_stream() else {
        return;
    };
    let Some(mut comms) =
        cudars_tests::needs_library_driver!(Communicator::init_all(std::slice::from_ref(&d)))
    else {
        return;
    };
    let comm = comms.remove(0);
    let x: Vec<f32> = (0..1000).map(|i| (i % 13) as f32).collect();
    let a = DeviceBuffer::from_host(&d, &x, &s).unwrap();
    let mut b = DeviceBuffer::<f32>::zeroed(&d, x.len(), &s).unwrap();
    comm.all_reduce(a.view(), b.view_mut(), ReduceOp::Sum, &s)
        .unwrap();
    assert_eq!(b.to_vec(&s).unwrap(), x);
    comm.all_reduce_in_place(b.view_mut(), ReduceOp::Max, &s)
        .unwrap();
    assert_eq!(b.to_vec(&s).unwrap(), x);
}

/// Issue 33: a library that sets its own device (NCCL) gets no scope, and no
/// driver call, on a primary context's stream while a primary context is
/// current; every other case gets `for_stream`'s scope. An NCCL collective
/// issued either way leaves the thread's context as it found it.
#[test]
fn a_device_setting_library_needs_no_scope_on_a_primary_context() {
    require_gpu!();
    use cudars_nccl::{Communicator, ReduceOp};
    let (d, g) = setup();
    let primary = Context::primary(&d).unwrap();
    let explicit = Context::create(&d, ContextOptions::default()).unwrap();
    primary.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let on_explicit = explicit.create_stream(StreamOptions::default()).unwrap();
    let on_green = green_stream_in(&g);
    // Making a stream in `explicit` left it current: the primary context again.
    primary.set_current().unwrap();
    assert!(
        ContextScope::for_device_setting_library(&s)
            .unwrap()
            .is_none()
    );
    for other in std::iter::once(&on_explicit).chain(on_green.as_ref()) {
        let scope = ContextScope::for_device_setting_library(other).unwrap();
        assert!(scope.is_some());
        drop(scope);
        assert_eq!(current(), primary.handle());
    }
    // The legacy default stream names the current context's: always a scope.
    let legacy = Stream::legacy_default(&d).unwrap();
    assert!(
        ContextScope::for_device_setting_library(&legacy)
            .unwrap()
            .is_some()
    );
    // With a context current that is not a primary one: a scope, which puts
    // that context back.
    explicit.set_current().unwrap();
    assert!(
        ContextScope::for_device_setting_library(&s)
            .unwrap()
            .is_some()
    );
    assert_eq!(current(), explicit.handle());

    // On a driver older than NCCL's CUDA major: its typed error, and the end.
    let Some(mut comms) =
        cudars_tests::needs_library_driver!(Communicator::init_all(std::slice::from_ref(&d)))
    else {
        return;
    };
    let comm = comms.remove(0);
    let x: Vec<f32> = (0..1000).map(|i| (i % 7) as f32).collect();
    let a = DeviceBuffer::from_host(&d, &x, &s).unwrap();
    let mut b = DeviceBuffer::<f32>::zeroed(&d, x.len(), &s).unwrap();
    for ctx in [&primary, &explicit] {
        ctx.set_current().unwrap();
        comm.all_reduce(a.view(), b.view_mut(), ReduceOp::Sum, &s)
            .unwrap();
        assert_eq!(current(), ctx.handle(), "after a collective");
        assert_eq!(b.to_vec(&s).unwrap(), x);
    }
    primary.set_current().unwrap();
}
