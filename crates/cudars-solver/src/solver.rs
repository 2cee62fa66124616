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

use std::cell::{Cell, RefCell};
use std::ffi::c_int;
use std::marker::PhantomData;
use std::ptr;

use cudars_bindings::cusolver as sys;
use cudars_core::{Buffer, ContextScope, Device, DeviceBuffer, InvalidKind, Stream, rebind_stream};

use crate::element::Element;
use crate::error::{Error, Result, SolverError, SolverErrorKind, check, check_driver};

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
    pub(crate) fn raw(self) -> sys::cublasOperation_t {
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
    pub(crate) fn raw(self) -> sys::cublasFillMode_t {
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
/// Matrices are column-major ([`MatRef`](crate::MatRef), [`MatMut`](crate::MatMut)), as LAPACK's; every view a
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
    pub(crate) handle: sys::cusolverDnHandle_t,
    stream: Stream,
    /// The batched calls' device pointer arrays, newest last.
    ptr_cache: RefCell<Vec<PointerArray>>,
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
            ptr_cache: RefCell::new(Vec::new()),
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
        )?;
        // The pointer arrays are freed on the stream they were used on (the new
        // one already waits for it), so every kept array is the current stream's.
        self.ptr_cache.get_mut().clear();
        Ok(())
    }

    /// The raw handle, for calls this crate does not wrap. It stays owned by
    /// `self`.
    pub fn handle(&self) -> sys::cusolverDnHandle_t {
        self.handle
    }

    /// Refuses an operand on another device than the handle's stream.
    pub(crate) fn same_device(
        &self,
        devices: &[&Device],
        context: &dyn Fn() -> String,
    ) -> Result<()> {
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
    pub(crate) fn buffer_size(
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
    pub(crate) fn scratch<T: Element>(
        &self,
        len: usize,
        infos: usize,
    ) -> Result<(DeviceBuffer<T>, DeviceBuffer<c_int>)> {
        let dev = self.stream.device();
        let work = DeviceBuffer::<T>::allocate(dev, len.max(1), &self.stream)?;
        let info = DeviceBuffer::<c_int>::zeroed(dev, infos.max(1), &self.stream)?;
        Ok((work, info))
    }

    /// Queues one cuSOLVER call in the stream's context, orders `buffers`'
    /// frees after the stream (whatever the status: a failed call may have
    /// queued work), then checks the status.
    pub(crate) fn launch(
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
    pub(crate) fn check_info(
        &self,
        info: &DeviceBuffer<c_int>,
        count: usize,
        batched: bool,
        context: &dyn Fn() -> String,
        positive: impl Fn(usize) -> SolverErrorKind,
    ) -> Result<()> {
        let values = info.to_vec(&self.stream)?;
        match first_failure(&values, count, positive) {
            None => Ok(()),
            Some((i, kind)) => Err(Error::Extra(SolverError {
                context: context().into(),
                matrix: batched.then_some(i),
                kind,
            })),
        }
    }

    /// The device address of an array of `batch` pointers, `stride` elements
    /// apart from `base` (checked to lie inside the view by the caller). The
    /// array is kept (the last [`PTR_CACHE`] of them): a batch solved again
    /// reuses it, with no upload. The GPU only reads it, its contents depend on
    /// the addresses alone (right whatever buffer lies there now), and its free is
    /// ordered on the handle's stream (the cache is emptied when the stream
    /// changes), after every call that used it.
    pub(crate) fn pointer_array<T: Element>(
        &self,
        base: u64,
        stride: usize,
        batch: usize,
        context: &dyn Fn() -> String,
    ) -> Result<u64> {
        let step = stride
            .checked_mul(std::mem::size_of::<T>())
            .and_then(|s| u64::try_from(s).ok())
            .ok_or_else(|| {
                Error::invalid(context(), InvalidKind::OutOfRange, "the stride overflows")
            })?;
        let mut cache = self.ptr_cache.borrow_mut();
        if let Some(hit) = cache
            .iter()
            .find(|p| p.base == base && p.step == step && p.batch == batch)
        {
            return Ok(hit.array.view().ptr());
        }
        let ptrs: Vec<u64> = (0..batch as u64).map(|i| base + i * step).collect();
        let array = DeviceBuffer::from_host(self.stream.device(), &ptrs, &self.stream)?;
        let at = array.view().ptr();
        if cache.len() >= PTR_CACHE {
            cache.remove(0);
        }
        cache.push(PointerArray {
            base,
            step,
            batch,
            array,
        });
        Ok(at)
    }
}

/// How many batched calls' pointer arrays a [`Solver`] keeps. A call takes at
/// most two, and an array returned must not be evicted (freed before the call
/// that uses it is queued) by the second: at least two.
const PTR_CACHE: usize = 4;
const _: () = assert!(PTR_CACHE >= 2);

/// A device array of `batch` pointers `step` bytes apart from `base`.
#[derive(Debug)]
struct PointerArray {
    base: u64,
    step: u64,
    batch: usize,
    array: DeviceBuffer<u64>,
}

/// The first nonzero of the first `count` `info` values, and what it means: a
/// negative one is the position of a parameter cuSOLVER refused, a positive one
/// `positive`'s kind.
fn first_failure(
    values: &[c_int],
    count: usize,
    positive: impl Fn(usize) -> SolverErrorKind,
) -> Option<(usize, SolverErrorKind)> {
    let (i, &v) = values
        .iter()
        .take(count.max(1))
        .enumerate()
        .find(|(_, v)| **v != 0)?;
    let magnitude = usize::try_from(v.unsigned_abs()).unwrap_or(usize::MAX);
    let kind = if v < 0 {
        SolverErrorKind::InvalidParameter {
            position: magnitude,
        }
    } else {
        positive(magnitude)
    };
    Some((i, kind))
}

/// Refuses a matrix that is not square.
pub(crate) fn square(
    d: &crate::matrix::Dims,
    what: &str,
    context: &dyn Fn() -> String,
) -> Result<()> {
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
pub(crate) fn rows_match(
    n: usize,
    rows: usize,
    what: &str,
    context: &dyn Fn() -> String,
) -> Result<()> {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::matrix::Dims;

    #[test]
    fn info_values_become_typed_failures() {
        let singular = |i: usize| SolverErrorKind::Singular { pivot: i - 1 };
        assert_eq!(first_failure(&[0], 1, singular), None);
        assert_eq!(
            first_failure(&[3], 1, singular),
            Some((0, SolverErrorKind::Singular { pivot: 2 }))
        );
        assert_eq!(
            first_failure(&[-4], 1, singular),
            Some((0, SolverErrorKind::InvalidParameter { position: 4 }))
        );
        // A batch: the first failing matrix; entries past `count` are not read.
        let npd = |order: usize| SolverErrorKind::NotPositiveDefinite { order };
        assert_eq!(
            first_failure(&[0, 0, 2, 1], 4, npd),
            Some((2, SolverErrorKind::NotPositiveDefinite { order: 2 }))
        );
        assert_eq!(first_failure(&[0, 0, 2], 2, npd), None);
    }

    #[test]
    fn shapes_are_checked_with_what_was_being_done() {
        let ctx = || "solving".to_string();
        let d = Dims::new(3, 4, 3, 12, "t").unwrap();
        let e = square(&d, "A", &ctx).unwrap_err();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange));
        assert_eq!(e.to_string(), "solving: A is 3×4, not square");
        assert!(square(&Dims::new(3, 3, 3, 9, "t").unwrap(), "A", &ctx).is_ok());
        let e = rows_match(3, 4, "B", &ctx).unwrap_err();
        assert_eq!(e.to_string(), "solving: the system is 3×3 but B has 4 rows");
        assert!(rows_match(3, 3, "B", &ctx).is_ok());
    }

    #[test]
    fn a_solver_error_says_what_was_done_and_what_the_matrix_did() {
        let e = Error::Extra(SolverError {
            context: "LU-factorising a 2×2 f64 matrix (getrf)".into(),
            matrix: None,
            kind: SolverErrorKind::Singular { pivot: 1 },
        });
        assert_eq!(
            e.to_string(),
            "LU-factorising a 2×2 f64 matrix (getrf): the matrix is singular (U(1, 1) is exactly zero)"
        );
        let e = SolverError {
            context: "Cholesky".into(),
            matrix: Some(2),
            kind: SolverErrorKind::NotPositiveDefinite { order: 3 },
        };
        assert_eq!(
            e.to_string(),
            "Cholesky: matrix 2 of the batch: the matrix is not positive definite (its leading minor of order 3 is not)"
        );
    }
}
