//! The crate's error type: cudars-core's [`LibraryError`] over cuRAND's status.

use cudars_bindings::curand::CurandError;
use cudars_core::LibraryError;

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
