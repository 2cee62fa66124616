//! What the examples share: their error type. (A folder with `mod.rs` under
//! `examples/` is a module the examples include with `mod common;`, not an
//! example of its own.)

/// An example's errors: a CUDA call failed ([`cudars_core::Error`], which says
/// what was being done), or a result is not what it should be, a finding of
/// the program and not of CUDA. `?` turns CUDA's errors into it (`#[from]`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExampleError {
    /// A CUDA call failed.
    #[error(transparent)]
    Cuda(#[from] cudars_core::Error),
    /// A result is not what it should be.
    #[error("{context}: wrong result: {message}")]
    Wrong {
        /// What was being checked.
        context: String,
        /// What was found.
        message: String,
    },
}

/// An example's result.
pub(crate) type Result<T, E = ExampleError> = std::result::Result<T, E>;

/// The error for a result that is not what it should be.
pub(crate) fn wrong(context: &str, message: String) -> ExampleError {
    ExampleError::Wrong {
        context: context.to_owned(),
        message,
    }
}
