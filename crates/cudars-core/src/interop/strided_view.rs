//! A [`StridedMemoryView`] seen through a [`StridedLayout`]
//! ([`StridedMemoryView::layout`], [`StridedMemoryView::view`]) and whether a
//! device can reach it.
//!
//! Architecture Invariant: a new layout is checked with the one layout check
//! of every view ([`Layout::check`]) against the bytes the old view reaches
//! from the new first element, so a view made here never reaches memory its
//! source did not.

use crate::error::{Error, Result};
use crate::interop::dlpack::{DLDataType, DLDeviceType};
use crate::interop::layout::Layout;
use crate::interop::strided::StridedMemoryView;
use crate::interop::strided_layout::StridedLayout;

impl StridedMemoryView {
    /// Whether the memory can be reached from a device: device, pinned host
    /// and managed memory (not pageable host memory: a view of a slice or an
    /// array interface; `cuda.core`'s `is_device_accessible`).
    pub fn is_device_accessible(&self) -> bool {
        self.device.device_type != DLDeviceType::CPU
    }

    /// The view's layout: its shape, strides and element size, offset 0 (the
    /// view's [`ptr`](Self::ptr) is index `(0, …, 0)`; `cuda.core`'s
    /// `_layout`).
    pub fn layout(&self) -> StridedLayout {
        StridedLayout::of_checked(
            self.layout.shape.clone(),
            self.layout.strides.clone(),
            self.layout.elem,
        )
    }

    /// The same memory seen through `layout` and as `dtype` (`cuda.core`'s
    /// `view(layout=None, dtype=None)`): `None` keeps the view's own; both
    /// `None` gives the view back. The new view's first element is
    /// [`ptr`](Self::ptr) plus the layout's
    /// [`slice_offset_in_bytes`](StridedLayout::slice_offset_in_bytes), so a
    /// slice of [`layout`](Self::layout) views the slice. It takes over what
    /// keeps the memory alive and the read-only flag.
    ///
    /// ```
    /// use cudars_core::{AxisSlice, StridedMemoryView};
    /// let m: Vec<i32> = (0..30).collect(); // 5x6, row-major
    /// let v = StridedMemoryView::from_slice(&m, &[5, 6], None)?;
    /// let rows = v.layout().sliced(&[AxisSlice::Index(2), AxisSlice::range(Some(1), Some(-1), 1)])?;
    /// let row = v.view(Some(&rows), None)?; // m[2, 1:-1]
    /// assert_eq!((row.ptr(), row.shape()), (m[13..].as_ptr() as u64, &[4i64][..]));
    /// # Ok::<(), cudars_core::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: a dtype whose size is not the layout's
    /// element size; a layout that reaches outside the elements this view
    /// reaches (below [`ptr`](Self::ptr), negative strides included, or past
    /// [`extent_bytes`](Self::extent_bytes) from it:
    /// [`InvalidKind::OutOfRange`](crate::InvalidKind::OutOfRange)).
    pub fn view(self, layout: Option<&StridedLayout>, dtype: Option<DLDataType>) -> Result<Self> {
        if layout.is_none() && dtype.is_none() {
            return Ok(self);
        }
        let (ptr, layout, dtype) = self.checked_view(layout, dtype)?;
        let mut this = self;
        this.ptr = ptr;
        this.layout = layout;
        this.dtype = dtype;
        Ok(this)
    }

    /// The address, checked layout and dtype of [`view`](Self::view).
    pub(crate) fn checked_view(
        &self,
        layout: Option<&StridedLayout>,
        dtype: Option<DLDataType>,
    ) -> Result<(u64, Layout, DLDataType)> {
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
        let offset = layout.slice_offset_in_bytes();
        let (lo, _) = layout.offset_bounds();
        if offset < 0 || lo < 0 || offset as u64 > self.layout.span {
            return Err(Error::out_of_range(
                WHAT,
                format!(
                    "the layout reaches offset {lo} (elements) from the view's first element, outside the view's {} bytes",
                    self.layout.span
                ),
            ));
        }
        // The one layout check of every view, against the bytes the view
        // reaches from the new first element.
        let checked = Layout::check(
            layout.shape(),
            Some(layout.strides()),
            dtype,
            Some(self.layout.span - offset as u64),
            WHAT,
        )?;
        Ok((self.ptr + offset as u64, checked, dtype))
    }
}
