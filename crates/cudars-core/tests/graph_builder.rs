//! GPU tests of [`GraphBuilder`]: kernels, fills, copies, host callbacks and
//! graph allocations captured into a builder and replayed, split and joined
//! builders, conditional bodies built by capture (a while loop counting to N,
//! if/else), child graphs, and bad use. Without a GPU each test prints
//! `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails.
// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use cudars_core::{
    CaptureArg, CaptureMode, CompileTarget, ConditionalKind, Device, DeviceBuffer, Error, Event,
    EventOptions, GraphBuilder, GraphCompleteOptions, GraphMemoryResource, GraphNodeParams,
    GraphView, InvalidKind, Kernel, LaunchConfig, MutPtr, ObjectCode, Program, ProgramOptions,
    SourceCode, Stream, StreamOptions, TypedKernel,
};
use cudars_tests::{needs_driver, require_gpu, require_libs};

const SRC: &str = r#"
typedef unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned int value);
extern "C" __global__ void add_to(int *x, int v) { x[threadIdx.x] += v; }
extern "C" __global__ void iota_plus(int *x, int v) { x[threadIdx.x] = v + (int)threadIdx.x; }
extern "C" __global__ void count_to(int *counter, int n, cudaGraphConditionalHandle h) {
    if (threadIdx.x == 0) {
        int now = ++*counter;
        cudaGraphSetConditional(h, now < n ? 1u : 0u);
    }
}
"#;
/// Tests of this binary run in parallel, except the one that captures in
/// global mode: while it captures, another thread's synchronising call (a
/// stream sync, an allocation) is refused and invalidates its capture.
static SERIAL: RwLock<()> = RwLock::new(());

fn alone() -> RwLockWriteGuard<'static, ()> {
    SERIAL.write().unwrap_or_else(PoisonError::into_inner)
}

fn beside_others() -> RwLockReadGuard<'static, ()> {
    SERIAL.read().unwrap_or_else(PoisonError::into_inner)
}

/// Device 0, a stream on it, and the test kernels as a whole-program cubin (the
/// driver resolves `cudaGraphSetConditional` when it loads the code).
fn setup() -> (Device, Stream, ObjectCode) {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let options = ProgramOptions {
        arch: Some(d.arch().unwrap()),
        ..Default::default()
    };
    let code = Program::new(SourceCode::Cxx(SRC), options)
        .unwrap()
        .compile(CompileTarget::Cubin, &[])
        .unwrap();
    (d, s, code)
}

/// The test kernels compile for an H100 (`sm_90`) without a GPU: NVRTC runs on
/// the CPU, so a mistake in `SRC` shows before the GPU run.
#[test]
fn the_test_kernels_compile_without_a_gpu() {
    require_libs!("nvrtc");
    let options = ProgramOptions {
        arch: Some("sm_90".into()),
        ..Default::default()
    };
    let code = Program::new(SourceCode::Cxx(SRC), options)
        .unwrap()
        .compile(CompileTarget::Cubin, &[])
        .unwrap();
    assert!(!code.code().is_empty());
}

fn kernel(code: &ObjectCode, name: &str) -> Kernel {
    code.get_kernel(name).unwrap()
}

/// Launches `kernel` on one block of `threads` threads into `b`.
fn launch_into(b: &GraphBuilder, kernel: &Kernel, threads: u32, args: &[&dyn CaptureArg]) {
    // SAFETY: each test kernel touches, per thread, one element of the views it
    // is given (thread 0 only, for `count_to`), and every test passes views of
    // at least `threads` elements.
    unsafe { b.launch(&LaunchConfig::new(1, threads), kernel, args) }.unwrap();
}

fn zeros(d: &Device, s: &Stream, n: usize) -> Arc<DeviceBuffer<i32>> {
    let b = Arc::new(DeviceBuffer::<i32>::zeroed(d, n, s).unwrap());
    s.sync().unwrap();
    b
}

/// Issue 28, point 6 (`cuda_graphs.py`): a graph's operands are refilled,
/// copied into and read between launches, ordered on the launch stream, while
/// the executable graph (and its `Arc`s of them) stays alive; from another
/// thread too, ordered by an event.
#[test]
fn a_graphs_operands_are_used_between_launches_without_dropping_it() {
    require_gpu!();
    let _serial = beside_others();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let add_to = kernel(&code, "add_to");
    let x = zeros(&d, &s, 32);
    let y = zeros(&d, &s, 32);
    let mut b = d.create_graph_builder().unwrap();
    b.begin_building(CaptureMode::default()).unwrap();
    launch_into(&b, &add_to, 32, &[&x.shared_view(), &3i32]);
    b.copy(&y, &x).unwrap();
    b.end_building().unwrap();
    let exec = b.complete(GraphCompleteOptions::default()).unwrap();
    exec.launch(&s).unwrap();
    assert_eq!(y.to_vec(&s).unwrap(), vec![3; 32]);
    // Refill between launches, on the launch stream: a fill, a host upload
    // and a device copy, each through the shared handle.
    x.shared_view().fill(10, &s).unwrap();
    exec.launch(&s).unwrap();
    assert_eq!(y.to_vec(&s).unwrap(), vec![13; 32]);
    let ramp: Vec<i32> = (0..32).collect();
    x.shared_view().copy_from_host(&ramp, &s).unwrap();
    exec.launch(&s).unwrap();
    assert_eq!(y.to_vec(&s).unwrap(), (3..35).collect::<Vec<_>>());
    x.shared_slice(..16)
        .unwrap()
        .copy_from(y.shared_slice(16..).unwrap().view(), &s)
        .unwrap();
    exec.launch(&s).unwrap();
    let got = y.to_vec(&s).unwrap();
    assert_eq!(got[0], 19 + 3, "{got:?}");
    // From another thread: the refill waits for the launch through an event,
    // and the next launch waits for the refill.
    let launched = Arc::new(Event::new(&d, EventOptions::default()).unwrap());
    let refilled = Arc::new(Event::new(&d, EventOptions::default()).unwrap());
    exec.launch(&s).unwrap();
    launched.record(&s).unwrap();
    std::thread::scope(|t| {
        t.spawn(|| {
            let other = d.create_stream(StreamOptions::default()).unwrap();
            other.wait_event(&launched).unwrap();
            x.shared_view().fill(-3, &other).unwrap();
            refilled.record(&other).unwrap();
            other.sync().unwrap();
        });
    });
    s.wait_event(&refilled).unwrap();
    exec.launch(&s).unwrap();
    assert_eq!(y.to_vec(&s).unwrap(), vec![0; 32]);
    // Bad use is refused as for exclusive views.
    assert!(matches!(
        x.shared_view().copy_from_host(&ramp[..3], &s),
        Err(Error::InvalidArgument { .. })
    ));
    drop(exec);
}

#[test]
fn kernels_fills_copies_and_callbacks_captured_by_a_builder_replay() {
    require_gpu!();
    let _serial = beside_others();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let add_to = kernel(&code, "add_to");
    let x = zeros(&d, &s, 32);
    let y = zeros(&d, &s, 32);
    // Used only inside the graph: the builder keeps it alive after our `Arc` goes.
    let tmp = zeros(&d, &s, 16);
    let runs = Arc::new(AtomicUsize::new(0));
    // Event nodes: the graph waits for `gate` (recorded outside it) and records
    // `done` for work outside it.
    let gate = Arc::new(Event::new(&d, EventOptions::default()).unwrap());
    let done = Arc::new(Event::new(&d, EventOptions::default()).unwrap());
    let mut b = d.create_graph_builder().unwrap();
    assert!(!b.is_building().unwrap());
    b.begin_building(CaptureMode::default()).unwrap();
    assert!(b.is_building().unwrap());
    b.wait_event(&gate).unwrap();
    b.fill(&x, 5i32).unwrap();
    launch_into(&b, &add_to, 32, &[&x.shared_view(), &3i32]);
    b.copy(y.shared_slice(..16).unwrap(), x.shared_slice(16..).unwrap())
        .unwrap();
    b.fill(&tmp, -4i32).unwrap();
    b.copy(y.shared_slice(16..).unwrap(), &tmp).unwrap();
    let r = runs.clone();
    b.callback(move || {
        r.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    b.record_event(&done).unwrap();
    b.end_building().unwrap();
    assert!(!b.is_building().unwrap());
    assert_eq!(b.graph().unwrap().node_count().unwrap(), 8);
    let dot = std::env::temp_dir().join(format!("graph-builder-{}.dot", std::process::id()));
    b.debug_dot_print(&dot).unwrap();
    assert!(std::fs::metadata(&dot).unwrap().len() > 0);
    let _ = std::fs::remove_file(&dot);
    let exec = b.complete(GraphCompleteOptions::default()).unwrap();
    drop(b);
    let tmp_weak = Arc::downgrade(&tmp);
    drop(tmp);
    assert!(tmp_weak.upgrade().is_some(), "the graph keeps `tmp` alive");
    for _ in 0..2 {
        gate.record(&s).unwrap();
        exec.launch(&s).unwrap();
    }
    // Another stream waits for the graph through `done`.
    let after = d.create_stream(StreamOptions::default()).unwrap();
    after.wait_event(&done).unwrap();
    after.sync().unwrap();
    done.sync().unwrap();
    assert!(done.is_done().unwrap());
    s.sync().unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(x.to_vec(&s).unwrap(), vec![8; 32]);
    let want: Vec<i32> = [[8; 16], [-4; 16]].concat();
    assert_eq!(y.to_vec(&s).unwrap(), want);
    drop(exec);
    assert!(
        tmp_weak.upgrade().is_none(),
        "freed with the last instantiation"
    );
}

#[test]
fn allocations_in_a_builder_are_graph_memory_freed_as_the_graph_ends() {
    require_gpu!();
    let _serial = beside_others();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let iota_plus = kernel(&code, "iota_plus");
    let (out, out2) = (zeros(&d, &s, 32), zeros(&d, &s, 32));
    let pool = d.default_memory_resource().unwrap();
    let mut b = d.create_graph_builder().unwrap();
    b.begin_building(CaptureMode::ThreadLocal).unwrap();
    let tmp: GraphView<i32> = b.allocate(32).unwrap();
    assert!(tmp.is_graph_memory() && tmp.len() == 32);
    // Typed: `iota_plus(int* x, int v)` takes the graph memory as its `MutPtr`.
    let typed = TypedKernel::<(MutPtr<i32>, i32)>::new(iota_plus.clone()).unwrap();
    // SAFETY: 32 threads write the 32 ints of `tmp`.
    unsafe { b.launch_typed(&LaunchConfig::new(1, 32), &typed, (tmp.clone(), 7)) }.unwrap();
    b.copy(&out, &tmp).unwrap();
    // From a named pool: the node takes its properties.
    let pooled = b.allocate_from::<i32>(&pool, 32).unwrap();
    launch_into(&b, &iota_plus, 32, &[&pooled, &100i32]);
    b.copy(&out2, &pooled).unwrap();
    assert_eq!(
        b.allocate::<i32>(0).unwrap_err().invalid_kind(),
        Some(InvalidKind::ZeroSize)
    );
    assert_eq!(
        b.allocate::<u64>(usize::MAX / 4)
            .unwrap_err()
            .invalid_kind(),
        Some(InvalidKind::OutOfRange)
    );
    // Graph memory exists only inside its graph: another graph refuses it.
    let mut other = d.create_graph_builder().unwrap();
    other.begin_building(CaptureMode::ThreadLocal).unwrap();
    assert_eq!(
        other
            .fill(tmp.slice(..4).unwrap(), 1i32)
            .unwrap_err()
            .invalid_kind(),
        Some(InvalidKind::Other)
    );
    assert_eq!(
        other.copy(&out, &tmp).unwrap_err().invalid_kind(),
        Some(InvalidKind::Other)
    );
    // SAFETY: refused before anything is captured.
    let r = unsafe { other.launch(&LaunchConfig::new(1, 32), &iota_plus, &[&tmp, &0i32]) };
    assert_eq!(r.unwrap_err().invalid_kind(), Some(InvalidKind::Other));
    other.end_building().unwrap();
    b.end_building().unwrap();
    let graph = b.into_graph().unwrap();
    assert_eq!(
        graph.node_count().unwrap(),
        8,
        "two of: alloc, kernel, copy, free"
    );
    let exec = graph.instantiate(GraphCompleteOptions::default()).unwrap();
    // Freed inside the graph: it launches again and again.
    for _ in 0..3 {
        exec.launch(&s).unwrap();
    }
    let want: Vec<i32> = (0..32).map(|i| 7 + i).collect();
    assert_eq!(out.to_vec(&s).unwrap(), want);
    let want: Vec<i32> = (0..32).map(|i| 100 + i).collect();
    assert_eq!(out2.to_vec(&s).unwrap(), want);
}

#[test]
fn a_while_loop_built_by_capture_counts_to_n() {
    require_gpu!();
    let _serial = beside_others();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let count_to = kernel(&code, "count_to");
    let add_to = kernel(&code, "add_to");
    let counter = zeros(&d, &s, 1);
    let after = zeros(&d, &s, 1);
    let n = 10i32;
    let mut b = s.create_graph_builder().unwrap();
    b.begin_building(CaptureMode::ThreadLocal).unwrap();
    b.fill(&counter, 0i32).unwrap();
    let Some(cond) = needs_driver!(12030, b.create_conditional_handle(Some(1))) else {
        return;
    };
    let mut body = b.while_loop(cond).unwrap();
    // Not begun: ending the top builder is still fine, the body is empty.
    body.begin_building(CaptureMode::ThreadLocal).unwrap();
    // A body of a building graph keeps the top builder from ending.
    assert_eq!(
        b.end_building().unwrap_err().invalid_kind(),
        Some(InvalidKind::Other)
    );
    launch_into(&body, &count_to, 1, &[&counter.shared_view(), &n, &cond]);
    // Allocation nodes are not allowed in conditional bodies.
    assert!(matches!(
        body.allocate::<i32>(4),
        Err(Error::Unsupported { .. })
    ));
    body.end_building().unwrap();
    assert_eq!(
        body.end_building().unwrap_err().invalid_kind(),
        Some(InvalidKind::Other)
    );
    // After the loop: runs once, after the last iteration.
    launch_into(&b, &add_to, 1, &[&after.shared_view(), &1i32]);
    b.end_building().unwrap();
    // A body of a built graph cannot begin again.
    assert_eq!(
        body.begin_building(CaptureMode::default())
            .map(|_| ())
            .unwrap_err()
            .invalid_kind(),
        Some(InvalidKind::Other)
    );
    // The built graph reads its conditional node back: fill, while, kernel.
    let graph = b.graph().unwrap();
    let nodes = graph.nodes().unwrap();
    assert_eq!(nodes.len(), 3);
    let infos: Vec<_> = nodes
        .iter()
        .filter_map(|n| match n.params(graph).unwrap() {
            GraphNodeParams::Conditional(info) => Some(info),
            _ => None,
        })
        .collect();
    assert_eq!(infos.len(), 1);
    let info = infos[0].expect("the builder records its conditional nodes");
    assert_eq!((info.condition, info.kind), (cond, ConditionalKind::While));
    // Its body reads back too (WhileNode.body): the one kernel captured in it.
    let conditional = nodes
        .iter()
        .find(|n| matches!(n.params(graph).unwrap(), GraphNodeParams::Conditional(_)))
        .unwrap();
    let bodies = conditional.bodies(graph).unwrap();
    assert_eq!(bodies.len(), 1);
    assert_eq!(bodies[0].node_count().unwrap(), 1);
    // A node that is not conditional has no bodies.
    let other = nodes.iter().find(|n| *n != conditional).unwrap();
    assert_eq!(
        other.bodies(graph).unwrap_err().invalid_kind(),
        Some(InvalidKind::Other)
    );
    let exec = b.complete(GraphCompleteOptions::default()).unwrap();
    for launch in 1..=2 {
        exec.launch(&s).unwrap();
        s.sync().unwrap();
        assert_eq!(counter.to_vec(&s).unwrap(), vec![n], "launch {launch}");
        assert_eq!(after.to_vec(&s).unwrap(), vec![launch], "launch {launch}");
    }
}

#[test]
fn split_builders_join_and_if_else_picks_a_branch() {
    require_gpu!();
    let _serial = beside_others();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let (iota_plus, add_to) = (kernel(&code, "iota_plus"), kernel(&code, "add_to"));
    let x = zeros(&d, &s, 64);
    let mut b = d.create_graph_builder().unwrap();
    b.begin_building(CaptureMode::default()).unwrap();
    assert_eq!(
        b.split(1).unwrap_err().invalid_kind(),
        Some(InvalidKind::Other)
    );
    let mut parts = b.split(3).unwrap();
    assert_eq!(parts.len(), 2);
    assert!(parts.iter().all(GraphBuilder::is_join_required));
    // Split builders are joined, not ended; the top one waits for them.
    assert_eq!(
        parts[0].end_building().unwrap_err().invalid_kind(),
        Some(InvalidKind::Other)
    );
    assert_eq!(
        b.end_building().unwrap_err().invalid_kind(),
        Some(InvalidKind::Other)
    );
    for (i, p) in parts.iter().enumerate() {
        let half = x.shared_slice(32 * i..32 * (i + 1)).unwrap();
        launch_into(p, &iota_plus, 32, &[&half, &(100 * i as i32)]);
    }
    // A builder of another graph does not join this one.
    let mut other = d.create_graph_builder().unwrap();
    other.begin_building(CaptureMode::default()).unwrap();
    let stranger = other.split(2).unwrap();
    assert_eq!(
        b.join(stranger).unwrap_err().invalid_kind(),
        Some(InvalidKind::Other)
    );
    other.end_building().unwrap();
    b.join(std::mem::take(&mut parts)).unwrap();
    // If/else on a condition that defaults to 0: the else branch runs.
    let bump = if cudars_tests::driver_version() >= 12080 {
        let cond = b.create_conditional_handle(Some(0)).unwrap();
        let (mut then, mut otherwise) = b.if_else(cond).unwrap();
        for (body, v) in [(&mut then, 1000i32), (&mut otherwise, 1)] {
            body.begin_building(CaptureMode::default()).unwrap();
            launch_into(body, &add_to, 64, &[&x.shared_view(), &v]);
            body.end_building().unwrap();
        }
        1
    } else {
        // The refusal, in a builder of its own: a graph holding a conditional
        // handle that no node uses does not instantiate (INVALID_VALUE).
        let mut lone = d.create_graph_builder().unwrap();
        lone.begin_building(CaptureMode::default()).unwrap();
        if let Some(cond) = needs_driver!(12030, lone.create_conditional_handle(Some(0))) {
            assert!(needs_driver!(12080, lone.if_else(cond)).is_none());
        }
        0
    };
    b.end_building().unwrap();
    let exec = b.complete(GraphCompleteOptions::default()).unwrap();
    exec.launch(&s).unwrap();
    let want: Vec<i32> = (0..64).map(|i| (i % 32) + 100 * (i / 32) + bump).collect();
    assert_eq!(x.to_vec(&s).unwrap(), want);
}

/// A switch node (`GraphBuilder.switch`): the body the condition names runs,
/// the others do not. CUDA 12.8 drivers and later.
#[test]
fn a_switch_runs_the_body_its_condition_names() {
    require_gpu!();
    let _serial = beside_others();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let add_to = kernel(&code, "add_to");
    let x = zeros(&d, &s, 32);
    let mut b = GraphBuilder::new(&d).unwrap();
    b.begin_building(CaptureMode::default()).unwrap();
    let Some(cond) = needs_driver!(12030, b.create_conditional_handle(Some(1))) else {
        return;
    };
    // Refused before the driver is asked: `cond` keeps no node yet.
    if cudars_tests::driver_version() >= 12080 {
        assert_eq!(
            b.switch(cond, 0).unwrap_err().invalid_kind(),
            Some(InvalidKind::Other)
        );
    }
    let Some(mut bodies) = needs_driver!(12080, b.switch(cond, 3)) else {
        return;
    };
    assert_eq!(bodies.len(), 3);
    for (i, body) in bodies.iter_mut().enumerate() {
        body.begin_building(CaptureMode::default()).unwrap();
        launch_into(body, &add_to, 32, &[&x.shared_view(), &10i32.pow(i as u32)]);
        body.end_building().unwrap();
    }
    b.end_building().unwrap();
    let exec = b.complete(GraphCompleteOptions::default()).unwrap();
    exec.launch(&s).unwrap();
    exec.launch(&s).unwrap();
    // Body 1 adds 10 at each launch; bodies 0 (1) and 2 (100) never run.
    assert_eq!(x.to_vec(&s).unwrap(), vec![20; 32]);
}

/// cuda.core 1.3 (#2776): a join that fails partway leaves no fork capturing.
/// Here the builders it did not reach are joined as they drop, so the capture
/// still ends, and their work is in the graph; (#2834) a device memory
/// resource is made, and the device's resource read, during a global-mode
/// capture without invalidating it.
#[test]
fn a_join_that_fails_partway_leaves_the_capture_whole() {
    require_gpu!();
    // A global-mode capture refuses (and is invalidated by) other threads'
    // unsafe calls: no other test of this binary runs meanwhile.
    let _serial = alone();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let iota_plus = kernel(&code, "iota_plus");
    let x = zeros(&d, &s, 96);
    let mut b = d.create_graph_builder().unwrap();
    b.begin_building(CaptureMode::Global).unwrap();
    // Global capture: the default pool and the device's resource are reached
    // without a refused (capture-invalidating) driver call.
    let pool = cudars_core::DeviceMemoryResource::default_pool(&d).unwrap();
    assert_eq!(cudars_core::MemoryResource::device(&*pool), d);
    assert!(d.memory_resource().is_ok());
    let parts = b.split(4).unwrap();
    assert_eq!(parts.len(), 3);
    for (i, p) in parts.iter().enumerate() {
        let third = x.shared_slice(32 * i..32 * (i + 1)).unwrap();
        launch_into(p, &iota_plus, 32, &[&third, &(100 * i as i32)]);
    }
    let mut other = d.create_graph_builder().unwrap();
    other.begin_building(CaptureMode::Global).unwrap();
    let mut stranger = other.split(2).unwrap();
    // The first is joined, the stranger is refused, the last is never reached.
    let mut parts = parts.into_iter();
    let (first, second, third) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let e = b
        .join([first, stranger.pop().unwrap(), second])
        .unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::Other), "{e}");
    // The stranger went back to its own graph, which ends.
    other.end_building().unwrap();
    b.join([third]).unwrap();
    b.end_building().unwrap();
    let exec = b.complete(GraphCompleteOptions::default()).unwrap();
    exec.launch(&s).unwrap();
    let want: Vec<i32> = (0..96).map(|i| (i % 32) + 100 * (i / 32)).collect();
    assert_eq!(x.to_vec(&s).unwrap(), want);
}

#[test]
fn graph_memory_is_taken_only_by_work_ordered_after_its_allocation() {
    require_gpu!();
    let _serial = beside_others();
    require_libs!("nvrtc");
    let (d, s, _code) = setup();
    let y = zeros(&d, &s, 64);
    let mut b = d.create_graph_builder().unwrap();
    b.begin_building(CaptureMode::ThreadLocal).unwrap();
    let early = b.allocate::<i32>(32).unwrap();
    let mut parts = b.split(2).unwrap();
    let late = b.allocate::<i32>(32).unwrap();
    // Split off before `late` was allocated: it may run first.
    let refused = parts[0].fill(&late, 0).unwrap_err();
    assert_eq!(refused.invalid_kind(), Some(InvalidKind::Other));
    assert!(
        refused.to_string().contains("not allocated before"),
        "{refused}"
    );
    parts[0].fill(&early, 5i32).unwrap();
    let mine = parts[0].allocate::<i32>(32).unwrap();
    parts[0].fill(&mine, 6i32).unwrap();
    // Not joined yet: the split's allocation may come after this point.
    assert_eq!(
        b.copy(y.shared_slice(32..).unwrap(), &mine)
            .unwrap_err()
            .invalid_kind(),
        Some(InvalidKind::Other)
    );
    b.join(std::mem::take(&mut parts)).unwrap();
    b.copy(y.shared_slice(..32).unwrap(), &early).unwrap();
    b.copy(y.shared_slice(32..).unwrap(), &mine).unwrap();
    b.fill(&late, 1i32).unwrap();
    b.end_building().unwrap();
    let exec = b.complete(GraphCompleteOptions::default()).unwrap();
    for _ in 0..2 {
        exec.launch(&s).unwrap();
    }
    let want: Vec<i32> = [[5; 32], [6; 32]].concat();
    assert_eq!(y.to_vec(&s).unwrap(), want);
}

#[test]
fn bad_use_is_an_error_and_a_dropped_builder_ends_its_capture() {
    require_gpu!();
    let _serial = beside_others();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let add_to = kernel(&code, "add_to");
    let x = zeros(&d, &s, 32);
    let mut b = d.create_graph_builder().unwrap();
    // Nothing is queued, ended or built before building begins.
    assert_eq!(
        b.end_building().unwrap_err().invalid_kind(),
        Some(InvalidKind::Other)
    );
    assert_eq!(
        b.fill(&x, 1i32).unwrap_err().invalid_kind(),
        Some(InvalidKind::Other)
    );
    assert_eq!(
        b.graph().map(|_| ()).unwrap_err().invalid_kind(),
        Some(InvalidKind::Other)
    );
    assert_eq!(
        b.complete(GraphCompleteOptions::default())
            .unwrap_err()
            .invalid_kind(),
        Some(InvalidKind::Other)
    );
    b.begin_building(CaptureMode::default()).unwrap();
    assert_eq!(
        b.begin_building(CaptureMode::default())
            .map(|_| ())
            .unwrap_err()
            .invalid_kind(),
        Some(InvalidKind::Other)
    );
    launch_into(&b, &add_to, 32, &[&x.shared_view(), &1i32]);
    // A wrong argument count is refused before anything is captured (on
    // drivers that report kernels' parameters).
    // SAFETY: not launched.
    let wrong = unsafe { b.launch(&LaunchConfig::new(1, 32), &add_to, &[&x.shared_view()]) };
    if cudars_tests::driver_version() >= 12040 {
        assert_eq!(wrong.unwrap_err().invalid_kind(), Some(InvalidKind::Other));
    }
    // Dropped mid-capture, with a split still open: the capture ends, the partial
    // graph is destroyed, and the stream's device keeps working.
    let open = b.split(2).unwrap();
    drop(b);
    drop(open);
    // A body dropped mid-capture, with a split of its capture open: both are
    // joined and ended, and the top builder ends.
    let mut top = d.create_graph_builder().unwrap();
    top.begin_building(CaptureMode::default()).unwrap();
    if let Some(c) = needs_driver!(12030, top.create_conditional_handle(Some(0))) {
        let mut body = top.if_cond(c).unwrap();
        body.begin_building(CaptureMode::default()).unwrap();
        let inner = body.split(2).unwrap();
        assert_eq!(
            body.end_building().unwrap_err().invalid_kind(),
            Some(InvalidKind::Other)
        );
        drop(body);
        drop(inner);
        top.end_building().unwrap();
        let exec = top.complete(GraphCompleteOptions::default()).unwrap();
        exec.launch(&s).unwrap();
        s.sync().unwrap();
    }
    let mut again = d.create_graph_builder().unwrap();
    again.begin_building(CaptureMode::default()).unwrap();
    again.fill(&x, 9i32).unwrap();
    again.end_building().unwrap();
    // A child graph: the built graph embedded twice into another builder.
    let child = again.into_graph().unwrap();
    let mut parent = d.create_graph_builder().unwrap();
    parent.begin_building(CaptureMode::default()).unwrap();
    parent.add_child(&child).unwrap();
    launch_into(&parent, &add_to, 32, &[&x.shared_view(), &1i32]);
    parent.add_child(&child).unwrap();
    parent.end_building().unwrap();
    assert_eq!(parent.graph().unwrap().node_count().unwrap(), 3);
    let exec = parent.complete(GraphCompleteOptions::default()).unwrap();
    drop(child);
    exec.launch(&s).unwrap();
    assert_eq!(x.to_vec(&s).unwrap(), vec![9; 32], "the second fill wins");
    // Memory of another device is refused (with a second GPU).
    if Device::count().unwrap() > 1 {
        let d1 = Device::new(1).unwrap();
        let s1 = d1.create_stream(StreamOptions::default()).unwrap();
        let far = Arc::new(DeviceBuffer::<i32>::zeroed(&d1, 32, &s1).unwrap());
        s1.sync().unwrap();
        let mut b = d.create_graph_builder().unwrap();
        b.begin_building(CaptureMode::default()).unwrap();
        assert_eq!(
            b.fill(&far, 1i32).unwrap_err().invalid_kind(),
            Some(InvalidKind::OtherDevice)
        );
        let far_event = Arc::new(Event::new(&d1, EventOptions::default()).unwrap());
        assert_eq!(
            b.record_event(&far_event).unwrap_err().invalid_kind(),
            Some(InvalidKind::OtherDevice)
        );
        b.end_building().unwrap();
    }
}

#[test]
fn the_graph_memory_resource_allocates_into_a_builder_and_reports_the_reserve() {
    require_gpu!();
    let _serial = beside_others();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let iota_plus = kernel(&code, "iota_plus");
    let out = zeros(&d, &s, 1024);
    let mr = GraphMemoryResource::new(&d);
    assert_eq!(mr.device(), d);
    assert!(mr.is_device_accessible() && !mr.is_host_accessible() && !mr.is_managed());
    s.sync().unwrap();
    mr.trim().unwrap();
    mr.reset_high_watermarks().unwrap();
    let before = mr.attributes().unwrap();
    let mut b = d.create_graph_builder().unwrap();
    // Not building: nothing to allocate into.
    assert_eq!(
        mr.allocate::<i32>(&b, 1024).unwrap_err().invalid_kind(),
        Some(InvalidKind::Other)
    );
    b.begin_building(CaptureMode::default()).unwrap();
    let tmp = mr.allocate::<i32>(&b, 1024).unwrap();
    assert!(tmp.is_graph_memory() && tmp.len() == 1024);
    launch_into(&b, &iota_plus, 1024, &[&tmp, &5i32]);
    b.copy(&out, &tmp).unwrap();
    b.end_building().unwrap();
    let exec = b.complete(GraphCompleteOptions::default()).unwrap();
    exec.launch(&s).unwrap();
    s.sync().unwrap();
    let want: Vec<i32> = (0..1024).map(|i| 5 + i).collect();
    assert_eq!(out.to_vec(&s).unwrap(), want);
    // The graph ran: its 4 KiB came from the device's graph memory reserve,
    // which stays associated with the instantiated graph (the driver counts it
    // as used, 32 MiB on the H100) until the graph is destroyed.
    let after = mr.attributes().unwrap();
    println!("graph memory before {before:?}, after a launch {after:?}");
    assert!(after.used >= before.used + 4096, "{before:?} → {after:?}");
    assert!(after.used_high >= after.used && after.reserved >= after.used);
    // Destroyed and trimmed: the memory goes back.
    drop(exec);
    s.sync().unwrap();
    mr.trim().unwrap();
    mr.reset_high_watermarks().unwrap();
    let trimmed = mr.attributes().unwrap();
    println!("after the graph is destroyed and the reserve trimmed {trimmed:?}");
    assert!(trimmed.used < after.used, "{after:?} → {trimmed:?}");
    assert!(trimmed.reserved < after.reserved, "{after:?} → {trimmed:?}");
}
