//! nvFatbin (`nvFatbin.h`), which packs cubins, PTX and LTO-IR for several
//! architectures into one fatbin: every type, constant and function, looked up
//! in `libnvfatbin` at run time. It runs on the CPU.
//!
//! `libnvfatbin.so.12` and `.so.13` are the libraries of CUDA 12 and 13 (one
//! header shape for both). An entry point that cannot be called returns
//! `NVFATBIN_ERROR_INTERNAL`; [`NvFatbinError`] says why.
//!
//! ```no_run
//! use cudars_bindings::nvfatbin::*;
//! use cudars_bindings::IntoResult as _;
//!
//! let mut h: nvFatbinHandle = std::ptr::null_mut();
//! unsafe { nvFatbinCreate(&mut h, std::ptr::null_mut(), 0) }.result()?;
//! unsafe { nvFatbinDestroy(&mut h) }.result()?;
//! println!("nvFatbin {}", version()?);
//! # Ok::<(), NvFatbinError>(())
//! ```

#[path = "generated/nvfatbin/mod.rs"]
#[rustfmt::skip]
mod generated;
#[path = "generated/nvfatbin_cuda12/mod.rs"]
#[rustfmt::skip]
mod cuda12_generated;

pub use generated::*;

use crate::error::{Described, api_plumbing, described_by};
use crate::loader::{ApiKind, Resolver};

api_plumbing! {
    kind: ApiKind::NvFatbin,
    resolver: Resolver::Dlsym,
    module: "nvfatbin",
    code: nvFatbinResult,
    success: NVFATBIN_SUCCESS,
    unavailable_code: |_loaded: bool| NVFATBIN_ERROR_INTERNAL,
    error:
    /// An nvFatbin error: an `nvFatbinResult` other than `NVFATBIN_SUCCESS`.
    NvFatbinError,
    describe: describe,
}

fn describe(code: nvFatbinResult) -> Described {
    let loaded = API.table().is_ok() && is_available("nvFatbinGetErrorString");
    // SAFETY: takes any code and returns a static string (or null).
    described_by(code.name(), code.0, loaded, || unsafe {
        nvFatbinGetErrorString(code)
    })
}

/// The version of the loaded nvFatbin (`nvFatbinVersion`), e.g. 13.0.
///
/// # Errors
/// nvFatbin's error, or `NVFATBIN_ERROR_INTERNAL` whose
/// [`unavailable`](NvFatbinError::unavailable) reason (its source) carries the
/// pathfinder's error when `libnvfatbin` cannot be found.
pub fn version() -> Result<crate::Version, NvFatbinError> {
    use crate::IntoResult as _;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both are valid for writes.
    unsafe { nvFatbinVersion(&mut major, &mut minor) }.result()?;
    Ok(crate::Version {
        major: major as i32,
        minor: minor as i32,
    })
}
