//! A [`StridedMemoryView`] seen through a [`StridedLayout`]
//! ([`StridedMemoryView::layout`], [`StridedMemoryView::view`]) and whether a
//! device can reach it.
//!
//! Architecture Invariant: a new layout is checked with the one layout check
//! of every view ([`Layout::check`]) against the bytes the old view reaches
//! from the new first element, so a view made here never reaches memory its
//! source did not.

use bytemuck::Pod;

use crate::error::{Error, Result};
use crate::interop::dlpack::{DLDataType, DLDeviceType, DLPackDType};
use crate::interop::layout::Layout;
use crate::interop::strided::StridedMemoryView;
use crate::interop::strided_layout::StridedLayout;
use crate::memory::view::DeviceViewMut;

impl StridedMemoryView {
    /// Whether the memory can be reached from a device: device, pinned host
    /// and managed memory (not pageable host memory: a view of a slice or an
    /// array interface; `cuda.core`'s `is_device_accessible`).
    pub fn is_device_accessible(&self) -> bool {
        self.device.device_type != DLDeviceType::CPU
    }

    /// The view's layout: its shape, strides, element size and offset (in
    /// elements) from the start of the memory the view was first made of:
    /// 0 for a view made by a constructor, the layout's for one made by
    /// [`view`](Self::view) (`cuda.core`'s `_layout`). [`ptr`](Self::ptr) is
    /// that start plus the offset's bytes.
    pub fn layout(&self) -> StridedLayout {
        StridedLayout::of_checked(
            self.layout.shape.clone(),
            self.layout.strides.clone(),
            self.layout.elem,
            self.slice_offset,
        )
    }

    /// The same memory seen through `layout` and as `dtype` (`cuda.core`'s
    /// `view(layout=None, dtype=None)`): `None` keeps the view's own; both
    /// `None` gives the view back. The layout is relative to the start of the
    /// memory the first view was made of (its [`ptr`](Self::ptr)): the new
    /// view's first element is that start plus the layout's
    /// [`slice_offset_in_bytes`](StridedLayout::slice_offset_in_bytes), so a
    /// slice of [`layout`](Self::layout) views the slice. Every element must
    /// lie in the bytes the first view reached, and for a view of another
    /// library's tensor (DLPack, an array interface) with gaps between its
    /// elements, which the producer did not vouch for, only the view's own
    /// layout is taken (with another dtype of the same size). The new view takes over what
    /// keeps the memory alive, the device and the read-only flag.
    ///
    /// ```
    /// use cudars_core::{AxisSlice, StridedMemoryView};
    /// let m: Vec<i32> = (0..30).collect(); // 5x6, row-major
    /// let v = StridedMemoryView::from_slice(&m, &[5, 6], None)?;
    /// let row = v.layout().sliced(&[AxisSlice::Index(2), AxisSlice::range(Some(1), Some(-1), 1)])?;
    /// let row = v.view(Some(&row), None)?; // m[2, 1:-1]
    /// assert_eq!((row.ptr(), row.shape()), (m[13..].as_ptr() as u64, &[4i64][..]));
    /// assert_eq!(row.layout().slice_offset(), 13);
    /// # Ok::<(), cudars_core::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: a dtype whose size is not the layout's
    /// element size; a layout that reaches outside the bytes of the first
    /// view (below its start, negative strides included: views have none, or
    /// past its end: [`InvalidKind::OutOfRange`](crate::InvalidKind::OutOfRange)).
    pub fn view(self, layout: Option<&StridedLayout>, dtype: Option<DLDataType>) -> Result<Self> {
        if layout.is_none() && dtype.is_none() {
            return Ok(self);
        }
        let (ptr, checked, dtype, offset) = self.checked_view(layout, dtype)?;
        let mut this = self;
        this.ptr = ptr;
        this.layout = checked;
        this.dtype = dtype;
        this.slice_offset = offset;
        Ok(this)
    }

    /// The address, checked layout, dtype and offset of [`view`](Self::view).
    fn checked_view(
        &self,
        layout: Option<&StridedLayout>,
        dtype: Option<DLDataType>,
    ) -> Result<(u64, Layout, DLDataType, i64)> {
        const WHAT: &str = "viewing a strided view through another layout";
        let own;
        let layout = match layout {
            Some(l) => l,
            None => {
                own = self.layout();
                &own
            }
        };
        let dtype = dtype.unwrap_or(self.dtype);
        if dtype.size_bytes() != Some(layout.itemsize()) {
            return Err(Error::invalid(
                WHAT,
                format!(
                    "The dtype's itemsize ({:?} bytes) does not match the layout's itemsize ({}).",
                    dtype.size_bytes(),
                    layout.itemsize()
                ),
            ));
        }
        // The first view's start: `slice_offset` elements before `ptr` (both
        // inside the first view's bytes, checked when this view was made).
        let own_bytes = self.slice_offset as u64 * self.layout.elem as u64;
        let base = self.ptr - own_bytes;
        // The view's own elements (a new dtype of the same size) are always
        // its to give; another layout must stay inside the first view's
        // bytes that are.
        let own_layout = *layout == self.layout();
        let reach = if own_layout {
            own_bytes + self.layout.span
        } else {
            self.reach
        };
        let offset = layout.slice_offset_in_bytes();
        let (lo, _) = layout.offset_bounds();
        if offset < 0 || lo < 0 || offset as u64 > reach {
            return Err(Error::out_of_range(
                WHAT,
                format!(
                    "the layout reaches offset {lo} (elements), outside the {reach} bytes of the \
                     memory viewed (a producer's tensor with gaps between its elements is seen \
                     only through its own layout)"
                ),
            ));
        }
        // The one layout check of every view, against the bytes left from the
        // new first element.
        let checked = Layout::check(
            layout.shape(),
            Some(layout.strides()),
            dtype,
            Some(reach - offset as u64),
            WHAT,
        )?;
        Ok((base + offset as u64, checked, dtype, layout.slice_offset()))
    }

    /// A writable typed view of the elements of a contiguous (row-major) view
    /// of this crate's memory, for a typed kernel or a copy to write: the
    /// mutable counterpart of
    /// [`as_device_view`](Self::as_device_view), lent for as long as the view
    /// is borrowed mutably. Only a view that may be written and is the one
    /// handle to its allocation lends one (made with
    /// [`from_buffer`](Self::from_buffer) or [`from_view`](Self::from_view)
    /// from an `Arc` whose other clones are gone), so nothing else can read or
    /// write the memory while the typed view lives.
    ///
    /// ```no_run
    /// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// use std::sync::Arc;
    /// use cudars_core::{DeviceBuffer, StridedMemoryView};
    /// let m = Arc::new(DeviceBuffer::<f32>::zeroed(dev, 12, s)?);
    /// let mut v = StridedMemoryView::from_view(&m.shared_view(), &[3, 4], None)?;
    /// drop(m); // the view holds the allocation's only handle
    /// v.as_device_view_mut::<f32>()?.copy_from_host(&[1.0; 12], s)?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a read-only view, `T` other than the
    /// view's dtype, a layout that is not row-major contiguous, an address not
    /// aligned for `T`, or an allocation other handles share;
    /// [`Error::Unsupported`] for a view of memory this crate did not allocate
    /// (a DLPack tensor, an array interface, a host slice: use its strided
    /// copies, [`copy_from_host`](Self::copy_from_host)).
    pub fn as_device_view_mut<T: DLPackDType + Pod>(&mut self) -> Result<DeviceViewMut<'_, T>> {
        const WHAT: &str = "viewing a strided view as a writable typed device view";
        if self.readonly {
            return Err(Error::invalid(WHAT, "the view is read-only"));
        }
        if T::DTYPE != self.dtype {
            return Err(Error::invalid(
                WHAT,
                format!(
                    "the view's elements are {:?}, not {:?}",
                    self.dtype,
                    T::DTYPE
                ),
            ));
        }
        if !self.is_c_contiguous() {
            return Err(Error::invalid(
                WHAT,
                format!(
                    "the layout (shape {:?}, strides {:?}) is not row-major contiguous",
                    self.shape(),
                    self.strides()
                ),
            ));
        }
        if self.ptr % std::mem::align_of::<T>() as u64 != 0 {
            return Err(Error::invalid(
                WHAT,
                format!(
                    "the address {:#x} is not aligned for the elements",
                    self.ptr
                ),
            ));
        }
        let len = usize::try_from(self.len())
            .map_err(|_| Error::invalid(WHAT, "the view has more elements than the host counts"))?;
        let ptr = self.ptr;
        if self.shared_buffer().is_none() {
            return Err(Error::unsupported(
                WHAT,
                "the view is of memory this crate did not allocate (a DLPack tensor, an array \
                 interface or a host slice): write it with `copy_from_host` instead",
            ));
        }
        let Some(buffer) = self.exclusive_buffer() else {
            return Err(Error::invalid(
                WHAT,
                "other handles share the view's allocation: drop them (or write through \
                 the shared handle: `ArcView::copy_from_host`, `fill`)",
            ));
        };
        // Soundness contract: rule 1. The view holds the allocation's one
        // handle and is borrowed mutably for the typed view's life, so nothing
        // else reaches the memory meanwhile. The layout was checked to lie in
        // the buffer when the view was made (and by `view`), and a contiguous
        // one covers exactly `len` elements from `ptr`.
        Ok(DeviceViewMut::new_unchecked(buffer, ptr, len))
    }
}
