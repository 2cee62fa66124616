//! cuFFT for Rust: plans of 1, 2 or 3 dimensions, batched, real-to-complex,
//! complex-to-real and complex-to-complex, in single and double precision, run
//! on cudars-core streams over typed device views.
//!
//! ```no_run
//! use cudars_core::{Device, DeviceBuffer, StreamOptions};
//! use cudars_fft::{Complex32, Direction, Kind, Plan};
//!
//! let dev = Device::new(0)?;
//! let stream = dev.create_stream(StreamOptions::default())?;
//! let n = 1024;
//! let x = DeviceBuffer::from_host(&dev, &vec![Complex32::new(1.0, 0.0); n], &stream)?;
//! let mut y = DeviceBuffer::<Complex32>::zeroed(&dev, n, &stream)?;
//! let plan = Plan::<f32>::new(&[n], 1, Kind::C2C, &stream)?;
//! plan.c2c(x.view(), y.view_mut(), Direction::Forward)?;
//! // A constant's spectrum is one spike of height n.
//! assert_eq!(y.to_vec(&stream)?[0].re, n as f32);
//! # Ok::<(), cudars_fft::Error>(())
//! ```
//!
//! A [`Plan`] is made once (cuFFT picks its algorithm then) and executed any
//! number of times; the element types of its execution methods follow its
//! [`Kind`] and precision ([`Float`]), and the views' lengths and devices are
//! checked against the plan before cuFFT is called. Transforms are unnormalised.
//! cuFFT is found at run time by the pathfinder; a missing library is
//! [`Error::Unavailable`].
//!
//! # Which driver
//! cuFFT follows CUDA's minor-version compatibility: a cuFFT of CUDA 13.x
//! runs on any CUDA 13.0 driver or newer, one of CUDA 12.x on any 12.0 driver
//! or newer, and none runs on a driver of an older major. Making a [`Plan`] first asks
//! cuFFT its version (`cufftGetProperty`; cuFFT numbers itself one behind CUDA: cuFFT 12 is CUDA 13's, no GPU needed) and the driver its CUDA
//! version (both once per process) and, on a driver too old for cuFFT's CUDA
//! major, returns [`Error::DriverTooOld`] before cuFFT is called: "cuFFT 12.0
//! needs a CUDA 13.0 driver; this driver is CUDA 12.4", not the opaque status
//! cuFFT would give. Its [`required_driver`](cudars_core::LibraryError::required_driver)
//! holds the versions.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;
mod plan;

pub use error::{Error, Result};
pub use plan::{Complex, Complex32, Complex64, Direction, Float, Kind, Plan};
