//! [`DeviceBuffer<T>`]: an owning, typed array in device memory.

use std::marker::PhantomData;
use std::ops::RangeBounds;
use std::sync::Arc;

use bytemuck::Pod;

use crate::error::{Error, Result};
use crate::memory::buffer::NonZeroSize;
use crate::memory::view::{DeviceView, DeviceViewMut};
use crate::{
    device::Device, memory::buffer::Buffer, memory::resource::MemoryResource, stream::Stream,
};

/// An owning array of `len` elements of type `T` in device memory: a [`Buffer`]
/// that knows its element type. It frees itself in stream order, like the
/// `Buffer` it wraps ([`into_buffer`](Self::into_buffer) and
/// [`from_buffer`](Self::from_buffer) convert without copying).
///
/// Borrow it as a [`DeviceView`] (shared, `const T*` for kernels) or a
/// [`DeviceViewMut`] (exclusive, `T*`), whole or in part (`slice`, `split_at`).
///
/// ```no_run
/// # fn f() -> cudars_core::Result<()> {
/// use cudars_core::{Device, DeviceBuffer, StreamOptions};
/// let dev = Device::new(0)?;
/// let s = dev.create_stream(StreamOptions::default())?;
/// let mut y = DeviceBuffer::<f32>::zeroed(&dev, 1024, &s)?;
/// let x = DeviceBuffer::from_host(&dev, &vec![1.5f32; 1024], &s)?;
/// // The second half of `y` takes the first half of `x`.
/// let (_, mut back) = y.split_at_mut(512)?;
/// back.copy_from(x.slice(..512)?, &s)?;
/// let v = y.to_vec(&s)?;
/// assert_eq!((v[0], v[1023]), (0.0, 1.5));
/// # Ok(()) }
/// ```
pub struct DeviceBuffer<T> {
    buf: Buffer,
    len: usize,
    _t: PhantomData<T>,
}

impl<T> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("element", &std::any::type_name::<T>())
            .field("len", &self.len)
            .field("buffer", &self.buf)
            .finish()
    }
}

impl<T: Pod> DeviceBuffer<T> {
    /// `len` elements from the device's memory resource
    /// ([`Device::memory_resource`]), ordered on `stream`. The contents are
    /// whatever the memory held (any bits are a valid `T`); see
    /// [`zeroed`](Self::zeroed).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a length of zero, one whose size overflows,
    /// or a stream of another device; the resource's error.
    pub fn allocate(device: &Device, len: usize, stream: &Stream) -> Result<Self> {
        Self::allocate_in(device.allocation_resource()?, len, stream)
    }

    /// `len` elements from `mr`, ordered on `stream`.
    ///
    /// # Errors
    /// As [`allocate`](Self::allocate).
    pub fn allocate_from(mr: Arc<dyn MemoryResource>, len: usize, stream: &Stream) -> Result<Self> {
        Self::allocate_in(crate::memory::resource::Resource::Shared(mr), len, stream)
    }

    #[inline]
    fn allocate_in(
        mr: crate::memory::resource::Resource,
        len: usize,
        stream: &Stream,
    ) -> Result<Self> {
        let () = NonZeroSize::<T>::OK;
        let Some(size) = len.checked_mul(std::mem::size_of::<T>()) else {
            return Err(overflow_error(len, std::mem::size_of::<T>()));
        };
        let buf = Buffer::allocate_in(mr, size, Some(stream))?;
        Ok(Self {
            buf,
            len,
            _t: PhantomData,
        })
    }

    /// `len` zeroed elements, ordered on `stream`.
    ///
    /// # Errors
    /// As [`allocate`](Self::allocate).
    pub fn zeroed(device: &Device, len: usize, stream: &Stream) -> Result<Self> {
        let mut b = Self::allocate(device, len, stream)?;
        b.buf.fill_u8(0, stream)?;
        Ok(b)
    }

    /// A copy of `src` in new device memory; waits for the copy (so `src` may be
    /// reused at once).
    ///
    /// # Errors
    /// As [`allocate`](Self::allocate) (an empty `src` is refused); the driver's
    /// error.
    pub fn from_host(device: &Device, src: &[T], stream: &Stream) -> Result<Self> {
        let mut b = Self::allocate(device, src.len(), stream)?;
        b.view_mut().copy_from_host(src, stream)?;
        Ok(b)
    }

    /// Takes a byte buffer over as `T`s, without copying.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`], with the buffer back, when its size is not a
    /// whole number of `T`s or its address is not aligned for `T`.
    // The buffer comes back whole on failure, as `Vec`'s `try_into` does.
    #[allow(clippy::result_large_err)]
    pub fn from_buffer(buf: Buffer) -> std::result::Result<Self, (Error, Buffer)> {
        match buf.typed_len::<T>("taking a buffer over as typed elements") {
            Ok(len) => Ok(Self {
                buf,
                len,
                _t: PhantomData,
            }),
            Err(e) => Err((e, buf)),
        }
    }

    /// The byte buffer, without copying.
    pub fn into_buffer(self) -> Buffer {
        self.buf
    }

    /// The byte buffer, borrowed (its size, kind, resource, free stream).
    pub fn as_buffer(&self) -> &Buffer {
        &self.buf
    }

    /// Changes the stream the array is freed on, after making it wait for the
    /// old one ([`Buffer::set_free_stream`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a stream of another device; the driver's
    /// error making the new stream wait.
    pub fn set_free_stream(&mut self, stream: &Stream) -> Result<()> {
        self.buf.set_free_stream(stream)
    }

    /// Makes the work queued next on `stream` wait for every use of the array
    /// queued so far ([`Buffer::order_after_uses`]): needed before reading it
    /// on a stream that is neither its free stream nor the stream of the work
    /// that wrote it. Reads on the free stream need nothing: every use on
    /// another stream through the safe API (a typed launch included) is joined
    /// back to the free stream when queued.
    ///
    /// # Errors
    /// As [`Buffer::order_after_uses`].
    pub fn order_after_uses(&self, stream: &Stream) -> Result<()> {
        self.buf.order_after_uses(stream)
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always `false`: an allocation holds at least one element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device the memory is on.
    pub fn device(&self) -> &Device {
        self.buf.device()
    }

    /// The whole array as a shared view.
    pub fn view(&self) -> DeviceView<'_, T> {
        DeviceView::new_unchecked(&self.buf, self.buf.ptr(), self.len)
    }

    /// The whole array as a mutable view.
    pub fn view_mut(&mut self) -> DeviceViewMut<'_, T> {
        DeviceViewMut::new_unchecked(&self.buf, self.buf.ptr(), self.len)
    }

    /// The elements in `range`, shared.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a range outside the array.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        self.view().slice(range)
    }

    /// The elements in `range`, exclusive.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a range outside the array.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'_, T>> {
        self.view_mut().into_slice(range)
    }

    /// The first `mid` elements and the rest, shared.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `mid` is past the end.
    pub fn split_at(&self, mid: usize) -> Result<(DeviceView<'_, T>, DeviceView<'_, T>)> {
        self.view().split_at(mid)
    }

    /// The first `mid` elements and the rest: two disjoint mutable views.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `mid` is past the end.
    pub fn split_at_mut(
        &mut self,
        mid: usize,
    ) -> Result<(DeviceViewMut<'_, T>, DeviceViewMut<'_, T>)> {
        self.view_mut().into_split_at(mid)
    }

    /// Copies `src` (of equal length) in and waits for the copy.
    ///
    /// # Errors
    /// See [`DeviceViewMut::copy_from_host`].
    pub fn copy_from_host(&mut self, src: &[T], stream: &Stream) -> Result<()> {
        self.view_mut().copy_from_host(src, stream)
    }

    /// Copies the array into `dst` (of equal length) and waits for the copy.
    ///
    /// # Errors
    /// See [`DeviceView::copy_to_host`].
    pub fn copy_to_host(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        self.view().copy_to_host(dst, stream)
    }

    /// The elements in a new vector (a synchronous copy).
    ///
    /// # Errors
    /// See [`DeviceView::to_vec`].
    pub fn to_vec(&self, stream: &Stream) -> Result<Vec<T>> {
        self.view().to_vec(stream)
    }

    /// Copies `src` (a view of equal length, this device's or another's) in,
    /// ordered on `stream`.
    ///
    /// # Errors
    /// See [`DeviceViewMut::copy_from`].
    pub fn copy_from(&mut self, src: DeviceView<'_, T>, stream: &Stream) -> Result<()> {
        self.view_mut().copy_from(src, stream)
    }

    /// Sets every element to `value`, ordered on `stream`.
    ///
    /// # Errors
    /// See [`DeviceViewMut::fill`].
    pub fn fill(&mut self, value: T, stream: &Stream) -> Result<()> {
        self.view_mut().fill(value, stream)
    }
}

/// A typed allocation whose size overflows.
#[cold]
#[inline(never)]
fn overflow_error(len: usize, elem: usize) -> Error {
    Error::invalid(
        "allocating typed device memory",
        format!("{len} elements of {elem} bytes overflow the address space"),
    )
}
