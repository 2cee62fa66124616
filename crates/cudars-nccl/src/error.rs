//! The crate's error type: cudars-core's [`LibraryError`] over NCCL's status,
//! with NCCL's own account of each failure.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use cudars_bindings::Version;
use cudars_bindings::nccl::{self as sys, NcclError};
use cudars_core::{DriverRequirement, LibraryError, LibraryRelease};

/// Everything that can go wrong in this crate: what was being done, and
/// NCCL's status with NCCL's last error message as `detail`
/// ([`LibraryError::Library`]), why NCCL could not be called
/// ([`LibraryError::Unavailable`]), a driver too old for NCCL's CUDA runtime
/// ([`LibraryError::DriverTooOld`], see [`crate`]'s "Which driver"), an NCCL
/// too old for the call
/// ([`LibraryError::TooOld`]: the release that added the entry point), a
/// rejected argument ([`LibraryError::InvalidArgument`]) or cudars-core's error
/// ([`LibraryError::Core`]), each level saying its own part once and the cause
/// as the [`source`](std::error::Error::source), or one of this crate's own
/// failures ([`LibraryError::Extra`]: a [`WorldError`], a launcher's variables
/// that do not describe a rank or a join that timed out). Print the whole
/// chain with [`report`](LibraryError::report).
pub type Error = LibraryError<NcclError, WorldError>;

/// This crate's own failures, which are no NCCL status ([`Error::Extra`](LibraryError::Extra)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorldError {
    /// A launcher's variables are missing, malformed or inconsistent
    /// ([`World::from_env`](crate::World::from_env)): it names every variable
    /// read and the ones missing.
    Env(crate::launcher::EnvError),
    /// NCCL was still at work when the timeout passed (a rank that never
    /// joined, a root nobody reached, ranks that disagree on the size, a
    /// collective whose peer is gone). A communicator still being made was
    /// aborted.
    TimedOut(TimedOut),
}

impl fmt::Display for WorldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Env(e) => fmt::Display::fmt(e, f),
            Self::TimedOut(t) => fmt::Display::fmt(t, f),
        }
    }
}

impl std::error::Error for WorldError {}

/// What timed out, and after how long ([`WorldError::TimedOut`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedOut {
    pub(crate) context: String,
    pub(crate) after: Duration,
    pub(crate) aborted: bool,
}

impl TimedOut {
    /// What was being done.
    pub fn context(&self) -> &str {
        &self.context
    }

    /// The timeout that passed.
    pub fn after(&self) -> Duration {
        self.after
    }

    /// Whether the communicator was aborted (`ncclCommAbort`): always when it
    /// was being made.
    pub fn aborted(&self) -> bool {
        self.aborted
    }
}

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: NCCL had not finished after {:.1} s",
            self.context,
            self.after.as_secs_f64()
        )?;
        if self.aborted {
            f.write_str("; the communicator was aborted")?;
        }
        Ok(())
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Turns a NCCL status into a `Result`, saying what was being done: an entry
/// point that could not be called becomes [`LibraryError::Unavailable`]; a
/// failure of a call that reached NCCL carries NCCL's last error message, or
/// is [`LibraryError::DriverTooOld`] when NCCL's CUDA runtime refused the
/// driver.
pub(crate) fn check(code: sys::ncclResult_t, context: impl FnOnce() -> String) -> Result<()> {
    Error::check(code, context).map_err(|e| driver_too_old(e.with_detail(last_error)))
}

/// [`check`] for an entry point NCCL added in release `needs` (major, minor): a
/// library that lacks it gives [`LibraryError::TooOld`], naming that release.
pub(crate) fn check_since(
    code: sys::ncclResult_t,
    needs: (u32, u32),
    context: impl FnOnce() -> String,
) -> Result<()> {
    check(code, context).map_err(|e| e.needing(needs))
}

/// NCCL's error as [`LibraryError::Unavailable`] when the call could not be
/// made, else as [`LibraryError::Library`] with NCCL's last error message (or
/// [`LibraryError::DriverTooOld`], as [`check`] gives it).
pub(crate) fn from_nccl(source: NcclError, context: impl Into<Cow<'static, str>>) -> Error {
    driver_too_old(Error::from_status(context, source).with_detail(last_error))
}

/// What CUDA's runtime says when the driver is older than the runtime's CUDA
/// major (`cudaErrorInsufficientDriver`), and NCCL passes on as its last error.
const INSUFFICIENT_DRIVER: &str = "CUDA driver version is insufficient for CUDA runtime version";

/// `e` as [`LibraryError::DriverTooOld`] when it is NCCL's CUDA runtime
/// refusing the driver: `ncclUnhandledCudaError` whose last error is the
/// runtime's [`INSUFFICIENT_DRIVER`]. Any other error is returned unchanged.
///
/// NCCL does not say which CUDA major it was built for (see the crate's
/// "Which driver"), but the refusal does: within a CUDA major the runtime runs
/// on every driver of that major (minor-version compatibility), so a runtime
/// that refuses a CUDA `M.x` driver belongs to a major after `M`. The error
/// names the first of them, `M + 1`, as the major NCCL belongs to and `M+1.0`
/// as the driver it needs: the oldest driver that could run it (the packaged
/// NCCL of each CUDA major is built for that major). The error has no source:
/// NCCL's message is the refusal it reports.
fn driver_too_old(e: Error) -> Error {
    refused_driver(e, driver_version, || sys::version().ok())
}

/// [`driver_too_old`] with the driver's version (`cuDriverGetVersion`'s
/// encoding, 0 for none) and NCCL's (major, minor, patch) asked of `driver`
/// and `nccl`, only for an error that is the runtime's refusal. Without
/// either, the error is returned unchanged.
fn refused_driver(
    e: Error,
    driver: impl FnOnce() -> i32,
    nccl: impl FnOnce() -> Option<(i32, i32, i32)>,
) -> Error {
    let Error::Library {
        context,
        detail: Some(detail),
        source,
    } = &e
    else {
        return e;
    };
    if source.code() != sys::ncclUnhandledCudaError || !detail.contains(INSUFFICIENT_DRIVER) {
        return e;
    }
    let driver = Version::from_cuda(driver());
    if driver.major <= 0 {
        return e;
    }
    let Some((major, minor, _)) = nccl() else {
        return e;
    };
    let release = LibraryRelease::new("NCCL", Version { major, minor }, driver.major + 1);
    let requires = DriverRequirement {
        feature: Cow::Owned(format!("{release} (built for a newer CUDA major)")),
        needs: release.needs_driver(),
        driver,
    };
    Error::DriverTooOld {
        context: context.clone(),
        release,
        requires: Box::new(requires),
    }
}

/// The driver's CUDA version (`cuDriverGetVersion`: `1000 * major + 10 *
/// minor`), 0 when it cannot be read.
fn driver_version() -> i32 {
    let mut v = 0;
    // SAFETY: `v` is valid for writes; the call needs no `cuInit`.
    let rc = unsafe { cudars_bindings::driver::cuDriverGetVersion(&mut v) };
    if rc == cudars_bindings::driver::CUDA_SUCCESS {
        v
    } else {
        0
    }
}

/// NCCL's message about its last failure (`ncclGetLastError`), if it has one,
/// as `NCCL: …`.
fn last_error() -> Option<String> {
    // SAFETY: NCCL is loaded (a call just reached it); the argument is unused by
    // NCCL and may be null; the result is null or a NUL-terminated string NCCL
    // owns, copied here before any other NCCL call.
    let p = unsafe { sys::ncclGetLastError(std::ptr::null_mut()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null, NUL-terminated, alive until the next NCCL call.
    let s = unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .trim()
        .to_owned();
    (!s.is_empty()).then(|| format!("NCCL: {s}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    /// NCCL's failure as `check` makes it: `code`, with `detail` as NCCL's
    /// last error.
    fn failed(code: sys::ncclResult_t, detail: &str) -> Error {
        Error::Library {
            context: "making a NCCL communicator of 1 ranks in one process".into(),
            detail: Some(detail.to_owned()),
            source: NcclError::new(code),
        }
    }

    const REFUSED: &str =
        "NCCL: Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'";

    #[test]
    fn the_runtime_refusing_the_driver_is_driver_too_old() {
        let e = refused_driver(
            failed(sys::ncclUnhandledCudaError, REFUSED),
            || 12040,
            || Some((2, 28, 9)),
        );
        let Error::DriverTooOld {
            context,
            release,
            requires,
        } = &e
        else {
            panic!("expected DriverTooOld, got {e:?}");
        };
        assert_eq!(
            context,
            "making a NCCL communicator of 1 ranks in one process"
        );
        assert_eq!(
            *release,
            LibraryRelease::new(
                "NCCL",
                Version {
                    major: 2,
                    minor: 28
                },
                13
            )
        );
        assert_eq!(
            requires.needs,
            Version {
                major: 13,
                minor: 0
            }
        );
        assert_eq!(
            requires.driver,
            Version {
                major: 12,
                minor: 4
            }
        );
        assert_eq!(e.required_driver(), Some(&**requires));
        assert_eq!(
            e.report().to_string(),
            "making a NCCL communicator of 1 ranks in one process: NCCL 2.28 (built for a \
             newer CUDA major) needs a CUDA 13.0 driver; this driver is CUDA 12.4"
        );
        // A CUDA 11 driver: the first major after it.
        let e = refused_driver(
            failed(sys::ncclUnhandledCudaError, REFUSED),
            || 11080,
            || Some((2, 21, 5)),
        );
        let r = e.required_driver().unwrap();
        assert_eq!((r.needs.major, r.needs.minor, r.driver.major), (12, 0, 11));
    }

    #[test]
    fn other_failures_are_left_as_they_are() {
        let asked = std::cell::Cell::new(false);
        let driver = || {
            asked.set(true);
            12040
        };
        // Another CUDA failure, the same text under another status, no text.
        for e in [
            failed(
                sys::ncclUnhandledCudaError,
                "NCCL: Cuda failure 'out of memory'",
            ),
            failed(sys::ncclSystemError, REFUSED),
            Error::Library {
                context: "joining".into(),
                detail: None,
                source: NcclError::new(sys::ncclUnhandledCudaError),
            },
        ] {
            let e = refused_driver(e, driver, || Some((2, 28, 9)));
            assert!(matches!(e, Error::Library { .. }), "{e:?}");
        }
        assert!(!asked.get(), "the driver was asked about another failure");
        // No driver, or an NCCL that does not give its version: unchanged.
        let e = refused_driver(
            failed(sys::ncclUnhandledCudaError, REFUSED),
            || 0,
            || Some((2, 28, 9)),
        );
        assert!(matches!(e, Error::Library { .. }), "{e:?}");
        let e = refused_driver(
            failed(sys::ncclUnhandledCudaError, REFUSED),
            || 12040,
            || None,
        );
        assert!(matches!(e, Error::Library { .. }), "{e:?}");
    }
}
