//! [`StridedLayout`]: the shape, strides (in elements), element size and
//! offset of a strided array, with the transformations `cuda.core`'s
//! `_StridedLayout` (`cuda.core.utils.StridedLayout`) has: permuting,
//! slicing, reshaping, flattening, squeezing, broadcasting, densifying and
//! repacking. A pure value: nothing here touches memory;
//! [`StridedMemoryView::view`](crate::StridedMemoryView::view) checks a
//! layout against the memory it is to describe.
//!
//! Architecture Invariant: every constructor and transformation keeps
//! `shape.len() == strides.len() <= STRIDED_LAYOUT_MAX_NDIM`, extents not negative, an
//! element size above zero, and every offset the layout can reach (and its
//! element count) within `i64`; arithmetic that would overflow is an error,
//! never a wrap.

use crate::error::{Error, InvalidKind, Result};

/// The most dimensions a layout may have (as `cuda.core`).
pub const STRIDED_LAYOUT_MAX_NDIM: usize = 64;

/// The order of strides for a dense layout ([`StridedLayout::dense`],
/// [`StridedLayout::to_dense`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StrideOrder {
    /// Row-major: the last axis has stride 1 (`cuda.core`'s `'C'`).
    C,
    /// Column-major: the first axis has stride 1 (`'F'`).
    F,
    /// The order of the layout converted (`'K'`; only for
    /// [`to_dense`](StridedLayout::to_dense)).
    Keep,
    /// A permutation of the axes, from the largest stride to the smallest:
    /// the last axis named has stride 1 (`cuda.core`'s tuple).
    Axes(Vec<usize>),
}

/// What one axis of [`StridedLayout::sliced`] takes: an index (the axis is
/// dropped) or a range with a step, as Python's `a[i]` and `a[start:stop:step]`
/// (negative values count from the end; a range is clipped to the extent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AxisSlice {
    /// One index: the axis is removed.
    Index(i64),
    /// `start:stop:step`; `None` for an omitted bound.
    Range {
        /// The first index (`None`: the start, or the end for a negative step).
        start: Option<i64>,
        /// One past the last index (`None`: past the end, or before the start
        /// for a negative step).
        stop: Option<i64>,
        /// The step; not zero.
        step: i64,
    },
}

impl AxisSlice {
    /// The whole axis (`:`).
    pub const ALL: Self = Self::Range {
        start: None,
        stop: None,
        step: 1,
    };

    /// `start:stop:step`.
    pub fn range(start: Option<i64>, stop: Option<i64>, step: i64) -> Self {
        Self::Range { start, stop, step }
    }
}

/// The shape, strides (in elements), element size and offset (in elements:
/// where index `(0, …, 0)` lies) of a strided array: `cuda.core`'s
/// `_StridedLayout`. Equal layouts have the same shape, strides, element size
/// and offset.
///
/// ```
/// use cudars_core::{AxisSlice, StrideOrder, StridedLayout};
/// let l = StridedLayout::dense(&[5, 3, 7], 1, &StrideOrder::C)?;
/// assert_eq!(l.strides(), &[21, 7, 1]);
/// let t = l.sliced(&[AxisSlice::ALL, AxisSlice::Index(1)])?; // l[:, 1]
/// assert_eq!((t.shape(), t.strides(), t.slice_offset()), (&[5, 7][..], &[21, 1][..], 7));
/// assert_eq!(l.permuted(&[2, 0, 1])?.stride_order(), vec![1, 2, 0]);
/// # Ok::<(), cudars_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StridedLayout {
    pub(crate) shape: Vec<i64>,
    pub(crate) strides: Vec<i64>,
    pub(crate) itemsize: usize,
    pub(crate) offset: i64,
}

const WHAT: &str = "computing a strided layout";

pub(super) fn bad(message: impl Into<String>) -> Error {
    Error::invalid(WHAT, message)
}

pub(super) fn range_err(message: impl Into<String>) -> Error {
    Error::invalid_as(InvalidKind::OutOfRange, WHAT, message)
}

pub(super) fn mul(a: i64, b: i64) -> Result<i64> {
    a.checked_mul(b)
        .ok_or_else(|| range_err(format!("{a} * {b} overflows 64 bits")))
}

fn add(a: i64, b: i64) -> Result<i64> {
    a.checked_add(b)
        .ok_or_else(|| range_err(format!("{a} + {b} overflows 64 bits")))
}

/// `axis` in `[-n, n)` made non-negative, or `None`.
pub(super) fn normalize(axis: i64, n: i64) -> Option<usize> {
    if axis < -n || axis >= n {
        None
    } else if axis < 0 {
        Some((axis + n) as usize)
    } else {
        Some(axis as usize)
    }
}

fn volume_of(shape: &[i64]) -> Result<i64> {
    shape.iter().try_fold(1i64, |v, &e| mul(v, e))
}

/// An element size above 0 whose multiples by an `i64` offset are `i64`s.
pub(super) fn check_itemsize(itemsize: usize) -> Result<()> {
    if itemsize == 0 {
        return Err(bad("itemsize must be positive"));
    }
    if i64::try_from(itemsize).is_err() {
        return Err(range_err(format!("itemsize {itemsize} past i64")));
    }
    Ok(())
}

pub(super) fn check_shape(shape: &[i64]) -> Result<()> {
    if shape.len() > STRIDED_LAYOUT_MAX_NDIM {
        return Err(range_err(format!(
            "{} dimensions, at most {STRIDED_LAYOUT_MAX_NDIM}",
            shape.len()
        )));
    }
    if shape.iter().any(|&e| e < 0) {
        return Err(bad("Extents must be non-negative"));
    }
    volume_of(shape).map(drop)
}

/// Dense strides for `shape`, the axes in `order` from the largest stride to
/// the smallest; all zero when the volume is 0 (as `cuda.core`).
fn dense_strides(shape: &[i64], order: &[usize]) -> Result<Vec<i64>> {
    let mut strides = vec![0; shape.len()];
    let mut seen = 0u64;
    let mut stride = 1i64;
    if order.len() != shape.len() {
        return Err(bad(format!(
            "the stride order must have the same length as the number of dimensions, got {} for {}D",
            order.len(),
            shape.len()
        )));
    }
    for &axis in order.iter().rev() {
        if axis >= shape.len() {
            return Err(range_err(format!(
                "Invalid stride order: axis {axis} out of range for {}D tensor",
                shape.len()
            )));
        }
        if seen & (1 << axis) != 0 {
            return Err(bad(format!(
                "The stride order must be a permutation. Axis {axis} appears multiple times."
            )));
        }
        seen |= 1 << axis;
        strides[axis] = stride;
        stride = mul(stride, shape[axis])?;
    }
    if stride == 0 {
        strides.iter_mut().for_each(|s| *s = 0);
    }
    Ok(strides)
}

impl StridedLayout {
    /// A layout already checked (a view's: extents, strides, offset and
    /// span within 64 bits).
    pub(crate) fn of_checked(
        shape: Vec<i64>,
        strides: Vec<i64>,
        itemsize: usize,
        offset: i64,
    ) -> Self {
        Self {
            shape,
            strides,
            itemsize,
            offset,
        }
    }

    /// A layout of `shape` and `strides` (in elements; `None` for row-major)
    /// of `itemsize`-byte elements, offset 0 (`cuda.core`'s
    /// `_StridedLayout(shape, strides, itemsize)`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an element size of 0, negative extents,
    /// as many strides as extents, more than [`STRIDED_LAYOUT_MAX_NDIM`] dimensions, or an
    /// element count or offset past `i64`
    /// ([`InvalidKind::OutOfRange`]).
    pub fn new(shape: &[i64], strides: Option<&[i64]>, itemsize: usize) -> Result<Self> {
        let Some(strides) = strides else {
            return Self::dense(shape, itemsize, &StrideOrder::C);
        };
        check_itemsize(itemsize)?;
        check_shape(shape)?;
        if strides.len() != shape.len() {
            return Err(bad(format!(
                "{} extents and {} strides",
                shape.len(),
                strides.len()
            )));
        }
        let l = Self {
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            itemsize,
            offset: 0,
        };
        l.checked_bounds()?;
        Ok(l)
    }

    /// As [`new`](Self::new), with strides in bytes (NumPy's), divided by
    /// `itemsize` (`cuda.core`'s `divide_strides=True`).
    ///
    /// # Errors
    /// As [`new`](Self::new); a byte stride that is not a whole number of
    /// elements.
    pub fn from_byte_strides(shape: &[i64], byte_strides: &[i64], itemsize: usize) -> Result<Self> {
        let size = i64::try_from(itemsize).map_err(|_| range_err("itemsize past i64"))?;
        if size == 0 {
            return Err(bad("itemsize must be positive"));
        }
        let strides = byte_strides
            .iter()
            .map(|&s| {
                if s % size == 0 {
                    Ok(s / size)
                } else {
                    Err(bad(format!(
                        "The stride {s} is not divisible by the itemsize {itemsize}"
                    )))
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Self::new(shape, Some(&strides), itemsize)
    }

    /// A dense layout (elements packed, offset 0) of `shape` in `order`
    /// (`cuda.core`'s `_StridedLayout.dense`).
    ///
    /// # Errors
    /// As [`new`](Self::new); [`StrideOrder::Keep`], or axes that are not a
    /// permutation of the dimensions.
    pub fn dense(shape: &[i64], itemsize: usize, order: &StrideOrder) -> Result<Self> {
        check_itemsize(itemsize)?;
        check_shape(shape)?;
        let n = shape.len();
        let axes: Vec<usize> = match order {
            StrideOrder::C => (0..n).collect(),
            StrideOrder::F => (0..n).rev().collect(),
            StrideOrder::Axes(a) => a.clone(),
            StrideOrder::Keep => {
                return Err(bad(
                    "The stride_order must be 'C', 'F', or a permutation tuple. Got: 'K'",
                ));
            }
        };
        Ok(Self {
            strides: dense_strides(shape, &axes)?,
            shape: shape.to_vec(),
            itemsize,
            offset: 0,
        })
    }

    /// The number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// The extents.
    pub fn shape(&self) -> &[i64] {
        &self.shape
    }

    /// The strides, in elements.
    pub fn strides(&self) -> &[i64] {
        &self.strides
    }

    /// The strides, in bytes (each fits: every offset the layout reaches
    /// does).
    pub fn strides_in_bytes(&self) -> Vec<i64> {
        let size = self.itemsize as i64;
        self.strides
            .iter()
            .map(|&s| s.saturating_mul(size))
            .collect()
    }

    /// The size of one element, in bytes.
    pub fn itemsize(&self) -> usize {
        self.itemsize
    }

    /// The offset, in elements, of index `(0, …, 0)` (set by slicing).
    pub fn slice_offset(&self) -> i64 {
        self.offset
    }

    /// The offset of index `(0, …, 0)` in bytes (saturated, for offsets that
    /// do not fit).
    pub fn slice_offset_in_bytes(&self) -> i64 {
        self.offset.saturating_mul(self.itemsize as i64)
    }

    /// The number of elements.
    pub fn volume(&self) -> i64 {
        // Within `i64` for every layout made here; a view's layout may count
        // more elements (zero strides), saturated.
        self.shape
            .iter()
            .try_fold(1i64, |v, &e| v.checked_mul(e))
            .unwrap_or(i64::MAX)
    }

    /// The axes from the largest stride (by magnitude) to the smallest; ties
    /// go to the larger extent, then to the lower axis (`cuda.core`'s
    /// `stride_order`).
    pub fn stride_order(&self) -> Vec<usize> {
        let mut axes: Vec<usize> = (0..self.ndim()).collect();
        axes.sort_by(|&i, &j| {
            let (si, sj) = (
                self.strides[i].unsigned_abs(),
                self.strides[j].unsigned_abs(),
            );
            sj.cmp(&si)
                .then(self.shape[j].cmp(&self.shape[i]))
                .then(i.cmp(&j))
        });
        axes
    }

    fn contiguous_in(&self, axes: impl Iterator<Item = usize>) -> bool {
        if self.volume() == 0 {
            return true;
        }
        let mut stride = 1i64;
        for axis in axes {
            let extent = self.shape[axis];
            if extent != 1 {
                if self.strides[axis] != stride {
                    return false;
                }
                stride = stride.saturating_mul(extent);
            }
        }
        true
    }

    /// Whether the elements are packed in row-major order (extents of 1
    /// aside; any empty layout is).
    pub fn is_contiguous_c(&self) -> bool {
        self.contiguous_in((0..self.ndim()).rev())
    }

    /// Whether the elements are packed in column-major order.
    pub fn is_contiguous_f(&self) -> bool {
        self.contiguous_in(0..self.ndim())
    }

    /// Whether the elements are packed in some order of the axes.
    pub fn is_contiguous_any(&self) -> bool {
        self.contiguous_in(self.stride_order().into_iter().rev())
    }

    /// Contiguous and at offset 0: the elements fill `[0, volume)`.
    pub fn is_dense(&self) -> bool {
        self.offset == 0 && self.is_contiguous_any()
    }

    /// Whether each index reaches its own element (false for broadcasts; as
    /// `cuda.core`, may say false for some unique layouts made by hand).
    pub fn is_unique(&self) -> bool {
        if self.volume() == 0 {
            return true;
        }
        let mut reach = 0i64;
        for axis in self.stride_order().into_iter().rev() {
            let extent = self.shape[axis];
            if extent != 1 {
                let stride = self.strides[axis].saturating_abs();
                if reach >= stride {
                    return false;
                }
                reach = reach.saturating_add(stride.saturating_mul(extent - 1));
            }
        }
        true
    }

    pub(crate) fn checked_bounds(&self) -> Result<(i64, i64)> {
        if self.shape.contains(&0) {
            return Ok((0, -1));
        }
        let (mut lo, mut hi) = (self.offset, self.offset);
        for (&e, &s) in self.shape.iter().zip(&self.strides) {
            let reach = mul(s, e - 1)?;
            if reach < 0 {
                lo = add(lo, reach)?;
            } else {
                hi = add(hi, reach)?;
            }
        }
        Ok((lo, hi))
    }

    /// The lowest and highest offsets (in elements) the layout reaches;
    /// `(0, -1)` when it has no elements.
    pub fn offset_bounds(&self) -> (i64, i64) {
        // Checked by every constructor.
        self.checked_bounds().unwrap_or((0, -1))
    }

    /// The bytes memory must hold for every element to lie in it, from offset
    /// 0: `(max_offset + 1) * itemsize`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] ([`InvalidKind::OutOfRange`]) when an
    /// element lies below offset 0, or the size does not fit in 64 bits.
    pub fn required_size_in_bytes(&self) -> Result<u64> {
        let (lo, hi) = self.offset_bounds();
        if lo < 0 {
            return Err(range_err(format!(
                "the layout reaches offset {lo}, below the start of the memory"
            )));
        }
        Ok(mul(add(hi, 1)?, self.itemsize as i64)? as u64)
    }

    fn with(&self, shape: Vec<i64>, strides: Vec<i64>, offset: i64) -> Result<Self> {
        let l = Self {
            shape,
            strides,
            itemsize: self.itemsize,
            offset,
        };
        check_shape(&l.shape)?;
        l.checked_bounds()?;
        Ok(l)
    }

    /// The axes reordered: axis `i` of the result is axis `axes[i]` (negative
    /// values count from the end; NumPy's `transpose`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: not one axis per dimension, an axis out of
    /// range ([`InvalidKind::OutOfRange`]) or named twice.
    pub fn permuted(&self, axes: &[i64]) -> Result<Self> {
        let n = self.ndim();
        if axes.len() != n {
            return Err(bad(format!(
                "Permutation must have the same length as the number of dimensions, got {} for {n}D tensor.",
                axes.len()
            )));
        }
        let mut seen = 0u64;
        let (mut shape, mut strides) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for &a in axes {
            let axis = normalize(a, n as i64).ok_or_else(|| {
                range_err(format!(
                    "Invalid permutation: axis {a} out of range for {n}D tensor"
                ))
            })?;
            if seen & (1 << axis) != 0 {
                return Err(bad(format!(
                    "Invalid permutation: axis {a} appears multiple times."
                )));
            }
            seen |= 1 << axis;
            shape.push(self.shape[axis]);
            strides.push(self.strides[axis]);
        }
        self.with(shape, strides, self.offset)
    }

    /// The layout of `a[slices]` (Python's indexing, one entry per leading
    /// axis; the axes not named are kept whole): an index removes its axis, a
    /// range keeps it with the range's extent and the stride times the step.
    /// An empty result has all strides 0.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: more entries than dimensions or an index
    /// out of range ([`InvalidKind::OutOfRange`]), a step of 0.
    pub fn sliced(&self, slices: &[AxisSlice]) -> Result<Self> {
        let n = self.ndim();
        if slices.len() > n {
            return Err(range_err(format!(
                "The number of slices ({}) is greater than the number of dimensions ({n}).",
                slices.len()
            )));
        }
        let (mut shape, mut strides) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let mut offset = self.offset;
        let mut empty = false;
        for (i, s) in slices.iter().enumerate() {
            let (extent, stride) = (self.shape[i], self.strides[i]);
            match *s {
                AxisSlice::Index(idx) => {
                    let at = normalize(idx, extent).ok_or_else(|| {
                        range_err(format!(
                            "Invalid index: {idx} out of range for axis {i} with extent {extent}"
                        ))
                    })?;
                    offset = add(offset, mul(at as i64, stride)?)?;
                }
                AxisSlice::Range { start, stop, step } => {
                    if step == 0 {
                        return Err(bad("slice step cannot be zero"));
                    }
                    let (start, len) = adjust(extent, start, stop, step);
                    if len > 0 {
                        offset = add(offset, mul(start, stride)?)?;
                    } else {
                        empty = true;
                    }
                    shape.push(len);
                    strides.push(mul(stride, step)?);
                }
            }
        }
        shape.extend_from_slice(&self.shape[slices.len()..]);
        strides.extend_from_slice(&self.strides[slices.len()..]);
        if empty {
            strides.iter_mut().for_each(|s| *s = 0);
        }
        self.with(shape, strides, offset)
    }

    /// The axes `i` whose stride is extent times stride of axis `i + 1` and
    /// so may merge into it (bit `i + 1` set: `cuda.core`'s
    /// `flattened_axis_mask`); masks of layouts of as many dimensions combine
    /// with `&`.
    pub fn flattened_axis_mask(&self) -> u64 {
        let mut mask = 0u64;
        for i in 1..self.ndim() {
            if Some(self.strides[i - 1]) == self.strides[i].checked_mul(self.shape[i]) {
                mask |= 1 << i;
            }
        }
        mask
    }

    /// Neighbouring axes merged wherever their strides allow (in row-major
    /// index order): the same elements in the same order, in fewer
    /// dimensions.
    pub fn flattened(&self) -> Self {
        self.flattened_masked(u64::MAX)
    }

    /// As [`flattened`](Self::flattened), merging axis `i` into axis `i - 1`
    /// only where bit `i` of `mask` is set.
    pub fn flattened_masked(&self, mask: u64) -> Self {
        if self.ndim() == 0 {
            // One element: `cuda.core` flattens it to one dimension.
            return Self {
                shape: vec![1],
                strides: vec![1],
                itemsize: self.itemsize,
                offset: self.offset,
            };
        }
        let allowed = self.flattened_axis_mask() & mask;
        let (mut shape, mut strides) = (Vec::<i64>::new(), Vec::<i64>::new());
        for i in 0..self.ndim() {
            if i > 0 && allowed & (1 << i) != 0 {
                let last = shape.len() - 1;
                shape[last] = shape[last].saturating_mul(self.shape[i]);
                strides[last] = self.strides[i];
            } else {
                shape.push(self.shape[i]);
                strides.push(self.strides[i]);
            }
        }
        Self {
            shape,
            strides,
            itemsize: self.itemsize,
            offset: self.offset,
        }
    }

    /// As [`flattened`](Self::flattened), merging only axes `start_axis` to
    /// `end_axis` (inclusive; negative from the end; `cuda.core`'s
    /// `flattened(start_axis, end_axis)`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] ([`InvalidKind::OutOfRange`]) for an axis
    /// out of range.
    pub fn flattened_axes(&self, start_axis: i64, end_axis: i64) -> Result<Self> {
        let n = self.ndim() as i64;
        let norm = |a: i64| {
            normalize(a, n)
                .ok_or_else(|| range_err(format!("Invalid axis: {a} out of range for {n}D tensor")))
        };
        if n == 0 {
            return Ok(self.flattened());
        }
        let (start, end) = (norm(start_axis)?, norm(end_axis)?);
        let mask = (start + 1..=end).fold(0u64, |m, i| m | 1 << i);
        Ok(self.flattened_masked(mask))
    }

    /// Layouts of as many dimensions flattened alike: only the axes every one
    /// of them can merge are merged, so an element index means the same in
    /// each result.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the layouts differ in dimensions.
    pub fn flatten_together(layouts: &[&Self]) -> Result<Vec<Self>> {
        if let Some(first) = layouts.first() {
            if layouts.iter().any(|l| l.ndim() != first.ndim()) {
                return Err(bad("the layouts to flatten together differ in dimensions"));
            }
        }
        let mask = layouts
            .iter()
            .fold(u64::MAX, |m, l| m & l.flattened_axis_mask());
        Ok(layouts.iter().map(|l| l.flattened_masked(mask)).collect())
    }

    /// The same elements in row-major index order with extents `shape` (one
    /// of them may be -1: what the volume leaves), without copying
    /// (`cuda.core`'s `reshaped`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: another volume, a negative extent other
    /// than one -1, a -1 that is ambiguous or does not divide, or strides that
    /// cannot express the new shape.
    pub fn reshaped(&self, shape: &[i64]) -> Result<Self> {
        check_shape_len(shape)?;
        let volume = self.volume();
        let mut new_shape = shape.to_vec();
        let mut infer = None;
        for (i, &e) in shape.iter().enumerate() {
            if e == -1 {
                if infer.is_some() {
                    return Err(bad("There can be at most one -1 extent in a shape"));
                }
                infer = Some(i);
            } else if e < 0 {
                return Err(bad("Extents must be non-negative"));
            }
        }
        if let Some(i) = infer {
            let known = shape
                .iter()
                .filter(|&&e| e != -1)
                .try_fold(1i64, |v, &e| mul(v, e))?;
            if known == 0 {
                return Err(bad(
                    "The -1 extent is ambiguous when the specified sub-volume is 0",
                ));
            }
            if volume % known != 0 {
                return Err(bad(format!(
                    "The original volume {volume} must be divisible by the specified sub-volume {known}."
                )));
            }
            new_shape[i] = volume / known;
        }
        let new_volume = volume_of(&new_shape)?;
        if new_volume != volume {
            return Err(bad(format!(
                "The original volume {volume} and the new volume {new_volume} must be equal."
            )));
        }
        let mut strides = vec![0; new_shape.len()];
        if volume != 0 {
            let flat = self.flattened();
            let mut j = new_shape.len();
            for i in (0..flat.ndim()).rev() {
                let extent = flat.shape[i];
                let mut stride = flat.strides[i];
                let mut group = 1i64;
                while j > 0 {
                    let e = new_shape[j - 1];
                    if e == 1 || group < extent {
                        strides[j - 1] = stride;
                        stride = stride.saturating_mul(e);
                        group = mul(group, e)?;
                        j -= 1;
                    } else {
                        break;
                    }
                }
                if group != extent {
                    return Err(bad("Layout strides are incompatible with the new shape"));
                }
            }
        }
        self.with(new_shape, strides, self.offset)
    }

    /// The extents of 1 removed; an empty layout becomes shape `[0]`, stride
    /// `[0]`.
    pub fn squeezed(&self) -> Self {
        let (shape, strides) = if self.shape.contains(&0) {
            (vec![0], vec![0])
        } else {
            self.shape
                .iter()
                .zip(&self.strides)
                .filter(|(e, _)| **e != 1)
                .map(|(&e, &s)| (e, s))
                .unzip()
        };
        Self {
            shape,
            strides,
            itemsize: self.itemsize,
            offset: self.offset,
        }
    }

    /// Extents of 1 inserted at `axes` (positions in the result, negative
    /// from its end; NumPy's `expand_dims`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: an axis out of range
    /// ([`InvalidKind::OutOfRange`]) or named twice, too many dimensions.
    pub fn unsqueezed(&self, axes: &[i64]) -> Result<Self> {
        let out = self.ndim() + axes.len();
        check_shape_len(&vec![0; out])?;
        let mut new = 0u64;
        for &a in axes {
            let axis = normalize(a, out as i64).ok_or_else(|| {
                range_err(format!("Invalid axis: {a} out of range for {out}D tensor"))
            })?;
            if new & (1 << axis) != 0 {
                return Err(bad(format!("Axis {a} appears multiple times.")));
            }
            new |= 1 << axis;
        }
        let (mut shape, mut strides) = (Vec::with_capacity(out), Vec::with_capacity(out));
        let mut k = 0;
        for i in 0..out {
            if new & (1 << i) != 0 {
                shape.push(1);
                strides.push(if k < self.ndim() {
                    mul(self.shape[k], self.strides[k])?
                } else if k > 0 {
                    self.strides[k - 1]
                } else {
                    1
                });
            } else {
                shape.push(self.shape[k]);
                strides.push(self.strides[k]);
                k += 1;
            }
        }
        self.with(shape, strides, self.offset)
    }

    /// The layout broadcast to `shape` (NumPy's rules, from the right: an
    /// extent of 1, or a missing leading one, repeats with stride 0).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: fewer dimensions, or an extent that is
    /// neither 1 nor the new one.
    pub fn broadcast_to(&self, shape: &[i64]) -> Result<Self> {
        check_shape(shape)?;
        let n = self.ndim();
        if shape.len() < n {
            return Err(bad(format!(
                "The broadcast shape ndim ({}) must be greater than or equal to the input shape ndim ({n}).",
                shape.len()
            )));
        }
        let lead = shape.len() - n;
        let mut strides = vec![0; shape.len()];
        for i in 0..n {
            if self.shape[i] == shape[lead + i] {
                strides[lead + i] = self.strides[i];
            } else if self.shape[i] != 1 {
                return Err(bad(format!(
                    "Shapes cannot be broadcast together: the original extent must be 1 or be equal to broadcast extent, got {} and {} for axis {i}.",
                    self.shape[i],
                    shape[lead + i]
                )));
            }
        }
        self.with(shape.to_vec(), strides, self.offset)
    }

    /// A dense layout of the same shape and element size in `order`
    /// ([`StrideOrder::Keep`]: this layout's [`stride_order`](Self::stride_order));
    /// the layout itself when it is dense in that order already
    /// (`cuda.core`'s `to_dense` / `dense_like`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for axes that are not a permutation.
    pub fn to_dense(&self, order: &StrideOrder) -> Result<Self> {
        let dense = self.is_dense();
        let axes = match order {
            StrideOrder::Keep if dense => return Ok(self.clone()),
            StrideOrder::C if dense && self.is_contiguous_c() => return Ok(self.clone()),
            StrideOrder::F if dense && self.is_contiguous_f() => return Ok(self.clone()),
            StrideOrder::Keep => StrideOrder::Axes(self.stride_order()),
            other => other.clone(),
        };
        Self::dense(&self.shape, self.itemsize, &axes)
    }
}

fn check_shape_len(shape: &[i64]) -> Result<()> {
    if shape.len() > STRIDED_LAYOUT_MAX_NDIM {
        return Err(range_err(format!(
            "{} dimensions, at most {STRIDED_LAYOUT_MAX_NDIM}",
            shape.len()
        )));
    }
    Ok(())
}

/// Python's `slice.indices` for an axis of `extent`: the first index and the
/// number of elements.
fn adjust(extent: i64, start: Option<i64>, stop: Option<i64>, step: i64) -> (i64, i64) {
    let clip = |v: Option<i64>, default_pos: i64, default_neg: i64| -> i64 {
        match v {
            None => {
                if step < 0 {
                    default_neg
                } else {
                    default_pos
                }
            }
            Some(v) if v < 0 => {
                let v = v.saturating_add(extent);
                if v < 0 {
                    if step < 0 { -1 } else { 0 }
                } else {
                    v
                }
            }
            Some(v) if v >= extent => {
                if step < 0 {
                    extent - 1
                } else {
                    extent
                }
            }
            Some(v) => v,
        }
    };
    let start = clip(start, 0, extent - 1);
    let stop = clip(stop, extent, -1);
    let (start128, stop128, step128) = (i128::from(start), i128::from(stop), i128::from(step));
    let len = if step < 0 {
        if stop < start {
            (start128 - stop128 - 1) / (-step128) + 1
        } else {
            0
        }
    } else if start < stop {
        (stop128 - start128 - 1) / step128 + 1
    } else {
        0
    };
    // At most the extent.
    (start, len as i64)
}
