//! Repacking a [`StridedLayout`]: the same bytes seen as elements of another
//! size along a stride-1 axis (`cuda.core`'s `repacked` and
//! `max_compatible_itemsize`).

use crate::error::Result;
use crate::interop::strided_layout::{
    StridedLayout, bad, check_itemsize, check_shape, mul, normalize, range_err,
};

impl StridedLayout {
    /// The largest element size, at most `max_itemsize`, that
    /// [`repacked`](Self::repacked) along `axis` accepts.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument): `max_itemsize` below the element size, an
    /// axis out of range.
    pub fn max_compatible_itemsize(&self, max_itemsize: usize, axis: i64) -> Result<usize> {
        if max_itemsize < self.itemsize {
            return Err(bad(format!(
                "max_itemsize ({max_itemsize}) cannot be less than itemsize ({}).",
                self.itemsize
            )));
        }
        let n = self.ndim() as i64;
        if n == 0 {
            return Err(range_err("Invalid axis: out of range for 0D tensor"));
        }
        let axis = normalize(axis, n).ok_or_else(|| {
            range_err(format!("Invalid axis: {axis} out of range for {n}D tensor"))
        })?;
        if self.strides[axis] != 1 || self.shape[axis] == 0 {
            return Ok(self.itemsize);
        }
        let size = self.itemsize as u64;
        let mut g = max_itemsize as u64;
        g = gcd(g, self.offset.unsigned_abs().saturating_mul(size));
        g = gcd(g, self.shape[axis].unsigned_abs().saturating_mul(size));
        for i in (0..self.ndim()).filter(|&i| i != axis) {
            g = gcd(g, self.strides[i].unsigned_abs().saturating_mul(size));
        }
        Ok(g as usize)
    }

    /// The same bytes seen as elements of `new_itemsize` bytes along `axis`
    /// (whose stride must be 1): packed (a larger size divides the extent)
    /// or unpacked (a smaller one multiplies it); the other strides and the
    /// offset scale alike (`cuda.core`'s `repacked`, `keep_dim=True`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument): a size of 0 or one the element size is not
    /// a multiple or divisor of, an axis out of range, a stride of the axis
    /// other than 1, an extent of 0, or an extent, stride or offset the
    /// packing does not divide.
    pub fn repacked(&self, new_itemsize: usize, axis: i64) -> Result<Self> {
        check_itemsize(new_itemsize)?;
        if new_itemsize == self.itemsize {
            return Ok(self.clone());
        }
        let n = self.ndim() as i64;
        let ax = normalize(axis, n).ok_or_else(|| {
            range_err(format!("Invalid axis: {axis} out of range for {n}D tensor"))
        })?;
        if self.shape[ax] == 0 {
            return Err(bad(format!(
                "The axis {ax} extent must be non-zero, got 0."
            )));
        }
        if self.strides[ax] != 1 {
            return Err(bad(format!(
                "The axis {ax} stride must be 1, got {}.",
                self.strides[ax]
            )));
        }
        let (mut shape, mut strides) = (self.shape.clone(), self.strides.clone());
        let offset;
        if new_itemsize > self.itemsize {
            if new_itemsize % self.itemsize != 0 {
                return Err(bad(format!(
                    "new itemsize ({new_itemsize}) must be a multiple of itemsize ({})",
                    self.itemsize
                )));
            }
            let v = (new_itemsize / self.itemsize) as i64; // both fit: checked above
            if shape[ax] % v != 0 {
                return Err(bad(format!(
                    "The axis {ax} extent ({}) must be divisible by {v}.",
                    shape[ax]
                )));
            }
            if self.offset % v != 0 {
                return Err(bad(format!(
                    "The slice offset ({}) must be divisible by {v}.",
                    self.offset
                )));
            }
            shape[ax] /= v;
            for i in (0..strides.len()).filter(|&i| i != ax) {
                if strides[i] % v != 0 {
                    return Err(bad(format!(
                        "The {i} axis stride ({}) must be divisible by {v}.",
                        strides[i]
                    )));
                }
                strides[i] /= v;
            }
            offset = self.offset / v;
        } else {
            if self.itemsize % new_itemsize != 0 {
                return Err(bad(format!(
                    "itemsize ({}) must be a multiple of the new itemsize ({new_itemsize})",
                    self.itemsize
                )));
            }
            let v = (self.itemsize / new_itemsize) as i64; // both fit: checked above
            shape[ax] = mul(shape[ax], v)?;
            for i in (0..strides.len()).filter(|&i| i != ax) {
                strides[i] = mul(strides[i], v)?;
            }
            offset = mul(self.offset, v)?;
        }
        let l = Self {
            shape,
            strides,
            itemsize: new_itemsize,
            offset,
        };
        check_shape(&l.shape)?;
        l.checked_bounds()?;
        Ok(l)
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}
