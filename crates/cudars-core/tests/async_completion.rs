//! Futures for GPU work (issue 29) under three executors: tokio (multi-threaded),
//! smol, and `futures::executor::block_on`; and the cancellation cases of rule 12
//! of the soundness contract (`docs/architecture.md`): a future dropped or
//! forgotten while its copy is pending frees nothing the GPU still writes.
//!
//! The pattern of `soundness.rs`: a kernel spins on the GPU (about 50 ms) so the
//! work behind it stays pending while the test does what safe code may. Without
//! a GPU each test prints `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use cudars_core::{
    CaptureMode, Device, DeviceBuffer, Error, Event, EventOptions, LaunchConfig, PinnedBuffer,
    Stream, StreamOptions, deferred_frees,
};
use cudars_tests::require_gpu;

mod common;
use common::spin_fill;

/// About 50 ms of spinning on an H100.
const SPIN: u64 = 50 * common::CYCLES_PER_MS;
/// Elements per job.
const N: usize = 1 << 16;
/// What no test may wait longer than for one future: a hang is a failure.
const HANG: Duration = Duration::from_secs(30);

/// Tests that look at work pending behind a spin run alone: another test's
/// pinned allocation may synchronise the device, which would hold this test's
/// driver calls until the spin ended, and the work would be done when the test
/// looks.
static SERIAL: RwLock<()> = RwLock::new(());

fn alone() -> RwLockWriteGuard<'static, ()> {
    SERIAL.write().unwrap_or_else(PoisonError::into_inner)
}

fn beside_others() -> RwLockReadGuard<'static, ()> {
    SERIAL.read().unwrap_or_else(PoisonError::into_inner)
}

fn device() -> Device {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    d
}

fn grid() -> LaunchConfig {
    LaunchConfig::new(132u32, 256u32)
}

/// Queues, on `s`: spin for `cycles`, then fill `y` with `v`. Returns the
/// kernel, which the caller keeps while it looks at the pending work: dropping
/// it unloads its library, which waits for the kernel to finish.
#[must_use = "dropping the kernel waits for the spin"]
fn fill_after_spin(
    d: &Device,
    s: &Stream,
    y: &mut DeviceBuffer<f32>,
    v: f32,
    cycles: u64,
) -> cudars_core::TypedKernel<common::SpinFill> {
    let k = spin_fill(d);
    let n = y.len() as u64;
    // SAFETY: the kernel writes `n` = the view's length elements.
    unsafe { k.launch(s, &grid(), (y.view_mut(), n, v, cycles)) }.unwrap();
    k
}

/// One job of the executor tests: a stream of its own, a kernel, a download
/// awaited, the result checked.
async fn job(d: Device, i: usize) {
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let mut y = DeviceBuffer::<f32>::zeroed(&d, N, &s).unwrap();
    let v = i as f32 + 0.5;
    let _k = fill_after_spin(&d, &s, &mut y, v, common::CYCLES_PER_MS);
    s.completion().await.unwrap();
    let got = y.to_vec_async(&s).await.unwrap();
    assert_eq!(got.len(), N);
    let wrong = got.iter().filter(|&&x| x != v).count();
    assert_eq!(wrong, 0, "job {i}: {wrong} elements were not written");
}

#[test]
fn jobs_complete_under_tokio_multi_thread() {
    require_gpu!();
    let _serial = beside_others();
    let d = device();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let tasks: Vec<_> = (0..64).map(|i| tokio::spawn(job(d, i))).collect();
        for t in tasks {
            tokio::time::timeout(HANG, t)
                .await
                .expect("a job hung")
                .unwrap();
        }
    });
}

#[test]
fn jobs_complete_under_smol() {
    require_gpu!();
    let _serial = beside_others();
    let d = device();
    let ex = smol::Executor::new();
    let tasks: Vec<_> = (0..32).map(|i| ex.spawn(job(d, i))).collect();
    smol::block_on(ex.run(async {
        for t in tasks {
            t.await;
        }
    }));
}

#[test]
fn jobs_complete_under_futures_block_on() {
    require_gpu!();
    let _serial = beside_others();
    let d = device();
    futures::executor::block_on(async {
        let jobs = (0..16).map(|i| job(d, i));
        futures::future::join_all(jobs).await;
    });
}

#[test]
fn an_event_can_be_awaited_by_reference() {
    require_gpu!();
    // It looks at work pending behind a spin: alone (see SERIAL).
    let _serial = alone();
    let d = device();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let mut y = DeviceBuffer::<f32>::zeroed(&d, N, &s).unwrap();
    // Everything that may synchronise (creations, allocations) comes before
    // the spin, so that the work is still running when the test looks.
    let e = Event::new(&d, EventOptions::default()).unwrap();
    let _k = fill_after_spin(&d, &s, &mut y, 3.0, SPIN);
    e.record(&s).unwrap();
    assert!(!e.is_done().unwrap(), "the spin should still run");
    futures::executor::block_on(async {
        (&e).await.unwrap();
        assert!(e.is_done().unwrap());
        e.wait_async().await.unwrap();
    });
    assert!(y.to_vec(&s).unwrap().iter().all(|&x| x == 3.0));
}

/// "Polled after its stream is destroyed": a future holds no stream handle (its
/// event keeps the context alive), so the last `Stream` going while the work is
/// pending leaves the futures resolving as usual.
#[test]
fn futures_outlive_their_stream() {
    require_gpu!();
    let _serial = beside_others();
    let d = device();
    let keeper = d.create_stream(StreamOptions::default()).unwrap();
    // Allocated on another stream, so that no buffer keeps `s` alive.
    let mut y = DeviceBuffer::<f32>::zeroed(&d, N, &keeper).unwrap();
    keeper.sync().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let _k = fill_after_spin(&d, &s, &mut y, 4.0, SPIN);
    let done = s.completion();
    let read = y.to_vec_async(&s);
    drop(s);
    futures::executor::block_on(async {
        done.await.unwrap();
        assert!(read.await.unwrap().iter().all(|&x| x == 4.0));
    });
}

#[test]
fn pinned_copies_hand_their_buffers_back() {
    require_gpu!();
    let _serial = beside_others();
    let d = device();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let src: Vec<u32> = (0..N as u32).collect();
    let host = PinnedBuffer::from_slice(&d, &src).unwrap();
    let mut dev = DeviceBuffer::<u32>::zeroed(&d, N, &s).unwrap();
    futures::executor::block_on(async {
        let host = dev
            .view_mut()
            .copy_from_pinned_async(host, &s)
            .await
            .unwrap();
        let back = PinnedBuffer::<u32>::zeroed(&d, N).unwrap();
        let back = dev.view().copy_to_pinned_async(back, &s).await.unwrap();
        assert_eq!(back.as_slice().unwrap(), &src[..]);
        assert_eq!(host.as_slice().unwrap(), &src[..]);
        // A wrong length is an error through the future, and the buffer is
        // released (after its copies), not leaked into the error.
        let short = PinnedBuffer::<u32>::zeroed(&d, N - 1).unwrap();
        let r = dev.view().copy_to_pinned_async(short, &s).await;
        assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
    });
}

#[test]
fn a_capturing_stream_is_refused() {
    require_gpu!();
    let _serial = beside_others();
    let d = device();
    let s = d
        .create_stream(StreamOptions {
            non_blocking: true,
            priority: None,
        })
        .unwrap();
    // SAFETY: nothing is captured but the refused completion.
    unsafe { s.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    let r = futures::executor::block_on(s.completion());
    // The capture ends either way; a parallel test's pinned allocation (which
    // may synchronise the device) can invalidate it meanwhile.
    let _ = s.end_capture();
    assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
}

#[test]
fn a_host_function_panic_is_reported_once() {
    require_gpu!();
    let _serial = beside_others();
    let d = device();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    s.launch_host_func(|| panic!("in the host function"))
        .unwrap();
    futures::executor::block_on(async {
        let r = s.completion().await;
        assert!(
            matches!(r, Err(Error::HostCallbackPanicked { .. })),
            "{r:?}"
        );
        s.completion().await.unwrap();
    });
}

/// Rule 12: a pending download's future dropped (polled once, or never) leaves
/// the staging memory alone until the copy is done. The memory of a buffer
/// freed early would come back to the next allocation of its size, which the
/// late copy would then overwrite.
#[test]
fn dropping_a_pending_download_frees_nothing_in_use() {
    require_gpu!();
    let _serial = alone();
    let d = device();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    for polled in [false, true] {
        let mut y = DeviceBuffer::<f32>::zeroed(&d, N, &s).unwrap();
        // A pinned allocation may synchronise the device: made before the spin.
        let dst = PinnedBuffer::<f32>::zeroed(&d, N).unwrap();
        let _k = fill_after_spin(&d, &s, &mut y, 7.0, SPIN);
        let mut f = Box::pin(y.view().copy_to_pinned_async(dst, &s));
        if polled {
            let w = futures::task::noop_waker();
            let r = f.as_mut().poll_unpin_once(&w);
            assert!(r, "the copy should still be pending");
        }
        drop(f);
        // A successor of the same size, written on the host while the copy runs.
        let mut next = PinnedBuffer::<f32>::zeroed(&d, N).unwrap();
        next.as_mut_slice().unwrap().fill(-1.0);
        s.sync().unwrap();
        let landed = next
            .as_slice()
            .unwrap()
            .iter()
            .filter(|&&x| x != -1.0)
            .count();
        assert_eq!(
            landed, 0,
            "{landed} elements of the dropped copy landed in new memory"
        );
    }
    // Everything the dropped futures held is released after the work.
    wait_until_no_deferred_frees();
}

/// Rule 12: a forgotten future leaks what it holds; nothing is freed under the
/// copy.
#[test]
fn forgetting_a_pending_download_leaks_and_corrupts_nothing() {
    require_gpu!();
    let _serial = alone();
    let d = device();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    for polled in [false, true] {
        let mut y = DeviceBuffer::<f32>::zeroed(&d, N, &s).unwrap();
        // A pinned allocation may synchronise the device: the staging buffer is
        // made before the spin (`to_vec_async` would allocate its own after it).
        let dst = PinnedBuffer::<f32>::zeroed(&d, N).unwrap();
        let _k = fill_after_spin(&d, &s, &mut y, 8.0, SPIN);
        let mut f = Box::pin(y.view().copy_to_pinned_async(dst, &s));
        if polled {
            let w = futures::task::noop_waker();
            let mut cx = std::task::Context::from_waker(&w);
            assert!(f.as_mut().poll(&mut cx).is_pending());
        }
        std::mem::forget(f);
        let mut next = PinnedBuffer::<f32>::zeroed(&d, N).unwrap();
        next.as_mut_slice().unwrap().fill(-1.0);
        s.sync().unwrap();
        let landed = next
            .as_slice()
            .unwrap()
            .iter()
            .filter(|&&x| x != -1.0)
            .count();
        assert_eq!(landed, 0);
    }
}

/// Rule 13: a dropped `to_vec_async`'s staging block goes back to the pool
/// only after its copy. Meanwhile other downloads of the same size take blocks
/// from the pool, again and again, each checked: a block handed out under the
/// pending copy would be overwritten by it when the spin ends.
#[test]
fn a_dropped_download_returns_its_staging_block_only_after_the_copy() {
    require_gpu!();
    let _serial = alone();
    let d = device();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let other = d
        .create_stream(StreamOptions {
            non_blocking: true,
            priority: None,
        })
        .unwrap();
    let mut z = DeviceBuffer::<f32>::zeroed(&d, N, &other).unwrap();
    z.view_mut().fill(3.0, &other).unwrap();
    // Two blocks of this size idle in the pool, one for the dropped download,
    // one for the reads (allocated before the spin: a pinned allocation may
    // synchronise the device).
    let (a, b) = futures::executor::block_on(futures::future::join(
        z.to_vec_async(&other),
        z.to_vec_async(&other),
    ));
    assert!(a.unwrap().iter().chain(&b.unwrap()).all(|&x| x == 3.0));
    let mut y = DeviceBuffer::<f32>::zeroed(&d, N, &s).unwrap();
    let _k = fill_after_spin(&d, &s, &mut y, 7.0, SPIN);
    let mut f = Box::pin(y.to_vec_async(&s));
    let w = futures::task::noop_waker();
    assert!(f.as_mut().poll_unpin_once(&w), "the copy should be pending");
    drop(f);
    let mut reads = 0;
    while !s.is_done().unwrap() || reads < 10 {
        let got = futures::executor::block_on(z.to_vec_async(&other)).unwrap();
        let wrong = got.iter().filter(|&&x| x != 3.0).count();
        assert_eq!(
            wrong, 0,
            "read {reads}: a pending copy wrote a reused block"
        );
        reads += 1;
    }
    s.sync().unwrap();
    wait_until_no_deferred_frees();
    // The idle blocks go too (the memcheck run's leak check sees what stays).
    assert!(cudars_core::trim_completion_pools() > 0);
}

/// Dropping a pending future does not wait: the executor's thread is not held
/// for the GPU work (the spin runs about 50 ms; the drop returns long before).
#[test]
fn dropping_a_pending_future_does_not_block() {
    require_gpu!();
    let _serial = alone();
    let d = device();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let mut y = DeviceBuffer::<f32>::zeroed(&d, N, &s).unwrap();
    let dst = PinnedBuffer::<f32>::zeroed(&d, N).unwrap();
    let _k = fill_after_spin(&d, &s, &mut y, 1.0, 4 * SPIN);
    let f = y.view().copy_to_pinned_async(dst, &s);
    drop(f);
    // Still running: the drop did not synchronise.
    assert!(!s.is_done().unwrap());
    s.sync().unwrap();
}

/// A thousand futures pending at once on eight streams, one reactor.
#[test]
fn a_thousand_pending_futures_resolve() {
    require_gpu!();
    let _serial = beside_others();
    let d = device();
    let streams: Vec<Stream> = (0..8)
        .map(|_| d.create_stream(StreamOptions::default()).unwrap())
        .collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut pending = Vec::new();
        for round in 0..125 {
            for s in &streams {
                if round % 25 == 0 {
                    common::spin(&d, s, common::CYCLES_PER_MS);
                }
                pending.push(s.completion());
            }
        }
        assert_eq!(pending.len(), 1000);
        let all = futures::future::join_all(pending);
        let results = tokio::time::timeout(HANG, all).await.expect("hung");
        assert!(results.iter().all(Result::is_ok));
    });
}

fn wait_until_no_deferred_frees() {
    let start = std::time::Instant::now();
    while deferred_frees() > 0 {
        assert!(
            start.elapsed() < HANG,
            "{} releases never ran",
            deferred_frees()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Polls once with `w`; says whether it was pending.
trait PollOnce {
    fn poll_unpin_once(self, w: &std::task::Waker) -> bool;
}

impl<F: std::future::Future> PollOnce for std::pin::Pin<&mut F> {
    fn poll_unpin_once(self, w: &std::task::Waker) -> bool {
        let mut cx = std::task::Context::from_waker(w);
        self.poll(&mut cx).is_pending()
    }
}

use std::future::Future as _;
