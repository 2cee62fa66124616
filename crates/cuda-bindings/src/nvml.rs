//! NVML (`nvml.h`), the NVIDIA Management Library: every type, constant and
//! function, looked up in `libnvidia-ml` (installed with the driver) at run time.
//! Versioned names map as in C (`nvmlInit` → `nvmlInit_v2`).
//!
//! When the library is missing a call returns `NVML_ERROR_LIBRARY_NOT_FOUND`; when
//! it lacks an entry point, `NVML_ERROR_FUNCTION_NOT_FOUND`. [`NvmlError`] says
//! why.
//!
//! ```no_run
//! use cuda_bindings::nvml::*;
//! use cuda_bindings::IntoResult as _;
//!
//! unsafe { nvmlInit() }.result()?;
//! let mut count = 0;
//! unsafe { nvmlDeviceGetCount(&mut count) }.result()?;
//! unsafe { nvmlShutdown() }.result()?;
//! # Ok::<(), NvmlError>(())
//! ```

#[cfg(feature = "cuda-13")]
#[path = "generated/cuda13/nvml.rs"]
#[rustfmt::skip]
mod generated;
#[cfg(feature = "cuda-12")]
#[path = "generated/cuda12/nvml.rs"]
#[rustfmt::skip]
mod generated;

pub use generated::*;

use crate::error::{Described, api_plumbing, static_cstr, undescribed};
use crate::loader::{ApiKind, Resolver};

api_plumbing! {
    kind: ApiKind::Nvml,
    resolver: Resolver::Dlsym,
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
    let fallback = undescribed(code.name(), code.0);
    if API.table().is_err() {
        return fallback;
    }
    // SAFETY: takes any code, returns a static string.
    match unsafe { static_cstr(nvmlErrorString(code)) } {
        Some(d) => Described {
            name: fallback.name,
            description: d.into(),
        },
        None => fallback,
    }
}
