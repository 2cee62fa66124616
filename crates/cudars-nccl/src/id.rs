//! [`UniqueId`]: the token that lets ranks in several processes find each other.

use std::fmt;
use std::str::FromStr;

use cudars_bindings::nccl as sys;
use cudars_core::InvalidKind;

use crate::error::{Error, Result, check};

/// The size of a [`UniqueId`] in bytes (`NCCL_UNIQUE_ID_BYTES`).
pub const UNIQUE_ID_BYTES: usize = sys::NCCL_UNIQUE_ID_BYTES as usize;

/// NCCL's unique id (`ncclUniqueId`): made once, by one rank, and handed to every
/// other rank of the communicator (over a file, a socket, MPI) before each calls
/// [`Communicator::init_rank`](crate::Communicator::init_rank).
///
/// It is 128 opaque bytes. [`as_bytes`](Self::as_bytes) and
/// [`from_bytes`](Self::from_bytes) carry it as bytes; its [`Display`](fmt::Display)
/// form is lowercase hexadecimal, which [`FromStr`] reads back, for text channels
/// (a file, an environment variable, a command line).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct UniqueId {
    bytes: [u8; UNIQUE_ID_BYTES],
}

impl UniqueId {
    /// A new id (`ncclGetUniqueId`). NCCL opens its bootstrap listener here: the
    /// process that makes the id must stay alive until every rank has joined.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when NCCL cannot be loaded; NCCL's error (no usable
    /// network interface, say).
    pub fn new() -> Result<Self> {
        let mut raw = sys::ncclUniqueId::default();
        // SAFETY: `raw` is valid for writes of one `ncclUniqueId`.
        let status = unsafe { sys::ncclGetUniqueId(&mut raw) };
        check(status, || "making a NCCL unique id".into())?;
        Ok(Self::from_raw(&raw))
    }

    /// The id's bytes.
    pub fn as_bytes(&self) -> &[u8; UNIQUE_ID_BYTES] {
        &self.bytes
    }

    /// The id from bytes another rank sent.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] ([`InvalidKind::OutOfRange`]) unless `bytes`
    /// holds exactly [`UNIQUE_ID_BYTES`] bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let bytes: [u8; UNIQUE_ID_BYTES] = bytes.try_into().map_err(|_| {
            Error::invalid(
                "reading a NCCL unique id",
                InvalidKind::OutOfRange,
                format!("an id is {UNIQUE_ID_BYTES} bytes, not {}", bytes.len()),
            )
        })?;
        Ok(Self { bytes })
    }

    pub(crate) fn raw(&self) -> sys::ncclUniqueId {
        let mut raw = sys::ncclUniqueId::default();
        for (d, s) in raw.internal.iter_mut().zip(self.bytes) {
            *d = s as _;
        }
        raw
    }

    fn from_raw(raw: &sys::ncclUniqueId) -> Self {
        let mut bytes = [0; UNIQUE_ID_BYTES];
        for (d, s) in bytes.iter_mut().zip(raw.internal) {
            *d = s as u8;
        }
        Self { bytes }
    }
}

impl fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The id holds the bootstrap address: show a prefix, not a secret-looking blob.
        write!(f, "UniqueId(")?;
        for b in &self.bytes[..8] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "…)")
    }
}

impl fmt::Display for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in &self.bytes {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl FromStr for UniqueId {
    type Err = Error;

    /// Reads the [`Display`](fmt::Display) form: 256 hexadecimal digits
    /// (surrounding whitespace is ignored).
    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim();
        let bad = |message: String| {
            Error::invalid("reading a NCCL unique id", InvalidKind::Other, message)
        };
        if s.len() != 2 * UNIQUE_ID_BYTES {
            return Err(bad(format!(
                "an id is {} hexadecimal digits, not {}",
                2 * UNIQUE_ID_BYTES,
                s.len()
            )));
        }
        let mut bytes = [0u8; UNIQUE_ID_BYTES];
        for (i, pair) in s.as_bytes().chunks_exact(2).enumerate() {
            let digit = |c: u8| (c as char).to_digit(16);
            match (digit(pair[0]), digit(pair[1])) {
                (Some(h), Some(l)) => bytes[i] = (h * 16 + l) as u8,
                _ => {
                    return Err(bad(format!(
                        "byte {i} is {:?}, not two hexadecimal digits",
                        String::from_utf8_lossy(pair)
                    )));
                }
            }
        }
        Ok(Self { bytes })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn bytes_and_text_round_trip() {
        let bytes: Vec<u8> = (0..UNIQUE_ID_BYTES).map(|i| (i * 7 + 3) as u8).collect();
        let id = UniqueId::from_bytes(&bytes).unwrap();
        assert_eq!(&id.as_bytes()[..], &bytes[..]);
        let text = id.to_string();
        assert_eq!(text.len(), 256);
        assert_eq!(&text[..6], "030a11");
        assert_eq!(format!(" {text}\n").parse::<UniqueId>().unwrap(), id);
        assert_eq!(UniqueId::from_raw(&id.raw()), id);
        assert!(format!("{id:?}").starts_with("UniqueId(030a11"));
    }

    #[test]
    fn malformed_ids_are_typed_errors() {
        let e = UniqueId::from_bytes(&[0; 127]).unwrap_err();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange));
        assert!(e.to_string().contains("not 127"), "{e}");
        let e = "abc".parse::<UniqueId>().unwrap_err();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::Other));
        let mut text = "00".repeat(UNIQUE_ID_BYTES);
        text.replace_range(10..12, "zz");
        let e = text.parse::<UniqueId>().unwrap_err();
        assert!(e.to_string().contains("byte 5"), "{e}");
        // Non-ASCII input of the right byte length is refused, not split mid-character.
        let text = "é".repeat(UNIQUE_ID_BYTES);
        assert!(text.parse::<UniqueId>().is_err());
    }
}
