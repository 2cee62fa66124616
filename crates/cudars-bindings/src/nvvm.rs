//! NVVM (`nvvm.h`), the compiler from NVVM IR (LLVM IR for CUDA) to PTX: every type,
//! constant and function, looked up in `libnvvm` at run time. It runs on the CPU.
//!
//! An entry point that cannot be resolved returns
//! `NVVM_ERROR_PROGRAM_CREATION_FAILURE`, and [`NvvmError`] says why.

#[path = "generated/nvvm/mod.rs"]
#[rustfmt::skip]
mod generated;
#[path = "generated/nvvm_cuda12/mod.rs"]
#[rustfmt::skip]
mod cuda12_generated;

pub use generated::*;

use crate::error::{Described, api_plumbing, described_by};
use crate::loader::{ApiKind, Resolver};

api_plumbing! {
    kind: ApiKind::Nvvm,
    resolver: Resolver::Dlsym,
    module: "nvvm",
    code: nvvmResult,
    success: NVVM_SUCCESS,
    unavailable_code: |_loaded: bool| NVVM_ERROR_PROGRAM_CREATION_FAILURE,
    error:
    /// An NVVM error: an `nvvmResult` other than `NVVM_SUCCESS`.
    NvvmError,
    describe: describe,
}

fn describe(code: nvvmResult) -> Described {
    // SAFETY: takes any code and returns a static string.
    described_by(code.name(), code.0, API.table().is_ok(), || unsafe {
        nvvmGetErrorString(code)
    })
}

/// The version of the loaded NVVM (`nvvmVersion`).
///
/// # Errors
/// NVVM's error, or `NVVM_ERROR_PROGRAM_CREATION_FAILURE` whose
/// [`unavailable`](NvvmError::unavailable) reason (its source) carries the
/// pathfinder's error when `libnvvm` cannot be found.
pub fn version() -> Result<crate::Version, NvvmError> {
    use crate::IntoResult as _;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both are valid for writes.
    unsafe { nvvmVersion(&mut major, &mut minor) }.result()?;
    Ok(crate::Version { major, minor })
}
