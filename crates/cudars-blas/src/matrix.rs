//! Matrices over typed device views: shape, layout and leading dimension, checked
//! once when a [`MatRef`] or [`MatMut`] is made, and the translation of any mix of
//! row- and column-major operands to cuBLAS's column-major calls.
//!
//! # Architecture Invariant
//! cuBLAS sees only column-major matrices. A row-major matrix is the column-major
//! storage of its transpose, so an operand whose layout differs from the result's
//! has its transposition flipped, and a row-major result is computed as its
//! transpose (`Cᵀ = op(B)ᵀ·op(A)ᵀ`, the operands swapped). Every public entry
//! point goes through [`GemmShape::new`]; nothing else builds cuBLAS dimensions.

use std::ffi::c_int;

use cudars_core::{DeviceView, DeviceViewMut, InvalidKind};

use crate::error::{Error, Result};

/// How a matrix's elements lie in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Each column is contiguous (Fortran, cuBLAS, cuSOLVER); the leading
    /// dimension is the distance between columns.
    ColMajor,
    /// Each row is contiguous (C, NumPy's default, most Rust crates); the leading
    /// dimension is the distance between rows.
    RowMajor,
}

/// Whether an operand is used as stored or transposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Op {
    /// As stored: `op(A) = A`.
    #[default]
    N,
    /// Transposed: `op(A) = Aᵀ`.
    T,
}

impl Op {
    fn flip(self, flip: bool) -> Self {
        match (self, flip) {
            (op, false) => op,
            (Self::N, true) => Self::T,
            (Self::T, true) => Self::N,
        }
    }
}

/// Shape, layout and leading dimension of one matrix (no memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dims {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) ld: usize,
    pub(crate) layout: Layout,
}

impl Dims {
    /// Checks the leading dimension and that `len` elements hold the matrix.
    pub(crate) fn new(
        rows: usize,
        cols: usize,
        ld: usize,
        layout: Layout,
        len: usize,
        what: &'static str,
    ) -> Result<Self> {
        let ctx = || format!("describing a {rows}×{cols} {what} matrix");
        let (inner, outer) = match layout {
            Layout::ColMajor => (rows, cols),
            Layout::RowMajor => (cols, rows),
        };
        if ld < inner.max(1) {
            return Err(Error::invalid(
                ctx(),
                InvalidKind::OutOfRange,
                format!(
                    "the leading dimension {ld} is less than the {} of {inner} elements",
                    match layout {
                        Layout::ColMajor => "column length",
                        Layout::RowMajor => "row length",
                    }
                ),
            ));
        }
        let need = Self::extent_of(inner, outer, ld)
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
        Ok(Self {
            rows,
            cols,
            ld,
            layout,
        })
    }

    /// The elements from the first to one past the last: `(outer - 1) * ld + inner`.
    fn extent_of(inner: usize, outer: usize, ld: usize) -> Option<usize> {
        if inner == 0 || outer == 0 {
            return Some(0);
        }
        (outer - 1).checked_mul(ld)?.checked_add(inner)
    }

    /// The number of elements the matrix spans.
    pub(crate) fn extent(&self) -> usize {
        let (inner, outer) = match self.layout {
            Layout::ColMajor => (self.rows, self.cols),
            Layout::RowMajor => (self.cols, self.rows),
        };
        Self::extent_of(inner, outer, self.ld).unwrap_or(usize::MAX)
    }

    /// Rows and columns of `op(self)`.
    fn op_shape(&self, op: Op) -> (usize, usize) {
        match op {
            Op::N => (self.rows, self.cols),
            Op::T => (self.cols, self.rows),
        }
    }
}

/// A read-only matrix: a typed device view with its shape, layout and leading
/// dimension, checked when made.
///
/// ```no_run
/// # fn f(x: cudars_core::DeviceView<'_, f32>) -> cudars_blas::Result<()> {
/// use cudars_blas::MatRef;
/// // 3 rows of 4, each row contiguous.
/// let a = MatRef::row_major(x, 3, 4)?;
/// // The left 2 columns of a row-major 3×4 block: leading dimension 4.
/// let left = MatRef::row_major_ld(x, 3, 2, 4)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct MatRef<'a, T> {
    pub(crate) view: DeviceView<'a, T>,
    pub(crate) dims: Dims,
}

/// A writable matrix: an exclusive typed device view with its shape, layout and
/// leading dimension, checked when made.
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
            Self::new(view, rows, cols, rows.max(1), Layout::ColMajor)
        }

        /// A row-major `rows × cols` matrix whose rows are packed (leading
        /// dimension `cols`).
        ///
        /// # Errors
        /// As [`col_major`](Self::col_major).
        pub fn row_major(view: $view<'a, T>, rows: usize, cols: usize) -> Result<Self> {
            Self::new(view, rows, cols, cols.max(1), Layout::RowMajor)
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
            Self::new(view, rows, cols, ld, Layout::ColMajor)
        }

        /// A row-major `rows × cols` matrix with `ld` elements between the starts
        /// of its rows.
        ///
        /// # Errors
        /// [`Error::InvalidArgument`] ([`InvalidKind::OutOfRange`]) when `ld < cols`
        /// or the view is shorter than the matrix spans.
        pub fn row_major_ld(
            view: $view<'a, T>,
            rows: usize,
            cols: usize,
            ld: usize,
        ) -> Result<Self> {
            Self::new(view, rows, cols, ld, Layout::RowMajor)
        }

        /// A matrix of any layout and leading dimension.
        ///
        /// # Errors
        /// As [`col_major_ld`](Self::col_major_ld) and [`row_major_ld`](Self::row_major_ld).
        pub fn new(
            view: $view<'a, T>,
            rows: usize,
            cols: usize,
            ld: usize,
            layout: Layout,
        ) -> Result<Self> {
            let dims = Dims::new(rows, cols, ld, layout, view.len(), stringify!($view))?;
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

        /// The leading dimension, in elements.
        pub fn ld(&self) -> usize {
            self.dims.ld
        }

        /// The layout.
        pub fn layout(&self) -> Layout {
            self.dims.layout
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

/// A cuBLAS column-major GEMM: which operand goes first, with which flags and
/// dimensions, for `C = α·op(A)·op(B) + β·C` in whatever layouts the caller gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GemmShape {
    /// Whether `B` is cuBLAS's first operand (a row-major result).
    pub(crate) swapped: bool,
    pub(crate) op1: Op,
    pub(crate) op2: Op,
    pub(crate) m: c_int,
    pub(crate) n: c_int,
    pub(crate) k: c_int,
    pub(crate) ld1: c_int,
    pub(crate) ld2: c_int,
    pub(crate) ldc: c_int,
}

/// A dimension as cuBLAS's `int`.
pub(crate) fn to_int(v: usize, what: &str, context: &dyn Fn() -> String) -> Result<c_int> {
    c_int::try_from(v).map_err(|_| {
        Error::invalid(
            context(),
            InvalidKind::OutOfRange,
            format!("{what} {v} exceeds cuBLAS's 32-bit limit"),
        )
    })
}

impl GemmShape {
    /// Checks that `op(A)` is `m × k`, `op(B)` is `k × n` and `C` is `m × n`, and
    /// translates to cuBLAS's column-major call.
    pub(crate) fn new(
        a: &Dims,
        op_a: Op,
        b: &Dims,
        op_b: Op,
        c: &Dims,
        context: &dyn Fn() -> String,
    ) -> Result<Self> {
        let (m, ka) = a.op_shape(op_a);
        let (kb, n) = b.op_shape(op_b);
        if ka != kb || m != c.rows || n != c.cols {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!(
                    "op(A) is {m}×{ka} and op(B) is {kb}×{n}, so C must be {m}×{n} with \
                     matching inner dimensions; C is {}×{}",
                    c.rows, c.cols
                ),
            ));
        }
        let k = ka;
        let op_a = op_a.flip(a.layout != c.layout);
        let op_b = op_b.flip(b.layout != c.layout);
        let int = |v: usize, what: &str| to_int(v, what, context);
        Ok(match c.layout {
            Layout::ColMajor => Self {
                swapped: false,
                op1: op_a,
                op2: op_b,
                m: int(m, "m")?,
                n: int(n, "n")?,
                k: int(k, "k")?,
                ld1: int(a.ld, "lda")?,
                ld2: int(b.ld, "ldb")?,
                ldc: int(c.ld, "ldc")?,
            },
            // Cᵀ (n × m, column-major) = op(B)ᵀ · op(A)ᵀ.
            Layout::RowMajor => Self {
                swapped: true,
                op1: op_b,
                op2: op_a,
                m: int(n, "n")?,
                n: int(m, "m")?,
                k: int(k, "k")?,
                ld1: int(b.ld, "ldb")?,
                ld2: int(a.ld, "lda")?,
                ldc: int(c.ld, "ldc")?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn dims(rows: usize, cols: usize, layout: Layout) -> Dims {
        let ld = match layout {
            Layout::ColMajor => rows,
            Layout::RowMajor => cols,
        };
        Dims::new(rows, cols, ld, layout, rows * cols, "test").unwrap()
    }

    /// A CPU GEMM over the same column-major call cuBLAS would get, to check the
    /// translation against the textbook definition for every layout mix.
    fn run(shape: &GemmShape, a: &[f64], b: &[f64], c: &mut [f64]) {
        let (x, y) = if shape.swapped { (b, a) } else { (a, b) };
        let at = |mat: &[f64], op: Op, ld: c_int, i: usize, j: usize| match op {
            Op::N => mat[i + j * ld as usize],
            Op::T => mat[j + i * ld as usize],
        };
        for i in 0..shape.m as usize {
            for j in 0..shape.n as usize {
                let mut s = 0.0;
                for l in 0..shape.k as usize {
                    s += at(x, shape.op1, shape.ld1, i, l) * at(y, shape.op2, shape.ld2, l, j);
                }
                c[i + j * shape.ldc as usize] = s;
            }
        }
    }

    fn get(m: &[f64], d: &Dims, i: usize, j: usize) -> f64 {
        match d.layout {
            Layout::ColMajor => m[i + j * d.ld],
            Layout::RowMajor => m[i * d.ld + j],
        }
    }

    #[test]
    fn every_layout_and_transpose_mix_computes_the_textbook_product() {
        let (m, n, k) = (3, 5, 4);
        for la in [Layout::ColMajor, Layout::RowMajor] {
            for lb in [Layout::ColMajor, Layout::RowMajor] {
                for lc in [Layout::ColMajor, Layout::RowMajor] {
                    for op_a in [Op::N, Op::T] {
                        for op_b in [Op::N, Op::T] {
                            let (ar, ac) = if op_a == Op::N { (m, k) } else { (k, m) };
                            let (br, bc) = if op_b == Op::N { (k, n) } else { (n, k) };
                            let (da, db, dc) = (dims(ar, ac, la), dims(br, bc, lb), dims(m, n, lc));
                            let a: Vec<f64> = (0..ar * ac).map(|v| v as f64 * 0.5 - 2.0).collect();
                            let b: Vec<f64> = (0..br * bc).map(|v| (v * v % 7) as f64).collect();
                            let shape =
                                GemmShape::new(&da, op_a, &db, op_b, &dc, &|| String::new())
                                    .unwrap();
                            let mut c = vec![0.0; m * n];
                            run(&shape, &a, &b, &mut c);
                            for i in 0..m {
                                for j in 0..n {
                                    let want: f64 = (0..k)
                                        .map(|l| {
                                            let av = if op_a == Op::N {
                                                get(&a, &da, i, l)
                                            } else {
                                                get(&a, &da, l, i)
                                            };
                                            let bv = if op_b == Op::N {
                                                get(&b, &db, l, j)
                                            } else {
                                                get(&b, &db, j, l)
                                            };
                                            av * bv
                                        })
                                        .sum();
                                    assert_eq!(
                                        get(&c, &dc, i, j),
                                        want,
                                        "{la:?} {lb:?} {lc:?} {op_a:?} {op_b:?} ({i},{j})"
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn mismatched_shapes_and_short_views_are_refused() {
        let a = dims(3, 4, Layout::RowMajor);
        let b = dims(5, 2, Layout::RowMajor);
        let c = dims(3, 2, Layout::RowMajor);
        let e = GemmShape::new(&a, Op::N, &b, Op::N, &c, &|| "multiplying".into()).unwrap_err();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange));
        assert!(
            e.to_string()
                .starts_with("multiplying: op(A) is 3×4 and op(B) is 5×2"),
            "{e}"
        );
        // The transposes agree.
        let b = dims(2, 4, Layout::ColMajor);
        assert!(GemmShape::new(&a, Op::N, &b, Op::T, &c, &|| String::new()).is_ok());
        // A view too short for the leading dimension.
        assert!(Dims::new(3, 4, 5, Layout::RowMajor, 14, "test").is_ok());
        let e = Dims::new(3, 4, 5, Layout::RowMajor, 13, "test").unwrap_err();
        assert!(
            e.to_string()
                .contains("spans 14 elements (leading dimension 5) but the view holds 13"),
            "{e}"
        );
        // A leading dimension shorter than a row.
        let e = Dims::new(3, 4, 3, Layout::RowMajor, 100, "test").unwrap_err();
        assert!(
            e.to_string().contains("less than the row length of 4"),
            "{e}"
        );
        assert_eq!(
            Dims::new(0, 4, 4, Layout::RowMajor, 0, "t")
                .unwrap()
                .extent(),
            0
        );
    }
}
