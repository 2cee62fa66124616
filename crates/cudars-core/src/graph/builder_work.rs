//! The work a [`GraphBuilder`](crate::GraphBuilder) queues into its capture:
//! child graphs, kernel launches, copies, fills, graph memory, host callbacks
//! and events. Each method checks the builder's state first
//! (`crate::graph::builder_rules`) and keeps what the work touches alive in the
//! graph.

use super::define::{Graph, keep, keep_all};
use crate::error::{Check as _, Error, Result};
use crate::graph::builder::GraphBuilder;
use crate::graph::builder_rules::{PendingFree, check_device, lock, next_builder_id};
use crate::graph::view::{CaptureArg, GraphView, check_signature_sizes};
use crate::{
    code::kernel::Kernel, event::Event, launch::KernelArg, launch::LaunchConfig,
    launch::typed_kernel::CaptureSignature, launch::typed_kernel::TypedKernel,
    memory::arc_view::ArcView, memory::buffer::Buffer, memory::pool::DeviceMemoryResource,
    memory::resource::MemoryResource,
};
use bytemuck::Pod;
use cudars_bindings::driver as sys;
use std::sync::Arc;

impl GraphBuilder {
    /// Embeds a copy of `child` at this point of the capture (`add_child`); the
    /// graph being built keeps what `child` keeps alive.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when not building or for a graph of another
    /// device; the driver's error.
    pub fn add_child(&self, child: &Graph) -> Result<()> {
        const WHAT: &str = "adding a child graph to a graph builder";
        let info = self.capturing(WHAT)?;
        check_device(self.device(), ("graph", child.ctx.device()), WHAT)?;
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: the dependencies are nodes of the capture's graph; a live child
        // graph, which the driver clones.
        unsafe {
            sys::cuGraphAddChildGraphNode(
                &mut node,
                info.graph,
                info.deps.as_ptr(),
                info.deps.len(),
                child.handle,
            )
        }
        .check(|| WHAT)?;
        keep_all(&self.family.keep, &child.keep);
        self.stream.set_capture_dependency(node)
    }

    /// Launches `kernel` with `config` and `args` into the graph
    /// (`launch(builder, config, kernel, *args)`), checked as [`crate::launch`]
    /// checks a launch. The graph keeps the kernel (and its library) and the
    /// arguments' allocations alive.
    ///
    /// # Safety
    /// As [`crate::launch`], for every launch of every instantiation of the graph,
    /// except that the builder keeps [`ArcView`] arguments alive: the kernel must
    /// stay within the memory it is given, must not race with other work on it,
    /// and memory passed by raw address ([`DevicePtr`](crate::DevicePtr), an
    /// integer) must stay valid while the graph can run.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when not building, for memory of another device,
    /// graph memory of another graph, or a wrong argument count or size; the
    /// driver's error.
    pub unsafe fn launch(
        &self,
        config: &LaunchConfig,
        kernel: &Kernel,
        args: &[&dyn CaptureArg],
    ) -> Result<()> {
        let what = || format!("launching kernel `{}` into a graph builder", kernel.name());
        self.check_building(what())?;
        // The message is formatted only for an argument that fails.
        for a in args {
            if let Some(d) = a.memory_device() {
                if d != self.device() {
                    check_device(self.device(), ("memory", d), what())?;
                }
            }
            if let Some(id) = a.graph_memory_of() {
                self.check_graph_memory(Some(id), what())?;
            }
        }
        // Kept first: a node the driver accepted must never outlive its memory.
        for a in args {
            if let Some(k) = a.keep_alive() {
                keep(&self.family.keep, k);
            }
        }
        keep(&self.family.keep, Arc::new(kernel.clone()));
        let plain: Vec<&dyn KernelArg> = args.iter().map(|a| a.as_kernel_arg()).collect();
        // SAFETY: per this function's contract; the builder's stream is capturing.
        unsafe { crate::launch(&self.stream, config, kernel, &plain) }
    }

    /// Launches a [`TypedKernel`] into the graph: `args` is the signature's
    /// tuple with a [`GraphView`] for each pointer (`ConstPtr<T>`, `MutPtr<T>`)
    /// and the value for each value (a `bool` as a `u8`); see
    /// [`CaptureSignature`]. The argument count, kinds and sizes are fixed by
    /// the signature, checked once when the `TypedKernel` was made (on drivers
    /// of CUDA 12.4 and later), and each argument's size is checked against it
    /// here, whatever the driver. Otherwise as [`launch`](Self::launch).
    ///
    /// ```no_run
    /// # fn f(k: cudars_core::Kernel, b: &cudars_core::GraphBuilder, x: &std::sync::Arc<cudars_core::DeviceBuffer<f32>>) -> cudars_core::Result<()> {
    /// use cudars_core::{ConstPtr, LaunchConfig, MutPtr, TypedKernel};
    /// // extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned long long n)
    /// let saxpy = TypedKernel::<(f32, ConstPtr<f32>, MutPtr<f32>, u64)>::new(k)?;
    /// let y = b.allocate::<f32>(1024)?;
    /// // SAFETY: saxpy reads x[0..n] and writes y[0..n]; both hold n = 1024 floats.
    /// unsafe { b.launch_typed(&LaunchConfig::for_elements(1024, 256), &saxpy, (2.0, x.into(), y, 1024))? };
    /// # Ok(()) }
    /// ```
    ///
    /// # Safety
    /// As [`TypedKernel::launch`], for every launch of every instantiation of the
    /// graph: the kernel must stay within the views it is given and write only
    /// through `MutPtr` parameters; the builder keeps the views' memory alive.
    ///
    /// # Errors
    /// As [`launch`](Self::launch).
    pub unsafe fn launch_typed<S: CaptureSignature>(
        &self,
        config: &LaunchConfig,
        kernel: &TypedKernel<S>,
        args: S::Captured,
    ) -> Result<()> {
        S::with_captured(&args, |all| {
            let what = || {
                format!(
                    "launching kernel `{}` into a graph builder",
                    kernel.kernel().name()
                )
            };
            check_signature_sizes(what, S::SIZES, all)?;
            // SAFETY: per this function's contract.
            unsafe { self.launch(config, kernel.kernel(), all) }
        })
    }

    /// Copies `src` into `dst`, views of equal length, when the graph runs (a
    /// memcpy node); the graph keeps both allocations alive. Each is a
    /// [`GraphView`]: an `&Arc<DeviceBuffer<T>>`, an [`ArcView`], or graph memory.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when not building, for views of other lengths
    /// ([`InvalidKind::OutOfRange`](crate::InvalidKind::OutOfRange)), graph
    /// memory of another graph, or when neither is memory of the builder's
    /// device; the driver's error.
    pub fn copy<T: Pod>(
        &self,
        dst: impl Into<GraphView<T>>,
        src: impl Into<GraphView<T>>,
    ) -> Result<()> {
        const WHAT: &str = "copying in a graph builder";
        self.check_building(WHAT)?;
        let (dst, src) = (dst.into(), src.into());
        self.check_graph_memory(dst.alloc, WHAT)?;
        self.check_graph_memory(src.alloc, WHAT)?;
        let (dst, src) = (dst.view, src.view);
        if dst.len() != src.len() {
            return Err(Error::out_of_range(
                WHAT,
                format!(
                    "the lengths differ: {} and {} elements",
                    src.len(),
                    dst.len()
                ),
            ));
        }
        if dst.device() != self.device() {
            check_device(self.device(), ("memory", src.device()), WHAT)?;
        }
        keep(&self.family.keep, dst.keep_alive());
        keep(&self.family.keep, src.keep_alive());
        crate::memory::span::copy_device(
            dst.buffer(),
            dst.ptr(),
            src.buffer(),
            src.ptr(),
            dst.byte_len(),
            &self.stream,
        )
    }

    /// Sets every element of `dst` to `value` when the graph runs (one memset
    /// node; two for 8-byte elements); the graph keeps the allocation alive.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when not building, for memory of another
    /// device, graph memory of another graph, or an address not aligned to the
    /// element size; the driver's error.
    pub fn fill<T: Pod>(&self, dst: impl Into<GraphView<T>>, value: T) -> Result<()> {
        const {
            assert!(
                matches!(std::mem::size_of::<T>(), 1 | 2 | 4 | 8),
                "GraphBuilder::fill takes elements of 1, 2, 4 or 8 bytes"
            );
        }
        const WHAT: &str = "filling in a graph builder";
        self.check_building(WHAT)?;
        let dst = dst.into();
        self.check_graph_memory(dst.alloc, WHAT)?;
        let dst = dst.view;
        check_device(self.device(), ("memory", dst.device()), WHAT)?;
        keep(&self.family.keep, dst.keep_alive());
        crate::memory::span::Span {
            buf: dst.buffer(),
            ptr: dst.ptr(),
            len: dst.len(),
            elem: std::mem::size_of::<T>(),
        }
        .fill_queued(bytemuck::bytes_of(&value), &self.stream)
    }

    /// Allocates `len` elements of graph memory (`mr.allocate(size,
    /// stream=builder)`; graph memory comes from the device's graph memory pool
    /// whatever `mr` is): an allocation node now (`cuMemAllocAsync`), and a free
    /// node that ends the graph, added by [`end_building`](Self::end_building).
    /// The memory exists while the graph runs, from its allocation to the end of
    /// the graph, fresh on each launch: the [`GraphView`] is taken by work queued
    /// into this graph's builders (this one, its splits and bodies), and refused
    /// by any other. [`allocate_from`](Self::allocate_from) names the pool whose
    /// properties the allocation node takes.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when not building, for a zero length or a size
    /// that overflows; [`Error::Unsupported`] in a conditional body (CUDA allows
    /// no allocation there); the driver's error.
    pub fn allocate<T: Pod>(&self, len: usize) -> Result<GraphView<T>> {
        self.allocate_in(None, len)
    }

    /// As [`allocate`](Self::allocate), the allocation node taking the
    /// properties of `pool`, a memory pool of the builder's device
    /// (`cuMemAllocFromPoolAsync`).
    ///
    /// # Errors
    /// As [`allocate`](Self::allocate); [`Error::InvalidArgument`] for a pool of
    /// another device; [`Error::Unsupported`] for a pool imported from another
    /// process.
    pub fn allocate_from<T: Pod>(
        &self,
        pool: &DeviceMemoryResource,
        len: usize,
    ) -> Result<GraphView<T>> {
        self.allocate_in(Some(pool), len)
    }

    fn allocate_in<T: Pod>(
        &self,
        pool: Option<&DeviceMemoryResource>,
        len: usize,
    ) -> Result<GraphView<T>> {
        let what = || format!("allocating {len} elements in a graph builder");
        self.check_building(what())?;
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::out_of_range(what(), "the size in bytes does not fit a usize"))?;
        if bytes == 0 {
            return Err(Error::zero_size(what()));
        }
        if self.capture != self.family.id {
            return Err(Error::unsupported(
                what(),
                "CUDA allows no allocation in a conditional node's body",
            ));
        }
        if let Some(pool) = pool {
            check_device(
                self.device(),
                ("pool", &MemoryResource::device(pool)),
                what(),
            )?;
            if pool.is_mapped() {
                return Err(Error::unsupported(
                    what(),
                    "the pool was imported from another process, which allocates its memory",
                ));
            }
        }
        let _current = self.family.ctx.ensure_current()?;
        let mut ptr: sys::CUdeviceptr = 0;
        let rc = match pool {
            // SAFETY: `ptr` is valid for writes; a live pool and a capturing stream
            // (the allocation is a node of the graph).
            Some(pool) => unsafe {
                sys::cuMemAllocFromPoolAsync(&mut ptr, bytes, pool.handle(), self.stream.handle())
            },
            // SAFETY: as above.
            None => unsafe { sys::cuMemAllocAsync(&mut ptr, bytes, self.stream.handle()) },
        };
        rc.check(|| format!("allocating {bytes} bytes of graph memory"))?;
        lock(&self.family.frees).push(PendingFree { ptr, size: bytes });
        // SAFETY: `bytes` of device memory at `ptr` while the graph runs, from its
        // allocation node to the free node `end_building` adds; the buffer never
        // frees it (not owned), and the view that hands it out is taken only by
        // work of this graph.
        let buffer = Arc::new(unsafe {
            Buffer::from_raw(
                ptr,
                bytes,
                crate::memory::resource::MemoryKind::Device,
                self.device(),
            )
        });
        let view = ArcView::of_buffer(&buffer)?;
        let id = next_builder_id();
        self.see([id]);
        Ok(GraphView {
            view,
            alloc: Some(id),
        })
    }

    /// Calls `f` on a driver thread each time the graph reaches this point
    /// (`callback(fn)`): [`Stream::launch_host_func_repeatable`](crate::Stream::launch_host_func_repeatable) on the
    /// capture, so the graph owns `f`. `f` must not call CUDA; a panic in it is
    /// caught and recorded in the graph: [`Graph::take_callback_panic`] or
    /// [`GraphExec::take_callback_panic`](crate::GraphExec::take_callback_panic) hands it over.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when not building; the driver's error.
    pub fn callback(&self, f: impl Fn() + Send + Sync + 'static) -> Result<()> {
        self.check_building("adding a host callback to a graph builder")?;
        self.stream
            .launch_host_func_repeatable_into(f, self.family.keep.panics.clone())
    }

    /// Records `event` each time the graph reaches this point (an event record
    /// node: `cuEventRecordWithFlags` with `CU_EVENT_RECORD_EXTERNAL`), for work
    /// outside the graph to wait on. The graph keeps the event alive. (Ordering
    /// between builders of one graph is [`split`](Self::split) and
    /// [`join`](Self::join).)
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when not building or for an event of another
    /// device ([`InvalidKind::OtherDevice`](crate::InvalidKind::OtherDevice));
    /// the driver's error.
    pub fn record_event(&self, event: &Arc<Event>) -> Result<()> {
        self.event_node(event, "recording an event in a graph builder", |e, s| {
            // SAFETY: a live event (kept by the graph) and a capturing stream of
            // its device.
            unsafe { sys::cuEventRecordWithFlags(e, s, sys::CU_EVENT_RECORD_EXTERNAL.0) }
        })
    }

    /// Makes the work captured after this point wait, each time the graph runs,
    /// for the last record of `event` before it (an event wait node:
    /// `cuStreamWaitEvent` with `CU_EVENT_WAIT_EXTERNAL`), typically recorded by
    /// work outside the graph. The graph keeps the event alive.
    ///
    /// # Errors
    /// As [`record_event`](Self::record_event).
    pub fn wait_event(&self, event: &Arc<Event>) -> Result<()> {
        self.event_node(event, "making a graph builder wait for an event", |e, s| {
            // SAFETY: a live event (kept by the graph) and a capturing stream of
            // its device.
            unsafe { sys::cuStreamWaitEvent(s, e, sys::CU_EVENT_WAIT_EXTERNAL.0) }
        })
    }

    /// Checks and keeps `event`, then `queue`s its node on the builder's stream
    /// (given the event's and the stream's handles), with the context current.
    fn event_node(
        &self,
        event: &Arc<Event>,
        what: &'static str,
        queue: impl FnOnce(sys::CUevent, sys::CUstream) -> sys::CUresult,
    ) -> Result<()> {
        self.check_building(what)?;
        check_device(self.device(), ("event", event.device()), what)?;
        keep(&self.family.keep, event.clone());
        let _current = self.family.ctx.ensure_current()?;
        queue(event.handle(), self.stream.handle()).check(|| what)
    }
}
