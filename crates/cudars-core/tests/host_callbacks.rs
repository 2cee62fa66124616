//! Host functions that view pinned memory (`Stream::launch_host_func_with_mut`,
//! `launch_host_func_with`; issue 28, point 2): the port of `host_launch.py`, and
//! the tries to break rule 3 of the soundness contract from safe code (a host view
//! or a copy overlapping the callback, across streams and threads, a dropped or
//! forgotten buffer, a panicking callback, a capture). Each test holds its stream
//! with a spinning kernel, so what it checks is pending when it is tried. Without
//! a GPU each test prints `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use cudars_core::{CaptureMode, Device, DeviceBuffer, Error, PinnedBuffer, Stream, StreamOptions};
use cudars_tests::require_gpu;

mod common;

/// About 50 ms of spinning on an H100.
const SPIN: u64 = 50 * common::CYCLES_PER_MS;
const N: usize = 1 << 16;

fn setup() -> (Device, Stream, Stream) {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s1 = d.create_stream(StreamOptions::default()).unwrap();
    let s2 = d.create_stream(StreamOptions::default()).unwrap();
    (d, s1, s2)
}

fn iota() -> Vec<i32> {
    (0..N as i32).collect()
}

/// `host_launch.py`: the device writes a pinned array, a host callback reads and
/// writes it in stream order, the device reads it back.
#[test]
fn a_host_callback_reads_and_writes_pinned_memory_in_stream_order() {
    require_gpu!();
    let (d, s, _) = setup();
    let mut host = PinnedBuffer::<i32>::zeroed(&d, N).unwrap();
    let mut dev = DeviceBuffer::from_host(&d, &iota(), &s).unwrap();
    common::spin(&d, &s, SPIN);
    dev.view().copy_to_pinned(&mut host, &s).unwrap();
    let saw = Arc::new(AtomicBool::new(false));
    let flag = saw.clone();
    s.launch_host_func_with_mut(&mut host, move |xs| {
        flag.store(xs.iter().copied().eq(0..N as i32), Ordering::Release);
        for x in xs.iter_mut() {
            *x = *x * 2 + 1;
        }
    })
    .unwrap();
    dev.view_mut().copy_from_pinned(&host, &s).unwrap();
    let expect: Vec<i32> = iota().iter().map(|x| x * 2 + 1).collect();
    // The host view waits for the callback, which waited for the download.
    assert_eq!(host.as_slice().unwrap(), &expect[..]);
    assert!(
        saw.load(Ordering::Acquire),
        "the callback ran before the download"
    );
    assert_eq!(dev.to_vec(&s).unwrap(), expect);
    s.sync().unwrap();
}

/// Rule 3 across streams: the download on one stream, the callback on a second,
/// the upload on a third. Each waits for the one before on the device.
#[test]
fn a_host_callback_is_ordered_with_copies_on_other_streams() {
    require_gpu!();
    let (d, s1, s2) = setup();
    let s3 = d.create_stream(StreamOptions::default()).unwrap();
    let mut host = PinnedBuffer::<i32>::zeroed(&d, N).unwrap();
    let src = DeviceBuffer::from_host(&d, &iota(), &s1).unwrap();
    let mut dst = DeviceBuffer::<i32>::zeroed(&d, N, &s3).unwrap();
    s1.sync().unwrap();
    s3.sync().unwrap();
    common::spin(&d, &s1, SPIN);
    src.view().copy_to_pinned(&mut host, &s1).unwrap();
    let seen = Arc::new(AtomicUsize::new(usize::MAX));
    let out = seen.clone();
    s2.launch_host_func_with_mut(&mut host, move |xs| {
        out.store(xs.iter().filter(|&&x| x != 0).count(), Ordering::Release);
        xs.fill(-5);
    })
    .unwrap();
    dst.view_mut().copy_from_pinned(&host, &s3).unwrap();
    assert_eq!(dst.to_vec(&s3).unwrap(), vec![-5; N]);
    // `iota` holds one zero: the callback saw every other element written.
    assert_eq!(seen.load(Ordering::Acquire), N - 1);
    // A read-only lending after it sees its writes, and a download queued after
    // the read-only callback waits for it.
    let sum = Arc::new(AtomicUsize::new(0));
    let total = sum.clone();
    common::spin(&d, &s2, SPIN);
    s1.launch_host_func_with(&host, move |xs| {
        total.store(xs.iter().filter(|&&x| x == -5).count(), Ordering::Release);
    })
    .unwrap();
    src.view().copy_to_pinned(&mut host, &s2).unwrap();
    assert_eq!(host.as_slice().unwrap(), &iota()[..]);
    assert_eq!(sum.load(Ordering::Acquire), N);
}

/// Rule 3 against the host: a host view taken on another thread while the
/// callback is pending waits for it, and sees its writes, never a torn state.
#[test]
fn a_host_view_on_another_thread_waits_for_the_callback() {
    require_gpu!();
    let (d, s, _) = setup();
    let mut host = PinnedBuffer::<u32>::zeroed(&d, N).unwrap();
    common::spin(&d, &s, SPIN);
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    s.launch_host_func_with_mut(&mut host, move |xs| {
        xs.fill(7);
        flag.store(true, Ordering::Release);
    })
    .unwrap();
    // The buffer moves to another thread with its callback pending.
    let host = std::thread::spawn(move || {
        let mut host = host;
        assert_eq!(host.as_mut_slice().unwrap(), &vec![7; N][..]);
        host
    })
    .join()
    .unwrap();
    assert!(ran.load(Ordering::Acquire));
    drop(host);
}

/// Rule 3 against frees: dropping the buffer while its callback is pending
/// waits for the callback (the memory is not freed under it); forgetting it
/// leaves the memory alive, so the callback still runs on valid memory.
#[test]
fn dropping_or_forgetting_the_buffer_never_frees_it_under_the_callback() {
    require_gpu!();
    let (d, s, _) = setup();
    let ran = Arc::new(AtomicBool::new(false));
    let mut host = PinnedBuffer::<u8>::zeroed(&d, N).unwrap();
    common::spin(&d, &s, SPIN);
    let flag = ran.clone();
    s.launch_host_func_with_mut(&mut host, move |xs| {
        xs.fill(1);
        flag.store(true, Ordering::Release);
    })
    .unwrap();
    drop(host);
    assert!(
        ran.load(Ordering::Acquire),
        "the buffer was freed before its callback ran"
    );
    let mut leaked = PinnedBuffer::<u8>::zeroed(&d, N).unwrap();
    common::spin(&d, &s, SPIN);
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    s.launch_host_func_with_mut(&mut leaked, move |xs| {
        xs.fill(2);
        c.store(xs.iter().filter(|&&x| x == 2).count(), Ordering::Release);
    })
    .unwrap();
    std::mem::forget(leaked);
    s.sync().unwrap();
    assert_eq!(count.load(Ordering::Acquire), N);
}

/// A panicking callback is recorded in its stream and leaves the buffer usable
/// (its view ended with the unwind); a capturing stream is refused, so no graph
/// can run a callback past what the buffer tracks.
#[test]
fn a_panicking_callback_is_reported_and_a_capture_is_refused() {
    require_gpu!();
    let (d, s, s2) = setup();
    let mut host = PinnedBuffer::<i32>::zeroed(&d, 16).unwrap();
    s.launch_host_func_with_mut(&mut host, |xs| {
        xs[0] = 1;
        panic!("the callback panics halfway");
    })
    .unwrap();
    assert!(matches!(s.sync(), Err(Error::HostCallbackPanicked { .. })));
    assert_eq!(host.as_slice().unwrap()[..2], [1, 0]);
    host.as_mut_slice().unwrap()[1] = 2;
    // SAFETY: nothing is queued on `s2` during the capture but the refused call.
    unsafe { s2.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    let refused = s2.launch_host_func_with_mut(&mut host, |xs| xs.fill(9));
    let refused_ro = s2.launch_host_func_with(&host, |_| {});
    drop(s2.end_capture().unwrap());
    assert!(
        matches!(refused, Err(Error::InvalidArgument { .. })),
        "{refused:?}"
    );
    assert!(
        matches!(refused_ro, Err(Error::InvalidArgument { .. })),
        "{refused_ro:?}"
    );
    assert_eq!(host.as_slice().unwrap()[..2], [1, 2]);
}

/// No CUDA call from a driver callback thread: a host function that calls
/// `sync()` on its own stream (which on a real driver may wait for itself for
/// ever), copies a buffer, fills one, waits for an event and queries the
/// device gets each operation's refusal (`CUDA_ERROR_NOT_PERMITTED`, made
/// without calling the driver), sent out through a channel; the stream then
/// finishes, within a bounded wait, and works as before.
#[test]
fn operations_in_a_host_callback_are_refused_and_the_stream_finishes() {
    require_gpu!();
    use std::sync::mpsc;
    use std::time::Duration;
    let (d, s, _) = setup();
    let buf = Arc::new(std::sync::Mutex::new(
        DeviceBuffer::from_host(&d, &iota(), &s).unwrap(),
    ));
    let event = Arc::new(
        s.record_new_event(cudars_core::EventOptions::default())
            .unwrap(),
    );
    common::spin(&d, &s, SPIN);
    let (tx, rx) = mpsc::channel::<Vec<(&'static str, Option<Error>)>>();
    let (s2, b2, e2, d2) = (s.clone(), buf.clone(), event.clone(), d);
    s.launch_host_func(move || {
        let mut host = vec![0i32; N];
        let mut b = b2.lock().unwrap();
        let out = vec![
            ("Stream::sync of its own stream", s2.sync().err()),
            (
                "DeviceBuffer::copy_to_host",
                b.copy_to_host(&mut host, &s2).err(),
            ),
            ("DeviceBuffer::fill", b.fill(7, &s2).err()),
            ("Event::sync", e2.sync().err()),
            ("Device::sync", d2.sync().err()),
            (
                "Device::attribute",
                d2.attribute(cudars_bindings::driver::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                    .err(),
            ),
        ];
        let _ = tx.send(out);
    })
    .unwrap();
    let out = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the host function ran and reported within 30 s (no hang)");
    for (name, e) in &out {
        let e = e
            .as_ref()
            .unwrap_or_else(|| panic!("{name} was not refused"));
        assert_eq!(
            e.driver_code(),
            Some(cudars_bindings::driver::CUDA_ERROR_NOT_PERMITTED),
            "{name}: {e}"
        );
    }
    // The stream finishes, on an ordinary thread, bounded.
    let (done_tx, done_rx) = mpsc::channel();
    let s3 = s.clone();
    std::thread::spawn(move || {
        let _ = done_tx.send(s3.sync());
    });
    done_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the stream finished within 30 s")
        .unwrap();
    // Nothing the callback tried was done: the buffer is unchanged.
    assert_eq!(buf.lock().unwrap().to_vec(&s).unwrap(), iota());
}
