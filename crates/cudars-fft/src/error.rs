//! The crate's error type: what was being done, and cuFFT's or cudars-core's error.

use std::borrow::Cow;

use cudars_bindings::Unavailable;
use cudars_bindings::cufft::CufftError;
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
    /// A cuFFT call failed; the source is cuFFT's status.
    #[error("{context}")]
    Fft {
        /// What was being done.
        context: Cow<'static, str>,
        /// cuFFT's error: its status code, name and description.
        #[source]
        source: CufftError,
    },
    /// cuFFT or one of its entry points is not available (not installed, not
    /// found, a symbol missing, a CUDA major the bindings do not know); the source
    /// says which and why. Nothing was called.
    #[error("{context}")]
    Unavailable {
        /// What was being done.
        context: Cow<'static, str>,
        /// Why the library or entry point cannot be used.
        #[source]
        reason: Box<Unavailable>,
    },
    /// An argument was rejected before cuFFT was called; `kind` says which
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

    /// cuFFT's status, when cuFFT returned the error.
    pub fn status(&self) -> Option<&CufftError> {
        match self {
            Self::Fft { source, .. } => Some(source),
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

    /// Whether cuFFT (or cudars-core's driver) was not available.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Unavailable { .. } => true,
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

/// Turns a cuFFT status into a `Result`, saying what was being done: an
/// entry point that could not be called becomes [`Error::Unavailable`].
pub(crate) fn check<C>(code: C, context: impl FnOnce() -> String) -> Result<()>
where
    C: cudars_bindings::IntoResult<Error = CufftError>,
{
    code.result().map_err(|source| {
        let context = Cow::Owned(context());
        match source.unavailable() {
            Some(reason) => Error::Unavailable {
                context,
                reason: Box::new(reason.clone()),
            },
            None => Error::Fft { context, source },
        }
    })
}
