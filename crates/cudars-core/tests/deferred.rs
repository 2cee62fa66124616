//! Issue 26, "safe means sound": frees that cannot run when a buffer drops (on a
//! driver callback thread, during a global-mode capture, or failing) are deferred
//! and come back; host callbacks neither abort nor unwind, whatever panics;
//! run-once host functions are never captured, whatever thread begins a capture.
//! Without a GPU each test prints `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it
//! fails. The queue's logic has unit tests without a GPU (`src/deferred.rs`).

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use cudars_core::cudars_bindings::driver::CUdeviceptr;
use cudars_core::{
    Buffer, CaptureMode, Context, Device, DeviceMemoryPoolOptions, DeviceMemoryResource, Error,
    Graph, GraphCompleteOptions, LegacyPinnedMemoryResource, MemoryKind, MemoryResource, Stream,
    StreamOptions, deferred_frees, drain_deferred_frees,
};
use cudars_tests::require_gpu;

/// The deferred queue is process-wide: these tests take turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn dev0() -> Device {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    d
}

fn stream(d: &Device) -> Stream {
    d.create_stream(StreamOptions::default()).unwrap()
}

/// Drains until nothing waits (the background thread drains too), or panics
/// after 10 s with what is left.
fn settle() {
    let t0 = Instant::now();
    while deferred_frees() > 0 {
        let r = drain_deferred_frees();
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "deferred frees never came back: {r}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A resource that frees through `inner`, refusing the first `fail` frees
/// (freeing nothing, as the trait's contract asks of a failed free), and counts
/// the frees that went through.
#[derive(Debug)]
struct Flaky {
    inner: Arc<dyn MemoryResource>,
    fail: AtomicUsize,
    frees: AtomicUsize,
    threads: std::sync::Mutex<Vec<std::thread::ThreadId>>,
}

impl Flaky {
    fn new(inner: Arc<dyn MemoryResource>, fail: usize) -> Arc<Self> {
        Arc::new(Self {
            inner,
            fail: AtomicUsize::new(fail),
            frees: AtomicUsize::new(0),
            threads: Default::default(),
        })
    }
}

// SAFETY: every allocation and free is the inner resource's, unchanged; a
// refused free frees nothing.
unsafe impl MemoryResource for Flaky {
    unsafe fn allocate_raw(
        &self,
        size: usize,
        stream: &Stream,
    ) -> cudars_core::Result<CUdeviceptr> {
        // SAFETY: our caller takes the memory over on the trait's terms and hands
        // it back through our `deallocate`.
        unsafe { self.inner.allocate_raw(size, stream) }
    }

    unsafe fn deallocate(
        &self,
        ptr: CUdeviceptr,
        size: usize,
        stream: &Stream,
    ) -> cudars_core::Result<()> {
        self.threads
            .lock()
            .unwrap()
            .push(std::thread::current().id());
        if self
            .fail
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err(Error::InvalidArgument {
                context: "freeing (a test resource)".into(),
                kind: cudars_core::InvalidKind::Other,
                message: "refused on purpose".into(),
            });
        }
        // SAFETY: as our caller's contract: from `inner.allocate_raw`, once.
        unsafe { self.inner.deallocate(ptr, size, stream) }?;
        self.frees.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn kind(&self) -> MemoryKind {
        self.inner.kind()
    }

    fn device(&self) -> Device {
        self.inner.device()
    }

    fn is_stream_ordered(&self) -> bool {
        self.inner.is_stream_ordered()
    }
}

#[test]
fn a_failing_free_is_retried_until_it_succeeds() {
    require_gpu!();
    let _s = serial();
    let d = dev0();
    let s = stream(&d);
    settle();
    let pool =
        Arc::new(DeviceMemoryResource::new_pool(&d, DeviceMemoryPoolOptions::default()).unwrap());
    let flaky = Flaky::new(pool.clone(), 3);
    let buf = Buffer::allocate(flaky.clone(), 1 << 20, &s).unwrap();
    assert_eq!(pool.attributes().unwrap().used_mem_current, 1 << 20);
    // `close` reports the error; the free is queued, not lost.
    let e = buf.close(None).unwrap_err();
    assert!(e.to_string().contains("freeing"), "{e}");
    assert!(deferred_frees() <= 1);
    settle();
    s.sync().unwrap();
    assert_eq!(flaky.frees.load(Ordering::SeqCst), 1, "freed exactly once");
    assert_eq!(
        flaky.fail.load(Ordering::SeqCst),
        0,
        "every refusal was retried"
    );
    assert_eq!(pool.attributes().unwrap().used_mem_current, 0);
}

/// Hole 5(b): a host function drops the last `Arc<Buffer>` of 64 MiB of a pool;
/// the free is not made on the driver's thread (where CUDA refuses it) but
/// deferred, and the memory comes back.
#[test]
fn a_buffer_dropped_in_a_host_function_comes_back() {
    require_gpu!();
    let _s = serial();
    let d = dev0();
    let s = stream(&d);
    settle();
    let pool =
        Arc::new(DeviceMemoryResource::new_pool(&d, DeviceMemoryPoolOptions::default()).unwrap());
    let flaky = Flaky::new(pool.clone(), 0);
    let buf = Arc::new(Buffer::allocate(flaky.clone(), 64 << 20, &s).unwrap());
    assert_eq!(pool.attributes().unwrap().used_mem_current, 64 << 20);
    let callback_thread = Arc::new(std::sync::Mutex::new(None));
    let (b, t) = (buf.clone(), callback_thread.clone());
    drop(buf);
    s.launch_host_func(move || {
        *t.lock().unwrap() = Some(std::thread::current().id());
        drop(b); // the last owner
    })
    .unwrap();
    s.sync().unwrap();
    settle();
    s.sync().unwrap();
    let callback_thread = callback_thread.lock().unwrap().expect("the callback ran");
    let threads = flaky.threads.lock().unwrap().clone();
    assert!(
        !threads.contains(&callback_thread),
        "deallocate was called on the driver's callback thread"
    );
    assert_eq!(flaky.frees.load(Ordering::SeqCst), 1);
    assert_eq!(pool.attributes().unwrap().used_mem_current, 0);
}

/// The same through a graph host node, with a stream and an event dropped there
/// too: their destroys are deferred as well.
#[test]
fn objects_dropped_in_a_graph_host_node_are_released_later() {
    require_gpu!();
    let _s = serial();
    let d = dev0();
    let s = stream(&d);
    settle();
    let pool =
        Arc::new(DeviceMemoryResource::new_pool(&d, DeviceMemoryPoolOptions::default()).unwrap());
    let buf = Buffer::allocate(pool.clone(), 8 << 20, &s).unwrap();
    let held = Arc::new(std::sync::Mutex::new(Some((
        buf,
        stream(&d),
        cudars_core::Event::new(&d, Default::default()).unwrap(),
    ))));
    let h = held.clone();
    let mut g = Graph::new(&Context::primary(&d).unwrap()).unwrap();
    g.add_host_callback(&[], move || drop(h.lock().unwrap().take()))
        .unwrap();
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    exec.launch(&s).unwrap();
    s.sync().unwrap();
    settle();
    s.sync().unwrap();
    assert!(held.lock().unwrap().is_none());
    assert_eq!(pool.attributes().unwrap().used_mem_current, 0);
    assert_eq!(g.take_callback_panic(), None);
}

/// Hole 5(a): pinned memory dropped while a graph builder captures in global
/// mode; its free is refused there, deferred, and done once it can be.
#[test]
fn pinned_memory_dropped_during_a_global_capture_comes_back() {
    require_gpu!();
    let _s = serial();
    let d = dev0();
    settle();
    let flaky = Flaky::new(Arc::new(LegacyPinnedMemoryResource::new(&d)), 0);
    let buf = Buffer::allocate(flaky.clone(), 1 << 20, None).unwrap();
    let mut builder = d.create_graph_builder().unwrap();
    builder.begin_building(CaptureMode::Global).unwrap();
    drop(buf);
    // The capture may have been invalidated by the refused free: either way it
    // ends, and nothing is left behind.
    let _ = builder.end_building();
    drop(builder);
    settle();
    d.sync().unwrap();
    assert_eq!(flaky.frees.load(Ordering::SeqCst), 1, "freed exactly once");
    assert_eq!(deferred_frees(), 0);
}

/// A panic payload whose own `Drop` panics.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("the payload's drop panics too");
    }
}

/// Hole 6: a graph host node throws a payload whose `Drop` panics. The process
/// survives (run in a child process: the failure was an abort) and the panic is
/// reported.
#[test]
fn a_graph_host_node_survives_a_payload_whose_drop_panics() {
    require_gpu!();
    if !cudars_tests::in_child() {
        cudars_tests::run_test_in_child(
            "a_graph_host_node_survives_a_payload_whose_drop_panics",
            &[],
        );
        return;
    }
    let d = dev0();
    let s = stream(&d);
    let mut g = Graph::new(&Context::primary(&d).unwrap()).unwrap();
    g.add_host_callback(&[], || std::panic::panic_any(Bomb))
        .unwrap();
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    for _ in 0..2 {
        exec.launch(&s).unwrap();
    }
    s.sync().unwrap();
    let p = exec.take_callback_panic().expect("the panic is reported");
    assert_eq!(p.count, 2);
    // The stream form survives the same payload (and reports it at `sync`).
    s.launch_host_func(|| std::panic::panic_any(Bomb)).unwrap();
    assert!(matches!(s.sync(), Err(Error::HostCallbackPanicked { .. })));
    // And the builder's callback.
    let mut b = d.create_graph_builder().unwrap();
    b.begin_building(CaptureMode::default()).unwrap();
    b.callback(|| std::panic::panic_any(Bomb)).unwrap();
    b.end_building().unwrap();
    let e = b.complete(GraphCompleteOptions::default()).unwrap();
    e.launch(&s).unwrap();
    s.sync().unwrap();
    assert_eq!(e.take_callback_panic().map(|p| p.count), Some(1));
}

/// Hole 12b: one thread keeps beginning and ending global-mode captures of a
/// stream while another queues run-once host functions on it. Each is either
/// refused (the stream was capturing) or queued outside every capture: it runs
/// exactly once, and no graph holds a host node.
#[test]
fn run_once_host_functions_are_never_captured_whatever_the_interleaving() {
    require_gpu!();
    // Its global-mode captures are process-wide: a test beside it that
    // allocates or synchronises (pinned memory, a sync) invalidates them.
    let _s = serial();
    let d = dev0();
    let s = stream(&d);
    let runs = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(2));
    const ROUNDS: usize = 300;
    let capturer = {
        let (s, start) = (s.clone(), start.clone());
        std::thread::spawn(move || {
            d.set_current().unwrap();
            start.wait();
            let mut nodes = 0;
            for _ in 0..ROUNDS {
                // SAFETY: nothing this thread captures uses memory; no stream is
                // joined to the capture.
                unsafe { s.begin_capture(CaptureMode::Global) }.unwrap();
                std::thread::yield_now();
                let g = s.end_capture().unwrap();
                nodes += g.node_count().unwrap();
            }
            nodes
        })
    };
    start.wait();
    let mut queued = 0;
    for _ in 0..ROUNDS * 4 {
        let r = runs.clone();
        match s.launch_host_func(move || {
            r.fetch_add(1, Ordering::SeqCst);
        }) {
            Ok(()) => queued += 1,
            Err(Error::Unsupported { .. }) => {}
            Err(e) => panic!("{}", cudars_core::Report::new(&e)),
        }
    }
    let nodes = capturer.join().unwrap();
    s.sync().unwrap();
    assert_eq!(nodes, 0, "a run-once host function was captured");
    assert_eq!(runs.load(Ordering::SeqCst), queued);
    assert!(queued > 0);
}

/// Under the driver shim: the driver refuses a pool free (`cuMemFreeAsync`
/// fails once); the free is queued and retried, and the shim's live memory
/// count comes back to where it was.
#[test]
fn a_free_the_driver_refuses_is_retried_under_the_shim() {
    require_gpu!();
    let Some(shim) =
        cudars_tests::require_shim("a_free_the_driver_refuses_is_retried_under_the_shim")
    else {
        return;
    };
    let _s = serial();
    let d = dev0();
    let s = stream(&d);
    settle();
    s.sync().unwrap();
    let before = shim.counts("live");
    let buf = d.allocate(1 << 20, &s).unwrap();
    shim.set_faults("cuMemFreeAsync:1:CUDA_ERROR_UNKNOWN");
    let e = buf.close(None).unwrap_err();
    assert!(
        cudars_core::Report::new(&e)
            .to_string()
            .contains("CUDA_ERROR_UNKNOWN"),
        "{}",
        cudars_core::Report::new(&e)
    );
    assert_eq!(shim.counts("injected").get("cuMemFreeAsync"), Some(&1));
    settle();
    shim.set_faults("");
    s.sync().unwrap();
    assert_eq!(
        shim.counts("live"),
        before,
        "the refused free was never retried"
    );
}
