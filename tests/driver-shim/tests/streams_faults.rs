//! Issue 41, points 7 and 8, without a GPU: a child process loads the shim as
//! `libcuda.so.1` in its fake-driver mode (work completes at once), injects
//! failures at run time (`cuda_rs_shim_set_faults`) and counts driver calls.
//!
//! * Point 7: a future whose work failed keeps what it held while the
//!   context's wait is refused for now (another thread's global capture
//!   refuses synchronising calls): the release is retried, never made after a
//!   few refusals with the copy possibly still queued.
//! * Point 4: lending a pinned buffer's view waits for the copies in flight
//!   that conflict with the view's uses (counted as `cuEventSynchronize`
//!   calls: the fake driver completes work at once, so only the waits show).
//! * Point 8: a queue is not identified by its handle: a new stream given a
//!   destroyed one's handle is another queue, which a pinned copy orders after
//!   the old stream's copy in flight.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::future::Future;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use cudars_bindings::driver::{CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, CUresult};
use cudars_core::{
    Context, Device, DeviceBuffer, PinnedBuffer, Stream, StreamOptions, deferred_frees,
    trim_completion_pools,
};
use cudars_tests::DriverShim;

/// Set in the child: run the cases.
const CHILD: &str = "CUDA_RS_STREAMS_FAULTS_CHILD";
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
    let mut cx = TaskContext::from_waker(&waker);
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

/// The shim's live events and memory once the deferred queue has run and the
/// completion pools are trimmed, when they come back to `want`.
fn assert_settles(shim: &DriverShim, want: (i64, i64)) {
    let start = Instant::now();
    loop {
        wait_for("the deferred releases", || deferred_frees() == 0);
        trim_completion_pools();
        let l = shim.counts("live");
        let got = (l["events"], l["memory"]);
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

fn assert_names(e: &cudars_core::Error, code: CUresult) {
    assert_eq!(
        e.driver_code(),
        Some(code),
        "not the injected error: {}",
        cudars_tests::report(e)
    );
}

fn stream(dev: &Device) -> Stream {
    dev.create_stream(StreamOptions {
        non_blocking: true,
        ..StreamOptions::default()
    })
    .unwrap()
}

/// Point 7: the download's first poll is refused (as under another thread's
/// global capture), and so is every wait for the context: the staging block
/// stays held (its release waits in the deferred queue) for as long as the
/// refusals last, and goes once the context can be waited for.
fn child_refused_release_keeps() {
    let shim = DriverShim::find().expect("the shim is the loaded driver");
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = stream(&dev);
    let y = DeviceBuffer::<f32>::zeroed(&dev, 1 << 16, &s).unwrap();
    // Warm: the reactor, the pools, the deferred queue.
    block_on(y.to_vec_async(&s)).unwrap();
    wait_for("the deferred releases", || deferred_frees() == 0);
    trim_completion_pools();
    let l = shim.counts("live");
    let before = (l["events"], l["memory"]);
    shim.set_faults(
        "cuEventQuery:*:CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,\
         cuCtxSynchronize:*:CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
    );
    let r = block_on(y.to_vec_async(&s));
    assert_names(
        &r.expect_err("an error"),
        CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
    );
    // The release has been tried (the deferred queue's reaper runs it at
    // once, then backs off) and refused: the block is still held.
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        deferred_frees() >= 1,
        "the staging block was released while every wait for its copy was refused"
    );
    // Once the context can be waited for, it goes, and nothing is left.
    shim.set_faults("");
    assert_settles(&shim, before);
    println!("streams faults: refused release ok");
}

/// Point 8: a pinned copy on a stream, the stream destroyed, and its handle
/// named by a new `Stream` (what the driver does when it hands a destroyed
/// stream's handle to the next `cuStreamCreate`; the fake driver never reuses
/// one, so `from_raw` names it): a copy on the new stream is another queue's,
/// and waits for the old copy on the device.
fn child_reused_handle_is_another_queue() {
    let shim = DriverShim::find().expect("the shim is the loaded driver");
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = stream(&dev);
    let y = DeviceBuffer::<f32>::zeroed(&dev, 1024, &s).unwrap();
    let mut host = PinnedBuffer::<f32>::zeroed(&dev, 1024).unwrap();
    let waits = || {
        shim.counts("calls")
            .get("cuStreamWaitEvent")
            .copied()
            .unwrap_or(0)
    };

    let a = stream(&dev);
    y.view().copy_to_pinned(&mut host, &a).unwrap();
    let handle = a.handle();
    drop(a);
    // SAFETY: the fake driver takes any handle for a live stream of the
    // primary context; on a real driver this is what a new stream created
    // after `a`'s destroy may be.
    let b = unsafe { Stream::from_raw(handle, &Context::primary(&dev).unwrap()) };
    let w0 = waits();
    y.view().copy_to_pinned(&mut host, &b).unwrap();
    let first = waits() - w0;
    // With nothing in flight (the host waited), the same copy orders only the
    // device buffer's free after itself.
    host.as_slice().unwrap();
    let w1 = waits();
    y.view().copy_to_pinned(&mut host, &b).unwrap();
    let frees_only = waits() - w1;
    assert_eq!(
        first,
        frees_only + 1,
        "the copy on the new stream was taken for one on the destroyed stream's queue \
         (it did not wait for the copy in flight there)"
    );
    host.as_slice().unwrap();
    println!("streams faults: reused handle ok");
}

/// Point 4: `view` waits for the copy in flight that writes the memory, and
/// only when one is; `view_mut` for a copy that reads it.
fn child_views_wait_for_conflicting_copies() {
    let shim = DriverShim::find().expect("the shim is the loaded driver");
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = stream(&dev);
    let y = DeviceBuffer::<f32>::zeroed(&dev, 1024, &s).unwrap();
    let mut dst = DeviceBuffer::<f32>::zeroed(&dev, 1024, &s).unwrap();
    let mut host = PinnedBuffer::<f32>::zeroed(&dev, 1024).unwrap();
    let syncs = || {
        shim.counts("calls")
            .get("cuEventSynchronize")
            .copied()
            .unwrap_or(0)
    };

    y.view().copy_to_pinned(&mut host, &s).unwrap();
    let e0 = syncs();
    let _ = host.view();
    assert_eq!(
        syncs() - e0,
        1,
        "the shared view did not wait for the download"
    );
    let _ = host.view();
    assert_eq!(
        syncs() - e0,
        1,
        "the shared view waited with nothing in flight"
    );

    dst.view_mut().copy_from_pinned(&host, &s).unwrap();
    let e1 = syncs();
    // A read in flight does not hold back a shared view…
    let _ = host.view();
    assert_eq!(
        syncs() - e1,
        0,
        "the shared view waited for a copy that only reads"
    );
    // …but does a mutable one.
    host.view_mut().unwrap();
    assert_eq!(
        syncs() - e1,
        1,
        "the mutable view did not wait for the upload"
    );
    println!("streams faults: views ok");
}

#[test]
fn lending_a_pinned_view_waits_for_the_copies_it_conflicts_with() {
    if std::env::var_os(CHILD).is_some() {
        return child_views_wait_for_conflicting_copies();
    }
    common::run_fake_driver_child(
        "lending_a_pinned_view_waits_for_the_copies_it_conflicts_with",
        CHILD,
        "streams faults: views ok",
    );
}

#[test]
fn a_release_refused_for_now_keeps_what_the_future_held() {
    if std::env::var_os(CHILD).is_some() {
        return child_refused_release_keeps();
    }
    common::run_fake_driver_child(
        "a_release_refused_for_now_keeps_what_the_future_held",
        CHILD,
        "streams faults: refused release ok",
    );
}

#[test]
fn a_new_stream_with_a_destroyed_streams_handle_is_another_queue() {
    if std::env::var_os(CHILD).is_some() {
        return child_reused_handle_is_another_queue();
    }
    common::run_fake_driver_child(
        "a_new_stream_with_a_destroyed_streams_handle_is_another_queue",
        CHILD,
        "streams faults: reused handle ok",
    );
}
