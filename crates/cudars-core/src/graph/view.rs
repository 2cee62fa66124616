//! What a [`GraphBuilder`](crate::GraphBuilder) takes: [`CaptureArg`] (a kernel
//! argument whose memory the graph keeps alive) and [`GraphView`] (memory of
//! the graph, or an `ArcView`).

use crate::error::{Error, Result};
use crate::{
    device::Device, launch::KernelArg, memory::arc_view::ArcView,
    memory::device_buffer::DeviceBuffer,
};
use bytemuck::Pod;
use std::any::Any;
use std::sync::Arc;

/// A kernel argument queued into a [`GraphBuilder`](crate::GraphBuilder): a value, copied when the
/// work is captured, or device memory that the builder's graph must keep alive.
///
/// Implemented for every [`Pod`] value (numbers, `#[repr(C)]` structs, a
/// [`GraphCondition`](crate::GraphCondition), a [`DevicePtr`](crate::DevicePtr), whose memory the
/// caller vouches for), for [`ArcView`] (the address of its first element; the
/// graph keeps its allocation alive) and for [`GraphView`] (an `ArcView`, or
/// graph memory of the same graph). An `Arc<DeviceBuffer<T>>` is passed as
/// `x.shared_view()`, an `Arc<Buffer>` as `ArcView::<T>::of_buffer(&b)?`.
pub trait CaptureArg {
    /// The argument's bytes, as a launch takes them.
    fn as_kernel_arg(&self) -> &dyn KernelArg;
    /// What the graph must keep alive for the argument to stay valid (`None`
    /// for a value).
    fn keep_alive(&self) -> Option<Arc<dyn Any + Send + Sync>>;
    /// The device of the memory the argument points to (`None` for a value).
    fn memory_device(&self) -> Option<&Device>;
    /// For graph memory ([`GraphBuilder::allocate`](crate::GraphBuilder::allocate)), the allocation it comes
    /// from: it is usable only by work ordered after that allocation in the same
    /// graph (see [`GraphView`]).
    fn graph_memory_of(&self) -> Option<u64> {
        None
    }
}

impl<T: Pod> CaptureArg for T {
    fn as_kernel_arg(&self) -> &dyn KernelArg {
        self
    }
    fn keep_alive(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        None
    }
    fn memory_device(&self) -> Option<&Device> {
        None
    }
}

impl<T: Pod> CaptureArg for ArcView<T> {
    fn as_kernel_arg(&self) -> &dyn KernelArg {
        self
    }
    fn keep_alive(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        Some(ArcView::keep_alive(self))
    }
    fn memory_device(&self) -> Option<&Device> {
        Some(self.buffer().device())
    }
}

/// Device memory that work queued into a [`GraphBuilder`](crate::GraphBuilder) uses: an [`ArcView`]
/// (from an `Arc<DeviceBuffer<T>>`, `&ArcView<T>`, …), whose allocation the
/// graph keeps alive, or graph memory from [`GraphBuilder::allocate`](crate::GraphBuilder::allocate), which
/// exists only while its graph runs, from its allocation node to the free node
/// that ends the graph. Graph memory is therefore taken only by work ordered
/// after its allocation: by the builder that allocated it, by builders split
/// off it (or conditional bodies added to it) afterwards, and by builders those
/// were joined into; anywhere else it is an [`Error::InvalidArgument`](crate::Error::InvalidArgument).
pub struct GraphView<T> {
    pub(crate) view: ArcView<T>,
    /// The allocation this graph memory comes from (`None`: an `ArcView`).
    pub(crate) alloc: Option<u64>,
}

impl<T> Clone for GraphView<T> {
    fn clone(&self) -> Self {
        Self {
            view: self.view.clone(),
            alloc: self.alloc,
        }
    }
}

impl<T> std::fmt::Debug for GraphView<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphView")
            .field("view", &self.view)
            .field("graph_memory", &self.alloc.is_some())
            .finish()
    }
}

impl<T: Pod> GraphView<T> {
    /// The elements in `range` of this view (any range of `usize`), of the same
    /// memory.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) with
    /// [`InvalidKind::OutOfRange`](crate::InvalidKind::OutOfRange) for a range
    /// outside the view.
    pub fn slice(&self, range: impl std::ops::RangeBounds<usize>) -> Result<Self> {
        Ok(Self {
            view: self.view.slice(range)?,
            alloc: self.alloc,
        })
    }

    /// How many elements.
    pub fn len(&self) -> usize {
        self.view.len()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.view.is_empty()
    }

    /// The device the memory is on.
    pub fn device(&self) -> &Device {
        self.view.device()
    }

    /// Whether this is graph memory of [`GraphBuilder::allocate`](crate::GraphBuilder::allocate).
    pub fn is_graph_memory(&self) -> bool {
        self.alloc.is_some()
    }
}

impl<T: Pod> From<ArcView<T>> for GraphView<T> {
    fn from(view: ArcView<T>) -> Self {
        Self { view, alloc: None }
    }
}

impl<T: Pod> From<&ArcView<T>> for GraphView<T> {
    fn from(view: &ArcView<T>) -> Self {
        Self::from(view.clone())
    }
}

impl<T: Pod + Send + Sync> From<Arc<DeviceBuffer<T>>> for GraphView<T> {
    fn from(buffer: Arc<DeviceBuffer<T>>) -> Self {
        Self::from(ArcView::from(buffer))
    }
}

impl<T: Pod + Send + Sync> From<&Arc<DeviceBuffer<T>>> for GraphView<T> {
    fn from(buffer: &Arc<DeviceBuffer<T>>) -> Self {
        Self::from(ArcView::from(buffer))
    }
}

impl<T: Pod> From<&GraphView<T>> for GraphView<T> {
    fn from(view: &GraphView<T>) -> Self {
        view.clone()
    }
}

// SAFETY: the inner view's stored device address (8 bytes), as `ArcView`'s.
// Soundness contract: rule 10.
unsafe impl<T: Pod> KernelArg for GraphView<T> {
    fn arg_ptr(&self) -> *const std::ffi::c_void {
        self.view.arg_ptr()
    }
    fn arg_size(&self) -> usize {
        self.view.arg_size()
    }
    fn arg_owner(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        self.view.arg_owner()
    }
}

impl<T: Pod> CaptureArg for GraphView<T> {
    fn as_kernel_arg(&self) -> &dyn KernelArg {
        self
    }
    fn keep_alive(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        Some(ArcView::keep_alive(&self.view))
    }
    fn memory_device(&self) -> Option<&Device> {
        Some(self.view.device())
    }
    fn graph_memory_of(&self) -> Option<u64> {
        self.alloc
    }
}

/// Checks captured-launch arguments against a typed signature's sizes.
pub(crate) fn check_signature_sizes(
    what: impl Fn() -> String,
    sizes: &[usize],
    args: &[&dyn CaptureArg],
) -> Result<()> {
    for (i, (a, want)) in args.iter().zip(sizes).enumerate() {
        let have = a.as_kernel_arg().arg_size();
        if have != *want {
            return Err(Error::invalid(
                what(),
                format!("argument {i} is {have} bytes, the signature's parameter {want}"),
            ));
        }
    }
    if args.len() != sizes.len() {
        return Err(Error::invalid(
            what(),
            format!(
                "{} arguments for a signature of {}",
                args.len(),
                sizes.len()
            ),
        ));
    }
    Ok(())
}
