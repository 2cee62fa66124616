//! C strings in and out of the compilers and linkers: shared by
//! [`crate::compile`], [`crate::linker`] and [`crate::fatbin`].

use std::ffi::CString;

use crate::error::{Error, Result};
use crate::object::{CodeType, ObjectCode};

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

/// An input's bytes as the linkers and nvFatbin want them: PTX NUL-terminated.
pub(crate) fn input_bytes(input: &ObjectCode) -> Vec<u8> {
    let mut bytes = input.code().to_vec();
    if input.code_type() == CodeType::Ptx && bytes.last() != Some(&0) {
        bytes.push(0);
    }
    bytes
}

/// An input's name as a C string (a NUL in it shown as `?`).
pub(crate) fn input_name(input: &ObjectCode) -> CString {
    CString::new(input.name().replace('\0', "?")).unwrap_or_default()
}
