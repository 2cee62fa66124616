//! DLPack interop: hand a [`Buffer`] to another library as a `DLManagedTensor`, and
//! view another library's tensor ([`StridedMemoryView`]) without copying.
//!
//! The C structures follow `dlpack.h` (ABI version 0.8/1.x `DLManagedTensor`, the
//! unversioned capsule form that every framework accepts).

use std::ffi::c_void;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::{Buffer, MemoryKind};

/// `DLDeviceType`: where a tensor's memory lives.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DLDeviceType(pub i32);

impl DLDeviceType {
    /// Host memory.
    pub const CPU: Self = Self(1);
    /// CUDA device memory.
    pub const CUDA: Self = Self(2);
    /// Pinned host memory visible to CUDA.
    pub const CUDA_HOST: Self = Self(3);
    /// CUDA managed memory.
    pub const CUDA_MANAGED: Self = Self(13);
}

/// `DLDevice`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DLDevice {
    /// The kind of device.
    pub device_type: DLDeviceType,
    /// The device ordinal.
    pub device_id: i32,
}

/// `DLDataType`: element type code, bits and lanes.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DLDataType {
    /// 0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool.
    pub code: u8,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes (1 for scalars).
    pub lanes: u16,
}

impl DLDataType {
    /// `float32`.
    pub const F32: Self = Self {
        code: 2,
        bits: 32,
        lanes: 1,
    };
    /// `float64`.
    pub const F64: Self = Self {
        code: 2,
        bits: 64,
        lanes: 1,
    };
    /// `float16`.
    pub const F16: Self = Self {
        code: 2,
        bits: 16,
        lanes: 1,
    };
    /// `bfloat16`.
    pub const BF16: Self = Self {
        code: 4,
        bits: 16,
        lanes: 1,
    };
    /// `int32`.
    pub const I32: Self = Self {
        code: 0,
        bits: 32,
        lanes: 1,
    };
    /// `int64`.
    pub const I64: Self = Self {
        code: 0,
        bits: 64,
        lanes: 1,
    };
    /// `uint8`.
    pub const U8: Self = Self {
        code: 1,
        bits: 8,
        lanes: 1,
    };
    /// `bool` (one byte).
    pub const BOOL: Self = Self {
        code: 6,
        bits: 8,
        lanes: 1,
    };

    /// Bytes per element, when whole.
    pub fn size_bytes(self) -> Option<usize> {
        let bits = usize::from(self.bits) * usize::from(self.lanes);
        (bits % 8 == 0 && bits > 0).then_some(bits / 8)
    }
}

/// `DLTensor`.
#[repr(C)]
#[derive(Debug)]
pub struct DLTensor {
    /// The data pointer (a device address for CUDA memory).
    pub data: *mut c_void,
    /// Where the data lives.
    pub device: DLDevice,
    /// Number of dimensions.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// `ndim` extents.
    pub shape: *mut i64,
    /// `ndim` strides in elements, or null for a compact row-major tensor.
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// `DLManagedTensor`: a tensor plus the producer's deleter.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The tensor.
    pub dl_tensor: DLTensor,
    /// The producer's context for `deleter`.
    pub manager_ctx: *mut c_void,
    /// Called once by the consumer when done (may be null).
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// What an exported tensor owns: the buffer and the shape/stride arrays.
struct Export {
    tensor: DLManagedTensor,
    _shape: Vec<i64>,
    _strides: Vec<i64>,
    _buffer: Arc<Buffer>,
}

unsafe extern "C" fn export_deleter(t: *mut DLManagedTensor) {
    if t.is_null() {
        return;
    }
    // SAFETY: `t` came from `Buffer::to_dlpack`, so it lives inside a leaked
    // `Export` whose address is in `manager_ctx`; DLPack calls the deleter once.
    let ctx = unsafe { (*t).manager_ctx };
    // SAFETY: `manager_ctx` is the `Box<Export>` leaked by `to_dlpack`.
    drop(unsafe { Box::from_raw(ctx.cast::<Export>()) });
}

fn device_of(b: &Buffer) -> DLDevice {
    let device_type = match b.kind() {
        MemoryKind::Pinned => DLDeviceType::CUDA_HOST,
        MemoryKind::Managed => DLDeviceType::CUDA_MANAGED,
        _ => DLDeviceType::CUDA,
    };
    DLDevice {
        device_type,
        device_id: b.device().ordinal() as i32,
    }
}

fn row_major(shape: &[i64]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1].saturating_mul(shape[i + 1].max(1));
    }
    strides
}

/// The span of bytes a strided tensor touches, or an error for negative extents
/// or strides and for a span that does not fit in 64 bits.
fn extent_bytes(shape: &[i64], strides: &[i64], elem: usize) -> Result<u64> {
    let what = "describing a strided tensor";
    if shape.iter().any(|&s| s < 0) {
        return Err(Error::invalid(what, "a negative extent"));
    }
    if shape.contains(&0) {
        return Ok(0);
    }
    let too_large = || Error::invalid(what, "the tensor spans more bytes than 64 bits count");
    let mut last: u64 = 0;
    for (&n, &st) in shape.iter().zip(strides) {
        let Ok(st) = u64::try_from(st) else {
            return Err(Error::invalid(what, "negative strides are not supported"));
        };
        // `n` is at least 1 here.
        let step = (n.unsigned_abs() - 1)
            .checked_mul(st)
            .ok_or_else(too_large)?;
        last = last.checked_add(step).ok_or_else(too_large)?;
    }
    last.checked_add(1)
        .and_then(|elements| elements.checked_mul(elem as u64))
        .ok_or_else(too_large)
}

/// The number of elements of `shape` (non-negative extents), or `None` when it
/// does not fit in 64 bits.
fn element_count(shape: &[i64]) -> Option<u64> {
    shape
        .iter()
        .try_fold(1u64, |count, &n| count.checked_mul(u64::try_from(n).ok()?))
}

impl Buffer {
    /// Exports the buffer as a DLPack tensor of `shape` (row-major) and `dtype`.
    /// The tensor keeps the buffer alive until the consumer calls its deleter.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the tensor does not fit in the buffer or the
    /// dtype has no whole byte size.
    pub fn to_dlpack(
        self: &Arc<Self>,
        shape: &[i64],
        dtype: DLDataType,
    ) -> Result<*mut DLManagedTensor> {
        let what = "exporting a buffer as a DLPack tensor";
        let elem = dtype
            .size_bytes()
            .ok_or_else(|| Error::invalid(what, "the dtype is not a whole number of bytes"))?;
        let ndim =
            i32::try_from(shape.len()).map_err(|_| Error::invalid(what, "too many dimensions"))?;
        let strides = row_major(shape);
        let need = extent_bytes(shape, &strides, elem)?;
        if need > self.size() as u64 {
            return Err(Error::out_of_range(
                what,
                format!(
                    "{need} bytes do not fit in a buffer of {} bytes",
                    self.size()
                ),
            ));
        }
        let mut export = Box::new(Export {
            tensor: DLManagedTensor {
                dl_tensor: DLTensor {
                    data: self.ptr() as usize as *mut c_void,
                    device: device_of(self),
                    ndim,
                    dtype,
                    shape: std::ptr::null_mut(),
                    strides: std::ptr::null_mut(),
                    byte_offset: 0,
                },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(export_deleter),
            },
            _shape: shape.to_vec(),
            _strides: strides,
            _buffer: self.clone(),
        });
        export.tensor.dl_tensor.shape = export._shape.as_mut_ptr();
        export.tensor.dl_tensor.strides = export._strides.as_mut_ptr();
        let raw = Box::into_raw(export);
        // SAFETY: `raw` is a live, leaked `Export`; the deleter reclaims it.
        unsafe {
            (*raw).tensor.manager_ctx = raw.cast();
            Ok(&raw mut (*raw).tensor)
        }
    }
}

/// A view of another library's tensor: address, shape, strides (in elements),
/// dtype and device. It owns the tensor it was made from and calls its deleter on
/// drop.
#[derive(Debug)]
pub struct StridedMemoryView {
    ptr: u64,
    /// The number of elements (checked to fit when imported).
    len: u64,
    shape: Vec<i64>,
    strides: Vec<i64>,
    dtype: DLDataType,
    device: DLDevice,
    managed: *mut DLManagedTensor,
}

// SAFETY: the view owns the managed tensor; DLPack lets the consumer release it
// from any thread.
unsafe impl Send for StridedMemoryView {}
// SAFETY: the view's accessors only read its own copies of the metadata.
unsafe impl Sync for StridedMemoryView {}

impl StridedMemoryView {
    /// Takes ownership of a DLPack tensor.
    ///
    /// # Safety
    /// `tensor` must be a valid `DLManagedTensor` whose deleter has not been called,
    /// not used by anyone else afterwards; its `shape` (and `strides` if not null)
    /// must hold `ndim` entries.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a null tensor, a negative `ndim`, a null
    /// `shape` with `ndim > 0`, negative extents or strides, a dtype with no whole
    /// byte size, or a tensor whose span in bytes or number of elements does not
    /// fit in 64 bits; the tensor is
    /// released (its deleter called) in every error case but the null one.
    pub unsafe fn from_dlpack(tensor: *mut DLManagedTensor) -> Result<Self> {
        let what = "importing a DLPack tensor";
        if tensor.is_null() {
            return Err(Error::invalid(what, "the tensor pointer is null"));
        }
        let release = |t: *mut DLManagedTensor| {
            // SAFETY: per the contract, `t` is live and its deleter not yet called.
            if let Some(d) = unsafe { (*t).deleter } {
                // SAFETY: as above; called once.
                unsafe { d(t) };
            }
        };
        // SAFETY: per the contract.
        let t = unsafe { &(*tensor).dl_tensor };
        let Ok(ndim) = usize::try_from(t.ndim) else {
            release(tensor);
            return Err(Error::invalid(what, "a negative ndim"));
        };
        let Some(elem) = t.dtype.size_bytes() else {
            release(tensor);
            return Err(Error::invalid(
                what,
                "the dtype is not a whole number of bytes",
            ));
        };
        let shape: Vec<i64> = if ndim == 0 {
            Vec::new()
        } else if t.shape.is_null() {
            release(tensor);
            return Err(Error::invalid(what, "the shape pointer is null"));
        } else {
            // SAFETY: per the contract, `shape` holds `ndim` entries.
            unsafe { std::slice::from_raw_parts(t.shape, ndim) }.to_vec()
        };
        let strides = if t.strides.is_null() || ndim == 0 {
            row_major(&shape)
        } else {
            // SAFETY: per the contract, `strides` holds `ndim` entries.
            unsafe { std::slice::from_raw_parts(t.strides, ndim) }.to_vec()
        };
        if let Err(e) = extent_bytes(&shape, &strides, elem) {
            release(tensor);
            return Err(e);
        }
        // Zero strides can make a tensor of many elements span a few bytes.
        let Some(len) = element_count(&shape) else {
            release(tensor);
            return Err(Error::invalid(
                what,
                "the number of elements does not fit in 64 bits",
            ));
        };
        Ok(Self {
            ptr: (t.data as u64).wrapping_add(t.byte_offset),
            len,
            shape,
            strides,
            dtype: t.dtype,
            device: t.device,
            managed: tensor,
        })
    }

    /// The address of the first element (a device address for CUDA memory).
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// The extents.
    pub fn shape(&self) -> &[i64] {
        &self.shape
    }

    /// The strides, in elements.
    pub fn strides(&self) -> &[i64] {
        &self.strides
    }

    /// The element type.
    pub fn dtype(&self) -> DLDataType {
        self.dtype
    }

    /// Where the memory lives.
    pub fn device(&self) -> DLDevice {
        self.device
    }

    /// The number of elements.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the elements are compact and row-major.
    pub fn is_c_contiguous(&self) -> bool {
        self.strides == row_major(&self.shape)
    }

    /// Bytes from the first to one past the last element.
    pub fn extent_bytes(&self) -> u64 {
        extent_bytes(
            &self.shape,
            &self.strides,
            self.dtype.size_bytes().unwrap_or(1),
        )
        .unwrap_or(0)
    }
}

impl Drop for StridedMemoryView {
    fn drop(&mut self) {
        // SAFETY: the view owns the tensor; its deleter runs once, here.
        if let Some(d) = unsafe { (*self.managed).deleter } {
            // SAFETY: as above.
            unsafe { d(self.managed) };
        }
    }
}
