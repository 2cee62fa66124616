//! The CUDA runtime API (`cuda_runtime_api.h`): every type, constant and function,
//! looked up in `libcudart` (from NVIDIA's wheels, conda or a toolkit) at run time.
//!
//! With `CUDA_RS_PER_THREAD_DEFAULT_STREAM=1` in the environment when the runtime is
//! first used, functions that have per-thread default stream variants resolve to
//! them (`cudaMemcpy_ptds`, `cudaLaunchKernel_ptsz`, …).
//!
//! An entry point that cannot be resolved returns `cudaErrorSymbolNotFound`, and
//! [`RuntimeError`] says why.
//!
//! ```no_run
//! use cudars_bindings::runtime::*;
//! use cudars_bindings::IntoResult as _;
//!
//! let mut v = 0;
//! unsafe { cudaRuntimeGetVersion(&mut v) }.result()?;
//! println!("CUDA runtime {v}");
//! # Ok::<(), RuntimeError>(())
//! ```

#[path = "generated/runtime/mod.rs"]
#[rustfmt::skip]
mod generated;
#[path = "generated/runtime_cuda12/mod.rs"]
#[rustfmt::skip]
mod cuda12_generated;

pub use generated::*;

use crate::error::{Described, api_plumbing, static_cstr, undescribed};
use crate::loader::{ApiKind, Resolver};

api_plumbing! {
    kind: ApiKind::Runtime,
    resolver: Resolver::Dlsym,
    module: "runtime",
    code: cudaError_t,
    success: cudaSuccess,
    unavailable_code: |_loaded: bool| cudaErrorSymbolNotFound,
    refused_code: cudaErrorNotPermitted,
    error:
    /// An error of the CUDA runtime API: a `cudaError_t` other than `cudaSuccess`.
    RuntimeError,
    describe: describe,
}

fn describe(code: cudaError_t) -> Described {
    if API.table().is_err() {
        return undescribed(code.name(), code.0);
    }
    // SAFETY: both functions take any code and return static strings.
    let (n, d) = unsafe { (cudaGetErrorName(code), cudaGetErrorString(code)) };
    // SAFETY: the runtime's error strings are static.
    match unsafe { (static_cstr(n), static_cstr(d)) } {
        (Some(n), Some(d)) => Described::new(n.into(), d.into()),
        _ => undescribed(code.name(), code.0),
    }
}

/// The version of the loaded runtime library (`cudaRuntimeGetVersion`).
///
/// # Errors
/// The runtime's error, or `cudaErrorSymbolNotFound` whose [`unavailable`](RuntimeError::unavailable) reason (its source) carries the pathfinder's error
/// when `libcudart` cannot be found.
pub fn version() -> Result<crate::Version, RuntimeError> {
    use crate::IntoResult as _;
    let mut v = 0;
    // SAFETY: `v` is valid for writes.
    unsafe { cudaRuntimeGetVersion(&mut v) }.result()?;
    Ok(crate::Version::from_cuda(v))
}
