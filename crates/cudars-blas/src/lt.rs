//! [`BlasLt`]: cuBLASLt's matrix multiply with fused epilogues, chosen by its
//! heuristics, in a workspace the handle owns.

use std::cell::Cell;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ptr;

use cudars_bindings::cublaslt as sys;
use cudars_core::{ContextScope, DeviceBuffer, DeviceView, InvalidKind, Stream};

use crate::element::Element;
use crate::error::{Error, LtError, LtErrorKind, Result, check_driver_lt, check_lt as check};
use crate::matrix::{GemmShape, Layout, MatMut, MatRef, Op};

/// Which way a bias vector runs: one value per row of the result (added along
/// each row) or one per column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BiasAlong {
    /// One bias value per row of `D` (length = rows): cuBLASLt's own for a
    /// column-major `D`.
    Rows,
    /// One bias value per column of `D` (length = columns): cuBLASLt's own for a
    /// row-major `D` (a linear layer's `X·W + b` in row-major storage).
    Columns,
}

/// What cuBLASLt applies to `alpha·op(A)·op(B) + beta·D` before writing `D`: an
/// optional bias, then an optional activation.
#[derive(Debug, Clone, Copy)]
pub struct Epilogue<'a, T> {
    bias: Option<(DeviceView<'a, T>, BiasAlong)>,
    activation: Activation,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Activation {
    None,
    Relu,
    Gelu,
}

impl<'a, T> Epilogue<'a, T> {
    /// Nothing: a plain matrix multiply.
    pub fn none() -> Self {
        Self {
            bias: None,
            activation: Activation::None,
        }
    }

    /// `max(x, 0)` on every element.
    pub fn relu() -> Self {
        Self {
            bias: None,
            activation: Activation::Relu,
        }
    }

    /// GELU (cuBLASLt's tanh approximation) on every element.
    pub fn gelu() -> Self {
        Self {
            bias: None,
            activation: Activation::Gelu,
        }
    }

    /// Adds `bias` before the activation, one value per row or per column of `D`.
    /// cuBLASLt adds a bias per row of a column-major `D` and per column of a
    /// row-major one; the other pairing is refused (`InvalidArgument`), never
    /// silently transposed. (Handing it over as the other layout, with cuBLASLt's
    /// row order set on every matrix, finds no algorithm on an H100 with
    /// cuBLASLt 13.0.) For a per-row bias of a row-major `D`, compute `Dᵀ`
    /// (column-major, the same memory) as `op(B)ᵀ·op(A)ᵀ`.
    pub fn with_bias(mut self, bias: DeviceView<'a, T>, along: BiasAlong) -> Self {
        self.bias = Some((bias, along));
        self
    }

    fn code(&self) -> sys::cublasLtEpilogue_t {
        match (self.bias.is_some(), self.activation) {
            (false, Activation::None) => sys::CUBLASLT_EPILOGUE_DEFAULT,
            (false, Activation::Relu) => sys::CUBLASLT_EPILOGUE_RELU,
            (false, Activation::Gelu) => sys::CUBLASLT_EPILOGUE_GELU,
            (true, Activation::None) => sys::CUBLASLT_EPILOGUE_BIAS,
            (true, Activation::Relu) => sys::CUBLASLT_EPILOGUE_RELU_BIAS,
            (true, Activation::Gelu) => sys::CUBLASLT_EPILOGUE_GELU_BIAS,
        }
    }
}

/// The workspace [`BlasLt::new`] gives cuBLASLt: 32 MiB, NVIDIA's advice for Hopper.
pub const DEFAULT_WORKSPACE: usize = 32 << 20;

/// A cuBLASLt handle bound to a stream, with a device workspace it owns.
///
/// `Send` but not `Sync`, like [`Blas`](crate::Blas).
///
/// ```no_run
/// # fn f(dev: &cudars_core::Device, stream: &cudars_core::Stream,
/// #      x: cudars_core::DeviceView<'_, f32>, w: cudars_core::DeviceView<'_, f32>,
/// #      b: cudars_core::DeviceView<'_, f32>, y: cudars_core::DeviceViewMut<'_, f32>) -> cudars_blas::Result<()> {
/// use cudars_blas::{BiasAlong, BlasLt, Epilogue, MatMut, MatRef, Op};
/// // A linear layer, row-major: Y (64×256) = relu(X (64×512) · W (512×256) + b).
/// let mut lt = BlasLt::new(stream)?;
/// lt.matmul(
///     1.0,
///     MatRef::row_major(x, 64, 512)?, Op::N,
///     MatRef::row_major(w, 512, 256)?, Op::N,
///     0.0,
///     &mut MatMut::row_major(y, 64, 256)?,
///     Epilogue::relu().with_bias(b, BiasAlong::Columns),
/// )?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct BlasLt {
    handle: sys::cublasLtHandle_t,
    /// Freed after the handle is destroyed (by the destroy, which `Drop` may
    /// defer): taken out in `Drop` and dropped nowhere else.
    workspace: ManuallyDrop<DeviceBuffer<u8>>,
    stream: Stream,
    /// `!Sync` by design, not by the accident of the handle's type: the
    /// library allows one thread at a time on a handle.
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: as for `Blas`: the handle moves between threads, used by one at a time.
// Soundness contract: rule 11.
unsafe impl Send for BlasLt {}

/// Frees a cuBLASLt descriptor when dropped.
struct Guard<H: Copy>(H, unsafe fn(H) -> sys::cublasStatus_t);

impl<H: Copy> Drop for Guard<H> {
    fn drop(&mut self) {
        // SAFETY: the descriptor was created by the matching create call and is
        // not used after this.
        let _ = unsafe { (self.1)(self.0) };
    }
}

impl BlasLt {
    /// A handle on `stream` with a [`DEFAULT_WORKSPACE`] workspace.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when cuBLASLt cannot be loaded;
    /// [`Error::DriverTooOld`] when the driver is older than cuBLASLt's CUDA
    /// major (the crate docs' "Which driver"); the allocation's or cuBLASLt's
    /// error.
    pub fn new(stream: &Stream) -> Result<Self> {
        Self::with_workspace(stream, DEFAULT_WORKSPACE)
    }

    /// A handle on `stream` with a workspace of `bytes` (0 for none: fewer
    /// algorithms qualify).
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn with_workspace(stream: &Stream, bytes: usize) -> Result<Self> {
        let context = || {
            format!(
                "creating a cuBLASLt handle on device {}",
                stream.device().ordinal()
            )
        };
        // Before the workspace: nothing to free when the driver is too old.
        check_driver_lt(context)?;
        // Allocated first: cudars-core's allocation makes its own context
        // current, and the handle must be created in the stream's.
        let workspace = DeviceBuffer::allocate(stream.device(), bytes.max(1), stream)?;
        let _scope = ContextScope::for_stream(stream)?;
        let mut handle = ptr::null_mut();
        // SAFETY: `handle` is valid for writes; the stream's context is current.
        let status = unsafe { sys::cublasLtCreate(&mut handle) };
        check(status, context)?;
        Ok(Self {
            handle,
            workspace: ManuallyDrop::new(workspace),
            stream: stream.clone(),
            _not_sync: PhantomData,
        })
    }

    /// The stream the handle queues work on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The workspace's size in bytes.
    pub fn workspace_size(&self) -> usize {
        self.workspace.len()
    }

    /// `D = epilogue(alpha·op(A)·op(B) + beta·D)`, for any mix of row- and
    /// column-major operands, with the algorithm cuBLASLt's heuristics rank
    /// first for this shape. `f16` and `bf16` accumulate in `f32`; the bias has
    /// `D`'s element type.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: mismatched shapes or a bias of the wrong length
    /// ([`InvalidKind::OutOfRange`]), a bias along the other dimension than
    /// cuBLASLt's for `D`'s layout ([`InvalidKind::Other`]), an operand on another
    /// device ([`InvalidKind::OtherDevice`]); [`Error::Extra`] with
    /// [`LtErrorKind::NoAlgorithm`] when cuBLASLt has no algorithm for this
    /// combination, [`LtErrorKind::Status`] for cuBLASLt's error.
    #[allow(clippy::too_many_arguments)]
    pub fn matmul<T: Element>(
        &mut self,
        alpha: T::Scalar,
        a: MatRef<'_, T>,
        op_a: Op,
        b: MatRef<'_, T>,
        op_b: Op,
        beta: T::Scalar,
        d: &mut MatMut<'_, T>,
        epilogue: Epilogue<'_, T>,
    ) -> Result<()> {
        let context = || format!("a cuBLASLt {} matrix multiply", T::NAME);
        let shape = GemmShape::new(&a.dims, op_a, &b.dims, op_b, &d.dims, &context)?;
        let mut devices = vec![a.view.device(), b.view.device(), d.view.device()];
        if let Some((bias, along)) = &epilogue.bias {
            let native = match d.dims.layout {
                Layout::ColMajor => BiasAlong::Rows,
                Layout::RowMajor => BiasAlong::Columns,
            };
            if *along != native {
                return Err(Error::invalid(
                    context(),
                    InvalidKind::Other,
                    format!(
                        "cuBLASLt adds a bias per row of a column-major result and per column \
                         of a row-major one; this {:?} result asked for one per {}",
                        d.dims.layout,
                        if *along == BiasAlong::Rows {
                            "row"
                        } else {
                            "column"
                        }
                    ),
                ));
            }
            // cuBLASLt's rows of D (its `m`) are the bias's length.
            let want = shape.m as usize;
            if bias.len() != want {
                return Err(Error::invalid(
                    context(),
                    InvalidKind::OutOfRange,
                    format!("the bias holds {} elements; D needs {want}", bias.len()),
                ));
            }
            devices.push(bias.device());
        }
        let own = self.stream.device();
        if let Some(other) = devices.iter().find(|x| **x != own) {
            return Err(Error::invalid(
                context(),
                InvalidKind::OtherDevice,
                format!(
                    "an operand is on device {}, the handle's stream on device {}",
                    other.ordinal(),
                    own.ordinal()
                ),
            ));
        }
        let scope = ContextScope::for_stream(&self.stream)?;

        let dt = sys::cudaDataType_t(T::DATA_TYPE.0);
        let mut desc = ptr::null_mut();
        // SAFETY: `desc` is valid for writes.
        let status = unsafe {
            sys::cublasLtMatmulDescCreate(
                &mut desc,
                sys::cublasComputeType_t(T::COMPUTE.0),
                sys::cudaDataType_t(T::SCALAR_TYPE.0),
            )
        };
        check(status, context)?;
        let desc = Guard(desc, sys::cublasLtMatmulDescDestroy);
        let set = |attr: sys::cublasLtMatmulDescAttributes_t, p: *const c_void, n: usize| {
            // SAFETY: `p` points to `n` readable bytes of the attribute's type.
            let status = unsafe { sys::cublasLtMatmulDescSetAttribute(desc.0, attr, p, n) };
            check(status, context)
        };
        let op_code = |o: Op| -> i32 {
            match o {
                Op::N => 0,
                Op::T => 1,
            }
        };
        let (t1, t2) = (op_code(shape.op1), op_code(shape.op2));
        set(sys::CUBLASLT_MATMUL_DESC_TRANSA, (&raw const t1).cast(), 4)?;
        set(sys::CUBLASLT_MATMUL_DESC_TRANSB, (&raw const t2).cast(), 4)?;
        let epi = epilogue.code();
        set(
            sys::CUBLASLT_MATMUL_DESC_EPILOGUE,
            (&raw const epi).cast(),
            size_of_val(&epi),
        )?;
        if let Some((bias, _)) = &epilogue.bias {
            let p = bias.ptr() as *const c_void;
            set(
                sys::CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                (&raw const p).cast(),
                size_of_val(&p),
            )?;
        }

        // The stored (column-major) shapes of cuBLASLt's operands.
        let (m, n, k) = (shape.m as u64, shape.n as u64, shape.k as u64);
        let stored = |o: Op, r: u64, c: u64| if o == Op::N { (r, c) } else { (c, r) };
        let layout = |(r, c): (u64, u64), ld: i32| -> Result<Guard<sys::cublasLtMatrixLayout_t>> {
            let mut l = ptr::null_mut();
            // SAFETY: `l` is valid for writes.
            let status =
                unsafe { sys::cublasLtMatrixLayoutCreate(&mut l, dt, r, c, i64::from(ld)) };
            check(status, context)?;
            Ok(Guard(l, sys::cublasLtMatrixLayoutDestroy))
        };
        let l1 = layout(stored(shape.op1, m, k), shape.ld1)?;
        let l2 = layout(stored(shape.op2, k, n), shape.ld2)?;
        let ld = layout((m, n), shape.ldc)?;

        let mut pref = ptr::null_mut();
        // SAFETY: `pref` is valid for writes.
        let status = unsafe { sys::cublasLtMatmulPreferenceCreate(&mut pref) };
        check(status, context)?;
        let pref = Guard(pref, sys::cublasLtMatmulPreferenceDestroy);
        let ws = self.workspace.len() as u64;
        // SAFETY: the attribute is a `uint64_t`.
        let status = unsafe {
            sys::cublasLtMatmulPreferenceSetAttribute(
                pref.0,
                sys::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                (&raw const ws).cast(),
                8,
            )
        };
        check(status, context)?;
        let mut heuristic = sys::cublasLtMatmulHeuristicResult_t::default();
        let mut found = 0;
        // SAFETY: every descriptor is live; one result slot is asked for and given.
        let rc = unsafe {
            sys::cublasLtMatmulAlgoGetHeuristic(
                self.handle,
                desc.0,
                l1.0,
                l2.0,
                ld.0,
                ld.0,
                pref.0,
                1,
                &mut heuristic,
                &mut found,
            )
        };
        if found == 0 || rc == sys::CUBLAS_STATUS_NOT_SUPPORTED {
            return Err(Error::Extra(LtError {
                context: format!(
                    "{}: cuBLASLt has no algorithm for this combination of types, shapes, \
                     layouts and epilogue",
                    context()
                )
                .into(),
                kind: LtErrorKind::NoAlgorithm,
                source: sys::CublasLtError::new(sys::CUBLAS_STATUS_NOT_SUPPORTED),
            }));
        }
        check(rc, context)?;
        let (p1, p2) = if shape.swapped {
            (b.view.ptr(), a.view.ptr())
        } else {
            (a.view.ptr(), b.view.ptr())
        };
        let dp = d.view.ptr() as *mut c_void;
        // SAFETY: shapes and the bias were checked against their views, all on the
        // handle's device; D (also C) is exclusive; the workspace is the handle's
        // own, used only on its stream; the algorithm came from the heuristic for
        // these descriptors.
        let status = unsafe {
            sys::cublasLtMatmul(
                self.handle,
                desc.0,
                (&raw const alpha).cast(),
                p1 as *const c_void,
                l1.0,
                p2 as *const c_void,
                l2.0,
                (&raw const beta).cast(),
                dp,
                ld.0,
                dp,
                ld.0,
                &heuristic.algo,
                self.workspace.view_mut().ptr() as *mut c_void,
                self.workspace.len(),
                self.stream.handle().cast(),
            )
        };
        check(status, context)?;
        // Dropping an operand right after must not free memory cuBLASLt still uses.
        let bias = epilogue.bias.as_ref().map(|(v, _)| v.buffer());
        let operands = [a.view.buffer(), b.view.buffer(), d.view.buffer()];
        // The library's calls are queued: leave the context (and a green
        // context's lock) before ordering frees, which may take other contexts'.
        drop(scope);
        cudars_core::Buffer::order_frees_after(operands.into_iter().chain(bias), &self.stream)?;
        Ok(())
    }
}

impl Drop for BlasLt {
    // The workspace is freed after the handle is destroyed, in stream order
    // (after the calls queued with it), also when a driver callback thread
    // defers the destroy to an ordinary thread.
    fn drop(&mut self) {
        let stream = self.stream.clone();
        // SAFETY: taken once, here; `self.workspace` is not used again.
        let mut workspace = Some(unsafe { ManuallyDrop::take(&mut self.workspace) });
        let destroy = move |h| {
            let scope = ContextScope::for_stream(&stream);
            // SAFETY: the handle is live and not used after this.
            let _ = unsafe { sys::cublasLtDestroy(h) };
            // Left before the free, which makes its own context current.
            drop(scope);
            drop(workspace.take());
            Ok(())
        };
        // SAFETY: the handle is owned by `self` and destroyed only here;
        // cuBLASLt lets any thread destroy it.
        unsafe {
            cudars_core::release_or_defer("destroying a cuBLASLt handle", self.handle, destroy)
        };
    }
}
