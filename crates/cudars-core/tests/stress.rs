//! Load: many threads, each with several streams, share one device, one kernel
//! and one memory pool (and keep pools of their own) for a while, mixing
//! allocations, copies, fills, typed launches, events, captures and graph
//! launches, and check every result; afterwards the device's used memory is
//! back where it started. Out of memory: each pool kind is filled until the
//! driver refuses, the refusal is a typed out-of-memory error, and after
//! releasing everything the same allocations succeed again.
//!
//! `CUDA_RS_STRESS_SECS` (default 3) and `CUDA_RS_STRESS_THREADS` (default 8)
//! size the load test; the GPU package runs it briefly, and longer on its own
//! (and under compute-sanitizer) when asked. Without a GPU each test prints
//! `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use cudars_core::{
    CaptureMode, CompileTarget, Device, DeviceBuffer, DeviceMemoryPoolOptions,
    DeviceMemoryResource, Event, EventOptions, GraphCompleteOptions, LaunchConfig, MemoryResource,
    MutPtr, Program, ProgramOptions, SourceCode, Stream, StreamOptions, TypedKernel,
};
use cudars_tests::require_gpu;

/// `y[i] = a * y[i] + b` for `i < n`.
const SRC: &str = r#"
extern "C" __global__ void step(float a, float b, float *y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * y[i] + b;
}
"#;

type Step = TypedKernel<(f32, f32, MutPtr<f32>, u32)>;

/// The two tests would disturb each other (one fills the device): one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn env(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn used(dev: &Device) -> usize {
    let (free, total) = dev.memory_info().unwrap();
    total - free
}

/// One worker's loop: every operation's result is checked on the host.
fn worker(
    id: u64,
    dev: Device,
    step: &Step,
    shared: &Arc<dyn MemoryResource>,
    deadline: Instant,
    ops: &AtomicU64,
) {
    dev.set_current().unwrap();
    let streams: Vec<Stream> = (0..4)
        .map(|_| dev.create_stream(StreamOptions::default()).unwrap())
        .collect();
    let own: Arc<dyn MemoryResource> =
        Arc::new(DeviceMemoryResource::new_pool(&dev, DeviceMemoryPoolOptions::default()).unwrap());
    let event = Event::new(&dev, EventOptions::default()).unwrap();
    let mut i: u64 = 0;
    while Instant::now() < deadline {
        let s = &streams[(i % 4) as usize];
        let other = &streams[((i + 1) % 4) as usize];
        let n = 1 + ((id * 7919 + i * 104_729) % 300_000) as usize;
        let x: Vec<f32> = (0..n)
            .map(|k| ((k as u64 + id + i) % 1000) as f32)
            .collect();
        let cfg = LaunchConfig::for_elements(n as u64, 256);
        match i % 6 {
            // Shared pool or own pool: upload, two launches, download.
            0 | 1 => {
                let mr = if i % 6 == 0 { shared } else { &own };
                let mut y = DeviceBuffer::<f32>::allocate_from(Arc::clone(mr), n, s).unwrap();
                y.copy_from_host(&x, s).unwrap();
                for _ in 0..2 {
                    // SAFETY: `step` touches y[0..n], which `y` holds.
                    unsafe { step.launch(s, &cfg, (1.0, 1.0, y.view_mut(), n as u32)) }.unwrap();
                }
                let got = y.to_vec(s).unwrap();
                assert!(
                    got.iter().zip(&x).all(|(g, w)| *g == w + 2.0),
                    "thread {id} op {i}"
                );
            }
            // Across streams: fill on one, copy on another after an event.
            2 => {
                let mut a = DeviceBuffer::<f32>::allocate(&dev, n, s).unwrap();
                a.fill(id as f32, s).unwrap();
                event.record(s).unwrap();
                other.wait_event(&event).unwrap();
                let mut b = DeviceBuffer::<f32>::allocate(&dev, n, other).unwrap();
                b.copy_from(a.view(), other).unwrap();
                drop(a);
                assert!(b.to_vec(other).unwrap().iter().all(|v| *v == id as f32));
            }
            // A capture of three launches, instantiated and launched twice.
            3 => {
                let mut y = DeviceBuffer::from_host(&dev, &x, s).unwrap();
                // SAFETY: the captured launches use `y`, which outlives the graph's
                // launches (waited for below).
                unsafe { s.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
                for _ in 0..3 {
                    // SAFETY: as above.
                    let r = unsafe { step.launch(s, &cfg, (2.0, 0.0, y.view_mut(), n as u32)) };
                    if let Err(e) = r {
                        let _ = s.end_capture();
                        panic!("{}", e.report());
                    }
                }
                let graph = s.end_capture().unwrap();
                let exec = graph.instantiate(GraphCompleteOptions::default()).unwrap();
                exec.launch(s).unwrap();
                exec.launch(s).unwrap();
                let got = y.to_vec(s).unwrap();
                assert!(
                    got.iter().zip(&x).all(|(g, w)| *g == w * 64.0),
                    "thread {id} op {i}"
                );
            }
            // Many small allocations in flight at once, freed in stream order.
            4 => {
                let bufs: Vec<_> = (0..16)
                    .map(|k| {
                        let mut b =
                            DeviceBuffer::<u32>::allocate(&dev, 1 + k * 1000, &streams[k % 4])
                                .unwrap();
                        b.fill(k as u32, &streams[k % 4]).unwrap();
                        b
                    })
                    .collect();
                for (k, b) in bufs.iter().enumerate() {
                    let v = b.to_vec(&streams[k % 4]).unwrap();
                    assert!(v.iter().all(|e| *e == k as u32));
                }
            }
            // Events: timing across a launch, completion queries.
            _ => {
                let timed = EventOptions {
                    timing: true,
                    ..EventOptions::default()
                };
                let (e0, e1) = (
                    Event::new(&dev, timed).unwrap(),
                    Event::new(&dev, timed).unwrap(),
                );
                let mut y = DeviceBuffer::<f32>::zeroed(&dev, n, s).unwrap();
                e0.record(s).unwrap();
                // SAFETY: as in the first case.
                unsafe { step.launch(s, &cfg, (0.0, 3.0, y.view_mut(), n as u32)) }.unwrap();
                e1.record(s).unwrap();
                e1.sync().unwrap();
                assert!(e1.is_done().unwrap());
                assert!(e1.elapsed_since(&e0).unwrap() < Duration::from_secs(5));
                assert!(y.to_vec(s).unwrap().iter().all(|v| *v == 3.0));
            }
        }
        i += 1;
        ops.fetch_add(1, Ordering::Relaxed);
    }
    for s in &streams {
        s.sync().unwrap();
    }
}

#[test]
fn threads_streams_pools_and_graphs_under_load() {
    require_gpu!();
    let _one = one_at_a_time();
    let secs = env("CUDA_RS_STRESS_SECS", 3);
    let threads = env("CUDA_RS_STRESS_THREADS", 8);
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let code = Program::new(
        SourceCode::Cxx(SRC),
        ProgramOptions::for_device(&dev).unwrap(),
    )
    .unwrap()
    .compile(CompileTarget::Cubin, &[])
    .unwrap();
    let step = Step::new(code.get_kernel("step").unwrap()).unwrap();
    // The driver keeps some memory for as many streams as were ever live at once
    // (in 2 MiB steps, in C too): a short warm-up with the same threads and
    // streams reaches that level, then the measured run must not grow it.
    run_load(dev, &step, threads, Duration::from_secs(1));
    dev.sync().unwrap();
    let before = used(&dev);
    let (ops, took) = run_load(dev, &step, threads, Duration::from_secs(secs));
    println!(
        "stress: {threads} threads × 4 streams, {:.1} s, {ops} operations checked",
        took.as_secs_f64()
    );
    assert!(ops >= threads);
    dev.sync().unwrap();
    let after = used(&dev);
    println!("stress: device memory used {before} bytes before, {after} after");
    // Every pool, buffer, graph and stream of the run is gone: no growth beyond
    // the driver's 2 MiB granularity.
    assert!(
        after <= before + (2 << 20),
        "{} KiB more in use than before",
        (after - before) >> 10
    );
}

/// `threads` workers on a shared pool until `length` has passed; the number of
/// operations checked and the time taken.
fn run_load(dev: Device, step: &Step, threads: u64, length: Duration) -> (u64, Duration) {
    let shared: Arc<dyn MemoryResource> =
        Arc::new(DeviceMemoryResource::new_pool(&dev, DeviceMemoryPoolOptions::default()).unwrap());
    let ops = AtomicU64::new(0);
    let t = Instant::now();
    let deadline = t + length;
    std::thread::scope(|scope| {
        for id in 0..threads {
            let (shared, ops) = (&shared, &ops);
            scope.spawn(move || worker(id, dev, step, shared, deadline, ops));
        }
    });
    (ops.load(Ordering::Relaxed), t.elapsed())
}

/// Allocates `chunk` bytes at a time from `mr` until the driver refuses;
/// returns how many it got.
fn fill(mr: &Arc<dyn MemoryResource>, chunk: usize, s: &Stream) -> Vec<DeviceBuffer<u8>> {
    let mut held = Vec::new();
    loop {
        match DeviceBuffer::<u8>::allocate_from(Arc::clone(mr), chunk, s) {
            Ok(b) => held.push(b),
            Err(e) => {
                assert!(e.is_out_of_memory(), "{}", e.report());
                assert!(e.report().to_string().contains("CUDA_ERROR_OUT_OF_MEMORY"));
                // Stream-ordered pools report it at allocation; be sure nothing is pending.
                s.sync().unwrap();
                return held;
            }
        }
        assert!(
            held.len() < 4096,
            "no out-of-memory error after {} GiB",
            held.len()
        );
    }
}

#[test]
fn out_of_memory_is_typed_and_fully_recovered_from_each_pool_kind() {
    require_gpu!();
    let _one = one_at_a_time();
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = dev.create_stream(StreamOptions::default()).unwrap();
    let chunk = 1 << 30;
    let total = dev.total_memory().unwrap();
    let capped = DeviceMemoryPoolOptions {
        max_size: 4 << 30,
        ..DeviceMemoryPoolOptions::default()
    };
    let kinds: Vec<(&str, Arc<dyn MemoryResource>)> = vec![
        ("the default pool", dev.memory_resource().unwrap()),
        (
            "a new pool",
            Arc::new(
                DeviceMemoryResource::new_pool(&dev, DeviceMemoryPoolOptions::default()).unwrap(),
            ),
        ),
        (
            "a pool capped at 4 GiB",
            Arc::new(DeviceMemoryResource::new_pool(&dev, capped).unwrap()),
        ),
    ];
    for (what, mr) in kinds {
        let held = fill(&mr, chunk, &s);
        let got = held.len();
        if what.contains("capped") {
            // 4 GiB of pool, less what the pool keeps for itself.
            assert!((3..=4).contains(&got), "{what}: {got} GiB");
        } else {
            // Most of the device: all but what the driver and context keep.
            assert!(
                got as u64 * chunk as u64 >= total as u64 / 2,
                "{what}: only {got} GiB"
            );
        }
        drop(held);
        s.sync().unwrap();
        // Full recovery: the same allocations succeed again, then are released.
        let again = fill(&mr, chunk, &s);
        assert!(
            again.len() >= got,
            "{what}: {got} GiB at first, {} after release",
            again.len()
        );
        drop(again);
        s.sync().unwrap();
        println!("oom: {what}: {got} × 1 GiB, out of memory, released, {got} again");
    }
    // After all that, ordinary allocations work.
    let b = DeviceBuffer::<f32>::zeroed(&dev, 1 << 20, &s).unwrap();
    assert!(b.to_vec(&s).unwrap().iter().all(|v| *v == 0.0));
}
