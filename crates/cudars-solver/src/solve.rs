//! Linear systems: LU ([`Solver::getrf`], [`Solver::getrs`]) and Cholesky
//! ([`Solver::potrf`], [`Solver::potrs`], and batched), each in the way
//! `solver.rs`'s Architecture Invariant gives.

use std::ffi::c_int;

use cudars_core::{DeviceView, DeviceViewMut, InvalidKind};

use crate::element::Element;
use crate::error::{Error, Result, SolverErrorKind};
use crate::matrix::{MatMut, MatRef, check_batch, to_int};
use crate::solver::{Fill, Op, Solver, rows_match, square};

impl Solver {
    /// LU factorisation with partial pivoting (`getrf`): `A = P·L·U`, in place
    /// (`L` below the diagonal, unit diagonal implied; `U` on and above it), and
    /// the pivots in `ipiv` (1-based, as LAPACK's: row `i` was swapped with row
    /// `ipiv[i]`). `A` is `m × n`; `ipiv` holds at least `min(m, n)` elements.
    /// Waits for the stream (to read cuSOLVER's `info`).
    ///
    /// # Errors
    /// [`SolverErrorKind::Singular`] ([`Error::Extra`]) when a diagonal element
    /// of `U` is exactly zero (the factorisation is complete, but a solve with it
    /// would divide by zero); [`Error::InvalidArgument`] for a short `ipiv`
    /// ([`InvalidKind::OutOfRange`]) or an operand on another device
    /// ([`InvalidKind::OtherDevice`]); cuSOLVER's error.
    pub fn getrf<T: Element>(
        &self,
        a: &mut MatMut<'_, T>,
        mut ipiv: DeviceViewMut<'_, c_int>,
    ) -> Result<()> {
        let (m, n) = (a.dims.rows, a.dims.cols);
        let context = || format!("LU-factorising a {m}×{n} {} matrix (getrf)", T::NAME);
        let k = m.min(n);
        if ipiv.len() < k {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!(
                    "ipiv holds {} elements, fewer than min(m, n) = {k}",
                    ipiv.len()
                ),
            ));
        }
        if a.dims.is_empty() {
            return Ok(());
        }
        self.same_device(&[a.view.device(), ipiv.device()], &context)?;
        let (mi, ni, lda) = (
            to_int(m, "m", &context)?,
            to_int(n, "n", &context)?,
            to_int(a.dims.ld, "lda", &context)?,
        );
        let pa = a.view.ptr() as *mut T;
        let lwork = self.buffer_size(&context, |lw| {
            // SAFETY: `A` spans `lda·n` elements of the handle's device (checked
            // when the matrix was made); `lw` is valid for writes.
            unsafe { T::getrf_buffer_size(self.handle, mi, ni, pa, lda, lw) }
        })?;
        let (mut work, mut info) = self.scratch::<T>(lwork, 1)?;
        let (pw, pinfo) = (
            work.view_mut().ptr() as *mut T,
            info.view_mut().ptr() as *mut c_int,
        );
        let pipiv = ipiv.reborrow().ptr() as *mut c_int;
        self.launch(&[a.view.buffer(), ipiv.buffer()], &context, || {
            // SAFETY: `A` is `m × n` at `lda` inside its exclusive view, `ipiv`
            // holds `min(m, n)` exclusive elements, the workspace `lwork` and
            // `info` one, all on the handle's device and alive until the queued
            // work is done (their frees are ordered after the stream).
            unsafe { T::getrf(self.handle, mi, ni, pa, lda, pw, pipiv, pinfo) }
        })?;
        self.check_info(&info, 1, false, &context, |i| SolverErrorKind::Singular {
            pivot: i - 1,
        })
    }

    /// Solves `op(A)·X = B` with [`getrf`](Self::getrf)'s factors (`lu` and
    /// `ipiv` of an `n × n` matrix), overwriting `B` (`n × nrhs`) with `X`.
    /// Waits for the stream.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `lu` is not square, `B` has another number
    /// of rows, `ipiv` holds fewer than `n` elements ([`InvalidKind::OutOfRange`]),
    /// or an operand is on another device ([`InvalidKind::OtherDevice`]);
    /// cuSOLVER's error.
    pub fn getrs<T: Element>(
        &self,
        op: Op,
        lu: MatRef<'_, T>,
        ipiv: DeviceView<'_, c_int>,
        b: &mut MatMut<'_, T>,
    ) -> Result<()> {
        let (n, nrhs) = (lu.dims.rows, b.dims.cols);
        let context = || {
            format!(
                "solving a {n}×{n} {} system for {nrhs} right-hand sides with LU factors (getrs)",
                T::NAME
            )
        };
        square(&lu.dims, "the LU factors", &context)?;
        rows_match(n, b.dims.rows, "B", &context)?;
        if ipiv.len() < n {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!("ipiv holds {} elements, fewer than n = {n}", ipiv.len()),
            ));
        }
        if n == 0 || nrhs == 0 {
            return Ok(());
        }
        self.same_device(
            &[lu.view.device(), ipiv.device(), b.view.device()],
            &context,
        )?;
        let (ni, nr, lda, ldb) = (
            to_int(n, "n", &context)?,
            to_int(nrhs, "nrhs", &context)?,
            to_int(lu.dims.ld, "lda", &context)?,
            to_int(b.dims.ld, "ldb", &context)?,
        );
        let (_work, mut info) = self.scratch::<T>(0, 1)?;
        let pinfo = info.view_mut().ptr() as *mut c_int;
        let (pa, pp, pb) = (
            lu.view.ptr() as *const T,
            ipiv.ptr() as *const c_int,
            b.view.ptr() as *mut T,
        );
        self.launch(
            &[lu.view.buffer(), ipiv.buffer(), b.view.buffer()],
            &context,
            || {
                // SAFETY: `lu` is `n × n` at `lda`, `ipiv` holds `n` elements, `B`
                // is `n × nrhs` at `ldb` in its exclusive view, all on the
                // handle's device and alive until the queued work is done.
                unsafe { T::getrs(self.handle, op.raw(), ni, nr, pa, lda, pp, pb, ldb, pinfo) }
            },
        )?;
        self.check_info(&info, 1, false, &context, |p| {
            SolverErrorKind::InvalidParameter { position: p }
        })
    }

    /// Cholesky factorisation (`potrf`) of a symmetric positive definite `n × n`
    /// matrix held in its `uplo` triangle: `A = L·Lᵀ` (`Lower`) or `Uᵀ·U`
    /// (`Upper`), the factor in that triangle (the other is not touched). Waits
    /// for the stream.
    ///
    /// # Errors
    /// [`SolverErrorKind::NotPositiveDefinite`] ([`Error::Extra`]) naming the
    /// first leading minor that is not (the factor is then incomplete);
    /// [`Error::InvalidArgument`] for a matrix that is not square
    /// ([`InvalidKind::OutOfRange`]) or on another device
    /// ([`InvalidKind::OtherDevice`]); cuSOLVER's error.
    pub fn potrf<T: Element>(&self, uplo: Fill, a: &mut MatMut<'_, T>) -> Result<()> {
        let n = a.dims.rows;
        let context = || format!("Cholesky-factorising a {n}×{n} {} matrix (potrf)", T::NAME);
        square(&a.dims, "A", &context)?;
        if n == 0 {
            return Ok(());
        }
        self.same_device(&[a.view.device()], &context)?;
        let (ni, lda) = (
            to_int(n, "n", &context)?,
            to_int(a.dims.ld, "lda", &context)?,
        );
        let pa = a.view.ptr() as *mut T;
        let lwork = self.buffer_size(&context, |lw| {
            // SAFETY: `A` is `n × n` at `lda` on the handle's device; `lw` is
            // valid for writes.
            unsafe { T::potrf_buffer_size(self.handle, uplo.raw(), ni, pa, lda, lw) }
        })?;
        let lwork_i = to_int(lwork, "the workspace size", &context)?;
        let (mut work, mut info) = self.scratch::<T>(lwork, 1)?;
        let (pw, pinfo) = (
            work.view_mut().ptr() as *mut T,
            info.view_mut().ptr() as *mut c_int,
        );
        self.launch(&[a.view.buffer()], &context, || {
            // SAFETY: `A` is `n × n` at `lda` in its exclusive view, the
            // workspace holds `lwork` elements (at least one) and `info` one,
            // all on the handle's device and alive until the queued work is done.
            unsafe { T::potrf(self.handle, uplo.raw(), ni, pa, lda, pw, lwork_i, pinfo) }
        })?;
        self.check_info(&info, 1, false, &context, |order| {
            SolverErrorKind::NotPositiveDefinite { order }
        })
    }

    /// Solves `A·X = B` with [`potrf`](Self::potrf)'s factor of the `n × n`
    /// matrix `A` (the same `uplo`), overwriting `B` (`n × nrhs`) with `X`. Waits
    /// for the stream.
    ///
    /// # Errors
    /// As [`getrs`](Self::getrs).
    pub fn potrs<T: Element>(
        &self,
        uplo: Fill,
        factor: MatRef<'_, T>,
        b: &mut MatMut<'_, T>,
    ) -> Result<()> {
        let (n, nrhs) = (factor.dims.rows, b.dims.cols);
        let context = || {
            format!(
                "solving a {n}×{n} {} system for {nrhs} right-hand sides with a Cholesky factor (potrs)",
                T::NAME
            )
        };
        square(&factor.dims, "the Cholesky factor", &context)?;
        rows_match(n, b.dims.rows, "B", &context)?;
        if n == 0 || nrhs == 0 {
            return Ok(());
        }
        self.same_device(&[factor.view.device(), b.view.device()], &context)?;
        let (ni, nr, lda, ldb) = (
            to_int(n, "n", &context)?,
            to_int(nrhs, "nrhs", &context)?,
            to_int(factor.dims.ld, "lda", &context)?,
            to_int(b.dims.ld, "ldb", &context)?,
        );
        let (_work, mut info) = self.scratch::<T>(0, 1)?;
        let pinfo = info.view_mut().ptr() as *mut c_int;
        let (pa, pb) = (factor.view.ptr() as *const T, b.view.ptr() as *mut T);
        self.launch(&[factor.view.buffer(), b.view.buffer()], &context, || {
            // SAFETY: the factor is `n × n` at `lda`, `B` `n × nrhs` at `ldb` in
            // its exclusive view, both on the handle's device and alive until the
            // queued work is done.
            unsafe { T::potrs(self.handle, uplo.raw(), ni, nr, pa, lda, pb, ldb, pinfo) }
        })?;
        self.check_info(&info, 1, false, &context, |p| {
            SolverErrorKind::InvalidParameter { position: p }
        })
    }

    /// [`potrf`](Self::potrf) of `batch` `n × n` matrices at once
    /// (`potrfBatched`): `a` is the first, and matrix `i` starts `i · stride`
    /// elements after it, inside `a`'s view (`stride` at least one matrix's
    /// extent: they are written). Unlike [`potrf`](Self::potrf), cuSOLVER uses
    /// the other triangle of each matrix as scratch: it is overwritten. Waits for
    /// the stream.
    ///
    /// # Errors
    /// [`SolverErrorKind::NotPositiveDefinite`] with the first failing matrix in
    /// [`SolverError::matrix`](crate::SolverError::matrix); [`Error::InvalidArgument`] for a matrix that is
    /// not square, an empty batch, a view too short for the batch or a stride
    /// under one matrix ([`InvalidKind::OutOfRange`]); cuSOLVER's error.
    pub fn potrf_batched<T: Element>(
        &self,
        uplo: Fill,
        a: &mut MatMut<'_, T>,
        stride: usize,
        batch: usize,
    ) -> Result<()> {
        let n = a.dims.rows;
        let context = || {
            format!(
                "Cholesky-factorising {batch} {n}×{n} {} matrices (potrfBatched)",
                T::NAME
            )
        };
        square(&a.dims, "A", &context)?;
        check_batch(
            a.dims.extent(),
            stride,
            batch,
            a.view.len(),
            true,
            "A",
            &context,
        )?;
        if n == 0 {
            return Ok(());
        }
        self.same_device(&[a.view.device()], &context)?;
        let (ni, lda, bi) = (
            to_int(n, "n", &context)?,
            to_int(a.dims.ld, "lda", &context)?,
            to_int(batch, "the batch count", &context)?,
        );
        let ptrs = self.pointer_array::<T>(a.view.ptr(), stride, batch, &context)?;
        let (_work, mut info) = self.scratch::<T>(0, batch)?;
        let pinfo = info.view_mut().ptr() as *mut c_int;
        let parr = ptrs as *mut *mut T;
        self.launch(&[a.view.buffer()], &context, || {
            // SAFETY: the pointer array holds `batch` device pointers, each to an
            // `n × n` matrix at `lda` inside `a`'s exclusive view (checked, not
            // overlapping); `info` holds `batch` integers; all live until the
            // queued work is done.
            unsafe { T::potrf_batched(self.handle, uplo.raw(), ni, parr, lda, pinfo, bi) }
        })?;
        self.check_info(&info, batch, true, &context, |order| {
            SolverErrorKind::NotPositiveDefinite { order }
        })
    }

    /// [`potrs`](Self::potrs) for `batch` systems with one right-hand side each
    /// (`potrsBatched`, which takes one): the factors as
    /// [`potrf_batched`](Self::potrf_batched) left them (`factor` the first,
    /// `stride_a` apart), and `b` the first `n × 1` right-hand side, the others
    /// `stride_b` apart, overwritten with the solutions. Waits for the stream.
    ///
    /// # Errors
    /// As [`potrf_batched`](Self::potrf_batched), and
    /// [`InvalidKind::OutOfRange`] when `b` has more than one column.
    #[allow(clippy::too_many_arguments)]
    pub fn potrs_batched<T: Element>(
        &self,
        uplo: Fill,
        factor: MatRef<'_, T>,
        stride_a: usize,
        b: &mut MatMut<'_, T>,
        stride_b: usize,
        batch: usize,
    ) -> Result<()> {
        let n = factor.dims.rows;
        let context = || {
            format!(
                "solving {batch} {n}×{n} {} systems with Cholesky factors (potrsBatched)",
                T::NAME
            )
        };
        square(&factor.dims, "the Cholesky factors", &context)?;
        rows_match(n, b.dims.rows, "B", &context)?;
        if b.dims.cols != 1 {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!(
                    "B has {} columns; cuSOLVER's batched solve takes one right-hand side per system",
                    b.dims.cols
                ),
            ));
        }
        check_batch(
            factor.dims.extent(),
            stride_a,
            batch,
            factor.view.len(),
            false,
            "A",
            &context,
        )?;
        check_batch(
            b.dims.extent(),
            stride_b,
            batch,
            b.view.len(),
            true,
            "B",
            &context,
        )?;
        if n == 0 {
            return Ok(());
        }
        self.same_device(&[factor.view.device(), b.view.device()], &context)?;
        let (ni, lda, ldb, bi) = (
            to_int(n, "n", &context)?,
            to_int(factor.dims.ld, "lda", &context)?,
            to_int(b.dims.ld, "ldb", &context)?,
            to_int(batch, "the batch count", &context)?,
        );
        let pa = self.pointer_array::<T>(factor.view.ptr(), stride_a, batch, &context)?;
        let pb = self.pointer_array::<T>(b.view.ptr(), stride_b, batch, &context)?;
        let (_work, mut info) = self.scratch::<T>(0, 1)?;
        let pinfo = info.view_mut().ptr() as *mut c_int;
        let (parr, pbrr) = (pa as *mut *mut T, pb as *mut *mut T);
        self.launch(&[factor.view.buffer(), b.view.buffer()], &context, || {
            // SAFETY: both pointer arrays hold `batch` device pointers to
            // matrices inside their views (checked; `B`'s exclusive and not
            // overlapping); cuSOLVER reads the factors and writes `B`; all live
            // until the queued work is done.
            unsafe {
                T::potrs_batched(
                    self.handle,
                    uplo.raw(),
                    ni,
                    1,
                    parr,
                    lda,
                    pbrr,
                    ldb,
                    pinfo,
                    bi,
                )
            }
        })?;
        self.check_info(&info, 1, false, &context, |p| {
            SolverErrorKind::InvalidParameter { position: p }
        })
    }
}
