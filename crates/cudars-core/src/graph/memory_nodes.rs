//! A graph's memory nodes: allocations and frees ([`GraphAllocation`]), memsets
//! and copies over whole buffers or [`ArcView`] sub-ranges, and the device's graph
//! memory ([`GraphMemUsage`]). The checks are pure functions run before any driver call.

use std::any::Any;
use std::sync::Arc;

use bytemuck::Pod;
use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{
    device::Device, memory::arc_view::ArcView, memory::buffer::Buffer, memory::resource::Location,
};

use super::define::{Graph, GraphNode, keep};

/// Device memory a graph allocates when it runs ([`Graph::add_mem_alloc`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GraphAllocation {
    /// The allocating node.
    pub node: GraphNode,
    /// The address, fixed when the node was added.
    pub ptr: crate::launch::DevicePtr,
    /// The size in bytes.
    pub size: usize,
}

/// Where a graph allocation lives and which other devices may use it
/// ([`Graph::add_mem_alloc_with`]): `cuda.core`'s `GraphAllocOptions`.
///
/// ```
/// use cudars_core::{Device, GraphAllocOptions, Location};
/// # fn f(d0: Device, d1: Device) {
/// let options = GraphAllocOptions::new()
///     .location(Location::Device(d1))
///     .peer_access([d0]);
/// # let _ = options; }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GraphAllocOptions {
    /// Where the memory is: a device (another than the graph's, for memory a
    /// peer holds) or the host; `None` for the graph's own device. The driver
    /// says which locations its graph memory pools support.
    pub location: Option<Location>,
    /// Devices given read-write access besides the location's own
    /// (`accessDescs`; each needs peer access to the location's device).
    pub peer_access: Vec<Device>,
    /// Managed memory (`CU_MEM_ALLOCATION_TYPE_MANAGED`, `memory_type="managed"`
    /// in Python) instead of pinned device or host memory; CUDA 13.0 drivers
    /// and newer.
    pub managed: bool,
}

impl GraphAllocOptions {
    /// Memory on the graph's device, used by that device alone.
    pub fn new() -> Self {
        Self::default()
    }

    /// These options, with the memory at `location`.
    #[must_use]
    pub fn location(mut self, location: Location) -> Self {
        self.location = Some(location);
        self
    }

    /// These options, for managed memory.
    #[must_use]
    pub fn managed(mut self) -> Self {
        self.managed = true;
        self
    }

    /// These options, with memory of type `memory_type` (Python's
    /// `GraphAllocOptions(memory_type=…)`): [`GraphMemoryType::Device`] is pinned
    /// memory of the [`location`](Self::location)'s device (the graph's device
    /// when the location is not a device), [`GraphMemoryType::Host`] pinned
    /// memory of the host ([`Location::Host`], unless a host NUMA node is
    /// given already), [`GraphMemoryType::Managed`] managed memory
    /// ([`managed`](Self::managed), at the location given).
    #[must_use]
    pub fn memory_type(mut self, memory_type: GraphMemoryType) -> Self {
        let on_host = matches!(
            self.location,
            Some(Location::Host | Location::HostNuma(_) | Location::HostNumaCurrent)
        );
        match memory_type {
            GraphMemoryType::Device => {
                self.managed = false;
                if on_host {
                    self.location = None;
                }
            }
            GraphMemoryType::Host => {
                self.managed = false;
                if !on_host {
                    self.location = Some(Location::Host);
                }
            }
            GraphMemoryType::Managed => self.managed = true,
        }
        self
    }

    /// The type of memory these options allocate.
    pub fn to_memory_type(&self) -> GraphMemoryType {
        if self.managed {
            GraphMemoryType::Managed
        } else {
            match self.location {
                Some(Location::Host | Location::HostNuma(_) | Location::HostNumaCurrent) => {
                    GraphMemoryType::Host
                }
                _ => GraphMemoryType::Device,
            }
        }
    }

    /// These options, with read-write access for `devices` too.
    #[must_use]
    pub fn peer_access(mut self, devices: impl IntoIterator<Item = Device>) -> Self {
        self.peer_access.extend(devices);
        self
    }
}

/// The memory space of a graph allocation: `cuda.core`'s `GraphMemoryType`
/// (`"device"`, `"host"`, `"managed"`, which it prints as). Chosen with
/// [`GraphAllocOptions::memory_type`], read back from an allocation node as
/// [`MemAllocNodeInfo::memory_type`](crate::MemAllocNodeInfo::memory_type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum GraphMemoryType {
    /// Pinned memory of a device (`CU_MEM_ALLOCATION_TYPE_PINNED` at a device
    /// location): the default.
    #[default]
    Device,
    /// Pinned host memory (`CU_MEM_ALLOCATION_TYPE_PINNED` at a host or host
    /// NUMA location).
    Host,
    /// Managed memory (`CU_MEM_ALLOCATION_TYPE_MANAGED`; CUDA 13.0 drivers and
    /// newer).
    Managed,
}

impl GraphMemoryType {
    /// The type of an allocation of `alloc_type` at a location of `location_type`,
    /// as the driver describes a graph memory pool.
    pub(crate) fn from_raw(
        alloc_type: sys::CUmemAllocationType,
        location_type: sys::CUmemLocationType,
    ) -> Self {
        if alloc_type == sys::CU_MEM_ALLOCATION_TYPE_MANAGED {
            Self::Managed
        } else if location_type == sys::CU_MEM_LOCATION_TYPE_DEVICE {
            Self::Device
        } else {
            Self::Host
        }
    }
}

impl std::fmt::Display for GraphMemoryType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Device => "device",
            Self::Host => "host",
            Self::Managed => "managed",
        })
    }
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

/// Checks that memory a node touches is usable from the graph's context:
/// a memset's destination must be on the graph's device, a copy needs one side
/// there (the other may be a peer's).
pub(super) fn check_node_devices(
    graph: &Device,
    memory: &[&Device],
    what: &'static str,
) -> Result<()> {
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

/// The low `element_size` (1, 2 or 4) bytes of `value`, as the driver reads them,
/// to set a buffer of `size` bytes (a multiple of the element size).
pub(super) fn memset_pattern(
    value: u32,
    element_size: u32,
    size: usize,
    what: &'static str,
) -> Result<Vec<u8>> {
    if !matches!(element_size, 1 | 2 | 4) || size % element_size as usize != 0 {
        return Err(Error::invalid(
            what,
            format!("element size {element_size} for a buffer of {size} bytes"),
        ));
    }
    Ok(match element_size {
        1 => vec![value as u8],
        2 => (value as u16).to_ne_bytes().to_vec(),
        _ => value.to_ne_bytes().to_vec(),
    })
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
pub(super) fn memset_params(
    ptr: sys::CUdeviceptr,
    n: usize,
    pattern: &[u8],
    what: &'static str,
) -> Result<Vec<sys::CUDA_MEMSET_NODE_PARAMS>> {
    let es = pattern.len();
    if !matches!(es, 1 | 2 | 4 | 8) {
        return Err(Error::invalid(
            what,
            format!("elements of {es} bytes cannot be set by a memset node (1, 2, 4 or 8 can)"),
        ));
    }
    if n == 0 {
        return Err(Error::zero_size(what));
    }
    if ptr % es as u64 != 0 {
        return Err(Error::invalid(
            what,
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

/// The 1-D copy of `bytes` from `spans[1]` to `spans[0]` (each a buffer, an
/// address in it and the bytes there), checked for sizes and for memory a graph
/// on `graph` can reach.
pub(super) fn copy_params(
    graph: &Device,
    spans: [(&Buffer, sys::CUdeviceptr, usize); 2],
    bytes: usize,
    what: &'static str,
) -> Result<sys::CUDA_MEMCPY3D> {
    let [(dst, dst_ptr, dst_size), (src, src_ptr, src_size)] = spans;
    check_copy_size(bytes, dst_size, src_size, what)?;
    check_node_devices(graph, &[dst.device(), src.device()], what)?;
    Ok(sys::CUDA_MEMCPY3D {
        srcMemoryType: sys::CU_MEMORYTYPE_UNIFIED,
        srcDevice: src_ptr,
        dstMemoryType: sys::CU_MEMORYTYPE_UNIFIED,
        dstDevice: dst_ptr,
        WidthInBytes: bytes,
        Height: 1,
        Depth: 1,
        ..Default::default()
    })
}

impl Graph {
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
        let pattern = memset_pattern(value, element_size, buffer.size(), "adding a memset node")?;
        let span = (&**buffer, buffer.ptr(), buffer.size() / pattern.len());
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
    /// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// use std::sync::Arc;
    /// use cudars_core::{DeviceBuffer, Graph, GraphCompleteOptions};
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
        let params = memset_params(ptr, n, pattern, WHAT)?;
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
    /// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// use std::sync::Arc;
    /// use cudars_core::{DeviceBuffer, Graph};
    /// let x = Arc::new(DeviceBuffer::from_host(dev, &[1u32, 2, 3, 4], s)?);
    /// let y = Arc::new(DeviceBuffer::<u32>::zeroed(dev, 4, s)?);
    /// let mut g = Graph::new(&dev.context()?)?;
    /// // y[2..4] = x[0..2]
    /// g.add_copy(&[], y.shared_slice(2..)?, x.shared_slice(..2)?)?;
    /// # Ok(()) }
    /// ```
    ///
    /// Pinned host memory is an `Arc<DeviceBuffer<T>>` from
    /// [`LegacyPinnedMemoryResource`](crate::LegacyPinnedMemoryResource), not a
    /// [`PinnedBuffer`](crate::PinnedBuffer), whose host slices cannot wait for
    /// the graph's launches (see "Not in graphs" there for the pattern).
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
        let p = copy_params(self.ctx.device(), spans, bytes, "adding a memcpy node")?;
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
    /// ([`Stream::free_graph_allocation`](crate::Stream::free_graph_allocation)), unless the graph was instantiated with
    /// [`GraphCompleteOptions::auto_free_on_launch`](crate::GraphCompleteOptions::auto_free_on_launch). (CUDA also lets a later
    /// graph free it; [`add_mem_free`](Self::add_mem_free) takes only this graph's
    /// allocations, which keeps the pairing checkable.) The memory comes from the device's
    /// graph memory pool ([`Device::graph_mem_usage`](crate::Device::graph_mem_usage),
    /// [`Device::graph_mem_trim`](crate::Device::graph_mem_trim)).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a size of 0; the driver's error (alloc nodes
    /// are not allowed in conditional bodies or child graphs).
    pub fn add_mem_alloc(&mut self, deps: &[GraphNode], size: usize) -> Result<GraphAllocation> {
        self.add_mem_alloc_with(deps, size, &GraphAllocOptions::default())
    }

    /// As [`add_mem_alloc`](Self::add_mem_alloc), with the memory where
    /// `options` says and usable by the devices it lists: `cuda.core`'s
    /// `GraphDef.alloc(size, options)`. Kernels of this graph reach memory of
    /// another location only through the access `options` grants.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a size of 0 or
    /// [`Location::HostNumaCurrent`] (memory pools take no such location);
    /// [`Error::Unsupported`] for managed memory before CUDA 13.0; the
    /// driver's error, for a location its graph memory does not support or a
    /// device without peer access to the memory's.
    pub fn add_mem_alloc_with(
        &mut self,
        deps: &[GraphNode],
        size: usize,
        options: &GraphAllocOptions,
    ) -> Result<GraphAllocation> {
        const WHAT: &str = "adding a memory allocation node";
        if size == 0 {
            return Err(Error::zero_size(WHAT));
        }
        let location = options
            .location
            .unwrap_or_else(|| Location::Device(*self.ctx.device()));
        if location.is_numa_current() {
            return Err(Error::invalid(
                WHAT,
                "graph memory takes no host-NUMA-current location",
            ));
        }
        if options.managed {
            crate::versions::require_driver(13000, "managed graph memory", || WHAT)?;
        }
        let mut access: Vec<sys::CUmemAccessDesc> = Vec::new();
        for d in &options.peer_access {
            let own = location == Location::Device(*d);
            if !own
                && !access.iter().any(|a| {
                    crate::memory::resource::location_id(&a.location) == d.ordinal() as i32
                })
            {
                access.push(sys::CUmemAccessDesc {
                    location: Location::Device(*d).raw(),
                    flags: sys::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
                });
            }
        }
        let mut p = sys::CUDA_MEM_ALLOC_NODE_PARAMS {
            poolProps: sys::CUmemPoolProps {
                allocType: if options.managed {
                    sys::CU_MEM_ALLOCATION_TYPE_MANAGED
                } else {
                    sys::CU_MEM_ALLOCATION_TYPE_PINNED
                },
                location: location.raw(),
                ..Default::default()
            },
            accessDescs: if access.is_empty() {
                std::ptr::null()
            } else {
                access.as_ptr()
            },
            accessDescCount: access.len(),
            bytesize: size,
            ..Default::default()
        };
        let dv = self.deps(deps)?;
        let (d, n) = (dv.as_ptr(), dv.len());
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        let _current = self.ctx.ensure_current()?;
        // SAFETY: `p` describes an allocation and is valid for the call, with
        // `access` (alive until the end of this function) as its access
        // descriptors; the driver writes the address into it.
        unsafe { sys::cuGraphAddMemAllocNode(&mut node, self.handle, d, n, &mut p) }
            .check(|| format!("adding a node allocating {size} bytes"))?;
        Ok(GraphAllocation {
            node: self.node(node),
            ptr: crate::launch::DevicePtr(p.dptr),
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
}

// Graph memory (the memory graphs allocate when they run).
impl Device {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::InvalidKind;
    use crate::error::kind_of as kind;

    #[test]
    fn graph_memory_types_choose_the_pool_and_print_as_python_names_them() {
        let d = Device::for_tests(2);
        let t = |o: GraphAllocOptions| o.to_memory_type();
        assert_eq!(t(GraphAllocOptions::new()), GraphMemoryType::Device);
        let host = GraphAllocOptions::new().memory_type(GraphMemoryType::Host);
        assert_eq!(host.location, Some(Location::Host));
        assert_eq!(t(host.clone()), GraphMemoryType::Host);
        // A host NUMA node given first stays; back to device memory drops it.
        let numa = GraphAllocOptions::new()
            .location(Location::HostNuma(1))
            .memory_type(GraphMemoryType::Host);
        assert_eq!(numa.location, Some(Location::HostNuma(1)));
        let dev = numa.memory_type(GraphMemoryType::Device);
        assert_eq!((dev.location, dev.managed), (None, false));
        // A device location stays for device and managed memory.
        let on_d = GraphAllocOptions::new().location(Location::Device(d));
        let managed = on_d.clone().memory_type(GraphMemoryType::Managed);
        assert_eq!(
            (managed.location, managed.managed),
            (Some(Location::Device(d)), true)
        );
        assert_eq!(t(managed.clone()), GraphMemoryType::Managed);
        assert_eq!(
            managed.memory_type(GraphMemoryType::Device),
            on_d.clone().memory_type(GraphMemoryType::Device)
        );
        assert_eq!(
            GraphAllocOptions::new().managed().to_memory_type(),
            GraphMemoryType::Managed
        );
        assert_eq!(GraphMemoryType::default(), GraphMemoryType::Device);
        // What the driver reports for a node's pool.
        use GraphMemoryType as M;
        for (alloc, loc, want) in [
            (
                sys::CU_MEM_ALLOCATION_TYPE_PINNED,
                sys::CU_MEM_LOCATION_TYPE_DEVICE,
                M::Device,
            ),
            (
                sys::CU_MEM_ALLOCATION_TYPE_PINNED,
                sys::CU_MEM_LOCATION_TYPE_HOST,
                M::Host,
            ),
            (
                sys::CU_MEM_ALLOCATION_TYPE_PINNED,
                sys::CU_MEM_LOCATION_TYPE_HOST_NUMA,
                M::Host,
            ),
            (
                sys::CU_MEM_ALLOCATION_TYPE_MANAGED,
                sys::CU_MEM_LOCATION_TYPE_DEVICE,
                M::Managed,
            ),
        ] {
            assert_eq!(M::from_raw(alloc, loc), want);
        }
        let names: Vec<String> = [M::Device, M::Host, M::Managed]
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(names, ["device", "host", "managed"]);
    }

    #[test]
    fn memset_nodes_cover_every_element_width() {
        let base = 0x7000_0000u64;
        let p = memset_params(base, 10, &[0xab], "t").unwrap();
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
        let p = memset_params(base + 2, 3, &0x1234u16.to_ne_bytes(), "t").unwrap();
        assert_eq!((p[0].value, p[0].elementSize, p[0].width), (0x1234, 2, 3));
        let p = memset_params(base + 4, 5, &1.5f32.to_ne_bytes(), "t").unwrap();
        assert_eq!((p[0].value, p[0].elementSize), (1.5f32.to_bits(), 4));
        // 8 bytes: the low and the high half, one row per element.
        let v = 0x0123_4567_89ab_cdefu64;
        let p = memset_params(base + 8, 7, &v.to_ne_bytes(), "t").unwrap();
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
        assert_eq!(
            kind(memset_params(base, 0, &[1], "t")),
            InvalidKind::ZeroSize
        );
        assert_eq!(
            kind(memset_params(base, 4, &[1, 2, 3], "t")),
            InvalidKind::Other
        );
        assert_eq!(
            kind(memset_params(base + 2, 4, &[0; 4], "t")),
            InvalidKind::Other
        );
        assert_eq!(
            kind(memset_params(base + 4, 4, &[0; 8], "t")),
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
