//! [`Solver`]: a cuSOLVER dense handle bound to a stream, and the factorisations
//! on it.
//!
//! # Architecture Invariant
//! Every operation goes the same way: its operands' shapes, lengths and devices
//! are checked first (nothing reaches cuSOLVER that it would refuse or read out
//! of bounds); the workspace is sized by cuSOLVER's `*_bufferSize` and allocated
//! per call on the handle's stream (its free ordered after the call); the call
//! is queued inside the stream's context alone; the operands' frees are ordered
//! after the stream (rule 2); and cuSOLVER's `info` is read back (which waits for
//! the stream) and turned into a typed [`SolverError`] when it is not zero.

use std::cell::Cell;
use std::ffi::{c_int, c_schar};
use std::marker::PhantomData;
use std::ptr;

use cudars_bindings::cusolver as sys;
use cudars_core::{
    Buffer, ContextScope, Device, DeviceBuffer, DeviceView, DeviceViewMut, InvalidKind, Stream,
    rebind_stream,
};

use crate::element::Element;
use crate::error::{Error, Result, SolverError, SolverErrorKind, check, check_driver};
use crate::matrix::{MatMut, MatRef, check_batch, to_int};

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
    fn raw(self) -> sys::cublasOperation_t {
        match self {
            Self::N => sys::CUBLAS_OP_N,
            Self::T => sys::CUBLAS_OP_T,
        }
    }
}

/// Which triangle of a symmetric matrix holds it (the other is not read).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fill {
    /// The lower triangle (and the diagonal).
    Lower,
    /// The upper triangle (and the diagonal).
    Upper,
}

impl Fill {
    fn raw(self) -> sys::cublasFillMode_t {
        match self {
            Self::Lower => sys::CUBLAS_FILL_MODE_LOWER,
            Self::Upper => sys::CUBLAS_FILL_MODE_UPPER,
        }
    }
}

/// Which side `Q` multiplies from in [`Solver::ormqr`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// `C = op(Q)·C`.
    Left,
    /// `C = C·op(Q)`.
    Right,
}

/// What [`Solver::syevd`] computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EigJob {
    /// The eigenvalues only (the matrix is overwritten with scratch).
    Values,
    /// The eigenvalues and, in the matrix's place, its orthonormal eigenvectors
    /// (column `j` belongs to eigenvalue `j`).
    ValuesAndVectors,
}

/// A cuSOLVER dense handle (`cusolverDnHandle_t`) bound to one stream: every
/// operation is queued on that stream, in its device's context, and reads back
/// cuSOLVER's `info` output before it returns, so it waits for the stream: a
/// singular or indefinite matrix is an error when the call returns, never NaNs
/// found later.
///
/// Matrices are column-major ([`MatRef`], [`MatMut`]), as LAPACK's; every view a
/// call writes is borrowed mutably. Workspaces are sized by cuSOLVER and
/// allocated per call from the device's memory resource (stream-ordered), their
/// frees ordered after the call.
///
/// `Send` but not `Sync`: cuSOLVER allows a handle on one thread at a time. Use
/// one handle per stream (and per thread).
///
/// ```no_run
/// use cudars_core::{Device, DeviceBuffer, StreamOptions};
/// use cudars_solver::{Fill, MatMut, Solver};
///
/// let dev = Device::new(0)?;
/// let stream = dev.create_stream(StreamOptions::default())?;
/// let solver = Solver::new(&stream)?;
/// // A symmetric positive definite 2×2 matrix and a right-hand side.
/// let mut a = DeviceBuffer::from_host(&dev, &[4.0f64, 2.0, 2.0, 3.0], &stream)?;
/// let mut b = DeviceBuffer::from_host(&dev, &[2.0f64, 1.0], &stream)?;
/// let mut a = MatMut::col_major(a.view_mut(), 2, 2)?;
/// solver.potrf(Fill::Lower, &mut a)?;
/// solver.potrs(Fill::Lower, a.as_ref(), &mut MatMut::col_major(b.view_mut(), 2, 1)?)?;
/// assert_eq!(b.to_vec(&stream)?, [0.5, 0.0]);
/// # Ok::<(), cudars_solver::Error>(())
/// ```
#[derive(Debug)]
pub struct Solver {
    handle: sys::cusolverDnHandle_t,
    stream: Stream,
    /// `!Sync` by design, not by the accident of the handle's type: the
    /// library allows one thread at a time on a handle.
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: a cuSOLVER handle may move between threads; it is used by one at a
// time, which `!Sync` guarantees (the `_not_sync` marker). Soundness contract:
// rule 11.
unsafe impl Send for Solver {}

impl Solver {
    /// Creates a handle on `stream`'s device and binds it to `stream`.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when cuSOLVER cannot be loaded;
    /// [`Error::DriverTooOld`] when the driver is older than cuSOLVER's CUDA
    /// major (the crate docs' "Which driver"); cuSOLVER's error.
    pub fn new(stream: &Stream) -> Result<Self> {
        let context = || {
            format!(
                "creating a cuSOLVER handle on device {}",
                stream.device().ordinal()
            )
        };
        check_driver(context)?;
        let _scope = ContextScope::for_stream(stream)?;
        let mut handle = ptr::null_mut();
        // SAFETY: `handle` is valid for writes; the stream's context is current.
        let status = unsafe { sys::cusolverDnCreate(&mut handle) };
        check(status, context)?;
        // Owned from here: a failure below destroys it in `Drop`.
        let solver = Self {
            handle,
            stream: stream.clone(),
            _not_sync: PhantomData,
        };
        // SAFETY: a live handle and a live stream of its device.
        let status = unsafe { sys::cusolverDnSetStream(solver.handle, stream.handle().cast()) };
        check(status, || "binding a cuSOLVER handle to a stream".into())?;
        Ok(solver)
    }

    /// The stream the handle queues work on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Binds the handle to another stream of the same device. The new stream
    /// first waits for the work queued on the old one (an event), so calls never
    /// overlap.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] ([`InvalidKind::OtherDevice`]) for a stream of
    /// another device; cuSOLVER's error.
    pub fn set_stream(&mut self, stream: &Stream) -> Result<()> {
        // Soundness contract, rule 2: what the handle keeps for its calls is used
        // by one call at a time, so calls are totally ordered whatever stream they
        // are queued on; `rebind_stream` orders the new stream after the old.
        let handle = self.handle;
        rebind_stream(
            &mut self.stream,
            stream,
            "binding a cuSOLVER handle to a stream",
            |raw| {
                // SAFETY: a live handle and a live stream of its device, whose
                // context is current.
                let status = unsafe { sys::cusolverDnSetStream(handle, raw.cast()) };
                check(status, || "binding a cuSOLVER handle to a stream".into())
            },
        )
    }

    /// The raw handle, for calls this crate does not wrap. It stays owned by
    /// `self`.
    pub fn handle(&self) -> sys::cusolverDnHandle_t {
        self.handle
    }

    /// Refuses an operand on another device than the handle's stream.
    fn same_device(&self, devices: &[&Device], context: &dyn Fn() -> String) -> Result<()> {
        let own = self.stream.device();
        match devices.iter().find(|d| **d != own) {
            Some(d) => Err(Error::invalid(
                context(),
                InvalidKind::OtherDevice,
                format!(
                    "an operand is on device {}, the cuSOLVER handle's stream on device {}",
                    d.ordinal(),
                    own.ordinal()
                ),
            )),
            None => Ok(()),
        }
    }

    /// Asks cuSOLVER a workspace size, in the stream's context.
    fn buffer_size(
        &self,
        context: &dyn Fn() -> String,
        query: impl FnOnce(*mut c_int) -> sys::cusolverStatus_t,
    ) -> Result<usize> {
        let _scope = ContextScope::for_stream(&self.stream)?;
        let mut lwork: c_int = 0;
        check(query(&mut lwork), || {
            format!("{} (sizing the workspace)", context())
        })?;
        // A negative size would be cuSOLVER's bug; treat it as none.
        Ok(usize::try_from(lwork).unwrap_or(0))
    }

    /// A workspace of `len` elements (at least one: an empty allocation is
    /// refused), and an `info` output of `infos` integers, on the stream.
    fn scratch<T: Element>(
        &self,
        len: usize,
        infos: usize,
    ) -> Result<(DeviceBuffer<T>, DeviceBuffer<c_int>)> {
        let dev = self.stream.device();
        let work = DeviceBuffer::<T>::allocate(dev, len.max(1), &self.stream)?;
        let info = DeviceBuffer::<c_int>::zeroed(dev, infos.max(1), &self.stream)?;
        Ok((work, info))
    }

    /// Queues one cuSOLVER call in the stream's context, orders `written`'s and
    /// `read`'s frees after the stream (whatever the status: a failed call may
    /// have queued work), then checks the status.
    fn launch(
        &self,
        buffers: &[&Buffer],
        context: &dyn Fn() -> String,
        call: impl FnOnce() -> sys::cusolverStatus_t,
    ) -> Result<()> {
        let scope = ContextScope::for_stream(&self.stream)?;
        let status = call();
        // The library's calls are queued: leave the context (and a green
        // context's lock) before ordering frees, which may take other contexts'.
        drop(scope);
        let ordered = Buffer::order_frees_after(buffers.iter().copied(), &self.stream);
        check(status, context)?;
        ordered?;
        Ok(())
    }

    /// Reads `info` back (waiting for the stream) and turns the first nonzero
    /// entry into a [`SolverError`]: a negative one is a refused parameter, a
    /// positive one `positive`'s kind. `batched` names the matrix.
    fn check_info(
        &self,
        info: &DeviceBuffer<c_int>,
        count: usize,
        batched: bool,
        context: &dyn Fn() -> String,
        positive: impl Fn(usize) -> SolverErrorKind,
    ) -> Result<()> {
        let values = info.to_vec(&self.stream)?;
        let first = values
            .iter()
            .take(count.max(1))
            .enumerate()
            .find(|(_, v)| **v != 0);
        let Some((i, &v)) = first else {
            return Ok(());
        };
        let magnitude = usize::try_from(v.unsigned_abs()).unwrap_or(usize::MAX);
        let kind = if v < 0 {
            SolverErrorKind::InvalidParameter {
                position: magnitude,
            }
        } else {
            positive(magnitude)
        };
        Err(Error::Extra(SolverError {
            context: context().into(),
            matrix: batched.then_some(i),
            kind,
        }))
    }

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
    /// extent: they are written). Waits for the stream.
    ///
    /// # Errors
    /// [`SolverErrorKind::NotPositiveDefinite`] with the first failing matrix in
    /// [`SolverError::matrix`]; [`Error::InvalidArgument`] for a matrix that is
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
        let parr = ptrs.view().ptr() as *mut *mut T;
        self.launch(&[a.view.buffer()], &context, || {
            // SAFETY: the pointer array holds `batch` device pointers, each to an
            // `n × n` matrix at `lda` inside `a`'s exclusive view (checked, not
            // overlapping); `info` holds `batch` integers; all live until the
            // queued work is done.
            unsafe { T::potrf_batched(self.handle, uplo.raw(), ni, parr, lda, pinfo, bi) }
        })?;
        drop(ptrs);
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
        let (parr, pbrr) = (
            pa.view().ptr() as *mut *mut T,
            pb.view().ptr() as *mut *mut T,
        );
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
        drop((pa, pb));
        self.check_info(&info, 1, false, &context, |p| {
            SolverErrorKind::InvalidParameter { position: p }
        })
    }

    /// A device array of `batch` pointers, `stride` elements apart from `base`
    /// (checked to lie inside the view by the caller).
    fn pointer_array<T: Element>(
        &self,
        base: u64,
        stride: usize,
        batch: usize,
        context: &dyn Fn() -> String,
    ) -> Result<DeviceBuffer<u64>> {
        let step = stride
            .checked_mul(std::mem::size_of::<T>())
            .and_then(|s| u64::try_from(s).ok())
            .ok_or_else(|| {
                Error::invalid(context(), InvalidKind::OutOfRange, "the stride overflows")
            })?;
        let ptrs: Vec<u64> = (0..batch as u64).map(|i| base + i * step).collect();
        Ok(DeviceBuffer::from_host(
            self.stream.device(),
            &ptrs,
            &self.stream,
        )?)
    }

    /// QR factorisation (`geqrf`) of the `m × n` matrix `A`, in place: `R` on
    /// and above the diagonal, the Householder vectors of `Q` below it, and
    /// their scalars in `tau` (at least `min(m, n)` elements). Form `Q` with
    /// [`orgqr`](Self::orgqr) or apply it with [`ormqr`](Self::ormqr). Waits for
    /// the stream.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a short `tau` ([`InvalidKind::OutOfRange`])
    /// or an operand on another device ([`InvalidKind::OtherDevice`]);
    /// cuSOLVER's error.
    pub fn geqrf<T: Element>(
        &self,
        a: &mut MatMut<'_, T>,
        mut tau: DeviceViewMut<'_, T>,
    ) -> Result<()> {
        let (m, n) = (a.dims.rows, a.dims.cols);
        let context = || format!("QR-factorising a {m}×{n} {} matrix (geqrf)", T::NAME);
        let k = m.min(n);
        if tau.len() < k {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!(
                    "tau holds {} elements, fewer than min(m, n) = {k}",
                    tau.len()
                ),
            ));
        }
        if a.dims.is_empty() {
            return Ok(());
        }
        self.same_device(&[a.view.device(), tau.device()], &context)?;
        let (mi, ni, lda) = (
            to_int(m, "m", &context)?,
            to_int(n, "n", &context)?,
            to_int(a.dims.ld, "lda", &context)?,
        );
        let pa = a.view.ptr() as *mut T;
        let lwork = self.buffer_size(&context, |lw| {
            // SAFETY: `A` is `m × n` at `lda` on the handle's device.
            unsafe { T::geqrf_buffer_size(self.handle, mi, ni, pa, lda, lw) }
        })?;
        let lwork_i = to_int(lwork, "the workspace size", &context)?;
        let (mut work, mut info) = self.scratch::<T>(lwork, 1)?;
        let (pw, pinfo) = (
            work.view_mut().ptr() as *mut T,
            info.view_mut().ptr() as *mut c_int,
        );
        let ptau = tau.reborrow().ptr() as *mut T;
        self.launch(&[a.view.buffer(), tau.buffer()], &context, || {
            // SAFETY: `A` is `m × n` at `lda` in its exclusive view, `tau` holds
            // `min(m, n)` exclusive elements, the workspace `lwork`, all on the
            // handle's device and alive until the queued work is done.
            unsafe { T::geqrf(self.handle, mi, ni, pa, lda, ptau, pw, lwork_i, pinfo) }
        })?;
        self.check_info(&info, 1, false, &context, |p| {
            SolverErrorKind::InvalidParameter { position: p }
        })
    }

    /// Multiplies `C` by `op(Q)` (`ormqr`), `Q` being the orthogonal factor that
    /// [`geqrf`](Self::geqrf) left in `qr` (`r × c`, its `k = min(r, c)`
    /// Householder vectors) and `tau` (at least `k` elements): `C = op(Q)·C`
    /// ([`Side::Left`], `C` has `r` rows) or `C·op(Q)` ([`Side::Right`], `C` has
    /// `r` columns). Waits for the stream.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for shapes that do not fit or a short `tau`
    /// ([`InvalidKind::OutOfRange`]) or an operand on another device
    /// ([`InvalidKind::OtherDevice`]); cuSOLVER's error.
    pub fn ormqr<T: Element>(
        &self,
        side: Side,
        op: Op,
        qr: MatRef<'_, T>,
        tau: DeviceView<'_, T>,
        c: &mut MatMut<'_, T>,
    ) -> Result<()> {
        let (m, n) = (c.dims.rows, c.dims.cols);
        let r = qr.dims.rows;
        let k = r.min(qr.dims.cols);
        let context = || {
            format!(
                "multiplying a {m}×{n} {} matrix by Q from a QR factorisation (ormqr)",
                T::NAME
            )
        };
        let (against, what) = match side {
            Side::Left => (m, "rows"),
            Side::Right => (n, "columns"),
        };
        if r != against {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!("Q is {r}×{r} but C has {against} {what}"),
            ));
        }
        if tau.len() < k {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!(
                    "tau holds {} elements, fewer than the {k} reflectors",
                    tau.len()
                ),
            ));
        }
        if c.dims.is_empty() || k == 0 {
            return Ok(());
        }
        self.same_device(&[qr.view.device(), tau.device(), c.view.device()], &context)?;
        let (mi, ni, ki, lda, ldc) = (
            to_int(m, "m", &context)?,
            to_int(n, "n", &context)?,
            to_int(k, "k", &context)?,
            to_int(qr.dims.ld, "lda", &context)?,
            to_int(c.dims.ld, "ldc", &context)?,
        );
        let side_raw = match side {
            Side::Left => sys::CUBLAS_SIDE_LEFT,
            Side::Right => sys::CUBLAS_SIDE_RIGHT,
        };
        let (pa, pt, pc) = (
            qr.view.ptr() as *const T,
            tau.ptr() as *const T,
            c.view.ptr() as *mut T,
        );
        let lwork = self.buffer_size(&context, |lw| {
            // SAFETY: `qr` holds `r × k` at `lda`, `tau` `k` elements, `C` is
            // `m × n` at `ldc`, all on the handle's device.
            unsafe {
                T::ormqr_buffer_size(
                    self.handle,
                    side_raw,
                    op.raw(),
                    mi,
                    ni,
                    ki,
                    pa,
                    lda,
                    pt,
                    pc,
                    ldc,
                    lw,
                )
            }
        })?;
        let lwork_i = to_int(lwork, "the workspace size", &context)?;
        let (mut work, mut info) = self.scratch::<T>(lwork, 1)?;
        let (pw, pinfo) = (
            work.view_mut().ptr() as *mut T,
            info.view_mut().ptr() as *mut c_int,
        );
        self.launch(
            &[qr.view.buffer(), tau.buffer(), c.view.buffer()],
            &context,
            || {
                // SAFETY: as for the size; `C` is exclusive, the workspace holds
                // `lwork` elements, all alive until the queued work is done.
                unsafe {
                    T::ormqr(
                        self.handle,
                        side_raw,
                        op.raw(),
                        mi,
                        ni,
                        ki,
                        pa,
                        lda,
                        pt,
                        pc,
                        ldc,
                        pw,
                        lwork_i,
                        pinfo,
                    )
                }
            },
        )?;
        self.check_info(&info, 1, false, &context, |p| {
            SolverErrorKind::InvalidParameter { position: p }
        })
    }

    /// Forms the first `n` columns of `Q` (`orgqr`) in place of
    /// [`geqrf`](Self::geqrf)'s output `A` (`m × n`, `m ≥ n`), from its `n`
    /// Householder vectors and `tau` (at least `n` elements): afterwards `A`
    /// holds `Q`'s `m × n` orthonormal columns, and `Q·R = A` (as it was). Waits
    /// for the stream.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `m < n` or `tau` is short
    /// ([`InvalidKind::OutOfRange`]) or an operand is on another device
    /// ([`InvalidKind::OtherDevice`]); cuSOLVER's error.
    pub fn orgqr<T: Element>(&self, a: &mut MatMut<'_, T>, tau: DeviceView<'_, T>) -> Result<()> {
        let (m, n) = (a.dims.rows, a.dims.cols);
        let context = || {
            format!(
                "forming Q of a {m}×{n} {} QR factorisation (orgqr)",
                T::NAME
            )
        };
        if m < n {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!("A has fewer rows ({m}) than columns ({n})"),
            ));
        }
        if tau.len() < n {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!("tau holds {} elements, fewer than n = {n}", tau.len()),
            ));
        }
        if a.dims.is_empty() {
            return Ok(());
        }
        self.same_device(&[a.view.device(), tau.device()], &context)?;
        let (mi, ni, lda) = (
            to_int(m, "m", &context)?,
            to_int(n, "n", &context)?,
            to_int(a.dims.ld, "lda", &context)?,
        );
        let (pa, pt) = (a.view.ptr() as *mut T, tau.ptr() as *const T);
        let lwork = self.buffer_size(&context, |lw| {
            // SAFETY: `A` is `m × n` at `lda`, `tau` holds `n` elements, both on
            // the handle's device.
            unsafe { T::orgqr_buffer_size(self.handle, mi, ni, ni, pa, lda, pt, lw) }
        })?;
        let lwork_i = to_int(lwork, "the workspace size", &context)?;
        let (mut work, mut info) = self.scratch::<T>(lwork, 1)?;
        let (pw, pinfo) = (
            work.view_mut().ptr() as *mut T,
            info.view_mut().ptr() as *mut c_int,
        );
        self.launch(&[a.view.buffer(), tau.buffer()], &context, || {
            // SAFETY: as for the size; `A` is exclusive, the workspace holds
            // `lwork` elements, all alive until the queued work is done.
            unsafe { T::orgqr(self.handle, mi, ni, ni, pa, lda, pt, pw, lwork_i, pinfo) }
        })?;
        self.check_info(&info, 1, false, &context, |p| {
            SolverErrorKind::InvalidParameter { position: p }
        })
    }

    /// Eigenvalues (ascending, into `w`: at least `n` elements) and, with
    /// [`EigJob::ValuesAndVectors`], eigenvectors (in `A`'s place) of the
    /// symmetric `n × n` matrix held in `A`'s `uplo` triangle (`syevd`, divide
    /// and conquer). `A` is overwritten either way. Waits for the stream.
    ///
    /// # Errors
    /// [`SolverErrorKind::NotConverged`] ([`Error::Extra`]);
    /// [`Error::InvalidArgument`] for a matrix that is not square or a short `w`
    /// ([`InvalidKind::OutOfRange`]) or an operand on another device
    /// ([`InvalidKind::OtherDevice`]); cuSOLVER's error.
    pub fn syevd<T: Element>(
        &self,
        job: EigJob,
        uplo: Fill,
        a: &mut MatMut<'_, T>,
        mut w: DeviceViewMut<'_, T>,
    ) -> Result<()> {
        let n = a.dims.rows;
        let context = || {
            format!(
                "the eigen-decomposition of a symmetric {n}×{n} {} matrix (syevd)",
                T::NAME
            )
        };
        square(&a.dims, "A", &context)?;
        if w.len() < n {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!("w holds {} elements, fewer than n = {n}", w.len()),
            ));
        }
        if n == 0 {
            return Ok(());
        }
        self.same_device(&[a.view.device(), w.device()], &context)?;
        let (ni, lda) = (
            to_int(n, "n", &context)?,
            to_int(a.dims.ld, "lda", &context)?,
        );
        let jobz = match job {
            EigJob::Values => sys::CUSOLVER_EIG_MODE_NOVECTOR,
            EigJob::ValuesAndVectors => sys::CUSOLVER_EIG_MODE_VECTOR,
        };
        let (pa, pw_) = (a.view.ptr() as *mut T, w.reborrow().ptr() as *mut T);
        let lwork = self.buffer_size(&context, |lw| {
            // SAFETY: `A` is `n × n` at `lda`, `w` holds `n` elements, both on
            // the handle's device.
            unsafe { T::syevd_buffer_size(self.handle, jobz, uplo.raw(), ni, pa, lda, pw_, lw) }
        })?;
        let lwork_i = to_int(lwork, "the workspace size", &context)?;
        let (mut work, mut info) = self.scratch::<T>(lwork, 1)?;
        let (pwork, pinfo) = (
            work.view_mut().ptr() as *mut T,
            info.view_mut().ptr() as *mut c_int,
        );
        self.launch(&[a.view.buffer(), w.buffer()], &context, || {
            // SAFETY: `A` and `w` are exclusive and hold what cuSOLVER writes,
            // the workspace `lwork` elements, all on the handle's device and
            // alive until the queued work is done.
            unsafe {
                T::syevd(
                    self.handle,
                    jobz,
                    uplo.raw(),
                    ni,
                    pa,
                    lda,
                    pw_,
                    pwork,
                    lwork_i,
                    pinfo,
                )
            }
        })?;
        self.check_info(&info, 1, false, &context, |unconverged| {
            SolverErrorKind::NotConverged { unconverged }
        })
    }

    /// The singular value decomposition `A = U·Σ·Vᵀ` of the `m × n` matrix `A`,
    /// `m ≥ n` (cuSOLVER's `gesvd` takes no wide matrix: decompose `Aᵀ`): the
    /// singular values, descending, into `s` (at least `n` elements); with `u`,
    /// all of `U` (`m × m`); with `vt`, `Vᵀ` (`n × n`). `A` is overwritten.
    /// Waits for the stream.
    ///
    /// # Errors
    /// [`SolverErrorKind::NotConverged`] ([`Error::Extra`]);
    /// [`Error::InvalidArgument`] for `m < n`, a short `s` or a `U` or `Vᵀ` of
    /// another shape ([`InvalidKind::OutOfRange`]) or an operand on another
    /// device ([`InvalidKind::OtherDevice`]); cuSOLVER's error.
    pub fn gesvd<T: Element>(
        &self,
        a: &mut MatMut<'_, T>,
        mut s: DeviceViewMut<'_, T>,
        mut u: Option<&mut MatMut<'_, T>>,
        mut vt: Option<&mut MatMut<'_, T>>,
    ) -> Result<()> {
        let (m, n) = (a.dims.rows, a.dims.cols);
        let context = || format!("the SVD of a {m}×{n} {} matrix (gesvd)", T::NAME);
        if m < n {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!(
                    "A has fewer rows ({m}) than columns ({n}); cuSOLVER's gesvd needs m ≥ n \
                     (decompose the transpose)"
                ),
            ));
        }
        if s.len() < n {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!("s holds {} elements, fewer than n = {n}", s.len()),
            ));
        }
        for (mat, side, what) in [(u.as_deref(), m, "U"), (vt.as_deref(), n, "Vᵀ")] {
            if let Some(x) = mat {
                if x.dims.rows != side || x.dims.cols != side {
                    return Err(Error::invalid(
                        context(),
                        InvalidKind::OutOfRange,
                        format!(
                            "{what} is {}×{}, not {side}×{side}",
                            x.dims.rows, x.dims.cols
                        ),
                    ));
                }
            }
        }
        if a.dims.is_empty() {
            return Ok(());
        }
        let mut devices = vec![a.view.device(), s.device()];
        devices.extend(u.as_deref().map(|x| x.view.device()));
        devices.extend(vt.as_deref().map(|x| x.view.device()));
        self.same_device(&devices, &context)?;
        let (mi, ni, lda) = (
            to_int(m, "m", &context)?,
            to_int(n, "n", &context)?,
            to_int(a.dims.ld, "lda", &context)?,
        );
        // Without U (Vᵀ), cuSOLVER does not touch it; its leading dimension is
        // still given as a valid one.
        let job = |x: bool| if x { b'A' as c_schar } else { b'N' as c_schar };
        let (jobu, jobvt) = (job(u.is_some()), job(vt.is_some()));
        let (pu, ldu) = match u.as_deref_mut() {
            Some(x) => (x.view.ptr() as *mut T, to_int(x.dims.ld, "ldu", &context)?),
            None => (ptr::null_mut(), mi),
        };
        let (pvt, ldvt) = match vt.as_deref_mut() {
            Some(x) => (x.view.ptr() as *mut T, to_int(x.dims.ld, "ldvt", &context)?),
            None => (ptr::null_mut(), ni),
        };
        let lwork = self.buffer_size(&context, |lw| {
            // SAFETY: `lw` is valid for writes.
            unsafe { T::gesvd_buffer_size(self.handle, mi, ni, lw) }
        })?;
        let lwork_i = to_int(lwork, "the workspace size", &context)?;
        let (mut work, mut info) = self.scratch::<T>(lwork, 1)?;
        // `rwork`: the unconverged superdiagonal when `info > 0` (min(m, n) - 1
        // elements).
        let mut rwork = DeviceBuffer::<T>::allocate(self.stream.device(), n, &self.stream)?;
        let (pw, pr, pinfo) = (
            work.view_mut().ptr() as *mut T,
            rwork.view_mut().ptr() as *mut T,
            info.view_mut().ptr() as *mut c_int,
        );
        let (pa, ps) = (a.view.ptr() as *mut T, s.reborrow().ptr() as *mut T);
        let mut buffers = vec![a.view.buffer(), s.buffer()];
        buffers.extend(u.as_deref().map(|x| x.view.buffer()));
        buffers.extend(vt.as_deref().map(|x| x.view.buffer()));
        self.launch(&buffers, &context, || {
            // SAFETY: `A` (`m × n` at `lda`), `s` (`n`), `U` (`m × m` at `ldu`) and
            // `Vᵀ` (`n × n` at `ldvt`) when given are exclusive views on the
            // handle's device; the workspace holds `lwork` elements and `rwork`
            // `n`; all live until the queued work is done.
            unsafe {
                T::gesvd(
                    self.handle,
                    jobu,
                    jobvt,
                    mi,
                    ni,
                    pa,
                    lda,
                    ps,
                    pu,
                    ldu,
                    pvt,
                    ldvt,
                    pw,
                    lwork_i,
                    pr,
                    pinfo,
                )
            }
        })?;
        self.check_info(&info, 1, false, &context, |unconverged| {
            SolverErrorKind::NotConverged { unconverged }
        })
    }
}

/// Refuses a matrix that is not square.
fn square(d: &crate::matrix::Dims, what: &str, context: &dyn Fn() -> String) -> Result<()> {
    if d.rows == d.cols {
        return Ok(());
    }
    Err(Error::invalid(
        context(),
        InvalidKind::OutOfRange,
        format!("{what} is {}×{}, not square", d.rows, d.cols),
    ))
}

/// Refuses a right-hand side whose rows differ from the system's order.
fn rows_match(n: usize, rows: usize, what: &str, context: &dyn Fn() -> String) -> Result<()> {
    if n == rows {
        return Ok(());
    }
    Err(Error::invalid(
        context(),
        InvalidKind::OutOfRange,
        format!("the system is {n}×{n} but {what} has {rows} rows"),
    ))
}

impl Drop for Solver {
    fn drop(&mut self) {
        // Soundness rule (issue 26, "state used by queued work outlives it"): every
        // operation waits for the stream before it returns (it reads cuSOLVER's
        // `info`), and a stream change orders the new stream after the old, but a
        // call that failed after queuing work may not have; the destroy waits for
        // the stream first, so nothing queued still uses the handle's state. A
        // failure here has nowhere to go. On a driver callback thread it runs
        // later, on an ordinary thread.
        let stream = self.stream.clone();
        let destroy = move |h| {
            let _ = stream.sync();
            let _scope = ContextScope::for_stream(&stream);
            // SAFETY: the handle is live and not used after this.
            let _ = unsafe { sys::cusolverDnDestroy(h) };
            Ok(())
        };
        // SAFETY: the handle is owned by `self` and destroyed only here; cuSOLVER
        // lets any thread destroy it.
        unsafe {
            cudars_core::release_or_defer("destroying a cuSOLVER handle", self.handle, destroy)
        };
    }
}
