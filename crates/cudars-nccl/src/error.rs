//! The crate's error type: what was being done, and NCCL's or cudars-core's error.

use std::borrow::Cow;

use cudars_bindings::Unavailable;
use cudars_bindings::nccl::{self as sys, NcclError};
use cudars_core::InvalidKind;

/// Everything that can go wrong in this crate.
///
/// Each variant says what was being done (`context`); the library's error (its
/// status code, name and description) or cudars-core's is the
/// [`source`](std::error::Error::source), never repeated in the message. Print
/// the whole chain with [`report`](Self::report).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A NCCL call failed; the source is NCCL's status. `detail` is NCCL's own
    /// account of the last failure (`ncclGetLastError`), when it gave one.
    #[error("{context}{}", detail.as_ref().map(|d| format!(" (NCCL: {d})")).unwrap_or_default())]
    Nccl {
        /// What was being done.
        context: Cow<'static, str>,
        /// NCCL's last error message, when it had one.
        detail: Option<String>,
        /// NCCL's error: its status code, name and description.
        #[source]
        source: NcclError,
    },
    /// NCCL or one of its entry points is not available (not installed, not
    /// found, a symbol missing); the source says which and why. Nothing was
    /// called.
    #[error("{context}")]
    Unavailable {
        /// What was being done.
        context: Cow<'static, str>,
        /// Why the library or entry point cannot be used.
        #[source]
        reason: Box<Unavailable>,
    },
    /// The loaded NCCL predates the entry point the call needs, which NCCL added
    /// in release `needs` (major, minor; 2.28 for all-to-all, gather and
    /// scatter). The source says which symbol is missing from which library.
    /// Nothing was called.
    #[error("{context}: needs NCCL {}.{} or later", needs.0, needs.1)]
    TooOld {
        /// What was being done.
        context: Cow<'static, str>,
        /// The NCCL release (major, minor) that added the entry point.
        needs: (u32, u32),
        /// The missing entry point.
        #[source]
        reason: Box<Unavailable>,
    },
    /// An argument was rejected before NCCL was called; `kind` says which
    /// common case it is, for matching.
    #[error("{context}: {message}")]
    InvalidArgument {
        /// What was being done.
        context: Cow<'static, str>,
        /// Which kind of mistake.
        kind: InvalidKind,
        /// What is wrong with the argument.
        message: String,
    },
    /// A cudars-core operation (a context, a stream, an allocation) failed.
    #[error(transparent)]
    Core(#[from] cudars_core::Error),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The error and its causes, each once, joined by `": "`: the line to log.
    pub fn report(&self) -> cudars_core::Report<'_> {
        cudars_core::Report::new(self)
    }

    /// NCCL's status, when NCCL returned the error.
    pub fn status(&self) -> Option<&NcclError> {
        match self {
            Self::Nccl { source, .. } => Some(source),
            _ => None,
        }
    }

    /// The kind of argument error, for [`Error::InvalidArgument`] (cudars-core's
    /// own argument errors included).
    pub fn invalid_kind(&self) -> Option<InvalidKind> {
        match self {
            Self::InvalidArgument { kind, .. } => Some(*kind),
            Self::Core(e) => e.invalid_kind(),
            _ => None,
        }
    }

    /// Whether NCCL (or cudars-core's driver) was not available, or lacked an
    /// entry point ([`Error::TooOld`]).
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Unavailable { .. } | Self::TooOld { .. } => true,
            Self::Core(e) => e.is_unavailable(),
            _ => false,
        }
    }

    pub(crate) fn invalid(
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
}

/// Turns a NCCL status into a `Result`, saying what was being done: an entry
/// point that could not be called becomes [`Error::Unavailable`]; a failure of a
/// call that reached NCCL carries NCCL's last error message.
pub(crate) fn check(code: sys::ncclResult_t, context: impl FnOnce() -> String) -> Result<()> {
    use cudars_bindings::IntoResult as _;
    code.result()
        .map_err(|source| Error::from_nccl(source, context()))
}

/// [`check`] for an entry point NCCL added in release `needs` (major, minor): a
/// library that lacks it gives [`Error::TooOld`], naming that release.
pub(crate) fn check_since(
    code: sys::ncclResult_t,
    needs: (u32, u32),
    context: impl FnOnce() -> String,
) -> Result<()> {
    check(code, context).map_err(|e| e.needing(needs))
}

impl Error {
    /// `self`, as [`Error::TooOld`] when it says the loaded library lacks the
    /// entry point (a release before `needs`).
    fn needing(self, needs: (u32, u32)) -> Self {
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

    /// NCCL's error as [`Error::Unavailable`] when the call could not be made,
    /// else as [`Error::Nccl`] with NCCL's last error message.
    pub(crate) fn from_nccl(source: NcclError, context: impl Into<Cow<'static, str>>) -> Self {
        let context = context.into();
        match source.unavailable() {
            Some(reason) => Error::Unavailable {
                context,
                reason: Box::new(reason.clone()),
            },
            None => Error::Nccl {
                context,
                detail: last_error(),
                source,
            },
        }
    }
}

/// NCCL's message about its last failure (`ncclGetLastError`), if it has one.
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
    (!s.is_empty()).then_some(s)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use cudars_bindings::ApiKind;

    #[test]
    fn a_missing_symbol_names_the_release_that_added_it() {
        let symbol = Unavailable::Symbol {
            api: ApiKind::Nccl,
            name: "ncclGather",
            symbol: "ncclGather",
            path: "/lib/libnccl.so.2".into(),
        };
        let e = Error::Unavailable {
            context: "gathering".into(),
            reason: Box::new(symbol),
        }
        .needing((2, 28));
        assert!(matches!(e, Error::TooOld { needs: (2, 28), .. }), "{e:?}");
        assert!(e.is_unavailable());
        assert_eq!(e.to_string(), "gathering: needs NCCL 2.28 or later");
        let source = std::error::Error::source(&e).unwrap().to_string();
        assert!(source.contains("`ncclGather` is not exported"), "{source}");
        // Any other error is left as it is.
        let other = Error::invalid("gathering", InvalidKind::Other, "no");
        assert!(matches!(
            other.needing((2, 28)),
            Error::InvalidArgument { .. }
        ));
    }
}
