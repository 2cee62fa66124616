//! The layout of a strided array, checked: the one pure function every way into a
//! [`StridedMemoryView`](crate::StridedMemoryView) and every DLPack export goes
//! through (no CUDA, no memory: testable anywhere).

use crate::error::{Error, Result};
use crate::interop::dlpack::DLDataType;

/// Row-major (C order) strides, in elements, of `shape`.
pub(crate) fn row_major(shape: &[i64]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1].saturating_mul(shape[i + 1].max(1));
    }
    strides
}

/// A checked layout: extents, strides in elements, the element size, the
/// number of elements and the bytes from the first to one past the last
/// element reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) shape: Vec<i64>,
    pub(crate) strides: Vec<i64>,
    pub(crate) elem: usize,
    pub(crate) len: u64,
    pub(crate) span: u64,
}

impl Layout {
    /// Checks `shape` and `strides` (in elements; `None` for row-major) of
    /// `dtype` elements and, with `avail`, that they reach no byte past the
    /// first `avail`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a dtype with no whole byte size, as many
    /// strides as extents, negative extents or strides, a span or element
    /// count past 64 bits; with
    /// [`InvalidKind::OutOfRange`](crate::InvalidKind::OutOfRange) for a span
    /// past `avail`.
    pub(crate) fn check(
        shape: &[i64],
        strides: Option<&[i64]>,
        dtype: DLDataType,
        avail: Option<u64>,
        what: &'static str,
    ) -> Result<Self> {
        let elem = dtype
            .size_bytes()
            .ok_or_else(|| Error::invalid(what, "the dtype is not a whole number of bytes"))?;
        let strides = match strides {
            Some(s) if s.len() != shape.len() => {
                return Err(Error::invalid(
                    what,
                    format!("{} extents and {} strides", shape.len(), s.len()),
                ));
            }
            Some(s) => s.to_vec(),
            None => row_major(shape),
        };
        let span = extent_bytes(shape, &strides, elem, what)?;
        // Zero strides can make many elements span a few bytes.
        let len = element_count(shape).ok_or_else(|| {
            Error::invalid(what, "the number of elements does not fit in 64 bits")
        })?;
        if let Some(avail) = avail {
            if span > avail {
                return Err(Error::out_of_range(
                    what,
                    format!("the layout spans {span} bytes and the memory holds {avail}"),
                ));
            }
        }
        Ok(Self {
            shape: shape.to_vec(),
            strides,
            elem,
            len,
            span,
        })
    }
}

/// The span of bytes a strided layout touches, or an error for negative
/// extents or strides and for a span that does not fit in 64 bits.
fn extent_bytes(shape: &[i64], strides: &[i64], elem: usize, what: &'static str) -> Result<u64> {
    if shape.iter().any(|&s| s < 0) {
        return Err(Error::invalid(what, "a negative extent"));
    }
    if shape.contains(&0) {
        return Ok(0);
    }
    let too_large = || Error::invalid(what, "the layout spans more bytes than 64 bits count");
    let mut last: u64 = 0;
    for (&n, &st) in shape.iter().zip(strides) {
        let Ok(st) = u64::try_from(st) else {
            return Err(Error::invalid(what, "negative strides are not supported"));
        };
        // `n` is at least 1 here.
        let step = (n.unsigned_abs() - 1)
            .checked_mul(st)
            .ok_or_else(too_large)?;
        last = last.checked_add(step).ok_or_else(too_large)?;
    }
    last.checked_add(1)
        .and_then(|elements| elements.checked_mul(elem as u64))
        .ok_or_else(too_large)
}

/// The number of elements of `shape` (non-negative extents), or `None` when it
/// does not fit in 64 bits.
fn element_count(shape: &[i64]) -> Option<u64> {
    shape
        .iter()
        .try_fold(1u64, |count, &n| count.checked_mul(u64::try_from(n).ok()?))
}

/// One dimension of `len` elements.
pub(crate) fn one_dim(len: usize, what: &'static str) -> Result<[i64; 1]> {
    i64::try_from(len)
        .map(|n| [n])
        .map_err(|_| Error::out_of_range(what, "the length does not fit in an i64"))
}
