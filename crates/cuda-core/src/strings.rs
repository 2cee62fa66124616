//! C strings in and out of the compilers and linkers: shared by
//! [`crate::compile`] and [`crate::linker`].

use std::ffi::CString;

use crate::error::{Error, Result};

/// The options as C strings, or [`Error::InvalidArgument`] naming the one with a NUL byte.
pub(crate) fn cstrings(args: Vec<String>, context: &'static str) -> Result<Vec<CString>> {
    args.into_iter()
        .map(|a| {
            CString::new(a).map_err(|e| {
                Error::invalid(context, format!("option {:?} has a NUL byte", e.into_vec()))
            })
        })
        .collect()
}

/// Drops a trailing NUL (NVRTC and NVVM count it in PTX and logs).
pub(crate) fn strip_nul(bytes: &mut Vec<u8>) {
    while bytes.last() == Some(&0) {
        bytes.pop();
    }
}

/// A log's bytes as text, without the trailing NUL.
pub(crate) fn text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}
