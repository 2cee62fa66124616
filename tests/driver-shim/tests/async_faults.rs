//! Futures of GPU work (issue 29) when driver calls fail mid-future, without a
//! GPU: a child process loads the shim as `libcuda.so.1` in its fake-driver
//! mode (work completes at once) and injects failures at run time
//! (`cuda_rs_shim_set_faults`). Each future must resolve, within a deadline,
//! with a typed error naming the injected `CUresult`; what it held must be
//! released (the shim's live counts of events and memory come back to where they
//! were once the completion pools are trimmed); nothing may panic or hang.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use cudars_bindings::driver::{
    CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_OUT_OF_MEMORY, CUresult,
};
use cudars_core::{
    Device, DeviceBuffer, Stream, StreamOptions, deferred_frees, trim_completion_pools,
};
use cudars_tests::DriverShim;

/// Set in the child: run the cases.
const CHILD: &str = "CUDA_RS_ASYNC_FAULTS_CHILD";
/// No future may take longer than this: a hang is a failure.
const HANG: Duration = Duration::from_secs(20);

struct Unpark(std::thread::Thread);
impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `f` on this thread until it resolves; panics after [`HANG`].
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let start = Instant::now();
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        assert!(start.elapsed() < HANG, "the future never resolved");
        std::thread::park_timeout(Duration::from_millis(10));
    }
}

/// Waits until `done` holds; panics after [`HANG`].
fn wait_for(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < HANG, "{what}: never");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Counts its drops.
struct Probe(Arc<AtomicUsize>);
impl Drop for Probe {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn live(shim: &DriverShim) -> (i64, i64) {
    let l = shim.counts("live");
    (l["events"], l["memory"])
}

/// The shim's live events and memory after the deferred queue has run and the
/// completion pools are trimmed.
fn settled(shim: &DriverShim) -> (i64, i64) {
    wait_for("the deferred releases", || deferred_frees() == 0);
    trim_completion_pools();
    live(shim)
}

/// Waits until the live events and memory are `want` again (a release taken
/// off the deferred queue may still be running when it reads empty).
fn assert_settles(shim: &DriverShim, want: (i64, i64)) {
    let start = Instant::now();
    loop {
        let got = settled(shim);
        if got == want {
            return;
        }
        assert!(
            start.elapsed() < HANG,
            "(events, memory) left live: {got:?}, before: {want:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `e` is the driver's error `code` (the fake names no error, so the number is
/// compared), with what was being done.
fn assert_names(e: &cudars_core::Error, code: CUresult) {
    assert_eq!(
        e.driver_code(),
        Some(code),
        "not the injected error: {}",
        cudars_tests::report(e)
    );
}

struct Setup {
    shim: DriverShim,
    s: Stream,
    y: DeviceBuffer<f32>,
}

fn setup() -> Setup {
    let shim = DriverShim::find().expect("the shim is the loaded driver");
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = dev
        .create_stream(StreamOptions {
            non_blocking: true,
            ..StreamOptions::default()
        })
        .unwrap();
    let y = DeviceBuffer::<f32>::zeroed(&dev, 1 << 16, &s).unwrap();
    // Warm: the reactor, the pools, the deferred queue.
    block_on(s.completion()).unwrap();
    block_on(y.to_vec_async(&s)).unwrap();
    Setup { shim, s, y }
}

/// A record that fails: the future resolves with the error at once, and what it
/// kept is released after the context has been waited for.
fn child_record_fails() {
    let Setup { shim, s, y } = setup();
    let before = settled(&shim);
    shim.set_faults("cuEventRecord:1:CUDA_ERROR_LAUNCH_FAILED");
    let dropped = Arc::new(AtomicUsize::new(0));
    let r = block_on(s.completion_with(Probe(dropped.clone())));
    assert_names(&r.err().expect("an error"), CUDA_ERROR_LAUNCH_FAILED);
    wait_for("the release of what the future kept", || {
        dropped.load(Ordering::SeqCst) == 1
    });
    // The same in `to_vec_async`, whose staging block is released likewise.
    shim.set_faults("cuEventRecord:1:CUDA_ERROR_LAUNCH_FAILED");
    let r = block_on(y.to_vec_async(&s));
    assert_names(&r.expect_err("an error"), CUDA_ERROR_LAUNCH_FAILED);
    shim.set_faults("");
    assert_settles(&shim, before);
    println!("async faults: record ok");
}

/// A query that fails once the reactor watches the future: it resolves with
/// the error, for a completion and for a download, polled from this thread
/// while the reactor asks the driver on its own.
fn child_reactor_sees_an_error() {
    let Setup { shim, s, y } = setup();
    let before = settled(&shim);
    // The first poll finds the work pending (and hands it to the reactor),
    // the reactor's query fails.
    shim.set_faults(
        "cuEventQuery:1:CUDA_ERROR_NOT_READY,cuEventQuery:2:CUDA_ERROR_ILLEGAL_ADDRESS",
    );
    let dropped = Arc::new(AtomicUsize::new(0));
    let r = block_on(
        s.completion_with(Probe(dropped.clone()))
            .spin_first(Duration::ZERO),
    );
    assert_names(&r.err().expect("an error"), CUDA_ERROR_ILLEGAL_ADDRESS);
    wait_for("the release", || dropped.load(Ordering::SeqCst) == 1);
    // A download pending through its first poll's spin and a while at the
    // reactor, then its query fails.
    shim.set_faults("cuEventQuery:*:CUDA_ERROR_NOT_READY");
    let failer = {
        let shim = DriverShim::find().unwrap();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            shim.set_faults("cuEventQuery:*:CUDA_ERROR_LAUNCH_FAILED");
        })
    };
    let r = block_on(y.to_vec_async(&s));
    failer.join().unwrap();
    assert_names(&r.expect_err("an error"), CUDA_ERROR_LAUNCH_FAILED);
    shim.set_faults("");
    // A future after the failures resolves as usual.
    block_on(s.completion()).unwrap();
    assert_settles(&shim, before);
    println!("async faults: reactor ok");
}

/// A staging allocation that fails: `to_vec_async` resolves with it; once
/// allocations work again, one block serves download after download.
fn child_staging_alloc_fails() {
    let Setup { shim, s, y } = setup();
    let before = settled(&shim);
    shim.set_faults("cuMemHostAlloc:1:CUDA_ERROR_OUT_OF_MEMORY");
    let r = block_on(y.to_vec_async(&s));
    assert_names(&r.expect_err("an error"), CUDA_ERROR_OUT_OF_MEMORY);
    shim.set_faults("");
    for _ in 0..5 {
        let v = block_on(y.to_vec_async(&s)).unwrap();
        assert_eq!(v.len(), 1 << 16);
    }
    let calls = shim.counts("calls");
    assert_eq!(
        calls.get("cuMemHostAlloc").copied().unwrap_or(0),
        1,
        "the staging block is not reused: {calls:?}"
    );
    assert_settles(&shim, before);
    println!("async faults: staging ok");
}

#[test]
fn a_failed_record_resolves_typed_and_releases() {
    if std::env::var_os(CHILD).is_some() {
        return child_record_fails();
    }
    common::run_fake_driver_child(
        "a_failed_record_resolves_typed_and_releases",
        CHILD,
        "async faults: record ok",
    );
}

#[test]
fn a_query_failing_at_the_reactor_resolves_typed_and_releases() {
    if std::env::var_os(CHILD).is_some() {
        return child_reactor_sees_an_error();
    }
    common::run_fake_driver_child(
        "a_query_failing_at_the_reactor_resolves_typed_and_releases",
        CHILD,
        "async faults: reactor ok",
    );
}

#[test]
fn a_failed_staging_allocation_resolves_typed_and_blocks_are_reused() {
    if std::env::var_os(CHILD).is_some() {
        return child_staging_alloc_fails();
    }
    common::run_fake_driver_child(
        "a_failed_staging_allocation_resolves_typed_and_blocks_are_reused",
        CHILD,
        "async faults: staging ok",
    );
}
