//! [`TypedKernel`]: a kernel whose parameter list is a Rust type, checked once.
//!
//! Architecture Invariant: the signature is checked against the kernel's
//! parameter information (count and sizes) when the handle is made, never again;
//! a launch builds its argument array on the stack from the tuple and calls the
//! driver, with no dynamic dispatch, and with no allocation when every view's
//! buffer is freed on the launch stream (a buffer freed on another stream costs
//! one event, which orders that free after the kernel). Borrowing does the rest: a
//! [`MutPtr`] parameter takes a [`DeviceViewMut`], which exists only through an
//! exclusive borrow, so one launch cannot be handed two views that may write the
//! same elements.

use std::ffi::c_void;
use std::marker::PhantomData;

use bytemuck::Pod;
use cudars_bindings::driver as sys;

use crate::error::{Error, Result};
use crate::launch::{LaunchConfig, launch_raw};
use crate::memory::resource::MemoryKind;
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
    /// Calls `f` with every buffer the argument points into: [`memory`](Self::memory)'s
    /// one, or more for an argument that carries several views (a [`LentVal`]).
    /// A launch checks and orders each as it does `memory`'s.
    fn each_memory<'b>(arg: &'b Self::Arg<'_>, f: &mut dyn FnMut(&'b Buffer)) {
        if let Some(b) = Self::memory(arg) {
            f(b);
        }
    }
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
    bool => u8
);

#[cfg(feature = "half")]
scalar_params!(half::f16 => half::f16, half::bf16 => half::bf16);

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

/// A device address of `T`s that a `#[repr(C)]` struct can hold: plain old
/// data, 8 bytes, laid out as a C `T*` (an `mdspan`-like struct of pointers and
/// extents). Made from a view by a [`Lender`] inside [`LentVal::new`], so the
/// struct travels to the kernel as a [`Lent`] parameter that borrows the views
/// for the launch (their devices checked, their frees ordered after the kernel,
/// rule 2 of the soundness contract), never as a bare address.
///
/// ```no_run
/// use cudars_core::{LaunchConfig, Lent, LentVal, TypedKernel, ViewPtr};
/// // struct Span2d { float* data; unsigned rows, cols; };  (the kernel's parameter)
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// struct Span2d { data: ViewPtr<f32>, rows: u32, cols: u32 }
///
/// fn run(k: &TypedKernel<(Lent<Span2d>,)>, x: &mut cudars_core::DeviceBuffer<f32>,
///        s: &cudars_core::Stream) -> cudars_core::Result<()> {
///     let arg = LentVal::new(|l| Span2d { data: l.ptr_mut(x.view_mut()), rows: 4, cols: 6 });
///     // SAFETY: the kernel stays within rows * cols elements of `data`.
///     unsafe { k.launch(s, &LaunchConfig::new(1u32, 32u32), (arg,)) }
/// }
/// ```
#[repr(transparent)]
pub struct ViewPtr<T> {
    addr: sys::CUdeviceptr,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for ViewPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ViewPtr<T> {}

impl<T> std::fmt::Debug for ViewPtr<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ViewPtr<{}>({:#x})",
            std::any::type_name::<T>(),
            self.addr
        )
    }
}

impl<T> PartialEq for ViewPtr<T> {
    fn eq(&self, other: &Self) -> bool {
        self.addr == other.addr
    }
}

impl<T> Eq for ViewPtr<T> {}

// SAFETY: a `u64` and a zero-sized marker, `repr(transparent)`: every bit
// pattern is valid (an address is only a number until a kernel dereferences it,
// which `TypedKernel::launch`'s `# Safety` covers), and zero is the null address.
unsafe impl<T: 'static> bytemuck::Zeroable for ViewPtr<T> {}
// SAFETY: as above; no padding, `Copy`, `'static`.
unsafe impl<T: 'static> bytemuck::Pod for ViewPtr<T> {}

impl<T> ViewPtr<T> {
    /// The null address (a struct's field that points nowhere).
    pub const fn null() -> Self {
        Self {
            addr: 0,
            _t: PhantomData,
        }
    }

    /// The device address.
    pub fn addr(self) -> sys::CUdeviceptr {
        self.addr
    }
}

/// Makes [`ViewPtr`]s from views inside [`LentVal::new`], and records the
/// buffers they point into for the launch.
#[derive(Debug, Default)]
pub struct Lender<'a> {
    buffers: Vec<&'a Buffer>,
}

impl<'a> Lender<'a> {
    /// The address of a shared view, borrowed for the [`LentVal`]'s life (a
    /// `const T*` field).
    pub fn ptr<T: Pod>(&mut self, view: DeviceView<'a, T>) -> ViewPtr<T> {
        self.buffers.push(view.buf);
        ViewPtr {
            addr: view.ptr,
            _t: PhantomData,
        }
    }

    /// The address of an exclusive view, which the [`LentVal`] takes for its life
    /// (a `T*` field the kernel writes through).
    pub fn ptr_mut<T: Pod>(&mut self, view: DeviceViewMut<'a, T>) -> ViewPtr<T> {
        self.buffers.push(view.buf);
        ViewPtr {
            addr: view.ptr,
            _t: PhantomData,
        }
    }
}

/// A by-value struct argument that holds [`ViewPtr`]s, with the views they
/// point into: what a [`Lent<S>`] parameter takes. Made by
/// [`LentVal::new`], which hands the closure a [`Lender`] to turn views into
/// pointers; the views stay borrowed for as long as the `LentVal` lives:
///
/// ```compile_fail,E0502
/// # fn f(x: &mut cudars_core::DeviceBuffer<f32>) {
/// let lent = cudars_core::LentVal::new(|l| l.ptr(x.view()));
/// let _ = x.view_mut(); // error: `x` is lent to `lent`
/// drop(lent);
/// # }
/// ```
#[derive(Debug)]
pub struct LentVal<'a, S> {
    value: S,
    buffers: Vec<&'a Buffer>,
}

impl<'a, S: Pod> LentVal<'a, S> {
    /// The struct `make` builds, its pointers made by the [`Lender`] it is
    /// given.
    pub fn new(make: impl FnOnce(&mut Lender<'a>) -> S) -> Self {
        let mut lender = Lender::default();
        let value = make(&mut lender);
        Self {
            value,
            buffers: lender.buffers,
        }
    }

    /// The struct.
    pub fn value(&self) -> &S {
        &self.value
    }
}

/// A by-value struct parameter that holds device pointers ([`ViewPtr`]
/// fields): takes a [`LentVal<S>`], so the views the struct points into are
/// borrowed for the launch and their frees ordered after the kernel, as for a
/// [`ConstPtr`] or [`MutPtr`] parameter. A struct without pointers is a
/// [`Val<S>`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Lent<S>(PhantomData<S>);

// SAFETY: the argument's bytes are the struct's, `size_of::<S>()` of them,
// inside the `LentVal` the launch borrows; its buffers are reported to the
// launch, which checks and orders them.
// Soundness contract: rules 2 and 10.
unsafe impl<S: Pod> Param for Lent<S> {
    type Arg<'a> = LentVal<'a, S>;
    const SIZE: usize = std::mem::size_of::<S>();
    fn addr(arg: &LentVal<'_, S>) -> *mut c_void {
        (&arg.value as *const S).cast_mut().cast()
    }
    fn memory<'b>(arg: &'b LentVal<'_, S>) -> Option<&'b Buffer> {
        arg.buffers.first().copied()
    }
    fn each_memory<'b>(arg: &'b LentVal<'_, S>, f: &mut dyn FnMut(&'b Buffer)) {
        for b in &arg.buffers {
            f(b);
        }
    }
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
                $($p::each_memory(&args.$i, &mut f);)*
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
    /// Ordering across streams: each view's buffer has a free stream (where it
    /// was allocated), and a launch on another stream is joined back to it, so
    /// work queued afterwards on the free stream (`to_vec(&free_stream)`) sees
    /// what the kernel wrote. A use on a third stream is not ordered for you:
    /// call [`DeviceBuffer::order_after_uses`](crate::DeviceBuffer::order_after_uses)
    /// with that stream first (cudarc makes this wait on every call; see
    /// "Coming from cudarc" in `docs/porting-from-python.md`).
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
    /// Texture and surface objects, and the memory a tensor map describes, must
    /// outlive the kernel: they are destroyed when dropped, not in stream order
    /// (a texture over a buffer orders that buffer's free after the kernel, as a
    /// view does). A [`LentVal`]'s struct must hold only the [`ViewPtr`]s its
    /// [`Lender`] made.
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
        // Only the buffers whose frees run on another queue are kept (rule 2):
        // none in the common case, where nothing is gathered or allocated;
        // every one otherwise, however many views an argument carries.
        let mut later: Vec<&Buffer> = Vec::new();
        let mut other_device = None;
        let mut host_reachable = false;
        S::for_each_memory(&args, |b| {
            if b.device() != stream.device() && other_device.is_none() {
                other_device = Some(b.device());
            }
            host_reachable |= b.kind() == MemoryKind::Pinned;
            if b.free_needs_ordering(stream) {
                later.push(b);
            }
        });
        if let Some(dev) = other_device {
            same_device(dev, stream)?;
        }
        let queue = || {
            // SAFETY: the argument array matches the checked signature, one
            // pointer per parameter to a value of its size; the caller vouches
            // for the rest.
            S::with_args(&args, |ptrs| unsafe {
                launch_raw(stream, config, &self.kernel, ptrs)
            })
        };
        if host_reachable {
            // Rule 3 of the soundness contract: a captured kernel runs whenever
            // its graph is launched, past what a host view of the pinned memory
            // can wait for (the device could write it under a live `&mut`).
            // Capture-gate rule: no capture begins between the check and the
            // launch.
            stream.while_not_capturing(
                "launching a typed kernel",
                "a view of pinned host memory passed to a launch on a capturing stream: \
                 the graph would touch the host memory whenever it is launched, past \
                 what the buffer's host views can wait for (capture with \
                 `GraphBuilder::launch_typed` and `GraphView`s instead)",
                queue,
            )?;
        } else {
            queue()?;
        }
        // Rule 2 of the soundness contract: the frees are ordered after the
        // kernel, which is queued by now (ordering them first let a free on
        // another stream overtake the kernel). On failure the stream has been
        // drained, so no free can overtake it either.
        crate::memory::buffer::order_frees_after(later.into_iter(), stream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 28, point 7: a struct of `ViewPtr`s travels as a `Lent` parameter
    /// whose views a launch sees, every one of them (more than a parameter's
    /// one, more than 16 in all), and whose bytes are the struct's.
    #[test]
    fn a_lent_struct_reports_every_view_it_points_into() {
        #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
        #[repr(C)]
        struct Span2 {
            a: ViewPtr<f32>,
            b: ViewPtr<u32>,
            rows: u32,
            cols: u32,
        }
        assert_eq!(std::mem::size_of::<ViewPtr<f32>>(), 8);
        assert_eq!(<(Lent<Span2>, u8)>::SIZES, &[24, 1]);
        let mut m1 = [0u32; 8];
        let mut m2 = [0u32; 8];
        let b1 = crate::memory::arc_view::host_backed(bytemuck::cast_slice_mut(&mut m1));
        let b2 = crate::memory::arc_view::host_backed(bytemuck::cast_slice_mut(&mut m2));
        let x = crate::memory::arc_view::ArcView::<f32>::of_buffer(&b1).unwrap();
        let y = crate::memory::arc_view::ArcView::<u32>::of_buffer(&b2).unwrap();
        let arg = LentVal::new(|l| Span2 {
            a: l.ptr(x.view().slice(2..).unwrap()),
            b: l.ptr(y.view()),
            rows: 2,
            cols: 3,
        });
        assert_eq!(arg.value().a.addr(), b1.ptr() + 8);
        assert_eq!(arg.value().b.addr(), b2.ptr());
        let mut seen = Vec::new();
        <(Lent<Span2>, u8)>::for_each_memory(&(arg, 1u8), |b| seen.push(b.ptr()));
        assert_eq!(seen, [b1.ptr(), b2.ptr()]);
        // The argument's bytes are the struct's.
        let arg = LentVal::new(|l| Span2 {
            a: l.ptr(x.view()),
            b: ViewPtr::null(),
            rows: 7,
            cols: 9,
        });
        <(Lent<Span2>,)>::with_args(&(arg,), |p| {
            // SAFETY: one pointer, to the lent `Span2`.
            let v = unsafe { *(*p).cast::<Span2>() };
            assert_eq!(
                (v.a.addr(), v.b, v.rows, v.cols),
                (b1.ptr(), ViewPtr::null(), 7, 9)
            );
        });
        // Many views: none is dropped from what the launch orders.
        let many = LentVal::new(|l| {
            for _ in 0..40 {
                l.ptr(x.view());
            }
            0u32
        });
        let mut n = 0;
        <(Lent<u32>,)>::for_each_memory(&(many,), |_| n += 1);
        assert_eq!(n, 40);
    }

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
        #[cfg(feature = "half")]
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
