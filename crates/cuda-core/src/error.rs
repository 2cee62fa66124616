//! The crate's one error type: what went wrong, and what was being done.

use std::borrow::Cow;

use cuda_bindings::Version;
use cuda_bindings::driver::{CUresult, DriverError};
use cuda_bindings::nvjitlink::NvJitLinkError;
use cuda_bindings::nvrtc::NvrtcError;
use cuda_bindings::nvvm::NvvmError;

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
    /// Compiling or linking failed: the tool's error and its log.
    #[error("{context}: {source}{}", log_suffix(log))]
    Compile {
        /// What was being compiled or linked.
        context: Cow<'static, str>,
        /// The compiler's or linker's log (empty if it wrote none).
        log: String,
        /// The tool's error.
        #[source]
        source: ToolError,
    },
    /// A call into NVRTC, NVVM or nvJitLink failed outside compilation proper
    /// (creating a program, reading a result, a missing library, …).
    #[error("{context}: {source}")]
    Tool {
        /// What was being done.
        context: Cow<'static, str>,
        /// The tool's error.
        #[source]
        source: ToolError,
    },
    /// Reading or writing a file failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: Cow<'static, str>,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// An operation that cannot be done here: the object does not support it
    /// (timing on an event made without it, host access to device-only memory, …)
    /// or the installed driver is too old for it (then `requires` says which
    /// feature needs which driver version: "a conditional `switch` node needs a
    /// CUDA 12.8 driver; this driver is CUDA 12.4").
    #[error("{context}: {message}")]
    Unsupported {
        /// What was being done.
        context: Cow<'static, str>,
        /// Why it cannot be done.
        message: String,
        /// The driver version the feature needs, when that is why.
        requires: Option<DriverRequirement>,
    },
}

/// A feature the installed driver is too old for: what it is, the driver version
/// it needs and the installed one ([`Error::Unsupported`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverRequirement {
    /// The feature, in words or as the driver function that provides it
    /// (`a conditional switch node`, `` `cuGreenCtxStreamCreate` ``).
    pub feature: Cow<'static, str>,
    /// The CUDA version of the oldest driver that has it.
    pub needs: Version,
    /// The installed driver's CUDA version.
    pub driver: Version,
}

impl std::fmt::Display for DriverRequirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} needs a CUDA {} driver; this driver is CUDA {}",
            self.feature, self.needs, self.driver
        )
    }
}

impl Error {
    /// The driver's status code, when the error came from the driver.
    pub fn driver_code(&self) -> Option<CUresult> {
        match self {
            Self::Driver { source, .. } => Some(source.code()),
            _ => None,
        }
    }

    /// The compiler's or linker's log, for [`Error::Compile`].
    pub fn log(&self) -> Option<&str> {
        match self {
            Self::Compile { log, .. } => Some(log),
            _ => None,
        }
    }

    pub(crate) fn tool(
        context: impl Into<Cow<'static, str>>,
        source: impl Into<ToolError>,
    ) -> Self {
        Self::Tool {
            context: context.into(),
            source: source.into(),
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
            requires: None,
        }
    }

    /// [`Error::Unsupported`] for a feature the installed driver is too old for.
    pub(crate) fn driver_too_old(
        context: impl Into<Cow<'static, str>>,
        requires: DriverRequirement,
    ) -> Self {
        Self::Unsupported {
            context: context.into(),
            message: requires.to_string(),
            requires: Some(requires),
        }
    }

    /// The feature and driver version needed, when the installed driver is too
    /// old for what was asked ([`Error::Unsupported`] with `requires`).
    pub fn required_driver(&self) -> Option<&DriverRequirement> {
        match self {
            Self::Unsupported { requires, .. } => requires.as_ref(),
            _ => None,
        }
    }
}

/// The error of one of the compilation tools.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// NVRTC's error.
    #[error(transparent)]
    Nvrtc(#[from] NvrtcError),
    /// NVVM's error.
    #[error(transparent)]
    Nvvm(#[from] NvvmError),
    /// nvJitLink's error.
    #[error(transparent)]
    NvJitLink(#[from] NvJitLinkError),
    /// The driver's JIT linker (`cuLink*`) or module loader.
    #[error(transparent)]
    Driver(#[from] DriverError),
}

fn log_suffix(log: &str) -> String {
    let log = log.trim_end_matches(['\0', '\n', ' ']);
    if log.is_empty() {
        String::new()
    } else {
        format!("\n{log}")
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
            Err(driver_error(context().into(), DriverError::new(self)))
        }
    }
}

/// A driver error, or [`Error::Unsupported`] when it says that the entry point
/// called is missing because the driver is older than the ABI it needs.
#[cold]
fn driver_error(context: Cow<'static, str>, source: DriverError) -> Error {
    let too_old = source.unavailable().and_then(|u| match u {
        cuda_bindings::Unavailable::DriverSymbol { name, .. } => u
            .needs_driver()
            .map(|(needs, driver)| (*name, needs, driver)),
        _ => None,
    });
    match too_old {
        Some((name, needs, driver)) => Error::driver_too_old(
            context,
            DriverRequirement {
                feature: Cow::Owned(format!("`{name}`")),
                needs,
                driver,
            },
        ),
        None => Error::Driver { context, source },
    }
}
