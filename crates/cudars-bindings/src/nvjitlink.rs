//! nvJitLink (`nvJitLink.h`), the JIT linker for cubin, PTX, fatbin and LTO-IR: every
//! type, constant and function, looked up in `libnvJitLink` at run time. It runs on
//! the CPU.
//!
//! The header's public functions are `static inline` wrappers around versioned
//! exports (`nvJitLinkCreate` → `__nvJitLinkCreate_13_0`); these bindings call the
//! versioned export under the public name.
//!
//! An entry point that cannot be resolved returns `NVJITLINK_ERROR_INTERNAL`, and
//! [`NvJitLinkError`] says why.

#[path = "generated/nvjitlink/mod.rs"]
#[rustfmt::skip]
mod generated;
#[path = "generated/nvjitlink_cuda12/mod.rs"]
#[rustfmt::skip]
mod cuda12_generated;

pub use generated::*;

use crate::error::{Described, api_plumbing, undescribed};
use crate::loader::{ApiKind, Resolver};

api_plumbing! {
    kind: ApiKind::NvJitLink,
    resolver: Resolver::Dlsym,
    module: "nvjitlink",
    code: nvJitLinkResult,
    success: NVJITLINK_SUCCESS,
    unavailable_code: |_loaded: bool| NVJITLINK_ERROR_INTERNAL,
    error:
    /// An nvJitLink error: an `nvJitLinkResult` other than `NVJITLINK_SUCCESS`.
    NvJitLinkError,
    describe: describe,
}

/// nvJitLink has no error-string function: these follow its header's comments.
fn describe(code: nvJitLinkResult) -> Described {
    let d = undescribed(code.name(), code.0);
    let description = match code.name() {
        Some("NVJITLINK_ERROR_UNRECOGNIZED_OPTION") => "an option was not recognised",
        Some("NVJITLINK_ERROR_MISSING_ARCH") => "no -arch=sm_XX option was given",
        Some("NVJITLINK_ERROR_INVALID_INPUT") => "an input is invalid",
        Some("NVJITLINK_ERROR_PTX_COMPILE") => "compiling PTX failed (see the error log)",
        Some("NVJITLINK_ERROR_NVVM_COMPILE") => "compiling LTO-IR failed (see the error log)",
        Some("NVJITLINK_ERROR_INTERNAL") => "internal error",
        Some("NVJITLINK_ERROR_THREADPOOL") => "the thread pool failed",
        Some("NVJITLINK_ERROR_UNRECOGNIZED_INPUT") => "an input's kind was not recognised",
        Some("NVJITLINK_ERROR_FINALIZE") => "finalising the link failed (see the error log)",
        Some("NVJITLINK_ERROR_NULL_INPUT") => "an input was null",
        Some("NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS") => "options are incompatible",
        Some("NVJITLINK_ERROR_INCORRECT_INPUT_TYPE") => "an input's declared type is wrong",
        Some("NVJITLINK_ERROR_ARCH_MISMATCH") => "an input was built for another architecture",
        Some("NVJITLINK_ERROR_OUTDATED_LIBRARY") => "an input needs a newer nvJitLink",
        Some("NVJITLINK_ERROR_MISSING_FATBIN") => "a fatbin input is missing",
        Some("NVJITLINK_ERROR_UNRECOGNIZED_ARCH") => "the architecture was not recognised",
        Some("NVJITLINK_ERROR_UNSUPPORTED_ARCH") => "the architecture is not supported",
        Some("NVJITLINK_ERROR_LTO_NOT_ENABLED") => "link-time optimisation was not enabled",
        _ => return d,
    };
    Described::new(d.name, description.into())
}

/// The version of the loaded nvJitLink (`nvJitLinkVersion`).
///
/// # Errors
/// nvJitLink's error, or `NVJITLINK_ERROR_INTERNAL` whose [`unavailable`](NvJitLinkError::unavailable) reason (its source) carries the pathfinder's error
/// when `libnvJitLink` cannot be found.
pub fn version() -> Result<crate::Version, NvJitLinkError> {
    use crate::IntoResult as _;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both are valid for writes.
    unsafe { nvJitLinkVersion(&mut major, &mut minor) }.result()?;
    Ok(crate::Version {
        major: major as i32,
        minor: minor as i32,
    })
}
