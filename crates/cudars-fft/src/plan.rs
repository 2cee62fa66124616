//! [`Plan`]: a cuFFT plan of fixed shape, kind and precision, bound to a stream,
//! executed any number of times on typed device views.

use std::cell::Cell;
use std::ffi::c_int;
use std::marker::PhantomData;

use cudars_bindings::cufft as sys;
use cudars_core::{ContextScope, DeviceView, DeviceViewMut, InvalidKind, Stream, rebind_stream};

use crate::error::{Error, Result, check, check_driver};

/// A complex number as cuFFT stores it: real part, then imaginary part.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[repr(C)]
pub struct Complex<T> {
    /// The real part.
    pub re: T,
    /// The imaginary part.
    pub im: T,
}

impl<T> Complex<T> {
    /// `re + i·im`.
    pub const fn new(re: T, im: T) -> Self {
        Self { re, im }
    }
}

// SAFETY: `#[repr(C)]` pairs of `f32` (or `f64`): no padding, every bit pattern valid.
unsafe impl bytemuck::Zeroable for Complex<f32> {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for Complex<f32> {}
// SAFETY: as above.
unsafe impl bytemuck::Zeroable for Complex<f64> {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for Complex<f64> {}

/// Single-precision complex (`cufftComplex`).
pub type Complex32 = Complex<f32>;
/// Double-precision complex (`cufftDoubleComplex`).
pub type Complex64 = Complex<f64>;

/// Which transform a plan computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Real to complex (forward): the half spectrum, `n/2 + 1` values along the
    /// last dimension.
    R2C,
    /// Complex (a half spectrum) to real (inverse).
    C2R,
    /// Complex to complex, either direction.
    C2C,
}

/// The direction of a complex-to-complex transform. Neither direction normalises:
/// a forward then an inverse transform multiplies by the number of points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// `exp(-2πi·jk/n)`.
    Forward,
    /// `exp(+2πi·jk/n)`.
    Inverse,
}

mod sealed {
    pub trait Sealed {}
}

/// The precisions cuFFT computes in: `f32` and `f64`.
pub trait Float: bytemuck::Pod + sealed::Sealed + Send + Sync
where
    Complex<Self>: bytemuck::Pod,
{
    #[doc(hidden)]
    const TYPES: [sys::cufftType; 3];
    #[doc(hidden)]
    /// # Safety
    /// A live plan of this precision and kind; pointers to device memory it fits.
    unsafe fn c2c(
        p: sys::cufftHandle,
        i: *mut Complex<Self>,
        o: *mut Complex<Self>,
        dir: c_int,
    ) -> sys::cufftResult;
    #[doc(hidden)]
    /// # Safety
    /// As for `c2c`.
    unsafe fn r2c(p: sys::cufftHandle, i: *mut Self, o: *mut Complex<Self>) -> sys::cufftResult;
    #[doc(hidden)]
    /// # Safety
    /// As for `c2c`.
    unsafe fn c2r(p: sys::cufftHandle, i: *mut Complex<Self>, o: *mut Self) -> sys::cufftResult;
}

impl sealed::Sealed for f32 {}
impl Float for f32 {
    const TYPES: [sys::cufftType; 3] = [sys::CUFFT_R2C, sys::CUFFT_C2R, sys::CUFFT_C2C];
    unsafe fn c2c(
        p: sys::cufftHandle,
        i: *mut Complex32,
        o: *mut Complex32,
        dir: c_int,
    ) -> sys::cufftResult {
        // SAFETY: the caller's contract; `Complex32` is `cufftComplex`'s layout.
        unsafe { sys::cufftExecC2C(p, i.cast(), o.cast(), dir) }
    }
    unsafe fn r2c(p: sys::cufftHandle, i: *mut f32, o: *mut Complex32) -> sys::cufftResult {
        // SAFETY: as above.
        unsafe { sys::cufftExecR2C(p, i, o.cast()) }
    }
    unsafe fn c2r(p: sys::cufftHandle, i: *mut Complex32, o: *mut f32) -> sys::cufftResult {
        // SAFETY: as above.
        unsafe { sys::cufftExecC2R(p, i.cast(), o) }
    }
}

impl sealed::Sealed for f64 {}
impl Float for f64 {
    const TYPES: [sys::cufftType; 3] = [sys::CUFFT_D2Z, sys::CUFFT_Z2D, sys::CUFFT_Z2Z];
    unsafe fn c2c(
        p: sys::cufftHandle,
        i: *mut Complex64,
        o: *mut Complex64,
        dir: c_int,
    ) -> sys::cufftResult {
        // SAFETY: the caller's contract; `Complex64` is `cufftDoubleComplex`'s layout.
        unsafe { sys::cufftExecZ2Z(p, i.cast(), o.cast(), dir) }
    }
    unsafe fn r2c(p: sys::cufftHandle, i: *mut f64, o: *mut Complex64) -> sys::cufftResult {
        // SAFETY: as above.
        unsafe { sys::cufftExecD2Z(p, i, o.cast()) }
    }
    unsafe fn c2r(p: sys::cufftHandle, i: *mut Complex64, o: *mut f64) -> sys::cufftResult {
        // SAFETY: as above.
        unsafe { sys::cufftExecZ2D(p, i.cast(), o) }
    }
}

/// A cuFFT plan: `batch` transforms of one shape (1, 2 or 3 dimensions, the last
/// contiguous), of one [`Kind`] and precision `T`, bound to a stream. Make it
/// once and execute it as often as needed; each execution is queued on the
/// plan's stream and returns without waiting.
///
/// `Send` but not `Sync` (by a marker, not by its handle's type): a plan's work
/// area is used by one execution at a time.
#[derive(Debug)]
pub struct Plan<T: Float>
where
    Complex<T>: bytemuck::Pod,
{
    handle: sys::cufftHandle,
    kind: Kind,
    dims: Vec<usize>,
    batch: usize,
    stream: Stream,
    _t: PhantomData<T>,
    /// `!Sync` by design (a `cufftHandle` is a C `int`, which would make the
    /// plan `Sync` by accident): one execution at a time uses the work area.
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: a plan may move between threads; `!Sync` (the `_not_sync` marker)
// keeps one user at a time. Soundness contract: rule 11.
unsafe impl<T: Float> Send for Plan<T> where Complex<T>: bytemuck::Pod {}

impl<T: Float> Plan<T>
where
    Complex<T>: bytemuck::Pod,
{
    /// A plan for `batch` transforms of shape `dims` (`[n]`, `[rows, cols]` or
    /// `[d0, d1, d2]`, row-major: the last dimension contiguous), packed one
    /// after the other, on `stream`'s device.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: no dimensions or more than 3, a zero
    /// dimension or batch ([`InvalidKind::ZeroSize`]), a size past cuFFT's
    /// 32-bit limit ([`InvalidKind::OutOfRange`]); [`Error::Unavailable`] when
    /// cuFFT cannot be loaded; [`Error::DriverTooOld`] when the driver is older
    /// than cuFFT's CUDA major (the crate docs' "Which driver"); cuFFT's error.
    pub fn new(dims: &[usize], batch: usize, kind: Kind, stream: &Stream) -> Result<Self> {
        let context = || format!("making a {kind:?} cuFFT plan of shape {dims:?} × {batch}");
        if dims.is_empty() || dims.len() > 3 {
            return Err(Error::invalid(
                context(),
                InvalidKind::Other,
                "a plan has 1, 2 or 3 dimensions",
            ));
        }
        if batch == 0 || dims.contains(&0) {
            return Err(Error::invalid(
                context(),
                InvalidKind::ZeroSize,
                "every dimension and the batch must be at least 1",
            ));
        }
        let to_int = |v: usize| {
            c_int::try_from(v).map_err(|_| {
                Error::invalid(
                    context(),
                    InvalidKind::OutOfRange,
                    format!("{v} exceeds cuFFT's 32-bit sizes"),
                )
            })
        };
        let mut n = dims
            .iter()
            .map(|&d| to_int(d))
            .collect::<Result<Vec<c_int>>>()?;
        let batch_i = to_int(batch)?;
        let ty = T::TYPES[match kind {
            Kind::R2C => 0,
            Kind::C2R => 1,
            Kind::C2C => 2,
        }];
        check_driver(context)?;
        let _scope = ContextScope::for_stream(stream)?;
        let mut handle: sys::cufftHandle = 0;
        // SAFETY: `handle` is valid for writes; `n` holds `rank` sizes; null embeds
        // ask for the packed layout (the strides and distances are then ignored).
        let status = unsafe {
            sys::cufftPlanMany(
                &mut handle,
                n.len() as c_int,
                n.as_mut_ptr(),
                std::ptr::null_mut(),
                1,
                0,
                std::ptr::null_mut(),
                1,
                0,
                ty,
                batch_i,
            )
        };
        check(status, context)?;
        let plan = Self {
            handle,
            kind,
            dims: dims.to_vec(),
            batch,
            stream: stream.clone(),
            _t: PhantomData,
            _not_sync: PhantomData,
        };
        // SAFETY: a live plan and a live stream of its device.
        let status = unsafe { sys::cufftSetStream(plan.handle, stream.handle().cast()) };
        check(status, || "binding a cuFFT plan to a stream".into())?;
        Ok(plan)
    }

    /// The transform's kind.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The shape of one transform.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// The number of transforms per execution.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// The stream executions are queued on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The size of the work area cuFFT allocated for the plan, in bytes.
    ///
    /// # Errors
    /// cuFFT's error.
    pub fn work_size(&self) -> Result<usize> {
        let mut size = 0;
        // SAFETY: a live plan; `size` is valid for writes.
        let status = unsafe { sys::cufftGetSize(self.handle, &mut size) };
        check(status, || "reading a cuFFT plan's work size".into())?;
        Ok(size)
    }

    /// Binds the plan to another stream of its device. The new stream first
    /// waits for the work queued on the old one (an event), so executions of
    /// the plan, which share its work area, never overlap.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] ([`InvalidKind::OtherDevice`]) for a stream of
    /// another device; cuFFT's error.
    pub fn set_stream(&mut self, stream: &Stream) -> Result<()> {
        // Soundness contract, rule 2 (one user of the plan at a time): every
        // execution uses the plan's work area (one per plan), so executions are
        // totally ordered whatever stream they are queued on; `rebind_stream`
        // orders the new stream after the old.
        let handle = self.handle;
        rebind_stream(
            &mut self.stream,
            stream,
            "binding a cuFFT plan to a stream",
            |raw| {
                // SAFETY: a live plan and a live stream of its device.
                let status = unsafe { sys::cufftSetStream(handle, raw.cast()) };
                check(status, || "binding a cuFFT plan to a stream".into())
            },
        )
    }

    /// Elements of the full (real or complex) arrays and of the half spectrum.
    fn sizes(&self) -> (usize, usize) {
        let full: usize = self.dims.iter().product();
        let last = self.dims[self.dims.len() - 1];
        let half = full / last * (last / 2 + 1);
        (full * self.batch, half * self.batch)
    }

    fn prepare(
        &self,
        want: Kind,
        lens: [(usize, usize, &str); 2],
        devices: [&cudars_core::Device; 2],
        context: &dyn Fn() -> String,
    ) -> Result<ContextScope> {
        if self.kind != want {
            return Err(Error::invalid(
                context(),
                InvalidKind::Other,
                format!("the plan is {:?}", self.kind),
            ));
        }
        for (got, need, what) in lens {
            if got != need {
                return Err(Error::invalid(
                    context(),
                    InvalidKind::OutOfRange,
                    format!(
                        "the {what} holds {got} elements; the plan ({:?} × {}) needs {need}",
                        self.dims, self.batch
                    ),
                ));
            }
        }
        let own = self.stream.device();
        if let Some(d) = devices.iter().find(|d| **d != own) {
            return Err(Error::invalid(
                context(),
                InvalidKind::OtherDevice,
                format!(
                    "a view is on device {}, the plan on device {}",
                    d.ordinal(),
                    own.ordinal()
                ),
            ));
        }
        Ok(ContextScope::for_stream(&self.stream)?)
    }

    /// A complex-to-complex transform from `input` into `output`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: a plan of another kind ([`InvalidKind::Other`]),
    /// views of other lengths than the plan's ([`InvalidKind::OutOfRange`]) or
    /// devices ([`InvalidKind::OtherDevice`]); cuFFT's error.
    pub fn c2c(
        &self,
        input: DeviceView<'_, Complex<T>>,
        output: DeviceViewMut<'_, Complex<T>>,
        direction: Direction,
    ) -> Result<()> {
        let context = || format!("a {direction:?} complex-to-complex FFT");
        let (full, _) = self.sizes();
        let scope = self.prepare(
            Kind::C2C,
            [(input.len(), full, "input"), (output.len(), full, "output")],
            [input.device(), output.device()],
            &context,
        )?;
        // SAFETY: both views hold the plan's elements on its device; the output is
        // exclusive (and, being borrowed mutably, not the input); cuFFT reads an
        // out-of-place C2C input without writing it.
        let status = unsafe {
            T::c2c(
                self.handle,
                input.ptr() as *mut Complex<T>,
                output.ptr() as *mut Complex<T>,
                dir(direction),
            )
        };
        check(status, context)?;
        // The library's calls are queued: leave the context (and a green
        // context's lock) before ordering frees, which may take other contexts'.
        drop(scope);
        cudars_core::Buffer::order_frees_after([input.buffer(), output.buffer()], &self.stream)?;
        Ok(())
    }

    /// A complex-to-complex transform in place.
    ///
    /// # Errors
    /// As [`c2c`](Self::c2c).
    pub fn c2c_in_place(
        &self,
        data: DeviceViewMut<'_, Complex<T>>,
        direction: Direction,
    ) -> Result<()> {
        let context = || format!("an in-place {direction:?} complex-to-complex FFT");
        let (full, _) = self.sizes();
        let scope = self.prepare(
            Kind::C2C,
            [(data.len(), full, "data"); 2],
            [data.device(); 2],
            &context,
        )?;
        let p = data.ptr() as *mut Complex<T>;
        // SAFETY: the view holds the plan's elements on its device, exclusively.
        let status = unsafe { T::c2c(self.handle, p, p, dir(direction)) };
        check(status, context)?;
        // The library's calls are queued: leave the context (and a green
        // context's lock) before ordering frees, which may take other contexts'.
        drop(scope);
        cudars_core::Buffer::order_frees_after([data.buffer()], &self.stream)?;
        Ok(())
    }

    /// A real-to-complex (forward) transform: `output` receives the half
    /// spectrum, `n/2 + 1` values along the last dimension.
    ///
    /// # Errors
    /// As [`c2c`](Self::c2c).
    pub fn r2c(
        &self,
        input: DeviceView<'_, T>,
        output: DeviceViewMut<'_, Complex<T>>,
    ) -> Result<()> {
        let context = || "a real-to-complex FFT".to_string();
        let (full, half) = self.sizes();
        let scope = self.prepare(
            Kind::R2C,
            [(input.len(), full, "input"), (output.len(), half, "output")],
            [input.device(), output.device()],
            &context,
        )?;
        // SAFETY: the views hold the plan's elements on its device; the output is
        // exclusive; cuFFT does not write an out-of-place R2C input.
        let status = unsafe {
            T::r2c(
                self.handle,
                input.ptr() as *mut T,
                output.ptr() as *mut Complex<T>,
            )
        };
        check(status, context)?;
        // The library's calls are queued: leave the context (and a green
        // context's lock) before ordering frees, which may take other contexts'.
        drop(scope);
        cudars_core::Buffer::order_frees_after([input.buffer(), output.buffer()], &self.stream)?;
        Ok(())
    }

    /// A complex-to-real (inverse) transform of a half spectrum. cuFFT uses
    /// `input` as scratch space and may overwrite it, so it is borrowed mutably.
    ///
    /// # Errors
    /// As [`c2c`](Self::c2c).
    pub fn c2r(
        &self,
        input: DeviceViewMut<'_, Complex<T>>,
        output: DeviceViewMut<'_, T>,
    ) -> Result<()> {
        let context = || "a complex-to-real FFT".to_string();
        let (full, half) = self.sizes();
        let scope = self.prepare(
            Kind::C2R,
            [(input.len(), half, "input"), (output.len(), full, "output")],
            [input.device(), output.device()],
            &context,
        )?;
        // SAFETY: the views hold the plan's elements on its device; both are
        // exclusive, so cuFFT may write either.
        let status = unsafe {
            T::c2r(
                self.handle,
                input.ptr() as *mut Complex<T>,
                output.ptr() as *mut T,
            )
        };
        check(status, context)?;
        // The library's calls are queued: leave the context (and a green
        // context's lock) before ordering frees, which may take other contexts'.
        drop(scope);
        cudars_core::Buffer::order_frees_after([input.buffer(), output.buffer()], &self.stream)?;
        Ok(())
    }
}

fn dir(d: Direction) -> c_int {
    match d {
        Direction::Forward => sys::CUFFT_FORWARD,
        Direction::Inverse => sys::CUFFT_INVERSE as c_int,
    }
}

impl<T: Float> Drop for Plan<T>
where
    Complex<T>: bytemuck::Pod,
{
    // Soundness rule (issue 26, "state used by queued work outlives it"):
    // `cufftDestroy` frees the plan's work area, which executions still queued
    // may use. Executions are totally ordered on the plan's current stream
    // (`set_stream` makes each new stream wait for the old one), so waiting
    // for that stream waits for all of them; if the wait fails, the plan is
    // leaked rather than destroyed under them (a wait refused for now, during
    // a capture, is tried again later: rule 6). A leaked plan (`mem::forget`)
    // is a leak, nothing more. On a driver callback thread all of it runs
    // later, on an ordinary thread (`release_or_defer`).
    fn drop(&mut self) {
        let stream = self.stream.clone();
        let destroy = move |plan| {
            stream.sync()?;
            // Entered after the wait: cudars-core's operations make their
            // own context current, and a scope holds a green context's lock.
            let _scope = ContextScope::for_stream(&stream);
            // SAFETY: a live plan, not used after this; no execution is
            // pending (waited for above).
            let _ = unsafe { sys::cufftDestroy(plan) };
            Ok(())
        };
        // SAFETY: the plan is owned by `self` and destroyed only here; cuFFT
        // lets any thread destroy it.
        unsafe { cudars_core::release_or_defer("destroying a cuFFT plan", self.handle, destroy) };
    }
}
