//! [`Generator`]: a cuRAND generator bound to a stream, filling typed device views.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr;

use cudars_bindings::curand as sys;
use cudars_core::{ContextScope, DeviceBuffer, DeviceViewMut, InvalidKind, Stream, rebind_stream};

use crate::error::{Error, Result, check, check_driver};

/// The pseudo-random algorithm of a [`Generator`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RngKind {
    /// Philox4x32-10: counter-based, fast, the usual choice (cuRAND's
    /// `CURAND_RNG_PSEUDO_PHILOX4_32_10`).
    Philox4x32_10,
    /// XORWOW, cuRAND's default (`CURAND_RNG_PSEUDO_XORWOW`).
    Xorwow,
    /// MRG32k3a, a combined multiple recursive generator with strong statistical
    /// quality (`CURAND_RNG_PSEUDO_MRG32K3A`).
    Mrg32k3a,
}

impl RngKind {
    fn raw(self) -> sys::curandRngType_t {
        match self {
            Self::Philox4x32_10 => sys::CURAND_RNG_PSEUDO_PHILOX4_32_10,
            Self::Xorwow => sys::CURAND_RNG_PSEUDO_XORWOW,
            Self::Mrg32k3a => sys::CURAND_RNG_PSEUDO_MRG32K3A,
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// The floating-point types cuRAND fills: `f32` and `f64`.
pub trait Real: bytemuck::Pod + Into<f64> + sealed::Sealed + Send + Sync {
    /// The type's name, for messages.
    const NAME: &'static str;
    #[doc(hidden)]
    /// # Safety
    /// `out` holds `n` elements of `Self` on the generator's device.
    unsafe fn uniform(g: sys::curandGenerator_t, out: *mut Self, n: usize) -> sys::curandStatus_t;
    #[doc(hidden)]
    /// # Safety
    /// As for `uniform`; `n` is even.
    unsafe fn normal(
        g: sys::curandGenerator_t,
        out: *mut Self,
        n: usize,
        mean: Self,
        stddev: Self,
    ) -> sys::curandStatus_t;
    #[doc(hidden)]
    /// # Safety
    /// As for `normal`.
    unsafe fn log_normal(
        g: sys::curandGenerator_t,
        out: *mut Self,
        n: usize,
        mean: Self,
        stddev: Self,
    ) -> sys::curandStatus_t;
}

macro_rules! real {
    ($t:ty, $u:ident, $n:ident, $l:ident) => {
        impl sealed::Sealed for $t {}
        impl Real for $t {
            const NAME: &'static str = stringify!($t);
            unsafe fn uniform(
                g: sys::curandGenerator_t,
                out: *mut Self,
                n: usize,
            ) -> sys::curandStatus_t {
                // SAFETY: the caller's contract.
                unsafe { sys::$u(g, out, n) }
            }
            unsafe fn normal(
                g: sys::curandGenerator_t,
                out: *mut Self,
                n: usize,
                mean: Self,
                stddev: Self,
            ) -> sys::curandStatus_t {
                // SAFETY: the caller's contract.
                unsafe { sys::$n(g, out, n, mean, stddev) }
            }
            unsafe fn log_normal(
                g: sys::curandGenerator_t,
                out: *mut Self,
                n: usize,
                mean: Self,
                stddev: Self,
            ) -> sys::curandStatus_t {
                // SAFETY: the caller's contract.
                unsafe { sys::$l(g, out, n, mean, stddev) }
            }
        }
    };
}

real!(
    f32,
    curandGenerateUniform,
    curandGenerateNormal,
    curandGenerateLogNormal
);
real!(
    f64,
    curandGenerateUniformDouble,
    curandGenerateNormalDouble,
    curandGenerateLogNormalDouble
);

/// A cuRAND pseudo-random generator bound to one stream: fills are queued on that
/// stream and return without waiting.
///
/// Two generators of the same kind, seed and offset produce the same numbers, on
/// any GPU. `Send` but not `Sync` (cuRAND's generators are not thread-safe).
#[derive(Debug)]
pub struct Generator {
    raw: sys::curandGenerator_t,
    kind: RngKind,
    stream: Stream,
    /// `!Sync` by design, not by the accident of the handle's type: the
    /// library allows one thread at a time on a handle.
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: a generator may move between threads; `!Sync` (the `_not_sync`
// marker) keeps it on one at a time.
// Soundness contract: rule 11.
unsafe impl Send for Generator {}

impl Generator {
    /// A generator of `kind` with seed 0 on `stream`'s device, bound to `stream`.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when cuRAND cannot be loaded;
    /// [`Error::DriverTooOld`] when the driver is older than cuRAND's CUDA major
    /// (the crate docs' "Which driver"); cuRAND's error.
    pub fn new(kind: RngKind, stream: &Stream) -> Result<Self> {
        let context = || format!("creating a {kind:?} cuRAND generator");
        check_driver(context)?;
        let _scope = ContextScope::for_stream(stream)?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is valid for writes; the stream's context is current.
        let status = unsafe { sys::curandCreateGenerator(&mut raw, kind.raw()) };
        check(status, context)?;
        let g = Self {
            raw,
            kind,
            stream: stream.clone(),
            _not_sync: PhantomData,
        };
        bind(g.raw, stream.handle())?;
        Ok(g)
    }

    /// [`new`](Self::new), then [`set_seed`](Self::set_seed).
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn with_seed(kind: RngKind, seed: u64, stream: &Stream) -> Result<Self> {
        let mut g = Self::new(kind, stream)?;
        g.set_seed(seed)?;
        Ok(g)
    }

    /// The generator's algorithm.
    pub fn kind(&self) -> RngKind {
        self.kind
    }

    /// The stream fills are queued on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Restarts the sequence from `seed` (and offset 0).
    ///
    /// # Errors
    /// cuRAND's error.
    pub fn set_seed(&mut self, seed: u64) -> Result<()> {
        let _scope = ContextScope::for_stream(&self.stream)?;
        // SAFETY: a live generator.
        let status = unsafe { sys::curandSetPseudoRandomGeneratorSeed(self.raw, seed) };
        check(status, || "seeding a cuRAND generator".into())?;
        // SAFETY: as above. A new seed starts a new sequence at offset 0.
        let status = unsafe { sys::curandSetGeneratorOffset(self.raw, 0) };
        check(status, || "resetting a cuRAND generator's offset".into())
    }

    /// Skips `offset` numbers ahead in the sequence of the current seed (for
    /// giving independent workers disjoint parts of one sequence).
    ///
    /// # Errors
    /// cuRAND's error.
    pub fn set_offset(&mut self, offset: u64) -> Result<()> {
        let _scope = ContextScope::for_stream(&self.stream)?;
        // SAFETY: a live generator.
        let status = unsafe { sys::curandSetGeneratorOffset(self.raw, offset) };
        check(status, || {
            format!("setting a cuRAND generator's offset to {offset}")
        })
    }

    /// Binds the generator to another stream of its device. The new stream
    /// first waits for the work queued on the old one (an event), so
    /// generations, which advance the generator's shared state, never overlap.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] ([`InvalidKind::OtherDevice`]) for a stream of
    /// another device; cuRAND's error.
    pub fn set_stream(&mut self, stream: &Stream) -> Result<()> {
        // Soundness contract, rule 2 (one user of the generator at a time):
        // every generation uses the generator's device state (its position in
        // the sequence), so generations are totally ordered whatever stream
        // they are queued on; `rebind_stream` orders the new stream after the
        // old.
        let raw = self.raw;
        rebind_stream(
            &mut self.stream,
            stream,
            "binding a cuRAND generator to a stream",
            |handle| bind(raw, handle),
        )
    }

    /// Checks that `out` is on the generator's device and makes its context
    /// current for as long as the returned scope lives.
    fn prepare<T>(
        &self,
        out: &DeviceViewMut<'_, T>,
        what: &dyn Fn() -> String,
    ) -> Result<ContextScope>
    where
        T: bytemuck::Pod,
    {
        if out.device() != self.stream.device() {
            return Err(Error::invalid(
                what(),
                InvalidKind::OtherDevice,
                format!(
                    "the view is on device {}, the generator's stream on device {}",
                    out.device().ordinal(),
                    self.stream.device().ordinal()
                ),
            ));
        }
        Ok(ContextScope::for_stream(&self.stream)?)
    }

    /// Fills `out` with uniform numbers in `(0, 1]`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] ([`InvalidKind::OtherDevice`]) for a view of
    /// another device; cuRAND's error.
    pub fn fill_uniform<T: Real>(&mut self, mut out: DeviceViewMut<'_, T>) -> Result<()> {
        let len = out.len();
        let what = || format!("filling {len} {} with uniform numbers", T::NAME);
        let scope = self.prepare(&out, &what)?;
        if out.is_empty() {
            return Ok(());
        }
        let (p, n) = (out.view_ptr(), out.len());
        // SAFETY: `out` holds `n` elements on the generator's device, exclusively borrowed.
        let status = unsafe { T::uniform(self.raw, p, n) };
        check(status, what)?;
        // The library's calls are queued: leave the context (and a green
        // context's lock) before ordering frees, which may take other contexts'.
        drop(scope);
        Ok(out.buffer().order_free_after(&self.stream)?)
    }

    /// Fills `out` with 32-bit random integers.
    ///
    /// # Errors
    /// As [`fill_uniform`](Self::fill_uniform).
    pub fn fill_u32(&mut self, mut out: DeviceViewMut<'_, u32>) -> Result<()> {
        let len = out.len();
        let what = || format!("filling {len} u32 with random bits");
        let scope = self.prepare(&out, &what)?;
        if out.is_empty() {
            return Ok(());
        }
        let (p, n) = (out.view_ptr(), out.len());
        // SAFETY: `out` holds `n` elements on the generator's device, exclusively borrowed.
        let status = unsafe { sys::curandGenerate(self.raw, p, n) };
        check(status, what)?;
        // The library's calls are queued: leave the context (and a green
        // context's lock) before ordering frees, which may take other contexts'.
        drop(scope);
        Ok(out.buffer().order_free_after(&self.stream)?)
    }

    /// Fills `out` with normal numbers of mean `mean` and standard deviation
    /// `stddev`. Any length works: cuRAND makes normals in pairs, so an odd
    /// length takes its last element from a pair made in a scratch buffer.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: a `stddev` that is not positive and finite or
    /// a non-finite `mean` ([`InvalidKind::Other`]), a view of another device
    /// ([`InvalidKind::OtherDevice`]); cuRAND's error.
    pub fn fill_normal<T: Real>(
        &mut self,
        out: DeviceViewMut<'_, T>,
        mean: T,
        stddev: T,
    ) -> Result<()> {
        self.fill_pairs(out, mean, stddev, "normal", T::normal)
    }

    /// Fills `out` with log-normal numbers: `exp(x)` for `x` normal with mean
    /// `mean` and standard deviation `stddev`. Any length, as
    /// [`fill_normal`](Self::fill_normal).
    ///
    /// # Errors
    /// As [`fill_normal`](Self::fill_normal).
    pub fn fill_log_normal<T: Real>(
        &mut self,
        out: DeviceViewMut<'_, T>,
        mean: T,
        stddev: T,
    ) -> Result<()> {
        self.fill_pairs(out, mean, stddev, "log-normal", T::log_normal)
    }

    fn fill_pairs<T: Real>(
        &mut self,
        mut out: DeviceViewMut<'_, T>,
        mean: T,
        stddev: T,
        dist: &str,
        f: unsafe fn(sys::curandGenerator_t, *mut T, usize, T, T) -> sys::curandStatus_t,
    ) -> Result<()> {
        let len = out.len();
        let what = || format!("filling {len} {} with {dist} numbers", T::NAME);
        let (m, s): (f64, f64) = (mean.into(), stddev.into());
        if !(m.is_finite() && s.is_finite() && s > 0.0) {
            return Err(Error::invalid(
                what(),
                InvalidKind::Other,
                format!(
                    "the mean must be finite and the standard deviation positive and finite; they are {m} and {s}"
                ),
            ));
        }
        let scope = self.prepare(&out, &what)?;
        let even = len & !1;
        if even > 0 {
            let p = out.view_ptr();
            // SAFETY: `out` holds at least `even` elements on the generator's
            // device, exclusively borrowed; `even` is even.
            let status = unsafe { f(self.raw, p, even, mean, stddev) };
            check(status, what)?;
        }
        // The library's calls are queued: leave the context (and a green
        // context's lock) before cudars-core's operations, which make their own
        // context current and may take other contexts' locks.
        drop(scope);
        if len % 2 == 1 {
            let mut pair = DeviceBuffer::<T>::allocate(self.stream.device(), 2, &self.stream)?;
            let p = pair.view_mut().view_ptr();
            let scope = ContextScope::for_stream(&self.stream)?;
            // SAFETY: `pair` holds 2 elements on the generator's device.
            let status = unsafe { f(self.raw, p, 2, mean, stddev) };
            drop(scope);
            check(status, what)?;
            out.slice_mut(even..)?
                .copy_from(pair.slice(..1)?, &self.stream)?;
        }
        // Dropping `out`'s buffer right after must not free memory cuRAND still
        // fills. For an odd length the copy of the last element, queued after
        // the fill, ordered the free already; with nothing queued there is
        // nothing to order.
        if len % 2 == 0 && even > 0 {
            out.buffer().order_free_after(&self.stream)?;
        }
        Ok(())
    }
}

impl Drop for Generator {
    fn drop(&mut self) {
        let stream = self.stream.clone();
        let destroy = move |raw| {
            let _scope = ContextScope::for_stream(&stream);
            // SAFETY: a live generator, not used after this. cuRAND waits
            // for the work queued with it on its current stream before
            // freeing its state, and that stream is after every earlier one
            // (`set_stream` orders them), so no generation queued on any
            // stream is left using the state.
            let _ = unsafe { sys::curandDestroyGenerator(raw) };
            Ok(())
        };
        // SAFETY: the generator is owned by `self` and destroyed only here;
        // cuRAND lets any thread destroy it. On a driver callback thread the
        // destroy runs later, on an ordinary thread.
        unsafe {
            cudars_core::release_or_defer("destroying a cuRAND generator", self.raw, destroy)
        };
    }
}

/// The typed device pointer of an exclusive view.
trait ViewPtr<T> {
    fn view_ptr(&mut self) -> *mut T;
}

impl<T: bytemuck::Pod> ViewPtr<T> for DeviceViewMut<'_, T> {
    fn view_ptr(&mut self) -> *mut T {
        self.ptr() as *mut T
    }
}

/// Binds `raw` to the stream `stream`; the caller has the stream's context
/// current.
fn bind(raw: sys::curandGenerator_t, stream: cudars_bindings::driver::CUstream) -> Result<()> {
    // SAFETY: a live generator and a live stream of its device.
    let status = unsafe { sys::curandSetStream(raw, stream.cast()) };
    check(status, || "binding a cuRAND generator to a stream".into())
}
