//! cuBLAS and cuBLASLt for Rust, on cudars-core's streams and typed device views.
//!
//! ```no_run
//! use cudars_blas::{Blas, MatMut, MatRef, Op};
//! use cudars_core::{Device, DeviceBuffer, StreamOptions};
//!
//! let dev = Device::new(0)?;
//! let stream = dev.create_stream(StreamOptions::default())?;
//! let blas = Blas::new(&stream)?;
//!
//! // C (2×2) = A (2×3) · B (3×2), all row-major, as a Rust user stores them.
//! let a = DeviceBuffer::from_host(&dev, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &stream)?;
//! let b = DeviceBuffer::from_host(&dev, &[1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0], &stream)?;
//! let mut c = DeviceBuffer::<f32>::zeroed(&dev, 4, &stream)?;
//! let (a, b) = (MatRef::row_major(a.view(), 2, 3)?, MatRef::row_major(b.view(), 3, 2)?);
//! blas.gemm(1.0, a, Op::N, b, Op::N, 0.0, &mut MatMut::row_major(c.view_mut(), 2, 2)?)?;
//! assert_eq!(c.to_vec(&stream)?, [4.0, 5.0, 10.0, 11.0]);
//! # Ok::<(), cudars_blas::Error>(())
//! ```
//!
//! | what | types |
//! |---|---|
//! | matrices | [`MatRef`], [`MatMut`] (shape, [`Layout`], leading dimension; checked when made), [`Op`] |
//! | cuBLAS | [`Blas`]: [`gemm`](Blas::gemm), [`gemm_strided_batched`](Blas::gemm_strided_batched), [`gemv`](Blas::gemv), [`axpy`](Blas::axpy), [`dot`](Blas::dot), [`scal`](Blas::scal) for `f32`, `f64`, `f16`, `bf16` ([`Element`]) |
//! | cuBLASLt | [`BlasLt`]: [`matmul`](BlasLt::matmul) with an [`Epilogue`] (bias, ReLU, GELU), chosen by cuBLASLt's heuristics, in a workspace the handle owns |
//!
//! # Layouts
//! cuBLAS is column-major; Rust data is usually row-major. Every matrix here
//! says its layout, and each call translates (a row-major operand is the
//! column-major storage of its transpose, a row-major result is computed as its
//! transpose), so any mix of layouts gives the textbook product, and shapes are
//! checked against the product before cuBLAS is called: a mismatch is an
//! [`Error::InvalidArgument`], never a silently transposed result.
//!
//! cuBLAS and cuBLASLt are found at run time by the pathfinder (NVIDIA's wheels,
//! the toolkit, the system); a missing library is [`Error::Unavailable`], whose
//! source says where it was searched for.
//!
//! # Which driver
//! cuBLAS follows CUDA's minor-version compatibility: a cuBLAS of CUDA 13.x
//! runs on any CUDA 13.0 driver or newer, one of CUDA 12.x on any 12.0 driver
//! or newer, and none runs on a driver of an older major. Making a [`Blas`] or a [`BlasLt`] first asks
//! cuBLAS its version (`cublasGetProperty`; cuBLAS 13.x is CUDA 13's, no GPU needed) and the driver its CUDA
//! version (both once per process) and, on a driver too old for cuBLAS's CUDA
//! major, returns [`Error::DriverTooOld`] before cuBLAS is called: "cuBLAS 13.1
//! needs a CUDA 13.0 driver; this driver is CUDA 12.4", not the opaque status
//! cuBLAS would give. Its [`required_driver`](cudars_core::LibraryError::required_driver)
//! holds the versions.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod blas;
mod element;
mod error;
mod lt;
mod matrix;

pub use blas::{Blas, Strided};
pub use element::Element;
pub use error::{Error, LtError, LtErrorKind, Result};
pub use lt::{BiasAlong, BlasLt, DEFAULT_WORKSPACE, Epilogue};
pub use matrix::{Layout, MatMut, MatRef, Op};
