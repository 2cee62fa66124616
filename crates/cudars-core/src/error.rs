//! The crate's one error type: what went wrong, and what was being done.

use std::borrow::Cow;
use std::fmt;

#[cfg(feature = "nvml")]
use cudars_bindings::ApiKind;
use cudars_bindings::driver::{CUDA_ERROR_OUT_OF_MEMORY, CUresult, DriverError};
use cudars_bindings::nvfatbin::NvFatbinError;
use cudars_bindings::nvjitlink::NvJitLinkError;
#[cfg(feature = "nvml")]
use cudars_bindings::nvml::{self as nvml, NvmlError, nvmlReturn_t};
use cudars_bindings::nvrtc::NvrtcError;
use cudars_bindings::nvvm::NvvmError;
use cudars_bindings::{Unavailable, Version};

mod debug;

/// Everything that can go wrong in `cudars-core`.
///
/// Each variant carries `context`: what was being done, in words
/// (`allocating 1048576 bytes on device 0`). Each level of an error says its own
/// part once: a variant that wraps another error ([`Driver`](Self::Driver),
/// [`Unavailable`](Self::Unavailable), [`Compile`](Self::Compile),
/// [`Tool`](Self::Tool), `Nvml` (feature `nvml`), [`Io`](Self::Io)) displays its
/// context (and a compiler's log) and returns the wrapped error from
/// [`source`](std::error::Error::source), never both. Print the whole chain with
/// [`report`](Self::report) (or `anyhow`'s `{:#}`):
///
/// ```text
/// allocating 1048576 bytes on device 0: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory
/// initialising the CUDA driver (cuInit): the CUDA driver library could not be loaded: library `cuda` not found; searched, in order: …
/// ```
///
/// CUDA's own errors keep their code, name and description ([`DriverError`],
/// `NvmlError`, [`ToolError`]).
///
/// `{:?}` prints the same chain as a report, one level a line, as `anyhow`
/// does, so `fn main() -> Result<(), cudars_core::Error>` and `{e:?}` show
/// every cause; `{:#?}` prints the variant and its fields:
///
/// ```text
/// initialising the CUDA driver (cuInit)
///
/// Caused by:
///     0: the CUDA driver library could not be loaded
///     1: library `cuda` not found; searched, in order: …
/// ```
#[non_exhaustive]
pub enum Error {
    /// A CUDA driver call failed; the source is the driver's error (its code,
    /// name and description).
    Driver {
        /// What was being done.
        context: Cow<'static, str>,
        /// The driver's error.
        source: DriverError,
    },
    /// A library (the driver, NVRTC, nvJitLink, NVVM, the runtime, NVML) or one
    /// of its entry points is not available: not installed or not found, a
    /// symbol missing from the one found, a CUDA major the bindings do not know.
    /// The source, `reason`, says which and why; for a library that was not
    /// found, its source lists every place searched. No CUDA call was made.
    ///
    /// A driver too old for an entry point is [`Unsupported`](Self::Unsupported)
    /// with [`required_driver`](Self::required_driver) instead.
    Unavailable {
        /// What was being done.
        context: Cow<'static, str>,
        /// Why the library or entry point cannot be used (boxed: it is large
        /// and rare).
        reason: Box<Unavailable>,
    },
    /// An argument was rejected before CUDA was called (a zero size, an
    /// out-of-range copy, a buffer of another device, …); `kind` says which
    /// common case it is, for matching.
    InvalidArgument {
        /// What was being done.
        context: Cow<'static, str>,
        /// Which kind of mistake (`Other` for the rest).
        kind: InvalidKind,
        /// What is wrong with the argument.
        message: String,
    },
    /// Compiling or linking failed: the compiler's or linker's log, and the
    /// tool's error as the source.
    Compile {
        /// What was being compiled or linked.
        context: Cow<'static, str>,
        /// The compiler's or linker's log (empty if it wrote none).
        log: String,
        /// The tool's error.
        source: ToolError,
    },
    /// A call into NVRTC, NVVM, nvJitLink or nvFatbin failed outside compilation proper
    /// (creating a program, reading a result, …).
    Tool {
        /// What was being done.
        context: Cow<'static, str>,
        /// The tool's error.
        source: ToolError,
    },
    /// An NVML call failed ([`system`](crate::system)); the source is NVML's
    /// error (its code, name and description).
    #[cfg(feature = "nvml")]
    #[cfg_attr(docsrs, doc(cfg(feature = "nvml")))]
    Nvml {
        /// What was being done.
        context: Cow<'static, str>,
        /// NVML's error.
        source: NvmlError,
    },
    /// Reading or writing a file failed.
    Io {
        /// What was being done.
        context: Cow<'static, str>,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Something looked for on the system (the toolkit's headers) was not
    /// found or could not be used; the source is the pathfinder's error, which
    /// lists every place searched. `?` makes one from a `PathfinderError`.
    Pathfinder {
        /// What was being done.
        context: Cow<'static, str>,
        /// The pathfinder's error (boxed: it is large and rare).
        source: Box<cudars_pathfinder::PathfinderError>,
    },
    /// An operation that cannot be done here: the object does not support it
    /// (timing on an event made without it, host access to device-only memory, …)
    /// or the installed driver is too old for it (then `requires` says which
    /// feature needs which driver version: "a conditional `switch` node needs a
    /// CUDA 12.8 driver; this driver is CUDA 12.4").
    Unsupported {
        /// What was being done.
        context: Cow<'static, str>,
        /// Why it cannot be done.
        message: String,
        /// The driver version the feature needs, when that is why.
        requires: Option<DriverRequirement>,
    },
    /// A host function queued on the stream
    /// ([`Stream::launch_host_func`](crate::Stream::launch_host_func)) panicked;
    /// the panic was caught on the driver's thread and is reported here, by the
    /// next [`Stream::sync`](crate::Stream::sync). The stream stays usable.
    HostCallbackPanicked {
        /// What was being done when the panic was reported.
        context: Cow<'static, str>,
        /// The panic's message and how many host functions panicked.
        panic: CallbackPanic,
    },
}

// `Display` and `Error` are written out rather than derived: the crate has no
// proc-macro dependency by default, so that a dependent's first build compiles no
// parser (docs/performance.md, "A dependent's build"). A variant that wraps an error
// displays its own part (the context) and returns the wrapped error as its source.
impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Driver { context, .. }
            | Self::Unavailable { context, .. }
            | Self::Tool { context, .. }
            | Self::Io { context, .. }
            | Self::Pathfinder { context, .. } => f.write_str(context),
            #[cfg(feature = "nvml")]
            Self::Nvml { context, .. } => f.write_str(context),
            Self::InvalidArgument {
                context, message, ..
            }
            | Self::Unsupported {
                context, message, ..
            } => write!(f, "{context}: {message}"),
            Self::Compile { context, log, .. } => write!(f, "{context}{}", log_suffix(log)),
            Self::HostCallbackPanicked { context, panic } => write!(f, "{context}: {panic}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Driver { source, .. } => Some(source),
            Self::Unavailable { reason, .. } => Some(&**reason),
            Self::Compile { source, .. } | Self::Tool { source, .. } => Some(source),
            #[cfg(feature = "nvml")]
            Self::Nvml { source, .. } => Some(source),
            Self::Io { source, .. } => Some(source),
            Self::Pathfinder { source, .. } => Some(&**source),
            Self::InvalidArgument { .. }
            | Self::Unsupported { .. }
            | Self::HostCallbackPanicked { .. } => None,
        }
    }
}

/// The common kinds of [`Error::InvalidArgument`], for matching on them.
///
/// ```no_run
/// use cudars_core::{Device, Error, InvalidKind, StreamOptions};
///
/// let dev = Device::new(0)?;
/// let stream = dev.create_stream(StreamOptions::default())?;
/// match dev.allocate(0, &stream) {
///     Err(Error::InvalidArgument { kind: InvalidKind::ZeroSize, .. }) => {}
///     other => panic!("{other:?}"),
/// }
/// # Ok::<(), cudars_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InvalidKind {
    /// A size of zero where at least one byte (or element) is needed.
    ZeroSize,
    /// An index, size, count or range beyond what it refers to (a device
    /// ordinal, a copy longer than a buffer, …).
    OutOfRange,
    /// An object of another device or context than the one the call is for (a
    /// stream of device 1 for a buffer of device 0, …).
    OtherDevice,
    /// An IPC buffer descriptor whose allocation this process has imported
    /// already, into a [`Buffer`](crate::Buffer) that is still alive: two
    /// owning buffers over one mapping would each free it (and could lend two
    /// `&mut` views of it). Import it again once that buffer is gone.
    AlreadyImported,
    /// A kernel whose type, as the compiler sees it, is not the signature its
    /// `kernels!` launch function takes (the macro's reading of the source was
    /// wrong: a preprocessor trick, a `-D` define of the options, a `declare`
    /// the source does not mean); the message names the kernel and both
    /// signatures. See `cudars_core::kernel_check`.
    KernelSignature,
    /// Any other argument error: the message says what.
    Other,
}

/// The kinds of NVML failure ([`Error::nvml_kind`]), one per `nvmlReturn_t`
/// error code; `cuda.core.system` raises one exception class for each
/// (`NotSupportedError`, `NoPermissionError`, …).
#[cfg(feature = "nvml")]
#[cfg_attr(docsrs, doc(cfg(feature = "nvml")))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NvmlErrorKind {
    /// NVML was not initialised (`NVML_ERROR_UNINITIALIZED`).
    Uninitialized,
    /// An argument NVML rejected (`NVML_ERROR_INVALID_ARGUMENT`).
    InvalidArgument,
    /// The device or the driver does not support the query
    /// (`NVML_ERROR_NOT_SUPPORTED`).
    NotSupported,
    /// The caller lacks the permission (`NVML_ERROR_NO_PERMISSION`).
    NoPermission,
    /// Already initialised (`NVML_ERROR_ALREADY_INITIALIZED`; deprecated).
    AlreadyInitialized,
    /// The object asked for does not exist (`NVML_ERROR_NOT_FOUND`).
    NotFound,
    /// A buffer was too small (`NVML_ERROR_INSUFFICIENT_SIZE`).
    InsufficientSize,
    /// External power cables are not connected (`NVML_ERROR_INSUFFICIENT_POWER`).
    InsufficientPower,
    /// The NVIDIA driver is not loaded (`NVML_ERROR_DRIVER_NOT_LOADED`).
    DriverNotLoaded,
    /// The request timed out (`NVML_ERROR_TIMEOUT`).
    Timeout,
    /// The kernel detected an interrupt problem (`NVML_ERROR_IRQ_ISSUE`).
    IrqIssue,
    /// NVML's shared library was not found (`NVML_ERROR_LIBRARY_NOT_FOUND`).
    LibraryNotFound,
    /// The library lacks the function (`NVML_ERROR_FUNCTION_NOT_FOUND`).
    FunctionNotFound,
    /// The InfoROM is corrupted (`NVML_ERROR_CORRUPTED_INFOROM`).
    CorruptedInforom,
    /// The GPU fell off the bus or is otherwise inaccessible
    /// (`NVML_ERROR_GPU_IS_LOST`).
    GpuIsLost,
    /// The GPU needs a reset (`NVML_ERROR_RESET_REQUIRED`).
    ResetRequired,
    /// The operating system blocked the call (`NVML_ERROR_OPERATING_SYSTEM`).
    OperatingSystem,
    /// The driver's kernel module and NVML are of different versions
    /// (`NVML_ERROR_LIB_RM_VERSION_MISMATCH`).
    LibRmVersionMismatch,
    /// The GPU is in use (`NVML_ERROR_IN_USE`).
    InUse,
    /// Out of memory (`NVML_ERROR_MEMORY`).
    Memory,
    /// No data (`NVML_ERROR_NO_DATA`).
    NoData,
    /// ECC is enabled, which vGPU does not support
    /// (`NVML_ERROR_VGPU_ECC_NOT_SUPPORTED`).
    VgpuEccNotSupported,
    /// Not enough resources (`NVML_ERROR_INSUFFICIENT_RESOURCES`).
    InsufficientResources,
    /// The frequency is not supported (`NVML_ERROR_FREQ_NOT_SUPPORTED`).
    FreqNotSupported,
    /// The struct version passed is not one NVML knows
    /// (`NVML_ERROR_ARGUMENT_VERSION_MISMATCH`).
    ArgumentVersionMismatch,
    /// The feature is deprecated (`NVML_ERROR_DEPRECATED`).
    Deprecated,
    /// Not ready (`NVML_ERROR_NOT_READY`).
    NotReady,
    /// No GPU was found (`NVML_ERROR_GPU_NOT_FOUND`).
    GpuNotFound,
    /// The object is in a state that does not allow it
    /// (`NVML_ERROR_INVALID_STATE`).
    InvalidState,
    /// The reset type is not supported (`NVML_ERROR_RESET_TYPE_NOT_SUPPORTED`).
    ResetTypeNotSupported,
    /// `NVML_ERROR_UNKNOWN`, or a code this crate does not know (its value).
    Unknown(u32),
}

#[cfg(feature = "nvml")]
impl NvmlErrorKind {
    /// The kind of an NVML status code (`NVML_SUCCESS` is `Unknown(0)`: not an
    /// error kind).
    pub fn from_code(code: nvmlReturn_t) -> Self {
        match code {
            nvml::NVML_ERROR_UNINITIALIZED => Self::Uninitialized,
            nvml::NVML_ERROR_INVALID_ARGUMENT => Self::InvalidArgument,
            nvml::NVML_ERROR_NOT_SUPPORTED => Self::NotSupported,
            nvml::NVML_ERROR_NO_PERMISSION => Self::NoPermission,
            nvml::NVML_ERROR_ALREADY_INITIALIZED => Self::AlreadyInitialized,
            nvml::NVML_ERROR_NOT_FOUND => Self::NotFound,
            nvml::NVML_ERROR_INSUFFICIENT_SIZE => Self::InsufficientSize,
            nvml::NVML_ERROR_INSUFFICIENT_POWER => Self::InsufficientPower,
            nvml::NVML_ERROR_DRIVER_NOT_LOADED => Self::DriverNotLoaded,
            nvml::NVML_ERROR_TIMEOUT => Self::Timeout,
            nvml::NVML_ERROR_IRQ_ISSUE => Self::IrqIssue,
            nvml::NVML_ERROR_LIBRARY_NOT_FOUND => Self::LibraryNotFound,
            nvml::NVML_ERROR_FUNCTION_NOT_FOUND => Self::FunctionNotFound,
            nvml::NVML_ERROR_CORRUPTED_INFOROM => Self::CorruptedInforom,
            nvml::NVML_ERROR_GPU_IS_LOST => Self::GpuIsLost,
            nvml::NVML_ERROR_RESET_REQUIRED => Self::ResetRequired,
            nvml::NVML_ERROR_OPERATING_SYSTEM => Self::OperatingSystem,
            nvml::NVML_ERROR_LIB_RM_VERSION_MISMATCH => Self::LibRmVersionMismatch,
            nvml::NVML_ERROR_IN_USE => Self::InUse,
            nvml::NVML_ERROR_MEMORY => Self::Memory,
            nvml::NVML_ERROR_NO_DATA => Self::NoData,
            nvml::NVML_ERROR_VGPU_ECC_NOT_SUPPORTED => Self::VgpuEccNotSupported,
            nvml::NVML_ERROR_INSUFFICIENT_RESOURCES => Self::InsufficientResources,
            nvml::NVML_ERROR_FREQ_NOT_SUPPORTED => Self::FreqNotSupported,
            nvml::NVML_ERROR_ARGUMENT_VERSION_MISMATCH => Self::ArgumentVersionMismatch,
            nvml::NVML_ERROR_DEPRECATED => Self::Deprecated,
            nvml::NVML_ERROR_NOT_READY => Self::NotReady,
            nvml::NVML_ERROR_GPU_NOT_FOUND => Self::GpuNotFound,
            nvml::NVML_ERROR_INVALID_STATE => Self::InvalidState,
            nvml::NVML_ERROR_RESET_TYPE_NOT_SUPPORTED => Self::ResetTypeNotSupported,
            other => Self::Unknown(other.0),
        }
    }
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

impl From<cudars_pathfinder::PathfinderError> for Error {
    /// [`Error::Pathfinder`], so that `?` takes the pathfinder's error (from
    /// [`ProgramOptions::with_toolkit_headers`](crate::ProgramOptions::with_toolkit_headers),
    /// [`toolkit_include_dirs`](crate::toolkit_include_dirs), …) in a function
    /// that returns this crate's [`Result`].
    fn from(source: cudars_pathfinder::PathfinderError) -> Self {
        Self::Pathfinder {
            context: Cow::Borrowed("looking for NVIDIA's files"),
            source: Box::new(source),
        }
    }
}

impl Error {
    /// The error and its causes, each once, joined by `": "` (as `anyhow`'s
    /// `{:#}` prints them): the line to log or show a user.
    ///
    /// ```no_run
    /// if let Err(e) = cudars_core::Device::count() {
    ///     eprintln!("{}", e.report());
    /// }
    /// ```
    pub fn report(&self) -> Report<'_> {
        Report(self)
    }

    /// The driver's status code, when the error came from the driver.
    pub fn driver_code(&self) -> Option<CUresult> {
        match self {
            Self::Driver { source, .. } => Some(source.code()),
            Self::Tool {
                source: ToolError::Driver(source),
                ..
            }
            | Self::Compile {
                source: ToolError::Driver(source),
                ..
            } => Some(source.code()),
            _ => None,
        }
    }

    /// NVML's status code, when the error came from NVML
    /// ([`system`](crate::system)).
    ///
    /// An [`Error::Unavailable`] for NVML has the code NVML itself would have
    /// returned: `NVML_ERROR_FUNCTION_NOT_FOUND` when the installed driver's
    /// NVML lacks the entry point (a function newer than the driver), and
    /// `NVML_ERROR_LIBRARY_NOT_FOUND` when NVML could not be loaded, so
    /// [`nvml_kind`](Self::nvml_kind) is [`NvmlErrorKind::FunctionNotFound`] or
    /// [`NvmlErrorKind::LibraryNotFound`] for them, as `cuda.core.system` raises
    /// `FunctionNotFoundError` and `LibraryNotFoundError`.
    #[cfg(feature = "nvml")]
    #[cfg_attr(docsrs, doc(cfg(feature = "nvml")))]
    pub fn nvml_code(&self) -> Option<nvmlReturn_t> {
        match self {
            Self::Nvml { source, .. } => Some(source.code()),
            Self::Unavailable { reason, .. } if reason.api() == ApiKind::Nvml => match **reason {
                Unavailable::Symbol { .. } => Some(nvml::NVML_ERROR_FUNCTION_NOT_FOUND),
                Unavailable::Library { .. } => Some(nvml::NVML_ERROR_LIBRARY_NOT_FOUND),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether NVML said the device or the driver does not support the query
    /// (`NVML_ERROR_NOT_SUPPORTED`): a fan speed on a passively cooled GPU, a
    /// serial number on a consumer board, …
    #[cfg(feature = "nvml")]
    #[cfg_attr(docsrs, doc(cfg(feature = "nvml")))]
    pub fn is_nvml_not_supported(&self) -> bool {
        self.nvml_kind() == Some(NvmlErrorKind::NotSupported)
    }

    /// What kind of NVML failure this is, when the error came from NVML
    /// ([`system`](crate::system)): the counterpart of `cuda.core.system`'s
    /// `NvmlError` subclasses, to `match` on.
    ///
    /// ```no_run
    /// use cudars_core::{NvmlErrorKind, system::SystemDevice};
    ///
    /// let dev = SystemDevice::new(0)?;
    /// match dev.fan_count() {
    ///     Ok(n) => println!("{n} fans"),
    ///     Err(e) if e.nvml_kind() == Some(NvmlErrorKind::NotSupported) => {
    ///         println!("passively cooled")
    ///     }
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok::<(), cudars_core::Error>(())
    /// ```
    ///
    /// NVML's library or an entry point missing is not an NVML kind but
    /// [`Error::Unavailable`] ([`is_unavailable`](Self::is_unavailable)).
    #[cfg(feature = "nvml")]
    #[cfg_attr(docsrs, doc(cfg(feature = "nvml")))]
    pub fn nvml_kind(&self) -> Option<NvmlErrorKind> {
        self.nvml_code().map(NvmlErrorKind::from_code)
    }

    /// Whether the driver ran out of device memory
    /// (`CUDA_ERROR_OUT_OF_MEMORY`): an allocation larger than what is free, or
    /// a pool at its maximum size. Memory released later (buffers dropped, their
    /// streams done) can be allocated again.
    pub fn is_out_of_memory(&self) -> bool {
        self.driver_code() == Some(CUDA_ERROR_OUT_OF_MEMORY)
    }

    /// Whether a library or entry point was not available
    /// ([`Error::Unavailable`]): no driver installed, NVRTC not found, a symbol
    /// missing, …
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::Unavailable { .. })
    }

    /// Why a library or entry point was not available, for
    /// [`Error::Unavailable`]: its [`api`](Unavailable::api) says which library,
    /// its [`library_error`](Unavailable::library_error) where it was searched
    /// for.
    pub fn unavailable(&self) -> Option<&Unavailable> {
        match self {
            Self::Unavailable { reason, .. } => Some(reason),
            _ => None,
        }
    }

    /// The kind of argument error, for [`Error::InvalidArgument`].
    pub fn invalid_kind(&self) -> Option<InvalidKind> {
        match self {
            Self::InvalidArgument { kind, .. } => Some(*kind),
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

    /// Wraps a driver error with what was being done, as `cudars-core` does for
    /// its own calls: [`Error::Unavailable`] when the driver or the entry point
    /// could not be called, [`Error::Unsupported`] (with
    /// [`required_driver`](Self::required_driver)) when the driver is too old for
    /// the entry point, [`Error::Driver`] otherwise.
    pub fn from_driver(context: impl Into<Cow<'static, str>>, source: DriverError) -> Self {
        driver_error(context.into(), source)
    }

    pub(crate) fn tool(
        context: impl Into<Cow<'static, str>>,
        source: impl Into<ToolError>,
    ) -> Self {
        let source = source.into();
        classify(context.into(), source.unavailable())
            .unwrap_or_else(|context| Self::Tool { context, source })
    }

    /// [`Error::Compile`], unless the tool could not be called at all.
    pub(crate) fn compile(
        context: impl Into<Cow<'static, str>>,
        log: String,
        source: impl Into<ToolError>,
    ) -> Self {
        let source = source.into();
        classify(context.into(), source.unavailable()).unwrap_or_else(|context| Self::Compile {
            context,
            log,
            source,
        })
    }

    /// [`Error::Nvml`], unless NVML or the entry point could not be called.
    #[cfg(feature = "nvml")]
    pub(crate) fn nvml(context: impl Into<Cow<'static, str>>, source: NvmlError) -> Self {
        classify(context.into(), source.unavailable())
            .unwrap_or_else(|context| Self::Nvml { context, source })
    }

    pub(crate) fn invalid(
        context: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
    ) -> Self {
        Self::invalid_as(InvalidKind::Other, context, message)
    }

    pub(crate) fn invalid_as(
        kind: InvalidKind,
        context: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
    ) -> Self {
        Self::InvalidArgument {
            context: context.into(),
            kind,
            message: message.into(),
        }
    }

    /// [`InvalidKind::ZeroSize`].
    pub(crate) fn zero_size(context: impl Into<Cow<'static, str>>) -> Self {
        Self::invalid_as(InvalidKind::ZeroSize, context, "the size is zero")
    }

    /// [`InvalidKind::OutOfRange`].
    pub(crate) fn out_of_range(
        context: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
    ) -> Self {
        Self::invalid_as(InvalidKind::OutOfRange, context, message)
    }

    /// [`InvalidKind::OtherDevice`].
    pub(crate) fn other_device(
        context: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
    ) -> Self {
        Self::invalid_as(InvalidKind::OtherDevice, context, message)
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

/// The kind of an [`Error::InvalidArgument`] (a test helper: anything else fails
/// the test).
#[cfg(test)]
pub(crate) fn kind_of<T: std::fmt::Debug>(r: Result<T>) -> InvalidKind {
    match r {
        Err(Error::InvalidArgument { kind, .. }) => kind,
        other => panic!("expected an invalid argument, got {other:?}"),
    }
}

/// The kind of a copy size that was refused: zero, or more than a buffer holds.
pub(crate) fn copy_size_kind(bytes: usize) -> InvalidKind {
    if bytes == 0 {
        InvalidKind::ZeroSize
    } else {
        InvalidKind::OutOfRange
    }
}

/// An error and its causes, each once, joined by `": "` (or a line break after
/// a level that ends in a block of lines, such as a compiler's log)
/// ([`Error::report`]); for any error, [`Report::new`].
#[derive(Clone, Copy)]
pub struct Report<'a>(&'a (dyn std::error::Error + 'static));

impl<'a> Report<'a> {
    /// The report of any error (a `cudars_bindings` error, an error of your own
    /// whose source is an [`Error`], …).
    pub fn new(error: &'a (dyn std::error::Error + 'static)) -> Self {
        Self(error)
    }
}

impl std::fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = self.0.to_string();
        f.write_str(&text)?;
        let mut cause = self.0.source();
        while let Some(c) = cause {
            // After a level that ends in a block of lines (a compiler's log), the
            // cause starts a line of its own.
            f.write_str(if text.contains('\n') { "\n" } else { ": " })?;
            text = c.to_string();
            f.write_str(&text)?;
            cause = c.source();
        }
        Ok(())
    }
}

impl std::fmt::Debug for Report<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// The error of one of the compilation tools.
#[derive(Debug)]
#[non_exhaustive]
pub enum ToolError {
    /// NVRTC's error.
    Nvrtc(NvrtcError),
    /// NVVM's error.
    Nvvm(NvvmError),
    /// nvJitLink's error.
    NvJitLink(NvJitLinkError),
    /// nvFatbin's error ([`FatbinBuilder`](crate::FatbinBuilder)).
    NvFatbin(NvFatbinError),
    /// The driver's JIT linker (`cuLink*`) or module loader.
    Driver(DriverError),
}

impl ToolError {
    /// The tool's own error, which this error is (displays as, and has the source of).
    fn inner(&self) -> &(dyn std::error::Error + 'static) {
        match self {
            Self::Nvrtc(e) => e,
            Self::Nvvm(e) => e,
            Self::NvJitLink(e) => e,
            Self::NvFatbin(e) => e,
            Self::Driver(e) => e,
        }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self.inner(), f)
    }
}

impl std::error::Error for ToolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner().source()
    }
}

macro_rules! tool_error_from {
    ($($variant:ident($error:ty)),* $(,)?) => {$(
        impl From<$error> for ToolError {
            fn from(e: $error) -> Self {
                Self::$variant(e)
            }
        }
    )*};
}

tool_error_from!(
    Nvrtc(NvrtcError),
    Nvvm(NvvmError),
    NvJitLink(NvJitLinkError),
    NvFatbin(NvFatbinError),
    Driver(DriverError),
);

impl ToolError {
    /// Why the entry point that returned this error could not be called, when
    /// that is what happened.
    pub fn unavailable(&self) -> Option<&Unavailable> {
        match self {
            Self::Nvrtc(e) => e.unavailable(),
            Self::Nvvm(e) => e.unavailable(),
            Self::NvJitLink(e) => e.unavailable(),
            Self::NvFatbin(e) => e.unavailable(),
            Self::Driver(e) => e.unavailable(),
        }
    }
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
        if self == cudars_bindings::driver::CUDA_SUCCESS {
            Ok(())
        } else {
            // The whole failure out of line: what is instantiated per call site (one
            // per context closure, about 200) is the test and the closure's call.
            driver_failure(self, context().into())
        }
    }
}

/// [`Check::check`]'s failure: the error of `code`, made while `context`.
#[cold]
#[inline(never)]
fn driver_failure(code: CUresult, context: Cow<'static, str>) -> Result<()> {
    Err(driver_error(context, DriverError::new(code)))
}

/// A driver error, or [`Error::Unsupported`] when it says that the entry point
/// called is missing because the driver is older than the ABI it needs, or
/// [`Error::Unavailable`] when the driver or the entry point could not be called
/// for another reason.
#[cold]
fn driver_error(context: Cow<'static, str>, source: DriverError) -> Error {
    classify(context, source.unavailable())
        .unwrap_or_else(|context| Error::Driver { context, source })
}

/// What an error carrying `unavailable` is instead of a CUDA failure: a too-old
/// driver is [`Error::Unsupported`] with the requirement, anything else
/// [`Error::Unavailable`]. The context back when the call was made.
#[cold]
fn classify(
    context: Cow<'static, str>,
    unavailable: Option<&Unavailable>,
) -> Result<Error, Cow<'static, str>> {
    let Some(u) = unavailable else {
        return Err(context);
    };
    Ok(match (u, u.needs_driver()) {
        (Unavailable::DriverSymbol { name, .. }, Some((needs, driver))) => Error::driver_too_old(
            context,
            DriverRequirement {
                feature: Cow::Owned(format!("`{name}`")),
                needs,
                driver,
            },
        ),
        _ => Error::Unavailable {
            context,
            reason: Box::new(u.clone()),
        },
    })
}

/// A panic of a host function queued with [`Stream::launch_host_func`](crate::Stream::launch_host_func) or
/// [`Stream::launch_host_func_repeatable`](crate::Stream::launch_host_func_repeatable): the first panic's message and how many
/// host functions of the stream have panicked since the last report.
///
/// Returned by [`Stream::take_callback_panic`](crate::Stream::take_callback_panic), and inside
/// [`Error::HostCallbackPanicked`] by [`Stream::sync`](crate::Stream::sync).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallbackPanic {
    /// The first panic's message (its payload when that is a string).
    pub message: String,
    /// How many host functions panicked (at least 1).
    pub count: usize,
}

impl fmt::Display for CallbackPanic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a host callback panicked: {}", self.message)?;
        if self.count > 1 {
            write!(
                f,
                " ({} callbacks panicked; this was the first)",
                self.count
            )?;
        }
        Ok(())
    }
}

// NVML's error kinds: the module's tests are all of the `nvml` feature.
#[cfg(all(test, feature = "nvml"))]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "loads NVML (dlopen), which Miri cannot run")]
    fn nvml_codes_have_kinds_and_nvml_errors_are_matchable() {
        for (code, kind) in [
            (nvml::NVML_ERROR_NOT_SUPPORTED, NvmlErrorKind::NotSupported),
            (nvml::NVML_ERROR_NO_PERMISSION, NvmlErrorKind::NoPermission),
            (nvml::NVML_ERROR_NOT_FOUND, NvmlErrorKind::NotFound),
            (
                nvml::NVML_ERROR_INSUFFICIENT_SIZE,
                NvmlErrorKind::InsufficientSize,
            ),
            (nvml::NVML_ERROR_GPU_IS_LOST, NvmlErrorKind::GpuIsLost),
            (nvml::NVML_ERROR_UNINITIALIZED, NvmlErrorKind::Uninitialized),
            (
                nvml::NVML_ERROR_RESET_TYPE_NOT_SUPPORTED,
                NvmlErrorKind::ResetTypeNotSupported,
            ),
            (nvml::NVML_ERROR_UNKNOWN, NvmlErrorKind::Unknown(999)),
            (nvmlReturn_t(12345), NvmlErrorKind::Unknown(12345)),
        ] {
            assert_eq!(NvmlErrorKind::from_code(code), kind);
        }
        let e = Error::nvml(
            "reading the fan speed",
            NvmlError::new(nvml::NVML_ERROR_NOT_SUPPORTED),
        );
        assert_eq!(e.nvml_kind(), Some(NvmlErrorKind::NotSupported));
        assert!(e.is_nvml_not_supported());
        let other = Error::invalid("x", "y");
        assert_eq!(other.nvml_kind(), None);
    }

    #[test]
    fn an_nvml_entry_point_the_driver_lacks_is_function_not_found() {
        let missing = |api| Error::Unavailable {
            context: "setting the clock offsets".into(),
            reason: Box::new(Unavailable::Symbol {
                api,
                name: "nvmlDeviceSetClockOffsets",
                symbol: "nvmlDeviceSetClockOffsets",
                path: "libnvidia-ml.so.1".to_owned(),
            }),
        };
        let e = missing(ApiKind::Nvml);
        assert_eq!(e.nvml_code(), Some(nvml::NVML_ERROR_FUNCTION_NOT_FOUND));
        assert_eq!(e.nvml_kind(), Some(NvmlErrorKind::FunctionNotFound));
        assert!(e.is_unavailable() && !e.is_nvml_not_supported());
        // Another library's missing symbol is not an NVML failure.
        assert_eq!(missing(ApiKind::Nvrtc).nvml_kind(), None);
    }
}
