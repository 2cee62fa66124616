//! The crate's error type: cudars-core's [`LibraryError`] over cuFile's status.

use std::borrow::Cow;

use cudars_bindings::cufile::CufileError;
use cudars_core::{DriverGate, LibraryError, LibraryRelease};

/// Everything that can go wrong in this crate: what was being done, and
/// cuFile's status ([`LibraryError::Library`]), why cuFile could not be called
/// ([`LibraryError::Unavailable`]), a rejected argument
/// ([`LibraryError::InvalidArgument`]) or cudars-core's error
/// ([`LibraryError::Core`]), each level saying its own part once and the cause
/// as the [`source`](std::error::Error::source). Print the whole chain with
/// [`report`](LibraryError::report).
pub type Error = LibraryError<CufileError>;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// cuFile's error with what was being done: an entry point that could not be
/// called becomes [`LibraryError::Unavailable`].
pub(crate) fn from_status(context: impl Into<Cow<'static, str>>, source: CufileError) -> Error {
    Error::from_status(context, source)
}

/// Turns a cuFile status into a `Result`, saying what was being done.
pub(crate) fn check(
    status: cudars_bindings::cufile::CUfileError_t,
    context: impl FnOnce() -> String,
) -> Result<()> {
    Error::check(status, context)
}

/// cuFile's release: cuFile is 1.x in every CUDA, its minor tells the CUDA
/// major (1.5 to 1.14: CUDA 12.0 to 12.9, 1.15 on: CUDA 13).
static CUFILE: DriverGate = DriverGate::new(|| {
    let v = cudars_bindings::cufile::version().ok()?;
    let cuda = match (v.major, v.minor) {
        (1, ..=4) => 11,
        (1, 5..=14) => 12,
        (1, _) => 13,
        _ => return None,
    };
    Some(LibraryRelease::new("cuFile", v, cuda))
});

/// [`LibraryError::DriverTooOld`] when the driver is older than cuFile's CUDA
/// major (checked before cuFile's driver opens; the crate docs' "Which
/// driver").
pub(crate) fn check_driver(context: impl FnOnce() -> String) -> Result<()> {
    CUFILE.check(context)
}
