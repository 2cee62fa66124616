//! GPU tests of graph node introspection (kinds, parameters, edges), edge and node
//! removal, DOT output flags, and in-place updates of an instantiated graph's
//! memset, memcpy, child graph, event and host callback nodes. Without a GPU each
//! test prints `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails.
// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_core::{
    CompileTarget, ConditionalKind, Device, DeviceBuffer, Error, Event, EventOptions, Graph,
    GraphCompleteOptions, GraphDebugPrintOptions, GraphEdgeKind, GraphNodeKind, GraphNodeParams,
    InvalidKind, LaunchConfig, ObjectCode, Program, ProgramOptions, SourceCode, Stream,
    StreamOptions,
};
use cuda_rs_tests::{require_gpu, require_libs};

const SRC: &str = r#"
extern "C" __global__ void add(int *x, int v) { x[threadIdx.x] += v; }
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

fn read(buf: &cuda_core::Buffer, s: &Stream) -> Vec<i32> {
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
    let a = Arc::new(d.allocate(32 * 4, &s).unwrap());
    let b = Arc::new(d.allocate(32 * 4, &s).unwrap());
    s.sync().unwrap();
    let ctx = d.context().unwrap();
    let mut child = Graph::new(&ctx).unwrap();
    // SAFETY: the kernel only touches the 32 ints of `a`, which outlives the graphs.
    unsafe { child.add_kernel(&[], &LaunchConfig::new(1, 32), &add, &[&*a, &5i32]) }.unwrap();
    let ev = Arc::new(Event::new(&d, EventOptions::default()).unwrap());
    let mut g = Graph::new(&ctx).unwrap();
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
            conditional_node_params: cuda_rs_tests::driver_version() >= 12030,
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
    if cuda_rs_tests::driver_version() < 12030 {
        println!("SKIPPED: conditional nodes need a CUDA 12.3 driver");
        return;
    }
    let ctx = d.context().unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let c = g.create_condition(Some(0)).unwrap();
    let (node, bodies) = g.add_conditional(&[], c, ConditionalKind::While).unwrap();
    assert_eq!(bodies.len(), 1);
    assert_eq!(node.kind(&g).unwrap(), GraphNodeKind::Conditional);
    match node.params(&g).unwrap() {
        GraphNodeParams::Conditional(Some(info)) => {
            assert_eq!(info.condition, c);
            assert_eq!(info.kind, ConditionalKind::While);
        }
        other => panic!("conditional node read back as {other:?}"),
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
    let run = |exec: &cuda_core::GraphExec| {
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
    let invalid = |r: cuda_core::Result<()>| match r {
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
