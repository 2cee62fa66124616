//! The crate's error type: cudars-core's [`LibraryError`] over cuBLAS's status.

use cudars_bindings::cublas::CublasError;
use cudars_core::{DriverGate, LibraryError, LibraryRelease};

use std::borrow::Cow;

use cudars_bindings::cublaslt::CublasLtError;

/// Everything that can go wrong in this crate: what was being done, and
/// cuBLAS's status ([`LibraryError::Library`]), why cuBLAS could not be called
/// ([`LibraryError::Unavailable`]), a rejected argument
/// ([`LibraryError::InvalidArgument`]) or cudars-core's error
/// ([`LibraryError::Core`]) or cuBLASLt's status ([`LibraryError::Extra`], an [`LtError`]), each level saying its own part once and
/// the cause as the [`source`](std::error::Error::source). Print the whole
/// chain with [`report`](LibraryError::report).
pub type Error = LibraryError<CublasError, LtError>;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Turns a cuBLAS status into a `Result`, saying what was being done: an
/// entry point that could not be called becomes [`LibraryError::Unavailable`].
pub(crate) fn check<C>(code: C, context: impl FnOnce() -> String) -> Result<()>
where
    C: cudars_bindings::IntoResult<Error = CublasError>,
{
    Error::check(code, context)
}

/// cuBLASLt's failure: cuBLAS's error's one extra case
/// ([`LibraryError::Extra`]). A cuBLASLt that could not be called is
/// [`LibraryError::Unavailable`], as for cuBLAS.
#[derive(Debug, thiserror::Error)]
#[error("{context}")]
#[non_exhaustive]
pub struct LtError {
    /// What was being done.
    pub context: Cow<'static, str>,
    /// Which failure it is, for matching.
    pub kind: LtErrorKind,
    /// cuBLASLt's error: its status code, name and description.
    #[source]
    pub source: CublasLtError,
}

/// Which cuBLASLt failure an [`LtError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LtErrorKind {
    /// cuBLASLt's heuristics found no algorithm for this combination of element
    /// types, shapes, layouts and epilogue (`cublasLtMatmulAlgoGetHeuristic`
    /// returned none; the source is `CUBLAS_STATUS_NOT_SUPPORTED`). Nothing was
    /// queued: another combination (another layout of `D`, no epilogue) may have one.
    NoAlgorithm,
    /// A cuBLASLt call returned this status.
    Status,
}

/// Turns a cuBLASLt status into a `Result`, saying what was being done.
pub(crate) fn check_lt<C>(code: C, context: impl FnOnce() -> String) -> Result<()>
where
    C: cudars_bindings::IntoResult<Error = CublasLtError>,
{
    code.result().map_err(|source| {
        let context = Cow::Owned(context());
        match cudars_bindings::StatusError::unavailable(&source) {
            Some(reason) => Error::Unavailable {
                context,
                reason: Box::new(reason.clone()),
            },
            None => Error::Extra(LtError {
                context,
                kind: LtErrorKind::Status,
                source,
            }),
        }
    })
}

/// cuBLAS's release: cuBLAS 13.x belongs to CUDA 13, 12.x to CUDA 12.
static CUBLAS: DriverGate = DriverGate::new(|| {
    let v = cudars_bindings::cublas::version().ok()?;
    Some(LibraryRelease::new("cuBLAS", v, v.major))
});

/// cuBLASLt's release, numbered as cuBLAS's.
static CUBLASLT: DriverGate = DriverGate::new(|| {
    let v = cudars_bindings::cublaslt::version().ok()?;
    Some(LibraryRelease::new("cuBLASLt", v, v.major))
});

/// [`LibraryError::DriverTooOld`] when the driver is older than cuBLAS's CUDA
/// major (checked before a handle is made; the crate docs' "Which driver").
pub(crate) fn check_driver(context: impl FnOnce() -> String) -> Result<()> {
    CUBLAS.check(context)
}

/// [`check_driver`] for cuBLASLt.
pub(crate) fn check_driver_lt(context: impl FnOnce() -> String) -> Result<()> {
    CUBLASLT.check(context)
}
