//! cuSOLVER's dense API (`cusolverDn.h`, `cusolver_common.h`): LU, Cholesky, QR,
//! symmetric eigensolvers and SVD on the GPU, every type, constant and function
//! looked up in `libcusolver` at run time. cuBLAS's fill, side, operation and
//! diagonal enums the API takes (`cublasFillMode_t`, …) are declared here too.
//!
//! cuSOLVER has one ABI per CUDA major: cuSOLVER 11 (`libcusolver.so.11`) is
//! CUDA 12's and cuSOLVER 12 (`.so.12`) CUDA 13's. An entry point that cannot be
//! called returns `CUSOLVER_STATUS_NOT_INITIALIZED` when the library could not be
//! loaded and `CUSOLVER_STATUS_NOT_SUPPORTED` when it lacks the entry point;
//! [`CusolverError`] says why.
//!
//! ```no_run
//! use cudars_bindings::cusolver::*;
//! use cudars_bindings::IntoResult as _;
//!
//! let mut h: cusolverDnHandle_t = std::ptr::null_mut();
//! unsafe { cusolverDnCreate(&mut h) }.result()?;
//! unsafe { cusolverDnDestroy(h) }.result()?;
//! println!("cuSOLVER {}", version()?);
//! # Ok::<(), CusolverError>(())
//! ```

#[path = "generated/cusolver/mod.rs"]
#[rustfmt::skip]
mod generated;
#[path = "generated/cusolver_cuda12/mod.rs"]
#[rustfmt::skip]
mod cuda12_generated;

pub use generated::*;

use crate::error::{Described, api_plumbing, undescribed};
use crate::loader::{ApiKind, Resolver};

api_plumbing! {
    kind: ApiKind::Cusolver,
    resolver: Resolver::Dlsym,
    module: "cusolver",
    code: cusolverStatus_t,
    success: CUSOLVER_STATUS_SUCCESS,
    unavailable_code: |loaded: bool| if loaded {
        CUSOLVER_STATUS_NOT_SUPPORTED
    } else {
        CUSOLVER_STATUS_NOT_INITIALIZED
    },
    error:
    /// A cuSOLVER error: a `cusolverStatus_t` other than `CUSOLVER_STATUS_SUCCESS`.
    CusolverError,
    describe: describe,
}

/// cuSOLVER has no error-string function: these follow its documentation.
fn describe(code: cusolverStatus_t) -> Described {
    let d = undescribed(code.name(), code.0);
    let description = match code.name() {
        Some("CUSOLVER_STATUS_NOT_INITIALIZED") => "the cuSOLVER library was not initialized",
        Some("CUSOLVER_STATUS_ALLOC_FAILED") => "allocating memory inside cuSOLVER failed",
        Some("CUSOLVER_STATUS_INVALID_VALUE") => "an unsupported value or parameter was passed",
        Some("CUSOLVER_STATUS_ARCH_MISMATCH") => "the GPU lacks a feature this function needs",
        Some("CUSOLVER_STATUS_MAPPING_ERROR") => "an access to GPU memory space failed",
        Some("CUSOLVER_STATUS_EXECUTION_FAILED") => "the GPU program failed to execute",
        Some("CUSOLVER_STATUS_INTERNAL_ERROR") => "an internal cuSOLVER operation failed",
        Some("CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED") => {
            "the matrix type is not supported by this function"
        }
        Some("CUSOLVER_STATUS_NOT_SUPPORTED") => "the operation or parameters are not supported",
        Some("CUSOLVER_STATUS_ZERO_PIVOT") => "a zero pivot was met",
        Some("CUSOLVER_STATUS_INVALID_LICENSE") => "invalid license",
        Some("CUSOLVER_STATUS_IRS_PARAMS_NOT_INITIALIZED") => {
            "the iterative-refinement parameters were not initialized"
        }
        Some("CUSOLVER_STATUS_IRS_OUT_OF_RANGE") => {
            "an iterative-refinement parameter is out of range"
        }
        Some("CUSOLVER_STATUS_IRS_NOT_SUPPORTED") => {
            "the iterative-refinement solver does not support these parameters"
        }
        Some("CUSOLVER_STATUS_IRS_INTERNAL_ERROR") => "an iterative-refinement solver failed",
        Some("CUSOLVER_STATUS_INVALID_WORKSPACE") => "the workspace is invalid",
        _ => return d,
    };
    Described::new(d.name, description.into())
}

/// The version of the loaded cuSOLVER (`cusolverGetProperty`), e.g. 12.0
/// (cuSOLVER's own numbering: CUDA 13 ships cuSOLVER 12, CUDA 12 cuSOLVER 11).
///
/// # Errors
/// cuSOLVER's error, or `CUSOLVER_STATUS_NOT_INITIALIZED` whose
/// [`unavailable`](CusolverError::unavailable) reason (its source) carries the
/// pathfinder's error when `libcusolver` cannot be found.
pub fn version() -> Result<crate::Version, CusolverError> {
    use crate::IntoResult as _;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both are valid for writes.
    unsafe { cusolverGetProperty(MAJOR_VERSION, &mut major) }.result()?;
    // SAFETY: as above.
    unsafe { cusolverGetProperty(MINOR_VERSION, &mut minor) }.result()?;
    Ok(crate::Version { major, minor })
}
