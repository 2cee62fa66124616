//! The crate's error type: cudars-core's [`LibraryError`] over cuSOLVER's status,
//! with [`SolverError`] for what cuSOLVER's `info` output reports.

use std::borrow::Cow;
use std::fmt;

use cudars_bindings::cusolver::CusolverError;
use cudars_core::{DriverGate, LibraryError, LibraryRelease};

/// Everything that can go wrong in this crate: what was being done, and
/// cuSOLVER's status ([`LibraryError::Library`]), why cuSOLVER could not be
/// called ([`LibraryError::Unavailable`]), a rejected argument
/// ([`LibraryError::InvalidArgument`]), cudars-core's error
/// ([`LibraryError::Core`]) or what cuSOLVER's `info` output reported
/// ([`LibraryError::Extra`], a [`SolverError`]: a singular matrix, one that is not
/// positive definite, an iteration that did not converge), each level saying its
/// own part once and the cause as the [`source`](std::error::Error::source).
/// Print the whole chain with [`report`](LibraryError::report).
pub type Error = LibraryError<CusolverError, SolverError>;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Turns a cuSOLVER status into a `Result`, saying what was being done: an
/// entry point that could not be called becomes [`LibraryError::Unavailable`].
pub(crate) fn check<C>(code: C, context: impl FnOnce() -> String) -> Result<()>
where
    C: cudars_bindings::IntoResult<Error = CusolverError>,
{
    Error::check(code, context)
}

/// What cuSOLVER's `info` output reported about a call that returned
/// `CUSOLVER_STATUS_SUCCESS`: the matrix itself stopped the computation
/// ([`LibraryError::Extra`] of this crate's [`Error`]). What the call wrote is
/// left as cuSOLVER left it (a singular LU is complete; a failed Cholesky is
/// not) and must not be used as a factorisation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SolverError {
    /// What was being done.
    pub context: Cow<'static, str>,
    /// In a batched call, which matrix of the batch (from 0); `None` otherwise.
    pub matrix: Option<usize>,
    /// What cuSOLVER reported.
    pub kind: SolverErrorKind,
}

/// What a [`SolverError`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SolverErrorKind {
    /// LU (`getrf`): `U(pivot, pivot)` is exactly zero (`pivot` counts from 0), so
    /// the matrix is singular and a solve with the factors would divide by zero.
    Singular {
        /// The index of the zero diagonal element of `U`, from 0.
        pivot: usize,
    },
    /// Cholesky (`potrf`): the leading minor of order `order` (its first `order`
    /// rows and columns, counted from 1) is not positive definite, so the
    /// factorisation could not be completed.
    NotPositiveDefinite {
        /// The order of the first leading minor that is not positive definite.
        order: usize,
    },
    /// The eigensolver (`syevd`) or the SVD (`gesvd`) did not converge:
    /// `unconverged` intermediate off-diagonal elements did not reach zero.
    NotConverged {
        /// How many elements did not converge.
        unconverged: usize,
    },
    /// cuSOLVER refused its parameter at this position (from 1, the handle
    /// counted): an argument check this crate should have made first.
    InvalidParameter {
        /// The position of the parameter cuSOLVER refused.
        position: usize,
    },
}

impl fmt::Display for SolverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.context)?;
        if let Some(m) = self.matrix {
            write!(f, ": matrix {m} of the batch")?;
        }
        match self.kind {
            SolverErrorKind::Singular { pivot } => write!(
                f,
                ": the matrix is singular (U({pivot}, {pivot}) is exactly zero)"
            ),
            SolverErrorKind::NotPositiveDefinite { order } => write!(
                f,
                ": the matrix is not positive definite (its leading minor of order {order} is not)"
            ),
            SolverErrorKind::NotConverged { unconverged } => write!(
                f,
                ": the iteration did not converge ({unconverged} off-diagonal elements did not reach zero)"
            ),
            SolverErrorKind::InvalidParameter { position } => {
                write!(f, ": cuSOLVER refused its parameter {position}")
            }
        }
    }
}

impl std::error::Error for SolverError {}

/// cuSOLVER's release: cuSOLVER 12.x belongs to CUDA 13, 11.x to CUDA 12.
static CUSOLVER: DriverGate = DriverGate::new(|| {
    let v = cudars_bindings::cusolver::version().ok()?;
    Some(LibraryRelease::new("cuSOLVER", v, v.major + 1))
});

/// [`LibraryError::DriverTooOld`] when the driver is older than cuSOLVER's CUDA
/// major (checked before a handle is made; the crate docs' "Which driver").
pub(crate) fn check_driver(context: impl FnOnce() -> String) -> Result<()> {
    CUSOLVER.check(context)
}
