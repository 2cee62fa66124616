//! Reading a graph back: each node's kind ([`GraphNodeKind`]) and parameters
//! ([`GraphNodeParams`]), its edges, the graph's nodes, roots and edges; removing
//! edges and nodes.
//!
//! A [`GraphNode`] is an identifier: every query takes the [`Graph`] it belongs to
//! (checked), so the driver is only asked about nodes of a live graph that no one
//! is changing meanwhile (`&Graph` on the graph's one thread).

use std::ffi::c_void;
use std::sync::Arc;

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{device::Device, event::Event, launch::DevicePtr, launch::Dim3};

use super::define::{ConditionalNodeInfo, ConditionalRecord, Graph, GraphNode};
use super::memory_nodes::GraphMemoryType;

/// What a graph node does (`CUgraphNodeType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GraphNodeKind {
    /// A kernel launch (Python's `KernelNode`).
    Kernel,
    /// A memory copy (`MemcpyNode`).
    Memcpy,
    /// A memory set (`MemsetNode`).
    Memset,
    /// A host callback (`HostCallbackNode`).
    HostCallback,
    /// An embedded child graph (`ChildGraphNode`).
    ChildGraph,
    /// A node that does nothing: a join point (`EmptyNode`).
    Empty,
    /// A wait for an event (`EventWaitNode`).
    EventWait,
    /// An event record (`EventRecordNode`).
    EventRecord,
    /// An external semaphore signal.
    ExternalSemaphoreSignal,
    /// An external semaphore wait.
    ExternalSemaphoreWait,
    /// A graph memory allocation (`AllocNode`).
    MemAlloc,
    /// A graph memory free (`FreeNode`).
    MemFree,
    /// A batch of memory operations.
    BatchMemOp,
    /// A conditional node (`IfNode`, `IfElseNode`, `WhileNode`, `SwitchNode`).
    Conditional,
    /// A kind this crate does not know (from a newer driver): the driver's value.
    Unknown(u32),
}

impl GraphNodeKind {
    /// The kind of the driver's `CUgraphNodeType` value.
    pub fn from_raw(t: sys::CUgraphNodeType) -> Self {
        match t {
            sys::CU_GRAPH_NODE_TYPE_KERNEL => Self::Kernel,
            sys::CU_GRAPH_NODE_TYPE_MEMCPY => Self::Memcpy,
            sys::CU_GRAPH_NODE_TYPE_MEMSET => Self::Memset,
            sys::CU_GRAPH_NODE_TYPE_HOST => Self::HostCallback,
            sys::CU_GRAPH_NODE_TYPE_GRAPH => Self::ChildGraph,
            sys::CU_GRAPH_NODE_TYPE_EMPTY => Self::Empty,
            sys::CU_GRAPH_NODE_TYPE_WAIT_EVENT => Self::EventWait,
            sys::CU_GRAPH_NODE_TYPE_EVENT_RECORD => Self::EventRecord,
            sys::CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL => Self::ExternalSemaphoreSignal,
            sys::CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT => Self::ExternalSemaphoreWait,
            sys::CU_GRAPH_NODE_TYPE_MEM_ALLOC => Self::MemAlloc,
            sys::CU_GRAPH_NODE_TYPE_MEM_FREE => Self::MemFree,
            sys::CU_GRAPH_NODE_TYPE_BATCH_MEM_OP => Self::BatchMemOp,
            sys::CU_GRAPH_NODE_TYPE_CONDITIONAL => Self::Conditional,
            other => Self::Unknown(other.0),
        }
    }

    /// A short name, as error messages say it ("kernel", "memcpy", …).
    pub fn name(self) -> &'static str {
        match self {
            Self::Kernel => "kernel",
            Self::Memcpy => "memcpy",
            Self::Memset => "memset",
            Self::HostCallback => "host callback",
            Self::ChildGraph => "child graph",
            Self::Empty => "empty",
            Self::EventWait => "event wait",
            Self::EventRecord => "event record",
            Self::ExternalSemaphoreSignal => "external semaphore signal",
            Self::ExternalSemaphoreWait => "external semaphore wait",
            Self::MemAlloc => "memory allocation",
            Self::MemFree => "memory free",
            Self::BatchMemOp => "batch memory operation",
            Self::Conditional => "conditional",
            Self::Unknown(_) => "unknown",
        }
    }
}

/// A kernel node's parameters ([`GraphNodeParams::Kernel`]). The handles are the
/// driver's: the node keeps the kernel's module loaded while the graph lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct KernelNodeInfo {
    /// The function launched (null when the node names a `CUkernel` instead).
    pub function: sys::CUfunction,
    /// The library kernel launched, when the node names one (else null).
    pub kernel: sys::CUkernel,
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads in a block.
    pub block: Dim3,
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: u32,
}

/// A memset node's parameters ([`GraphNodeParams::Memset`]): `height` rows of
/// `width` elements of `element_size` bytes, rows `pitch` bytes apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct MemsetNodeInfo {
    /// The first element set.
    pub dst: DevicePtr,
    /// The value (its low `element_size` bytes).
    pub value: u32,
    /// The element size in bytes: 1, 2 or 4.
    pub element_size: u32,
    /// Elements per row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Bytes from one row to the next (unused for one row).
    pub pitch: usize,
}

/// A memcpy node's parameters ([`GraphNodeParams::Memcpy`]): the driver's 3-D
/// copy description, with the fields this crate's copy nodes set at hand.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct MemcpyNodeInfo {
    /// The source address (`srcDevice`: what device, unified and this crate's copy
    /// nodes use; see `raw` for host and array operands).
    pub src: DevicePtr,
    /// The destination address (`dstDevice`, as `src`).
    pub dst: DevicePtr,
    /// Bytes per row.
    pub width_in_bytes: usize,
    /// Rows.
    pub height: usize,
    /// Layers.
    pub depth: usize,
    /// Everything the driver reports (memory types, offsets, pitches, arrays).
    pub raw: sys::CUDA_MEMCPY3D,
}

/// A host callback node's parameters ([`GraphNodeParams::HostCallback`]): the
/// function the driver calls and its argument. For nodes added with
/// [`Graph::add_host_callback`] they are this crate's trampoline and the boxed
/// closure, which the graph keeps alive.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct HostNodeInfo {
    /// The function called.
    pub function: sys::CUhostFn,
    /// Its argument.
    pub user_data: *mut c_void,
}

/// The event of an event record or wait node.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NodeEvent {
    /// The driver's handle.
    pub handle: sys::CUevent,
    /// The crate's [`Event`], when the graph holds it (the event was given to
    /// [`Graph::add_event_record`] / [`Graph::add_event_wait`] or to an in-place
    /// update); `None` for events the graph does not hold, such as those recorded
    /// into a stream capture, whose handle is then the only thing known.
    pub event: Option<Arc<Event>>,
}

/// A memory allocation node's parameters ([`GraphNodeParams::MemAlloc`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct MemAllocNodeInfo {
    /// The address, fixed when the node was added.
    pub ptr: DevicePtr,
    /// The size in bytes.
    pub size: usize,
    /// The device the memory is on (the location's ordinal), when it is a device.
    pub device: Option<i32>,
    /// Device, host or managed memory (`AllocNode.memory_type` in `cuda.core`).
    pub memory_type: GraphMemoryType,
}

/// A node's parameters, by kind ([`GraphNode::params`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum GraphNodeParams {
    /// A kernel launch.
    Kernel(KernelNodeInfo),
    /// A memory copy.
    Memcpy(MemcpyNodeInfo),
    /// A memory set.
    Memset(MemsetNodeInfo),
    /// A host callback.
    HostCallback(HostNodeInfo),
    /// A child graph: the node's own graph, borrowed (it belongs to the node and
    /// lives as long as the parent's hierarchy; nodes added to it change the node).
    ChildGraph(Graph),
    /// A join point.
    Empty,
    /// An event record.
    EventRecord(NodeEvent),
    /// An event wait.
    EventWait(NodeEvent),
    /// A graph memory allocation.
    MemAlloc(MemAllocNodeInfo),
    /// A graph memory free of this address.
    MemFree(DevicePtr),
    /// A conditional node: its condition and kind when this [`Graph`] value
    /// added it with [`Graph::add_conditional`], else `None` (captured nodes,
    /// nodes of a child graph's copy).
    Conditional(Option<ConditionalNodeInfo>),
    /// Another kind, whose parameters are not read.
    Other(GraphNodeKind),
}

/// What an edge means (`CUgraphDependencyType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GraphEdgeKind {
    /// The destination runs after the source completes.
    Default,
    /// Programmatic: the destination may start before the source completes.
    Programmatic,
    /// A type this crate does not know: the driver's value.
    Unknown(u8),
}

/// An edge of a graph ([`Graph::edges`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct GraphEdge {
    /// The node that runs first.
    pub from: GraphNode,
    /// The node that depends on it.
    pub to: GraphNode,
    /// What the edge means (always [`GraphEdgeKind::Default`] before CUDA 12.3,
    /// whose drivers have no edge data).
    pub kind: GraphEdgeKind,
    /// The source's output port (0: the default).
    pub from_port: u8,
    /// The destination's input port (0: the default).
    pub to_port: u8,
}

impl GraphEdge {
    fn new(from: GraphNode, to: GraphNode, data: sys::CUgraphEdgeData) -> Self {
        let kind = match u32::from(data.type_) {
            t if t == sys::CU_GRAPH_DEPENDENCY_TYPE_DEFAULT.0 => GraphEdgeKind::Default,
            t if t == sys::CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC.0 => GraphEdgeKind::Programmatic,
            _ => GraphEdgeKind::Unknown(data.type_),
        };
        Self {
            from,
            to,
            kind,
            from_port: data.from_port,
            to_port: data.to_port,
        }
    }
}

/// The kind of node `node` (a live node, whose graph is not being changed).
pub(super) fn node_kind_raw(node: sys::CUgraphNode) -> Result<GraphNodeKind> {
    let mut t = sys::CU_GRAPH_NODE_TYPE_EMPTY;
    // SAFETY: a live node (per the caller); `t` is valid for writes.
    unsafe { sys::cuGraphNodeGetType(node, &mut t) }.check(|| "reading a graph node's kind")?;
    Ok(GraphNodeKind::from_raw(t))
}

/// Calls `fill(array, &mut count)` twice, as the driver's list queries want:
/// first for the count, then for the elements (the graph cannot change between
/// the calls: the caller holds it). `T` is a handle or edge data.
fn two_calls(
    what: &'static str,
    mut fill: impl FnMut(*mut sys::CUgraphNode, &mut usize) -> sys::CUresult,
) -> Result<Vec<sys::CUgraphNode>> {
    let mut n = 0usize;
    fill(std::ptr::null_mut(), &mut n).check(|| what)?;
    // None: the driver refuses a second call with an empty array (INVALID_VALUE).
    if n == 0 {
        return Ok(Vec::new());
    }
    // (Not `Default`: raw pointers implement it only from Rust 1.88, above the MSRV.)
    let mut v: Vec<sys::CUgraphNode> = vec![std::ptr::null_mut(); n];
    let mut got = n;
    fill(v.as_mut_ptr(), &mut got).check(|| what)?;
    v.truncate(got.min(n));
    Ok(v)
}

/// Two parallel lists (nodes and their edge data) filled by one driver query.
fn nodes_with_edge_data(
    what: &'static str,
    mut fill: impl FnMut(*mut sys::CUgraphNode, *mut sys::CUgraphEdgeData, &mut usize) -> sys::CUresult,
) -> Result<Vec<(sys::CUgraphNode, sys::CUgraphEdgeData)>> {
    let mut n = 0usize;
    fill(std::ptr::null_mut(), std::ptr::null_mut(), &mut n).check(|| what)?;
    // None: the driver refuses a second call with empty arrays (INVALID_VALUE).
    if n == 0 {
        return Ok(Vec::new());
    }
    let mut nodes: Vec<sys::CUgraphNode> = vec![std::ptr::null_mut(); n];
    let mut data = vec![sys::CUgraphEdgeData::default(); n];
    let mut got = n;
    fill(nodes.as_mut_ptr(), data.as_mut_ptr(), &mut got).check(|| what)?;
    let got = got.min(n);
    Ok(nodes.into_iter().zip(data).take(got).collect())
}

impl GraphNode {
    /// What the node does (`cuGraphNodeGetType`; Python's node classes).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a node of another graph; the driver's error.
    pub fn kind(&self, graph: &Graph) -> Result<GraphNodeKind> {
        graph.own(*self, "reading a graph node's kind")?;
        node_kind_raw(self.handle)
    }

    /// The kernel a kernel node launches, as the [`Kernel`](crate::Kernel) the
    /// graph keeps alive for it (`cuda.core`'s `KernelNode.kernel`): it stays
    /// usable after every other handle on it, and on its library, is dropped.
    /// `None` when this graph does not hold the kernel (a node of a copied
    /// child graph whose kernel came from elsewhere).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a node of another graph or a node that is
    /// not a kernel node; the driver's error.
    pub fn kernel(&self, graph: &Graph) -> Result<Option<crate::code::kernel::Kernel>> {
        const WHAT: &str = "reading a kernel node's kernel";
        let GraphNodeParams::Kernel(info) = self.params(graph)? else {
            return Err(Error::invalid(WHAT, "the node is not a kernel node"));
        };
        let kernels: Vec<crate::code::kernel::Kernel> = graph
            .keep
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter_map(|item| item.downcast_ref::<crate::code::kernel::Kernel>().cloned())
            .collect();
        // Kernel nodes name the kernel's function in the graph's context.
        let _current = graph.ctx.ensure_current()?;
        for k in kernels {
            let same_kernel = !info.kernel.is_null() && Some(info.kernel) == k.kernel_handle();
            if same_kernel || k.function_in_current()? == info.function {
                return Ok(Some(k));
            }
        }
        Ok(None)
    }

    /// The other devices an allocation node's memory is accessible from
    /// (`cuda.core`'s `AllocNode.peer_access`): the access descriptors
    /// `cuGraphMemAllocNodeGetParams` reports, in order, as the node was made
    /// with [`GraphAllocOptions::peer_access`](crate::GraphAllocOptions::peer_access)
    /// (the memory's own device left out); empty when none was given.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a node of another graph or a node that is
    /// not an allocation node; the driver's error.
    pub fn peer_access(&self, graph: &Graph) -> Result<Vec<Device>> {
        const WHAT: &str = "reading an allocation node's peer access";
        graph.own(*self, WHAT)?;
        let kind = node_kind_raw(self.handle)?;
        if kind != GraphNodeKind::MemAlloc {
            return Err(Error::invalid(
                WHAT,
                format!("the node is a {} node, not an allocation node", kind.name()),
            ));
        }
        let mut p = sys::CUDA_MEM_ALLOC_NODE_PARAMS::default();
        // SAFETY: a live allocation node (checked); `p` is valid for writes.
        unsafe { sys::cuGraphMemAllocNodeGetParams(self.handle, &mut p) }.check(|| WHAT)?;
        if p.accessDescs.is_null() || p.accessDescCount == 0 {
            return Ok(Vec::new());
        }
        // SAFETY: the driver's array of `accessDescCount` descriptors, owned by
        // the node and valid while it lives (it does for this call).
        let descs = unsafe { std::slice::from_raw_parts(p.accessDescs, p.accessDescCount) };
        descs
            .iter()
            .filter(|a| a.location.type_ == sys::CU_MEM_LOCATION_TYPE_DEVICE)
            .map(|a| {
                let id = crate::memory::resource::location_id(&a.location);
                Device::new(usize::try_from(id).map_err(|_| {
                    Error::invalid(WHAT, format!("the driver reported device {id}"))
                })?)
            })
            .collect()
    }

    /// The node's parameters, by kind (the `cuGraph*NodeGetParams` queries).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a node of another graph; the driver's error.
    pub fn params(&self, graph: &Graph) -> Result<GraphNodeParams> {
        const WHAT: &str = "reading a graph node's parameters";
        graph.own(*self, WHAT)?;
        let h = self.handle;
        let kind = node_kind_raw(h)?;
        Ok(match kind {
            GraphNodeKind::Kernel => {
                let mut p = sys::CUDA_KERNEL_NODE_PARAMS::default();
                // SAFETY: a live kernel node; `p` is valid for writes.
                unsafe { sys::cuGraphKernelNodeGetParams(h, &mut p) }.check(|| WHAT)?;
                GraphNodeParams::Kernel(KernelNodeInfo {
                    function: p.func,
                    kernel: p.kern,
                    grid: Dim3 {
                        x: p.gridDimX,
                        y: p.gridDimY,
                        z: p.gridDimZ,
                    },
                    block: Dim3 {
                        x: p.blockDimX,
                        y: p.blockDimY,
                        z: p.blockDimZ,
                    },
                    shared_mem_bytes: p.sharedMemBytes,
                })
            }
            GraphNodeKind::Memset => {
                let mut p = sys::CUDA_MEMSET_NODE_PARAMS::default();
                // SAFETY: a live memset node; `p` is valid for writes.
                unsafe { sys::cuGraphMemsetNodeGetParams(h, &mut p) }.check(|| WHAT)?;
                GraphNodeParams::Memset(MemsetNodeInfo {
                    dst: DevicePtr(p.dst),
                    value: p.value,
                    element_size: p.elementSize,
                    width: p.width,
                    height: p.height,
                    pitch: p.pitch,
                })
            }
            GraphNodeKind::Memcpy => {
                let mut p = sys::CUDA_MEMCPY3D::default();
                // SAFETY: a live memcpy node; `p` is valid for writes.
                unsafe { sys::cuGraphMemcpyNodeGetParams(h, &mut p) }.check(|| WHAT)?;
                GraphNodeParams::Memcpy(MemcpyNodeInfo {
                    src: DevicePtr(p.srcDevice),
                    dst: DevicePtr(p.dstDevice),
                    width_in_bytes: p.WidthInBytes,
                    height: p.Height,
                    depth: p.Depth,
                    raw: p,
                })
            }
            GraphNodeKind::HostCallback => {
                let mut p = sys::CUDA_HOST_NODE_PARAMS::default();
                // SAFETY: a live host node; `p` is valid for writes.
                unsafe { sys::cuGraphHostNodeGetParams(h, &mut p) }.check(|| WHAT)?;
                GraphNodeParams::HostCallback(HostNodeInfo {
                    function: p.fn_,
                    user_data: p.userData,
                })
            }
            GraphNodeKind::ChildGraph => {
                let mut g: sys::CUgraph = std::ptr::null_mut();
                // SAFETY: a live child graph node; `g` is valid for writes. The
                // graph returned belongs to the node (not cloned).
                unsafe { sys::cuGraphChildGraphNodeGetGraph(h, &mut g) }.check(|| WHAT)?;
                // The child belongs to the node: it shares the hierarchy's root
                // (never destroyed on its own) and keep list.
                GraphNodeParams::ChildGraph(Graph::wrap(
                    g,
                    graph.ctx.clone(),
                    graph.root.clone(),
                    graph.keep.clone(),
                ))
            }
            GraphNodeKind::Empty => GraphNodeParams::Empty,
            GraphNodeKind::EventRecord | GraphNodeKind::EventWait => {
                let mut e: sys::CUevent = std::ptr::null_mut();
                let rc = if kind == GraphNodeKind::EventRecord {
                    // SAFETY: a live event record node; `e` is valid for writes.
                    unsafe { sys::cuGraphEventRecordNodeGetEvent(h, &mut e) }
                } else {
                    // SAFETY: a live event wait node; `e` is valid for writes.
                    unsafe { sys::cuGraphEventWaitNodeGetEvent(h, &mut e) }
                };
                rc.check(|| WHAT)?;
                let ev = NodeEvent {
                    handle: e,
                    event: graph.kept_event(e),
                };
                if kind == GraphNodeKind::EventRecord {
                    GraphNodeParams::EventRecord(ev)
                } else {
                    GraphNodeParams::EventWait(ev)
                }
            }
            GraphNodeKind::MemAlloc => {
                let mut p = sys::CUDA_MEM_ALLOC_NODE_PARAMS::default();
                // SAFETY: a live allocation node; `p` is valid for writes (the
                // access descriptors it points to are the driver's, not read).
                unsafe { sys::cuGraphMemAllocNodeGetParams(h, &mut p) }.check(|| WHAT)?;
                let loc = p.poolProps.location;
                GraphNodeParams::MemAlloc(MemAllocNodeInfo {
                    ptr: DevicePtr(p.dptr),
                    size: p.bytesize,
                    device: (loc.type_ == sys::CU_MEM_LOCATION_TYPE_DEVICE)
                        .then_some(crate::memory::resource::location_id(&loc)),
                    memory_type: GraphMemoryType::from_raw(p.poolProps.allocType, loc.type_),
                })
            }
            GraphNodeKind::MemFree => {
                let mut d: sys::CUdeviceptr = 0;
                // SAFETY: a live free node; `d` is valid for writes.
                unsafe { sys::cuGraphMemFreeNodeGetParams(h, &mut d) }.check(|| WHAT)?;
                GraphNodeParams::MemFree(DevicePtr(d))
            }
            GraphNodeKind::Conditional => GraphNodeParams::Conditional(graph.conditional(*self)),
            other => GraphNodeParams::Other(other),
        })
    }

    /// The body graphs of conditional node `node` of `graph`, in order (one for
    /// `If` and `While`, the taken-if-true one first for `IfElse`, `n` for
    /// `Switch(n)`): `cuda.core`'s `IfNode.then`, `IfElseNode.then` and
    /// `.else_`, `SwitchNode.branches`, `WhileNode.body`. Each is borrowed, as
    /// [`GraphNodeParams::ChildGraph`]'s graph is: it belongs to the node and
    /// lives as long as the parent's hierarchy; nodes added to it change the
    /// node. Known for the nodes [`Graph::add_conditional`] added and those a
    /// [`GraphBuilder`](crate::GraphBuilder)'s capture added (`if_cond`,
    /// `if_else`, `switch`, `while_loop`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a node of another graph or one that is
    /// not a conditional node; [`Error::Unsupported`] for a conditional node
    /// this crate did not add (a copy's, inside a child graph: the driver has
    /// no query for a conditional node's bodies in the bindings); the driver's
    /// error.
    pub fn bodies(&self, graph: &Graph) -> Result<Vec<Graph>> {
        const WHAT: &str = "reading a conditional node's body graphs";
        if self.graph != graph.id {
            return Err(Error::invalid(WHAT, "the node is a node of another graph"));
        }
        let kind = node_kind_raw(self.handle)?;
        if kind != GraphNodeKind::Conditional {
            return Err(Error::invalid(
                WHAT,
                format!("the node is a {} node, not a conditional node", kind.name()),
            ));
        }
        let bodies = graph
            .conditional_record(*self, |r| r.bodies.clone())
            .ok_or_else(|| {
                Error::unsupported(
                    WHAT,
                    "the node was not added through this graph or its builder (a node of a \
                     copied child graph)",
                )
            })?;
        Ok(bodies
            .into_iter()
            .map(|g| Graph::wrap(g, graph.ctx.clone(), graph.root.clone(), graph.keep.clone()))
            .collect())
    }

    /// The nodes this one depends on (`cuGraphNodeGetDependencies`; from CUDA 12.3
    /// the edge-data form).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a node of another graph; the driver's error.
    pub fn dependencies(&self, graph: &Graph) -> Result<Vec<GraphNode>> {
        self.neighbours(
            graph,
            "reading a graph node's dependencies",
            sys::cuGraphNodeGetDependencies,
            sys::cuda12::cuGraphNodeGetDependencies,
        )
    }

    /// The nodes that depend on this one (`cuGraphNodeGetDependentNodes`; from
    /// CUDA 12.3 the edge-data form).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a node of another graph; the driver's error.
    pub fn dependents(&self, graph: &Graph) -> Result<Vec<GraphNode>> {
        self.neighbours(
            graph,
            "reading a graph node's dependents",
            sys::cuGraphNodeGetDependentNodes,
            sys::cuda12::cuGraphNodeGetDependentNodes,
        )
    }

    /// The nodes on one side of this one's edges, by the driver's query of that
    /// side: `with_data` (the CUDA 12.3 shape, with edge data) or `without` (the
    /// shape of older drivers).
    fn neighbours(
        &self,
        graph: &Graph,
        what: &'static str,
        with_data: unsafe fn(
            sys::CUgraphNode,
            *mut sys::CUgraphNode,
            *mut sys::CUgraphEdgeData,
            *mut usize,
        ) -> sys::CUresult,
        without: unsafe fn(sys::CUgraphNode, *mut sys::CUgraphNode, *mut usize) -> sys::CUresult,
    ) -> Result<Vec<GraphNode>> {
        graph.own(*self, what)?;
        let h = self.handle;
        let handles = if crate::versions::driver_at_least(12030) {
            // Edge data is asked for too: without it the driver refuses (a lossy
            // query) when an edge has some.
            nodes_with_edge_data(what, |nodes, data, n| {
                // SAFETY: a live node of `graph`; the arrays hold `*n` elements (or
                // are null for the count).
                unsafe { with_data(h, nodes, data, n) }
            })?
            .into_iter()
            .map(|(node, _)| node)
            .collect()
        } else {
            two_calls(what, |nodes, n| {
                // SAFETY: as above (the shape of drivers before CUDA 12.3).
                unsafe { without(h, nodes, n) }
            })?
        };
        Ok(handles.into_iter().map(|n| graph.node(n)).collect())
    }
}

impl Graph {
    /// Checks that `node` is one of this graph's.
    pub(super) fn own(&self, node: GraphNode, what: &'static str) -> Result<()> {
        if node.graph != self.id {
            return Err(Error::invalid(what, "the node is not one of the graph's"));
        }
        Ok(())
    }

    /// The kept [`Event`] whose handle is `e`, if any.
    fn kept_event(&self, e: sys::CUevent) -> Option<Arc<Event>> {
        let items = self.keep.lock().unwrap_or_else(|p| p.into_inner());
        items
            .iter()
            .rev()
            .filter_map(|item| item.clone().downcast::<Event>().ok())
            .find(|ev| ev.handle() == e)
    }

    /// What [`add_conditional`](Self::add_conditional) recorded of `node`.
    fn conditional(&self, node: GraphNode) -> Option<ConditionalNodeInfo> {
        self.conditional_record(node, |r| r.info)
    }

    /// Every node of the graph (`cuGraphGetNodes`; not those of conditional bodies
    /// or child graphs).
    ///
    /// # Errors
    /// The driver's error.
    pub fn nodes(&self) -> Result<Vec<GraphNode>> {
        self.listed("listing a graph's nodes", sys::cuGraphGetNodes)
    }

    /// The nodes without dependencies (`cuGraphGetRootNodes`).
    ///
    /// # Errors
    /// The driver's error.
    pub fn root_nodes(&self) -> Result<Vec<GraphNode>> {
        self.listed("listing a graph's root nodes", sys::cuGraphGetRootNodes)
    }

    /// The nodes a driver query of the graph lists (`cuGraphGetNodes`,
    /// `cuGraphGetRootNodes`).
    fn listed(
        &self,
        what: &'static str,
        query: unsafe fn(sys::CUgraph, *mut sys::CUgraphNode, *mut usize) -> sys::CUresult,
    ) -> Result<Vec<GraphNode>> {
        let g = self.handle;
        let v = two_calls(what, |nodes, n| {
            // SAFETY: a live graph; `nodes` holds `*n` elements (or is null).
            unsafe { query(g, nodes, n) }
        })?;
        Ok(v.into_iter().map(|h| self.node(h)).collect())
    }

    /// Every edge of the graph (`cuGraphGetEdges`; from CUDA 12.3 with the edge data).
    ///
    /// # Errors
    /// The driver's error.
    pub fn edges(&self) -> Result<Vec<GraphEdge>> {
        const WHAT: &str = "listing a graph's edges";
        let g = self.handle;
        let null: sys::CUgraphNode = std::ptr::null_mut();
        let mut n = 0usize;
        let new = crate::versions::driver_at_least(12030);
        let count = if new {
            // SAFETY: a live graph; null arrays ask for the count.
            unsafe {
                sys::cuGraphGetEdges(
                    g,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    &mut n,
                )
            }
        } else {
            // SAFETY: as above (the shape of drivers before CUDA 12.3).
            unsafe {
                sys::cuda12::cuGraphGetEdges(g, std::ptr::null_mut(), std::ptr::null_mut(), &mut n)
            }
        };
        count.check(|| WHAT)?;
        if n == 0 {
            // The driver refuses a second call with empty arrays.
            return Ok(Vec::new());
        }
        let mut from: Vec<sys::CUgraphNode> = vec![null; n];
        let mut to: Vec<sys::CUgraphNode> = vec![null; n];
        let mut data = vec![sys::CUgraphEdgeData::default(); n];
        let mut got = n;
        let rc = if new {
            // SAFETY: three arrays of `n` elements, `got == n`.
            unsafe {
                sys::cuGraphGetEdges(
                    g,
                    from.as_mut_ptr(),
                    to.as_mut_ptr(),
                    data.as_mut_ptr(),
                    &mut got,
                )
            }
        } else {
            // SAFETY: as above; edge data stays the default.
            unsafe { sys::cuda12::cuGraphGetEdges(g, from.as_mut_ptr(), to.as_mut_ptr(), &mut got) }
        };
        rc.check(|| WHAT)?;
        Ok(from
            .into_iter()
            .zip(to)
            .zip(data)
            .take(got.min(n))
            .map(|((f, t), d)| GraphEdge::new(self.node(f), self.node(t), d))
            .collect())
    }

    /// Removes the edge `from → to` (`cuGraphRemoveDependencies`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for nodes of another graph; the driver's error
    /// (for example, no such edge).
    pub fn remove_dependency(&mut self, from: GraphNode, to: GraphNode) -> Result<()> {
        const WHAT: &str = "removing a graph edge";
        self.own(from, WHAT)?;
        self.own(to, WHAT)?;
        let rc = if crate::versions::driver_at_least(12030) {
            // SAFETY: two nodes of this graph (checked); no edge data (a default edge).
            unsafe {
                sys::cuGraphRemoveDependencies(
                    self.handle,
                    &from.handle,
                    &to.handle,
                    std::ptr::null(),
                    1,
                )
            }
        } else {
            // SAFETY: as above (the shape of drivers before CUDA 12.3).
            unsafe {
                sys::cuda12::cuGraphRemoveDependencies(self.handle, &from.handle, &to.handle, 1)
            }
        };
        rc.check(|| WHAT)
    }

    /// Removes `node` and its edges from the graph (`cuGraphDestroyNode`).
    /// Instantiations made before are unaffected.
    ///
    /// # Safety
    /// `node` and every copy of it ([`GraphNode`] is `Copy`) must not be used
    /// again (with this graph or any [`GraphExec`](crate::GraphExec) of it): the
    /// driver frees the node, and a later node may reuse its handle. A
    /// [`Graph`] returned by [`GraphNode::params`] for a child graph node, or the
    /// bodies of a conditional node, die with the node and must not be used after.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a node of another graph; the driver's error.
    pub unsafe fn destroy_node(&mut self, node: GraphNode) -> Result<()> {
        const WHAT: &str = "destroying a graph node";
        self.own(node, WHAT)?;
        // SAFETY: a node of this graph (checked), not used again (per the contract).
        unsafe { sys::cuGraphDestroyNode(node.handle) }.check(|| WHAT)?;
        // A later conditional node may get the same handle: forget this one's record.
        self.keep
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|item| {
                item.downcast_ref::<ConditionalRecord>()
                    .is_none_or(|r| !(r.graph == node.graph && r.node == node.handle))
            });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_kinds_map_from_the_driver_values() {
        let all = [
            (sys::CU_GRAPH_NODE_TYPE_KERNEL, GraphNodeKind::Kernel),
            (sys::CU_GRAPH_NODE_TYPE_MEMCPY, GraphNodeKind::Memcpy),
            (sys::CU_GRAPH_NODE_TYPE_MEMSET, GraphNodeKind::Memset),
            (sys::CU_GRAPH_NODE_TYPE_HOST, GraphNodeKind::HostCallback),
            (sys::CU_GRAPH_NODE_TYPE_GRAPH, GraphNodeKind::ChildGraph),
            (sys::CU_GRAPH_NODE_TYPE_EMPTY, GraphNodeKind::Empty),
            (sys::CU_GRAPH_NODE_TYPE_WAIT_EVENT, GraphNodeKind::EventWait),
            (
                sys::CU_GRAPH_NODE_TYPE_EVENT_RECORD,
                GraphNodeKind::EventRecord,
            ),
            (
                sys::CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL,
                GraphNodeKind::ExternalSemaphoreSignal,
            ),
            (
                sys::CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT,
                GraphNodeKind::ExternalSemaphoreWait,
            ),
            (sys::CU_GRAPH_NODE_TYPE_MEM_ALLOC, GraphNodeKind::MemAlloc),
            (sys::CU_GRAPH_NODE_TYPE_MEM_FREE, GraphNodeKind::MemFree),
            (
                sys::CU_GRAPH_NODE_TYPE_BATCH_MEM_OP,
                GraphNodeKind::BatchMemOp,
            ),
            (
                sys::CU_GRAPH_NODE_TYPE_CONDITIONAL,
                GraphNodeKind::Conditional,
            ),
        ];
        let mut names = std::collections::HashSet::new();
        for (raw, kind) in all {
            assert_eq!(GraphNodeKind::from_raw(raw), kind);
            assert!(names.insert(kind.name()), "{kind:?} shares a name");
        }
        assert_eq!(
            GraphNodeKind::from_raw(sys::CUgraphNodeType(999)),
            GraphNodeKind::Unknown(999)
        );
    }

    #[test]
    fn edge_data_maps_to_edge_kinds() {
        let a = GraphNode {
            handle: std::ptr::null_mut(),
            graph: 1,
        };
        let data = |type_: u8, from_port: u8| sys::CUgraphEdgeData {
            from_port,
            type_,
            ..Default::default()
        };
        let e = GraphEdge::new(a, a, data(0, 0));
        assert_eq!(
            (e.kind, e.from_port, e.to_port),
            (GraphEdgeKind::Default, 0, 0)
        );
        let e = GraphEdge::new(a, a, data(1, 2));
        assert_eq!((e.kind, e.from_port), (GraphEdgeKind::Programmatic, 2));
        assert_eq!(
            GraphEdge::new(a, a, data(7, 0)).kind,
            GraphEdgeKind::Unknown(7)
        );
    }
}
