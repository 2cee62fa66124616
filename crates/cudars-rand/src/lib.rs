//! cuRAND for Rust: pseudo-random generators filling cudars-core's typed device
//! views on a stream.
//!
//! ```no_run
//! use cudars_core::{Device, DeviceBuffer, StreamOptions};
//! use cudars_rand::{Generator, RngKind};
//!
//! let dev = Device::new(0)?;
//! let stream = dev.create_stream(StreamOptions::default())?;
//! let mut rng = Generator::with_seed(RngKind::Philox4x32_10, 42, &stream)?;
//! let mut x = DeviceBuffer::<f32>::allocate(&dev, 1 << 20, &stream)?;
//! rng.fill_normal(x.view_mut(), 0.0, 1.0)?;
//! let host = x.to_vec(&stream)?;
//! assert!(host.iter().all(|v| v.is_finite()));
//! # Ok::<(), cudars_rand::Error>(())
//! ```
//!
//! [`Generator`] offers Philox4x32-10, XORWOW and MRG32k3a ([`RngKind`]) with
//! seeds and offsets, and fills `f32` and `f64` views with uniform, normal and
//! log-normal numbers ([`Real`]) and `u32` views with random bits. cuRAND is found
//! at run time by the pathfinder; a missing library is [`Error::Unavailable`].
//!
//! # Which driver
//! cuRAND follows CUDA's minor-version compatibility: a cuRAND of CUDA 13.x
//! runs on any CUDA 13.0 driver or newer, one of CUDA 12.x on any 12.0 driver
//! or newer, and none runs on a driver of an older major. Making a [`Generator`] first asks
//! cuRAND its version (`curandGetProperty`; cuRAND is 10.x, and 10.3 is CUDA 12's, 10.4 on CUDA 13's, no GPU needed) and the driver its CUDA
//! version (both once per process) and, on a driver too old for cuRAND's CUDA
//! major, returns [`Error::DriverTooOld`] before cuRAND is called: "cuRAND 10.4
//! needs a CUDA 13.0 driver; this driver is CUDA 12.4", not the opaque status
//! cuRAND would give. Its [`required_driver`](cudars_core::LibraryError::required_driver)
//! holds the versions.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;
mod generator;

pub use error::{Error, Result};
pub use generator::{Generator, Real, RngKind};
