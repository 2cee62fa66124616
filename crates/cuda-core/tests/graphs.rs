//! GPU tests of graphs: capture and replay, explicit nodes, a conditional while
//! loop, update of an instantiated graph, DOT output. Without a GPU each test
//! prints `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails.
// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_core::{
    CaptureMode, CaptureStatus, CompileTarget, ConditionalKind, Device, Error, Event, EventOptions,
    Graph, GraphCompleteOptions, LaunchConfig, LegacyPinnedMemoryResource, ObjectCode, Program,
    ProgramOptions, SourceCode, Stream, StreamOptions, launch,
};
use cuda_rs_tests::{require_gpu, require_libs};

const SRC: &str = r#"
typedef unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned int value);
extern "C" __global__ void add(int *x, int v) { x[threadIdx.x] += v; }
extern "C" __global__ void mul(int *x, int v) { x[threadIdx.x] *= v; }
extern "C" __global__ void set(int *x, int v) { x[threadIdx.x] = v + (int)threadIdx.x; }
extern "C" __global__ void copy(int *dst, const int *src) { dst[threadIdx.x] = src[threadIdx.x]; }
extern "C" __global__ void countdown(int *counter, int *iterations, cudaGraphConditionalHandle h) {
    if (threadIdx.x == 0) {
        *iterations += 1;
        int left = --*counter;
        cudaGraphSetConditional(h, left > 0 ? 1u : 0u);
    }
}
"#;

fn setup() -> (Device, Stream, ObjectCode) {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d
        .create_stream(StreamOptions {
            non_blocking: true,
            priority: None,
        })
        .unwrap();
    // Whole-program cubin: the driver resolves `cudaGraphSetConditional` when it
    // loads the code.
    let code = Program::new(
        SourceCode::Cxx(SRC),
        ProgramOptions {
            arch: Some(d.arch().unwrap()),
            ..Default::default()
        },
    )
    .unwrap()
    .compile(CompileTarget::Cubin, &[])
    .unwrap();
    (d, s, code)
}

#[test]
fn captured_graph_of_two_kernels_replayed() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let (add, mul) = (
        code.get_kernel("add").unwrap(),
        code.get_kernel("mul").unwrap(),
    );
    let mut x = d.allocate(32 * 4, &s).unwrap();
    x.fill_u32(0, &s).unwrap();
    s.sync().unwrap();
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::None);
    // Thread-local: other tests on other threads keep working during the capture.
    // SAFETY: `x` and the kernels outlive the graph and its instantiation.
    unsafe { s.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::Active);
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    unsafe { launch(&s, &LaunchConfig::new(1, 32), &add, &[&x, &1i32]) }.unwrap();
    // Fork: a second stream joins the capture; join back.
    let forks = s.fork(1).unwrap();
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    unsafe { launch(&forks[0], &LaunchConfig::new(1, 32), &mul, &[&x, &2i32]) }.unwrap();
    s.join(&forks).unwrap();
    let graph = s.end_capture().unwrap();
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::None);
    assert!(graph.node_count().unwrap() >= 2);
    let exec = graph.instantiate(GraphCompleteOptions::default()).unwrap();
    exec.upload(&s).unwrap();
    // x = (x + 1) * 2, 10 times: 2, 6, 14, 30, ...
    for _ in 0..10 {
        exec.launch(&s).unwrap();
    }
    let mut out = [0i32; 32];
    x.copy_to_host(&mut out, &s).unwrap();
    let mut expect = 0;
    for _ in 0..10 {
        expect = (expect + 1) * 2;
    }
    assert!(out.iter().all(|&v| v == expect), "{out:?} != {expect}");
    let dot = tempfile::tempdir().unwrap().keep().join("g.dot");
    graph.debug_dot_print(&dot).unwrap();
    assert!(std::fs::read_to_string(&dot).unwrap().contains("digraph"));
}

#[test]
fn explicit_graph_with_memset_copy_host_callback_events_and_child() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let add = code.get_kernel("add").unwrap();
    let a = Arc::new(d.allocate(32 * 4, &s).unwrap());
    let b = Arc::new(d.allocate(32 * 4, &s).unwrap());
    s.sync().unwrap();
    let ctx = d.context().unwrap();
    let mut child = Graph::new(&ctx).unwrap();
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    unsafe { child.add_kernel(&[], &LaunchConfig::new(1, 32), &add, &[&*a, &5i32]) }.unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let ev = Arc::new(Event::new(&d, EventOptions::default()).unwrap());
    let mut g = Graph::new(&ctx).unwrap();
    let set = g.add_memset(&[], &a, 7, 4).unwrap();
    let kid = g.add_child(&[set], &child).unwrap();
    let copy = g.add_memcpy(&[kid], &b, &a, 32 * 4).unwrap();
    let c = calls.clone();
    let host = g
        .add_host_callback(&[copy], move || {
            c.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let rec = g.add_event_record(&[host], &ev).unwrap();
    let join = g.add_empty(&[rec]).unwrap();
    let wait = g.add_event_wait(&[], &ev).unwrap();
    g.add_dependency(join, wait).unwrap();
    assert_eq!(g.node_count().unwrap(), 7);
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    drop(child);
    for _ in 0..3 {
        exec.launch(&s).unwrap();
    }
    s.sync().unwrap();
    let mut out = [0i32; 32];
    b.copy_to_host(&mut out, &s).unwrap();
    assert!(out.iter().all(|&v| v == 12), "{out:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // Bad arguments are refused.
    assert!(g.add_memset(&[], &a, 0, 3).is_err());
    assert!(
        // SAFETY: the kernel only touches the buffers passed, within their sizes.
        unsafe { g.add_kernel(&[], &LaunchConfig::new(1, 1), &add, &[&*a]) }.is_err()
    );
}

#[test]
fn conditional_if_runs_its_body_by_the_default_value() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let add = code.get_kernel("add").unwrap();
    let mut x = d.allocate(32 * 4, &s).unwrap();
    x.fill_u32(0, &s).unwrap();
    s.sync().unwrap();
    let ctx = d.context().unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let yes = g.create_condition(Some(1)).unwrap();
    let (n1, mut b1) = g.add_conditional(&[], yes, ConditionalKind::If).unwrap();
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    unsafe { b1[0].add_kernel(&[], &LaunchConfig::new(1, 32), &add, &[&x, &1i32]) }.unwrap();
    // If/else nodes need a CUDA 12.8 driver; with an older one, the `if` alone
    // (and no second condition: every condition must belong to a node).
    let per_launch = if cuda_rs_tests::driver_version() >= 12080 {
        let no = g.create_condition(Some(0)).unwrap();
        let (_n2, mut b2) = g
            .add_conditional(&[n1], no, ConditionalKind::IfElse)
            .unwrap();
        // SAFETY: the kernel only touches the buffers passed, within their sizes.
        unsafe { b2[0].add_kernel(&[], &LaunchConfig::new(1, 32), &add, &[&x, &100i32]) }.unwrap();
        // SAFETY: the kernel only touches the buffers passed, within their sizes.
        unsafe { b2[1].add_kernel(&[], &LaunchConfig::new(1, 32), &add, &[&x, &10i32]) }.unwrap();
        11
    } else {
        // Refused before the driver is asked: `yes` keeps its one node.
        cuda_rs_tests::needs_driver!(
            12080,
            g.add_conditional(&[n1], yes, ConditionalKind::IfElse)
        );
        1
    };
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    for _ in 0..3 {
        exec.launch(&s).unwrap();
    }
    let mut out = [0i32; 32];
    x.copy_to_host(&mut out, &s).unwrap();
    // Each launch: the `if` body adds 1, the `else` body adds 10.
    assert!(out.iter().all(|&v| v == 3 * per_launch), "{out:?}");
}

#[test]
fn conditional_while_loops_a_counted_number_of_times() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let countdown = code.get_kernel("countdown").unwrap();
    let mut counter = d.allocate(4, &s).unwrap();
    let mut iterations = d.allocate(4, &s).unwrap();
    counter.copy_from_host(&[5i32], &s).unwrap();
    iterations.copy_from_host(&[0i32], &s).unwrap();
    let ctx = d.context().unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    // Enter the loop: the condition starts at 1 on every launch.
    let cond = g.create_condition(Some(1)).unwrap();
    let (_node, mut bodies) = g
        .add_conditional(&[], cond, ConditionalKind::While)
        .unwrap();
    assert_eq!(bodies.len(), 1);
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    unsafe {
        bodies[0].add_kernel(
            &[],
            &LaunchConfig::new(1, 1),
            &countdown,
            &[&counter, &iterations, &cond],
        )
    }
    .unwrap();
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    exec.launch(&s).unwrap();
    let (mut c, mut it) = ([0i32], [0i32]);
    counter.copy_to_host(&mut c, &s).unwrap();
    iterations.copy_to_host(&mut it, &s).unwrap();
    assert_eq!((c[0], it[0]), (0, 5));
    // Launch again with 3 to go.
    counter.copy_from_host(&[3i32], &s).unwrap();
    exec.launch(&s).unwrap();
    iterations.copy_to_host(&mut it, &s).unwrap();
    assert_eq!(it[0], 8);
    // If/else and switch nodes get their bodies; a condition belongs to one node.
    let c2 = g.create_condition(Some(0)).unwrap();
    let if_else =
        cuda_rs_tests::needs_driver!(12080, g.add_conditional(&[], c2, ConditionalKind::IfElse));
    if let Some((_, bodies)) = if_else {
        assert_eq!(bodies.len(), 2);
        assert!(g.add_conditional(&[], c2, ConditionalKind::If).is_err());
    }
    let c3 = g.create_condition(Some(0)).unwrap();
    let switch = cuda_rs_tests::needs_driver!(
        12080,
        g.add_conditional(&[], c3, ConditionalKind::Switch(3))
    );
    if let Some((_, bodies)) = switch {
        assert_eq!(bodies.len(), 3);
    }
    let c4 = g.create_condition(None).unwrap();
    assert!(
        g.add_conditional(&[], c4, ConditionalKind::Switch(0))
            .is_err()
    );
}

#[test]
fn instantiated_graph_is_updated_in_place() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let add = code.get_kernel("add").unwrap();
    let x = Arc::new(d.allocate(32 * 4, &s).unwrap());
    let ctx = d.context().unwrap();
    let build = |v: i32| {
        let mut g = Graph::new(&ctx).unwrap();
        let m = g.add_memset(&[], &x, 0, 4).unwrap();
        // SAFETY: the kernel only touches the buffers passed, within their sizes.
        unsafe { g.add_kernel(&[m], &LaunchConfig::new(1, 32), &add, &[&*x, &v]) }.unwrap();
        g
    };
    let mut exec = build(1)
        .instantiate(GraphCompleteOptions::default())
        .unwrap();
    exec.launch(&s).unwrap();
    let mut out = [0i32; 32];
    x.copy_to_host(&mut out, &s).unwrap();
    assert!(out.iter().all(|&v| v == 1));
    exec.update(&build(42)).unwrap();
    exec.launch(&s).unwrap();
    x.copy_to_host(&mut out, &s).unwrap();
    assert!(out.iter().all(|&v| v == 42));
    // A different topology is refused, with the reason.
    let mut other = Graph::new(&ctx).unwrap();
    other.add_empty(&[]).unwrap();
    other.add_empty(&[]).unwrap();
    other.add_empty(&[]).unwrap();
    assert!(exec.update(&other).is_err());
}

#[test]
fn explicit_alloc_and_free_nodes_hold_memory_for_the_graph() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let (set, add, copy) = (
        code.get_kernel("set").unwrap(),
        code.get_kernel("add").unwrap(),
        code.get_kernel("copy").unwrap(),
    );
    let out = d.allocate(32 * 4, &s).unwrap();
    let ctx = d.context().unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    assert!(matches!(
        g.add_mem_alloc(&[], 0),
        Err(Error::InvalidArgument { .. })
    ));
    let a = g.add_mem_alloc(&[], 32 * 4).unwrap();
    assert_eq!(a.size, 128);
    assert_ne!(a.ptr.0, 0);
    let cfg = LaunchConfig::new(1, 32);
    // SAFETY: each kernel touches 32 ints of `a` (alive from its alloc node to its
    // free node, which depends on these) and of `out` (alive past the graph).
    let (k1, k2, k3) = unsafe {
        let k1 = g
            .add_kernel(&[a.node], &cfg, &set, &[&a.ptr, &100i32])
            .unwrap();
        let k2 = g.add_kernel(&[k1], &cfg, &add, &[&a.ptr, &5i32]).unwrap();
        let k3 = g.add_kernel(&[k2], &cfg, &copy, &[&out, &a.ptr]).unwrap();
        (k1, k2, k3)
    };
    let _ = (k1, k2);
    // Another graph's allocation cannot be freed here.
    let mut other = Graph::new(&ctx).unwrap();
    let b = other.add_mem_alloc(&[], 64).unwrap();
    assert!(matches!(
        g.add_mem_free(&[k3], &b),
        Err(Error::InvalidArgument { .. })
    ));
    other.add_mem_free(&[b.node], &b).unwrap();
    g.add_mem_free(&[k3], &a).unwrap();
    assert_eq!(g.node_count().unwrap(), 5);
    d.reset_graph_mem_high_watermarks().unwrap();
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    // Freed inside the graph, so it can run again and again.
    for _ in 0..3 {
        exec.launch(&s).unwrap();
    }
    let mut h = [0i32; 32];
    out.copy_to_host(&mut h, &s).unwrap();
    assert!(
        h.iter().enumerate().all(|(i, &v)| v == 105 + i as i32),
        "{h:?}"
    );
    let usage = d.graph_mem_usage().unwrap();
    println!("{usage:?}");
    assert!(
        usage.used_high >= 128 && usage.reserved_high >= 128,
        "{usage:?}"
    );
    d.graph_mem_trim().unwrap();
}

#[test]
fn allocations_in_a_capture_become_graph_memory() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let (set, copy) = (
        code.get_kernel("set").unwrap(),
        code.get_kernel("copy").unwrap(),
    );
    let out = d.allocate(32 * 4, &s).unwrap();
    s.sync().unwrap();
    // SAFETY: the kernels and `out` outlive the graph; the temporary lives from its
    // captured allocation to its captured free.
    unsafe { s.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    {
        let tmp = d.allocate(32 * 4, &s).unwrap();
        let cfg = LaunchConfig::new(1, 32);
        // SAFETY: 32 ints of each buffer.
        unsafe { launch(&s, &cfg, &set, &[&tmp, &7i32]) }.unwrap();
        // SAFETY: as above.
        unsafe { launch(&s, &cfg, &copy, &[&out, &tmp]) }.unwrap();
        // Dropped while capturing: the free is captured too.
    }
    let graph = s.end_capture().unwrap();
    assert_eq!(graph.node_count().unwrap(), 4, "alloc, set, copy, free");
    let exec = graph.instantiate(GraphCompleteOptions::default()).unwrap();
    for _ in 0..3 {
        exec.launch(&s).unwrap();
    }
    let mut h = [0i32; 32];
    out.copy_to_host(&mut h, &s).unwrap();
    assert!(
        h.iter().enumerate().all(|(i, &v)| v == 7 + i as i32),
        "{h:?}"
    );
}

#[test]
fn nodes_of_an_instantiated_graph_are_changed_and_disabled_in_place() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let (set, add, mul) = (
        code.get_kernel("set").unwrap(),
        code.get_kernel("add").unwrap(),
        code.get_kernel("mul").unwrap(),
    );
    let x = d.allocate(32 * 4, &s).unwrap();
    let ctx = d.context().unwrap();
    let cfg = LaunchConfig::new(1, 32);
    let mut g = Graph::new(&ctx).unwrap();
    // SAFETY: each kernel touches the 32 ints of `x`, which outlives the graph.
    let (k_set, k_add) = unsafe {
        let k_set = g.add_kernel(&[], &cfg, &set, &[&x, &0i32]).unwrap();
        let k_add = g.add_kernel(&[k_set], &cfg, &add, &[&x, &1i32]).unwrap();
        (k_set, k_add)
    };
    let empty = g.add_empty(&[k_add]).unwrap();
    let mut exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    let run = |exec: &cuda_core::GraphExec| -> Vec<i32> {
        exec.launch(&s).unwrap();
        let mut h = vec![0i32; 32];
        x.copy_to_host(&mut h, &s).unwrap();
        h
    };
    let expect = |f: &dyn Fn(i32) -> i32| (0..32).map(f).collect::<Vec<_>>();
    assert_eq!(run(&exec), expect(&|i| i + 1));
    // Other arguments, then another kernel, in place.
    // SAFETY: as above.
    unsafe { exec.set_kernel_node(&g, k_add, &cfg, &add, &[&x, &10i32]) }.unwrap();
    assert_eq!(run(&exec), expect(&|i| i + 10));
    // SAFETY: as above.
    unsafe { exec.set_kernel_node(&g, k_add, &cfg, &mul, &[&x, &3i32]) }.unwrap();
    assert_eq!(run(&exec), expect(&|i| i * 3));
    // Disabled: the node does nothing; enabled again: it is back.
    assert!(exec.is_node_enabled(&g, k_add).unwrap());
    exec.set_node_enabled(&g, k_add, false).unwrap();
    assert!(!exec.is_node_enabled(&g, k_add).unwrap());
    assert_eq!(run(&exec), expect(&|i| i));
    exec.set_node_enabled(&g, k_add, true).unwrap();
    assert_eq!(run(&exec), expect(&|i| i * 3));
    // The graph itself is unchanged.
    let fresh = g.instantiate(GraphCompleteOptions::default()).unwrap();
    assert_eq!(run(&fresh), expect(&|i| i + 1));
    // Wrong arguments, nodes of another graph, nodes that cannot be disabled.
    // SAFETY: refused before anything is launched.
    let wrong = unsafe { exec.set_kernel_node(&g, k_add, &cfg, &add, &[&x]) };
    assert!(matches!(wrong, Err(Error::InvalidArgument { .. })));
    let mut other = Graph::new(&ctx).unwrap();
    let foreign = other.add_empty(&[]).unwrap();
    assert!(matches!(
        exec.set_node_enabled(&g, foreign, false),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        exec.set_node_enabled(&other, foreign, false),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(exec.set_node_enabled(&g, empty, false).is_err());
    let _ = k_set;
}

#[test]
fn captures_default_to_relaxed_as_cuda_cores_graph_builder() {
    require_gpu!();
    assert_eq!(CaptureMode::default(), CaptureMode::Relaxed);
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d
        .create_stream(StreamOptions {
            non_blocking: true,
            priority: None,
        })
        .unwrap();
    // A synchronous allocation is a call CUDA calls unsafe during a capture:
    // relaxed lets this thread make it, thread-local refuses it.
    let pinned = Arc::new(LegacyPinnedMemoryResource::new(&d));
    // SAFETY: nothing is captured.
    unsafe { s.begin_capture(CaptureMode::default()) }.unwrap();
    let allowed = pinned.allocate(4096, &s);
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::Active);
    s.end_capture().unwrap();
    allowed.unwrap().close(None).unwrap();

    // SAFETY: nothing is captured.
    unsafe { s.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    let refused = pinned.allocate(4096, &s);
    let ended = s.end_capture();
    let e = refused.unwrap_err();
    assert!(e.driver_code().is_some(), "{e}");
    assert!(ended.is_err(), "the refused call invalidates the capture");
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::None);
}
