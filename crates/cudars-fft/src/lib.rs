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

#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;
mod plan;

pub use error::{Error, Result};
pub use plan::{Complex, Complex32, Complex64, Direction, Float, Kind, Plan};
