//! Launch configuration and type-checked kernel launches.

use std::ffi::c_void;

use bytemuck::Pod;
use cuda_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{Buffer, Kernel, Stream};

/// Three dimensions of a grid, block or cluster. `From` a `u32`, `(u32, u32)` or
/// `(u32, u32, u32)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// x.
    pub x: u32,
    /// y.
    pub y: u32,
    /// z.
    pub z: u32,
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Self { x, y: 1, z: 1 }
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Self { x, y, z: 1 }
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Self { x, y, z }
    }
}

/// How to launch a kernel: grid and block dimensions, optional thread-block
/// cluster, dynamic shared memory and launch attributes (`cuLaunchKernelEx`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads in a block.
    pub block: Dim3,
    /// Blocks in a cluster (sm_90 and later); `grid` must be a multiple of it.
    pub cluster: Option<Dim3>,
    /// Dynamic shared memory per block, in bytes.
    pub shmem_size: u32,
    /// A cooperative launch: all blocks resident at once, grid-wide sync allowed.
    pub cooperative: bool,
    /// Programmatic stream serialisation: the kernel may start before the previous
    /// one on the stream finishes (with `cudaGridDependencySynchronize`).
    pub programmatic_stream_serialization: bool,
    /// The launch's priority, overriding the stream's.
    pub priority: Option<i32>,
}

impl LaunchConfig {
    /// `grid` blocks of `block` threads, nothing else.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Self {
        Self {
            grid: grid.into(),
            block: block.into(),
            cluster: None,
            shmem_size: 0,
            cooperative: false,
            programmatic_stream_serialization: false,
            priority: None,
        }
    }

    /// Enough blocks of `block` threads to cover `n` elements.
    pub fn for_elements(n: u64, block: u32) -> Self {
        let block = block.max(1);
        let grid = n.div_ceil(u64::from(block)).clamp(1, u64::from(u32::MAX)) as u32;
        Self::new(grid, block)
    }

    fn validate(&self) -> Result<()> {
        let what = "launching a kernel";
        let zero = |d: Dim3| d.x == 0 || d.y == 0 || d.z == 0;
        if zero(self.grid) || zero(self.block) {
            return Err(Error::invalid(
                what,
                "grid and block dimensions must all be at least 1",
            ));
        }
        if let Some(c) = self.cluster {
            if zero(c) || self.grid.x % c.x != 0 || self.grid.y % c.y != 0 || self.grid.z % c.z != 0
            {
                return Err(Error::invalid(
                    what,
                    format!(
                        "the grid {:?} is not a multiple of the cluster {c:?}",
                        self.grid
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The driver's config; the attributes live in `attrs`.
    pub(crate) fn raw(&self, stream: &Stream, attrs: &mut Attrs) -> sys::CUlaunchConfig {
        attrs.n = 0;
        let mut push = |id: sys::CUlaunchAttributeID, value: sys::CUlaunchAttributeValue| {
            attrs.a[attrs.n] = sys::CUlaunchAttribute {
                id,
                value,
                ..Default::default()
            };
            attrs.n += 1;
        };
        if let Some(c) = self.cluster {
            let mut v = sys::CUlaunchAttributeValue::default();
            v.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 {
                x: c.x,
                y: c.y,
                z: c.z,
            };
            push(sys::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, v);
        }
        if self.cooperative {
            let mut v = sys::CUlaunchAttributeValue::default();
            v.cooperative = 1;
            push(sys::CU_LAUNCH_ATTRIBUTE_COOPERATIVE, v);
        }
        if self.programmatic_stream_serialization {
            let mut v = sys::CUlaunchAttributeValue::default();
            v.programmaticStreamSerializationAllowed = 1;
            push(
                sys::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
                v,
            );
        }
        if let Some(p) = self.priority {
            let mut v = sys::CUlaunchAttributeValue::default();
            v.priority = p;
            push(sys::CU_LAUNCH_ATTRIBUTE_PRIORITY, v);
        }
        sys::CUlaunchConfig {
            gridDimX: self.grid.x,
            gridDimY: self.grid.y,
            gridDimZ: self.grid.z,
            blockDimX: self.block.x,
            blockDimY: self.block.y,
            blockDimZ: self.block.z,
            sharedMemBytes: self.shmem_size,
            hStream: stream.handle(),
            attrs: attrs.a.as_mut_ptr(),
            numAttrs: attrs.n as u32,
        }
    }
}

/// Launch attributes, on the stack.
#[derive(Default)]
pub(crate) struct Attrs {
    a: [sys::CUlaunchAttribute; 4],
    n: usize,
}

/// A value that can be passed to a kernel parameter.
///
/// Implemented for every [`Pod`] type (integers, floats, `half::f16`/`bf16` with
/// the `half` crate's `bytemuck` feature, `#[repr(C)]` structs deriving `Pod`) and
/// for [`Buffer`] and [`DevicePtr`], which pass their device address.
///
/// # Safety
/// `arg_ptr` must point to `arg_size` readable bytes that stay valid while `self`
/// is borrowed.
pub unsafe trait KernelArg {
    /// Where the argument's bytes are.
    fn arg_ptr(&self) -> *const c_void;
    /// How many bytes the kernel reads.
    fn arg_size(&self) -> usize;
}

// SAFETY: a `Pod` value is its own bytes.
unsafe impl<T: Pod> KernelArg for T {
    fn arg_ptr(&self) -> *const c_void {
        (self as *const T).cast()
    }
    fn arg_size(&self) -> usize {
        std::mem::size_of::<T>()
    }
}

// SAFETY: points at the buffer's stored device address (8 bytes).
unsafe impl KernelArg for Buffer {
    fn arg_ptr(&self) -> *const c_void {
        self.ptr_ref().cast()
    }
    fn arg_size(&self) -> usize {
        std::mem::size_of::<sys::CUdeviceptr>()
    }
}

/// A raw device address as a kernel argument (a pointer parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(transparent)]
pub struct DevicePtr(pub sys::CUdeviceptr);

/// The most arguments a launch takes without allocating.
const INLINE_ARGS: usize = 32;

/// Launches `kernel` on `stream` with `config` and `args` (`cuLaunchKernel`, or
/// `cuLaunchKernelEx` when the configuration has launch attributes), checking the number of
/// arguments and each one's size against the kernel's parameters.
///
/// The arguments are copied by the driver when this returns; buffers passed must
/// stay allocated until the kernel has run (free them in stream order: the
/// buffer's free stream should be `stream`, or after it).
///
/// ```no_run
/// # fn f(kernel: &cuda_core::Kernel, stream: &cuda_core::Stream, x: &cuda_core::Buffer, y: &cuda_core::Buffer) -> cuda_core::Result<()> {
/// use cuda_core::{launch, LaunchConfig};
/// let n: u64 = 1 << 20;
/// // SAFETY: saxpy reads `x` and writes `y`, both holding `n` floats.
/// unsafe { launch(stream, &LaunchConfig::for_elements(n, 256), kernel, &[&2.0f32, x, y, &n])? };
/// # Ok(()) }
/// ```
///
/// # Safety
/// A kernel is arbitrary device code: the checks above catch a wrong number of
/// arguments or a wrong size, not a pointer to too little (or freed) memory. Every
/// buffer or device pointer passed must be valid for all the accesses the kernel
/// makes with the other arguments given (sizes, counts, strides), until the kernel
/// has finished, and the kernel must not race with other work on that memory.
/// Drivers before CUDA 12.4 cannot report a kernel's parameters: with them the
/// count and sizes are not checked, and the caller must pass exactly the kernel's
/// parameters, each of its type.
///
/// # Errors
/// [`Error::InvalidArgument`] for a wrong argument count or size, zero
/// dimensions, or a grid that is not a multiple of the cluster; the driver's error.
pub unsafe fn launch(
    stream: &Stream,
    config: &LaunchConfig,
    kernel: &Kernel,
    args: &[&dyn KernelArg],
) -> Result<()> {
    config.validate()?;
    if let Some(params) = kernel.params_if_known()? {
        check_args(kernel, params, args)?;
    }
    let mut inline = [std::ptr::null_mut::<c_void>(); INLINE_ARGS];
    let mut heap = Vec::new();
    let ptrs: &mut [*mut c_void] = if args.len() <= INLINE_ARGS {
        &mut inline[..args.len()]
    } else {
        heap.resize(args.len(), std::ptr::null_mut());
        &mut heap
    };
    for (p, a) in ptrs.iter_mut().zip(args) {
        *p = a.arg_ptr().cast_mut();
    }
    // SAFETY: the arguments match the kernel's parameter sizes (the caller vouches
    // for what they point to); the driver copies them before returning.
    unsafe { launch_raw(stream, config, kernel, ptrs.as_mut_ptr()) }
}

/// Checks `args` against the kernel's parameters.
pub(crate) fn check_args(
    kernel: &Kernel,
    params: &[(usize, usize)],
    args: &[&dyn KernelArg],
) -> Result<()> {
    if params.len() != args.len() {
        return Err(Error::invalid(
            format!("launching kernel `{}`", kernel.name()),
            format!(
                "it takes {} arguments, {} were given",
                params.len(),
                args.len()
            ),
        ));
    }
    for (i, (a, (_, size))) in args.iter().zip(params).enumerate() {
        if a.arg_size() != *size {
            return Err(Error::invalid(
                format!("launching kernel `{}`", kernel.name()),
                format!(
                    "argument {i} is {} bytes, the parameter {size}",
                    a.arg_size()
                ),
            ));
        }
    }
    Ok(())
}

/// Launches with a prepared argument array, without checking it.
///
/// # Safety
/// `args` must point to one pointer per kernel parameter, each to a value of that
/// parameter's type, valid for the call.
///
/// # Errors
/// The driver's error; invalid configurations.
pub unsafe fn launch_raw(
    stream: &Stream,
    config: &LaunchConfig,
    kernel: &Kernel,
    args: *mut *mut c_void,
) -> Result<()> {
    let _current = stream.context().ensure_current()?;
    let func = kernel.launch_handle(stream.context());
    let plain = config.cluster.is_none()
        && !config.cooperative
        && !config.programmatic_stream_serialization
        && config.priority.is_none();
    let rc = if plain {
        // No launch attributes: the classic entry point, the driver's fastest path.
        let (g, b) = (config.grid, config.block);
        // SAFETY: a live kernel and stream; `args` per the contract.
        unsafe {
            sys::cuLaunchKernel(
                func,
                g.x,
                g.y,
                g.z,
                b.x,
                b.y,
                b.z,
                config.shmem_size,
                stream.handle(),
                args,
                std::ptr::null_mut(),
            )
        }
    } else {
        let mut attrs = Attrs::default();
        let cfg = config.raw(stream, &mut attrs);
        // SAFETY: `cfg` and its attributes live for the call; `args` per the contract.
        unsafe { sys::cuLaunchKernelEx(&cfg, func, args, std::ptr::null_mut()) }
    };
    rc.check(|| format!("launching kernel `{}`", kernel.name()))
}
