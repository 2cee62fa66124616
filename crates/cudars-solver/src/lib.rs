//! cuSOLVER's dense API for Rust: LU, Cholesky, QR, the symmetric eigensolver and
//! the SVD, on cudars-core's streams and typed device views.
//!
//! ```no_run
//! use cudars_core::{Device, DeviceBuffer, StreamOptions};
//! use cudars_solver::{MatMut, Op, Solver};
//!
//! let dev = Device::new(0)?;
//! let stream = dev.create_stream(StreamOptions::default())?;
//! let solver = Solver::new(&stream)?;
//!
//! // Solve A·x = b for the 3×3 A below (column-major, as cuSOLVER's) by LU.
//! let a = [1.0f64, 4.0, 7.0, 2.0, 5.0, 8.0, 3.0, 6.0, 10.0];
//! let mut a = DeviceBuffer::from_host(&dev, &a, &stream)?;
//! let mut b = DeviceBuffer::from_host(&dev, &[1.0f64, 2.0, 3.0], &stream)?;
//! let mut ipiv = DeviceBuffer::<i32>::zeroed(&dev, 3, &stream)?;
//! let mut a = MatMut::col_major(a.view_mut(), 3, 3)?;
//! solver.getrf(&mut a, ipiv.view_mut())?; // a singular A is an error here
//! solver.getrs(Op::N, a.as_ref(), ipiv.view(), &mut MatMut::col_major(b.view_mut(), 3, 1)?)?;
//! let x = b.to_vec(&stream)?;
//! assert!((x[0] + 1.0 / 3.0).abs() < 1e-12 && (x[1] - 2.0 / 3.0).abs() < 1e-12 && x[2].abs() < 1e-12);
//! # Ok::<(), cudars_solver::Error>(())
//! ```
//!
//! | what | calls |
//! |---|---|
//! | matrices | [`MatRef`], [`MatMut`]: column-major, shape and leading dimension checked when made |
//! | LU | [`Solver::getrf`], [`Solver::getrs`] |
//! | Cholesky | [`Solver::potrf`], [`Solver::potrs`]; batched: [`Solver::potrf_batched`], [`Solver::potrs_batched`] |
//! | QR | [`Solver::geqrf`], [`Solver::ormqr`], [`Solver::orgqr`] |
//! | symmetric eigensolver | [`Solver::syevd`] |
//! | SVD | [`Solver::gesvd`] |
//!
//! for `f32` and `f64` ([`Element`]).
//!
//! # `info`, and why every call waits
//! cuSOLVER reports what the matrix did to a factorisation in a device integer,
//! `info`, not in its status: a singular matrix's LU, or a Cholesky of a matrix
//! that is not positive definite, returns `CUSOLVER_STATUS_SUCCESS` and leaves
//! factors that give NaN and infinities when used. Every call here reads `info`
//! back (so it waits for the stream) and returns [`Error::Extra`] with a
//! [`SolverError`] when it is not zero: [`SolverErrorKind::Singular`] naming the
//! zero pivot, [`SolverErrorKind::NotPositiveDefinite`] naming the leading minor,
//! [`SolverErrorKind::NotConverged`], and in a batch the matrix.
//!
//! Workspaces are sized by cuSOLVER (`*_bufferSize`) and allocated per call from
//! the device's memory resource, stream-ordered; every operand's free is ordered
//! after the stream. cuSOLVER is found at run time by the pathfinder (NVIDIA's
//! wheels, the toolkit, the system); a missing library is
//! [`Error::Unavailable`], whose source says where it was searched for.
//!
//! # Which driver
//! cuSOLVER follows CUDA's minor-version compatibility: a cuSOLVER of CUDA 13.x
//! (cuSOLVER 12.x) runs on any CUDA 13.0 driver or newer, one of CUDA 12.x
//! (cuSOLVER 11.x) on any 12.0 driver or newer, and none runs on a driver of an
//! older major. Making a [`Solver`] first asks cuSOLVER its version
//! (`cusolverGetProperty`, no GPU needed) and the driver its CUDA version (both
//! once per process) and, on a driver too old for cuSOLVER's CUDA major, returns
//! [`Error::DriverTooOld`] before cuSOLVER is called ("cuSOLVER 12.0 needs a
//! CUDA 13.0 driver; this driver is CUDA 12.4"). Its
//! [`required_driver`](cudars_core::LibraryError::required_driver) holds the
//! versions.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod decompose;
mod element;
mod error;
mod matrix;
mod solve;
mod solver;

pub use element::Element;
pub use error::{Error, Result, SolverError, SolverErrorKind};
pub use matrix::{MatMut, MatRef};
pub use solver::{EigJob, Fill, Op, Side, Solver};
