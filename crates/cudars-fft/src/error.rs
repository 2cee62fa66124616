//! The crate's error type: cudars-core's [`LibraryError`] over cuFFT's status.

use cudars_bindings::cufft::CufftError;
use cudars_core::{DriverGate, LibraryError, LibraryRelease};

/// Everything that can go wrong in this crate: what was being done, and
/// cuFFT's status ([`LibraryError::Library`]), why cuFFT could not be called
/// ([`LibraryError::Unavailable`]), a rejected argument
/// ([`LibraryError::InvalidArgument`]) or cudars-core's error
/// ([`LibraryError::Core`]), each level saying its own part once and
/// the cause as the [`source`](std::error::Error::source). Print the whole
/// chain with [`report`](LibraryError::report).
pub type Error = LibraryError<CufftError>;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Turns a cuFFT status into a `Result`, saying what was being done: an
/// entry point that could not be called becomes [`LibraryError::Unavailable`].
pub(crate) fn check<C>(code: C, context: impl FnOnce() -> String) -> Result<()>
where
    C: cudars_bindings::IntoResult<Error = CufftError>,
{
    Error::check(code, context)
}

/// cuFFT's release: cuFFT numbers itself one behind CUDA (cuFFT 12 ships with
/// CUDA 13, cuFFT 11 with CUDA 12).
static CUFFT: DriverGate = DriverGate::new(|| {
    let v = cudars_bindings::cufft::version().ok()?;
    Some(LibraryRelease::new("cuFFT", v, v.major.checked_add(1)?))
});

/// [`LibraryError::DriverTooOld`] when the driver is older than cuFFT's CUDA
/// major (checked before a plan is made; the crate docs' "Which driver").
pub(crate) fn check_driver(context: impl FnOnce() -> String) -> Result<()> {
    CUFFT.check(context)
}
