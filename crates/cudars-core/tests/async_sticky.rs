//! Futures for GPU work when the context fails under them (issue 29, "Bad
//! input"): a sticky error of a faulting kernel, a primary-context reset while
//! futures are pending. Each future resolves, with a typed error; none hangs,
//! none panics.
//!
//! Each test runs itself in a child process (the failure poisons the context
//! for the rest of the process). The faulting kernel traps on purpose, so these
//! are not for compute-sanitizer runs (which report the trap); the other async
//! tests are (`async_completion.rs`).

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use cudars_core::{
    CompileTarget, Device, DeviceBuffer, Error, Event, EventOptions, LaunchConfig, Program,
    ProgramOptions, SourceCode, StreamOptions, TypedKernel,
};
use cudars_tests::require_gpu;

mod common;

/// What no future may take to resolve.
const HANG: Duration = Duration::from_secs(30);

/// Re-runs `test` in a child with this process's environment (the child needs
/// the same CUDA libraries); returns whether this is the child.
fn in_child_or_run(test: &str) -> bool {
    if cudars_tests::in_child() {
        return true;
    }
    let env: Vec<(String, std::ffi::OsString)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
        .collect();
    let env: Vec<(&str, &std::ffi::OsStr)> = env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_os_str()))
        .collect();
    cudars_tests::run_test_in_child(test, &env);
    false
}

fn block_on_with_timeout<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async { tokio::time::timeout(HANG, f).await.expect("a future hung") })
}

#[test]
fn a_sticky_error_resolves_every_future_with_it() {
    require_gpu!();
    if !in_child_or_run("a_sticky_error_resolves_every_future_with_it") {
        return;
    }
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let y = DeviceBuffer::<f32>::zeroed(&d, 1024, &s).unwrap();
    s.sync().unwrap();
    let trap = Program::new(
        SourceCode::Cxx(r#"extern "C" __global__ void boom() { __trap(); }"#),
        ProgramOptions::for_device(&d).unwrap(),
    )
    .unwrap()
    .compile(CompileTarget::Cubin, &[])
    .unwrap()
    .get_kernel("boom")
    .unwrap();
    let trap = TypedKernel::<()>::new(trap).unwrap();
    // The fault comes after a spin, so the futures below are made (and watched)
    // before it.
    common::spin(&d, &s, 20 * common::CYCLES_PER_MS);
    // SAFETY: the kernel touches no memory; it traps.
    unsafe { trap.launch(&s, &LaunchConfig::new(1u32, 1u32), ()) }.unwrap();
    let e = Event::new(&d, EventOptions::default()).unwrap();
    e.record(&s).unwrap();
    let done = s.completion();
    let read = y.to_vec_async(&s);
    block_on_with_timeout(async {
        let r = done.await;
        assert!(
            matches!(&r, Err(Error::Driver { .. })),
            "the completion: {r:?}"
        );
        let r = (&e).await;
        assert!(matches!(&r, Err(Error::Driver { .. })), "the event: {r:?}");
        let r = read.await;
        assert!(r.is_err(), "the download: {r:?}");
        // Made after the failure: refused at once, through the future.
        let r = s.completion().await;
        assert!(r.is_err(), "a later completion: {r:?}");
    });
}

#[test]
fn a_context_reset_under_pending_futures_resolves_them() {
    require_gpu!();
    if !in_child_or_run("a_context_reset_under_pending_futures_resolves_them") {
        return;
    }
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    common::spin(&d, &s, 200 * common::CYCLES_PER_MS);
    let done = s.completion();
    let handle = d.handle();
    let reset = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        // SAFETY: a test of what a reset does to pending futures; nothing else
        // of this child process uses the device afterwards but the futures.
        unsafe { cudars_core::cudars_bindings::driver::cuDevicePrimaryCtxReset(handle) }
    });
    let r = block_on_with_timeout(done);
    let rc = reset.join().unwrap();
    println!("reset: {rc:?}; the future: {r:?}");
    // The reset may let the spin finish first (then the work did complete);
    // otherwise the future carries the driver's error. Either way it resolved.
    if let Err(e) = r {
        assert!(e.driver_code().is_some(), "{e:?}");
    }
    // Anything made afterwards resolves too.
    let r = block_on_with_timeout(s.completion());
    println!("after the reset: {r:?}");
    std::mem::forget(s);
}
