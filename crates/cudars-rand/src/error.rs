//! The crate's error type: cudars-core's [`LibraryError`] over cuRAND's status.

use cudars_bindings::curand::CurandError;
use cudars_core::{DriverGate, LibraryError, LibraryRelease};

/// Everything that can go wrong in this crate: what was being done, and
/// cuRAND's status ([`LibraryError::Library`]), why cuRAND could not be called
/// ([`LibraryError::Unavailable`]), a rejected argument
/// ([`LibraryError::InvalidArgument`]) or cudars-core's error
/// ([`LibraryError::Core`]), each level saying its own part once and
/// the cause as the [`source`](std::error::Error::source). Print the whole
/// chain with [`report`](LibraryError::report).
pub type Error = LibraryError<CurandError>;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Turns a cuRAND status into a `Result`, saying what was being done: an
/// entry point that could not be called becomes [`LibraryError::Unavailable`].
pub(crate) fn check<C>(code: C, context: impl FnOnce() -> String) -> Result<()>
where
    C: cudars_bindings::IntoResult<Error = CurandError>,
{
    Error::check(code, context)
}

/// cuRAND's release: cuRAND is 10.x in every CUDA since 10, its minor tells the
/// CUDA major (10.2: CUDA 11, 10.3: CUDA 12, 10.4: CUDA 13; CUDA 11.8's 10.3.0
/// counts as CUDA 12's, a driver no cuda-rs build serves anyway).
static CURAND: DriverGate = DriverGate::new(|| {
    let v = cudars_bindings::curand::version().ok()?;
    let cuda = match (v.major, v.minor) {
        (10, ..=2) => 11,
        (10, 3) => 12,
        (10, _) => 13,
        _ => return None,
    };
    Some(LibraryRelease::new("cuRAND", v, cuda))
});

/// [`LibraryError::DriverTooOld`] when the driver is older than cuRAND's CUDA
/// major (checked before a generator is made; the crate docs' "Which driver").
pub(crate) fn check_driver(context: impl FnOnce() -> String) -> Result<()> {
    CURAND.check(context)
}
