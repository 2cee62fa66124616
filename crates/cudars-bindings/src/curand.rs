//! cuRAND (`curand.h`), the host API of NVIDIA's random number generators: every
//! type, constant and function, looked up in `libcurand` at run time.
//!
//! cuRAND keeps one ABI across CUDA 12 and 13. An entry point that cannot be
//! called returns `CURAND_STATUS_INITIALIZATION_FAILED`; [`CurandError`] says why.
//!
//! ```no_run
//! use cudars_bindings::curand::*;
//! use cudars_bindings::IntoResult as _;
//!
//! let mut g: curandGenerator_t = std::ptr::null_mut();
//! unsafe { curandCreateGenerator(&mut g, CURAND_RNG_PSEUDO_PHILOX4_32_10) }.result()?;
//! unsafe { curandDestroyGenerator(g) }.result()?;
//! println!("cuRAND {}", version()?);
//! # Ok::<(), CurandError>(())
//! ```

#[path = "generated/curand/mod.rs"]
#[rustfmt::skip]
mod generated;
#[path = "generated/curand_cuda12/mod.rs"]
#[rustfmt::skip]
mod cuda12_generated;

pub use generated::*;

use crate::error::{Described, api_plumbing, undescribed};
use crate::loader::{ApiKind, Resolver};

api_plumbing! {
    kind: ApiKind::Curand,
    resolver: Resolver::Dlsym,
    module: "curand",
    code: curandStatus_t,
    success: CURAND_STATUS_SUCCESS,
    unavailable_code: |_loaded: bool| CURAND_STATUS_INITIALIZATION_FAILED,
    error:
    /// A cuRAND error: a `curandStatus_t` other than `CURAND_STATUS_SUCCESS`.
    CurandError,
    describe: describe,
}

/// cuRAND has no error-string function: these follow its documentation.
fn describe(code: curandStatus_t) -> Described {
    let d = undescribed(code.name(), code.0);
    let description = match code.name() {
        Some("CURAND_STATUS_VERSION_MISMATCH") => {
            "header file and linked library version do not match"
        }
        Some("CURAND_STATUS_NOT_INITIALIZED") => "the generator was not initialized",
        Some("CURAND_STATUS_ALLOCATION_FAILED") => "memory allocation failed",
        Some("CURAND_STATUS_TYPE_ERROR") => "the generator is the wrong type",
        Some("CURAND_STATUS_OUT_OF_RANGE") => "an argument is out of range",
        Some("CURAND_STATUS_LENGTH_NOT_MULTIPLE") => {
            "the length requested is not a multiple of the dimension (or of 2 for normal distributions)"
        }
        Some("CURAND_STATUS_DOUBLE_PRECISION_REQUIRED") => {
            "the GPU does not support double precision"
        }
        Some("CURAND_STATUS_LAUNCH_FAILURE") => "a kernel launch failed",
        Some("CURAND_STATUS_PREEXISTING_FAILURE") => "an earlier kernel launch failed",
        Some("CURAND_STATUS_INITIALIZATION_FAILED") => "initialization of CUDA failed",
        Some("CURAND_STATUS_ARCH_MISMATCH") => "the GPU architecture does not support the feature",
        Some("CURAND_STATUS_INTERNAL_ERROR") => "internal library error",
        _ => return d,
    };
    Described::new(d.name, description.into())
}

/// The version of the loaded cuRAND (`curandGetProperty`), e.g. 10.4.
///
/// # Errors
/// cuRAND's error, or `CURAND_STATUS_INITIALIZATION_FAILED` whose
/// [`unavailable`](CurandError::unavailable) reason (its source) carries the
/// pathfinder's error when `libcurand` cannot be found.
pub fn version() -> Result<crate::Version, CurandError> {
    use crate::IntoResult as _;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both are valid for writes.
    unsafe { curandGetProperty(MAJOR_VERSION, &mut major) }.result()?;
    // SAFETY: as above.
    unsafe { curandGetProperty(MINOR_VERSION, &mut minor) }.result()?;
    Ok(crate::Version { major, minor })
}
