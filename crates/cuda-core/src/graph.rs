//! CUDA graphs: captured from streams or defined node by node, instantiated,
//! uploaded, launched and updated; conditional nodes with their condition handles.
//!
//! Available with the CUDA 13 bindings (the default `cuda-13` feature).

use std::any::Any;
use std::ffi::{CString, c_void};
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use bytemuck::Pod;
use cuda_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{ArcView, Buffer, Context, Device, Event, Kernel, KernelArg, LaunchConfig, Stream};

/// Things a graph's nodes need alive: kernels (their libraries), host callbacks.
type Keep = Arc<Mutex<Vec<Arc<dyn Any + Send + Sync>>>>;

fn keep(k: &Keep, item: Arc<dyn Any + Send + Sync>) {
    k.lock().unwrap_or_else(|e| e.into_inner()).push(item);
}

/// Adds everything `from` keeps alive to `into`.
fn keep_all(into: &Keep, from: &Keep) {
    if Arc::ptr_eq(into, from) {
        return;
    }
    let items: Vec<_> = from.lock().unwrap_or_else(|e| e.into_inner()).clone();
    into.lock().unwrap_or_else(|e| e.into_inner()).extend(items);
}

/// A node of a [`Graph`], to name as a dependency of later nodes of the same graph
/// (using it with another graph is an [`Error::InvalidArgument`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GraphNode {
    handle: sys::CUgraphNode,
    graph: u64,
}

// SAFETY: a node handle is an identifier; it is only handed to the driver together
// with the graph it belongs to (checked by id), which `&mut Graph` serialises.
unsafe impl Send for GraphNode {}
// SAFETY: as above.
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
struct Root(sys::CUgraph);

// SAFETY: the handle is only destroyed, once, by whichever holder goes last; no
// other use is made of it through `Root`.
unsafe impl Send for Root {}
// SAFETY: as above: `Root` offers no access to the graph.
unsafe impl Sync for Root {}

impl Drop for Root {
    fn drop(&mut self) {
        // SAFETY: the root graph, destroyed once, after every body graph handle
        // (they hold this `Arc`); instantiations are independent of it.
        let _ = unsafe { sys::cuGraphDestroy(self.0) };
    }
}

/// A graph definition (`CUgraph`): nodes and the edges between them.
///
/// Built by [`Stream::end_capture`] (from work issued to a capturing stream) or
/// node by node with the `add_*` methods. Instantiate it with
/// [`instantiate`](Self::instantiate) to launch it. Owned graphs are destroyed on
/// drop; the bodies of conditional nodes belong to their parent graph.
///
/// Neither `Send` nor `Sync`: the driver requires a graph hierarchy (a graph and
/// the bodies of its conditional nodes) to be modified from one thread at a time,
/// and the bodies are separate values; keeping them on one thread guarantees it.
/// Instantiate, and send the [`GraphExec`], to launch from elsewhere.
pub struct Graph {
    handle: sys::CUgraph,
    id: u64,
    ctx: Context,
    /// The root of the hierarchy: a body keeps its root graph alive.
    root: Option<Arc<Root>>,
    keep: Keep,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph")
            .field("handle", &self.handle)
            .field("id", &self.id)
            .finish()
    }
}

/// Device memory a graph allocates when it runs ([`Graph::add_mem_alloc`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GraphAllocation {
    /// The allocating node.
    pub node: GraphNode,
    /// The address, fixed when the node was added.
    pub ptr: crate::DevicePtr,
    /// The size in bytes.
    pub size: usize,
}

/// How much memory graphs use on a device ([`Device::graph_mem_usage`](crate::Device::graph_mem_usage)), in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct GraphMemUsage {
    /// Allocated by graphs now and not yet freed.
    pub used: u64,
    /// The most `used` has been since the last reset.
    pub used_high: u64,
    /// Reserved from the driver for graph allocations now.
    pub reserved: u64,
    /// The most `reserved` has been since the last reset.
    pub reserved_high: u64,
}

impl crate::Device {
    /// How much memory graphs use on this device (`cuDeviceGetGraphMemAttribute`).
    ///
    /// # Errors
    /// The driver's error.
    pub fn graph_mem_usage(&self) -> Result<GraphMemUsage> {
        let get = |attr: sys::CUgraphMem_attribute| -> Result<u64> {
            let mut v: u64 = 0;
            // SAFETY: these attributes are 64-bit values; `v` is valid for writes.
            unsafe { sys::cuDeviceGetGraphMemAttribute(self.handle(), attr, (&raw mut v).cast()) }
                .check(|| format!("reading the graph memory use of device {}", self.ordinal()))?;
            Ok(v)
        };
        Ok(GraphMemUsage {
            used: get(sys::CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT)?,
            used_high: get(sys::CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)?,
            reserved: get(sys::CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT)?,
            reserved_high: get(sys::CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)?,
        })
    }

    /// Resets the high-water marks of [`graph_mem_usage`](Self::graph_mem_usage)
    /// to the current figures.
    ///
    /// # Errors
    /// The driver's error.
    pub fn reset_graph_mem_high_watermarks(&self) -> Result<()> {
        for attr in [
            sys::CU_GRAPH_MEM_ATTR_USED_MEM_HIGH,
            sys::CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH,
        ] {
            let mut zero: u64 = 0;
            // SAFETY: the high-water marks accept 0 (reset); `zero` is valid for reads.
            unsafe {
                sys::cuDeviceSetGraphMemAttribute(self.handle(), attr, (&raw mut zero).cast())
            }
            .check(|| {
                format!(
                    "resetting the graph memory marks of device {}",
                    self.ordinal()
                )
            })?;
        }
        Ok(())
    }

    /// Returns memory reserved for graph allocations and not in use to the OS
    /// (`cuDeviceGraphMemTrim`).
    ///
    /// # Errors
    /// The driver's error.
    pub fn graph_mem_trim(&self) -> Result<()> {
        // SAFETY: a valid device.
        unsafe { sys::cuDeviceGraphMemTrim(self.handle()) }
            .check(|| format!("trimming the graph memory of device {}", self.ordinal()))
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
/// with `cudaGraphSetConditional(handle, value)` (link with `cudadevrt`), and
/// named by conditional nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GraphCondition(pub sys::CUgraphConditionalHandle);

// SAFETY: a condition handle is a 64-bit value; as a kernel argument it is its own bytes.
unsafe impl KernelArg for GraphCondition {
    fn arg_ptr(&self) -> *const c_void {
        (&self.0 as *const sys::CUgraphConditionalHandle).cast()
    }
    fn arg_size(&self) -> usize {
        std::mem::size_of::<sys::CUgraphConditionalHandle>()
    }
}

unsafe extern "C" fn host_trampoline(data: *mut c_void) {
    // SAFETY: `data` is the `Box<dyn Fn>` that `add_host_callback` stored in the
    // graph's keep list, alive for every instantiation of the graph.
    let f = unsafe { &*(data as *const Box<dyn Fn() + Send + Sync>) };
    // A panic must not unwind into the driver.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
}

/// `cuGraphAddNode` without edge data: the CUDA 12.3 shape where the driver has
/// it, else the CUDA 12.2 one (older drivers have neither: the call fails with
/// [`Error::Unsupported`]).
///
/// # Safety
/// As `cuGraphAddNode`: `deps` holds `n` nodes of `graph`, `p` a valid node
/// description.
unsafe fn add_node(
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
        // SAFETY: as above.
        unsafe { sys::cuda12::cuGraphAddNode(node, graph, deps, n, p) }
    }
}

/// A kernel node's parameters in `ctx` (made current while the guard in the
/// caller lives); `ptrs` receives the argument pointers, which `p` points into.
fn kernel_node_params(
    ctx: &Context,
    config: &LaunchConfig,
    kernel: &Kernel,
    args: &[&dyn KernelArg],
    ptrs: &mut Vec<*mut c_void>,
) -> Result<sys::CUgraphNodeParams> {
    if let Some(params) = kernel.params_if_known()? {
        crate::launch::check_args(kernel, params, args)?;
    }
    *ptrs = args.iter().map(|a| a.arg_ptr().cast_mut()).collect();
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

/// Checks that memory a node touches is usable from the graph's context:
/// a memset's destination must be on the graph's device, a copy needs one side
/// there (the other may be a peer's).
fn check_node_devices(graph: &Device, memory: &[&Device], what: &'static str) -> Result<()> {
    if memory.contains(&graph) {
        return Ok(());
    }
    let on: Vec<String> = memory.iter().map(|d| d.ordinal().to_string()).collect();
    Err(Error::other_device(
        what,
        format!(
            "the graph is on device {}, the memory on device {}",
            graph.ordinal(),
            on.join(" and ")
        ),
    ))
}

/// Checks a copy of `bytes` between spans of `dst` and `src` bytes.
fn check_copy_size(bytes: usize, dst: usize, src: usize, what: &'static str) -> Result<()> {
    if bytes == 0 || bytes > dst || bytes > src {
        return Err(Error::invalid_as(
            crate::error::copy_size_kind(bytes),
            what,
            format!("{bytes} bytes between spans of {src} and {dst} bytes"),
        ));
    }
    Ok(())
}

/// The memset node parameters that set `n` elements of `pattern` (1, 2, 4 or 8
/// bytes) at `ptr`: one node for 1-, 2- and 4-byte elements; for 8-byte ones,
/// two 2-D nodes of 4-byte elements with a pitch of 8 bytes (one row per
/// element), the low and the high half.
fn memset_params(
    ptr: sys::CUdeviceptr,
    n: usize,
    pattern: &[u8],
) -> Result<Vec<sys::CUDA_MEMSET_NODE_PARAMS>> {
    const WHAT: &str = "adding a memset node";
    let es = pattern.len();
    if !matches!(es, 1 | 2 | 4 | 8) {
        return Err(Error::invalid(
            WHAT,
            format!("elements of {es} bytes cannot be set by a memset node (1, 2, 4 or 8 can)"),
        ));
    }
    if n == 0 {
        return Err(Error::zero_size(WHAT));
    }
    if ptr % es as u64 != 0 {
        return Err(Error::invalid(
            WHAT,
            format!("the address {ptr:#x} is not aligned to {es} bytes"),
        ));
    }
    let word = |b: &[u8]| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
    let one =
        |dst, value, element_size: usize, pitch, width, height| sys::CUDA_MEMSET_NODE_PARAMS {
            dst,
            pitch,
            value,
            elementSize: element_size as u32,
            width,
            height,
        };
    Ok(match *pattern {
        [b] => vec![one(ptr, u32::from(b), 1, 0, n, 1)],
        [a, b] => vec![one(ptr, u32::from(u16::from_ne_bytes([a, b])), 2, 0, n, 1)],
        [_, _, _, _] => vec![one(ptr, word(pattern), 4, 0, n, 1)],
        _ => vec![
            one(ptr, word(&pattern[..4]), 4, 8, 1, n),
            one(ptr + 4, word(&pattern[4..]), 4, 8, 1, n),
        ],
    })
}

impl Graph {
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

    fn wrap(handle: sys::CUgraph, ctx: Context, root: Option<Arc<Root>>, keep: Keep) -> Self {
        Self {
            handle,
            id: next_graph_id(),
            ctx,
            root,
            keep,
            _not_send: std::marker::PhantomData,
        }
    }

    fn owned(handle: sys::CUgraph, ctx: Context) -> Self {
        Self::wrap(handle, ctx, Some(Arc::new(Root(handle))), Keep::default())
    }

    /// The driver's handle.
    pub fn handle(&self) -> sys::CUgraph {
        self.handle
    }

    /// The dependencies as driver handles, checked to belong to this graph.
    fn deps(&self, deps: &[GraphNode]) -> Result<Vec<sys::CUgraphNode>> {
        if deps.iter().any(|d| d.graph != self.id) {
            return Err(Error::invalid(
                "adding a graph node",
                "a dependency is a node of another graph",
            ));
        }
        Ok(deps.iter().map(|d| d.handle).collect())
    }

    fn node(&self, handle: sys::CUgraphNode) -> GraphNode {
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
    /// # Safety
    /// As [`crate::launch`], for every launch of every instantiation of the graph:
    /// the memory the arguments point to must stay valid while the graph can run.
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
        Ok(self.node(node))
    }

    /// Fills `buffer` with a 1-, 2- or 4-byte `value`. The graph keeps the buffer
    /// alive. [`add_fill`](Self::add_fill) is the typed form, for a sub-range.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another element size, a size that is not a
    /// multiple of it, or a buffer of another device than the graph's; the
    /// driver's error.
    pub fn add_memset(
        &mut self,
        deps: &[GraphNode],
        buffer: &Arc<Buffer>,
        value: u32,
        element_size: u32,
    ) -> Result<GraphNode> {
        let es = element_size as usize;
        if !matches!(element_size, 1 | 2 | 4) || buffer.size() % es != 0 {
            return Err(Error::invalid(
                "adding a memset node",
                format!(
                    "element size {element_size} for a buffer of {} bytes",
                    buffer.size()
                ),
            ));
        }
        // The low `element_size` bytes of `value`, as the driver reads them.
        let pattern = match element_size {
            1 => vec![value as u8],
            2 => (value as u16).to_ne_bytes().to_vec(),
            _ => value.to_ne_bytes().to_vec(),
        };
        let span = (&**buffer, buffer.ptr(), buffer.size() / es);
        self.memset_nodes(deps, span, &pattern, buffer.clone())
    }

    /// Sets every element of `dst` (a whole `Arc<DeviceBuffer<T>>` or an
    /// [`ArcView`] of part of one) to `value` when the node runs. Elements of 1,
    /// 2 and 4 bytes are one memset node; 8-byte elements (`f64`, `u64`) are two
    /// strided 4-byte memset nodes (the low and the high half of each element,
    /// as [`DeviceViewMut::fill`](crate::DeviceViewMut::fill) does), the second
    /// depending on the first: the node returned is the second, so its
    /// dependents see both. Other sizes do not build (checked when the call is
    /// compiled to code). The graph keeps the allocation alive.
    ///
    /// ```no_run
    /// # fn f(dev: &cuda_core::Device, s: &cuda_core::Stream) -> cuda_core::Result<()> {
    /// use std::sync::Arc;
    /// use cuda_core::{DeviceBuffer, Graph, GraphCompleteOptions};
    /// let y = Arc::new(DeviceBuffer::<f64>::zeroed(dev, 1000, s)?);
    /// let mut g = Graph::new(&dev.context()?)?;
    /// let head = g.add_fill(&[], y.shared_slice(..500)?, 1.0)?;
    /// g.add_fill(&[head], y.shared_slice(500..)?, 2.0)?;
    /// g.instantiate(GraphCompleteOptions::default())?.launch(s)?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty view
    /// ([`InvalidKind::ZeroSize`](crate::InvalidKind::ZeroSize)), memory of
    /// another device than the graph's
    /// ([`InvalidKind::OtherDevice`](crate::InvalidKind::OtherDevice)), or an
    /// address not aligned to the element size; the driver's error.
    pub fn add_fill<T: Pod>(
        &mut self,
        deps: &[GraphNode],
        dst: impl Into<ArcView<T>>,
        value: T,
    ) -> Result<GraphNode> {
        const {
            assert!(
                matches!(std::mem::size_of::<T>(), 1 | 2 | 4 | 8),
                "add_fill takes elements of 1, 2, 4 or 8 bytes"
            );
        }
        let dst = dst.into();
        let span = (dst.buffer(), dst.ptr(), dst.len());
        self.memset_nodes(deps, span, bytemuck::bytes_of(&value), dst.keep_alive())
    }

    /// The memset node(s) setting `n` elements of `pattern` at `ptr`, inside
    /// `buf`, kept alive through `keep`.
    fn memset_nodes(
        &mut self,
        deps: &[GraphNode],
        (buf, ptr, n): (&Buffer, sys::CUdeviceptr, usize),
        pattern: &[u8],
        keep_alive: Arc<dyn Any + Send + Sync>,
    ) -> Result<GraphNode> {
        const WHAT: &str = "adding a memset node";
        check_node_devices(self.ctx.device(), &[buf.device()], WHAT)?;
        let params = memset_params(ptr, n, pattern)?;
        let mut dv = self.deps(deps)?;
        // Kept first: a node the driver accepts must never outlive the memory.
        keep(&self.keep, keep_alive);
        let mut last = None;
        for p in &params {
            let mut node: sys::CUgraphNode = std::ptr::null_mut();
            // SAFETY: `p` names elements inside a live buffer (checked by the
            // caller), kept alive by the keep list; `dv` holds nodes of this graph.
            unsafe {
                sys::cuGraphAddMemsetNode(
                    &mut node,
                    self.handle,
                    dv.as_ptr(),
                    dv.len(),
                    p,
                    self.ctx.handle(),
                )
            }
            .check(|| {
                format!(
                    "adding a memset node of {n} elements of {} bytes",
                    pattern.len()
                )
            })?;
            dv = vec![node];
            last = Some(node);
        }
        last.map(|h| self.node(h))
            .ok_or_else(|| Error::invalid(WHAT, "no memset node was needed"))
    }

    /// Copies `bytes` from `src` to `dst` (any memory kinds). The graph keeps both
    /// buffers alive. [`add_copy`](Self::add_copy) is the typed form, for
    /// sub-ranges.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when either is smaller than `bytes`, or neither
    /// is memory of the graph's device; the driver's error.
    pub fn add_memcpy(
        &mut self,
        deps: &[GraphNode],
        dst: &Arc<Buffer>,
        src: &Arc<Buffer>,
        bytes: usize,
    ) -> Result<GraphNode> {
        self.memcpy_node(
            deps,
            [
                (&**dst, dst.ptr(), dst.size()),
                (&**src, src.ptr(), src.size()),
            ],
            bytes,
            [dst.clone(), src.clone()],
        )
    }

    /// Copies `src` into `dst`, views of equal length (whole
    /// `Arc<DeviceBuffer<T>>`s or [`ArcView`]s of parts of them, of any memory
    /// kind), when the node runs. The graph keeps both allocations alive.
    ///
    /// ```no_run
    /// # fn f(dev: &cuda_core::Device, s: &cuda_core::Stream) -> cuda_core::Result<()> {
    /// use std::sync::Arc;
    /// use cuda_core::{DeviceBuffer, Graph};
    /// let x = Arc::new(DeviceBuffer::from_host(dev, &[1u32, 2, 3, 4], s)?);
    /// let y = Arc::new(DeviceBuffer::<u32>::zeroed(dev, 4, s)?);
    /// let mut g = Graph::new(&dev.context()?)?;
    /// // y[2..4] = x[0..2]
    /// g.add_copy(&[], y.shared_slice(2..)?, x.shared_slice(..2)?)?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for views of other lengths
    /// ([`InvalidKind::OutOfRange`](crate::InvalidKind::OutOfRange)), empty views
    /// ([`InvalidKind::ZeroSize`](crate::InvalidKind::ZeroSize)), or when neither
    /// is memory of the graph's device
    /// ([`InvalidKind::OtherDevice`](crate::InvalidKind::OtherDevice)); the
    /// driver's error.
    pub fn add_copy<T: Pod>(
        &mut self,
        deps: &[GraphNode],
        dst: impl Into<ArcView<T>>,
        src: impl Into<ArcView<T>>,
    ) -> Result<GraphNode> {
        let (dst, src) = (dst.into(), src.into());
        if dst.len() != src.len() {
            return Err(Error::out_of_range(
                "adding a memcpy node",
                format!(
                    "the lengths differ: {} and {} elements",
                    src.len(),
                    dst.len()
                ),
            ));
        }
        self.memcpy_node(
            deps,
            [
                (dst.buffer(), dst.ptr(), dst.byte_len()),
                (src.buffer(), src.ptr(), src.byte_len()),
            ],
            dst.byte_len(),
            [dst.keep_alive(), src.keep_alive()],
        )
    }

    /// A memcpy node of `bytes` from `spans[1]` to `spans[0]` (each a buffer, an
    /// address in it and the bytes there), kept alive through `keep_alive`.
    fn memcpy_node(
        &mut self,
        deps: &[GraphNode],
        spans: [(&Buffer, sys::CUdeviceptr, usize); 2],
        bytes: usize,
        keep_alive: [Arc<dyn Any + Send + Sync>; 2],
    ) -> Result<GraphNode> {
        const WHAT: &str = "adding a memcpy node";
        let [(dst, dst_ptr, dst_size), (src, src_ptr, src_size)] = spans;
        check_copy_size(bytes, dst_size, src_size, WHAT)?;
        check_node_devices(self.ctx.device(), &[dst.device(), src.device()], WHAT)?;
        let p = sys::CUDA_MEMCPY3D {
            srcMemoryType: sys::CU_MEMORYTYPE_UNIFIED,
            srcDevice: src_ptr,
            dstMemoryType: sys::CU_MEMORYTYPE_UNIFIED,
            dstDevice: dst_ptr,
            WidthInBytes: bytes,
            Height: 1,
            Depth: 1,
            ..Default::default()
        };
        let dv = self.deps(deps)?;
        let (d, n) = (dv.as_ptr(), dv.len());
        for k in keep_alive {
            keep(&self.keep, k);
        }
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: both spans hold at least `bytes` (checked) in live buffers,
        // kept alive by the keep list; `p` is valid for the call.
        unsafe { sys::cuGraphAddMemcpyNode(&mut node, self.handle, d, n, &p, self.ctx.handle()) }
            .check(|| format!("adding a memcpy node of {bytes} bytes"))?;
        Ok(self.node(node))
    }

    /// Allocates `size` bytes of device memory on the graph's device when the node
    /// runs (`cuGraphAddMemAllocNode`). The address is fixed when the node is added,
    /// so later nodes can take it ([`GraphAllocation::ptr`] is a kernel argument);
    /// it is valid from this node until the [`add_mem_free`](Self::add_mem_free)
    /// node that frees it.
    ///
    /// Free it in the same graph: an allocation left unfreed outlives the launch,
    /// and the driver refuses to launch the graph again until it is freed
    /// ([`Stream::free_graph_allocation`]), unless the graph was instantiated with
    /// [`GraphCompleteOptions::auto_free_on_launch`]. (CUDA also lets a later
    /// graph free it; [`add_mem_free`](Self::add_mem_free) takes only this graph's
    /// allocations, which keeps the pairing checkable.) The memory comes from the device's
    /// graph memory pool ([`Device::graph_mem_usage`](crate::Device::graph_mem_usage),
    /// [`Device::graph_mem_trim`](crate::Device::graph_mem_trim)).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a size of 0; the driver's error (alloc nodes
    /// are not allowed in conditional bodies or child graphs).
    pub fn add_mem_alloc(&mut self, deps: &[GraphNode], size: usize) -> Result<GraphAllocation> {
        if size == 0 {
            return Err(Error::zero_size("adding a memory allocation node"));
        }
        let device = *self.ctx.device();
        let mut p = sys::CUDA_MEM_ALLOC_NODE_PARAMS {
            poolProps: sys::CUmemPoolProps {
                allocType: sys::CU_MEM_ALLOCATION_TYPE_PINNED,
                location: sys::CUmemLocation {
                    type_: sys::CU_MEM_LOCATION_TYPE_DEVICE,
                    id: device.ordinal() as i32,
                },
                ..Default::default()
            },
            bytesize: size,
            ..Default::default()
        };
        let dv = self.deps(deps)?;
        let (d, n) = (dv.as_ptr(), dv.len());
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        let _current = self.ctx.ensure_current()?;
        // SAFETY: `p` describes a device allocation and is valid for the call; the
        // driver writes the address into it.
        unsafe { sys::cuGraphAddMemAllocNode(&mut node, self.handle, d, n, &mut p) }
            .check(|| format!("adding a node allocating {size} bytes"))?;
        Ok(GraphAllocation {
            node: self.node(node),
            ptr: crate::DevicePtr(p.dptr),
            size,
        })
    }

    /// Frees, when the node runs, memory that an
    /// [`add_mem_alloc`](Self::add_mem_alloc) node of this graph allocates
    /// (`cuGraphAddMemFreeNode`). Kernels that use the memory must be among
    /// `deps` (or before them).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an allocation of another graph; the driver's
    /// error (for example, a second free of the same allocation).
    pub fn add_mem_free(
        &mut self,
        deps: &[GraphNode],
        allocation: &GraphAllocation,
    ) -> Result<GraphNode> {
        if allocation.node.graph != self.id {
            return Err(Error::invalid(
                "adding a memory free node",
                "the allocation belongs to another graph",
            ));
        }
        let dv = self.deps(deps)?;
        let (d, n) = (dv.as_ptr(), dv.len());
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        let _current = self.ctx.ensure_current()?;
        // SAFETY: the address of an allocation node of this graph.
        unsafe { sys::cuGraphAddMemFreeNode(&mut node, self.handle, d, n, allocation.ptr.0) }
            .check(|| format!("adding a node freeing {} bytes", allocation.size))?;
        Ok(self.node(node))
    }

    /// Calls `f` on a driver thread when the node runs. `f` must not call CUDA.
    /// A panic in `f` is caught and discarded.
    ///
    /// # Errors
    /// The driver's error.
    pub fn add_host_callback(
        &mut self,
        deps: &[GraphNode],
        f: impl Fn() + Send + Sync + 'static,
    ) -> Result<GraphNode> {
        let boxed: Arc<Box<dyn Fn() + Send + Sync>> = Arc::new(Box::new(f));
        let data = Arc::as_ptr(&boxed) as *mut c_void;
        let p = sys::CUDA_HOST_NODE_PARAMS {
            fn_: Some(host_trampoline),
            userData: data,
        };
        let dv = self.deps(deps)?;
        let (d, n) = (dv.as_ptr(), dv.len());
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: `data` stays alive in the keep list as long as the graph and its
        // instantiations.
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
        let _current = self.ctx.ensure_current()?;
        let mut h: sys::CUgraphConditionalHandle = 0;
        let (value, flags) = match default {
            Some(v) => (v, sys::CU_GRAPH_COND_ASSIGN_DEFAULT),
            None => (0, 0),
        };
        // SAFETY: `h` is valid for writes; a live graph and context.
        unsafe {
            sys::cuGraphConditionalHandleCreate(
                &mut h,
                self.handle,
                self.ctx.handle(),
                value,
                flags,
            )
        }
        .check(|| "creating a graph condition")?;
        Ok(GraphCondition(h))
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
            ctx: self.ctx.handle(),
        };
        let dv = self.deps(deps)?;
        let (d, n) = (dv.as_ptr(), dv.len());
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        let _current = self.ctx.ensure_current()?;
        // SAFETY: `p` is a fully initialised conditional node description.
        unsafe { add_node(&mut node, self.handle, d, n, &mut p) }
            .check(|| format!("adding a {kind:?} node"))?;
        // SAFETY: reading back the union member written above; the driver set
        // `phGraph_out` to its own array of `size` body graphs, valid while the node lives.
        let out = unsafe { p.__bindgen_anon_1.conditional.phGraph_out };
        if out.is_null() {
            return Err(Error::unsupported(
                "adding a conditional node",
                "the driver returned no body graphs",
            ));
        }
        // SAFETY: `out` holds `size` graph handles (see above).
        let bodies: Vec<sys::CUgraph> =
            unsafe { std::slice::from_raw_parts(out, size as usize) }.to_vec();
        let bodies = bodies
            .into_iter()
            .map(|g| Graph::wrap(g, self.ctx.clone(), self.root.clone(), self.keep.clone()))
            .collect();
        Ok((self.node(node), bodies))
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

    /// Writes the graph as a Graphviz DOT file (`cuGraphDebugDotPrint`, verbose).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a path that is not UTF-8 or holds NUL; the
    /// driver's error.
    pub fn debug_dot_print(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let c = path
            .to_str()
            .and_then(|s| CString::new(s).ok())
            .ok_or_else(|| {
                Error::invalid(
                    "writing a graph's DOT file",
                    format!("unusable path {}", path.display()),
                )
            })?;
        // SAFETY: a live graph and a NUL-terminated path.
        unsafe {
            sys::cuGraphDebugDotPrint(
                self.handle,
                c.as_ptr(),
                sys::CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE.0,
            )
        }
        .check(|| format!("writing {}", path.display()))
    }

    /// Instantiates the graph for launching.
    ///
    /// # Errors
    /// The driver's error.
    pub fn instantiate(&self, options: GraphCompleteOptions) -> Result<GraphExec> {
        let _current = self.ctx.ensure_current()?;
        let mut flags = 0u64;
        if options.auto_free_on_launch {
            flags |= u64::from(sys::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH.0);
        }
        if options.use_node_priority {
            flags |= u64::from(sys::CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY.0);
        }
        if options.device_launch {
            flags |= u64::from(sys::CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH.0);
        }
        let mut exec: sys::CUgraphExec = std::ptr::null_mut();
        // SAFETY: `exec` is valid for writes; a live graph.
        unsafe { sys::cuGraphInstantiate(&mut exec, self.handle, flags) }
            .check(|| "instantiating a graph")?;
        Ok(GraphExec {
            handle: exec,
            ctx: self.ctx.clone(),
            keep: self.keep.clone(),
            source: (self.id, self.root.clone()),
            used_on: Mutex::new(Vec::new()),
            _not_sync: std::marker::PhantomData,
        })
    }
}

/// Options of [`Graph::instantiate`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GraphCompleteOptions {
    /// Free unfreed graph allocations before each relaunch.
    pub auto_free_on_launch: bool,
    /// Use the nodes' priorities.
    pub use_node_priority: bool,
    /// Make the graph launchable from the device.
    pub device_launch: bool,
}

/// An instantiated graph (`CUgraphExec`), ready to launch.
///
/// On drop it waits for the streams it was launched or uploaded on (so no host
/// callback or kernel it keeps alive is freed under a running launch), then is
/// destroyed. `Send` but not `Sync`: launches of one executable graph must be
/// serialised by the caller, which `&self` from one thread at a time guarantees.
pub struct GraphExec {
    handle: sys::CUgraphExec,
    ctx: Context,
    keep: Keep,
    /// The graph it was instantiated from: its id (its nodes address this
    /// instantiation's nodes) and its root, kept so those node handles stay valid.
    source: (u64, Option<Arc<Root>>),
    used_on: Mutex<Vec<Stream>>,
    _not_sync: std::marker::PhantomData<std::cell::Cell<()>>,
}

// SAFETY: executable graph handles may be used from any thread, one at a time
// (`GraphExec` is not `Sync`).
unsafe impl Send for GraphExec {}

impl fmt::Debug for GraphExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphExec")
            .field("handle", &self.handle)
            .finish()
    }
}

impl GraphExec {
    /// The driver's handle.
    pub fn handle(&self) -> sys::CUgraphExec {
        self.handle
    }

    fn note_stream(&self, stream: &Stream) {
        let mut v = self.used_on.lock().unwrap_or_else(|e| e.into_inner());
        if !v.iter().any(|s| s.handle() == stream.handle()) {
            v.push(stream.clone());
        }
    }

    /// Uploads the graph's work to the device ahead of the first launch.
    ///
    /// # Errors
    /// The driver's error.
    pub fn upload(&self, stream: &Stream) -> Result<()> {
        let _current = stream.context().ensure_current()?;
        self.note_stream(stream);
        // SAFETY: live graph and stream.
        unsafe { sys::cuGraphUpload(self.handle, stream.handle()) }.check(|| "uploading a graph")
    }

    /// Launches the graph on `stream`.
    ///
    /// # Errors
    /// The driver's error.
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        let _current = stream.context().ensure_current()?;
        self.note_stream(stream);
        // SAFETY: live graph and stream.
        unsafe { sys::cuGraphLaunch(self.handle, stream.handle()) }.check(|| "launching a graph")
    }

    /// Updates this instantiation in place to match `graph`, which must have the
    /// same topology (parameters may differ).
    ///
    /// # Errors
    /// The driver's error, with the reason the update was refused.
    pub fn update(&mut self, graph: &Graph) -> Result<()> {
        let _current = self.ctx.ensure_current()?;
        let mut info = sys::CUgraphExecUpdateResultInfo::default();
        // SAFETY: live graphs; `info` is valid for writes.
        let rc = unsafe { sys::cuGraphExecUpdate(self.handle, graph.handle, &mut info) };
        rc.check(|| {
            format!(
                "updating an instantiated graph (update result {})",
                info.result.0
            )
        })?;
        keep_all(&self.keep, &graph.keep);
        Ok(())
    }
}

impl GraphExec {
    /// Checks that `graph` is the one this was instantiated from and `node` one of
    /// its nodes. Borrowing the (`!Send`) graph also proves that no other thread is
    /// changing it while the driver reads its node.
    fn check_node(&self, graph: &Graph, node: GraphNode, what: &'static str) -> Result<()> {
        if graph.id != self.source.0 {
            return Err(Error::invalid(
                what,
                "the graph is not the one this was instantiated from",
            ));
        }
        if node.graph != graph.id {
            return Err(Error::invalid(what, "the node is not one of the graph's"));
        }
        Ok(())
    }

    /// Changes what kernel node `node` of `graph` (the graph this was instantiated
    /// from) launches in this instantiation, without instantiating again
    /// (`cuGraphExecNodeSetParams`): another configuration, other arguments, or
    /// another kernel. Later launches use the new parameters; the graph itself is
    /// unchanged.
    ///
    /// # Safety
    /// As [`Graph::add_kernel`], for every later launch of this instantiation.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another graph than the source, a node of
    /// another graph, or wrong arguments;
    /// the driver's error (for example, a node that is not a kernel node).
    pub unsafe fn set_kernel_node(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        config: &LaunchConfig,
        kernel: &Kernel,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        self.check_node(
            graph,
            node,
            "changing a kernel node of an instantiated graph",
        )?;
        let mut ptrs = Vec::new();
        let mut p = kernel_node_params(&self.ctx, config, kernel, args, &mut ptrs)?;
        let _current = self.ctx.ensure_current()?;
        // SAFETY: a node of the source graph (kept alive by `source`); `p` is a
        // kernel node description valid for the call (the driver copies it).
        unsafe { sys::cuGraphExecNodeSetParams(self.handle, node.handle, &mut p) }.check(|| {
            format!(
                "changing a node of an instantiated graph to kernel `{}`",
                kernel.name()
            )
        })?;
        keep(&self.keep, Arc::new(kernel.clone()));
        Ok(())
    }

    /// Turns node `node` (a kernel, memset or memcpy node of `graph`, the source) off
    /// or back on in this instantiation (`cuGraphNodeSetEnabled`): a disabled node
    /// does nothing when the graph runs, and its dependencies still hold.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another graph than the source or a node of
    /// another graph; the driver's error (for other kinds of node).
    pub fn set_node_enabled(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        enabled: bool,
    ) -> Result<()> {
        self.check_node(graph, node, "enabling a node of an instantiated graph")?;
        let _current = self.ctx.ensure_current()?;
        // SAFETY: a node of the source graph (kept alive by `source`).
        unsafe { sys::cuGraphNodeSetEnabled(self.handle, node.handle, u32::from(enabled)) }
            .check(|| "enabling or disabling a node of an instantiated graph")
    }

    /// Whether node `node` is enabled in this instantiation
    /// (`cuGraphNodeGetEnabled`).
    ///
    /// # Errors
    /// As [`set_node_enabled`](Self::set_node_enabled).
    pub fn is_node_enabled(&self, graph: &Graph, node: GraphNode) -> Result<bool> {
        self.check_node(
            graph,
            node,
            "reading whether a node of an instantiated graph is enabled",
        )?;
        let _current = self.ctx.ensure_current()?;
        let mut on = 0;
        // SAFETY: a node of the source graph (kept alive by `source`); `on` is valid
        // for writes.
        unsafe { sys::cuGraphNodeGetEnabled(self.handle, node.handle, &mut on) }
            .check(|| "reading whether a node of an instantiated graph is enabled")?;
        Ok(on != 0)
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        // Launched work may still use what `keep` holds: wait for it first.
        let streams = std::mem::take(self.used_on.get_mut().unwrap_or_else(|e| e.into_inner()));
        for s in &streams {
            let _ = s.drain();
        }
        let _current = self.ctx.ensure_current();
        // SAFETY: an owned executable graph, destroyed once (launched work completes).
        let _ = unsafe { sys::cuGraphExecDestroy(self.handle) };
    }
}

/// Which calls that are unsafe during a stream capture (a synchronous
/// allocation, a synchronisation, a query of another stream, …) CUDA refuses while
/// the capture runs (`CUstreamCaptureMode`).
///
/// **The default is [`Relaxed`](Self::Relaxed), as for `cuda.core`'s
/// `GraphBuilder.begin_building()`**, so that a port behaves as its Python
/// original. CUDA's C examples usually capture with `Global`, which also catches
/// mistakes: a capture in `Global` mode fails (and is invalidated) when any thread
/// makes such a call, one in `Relaxed` mode lets them through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CaptureMode {
    /// Such calls from any thread are errors while capturing
    /// (`CU_STREAM_CAPTURE_MODE_GLOBAL`).
    Global,
    /// Only this thread's such calls are errors
    /// (`CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`).
    ThreadLocal,
    /// No calls are restricted (`CU_STREAM_CAPTURE_MODE_RELAXED`); the default,
    /// as in `cuda.core`.
    #[default]
    Relaxed,
}

/// Whether a stream is capturing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureStatus {
    /// Not capturing.
    None,
    /// Capturing.
    Active,
    /// Capturing, but an error invalidated the capture.
    Invalidated,
}

impl Stream {
    /// Starts capturing the work issued to this stream into a graph.
    ///
    /// `cuda.core`'s `begin_building()` is `begin_capture(CaptureMode::default())`,
    /// that is [`CaptureMode::Relaxed`]; pass [`CaptureMode::Global`] to have CUDA
    /// refuse calls that are unsafe during a capture.
    ///
    /// # Safety
    /// The captured work (copies, fills, launches) refers to memory by address:
    /// every buffer, kernel and other object it uses must stay alive as long as the
    /// graph made from it, and its instantiations, can run. No other thread may be
    /// queuing a run-once host function on this stream
    /// ([`launch_host_func`](Self::launch_host_func)) as the capture begins: one
    /// captured that way would be freed after the graph's first run.
    ///
    /// # Errors
    /// The driver's error (a legacy default stream cannot capture).
    pub unsafe fn begin_capture(&self, mode: CaptureMode) -> Result<()> {
        let _current = self.context().ensure_current()?;
        let m = match mode {
            CaptureMode::Global => sys::CU_STREAM_CAPTURE_MODE_GLOBAL,
            CaptureMode::ThreadLocal => sys::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            CaptureMode::Relaxed => sys::CU_STREAM_CAPTURE_MODE_RELAXED,
        };
        // SAFETY: a live stream.
        unsafe { sys::cuStreamBeginCapture(self.handle(), m) }
            .check(|| "beginning a stream capture")
    }

    /// Frees graph-allocated memory that its graph left unfreed, ordered on this
    /// stream (`cuMemFreeAsync`), so that the graph can be launched again.
    ///
    /// # Safety
    /// `allocation` must be unfreed memory of a graph that has run (its launch is
    /// ordered before this call on this stream), freed once, and no later work may
    /// use it.
    ///
    /// # Errors
    /// The driver's error.
    pub unsafe fn free_graph_allocation(&self, allocation: &GraphAllocation) -> Result<()> {
        let _current = self.context().ensure_current()?;
        // SAFETY: per the contract, an allocated graph allocation on a live stream.
        unsafe { sys::cuMemFreeAsync(allocation.ptr.0, self.handle()) }
            .check(|| format!("freeing {} bytes a graph allocated", allocation.size))
    }

    /// Ends the capture and returns the captured graph.
    ///
    /// # Errors
    /// The driver's error (an invalidated capture is `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`).
    pub fn end_capture(&self) -> Result<Graph> {
        let _current = self.context().ensure_current()?;
        let mut g: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: `g` is valid for writes; a live stream.
        unsafe { sys::cuStreamEndCapture(self.handle(), &mut g) }
            .check(|| "ending a stream capture")?;
        Ok(Graph::owned(g, self.context().clone()))
    }

    /// Whether the stream is capturing.
    ///
    /// # Errors
    /// The driver's error.
    pub fn capture_status(&self) -> Result<CaptureStatus> {
        let mut s = sys::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: `s` is valid for writes; a live stream.
        unsafe { sys::cuStreamIsCapturing(self.handle(), &mut s) }
            .check(|| "asking a stream's capture status")?;
        Ok(if s == sys::CU_STREAM_CAPTURE_STATUS_ACTIVE {
            CaptureStatus::Active
        } else if s == sys::CU_STREAM_CAPTURE_STATUS_INVALIDATED {
            CaptureStatus::Invalidated
        } else {
            CaptureStatus::None
        })
    }

    /// Forks `n` streams off this capturing stream: each waits for the work
    /// captured so far, and work issued to them joins the same capture.
    /// [`join`](Self::join) brings them back.
    ///
    /// # Errors
    /// The driver's error.
    pub fn fork(&self, n: usize) -> Result<Vec<Stream>> {
        let e = Event::in_context(self.context(), crate::EventOptions::default())?;
        e.record(self)?;
        (0..n)
            .map(|_| {
                let s = self.context().create_stream(crate::StreamOptions {
                    non_blocking: true,
                    priority: None,
                })?;
                s.wait_event(&e)?;
                Ok(s)
            })
            .collect()
    }

    /// Makes this stream wait for all work issued so far to `others` (ends a
    /// [`fork`](Self::fork) inside a capture; works outside one too).
    ///
    /// # Errors
    /// The driver's error.
    pub fn join(&self, others: &[Stream]) -> Result<()> {
        for o in others {
            self.wait_stream(o)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::InvalidKind;
    use crate::error::kind_of as kind;

    #[test]
    fn memset_nodes_cover_every_element_width() {
        let base = 0x7000_0000u64;
        let p = memset_params(base, 10, &[0xab]).unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(
            (
                p[0].dst,
                p[0].value,
                p[0].elementSize,
                p[0].width,
                p[0].height
            ),
            (base, 0xab, 1, 10, 1)
        );
        let p = memset_params(base + 2, 3, &0x1234u16.to_ne_bytes()).unwrap();
        assert_eq!((p[0].value, p[0].elementSize, p[0].width), (0x1234, 2, 3));
        let p = memset_params(base + 4, 5, &1.5f32.to_ne_bytes()).unwrap();
        assert_eq!((p[0].value, p[0].elementSize), (1.5f32.to_bits(), 4));
        // 8 bytes: the low and the high half, one row per element.
        let v = 0x0123_4567_89ab_cdefu64;
        let p = memset_params(base + 8, 7, &v.to_ne_bytes()).unwrap();
        assert_eq!(p.len(), 2);
        let halves: Vec<u32> = v
            .to_ne_bytes()
            .chunks(4)
            .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        for (i, q) in p.iter().enumerate() {
            assert_eq!(
                (q.dst, q.value, q.elementSize, q.pitch, q.width, q.height),
                (base + 8 + 4 * i as u64, halves[i], 4, 8, 1, 7)
            );
        }
        // Bad input.
        assert_eq!(kind(memset_params(base, 0, &[1])), InvalidKind::ZeroSize);
        assert_eq!(kind(memset_params(base, 4, &[1, 2, 3])), InvalidKind::Other);
        assert_eq!(
            kind(memset_params(base + 2, 4, &[0; 4])),
            InvalidKind::Other
        );
        assert_eq!(
            kind(memset_params(base + 4, 4, &[0; 8])),
            InvalidKind::Other
        );
    }

    #[test]
    fn node_memory_must_be_reachable_from_the_graph_device() {
        let (d0, d1, d2) = (
            Device::for_tests(0),
            Device::for_tests(1),
            Device::for_tests(2),
        );
        assert!(check_node_devices(&d0, &[&d0], "t").is_ok());
        assert!(check_node_devices(&d0, &[&d1, &d0], "t").is_ok());
        assert_eq!(
            kind(check_node_devices(&d0, &[&d1], "t")),
            InvalidKind::OtherDevice
        );
        let e = check_node_devices(&d0, &[&d1, &d2], "adding a memcpy node").unwrap_err();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::OtherDevice));
        assert!(e.to_string().contains("device 1 and 2"), "{e}");
        assert!(check_copy_size(16, 16, 32, "t").is_ok());
        assert_eq!(kind(check_copy_size(0, 16, 16, "t")), InvalidKind::ZeroSize);
        assert_eq!(
            kind(check_copy_size(17, 16, 32, "t")),
            InvalidKind::OutOfRange
        );
        assert_eq!(
            kind(check_copy_size(17, 32, 16, "t")),
            InvalidKind::OutOfRange
        );
    }
}
