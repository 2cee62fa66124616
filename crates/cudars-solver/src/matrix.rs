//! Column-major matrices over typed device views (cuSOLVER's, as LAPACK's):
//! shape and leading dimension checked once when a [`MatRef`] or [`MatMut`] is
//! made, so a call only checks how its operands' shapes fit together.
//!
//! # Architecture Invariant
//! A matrix's view holds every element it spans (`(cols - 1)·ld + rows`, checked
//! without overflow) and `ld ≥ max(rows, 1)`; every dimension reaches cuSOLVER
//! through [`to_int`], which refuses what does not fit its `int`.

use std::ffi::c_int;

use cudars_core::{DeviceView, DeviceViewMut, InvalidKind};

use crate::error::{Error, Result};

/// Shape and leading dimension of one column-major matrix (no memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dims {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) ld: usize,
}

impl Dims {
    /// Checks the leading dimension and that `len` elements hold the matrix.
    pub(crate) fn new(
        rows: usize,
        cols: usize,
        ld: usize,
        len: usize,
        what: &'static str,
    ) -> Result<Self> {
        let ctx = || format!("describing a {rows}×{cols} {what} matrix");
        if ld < rows.max(1) {
            return Err(Error::invalid(
                ctx(),
                InvalidKind::OutOfRange,
                format!(
                    "the leading dimension {ld} is less than the column length of {rows} elements"
                ),
            ));
        }
        let need = Self::extent_of(rows, cols, ld)
            .ok_or_else(|| Error::invalid(ctx(), InvalidKind::OutOfRange, "the size overflows"))?;
        if need > len {
            return Err(Error::invalid(
                ctx(),
                InvalidKind::OutOfRange,
                format!(
                    "it spans {need} elements (leading dimension {ld}) but the view holds {len}"
                ),
            ));
        }
        Ok(Self { rows, cols, ld })
    }

    /// The elements from the first to one past the last: `(cols - 1) * ld + rows`.
    fn extent_of(rows: usize, cols: usize, ld: usize) -> Option<usize> {
        if rows == 0 || cols == 0 {
            return Some(0);
        }
        (cols - 1).checked_mul(ld)?.checked_add(rows)
    }

    /// The number of elements the matrix spans.
    pub(crate) fn extent(&self) -> usize {
        Self::extent_of(self.rows, self.cols, self.ld).unwrap_or(usize::MAX)
    }

    /// Whether the matrix has no elements.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows == 0 || self.cols == 0
    }
}

/// A read-only column-major matrix: a typed device view with its shape and
/// leading dimension, checked when made.
///
/// ```no_run
/// # fn f(x: cudars_core::DeviceView<'_, f64>) -> cudars_solver::Result<()> {
/// use cudars_solver::MatRef;
/// // 3 rows and 4 columns, each column contiguous.
/// let a = MatRef::col_major(x, 3, 4)?;
/// // The top 2 rows of that 3×4 block: leading dimension 3.
/// let top = MatRef::col_major_ld(x, 2, 4, 3)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct MatRef<'a, T> {
    pub(crate) view: DeviceView<'a, T>,
    pub(crate) dims: Dims,
}

/// A writable column-major matrix: an exclusive typed device view with its shape
/// and leading dimension, checked when made.
#[derive(Debug)]
pub struct MatMut<'a, T> {
    pub(crate) view: DeviceViewMut<'a, T>,
    pub(crate) dims: Dims,
}

macro_rules! constructors {
    ($view:ident) => {
        /// A column-major `rows × cols` matrix whose columns are packed
        /// (leading dimension `rows`).
        ///
        /// # Errors
        /// [`Error::InvalidArgument`] ([`InvalidKind::OutOfRange`]) when the view
        /// holds fewer than `rows × cols` elements.
        pub fn col_major(view: $view<'a, T>, rows: usize, cols: usize) -> Result<Self> {
            Self::col_major_ld(view, rows, cols, rows.max(1))
        }

        /// A column-major `rows × cols` matrix with `ld` elements between the
        /// starts of its columns (a block of a larger matrix).
        ///
        /// # Errors
        /// [`Error::InvalidArgument`] ([`InvalidKind::OutOfRange`]) when `ld < rows`
        /// or the view is shorter than the matrix spans.
        pub fn col_major_ld(
            view: $view<'a, T>,
            rows: usize,
            cols: usize,
            ld: usize,
        ) -> Result<Self> {
            let dims = Dims::new(rows, cols, ld, view.len(), stringify!($view))?;
            Ok(Self { view, dims })
        }

        /// The number of rows.
        pub fn rows(&self) -> usize {
            self.dims.rows
        }

        /// The number of columns.
        pub fn cols(&self) -> usize {
            self.dims.cols
        }

        /// The leading dimension (elements between the starts of columns).
        pub fn ld(&self) -> usize {
            self.dims.ld
        }
    };
}

impl<'a, T: bytemuck::Pod> MatRef<'a, T> {
    constructors!(DeviceView);

    /// The view the matrix lies in.
    pub fn view(&self) -> DeviceView<'a, T> {
        self.view
    }
}

impl<'a, T: bytemuck::Pod> MatMut<'a, T> {
    constructors!(DeviceViewMut);

    /// The view the matrix lies in, lent out.
    pub fn view_mut(&mut self) -> DeviceViewMut<'_, T> {
        self.view.reborrow()
    }

    /// A read-only matrix of the same elements, for as long as this borrow.
    pub fn as_ref(&self) -> MatRef<'_, T> {
        MatRef {
            view: self.view.as_view(),
            dims: self.dims,
        }
    }
}

/// A dimension as cuSOLVER's `int`.
pub(crate) fn to_int(v: usize, what: &str, context: &dyn Fn() -> String) -> Result<c_int> {
    c_int::try_from(v).map_err(|_| {
        Error::invalid(
            context(),
            InvalidKind::OutOfRange,
            format!("{what} {v} exceeds cuSOLVER's 32-bit limit"),
        )
    })
}

/// Checks that `batch` matrices of `extent` elements, `stride` apart, fit in
/// `len` elements, and (when they are written) that they do not overlap.
pub(crate) fn check_batch(
    extent: usize,
    stride: usize,
    batch: usize,
    len: usize,
    written: bool,
    what: &str,
    context: &dyn Fn() -> String,
) -> Result<()> {
    if batch == 0 {
        return Err(Error::invalid(
            context(),
            InvalidKind::OutOfRange,
            "the batch is empty",
        ));
    }
    if written && batch > 1 && stride < extent {
        return Err(Error::invalid(
            context(),
            InvalidKind::OutOfRange,
            format!(
                "{what}'s stride {stride} is less than one matrix's {extent} elements: \
                 the matrices written would overlap"
            ),
        ));
    }
    let need = (batch - 1)
        .checked_mul(stride)
        .and_then(|v| v.checked_add(extent));
    match need {
        Some(n) if n <= len => Ok(()),
        _ => Err(Error::invalid(
            context(),
            InvalidKind::OutOfRange,
            format!(
                "{what}'s view holds {len} elements, fewer than {batch} matrices of \
                 {extent} elements at a stride of {stride}"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn short_views_and_leading_dimensions_are_refused() {
        assert!(Dims::new(4, 3, 5, 14, "t").is_ok());
        let e = Dims::new(4, 3, 5, 13, "t").unwrap_err();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange));
        assert!(
            e.to_string()
                .contains("spans 14 elements (leading dimension 5) but the view holds 13"),
            "{e}"
        );
        let e = Dims::new(4, 3, 3, 100, "t").unwrap_err();
        assert!(
            e.to_string().contains("less than the column length of 4"),
            "{e}"
        );
        let e = Dims::new(usize::MAX, 3, usize::MAX, 100, "t").unwrap_err();
        assert!(e.to_string().contains("overflows"), "{e}");
        let d = Dims::new(0, 4, 1, 0, "t").unwrap();
        assert!(d.is_empty());
        assert_eq!(d.extent(), 0);
    }

    #[test]
    fn batches_must_fit_and_written_ones_must_not_overlap() {
        let ctx = || "batch".to_string();
        assert!(check_batch(9, 9, 4, 36, true, "A", &ctx).is_ok());
        let e = check_batch(9, 9, 4, 35, true, "A", &ctx).unwrap_err();
        assert!(e.to_string().contains("fewer than 4 matrices"), "{e}");
        let e = check_batch(9, 8, 4, 100, true, "A", &ctx).unwrap_err();
        assert!(e.to_string().contains("would overlap"), "{e}");
        // Read-only matrices may share elements (one matrix for the whole batch).
        assert!(check_batch(9, 0, 4, 9, false, "A", &ctx).is_ok());
        let e = check_batch(9, 9, 0, 100, true, "A", &ctx).unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
        let e = check_batch(9, usize::MAX, 3, 100, false, "A", &ctx).unwrap_err();
        assert!(e.to_string().contains("fewer than 3"), "{e}");
    }
}
