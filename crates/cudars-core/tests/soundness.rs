//! The adversarial suite, ordering half: each test tries to break a rule of the
//! soundness contract (`docs/architecture.md`, "The soundness contract") from
//! safe code, the way an outside review broke it, and asserts that it holds.
//! Each names the review's point it covers; each failed before its fix.
//!
//! The pattern: a kernel that spins on the GPU keeps some work pending, the
//! test then does what safe code may (drop a buffer, swap its free stream, move
//! it to another thread, view it from the host) and checks on the data that
//! nothing ran out of order: a successor allocation that received the old
//! work's writes, or a host view that saw memory a pending copy was to write.
//! Without a GPU each test prints `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it
//! fails.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cudars_core::{
    BatchViewCopy, Context, ContextOptions, CopyOptions, Device, DeviceBuffer,
    GraphCompleteOptions, LaunchConfig, LegacyPinnedMemoryResource, MemcpySrcAccessOrder,
    PinnedBuffer, Stream, StreamOptions, copy_batch,
};
use cudars_tests::require_gpu;

mod common;
use common::{kernel, spin_fill};

/// About 50 ms of spinning on an H100.
const SPIN: u64 = 50 * common::CYCLES_PER_MS;
/// 1 Mi elements: what the review's successor allocation received.
const N: usize = 1 << 20;

fn setup() -> (Device, Stream, Stream) {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s1 = d.create_stream(StreamOptions::default()).unwrap();
    let s2 = d.create_stream(StreamOptions::default()).unwrap();
    (d, s1, s2)
}

/// Queues about 50 ms of spinning on `s`: what follows on `s` stays pending.
fn spin(d: &Device, s: &Stream) {
    common::spin(d, s, SPIN);
}

fn grid() -> LaunchConfig {
    LaunchConfig::new(132u32, 256u32)
}

/// Point 1: a typed launch orders its operands' frees *after* the kernel. The
/// buffer is freed on its own stream right after a launch on another stream;
/// the pool hands the same memory to the next allocation, which must not get
/// the kernel's writes.
#[test]
fn a_typed_launch_keeps_its_operands_until_the_kernel_is_done() {
    require_gpu!();
    let (d, s1, s2) = setup();
    let k = spin_fill(&d);
    let mut a = DeviceBuffer::<f32>::zeroed(&d, N, &s1).unwrap();
    s1.sync().unwrap();
    // SAFETY: the kernel writes `n` = the view's length elements.
    unsafe { k.launch(&s2, &grid(), (a.view_mut(), N as u64, 1.0, SPIN)) }.unwrap();
    drop(a);
    let b = DeviceBuffer::<f32>::zeroed(&d, N, &s1).unwrap();
    let got = b.to_vec(&s1).unwrap();
    s2.sync().unwrap();
    let got_after = b.to_vec(&s1).unwrap();
    let written = got_after.iter().filter(|&&x| x != 0.0).count();
    assert_eq!(
        written, 0,
        "the successor allocation received {written} of the freed buffer's kernel writes"
    );
    assert!(got.iter().all(|&x| x == 0.0));
}

/// Point 2: `set_free_stream` orders the new free stream after the old one. A
/// fill pending on the old free stream must land before the free, not in the
/// next owner's memory.
#[test]
fn swapping_the_free_stream_keeps_pending_work_before_the_free() {
    require_gpu!();
    let (d, s1, s2) = setup();
    let k = spin_fill(&d);
    let mut a = d.allocate(4 * N, &s1).unwrap();
    // SAFETY: `n` = the view's length.
    unsafe { k.launch(&s1, &grid(), (a.view_mut().unwrap(), N as u64, 1.0, SPIN)) }.unwrap();
    a.set_free_stream(&s2).unwrap();
    drop(a);
    let b = DeviceBuffer::<f32>::zeroed(&d, N, &s2).unwrap();
    s1.sync().unwrap();
    let got = b.to_vec(&s2).unwrap();
    let written = got.iter().filter(|&&x| x != 0.0).count();
    assert_eq!(
        written, 0,
        "{written} writes of the old owner's fill landed"
    );
}

/// Point 2, the host view: after a swap, `host_slice_mut` still waits for the
/// work queued on the old free stream.
#[test]
fn a_host_view_after_a_free_stream_swap_waits_for_the_old_stream() {
    require_gpu!();
    let (d, s1, s2) = setup();
    let mut buf = Arc::new(LegacyPinnedMemoryResource::new(&d))
        .allocate(4 * N, &s1)
        .unwrap();
    buf.set_free_stream(&s1).unwrap();
    spin(&d, &s1);
    buf.fill_pattern(2.0f32, &s1).unwrap();
    buf.set_free_stream(&s2).unwrap();
    let host: &mut [f32] = buf.host_slice_mut().unwrap();
    let pending = host.iter().filter(|&&x| x != 2.0).count();
    assert_eq!(
        pending, 0,
        "the host view saw {pending} elements a pending fill had not written"
    );
}

/// Point 3: a buffer allocated on the per-thread default stream, filled there,
/// then moved to another thread and dropped: the free must come after the
/// owner thread's fill, though the other thread's per-thread stream is
/// another queue.
#[test]
fn a_per_thread_stream_buffer_dropped_on_another_thread_waits_for_its_owner() {
    require_gpu!();
    let (d, _s1, _s2) = setup();
    let k = spin_fill(&d);
    let ptds = Stream::per_thread_default(&d).unwrap();
    assert!(ptds.is_per_thread_default());
    let mut a = DeviceBuffer::<f32>::zeroed(&d, N, &ptds).unwrap();
    // SAFETY: `n` = the view's length.
    unsafe { k.launch(&ptds, &grid(), (a.view_mut(), N as u64, 1.0, SPIN)) }.unwrap();
    let (got, written) = std::thread::spawn(move || {
        d.set_current().unwrap();
        let mine = Stream::per_thread_default(&d).unwrap();
        drop(a);
        let b = DeviceBuffer::<f32>::zeroed(&d, N, &mine).unwrap();
        let got = b.to_vec(&mine).unwrap();
        d.context().unwrap().sync().unwrap();
        let written = b
            .to_vec(&mine)
            .unwrap()
            .iter()
            .filter(|&&x| x != 0.0)
            .count();
        (got, written)
    })
    .join()
    .unwrap();
    assert_eq!(
        written, 0,
        "the other thread's allocation got {written} writes"
    );
    assert!(got.iter().all(|&x| x == 0.0));
}

/// Point 3: a fill queued on the per-thread default stream by one thread, a
/// host view taken on another: the view waits for the fill.
#[test]
fn a_host_view_waits_for_per_thread_stream_work_of_another_thread() {
    require_gpu!();
    let (d, _s1, _s2) = setup();
    let ptds = Stream::per_thread_default(&d).unwrap();
    let mut buf = Arc::new(LegacyPinnedMemoryResource::new(&d))
        .allocate(4 * N, None)
        .unwrap();
    buf.set_free_stream(&ptds).unwrap();
    let (give, take) = std::sync::mpsc::channel();
    let (done, wait_done) = std::sync::mpsc::channel::<()>();
    let other = std::thread::spawn(move || {
        d.set_current().unwrap();
        let mine = Stream::per_thread_default(&d).unwrap();
        spin(&d, &mine);
        buf.fill_pattern(3.0f32, &mine).unwrap();
        give.send(buf).unwrap();
        // Stay alive (a thread's exit may wait for its per-thread stream)
        // until the host view has been checked.
        let _ = wait_done.recv();
    });
    let mut buf = take.recv().unwrap();
    let host: &mut [f32] = buf.host_slice_mut().unwrap();
    let pending = host.iter().filter(|&&x| x != 3.0).count();
    done.send(()).unwrap();
    other.join().unwrap();
    assert_eq!(
        pending, 0,
        "{pending} elements seen before the fill wrote them"
    );
}

/// Point 3: an executable graph launched on the per-thread default stream and
/// dropped on another thread waits for the launch before releasing the host
/// callback the launch calls.
#[test]
fn a_graph_dropped_on_another_thread_waits_for_its_per_thread_launch() {
    require_gpu!();
    let (d, _s1, _s2) = setup();
    let ptds = Stream::per_thread_default(&d).unwrap();
    let spin_k = kernel(&d, "spin");
    let calls = Arc::new(AtomicUsize::new(0));
    let mut g = cudars_core::Graph::new(&d.context().unwrap()).unwrap();
    let cycles = SPIN;
    // SAFETY: the kernel touches no memory.
    let n =
        unsafe { g.add_kernel(&[], &LaunchConfig::new(1u32, 1u32), &spin_k, &[&cycles]) }.unwrap();
    let c = calls.clone();
    g.add_host_callback(&[n], move || {
        c.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    exec.launch(&ptds).unwrap();
    std::thread::spawn(move || drop(exec)).join().unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the graph was released while its launch still ran"
    );
}

/// Point 7: pinned copies are tracked by queue, not by handle. A download on
/// the legacy stream of one context, then an upload of the same pinned memory
/// on the legacy stream of another (the same handle value): the upload must
/// wait for the download.
#[test]
fn pinned_copies_on_two_contexts_legacy_streams_are_ordered() {
    require_gpu!();
    let (d, _s1, _s2) = setup();
    let other = Context::create(&d, ContextOptions::default()).unwrap();
    let legacy = Stream::legacy_default(&d).unwrap();
    // SAFETY: the legacy handle names a live stream of `other`, which the
    // `Stream` keeps alive.
    let legacy_other = unsafe {
        Stream::from_raw(
            cudars_core::cudars_bindings::driver::CU_STREAM_LEGACY,
            &other,
        )
    };
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let src = DeviceBuffer::from_host(&d, &vec![7u32; N], &s).unwrap();
    let mut dst = DeviceBuffer::<u32>::zeroed(&d, N, &s).unwrap();
    s.sync().unwrap();
    let mut host = PinnedBuffer::<u32>::zeroed(&d, N).unwrap();
    spin(&d, &legacy_other);
    src.view().copy_to_pinned(&mut host, &legacy_other).unwrap();
    dst.view_mut().copy_from_pinned(&host, &legacy).unwrap();
    let got = dst.to_vec(&legacy).unwrap();
    let stale = got.iter().filter(|&&x| x != 7).count();
    assert_eq!(
        stale, 0,
        "the upload read {stale} elements before the download"
    );
    other.sync().unwrap();
}

/// Point 7 across devices: the legacy streams of two devices' primary contexts
/// share a handle value; a download on one and an upload of the same pinned
/// memory on the other must still be ordered.
#[test]
fn pinned_copies_on_two_devices_legacy_streams_are_ordered() {
    cudars_tests::require_gpus!(2);
    let (d0, _s1, _s2) = setup();
    let d1 = Device::new(1).unwrap();
    let legacy0 = Stream::legacy_default(&d0).unwrap();
    let legacy1 = Stream::legacy_default(&d1).unwrap();
    let s1 = d1.create_stream(StreamOptions::default()).unwrap();
    let src = DeviceBuffer::from_host(&d1, &vec![9u32; N], &s1).unwrap();
    s1.sync().unwrap();
    let s0 = d0.create_stream(StreamOptions::default()).unwrap();
    let mut dst = DeviceBuffer::<u32>::zeroed(&d0, N, &s0).unwrap();
    s0.sync().unwrap();
    let mut host = PinnedBuffer::<u32>::zeroed(&d0, N).unwrap();
    spin(&d1, &legacy1);
    src.view().copy_to_pinned(&mut host, &legacy1).unwrap();
    dst.view_mut().copy_from_pinned(&host, &legacy0).unwrap();
    let got = dst.to_vec(&legacy0).unwrap();
    let stale = got.iter().filter(|&&x| x != 9).count();
    assert_eq!(
        stale, 0,
        "the upload read {stale} elements before the download"
    );
    legacy1.sync().unwrap();
}

/// Issue 28, point 3, against rule 3: in a batch with options per copy, the one
/// copy that reads its source out of stream order still waits for the kernel
/// that writes it on another stream (its free stream is ordered after it).
#[test]
fn a_per_copy_out_of_order_read_in_a_mixed_batch_waits_for_its_source() {
    require_gpu!();
    let (d, s1, s2) = setup();
    let k = spin_fill(&d);
    let plain = DeviceBuffer::from_host(&d, &vec![1.0f32; N], &s1).unwrap();
    let mut src = DeviceBuffer::<f32>::zeroed(&d, N, &s1).unwrap();
    let mut a = DeviceBuffer::<f32>::zeroed(&d, N, &s1).unwrap();
    let mut b = DeviceBuffer::<f32>::zeroed(&d, N, &s1).unwrap();
    s1.sync().unwrap();
    // SAFETY: `n` = the view's length.
    unsafe { k.launch(&s2, &grid(), (src.view_mut(), N as u64, 5.0, SPIN)) }.unwrap();
    let during = CopyOptions {
        src_access_order: MemcpySrcAccessOrder::DuringApiCall,
        ..Default::default()
    };
    let mut copies = [
        BatchViewCopy {
            dst: a.view_mut(),
            src: plain.view(),
        },
        BatchViewCopy {
            dst: b.view_mut(),
            src: src.view(),
        },
    ];
    match cudars_core::copy_batch_with(&mut copies, &[CopyOptions::default(), during], &s1) {
        Err(cudars_core::Error::Unsupported { .. }) if cudars_tests::driver_version() < 12080 => {
            return;
        }
        r => r.unwrap(),
    }
    assert_eq!(a.to_vec(&s1).unwrap(), vec![1.0; N]);
    let got = b.to_vec(&s1).unwrap();
    let stale = got.iter().filter(|&&x| x != 5.0).count();
    assert_eq!(
        stale, 0,
        "{stale} elements read before the kernel wrote them"
    );
}

/// Point 10: a batch copy that reads its sources during the call still comes
/// after the work queued on them.
#[test]
fn a_batch_copy_reading_out_of_stream_order_waits_for_its_sources() {
    require_gpu!();
    let (d, s1, _s2) = setup();
    let k = spin_fill(&d);
    let mut src = DeviceBuffer::<f32>::zeroed(&d, N, &s1).unwrap();
    let mut dst = DeviceBuffer::<f32>::zeroed(&d, N, &s1).unwrap();
    // SAFETY: `n` = the view's length.
    unsafe { k.launch(&s1, &grid(), (src.view_mut(), N as u64, 5.0, SPIN)) }.unwrap();
    for order in [
        MemcpySrcAccessOrder::DuringApiCall,
        MemcpySrcAccessOrder::Any,
    ] {
        let opts = CopyOptions {
            src_access_order: order,
            ..Default::default()
        };
        let mut copies = [BatchViewCopy {
            dst: dst.view_mut(),
            src: src.view(),
        }];
        match copy_batch(&mut copies, &opts, &s1) {
            // Batch copies need a CUDA 12.8 driver: before, the typed refusal.
            Err(cudars_core::Error::Unsupported { .. })
                if cudars_tests::driver_version() < 12080 =>
            {
                return;
            }
            r => r.unwrap(),
        }
        let got = dst.to_vec(&s1).unwrap();
        let stale = got.iter().filter(|&&x| x != 5.0).count();
        assert_eq!(stale, 0, "{order:?}: {stale} elements read before the fill");
    }
}

/// Issue 41, point 4: a shared view of a pinned buffer is lent only after the
/// copies in flight that write it. A download into the pinned memory is held
/// back on one stream; the view is then read on another stream by a safe
/// copy, which must see what the download wrote, not the memory from before.
#[test]
fn a_pinned_view_read_on_another_stream_waits_for_a_download_in_flight() {
    require_gpu!();
    let (d, s1, s2) = setup();
    let src = DeviceBuffer::from_host(&d, &vec![7u32; N], &s1).unwrap();
    let mut dst = DeviceBuffer::<u32>::zeroed(&d, N, &s2).unwrap();
    s1.sync().unwrap();
    s2.sync().unwrap();
    let mut host = PinnedBuffer::<u32>::zeroed(&d, N).unwrap();
    spin(&d, &s1);
    src.view().copy_to_pinned(&mut host, &s1).unwrap();
    dst.view_mut().copy_from(host.view(), &s2).unwrap();
    let got = dst.to_vec(&s2).unwrap();
    let stale = got.iter().filter(|&&x| x != 7).count();
    assert_eq!(
        stale, 0,
        "a read through the pinned view overtook the download into it ({stale} stale elements)"
    );
    s1.sync().unwrap();
}

/// Issue 41, point 4: a mutable view of a pinned buffer is lent only after
/// every copy in flight. An upload from the pinned memory is held back on one
/// stream; a safe fill through the mutable view on another stream must not
/// change what the upload reads.
#[test]
fn a_pinned_view_written_on_another_stream_waits_for_an_upload_in_flight() {
    require_gpu!();
    let (d, s1, s2) = setup();
    let mut dst = DeviceBuffer::<u32>::zeroed(&d, N, &s1).unwrap();
    s1.sync().unwrap();
    let mut host = PinnedBuffer::from_slice(&d, &vec![1u32; N]).unwrap();
    spin(&d, &s1);
    dst.view_mut().copy_from_pinned(&host, &s1).unwrap();
    host.view_mut().unwrap().fill(2, &s2).unwrap();
    s2.sync().unwrap();
    let got = dst.to_vec(&s1).unwrap();
    let overwritten = got.iter().filter(|&&x| x != 1).count();
    assert_eq!(
        overwritten, 0,
        "a write through the pinned view overtook the upload from it ({overwritten} elements)"
    );
    assert!(host.as_slice().unwrap().iter().all(|&x| x == 2));
}

/// Issue 41, point 6: the capture check of a pinned copy and of `to_vec_async`
/// holds the stream's capture gate until the copy and its event are queued. A
/// test hook runs in that window and starts, on another thread, a capture of
/// the same stream, then gives it time to begin: the capture must begin only
/// after the copy was queued, so the copy runs (the host sees its data) and the
/// captured graph holds nothing of it.
#[test]
fn a_capture_begun_between_the_check_and_the_copy_does_not_take_the_copy() {
    use std::sync::Mutex;
    require_gpu!();
    let (d, s1, _s2) = setup();
    let src = DeviceBuffer::from_host(&d, &vec![7u32; N], &s1).unwrap();
    s1.sync().unwrap();
    let mut host = PinnedBuffer::<u32>::zeroed(&d, N).unwrap();
    for case in ["copy_to_pinned", "to_vec_async"] {
        type Capturer = std::thread::JoinHandle<usize>;
        let capturer: Arc<Mutex<Option<Capturer>>> = Arc::default();
        // The capture ends when the main thread says so, on the thread that
        // began it.
        let (end, ended) = std::sync::mpsc::channel::<()>();
        let once = Mutex::new(Some((s1.clone(), ended)));
        let started = capturer.clone();
        let mine = s1.handle() as usize;
        cudars_core::__test_hooks::set_after_capture_check(Some(Box::new(move |stream| {
            // Only this test's stream (the tests of the file run in parallel).
            if stream.handle() as usize != mine {
                return;
            }
            let Some((s, ended)) = once.lock().unwrap().take() else {
                return;
            };
            *started.lock().unwrap() = Some(std::thread::spawn(move || {
                // SAFETY: the capture takes nothing but what this test queues
                // while it runs (nothing, if the gate holds), and ends below.
                unsafe { s.begin_capture(cudars_core::CaptureMode::Relaxed) }.unwrap();
                ended.recv().unwrap();
                s.end_capture().unwrap().nodes().unwrap().len()
            }));
            // Time for the capture to begin, were the window open.
            std::thread::sleep(std::time::Duration::from_millis(100));
        })));
        let download = match case {
            "copy_to_pinned" => {
                src.view().copy_to_pinned(&mut host, &s1).unwrap();
                None
            }
            _ => Some(src.to_vec_async(&s1)),
        };
        cudars_core::__test_hooks::set_after_capture_check(None);
        end.send(()).unwrap();
        let t = capturer.lock().unwrap().take();
        let captured = t.expect("the hook ran in the window").join().unwrap();
        assert_eq!(
            captured, 0,
            "{case}: the capture begun in the window took the copy"
        );
        let got = match download {
            None => host.as_slice().unwrap().to_vec(),
            Some(f) => futures::executor::block_on(f).unwrap(),
        };
        let stale = got.iter().filter(|&&x| x != 7).count();
        assert_eq!(
            stale, 0,
            "{case}: the copy did not run ({stale} stale elements)"
        );
    }
    // The download's staging block went back to the process's idle pool: give
    // it back to the driver, so a leak check at exit sees only what leaked.
    cudars_core::trim_completion_pools();
}

/// Issue 41, point 8: a queue is not its handle. A download into pinned memory
/// is held back on a stream, which is then destroyed; new streams are made
/// until the driver hands out the destroyed one's handle (bounded tries). An
/// upload of the pinned memory on that new stream is another queue's work,
/// and must wait for the download.
#[test]
fn a_new_stream_given_a_destroyed_streams_handle_waits_for_its_copies() {
    require_gpu!();
    let (d, s1, _s2) = setup();
    let src = DeviceBuffer::from_host(&d, &vec![7u32; N], &s1).unwrap();
    let mut dst = DeviceBuffer::<u32>::zeroed(&d, N, &s1).unwrap();
    s1.sync().unwrap();
    let mut host = PinnedBuffer::<u32>::zeroed(&d, N).unwrap();
    let a = d.create_stream(StreamOptions::default()).unwrap();
    spin(&d, &a);
    src.view().copy_to_pinned(&mut host, &a).unwrap();
    let old = a.handle();
    drop(a);
    let mut tried = Vec::new();
    let b = loop {
        let b = d.create_stream(StreamOptions::default()).unwrap();
        if b.handle() == old {
            break Some(b);
        }
        tried.push(b);
        if tried.len() == 64 {
            break None;
        }
    };
    let Some(b) = b else {
        // Nothing to check on this driver: say so, loudly, in the log.
        println!("NOTE: the driver did not reuse the destroyed stream's handle in 64 creations");
        return;
    };
    dst.view_mut().copy_from_pinned(&host, &b).unwrap();
    let got = dst.to_vec(&b).unwrap();
    let stale = got.iter().filter(|&&x| x != 7).count();
    assert_eq!(
        stale, 0,
        "the upload on the stream with the reused handle overtook the download ({stale} elements)"
    );
    s1.sync().unwrap();
}
