//! [`ArcView<T>`]: an owned, typed sub-range of device memory, for whatever
//! holds memory past the call that names it (graph nodes, DLPack tensors).
//!
//! Architecture Invariant: an `ArcView` is an `Arc` of the allocation (a
//! [`Buffer`] or a [`DeviceBuffer`]) and an element range checked against it
//! when the view was made. Whatever stores it (a graph's keep list, an exported
//! tensor) stores the `Arc`, so the memory is freed only after the last holder
//! lets go, whichever of them goes last.

use std::any::Any;
use std::marker::PhantomData;
use std::ops::RangeBounds;
use std::sync::Arc;

use bytemuck::Pod;
use cudars_bindings::driver as sys;

use crate::error::Result;
use crate::memory::buffer::NonZeroSize;
use crate::memory::view::{bounds, view_accessors};
use crate::{
    device::Device, memory::buffer::Buffer, memory::device_buffer::DeviceBuffer,
    memory::view::DeviceView, stream::Stream,
};

/// An allocation an [`ArcView`] can hold: a byte [`Buffer`] or a typed
/// [`DeviceBuffer`].
pub(crate) trait HoldsBuffer: Send + Sync + 'static {
    /// The byte buffer.
    fn buffer(&self) -> &Buffer;
    /// The same allocation as a keep-alive handle (what graphs and exported
    /// tensors store).
    fn keep_alive(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

impl HoldsBuffer for Buffer {
    fn buffer(&self) -> &Buffer {
        self
    }
    fn keep_alive(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

impl<T: Pod + Send + Sync> HoldsBuffer for DeviceBuffer<T> {
    fn buffer(&self) -> &Buffer {
        self.as_buffer()
    }
    fn keep_alive(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

/// `len` elements of type `T` in device memory, with shared ownership of the
/// allocation they lie in: the owned counterpart of [`DeviceView`], for what
/// must keep memory alive after the call that names it returns. Graph nodes
/// ([`Graph::add_fill`](crate::Graph::add_fill),
/// [`Graph::add_copy`](crate::Graph::add_copy)) and DLPack tensors
/// (`to_dlpack`, feature `dlpack`) take one; the memory is freed when the last
/// of them, and the last `Arc` of the allocation, is gone.
///
/// Made from an `Arc<DeviceBuffer<T>>`
/// ([`DeviceBuffer::shared_view`], [`DeviceBuffer::shared_slice`], or `From`) or an
/// `Arc<Buffer>` ([`of_buffer`](Self::of_buffer)), and sliced further with
/// [`slice`](Self::slice); every range is checked. Cloning is an `Arc` clone.
///
/// ```no_run
/// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
/// use std::sync::Arc;
/// use cudars_core::{ArcView, DeviceBuffer};
/// let x = Arc::new(DeviceBuffer::from_host(dev, &[1.0f32, 2.0, 3.0, 4.0], s)?);
/// let tail: ArcView<f32> = x.shared_slice(2..)?;
/// drop(x); // `tail` keeps the allocation alive
/// assert_eq!(tail.view().to_vec(s)?, [3.0, 4.0]);
/// # Ok(()) }
/// ```
pub struct ArcView<T> {
    owner: Arc<dyn HoldsBuffer>,
    pub(crate) ptr: sys::CUdeviceptr,
    len: usize,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for ArcView<T> {
    fn clone(&self) -> Self {
        Self {
            owner: self.owner.clone(),
            ptr: self.ptr,
            len: self.len,
            _t: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for ArcView<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArcView")
            .field("element", &std::any::type_name::<T>())
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .field("device", self.owner.buffer().device())
            .finish()
    }
}

impl<T: Pod> ArcView<T> {
    /// `len` elements at `ptr` inside `owner`'s buffer (the caller checked).
    fn new_unchecked(owner: Arc<dyn HoldsBuffer>, ptr: sys::CUdeviceptr, len: usize) -> Self {
        let () = NonZeroSize::<T>::OK;
        Self {
            owner,
            ptr,
            len,
            _t: PhantomData,
        }
    }

    /// The whole of a byte buffer as `T`s.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when the size
    /// is not a multiple of `T`'s or the address is not aligned for `T`.
    pub fn of_buffer(buffer: &Arc<Buffer>) -> Result<Self> {
        let len = buffer.typed_len::<T>("viewing a shared buffer as typed elements")?;
        Ok(Self::new_unchecked(buffer.clone(), buffer.ptr(), len))
    }

    /// The elements in `range` of this view (any range of `usize`), sharing
    /// the allocation.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) with
    /// [`InvalidKind::OutOfRange`](crate::InvalidKind::OutOfRange) for a range
    /// outside the view.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<Self> {
        let (s, e) = bounds(range, self.len, "slicing a shared view")?;
        let ptr = self.ptr + (s * std::mem::size_of::<T>()) as u64;
        Ok(Self::new_unchecked(self.owner.clone(), ptr, e - s))
    }

    /// A borrowed view of the same elements (for launches, copies, reads).
    pub fn view(&self) -> DeviceView<'_, T> {
        DeviceView::new_unchecked(self.owner.buffer(), self.ptr, self.len)
    }

    view_accessors!();

    /// The byte buffer the view lies in.
    pub fn buffer(&self) -> &Buffer {
        self.owner.buffer()
    }

    #[cfg(feature = "dlpack")]
    /// The allocation, as what holds its buffer.
    pub(crate) fn holder(&self) -> Arc<dyn HoldsBuffer> {
        self.owner.clone()
    }

    /// The allocation, for a holder to keep alive.
    pub(crate) fn keep_alive(&self) -> Arc<dyn Any + Send + Sync> {
        self.owner.clone().keep_alive()
    }
}

/// Writing through the shared handle: what a graph's operands need between
/// launches (Python's `cuda_graphs.py` refills its buffers between graph
/// launches). The graph keeps its own `Arc` of the allocation, so these take
/// `&self`: queue them on the stream the graph is launched on, and they run
/// between the launches, in stream order, while the graph stays alive.
///
/// ```no_run
/// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream, exec: &cudars_core::GraphExec, x: std::sync::Arc<cudars_core::DeviceBuffer<f32>>) -> cudars_core::Result<()> {
/// exec.launch(s)?; // the graph reads and writes `x`
/// let out = x.to_vec(s)?; // after the launch, in stream order
/// x.shared_view().fill(0.0, s)?; // refilled before the next launch
/// exec.launch(s)?;
/// # drop(out); Ok(()) }
/// ```
///
/// Each is ordered before the allocation's free like any use (rule 2 of the
/// soundness contract); writes that race other device work on the same memory
/// (the graph launched on another stream, not waited for) give whatever the
/// device makes of them, never a host data race: no safe host reference to the
/// memory exists while an `Arc` of it is shared.
impl<T: Pod> ArcView<T> {
    /// Sets every element to `value`, ordered on `stream` (as
    /// [`DeviceViewMut::fill`](crate::DeviceViewMut::fill), through the shared
    /// handle).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a stream of
    /// another device; the driver's error.
    pub fn fill(&self, value: T, stream: &Stream) -> Result<()> {
        const {
            assert!(
                matches!(std::mem::size_of::<T>(), 1 | 2 | 4 | 8),
                "fill takes elements of 1, 2, 4 or 8 bytes"
            );
        }
        // Soundness contract: rule 2 (`Span::fill` orders the free after it).
        self.view().span().fill(bytemuck::bytes_of(&value), stream)
    }

    /// Copies `src` (of the view's length) into the view and waits for the copy
    /// (as [`DeviceViewMut::copy_from_host`](crate::DeviceViewMut::copy_from_host),
    /// through the shared handle).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for another
    /// length or a stream of another device; the driver's error.
    pub fn copy_from_host(&self, src: &[T], stream: &Stream) -> Result<()> {
        let view = self.view();
        let span = view.span();
        span.check_len(src.len(), "copying host memory into a shared view")?;
        // SAFETY: `src` holds the view's bytes; the stream is drained before
        // `src` is handed back (rule 3). The upload orders the free after it
        // (rule 2).
        unsafe { span.upload(src.as_ptr().cast(), stream) }?;
        stream.drain()
    }

    /// Copies `src` (a view of equal length) into this view, ordered on
    /// `stream` (as [`DeviceViewMut::copy_from`](crate::DeviceViewMut::copy_from),
    /// through the shared handle).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for another
    /// length or a stream of neither device; the driver's error.
    pub fn copy_from(&self, src: DeviceView<'_, T>, stream: &Stream) -> Result<()> {
        let view = self.view();
        let dst = view.span();
        dst.check_len(src.len(), "copying into a shared view")?;
        crate::memory::span::copy_device(
            dst.buf,
            dst.ptr,
            src.buffer(),
            src.ptr(),
            dst.bytes(),
            stream,
        )?;
        // Soundness contract: rule 2.
        crate::memory::buffer::order_frees_after([dst.buf, src.buffer()].into_iter(), stream)
    }
}

impl<T: Pod + Send + Sync> From<Arc<DeviceBuffer<T>>> for ArcView<T> {
    fn from(buffer: Arc<DeviceBuffer<T>>) -> Self {
        let (ptr, len) = (buffer.as_buffer().ptr(), buffer.len());
        Self::new_unchecked(buffer, ptr, len)
    }
}

impl<T: Pod + Send + Sync> From<&Arc<DeviceBuffer<T>>> for ArcView<T> {
    fn from(buffer: &Arc<DeviceBuffer<T>>) -> Self {
        Self::from(buffer.clone())
    }
}

impl<T: Pod> From<&ArcView<T>> for ArcView<T> {
    fn from(view: &ArcView<T>) -> Self {
        view.clone()
    }
}

impl<T: Pod + Send + Sync> DeviceBuffer<T> {
    /// The whole array as an owned view that shares the allocation.
    pub fn shared_view(self: &Arc<Self>) -> ArcView<T> {
        ArcView::from(self)
    }

    /// The elements in `range` as an owned view that shares the allocation.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) with
    /// [`InvalidKind::OutOfRange`](crate::InvalidKind::OutOfRange) for a range
    /// outside the array.
    pub fn shared_slice(self: &Arc<Self>, range: impl RangeBounds<usize>) -> Result<ArcView<T>> {
        self.shared_view().slice(range)
    }
}

/// A buffer over memory this test owns (no driver call is made).
#[cfg(test)]
pub(crate) fn host_backed(data: &mut [u8]) -> Arc<Buffer> {
    // SAFETY: the buffer is never used for device work here; its address
    // and size are those of `data`, which outlives it in each test.
    Arc::new(unsafe {
        Buffer::from_raw(
            data.as_mut_ptr() as u64,
            data.len(),
            crate::memory::resource::MemoryKind::Pinned,
            &Device::for_tests(0),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{error::Error, error::InvalidKind};

    #[test]
    fn shared_views_check_their_ranges_and_keep_the_allocation() {
        // `u32`s, so that the bytes are aligned for them (a `Vec<u8>` need not be:
        // Miri places it anywhere).
        let mut mem = [0u32; 16];
        let base = mem.as_mut_ptr() as u64;
        let buf = host_backed(bytemuck::cast_slice_mut(&mut mem));
        let all = ArcView::<u32>::of_buffer(&buf).unwrap();
        assert_eq!((all.len(), all.ptr(), all.byte_len()), (16, base, 64));
        let mid = all.slice(4..10).unwrap();
        assert_eq!((mid.len(), mid.ptr()), (6, base + 16));
        let inner = mid.slice(1..=2).unwrap();
        assert_eq!((inner.len(), inner.ptr()), (2, base + 20));
        assert_eq!(inner.view().ptr(), base + 20);
        for r in [mid.slice(5..7), mid.slice(7..), all.slice(..17)] {
            match r {
                Err(Error::InvalidArgument {
                    kind: InvalidKind::OutOfRange,
                    ..
                }) => {}
                other => panic!("{other:?}"),
            }
        }
        // The views hold the buffer: three views and the test's handle.
        assert_eq!(Arc::strong_count(&buf), 4);
        drop((all, mid));
        assert_eq!(Arc::strong_count(&buf), 2);
        let keep = inner.keep_alive();
        drop(inner);
        assert_eq!(Arc::strong_count(&buf), 2);
        drop(keep);
        assert_eq!(Arc::strong_count(&buf), 1);
        // Sizes and addresses that are not whole `T`s are refused.
        let odd = host_backed(&mut bytemuck::cast_slice_mut::<u32, u8>(&mut mem)[..6]);
        assert!(matches!(
            ArcView::<u32>::of_buffer(&odd),
            Err(Error::InvalidArgument { .. })
        ));
    }
}
