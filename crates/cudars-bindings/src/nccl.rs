//! NCCL (`nccl.h`), NVIDIA's collective communication library: every type,
//! constant and function of the host API (the `pnccl` profiling aliases
//! included), looked up in `libnccl` at run time.
//!
//! NCCL keeps one ABI across CUDA 12 and 13 (`libnccl.so.2`); an entry point newer
//! than the NCCL found is reported missing, not called. An entry point that cannot
//! be called returns `ncclSystemError`; [`NcclError`] says why.
//!
//! ```no_run
//! use cudars_bindings::nccl::*;
//! use cudars_bindings::IntoResult as _;
//!
//! let mut id = ncclUniqueId::default();
//! unsafe { ncclGetUniqueId(&mut id) }.result()?;
//! println!("NCCL {:?}", version()?);
//! # Ok::<(), NcclError>(())
//! ```

#[path = "generated/nccl/mod.rs"]
#[rustfmt::skip]
mod generated;
#[path = "generated/nccl_cuda12/mod.rs"]
#[rustfmt::skip]
mod cuda12_generated;

pub use generated::*;

use crate::error::{Described, api_plumbing, described_by};
use crate::loader::{ApiKind, Resolver};

api_plumbing! {
    kind: ApiKind::Nccl,
    resolver: Resolver::Dlsym,
    module: "nccl",
    code: ncclResult_t,
    success: ncclSuccess,
    unavailable_code: |_loaded: bool| ncclSystemError,
    error:
    /// An NCCL error: an `ncclResult_t` other than `ncclSuccess`.
    NcclError,
    describe: describe,
}

fn describe(code: ncclResult_t) -> Described {
    // SAFETY: takes any code and returns a static string.
    described_by(code.name(), code.0, API.table().is_ok(), || unsafe {
        ncclGetErrorString(code)
    })
}

/// The version of the loaded NCCL (`ncclGetVersion`): major, minor and patch,
/// e.g. `(2, 28, 9)`.
///
/// # Errors
/// NCCL's error, or `ncclSystemError` whose [`unavailable`](NcclError::unavailable)
/// reason (its source) carries the pathfinder's error when `libnccl` cannot be
/// found.
pub fn version() -> Result<(i32, i32, i32), NcclError> {
    use crate::IntoResult as _;
    let mut v = 0;
    // SAFETY: `v` is valid for writes.
    unsafe { ncclGetVersion(&mut v) }.result()?;
    // NCCL_VERSION(X, Y, Z) is X * 10000 + Y * 100 + Z since 2.9.
    Ok((v / 10000, (v % 10000) / 100, v % 100))
}
