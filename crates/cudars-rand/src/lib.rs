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

#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;
mod generator;

pub use error::{Error, Result};
pub use generator::{Generator, Real, RngKind};
