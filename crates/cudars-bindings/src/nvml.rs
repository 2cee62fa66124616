//! NVML (`nvml.h`), the NVIDIA Management Library: every type, constant and
//! function, looked up in `libnvidia-ml` (installed with the driver) at run time.
//! Versioned names map as in C (`nvmlInit` → `nvmlInit_v2`).
//!
//! When the library is missing a call returns `NVML_ERROR_LIBRARY_NOT_FOUND`; when
//! it lacks an entry point, `NVML_ERROR_FUNCTION_NOT_FOUND`. [`NvmlError`] says
//! why.
//!
//! ```no_run
//! use cudars_bindings::nvml::*;
//! use cudars_bindings::IntoResult as _;
//!
//! unsafe { nvmlInit() }.result()?;
//! let mut count = 0;
//! unsafe { nvmlDeviceGetCount(&mut count) }.result()?;
//! unsafe { nvmlShutdown() }.result()?;
//! # Ok::<(), NvmlError>(())
//! ```

#[path = "generated/nvml/mod.rs"]
#[rustfmt::skip]
mod generated;
#[path = "generated/nvml_cuda12/mod.rs"]
#[rustfmt::skip]
mod cuda12_generated;

pub use generated::*;

use crate::error::{Described, api_plumbing, described_by};
use crate::loader::{ApiKind, Resolver};

api_plumbing! {
    kind: ApiKind::Nvml,
    resolver: Resolver::Dlsym,
    module: "nvml",
    code: nvmlReturn_t,
    success: NVML_SUCCESS,
    unavailable_code: |loaded: bool| if loaded {
        NVML_ERROR_FUNCTION_NOT_FOUND
    } else {
        NVML_ERROR_LIBRARY_NOT_FOUND
    },
    error:
    /// An NVML error: an `nvmlReturn_t` other than `NVML_SUCCESS`.
    NvmlError,
    describe: describe,
}

fn describe(code: nvmlReturn_t) -> Described {
    // SAFETY: takes any code and returns a static string.
    described_by(code.name(), code.0, API.table().is_ok(), || unsafe {
        nvmlErrorString(code)
    })
}

/// The NVML version and the driver version NVML reports (`nvmlSystemGetNVMLVersion`,
/// `nvmlSystemGetDriverVersion`), e.g. `("13.580.95.05", "580.95.05")`. Initialises
/// NVML for the call and shuts it down after (NVML counts its initialisations).
///
/// # Errors
/// NVML's error, or `NVML_ERROR_LIBRARY_NOT_FOUND` whose [`unavailable`](NvmlError::unavailable) reason (its source) carries the pathfinder's error when
/// `libnvidia-ml` cannot be found.
pub fn version() -> Result<(String, String), NvmlError> {
    use crate::IntoResult as _;
    // SAFETY: `nvmlInit` takes no arguments; it is balanced by `nvmlShutdown` below.
    unsafe { nvmlInit() }.result()?;
    let read = |f: unsafe fn(*mut ::core::ffi::c_char, u32) -> nvmlReturn_t| {
        let mut buf = [0 as ::core::ffi::c_char; 96];
        // SAFETY: `buf` holds 96 bytes, more than NVML's 80-byte version buffers.
        unsafe { f(buf.as_mut_ptr(), 96) }.result()?;
        // SAFETY: NVML wrote a NUL-terminated string into `buf`.
        let s = unsafe { ::core::ffi::CStr::from_ptr(buf.as_ptr()) };
        Ok::<_, NvmlError>(s.to_string_lossy().into_owned())
    };
    let out =
        read(nvmlSystemGetNVMLVersion).and_then(|n| Ok((n, read(nvmlSystemGetDriverVersion)?)));
    // SAFETY: balances the `nvmlInit` above.
    let shut = unsafe { nvmlShutdown() }.result();
    let out = out?;
    shut?;
    Ok(out)
}
