//! Status codes as `Result`s: one error type per API, and the macro that writes the
//! plumbing every API module shares.

use std::borrow::Cow;

/// Turns a C status code into a `Result`.
///
/// ```
/// use cudars_bindings::IntoResult as _;
/// use cudars_bindings::nvrtc::{nvrtcResult, NVRTC_SUCCESS, NVRTC_ERROR_COMPILATION};
///
/// assert!(NVRTC_SUCCESS.result().is_ok());
/// let err = NVRTC_ERROR_COMPILATION.result().unwrap_err();
/// assert_eq!(err.code(), NVRTC_ERROR_COMPILATION);
/// assert_eq!(err.name(), "NVRTC_ERROR_COMPILATION");
/// ```
pub trait IntoResult: Sized {
    /// The error type of this status code.
    type Error: std::error::Error + Send + Sync + 'static;

    /// `Ok(())` for the success code, the described error otherwise.
    ///
    /// # Errors
    /// Every code other than the API's success code.
    fn result(self) -> Result<(), Self::Error>;
}

/// A library's status error, as the library crates over these bindings see it:
/// an error that may stand for an entry point that could not be called.
///
/// Every error type of an API module implements it (cuBLAS's `CublasError`,
/// cuFile's `CufileError`, …), so code that wraps several libraries' statuses
/// (cudars-core's `LibraryError`) needs one rule for "not called at all"
/// versus "the library said no".
pub trait StatusError: std::error::Error + Send + Sync + 'static {
    /// Why the entry point that returned this status could not be called, when
    /// that is what happened.
    fn unavailable(&self) -> Option<&crate::Unavailable>;
}

/// The name and description of a status code, as the library describes it.
pub(crate) struct Described {
    pub(crate) name: Cow<'static, str>,
    /// `None` when the library is not loaded, cannot describe the code, or
    /// describes it only by its name.
    pub(crate) description: Option<Cow<'static, str>>,
}

impl Described {
    /// The library's description, unless it only repeats the name (NVRTC's and
    /// NVVM's strings are the codes' names).
    pub(crate) fn new(name: Cow<'static, str>, description: Cow<'static, str>) -> Self {
        let description = (!description.is_empty() && description != name).then_some(description);
        Self { name, description }
    }
}

/// Writes the dispatch plumbing of an API's two modules: the main one
/// (`generated`, CUDA 13's declarations) and `cuda12` (`cuda12_generated`, what
/// CUDA 12 declares differently): the loader's tables, the entry and fallback
/// functions the generated code calls, `library()`, `cuda_major()`,
/// `is_available()`, `resolved_count()`, `why_unavailable()` and the `cuda12`
/// module. [`api_plumbing!`] adds the error type of an API whose status is one
/// code; an API with another status shape (cuFile's two-part `CUfileError_t`)
/// uses this alone and writes its own error type.
macro_rules! api_dispatch {
    (
        kind: $kind:expr,
        resolver: $resolver:expr,
        module: $module:literal,
        code: $Code:ty,
        unavailable_code: $unavail:expr
        $(, refused_code: $refused:expr)? $(,)?
    ) => {
        pub(crate) static API: $crate::loader::Api<ENTRY_COUNT> =
            $crate::loader::Api::new($kind, $resolver, $module, &ENTRIES);

        pub(crate) static API12: $crate::loader::Api<{ cuda12_generated::ENTRY_COUNT }> =
            $crate::loader::Api::new(
                $kind,
                $resolver,
                concat!($module, "::cuda12"),
                &cuda12_generated::ENTRIES,
            );

        #[doc(hidden)]
        #[inline(always)]
        pub(crate) fn __entry(idx: usize) -> Option<$crate::loader::RawFn> {
            // An API with a refusal code refuses every call on a thread that
            // refuses them (`refusal::refusing_calls`).
            $( if $crate::refusal::refusing_calls() { let _ = $refused; return None; } )?
            API.entry(idx)
        }

        #[doc(hidden)]
        #[cold]
        #[inline(never)]
        pub(crate) fn __unavailable(idx: usize) -> $Code {
            $( if $crate::refusal::refusing_calls() { return $refused; } )?
            API.note_unavailable(idx);
            $unavail(API.table().is_ok())
        }

        #[doc(hidden)]
        #[inline(always)]
        pub(crate) fn __entry12(idx: usize) -> Option<$crate::loader::RawFn> {
            $( if $crate::refusal::refusing_calls() { let _ = $refused; return None; } )?
            API12.entry(idx)
        }

        #[doc(hidden)]
        #[cold]
        #[inline(never)]
        pub(crate) fn __unavailable12(idx: usize) -> $Code {
            $( if $crate::refusal::refusing_calls() { return $refused; } )?
            API12.note_unavailable(idx);
            $unavail(API12.table().is_ok())
        }

        /// The loaded library (loading and resolving it if needed): its path and how
        /// the pathfinder found it.
        ///
        /// # Errors
        /// The pathfinder's error when the library cannot be found or loaded; it
        /// lists every place searched.
        pub fn library() -> Result<&'static cudars_pathfinder::LoadedDl, cudars_pathfinder::PathfinderError> {
            API.table().map(|t| t.lib).map_err(Clone::clone)
        }

        /// The loaded library's CUDA major version, for the libraries that have
        /// one ABI per major (the runtime, NVRTC, nvJitLink): it decides which
        /// entry points resolve (see [`cuda12`]). `None` for the others, when the
        /// library is missing, or when it could not be told (then nothing resolves).
        pub fn cuda_major() -> Option<u32> {
            API.major().and_then(|m| u32::try_from(m).ok()).filter(|&m| m > 0)
        }

        /// Whether the entry point with this C name (`cuMemAlloc`, not
        /// `cuMemAlloc_v2`) resolved. `false` when the library is missing.
        pub fn is_available(name: &str) -> bool {
            API.is_available(name)
        }

        /// How many entry points resolved, out of how many the bindings know;
        /// `None` when the library is missing.
        pub fn resolved_count() -> Option<(usize, usize)> {
            API.counts()
        }

        /// Why the entry point `name` cannot be called, or `None` when it can (or is
        /// not a name of this API).
        pub fn why_unavailable(name: &str) -> Option<$crate::Unavailable> {
            API.why_unavailable(API.position(name)?)
        }

        #[doc = concat!(
            "The `", $module, "` API as CUDA 12 declares it where that differs from CUDA 13: ",
            "types whose layout changed and functions whose signature or ABI changed or that ",
            "CUDA 13 dropped (`cuda12::cuCtxCreate(pctx, flags, dev)`, ",
            "`cuda12::cudaGetDeviceProperties` with CUDA 12's `cudaDeviceProp`, …). ",
            "Everything the two majors share is the parent module's.\n\n",
            "For the libraries with one ABI per CUDA major (the runtime, NVRTC, nvJitLink), ",
            "a function here resolves only against a CUDA 12 library and a reshaped function ",
            "of the parent only against a CUDA 13 one; calling the other returns the API's ",
            "\"not found\" code and the error names the function to call instead ",
            "([`Unavailable::OtherShape`](crate::Unavailable::OtherShape)). For the driver, ",
            "a function here resolves at its CUDA 12 ABI version, which every driver since ",
            "that version offers, CUDA 13 drivers included."
        )]
        pub mod cuda12 {
            #[allow(unused_imports, unreachable_pub)]
            pub use super::cuda12_generated::*;

            /// Whether the entry point with this C name resolved in this module.
            pub fn is_available(name: &str) -> bool {
                super::API12.is_available(name)
            }

            /// How many of this module's entry points resolved, out of how many;
            /// `None` when the library is missing.
            pub fn resolved_count() -> Option<(usize, usize)> {
                super::API12.counts()
            }

            /// Why this module's entry point `name` cannot be called, or `None` when
            /// it can (or is not a name of this module).
            pub fn why_unavailable(name: &str) -> Option<$crate::Unavailable> {
                super::API12.why_unavailable(super::API12.position(name)?)
            }
        }

    };
}
pub(crate) use api_dispatch;

/// Writes an API's error type, its `IntoResult` impl and the dispatch plumbing of
/// its two modules: the main one (`generated`, CUDA 13's declarations) and
/// `cuda12` (`cuda12_generated`, what CUDA 12 declares differently).
macro_rules! api_plumbing {
    (
        kind: $kind:expr,
        resolver: $resolver:expr,
        module: $module:literal,
        code: $Code:ident,
        success: $success:expr,
        unavailable_code: $unavail:expr,
        $(refused_code: $refused:expr,)?
        error: $(#[$emeta:meta])* $Error:ident,
        describe: $describe:path $(,)?
    ) => {
        $crate::error::api_dispatch! {
            kind: $kind,
            resolver: $resolver,
            module: $module,
            code: $Code,
            unavailable_code: $unavail
            $(, refused_code: $refused)?
        }

        $(#[$emeta])*
        ///
        /// Carries the numeric code, its C name and the library's description of it;
        /// when the code came from calling an entry point that could not be resolved,
        /// also [`unavailable`](Self::unavailable): why (library not found, with
        /// every place searched; symbol missing; driver too old). That reason is the
        /// error's [`source`](::std::error::Error::source), not part of its message:
        /// the message is the code, its name and description (or, for an entry point
        /// that could not be called, that it could not be), once.
        #[derive(Debug, Clone)]
        pub struct $Error {
            code: $Code,
            name: ::std::borrow::Cow<'static, str>,
            description: Option<::std::borrow::Cow<'static, str>>,
            unavailable: Option<Box<$crate::Unavailable>>,
        }

        impl $Error {
            /// Describes `code` (and picks up why an entry point called on this thread
            /// was unavailable, if that is where the code came from).
            pub fn new(code: $Code) -> Self {
                let d: $crate::error::Described = $describe(code);
                let unavailable = if code == $unavail(true) || code == $unavail(false) {
                    $crate::loader::take_unavailable($kind).map(Box::new)
                } else {
                    None
                };
                Self {
                    code,
                    name: d.name,
                    description: d.description,
                    unavailable,
                }
            }

            /// The status code.
            pub fn code(&self) -> $Code {
                self.code
            }

            /// The code's C name (`CUDA_ERROR_OUT_OF_MEMORY`).
            pub fn name(&self) -> &str {
                &self.name
            }

            /// The library's description of the code; `None` when the library is not
            /// loaded (the code was not returned by it) or describes the code only by
            /// its name.
            pub fn description(&self) -> Option<&str> {
                self.description.as_deref()
            }

            /// Why the entry point that returned this code could not be called, when
            /// that is what happened.
            pub fn unavailable(&self) -> Option<&$crate::Unavailable> {
                self.unavailable.as_deref()
            }
        }

        impl ::std::fmt::Display for $Error {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(f, "{} ({})", self.name, self.code.0)?;
                if self.unavailable.is_some() {
                    // The reason is the source; this level says only what the code
                    // stands for here.
                    f.write_str(": the entry point could not be called")
                } else if let Some(d) = &self.description {
                    write!(f, ": {d}")
                } else {
                    Ok(())
                }
            }
        }

        impl ::std::error::Error for $Error {
            fn source(&self) -> Option<&(dyn ::std::error::Error + 'static)> {
                self.unavailable
                    .as_ref()
                    .map(|u| &**u as &(dyn ::std::error::Error + 'static))
            }
        }

        impl $crate::StatusError for $Error {
            fn unavailable(&self) -> Option<&$crate::Unavailable> {
                self.unavailable.as_deref()
            }
        }

        impl $crate::IntoResult for $Code {
            type Error = $Error;

            #[inline]
            fn result(self) -> Result<(), $Error> {
                if self == $success { Ok(()) } else { Err($Error::new(self)) }
            }
        }

        impl From<$Code> for $Error {
            fn from(code: $Code) -> Self {
                Self::new(code)
            }
        }
    };
}
pub(crate) use api_plumbing;

/// Reads a C string the library owns for the life of the process.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string that outlives the process.
pub(crate) unsafe fn static_cstr(p: *const std::ffi::c_char) -> Option<&'static str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated with static lifetime, per the contract.
    unsafe { std::ffi::CStr::from_ptr(p) }.to_str().ok()
}

/// A code the library cannot describe (it is not loaded, or does not know the
/// code): its generated name, and no description.
pub(crate) fn undescribed(name: Option<&'static str>, code: u32) -> Described {
    Described {
        name: name.map_or_else(
            || Cow::Owned(format!("unknown status {code}")),
            Cow::Borrowed,
        ),
        description: None,
    }
}

/// Describes a code by its generated name and the string a library function
/// returns for it (`nvrtcGetErrorString`, …), called only when the library loaded.
#[cfg_attr(
    not(any(
        feature = "nvrtc",
        feature = "nvvm",
        feature = "nvml",
        feature = "cublas",
        feature = "cublaslt",
        feature = "nccl"
    )),
    allow(dead_code, reason = "used by the APIs of these features only")
)]
pub(crate) fn described_by(
    name: Option<&'static str>,
    code: u32,
    loaded: bool,
    get: impl FnOnce() -> *const std::ffi::c_char,
) -> Described {
    let fallback = undescribed(name, code);
    if !loaded {
        return fallback;
    }
    // SAFETY: the libraries' error-string functions return static strings (or null).
    match unsafe { static_cstr(get()) } {
        Some(d) => Described::new(fallback.name, d.into()),
        None => fallback,
    }
}
