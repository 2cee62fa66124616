//! `cuda_core/tests/graph/test_graph_definition_mutation.py` of `cuda.core` (the
//! pinned commit of `docs/reference/cuda-core-tests.txt`), ported as
//! `graph_definition.rs` says (its module doc maps the names). Every test needs
//! a GPU.
//!
//! Python's adjacency sets are edits of edges here: `a.succ.add(b)` and
//! `b.pred.add(a)` are `g.add_dependency(a, b)`, `discard` is
//! `g.remove_dependency(a, b)`, assigning a set removes the edges not in it and
//! adds the new ones; `node.destroy()` is `unsafe g.destroy_node(node)` (no copy
//! of the node may be used after it, so the Python checks that use a destroyed
//! node are the unsafe contract here). The rigs' ints live in pinned host
//! memory in Python (read with numpy); here in a device buffer whose one-int
//! `ArcView`s are the kernel arguments (the graph keeps the buffer alive), read
//! back after the launch.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cudars_core::{
    ArcView, Device, DeviceBuffer, Error, Graph, GraphCompleteOptions, GraphNode, GraphNodeKind,
    Kernel, LaunchConfig, Stream,
};
use cudars_tests::{require_gpu, require_libs};

use crate::graph_definition::{compile, gpu, stream};

/// `helpers/graph_kernels.py`'s `compile_parallel_kernels`.
const PARALLEL_KERNELS: &str = "
    __global__ void affine(int *a, int m, int b) { *a = *a * m + b; }
    __global__ void combine(int *s, int *a, int *b) { *s = (*a << 16) | (*b & 0xFFFF); }
    __global__ void reduce(int *out, int *in, size_t n) { for(size_t i=0; i<n; ++i) { *out += in[i]; } }
    ";

fn parallel_kernels(d: &Device) -> (Kernel, Kernel, Kernel) {
    let code = compile(d, PARALLEL_KERNELS, &["affine", "combine", "reduce"]);
    (
        code.get_kernel("affine").unwrap(),
        code.get_kernel("combine").unwrap(),
        code.get_kernel("reduce").unwrap(),
    )
}

type Edge = (GraphNode, GraphNode);

/// `YRig`: arm A (a0 → a1 → a2) and arm B (b0 → b1) of affine steps on their
/// ints, joined by `j`, then `r` combines them into the third int.
struct YRig {
    a_ops: Vec<(i32, i32)>,
    b_ops: Vec<(i32, i32)>,
    affine: Kernel,
    config: LaunchConfig,
    arr: Arc<DeviceBuffer<i32>>,
    g: Graph,
    a: Vec<GraphNode>,
    b: Vec<GraphNode>,
    j: GraphNode,
    r: GraphNode,
    s: Stream,
}

impl YRig {
    fn new() -> Self {
        let (d, ctx) = gpu();
        let s = stream(&d);
        let a_ops = vec![(2, 1), (3, 2), (5, 3)];
        let b_ops = vec![(2, 7), (3, 1)];
        let (affine, combine, _) = parallel_kernels(&d);
        let config = LaunchConfig::new(1, 1);
        let arr = Arc::new(DeviceBuffer::<i32>::zeroed(&d, 3, &s).unwrap());
        s.sync().unwrap();
        let mut g = Graph::new(&ctx).unwrap();
        let (pa, pb, pr) = (
            arr.shared_slice(0..1).unwrap(),
            arr.shared_slice(1..2).unwrap(),
            arr.shared_slice(2..3).unwrap(),
        );
        let arm = |g: &mut Graph, ptr: &ArcView<i32>, ops: &[(i32, i32)]| {
            let mut nodes: Vec<GraphNode> = Vec::new();
            for &(m, b) in ops {
                let deps: Vec<_> = nodes.last().copied().into_iter().collect();
                // SAFETY: `affine` updates the one int of `ptr`, which the graph
                // keeps alive.
                let n = unsafe { g.add_kernel(&deps, &config, &affine, &[ptr, &m, &b]) }.unwrap();
                nodes.push(n);
            }
            nodes
        };
        let a = arm(&mut g, &pa, &a_ops);
        let b = arm(&mut g, &pb, &b_ops);
        let j = g
            .add_empty(&[*a.last().unwrap(), *b.last().unwrap()])
            .unwrap();
        // SAFETY: `combine` writes the third int from the first two, all kept
        // alive by the graph.
        let r = unsafe { g.add_kernel(&[j], &config, &combine, &[&pr, &pa, &pb]) }.unwrap();
        Self {
            a_ops,
            b_ops,
            affine,
            config,
            arr,
            g,
            a,
            b,
            j,
            r,
            s,
        }
    }

    /// Instantiate, reset the ints to 0, launch, sync.
    fn run(&self) {
        let graph = self.g.instantiate(GraphCompleteOptions::default()).unwrap();
        self.arr.shared_view().fill(0, &self.s).unwrap();
        graph.launch(&self.s).unwrap();
        self.s.sync().unwrap();
    }

    /// `(A_out, B_out, R_out)`.
    fn output(&self) -> (i32, i32, i32) {
        let v = self.arr.to_vec(&self.s).unwrap();
        (v[0], v[1], v[2])
    }

    fn expected_output(&self) -> (i32, i32, i32) {
        let apply = |ops: &[(i32, i32)]| ops.iter().fold(0, |v, &(m, b)| v * m + b);
        let a = apply(&self.a_ops);
        let b = apply(&self.b_ops);
        (a, b, (a << 16) | (b & 0xFFFF))
    }

    fn edges(&self) -> HashSet<Edge> {
        self.g
            .edges()
            .unwrap()
            .into_iter()
            .map(|e| (e.from, e.to))
            .collect()
    }

    fn initial_edges(&self) -> HashSet<Edge> {
        let mut e: HashSet<Edge> = self.a.windows(2).map(|w| (w[0], w[1])).collect();
        e.extend(self.b.windows(2).map(|w| (w[0], w[1])));
        e.extend([
            (*self.a.last().unwrap(), self.j),
            (*self.b.last().unwrap(), self.j),
            (self.j, self.r),
        ]);
        e
    }

    fn nodes(&self) -> HashSet<GraphNode> {
        self.g.nodes().unwrap().into_iter().collect()
    }

    fn initial_nodes(&self) -> HashSet<GraphNode> {
        let mut n: HashSet<GraphNode> = self.a.iter().chain(&self.b).copied().collect();
        n.extend([self.j, self.r]);
        n
    }
}

fn set<T: std::hash::Hash + Eq>(items: impl IntoIterator<Item = T>) -> HashSet<T> {
    items.into_iter().collect()
}

#[test]
fn TestMutateYRig__test_baseline() {
    require_gpu!();
    require_libs!("nvrtc");
    let rig = YRig::new();
    rig.run();
    assert_eq!(rig.output(), rig.expected_output());
    assert_eq!(rig.edges(), rig.initial_edges());
    assert_eq!(rig.nodes(), rig.initial_nodes());
}

/// Destroying a1 leaves a race on arm A; arm B and the ordering of `r` after
/// it are checked.
#[test]
fn TestMutateYRig__test_destroy_a1() {
    require_gpu!();
    require_libs!("nvrtc");
    let mut rig = YRig::new();
    let (a0, a1, a2) = (rig.a[0], rig.a[1], rig.a[2]);
    // SAFETY: `a1` is not used again (only compared, as a handle, below).
    unsafe { rig.g.destroy_node(a1) }.unwrap();
    rig.run();
    let (_, b_exp, _) = rig.expected_output();
    let (_, b_out, r_out) = rig.output();
    assert_eq!(b_out, b_exp);
    assert_eq!(r_out & 0xFFFF, b_exp);
    let mut edges = rig.initial_edges();
    edges.remove(&(a0, a1));
    edges.remove(&(a1, a2));
    assert_eq!(rig.edges(), edges);
    let mut nodes = rig.initial_nodes();
    nodes.remove(&a1);
    assert_eq!(rig.nodes(), nodes);
}

#[test]
fn TestMutateYRig__test_destroy_a2() {
    require_gpu!();
    require_libs!("nvrtc");
    let mut rig = YRig::new();
    let (a1, a2, j, r) = (rig.a[1], rig.a[2], rig.j, rig.r);
    // SAFETY: `a2` is not used again (only compared, as a handle, below).
    unsafe { rig.g.destroy_node(a2) }.unwrap();
    rig.g.add_dependency(a1, r).unwrap();
    rig.a_ops.pop();
    rig.run();
    assert_eq!(rig.output(), rig.expected_output());
    let mut edges = rig.initial_edges();
    edges.remove(&(a1, a2));
    edges.remove(&(a2, j));
    edges.insert((a1, r));
    assert_eq!(rig.edges(), edges);
    let mut nodes = rig.initial_nodes();
    nodes.remove(&a2);
    assert_eq!(rig.nodes(), nodes);
}

/// The joining node removed, `r.pred = {a2, b1}`.
#[test]
fn TestMutateYRig__test_destroy_joint() {
    require_gpu!();
    require_libs!("nvrtc");
    let mut rig = YRig::new();
    let (a2, b1, j, r) = (rig.a[2], rig.b[1], rig.j, rig.r);
    // SAFETY: `j` is not used again (only compared, as a handle, below).
    unsafe { rig.g.destroy_node(j) }.unwrap();
    assert!(r.dependencies(&rig.g).unwrap().is_empty());
    rig.g.add_dependency(a2, r).unwrap();
    rig.g.add_dependency(b1, r).unwrap();
    rig.run();
    assert_eq!(rig.output(), rig.expected_output());
    let mut edges = rig.initial_edges();
    for e in [(a2, j), (b1, j), (j, r)] {
        edges.remove(&e);
    }
    edges.extend([(a2, r), (b1, r)]);
    assert_eq!(rig.edges(), edges);
    let mut nodes = rig.initial_nodes();
    nodes.remove(&j);
    assert_eq!(rig.nodes(), nodes);
}

#[test]
fn TestMutateYRig__test_insert_b() {
    require_gpu!();
    require_libs!("nvrtc");
    let mut rig = YRig::new();
    let (m, b) = (5i32, 3i32);
    let pb = rig.arr.shared_slice(1..2).unwrap();
    // SAFETY: `affine` updates the one int of `pb`, which the graph keeps alive.
    let b_new = unsafe {
        rig.g
            .add_kernel(&[], &rig.config, &rig.affine, &[&pb, &m, &b])
    }
    .unwrap();
    let (b0, b1) = (rig.b[0], rig.b[1]);
    rig.g.remove_dependency(b0, b1).unwrap();
    rig.g.add_dependency(b0, b_new).unwrap();
    rig.g.add_dependency(b_new, b1).unwrap();
    rig.b_ops.insert(1, (m, b));
    rig.run();
    assert_eq!(rig.output(), rig.expected_output());
    let mut edges = rig.initial_edges();
    edges.remove(&(b0, b1));
    edges.extend([(b0, b_new), (b_new, b1)]);
    assert_eq!(rig.edges(), edges);
    let mut nodes = rig.initial_nodes();
    nodes.insert(b_new);
    assert_eq!(rig.nodes(), nodes);
}

#[test]
fn test_adjacency_set_pred_direction() {
    require_gpu!();
    let (_d, ctx) = gpu();
    let mut g = Graph::new(&ctx).unwrap();
    let target = g.add_empty(&[]).unwrap();
    let (x, y, z) = (
        g.add_empty(&[]).unwrap(),
        g.add_empty(&[]).unwrap(),
        g.add_empty(&[]).unwrap(),
    );
    let pred = |g: &Graph| set(target.dependencies(g).unwrap());
    assert!(pred(&g).is_empty());
    g.add_dependency(x, target).unwrap();
    g.add_dependency(y, target).unwrap();
    assert_eq!(pred(&g), set([x, y]));
    // The edge is visible from the other direction.
    assert!(x.dependents(&g).unwrap().contains(&target));
    assert!(y.dependents(&g).unwrap().contains(&target));
    assert!(!z.dependents(&g).unwrap().contains(&target));
    g.remove_dependency(x, target).unwrap();
    assert_eq!(pred(&g), set([y]));
    assert!(!x.dependents(&g).unwrap().contains(&target));
}

/// Assigning `node.succ` / `node.pred` replaces the node's edges: the edges not
/// in the new set are removed, the new ones added.
#[test]
fn test_adjacency_set_property_setter() {
    require_gpu!();
    let (_d, ctx) = gpu();
    let mut g = Graph::new(&ctx).unwrap();
    let hub = g.add_empty(&[]).unwrap();
    let (a, b, c) = (
        g.add_empty(&[]).unwrap(),
        g.add_empty(&[]).unwrap(),
        g.add_empty(&[]).unwrap(),
    );
    fn set_succ(g: &mut Graph, node: GraphNode, to: &[GraphNode]) {
        for old in node.dependents(g).unwrap() {
            if !to.contains(&old) {
                g.remove_dependency(node, old).unwrap();
            }
        }
        let have = node.dependents(g).unwrap();
        for &new in to {
            if !have.contains(&new) {
                g.add_dependency(node, new).unwrap();
            }
        }
    }
    fn set_pred(g: &mut Graph, node: GraphNode, from: &[GraphNode]) {
        for old in node.dependencies(g).unwrap() {
            if !from.contains(&old) {
                g.remove_dependency(old, node).unwrap();
            }
        }
        let have = node.dependencies(g).unwrap();
        for &new in from {
            if !have.contains(&new) {
                g.add_dependency(new, node).unwrap();
            }
        }
    }
    set_succ(&mut g, hub, &[a, b]);
    assert_eq!(set(hub.dependents(&g).unwrap()), set([a, b]));
    set_succ(&mut g, hub, &[c]);
    assert_eq!(set(hub.dependents(&g).unwrap()), set([c]));
    assert!(!hub.dependents(&g).unwrap().contains(&a));
    set_succ(&mut g, hub, &[]);
    assert!(hub.dependents(&g).unwrap().is_empty());
    set_pred(&mut g, hub, &[a, b]);
    assert_eq!(set(hub.dependencies(&g).unwrap()), set([a, b]));
    set_pred(&mut g, hub, &[]);
    assert!(hub.dependencies(&g).unwrap().is_empty());
    set_pred(&mut g, hub, &[]);
    assert!(hub.dependencies(&g).unwrap().is_empty());
}

/// Destroying a node takes it and its edges out of the graph. (Python then uses
/// the destroyed node: its `type` is `None`, adding an edge to it is a
/// `CUDAError`, destroying it again does nothing. Here no copy of a destroyed
/// node may be used: `destroy_node`'s safety contract.)
#[test]
fn test_destroyed_node() {
    require_gpu!();
    let (d, ctx) = gpu();
    let s = stream(&d);
    let buf = Arc::new(d.allocate(4, &s).unwrap());
    let mut g = Graph::new(&ctx).unwrap();
    let a = g.add_memset(&[], &buf, 0, 1).unwrap();
    let b = g.add_memset(&[a], &buf, 42, 1).unwrap();
    assert!(g.nodes().unwrap().contains(&b));
    assert!(g.edges().unwrap().iter().any(|e| (e.from, e.to) == (a, b)));
    // SAFETY: `b` is not used again (only compared, as a handle, below).
    unsafe { g.destroy_node(b) }.unwrap();
    assert!(!g.nodes().unwrap().contains(&b));
    assert!(!g.edges().unwrap().iter().any(|e| (e.from, e.to) == (a, b)));
    assert!(a.dependents(&g).unwrap().is_empty());
}

/// The driver refuses to destroy a node of a graph with memory nodes; the node,
/// its edge and its callback stay, and the graph runs it.
#[test]
fn test_failed_destroy_preserves_node_and_attachments() {
    require_gpu!();
    let (d, ctx) = gpu();
    let called = Arc::new(AtomicBool::new(false));
    let c = called.clone();
    let mut g = Graph::new(&ctx).unwrap();
    let alloc = g.add_mem_alloc(&[], 4).unwrap();
    let node = g
        .add_host_callback(&[alloc.node], move || c.store(true, Ordering::SeqCst))
        .unwrap();
    // SAFETY: the driver refuses (checked); `node` stays valid.
    let r = unsafe { g.destroy_node(node) };
    assert!(matches!(r, Err(Error::Driver { .. })), "{r:?}");
    assert!(g.nodes().unwrap().contains(&node));
    assert!(
        g.edges()
            .unwrap()
            .iter()
            .any(|e| (e.from, e.to) == (alloc.node, node))
    );
    let graph = g.instantiate(GraphCompleteOptions::default()).unwrap();
    let s = stream(&d);
    graph.launch(&s).unwrap();
    s.sync().unwrap();
    assert!(called.load(Ordering::SeqCst));
    // The allocation has no free node: freed here, so no graph memory is left
    // behind for the other tests of this process.
    // SAFETY: the launch allocated it (ordered before, on `s`); freed once.
    unsafe { s.free_graph_allocation(&alloc) }.unwrap();
    s.sync().unwrap();
}

/// Python's `CUDAError` from the driver; refused here before the driver is
/// asked (a node of another graph).
#[test]
fn test_cross_graph_edge() {
    require_gpu!();
    let (_d, ctx) = gpu();
    let mut g1 = Graph::new(&ctx).unwrap();
    let mut g2 = Graph::new(&ctx).unwrap();
    let a = g1.add_empty(&[]).unwrap();
    let b = g2.add_empty(&[]).unwrap();
    let r = g1.add_dependency(a, b);
    assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
}

#[test]
fn test_self_edge() {
    require_gpu!();
    let (_d, ctx) = gpu();
    let mut g = Graph::new(&ctx).unwrap();
    let node = g.add_empty(&[]).unwrap();
    let r = g.add_dependency(node, node);
    assert!(matches!(r, Err(Error::Driver { .. })), "{r:?}");
}

/// Four memset + affine pairs in a chain, rewired into four parallel pairs
/// feeding a reduction.
#[test]
fn test_convert_linear_to_fan_in() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, ctx) = gpu();
    let s = stream(&d);
    let (affine, _, reduce_kern) = parallel_kernels(&d);
    let config = LaunchConfig::new(1, 1);
    let arr = Arc::new(DeviceBuffer::<i32>::zeroed(&d, 5, &s).unwrap());
    s.sync().unwrap();
    let values = [10i32, 20, 30, 40];
    let mut g = Graph::new(&ctx).unwrap();
    let mut prev: Vec<GraphNode> = Vec::new();
    for (i, &val) in values.iter().enumerate() {
        let p = arr.shared_slice(i..i + 1).unwrap();
        let ms = g.add_fill(&prev, p.clone(), val).unwrap();
        // SAFETY: `affine` updates the one int of `p`, kept alive by the graph.
        let k = unsafe { g.add_kernel(&[ms], &config, &affine, &[&p, &2i32, &1i32]) }.unwrap();
        prev = vec![k];
    }
    let out = arr.shared_slice(4..5).unwrap();
    let input = arr.shared_slice(0..4).unwrap();
    // SAFETY: `reduce` adds the four ints of `input` into `out`, both kept
    // alive by the graph.
    let reduce_node =
        unsafe { g.add_kernel(&[], &config, &reduce_kern, &[&out, &input, &4usize]) }.unwrap();
    assert_eq!(g.edges().unwrap().len(), 7);
    for node in g.nodes().unwrap() {
        match node.kind(&g).unwrap() {
            GraphNodeKind::Memset => {
                for p in node.dependencies(&g).unwrap() {
                    g.remove_dependency(p, node).unwrap();
                }
            }
            GraphNodeKind::Kernel if node != reduce_node => {
                g.add_dependency(node, reduce_node).unwrap();
            }
            _ => {}
        }
    }
    assert_eq!(g.edges().unwrap().len(), 8);
    let graph = g.instantiate(GraphCompleteOptions::default()).unwrap();
    graph.launch(&s).unwrap();
    s.sync().unwrap();
    let expected: i32 = values.iter().map(|v| 2 * v + 1).sum();
    assert_eq!(arr.to_vec(&s).unwrap()[4], expected);
}
