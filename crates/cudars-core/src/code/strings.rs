//! C strings in and out of the compilers and linkers: shared by
//! [`crate::code::compile`], [`crate::code::linker`] and [`crate::code::fatbin`] (options in, logs and
//! outputs out).

use std::ffi::CString;

use crate::code::object::{CodeType, ObjectCode};
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

/// A tool's output of a length it reports first (a log, PTX, a cubin): `size`
/// writes the number of bytes, `get` copies them into a buffer of that many
/// (not called when there are none).
pub(crate) fn sized_output<E>(
    size: impl FnOnce(&mut usize) -> std::result::Result<(), E>,
    get: impl FnOnce(*mut u8) -> std::result::Result<(), E>,
) -> std::result::Result<Vec<u8>, E> {
    let mut n = 0usize;
    size(&mut n)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let mut buf = vec![0u8; n];
    get(buf.as_mut_ptr())?;
    Ok(buf)
}

/// `name` as a C string, or the error of `what` naming it.
pub(crate) fn c_name(name: &str, what: &'static str) -> Result<CString> {
    CString::new(name)
        .map_err(|_| Error::invalid(what, format!("the name {name:?} holds a NUL byte")))
}
