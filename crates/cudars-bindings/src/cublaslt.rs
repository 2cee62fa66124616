//! cuBLASLt (`cublasLt.h`), cuBLAS's lightweight matrix-multiply API with
//! layouts, epilogues and heuristics: every type, constant and function, looked
//! up in `libcublasLt` at run time.
//!
//! cuBLASLt has one ABI per CUDA major (`libcublasLt.so.12`, `.so.13`), like
//! cuBLAS. An entry point that cannot be called returns
//! `CUBLAS_STATUS_NOT_INITIALIZED` when the library could not be loaded and
//! `CUBLAS_STATUS_NOT_SUPPORTED` when it lacks the entry point; [`CublasLtError`]
//! says why.
//!
//! ```no_run
//! use cudars_bindings::cublaslt::*;
//! use cudars_bindings::IntoResult as _;
//!
//! let mut handle: cublasLtHandle_t = std::ptr::null_mut();
//! unsafe { cublasLtCreate(&mut handle) }.result()?;
//! unsafe { cublasLtDestroy(handle) }.result()?;
//! # Ok::<(), CublasLtError>(())
//! ```

#[path = "generated/cublaslt/mod.rs"]
#[rustfmt::skip]
mod generated;
#[path = "generated/cublaslt_cuda12/mod.rs"]
#[rustfmt::skip]
mod cuda12_generated;

pub use generated::*;

use crate::error::{Described, api_plumbing, described_by};
use crate::loader::{ApiKind, Resolver};

api_plumbing! {
    kind: ApiKind::CublasLt,
    resolver: Resolver::Dlsym,
    module: "cublaslt",
    code: cublasStatus_t,
    success: CUBLAS_STATUS_SUCCESS,
    unavailable_code: |loaded: bool| if loaded {
        CUBLAS_STATUS_NOT_SUPPORTED
    } else {
        CUBLAS_STATUS_NOT_INITIALIZED
    },
    error:
    /// A cuBLASLt error: a `cublasStatus_t` other than `CUBLAS_STATUS_SUCCESS`.
    CublasLtError,
    describe: describe,
}

fn describe(code: cublasStatus_t) -> Described {
    let loaded = API.table().is_ok() && is_available("cublasLtGetStatusString");
    // SAFETY: takes any code and returns a static string.
    described_by(code.name(), code.0, loaded, || unsafe {
        cublasLtGetStatusString(code)
    })
}

/// The version of the loaded cuBLASLt (`cublasLtGetProperty`), e.g. 13.0.
///
/// # Errors
/// cuBLASLt's error, or `CUBLAS_STATUS_NOT_INITIALIZED` whose
/// [`unavailable`](CublasLtError::unavailable) reason (its source) carries the
/// pathfinder's error when `libcublasLt` cannot be found.
pub fn version() -> Result<crate::Version, CublasLtError> {
    use crate::IntoResult as _;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both are valid for writes.
    unsafe { cublasLtGetProperty(MAJOR_VERSION, &mut major) }.result()?;
    // SAFETY: as above.
    unsafe { cublasLtGetProperty(MINOR_VERSION, &mut minor) }.result()?;
    Ok(crate::Version { major, minor })
}
