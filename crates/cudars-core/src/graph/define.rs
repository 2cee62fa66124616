//! The graph defined node by node: [`Graph`], its nodes ([`GraphNode`]), what it
//! keeps alive, and conditional nodes with their condition handles
//! ([`ConditionalKind`], [`GraphCondition`]). The other parts of a graph (memory
//! nodes, reading nodes back, instantiation, capture, the builder) sit above it.

use std::any::Any;
use std::ffi::c_void;
use std::fmt;
use std::sync::{Arc, Mutex};

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::graph::view::CaptureArg;
use crate::graph::view::check_signature_sizes;
use crate::launch::typed_kernel::{CaptureSignature, TypedKernel};
use crate::{
    code::kernel::Kernel, context::Context, event::Event, launch::KernelArg, launch::LaunchConfig,
};

/// Things a graph's nodes need alive: kernels (their libraries), host callbacks;
/// shared by the graph, its bodies and its instantiations.
pub(crate) type Keep = Arc<KeepList>;

/// What a [`Keep`] holds: the items, and where the graph's host nodes record
/// their panics ([`Graph::take_callback_panic`]).
#[derive(Default)]
pub(crate) struct KeepList {
    pub(super) items: Mutex<Vec<Arc<dyn Any + Send + Sync>>>,
    pub(super) panics: Arc<crate::panics::PanicSlot>,
}

impl KeepList {
    pub(super) fn lock(
        &self,
    ) -> std::sync::LockResult<std::sync::MutexGuard<'_, Vec<Arc<dyn Any + Send + Sync>>>> {
        self.items.lock()
    }
}

pub(crate) fn keep(k: &Keep, item: Arc<dyn Any + Send + Sync>) {
    k.lock().unwrap_or_else(|e| e.into_inner()).push(item);
}

/// Keeps what the kernel arguments `args` need alive ([`KernelArg::arg_owner`]:
/// the allocations of `ArcView`s) in `k`, so the graph and every instantiation
/// of it hold them, as cuda.core's graph holds its kernel-argument buffers.
pub(crate) fn keep_args(k: &Keep, args: &[&dyn KernelArg]) {
    for a in args {
        if let Some(owner) = a.arg_owner() {
            keep(k, owner);
        }
    }
}

/// Checks the arguments of an explicit graph's typed kernel node on `device`:
/// memory of another device, and graph memory of a builder (which exists only
/// inside that builder's graph, after its allocation), are refused.
pub(crate) fn check_node_args(
    device: &crate::device::Device,
    what: impl Fn() -> String,
    args: &[&dyn CaptureArg],
) -> Result<()> {
    for (i, a) in args.iter().enumerate() {
        if a.graph_memory_of().is_some() {
            return Err(Error::invalid(
                what(),
                format!(
                    "argument {i} is graph memory of a graph builder, usable only by work \
                     that builder captures after its allocation"
                ),
            ));
        }
        if let Some(d) = a.memory_device() {
            if d != device {
                return Err(Error::other_device(
                    what(),
                    format!(
                        "the graph is on device {}, argument {i} is memory of device {}",
                        device.ordinal(),
                        d.ordinal()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Adds everything `from` keeps alive to `into`.
pub(crate) fn keep_all(into: &Keep, from: &Keep) {
    if Arc::ptr_eq(into, from) {
        return;
    }
    let items: Vec<_> = from.lock().unwrap_or_else(|e| e.into_inner()).clone();
    into.lock().unwrap_or_else(|e| e.into_inner()).extend(items);
}

/// A node of a [`Graph`], to name as a dependency of later nodes of the same graph
/// (using it with another graph is an [`Error::InvalidArgument`]), and to read
/// back with [`kind`](Self::kind), [`params`](Self::params),
/// [`dependencies`](Self::dependencies) and [`dependents`](Self::dependents).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GraphNode {
    pub(super) handle: sys::CUgraphNode,
    pub(super) graph: u64,
}

// SAFETY: a node handle is an identifier; it is only handed to the driver together
// with the graph it belongs to (checked by id), which `&mut Graph` serialises.
// Soundness contract: rule 11.
unsafe impl Send for GraphNode {}
// SAFETY: as above.
// Soundness contract: rule 11.
unsafe impl Sync for GraphNode {}

impl GraphNode {
    /// The driver's handle.
    pub fn handle(&self) -> sys::CUgraphNode {
        self.handle
    }
}

fn next_graph_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Destroys the root graph of a hierarchy when the last handle on it goes.
pub(crate) struct Root(pub(super) sys::CUgraph);

// SAFETY: the handle is only destroyed, once, by whichever holder goes last; no
// other use is made of it through `Root`.
// Soundness contract: rule 11.
unsafe impl Send for Root {}
// SAFETY: as above: `Root` offers no access to the graph.
// Soundness contract: rule 11.
unsafe impl Sync for Root {}

// Deferred-release rule: on a driver callback thread the destroy (a CUDA call)
// is handed to the deferred queue instead of made there.
impl Drop for Root {
    fn drop(&mut self) {
        let destroy = |g: sys::CUgraph| {
            // SAFETY: the root graph, destroyed once, after every body graph
            // handle (they hold this `Arc`); instantiations are independent of it.
            let rc = unsafe { sys::cuGraphDestroy(g) };
            crate::cleanup::driver(rc, "destroying a graph (cuGraphDestroy)");
        };
        if crate::deferred::must_defer() {
            // SAFETY: the owned root graph; its one destroy moves to the queue.
            unsafe { crate::deferred::defer_handle("destroying a graph", self.0, destroy) };
            return;
        }
        destroy(self.0);
    }
}

/// A graph definition (`CUgraph`): nodes and the edges between them.
///
/// Built by [`Stream::end_capture`](crate::Stream::end_capture) (from work issued to a capturing stream) or
/// node by node with the `add_*` methods. Instantiate it with
/// [`instantiate`](Self::instantiate) to launch it. Owned graphs are destroyed on
/// drop; the bodies of conditional nodes belong to their parent graph.
///
/// Neither `Send` nor `Sync`: the driver requires a graph hierarchy (a graph and
/// the bodies of its conditional nodes) to be modified from one thread at a time,
/// and the bodies are separate values; keeping them on one thread guarantees it.
/// Instantiate, and send the [`GraphExec`](crate::GraphExec), to launch from elsewhere.
pub struct Graph {
    pub(super) handle: sys::CUgraph,
    pub(super) id: u64,
    pub(super) ctx: Context,
    /// The root of the hierarchy: a body keeps its root graph alive.
    pub(super) root: Option<Arc<Root>>,
    pub(super) keep: Keep,
    pub(super) _not_send: std::marker::PhantomData<*const ()>,
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph")
            .field("handle", &self.handle)
            .field("id", &self.id)
            .finish()
    }
}

/// Graphs are equal when they are the same driver graph (`cuda.core`'s
/// `GraphDefinition.__eq__` compares the handles): a conditional node's bodies read
/// twice are equal.
impl PartialEq for Graph {
    fn eq(&self, other: &Self) -> bool {
        self.handle == other.handle
    }
}

impl Eq for Graph {}

/// Hashes the handle, as equality compares it.
impl std::hash::Hash for Graph {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.handle as usize).hash(state);
    }
}

/// What a conditional node does with its condition value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionalKind {
    /// Run the body once if the value is non-zero.
    If,
    /// Run the first body if non-zero, the second if zero.
    IfElse,
    /// Run the body while the value is non-zero (checked before each run).
    While,
    /// Run body `value` of `n` bodies (none if out of range).
    Switch(u32),
}

/// A condition handle (`CUgraphConditionalHandle`): passed to kernels, which set it
/// with `cudaGraphSetConditional(handle, value)`, and named by conditional nodes. A
/// 64-bit value ([`Pod`](bytemuck::Pod)): as a kernel argument it is its own bytes.
///
/// NVRTC's built-in headers do not declare the device side; put
/// [`GraphCondition::DEVICE_DECLARATIONS`] before the kernels that set a condition
/// (nothing is linked: ptxas resolves the call itself, as it does `printf`'s, so a
/// whole-program cubin needs no `cudadevrt` and no relocatable device code).
///
/// ```no_run
/// # fn f(dev: &cudars_core::Device) -> cudars_core::Result<()> {
/// use cudars_core::{CompileTarget, GraphCondition, Program, ProgramOptions, SourceCode};
/// let src = format!(
///     "{}{}",
///     GraphCondition::DEVICE_DECLARATIONS,
///     r#"extern "C" __global__ void step(int *left, cudaGraphConditionalHandle h) {
///         cudaGraphSetConditional(h, --*left > 0 ? 1u : 0u);
///     }"#
/// );
/// let code = Program::new(SourceCode::Cxx(&src), ProgramOptions::for_device(dev)?)?
///     .compile(CompileTarget::Cubin, &[])?;
/// let step = code.get_kernel("step")?; // launched with a `GraphCondition` argument
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct GraphCondition(pub sys::CUgraphConditionalHandle);

impl GraphCondition {
    /// CUDA C++ that declares the device side of a condition for NVRTC:
    /// `cudaGraphConditionalHandle` and
    /// `cudaGraphSetConditional(cudaGraphConditionalHandle, unsigned int)`, as the
    /// runtime's `cuda_device_runtime_api.h` declares them (a handle is a 64-bit
    /// value, the function one that ptxas resolves). Put it before the source's kernels; a
    /// source compiled with the runtime's own headers included does not need it.
    pub const DEVICE_DECLARATIONS: &'static str = "typedef unsigned long long \
cudaGraphConditionalHandle;\nextern \"C\" __device__ __cudart_builtin__ void \
cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned int value);\n";
}

// SAFETY: `repr(transparent)` over `CUgraphConditionalHandle`, a `u64`: every bit
// pattern, zero included, is a value, and there is no padding. (Written out rather
// than derived: bytemuck's derive would add a proc-macro crate to every build.)
unsafe impl bytemuck::Zeroable for GraphCondition {}
// SAFETY: as above; the type is `Copy` and `'static`.
unsafe impl bytemuck::Pod for GraphCondition {}

/// A graph host node's closure and where its panics go.
pub(crate) struct HostNode {
    pub(super) f: Box<dyn Fn() + Send + Sync>,
    pub(super) panics: Arc<crate::panics::PanicSlot>,
}

// The trampoline rule (see `callback::once_trampoline`): the thread is marked as
// a driver callback thread, the closure runs under `catch_unwind`, and the
// panic's payload is dropped through `drop_caught` (`run_caught`), so a payload
// whose own `Drop` panics neither unwinds into the driver nor aborts. The box is
// dropped on an ordinary thread, with the keep list.
unsafe extern "C" fn host_trampoline(data: *mut c_void) {
    let _scope = crate::deferred::CallbackScope::enter();
    // SAFETY: `data` is the `HostNode` that `host_node_params` made and its
    // caller stored in the graph's keep list, alive for every instantiation.
    let node = unsafe { &*(data as *const HostNode) };
    crate::panics::run_caught(|| (node.f)(), &node.panics);
}

/// The host node parameters that call `f`, recording its panics in `keep`'s
/// slot, and the box they point to, which must stay alive (in the keep list) as
/// long as any node or instantiation names it.
pub(crate) fn host_node_params(
    f: impl Fn() + Send + Sync + 'static,
    keep: &Keep,
) -> (Arc<HostNode>, sys::CUDA_HOST_NODE_PARAMS) {
    let boxed = Arc::new(HostNode {
        f: Box::new(f),
        panics: keep.panics.clone(),
    });
    let p = sys::CUDA_HOST_NODE_PARAMS {
        fn_: Some(host_trampoline),
        userData: Arc::as_ptr(&boxed) as *mut c_void,
    };
    (boxed, p)
}

/// `cuGraphAddNode` without edge data: the CUDA 12.3 shape where the driver has
/// it, else the CUDA 12.2 one (older drivers have neither: the call fails with
/// [`Error::Unsupported`]).
///
/// # Safety
/// As `cuGraphAddNode`: `deps` holds `n` nodes of `graph`, `p` a valid node
/// description.
pub(crate) unsafe fn add_node(
    node: &mut sys::CUgraphNode,
    graph: sys::CUgraph,
    deps: *const sys::CUgraphNode,
    n: usize,
    p: &mut sys::CUgraphNodeParams,
) -> sys::CUresult {
    if crate::versions::driver_at_least(12030) {
        // SAFETY: per this function's contract; no edge data.
        unsafe { sys::cuGraphAddNode(node, graph, deps, std::ptr::null(), n, p) }
    } else {
        // CUDA 12's declaration of the parameters is its own type: the same C
        // layout (256 bytes), which the headers since 13.4 spell with a union in
        // `CUmemLocation`.
        const _: () = assert!(
            std::mem::size_of::<sys::CUgraphNodeParams>()
                == std::mem::size_of::<sys::cuda12::CUgraphNodeParams>()
        );
        let p = std::ptr::from_mut(p).cast::<sys::cuda12::CUgraphNodeParams>();
        // SAFETY: as above; `p` is the same parameter block, of the same layout.
        unsafe { sys::cuda12::cuGraphAddNode(node, graph, deps, n, p) }
    }
}

/// A kernel node's parameters in `ctx` (made current while the guard in the
/// caller lives); `ptrs` receives the argument pointers, which `p` points into.
pub(crate) fn kernel_node_params(
    ctx: &Context,
    config: &LaunchConfig,
    kernel: &Kernel,
    args: &[&dyn KernelArg],
    ptrs: &mut Vec<*mut c_void>,
) -> Result<sys::CUgraphNodeParams> {
    ptrs.clear();
    ptrs.resize(args.len(), std::ptr::null_mut());
    crate::launch::gather_args(kernel, args, ptrs)?;
    let _current = ctx.ensure_current()?;
    // Kernel nodes take the kernel's function in the graph's context.
    let func = kernel.function_in_current()?;
    let mut p = sys::CUgraphNodeParams {
        type_: sys::CU_GRAPH_NODE_TYPE_KERNEL,
        ..Default::default()
    };
    p.__bindgen_anon_1.kernel = sys::CUDA_KERNEL_NODE_PARAMS_v3 {
        func,
        gridDimX: config.grid.x,
        gridDimY: config.grid.y,
        gridDimZ: config.grid.z,
        blockDimX: config.block.x,
        blockDimY: config.block.y,
        blockDimZ: config.block.z,
        sharedMemBytes: config.shmem_size,
        kernelParams: ptrs.as_mut_ptr(),
        extra: std::ptr::null_mut(),
        kern: std::ptr::null_mut(),
        ctx: ctx.handle(),
    };
    Ok(p)
}

/// A conditional node's condition and kind ([`GraphNodeParams::Conditional`](crate::GraphNodeParams::Conditional)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConditionalNodeInfo {
    /// The condition handle the node reads.
    pub condition: GraphCondition,
    /// What it does with the value.
    pub kind: ConditionalKind,
}

/// What [`Graph::add_conditional`] records of a node, since the driver's query
/// for a conditional node's parameters (`cuGraphNodeGetParams`) is not in the
/// bindings.
pub(super) struct ConditionalRecord {
    pub(super) graph: u64,
    pub(super) node: sys::CUgraphNode,
    pub(super) info: ConditionalNodeInfo,
    /// The node's body graphs, which the node owns.
    pub(super) bodies: Vec<sys::CUgraph>,
}

// SAFETY: the node handle is only compared, never handed to the driver; the
// body handles are only wrapped into `Graph` values borrowed from the graph
// that holds this record (`GraphNode::bodies`), which serialise their use.
// Soundness contract: rule 11.
unsafe impl Send for ConditionalRecord {}
// SAFETY: as above.
// Soundness contract: rule 11.
unsafe impl Sync for ConditionalRecord {}

/// A condition handle for conditional nodes of `graph` (a graph of `ctx`, or one
/// being captured); with `default`, reset to it at the start of each launch.
pub(crate) fn create_condition_in(
    graph: sys::CUgraph,
    ctx: &Context,
    default: Option<u32>,
) -> Result<GraphCondition> {
    let _current = ctx.ensure_current()?;
    let mut h: sys::CUgraphConditionalHandle = 0;
    let (value, flags) = match default {
        Some(v) => (v, sys::CU_GRAPH_COND_ASSIGN_DEFAULT),
        None => (0, 0),
    };
    // SAFETY: `h` is valid for writes; the caller passes a live graph of `ctx`.
    unsafe { sys::cuGraphConditionalHandleCreate(&mut h, graph, ctx.handle(), value, flags) }
        .check(|| "creating a graph condition")?;
    Ok(GraphCondition(h))
}

/// The description of a conditional node of `kind` on `condition` in `ctx`, and
/// its number of bodies; checks the driver's version and the kind first.
pub(crate) fn conditional_params(
    ctx: &Context,
    condition: GraphCondition,
    kind: ConditionalKind,
) -> Result<(sys::CUgraphNodeParams, u32)> {
    let (needs, feature) = match kind {
        ConditionalKind::If => (12030, "a conditional `if` node"),
        ConditionalKind::While => (12030, "a conditional `while` node"),
        ConditionalKind::IfElse => (12080, "a conditional `if`/`else` node"),
        ConditionalKind::Switch(_) => (12080, "a conditional `switch` node"),
    };
    crate::versions::require_driver(needs, feature, || format!("adding a {kind:?} node"))?;
    let (type_, size) = match kind {
        ConditionalKind::If => (sys::CU_GRAPH_COND_TYPE_IF, 1),
        ConditionalKind::IfElse => (sys::CU_GRAPH_COND_TYPE_IF, 2),
        ConditionalKind::While => (sys::CU_GRAPH_COND_TYPE_WHILE, 1),
        ConditionalKind::Switch(0) => {
            return Err(Error::invalid(
                "adding a switch node",
                "a switch needs at least one body",
            ));
        }
        ConditionalKind::Switch(n) => (sys::CU_GRAPH_COND_TYPE_SWITCH, n),
    };
    let mut p = sys::CUgraphNodeParams {
        type_: sys::CU_GRAPH_NODE_TYPE_CONDITIONAL,
        ..Default::default()
    };
    p.__bindgen_anon_1.conditional = sys::CUDA_CONDITIONAL_NODE_PARAMS {
        handle: condition.0,
        type_,
        size,
        phGraph_out: std::ptr::null_mut(),
        ctx: ctx.handle(),
    };
    Ok((p, size))
}

/// The `size` body graphs the driver wrote into `p`, a conditional node
/// description it has just added.
pub(crate) fn body_handles(p: &sys::CUgraphNodeParams, size: u32) -> Result<Vec<sys::CUgraph>> {
    // SAFETY: reading back the union member `conditional_params` wrote; the driver
    // set `phGraph_out` to its own array of `size` body graphs, valid while the node lives.
    let out = unsafe { p.__bindgen_anon_1.conditional.phGraph_out };
    if out.is_null() {
        return Err(Error::unsupported(
            "adding a conditional node",
            "the driver returned no body graphs",
        ));
    }
    // SAFETY: `out` holds `size` graph handles (see above).
    Ok(unsafe { std::slice::from_raw_parts(out, size as usize) }.to_vec())
}

impl Graph {
    /// Records a conditional node's condition, kind and body graphs for
    /// [`GraphNode::params`](crate::GraphNode::params) and
    /// [`GraphNode::bodies`](crate::GraphNode::bodies).
    pub(super) fn record_conditional(
        &self,
        node: GraphNode,
        condition: GraphCondition,
        kind: ConditionalKind,
        bodies: Vec<sys::CUgraph>,
    ) {
        keep(
            &self.keep,
            Arc::new(ConditionalRecord {
                graph: node.graph,
                node: node.handle,
                info: ConditionalNodeInfo { condition, kind },
                bodies,
            }),
        );
    }

    /// `read` of the record [`add_conditional`](Self::add_conditional) (or a
    /// graph builder's capture) made of `node`.
    pub(super) fn conditional_record<T>(
        &self,
        node: GraphNode,
        read: impl FnOnce(&ConditionalRecord) -> T,
    ) -> Option<T> {
        let items = self.keep.lock().unwrap_or_else(|p| p.into_inner());
        let record = items.iter().rev().find_map(|item| {
            let r = item.downcast_ref::<ConditionalRecord>()?;
            (r.graph == node.graph && r.node == node.handle).then_some(r)
        })?;
        Some(read(record))
    }

    /// An empty graph in `ctx`.
    ///
    /// # Errors
    /// The driver's error.
    pub fn new(ctx: &Context) -> Result<Self> {
        let _current = ctx.ensure_current()?;
        let mut g: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: `g` is valid for writes; flags must be 0.
        unsafe { sys::cuGraphCreate(&mut g, 0) }.check(|| "creating a graph")?;
        Ok(Self::owned(g, ctx.clone()))
    }

    /// A copy of the graph (`cuGraphClone`): its nodes, edges and conditional
    /// bodies, as a graph of its own (nodes of this graph are not its nodes).
    /// The copy keeps alive everything this graph keeps now (kernels, buffers,
    /// events, host callbacks), independently: it can be instantiated and run
    /// after this graph and every other handle on those are gone. Its host
    /// nodes report panics where this graph's do
    /// ([`take_callback_panic`](Self::take_callback_panic)).
    ///
    /// # Errors
    /// The driver's error (for example, for the body graph of a conditional
    /// node).
    pub fn try_clone(&self) -> Result<Self> {
        let _current = self.ctx.ensure_current()?;
        let mut g: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: `g` is valid for writes; a live graph.
        unsafe { sys::cuGraphClone(&mut g, self.handle) }.check(|| "cloning a graph")?;
        let items = self.keep.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let keep = Arc::new(KeepList {
            items: Mutex::new(items),
            panics: self.keep.panics.clone(),
        });
        Ok(Self::wrap(
            g,
            self.ctx.clone(),
            Some(Arc::new(Root(g))),
            keep,
        ))
    }

    pub(super) fn wrap(
        handle: sys::CUgraph,
        ctx: Context,
        root: Option<Arc<Root>>,
        keep: Keep,
    ) -> Self {
        Self {
            handle,
            id: next_graph_id(),
            ctx,
            root,
            keep,
            _not_send: std::marker::PhantomData,
        }
    }

    pub(super) fn owned(handle: sys::CUgraph, ctx: Context) -> Self {
        Self::wrap(handle, ctx, Some(Arc::new(Root(handle))), Keep::default())
    }

    /// Takes the record of this graph's host nodes
    /// ([`add_host_callback`](Self::add_host_callback)) that panicked since the
    /// last report, in any launch of any of its instantiations (`None` if none
    /// did), without waiting for anything. Shared with its bodies and
    /// instantiations: one of them takes what the others would.
    pub fn take_callback_panic(&self) -> Option<crate::error::CallbackPanic> {
        self.keep.panics.take()
    }

    /// The driver's handle.
    pub fn handle(&self) -> sys::CUgraph {
        self.handle
    }

    /// The dependencies as driver handles, checked to belong to this graph.
    pub(super) fn deps(&self, deps: &[GraphNode]) -> Result<Vec<sys::CUgraphNode>> {
        if deps.iter().any(|d| d.graph != self.id) {
            return Err(Error::invalid(
                "adding a graph node",
                "a dependency is a node of another graph",
            ));
        }
        Ok(deps.iter().map(|d| d.handle).collect())
    }

    pub(super) fn node(&self, handle: sys::CUgraphNode) -> GraphNode {
        GraphNode {
            handle,
            graph: self.id,
        }
    }

    /// An empty node: a join point.
    ///
    /// # Errors
    /// The driver's error.
    pub fn add_empty(&mut self, deps: &[GraphNode]) -> Result<GraphNode> {
        let dv = self.deps(deps)?;
        let (d, n) = (dv.as_ptr(), dv.len());
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: `d` holds `n` nodes of this graph (`GraphNode` is `repr` of the handle).
        unsafe { sys::cuGraphAddEmptyNode(&mut node, self.handle, d, n) }
            .check(|| "adding an empty node")?;
        Ok(self.node(node))
    }

    /// A kernel launch with `config` and `args` (checked as [`crate::launch`]
    /// checks them; the driver copies the argument values now). Cluster,
    /// cooperative and priority settings are not part of kernel nodes.
    ///
    /// The graph, and every instantiation of it, keeps the kernel (its library)
    /// and the allocations of [`ArcView`](crate::ArcView) arguments alive
    /// (`buf.shared_view()`, `buf.shared_slice(a..b)?`): dropping every other
    /// handle on such a buffer before launching is safe.
    ///
    /// # Safety
    /// As [`crate::launch`], for every launch of every instantiation of the graph:
    /// the memory that arguments other than `ArcView`s point to (borrowed views,
    /// [`DevicePtr`](crate::DevicePtr)s) must stay valid while the graph can run.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for wrong arguments; the driver's error.
    pub unsafe fn add_kernel(
        &mut self,
        deps: &[GraphNode],
        config: &LaunchConfig,
        kernel: &Kernel,
        args: &[&dyn KernelArg],
    ) -> Result<GraphNode> {
        let mut ptrs = Vec::new();
        let mut p = kernel_node_params(&self.ctx, config, kernel, args, &mut ptrs)?;
        let dv = self.deps(deps)?;
        let (d, n) = (dv.as_ptr(), dv.len());
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: `p` is a kernel node description whose argument pointers are valid
        // for the call; the driver copies the values. (`cuGraphAddNode` works in
        // conditional bodies, where `cuGraphAddKernelNode` does not.)
        unsafe { add_node(&mut node, self.handle, d, n, &mut p) }
            .check(|| format!("adding a node for kernel `{}`", kernel.name()))?;
        keep(&self.keep, Arc::new(kernel.clone()));
        keep_args(&self.keep, args);
        Ok(self.node(node))
    }

    /// A kernel node of a [`TypedKernel`] (the typed twin of
    /// [`add_kernel`](Self::add_kernel), as
    /// [`GraphBuilder::launch_typed`](crate::GraphBuilder::launch_typed) is of
    /// the builder's `launch`): `args` is the signature's tuple with a
    /// [`GraphView`](crate::GraphView) for each pointer (`ConstPtr<T>`,
    /// `MutPtr<T>`: `(&arc_buffer).into()`, an [`ArcView`](crate::ArcView)
    /// `.into()`) and the value for each value. The argument sizes are checked
    /// against the signature (itself checked against the kernel when the
    /// `TypedKernel` was made, on drivers of CUDA 12.4 and later), each view is
    /// checked to be memory of the graph's device, and the graph and every
    /// instantiation of it keep the views' allocations and the kernel alive:
    /// dropping every other handle on the buffers before launching is safe.
    ///
    /// ```no_run
    /// # fn f(g: &mut cudars_core::Graph, k: cudars_core::Kernel, x: &std::sync::Arc<cudars_core::DeviceBuffer<f32>>) -> cudars_core::Result<()> {
    /// use cudars_core::{LaunchConfig, MutPtr, TypedKernel};
    /// // extern "C" __global__ void scale(float* x, float a, unsigned long long n)
    /// let scale = TypedKernel::<(MutPtr<f32>, f32, u64)>::new(k)?;
    /// let n = x.len() as u64;
    /// // SAFETY: scale touches x[0..n], and x holds n floats.
    /// let node = unsafe { g.add_kernel_typed(&[], &LaunchConfig::for_elements(n, 256), &scale, (x.into(), 2.0, n))? };
    /// # Ok(()) }
    /// ```
    ///
    /// # Safety
    /// As [`TypedKernel::launch`], for every launch of every instantiation of
    /// the graph: the kernel must stay within the views it is given and write
    /// only through `MutPtr` parameters (the graph keeps the views' memory alive).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for memory of another device
    /// ([`InvalidKind::OtherDevice`](crate::InvalidKind::OtherDevice)), graph
    /// memory of a [`GraphBuilder`](crate::GraphBuilder) (usable only inside
    /// that builder's capture), or an argument whose size is not the
    /// signature's; as [`add_kernel`](Self::add_kernel).
    pub unsafe fn add_kernel_typed<S: CaptureSignature>(
        &mut self,
        deps: &[GraphNode],
        config: &LaunchConfig,
        kernel: &TypedKernel<S>,
        args: S::Captured,
    ) -> Result<GraphNode> {
        let name = kernel.kernel().name();
        S::with_captured(&args, |all| {
            let what = || format!("adding a node for kernel `{name}`");
            check_signature_sizes(what, S::SIZES, all)?;
            check_node_args(self.ctx.device(), what, all)?;
            let plain: Vec<&dyn KernelArg> = all.iter().map(|a| a.as_kernel_arg()).collect();
            // SAFETY: per this function's contract; `add_kernel` keeps the
            // views' allocations (`arg_owner`) and the kernel alive.
            unsafe { self.add_kernel(deps, config, kernel.kernel(), &plain) }
        })
    }

    /// Calls `f` on a driver thread when the node runs. `f` must not call CUDA.
    /// A panic in `f` is caught (nothing unwinds into the driver, and a payload
    /// whose own `Drop` panics does not abort the process) and recorded:
    /// [`take_callback_panic`](Self::take_callback_panic) (or the
    /// instantiation's [`GraphExec::take_callback_panic`](crate::GraphExec::take_callback_panic)) hands it over.
    ///
    /// # Errors
    /// The driver's error.
    pub fn add_host_callback(
        &mut self,
        deps: &[GraphNode],
        f: impl Fn() + Send + Sync + 'static,
    ) -> Result<GraphNode> {
        let (boxed, p) = host_node_params(f, &self.keep);
        let dv = self.deps(deps)?;
        let (d, n) = (dv.as_ptr(), dv.len());
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: the box `p` points to stays alive in the keep list as long as
        // the graph and its instantiations.
        unsafe { sys::cuGraphAddHostNode(&mut node, self.handle, d, n, &p) }
            .check(|| "adding a host node")?;
        keep(&self.keep, boxed);
        Ok(self.node(node))
    }

    /// Records `event` when the node runs.
    ///
    /// # Errors
    /// The driver's error.
    pub fn add_event_record(
        &mut self,
        deps: &[GraphNode],
        event: &Arc<Event>,
    ) -> Result<GraphNode> {
        let dv = self.deps(deps)?;
        let (d, n) = (dv.as_ptr(), dv.len());
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: a live event, kept alive by the keep list.
        unsafe { sys::cuGraphAddEventRecordNode(&mut node, self.handle, d, n, event.handle()) }
            .check(|| "adding an event record node")?;
        keep(&self.keep, event.clone());
        Ok(self.node(node))
    }

    /// Waits for `event` before the node's dependents run.
    ///
    /// # Errors
    /// The driver's error.
    pub fn add_event_wait(&mut self, deps: &[GraphNode], event: &Arc<Event>) -> Result<GraphNode> {
        let dv = self.deps(deps)?;
        let (d, n) = (dv.as_ptr(), dv.len());
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: a live event, kept alive by the keep list.
        unsafe { sys::cuGraphAddEventWaitNode(&mut node, self.handle, d, n, event.handle()) }
            .check(|| "adding an event wait node")?;
        keep(&self.keep, event.clone());
        Ok(self.node(node))
    }

    /// Embeds a copy of `child`.
    ///
    /// # Errors
    /// The driver's error.
    pub fn add_child(&mut self, deps: &[GraphNode], child: &Graph) -> Result<GraphNode> {
        let dv = self.deps(deps)?;
        let (d, n) = (dv.as_ptr(), dv.len());
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: a live child graph; the driver clones it.
        unsafe { sys::cuGraphAddChildGraphNode(&mut node, self.handle, d, n, child.handle) }
            .check(|| "adding a child graph node")?;
        keep_all(&self.keep, &child.keep);
        Ok(self.node(node))
    }

    /// Adds the edge `from → to`.
    ///
    /// # Errors
    /// The driver's error.
    pub fn add_dependency(&mut self, from: GraphNode, to: GraphNode) -> Result<()> {
        self.deps(&[from, to])?;
        let rc = if crate::versions::driver_at_least(12030) {
            // SAFETY: two nodes of this graph (checked); no edge data.
            unsafe {
                sys::cuGraphAddDependencies(
                    self.handle,
                    &from.handle,
                    &to.handle,
                    std::ptr::null(),
                    1,
                )
            }
        } else {
            // SAFETY: as above (the shape of drivers before CUDA 12.3).
            unsafe { sys::cuda12::cuGraphAddDependencies(self.handle, &from.handle, &to.handle, 1) }
        };
        rc.check(|| "adding a graph edge")
    }

    /// A condition handle for conditional nodes of this graph; with `default`, the
    /// value is reset to it at the start of each launch.
    ///
    /// # Errors
    /// The driver's error.
    pub fn create_condition(&mut self, default: Option<u32>) -> Result<GraphCondition> {
        create_condition_in(self.handle, &self.ctx, default)
    }

    /// A conditional node on `condition`; returns the node and its body graphs
    /// (one for `If` and `While`, two for `IfElse`, `n` for `Switch(n)`), to fill
    /// with nodes.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `Switch(0)`; the driver's error.
    pub fn add_conditional(
        &mut self,
        deps: &[GraphNode],
        condition: GraphCondition,
        kind: ConditionalKind,
    ) -> Result<(GraphNode, Vec<Graph>)> {
        let (mut p, size) = conditional_params(&self.ctx, condition, kind)?;
        let dv = self.deps(deps)?;
        let (d, n) = (dv.as_ptr(), dv.len());
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        let _current = self.ctx.ensure_current()?;
        // SAFETY: `p` is a fully initialised conditional node description.
        unsafe { add_node(&mut node, self.handle, d, n, &mut p) }
            .check(|| format!("adding a {kind:?} node"))?;
        let handles = body_handles(&p, size)?;
        let bodies = handles
            .iter()
            .map(|&g| Graph::wrap(g, self.ctx.clone(), self.root.clone(), self.keep.clone()))
            .collect();
        let node = self.node(node);
        self.record_conditional(node, condition, kind, handles);
        Ok((node, bodies))
    }

    /// How many nodes the graph has (not counting conditional bodies).
    ///
    /// # Errors
    /// The driver's error.
    pub fn node_count(&self) -> Result<usize> {
        let mut n = 0usize;
        // SAFETY: a null array asks for the count only.
        unsafe { sys::cuGraphGetNodes(self.handle, std::ptr::null_mut(), &mut n) }
            .check(|| "counting graph nodes")?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A panic payload whose own `Drop` panics.
    struct Bomb;

    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("the payload's drop panics too");
        }
    }

    #[test]
    fn a_host_node_survives_a_payload_whose_drop_panics_and_reports_it() {
        let keep = Keep::default();
        let runs = Arc::new(AtomicUsize::new(0));
        let r = runs.clone();
        let (boxed, p) = host_node_params(
            move || {
                r.fetch_add(1, Ordering::SeqCst);
                std::panic::panic_any(Bomb);
            },
            &keep,
        );
        let trampoline = p.fn_.expect("a trampoline");
        for _ in 0..2 {
            // SAFETY: the node's data, alive in `boxed`, called as the driver would.
            unsafe { trampoline(p.userData) };
        }
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        let panic = keep.panics.take().expect("recorded");
        assert_eq!(panic.count, 2);
        assert_eq!(panic.message, "(a panic payload that is not a string)");
        drop(boxed);
        assert_eq!(Arc::strong_count(&runs), 1);
    }

    /// What `add_kernel` and `set_kernel_node` keep of their arguments: the
    /// allocation of an `ArcView`, not a plain value; released with the keep
    /// list (the graph and its instantiations), not before.
    #[test]
    fn kernel_arguments_that_share_an_allocation_are_kept() {
        let mut words = [0u32; 4];
        let buf = crate::memory::arc_view::host_backed(bytemuck::cast_slice_mut(&mut words));
        let weak = Arc::downgrade(&buf);
        let view = crate::memory::arc_view::ArcView::<u32>::of_buffer(&buf).unwrap();
        drop(buf);
        let keep = Keep::default();
        let n = 7i32;
        keep_args(&keep, &[&view, &n]);
        assert_eq!(keep.lock().unwrap().len(), 1, "the view's allocation only");
        drop(view);
        assert!(weak.upgrade().is_some(), "kept after the view is gone");
        drop(keep);
        assert!(weak.upgrade().is_none());
    }

    /// What `add_kernel_typed` checks of its views before the driver is
    /// called: memory of the graph's device passes; memory of another device,
    /// and graph memory of a builder, are refused, naming the argument.
    #[test]
    fn a_typed_nodes_views_are_checked_for_device_and_graph_memory() {
        let mut words = [0u64; 4];
        let buf = crate::memory::arc_view::host_backed(bytemuck::cast_slice_mut(&mut words));
        let view = crate::memory::arc_view::ArcView::<u32>::of_buffer(&buf).unwrap();
        let d0 = crate::device::Device::for_tests(0);
        let d1 = crate::device::Device::for_tests(1);
        let what = || "t".to_string();
        let plain = crate::graph::view::GraphView::from(&view);
        assert!(check_node_args(&d0, what, &[&plain, &3u32]).is_ok());
        let e = check_node_args(&d1, what, &[&3u32, &plain]).unwrap_err();
        assert_eq!(
            e.invalid_kind(),
            Some(crate::error::InvalidKind::OtherDevice)
        );
        assert!(
            e.to_string().contains("argument 1 is memory of device 0"),
            "{e}"
        );
        let graph_memory = crate::graph::view::GraphView {
            view: view.clone(),
            alloc: Some(5),
        };
        let e = check_node_args(&d0, what, &[&graph_memory]).unwrap_err();
        assert!(e.to_string().contains("argument 0 is graph memory"), "{e}");
    }

    #[test]
    fn a_host_node_marks_its_thread_as_a_callback_thread() {
        let keep = Keep::default();
        let seen = Arc::new(AtomicUsize::new(0));
        let s = seen.clone();
        let (_boxed, p) = host_node_params(
            move || {
                if crate::deferred::must_defer() {
                    s.fetch_add(1, Ordering::SeqCst);
                }
            },
            &keep,
        );
        // SAFETY: as above.
        unsafe { p.fn_.expect("a trampoline")(p.userData) };
        assert_eq!(seen.load(Ordering::SeqCst), 1);
        assert!(!crate::deferred::must_defer());
    }
}
