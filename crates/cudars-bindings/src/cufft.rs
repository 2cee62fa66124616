//! cuFFT (`cufft.h`, `cufftXt.h`), fast Fourier transforms on the GPU: every
//! type, constant and function of the basic and the Xt API, looked up in
//! `libcufft` at run time.
//!
//! cuFFT has one ABI per CUDA major: cuFFT 11 (`libcufft.so.11`) is CUDA 12's
//! and cuFFT 12 (`.so.12`) CUDA 13's; [`cuda_major`] says which CUDA major the
//! library found belongs to. An entry point that cannot be called returns
//! `CUFFT_SETUP_FAILED` when the library could not be loaded and
//! `CUFFT_NOT_SUPPORTED` when it lacks the entry point; [`CufftError`] says why.
//!
//! ```no_run
//! use cudars_bindings::cufft::*;
//! use cudars_bindings::IntoResult as _;
//!
//! let mut plan: cufftHandle = 0;
//! unsafe { cufftPlan1d(&mut plan, 1024, CUFFT_C2C, 1) }.result()?;
//! unsafe { cufftDestroy(plan) }.result()?;
//! println!("cuFFT {}", version()?);
//! # Ok::<(), CufftError>(())
//! ```

#[path = "generated/cufft/mod.rs"]
#[rustfmt::skip]
mod generated;
#[path = "generated/cufft_cuda12/mod.rs"]
#[rustfmt::skip]
mod cuda12_generated;

pub use generated::*;

use crate::error::{Described, api_plumbing, undescribed};
use crate::loader::{ApiKind, Resolver};

api_plumbing! {
    kind: ApiKind::Cufft,
    resolver: Resolver::Dlsym,
    module: "cufft",
    code: cufftResult,
    success: CUFFT_SUCCESS,
    unavailable_code: |loaded: bool| if loaded {
        CUFFT_NOT_SUPPORTED
    } else {
        CUFFT_SETUP_FAILED
    },
    error:
    /// A cuFFT error: a `cufftResult` other than `CUFFT_SUCCESS`.
    CufftError,
    describe: describe,
}

/// cuFFT has no error-string function: these follow its documentation.
fn describe(code: cufftResult) -> Described {
    let d = undescribed(code.name(), code.0);
    let description = match code.name() {
        Some("CUFFT_INVALID_PLAN") => "the plan handle is invalid",
        Some("CUFFT_ALLOC_FAILED") => "allocating GPU or CPU memory failed",
        Some("CUFFT_INVALID_TYPE") => "the transform type is invalid",
        Some("CUFFT_INVALID_VALUE") => "a pointer or parameter is invalid",
        Some("CUFFT_INTERNAL_ERROR") => "a driver or internal cuFFT library error",
        Some("CUFFT_EXEC_FAILED") => "executing the transform on the GPU failed",
        Some("CUFFT_SETUP_FAILED") => "the cuFFT library failed to initialize",
        Some("CUFFT_INVALID_SIZE") => "the transform size is invalid",
        Some("CUFFT_UNALIGNED_DATA") => "the data is not aligned",
        Some("CUFFT_INVALID_DEVICE") => "the plan was made on another device",
        Some("CUFFT_NO_WORKSPACE") => "no workspace was given before execution",
        Some("CUFFT_NOT_IMPLEMENTED") => "the function or parameters are not implemented",
        Some("CUFFT_NOT_SUPPORTED") => "the operation is not supported for these parameters",
        Some("CUFFT_MISSING_DEPENDENCY") => "a library cuFFT depends on is missing",
        Some("CUFFT_NVRTC_FAILURE") => "NVRTC failed inside cuFFT",
        Some("CUFFT_NVJITLINK_FAILURE") => "nvJitLink failed inside cuFFT",
        Some("CUFFT_NVSHMEM_FAILURE") => "NVSHMEM failed inside cuFFT",
        _ => return d,
    };
    Described::new(d.name, description.into())
}

/// The version of the loaded cuFFT (`cufftGetProperty`), e.g. 12.0 (cuFFT's own
/// numbering: CUDA 13 ships cuFFT 12).
///
/// # Errors
/// cuFFT's error, or `CUFFT_SETUP_FAILED` whose [`unavailable`](CufftError::unavailable)
/// reason (its source) carries the pathfinder's error when `libcufft` cannot be
/// found.
pub fn version() -> Result<crate::Version, CufftError> {
    use crate::IntoResult as _;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both are valid for writes.
    unsafe { cufftGetProperty(MAJOR_VERSION, &mut major) }.result()?;
    // SAFETY: as above.
    unsafe { cufftGetProperty(MINOR_VERSION, &mut minor) }.result()?;
    Ok(crate::Version { major, minor })
}
