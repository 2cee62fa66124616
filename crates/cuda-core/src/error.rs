//! The crate's one error type: what went wrong, and what was being done.

use std::borrow::Cow;

use cuda_bindings::driver::{CUresult, DriverError};

/// Everything that can go wrong in `cuda-core`.
///
/// Each variant carries `context`: what was being done, in words
/// (`allocating 1048576 bytes on device 0`), so that the message alone says which call
/// failed and why. CUDA's own errors keep their code, name and description
/// ([`DriverError`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A CUDA driver call failed (or the driver is missing: the source says where
    /// it was searched for).
    #[error("{context}: {source}")]
    Driver {
        /// What was being done.
        context: Cow<'static, str>,
        /// The driver's error.
        #[source]
        source: DriverError,
    },
    /// An argument was rejected before CUDA was called (a zero size, an
    /// out-of-range copy, a buffer of another device, …).
    #[error("{context}: {message}")]
    InvalidArgument {
        /// What was being done.
        context: Cow<'static, str>,
        /// What is wrong with the argument.
        message: String,
    },
    /// An operation the object does not support (timing on an event made without
    /// it, host access to device-only memory, …).
    #[error("{context}: {message}")]
    Unsupported {
        /// What was being done.
        context: Cow<'static, str>,
        /// Why it cannot be done.
        message: String,
    },
}

impl Error {
    /// The driver's status code, when the error came from the driver.
    pub fn driver_code(&self) -> Option<CUresult> {
        match self {
            Self::Driver { source, .. } => Some(source.code()),
            _ => None,
        }
    }

    pub(crate) fn invalid(
        context: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
    ) -> Self {
        Self::InvalidArgument {
            context: context.into(),
            message: message.into(),
        }
    }

    pub(crate) fn unsupported(
        context: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
    ) -> Self {
        Self::Unsupported {
            context: context.into(),
            message: message.into(),
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Checks a driver status, attaching what was being done (built only on failure).
pub(crate) trait Check {
    fn check<C: Into<Cow<'static, str>>>(self, context: impl FnOnce() -> C) -> Result<()>;
}

impl Check for CUresult {
    #[inline]
    fn check<C: Into<Cow<'static, str>>>(self, context: impl FnOnce() -> C) -> Result<()> {
        if self == cuda_bindings::driver::CUDA_SUCCESS {
            Ok(())
        } else {
            Err(Error::Driver {
                context: context().into(),
                source: DriverError::new(self),
            })
        }
    }
}
