//! Tensor maps for Hopper's tensor memory accelerator (TMA): a 128-byte descriptor
//! of a tiled view of global memory (`cuTensorMapEncodeTiled`), passed to kernels
//! by value (`const __grid_constant__ CUtensorMap`).

use std::ffi::c_void;

use cuda_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{Buffer, KernelArg};

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
    fn raw(self) -> (sys::CUtensorMapDataType, u64) {
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

/// A `CUtensorMap`: 128 bytes, 64-byte aligned, passed to kernels by value.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct TensorMapDescriptor(sys::CUtensorMap);

impl std::fmt::Debug for TensorMapDescriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TensorMapDescriptor(..)")
    }
}

impl TensorMapDescriptor {
    /// Encodes a tiled tensor map over `buffer` (`cuTensorMapEncodeTiled`). The
    /// map holds the buffer's address: keep the buffer alive while kernels use it.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the shape does not fit the buffer or breaks
    /// the TMA rules (rank 1–5, strides multiples of 16, box ≤ 256, address aligned
    /// to 16); the driver's error for what it rejects.
    pub fn tiled(buffer: &Buffer, options: &TensorMapDescriptorOptions) -> Result<Self> {
        let what = "encoding a tensor map";
        let rank = options.global_dims.len();
        if !(1..=5).contains(&rank) || options.box_dims.len() != rank {
            return Err(Error::invalid(
                what,
                "rank must be 1 to 5, with one box extent per dimension",
            ));
        }
        let (dtype, elem) = options.data_type.raw();
        let mut strides = options.global_strides.clone();
        if strides.is_empty() {
            let mut s = elem;
            for d in &options.global_dims[..rank - 1] {
                s = s
                    .checked_mul(*d)
                    .ok_or_else(|| Error::invalid(what, "the tensor is too large"))?;
                strides.push(s);
            }
        }
        if strides.len() != rank - 1 || strides.iter().any(|s| s % 16 != 0) {
            return Err(Error::invalid(
                what,
                "need rank - 1 byte strides, each a multiple of 16",
            ));
        }
        if options.box_dims.iter().any(|&b| b == 0 || b > 256) || buffer.ptr() % 16 != 0 {
            return Err(Error::invalid(
                what,
                "box extents must be 1..=256 and the address 16-byte aligned",
            ));
        }
        let outer = strides.last().copied().unwrap_or(elem);
        let last_dim = options.global_dims[rank - 1];
        let inner_bytes = if rank == 1 {
            elem.saturating_mul(last_dim)
        } else {
            outer.saturating_mul(last_dim)
        };
        if options.global_dims.contains(&0) || inner_bytes > buffer.size() as u64 {
            return Err(Error::invalid(
                what,
                format!(
                    "the tensor needs {inner_bytes} bytes, the buffer holds {}",
                    buffer.size()
                ),
            ));
        }
        let element_strides = if options.element_strides.is_empty() {
            vec![1u32; rank]
        } else {
            options.element_strides.clone()
        };
        if element_strides.len() != rank {
            return Err(Error::invalid(what, "one element stride per dimension"));
        }
        let interleave = match options.interleave {
            TensorMapInterleave::None => sys::CU_TENSOR_MAP_INTERLEAVE_NONE,
            TensorMapInterleave::B16 => sys::CU_TENSOR_MAP_INTERLEAVE_16B,
            TensorMapInterleave::B32 => sys::CU_TENSOR_MAP_INTERLEAVE_32B,
        };
        let swizzle = match options.swizzle {
            TensorMapSwizzle::None => sys::CU_TENSOR_MAP_SWIZZLE_NONE,
            TensorMapSwizzle::B32 => sys::CU_TENSOR_MAP_SWIZZLE_32B,
            TensorMapSwizzle::B64 => sys::CU_TENSOR_MAP_SWIZZLE_64B,
            TensorMapSwizzle::B128 => sys::CU_TENSOR_MAP_SWIZZLE_128B,
        };
        let l2 = match options.l2_promotion {
            TensorMapL2Promotion::None => sys::CU_TENSOR_MAP_L2_PROMOTION_NONE,
            TensorMapL2Promotion::B64 => sys::CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
            TensorMapL2Promotion::B128 => sys::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            TensorMapL2Promotion::B256 => sys::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        };
        let oob = match options.oob_fill {
            TensorMapOobFill::Zero => sys::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            TensorMapOobFill::NanRequestZeroFma => {
                sys::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
            }
        };
        let mut map = sys::CUtensorMap::default();
        // SAFETY: every array holds the counts the driver reads for `rank`; the
        // address is the buffer's.
        unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map,
                dtype,
                rank as u32,
                buffer.ptr() as usize as *mut c_void,
                options.global_dims.as_ptr(),
                strides.as_ptr(),
                options.box_dims.as_ptr(),
                element_strides.as_ptr(),
                interleave,
                swizzle,
                l2,
                oob,
            )
        }
        .check(|| what)?;
        Ok(Self(map))
    }

    /// The raw descriptor.
    pub fn raw(&self) -> &sys::CUtensorMap {
        &self.0
    }
}

// SAFETY: the descriptor is its own 128 bytes, which is what a `CUtensorMap`
// kernel parameter takes.
unsafe impl KernelArg for TensorMapDescriptor {
    fn arg_ptr(&self) -> *const c_void {
        (&self.0 as *const sys::CUtensorMap).cast()
    }
    fn arg_size(&self) -> usize {
        std::mem::size_of::<sys::CUtensorMap>()
    }
}
