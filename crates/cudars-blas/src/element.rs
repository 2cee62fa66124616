//! The element types cuBLAS computes with, and how each maps to its data type,
//! compute type and scalar type.

use cudars_bindings::cublas::{
    CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_64F, CUDA_R_16BF, CUDA_R_16F, CUDA_R_32F, CUDA_R_64F,
    cublasComputeType_t, cudaDataType,
};
use cudars_core::half::{bf16, f16};

mod sealed {
    pub trait Sealed {}
}

/// An element type of the BLAS operations: `f32`, `f64`, [`struct@f16`] and [`bf16`].
///
/// The half types compute in `f32` (cuBLAS's `CUBLAS_COMPUTE_32F`), as is the
/// norm, and take `f32` scalars (`alpha`, `beta`); `f32` and `f64` compute and
/// scale in their own precision. Sealed: cuBLAS defines the set.
pub trait Element: bytemuck::Pod + sealed::Sealed + Send + Sync {
    /// The type of `alpha` and `beta`: `f32` for `f32`, `f16` and `bf16`; `f64` for `f64`.
    type Scalar: bytemuck::Pod + Into<f64>;
    /// The element's `cudaDataType` (`CUDA_R_32F`, …).
    const DATA_TYPE: cudaDataType;
    /// The `cudaDataType` of [`Scalar`](Self::Scalar), also the execution type of
    /// the level-1 operations.
    const SCALAR_TYPE: cudaDataType;
    /// The GEMM compute type.
    const COMPUTE: cublasComputeType_t;
    /// The type's name, for messages.
    const NAME: &'static str;
}

macro_rules! element {
    ($t:ty, $s:ty, $dt:expr, $st:expr, $ct:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            type Scalar = $s;
            const DATA_TYPE: cudaDataType = $dt;
            const SCALAR_TYPE: cudaDataType = $st;
            const COMPUTE: cublasComputeType_t = $ct;
            const NAME: &'static str = stringify!($t);
        }
    };
}

element!(f32, f32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F);
element!(f64, f64, CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F);
element!(f16, f32, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F);
element!(bf16, f32, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F);
