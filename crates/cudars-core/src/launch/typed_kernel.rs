//! [`TypedKernel`]: a kernel whose parameter list is a Rust type, checked once.
//!
//! Architecture Invariant: the signature is checked against the kernel's
//! parameter information (count and sizes) when the handle is made, never again;
//! a launch builds its argument array on the stack from the tuple and calls the
//! driver, with no allocation and no dynamic dispatch. Borrowing does the rest: a
//! [`MutPtr`] parameter takes a [`DeviceViewMut`], which exists only through an
//! exclusive borrow, so one launch cannot be handed two views that may write the
//! same elements.

use std::ffi::c_void;
use std::marker::PhantomData;

use bytemuck::Pod;
use cudars_bindings::driver as sys;

use crate::error::{Error, Result};
use crate::launch::{LaunchConfig, launch_raw};
use crate::memory::view::{DeviceView, DeviceViewMut};
use crate::{
    code::kernel::Kernel, graph::view::CaptureArg, graph::view::GraphView, memory::buffer::Buffer,
    stream::Stream,
};

/// A `const T*` kernel parameter: takes a [`DeviceView<T>`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConstPtr<T>(PhantomData<T>);

/// A `T*` kernel parameter: takes a [`DeviceViewMut<T>`] (exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MutPtr<T>(PhantomData<T>);

/// A parameter type of a [`TypedKernel`] signature: a number (`f32`, `u64`,
/// `half::f16`, …) or `bool` (one byte, as CUDA's), any other [`Pod`] value wrapped in [`Val`] (a `#[repr(C)]`
/// struct, a `__grid_constant__` parameter), or a pointer ([`ConstPtr`],
/// [`MutPtr`]).
///
/// # Safety
/// `SIZE` must be the size of the bytes [`Param::addr`] points to, which must stay
/// valid while the argument is borrowed.
pub unsafe trait Param {
    /// What a launch takes for this parameter.
    type Arg<'a>;
    /// The size the kernel's parameter must have.
    const SIZE: usize;
    /// Where the argument's bytes are (the driver copies them at launch).
    fn addr(arg: &Self::Arg<'_>) -> *mut c_void;
    /// The buffer the argument points into (`None` for a value). A launch checks
    /// its device against the stream's before queueing the kernel, and orders
    /// its free after the kernel once the kernel is queued (rule 2 of the
    /// soundness contract, `docs/architecture.md`: a use is recorded *after* the
    /// work that makes it is queued).
    fn memory<'b>(arg: &'b Self::Arg<'_>) -> Option<&'b Buffer>;
}

/// A [`Param`] as work captured into a [`GraphBuilder`](crate::GraphBuilder)
/// takes it ([`GraphBuilder::launch_typed`](crate::GraphBuilder::launch_typed)):
/// a value for a value, a [`GraphView`](crate::GraphView) (which the graph
/// keeps alive) for a pointer.
pub trait CaptureParam: Param {
    /// What a captured launch takes for this parameter.
    type Captured: CaptureArg;
}

/// A by-value parameter of type `T` (an integer, a float, `half::f16`, a
/// `#[repr(C)]` struct deriving `Pod`, a `__grid_constant__` struct).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Val<T>(PhantomData<T>);

// SAFETY: the argument is the value itself, `size_of::<T>()` bytes.
// Soundness contract: rule 10.
unsafe impl<T: Pod> Param for Val<T> {
    type Arg<'a> = T;
    const SIZE: usize = std::mem::size_of::<T>();
    fn addr(arg: &T) -> *mut c_void {
        (arg as *const T).cast_mut().cast()
    }
    fn memory(_: &T) -> Option<&Buffer> {
        None
    }
}

impl<T: Pod> CaptureParam for Val<T> {
    type Captured = T;
}

/// Scalars name themselves in a signature: `(f32, ConstPtr<f32>, u64)` is
/// `(Val<f32>, ConstPtr<f32>, Val<u64>)`. A captured launch takes each as
/// itself, but a `bool` as a `u8` (0 or 1: `bool` is not plain old data to
/// `bytemuck`, whose values captured arguments are).
macro_rules! scalar_params {
    ($($t:ty => $captured:ty),*) => {$(
        // SAFETY: the argument is the value itself.
        // Soundness contract: rule 10.
        unsafe impl Param for $t {
            type Arg<'a> = $t;
            const SIZE: usize = std::mem::size_of::<$t>();
            fn addr(arg: &$t) -> *mut c_void {
                (arg as *const $t).cast_mut().cast()
            }
            fn memory(_: &$t) -> Option<&Buffer> {
                None
            }
        }

        impl CaptureParam for $t {
            type Captured = $captured;
        }
    )*};
}

scalar_params!(
    u8 => u8,
    u16 => u16,
    u32 => u32,
    u64 => u64,
    i8 => i8,
    i16 => i16,
    i32 => i32,
    i64 => i64,
    f32 => f32,
    f64 => f64,
    usize => usize,
    isize => isize,
    half::f16 => half::f16,
    half::bf16 => half::bf16,
    bool => u8
);

#[inline]
fn same_device(dev: &crate::device::Device, stream: &Stream) -> Result<()> {
    if dev != stream.device() {
        return Err(Error::other_device(
            "launching a typed kernel",
            format!(
                "a view on device {} passed to a launch on device {}",
                dev.ordinal(),
                stream.device().ordinal()
            ),
        ));
    }
    Ok(())
}

// SAFETY: the argument is the view's stored device address, 8 bytes.
// Soundness contract: rule 10.
unsafe impl<T: Pod> Param for ConstPtr<T> {
    type Arg<'a> = DeviceView<'a, T>;
    const SIZE: usize = std::mem::size_of::<sys::CUdeviceptr>();
    fn addr(arg: &DeviceView<'_, T>) -> *mut c_void {
        (&arg.ptr as *const sys::CUdeviceptr).cast_mut().cast()
    }
    fn memory<'b>(arg: &'b DeviceView<'_, T>) -> Option<&'b Buffer> {
        Some(arg.buf)
    }
}

// SAFETY: as for `ConstPtr`.
// Soundness contract: rule 10.
unsafe impl<T: Pod> Param for MutPtr<T> {
    type Arg<'a> = DeviceViewMut<'a, T>;
    const SIZE: usize = std::mem::size_of::<sys::CUdeviceptr>();
    fn addr(arg: &DeviceViewMut<'_, T>) -> *mut c_void {
        (&arg.ptr as *const sys::CUdeviceptr).cast_mut().cast()
    }
    fn memory<'b>(arg: &'b DeviceViewMut<'_, T>) -> Option<&'b Buffer> {
        Some(arg.buf)
    }
}

impl<T: Pod> CaptureParam for ConstPtr<T> {
    type Captured = GraphView<T>;
}

impl<T: Pod> CaptureParam for MutPtr<T> {
    type Captured = GraphView<T>;
}

/// A kernel's parameter list as a tuple of [`Param`]s, up to 16:
/// `(f32, ConstPtr<f32>, MutPtr<f32>, u64)` for
/// `saxpy(float a, const float* x, float* y, unsigned long long n)`.
///
/// # Safety
/// `SIZES` must list each parameter's `SIZE` in order, and `with_args` must pass
/// `f` one pointer per parameter, each from [`Param::addr`] of its argument.
pub unsafe trait Signature {
    /// The tuple a launch takes.
    type Args<'a>;
    /// Each parameter's size, in order.
    const SIZES: &'static [usize];
    /// Calls `f` with each buffer the arguments point into, in order: what a
    /// launch checks before queueing the kernel and orders after it.
    fn for_each_memory<'b>(args: &'b Self::Args<'_>, f: impl FnMut(&'b Buffer));
    /// Calls `f` with the argument pointer array, built on the stack.
    fn with_args<R>(args: &Self::Args<'_>, f: impl FnOnce(*mut *mut c_void) -> R) -> R;
}

/// A [`Signature`] whose parameters are all [`CaptureParam`]s: the tuple a
/// launch captured into a [`GraphBuilder`](crate::GraphBuilder) takes.
pub trait CaptureSignature: Signature {
    /// The tuple a captured launch takes.
    type Captured;
    /// Calls `f` with the arguments as captured-launch arguments, in order.
    fn with_captured<R>(args: &Self::Captured, f: impl FnOnce(&[&dyn CaptureArg]) -> R) -> R;
}

macro_rules! signature {
    ($n:literal; $($p:ident $i:tt),*) => {
        impl<$($p: CaptureParam),*> CaptureSignature for ($($p,)*) {
            type Captured = ($($p::Captured,)*);
            #[allow(unused_variables)]
            fn with_captured<R>(
                args: &Self::Captured,
                f: impl FnOnce(&[&dyn CaptureArg]) -> R,
            ) -> R {
                let all: [&dyn CaptureArg; $n] = [$(&args.$i),*];
                f(&all)
            }
        }

        // SAFETY: the sizes and pointers follow the tuple's order.
        // Soundness contract: rule 10.
        unsafe impl<$($p: Param),*> Signature for ($($p,)*) {
            type Args<'a> = ($($p::Arg<'a>,)*);
            const SIZES: &'static [usize] = &[$($p::SIZE),*];
            #[allow(unused_variables, unused_mut)]
            fn for_each_memory<'b>(args: &'b Self::Args<'_>, mut f: impl FnMut(&'b Buffer)) {
                $(if let Some(b) = $p::memory(&args.$i) { f(b) })*
            }
            #[allow(unused_variables)]
            fn with_args<R>(args: &Self::Args<'_>, f: impl FnOnce(*mut *mut c_void) -> R) -> R {
                let mut ptrs: [*mut c_void; $n] = [$($p::addr(&args.$i)),*];
                f(ptrs.as_mut_ptr())
            }
        }
    };
}

signature!(0;);
signature!(1; A 0);
signature!(2; A 0, B 1);
signature!(3; A 0, B 1, C 2);
signature!(4; A 0, B 1, C 2, D 3);
signature!(5; A 0, B 1, C 2, D 3, E 4);
signature!(6; A 0, B 1, C 2, D 3, E 4, F 5);
signature!(7; A 0, B 1, C 2, D 3, E 4, F 5, G 6);
signature!(8; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
signature!(9; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
signature!(10; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
signature!(11; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
signature!(12; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
signature!(13; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
signature!(14; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
signature!(15; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);
signature!(16; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15);

/// A [`Kernel`] with its parameter list as a type, checked once against the
/// kernel's parameter information; launches take a tuple of arguments.
///
/// ```no_run
/// # fn f(kernel: cudars_core::Kernel, dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
/// use cudars_core::{ConstPtr, DeviceBuffer, LaunchConfig, MutPtr, TypedKernel};
/// // extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned long long n)
/// let saxpy = TypedKernel::<(f32, ConstPtr<f32>, MutPtr<f32>, u64)>::new(kernel)?;
/// let x = DeviceBuffer::from_host(dev, &[1.0f32; 1024], s)?;
/// let mut y = DeviceBuffer::<f32>::zeroed(dev, 1024, s)?;
/// let cfg = LaunchConfig::for_elements(1024, 256);
/// // SAFETY: saxpy reads x[0..n] and writes y[0..n]; both hold n = 1024 floats.
/// unsafe { saxpy.launch(s, &cfg, (2.0, x.view(), y.view_mut(), 1024))? };
/// # Ok(()) }
/// ```
///
/// A shared view cannot stand for a `T*` parameter:
///
/// ```compile_fail
/// # fn f(k: cudars_core::TypedKernel<(cudars_core::MutPtr<f32>,)>, y: &cudars_core::DeviceBuffer<f32>,
/// #      s: &cudars_core::Stream, c: &cudars_core::LaunchConfig) {
/// unsafe { k.launch(s, c, (y.view(),)) };
/// # }
/// ```
pub struct TypedKernel<S> {
    kernel: Kernel,
    _s: PhantomData<fn(S)>,
}

impl<S> Clone for TypedKernel<S> {
    fn clone(&self) -> Self {
        Self {
            kernel: self.kernel.clone(),
            _s: PhantomData,
        }
    }
}

impl<S> std::fmt::Debug for TypedKernel<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedKernel")
            .field("kernel", &self.kernel.name())
            .field("signature", &std::any::type_name::<S>())
            .finish()
    }
}

impl<S: Signature> TypedKernel<S> {
    /// Checks `S` against the kernel's parameters (count and each size) and makes
    /// the typed handle. Drivers before CUDA 12.4 cannot report a kernel's
    /// parameters: with them nothing can be checked, and the handle is made
    /// unchecked ([`is_checked`](Self::is_checked) says so).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the first parameter that differs; the
    /// driver's error.
    pub fn new(kernel: Kernel) -> Result<Self> {
        Self::check(kernel, &[])
    }

    /// As [`new`](Self::new), with the parameters' declarations (`"const float*
    /// x"`, one per parameter of `S`, in order) for the error messages: a
    /// mismatch names the parameter as well as its index. This is what
    /// `cudars_core::kernels!` generates.
    ///
    /// # Errors
    /// As [`new`](Self::new); [`Error::InvalidArgument`] when `params` does not
    /// have one entry per parameter of `S`.
    pub fn with_param_names(kernel: Kernel, params: &[&str]) -> Result<Self> {
        if params.len() != S::SIZES.len() {
            return Err(Error::invalid(
                format!("typing kernel `{}`", kernel.name()),
                format!(
                    "{} parameter names for a signature of {}",
                    params.len(),
                    S::SIZES.len()
                ),
            ));
        }
        Self::check(kernel, params)
    }

    /// Checks `S` against the kernel; `names` (empty or one per parameter) name
    /// the parameters in errors.
    fn check(kernel: Kernel, names: &[&str]) -> Result<Self> {
        if let Some(params) = kernel.params_if_known()? {
            let what = || format!("typing kernel `{}`", kernel.name());
            if params.len() != S::SIZES.len() {
                return Err(Error::invalid(
                    what(),
                    format!(
                        "it takes {} parameters, the signature has {}",
                        params.len(),
                        S::SIZES.len()
                    ),
                ));
            }
            for (i, ((_, size), want)) in params.iter().zip(S::SIZES).enumerate() {
                if size != want {
                    let name = names.get(i).map_or(String::new(), |n| format!(" (`{n}`)"));
                    return Err(Error::invalid(
                        what(),
                        format!("parameter {i}{name} is {size} bytes, the signature's {want}"),
                    ));
                }
            }
        }
        Ok(Self {
            kernel,
            _s: PhantomData,
        })
    }

    /// Whether the signature was checked against the kernel (drivers of CUDA 12.4
    /// and later report kernels' parameters).
    pub fn is_checked(&self) -> bool {
        matches!(self.kernel.params_if_known(), Ok(Some(_)))
    }

    /// The kernel.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// Launches the kernel on `stream` with `config` and `args`. Views must be on
    /// the stream's device; their buffers' frees are ordered after the launch.
    ///
    /// # Safety
    /// A kernel is arbitrary device code. The signature fixes the count, sizes and
    /// kinds of the arguments, and the borrows keep the memory alive and writable
    /// views exclusive; what remains for the caller: the kernel must stay within
    /// the views it is given (their lengths bound what the indices, counts and
    /// strides among the other arguments let it touch), must write only through
    /// [`MutPtr`] parameters, and must not race with work on other streams that
    /// uses the same memory. On a driver before CUDA 12.4 the signature itself is
    /// unchecked ([`is_checked`](Self::is_checked)) and must match the kernel.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a view of another device or invalid
    /// dimensions; the driver's error.
    pub unsafe fn launch(
        &self,
        stream: &Stream,
        config: &LaunchConfig,
        args: S::Args<'_>,
    ) -> Result<()> {
        config.validate()?;
        // At most 16 parameters (the largest `Signature` tuple).
        let mut memory: [Option<&Buffer>; 16] = [None; 16];
        let mut n = 0;
        let mut device = Ok(());
        S::for_each_memory(&args, |b| {
            if device.is_ok() {
                device = same_device(b.device(), stream);
            }
            if let Some(slot) = memory.get_mut(n) {
                *slot = Some(b);
                n += 1;
            }
        });
        device?;
        // SAFETY: the argument array matches the checked signature, one pointer
        // per parameter to a value of its size; the caller vouches for the rest.
        S::with_args(&args, |ptrs| unsafe {
            launch_raw(stream, config, &self.kernel, ptrs)
        })?;
        // Rule 2 of the soundness contract: the frees are ordered after the
        // kernel, which is queued by now (ordering them first let a free on
        // another stream overtake the kernel). On failure the stream has been
        // drained, so no free can overtake it either.
        crate::memory::buffer::order_frees_after(memory.iter().flatten().copied(), stream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_list_their_sizes_in_order() {
        type Saxpy = (f32, ConstPtr<f32>, MutPtr<f32>, Val<u64>);
        assert_eq!(Saxpy::SIZES, &[4, 8, 8, 8]);
        assert_eq!(<() as Signature>::SIZES, &[] as &[usize]);
        #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
        #[repr(C)]
        struct P {
            a: [f32; 3],
            n: u32,
        }
        assert_eq!(<(Val<P>, Val<u8>)>::SIZES, &[16, 1]);
        assert_eq!(<(bool, half::f16)>::SIZES, &[1, 2]);
        let args: <(Val<u32>, Val<u16>) as Signature>::Args<'_> = (7, 9);
        <(Val<u32>, Val<u16>)>::with_args(&args, |p| {
            // SAFETY: two pointers, to the tuple's u32 and u16.
            unsafe {
                assert_eq!(*(*p).cast::<u32>(), 7);
                assert_eq!(*(*p.add(1)).cast::<u16>(), 9);
            }
        });
    }
}
