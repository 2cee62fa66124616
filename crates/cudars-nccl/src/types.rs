//! The element types NCCL reduces and moves, and its reduction operators.

use std::marker::PhantomData;

use cudars_bindings::nccl as sys;
use cudars_core::InvalidKind;
use cudars_core::half::{bf16, f16};

use crate::comm::Communicator;
use crate::error::{Result, check, check_since};

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

/// The reduction an operation applies: a built-in [`ReduceOp`] or a
/// communicator's [`CustomOp`]. Every method taking a reduction takes either
/// (`ReduceOp::Sum`, `&custom`); `'a` keeps a custom operator alive while an
/// operation (or a [`Group`](crate::Group) holding it) may still be issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reduction<'a> {
    kind: RedKind,
    _op: PhantomData<&'a ()>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RedKind {
    Builtin(ReduceOp),
    Custom {
        raw: sys::ncclRedOp_t,
        comm: sys::ncclComm_t,
        data_type: sys::ncclDataType_t,
        type_name: &'static str,
    },
}

impl From<ReduceOp> for Reduction<'_> {
    fn from(op: ReduceOp) -> Self {
        Self {
            kind: RedKind::Builtin(op),
            _op: PhantomData,
        }
    }
}

impl<'a, T: Element> From<&'a CustomOp<'_, T>> for Reduction<'a> {
    fn from(op: &'a CustomOp<'_, T>) -> Self {
        Self {
            kind: RedKind::Custom {
                raw: op.raw,
                comm: op.comm.raw,
                data_type: T::DATA_TYPE,
                type_name: T::NAME,
            },
            _op: PhantomData,
        }
    }
}

impl Reduction<'_> {
    pub(crate) fn raw(self) -> sys::ncclRedOp_t {
        match self.kind {
            RedKind::Builtin(op) => op.raw(),
            RedKind::Custom { raw, .. } => raw,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self.kind {
            RedKind::Builtin(op) => op.name(),
            RedKind::Custom { .. } => "pre-multiplied sum",
        }
    }

    /// Checks that a custom operator is used on its own communicator and on the
    /// element type it was made for (a built-in one fits anything).
    pub(crate) fn check_use(
        self,
        comm: sys::ncclComm_t,
        data_type: sys::ncclDataType_t,
        type_name: &str,
    ) -> Result<(), (InvalidKind, String)> {
        match self.kind {
            RedKind::Builtin(_) => Ok(()),
            RedKind::Custom { comm: own, .. } if own != comm => Err((
                InvalidKind::Other,
                "the reduction operator was made by another communicator".into(),
            )),
            RedKind::Custom {
                data_type: made_for,
                type_name: made_name,
                ..
            } if made_for != data_type => Err((
                InvalidKind::Other,
                format!("the reduction operator was made for {made_name}, not {type_name}"),
            )),
            RedKind::Custom { .. } => Ok(()),
        }
    }
}

/// A reduction operator of one communicator: the sum of every rank's elements,
/// each first multiplied by a scalar (`ncclRedOpCreatePreMulSum`, NCCL 2.11
/// and later), made by [`Communicator::pre_mul_sum`].
///
/// Pass `&op` wherever a reduction is taken (all-reduce, reduce,
/// reduce-scatter, on the communicator that made it and on elements of type
/// `T`). Dropping it destroys the operator (`ncclRedOpDestroy`); the borrow
/// keeps it alive until every operation given it has been issued, which is all
/// NCCL needs.
#[derive(Debug)]
pub struct CustomOp<'c, T: Element> {
    raw: sys::ncclRedOp_t,
    comm: &'c Communicator,
    scalar: T,
}

impl<T: Element> CustomOp<'_, T> {
    /// The scalar each element is multiplied by.
    pub fn scalar(&self) -> T {
        self.scalar
    }

    /// The raw operator, for calls this crate does not wrap. It stays owned by
    /// `self`.
    pub fn handle(&self) -> sys::ncclRedOp_t {
        self.raw
    }

    /// Destroys the operator (`ncclRedOpDestroy`), reporting the error that
    /// dropping it would swallow.
    ///
    /// # Errors
    /// NCCL's error; the operator is gone either way.
    pub fn destroy(self) -> Result<()> {
        let rank = self.comm.rank();
        let status = self.destroy_raw();
        std::mem::forget(self);
        check(status, || {
            format!("destroying a pre-multiplied sum on rank {rank} of a NCCL communicator")
        })
    }

    fn destroy_raw(&self) -> sys::ncclResult_t {
        let _scope = crate::comm::primary_scope(self.comm.device());
        // SAFETY: an operator this communicator made, not used after this: every
        // operation given it borrowed `self` until NCCL returned from its issue.
        unsafe { sys::ncclRedOpDestroy(self.raw, self.comm.raw) }
    }
}

impl<T: Element> Drop for CustomOp<'_, T> {
    fn drop(&mut self) {
        let _ = self.destroy_raw();
    }
}

impl Communicator {
    /// A reduction operator summing every rank's elements after multiplying
    /// each by `scalar` (`ncclRedOpCreatePreMulSum`, the scalar given by value):
    /// `ReduceOp::PreMulSum` of nccl4py. With `scalar = 1 / size()` it is a mean
    /// that avoids the overflow of summing first.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), cudars_nccl::Error> {
    /// use cudars_core::{Device, DeviceBuffer, StreamOptions};
    /// use cudars_nccl::Communicator;
    ///
    /// let dev = Device::new(0)?;
    /// let comm = Communicator::init_all(std::slice::from_ref(&dev))?.remove(0);
    /// let s = dev.create_stream(StreamOptions::default())?;
    /// let mut x = DeviceBuffer::from_host(&dev, &[1.0f32, 2.0], &s)?;
    /// let half = comm.pre_mul_sum(0.5f32)?;
    /// comm.all_reduce_in_place(x.view_mut(), &half, &s)?;
    /// assert_eq!(x.to_vec(&s)?, [0.5, 1.0]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::TooOld`](crate::Error::TooOld) for an NCCL before 2.11; NCCL's error (it refuses
    /// integer types on some releases, say).
    pub fn pre_mul_sum<T: Element>(&self, scalar: T) -> Result<CustomOp<'_, T>> {
        let context = || {
            format!(
                "making a pre-multiplied sum of {} on rank {} of a NCCL communicator",
                T::NAME,
                self.rank()
            )
        };
        let _scope = crate::comm::primary_scope(self.device())?;
        let mut value = scalar;
        let mut raw = sys::ncclRedOp_t(0);
        // SAFETY: a live communicator; `raw` is writable; with
        // `ncclScalarHostImmediate` NCCL reads one `T` (of the data type given)
        // from the host pointer during the call.
        let status = unsafe {
            sys::ncclRedOpCreatePreMulSum(
                &mut raw,
                (&mut value as *mut T).cast(),
                T::DATA_TYPE,
                sys::ncclScalarHostImmediate,
                self.raw,
            )
        };
        check_since(status, (2, 11), context)?;
        Ok(CustomOp {
            raw,
            comm: self,
            scalar,
        })
    }
}

/// Used by the unit tests of the layout and reduction checks.
#[cfg(test)]
pub(crate) fn custom_for_test(
    comm: sys::ncclComm_t,
    data_type: sys::ncclDataType_t,
    type_name: &'static str,
) -> Reduction<'static> {
    Reduction {
        kind: RedKind::Custom {
            raw: sys::ncclRedOp_t(5),
            comm,
            data_type,
            type_name,
        },
        _op: PhantomData,
    }
}
