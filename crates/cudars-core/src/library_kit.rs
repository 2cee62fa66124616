//! The kit the library crates (cudars-blas, cudars-rand, cudars-fft,
//! cudars-nccl, cudars-file) share: one error shape ([`LibraryError`]), one way
//! to make a stream's context current for a scope ([`ContextScope`], green
//! contexts included), one way to move a library handle to another stream
//! ([`rebind_stream`]), one check that the driver is new enough for the
//! library's CUDA major ([`DriverGate`]) and one way for a handle's `Drop` to
//! destroy it, at once or, on a driver callback thread, later
//! ([`release_or_defer`]).
//!
//! A library crate is a thin layer: its handle type owns the library's handle
//! and the [`Stream`] it is bound to, each method checks its arguments, enters
//! the stream's context with a [`ContextScope`] and calls the library, and its
//! `Error` is `LibraryError<TheLibrarysStatus, ItsExtras>`
//! (`docs/adding-a-library.md` lists everything else a new one touches).
//!
//! ```
//! use cudars_core::{ContextScope, Device, StreamOptions};
//!
//! # fn main() -> cudars_core::Result<()> {
//! # if Device::count().unwrap_or(0) == 0 { return Ok(()); }
//! let stream = Device::new(0)?.create_stream(StreamOptions::default())?;
//! {
//!     let _scope = ContextScope::enter(stream.context())?;
//!     // a library call that uses the current context (cublasCreate, …)
//! }
//! // the context that was current before is current again
//! # Ok(()) }
//! ```

use std::borrow::Cow;
use std::convert::Infallible;
use std::fmt;
use std::marker::PhantomData;
use std::sync::OnceLock;

use cudars_bindings::driver as sys;
use cudars_bindings::{IntoResult, StatusError, Unavailable, Version};

use crate::context::{self, Context, Current};
use crate::error::{Check as _, DriverRequirement, Error, InvalidKind, Report};
use crate::stream::Stream;

pub(crate) mod release;

/// The error of a library crate: `S` is the library's status error (cuBLAS's
/// `CublasError`, NCCL's `NcclError`, …), `X` the crate's own extra cases
/// ([`Infallible`] when it has none).
///
/// Each variant says what was being done (`context`); the library's status,
/// why it could not be called, or cudars-core's error is the
/// [`source`](std::error::Error::source), never repeated in the message. Print
/// the whole chain with [`report`](Self::report). A library crate names it
/// with a type alias (`pub type Error = LibraryError<CublasError, LtError>;`).
#[derive(Debug)]
#[non_exhaustive]
pub enum LibraryError<S, X = Infallible> {
    /// A library call failed; the source is the library's status. `detail` is
    /// the library's own account of the failure, when it gives one (NCCL's
    /// `ncclGetLastError`).
    Library {
        /// What was being done.
        context: Cow<'static, str>,
        /// The library's own message about the failure, when it had one.
        detail: Option<String>,
        /// The library's error: its status code, name and description.
        source: S,
    },
    /// The library or one of its entry points is not available (not installed,
    /// not found, a symbol missing, a CUDA major the bindings do not know); the
    /// source says which and why. Nothing was called.
    Unavailable {
        /// What was being done.
        context: Cow<'static, str>,
        /// Why the library or entry point cannot be used.
        reason: Box<Unavailable>,
    },
    /// The loaded library predates the entry point the call needs, which it
    /// added in release `needs` (major, minor). The source says which symbol is
    /// missing from which file. Nothing was called.
    TooOld {
        /// What was being done.
        context: Cow<'static, str>,
        /// The release (major, minor) that added the entry point.
        needs: (u32, u32),
        /// The missing entry point.
        reason: Box<Unavailable>,
    },
    /// The loaded library belongs to a newer CUDA major than the driver's: a
    /// CUDA 13.x library needs a CUDA 13.0 driver or newer (CUDA's minor-version
    /// compatibility holds within a major only), and the driver is older.
    /// Checked once, before the library's handle, plan or session is made
    /// ([`DriverGate`]); nothing was called. (cudars-nccl, whose NCCL does not
    /// say its CUDA major, gives it from NCCL's own refusal of the driver.)
    /// `requires` names the library and
    /// its version (`feature`), the driver it needs and the driver found:
    /// "cuBLAS 13.1 needs a CUDA 13.0 driver; this driver is CUDA 12.4".
    DriverTooOld {
        /// What was being done.
        context: Cow<'static, str>,
        /// The library found and the CUDA major it belongs to.
        release: LibraryRelease,
        /// The library (with its version), the driver it needs and the one
        /// installed (boxed: it is large and rare).
        requires: Box<DriverRequirement>,
    },
    /// An argument was rejected before the library was called; `kind` says
    /// which common case it is, for matching.
    InvalidArgument {
        /// What was being done.
        context: Cow<'static, str>,
        /// Which kind of mistake.
        kind: InvalidKind,
        /// What is wrong with the argument.
        message: String,
    },
    /// A cudars-core operation (a context, a stream, an allocation) failed.
    Core(Error),
    /// One of the crate's own cases (`X`).
    Extra(X),
}

// `Display`, `Error` and `From` are written out rather than derived: cudars-core has
// no proc-macro dependency by default (docs/performance.md, "A dependent's build").
// A variant that wraps an error displays its own part and returns the wrapped error
// as its source; `Core` and `Extra` are the wrapped error (its message and source).
impl<S, X: fmt::Display> fmt::Display for LibraryError<S, X> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Library {
                context, detail, ..
            } => match detail {
                Some(d) => write!(f, "{context} ({d})"),
                None => f.write_str(context),
            },
            Self::Unavailable { context, .. } => f.write_str(context),
            Self::DriverTooOld {
                context, requires, ..
            } => write!(f, "{context}: {requires}"),
            Self::TooOld {
                context,
                needs,
                reason,
            } => write!(
                f,
                "{context}: needs {} {}.{} or later",
                reason.api(),
                needs.0,
                needs.1
            ),
            Self::InvalidArgument {
                context, message, ..
            } => write!(f, "{context}: {message}"),
            Self::Core(e) => fmt::Display::fmt(e, f),
            Self::Extra(x) => fmt::Display::fmt(x, f),
        }
    }
}

impl<S, X> std::error::Error for LibraryError<S, X>
where
    S: std::error::Error + 'static,
    X: std::error::Error + 'static,
{
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Library { source, .. } => Some(source),
            Self::Unavailable { reason, .. } | Self::TooOld { reason, .. } => Some(&**reason),
            Self::InvalidArgument { .. } | Self::DriverTooOld { .. } => None,
            Self::Core(e) => e.source(),
            Self::Extra(x) => x.source(),
        }
    }
}

impl<S, X> From<Error> for LibraryError<S, X> {
    fn from(e: Error) -> Self {
        Self::Core(e)
    }
}

impl<S, X> LibraryError<S, X>
where
    S: std::error::Error + 'static,
    X: std::error::Error + 'static,
{
    /// The error and its causes, each once, joined by `": "`: the line to log.
    pub fn report(&self) -> Report<'_> {
        Report::new(self)
    }
}

impl<S, X> LibraryError<S, X> {
    /// The library's status, when the library returned the error.
    pub fn status(&self) -> Option<&S> {
        match self {
            Self::Library { source, .. } => Some(source),
            _ => None,
        }
    }

    /// The kind of argument error, for [`InvalidArgument`](Self::InvalidArgument)
    /// (cudars-core's own argument errors included).
    pub fn invalid_kind(&self) -> Option<InvalidKind> {
        match self {
            Self::InvalidArgument { kind, .. } => Some(*kind),
            Self::Core(e) => e.invalid_kind(),
            _ => None,
        }
    }

    /// Whether the library (or cudars-core's driver) was not available, or
    /// lacked an entry point ([`TooOld`](Self::TooOld)).
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Unavailable { .. } | Self::TooOld { .. } => true,
            Self::Core(e) => e.is_unavailable(),
            _ => false,
        }
    }

    /// The driver version needed and the one installed, when the driver is too
    /// old: for the library itself ([`DriverTooOld`](Self::DriverTooOld)) or
    /// for a cudars-core feature ([`Core`](Self::Core) with
    /// [`Error::required_driver`]).
    pub fn required_driver(&self) -> Option<&DriverRequirement> {
        match self {
            Self::DriverTooOld { requires, .. } => Some(requires),
            Self::Core(e) => e.required_driver(),
            _ => None,
        }
    }

    /// An [`InvalidArgument`](Self::InvalidArgument) error.
    pub fn invalid(
        context: impl Into<Cow<'static, str>>,
        kind: InvalidKind,
        message: impl Into<String>,
    ) -> Self {
        Self::InvalidArgument {
            context: context.into(),
            kind,
            message: message.into(),
        }
    }

    /// `self` as [`TooOld`](Self::TooOld) when it says the loaded library lacks
    /// the entry point (a release before `needs`); any other error unchanged.
    pub fn needing(self, needs: (u32, u32)) -> Self {
        match self {
            Self::Unavailable { context, reason }
                if matches!(*reason, Unavailable::Symbol { .. }) =>
            {
                Self::TooOld {
                    context,
                    needs,
                    reason,
                }
            }
            e => e,
        }
    }
}

impl<S: StatusError, X> LibraryError<S, X> {
    /// The library's status with what was being done: an entry point that
    /// could not be called becomes [`Unavailable`](Self::Unavailable), any other
    /// status [`Library`](Self::Library) (with no detail; see
    /// [`with_detail`](Self::with_detail)).
    pub fn from_status(context: impl Into<Cow<'static, str>>, source: S) -> Self {
        let context = context.into();
        match source.unavailable() {
            Some(reason) => Self::Unavailable {
                context,
                reason: Box::new(reason.clone()),
            },
            None => Self::Library {
                context,
                detail: None,
                source,
            },
        }
    }

    /// Turns a status code into a `Result`, saying what was being done (only
    /// asked when the call failed), as [`from_status`](Self::from_status).
    ///
    /// # Errors
    /// Every code other than the library's success code.
    pub fn check<C>(code: C, context: impl FnOnce() -> String) -> Result<(), Self>
    where
        C: IntoResult<Error = S>,
    {
        code.result()
            .map_err(|source| Self::from_status(context(), source))
    }

    /// [`check`](Self::check) for an entry point the library added in release
    /// `needs` (major, minor): a library that lacks it gives
    /// [`TooOld`](Self::TooOld), naming that release.
    ///
    /// # Errors
    /// As [`check`](Self::check).
    pub fn check_since<C>(
        code: C,
        needs: (u32, u32),
        context: impl FnOnce() -> String,
    ) -> Result<(), Self>
    where
        C: IntoResult<Error = S>,
    {
        Self::check(code, context).map_err(|e| e.needing(needs))
    }

    /// `self` with the library's own account of the failure (asked only for a
    /// [`Library`](Self::Library) error, right after the failing call).
    #[must_use]
    pub fn with_detail(mut self, detail: impl FnOnce() -> Option<String>) -> Self {
        if let Self::Library { detail: d, .. } = &mut self {
            *d = detail();
        }
        self
    }
}

/// A library's own version and the CUDA major it belongs to: what
/// [`DriverGate`] checks against the driver. The two numbers differ for some
/// libraries: CUDA 13 ships cuBLAS 13, cuFFT 12, cuRAND 10.4 and cuFile 1.15.
///
/// ```
/// use cudars_core::LibraryRelease;
/// use cudars_core::cudars_bindings::Version;
///
/// let cublas = LibraryRelease::new("cuBLAS", Version { major: 13, minor: 1 }, 13);
/// assert_eq!(cublas.to_string(), "cuBLAS 13.1");
/// assert_eq!(cublas.needs_driver(), Version { major: 13, minor: 0 });
/// assert!(cublas.requirement(13000).is_none()); // a 13.0 driver runs it
/// let too_old = cublas.requirement(12040).unwrap(); // a 12.4 driver does not
/// assert_eq!(too_old.to_string(), "cuBLAS 13.1 needs a CUDA 13.0 driver; this driver is CUDA 12.4");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LibraryRelease {
    /// The library's name as NVIDIA writes it (`cuBLAS`).
    pub library: &'static str,
    /// The library's own version (cuFFT 12.0, cuRAND 10.4, cuFile 1.15).
    pub version: Version,
    /// The CUDA major it was built for (13 for each of those).
    pub cuda_major: i32,
}

impl LibraryRelease {
    /// `library` at `version`, built for CUDA `cuda_major`.
    pub const fn new(library: &'static str, version: Version, cuda_major: i32) -> Self {
        Self {
            library,
            version,
            cuda_major,
        }
    }

    /// The oldest driver it runs on: CUDA `cuda_major`.0. CUDA's minor-version
    /// compatibility lets a library of a CUDA major run on any driver of that
    /// major or a later one, and on none before it.
    pub const fn needs_driver(&self) -> Version {
        Version {
            major: self.cuda_major,
            minor: 0,
        }
    }

    /// What the library needs that a driver of CUDA version `driver` (as
    /// `cuDriverGetVersion` gives it: `1000 * major + 10 * minor`) lacks: `None`
    /// when that driver runs it, and when `driver` is 0 (no driver: the
    /// library's own call fails and says so).
    pub fn requirement(&self, driver: i32) -> Option<DriverRequirement> {
        let needs = self.needs_driver();
        let have = Version::from_cuda(driver);
        (driver > 0 && have.major < needs.major).then(|| DriverRequirement {
            feature: Cow::Owned(self.to_string()),
            needs,
            driver: have,
        })
    }
}

impl fmt::Display for LibraryRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.library, self.version)
    }
}

/// The one check a library crate makes before it creates a handle, a plan, a
/// generator, a communicator or a driver session: is the driver new enough for
/// the library's CUDA major? A CUDA 13 library on a CUDA 12 driver fails
/// inside the library with an opaque status (`CUBLAS_STATUS_NOT_INITIALIZED`,
/// `CUFFT_INTERNAL_ERROR`); the gate turns that into
/// [`LibraryError::DriverTooOld`], naming the library, its version, the driver
/// it needs and the driver found, before the library is called.
///
/// Cheap: the driver's version is read once per process (cudars-core reads it
/// for its own gates), and the library's release once per gate, by `probe`,
/// which asks the library its version (`cublasGetProperty`, `cufftGetProperty`,
/// `curandGetProperty`, `cuFileGetVersion`: no handle, no GPU needed) and says
/// which CUDA major that version belongs to. A probe that cannot tell (the
/// library is missing, or of a version it does not know) gives `None` and the
/// gate lets the call go on, to fail or succeed on its own.
///
/// ```
/// use cudars_core::{DriverGate, LibraryError, LibraryRelease};
/// use cudars_core::cudars_bindings::{Version, nvrtc::NvrtcError};
///
/// static GATE: DriverGate = DriverGate::new(|| {
///     Some(LibraryRelease::new("cuExample", Version { major: 13, minor: 0 }, 13))
/// });
/// match GATE.check::<NvrtcError, std::convert::Infallible>(|| "creating a handle".into()) {
///     Ok(()) => {} // a CUDA 13 driver (or none at all)
///     Err(e) => {
///         let r = e.required_driver().unwrap();
///         assert_eq!(r.needs, Version { major: 13, minor: 0 });
///         assert!(r.driver.major < 13);
///     }
/// }
/// ```
#[derive(Debug)]
pub struct DriverGate {
    /// Asks the library its release.
    probe: fn() -> Option<LibraryRelease>,
    /// What `probe` said, once.
    release: OnceLock<Option<LibraryRelease>>,
}

impl DriverGate {
    /// A gate whose library is described by `probe` (asked once, at the first
    /// check).
    pub const fn new(probe: fn() -> Option<LibraryRelease>) -> Self {
        Self {
            probe,
            release: OnceLock::new(),
        }
    }

    /// The library's release, as the probe told it (asked once).
    pub fn release(&self) -> Option<LibraryRelease> {
        *self.release.get_or_init(self.probe)
    }

    /// `Ok` when the driver runs the library (or there is no driver, or the
    /// library's release cannot be told); else
    /// [`LibraryError::DriverTooOld`] saying what was being done (`context`,
    /// only asked on failure).
    ///
    /// # Errors
    /// [`LibraryError::DriverTooOld`].
    pub fn check<S, X>(&self, context: impl FnOnce() -> String) -> Result<(), LibraryError<S, X>> {
        let driver = crate::versions::driver_version();
        if driver == 0 {
            return Ok(());
        }
        let Some(release) = self.release() else {
            return Ok(());
        };
        match release.requirement(driver) {
            None => Ok(()),
            Some(requires) => Err(LibraryError::DriverTooOld {
                context: Cow::Owned(context()),
                release,
                requires: Box::new(requires),
            }),
        }
    }
}

/// A context made current on this thread for a scope: on drop, what was current
/// before is current again. Green contexts are accepted
/// ([`Context::set_current`] refuses them): for one, the scope holds the
/// context's lock, so no other thread has it current meanwhile.
///
/// What a library call needs (cuBLAS, cuFFT, cuRAND and NCCL create their
/// handles in, and run on, the calling thread's current context): enter the
/// stream's context, make the calls, drop the scope. Keep the scope to the
/// library's calls: cudars-core's own operations make their own context
/// current (some a device's primary context), and one that touches another
/// green context (ordering a buffer's free on its stream, say) takes that
/// context's lock, so two threads that each hold one green context's scope
/// while waiting for the other's would wait for ever. The scope's drop puts
/// back what was current before it in any case.
///
/// Soundness contract, rule 11 (`docs/architecture.md`): a green context is
/// current on one thread at a time, and only while that thread holds its lock.
/// The scope holds the lock from entry to drop, and puts back a green context
/// that was current before only while this thread still holds it (otherwise it
/// makes the device's primary context current). Scopes nest (a thread may enter a green context
/// it holds again) and are meant to be dropped in the reverse order of their
/// making; dropped in another order, the context left current may differ from
/// the one before, which is safe: every operation of these crates makes its
/// own context current first.
///
/// `!Send`: the scope is about the thread that made it.
///
/// ```compile_fail
/// fn send<T: Send>() {}
/// send::<cudars_core::ContextScope>();
/// ```
///
/// Forgetting it (`mem::forget`) is safe, as forgetting a `MutexGuard` is: the
/// context stays current on this thread and, for a green context, stays held
/// by it, so other threads that use that green context wait for ever (a
/// deadlock, not undefined behaviour); the context itself is never destroyed
/// (a leak the caller chose). No other guard or operation relies on this
/// scope's drop running.
#[must_use = "the context is only current while the scope lives"]
pub struct ContextScope {
    /// The context (kept alive while it may be current).
    ctx: Context,
    /// For a green context: the crate's own guard (the lock).
    green: Option<Current>,
    /// What was current before, and whether it is a green context this thread
    /// held.
    prev: (sys::CUcontext, bool),
    _not_send: PhantomData<*const ()>,
}

impl std::fmt::Debug for ContextScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextScope")
            .field("context", &self.ctx)
            .finish_non_exhaustive()
    }
}

impl ContextScope {
    /// Makes `ctx` current on this thread until the scope is dropped. For a
    /// green context this waits until no other thread holds it.
    ///
    /// # Errors
    /// On a driver callback thread (a host function, a graph host node), where
    /// CUDA forbids CUDA calls, [`Error::Driver`](crate::Error::Driver) of code
    /// `CUDA_ERROR_NOT_PERMITTED`, made without calling the driver, so that a
    /// library operation entered there never reaches its library; the
    /// driver's error (reading or setting the current context).
    pub fn enter(ctx: &Context) -> crate::error::Result<Self> {
        // The operations' gate (`Context::ensure_current`'s).
        crate::deferred::refuse_on_callback()?;
        let mut prev: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: `prev` is valid for writes.
        unsafe { sys::cuCtxGetCurrent(&mut prev) }.check(|| "reading the current context")?;
        let prev = (prev, context::may_be_held_green(prev));
        if ctx.is_green() {
            let green = ctx.ensure_current()?;
            return Ok(Self {
                ctx: ctx.clone(),
                green: Some(green),
                prev,
                _not_send: PhantomData,
            });
        }
        let rc = if prev.0 != ctx.handle() {
            // SAFETY: a live context that is not green (clones keep it alive).
            unsafe { sys::cuCtxSetCurrent(ctx.handle()) }
        } else {
            sys::CUDA_SUCCESS
        };
        // What this thread has current, for cudars-core's own calls.
        context::set_current_result(ctx.handle(), rc).check(|| "making a context current")?;
        Ok(Self {
            ctx: ctx.clone(),
            green: None,
            prev,
            _not_send: PhantomData,
        })
    }

    /// [`enter`](Self::enter) `stream`'s context.
    ///
    /// # Errors
    /// As [`enter`](Self::enter).
    pub fn for_stream(stream: &Stream) -> crate::error::Result<Self> {
        Self::enter(stream.context())
    }

    /// [`for_stream`](Self::for_stream) for a call into a library that makes
    /// its own device's primary context current for its CUDA work and, when
    /// done, makes the device that was current before current again (NCCL's
    /// collectives: `cudaGetDevice`, `cudaSetDevice` to the communicator's
    /// device around every launch, `cudaSetDevice` back): `None`, and no
    /// driver call, when the scope would change nothing such a library relies
    /// on, that is when `stream` is an ordinary stream (not a default-stream
    /// handle, which names the current context's) of its device's primary
    /// context, and the context cudars-core last made or saw current on this
    /// thread is a primary context (the library leaves that one current, as
    /// C's `cudaSetDevice` does). Otherwise `for_stream`'s scope, which asks
    /// the driver.
    ///
    /// Only for such a library. A library that runs in whatever context is
    /// current (cuBLAS, cuFFT, cuRAND) enters [`for_stream`](Self::for_stream):
    /// here the thread's current context is taken from cudars-core's memory,
    /// which code outside the crate can make stale (a raw `cuCtxSetCurrent`);
    /// then the library finds that context current, as a C program that made
    /// it current would, and sets its own device as it does there.
    ///
    /// # Errors
    /// As [`enter`](Self::enter).
    pub fn for_device_setting_library(stream: &Stream) -> crate::error::Result<Option<Self>> {
        // The operations' gate, on the path that calls no driver too.
        crate::deferred::refuse_on_callback()?;
        let ctx = stream.context();
        if ctx.is_primary() && stream.is_ordinary() && context::known_current_is_primary() {
            return Ok(None);
        }
        Self::for_stream(stream).map(Some)
    }

    /// The context this scope made current.
    pub fn context(&self) -> &Context {
        &self.ctx
    }
}

impl Drop for ContextScope {
    fn drop(&mut self) {
        // What was current before, whatever the scope's code made current
        // meanwhile (cudars-core's operations make their own context current),
        // put back while a green context's lock is still held; then the green
        // guard releases it (restoring the same, or nothing).
        let (prev, prev_green) = self.prev;
        context::restore_current(prev, prev_green, self.ctx.device());
        drop(self.green.take());
    }
}

/// Moves a library handle bound to `bound` onto `to`: the one place the library
/// crates do it (`cublasSetStream`, `cufftSetStream`, `curandSetStream`, …).
///
/// Soundness contract, rule 2: what a handle's calls share (a cuBLAS
/// workspace, a cuFFT work area, a cuRAND generator's state) is used by one
/// call at a time, so the calls must be totally ordered whatever stream they
/// are queued on. This checks that `to` is on the same device (a typed
/// [`InvalidArgument`](LibraryError::InvalidArgument), [`InvalidKind::OtherDevice`],
/// naming `what`), makes `to` wait for everything queued so far on `bound`
/// (nothing when they are one queue, rule 5; the whole context when `bound` is
/// a per-thread default stream, whose queue depends on the thread that used
/// it), enters `to`'s context and calls `bind` with `to`'s handle; on success
/// `bound` becomes `to`. The caller's `&mut` keeps anything from being queued
/// with the handle meanwhile.
///
/// # Errors
/// The device check's error, cudars-core's error (the wait, the context), and
/// `bind`'s.
pub fn rebind_stream<S, X>(
    bound: &mut Stream,
    to: &Stream,
    what: &str,
    bind: impl FnOnce(sys::CUstream) -> Result<(), LibraryError<S, X>>,
) -> Result<(), LibraryError<S, X>> {
    if to.device() != bound.device() {
        return Err(LibraryError::invalid(
            what.to_owned(),
            InvalidKind::OtherDevice,
            format!(
                "bound to a stream of device {}, asked to move to one of device {}",
                bound.device().ordinal(),
                to.device().ordinal()
            ),
        ));
    }
    if bound.is_per_thread_default() {
        bound.context().sync()?;
    } else if !to.is_same_queue(bound) {
        to.wait_stream(bound)?;
    }
    let _scope = ContextScope::for_stream(to)?;
    bind(to.handle())?;
    *bound = to.clone();
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use cudars_bindings::ApiKind;
    use cudars_bindings::nvrtc::{NVRTC_ERROR_COMPILATION, NvrtcError};
    use std::error::Error as _;

    type E = LibraryError<NvrtcError>;

    #[test]
    fn each_level_says_its_own_part_once() {
        let e = E::from_status(
            "compiling a kernel",
            NvrtcError::new(NVRTC_ERROR_COMPILATION),
        );
        assert!(matches!(e, E::Library { detail: None, .. }), "{e:?}");
        assert_eq!(e.to_string(), "compiling a kernel");
        let source = e.source().unwrap().to_string();
        assert!(
            source.starts_with("NVRTC_ERROR_COMPILATION (6)"),
            "{source}"
        );
        assert_eq!(e.status().unwrap().code(), NVRTC_ERROR_COMPILATION);
        assert_eq!(
            e.report().to_string(),
            format!("compiling a kernel: {source}")
        );
        // The library's own account joins the message, the status stays the source.
        let e = e.with_detail(|| Some("NVRTC: line 3".into()));
        assert_eq!(e.to_string(), "compiling a kernel (NVRTC: line 3)");
        assert!(e.source().is_some());
        assert!(!e.is_unavailable());
        assert_eq!(e.invalid_kind(), None);
    }

    #[test]
    fn checks_pass_success_and_name_what_was_done() {
        use cudars_bindings::nvrtc::NVRTC_SUCCESS;
        assert!(E::check(NVRTC_SUCCESS, || unreachable!()).is_ok());
        let e = E::check(NVRTC_ERROR_COMPILATION, || "linking".into()).unwrap_err();
        assert_eq!(e.to_string(), "linking");
    }

    #[test]
    fn a_missing_symbol_is_too_old_and_anything_else_stays() {
        let symbol = Unavailable::Symbol {
            api: ApiKind::Nccl,
            name: "ncclGather",
            symbol: "ncclGather",
            path: "/lib/libnccl.so.2".into(),
        };
        let e = E::Unavailable {
            context: "gathering".into(),
            reason: Box::new(symbol),
        }
        .needing((2, 28));
        assert!(matches!(e, E::TooOld { needs: (2, 28), .. }), "{e:?}");
        assert!(e.is_unavailable());
        assert_eq!(e.to_string(), "gathering: needs NCCL 2.28 or later");
        let other = E::invalid("gathering", InvalidKind::OutOfRange, "too long");
        assert_eq!(other.to_string(), "gathering: too long");
        assert_eq!(other.invalid_kind(), Some(InvalidKind::OutOfRange));
        assert!(matches!(other.needing((2, 28)), E::InvalidArgument { .. }));
    }

    #[test]
    fn a_library_needs_a_driver_of_its_cuda_major() {
        let v = |major, minor| Version { major, minor };
        let cufft = LibraryRelease::new("cuFFT", v(12, 0), 13);
        assert_eq!(cufft.needs_driver(), v(13, 0));
        // Minor-version compatibility: any driver of the major, or a later one.
        for ok in [13000, 13010, 13050, 14000] {
            assert!(cufft.requirement(ok).is_none(), "{ok}");
        }
        // No driver: the library's own call says so.
        assert!(cufft.requirement(0).is_none());
        let r = cufft.requirement(12090).unwrap();
        assert_eq!((r.needs, r.driver), (v(13, 0), v(12, 9)));
        assert_eq!(r.feature, "cuFFT 12.0");
        let cu12 = LibraryRelease::new("cuRAND", v(10, 3), 12);
        assert!(cu12.requirement(12000).is_none());
        assert!(cu12.requirement(13000).is_none());
        let r = cu12.requirement(11080).unwrap();
        assert_eq!(
            r.to_string(),
            "cuRAND 10.3 needs a CUDA 12.0 driver; this driver is CUDA 11.8"
        );
    }

    #[test]
    fn a_driver_too_old_says_its_part_once() {
        let release = LibraryRelease::new(
            "cuBLAS",
            Version {
                major: 13,
                minor: 1,
            },
            13,
        );
        let e = E::DriverTooOld {
            context: "creating a cuBLAS handle on device 0".into(),
            release,
            requires: Box::new(release.requirement(12040).unwrap()),
        };
        assert_eq!(
            e.to_string(),
            "creating a cuBLAS handle on device 0: cuBLAS 13.1 needs a CUDA 13.0 driver; \
             this driver is CUDA 12.4"
        );
        assert!(e.source().is_none());
        assert_eq!(e.report().to_string(), e.to_string());
        let r = e.required_driver().unwrap();
        assert_eq!((r.needs.major, r.driver.major, r.driver.minor), (13, 12, 4));
        assert!(!e.is_unavailable());
        assert!(e.status().is_none());
        // cudars-core's own driver requirement shows through too.
        let core = E::from(Error::driver_too_old(
            "making a switch node",
            DriverRequirement {
                feature: "a conditional switch node".into(),
                needs: Version {
                    major: 12,
                    minor: 8,
                },
                driver: Version {
                    major: 12,
                    minor: 4,
                },
            },
        ));
        assert_eq!(core.required_driver().unwrap().needs.minor, 8);
        assert!(
            E::invalid("x", InvalidKind::Other, "y")
                .required_driver()
                .is_none()
        );
    }

    #[test]
    fn a_gate_asks_its_library_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static PROBES: AtomicUsize = AtomicUsize::new(0);
        static GATE: DriverGate = DriverGate::new(|| {
            PROBES.fetch_add(1, Ordering::Relaxed);
            None
        });
        // A release that cannot be told lets the call go on.
        for _ in 0..3 {
            assert!(
                GATE.check::<NvrtcError, Infallible>(|| unreachable!())
                    .is_ok()
            );
        }
        assert!(GATE.release().is_none());
        assert!(GATE.release().is_none());
        assert_eq!(PROBES.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn core_and_extra_errors_are_transparent() {
        let core = Error::invalid_as(InvalidKind::ZeroSize, "allocating", "zero bytes");
        let text = core.to_string();
        let e = E::from(core);
        assert_eq!(e.to_string(), text);
        assert_eq!(e.invalid_kind(), Some(InvalidKind::ZeroSize));
        #[derive(Debug, thiserror::Error)]
        #[error("an extra case")]
        struct Extra;
        let e: LibraryError<NvrtcError, Extra> = LibraryError::Extra(Extra);
        assert_eq!(e.to_string(), "an extra case");
        assert!(e.source().is_none());
    }
}
