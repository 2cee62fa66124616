//! The crate's error type: cudars-core's [`LibraryError`] over cuFile's status.

use std::borrow::Cow;

use cudars_bindings::cufile::CufileError;
use cudars_core::LibraryError;

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
