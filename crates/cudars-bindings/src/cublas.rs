//! cuBLAS (`cublas_v2.h`, `cublas_api.h`), the BLAS on the GPU: every type,
//! constant and function of the v2 API (the 64-bit-index `_64` variants
//! included), looked up in `libcublas` at run time. Public names map to their
//! exported symbols as in C (`cublasCreate` → `cublasCreate_v2`).
//!
//! cuBLAS has one ABI per CUDA major (`libcublas.so.12`, `.so.13`): the major of
//! the library found picks each entry point's symbol, as for the runtime.
//!
//! An entry point that cannot be called returns `CUBLAS_STATUS_NOT_INITIALIZED`
//! when the library could not be loaded and `CUBLAS_STATUS_NOT_SUPPORTED` when it
//! lacks the entry point; [`CublasError`] says why.
//!
//! ```no_run
//! use cudars_bindings::cublas::*;
//! use cudars_bindings::IntoResult as _;
//!
//! let mut handle: cublasHandle_t = std::ptr::null_mut();
//! unsafe { cublasCreate(&mut handle) }.result()?;
//! unsafe { cublasDestroy(handle) }.result()?;
//! println!("cuBLAS {}", version()?);
//! # Ok::<(), CublasError>(())
//! ```

#[path = "generated/cublas/mod.rs"]
#[rustfmt::skip]
mod generated;
#[path = "generated/cublas_cuda12/mod.rs"]
#[rustfmt::skip]
mod cuda12_generated;

pub use generated::*;

use crate::error::{Described, api_plumbing, described_by};
use crate::loader::{ApiKind, Resolver};

api_plumbing! {
    kind: ApiKind::Cublas,
    resolver: Resolver::Dlsym,
    module: "cublas",
    code: cublasStatus_t,
    success: CUBLAS_STATUS_SUCCESS,
    unavailable_code: |loaded: bool| if loaded {
        CUBLAS_STATUS_NOT_SUPPORTED
    } else {
        CUBLAS_STATUS_NOT_INITIALIZED
    },
    error:
    /// A cuBLAS error: a `cublasStatus_t` other than `CUBLAS_STATUS_SUCCESS`.
    CublasError,
    describe: describe,
}

fn describe(code: cublasStatus_t) -> Described {
    let loaded = API.table().is_ok() && is_available("cublasGetStatusString");
    // SAFETY: takes any code and returns a static string.
    described_by(code.name(), code.0, loaded, || unsafe {
        cublasGetStatusString(code)
    })
}

/// The version of the loaded cuBLAS (`cublasGetProperty`), e.g. 13.0.
///
/// # Errors
/// cuBLAS's error, or `CUBLAS_STATUS_NOT_INITIALIZED` whose
/// [`unavailable`](CublasError::unavailable) reason (its source) carries the
/// pathfinder's error when `libcublas` cannot be found.
pub fn version() -> Result<crate::Version, CublasError> {
    use crate::IntoResult as _;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both are valid for writes.
    unsafe { cublasGetProperty(MAJOR_VERSION, &mut major) }.result()?;
    // SAFETY: as above.
    unsafe { cublasGetProperty(MINOR_VERSION, &mut minor) }.result()?;
    Ok(crate::Version { major, minor })
}
