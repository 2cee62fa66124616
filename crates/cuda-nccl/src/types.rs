//! The element types NCCL reduces and moves, and its reduction operators.

use cuda_bindings::nccl as sys;
use cuda_core::half::{bf16, f16};

mod sealed {
    pub trait Sealed {}
}

/// An element type NCCL knows: `i8`, `u8`, `i32`, `u32`, `i64`, `u64`,
/// [`struct@f16`], [`bf16`], `f32` and `f64`. Sealed: NCCL defines the set.
pub trait Element: bytemuck::Pod + sealed::Sealed + Send + Sync {
    /// The element's `ncclDataType_t`.
    const DATA_TYPE: sys::ncclDataType_t;
    /// The type's name, for messages.
    const NAME: &'static str;
}

macro_rules! element {
    ($($t:ty => $dt:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DATA_TYPE: sys::ncclDataType_t = sys::$dt;
            const NAME: &'static str = stringify!($t);
        }
    )*};
}

element!(
    i8 => ncclInt8,
    u8 => ncclUint8,
    i32 => ncclInt32,
    u32 => ncclUint32,
    i64 => ncclInt64,
    u64 => ncclUint64,
    f16 => ncclFloat16,
    bf16 => ncclBfloat16,
    f32 => ncclFloat32,
    f64 => ncclFloat64,
);

/// How a reduction combines the ranks' elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReduceOp {
    /// The sum (`ncclSum`).
    Sum,
    /// The product (`ncclProd`).
    Prod,
    /// The largest element (`ncclMax`).
    Max,
    /// The smallest element (`ncclMin`).
    Min,
    /// The mean over the ranks (`ncclAvg`, NCCL 2.10 and later); integers
    /// round toward zero.
    Avg,
}

impl ReduceOp {
    pub(crate) fn raw(self) -> sys::ncclRedOp_t {
        match self {
            Self::Sum => sys::ncclSum,
            Self::Prod => sys::ncclProd,
            Self::Max => sys::ncclMax,
            Self::Min => sys::ncclMin,
            Self::Avg => sys::ncclAvg,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Sum => "sum",
            Self::Prod => "product",
            Self::Max => "maximum",
            Self::Min => "minimum",
            Self::Avg => "average",
        }
    }
}
