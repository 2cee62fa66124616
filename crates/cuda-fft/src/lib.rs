//! cuFFT for cuda-rs (work in progress).

#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;

pub use error::{Error, Result};
