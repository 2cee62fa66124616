//! The CUDA driver API (`cuda.h`): every type, constant and function, resolved at
//! run time from `libcuda` through `cuGetProcAddress`.
//!
//! Each function keeps its C name and signature (`cuMemAlloc`, not
//! `cuMemAlloc_v2`) and is resolved at the ABI version `cudaTypedefs.h` records for
//! it (`PFN_cuMemAlloc_v3020` → version 3020), so a newer driver hands back the ABI
//! these bindings were generated for. With `CUDA_RS_PER_THREAD_DEFAULT_STREAM=1` in
//! the environment when the driver is first used, stream-taking functions resolve
//! to their per-thread default stream variants (`_ptds`/`_ptsz`), as C code compiled
//! with `CUDA_API_PER_THREAD_DEFAULT_STREAM` gets.
//!
//! When `libcuda` cannot be found, or the installed driver lacks an entry point,
//! calling it does not crash: it returns `CUDA_ERROR_NOT_FOUND`, and
//! [`DriverError`] (from [`IntoResult::result`](crate::IntoResult::result)) says
//! why, naming the symbol and the driver version or listing where the library was
//! searched for.
//!
//! ```no_run
//! use cudars_bindings::driver::*;
//! use cudars_bindings::IntoResult as _;
//!
//! unsafe { cuInit(0) }.result()?;
//! let mut count = 0;
//! unsafe { cuDeviceGetCount(&mut count) }.result()?;
//! println!("{count} device(s), driver {}", version()?);
//! # Ok::<(), DriverError>(())
//! ```

#[path = "generated/driver/mod.rs"]
#[rustfmt::skip]
mod generated;
#[path = "generated/driver_cuda12/mod.rs"]
#[rustfmt::skip]
mod cuda12_generated;

pub use generated::*;

use crate::error::{Described, api_plumbing, static_cstr, undescribed};
use crate::loader::{ApiKind, Resolver};

api_plumbing! {
    kind: ApiKind::Driver,
    resolver: Resolver::Driver,
    module: "driver",
    code: CUresult,
    success: CUDA_SUCCESS,
    unavailable_code: |_loaded: bool| CUDA_ERROR_NOT_FOUND,
    refused_code: CUDA_ERROR_NOT_PERMITTED,
    error:
    /// An error of the CUDA driver API: a `CUresult` other than `CUDA_SUCCESS`.
    DriverError,
    describe: describe,
}

fn describe(code: CUresult) -> Described {
    let mut name: *const ::core::ffi::c_char = ::core::ptr::null();
    let mut desc: *const ::core::ffi::c_char = ::core::ptr::null();
    // SAFETY: both out-pointers are valid for writes; the driver writes static
    // strings or returns an error and leaves them null.
    let ok = unsafe { cuGetErrorName(code, &mut name) } == CUDA_SUCCESS
        && unsafe { cuGetErrorString(code, &mut desc) } == CUDA_SUCCESS;
    // SAFETY: the driver's error strings are static.
    match (ok, unsafe { static_cstr(name) }, unsafe {
        static_cstr(desc)
    }) {
        (true, Some(n), Some(d)) => Described::new(n.into(), d.into()),
        _ => undescribed(code.name(), code.0),
    }
}

/// The CUDA version the driver supports (`cuDriverGetVersion`), as `major.minor`.
///
/// # Errors
/// The driver's error, or `CUDA_ERROR_NOT_FOUND` whose [`unavailable`](DriverError::unavailable) reason (its source) carries the pathfinder's error
/// when there is no driver.
pub fn version() -> Result<crate::Version, DriverError> {
    use crate::IntoResult as _;
    let mut v = 0;
    // SAFETY: `v` is valid for writes; `cuDriverGetVersion` needs no `cuInit`.
    unsafe { cuDriverGetVersion(&mut v) }.result()?;
    Ok(crate::Version::from_cuda(v))
}

/// Whether the per-thread default stream variants are in use (see the module docs).
/// `None` until the driver has been loaded.
pub fn per_thread_default_stream() -> Option<bool> {
    API.table().ok().map(|t| t.per_thread)
}

/// Makes every driver and runtime function called on this thread return
/// `CUDA_ERROR_NOT_PERMITTED` (`cudaErrorNotPermitted`) without calling the
/// library (`on: true`), or call it again (`on: false`); returns what was set
/// before, to be put back.
///
/// For a driver callback thread (a host function, a graph host node, a user
/// object's destructor), where CUDA forbids CUDA calls: the driver "may return
/// `CUDA_ERROR_NOT_PERMITTED`, but this is not required", and such a call may
/// instead hang (a `cuStreamSynchronize` of the stream whose host function is
/// running waits for itself). cudars-core's trampolines set it for the length
/// of each callback, so that no driver call reached from one, through any
/// path, calls the driver. A described error of a refused code names it
/// without asking the driver (`cuGetErrorName` is refused too). Costs every
/// driver call one relaxed atomic load while no thread refuses.
pub fn refuse_calls_on_this_thread(on: bool) -> bool {
    crate::refusal::set_refusing_calls(on)
}

/// Whether driver and runtime calls on this thread are refused
/// ([`refuse_calls_on_this_thread`]).
pub fn calls_refused_on_this_thread() -> bool {
    crate::refusal::refusing_calls()
}
