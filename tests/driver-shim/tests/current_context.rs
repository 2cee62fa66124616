//! `Device::set_current_context` without a GPU: a child process loads the shim
//! as `libcuda.so.1` in its fake-driver mode and checks what comes back as the
//! context replaced: nothing, a context this crate made (the same `Context`), a
//! primary context (retained by the crate or by someone else), and a context
//! made outside the crate (its handle, borrowed).

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use cudars_core::cudars_bindings::driver as sys;
use cudars_core::{ContextOptions, Device, PreviousContext};

/// Set in the child: run the check.
const CHILD: &str = "CUDA_RS_CURRENT_CONTEXT_CHILD";

/// The context current on this thread (null: none).
fn current() -> sys::CUcontext {
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: `ctx` is valid for writes.
    let rc = unsafe { sys::cuCtxGetCurrent(&mut ctx) };
    assert_eq!(rc, sys::CUDA_SUCCESS);
    ctx
}

/// The child's side, against the fake driver.
fn child() {
    let d = Device::new(0).unwrap();
    // A context this crate made comes back as itself, even before the crate
    // retained the device's primary context.
    let mine = d.create_context(ContextOptions::default()).unwrap();
    assert_eq!(current(), mine.handle(), "cuCtxCreate leaves it current");
    // Someone else makes the device's primary context current (the runtime,
    // say): the crate has not retained it, and still knows it for the primary.
    let mut raw_primary: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: `raw_primary` is valid for writes; released below.
    let rc = unsafe { sys::cuDevicePrimaryCtxRetain(&mut raw_primary, d.handle()) };
    assert_eq!(rc, sys::CUDA_SUCCESS);
    // SAFETY: a live context (retained above).
    let rc = unsafe { sys::cuCtxSetCurrent(raw_primary) };
    assert_eq!(rc, sys::CUDA_SUCCESS);
    match d.set_current_context(&mine).unwrap() {
        Some(PreviousContext::Context(c)) => {
            assert!(c.is_primary(), "{c:?}");
            assert_eq!(c.handle(), raw_primary);
        }
        other => panic!("the primary context came back as {other:?}"),
    }
    // SAFETY: balances the retain above (the crate holds its own).
    let rc = unsafe { sys::cuDevicePrimaryCtxRelease(d.handle()) };
    assert_eq!(rc, sys::CUDA_SUCCESS);
    assert_eq!(current(), mine.handle());
    let primary = d.context().unwrap();
    match d.set_current_context(&primary).unwrap() {
        Some(PreviousContext::Context(c)) => assert_eq!(c, mine),
        other => panic!("the crate's context came back as {other:?}"),
    }
    assert_eq!(current(), primary.handle());
    match d.set_current_context(&mine).unwrap() {
        Some(prev @ PreviousContext::Context(_)) => {
            assert_eq!(prev.context(), Some(&primary));
            assert_eq!(prev.handle(), primary.handle());
        }
        other => panic!("the primary context came back as {other:?}"),
    }
    // A context the crate does not own: its handle, and no `Context`.
    let foreign = 0xF00 as sys::CUcontext;
    // SAFETY: the fake takes any handle (nothing is dereferenced).
    let rc = unsafe { sys::cuCtxSetCurrent(foreign) };
    assert_eq!(rc, sys::CUDA_SUCCESS);
    let prev = d.set_current_context(&primary).unwrap().unwrap();
    assert!(
        matches!(prev, PreviousContext::Foreign(h) if h == foreign),
        "{prev:?}"
    );
    assert_eq!((prev.handle(), prev.context()), (foreign, None));
    // Once the crate's context is gone, its handle is not trusted any more.
    let gone = mine.handle();
    drop(mine);
    // SAFETY: the fake takes any handle (nothing is dereferenced).
    let rc = unsafe { sys::cuCtxSetCurrent(gone) };
    assert_eq!(rc, sys::CUDA_SUCCESS);
    let prev = d.set_current_context(&primary).unwrap().unwrap();
    assert!(
        matches!(prev, PreviousContext::Foreign(h) if h == gone),
        "{prev:?}"
    );
    // Nothing current: nothing comes back.
    // SAFETY: null unbinds the thread's context.
    let rc = unsafe { sys::cuCtxSetCurrent(std::ptr::null_mut()) };
    assert_eq!(rc, sys::CUDA_SUCCESS);
    assert!(d.set_current_context(&primary).unwrap().is_none());
    assert_eq!(current(), primary.handle());
    println!("set_current_context checked");
}

#[test]
fn set_current_context_hands_back_the_context_it_replaced() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    common::run_fake_driver_child(
        "set_current_context_hands_back_the_context_it_replaced",
        CHILD,
        "set_current_context checked",
    );
}
