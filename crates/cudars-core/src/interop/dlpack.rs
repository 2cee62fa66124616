//! DLPack interop: hand a [`Buffer`](crate::Buffer) to another library as a `DLManagedTensor`, and
//! view another library's tensor ([`StridedMemoryView`](crate::StridedMemoryView)) without copying.
//!
//! The C structures ([`DLTensor`], [`DLManagedTensor`], [`DLDevice`],
//! [`DLDeviceType`], [`DLDataType`]) are in this module alone; [`DLPackDType`] is
//! also at the crate root, as is [`StridedMemoryView`](crate::StridedMemoryView) (its own module; its
//! DLPack constructor is there); the export methods and the import are
//! `crate::interop::dlpack_export`'s and `crate::interop::strided`'s. They follow `dlpack.h` (ABI version 0.8/1.x `DLManagedTensor`, the
//! unversioned capsule form that every framework accepts).

use std::ffi::c_void;

use bytemuck::Pod;

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
    /// `int8`.
    pub const I8: Self = Self {
        code: 0,
        bits: 8,
        lanes: 1,
    };
    /// `int16`.
    pub const I16: Self = Self {
        code: 0,
        bits: 16,
        lanes: 1,
    };
    /// `uint8`.
    pub const U8: Self = Self {
        code: 1,
        bits: 8,
        lanes: 1,
    };
    /// `uint16`.
    pub const U16: Self = Self {
        code: 1,
        bits: 16,
        lanes: 1,
    };
    /// `uint32`.
    pub const U32: Self = Self {
        code: 1,
        bits: 32,
        lanes: 1,
    };
    /// `uint64`.
    pub const U64: Self = Self {
        code: 1,
        bits: 64,
        lanes: 1,
    };
    /// `complex64` (two `float32`s).
    pub const C64: Self = Self {
        code: 5,
        bits: 64,
        lanes: 1,
    };
    /// `complex128` (two `float64`s).
    pub const C128: Self = Self {
        code: 5,
        bits: 128,
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

/// An element type with a DLPack dtype: what a typed export
/// ([`ArcView::to_dlpack`](crate::ArcView::to_dlpack)) writes in the tensor's `dtype`. Implemented for the
/// integers of 8 to 64 bits, `f32`, `f64`, and `half::f16` and `half::bf16` (feature `half`).
pub trait DLPackDType: Pod {
    /// The dtype of one element.
    const DTYPE: DLDataType;
}

macro_rules! dlpack_dtypes {
    ($($t:ty => $d:ident),* $(,)?) => {
        $(impl DLPackDType for $t {
            const DTYPE: DLDataType = DLDataType::$d;
        })*
    };
}

dlpack_dtypes!(
    i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    u8 => U8, u16 => U16, u32 => U32, u64 => U64,
    f32 => F32, f64 => F64,
);

#[cfg(feature = "half")]
dlpack_dtypes!(half::f16 => F16, half::bf16 => BF16);

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
