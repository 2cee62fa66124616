//! What a tensor map is made from: element types, interleave, swizzle, L2
//! promotion, out-of-bounds fill and the options of the tiled, im2col and
//! im2col-wide forms, each with the driver's value.

use cudars_bindings::driver as sys;

/// The element type of a tensor map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TensorMapDataType {
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `u32`.
    U32,
    /// `i32`.
    I32,
    /// `u64`.
    U64,
    /// `i64`.
    I64,
    /// `f16`.
    F16,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// `bf16`.
    BF16,
    /// `f32`, flushing denormals.
    F32Ftz,
    /// `tf32`.
    TF32,
}

impl TensorMapDataType {
    /// The driver's value (`CUtensorMapDataType`; `cuda.core`'s enum member's
    /// integer).
    pub fn to_raw(self) -> u32 {
        self.raw().0.0
    }

    pub(crate) fn raw(self) -> (sys::CUtensorMapDataType, u64) {
        match self {
            Self::U8 => (sys::CU_TENSOR_MAP_DATA_TYPE_UINT8, 1),
            Self::U16 => (sys::CU_TENSOR_MAP_DATA_TYPE_UINT16, 2),
            Self::U32 => (sys::CU_TENSOR_MAP_DATA_TYPE_UINT32, 4),
            Self::I32 => (sys::CU_TENSOR_MAP_DATA_TYPE_INT32, 4),
            Self::U64 => (sys::CU_TENSOR_MAP_DATA_TYPE_UINT64, 8),
            Self::I64 => (sys::CU_TENSOR_MAP_DATA_TYPE_INT64, 8),
            Self::F16 => (sys::CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2),
            Self::F32 => (sys::CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4),
            Self::F64 => (sys::CU_TENSOR_MAP_DATA_TYPE_FLOAT64, 8),
            Self::BF16 => (sys::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2),
            Self::F32Ftz => (sys::CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ, 4),
            Self::TF32 => (sys::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, 4),
        }
    }
}

/// Interleaving of the innermost dimension.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TensorMapInterleave {
    /// None (the default).
    #[default]
    None,
    /// 16-byte interleave.
    B16,
    /// 32-byte interleave.
    B32,
}

/// Shared-memory swizzling of the copied box.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TensorMapSwizzle {
    /// None (the default).
    #[default]
    None,
    /// 32-byte swizzle.
    B32,
    /// 64-byte swizzle.
    B64,
    /// 128-byte swizzle.
    B128,
}

/// L2 promotion of the loads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TensorMapL2Promotion {
    /// None (the default).
    #[default]
    None,
    /// 64 bytes.
    B64,
    /// 128 bytes.
    B128,
    /// 256 bytes.
    B256,
}

/// What out-of-bounds elements read as.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TensorMapOobFill {
    /// Zeros (the default).
    #[default]
    Zero,
    /// NaN, requesting zero for FMA.
    NanRequestZeroFma,
}

/// The layout of a tiled tensor map: `rank` (1–5) dimensions, innermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorMapDescriptorOptions {
    /// Element type.
    pub data_type: TensorMapDataType,
    /// Extent of each dimension, in elements (innermost first).
    pub global_dims: Vec<u64>,
    /// Byte stride of each dimension but the innermost (`rank - 1` entries;
    /// multiples of 16). Empty: packed.
    pub global_strides: Vec<u64>,
    /// The box copied per request, in elements (each ≤ 256).
    pub box_dims: Vec<u32>,
    /// Traversal stride per dimension (1–8); empty: all 1.
    pub element_strides: Vec<u32>,
    /// Interleave.
    pub interleave: TensorMapInterleave,
    /// Swizzle.
    pub swizzle: TensorMapSwizzle,
    /// L2 promotion.
    pub l2_promotion: TensorMapL2Promotion,
    /// Out-of-bounds fill.
    pub oob_fill: TensorMapOobFill,
}

impl TensorMapDescriptorOptions {
    /// Options of a packed tiled map of `data_type` elements with extents
    /// `global_dims` and box `box_dims` (both innermost first, the driver's
    /// order), every other field at its default: for struct update syntax,
    /// `TensorMapDescriptorOptions { swizzle, ..TensorMapDescriptorOptions::new(…) }`.
    pub fn new(data_type: TensorMapDataType, global_dims: &[u64], box_dims: &[u32]) -> Self {
        Self {
            data_type,
            global_dims: global_dims.to_vec(),
            global_strides: Vec::new(),
            box_dims: box_dims.to_vec(),
            element_strides: Vec::new(),
            interleave: TensorMapInterleave::default(),
            swizzle: TensorMapSwizzle::default(),
            l2_promotion: TensorMapL2Promotion::default(),
            oob_fill: TensorMapOobFill::default(),
        }
    }
}

/// Which elements an im2col-wide tensor map loads per pixel
/// ([`TensorMapIm2colWideOptions::mode`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TensorMapIm2colWideMode {
    /// 32 elements along W (the default).
    #[default]
    W,
    /// 128 elements along W.
    W128,
}

impl TensorMapInterleave {
    /// The driver's value (`CUtensorMapInterleave`; `cuda.core`'s enum member's integer).
    pub fn to_raw(self) -> u32 {
        self.raw().0
    }

    pub(crate) fn raw(self) -> sys::CUtensorMapInterleave {
        match self {
            Self::None => sys::CU_TENSOR_MAP_INTERLEAVE_NONE,
            Self::B16 => sys::CU_TENSOR_MAP_INTERLEAVE_16B,
            Self::B32 => sys::CU_TENSOR_MAP_INTERLEAVE_32B,
        }
    }

    /// The alignment, in bytes, of the address and strides.
    pub(crate) fn alignment(self) -> u64 {
        if self == Self::B32 { 32 } else { 16 }
    }
}

impl TensorMapSwizzle {
    /// The driver's value (`CUtensorMapSwizzle`; `cuda.core`'s enum member's integer).
    pub fn to_raw(self) -> u32 {
        self.raw().0
    }

    pub(crate) fn raw(self) -> sys::CUtensorMapSwizzle {
        match self {
            Self::None => sys::CU_TENSOR_MAP_SWIZZLE_NONE,
            Self::B32 => sys::CU_TENSOR_MAP_SWIZZLE_32B,
            Self::B64 => sys::CU_TENSOR_MAP_SWIZZLE_64B,
            Self::B128 => sys::CU_TENSOR_MAP_SWIZZLE_128B,
        }
    }

    /// The most bytes the inner box dimension may span, for a swizzle.
    pub(crate) fn span(self) -> Option<u64> {
        match self {
            Self::None => None,
            Self::B32 => Some(32),
            Self::B64 => Some(64),
            Self::B128 => Some(128),
        }
    }
}

impl TensorMapL2Promotion {
    /// The driver's value (`CUtensorMapL2promotion`; `cuda.core`'s enum member's integer).
    pub fn to_raw(self) -> u32 {
        self.raw().0
    }

    pub(crate) fn raw(self) -> sys::CUtensorMapL2promotion {
        match self {
            Self::None => sys::CU_TENSOR_MAP_L2_PROMOTION_NONE,
            Self::B64 => sys::CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
            Self::B128 => sys::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            Self::B256 => sys::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        }
    }
}

impl TensorMapOobFill {
    /// The driver's value (`CUtensorMapFloatOOBfill`; `cuda.core`'s enum member's integer).
    pub fn to_raw(self) -> u32 {
        self.raw().0
    }

    pub(crate) fn raw(self) -> sys::CUtensorMapFloatOOBfill {
        match self {
            Self::Zero => sys::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            Self::NanRequestZeroFma => sys::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA,
        }
    }
}

impl TensorMapIm2colWideMode {
    /// The driver's value (`CUtensorMapIm2ColWideMode`; `cuda.core`'s enum member's integer).
    pub fn to_raw(self) -> u32 {
        self.raw().0
    }

    pub(crate) fn raw(self) -> sys::CUtensorMapIm2ColWideMode {
        match self {
            Self::W => sys::CU_TENSOR_MAP_IM2COL_WIDE_MODE_W,
            Self::W128 => sys::CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128,
        }
    }
}

/// The layout of an im2col tensor map (`cuTensorMapEncodeIm2col`): a tensor of
/// rank 3 to 5, innermost dimension first (`[C, W, N]`, `[C, W, H, N]`,
/// `[C, W, H, D, N]`), read as columns of `pixels_per_column` pixels of
/// `channels_per_pixel` channels each, from a bounding box of pixels given by
/// two corners relative to each output pixel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorMapIm2colOptions {
    /// Element type.
    pub data_type: TensorMapDataType,
    /// Extent of each dimension, in elements (innermost first: channels,
    /// then the spatial dimensions W, H, D, then the batch).
    pub global_dims: Vec<u64>,
    /// Byte stride of each dimension but the innermost (`rank - 1` entries;
    /// multiples of 16, of 32 with [`TensorMapInterleave::B32`]). Empty: packed.
    pub global_strides: Vec<u64>,
    /// The bounding box's lower corner, one offset per spatial dimension
    /// (`rank - 2` entries, W first). The range depends on the rank: ±2^15
    /// for rank 3, ±2^7 for rank 4, ±2^4 for rank 5 (the upper bound one less).
    pub pixel_box_lower_corner: Vec<i32>,
    /// The bounding box's upper corner, as the lower one.
    pub pixel_box_upper_corner: Vec<i32>,
    /// Channels loaded per pixel (1–256).
    pub channels_per_pixel: u32,
    /// Pixels loaded per column (1–1024).
    pub pixels_per_column: u32,
    /// Traversal stride per dimension (1–8); empty: all 1.
    pub element_strides: Vec<u32>,
    /// Interleave.
    pub interleave: TensorMapInterleave,
    /// Swizzle.
    pub swizzle: TensorMapSwizzle,
    /// L2 promotion.
    pub l2_promotion: TensorMapL2Promotion,
    /// Out-of-bounds fill.
    pub oob_fill: TensorMapOobFill,
}

/// The layout of an im2col-wide tensor map (`cuTensorMapEncodeIm2colWide`, CUDA
/// 12.8 drivers and compute capability 10.0 or newer): as
/// [`TensorMapIm2colOptions`], but pixels are taken along W only, between two
/// W offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorMapIm2colWideOptions {
    /// Element type.
    pub data_type: TensorMapDataType,
    /// Extent of each dimension, in elements, innermost first (rank 3 to 5).
    pub global_dims: Vec<u64>,
    /// Byte stride of each dimension but the innermost; empty: packed.
    pub global_strides: Vec<u64>,
    /// The bounding box's lower W offset (−2^15 to 2^15 − 1).
    pub pixel_box_lower_corner_width: i32,
    /// The bounding box's upper W offset (−2^15 to 2^15 − 1).
    pub pixel_box_upper_corner_width: i32,
    /// Channels loaded per pixel (1–256).
    pub channels_per_pixel: u32,
    /// Pixels loaded per column (1–1024).
    pub pixels_per_column: u32,
    /// Traversal stride per dimension (1–8); empty: all 1.
    pub element_strides: Vec<u32>,
    /// Interleave.
    pub interleave: TensorMapInterleave,
    /// How many elements along W each pixel loads.
    pub mode: TensorMapIm2colWideMode,
    /// Swizzle (Python's default for this kind is [`TensorMapSwizzle::B128`]).
    pub swizzle: TensorMapSwizzle,
    /// L2 promotion.
    pub l2_promotion: TensorMapL2Promotion,
    /// Out-of-bounds fill.
    pub oob_fill: TensorMapOobFill,
}
