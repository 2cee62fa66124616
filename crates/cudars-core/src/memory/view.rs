//! Typed, borrowed views of device memory: [`DeviceView`] (shared) and
//! [`DeviceViewMut`] (exclusive), and the element-typed operations every typed
//! memory type shares.
//!
//! Architecture Invariant: a view is an address, a length and a borrow of the
//! [`Buffer`] it lies in. Every operation goes through a stream and orders the
//! buffer's stream-ordered free after itself (`order_free_after`), exactly as the
//! byte `Buffer`'s own methods do, so a view can never outlive the memory it names,
//! whichever stream it was used on. A mutable view exists only through an
//! exclusive borrow (of a [`DeviceBuffer`](crate::DeviceBuffer), a `Buffer`, or
//! another mutable view, split in two disjoint halves), so two mutable views of
//! one element cannot coexist in safe code.

use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

use bytemuck::Pod;
use cudars_bindings::driver as sys;

use crate::error::{Error, Result};
use crate::memory::buffer::NonZeroSize;
use crate::memory::span::Span;
use crate::{device::Device, memory::buffer::Buffer, stream::Stream};

/// A shared view of `len` elements of type `T` in device memory: a sub-range of a
/// [`Buffer`] or [`DeviceBuffer`](crate::DeviceBuffer). `Copy`; pass it to kernels
/// as a `const T*` ([`KernelArg`](crate::KernelArg), or a typed kernel's
/// [`ConstPtr`](crate::ConstPtr) parameter).
///
/// ```no_run
/// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
/// use cudars_core::DeviceBuffer;
/// let x = DeviceBuffer::from_host(dev, &[1.0f32, 2.0, 3.0, 4.0], s)?;
/// let (head, tail) = x.split_at(2)?;
/// assert_eq!(tail.to_vec(s)?, [3.0, 4.0]);
/// assert_eq!(head.slice(1..)?.to_vec(s)?, [2.0]);
/// # Ok(()) }
/// ```
pub struct DeviceView<'a, T> {
    pub(crate) buf: &'a Buffer,
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    _t: PhantomData<&'a [T]>,
}

impl<T> Clone for DeviceView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for DeviceView<'_, T> {}

/// An exclusive view of `len` elements of type `T` in device memory. Made from a
/// mutable borrow, so no other view of these elements exists while it lives; pass
/// it to kernels as a `T*` (a typed kernel's [`MutPtr`](crate::MutPtr) parameter).
/// [`reborrow`](Self::reborrow) lends it out for one call without giving it up.
///
/// Two mutable views of one buffer cannot be passed to one launch:
///
/// ```compile_fail,E0499
/// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
/// let mut y = cudars_core::DeviceBuffer::<f32>::zeroed(dev, 4, s)?;
/// let a = y.view_mut();
/// let b = y.view_mut(); // error: `y` is already borrowed mutably
/// drop((a, b));
/// # Ok(()) }
/// ```
///
/// nor a shared and a mutable one:
///
/// ```compile_fail,E0502
/// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
/// let mut y = cudars_core::DeviceBuffer::<f32>::zeroed(dev, 4, s)?;
/// let r = y.view();
/// let w = y.view_mut(); // error: `y` is also borrowed as shared
/// drop((r, w));
/// # Ok(()) }
/// ```
pub struct DeviceViewMut<'a, T> {
    pub(crate) buf: &'a Buffer,
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    _t: PhantomData<&'a mut [T]>,
}

// SAFETY: a view is a device address, a length and a shared borrow of a `Buffer`,
// which is `Send + Sync`; every operation goes through a stream. The mutable
// view's exclusivity is a borrow, not thread-affine state.
// Soundness contract: rule 11.
unsafe impl<T: Sync> Send for DeviceView<'_, T> {}
// SAFETY: as above.
// Soundness contract: rule 11.
unsafe impl<T: Sync> Sync for DeviceView<'_, T> {}
// SAFETY: as above.
// Soundness contract: rule 11.
unsafe impl<T: Send> Send for DeviceViewMut<'_, T> {}
// SAFETY: as above.
// Soundness contract: rule 11.
unsafe impl<T: Sync> Sync for DeviceViewMut<'_, T> {}

impl<T> std::fmt::Debug for DeviceView<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_view(f, "DeviceView", self.ptr, self.len, self.buf)
    }
}

impl<T> std::fmt::Debug for DeviceViewMut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_view(f, "DeviceViewMut", self.ptr, self.len, self.buf)
    }
}

fn debug_view(
    f: &mut std::fmt::Formatter<'_>,
    name: &str,
    ptr: sys::CUdeviceptr,
    len: usize,
    buf: &Buffer,
) -> std::fmt::Result {
    f.debug_struct(name)
        .field("ptr", &format_args!("{ptr:#x}"))
        .field("len", &len)
        .field("device", buf.device())
        .finish()
}

/// `range` of a view of `len` elements, as `start..end`, or a typed error.
pub(crate) fn bounds(
    range: impl RangeBounds<usize>,
    len: usize,
    what: &'static str,
) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => Some(s),
        Bound::Excluded(&s) => s.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1),
        Bound::Excluded(&e) => Some(e),
        Bound::Unbounded => Some(len),
    };
    match (start, end) {
        (Some(s), Some(e)) if s <= e && e <= len => Ok((s, e)),
        _ => Err(Error::out_of_range(
            what,
            format!(
                "the range {:?}..{:?} is outside a view of {len} elements",
                range.start_bound(),
                range.end_bound()
            ),
        )),
    }
}

fn split_point(mid: usize, len: usize) -> Result<()> {
    if mid > len {
        return Err(Error::out_of_range(
            "splitting a view",
            format!("the split point {mid} is past the view's {len} elements"),
        ));
    }
    Ok(())
}

/// The accessors every view type shares (borrowed and owned): for a type with
/// `ptr` and `len` fields of `T`s and a `buffer()` method.
macro_rules! view_accessors {
    () => {
        /// The number of elements.
        pub fn len(&self) -> usize {
            self.len
        }

        /// Whether the view has no elements.
        pub fn is_empty(&self) -> bool {
            self.len == 0
        }

        /// The device address of the first element.
        pub fn ptr(&self) -> sys::CUdeviceptr {
            self.ptr
        }

        /// The size in bytes.
        pub fn byte_len(&self) -> usize {
            self.len * std::mem::size_of::<T>()
        }

        /// The device the memory is on.
        pub fn device(&self) -> &Device {
            self.buffer().device()
        }
    };
}
pub(crate) use view_accessors;

macro_rules! shared_view_methods {
    () => {
        view_accessors!();

        /// The buffer the view lies in.
        pub fn buffer(&self) -> &Buffer {
            self.buf
        }

        /// Copies the view into `dst`, whose length must equal the view's, and
        /// waits for the copy.
        ///
        /// # Errors
        /// [`Error::InvalidArgument`] for another length or a stream of another
        /// device; the driver's error.
        pub fn copy_to_host(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
            let span = self.span();
            span.check_len(dst.len(), "copying a view to host memory")?;
            // SAFETY: `dst` holds the view's bytes, writable (`Pod`: any bits are a
            // valid `T`); the stream is drained before `dst` is handed back.
            unsafe { span.download(dst.as_mut_ptr().cast(), stream) }?;
            stream.drain()
        }

        /// The view's elements in a new vector (a synchronous copy).
        ///
        /// # Errors
        /// As [`copy_to_host`](Self::copy_to_host).
        pub fn to_vec(&self, stream: &Stream) -> Result<Vec<T>> {
            let mut v = vec![T::zeroed(); self.len];
            self.copy_to_host(&mut v, stream)?;
            Ok(v)
        }

        pub(crate) fn span(&self) -> Span<'_> {
            Span {
                buf: self.buf,
                ptr: self.ptr,
                len: self.len,
                elem: std::mem::size_of::<T>(),
            }
        }
    };
}

impl<'a, T: Pod> DeviceView<'a, T> {
    /// A view of `len` elements at `ptr`, inside `buf` (the caller checked).
    pub(crate) fn new_unchecked(buf: &'a Buffer, ptr: sys::CUdeviceptr, len: usize) -> Self {
        let () = NonZeroSize::<T>::OK;
        Self {
            buf,
            ptr,
            len,
            _t: PhantomData,
        }
    }

    shared_view_methods!();

    /// The elements in `range` (any range of `usize`), as a view of the same
    /// lifetime.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a range outside the view.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'a, T>> {
        let (s, e) = bounds(range, self.len, "slicing a view")?;
        Ok(Self::new_unchecked(self.buf, self.elem_ptr(s), e - s))
    }

    /// The first `mid` elements and the rest.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `mid` is past the end.
    pub fn split_at(&self, mid: usize) -> Result<(DeviceView<'a, T>, DeviceView<'a, T>)> {
        split_point(mid, self.len)?;
        Ok((
            Self::new_unchecked(self.buf, self.ptr, mid),
            Self::new_unchecked(self.buf, self.elem_ptr(mid), self.len - mid),
        ))
    }

    fn elem_ptr(&self, i: usize) -> sys::CUdeviceptr {
        self.ptr + (i * std::mem::size_of::<T>()) as u64
    }
}

impl<'a, T: Pod> DeviceViewMut<'a, T> {
    /// A mutable view of `len` elements at `ptr`, inside `buf`, which the caller
    /// borrowed exclusively (and checked the range of).
    pub(crate) fn new_unchecked(buf: &'a Buffer, ptr: sys::CUdeviceptr, len: usize) -> Self {
        let () = NonZeroSize::<T>::OK;
        Self {
            buf,
            ptr,
            len,
            _t: PhantomData,
        }
    }

    shared_view_methods!();

    /// A shared view of the same elements, for as long as this one is borrowed.
    pub fn as_view(&self) -> DeviceView<'_, T> {
        DeviceView::new_unchecked(self.buf, self.ptr, self.len)
    }

    /// This view again, for a shorter borrow: lend it to one call (a launch, a
    /// copy) and keep it.
    pub fn reborrow(&mut self) -> DeviceViewMut<'_, T> {
        DeviceViewMut::new_unchecked(self.buf, self.ptr, self.len)
    }

    /// The elements in `range`, for as long as this view is borrowed (as indexing
    /// a `&mut [T]` reborrows it).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a range outside the view.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'_, T>> {
        self.reborrow().into_slice(range)
    }

    /// The elements in `range`, consuming this view and keeping its lifetime.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a range outside the view.
    pub fn into_slice(self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'a, T>> {
        let (s, e) = bounds(range, self.len, "slicing a view")?;
        let ptr = self.ptr + (s * std::mem::size_of::<T>()) as u64;
        Ok(Self::new_unchecked(self.buf, ptr, e - s))
    }

    /// The first `mid` elements and the rest: two disjoint mutable views, for as
    /// long as this one is borrowed.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `mid` is past the end.
    pub fn split_at_mut(
        &mut self,
        mid: usize,
    ) -> Result<(DeviceViewMut<'_, T>, DeviceViewMut<'_, T>)> {
        self.reborrow().into_split_at(mid)
    }

    /// Splits into the first `mid` elements and the rest, consuming this view and
    /// keeping its lifetime.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `mid` is past the end.
    pub fn into_split_at(self, mid: usize) -> Result<(DeviceViewMut<'a, T>, DeviceViewMut<'a, T>)> {
        split_point(mid, self.len)?;
        let ptr = self.ptr + (mid * std::mem::size_of::<T>()) as u64;
        Ok((
            Self::new_unchecked(self.buf, self.ptr, mid),
            Self::new_unchecked(self.buf, ptr, self.len - mid),
        ))
    }

    /// Copies `src`, whose length must equal the view's, into the view and waits
    /// for the copy (so `src` may be reused at once).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another length or a stream of another
    /// device; the driver's error.
    pub fn copy_from_host(&mut self, src: &[T], stream: &Stream) -> Result<()> {
        let span = self.span();
        span.check_len(src.len(), "copying host memory into a view")?;
        // SAFETY: `src` holds the view's bytes; the stream is drained before `src`
        // is handed back.
        unsafe { span.upload(src.as_ptr().cast(), stream) }?;
        stream.drain()
    }

    /// Copies `src` (a view of equal length, on this device or another) into this
    /// view, ordered on `stream` (asynchronous). Between devices it is a peer copy;
    /// `stream` may then belong to either device.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another length or a stream of neither
    /// device; the driver's error.
    pub fn copy_from(&mut self, src: DeviceView<'_, T>, stream: &Stream) -> Result<()> {
        let dst = self.span();
        dst.check_len(src.len, "copying between views")?;
        crate::memory::span::copy_device(dst.buf, dst.ptr, src.buf, src.ptr, dst.bytes(), stream)?;
        crate::memory::buffer::order_frees_after([dst.buf, src.buf].into_iter(), stream)
    }

    /// Sets every element to `value`, ordered on `stream`. Elements of 1, 2 and 4
    /// bytes are one driver memset; 8-byte elements (`f64`, `u64`) are two strided
    /// 4-byte memsets; other sizes do not build (checked when the call is compiled
    /// to code).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a stream of another device; the driver's
    /// error.
    pub fn fill(&mut self, value: T, stream: &Stream) -> Result<()> {
        const {
            assert!(
                matches!(std::mem::size_of::<T>(), 1 | 2 | 4 | 8),
                "fill takes elements of 1, 2, 4 or 8 bytes"
            );
        }
        self.span().fill(bytemuck::bytes_of(&value), stream)
    }
}

// Typed views of a whole buffer: here, beside the view types, so that
// `buffer` names no view.
impl Buffer {
    /// The whole buffer as a shared view of `T`s.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the size is not a multiple of `T`'s or the
    /// address is not aligned for `T`.
    pub fn view<T: Pod>(&self) -> Result<DeviceView<'_, T>> {
        let len = self.typed_len::<T>("viewing a buffer as typed elements")?;
        Ok(DeviceView::new_unchecked(self, self.ptr(), len))
    }

    /// The whole buffer as a mutable view of `T`s.
    ///
    /// # Errors
    /// As [`view`](Self::view).
    pub fn view_mut<T: Pod>(&mut self) -> Result<DeviceViewMut<'_, T>> {
        let len = self.typed_len::<T>("viewing a buffer as typed elements")?;
        Ok(DeviceViewMut::new_unchecked(self, self.ptr(), len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_checked_without_overflow() {
        assert_eq!(bounds(.., 10, "t").unwrap(), (0, 10));
        assert_eq!(bounds(2..5, 10, "t").unwrap(), (2, 5));
        assert_eq!(bounds(2..=9, 10, "t").unwrap(), (2, 10));
        assert_eq!(bounds(10.., 10, "t").unwrap(), (10, 10));
        assert!(bounds(2..=10, 10, "t").is_err());
        let (hi, lo) = (5, 4);
        assert!(bounds(hi..lo, 10, "t").is_err());
        assert!(bounds(0..=usize::MAX, 10, "t").is_err());
        assert!(bounds((Bound::Excluded(usize::MAX), Bound::Unbounded), 10, "t").is_err());
        let e = bounds(3..11, 10, "slicing a view").unwrap_err().to_string();
        assert!(
            e.contains("slicing a view") && e.contains("10 elements"),
            "{e}"
        );
        assert!(split_point(10, 10).is_ok() && split_point(11, 10).is_err());
    }
}
