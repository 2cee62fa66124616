//! NVRTC (`nvrtc.h`), the run-time CUDA C++ compiler: every type, constant and
//! function, looked up in `libnvrtc` at run time. NVRTC runs on the CPU: it needs no
//! GPU and no driver.
//!
//! An entry point that cannot be resolved returns `NVRTC_ERROR_INTERNAL_ERROR`, and
//! [`NvrtcError`] says why.
//!
//! ```no_run
//! use cudars_bindings::nvrtc::*;
//! use cudars_bindings::IntoResult as _;
//!
//! let src = c"extern \"C\" __global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }";
//! let mut prog = std::ptr::null_mut();
//! unsafe { nvrtcCreateProgram(&mut prog, src.as_ptr(), c"k.cu".as_ptr(), 0, std::ptr::null(), std::ptr::null()) }.result()?;
//! unsafe { nvrtcCompileProgram(prog, 0, std::ptr::null()) }.result()?;
//! let mut size = 0;
//! unsafe { nvrtcGetPTXSize(prog, &mut size) }.result()?;
//! unsafe { nvrtcDestroyProgram(&mut prog) }.result()?;
//! # Ok::<(), NvrtcError>(())
//! ```

#[path = "generated/nvrtc/mod.rs"]
#[rustfmt::skip]
mod generated;
#[path = "generated/nvrtc_cuda12/mod.rs"]
#[rustfmt::skip]
mod cuda12_generated;

pub use generated::*;

use crate::error::{Described, api_plumbing, described_by};
use crate::loader::{ApiKind, Resolver};

api_plumbing! {
    kind: ApiKind::Nvrtc,
    resolver: Resolver::Dlsym,
    module: "nvrtc",
    code: nvrtcResult,
    success: NVRTC_SUCCESS,
    unavailable_code: |_loaded: bool| NVRTC_ERROR_INTERNAL_ERROR,
    error:
    /// An NVRTC error: an `nvrtcResult` other than `NVRTC_SUCCESS`.
    NvrtcError,
    describe: describe,
}

fn describe(code: nvrtcResult) -> Described {
    // SAFETY: takes any code and returns a static string.
    described_by(code.name(), code.0, API.table().is_ok(), || unsafe {
        nvrtcGetErrorString(code)
    })
}

/// The version of the loaded NVRTC (`nvrtcVersion`).
///
/// # Errors
/// NVRTC's error, or `NVRTC_ERROR_INTERNAL_ERROR` whose [`unavailable`](NvrtcError::unavailable) reason (its source) carries the pathfinder's error
/// when `libnvrtc` cannot be found.
pub fn version() -> Result<crate::Version, NvrtcError> {
    use crate::IntoResult as _;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both are valid for writes.
    unsafe { nvrtcVersion(&mut major, &mut minor) }.result()?;
    Ok(crate::Version { major, minor })
}
