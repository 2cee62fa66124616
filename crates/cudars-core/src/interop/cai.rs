//! The CUDA Array Interface (version 3): [`CudaArrayInterface`], the description a
//! producer's `__cuda_array_interface__` holds, and its NumPy type strings.

use crate::error::{Error, Result};
use crate::interop::dlpack::DLDataType;
use crate::interop::layout::Layout;

/// The CUDA Array Interface, version 3: the description a producer's
/// `__cuda_array_interface__` dictionary holds, as a Rust structure. Build it
/// from what another library hands over and view it with
/// [`StridedMemoryView::from_cuda_array_interface`](crate::StridedMemoryView::from_cuda_array_interface);
/// [`StridedMemoryView::cuda_array_interface`](crate::StridedMemoryView::cuda_array_interface) writes one. The interface's
/// `mask` is not supported (there is no field for it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaArrayInterface {
    /// The extents (`shape`).
    pub shape: Vec<i64>,
    /// The element type (`typestr`), as NumPy writes it: a byte order (`<`
    /// little-endian, `|` not applicable, `=` native, `>` big-endian), a kind
    /// (`b` bool, `i` signed, `u` unsigned, `f` float, `c` complex) and a size
    /// in bytes: `"<f4"`, `"|u1"`, `"<c16"`.
    pub typestr: String,
    /// The address of the first element (`data[0]`); 0 only for an empty
    /// array.
    pub data: u64,
    /// Whether the memory may only be read (`data[1]`).
    pub readonly: bool,
    /// The strides in **bytes** (`strides`), or `None` for compact row-major.
    pub strides: Option<Vec<i64>>,
    /// The producer's stream (`stream`): a `CUstream` handle as an integer,
    /// 1 for the legacy default stream, 2 for the per-thread one, or `None`
    /// when the producer asks for no ordering. 0 is refused, as the interface
    /// requires.
    pub stream: Option<u64>,
    /// The interface's version (`version`): at least 3.
    pub version: u32,
}

impl CudaArrayInterface {
    /// A version 3 description of a writable, compact row-major array with
    /// no producer stream.
    pub fn new(data: u64, shape: &[i64], typestr: &str) -> Self {
        Self {
            shape: shape.to_vec(),
            typestr: typestr.to_owned(),
            data,
            readonly: false,
            strides: None,
            stream: None,
            version: 3,
        }
    }

    /// Checks the description without calling CUDA: the version, the type
    /// string, the layout (byte strides must be whole elements) and the data
    /// address (not null unless the array is empty, the span within 64-bit
    /// addresses), and the stream (not 0). Returns the dtype and the layout in
    /// elements.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming what is wrong.
    pub(crate) fn check(&self) -> Result<(DLDataType, Layout)> {
        self.check_as("reading a CUDA Array Interface description")
    }

    /// [`check`](Self::check), errors saying `what` (the host array interface
    /// shares the description's rules).
    pub(crate) fn check_as(&self, what: &'static str) -> Result<(DLDataType, Layout)> {
        if self.version < 3 {
            return Err(Error::invalid(
                what,
                format!("version {} (version 3 or later is supported)", self.version),
            ));
        }
        if self.stream == Some(0) {
            return Err(Error::invalid(
                what,
                "stream 0 is ambiguous and the interface disallows it (1 is the legacy \
                 default stream, 2 the per-thread one, `None` no ordering)",
            ));
        }
        let dtype = DLDataType::from_typestr(&self.typestr)?;
        let strides = match &self.strides {
            None => None,
            Some(bytes) => {
                let elem = dtype.size_bytes().unwrap_or(1) as i64;
                let mut elements = Vec::with_capacity(bytes.len());
                for &b in bytes {
                    if b % elem != 0 {
                        return Err(Error::invalid(
                            what,
                            format!(
                                "a stride of {b} bytes is not a whole number of \
                                 {elem}-byte elements"
                            ),
                        ));
                    }
                    elements.push(b / elem);
                }
                Some(elements)
            }
        };
        let layout = Layout::check(&self.shape, strides.as_deref(), dtype, None, what)?;
        if self.data == 0 && layout.len != 0 {
            return Err(Error::invalid(
                what,
                "the data address is null and the array is not empty",
            ));
        }
        if self.data.checked_add(layout.span).is_none() {
            return Err(Error::out_of_range(
                what,
                format!(
                    "{} bytes from address {:#x} pass the end of the address space",
                    layout.span, self.data
                ),
            ));
        }
        Ok((dtype, layout))
    }
}

impl DLDataType {
    /// The dtype of a CUDA Array Interface (NumPy) type string: `"<f4"` is
    /// [`F32`](Self::F32), `"|b1"` [`BOOL`](Self::BOOL), `"<c8"`
    /// [`C64`](Self::C64).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a string that is not a byte order, a
    /// kind and a size in decimal without leading zeros; a big-endian multi-byte type (CUDA devices are
    /// little-endian); `|` on a multi-byte type; a kind or size with no DLPack
    /// dtype (`b` of more than one byte, `f1`, `c4`, `V`, `M`, `O`, …).
    pub fn from_typestr(typestr: &str) -> Result<Self> {
        const WHAT: &str = "reading a CUDA Array Interface type string";
        let bad = |why: &str| Error::invalid(WHAT, format!("`{typestr}`: {why}"));
        let mut chars = typestr.chars();
        let (Some(order), Some(kind)) = (chars.next(), chars.next()) else {
            return Err(bad("too short (a byte order, a kind and a size, as `<f4`)"));
        };
        let digits = chars.as_str();
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad("the size after the kind is not a number of bytes"));
        }
        if digits.starts_with('0') {
            return Err(bad("the size has a leading zero"));
        }
        let size: u32 = digits
            .parse()
            .map_err(|_| bad("the size does not fit in 32 bits"))?;
        match order {
            '<' => {}
            '=' if cfg!(target_endian = "little") => {}
            '|' | '>' if size == 1 => {}
            '|' => return Err(bad("`|` (no byte order) on a multi-byte type")),
            '>' | '=' => {
                return Err(bad("big-endian elements (CUDA devices are little-endian)"));
            }
            _ => return Err(bad("the byte order is not one of `<`, `>`, `|`, `=`")),
        }
        let (code, sizes): (u8, &[u32]) = match kind {
            'b' => (6, &[1]),
            'i' => (0, &[1, 2, 4, 8]),
            'u' => (1, &[1, 2, 4, 8]),
            'f' => (2, &[2, 4, 8]),
            'c' => (5, &[8, 16]),
            _ => {
                return Err(bad(
                    "the kind is not one of `b`, `i`, `u`, `f`, `c` (the ones with a DLPack dtype)",
                ));
            }
        };
        if !sizes.contains(&size) {
            return Err(bad(&format!(
                "no DLPack dtype of kind `{kind}` has {size} bytes"
            )));
        }
        Ok(Self {
            code,
            // At most 16 bytes, checked above.
            bits: (size * 8) as u8,
            lanes: 1,
        })
    }

    /// The CUDA Array Interface (NumPy) type string of this dtype (`"<f4"`,
    /// `"|u1"`), or `None` for one the interface has no string for
    /// (`bfloat16`, several lanes, other codes).
    pub fn typestr(self) -> Option<String> {
        if self.lanes != 1 {
            return None;
        }
        let kind = match (self.code, self.bits) {
            (6, 8) => 'b',
            (0, 8 | 16 | 32 | 64) => 'i',
            (1, 8 | 16 | 32 | 64) => 'u',
            (2, 16 | 32 | 64) => 'f',
            (5, 64 | 128) => 'c',
            _ => return None,
        };
        let bytes = self.bits / 8;
        let order = if bytes == 1 { '|' } else { '<' };
        Some(format!("{order}{kind}{bytes}"))
    }
}
