//! [`Blas`]: a cuBLAS handle bound to a stream, and the operations on it.

use std::cell::Cell;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::ptr;

use cudars_bindings::cublas as sys;
use cudars_core::{ContextScope, DeviceView, DeviceViewMut, InvalidKind, Stream, rebind_stream};

use crate::element::Element;
use crate::error::{Error, Result, check, check_driver};
use crate::matrix::{GemmShape, MatMut, MatRef, Op, to_int};

/// A cuBLAS handle bound to one stream: every operation is queued on that stream,
/// in its device's context, and returns without waiting (except
/// [`dot`](Self::dot), whose result comes back to the host).
///
/// `Send` but not `Sync`: cuBLAS allows a handle on one thread at a time. Use one
/// handle per stream (and per thread); handles are cheap to keep, not to create.
///
/// ```no_run
/// use cudars_blas::{Blas, MatMut, MatRef, Op};
/// use cudars_core::{Device, DeviceBuffer, StreamOptions};
///
/// let dev = Device::new(0)?;
/// let stream = dev.create_stream(StreamOptions::default())?;
/// let blas = Blas::new(&stream)?;
/// // Row-major 2×3 times 3×2.
/// let a = DeviceBuffer::from_host(&dev, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &stream)?;
/// let b = DeviceBuffer::from_host(&dev, &[1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0], &stream)?;
/// let mut c = DeviceBuffer::<f32>::zeroed(&dev, 4, &stream)?;
/// blas.gemm(
///     1.0,
///     MatRef::row_major(a.view(), 2, 3)?, Op::N,
///     MatRef::row_major(b.view(), 3, 2)?, Op::N,
///     0.0,
///     &mut MatMut::row_major(c.view_mut(), 2, 2)?,
/// )?;
/// assert_eq!(c.to_vec(&stream)?, [4.0, 5.0, 10.0, 11.0]);
/// # Ok::<(), cudars_blas::Error>(())
/// ```
#[derive(Debug)]
pub struct Blas {
    handle: sys::cublasHandle_t,
    stream: Stream,
    /// `!Sync` by design, not by the accident of the handle's type: the
    /// library allows one thread at a time on a handle.
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: a cuBLAS handle may move between threads; it is used by one at a time,
// which `&mut`-free but `!Sync` access guarantees (the `_not_sync` marker).
// Soundness contract: rule 11.
unsafe impl Send for Blas {}

impl Blas {
    /// Creates a handle on `stream`'s device and binds it to `stream`. Scalars
    /// (`alpha`, `beta`, results) are host values.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when cuBLAS cannot be loaded;
    /// [`Error::DriverTooOld`] when the driver is older than cuBLAS's CUDA major
    /// (the crate docs' "Which driver"); cuBLAS's error.
    pub fn new(stream: &Stream) -> Result<Self> {
        let context = || {
            format!(
                "creating a cuBLAS handle on device {}",
                stream.device().ordinal()
            )
        };
        check_driver(context)?;
        let _scope = ContextScope::for_stream(stream)?;
        let mut handle = ptr::null_mut();
        // SAFETY: `handle` is valid for writes; the stream's context is current.
        let status = unsafe { sys::cublasCreate(&mut handle) };
        check(status, context)?;
        let blas = Self {
            handle,
            stream: stream.clone(),
            _not_sync: PhantomData,
        };
        // SAFETY: a live handle and a live stream of its device.
        let status = unsafe { sys::cublasSetStream(blas.handle, stream.handle().cast()) };
        check(status, || "binding a cuBLAS handle to a stream".into())?;
        // SAFETY: a live handle.
        let status =
            unsafe { sys::cublasSetPointerMode(blas.handle, sys::CUBLAS_POINTER_MODE_HOST) };
        check(status, || "setting cuBLAS's pointer mode".into())?;
        Ok(blas)
    }

    /// The stream the handle queues work on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Binds the handle to another stream of the same device. The new stream
    /// first waits for the work queued on the old one (an event), so calls,
    /// which share the handle's workspace, never overlap.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] ([`InvalidKind::OtherDevice`]) for a stream of
    /// another device; cuBLAS's error.
    pub fn set_stream(&mut self, stream: &Stream) -> Result<()> {
        // Soundness contract, rule 2 (one user of the handle at a time): every
        // call uses the handle's workspace (cuBLAS's default workspace, one per
        // handle), so calls are totally ordered whatever stream they are queued
        // on; `rebind_stream` orders the new stream after the old.
        let handle = self.handle;
        rebind_stream(
            &mut self.stream,
            stream,
            "binding a cuBLAS handle to a stream",
            |raw| {
                // SAFETY: a live handle and a live stream of its device, whose
                // context is current.
                let status = unsafe { sys::cublasSetStream(handle, raw.cast()) };
                check(status, || "binding a cuBLAS handle to a stream".into())
            },
        )
    }

    /// The raw handle, for calls this crate does not wrap. It stays owned by
    /// `self`.
    pub fn handle(&self) -> sys::cublasHandle_t {
        self.handle
    }

    /// Checks that every view is on the handle's device and makes its context
    /// current for as long as the returned scope lives.
    fn prepare(
        &self,
        devices: &[&cudars_core::Device],
        context: &dyn Fn() -> String,
    ) -> Result<ContextScope> {
        let own = self.stream.device();
        if let Some(d) = devices.iter().find(|d| **d != own) {
            return Err(Error::invalid(
                context(),
                InvalidKind::OtherDevice,
                format!(
                    "an operand is on device {}, the cuBLAS handle's stream on device {}",
                    d.ordinal(),
                    own.ordinal()
                ),
            ));
        }
        Ok(ContextScope::for_stream(&self.stream)?)
    }

    /// `C = alpha·op(A)·op(B) + beta·C`, for any mix of row- and column-major
    /// operands (see [`MatRef`]): `op(A)` must be `m × k`, `op(B)` `k × n` and
    /// `C` `m × n`. `f16` and `bf16` accumulate in `f32`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: mismatched shapes ([`InvalidKind::OutOfRange`]),
    /// an operand on another device ([`InvalidKind::OtherDevice`]); cuBLAS's error.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm<T: Element>(
        &self,
        alpha: T::Scalar,
        a: MatRef<'_, T>,
        op_a: Op,
        b: MatRef<'_, T>,
        op_b: Op,
        beta: T::Scalar,
        c: &mut MatMut<'_, T>,
    ) -> Result<()> {
        let context = || format!("multiplying {} matrices (GEMM)", T::NAME);
        let shape = GemmShape::new(&a.dims, op_a, &b.dims, op_b, &c.dims, &context)?;
        let scope = self.prepare(
            &[a.view.device(), b.view.device(), c.view.device()],
            &context,
        )?;
        let (p1, p2) = operands(&shape, a.view.ptr(), b.view.ptr());
        // SAFETY: the shapes were checked against each view's length, every view is
        // on the handle's device and lives for the call; C is exclusively borrowed.
        // cuBLAS reads the host scalars before returning.
        let status = unsafe {
            sys::cublasGemmEx(
                self.handle,
                op(shape.op1),
                op(shape.op2),
                shape.m,
                shape.n,
                shape.k,
                (&raw const alpha).cast(),
                p1,
                T::DATA_TYPE,
                shape.ld1,
                p2,
                T::DATA_TYPE,
                shape.ld2,
                (&raw const beta).cast(),
                c.view.ptr() as *mut c_void,
                T::DATA_TYPE,
                shape.ldc,
                T::COMPUTE,
                sys::CUBLAS_GEMM_DEFAULT,
            )
        };
        check(status, context)?;
        // The library's calls are queued: leave the context (and a green
        // context's lock) before ordering frees, which may take other contexts'.
        drop(scope);
        cudars_core::Buffer::order_frees_after(
            [a.view.buffer(), b.view.buffer(), c.view.buffer()],
            &self.stream,
        )?;
        Ok(())
    }

    /// `batch` independent GEMMs `Cᵢ = alpha·op(Aᵢ)·op(Bᵢ) + beta·Cᵢ`, where
    /// `Aᵢ` starts `i · stride_a` elements after `a`'s first (likewise `B`, `C`).
    /// Each view must hold all `batch` matrices; `C`'s must not overlap (its
    /// stride at least the extent of one matrix).
    ///
    /// # Errors
    /// As [`gemm`](Self::gemm), and [`InvalidKind::OutOfRange`] when a view is too
    /// short for `batch` matrices at its stride or `C`'s overlap.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_strided_batched<T: Element>(
        &self,
        alpha: T::Scalar,
        a: Strided<MatRef<'_, T>>,
        op_a: Op,
        b: Strided<MatRef<'_, T>>,
        op_b: Op,
        beta: T::Scalar,
        c: Strided<&mut MatMut<'_, T>>,
        batch: usize,
    ) -> Result<()> {
        let context = || {
            format!(
                "multiplying {batch} batched {} matrices (strided GEMM)",
                T::NAME
            )
        };
        let shape = GemmShape::new(&a.mat.dims, op_a, &b.mat.dims, op_b, &c.mat.dims, &context)?;
        let span = |extent: usize, stride: usize, len: usize, what: &str| -> Result<()> {
            let need = if batch == 0 || extent == 0 {
                Some(0)
            } else {
                (batch - 1)
                    .checked_mul(stride)
                    .and_then(|v| v.checked_add(extent))
            };
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
        };
        span(a.mat.dims.extent(), a.stride, a.mat.view.len(), "A")?;
        span(b.mat.dims.extent(), b.stride, b.mat.view.len(), "B")?;
        span(c.mat.dims.extent(), c.stride, c.mat.view.len(), "C")?;
        if batch > 1 && c.stride < c.mat.dims.extent() {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!(
                    "C's stride {} is less than one matrix's {} elements: the results would overlap",
                    c.stride,
                    c.mat.dims.extent()
                ),
            ));
        }
        let scope = self.prepare(
            &[
                a.mat.view.device(),
                b.mat.view.device(),
                c.mat.view.device(),
            ],
            &context,
        )?;
        let batch_i = to_int(batch, "the batch count", &context)?;
        let stride = |s: usize, what: &str| {
            i64::try_from(s).map_err(|_| {
                Error::invalid(
                    context(),
                    InvalidKind::OutOfRange,
                    format!("{what} {s} is too large"),
                )
            })
        };
        let (sa, sb, sc) = (
            stride(a.stride, "stride_a")?,
            stride(b.stride, "stride_b")?,
            stride(c.stride, "stride_c")?,
        );
        let (p1, p2) = operands(&shape, a.mat.view.ptr(), b.mat.view.ptr());
        let (s1, s2) = if shape.swapped { (sb, sa) } else { (sa, sb) };
        // SAFETY: as in `gemm`, with every matrix of the batch inside its view.
        let status = unsafe {
            sys::cublasGemmStridedBatchedEx(
                self.handle,
                op(shape.op1),
                op(shape.op2),
                shape.m,
                shape.n,
                shape.k,
                (&raw const alpha).cast(),
                p1,
                T::DATA_TYPE,
                shape.ld1,
                s1,
                p2,
                T::DATA_TYPE,
                shape.ld2,
                s2,
                (&raw const beta).cast(),
                c.mat.view.ptr() as *mut c_void,
                T::DATA_TYPE,
                shape.ldc,
                sc,
                batch_i,
                T::COMPUTE,
                sys::CUBLAS_GEMM_DEFAULT,
            )
        };
        check(status, context)?;
        // The library's calls are queued: leave the context (and a green
        // context's lock) before ordering frees, which may take other contexts'.
        drop(scope);
        cudars_core::Buffer::order_frees_after(
            [
                a.mat.view.buffer(),
                b.mat.view.buffer(),
                c.mat.view.buffer(),
            ],
            &self.stream,
        )?;
        Ok(())
    }

    /// `y = alpha·op(A)·x + beta·y`: `op(A)` is `m × n`, `x` holds `n` elements
    /// and `y` `m`. Runs as a GEMM with one column, so every element type works.
    ///
    /// # Errors
    /// As [`gemm`](Self::gemm).
    #[allow(clippy::too_many_arguments)]
    pub fn gemv<T: Element>(
        &self,
        alpha: T::Scalar,
        a: MatRef<'_, T>,
        op_a: Op,
        x: DeviceView<'_, T>,
        beta: T::Scalar,
        y: DeviceViewMut<'_, T>,
    ) -> Result<()> {
        let (xl, yl) = (x.len(), y.len());
        let x = MatRef::col_major(x, xl, 1)?;
        let mut y = MatMut::col_major(y, yl, 1)?;
        self.gemm(alpha, a, op_a, x, Op::N, beta, &mut y)
    }

    /// `y = alpha·x + y` over two views of equal length.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for other lengths or devices; cuBLAS's error.
    pub fn axpy<T: Element>(
        &self,
        alpha: T::Scalar,
        x: DeviceView<'_, T>,
        y: DeviceViewMut<'_, T>,
    ) -> Result<()> {
        let context = || format!("adding a scaled {} vector (AXPY)", T::NAME);
        let n = self.same_len(x.len(), y.len(), &context)?;
        let scope = self.prepare(&[x.device(), y.device()], &context)?;
        // SAFETY: both views hold `n` elements on the handle's device; y is exclusive.
        let status = unsafe {
            sys::cublasAxpyEx(
                self.handle,
                n,
                (&raw const alpha).cast(),
                T::SCALAR_TYPE,
                x.ptr() as *const c_void,
                T::DATA_TYPE,
                1,
                y.ptr() as *mut c_void,
                T::DATA_TYPE,
                1,
                T::SCALAR_TYPE,
            )
        };
        check(status, context)?;
        // The library's calls are queued: leave the context (and a green
        // context's lock) before ordering frees, which may take other contexts'.
        drop(scope);
        cudars_core::Buffer::order_frees_after([x.buffer(), y.buffer()], &self.stream)?;
        Ok(())
    }

    /// `x = alpha·x`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a view of another device; cuBLAS's error.
    pub fn scal<T: Element>(&self, alpha: T::Scalar, x: DeviceViewMut<'_, T>) -> Result<()> {
        let context = || format!("scaling a {} vector (SCAL)", T::NAME);
        let n = to_int(x.len(), "the length", &context)?;
        let scope = self.prepare(&[x.device()], &context)?;
        // SAFETY: the view holds `n` elements on the handle's device and is exclusive.
        let status = unsafe {
            sys::cublasScalEx(
                self.handle,
                n,
                (&raw const alpha).cast(),
                T::SCALAR_TYPE,
                x.ptr() as *mut c_void,
                T::DATA_TYPE,
                1,
                T::SCALAR_TYPE,
            )
        };
        check(status, context)?;
        // The library's calls are queued: leave the context (and a green
        // context's lock) before ordering frees, which may take other contexts'.
        drop(scope);
        cudars_core::Buffer::order_frees_after([x.buffer()], &self.stream)?;
        Ok(())
    }

    /// The dot product `x·y` of two views of equal length, accumulated in
    /// [`Element::Scalar`]'s precision and returned in `T`. Waits for the stream
    /// up to this operation (the result comes back to the host).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for other lengths or devices; cuBLAS's error.
    pub fn dot<T: Element>(&self, x: DeviceView<'_, T>, y: DeviceView<'_, T>) -> Result<T> {
        let context = || format!("a {} dot product (DOT)", T::NAME);
        let n = self.same_len(x.len(), y.len(), &context)?;
        let _scope = self.prepare(&[x.device(), y.device()], &context)?;
        let mut out = T::zeroed();
        // SAFETY: both views hold `n` elements on the handle's device; `out` is a
        // host `T`, which cuBLAS writes before returning in host pointer mode.
        let status = unsafe {
            sys::cublasDotEx(
                self.handle,
                n,
                x.ptr() as *const c_void,
                T::DATA_TYPE,
                1,
                y.ptr() as *const c_void,
                T::DATA_TYPE,
                1,
                (&raw mut out).cast(),
                T::DATA_TYPE,
                T::SCALAR_TYPE,
            )
        };
        check(status, context)?;
        Ok(out)
    }

    fn same_len(&self, x: usize, y: usize, context: &dyn Fn() -> String) -> Result<i32> {
        if x != y {
            return Err(Error::invalid(
                context(),
                InvalidKind::OutOfRange,
                format!("x holds {x} elements and y {y}"),
            ));
        }
        to_int(x, "the length", context)
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        // Soundness rule (issue 26, "state used by queued work outlives it"): the
        // handle's default workspace is released by `cublasDestroy`, which cuBLAS
        // documents as implicitly synchronising the device first, so no call
        // queued on any stream still uses it. A failure here has nowhere to go.
        // On a driver callback thread it runs later, on an ordinary thread.
        let stream = self.stream.clone();
        let destroy = move |h| {
            let _scope = ContextScope::for_stream(&stream);
            // SAFETY: the handle is live and not used after this.
            let _ = unsafe { sys::cublasDestroy(h) };
            Ok(())
        };
        // SAFETY: the handle is owned by `self` and destroyed only here; cuBLAS
        // lets any thread destroy it.
        unsafe {
            cudars_core::release_or_defer("destroying a cuBLAS handle", self.handle, destroy)
        };
    }
}

/// A matrix with the distance between consecutive matrices of a batch, for
/// [`Blas::gemm_strided_batched`].
#[derive(Debug)]
pub struct Strided<M> {
    /// The first matrix of the batch (its view spans the whole batch).
    pub mat: M,
    /// Elements from one matrix's start to the next's.
    pub stride: usize,
}

impl<M> Strided<M> {
    /// `mat` repeated every `stride` elements.
    pub fn new(mat: M, stride: usize) -> Self {
        Self { mat, stride }
    }
}

fn op(o: Op) -> sys::cublasOperation_t {
    match o {
        Op::N => sys::CUBLAS_OP_N,
        Op::T => sys::CUBLAS_OP_T,
    }
}

/// cuBLAS's first and second operand for this shape.
fn operands(
    shape: &GemmShape,
    a: cudars_core::cudars_bindings::driver::CUdeviceptr,
    b: cudars_core::cudars_bindings::driver::CUdeviceptr,
) -> (*const c_void, *const c_void) {
    let (x, y) = if shape.swapped { (b, a) } else { (a, b) };
    (x as *const c_void, y as *const c_void)
}
