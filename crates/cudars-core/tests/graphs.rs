//! GPU tests of graphs: capture and replay, explicit nodes, a conditional while
//! loop, update of an instantiated graph and in place of its nodes, nodes and
//! edges read back, DOT output. Without a GPU each test
//! prints `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails.
// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cudars_core::{
    Buffer, CaptureMode, CaptureStatus, CompileTarget, ConditionalKind, Device, DeviceBuffer,
    Error, Event, EventOptions, Graph, GraphAllocOptions, GraphCompleteOptions,
    GraphDebugPrintOptions, GraphEdgeKind, GraphMemoryType, GraphNodeKind, GraphNodeParams,
    InvalidKind, Kernel, LaunchConfig, LegacyPinnedMemoryResource, Location, MutPtr, ObjectCode,
    Program, ProgramOptions, SourceCode, Stream, StreamOptions, TypedKernel, launch,
};
use cudars_tests::{require_gpu, require_libs};

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

/// Two buffers of 32 ints, a graph whose one kernel node adds 5 to the first,
/// and an event.
fn two_buffers_a_child_and_an_event(
    d: &Device,
    s: &Stream,
    add: &Kernel,
) -> (Arc<Buffer>, Arc<Buffer>, Graph, Arc<Event>) {
    let a = Arc::new(d.allocate(32 * 4, s).unwrap());
    let b = Arc::new(d.allocate(32 * 4, s).unwrap());
    s.sync().unwrap();
    let mut child = Graph::new(&d.context().unwrap()).unwrap();
    // SAFETY: the kernel only touches the 32 ints of `a`; the callers keep `a`
    // alive past every graph made from `child`.
    unsafe { child.add_kernel(&[], &LaunchConfig::new(1, 32), add, &[&*a, &5i32]) }.unwrap();
    let ev = Arc::new(Event::new(d, EventOptions::default()).unwrap());
    (a, b, child, ev)
}

#[test]
fn explicit_graph_with_memset_copy_host_callback_events_and_child() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let add = code.get_kernel("add").unwrap();
    let (a, b, child, ev) = two_buffers_a_child_and_an_event(&d, &s, &add);
    let ctx = d.context().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
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
    let (n1, added) = g.add_conditional(&[], yes, ConditionalKind::If).unwrap();
    // The body reads back from the node (IfNode.then): the same graph, filled
    // through the read-back value.
    let mut b1 = n1.bodies(&g).unwrap();
    assert_eq!(b1.len(), 1);
    assert_eq!(b1[0].handle(), added[0].handle());
    drop(added);
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    unsafe { b1[0].add_kernel(&[], &LaunchConfig::new(1, 32), &add, &[&x, &1i32]) }.unwrap();
    // If/else nodes need a CUDA 12.8 driver; with an older one, the `if` alone
    // (and no second condition: every condition must belong to a node).
    let per_launch = if cudars_tests::driver_version() >= 12080 {
        let no = g.create_condition(Some(0)).unwrap();
        let (n2, added) = g
            .add_conditional(&[n1], no, ConditionalKind::IfElse)
            .unwrap();
        // IfElseNode.then and .else_, in that order.
        let mut b2 = n2.bodies(&g).unwrap();
        let same: Vec<_> = added.iter().map(Graph::handle).collect();
        assert_eq!(b2.iter().map(Graph::handle).collect::<Vec<_>>(), same);
        // SAFETY: the kernel only touches the buffers passed, within their sizes.
        unsafe { b2[0].add_kernel(&[], &LaunchConfig::new(1, 32), &add, &[&x, &100i32]) }.unwrap();
        // SAFETY: the kernel only touches the buffers passed, within their sizes.
        unsafe { b2[1].add_kernel(&[], &LaunchConfig::new(1, 32), &add, &[&x, &10i32]) }.unwrap();
        11
    } else {
        // Refused before the driver is asked: `yes` keeps its one node.
        cudars_tests::needs_driver!(
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
        cudars_tests::needs_driver!(12080, g.add_conditional(&[], c2, ConditionalKind::IfElse));
    if let Some((_, bodies)) = if_else {
        assert_eq!(bodies.len(), 2);
        assert!(g.add_conditional(&[], c2, ConditionalKind::If).is_err());
    }
    let c3 = g.create_condition(Some(0)).unwrap();
    let switch = cudars_tests::needs_driver!(
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
    // Placed explicitly (the graph's own device; the device's own access is
    // implied, not listed again); a host-NUMA-current location is refused.
    let b = other
        .add_mem_alloc_with(
            &[],
            64,
            &GraphAllocOptions::new()
                .location(Location::Device(d))
                .peer_access([d]),
        )
        .unwrap();
    match b.node.params(&other).unwrap() {
        GraphNodeParams::MemAlloc(info) => {
            assert_eq!((info.ptr, info.size, info.device), (b.ptr, 64, Some(0)));
            assert_eq!(info.memory_type, GraphMemoryType::Device);
        }
        p => panic!("an alloc node read back as {p:?}"),
    }
    assert_eq!(
        other
            .add_mem_alloc_with(
                &[],
                64,
                &GraphAllocOptions::new().location(Location::HostNumaCurrent)
            )
            .unwrap_err()
            .invalid_kind(),
        Some(InvalidKind::Other)
    );
    assert!(matches!(
        g.add_mem_free(&[k3], &b),
        Err(Error::InvalidArgument { .. })
    ));
    other.add_mem_free(&[b.node], &b).unwrap();
    // Managed graph memory (CUDA 13 drivers): written and read by kernels.
    if let Some(m) = cudars_tests::needs_driver!(
        13000,
        g.add_mem_alloc_with(
            &[k3],
            32 * 4,
            &GraphAllocOptions::new().memory_type(GraphMemoryType::Managed)
        )
    ) {
        match m.node.params(&g).unwrap() {
            GraphNodeParams::MemAlloc(info) => {
                assert_eq!(info.memory_type, GraphMemoryType::Managed);
                assert_eq!(info.memory_type.to_string(), "managed");
            }
            p => panic!("a managed alloc node read back as {p:?}"),
        }
        // SAFETY: each kernel touches the 32 ints of `m` (alive from its alloc
        // node to its free node) and of `out`.
        let last = unsafe {
            let k = g
                .add_kernel(&[m.node], &cfg, &set, &[&m.ptr, &100i32])
                .unwrap();
            let k = g.add_kernel(&[k], &cfg, &add, &[&m.ptr, &7i32]).unwrap();
            g.add_kernel(&[k], &cfg, &copy, &[&out, &m.ptr]).unwrap()
        };
        g.add_mem_free(&[last], &m).unwrap();
    }
    g.add_mem_free(&[k3], &a).unwrap();
    let managed = usize::from(cudars_tests::driver_version() >= 13000);
    assert_eq!(g.node_count().unwrap(), 5 + 5 * managed);
    d.reset_graph_mem_high_watermarks().unwrap();
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    // Freed inside the graph, so it can run again and again.
    for _ in 0..3 {
        exec.launch(&s).unwrap();
    }
    let mut h = [0i32; 32];
    out.copy_to_host(&mut h, &s).unwrap();
    assert!(
        // The managed chain runs last and adds 7, not 5.
        h.iter()
            .enumerate()
            .all(|(i, &v)| v == 105 + 2 * managed as i32 + i as i32),
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
    let run = |exec: &cudars_core::GraphExec| -> Vec<i32> {
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

fn read(buf: &Buffer, s: &Stream) -> Vec<i32> {
    let mut h = vec![0i32; buf.size() / 4];
    buf.copy_to_host(&mut h, s).unwrap();
    h
}

#[test]
fn node_kinds_parameters_and_edges_are_read_back() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let add = code.get_kernel("add").unwrap();
    let (a, b, child, ev) = two_buffers_a_child_and_an_event(&d, &s, &add);
    let ctx = d.context().unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    // An empty graph lists nothing (the driver refuses a second, empty query).
    assert!(g.nodes().unwrap().is_empty() && g.edges().unwrap().is_empty());
    assert!(g.root_nodes().unwrap().is_empty());
    let set = g.add_memset(&[], &a, 7, 4).unwrap();
    let mut cfg = LaunchConfig::new(1, 32);
    cfg.shmem_size = 64;
    // SAFETY: as above.
    let k = unsafe { g.add_kernel(&[set], &cfg, &add, &[&*a, &1i32]) }.unwrap();
    let kid = g.add_child(&[k], &child).unwrap();
    let copy = g.add_memcpy(&[kid], &b, &a, 32 * 4).unwrap();
    let host = g.add_host_callback(&[copy], || {}).unwrap();
    let rec = g.add_event_record(&[host], &ev).unwrap();
    let join = g.add_empty(&[rec]).unwrap();
    let wait = g.add_event_wait(&[], &ev).unwrap();
    g.add_dependency(join, wait).unwrap();
    // Memory nodes in a graph of their own: the driver refuses to remove nodes
    // or edges of a graph that has some.
    let mut m = Graph::new(&ctx).unwrap();
    let alloc = m.add_mem_alloc(&[], 256).unwrap();
    let free = m.add_mem_free(&[alloc.node], &alloc).unwrap();
    assert_eq!(alloc.node.kind(&m).unwrap(), GraphNodeKind::MemAlloc);
    assert_eq!(free.kind(&m).unwrap(), GraphNodeKind::MemFree);
    match alloc.node.params(&m).unwrap() {
        GraphNodeParams::MemAlloc(p) => {
            assert_eq!((p.ptr, p.size), (alloc.ptr, 256));
            assert_eq!(p.device, Some(d.ordinal() as i32));
        }
        other => panic!("alloc node read back as {other:?}"),
    }
    match free.params(&m).unwrap() {
        GraphNodeParams::MemFree(p) => assert_eq!(p, alloc.ptr),
        other => panic!("free node read back as {other:?}"),
    }
    assert_eq!(free.dependencies(&m).unwrap(), vec![alloc.node]);
    assert_eq!(m.root_nodes().unwrap(), vec![alloc.node]);

    // Kinds.
    let kinds = [
        (set, GraphNodeKind::Memset),
        (k, GraphNodeKind::Kernel),
        (kid, GraphNodeKind::ChildGraph),
        (copy, GraphNodeKind::Memcpy),
        (host, GraphNodeKind::HostCallback),
        (rec, GraphNodeKind::EventRecord),
        (join, GraphNodeKind::Empty),
        (wait, GraphNodeKind::EventWait),
    ];
    for (node, kind) in kinds {
        assert_eq!(node.kind(&g).unwrap(), kind);
    }
    let all = g.nodes().unwrap();
    assert_eq!(all.len(), kinds.len());
    for (node, _) in kinds {
        assert!(all.contains(&node), "{node:?} is listed");
    }
    assert_eq!(g.root_nodes().unwrap(), vec![set]);

    // Parameters.
    match set.params(&g).unwrap() {
        GraphNodeParams::Memset(p) => {
            assert_eq!(p.dst.0, a.ptr());
            assert_eq!((p.value, p.element_size, p.width, p.height), (7, 4, 32, 1));
        }
        other => panic!("memset node read back as {other:?}"),
    }
    match k.params(&g).unwrap() {
        GraphNodeParams::Kernel(p) => {
            assert_eq!((p.grid.x, p.grid.y, p.grid.z), (1, 1, 1));
            assert_eq!((p.block.x, p.block.y, p.block.z), (32, 1, 1));
            assert_eq!(p.shared_mem_bytes, 64);
            assert!(!p.function.is_null() || !p.kernel.is_null());
        }
        other => panic!("kernel node read back as {other:?}"),
    }
    match copy.params(&g).unwrap() {
        GraphNodeParams::Memcpy(p) => {
            assert_eq!((p.src.0, p.dst.0), (a.ptr(), b.ptr()));
            assert_eq!((p.width_in_bytes, p.height, p.depth), (128, 1, 1));
        }
        other => panic!("memcpy node read back as {other:?}"),
    }
    match host.params(&g).unwrap() {
        GraphNodeParams::HostCallback(p) => {
            assert!(p.function.is_some());
            assert!(!p.user_data.is_null());
        }
        other => panic!("host node read back as {other:?}"),
    }
    for node in [rec, wait] {
        match node.params(&g).unwrap() {
            GraphNodeParams::EventRecord(e) | GraphNodeParams::EventWait(e) => {
                assert_eq!(e.handle, ev.handle());
                assert!(Arc::ptr_eq(e.event.as_ref().unwrap(), &ev));
            }
            other => panic!("event node read back as {other:?}"),
        }
    }
    match kid.params(&g).unwrap() {
        GraphNodeParams::ChildGraph(c) => {
            // The node's own copy of `child`: one kernel node.
            assert_ne!(c.handle(), child.handle());
            let inner = c.nodes().unwrap();
            assert_eq!(inner.len(), 1);
            assert_eq!(inner[0].kind(&c).unwrap(), GraphNodeKind::Kernel);
            // Its nodes are its own, not the parent's.
            assert!(matches!(
                inner[0].kind(&g),
                Err(Error::InvalidArgument { .. })
            ));
        }
        other => panic!("child node read back as {other:?}"),
    }
    assert!(matches!(join.params(&g).unwrap(), GraphNodeParams::Empty));

    // Edges.
    assert_eq!(copy.dependencies(&g).unwrap(), vec![kid]);
    assert_eq!(set.dependents(&g).unwrap(), vec![k]);
    assert_eq!(wait.dependencies(&g).unwrap(), vec![join]);
    assert!(set.dependencies(&g).unwrap().is_empty());
    let edges = g.edges().unwrap();
    assert_eq!(edges.len(), 7);
    for (from, to) in [
        (set, k),
        (k, kid),
        (kid, copy),
        (copy, host),
        (host, rec),
        (rec, join),
        (join, wait),
    ] {
        let e = edges
            .iter()
            .find(|e| e.from == from && e.to == to)
            .unwrap_or_else(|| panic!("no edge {from:?} -> {to:?} in {edges:?}"));
        assert_eq!(
            (e.kind, e.from_port, e.to_port),
            (GraphEdgeKind::Default, 0, 0)
        );
    }
    g.remove_dependency(join, wait).unwrap();
    assert_eq!(g.edges().unwrap().len(), 6);
    assert!(g.root_nodes().unwrap().contains(&wait));
    assert!(join.dependents(&g).unwrap().is_empty());
    // No such edge any more.
    assert!(g.remove_dependency(join, wait).is_err());

    // Destroying a node takes it and its edges out.
    let extra = g.add_empty(&[wait]).unwrap();
    assert_eq!(g.nodes().unwrap().len(), kinds.len() + 1);
    // SAFETY: `extra` is not used again.
    unsafe { g.destroy_node(extra) }.unwrap();
    assert_eq!(g.nodes().unwrap().len(), kinds.len());
    assert!(wait.dependents(&g).unwrap().is_empty());

    // Nodes of another graph are refused before the driver is asked.
    let mut other = Graph::new(&ctx).unwrap();
    let foreign = other.add_empty(&[]).unwrap();
    for r in [
        foreign.kind(&g).map(|_| ()),
        foreign.params(&g).map(|_| ()),
        foreign.dependencies(&g).map(|_| ()),
        foreign.dependents(&g).map(|_| ()),
        g.remove_dependency(set, foreign),
    ] {
        assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
    }

    // The graph still runs: a = 7 + 1 + 5, copied to b.
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    exec.launch(&s).unwrap();
    assert!(read(&b, &s).iter().all(|&v| v == 13));

    // DOT output with flags.
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.dot");
    g.debug_dot_print_with(&plain, GraphDebugPrintOptions::default())
        .unwrap();
    let full = dir.path().join("full.dot");
    g.debug_dot_print_with(
        &full,
        GraphDebugPrintOptions {
            conditional_node_params: cudars_tests::driver_version() >= 12030,
            ..GraphDebugPrintOptions::all()
        },
    )
    .unwrap();
    let (plain, full) = (
        std::fs::read_to_string(&plain).unwrap(),
        std::fs::read_to_string(&full).unwrap(),
    );
    assert!(plain.contains("digraph") && full.contains("digraph"));
    assert!(
        full.len() > plain.len(),
        "the flags add detail:\n{plain}\n---\n{full}"
    );
}

#[test]
fn conditional_nodes_read_back_their_condition_and_kind() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, _s, _code) = setup();
    if cudars_tests::driver_version() < 12030 {
        println!("SKIPPED: conditional nodes need a CUDA 12.3 driver");
        return;
    }
    let ctx = d.context().unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let c = g.create_condition(Some(0)).unwrap();
    let (node, bodies) = g.add_conditional(&[], c, ConditionalKind::While).unwrap();
    assert_eq!(bodies.len(), 1);
    let read_back = node.bodies(&g).unwrap();
    assert_eq!(read_back.len(), 1);
    assert_eq!(read_back[0].handle(), bodies[0].handle());
    // A node of another graph is refused.
    let other = Graph::new(&ctx).unwrap();
    assert_eq!(
        node.bodies(&other).unwrap_err().invalid_kind(),
        Some(InvalidKind::Other)
    );
    assert_eq!(node.kind(&g).unwrap(), GraphNodeKind::Conditional);
    match node.params(&g).unwrap() {
        GraphNodeParams::Conditional(Some(info)) => {
            assert_eq!(info.condition, c);
            assert_eq!(info.kind, ConditionalKind::While);
        }
        other => panic!("conditional node read back as {other:?}"),
    }
}

/// The definition-time update of memset, memcpy and host callback nodes
/// (cuda.core's `MemsetNode.update`, …): instantiations made after use the new
/// parameters, one made before keeps the old.
#[test]
fn memset_memcpy_and_host_nodes_of_a_graph_take_new_parameters() {
    require_gpu!();
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let zeroed = || {
        let mut buf = d.allocate(32 * 4, &s).unwrap();
        buf.fill_u32(0, &s).unwrap();
        Arc::new(buf)
    };
    let (a, b, a2, b2) = (zeroed(), zeroed(), zeroed(), zeroed());
    s.sync().unwrap();
    let (first, second) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let ctx = d.context().unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let set = g.add_memset(&[], &a, 7, 4).unwrap();
    let copy = g.add_memcpy(&[set], &b, &a, 32 * 4).unwrap();
    let f = first.clone();
    let host = g
        .add_host_callback(&[copy], move || {
            f.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let before = g.instantiate(GraphCompleteOptions::default()).unwrap();
    g.set_memset_node(set, &a2, 0x0909_0909, 4).unwrap();
    g.set_memcpy_node(copy, &b2, &a2, 16 * 4).unwrap();
    let f = second.clone();
    g.set_host_callback_node(host, move || {
        f.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    match set.params(&g).unwrap() {
        GraphNodeParams::Memset(m) => {
            assert_eq!(
                (m.dst.0, m.element_size, m.value),
                (a2.ptr(), 4, 0x0909_0909)
            );
        }
        other => panic!("a memset node read back as {other:?}"),
    }
    let after = g.instantiate(GraphCompleteOptions::default()).unwrap();
    before.launch(&s).unwrap();
    s.sync().unwrap();
    assert!(read(&b, &s).iter().all(|&v| v == 7));
    assert_eq!(
        (first.load(Ordering::SeqCst), second.load(Ordering::SeqCst)),
        (1, 0)
    );
    after.launch(&s).unwrap();
    s.sync().unwrap();
    let got = read(&b2, &s);
    assert!(got[..16].iter().all(|&v| v == 0x0909_0909), "{got:?}");
    assert!(
        got[16..].iter().all(|&v| v == 0),
        "only 16 ints were copied"
    );
    assert_eq!(
        (first.load(Ordering::SeqCst), second.load(Ordering::SeqCst)),
        (1, 1)
    );
    // A node of the wrong kind is refused before the driver is asked.
    assert_eq!(
        g.set_memset_node(copy, &a2, 1, 4)
            .unwrap_err()
            .invalid_kind(),
        Some(InvalidKind::Other)
    );
    assert_eq!(
        g.set_memcpy_node(set, &b2, &a2, 4)
            .unwrap_err()
            .invalid_kind(),
        Some(InvalidKind::Other)
    );
}

/// `KernelNode.update`: a kernel node of the definition takes other arguments
/// for the instantiations made afterwards.
#[test]
fn a_kernel_node_of_a_graph_takes_new_arguments() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let add = code.get_kernel("add").unwrap();
    let zeroed = || {
        let mut buf = d.allocate(32 * 4, &s).unwrap();
        buf.fill_u32(0, &s).unwrap();
        Arc::new(buf)
    };
    let (a, a2) = (zeroed(), zeroed());
    s.sync().unwrap();
    let ctx = d.context().unwrap();
    let cfg = LaunchConfig::new(1, 32);
    let mut g = Graph::new(&ctx).unwrap();
    // SAFETY: the kernel touches the 32 ints of `a`, which outlives the graph.
    let k = unsafe { g.add_kernel(&[], &cfg, &add, &[&*a, &1i32]) }.unwrap();
    let empty = g.add_empty(&[k]).unwrap();
    let before = g.instantiate(GraphCompleteOptions::default()).unwrap();
    // SAFETY: as above, for `a2`.
    unsafe { g.set_kernel_node(k, &cfg, &add, &[&*a2, &5i32]) }.unwrap();
    // SAFETY: as above (refused: not a kernel node).
    let refused = unsafe { g.set_kernel_node(empty, &cfg, &add, &[&*a2, &5i32]) };
    assert_eq!(
        refused.unwrap_err().invalid_kind(),
        Some(InvalidKind::Other)
    );
    let after = g.instantiate(GraphCompleteOptions::default()).unwrap();
    before.launch(&s).unwrap();
    after.launch(&s).unwrap();
    s.sync().unwrap();
    assert!(read(&a, &s).iter().all(|&v| v == 1));
    assert!(read(&a2, &s).iter().all(|&v| v == 5));
}

/// The definition-time update of a child graph node (`ChildGraphNode`): the
/// node's graph is replaced wholesale, by one of another topology too; an
/// instantiation made before keeps the old child.
#[test]
fn a_child_graph_node_of_a_graph_takes_another_graph() {
    require_gpu!();
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let zeroed = || {
        let mut buf = d.allocate(32 * 4, &s).unwrap();
        buf.fill_u32(0, &s).unwrap();
        Arc::new(buf)
    };
    let (a, b, c) = (zeroed(), zeroed(), zeroed());
    s.sync().unwrap();
    let ctx = d.context().unwrap();
    let mut one = Graph::new(&ctx).unwrap();
    one.add_memset(&[], &a, 7, 4).unwrap();
    let mut two = Graph::new(&ctx).unwrap();
    let fill = two.add_memset(&[], &b, 9, 4).unwrap();
    two.add_memcpy(&[fill], &c, &b, 32 * 4).unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let empty = g.add_empty(&[]).unwrap();
    let kid = g.add_child(&[empty], &one).unwrap();
    let before = g.instantiate(GraphCompleteOptions::default()).unwrap();
    // SAFETY: no graph read from `kid` before is used after.
    unsafe { g.set_child_graph_node(kid, &two) }.unwrap();
    match kid.params(&g).unwrap() {
        GraphNodeParams::ChildGraph(child) => assert_eq!(child.node_count().unwrap(), 2),
        other => panic!("a child graph node read back as {other:?}"),
    }
    // `two` was copied: changing it now changes nothing in `g`.
    two.add_empty(&[]).unwrap();
    let after = g.instantiate(GraphCompleteOptions::default()).unwrap();
    before.launch(&s).unwrap();
    s.sync().unwrap();
    assert!(read(&a, &s).iter().all(|&v| v == 7));
    assert!(read(&c, &s).iter().all(|&v| v == 0), "the old child runs");
    after.launch(&s).unwrap();
    s.sync().unwrap();
    assert!(read(&b, &s).iter().all(|&v| v == 9));
    assert!(read(&c, &s).iter().all(|&v| v == 9), "the new child runs");
    // The wrong kind of node and a node of another graph are refused before
    // the driver is asked.
    // SAFETY: refused: nothing changes.
    let refused = unsafe {
        [
            g.set_child_graph_node(empty, &one),
            Graph::new(&ctx).unwrap().set_child_graph_node(kid, &one),
        ]
    };
    for r in refused {
        assert_eq!(r.unwrap_err().invalid_kind(), Some(InvalidKind::Other));
    }
}

/// The definition-time update of event nodes (cuda.core's
/// `EventRecordNode.update` and `EventWaitNode.update`): later instantiations
/// record and wait for the new event; one made before keeps the old one.
#[test]
fn event_nodes_of_a_graph_take_another_event() {
    require_gpu!();
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let ctx = d.context().unwrap();
    let timing = EventOptions {
        timing: true,
        ..Default::default()
    };
    let (ev1, ev2) = (
        Arc::new(Event::new(&d, timing).unwrap()),
        Arc::new(Event::new(&d, timing).unwrap()),
    );
    let start = Event::new(&d, timing).unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let empty = g.add_empty(&[]).unwrap();
    let rec = g.add_event_record(&[empty], &ev1).unwrap();
    let wait = g.add_event_wait(&[rec], &ev1).unwrap();
    let before = g.instantiate(GraphCompleteOptions::default()).unwrap();
    g.set_event_record_node(rec, &ev2).unwrap();
    g.set_event_wait_node(wait, &ev2).unwrap();
    for (node, want) in [(rec, &ev2), (wait, &ev2)] {
        match node.params(&g).unwrap() {
            GraphNodeParams::EventRecord(e) | GraphNodeParams::EventWait(e) => {
                assert_eq!(e.handle, want.handle());
                assert!(e.event.is_some_and(|kept| Arc::ptr_eq(&kept, want)));
            }
            other => panic!("an event node read back as {other:?}"),
        }
    }
    // The instantiation made before records ev1, not ev2.
    start.record(&s).unwrap();
    before.launch(&s).unwrap();
    s.sync().unwrap();
    assert!(ev1.elapsed_since(&start).is_ok());
    assert!(ev2.elapsed_since(&start).is_err(), "ev2 was never recorded");
    let after = g.instantiate(GraphCompleteOptions::default()).unwrap();
    start.record(&s).unwrap();
    after.launch(&s).unwrap();
    s.sync().unwrap();
    assert!(ev2.elapsed_since(&start).is_ok());
    // The wrong kind of node, and a node of another graph, are refused.
    for r in [
        g.set_event_record_node(wait, &ev1),
        g.set_event_wait_node(empty, &ev1),
        Graph::new(&ctx).unwrap().set_event_record_node(rec, &ev1),
    ] {
        assert_eq!(r.unwrap_err().invalid_kind(), Some(InvalidKind::Other));
    }
}

#[test]
fn instantiated_graph_nodes_are_updated_in_place() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let add = code.get_kernel("add").unwrap();
    let zeroed = || {
        let mut buf = d.allocate(32 * 4, &s).unwrap();
        buf.fill_u32(0, &s).unwrap();
        Arc::new(buf)
    };
    let (a, b, b2, c) = (zeroed(), zeroed(), zeroed(), zeroed());
    s.sync().unwrap();
    let ctx = d.context().unwrap();
    let cfg = LaunchConfig::new(1, 32);
    let mut child = Graph::new(&ctx).unwrap();
    // SAFETY: the kernel only touches the 32 ints of `c`, which outlives the graphs.
    unsafe { child.add_kernel(&[], &cfg, &add, &[&*c, &5i32]) }.unwrap();
    let first = Arc::new(AtomicUsize::new(0));
    let second = Arc::new(AtomicUsize::new(0));
    let timing = EventOptions {
        timing: true,
        ..Default::default()
    };
    let ev1 = Arc::new(Event::new(&d, timing).unwrap());
    let ev2 = Arc::new(Event::new(&d, timing).unwrap());
    let start = Event::new(&d, timing).unwrap();

    let mut g = Graph::new(&ctx).unwrap();
    let set = g.add_memset(&[], &a, 7, 4).unwrap();
    let copy = g.add_memcpy(&[set], &b, &a, 32 * 4).unwrap();
    let f = first.clone();
    let host = g
        .add_host_callback(&[copy], move || {
            f.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let rec = g.add_event_record(&[host], &ev1).unwrap();
    let wait = g.add_event_wait(&[rec], &ev1).unwrap();
    let kid = g.add_child(&[wait], &child).unwrap();
    let mut exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    let run = |exec: &cudars_core::GraphExec| {
        start.record(&s).unwrap();
        exec.launch(&s).unwrap();
        s.sync().unwrap();
    };
    run(&exec);
    assert!(read(&b, &s).iter().all(|&v| v == 7));
    assert!(read(&c, &s).iter().all(|&v| v == 5));
    assert_eq!(first.load(Ordering::SeqCst), 1);
    // `ev2` has never been recorded: no time can be measured to it.
    assert!(ev2.elapsed_since(&start).is_err());

    // Memset: another value; memcpy: another destination.
    exec.set_memset_node(&g, set, &a, 9, 4).unwrap();
    exec.set_memcpy_node(&g, copy, &b2, &a, 32 * 4).unwrap();
    // Host callback: another closure.
    let f = second.clone();
    exec.set_host_callback_node(&g, host, move || {
        f.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    // Events: record and wait for `ev2`.
    exec.set_event_record_node(&g, rec, &ev2).unwrap();
    exec.set_event_wait_node(&g, wait, &ev2).unwrap();
    // Child graph: same topology, another argument.
    let mut child2 = Graph::new(&ctx).unwrap();
    // SAFETY: as above.
    unsafe { child2.add_kernel(&[], &cfg, &add, &[&*c, &100i32]) }.unwrap();
    exec.set_child_graph_node(&g, kid, &child2).unwrap();
    drop(child2);
    run(&exec);
    assert!(read(&b2, &s).iter().all(|&v| v == 9), "the copy went to b2");
    assert!(read(&b, &s).iter().all(|&v| v == 7), "b is left alone");
    assert!(read(&c, &s).iter().all(|&v| v == 105));
    assert_eq!(first.load(Ordering::SeqCst), 1);
    assert_eq!(second.load(Ordering::SeqCst), 1);
    ev2.elapsed_since(&start).unwrap();

    // The typed forms, over parts of a typed buffer.
    let x = Arc::new(DeviceBuffer::<u32>::zeroed(&d, 64, &s).unwrap());
    let y = Arc::new(DeviceBuffer::<u32>::zeroed(&d, 64, &s).unwrap());
    s.sync().unwrap();
    let mut g2 = Graph::new(&ctx).unwrap();
    let fill = g2
        .add_fill(&[], x.shared_slice(..32).unwrap(), 1u32)
        .unwrap();
    let cp = g2
        .add_copy(
            &[fill],
            y.shared_slice(..32).unwrap(),
            x.shared_slice(..32).unwrap(),
        )
        .unwrap();
    let mut exec2 = g2.instantiate(GraphCompleteOptions::default()).unwrap();
    exec2
        .set_fill_node(&g2, fill, x.shared_slice(32..).unwrap(), 4u32)
        .unwrap();
    exec2
        .set_copy_node(
            &g2,
            cp,
            y.shared_slice(32..).unwrap(),
            x.shared_slice(32..).unwrap(),
        )
        .unwrap();
    exec2.launch(&s).unwrap();
    let hy = y.to_vec(&s).unwrap();
    assert!(hy[..32].iter().all(|&v| v == 0), "{hy:?}");
    assert!(hy[32..].iter().all(|&v| v == 4), "{hy:?}");

    // Checks before the driver is asked.
    let invalid = |r: cudars_core::Result<()>| match r {
        Err(Error::InvalidArgument { kind, .. }) => kind,
        other => panic!("expected InvalidArgument, got {other:?}"),
    };
    // Wrong kinds.
    invalid(exec.set_memset_node(&g, copy, &a, 1, 4));
    invalid(exec.set_memcpy_node(&g, set, &b, &a, 128));
    invalid(exec.set_event_record_node(&g, wait, &ev1));
    invalid(exec.set_event_wait_node(&g, rec, &ev1));
    invalid(exec.set_host_callback_node(&g, set, || {}));
    invalid(exec.set_child_graph_node(&g, host, &child));
    // Another element size; sizes beyond the buffers; other lengths.
    invalid(exec.set_memset_node(&g, set, &a, 1, 2));
    assert_eq!(
        invalid(exec.set_memcpy_node(&g, copy, &b, &a, 256)),
        InvalidKind::OutOfRange
    );
    assert_eq!(
        invalid(exec2.set_copy_node(
            &g2,
            cp,
            y.shared_slice(..8).unwrap(),
            x.shared_slice(..16).unwrap()
        )),
        InvalidKind::OutOfRange
    );
    // Another graph, a node of another graph, the graph as its own child.
    invalid(exec.set_memset_node(&g2, fill, &a, 1, 4));
    invalid(exec.set_memset_node(&g, fill, &a, 1, 4));
    invalid(exec.set_child_graph_node(&g, kid, &g));
    // A child of another topology: the driver refuses it.
    let mut two = Graph::new(&ctx).unwrap();
    two.add_empty(&[]).unwrap();
    two.add_empty(&[]).unwrap();
    assert!(exec.set_child_graph_node(&g, kid, &two).is_err());
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

/// A raw capture forked to a second stream, over buffers allocated (and freed) on a
/// third: the typed launches in the capture do not order the buffers' frees (the
/// graph runs later; `begin_capture`'s contract keeps the buffers alive), so the
/// third stream is never pulled into the capture, the capture ends joined, and the
/// graph computes. Before, each launch recorded an event in the capture and made
/// the free stream wait for it: the free stream joined the capture and
/// `end_capture` failed with an unjoined stream (issue 43, point 3).
#[test]
fn a_forked_raw_capture_leaves_the_buffers_free_stream_out() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let add = TypedKernel::<(MutPtr<i32>, i32)>::new(code.get_kernel("add").unwrap()).unwrap();
    let opts = StreamOptions {
        non_blocking: true,
        priority: None,
    };
    let alloc_stream = d.create_stream(opts).unwrap();
    let s2 = d.create_stream(opts).unwrap();
    let mut x = DeviceBuffer::<i32>::zeroed(&d, 32, &alloc_stream).unwrap();
    let mut y = DeviceBuffer::<i32>::zeroed(&d, 32, &alloc_stream).unwrap();
    alloc_stream.sync().unwrap();
    let cfg = LaunchConfig::new(1u32, 32u32);
    // SAFETY: `x`, `y` and the kernel outlive the graph and its instantiation; no
    // other thread uses these streams.
    unsafe { s.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    let fork = d.create_event(EventOptions::default()).unwrap();
    fork.record(&s).unwrap();
    s2.wait_event(&fork).unwrap();
    // SAFETY: 32 threads touch x[0..32] and y[0..32], all of each.
    unsafe { add.launch(&s, &cfg, (x.view_mut(), 1)) }.unwrap();
    // SAFETY: as above.
    unsafe { add.launch(&s2, &cfg, (y.view_mut(), 2)) }.unwrap();
    let join = d.create_event(EventOptions::default()).unwrap();
    join.record(&s2).unwrap();
    s.wait_event(&join).unwrap();
    assert_eq!(s2.capture_status().unwrap(), CaptureStatus::Active);
    assert_eq!(
        alloc_stream.capture_status().unwrap(),
        CaptureStatus::None,
        "the buffers' free stream was pulled into the capture"
    );
    let graph = s.end_capture().unwrap();
    assert_eq!(s2.capture_status().unwrap(), CaptureStatus::None);
    let exec = graph.instantiate(GraphCompleteOptions::default()).unwrap();
    exec.launch(&s).unwrap();
    exec.launch(&s).unwrap();
    s.sync().unwrap();
    assert_eq!(x.to_vec(&alloc_stream).unwrap(), vec![2; 32]);
    assert_eq!(y.to_vec(&alloc_stream).unwrap(), vec![4; 32]);
    drop(exec);
    drop(graph);
}

/// `fork_one` (cudarc's `stream.fork()`): the new stream starts after what was
/// queued before it, and `join` puts the first stream after the new one's work.
#[test]
fn fork_one_orders_the_new_stream_after_the_old_and_join_back() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let add = TypedKernel::<(MutPtr<i32>, i32)>::new(code.get_kernel("add").unwrap()).unwrap();
    let mut x = DeviceBuffer::<i32>::zeroed(&d, 32, &s).unwrap();
    let cfg = LaunchConfig::new(1u32, 32u32);
    for _ in 0..2000 {
        // SAFETY: 32 threads touch x[0..32].
        unsafe { add.launch(&s, &cfg, (x.view_mut(), 1)) }.unwrap();
    }
    let side = s.fork_one().unwrap();
    // SAFETY: as above; `side` runs after the 2000 launches on `s`.
    unsafe { add.launch(&side, &cfg, (x.view_mut(), 1000)) }.unwrap();
    s.join(std::slice::from_ref(&side)).unwrap();
    assert_eq!(x.to_vec(&s).unwrap(), vec![3000; 32]);
}

/// Issue 43 point 6: two kernels captured into an explicit graph after one of
/// its nodes (`cudaStreamBeginCaptureToGraph`); the capture's last node is a
/// dependency of an explicit node added afterwards. The graph keeps its one
/// owner: after the capture it is instantiated and run as any graph.
#[test]
fn a_capture_into_an_explicit_graph_follows_its_node() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let (set, add, mul) = (
        code.get_kernel("set").unwrap(),
        code.get_kernel("add").unwrap(),
        code.get_kernel("mul").unwrap(),
    );
    let x = d.allocate(32 * 4, &s).unwrap();
    s.sync().unwrap();
    let ctx = d.context().unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let cfg = LaunchConfig::new(1, 32);
    // SAFETY: the kernels touch x[0..32], which outlives the graph.
    let first = unsafe { g.add_kernel(&[], &cfg, &set, &[&x, &7i32]) }.unwrap();
    let Some(capture) = cudars_tests::needs_driver!(12030, unsafe {
        // SAFETY: as above; thread-local, so other tests' threads are not refused.
        s.begin_capture_into(&mut g, &[first], CaptureMode::ThreadLocal)
    }) else {
        return;
    };
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::Active);
    // SAFETY: as above.
    unsafe { launch(&s, &cfg, &add, &[&x, &1i32]) }.unwrap();
    // SAFETY: as above.
    unsafe { launch(&s, &cfg, &mul, &[&x, &2i32]) }.unwrap();
    let last = capture.end().unwrap();
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::None);
    assert_eq!(last.len(), 1, "{last:?}");
    assert_eq!(g.node_count().unwrap(), 3);
    // The captured chain hangs off the explicit node: `first → add → mul`.
    let mul_node = last[0];
    let add_node = mul_node.dependencies(&g).unwrap();
    assert_eq!(add_node.len(), 1);
    assert_eq!(add_node[0].dependencies(&g).unwrap(), vec![first]);
    // SAFETY: as above.
    unsafe { g.add_kernel(&last, &cfg, &add, &[&x, &3i32]) }.unwrap();
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    exec.launch(&s).unwrap();
    let mut out = [0i32; 32];
    x.copy_to_host(&mut out, &s).unwrap();
    let expect: Vec<i32> = (0..32).map(|i| (7 + i + 1) * 2 + 3).collect();
    assert_eq!(out.to_vec(), expect);
}

/// Issue 43 point 6: the body of a while node made by `add_conditional` is
/// filled by capture (the pattern of cuda-samples' `graphConditionalNodes`).
#[test]
fn a_while_body_made_by_add_conditional_is_filled_by_capture() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let countdown = code.get_kernel("countdown").unwrap();
    let mut counter = d.allocate(4, &s).unwrap();
    let mut iterations = d.allocate(4, &s).unwrap();
    counter.copy_from_host(&[5i32], &s).unwrap();
    iterations.copy_from_host(&[0i32], &s).unwrap();
    s.sync().unwrap();
    let ctx = d.context().unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let cond = g.create_condition(Some(1)).unwrap();
    let (_node, mut bodies) = g
        .add_conditional(&[], cond, ConditionalKind::While)
        .unwrap();
    // SAFETY: the kernel touches the two counters, which outlive the graph;
    // thread-local, so other tests' threads are not refused.
    let capture =
        unsafe { s.begin_capture_into(&mut bodies[0], &[], CaptureMode::ThreadLocal) }.unwrap();
    // SAFETY: as above.
    unsafe {
        launch(
            &s,
            &LaunchConfig::new(1, 1),
            &countdown,
            &[&counter, &iterations, &cond],
        )
    }
    .unwrap();
    assert_eq!(capture.end().unwrap().len(), 1);
    assert_eq!(bodies[0].node_count().unwrap(), 1);
    drop(bodies);
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    exec.launch(&s).unwrap();
    let (mut c, mut it) = ([0i32], [0i32]);
    counter.copy_to_host(&mut c, &s).unwrap();
    iterations.copy_to_host(&mut it, &s).unwrap();
    assert_eq!((c[0], it[0]), (0, 5));
}

/// Issue 43 point 6: what a capture into a borrowed graph refuses. A
/// dependency of another graph is an `InvalidArgument` before the driver is
/// called (the stream does not capture); while the capture runs,
/// `end_capture` through any handle of the stream is refused, so the graph
/// never gets a second owner (a double destroy); a guard dropped without `end`
/// ends the capture, and the graph is whole afterwards.
#[test]
fn a_capture_into_a_graph_refuses_foreign_nodes_and_end_capture() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let add = code.get_kernel("add").unwrap();
    let x = d.allocate(32 * 4, &s).unwrap();
    s.sync().unwrap();
    let ctx = d.context().unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let mut other = Graph::new(&ctx).unwrap();
    let foreign = other.add_empty(&[]).unwrap();
    // SAFETY: nothing is captured.
    let e =
        unsafe { s.begin_capture_into(&mut g, &[foreign], CaptureMode::ThreadLocal) }.unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::None);
    let clone = s.clone();
    {
        // SAFETY: the kernel touches x[0..32], which outlives the graph.
        let capture =
            unsafe { s.begin_capture_into(&mut g, &[], CaptureMode::ThreadLocal) }.unwrap();
        // SAFETY: as above.
        unsafe {
            launch(
                capture.stream(),
                &LaunchConfig::new(1, 32),
                &add,
                &[&x, &1i32],
            )
        }
        .unwrap();
        for h in [&s, &clone] {
            let e = h.end_capture().unwrap_err();
            assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
        }
        assert_eq!(s.capture_status().unwrap(), CaptureStatus::Active);
        // Dropped without `end`: the capture ends here.
    }
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::None);
    assert_eq!(g.node_count().unwrap(), 1);
    // The stream captures as before, into a graph of its own.
    // SAFETY: nothing is captured.
    unsafe { s.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    let own = s.end_capture().unwrap();
    assert_eq!(own.node_count().unwrap(), 0);
    drop(g);
    drop(other);
}

/// Issue 43 point 12: an explicit graph's kernel node from a `TypedKernel`
/// and its argument tuple (`add_kernel_typed`): the graph keeps the buffer
/// alive after every other handle on it is gone, and the kernel runs on it.
#[test]
fn a_typed_kernel_node_of_an_explicit_graph_keeps_its_buffer() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let add = TypedKernel::<(MutPtr<i32>, i32)>::new(code.get_kernel("add").unwrap()).unwrap();
    let x = Arc::new(DeviceBuffer::<i32>::zeroed(&d, 32, &s).unwrap());
    s.sync().unwrap();
    let weak = Arc::downgrade(&x);
    let ctx = d.context().unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let cfg = LaunchConfig::new(1u32, 32u32);
    // SAFETY: 32 threads touch x[0..32].
    let first = unsafe { g.add_kernel_typed(&[], &cfg, &add, ((&x).into(), 2)) }.unwrap();
    // SAFETY: as above.
    unsafe { g.add_kernel_typed(&[first], &cfg, &add, (x.shared_view().into(), 3)) }.unwrap();
    drop(x);
    assert!(weak.upgrade().is_some(), "the graph keeps the buffer");
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    drop(g);
    exec.launch(&s).unwrap();
    exec.launch(&s).unwrap();
    let x = weak.upgrade().expect("the instantiation keeps the buffer");
    assert_eq!(x.to_vec(&s).unwrap(), vec![10; 32]);
}

/// Issue 43 point 12: pinned host memory in a graph's copy node is an
/// `Arc<DeviceBuffer<T>>` of `LegacyPinnedMemoryResource` (the pattern
/// `PinnedBuffer`'s rustdoc gives, "Not in graphs"): the graph keeps both ends
/// alive, and the host reads the result with a copy ordered after the launch.
#[test]
fn pinned_memory_in_a_graph_copy_node_is_a_pinned_device_buffer() {
    require_gpu!();
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let data: Vec<f32> = (0..64).map(|i| i as f32 * 0.5).collect();
    let x = Arc::new(DeviceBuffer::from_host(&d, &data, &s).unwrap());
    let pinned = Arc::new(LegacyPinnedMemoryResource::new(&d));
    let host = Arc::new(DeviceBuffer::<f32>::allocate_from(pinned, data.len(), &s).unwrap());
    s.sync().unwrap();
    let mut g = Graph::new(&d.context().unwrap()).unwrap();
    g.add_copy(&[], &host, &x).unwrap();
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    drop((g, x));
    exec.launch(&s).unwrap();
    assert_eq!(host.to_vec(&s).unwrap(), data);
}
