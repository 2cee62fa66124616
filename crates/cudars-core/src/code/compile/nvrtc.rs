//! NVRTC's process-wide settings and queries (compiling CUDA C++, a
//! [`Program`](crate::Program) with [`SourceCode::Cxx`](crate::SourceCode::Cxx), is
//! the crate's `nvrtc_compile` module): its [`version`], the architectures it [supports](supported_archs) and the
//! precompiled-header heap ([`pch_heap_size`], [`set_pch_heap_size`]).

use std::ffi::c_int;

use cudars_bindings::IntoResult as _;
use cudars_bindings::{Version, nvrtc};

use crate::error::{Error, Result};

/// What NVRTC did about creating a precompiled header
/// (`nvrtcGetPCHCreateStatus`, after a compile with PCH options).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PchStatus {
    /// A PCH was created.
    Created,
    /// None was attempted (no PCH options, or an existing one was used).
    NotAttempted,
    /// Creating it failed (the log says why with `pch_verbose`).
    Failed,
    /// The PCH heap was too small: it needs `required` bytes
    /// ([`set_pch_heap_size`]).
    HeapExhausted {
        /// The heap size the PCH needs.
        required: usize,
    },
}

/// What `prog` (compiled) did about a PCH; `None` when NVRTC cannot say (an older
/// NVRTC without the call, or a status this crate does not know).
pub(super) fn pch_status(prog: nvrtc::nvrtcProgram) -> Option<PchStatus> {
    // SAFETY: a live, compiled program.
    match unsafe { nvrtc::nvrtcGetPCHCreateStatus(prog) } {
        nvrtc::NVRTC_SUCCESS => Some(PchStatus::Created),
        nvrtc::NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED => Some(PchStatus::NotAttempted),
        nvrtc::NVRTC_ERROR_PCH_CREATE => Some(PchStatus::Failed),
        nvrtc::NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED => {
            let mut required = 0;
            // SAFETY: a live program; `required` is valid for writes.
            (unsafe { nvrtc::nvrtcGetPCHHeapSizeRequired(prog, &mut required) }
                == nvrtc::NVRTC_SUCCESS)
                .then_some(PchStatus::HeapExhausted { required })
        }
        _ => None,
    }
}

/// The size of NVRTC's process-wide PCH heap (`nvrtcGetPCHHeapSize`).
///
/// # Errors
/// NVRTC's error (or the library's absence).
pub fn pch_heap_size() -> Result<usize> {
    let mut n = 0;
    // SAFETY: `n` is valid for writes.
    unsafe { nvrtc::nvrtcGetPCHHeapSize(&mut n) }
        .result()
        .map_err(|e| Error::tool("reading NVRTC's PCH heap size", e))?;
    Ok(n)
}

/// Sets the size of NVRTC's process-wide PCH heap (`nvrtcSetPCHHeapSize`); a
/// PCH bigger than the heap is not created ([`PchStatus::HeapExhausted`]).
///
/// # Errors
/// NVRTC's error (or the library's absence).
pub fn set_pch_heap_size(bytes: usize) -> Result<()> {
    // SAFETY: takes the size by value.
    unsafe { nvrtc::nvrtcSetPCHHeapSize(bytes) }
        .result()
        .map_err(|e| Error::tool(format!("setting NVRTC's PCH heap size to {bytes}"), e))
}

/// The version of the loaded NVRTC (`major.minor`).
///
/// # Errors
/// [`Error::Unavailable`] when NVRTC cannot be loaded (its reason says where it
/// was searched for).
pub fn version() -> Result<Version> {
    nvrtc::version().map_err(|e| Error::tool("querying the NVRTC version", e))
}

/// The architectures the loaded NVRTC can compile for, as numbers (`90` for
/// `sm_90`), in ascending order.
///
/// # Errors
/// [`Error::Unavailable`] when NVRTC cannot be loaded; [`Error::Tool`] when it
/// cannot be asked.
pub fn supported_archs() -> Result<Vec<i32>> {
    const CONTEXT: &str = "querying NVRTC's supported architectures";
    let mut n: c_int = 0;
    // SAFETY: `n` is valid for writes.
    unsafe { nvrtc::nvrtcGetNumSupportedArchs(&mut n) }
        .result()
        .map_err(|e| Error::tool(CONTEXT, e))?;
    let mut archs = vec![0 as c_int; usize::try_from(n).unwrap_or(0)];
    if archs.is_empty() {
        return Ok(archs);
    }
    // SAFETY: `archs` has room for the `n` entries NVRTC reported.
    unsafe { nvrtc::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }
        .result()
        .map_err(|e| Error::tool(CONTEXT, e))?;
    Ok(archs)
}
