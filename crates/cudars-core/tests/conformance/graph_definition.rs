//! `cuda_core/tests/graph/test_graph_definition.py` of `cuda.core` (the pinned
//! commit of `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says.
//! Every test needs a GPU.
//!
//! `GraphDefinition()` is `Graph::new(&ctx)`. Python adds a node after a node
//! (`a.allocate(n)`, `a.launch(...)`, `g.join(a, b)`: the graph's virtual entry
//! node for a root); Rust names the dependencies (`g.add_mem_alloc(&[a], n)`,
//! `g.add_kernel(&[a], ...)`, `g.add_empty(&[a, b])`, `&[]` for a root).
//! `node.pred` / `node.succ` are `dependencies(&g)` / `dependents(&g)`,
//! `g.nodes()` / `g.edges()` the same; a node's class and `type` are
//! `node.kind(&g)` ([`GraphNodeKind`]), its attributes `node.params(&g)`
//! ([`GraphNodeParams`]); a node is `Copy + Eq` (Python's `is` on the registry's
//! node objects is `==` on the handle). `alloc.memset(dptr, …)` /
//! `memcpy(dst, src, n)` take raw addresses in Python; here memset and memcpy
//! nodes take owned buffers the graph keeps alive (`add_fill`, `add_copy`), so
//! the ports set and copy device buffers where Python sets graph memory (the
//! porting guide's "Graph definitions" section). Host callbacks are closures:
//! Python's ctypes function and its `user_data` bytes are one closure that
//! captures them.
//!
//! [`GraphNodeKind`]: cudars_core::GraphNodeKind
//! [`GraphNodeParams`]: cudars_core::GraphNodeParams

use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use cudars_core::{
    CompileTarget, ConditionalKind, Context, Device, DeviceBuffer, Error, EventOptions, Graph,
    GraphAllocOptions, GraphCompleteOptions, GraphDebugPrintOptions, GraphMemoryType, GraphNode,
    GraphNodeKind, GraphNodeParams, InvalidKind, LaunchConfig, Location, ObjectCode, Program,
    ProgramOptions, SourceCode, Stream, StreamOptions,
};
use cudars_tests::{require_gpu, require_gpus, require_libs};

const ALLOC_SIZE: usize = 1024;

/// `helpers/graph_kernels.py`'s `compile_common_kernels`.
pub(crate) const COMMON_KERNELS: &str = "
    __global__ void empty_kernel() {}
    __global__ void add_one(int *a) { *a += 1; }
    ";

/// `compile_conditional_kernels(int)`.
pub(crate) const CONDITIONAL_KERNELS: &str = "
    extern \"C\" __device__ __cudart_builtin__ void CUDARTAPI cudaGraphSetConditional(cudaGraphConditionalHandle handle,
                                                                                    unsigned int value);
    __global__ void empty_kernel() {}
    __global__ void add_one(int *a) { *a += 1; }
    __global__ void set_handle(cudaGraphConditionalHandle handle, unsigned int value) {
        cudaGraphSetConditional(handle, value);
    }
    __global__ void loop_kernel(cudaGraphConditionalHandle handle)
    {
        static int count = 10;
        cudaGraphSetConditional(handle, --count ? 1 : 0);
    }
    ";

/// Device 0, current on this thread, and its context.
pub(crate) fn gpu() -> (Device, Context) {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let ctx = d.context().unwrap();
    (d, ctx)
}

pub(crate) fn stream(d: &Device) -> Stream {
    d.create_stream(StreamOptions::default()).unwrap()
}

/// The Python helpers' compile: C++17, a cubin for the device, with the names
/// as name expressions.
pub(crate) fn compile(d: &Device, src: &str, names: &[&str]) -> ObjectCode {
    Program::new(
        SourceCode::Cxx(src),
        ProgramOptions {
            std: Some("c++17".into()),
            arch: Some(d.arch().unwrap()),
            ..Default::default()
        },
    )
    .unwrap()
    .compile(CompileTarget::Cubin, names)
    .unwrap()
}

pub(crate) fn common_kernels(d: &Device) -> ObjectCode {
    compile(d, COMMON_KERNELS, &["empty_kernel", "add_one"])
}

pub(crate) fn conditional_kernels(d: &Device) -> ObjectCode {
    compile(
        d,
        CONDITIONAL_KERNELS,
        &["empty_kernel", "add_one", "set_handle", "loop_kernel"],
    )
}

/// `g.allocate(ALLOC_SIZE)` after `deps`: the allocation node.
fn alloc(g: &mut Graph, deps: &[GraphNode]) -> GraphNode {
    g.add_mem_alloc(deps, ALLOC_SIZE).unwrap().node
}

// =============================================================================
// GraphSpec: representative graph topologies
// =============================================================================

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Topo {
    Empty,
    Single,
    Chain,
    FanOut,
    FanIn,
    Diamond,
    Disconnected,
}

const NONEMPTY: [Topo; 6] = [
    Topo::Single,
    Topo::Chain,
    Topo::FanOut,
    Topo::FanIn,
    Topo::Diamond,
    Topo::Disconnected,
];

/// A node by its name in the spec.
type Named = (&'static str, GraphNode);
/// An edge between two named nodes.
type NamedEdge = (&'static str, &'static str);

struct GraphSpec {
    g: Graph,
    named: Vec<(&'static str, GraphNode)>,
    edges: BTreeSet<(&'static str, &'static str)>,
}

impl GraphSpec {
    fn name_of(&self, n: GraphNode) -> &'static str {
        self.named
            .iter()
            .find(|(_, m)| *m == n)
            .unwrap_or_else(|| panic!("{n:?} is not a named node"))
            .0
    }
    /// `expected_pred` (the specs list them; each is what the edges give).
    fn expected_pred(&self, name: &str) -> BTreeSet<&'static str> {
        self.edges
            .iter()
            .filter(|(_, b)| *b == name)
            .map(|(a, _)| *a)
            .collect()
    }
    fn expected_succ(&self, name: &str) -> BTreeSet<&'static str> {
        self.edges
            .iter()
            .filter(|(a, _)| *a == name)
            .map(|(_, b)| *b)
            .collect()
    }
}

fn build_topo(t: Topo, ctx: &Context) -> GraphSpec {
    let mut g = Graph::new(ctx).unwrap();
    let (named, edges): (Vec<Named>, &[NamedEdge]) = match t {
        Topo::Empty => (vec![], &[]),
        Topo::Single => {
            let a = alloc(&mut g, &[]);
            (vec![("a", a)], &[])
        }
        Topo::Chain => {
            let a = alloc(&mut g, &[]);
            let b = alloc(&mut g, &[a]);
            let c = alloc(&mut g, &[b]);
            (
                vec![("a", a), ("b", b), ("c", c)],
                &[("a", "b"), ("b", "c")],
            )
        }
        Topo::FanOut => {
            let a = alloc(&mut g, &[]);
            let b = alloc(&mut g, &[a]);
            let c = alloc(&mut g, &[a]);
            let d = alloc(&mut g, &[a]);
            (
                vec![("a", a), ("b", b), ("c", c), ("d", d)],
                &[("a", "b"), ("a", "c"), ("a", "d")],
            )
        }
        Topo::FanIn => {
            let a = alloc(&mut g, &[]);
            let b = alloc(&mut g, &[]);
            let c = alloc(&mut g, &[]);
            let d = g.add_empty(&[a, b, c]).unwrap();
            (
                vec![("a", a), ("b", b), ("c", c), ("d", d)],
                &[("a", "d"), ("b", "d"), ("c", "d")],
            )
        }
        Topo::Diamond => {
            let a = alloc(&mut g, &[]);
            let b = alloc(&mut g, &[a]);
            let c = alloc(&mut g, &[a]);
            let d = g.add_empty(&[b, c]).unwrap();
            (
                vec![("a", a), ("b", b), ("c", c), ("d", d)],
                &[("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")],
            )
        }
        Topo::Disconnected => {
            let a = alloc(&mut g, &[]);
            let b = alloc(&mut g, &[]);
            (vec![("a", a), ("b", b)], &[])
        }
    };
    GraphSpec {
        g,
        named,
        edges: edges.iter().copied().collect(),
    }
}

/// `test_node_count`: the graph holds the expected number of nodes.
fn node_count(t: Topo) {
    let (_d, ctx) = gpu();
    let spec = build_topo(t, &ctx);
    assert_eq!(spec.g.nodes().unwrap().len(), spec.named.len());
}

/// `test_edges`: `edges()` is exactly the expected edges.
fn edges(t: Topo) {
    let (_d, ctx) = gpu();
    let spec = build_topo(t, &ctx);
    let actual: BTreeSet<_> = spec
        .g
        .edges()
        .unwrap()
        .iter()
        .map(|e| (spec.name_of(e.from), spec.name_of(e.to)))
        .collect();
    assert_eq!(actual, spec.edges, "{t:?}");
}

// =============================================================================
// NodeSpec: representative node types
// =============================================================================

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NodeSpec {
    Empty,
    Kernel,
    Alloc,
    AllocManaged,
    Free,
    Memset,
    MemsetU16,
    MemsetU32,
    Memcpy,
    ChildGraph,
    HostCallback,
    HostCallbackCfunc,
    EventRecord,
    EventWait,
    IfThen,
    IfElse,
    WhileLoop,
    Switch,
}

impl NodeSpec {
    /// The Python class (`EmptyNode`, `KernelNode`, …) and `node.type`
    /// (`CU_GRAPH_NODE_TYPE_*`): both are the kind here.
    fn kind(self) -> GraphNodeKind {
        match self {
            Self::Empty => GraphNodeKind::Empty,
            Self::Kernel => GraphNodeKind::Kernel,
            Self::Alloc | Self::AllocManaged => GraphNodeKind::MemAlloc,
            Self::Free => GraphNodeKind::MemFree,
            Self::Memset | Self::MemsetU16 | Self::MemsetU32 => GraphNodeKind::Memset,
            Self::Memcpy => GraphNodeKind::Memcpy,
            Self::ChildGraph => GraphNodeKind::ChildGraph,
            Self::HostCallback | Self::HostCallbackCfunc => GraphNodeKind::HostCallback,
            Self::EventRecord => GraphNodeKind::EventRecord,
            Self::EventWait => GraphNodeKind::EventWait,
            Self::IfThen | Self::IfElse | Self::WhileLoop | Self::Switch => {
                GraphNodeKind::Conditional
            }
        }
    }
}

/// What a node spec's builder returns: the graph, the node, and the expected
/// attributes' inputs.
struct BuiltNode {
    g: Graph,
    node: GraphNode,
    device: Device,
    kernel: Option<cudars_core::Kernel>,
    event: Option<Arc<cudars_core::Event>>,
    condition: Option<cudars_core::GraphCondition>,
    /// The addresses the node names (`dptr`; `dst` and `src` for a memcpy).
    ptrs: Vec<u64>,
    _stream: Stream,
}

fn build_node(spec: NodeSpec) -> BuiltNode {
    let (d, ctx) = gpu();
    let s = stream(&d);
    let mut g = Graph::new(&ctx).unwrap();
    let mut kernel = None;
    let mut event = None;
    let mut condition = None;
    let mut ptrs = Vec::new();
    let node = match spec {
        NodeSpec::Empty => {
            let a = alloc(&mut g, &[]);
            let b = alloc(&mut g, &[]);
            g.add_empty(&[a, b]).unwrap()
        }
        NodeSpec::Kernel => {
            let k = common_kernels(&d).get_kernel("empty_kernel").unwrap();
            let mut config = LaunchConfig::new((2, 3, 1), (32, 4, 1));
            config.shmem_size = 128;
            let entry = alloc(&mut g, &[]);
            // SAFETY: the kernel takes no arguments and touches no memory.
            let node = unsafe { g.add_kernel(&[entry], &config, &k, &[]) }.unwrap();
            kernel = Some(k);
            node
        }
        NodeSpec::Alloc | NodeSpec::AllocManaged => {
            let entry = alloc(&mut g, &[]);
            let mut options = GraphAllocOptions::new();
            if spec == NodeSpec::AllocManaged {
                options = options.memory_type(GraphMemoryType::Managed);
            }
            let a = g
                .add_mem_alloc_with(&[entry], ALLOC_SIZE, &options)
                .unwrap();
            ptrs.push(a.ptr.0);
            a.node
        }
        NodeSpec::Free => {
            let a = g.add_mem_alloc(&[], ALLOC_SIZE).unwrap();
            ptrs.push(a.ptr.0);
            g.add_mem_free(&[a.node], &a).unwrap()
        }
        NodeSpec::Memset => {
            let buf = Arc::new(DeviceBuffer::<u8>::zeroed(&d, ALLOC_SIZE, &s).unwrap());
            ptrs.push(buf.as_buffer().ptr());
            let entry = alloc(&mut g, &[]);
            g.add_fill(&[entry], buf.shared_view(), 42u8).unwrap()
        }
        NodeSpec::MemsetU16 => {
            let buf = Arc::new(DeviceBuffer::<u16>::zeroed(&d, ALLOC_SIZE / 2, &s).unwrap());
            ptrs.push(buf.as_buffer().ptr());
            let entry = alloc(&mut g, &[]);
            let value = u16::from_le_bytes([0xab, 0xcd]);
            g.add_fill(&[entry], buf.shared_view(), value).unwrap()
        }
        NodeSpec::MemsetU32 => {
            let buf = Arc::new(DeviceBuffer::<u32>::zeroed(&d, ALLOC_SIZE / 4, &s).unwrap());
            ptrs.push(buf.as_buffer().ptr());
            let entry = alloc(&mut g, &[]);
            let value = u32::from_le_bytes([0x01, 0x02, 0x03, 0x04]);
            g.add_fill(&[entry], buf.shared_view(), value).unwrap()
        }
        NodeSpec::Memcpy => {
            let src = Arc::new(DeviceBuffer::<u8>::zeroed(&d, ALLOC_SIZE, &s).unwrap());
            let dst = Arc::new(DeviceBuffer::<u8>::zeroed(&d, ALLOC_SIZE, &s).unwrap());
            ptrs.push(dst.as_buffer().ptr());
            ptrs.push(src.as_buffer().ptr());
            let a = alloc(&mut g, &[]);
            let b = alloc(&mut g, &[]);
            let dep = g.add_empty(&[a, b]).unwrap();
            g.add_copy(&[dep], dst.shared_view(), src.shared_view())
                .unwrap()
        }
        NodeSpec::ChildGraph => {
            let k = common_kernels(&d).get_kernel("empty_kernel").unwrap();
            let config = LaunchConfig::new(1, 1);
            let mut child = Graph::new(&ctx).unwrap();
            // SAFETY: the kernel takes no arguments and touches no memory.
            unsafe {
                child.add_kernel(&[], &config, &k, &[]).unwrap();
                child.add_kernel(&[], &config, &k, &[]).unwrap();
            }
            g.add_child(&[], &child).unwrap()
        }
        NodeSpec::HostCallback | NodeSpec::HostCallbackCfunc => {
            g.add_host_callback(&[], || {}).unwrap()
        }
        NodeSpec::EventRecord | NodeSpec::EventWait => {
            let ev = Arc::new(d.create_event(EventOptions::default()).unwrap());
            let entry = alloc(&mut g, &[]);
            let node = if spec == NodeSpec::EventRecord {
                g.add_event_record(&[entry], &ev).unwrap()
            } else {
                g.add_event_wait(&[entry], &ev).unwrap()
            };
            event = Some(ev);
            node
        }
        NodeSpec::IfThen | NodeSpec::IfElse | NodeSpec::WhileLoop | NodeSpec::Switch => {
            // `try_create_condition(g)`: default value 1.
            let c = g.create_condition(Some(1)).unwrap();
            let kind = match spec {
                NodeSpec::IfThen => ConditionalKind::If,
                NodeSpec::IfElse => ConditionalKind::IfElse,
                NodeSpec::WhileLoop => ConditionalKind::While,
                _ => ConditionalKind::Switch(3),
            };
            let (node, _bodies) = g.add_conditional(&[], c, kind).unwrap();
            condition = Some(c);
            node
        }
    };
    BuiltNode {
        g,
        node,
        device: d,
        kernel,
        event,
        condition,
        ptrs,
        _stream: s,
    }
}

/// `test_node_attrs`' expected attributes, checked on `node`'s parameters as
/// the driver reports them. (Python skips the specs without attributes, `empty`
/// and `host_callback_cfunc`; their ports check the kind's parameters.)
fn check_attrs(spec: NodeSpec, b: &BuiltNode, node: GraphNode) {
    let g = &b.g;
    let params = node.params(g).unwrap();
    match (spec, params) {
        (NodeSpec::Empty, GraphNodeParams::Empty) => {}
        (NodeSpec::Kernel, GraphNodeParams::Kernel(p)) => {
            assert_eq!((p.grid.x, p.grid.y, p.grid.z), (2, 3, 1));
            assert_eq!((p.block.x, p.block.y, p.block.z), (32, 4, 1));
            assert_eq!(p.shared_mem_bytes, 128);
            // `kernel`: the node launches the kernel (its function in the
            // graph's context, or the library kernel itself).
            let k = b.kernel.as_ref().unwrap();
            assert!(!p.function.is_null() || !p.kernel.is_null());
            assert!(p.kernel.is_null() || Some(p.kernel) == k.kernel_handle());
            assert_eq!(node.kernel(g).unwrap().unwrap().handle(), k.handle());
        }
        (NodeSpec::Alloc | NodeSpec::AllocManaged, GraphNodeParams::MemAlloc(p)) => {
            assert_ne!(p.ptr.0, 0);
            assert_eq!(p.ptr.0, b.ptrs[0]);
            assert_eq!(p.size, ALLOC_SIZE);
            assert_eq!(p.device, Some(b.device.ordinal() as i32));
            let expected = if spec == NodeSpec::Alloc {
                GraphMemoryType::Device
            } else {
                GraphMemoryType::Managed
            };
            assert_eq!(p.memory_type, expected);
            assert_eq!(
                p.memory_type.to_string(),
                if spec == NodeSpec::Alloc {
                    "device"
                } else {
                    "managed"
                }
            );
            // `peer_access`: `()`.
            assert!(node.peer_access(g).unwrap().is_empty());
        }
        (NodeSpec::Free, GraphNodeParams::MemFree(p)) => assert_eq!(p.0, b.ptrs[0]),
        (
            NodeSpec::Memset | NodeSpec::MemsetU16 | NodeSpec::MemsetU32,
            GraphNodeParams::Memset(p),
        ) => {
            let (value, element_size) = match spec {
                NodeSpec::Memset => (42, 1),
                NodeSpec::MemsetU16 => (u32::from(u16::from_le_bytes([0xab, 0xcd])), 2),
                _ => (u32::from_le_bytes([0x01, 0x02, 0x03, 0x04]), 4),
            };
            assert_eq!(p.dst.0, b.ptrs[0]);
            assert_eq!(p.value, value);
            assert_eq!(p.element_size, element_size);
            assert_eq!(p.width, ALLOC_SIZE / element_size as usize);
            assert_eq!(p.height, 1);
            assert_eq!(p.pitch, 0);
        }
        (NodeSpec::Memcpy, GraphNodeParams::Memcpy(p)) => {
            assert_eq!(p.dst.0, b.ptrs[0]);
            assert_eq!(p.src.0, b.ptrs[1]);
            assert_eq!(p.width_in_bytes, ALLOC_SIZE);
            assert_eq!((p.height, p.depth), (1, 1));
        }
        (NodeSpec::ChildGraph, GraphNodeParams::ChildGraph(child)) => {
            assert_eq!(child.nodes().unwrap().len(), 2);
        }
        (
            NodeSpec::HostCallback | NodeSpec::HostCallbackCfunc,
            GraphNodeParams::HostCallback(p),
        ) => {
            // `callback is my_callback`: the node calls this crate's trampoline
            // with the closure the graph holds.
            assert!(p.function.is_some());
            assert!(!p.user_data.is_null());
        }
        (NodeSpec::EventRecord, GraphNodeParams::EventRecord(e))
        | (NodeSpec::EventWait, GraphNodeParams::EventWait(e)) => {
            let ev = b.event.as_ref().unwrap();
            assert_eq!(e.handle, ev.handle());
            assert!(Arc::ptr_eq(e.event.as_ref().unwrap(), ev));
        }
        (
            NodeSpec::IfThen | NodeSpec::IfElse | NodeSpec::WhileLoop | NodeSpec::Switch,
            GraphNodeParams::Conditional(info),
        ) => {
            let info = info.expect("a conditional node this graph added reports its condition");
            assert_eq!(Some(info.condition), b.condition);
            // `cond_type` ("if" for both if nodes, "while", "switch") and
            // `branches` (then / then, else_ / body / the three branches).
            let (kind, branches) = match spec {
                NodeSpec::IfThen => (ConditionalKind::If, 1),
                NodeSpec::IfElse => (ConditionalKind::IfElse, 2),
                NodeSpec::WhileLoop => (ConditionalKind::While, 1),
                _ => (ConditionalKind::Switch(3), 3),
            };
            assert_eq!(info.kind, kind);
            assert_eq!(node.bodies(g).unwrap().len(), branches);
        }
        (spec, params) => panic!("{spec:?} read back as {params:?}"),
    }
}

/// `test_node_isinstance` and `test_node_type_property`: the node's kind.
fn node_kind(spec: NodeSpec) {
    let b = build_node(spec);
    assert_eq!(b.node.kind(&b.g).unwrap(), spec.kind());
}

/// `test_node_type_preserved_by_nodes`.
fn node_type_preserved_by_nodes(spec: NodeSpec) {
    let b = build_node(spec);
    let matched: Vec<_> =
        b.g.nodes()
            .unwrap()
            .into_iter()
            .filter(|n| *n == b.node)
            .collect();
    assert_eq!(matched.len(), 1);
    assert_eq!(matched[0].kind(&b.g).unwrap(), spec.kind());
}

/// `test_node_type_preserved_by_pred_succ`.
fn node_type_preserved_by_pred_succ(spec: NodeSpec) {
    let b = build_node(spec);
    for pred in b.node.dependencies(&b.g).unwrap() {
        let matched: Vec<_> = pred
            .dependents(&b.g)
            .unwrap()
            .into_iter()
            .filter(|n| *n == b.node)
            .collect();
        assert_eq!(matched.len(), 1);
        assert_eq!(matched[0].kind(&b.g).unwrap(), spec.kind());
    }
}

/// `test_node_attrs`.
fn node_attrs(spec: NodeSpec) {
    let b = build_node(spec);
    check_attrs(spec, &b, b.node);
}

/// `test_node_attrs_preserved_by_nodes`: the node found in `nodes()` has the
/// same attributes.
fn node_attrs_preserved_by_nodes(spec: NodeSpec) {
    let b = build_node(spec);
    let retrieved =
        b.g.nodes()
            .unwrap()
            .into_iter()
            .find(|n| *n == b.node)
            .unwrap();
    check_attrs(spec, &b, retrieved);
}

// =============================================================================
// Instantiation and execution
// =============================================================================

/// `_EXECUTE_OPTIONS`: no options, `auto_free_on_launch`, `use_node_priority`,
/// and `upload_stream` (Python's instantiate uploads on that stream; here the
/// upload is the explicit `exec.upload(&stream)` the other cases make too).
#[derive(Debug, Clone, Copy)]
enum Exec {
    NoOptions,
    AutoFree,
    NodePriority,
    UploadStream,
}

fn exec_options(e: Exec) -> GraphCompleteOptions {
    match e {
        Exec::NoOptions | Exec::UploadStream => GraphCompleteOptions::default(),
        Exec::AutoFree => GraphCompleteOptions {
            auto_free_on_launch: true,
            ..Default::default()
        },
        Exec::NodePriority => GraphCompleteOptions {
            use_node_priority: true,
            ..Default::default()
        },
    }
}

/// `_instantiate_and_upload`, then launch and sync.
fn run(g: &Graph, e: Exec, s: &Stream) {
    let exec = g.instantiate(exec_options(e)).unwrap();
    exec.upload(s).unwrap();
    exec.launch(s).unwrap();
    s.sync().unwrap();
}

/// `_INSTANTIATE_ONLY_OPTIONS`: no argument, `None`, both flags.
fn instantiate_only_options(case: &str) -> GraphCompleteOptions {
    match case {
        "no-options" | "none-options" => GraphCompleteOptions::default(),
        "all-bool-flags" => GraphCompleteOptions {
            auto_free_on_launch: true,
            use_node_priority: true,
            ..Default::default()
        },
        other => panic!("{other}"),
    }
}

fn instantiate_empty_graph(case: &str) {
    let (_d, ctx) = gpu();
    let g = Graph::new(&ctx).unwrap();
    g.instantiate(instantiate_only_options(case)).unwrap();
}

fn instantiate_with_nodes(case: &str) {
    let (_d, ctx) = gpu();
    let mut g = Graph::new(&ctx).unwrap();
    alloc(&mut g, &[]);
    alloc(&mut g, &[]);
    g.instantiate(instantiate_only_options(case)).unwrap();
}

fn instantiate_and_execute_kernel(e: Exec) {
    let (d, ctx) = gpu();
    let k = common_kernels(&d).get_kernel("empty_kernel").unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    // SAFETY: the kernel takes no arguments and touches no memory.
    unsafe { g.add_kernel(&[], &LaunchConfig::new(1, 1), &k, &[]) }.unwrap();
    let s = stream(&d);
    run(&g, e, &s);
}

fn instantiate_and_execute_alloc_free(e: Exec) {
    let (d, ctx) = gpu();
    let mut g = Graph::new(&ctx).unwrap();
    let a = g.add_mem_alloc(&[], ALLOC_SIZE).unwrap();
    g.add_mem_free(&[a.node], &a).unwrap();
    let s = stream(&d);
    run(&g, e, &s);
}

/// Python sets its graph allocation between the alloc and free nodes; the
/// memset node here sets a device buffer at the same place in the graph, and
/// the port also checks the bytes it set.
fn instantiate_and_execute_memset(e: Exec) {
    let (d, ctx) = gpu();
    let s = stream(&d);
    let buf = Arc::new(DeviceBuffer::<u8>::zeroed(&d, ALLOC_SIZE, &s).unwrap());
    s.sync().unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let a = g.add_mem_alloc(&[], ALLOC_SIZE).unwrap();
    let ms = g.add_fill(&[a.node], buf.shared_view(), 0xABu8).unwrap();
    g.add_mem_free(&[ms], &a).unwrap();
    run(&g, e, &s);
    assert!(buf.to_vec(&s).unwrap().iter().all(|&b| b == 0xAB));
}

/// As above: `src` set to 0xAB, copied to `dst`, which reads back all 0xAB.
fn instantiate_and_execute_memcpy(e: Exec) {
    let (d, ctx) = gpu();
    let s = stream(&d);
    let src = Arc::new(DeviceBuffer::<u8>::zeroed(&d, ALLOC_SIZE, &s).unwrap());
    let dst = Arc::new(DeviceBuffer::<u8>::zeroed(&d, ALLOC_SIZE, &s).unwrap());
    s.sync().unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let src_alloc = g.add_mem_alloc(&[], ALLOC_SIZE).unwrap();
    let dst_alloc = g.add_mem_alloc(&[], ALLOC_SIZE).unwrap();
    let dep = g.add_empty(&[src_alloc.node, dst_alloc.node]).unwrap();
    let ms = g.add_fill(&[dep], src.shared_view(), 0xABu8).unwrap();
    let cp = g
        .add_copy(&[ms], dst.shared_view(), src.shared_view())
        .unwrap();
    g.add_mem_free(&[cp], &src_alloc).unwrap();
    // (Python leaves its destination allocation to outlive the launch; it is
    // freed here, so the graph leaves no graph memory behind.)
    g.add_mem_free(&[cp], &dst_alloc).unwrap();
    run(&g, e, &s);
    let host = dst.to_vec(&s).unwrap();
    assert_eq!(host.len(), ALLOC_SIZE);
    assert!(host.iter().all(|&b| b == 0xAB));
}

/// The if / if-else / switch execution tests: an int set to 0, `set_handle`
/// sets the condition to `value`, the conditional node's bodies each add one
/// (`add_ones[i]` kernels in body `i`); returns the int.
fn run_conditional(kind: ConditionalKind, value: u32, add_ones: &[usize]) -> i32 {
    let (d, ctx) = gpu();
    let s = stream(&d);
    let code = conditional_kernels(&d);
    let set_handle = code.get_kernel("set_handle").unwrap();
    let add_one = code.get_kernel("add_one").unwrap();
    let x = Arc::new(DeviceBuffer::<i32>::zeroed(&d, 1, &s).unwrap());
    s.sync().unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let condition = g.create_condition(Some(0)).unwrap();
    let cfg = LaunchConfig::new(1, 1);
    let ms = g.add_fill(&[], x.shared_view(), 0i32).unwrap();
    // SAFETY: `set_handle` takes the condition and an unsigned int.
    let setter = unsafe { g.add_kernel(&[ms], &cfg, &set_handle, &[&condition, &value]) }.unwrap();
    let (_node, mut bodies) = g.add_conditional(&[setter], condition, kind).unwrap();
    for (body, &n) in bodies.iter_mut().zip(add_ones) {
        let mut deps = Vec::new();
        for _ in 0..n {
            // SAFETY: `add_one` increments the one int of `x`, which the graph
            // keeps alive.
            let k = unsafe { body.add_kernel(&deps, &cfg, &add_one, &[&x.shared_view()]) }.unwrap();
            deps = vec![k];
        }
    }
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    exec.upload(&s).unwrap();
    exec.launch(&s).unwrap();
    s.sync().unwrap();
    x.to_vec(&s).unwrap()[0]
}

#[test]
fn test_node_count__empty() {
    require_gpu!();
    node_count(Topo::Empty);
}

#[test]
fn test_node_count__single() {
    require_gpu!();
    node_count(Topo::Single);
}

#[test]
fn test_node_count__chain() {
    require_gpu!();
    node_count(Topo::Chain);
}

#[test]
fn test_node_count__fan_out() {
    require_gpu!();
    node_count(Topo::FanOut);
}

#[test]
fn test_node_count__fan_in() {
    require_gpu!();
    node_count(Topo::FanIn);
}

#[test]
fn test_node_count__diamond() {
    require_gpu!();
    node_count(Topo::Diamond);
}

#[test]
fn test_node_count__disconnected() {
    require_gpu!();
    node_count(Topo::Disconnected);
}

#[test]
fn test_edges__empty() {
    require_gpu!();
    edges(Topo::Empty);
}

#[test]
fn test_edges__single() {
    require_gpu!();
    edges(Topo::Single);
}

#[test]
fn test_edges__chain() {
    require_gpu!();
    edges(Topo::Chain);
}

#[test]
fn test_edges__fan_out() {
    require_gpu!();
    edges(Topo::FanOut);
}

#[test]
fn test_edges__fan_in() {
    require_gpu!();
    edges(Topo::FanIn);
}

#[test]
fn test_edges__diamond() {
    require_gpu!();
    edges(Topo::Diamond);
}

#[test]
fn test_edges__disconnected() {
    require_gpu!();
    edges(Topo::Disconnected);
}

#[test]
fn test_node_isinstance__empty() {
    require_gpu!();
    node_kind(NodeSpec::Empty);
}

#[test]
fn test_node_isinstance__kernel() {
    require_gpu!();
    require_libs!("nvrtc");
    node_kind(NodeSpec::Kernel);
}

#[test]
fn test_node_isinstance__alloc() {
    require_gpu!();
    node_kind(NodeSpec::Alloc);
}

#[test]
fn test_node_isinstance__alloc_managed() {
    require_gpu!();
    node_kind(NodeSpec::AllocManaged);
}

#[test]
fn test_node_isinstance__free() {
    require_gpu!();
    node_kind(NodeSpec::Free);
}

#[test]
fn test_node_isinstance__memset() {
    require_gpu!();
    node_kind(NodeSpec::Memset);
}

#[test]
fn test_node_isinstance__memset_u16() {
    require_gpu!();
    node_kind(NodeSpec::MemsetU16);
}

#[test]
fn test_node_isinstance__memset_u32() {
    require_gpu!();
    node_kind(NodeSpec::MemsetU32);
}

#[test]
fn test_node_isinstance__memcpy() {
    require_gpu!();
    node_kind(NodeSpec::Memcpy);
}

#[test]
fn test_node_isinstance__child_graph() {
    require_gpu!();
    require_libs!("nvrtc");
    node_kind(NodeSpec::ChildGraph);
}

#[test]
fn test_node_isinstance__host_callback() {
    require_gpu!();
    node_kind(NodeSpec::HostCallback);
}

#[test]
fn test_node_isinstance__host_callback_cfunc() {
    require_gpu!();
    node_kind(NodeSpec::HostCallbackCfunc);
}

#[test]
fn test_node_isinstance__event_record() {
    require_gpu!();
    node_kind(NodeSpec::EventRecord);
}

#[test]
fn test_node_isinstance__event_wait() {
    require_gpu!();
    node_kind(NodeSpec::EventWait);
}

#[test]
fn test_node_isinstance__if_then() {
    require_gpu!();
    node_kind(NodeSpec::IfThen);
}

#[test]
fn test_node_isinstance__if_else() {
    require_gpu!();
    node_kind(NodeSpec::IfElse);
}

#[test]
fn test_node_isinstance__while_loop() {
    require_gpu!();
    node_kind(NodeSpec::WhileLoop);
}

#[test]
fn test_node_isinstance__switch() {
    require_gpu!();
    node_kind(NodeSpec::Switch);
}

#[test]
fn test_node_type_property__empty() {
    require_gpu!();
    node_kind(NodeSpec::Empty);
}

#[test]
fn test_node_type_property__kernel() {
    require_gpu!();
    require_libs!("nvrtc");
    node_kind(NodeSpec::Kernel);
}

#[test]
fn test_node_type_property__alloc() {
    require_gpu!();
    node_kind(NodeSpec::Alloc);
}

#[test]
fn test_node_type_property__alloc_managed() {
    require_gpu!();
    node_kind(NodeSpec::AllocManaged);
}

#[test]
fn test_node_type_property__free() {
    require_gpu!();
    node_kind(NodeSpec::Free);
}

#[test]
fn test_node_type_property__memset() {
    require_gpu!();
    node_kind(NodeSpec::Memset);
}

#[test]
fn test_node_type_property__memset_u16() {
    require_gpu!();
    node_kind(NodeSpec::MemsetU16);
}

#[test]
fn test_node_type_property__memset_u32() {
    require_gpu!();
    node_kind(NodeSpec::MemsetU32);
}

#[test]
fn test_node_type_property__memcpy() {
    require_gpu!();
    node_kind(NodeSpec::Memcpy);
}

#[test]
fn test_node_type_property__child_graph() {
    require_gpu!();
    require_libs!("nvrtc");
    node_kind(NodeSpec::ChildGraph);
}

#[test]
fn test_node_type_property__host_callback() {
    require_gpu!();
    node_kind(NodeSpec::HostCallback);
}

#[test]
fn test_node_type_property__host_callback_cfunc() {
    require_gpu!();
    node_kind(NodeSpec::HostCallbackCfunc);
}

#[test]
fn test_node_type_property__event_record() {
    require_gpu!();
    node_kind(NodeSpec::EventRecord);
}

#[test]
fn test_node_type_property__event_wait() {
    require_gpu!();
    node_kind(NodeSpec::EventWait);
}

#[test]
fn test_node_type_property__if_then() {
    require_gpu!();
    node_kind(NodeSpec::IfThen);
}

#[test]
fn test_node_type_property__if_else() {
    require_gpu!();
    node_kind(NodeSpec::IfElse);
}

#[test]
fn test_node_type_property__while_loop() {
    require_gpu!();
    node_kind(NodeSpec::WhileLoop);
}

#[test]
fn test_node_type_property__switch() {
    require_gpu!();
    node_kind(NodeSpec::Switch);
}

#[test]
fn test_node_type_preserved_by_nodes__empty() {
    require_gpu!();
    node_type_preserved_by_nodes(NodeSpec::Empty);
}

#[test]
fn test_node_type_preserved_by_nodes__kernel() {
    require_gpu!();
    require_libs!("nvrtc");
    node_type_preserved_by_nodes(NodeSpec::Kernel);
}

#[test]
fn test_node_type_preserved_by_nodes__alloc() {
    require_gpu!();
    node_type_preserved_by_nodes(NodeSpec::Alloc);
}

#[test]
fn test_node_type_preserved_by_nodes__alloc_managed() {
    require_gpu!();
    node_type_preserved_by_nodes(NodeSpec::AllocManaged);
}

#[test]
fn test_node_type_preserved_by_nodes__free() {
    require_gpu!();
    node_type_preserved_by_nodes(NodeSpec::Free);
}

#[test]
fn test_node_type_preserved_by_nodes__memset() {
    require_gpu!();
    node_type_preserved_by_nodes(NodeSpec::Memset);
}

#[test]
fn test_node_type_preserved_by_nodes__memset_u16() {
    require_gpu!();
    node_type_preserved_by_nodes(NodeSpec::MemsetU16);
}

#[test]
fn test_node_type_preserved_by_nodes__memset_u32() {
    require_gpu!();
    node_type_preserved_by_nodes(NodeSpec::MemsetU32);
}

#[test]
fn test_node_type_preserved_by_nodes__memcpy() {
    require_gpu!();
    node_type_preserved_by_nodes(NodeSpec::Memcpy);
}

#[test]
fn test_node_type_preserved_by_nodes__child_graph() {
    require_gpu!();
    require_libs!("nvrtc");
    node_type_preserved_by_nodes(NodeSpec::ChildGraph);
}

#[test]
fn test_node_type_preserved_by_nodes__host_callback() {
    require_gpu!();
    node_type_preserved_by_nodes(NodeSpec::HostCallback);
}

#[test]
fn test_node_type_preserved_by_nodes__host_callback_cfunc() {
    require_gpu!();
    node_type_preserved_by_nodes(NodeSpec::HostCallbackCfunc);
}

#[test]
fn test_node_type_preserved_by_nodes__event_record() {
    require_gpu!();
    node_type_preserved_by_nodes(NodeSpec::EventRecord);
}

#[test]
fn test_node_type_preserved_by_nodes__event_wait() {
    require_gpu!();
    node_type_preserved_by_nodes(NodeSpec::EventWait);
}

#[test]
fn test_node_type_preserved_by_nodes__if_then() {
    require_gpu!();
    node_type_preserved_by_nodes(NodeSpec::IfThen);
}

#[test]
fn test_node_type_preserved_by_nodes__if_else() {
    require_gpu!();
    node_type_preserved_by_nodes(NodeSpec::IfElse);
}

#[test]
fn test_node_type_preserved_by_nodes__while_loop() {
    require_gpu!();
    node_type_preserved_by_nodes(NodeSpec::WhileLoop);
}

#[test]
fn test_node_type_preserved_by_nodes__switch() {
    require_gpu!();
    node_type_preserved_by_nodes(NodeSpec::Switch);
}

#[test]
fn test_node_type_preserved_by_pred_succ__empty() {
    require_gpu!();
    node_type_preserved_by_pred_succ(NodeSpec::Empty);
}

#[test]
fn test_node_type_preserved_by_pred_succ__kernel() {
    require_gpu!();
    require_libs!("nvrtc");
    node_type_preserved_by_pred_succ(NodeSpec::Kernel);
}

#[test]
fn test_node_type_preserved_by_pred_succ__alloc() {
    require_gpu!();
    node_type_preserved_by_pred_succ(NodeSpec::Alloc);
}

#[test]
fn test_node_type_preserved_by_pred_succ__alloc_managed() {
    require_gpu!();
    node_type_preserved_by_pred_succ(NodeSpec::AllocManaged);
}

#[test]
fn test_node_type_preserved_by_pred_succ__free() {
    require_gpu!();
    node_type_preserved_by_pred_succ(NodeSpec::Free);
}

#[test]
fn test_node_type_preserved_by_pred_succ__memset() {
    require_gpu!();
    node_type_preserved_by_pred_succ(NodeSpec::Memset);
}

#[test]
fn test_node_type_preserved_by_pred_succ__memset_u16() {
    require_gpu!();
    node_type_preserved_by_pred_succ(NodeSpec::MemsetU16);
}

#[test]
fn test_node_type_preserved_by_pred_succ__memset_u32() {
    require_gpu!();
    node_type_preserved_by_pred_succ(NodeSpec::MemsetU32);
}

#[test]
fn test_node_type_preserved_by_pred_succ__memcpy() {
    require_gpu!();
    node_type_preserved_by_pred_succ(NodeSpec::Memcpy);
}

#[test]
fn test_node_type_preserved_by_pred_succ__child_graph() {
    require_gpu!();
    require_libs!("nvrtc");
    node_type_preserved_by_pred_succ(NodeSpec::ChildGraph);
}

#[test]
fn test_node_type_preserved_by_pred_succ__host_callback() {
    require_gpu!();
    node_type_preserved_by_pred_succ(NodeSpec::HostCallback);
}

#[test]
fn test_node_type_preserved_by_pred_succ__host_callback_cfunc() {
    require_gpu!();
    node_type_preserved_by_pred_succ(NodeSpec::HostCallbackCfunc);
}

#[test]
fn test_node_type_preserved_by_pred_succ__event_record() {
    require_gpu!();
    node_type_preserved_by_pred_succ(NodeSpec::EventRecord);
}

#[test]
fn test_node_type_preserved_by_pred_succ__event_wait() {
    require_gpu!();
    node_type_preserved_by_pred_succ(NodeSpec::EventWait);
}

#[test]
fn test_node_type_preserved_by_pred_succ__if_then() {
    require_gpu!();
    node_type_preserved_by_pred_succ(NodeSpec::IfThen);
}

#[test]
fn test_node_type_preserved_by_pred_succ__if_else() {
    require_gpu!();
    node_type_preserved_by_pred_succ(NodeSpec::IfElse);
}

#[test]
fn test_node_type_preserved_by_pred_succ__while_loop() {
    require_gpu!();
    node_type_preserved_by_pred_succ(NodeSpec::WhileLoop);
}

#[test]
fn test_node_type_preserved_by_pred_succ__switch() {
    require_gpu!();
    node_type_preserved_by_pred_succ(NodeSpec::Switch);
}

#[test]
fn test_node_attrs__empty() {
    require_gpu!();
    node_attrs(NodeSpec::Empty);
}

#[test]
fn test_node_attrs__kernel() {
    require_gpu!();
    require_libs!("nvrtc");
    node_attrs(NodeSpec::Kernel);
}

#[test]
fn test_node_attrs__alloc() {
    require_gpu!();
    node_attrs(NodeSpec::Alloc);
}

#[test]
fn test_node_attrs__alloc_managed() {
    require_gpu!();
    node_attrs(NodeSpec::AllocManaged);
}

#[test]
fn test_node_attrs__free() {
    require_gpu!();
    node_attrs(NodeSpec::Free);
}

#[test]
fn test_node_attrs__memset() {
    require_gpu!();
    node_attrs(NodeSpec::Memset);
}

#[test]
fn test_node_attrs__memset_u16() {
    require_gpu!();
    node_attrs(NodeSpec::MemsetU16);
}

#[test]
fn test_node_attrs__memset_u32() {
    require_gpu!();
    node_attrs(NodeSpec::MemsetU32);
}

#[test]
fn test_node_attrs__memcpy() {
    require_gpu!();
    node_attrs(NodeSpec::Memcpy);
}

#[test]
fn test_node_attrs__child_graph() {
    require_gpu!();
    require_libs!("nvrtc");
    node_attrs(NodeSpec::ChildGraph);
}

#[test]
fn test_node_attrs__host_callback() {
    require_gpu!();
    node_attrs(NodeSpec::HostCallback);
}

#[test]
fn test_node_attrs__host_callback_cfunc() {
    require_gpu!();
    node_attrs(NodeSpec::HostCallbackCfunc);
}

#[test]
fn test_node_attrs__event_record() {
    require_gpu!();
    node_attrs(NodeSpec::EventRecord);
}

#[test]
fn test_node_attrs__event_wait() {
    require_gpu!();
    node_attrs(NodeSpec::EventWait);
}

#[test]
fn test_node_attrs__if_then() {
    require_gpu!();
    node_attrs(NodeSpec::IfThen);
}

#[test]
fn test_node_attrs__if_else() {
    require_gpu!();
    node_attrs(NodeSpec::IfElse);
}

#[test]
fn test_node_attrs__while_loop() {
    require_gpu!();
    node_attrs(NodeSpec::WhileLoop);
}

#[test]
fn test_node_attrs__switch() {
    require_gpu!();
    node_attrs(NodeSpec::Switch);
}

#[test]
fn test_node_attrs_preserved_by_nodes__empty() {
    require_gpu!();
    node_attrs_preserved_by_nodes(NodeSpec::Empty);
}

#[test]
fn test_node_attrs_preserved_by_nodes__kernel() {
    require_gpu!();
    require_libs!("nvrtc");
    node_attrs_preserved_by_nodes(NodeSpec::Kernel);
}

#[test]
fn test_node_attrs_preserved_by_nodes__alloc() {
    require_gpu!();
    node_attrs_preserved_by_nodes(NodeSpec::Alloc);
}

#[test]
fn test_node_attrs_preserved_by_nodes__alloc_managed() {
    require_gpu!();
    node_attrs_preserved_by_nodes(NodeSpec::AllocManaged);
}

#[test]
fn test_node_attrs_preserved_by_nodes__free() {
    require_gpu!();
    node_attrs_preserved_by_nodes(NodeSpec::Free);
}

#[test]
fn test_node_attrs_preserved_by_nodes__memset() {
    require_gpu!();
    node_attrs_preserved_by_nodes(NodeSpec::Memset);
}

#[test]
fn test_node_attrs_preserved_by_nodes__memset_u16() {
    require_gpu!();
    node_attrs_preserved_by_nodes(NodeSpec::MemsetU16);
}

#[test]
fn test_node_attrs_preserved_by_nodes__memset_u32() {
    require_gpu!();
    node_attrs_preserved_by_nodes(NodeSpec::MemsetU32);
}

#[test]
fn test_node_attrs_preserved_by_nodes__memcpy() {
    require_gpu!();
    node_attrs_preserved_by_nodes(NodeSpec::Memcpy);
}

#[test]
fn test_node_attrs_preserved_by_nodes__child_graph() {
    require_gpu!();
    require_libs!("nvrtc");
    node_attrs_preserved_by_nodes(NodeSpec::ChildGraph);
}

#[test]
fn test_node_attrs_preserved_by_nodes__host_callback() {
    require_gpu!();
    node_attrs_preserved_by_nodes(NodeSpec::HostCallback);
}

#[test]
fn test_node_attrs_preserved_by_nodes__host_callback_cfunc() {
    require_gpu!();
    node_attrs_preserved_by_nodes(NodeSpec::HostCallbackCfunc);
}

#[test]
fn test_node_attrs_preserved_by_nodes__event_record() {
    require_gpu!();
    node_attrs_preserved_by_nodes(NodeSpec::EventRecord);
}

#[test]
fn test_node_attrs_preserved_by_nodes__event_wait() {
    require_gpu!();
    node_attrs_preserved_by_nodes(NodeSpec::EventWait);
}

#[test]
fn test_node_attrs_preserved_by_nodes__if_then() {
    require_gpu!();
    node_attrs_preserved_by_nodes(NodeSpec::IfThen);
}

#[test]
fn test_node_attrs_preserved_by_nodes__if_else() {
    require_gpu!();
    node_attrs_preserved_by_nodes(NodeSpec::IfElse);
}

#[test]
fn test_node_attrs_preserved_by_nodes__while_loop() {
    require_gpu!();
    node_attrs_preserved_by_nodes(NodeSpec::WhileLoop);
}

#[test]
fn test_node_attrs_preserved_by_nodes__switch() {
    require_gpu!();
    node_attrs_preserved_by_nodes(NodeSpec::Switch);
}

#[test]
fn test_instantiate_empty_graph__no_options() {
    require_gpu!();
    instantiate_empty_graph("no-options");
}

#[test]
fn test_instantiate_with_nodes__no_options() {
    require_gpu!();
    instantiate_with_nodes("no-options");
}

#[test]
fn test_instantiate_empty_graph__none_options() {
    require_gpu!();
    instantiate_empty_graph("none-options");
}

#[test]
fn test_instantiate_with_nodes__none_options() {
    require_gpu!();
    instantiate_with_nodes("none-options");
}

#[test]
fn test_instantiate_empty_graph__all_bool_flags() {
    require_gpu!();
    instantiate_empty_graph("all-bool-flags");
}

#[test]
fn test_instantiate_with_nodes__all_bool_flags() {
    require_gpu!();
    instantiate_with_nodes("all-bool-flags");
}

#[test]
fn test_instantiate_and_execute_kernel__no_options() {
    require_gpu!();
    require_libs!("nvrtc");
    instantiate_and_execute_kernel(Exec::NoOptions);
}

#[test]
fn test_instantiate_and_execute_kernel__auto_free() {
    require_gpu!();
    require_libs!("nvrtc");
    instantiate_and_execute_kernel(Exec::AutoFree);
}

#[test]
fn test_instantiate_and_execute_kernel__node_priority() {
    require_gpu!();
    require_libs!("nvrtc");
    instantiate_and_execute_kernel(Exec::NodePriority);
}

#[test]
fn test_instantiate_and_execute_kernel__upload_stream() {
    require_gpu!();
    require_libs!("nvrtc");
    instantiate_and_execute_kernel(Exec::UploadStream);
}

#[test]
fn test_instantiate_and_execute_alloc_free__no_options() {
    require_gpu!();
    instantiate_and_execute_alloc_free(Exec::NoOptions);
}

#[test]
fn test_instantiate_and_execute_alloc_free__auto_free() {
    require_gpu!();
    instantiate_and_execute_alloc_free(Exec::AutoFree);
}

#[test]
fn test_instantiate_and_execute_alloc_free__node_priority() {
    require_gpu!();
    instantiate_and_execute_alloc_free(Exec::NodePriority);
}

#[test]
fn test_instantiate_and_execute_alloc_free__upload_stream() {
    require_gpu!();
    instantiate_and_execute_alloc_free(Exec::UploadStream);
}

#[test]
fn test_instantiate_and_execute_memset__no_options() {
    require_gpu!();
    instantiate_and_execute_memset(Exec::NoOptions);
}

#[test]
fn test_instantiate_and_execute_memset__auto_free() {
    require_gpu!();
    instantiate_and_execute_memset(Exec::AutoFree);
}

#[test]
fn test_instantiate_and_execute_memset__node_priority() {
    require_gpu!();
    instantiate_and_execute_memset(Exec::NodePriority);
}

#[test]
fn test_instantiate_and_execute_memset__upload_stream() {
    require_gpu!();
    instantiate_and_execute_memset(Exec::UploadStream);
}

#[test]
fn test_instantiate_and_execute_memcpy__no_options() {
    require_gpu!();
    instantiate_and_execute_memcpy(Exec::NoOptions);
}

#[test]
fn test_instantiate_and_execute_memcpy__auto_free() {
    require_gpu!();
    instantiate_and_execute_memcpy(Exec::AutoFree);
}

#[test]
fn test_instantiate_and_execute_memcpy__node_priority() {
    require_gpu!();
    instantiate_and_execute_memcpy(Exec::NodePriority);
}

#[test]
fn test_instantiate_and_execute_memcpy__upload_stream() {
    require_gpu!();
    instantiate_and_execute_memcpy(Exec::UploadStream);
}

#[test]
fn test_join_merges_branches__2() {
    require_gpu!();
    join_merges_branches(2);
}

#[test]
fn test_join_merges_branches__3() {
    require_gpu!();
    join_merges_branches(3);
}

#[test]
fn test_join_merges_branches__5() {
    require_gpu!();
    join_merges_branches(5);
}

// =============================================================================
// Topology tests over every non-empty spec (`[*]` ids: one test each, looping
// over the specs)
// =============================================================================

#[test]
fn test_nodes_match() {
    require_gpu!();
    let (_d, ctx) = gpu();
    for t in NONEMPTY {
        let spec = build_topo(t, &ctx);
        let actual: HashSet<GraphNode> = spec.g.nodes().unwrap().into_iter().collect();
        let expected: HashSet<GraphNode> = spec.named.iter().map(|(_, n)| *n).collect();
        assert_eq!(actual, expected, "{t:?}");
    }
}

#[test]
fn test_pred() {
    require_gpu!();
    let (_d, ctx) = gpu();
    for t in NONEMPTY {
        let spec = build_topo(t, &ctx);
        for (name, node) in &spec.named {
            let actual: BTreeSet<_> = node
                .dependencies(&spec.g)
                .unwrap()
                .into_iter()
                .map(|p| spec.name_of(p))
                .collect();
            assert_eq!(
                actual,
                spec.expected_pred(name),
                "pred mismatch for node {name} of {t:?}"
            );
        }
    }
}

#[test]
fn test_succ() {
    require_gpu!();
    let (_d, ctx) = gpu();
    for t in NONEMPTY {
        let spec = build_topo(t, &ctx);
        for (name, node) in &spec.named {
            let actual: BTreeSet<_> = node
                .dependents(&spec.g)
                .unwrap()
                .into_iter()
                .map(|p| spec.name_of(p))
                .collect();
            assert_eq!(
                actual,
                spec.expected_succ(name),
                "succ mismatch for node {name} of {t:?}"
            );
        }
    }
}

/// `node.graph == g`: a node names its graph, so the graph reads it and another
/// graph refuses it.
#[test]
fn test_node_graph_property() {
    require_gpu!();
    let (_d, ctx) = gpu();
    let other = Graph::new(&ctx).unwrap();
    for t in NONEMPTY {
        let spec = build_topo(t, &ctx);
        for (name, node) in &spec.named {
            assert!(
                node.kind(&spec.g).is_ok(),
                "graph mismatch for node {name} of {t:?}"
            );
            assert!(
                matches!(node.kind(&other), Err(Error::InvalidArgument { .. })),
                "node {name} of {t:?} is not another graph's"
            );
        }
    }
}

/// Round trips through `nodes()`, `edges()` and pred/succ give the same nodes
/// (`is` in Python: equal handles of the same graph here). `a.succ = {b}` is
/// `add_dependency(a, b)`.
#[test]
fn test_identity_preservation() {
    require_gpu!();
    let (_d, ctx) = gpu();
    let mut g = Graph::new(&ctx).unwrap();
    let a = g.add_empty(&[]).unwrap();
    let b = g.add_empty(&[]).unwrap();
    assert!(g.nodes().unwrap().contains(&a));
    assert!(g.nodes().unwrap().contains(&b));
    g.add_dependency(a, b).unwrap();
    assert_eq!(a.dependents(&g).unwrap(), vec![b]);
    assert_eq!(b.dependencies(&g).unwrap(), vec![a]);
    let edges = g.edges().unwrap();
    assert_eq!(edges.len(), 1);
    assert_eq!((edges[0].from, edges[0].to), (a, b));
}

// =============================================================================
// GraphDefinition basics
// =============================================================================

#[test]
fn test_graphdef_handle_valid() {
    require_gpu!();
    let (_d, ctx) = gpu();
    let g = Graph::new(&ctx).unwrap();
    assert!(!g.handle().is_null());
}

// =============================================================================
// Alloc/free API
// =============================================================================

/// Python's `CUDAError` from the driver; here refused before the driver is
/// asked, as an empty allocation.
#[test]
fn test_alloc_zero_size_fails() {
    require_gpu!();
    let (_d, ctx) = gpu();
    let mut g = Graph::new(&ctx).unwrap();
    let e = g.add_mem_alloc(&[], 0).unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::ZeroSize), "{e:?}");
}

#[test]
fn test_free_creates_dependency() {
    require_gpu!();
    let (_d, ctx) = gpu();
    let mut g = Graph::new(&ctx).unwrap();
    let a = g.add_mem_alloc(&[], ALLOC_SIZE).unwrap();
    let free = g.add_mem_free(&[a.node], &a).unwrap();
    assert!(free.dependencies(&g).unwrap().contains(&a.node));
}

#[test]
fn test_alloc_free_chain() {
    require_gpu!();
    let (_d, ctx) = gpu();
    let mut g = Graph::new(&ctx).unwrap();
    let a1 = g.add_mem_alloc(&[], ALLOC_SIZE).unwrap();
    let a2 = g.add_mem_alloc(&[a1.node], ALLOC_SIZE).unwrap();
    let f2 = g.add_mem_free(&[a2.node], &a2).unwrap();
    let f1 = g.add_mem_free(&[f2], &a1).unwrap();
    assert!(a2.node.dependencies(&g).unwrap().contains(&a1.node));
    assert!(f2.dependencies(&g).unwrap().contains(&a2.node));
    assert!(f1.dependencies(&g).unwrap().contains(&f2));
}

/// `device=device.device_id` and `device=device`: the location is a `Device`
/// either way, from its ordinal or the value itself.
fn alloc_device_option(by_ordinal: bool) {
    let (d, ctx) = gpu();
    let device = if by_ordinal {
        Device::new(d.ordinal()).unwrap()
    } else {
        d
    };
    let mut g = Graph::new(&ctx).unwrap();
    let a = g
        .add_mem_alloc_with(
            &[],
            ALLOC_SIZE,
            &GraphAllocOptions::new().location(Location::Device(device)),
        )
        .unwrap();
    assert_ne!(a.ptr.0, 0);
}

#[test]
fn test_alloc_device_option__device_id() {
    require_gpu!();
    alloc_device_option(true);
}

#[test]
fn test_alloc_device_option__Device_object() {
    require_gpu!();
    alloc_device_option(false);
}

/// `AllocNode.peer_access` reflects the requested peers (two GPUs with peer
/// access, as Python's `mempool_device_x2` fixture asks).
#[test]
fn test_alloc_peer_access() {
    require_gpus!(2);
    let (d0, ctx) = gpu();
    let d1 = Device::new(1).unwrap();
    if !(d0.can_access_peer(&d1).unwrap() && d1.can_access_peer(&d0).unwrap()) {
        println!("SKIPPED: test_alloc_peer_access needs GPUs with peer access");
        return;
    }
    let mut g = Graph::new(&ctx).unwrap();
    let a = g
        .add_mem_alloc_with(
            &[],
            ALLOC_SIZE,
            &GraphAllocOptions::new()
                .location(Location::Device(d0))
                .peer_access([d1]),
        )
        .unwrap();
    let peers = a.node.peer_access(&g).unwrap();
    assert!(
        peers.iter().any(|p| p.ordinal() == d1.ordinal()),
        "{peers:?}"
    );
}

// =============================================================================
// Join API
// =============================================================================

fn join_merges_branches(num_branches: usize) {
    let (_d, ctx) = gpu();
    let mut g = Graph::new(&ctx).unwrap();
    let branches: Vec<_> = (0..num_branches).map(|_| alloc(&mut g, &[])).collect();
    let joined = g.add_empty(&branches).unwrap();
    assert_eq!(joined.kind(&g).unwrap(), GraphNodeKind::Empty);
    let pred: HashSet<_> = joined.dependencies(&g).unwrap().into_iter().collect();
    assert_eq!(pred, branches.into_iter().collect::<HashSet<_>>());
}

// =============================================================================
// Kernel launch
// =============================================================================

#[test]
fn test_launch_creates_node() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, ctx) = gpu();
    let k = common_kernels(&d).get_kernel("empty_kernel").unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    // SAFETY: the kernel takes no arguments and touches no memory.
    let node = unsafe { g.add_kernel(&[], &LaunchConfig::new(1, 1), &k, &[]) }.unwrap();
    assert_eq!(node.kind(&g).unwrap(), GraphNodeKind::Kernel);
}

#[test]
fn test_launch_chain_dependencies() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, ctx) = gpu();
    let k = common_kernels(&d).get_kernel("empty_kernel").unwrap();
    let config = LaunchConfig::new(1, 1);
    let mut g = Graph::new(&ctx).unwrap();
    // SAFETY: the kernel takes no arguments and touches no memory.
    let (n1, n2, n3) = unsafe {
        let n1 = g.add_kernel(&[], &config, &k, &[]).unwrap();
        let n2 = g.add_kernel(&[n1], &config, &k, &[]).unwrap();
        let n3 = g.add_kernel(&[n2], &config, &k, &[]).unwrap();
        (n1, n2, n3)
    };
    assert!(n2.dependencies(&g).unwrap().contains(&n1));
    assert!(n3.dependencies(&g).unwrap().contains(&n2));
    assert!(!n3.dependencies(&g).unwrap().contains(&n1));
}

// =============================================================================
// Instantiation and execution
// =============================================================================

#[test]
fn test_instantiate_and_execute_kernel_device_launch() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, ctx) = gpu();
    let k = common_kernels(&d).get_kernel("empty_kernel").unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    // SAFETY: the kernel takes no arguments and touches no memory.
    unsafe { g.add_kernel(&[], &LaunchConfig::new(1, 1), &k, &[]) }.unwrap();
    let exec = g
        .instantiate(GraphCompleteOptions {
            device_launch: true,
            ..Default::default()
        })
        .unwrap();
    let s = stream(&d);
    exec.upload(&s).unwrap();
    exec.launch(&s).unwrap();
    s.sync().unwrap();
}

#[test]
fn test_instantiate_and_execute_child_graph() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, ctx) = gpu();
    let k = common_kernels(&d).get_kernel("empty_kernel").unwrap();
    let mut child = Graph::new(&ctx).unwrap();
    // SAFETY: the kernel takes no arguments and touches no memory.
    unsafe { child.add_kernel(&[], &LaunchConfig::new(1, 1), &k, &[]) }.unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    g.add_child(&[], &child).unwrap();
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    let s = stream(&d);
    exec.upload(&s).unwrap();
    exec.launch(&s).unwrap();
    s.sync().unwrap();
}

#[test]
fn test_instantiate_and_execute_host_callback() {
    require_gpu!();
    let (d, ctx) = gpu();
    let results = Arc::new(Mutex::new(Vec::new()));
    let r = results.clone();
    let mut g = Graph::new(&ctx).unwrap();
    g.add_host_callback(&[], move || r.lock().unwrap().push(42))
        .unwrap();
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    let s = stream(&d);
    exec.upload(&s).unwrap();
    exec.launch(&s).unwrap();
    s.sync().unwrap();
    assert_eq!(*results.lock().unwrap(), vec![42]);
}

/// Python's ctypes function pointer: a closure here too.
#[test]
fn test_instantiate_and_execute_host_callback_cfunc() {
    require_gpu!();
    let (d, ctx) = gpu();
    let called = Arc::new(AtomicBool::new(false));
    let c = called.clone();
    let mut g = Graph::new(&ctx).unwrap();
    g.add_host_callback(&[], move || c.store(true, Ordering::SeqCst))
        .unwrap();
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    let s = stream(&d);
    exec.upload(&s).unwrap();
    exec.launch(&s).unwrap();
    s.sync().unwrap();
    assert!(called.load(Ordering::SeqCst));
}

/// `user_data=bytes([0xAB])`: the closure owns the bytes it reads.
#[test]
fn test_host_callback_cfunc_with_user_data() {
    require_gpu!();
    let (d, ctx) = gpu();
    let result = Arc::new(AtomicU8::new(0));
    let r = result.clone();
    let user_data: Vec<u8> = vec![0xAB];
    let mut g = Graph::new(&ctx).unwrap();
    g.add_host_callback(&[], move || r.store(user_data[0], Ordering::SeqCst))
        .unwrap();
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    let s = stream(&d);
    exec.upload(&s).unwrap();
    exec.launch(&s).unwrap();
    s.sync().unwrap();
    assert_eq!(result.load(Ordering::SeqCst), 0xAB);
}

#[test]
fn test_instantiate_and_execute_event_record_wait() {
    require_gpu!();
    let (d, ctx) = gpu();
    let event = Arc::new(d.create_event(EventOptions::default()).unwrap());
    let mut g = Graph::new(&ctx).unwrap();
    let rec = g.add_event_record(&[], &event).unwrap();
    g.add_event_wait(&[rec], &event).unwrap();
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    let s = stream(&d);
    exec.upload(&s).unwrap();
    exec.launch(&s).unwrap();
    s.sync().unwrap();
}

// =============================================================================
// Conditional nodes
// =============================================================================

#[test]
fn test_instantiate_and_execute_if_then() {
    require_gpu!();
    require_libs!("nvrtc");
    assert_eq!(run_conditional(ConditionalKind::If, 1, &[1]), 1);
}

#[test]
fn test_instantiate_and_execute_if_else() {
    require_gpu!();
    require_libs!("nvrtc");
    // The condition is 0: the else branch's two kernels run.
    assert_eq!(run_conditional(ConditionalKind::IfElse, 0, &[1, 2]), 2);
}

#[test]
fn test_instantiate_and_execute_switch() {
    require_gpu!();
    require_libs!("nvrtc");
    // Branch 2 of 4 runs its one kernel.
    assert_eq!(
        run_conditional(ConditionalKind::Switch(4), 2, &[1, 1, 1, 1]),
        1
    );
}

/// Python reads the node back from `nodes()` as the `ConditionalNode` base
/// class; here it reads back as a conditional node, with its kind when this
/// graph added it.
#[test]
fn test_conditional_node_type_preserved_by_nodes() {
    require_gpu!();
    let (_d, ctx) = gpu();
    let mut g = Graph::new(&ctx).unwrap();
    let condition = g.create_condition(Some(1)).unwrap();
    let (if_node, _) = g
        .add_conditional(&[], condition, ConditionalKind::If)
        .unwrap();
    let matched: Vec<_> = g
        .nodes()
        .unwrap()
        .into_iter()
        .filter(|n| *n == if_node)
        .collect();
    assert_eq!(matched.len(), 1);
    assert_eq!(matched[0].kind(&g).unwrap(), GraphNodeKind::Conditional);
}

// =============================================================================
// Debug output
// =============================================================================

fn dot_file(test: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "cudars-conformance-{test}-{}.dot",
        std::process::id()
    ))
}

#[test]
fn test_debug_dot_print_creates_file() {
    require_gpu!();
    let (_d, ctx) = gpu();
    let mut g = Graph::new(&ctx).unwrap();
    alloc(&mut g, &[]);
    let path = dot_file("creates-file");
    g.debug_dot_print(&path).unwrap();
    let content = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(content.contains("digraph"));
}

#[test]
fn test_debug_dot_print_with_options() {
    require_gpu!();
    let (_d, ctx) = gpu();
    let mut g = Graph::new(&ctx).unwrap();
    alloc(&mut g, &[]);
    let path = dot_file("with-options");
    let options = GraphDebugPrintOptions {
        verbose: true,
        handles: true,
        ..Default::default()
    };
    g.debug_dot_print_with(&path, options).unwrap();
    let exists = path.exists();
    let _ = std::fs::remove_file(&path);
    assert!(exists);
}
