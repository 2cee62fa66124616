//! Kernels: attributes, occupancy and parameter layout.

use std::fmt;
use std::sync::{Arc, OnceLock};

use cudars_bindings::driver as sys;

use crate::code::strings::c_name;
use crate::error::{Check as _, Error, Result};
use crate::{code::library_handle::Library, code::module::Module, device::Device};

/// A kernel: from a [`Library`] (context-independent `CUkernel`) or a [`Module`]
/// (`CUfunction`). Keeps its library or module loaded. Cheap to clone;
/// `Send + Sync`.
#[derive(Clone)]
pub struct Kernel {
    inner: Arc<Inner>,
}

/// The kernel's handle and what keeps it loaded (`None` for an adopted handle
/// whose owner the caller keeps alive).
enum Handle {
    Library(sys::CUkernel, #[allow(dead_code)] Option<Library>),
    Module(sys::CUfunction, #[allow(dead_code)] Option<Module>),
}

struct Inner {
    handle: Handle,
    name: String,
    /// `(offset, size)` of each parameter, read once.
    params: OnceLock<Vec<(usize, usize)>>,
    /// For a library kernel: the primary context it was first launched in and its
    /// `CUfunction` there (launching a `CUfunction` skips the driver's per-launch
    /// lookup of a `CUkernel`). This crate retains primary contexts for the life of
    /// the process, so the function stays valid as long as the kernel's library,
    /// unless other code resets the primary context (`cuDevicePrimaryCtxReset`,
    /// `cudaDeviceReset`), which invalidates every object made in it.
    primary_fn: OnceLock<(usize, usize)>,
}

// SAFETY: kernel and function handles may be used from any thread.
// Soundness contract: rule 11.
unsafe impl Send for Inner {}
// SAFETY: as above.
// Soundness contract: rule 11.
unsafe impl Sync for Inner {}

/// The name the driver gave (`rc` and `name` from `cuKernelGetName` or
/// `cuFuncGetName`), or `kernel@<address>` when it gave none.
fn driver_name(rc: sys::CUresult, name: *const std::ffi::c_char, handle: *const ()) -> String {
    if rc == sys::CUDA_SUCCESS && !name.is_null() {
        // SAFETY: on success the driver points `name` at a NUL-terminated string
        // that lives as long as the kernel.
        unsafe { std::ffi::CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned()
    } else {
        format!("kernel@{handle:p}")
    }
}

/// Kernels are equal when they have the same driver handle (`cuda.core`'s
/// `Kernel.__eq__`): clones, and a kernel adopted with
/// [`from_handle`](Kernel::from_handle) from another's handle.
impl PartialEq for Kernel {
    fn eq(&self, other: &Self) -> bool {
        self.handle() == other.handle()
    }
}

impl Eq for Kernel {}

/// Hashes the handle, as equality compares it.
impl std::hash::Hash for Kernel {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.handle() as usize).hash(state);
    }
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.inner.name)
            .finish()
    }
}

/// Cache preference of a kernel (`CUfunc_cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CachePreference {
    /// No preference.
    None,
    /// More shared memory.
    Shared,
    /// More L1 cache.
    L1,
    /// Equal L1 and shared memory.
    Equal,
}

impl Kernel {
    pub(crate) fn from_library(k: sys::CUkernel, lib: Library, name: &str) -> Result<Self> {
        Ok(Self::with_handle(
            Handle::Library(k, Some(lib)),
            name.to_string(),
        ))
    }

    pub(crate) fn from_module(f: sys::CUfunction, m: Module, name: &str) -> Self {
        Self::with_handle(Handle::Module(f, Some(m)), name.to_string())
    }

    /// The one constructor: a kernel of `handle` (owned through its library or
    /// module, or adopted), its parameters and primary function read on demand.
    fn with_handle(handle: Handle, name: String) -> Self {
        Self {
            inner: Arc::new(Inner {
                handle,
                name,
                params: OnceLock::new(),
                primary_fn: OnceLock::new(),
            }),
        }
    }

    /// Adopts a library kernel (`CUkernel`) made elsewhere (`cuda.core`'s
    /// `Kernel.from_handle`). The handle is **borrowed**: nothing here unloads
    /// its library. With `library`, the kernel keeps that [`Library`] loaded, as
    /// a kernel from [`Library::get_kernel`] does, and the handle is checked to
    /// belong to it (`cuKernelGetLibrary`). Its [`name`](Self::name) is the
    /// driver's (`cuKernelGetName`, CUDA 12.3 drivers and newer), else
    /// `kernel@<address>`.
    ///
    /// ```no_run
    /// # fn f(code: &cudars_core::ObjectCode) -> cudars_core::Result<()> {
    /// let lib = code.to_library(&Default::default())?;
    /// let k = lib.get_kernel("scale")?;
    /// // SAFETY: the handle is a kernel of `lib`, which the adopted kernel keeps.
    /// let raw = k.kernel_handle().expect("a library kernel");
    /// let same = unsafe { cudars_core::Kernel::from_handle(raw, Some(lib.clone()))? };
    /// assert_eq!(same.name(), "scale");
    /// # Ok(()) }
    /// ```
    ///
    /// # Safety
    /// `handle` must be a live `CUkernel`. Without `library`, its library must stay
    /// loaded (nobody may call `cuLibraryUnload` on it) for as long as the
    /// returned `Kernel`, its clones, and every launch or graph that uses it exist.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a null handle, or a kernel of another library
    /// than `library`; the driver's error.
    pub unsafe fn from_handle(handle: sys::CUkernel, library: Option<Library>) -> Result<Self> {
        const WHAT: &str = "adopting a kernel handle";
        if handle.is_null() {
            return Err(Error::invalid(WHAT, "the handle is null"));
        }
        crate::device::init()?;
        if let Some(lib) = &library {
            let mut owner: sys::CUlibrary = std::ptr::null_mut();
            // SAFETY: `owner` is valid for writes; the caller vouches for the handle.
            unsafe { sys::cuKernelGetLibrary(&mut owner, handle) }.check(|| WHAT)?;
            if owner != lib.handle() {
                return Err(Error::invalid(
                    WHAT,
                    "the kernel belongs to another library than the one given",
                ));
            }
        }
        let mut name: *const std::ffi::c_char = std::ptr::null();
        // SAFETY: `name` is valid for writes; a live kernel.
        let rc = unsafe { sys::cuKernelGetName(&mut name, handle) };
        let name = driver_name(rc, name, handle.cast());
        Ok(Self::with_handle(Handle::Library(handle, library), name))
    }

    /// Adopts a module function (`CUfunction`) made elsewhere. As
    /// [`from_handle`](Self::from_handle): borrowed; with `module`, kept loaded
    /// and checked to belong to it (`cuFuncGetModule`); named by the driver
    /// (`cuFuncGetName`), else `kernel@<address>`.
    ///
    /// # Safety
    /// `function` must be a live `CUfunction`. Without `module`, its module (and
    /// context) must stay loaded for as long as the returned `Kernel`, its clones,
    /// and every launch or graph that uses it exist. It is launched only in its
    /// own context.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a null handle, or a function of another
    /// module than `module`; the driver's error.
    pub unsafe fn from_function(function: sys::CUfunction, module: Option<Module>) -> Result<Self> {
        const WHAT: &str = "adopting a function handle";
        if function.is_null() {
            return Err(Error::invalid(WHAT, "the handle is null"));
        }
        crate::device::init()?;
        if let Some(m) = &module {
            let mut owner: sys::CUmodule = std::ptr::null_mut();
            // SAFETY: `owner` is valid for writes; the caller vouches for the handle.
            unsafe { sys::cuFuncGetModule(&mut owner, function) }.check(|| WHAT)?;
            if owner != m.handle() {
                return Err(Error::invalid(
                    WHAT,
                    "the function belongs to another module than the one given",
                ));
            }
        }
        let mut name: *const std::ffi::c_char = std::ptr::null();
        // SAFETY: `name` is valid for writes; a live function.
        let rc = unsafe { sys::cuFuncGetName(&mut name, function) };
        let name = driver_name(rc, name, function.cast());
        Ok(Self::with_handle(Handle::Module(function, module), name))
    }

    /// Whether the kernel keeps its library or module loaded (`false` for a
    /// handle adopted without one: [`from_handle`](Self::from_handle)).
    pub fn owns_code(&self) -> bool {
        match &self.inner.handle {
            Handle::Library(_, l) => l.is_some(),
            Handle::Module(_, m) => m.is_some(),
        }
    }

    /// The name it was looked up by.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The handle to launch: a `CUkernel` is accepted wherever a `CUfunction` is.
    pub fn handle(&self) -> sys::CUfunction {
        match &self.inner.handle {
            Handle::Library(k, _) => *k as sys::CUfunction,
            Handle::Module(f, _) => *f,
        }
    }

    /// The `CUkernel` of a library kernel (what [`from_handle`](Self::from_handle)
    /// adopts); `None` for a module's function, whose [`handle`](Self::handle)
    /// is a `CUfunction` ([`from_function`](Self::from_function)).
    pub fn kernel_handle(&self) -> Option<sys::CUkernel> {
        match &self.inner.handle {
            Handle::Library(k, _) => Some(*k),
            Handle::Module(..) => None,
        }
    }

    /// What to pass to `cuLaunchKernel` for a launch in `ctx`, which is current:
    /// the kernel's `CUfunction` in `ctx` when `ctx` is the primary context it was
    /// first launched in (resolved once), otherwise the handle itself.
    #[inline]
    pub(crate) fn launch_handle(&self, ctx: &crate::context::Context) -> sys::CUfunction {
        let Handle::Library(k, _) = &self.inner.handle else {
            return self.handle();
        };
        if !ctx.is_primary() {
            return *k as sys::CUfunction;
        }
        let c = ctx.handle() as usize;
        let (cached_ctx, f) = match self.inner.primary_fn.get() {
            Some(&cached) => cached,
            None => match self.resolve_primary_fn(ctx) {
                Some(cached) => cached,
                None => return *k as sys::CUfunction,
            },
        };
        if cached_ctx == c {
            f as sys::CUfunction
        } else {
            *k as sys::CUfunction
        }
    }

    /// The first launch in a primary context: the kernel's `CUfunction` there,
    /// resolved once, with the context made current for real (the launch itself
    /// may take it as current on trust); `None` if it cannot be resolved.
    #[cold]
    #[inline(never)]
    fn resolve_primary_fn(&self, ctx: &crate::context::Context) -> Option<(usize, usize)> {
        let c = ctx.handle() as usize;
        let f = ctx
            .ensure_current()
            .and_then(|_c| self.function_in_current())
            .ok()?;
        Some(*self.inner.primary_fn.get_or_init(|| (c, f as usize)))
    }

    /// The `CUfunction` of the kernel in the current context (occupancy queries
    /// need one).
    pub(crate) fn function(&self, device: &Device) -> Result<sys::CUfunction> {
        let _current = device.ensure_current()?;
        self.function_in_current()
    }

    /// Makes current the context a query of the handle needs, if none is (see
    /// [`params`](Self::params)): a module function's context; for a library
    /// kernel, none when a context is current, else device 0's primary context.
    fn ensure_context(&self) -> Result<Option<crate::context::Current>> {
        match &self.inner.handle {
            Handle::Module(_, Some(m)) => m.current(),
            // An adopted function: its context is the caller's to make current.
            Handle::Module(_, None) => Ok(None),
            Handle::Library(..) => {
                let mut cur: sys::CUcontext = std::ptr::null_mut();
                // SAFETY: `cur` is valid for writes.
                unsafe { sys::cuCtxGetCurrent(&mut cur) }
                    .check(|| "reading the current context")?;
                if cur.is_null() {
                    Device::new(0)?.ensure_current().map(Some)
                } else {
                    Ok(None)
                }
            }
        }
    }

    /// The `CUfunction` of the kernel in the context current on this thread.
    pub(crate) fn function_in_current(&self) -> Result<sys::CUfunction> {
        match &self.inner.handle {
            Handle::Library(k, _) => {
                let mut f: sys::CUfunction = std::ptr::null_mut();
                // SAFETY: a live kernel; the caller made a context current.
                unsafe { sys::cuKernelGetFunction(&mut f, *k) }
                    .check(|| format!("getting the function of kernel `{}`", self.inner.name))?;
                Ok(f)
            }
            Handle::Module(f, _) => Ok(*f),
        }
    }

    /// The parameters when the driver can report them (CUDA 12.4 and newer),
    /// `None` otherwise: what launches check their arguments against.
    pub(crate) fn params_if_known(&self) -> Result<Option<&[(usize, usize)]>> {
        // Once read, the launch path takes them without asking the version.
        if let Some(p) = self.inner.params.get() {
            return Ok(Some(p));
        }
        if crate::versions::driver_at_least(12040) {
            self.params().map(Some)
        } else {
            Ok(None)
        }
    }

    /// The `(offset, size)` in bytes of each parameter, as the driver reports them.
    ///
    /// The driver reads them in a current context (`cuKernelGetParamInfo` fails
    /// with `CUDA_ERROR_INVALID_CONTEXT` without one), which this makes current
    /// when none is: a module function's own context; for a library kernel, the
    /// one current on this thread, else device 0's primary context (the device
    /// [`Device::current`] names then).
    ///
    /// # Errors
    /// [`Error::Unsupported`](crate::Error::Unsupported) from drivers before CUDA
    /// 12.4, which cannot report them; the driver's error.
    pub fn params(&self) -> Result<&[(usize, usize)]> {
        if let Some(p) = self.inner.params.get() {
            return Ok(p);
        }
        let _current = self.ensure_context()?;
        let mut out = Vec::new();
        loop {
            let (mut off, mut size) = (0usize, 0usize);
            let i = out.len();
            // An index past the end is `CUDA_ERROR_INVALID_VALUE`, which ends the loop.
            let rc = match &self.inner.handle {
                // SAFETY: both out-pointers are valid for writes; a live kernel.
                Handle::Library(k, _) => unsafe {
                    sys::cuKernelGetParamInfo(*k, i, &mut off, &mut size)
                },
                // SAFETY: as above.
                Handle::Module(f, _) => unsafe {
                    sys::cuFuncGetParamInfo(*f, i, &mut off, &mut size)
                },
            };
            if rc == sys::CUDA_ERROR_INVALID_VALUE {
                break;
            }
            rc.check(|| format!("reading the parameters of kernel `{}`", self.inner.name))?;
            out.push((off, size));
        }
        Ok(self.inner.params.get_or_init(|| out))
    }

    /// How many parameters the kernel takes.
    ///
    /// # Errors
    /// The driver's error.
    pub fn num_arguments(&self) -> Result<usize> {
        Ok(self.params()?.len())
    }

    /// One raw attribute on `device`.
    ///
    /// # Errors
    /// The driver's error.
    pub fn attribute(&self, attr: sys::CUfunction_attribute, device: &Device) -> Result<i32> {
        let mut v = 0;
        let rc = match &self.inner.handle {
            // SAFETY: `v` is valid for writes; a live kernel and device.
            Handle::Library(k, _) => unsafe {
                sys::cuKernelGetAttribute(&mut v, attr, *k, device.handle())
            },
            Handle::Module(f, _) => {
                let _current = device.ensure_current()?;
                // SAFETY: as above.
                unsafe { sys::cuFuncGetAttribute(&mut v, attr, *f) }
            }
        };
        rc.check(|| {
            format!(
                "reading attribute {} of kernel `{}`",
                attr.0, self.inner.name
            )
        })?;
        Ok(v)
    }

    /// Sets a settable attribute on `device`.
    ///
    /// # Errors
    /// The driver's error (`CUDA_ERROR_INVALID_VALUE` for read-only attributes or
    /// values out of range).
    pub fn set_attribute(
        &self,
        attr: sys::CUfunction_attribute,
        value: i32,
        device: &Device,
    ) -> Result<()> {
        let rc = match &self.inner.handle {
            // SAFETY: a live kernel and device.
            Handle::Library(k, _) => unsafe {
                sys::cuKernelSetAttribute(attr, value, *k, device.handle())
            },
            Handle::Module(f, _) => {
                let _current = device.ensure_current()?;
                // SAFETY: a live function.
                unsafe { sys::cuFuncSetAttribute(*f, attr, value) }
            }
        };
        rc.check(|| {
            format!(
                "setting attribute {} of kernel `{}` to {value}",
                attr.0, self.inner.name
            )
        })
    }

    /// The typed attributes on `device`.
    pub fn attributes<'a>(&'a self, device: &'a Device) -> KernelAttributes<'a> {
        KernelAttributes {
            kernel: self,
            device,
        }
    }

    /// Sets the kernel's cache preference on `device`.
    ///
    /// # Errors
    /// The driver's error.
    pub fn set_cache_preference(&self, pref: CachePreference, device: &Device) -> Result<()> {
        let c = match pref {
            CachePreference::None => sys::CU_FUNC_CACHE_PREFER_NONE,
            CachePreference::Shared => sys::CU_FUNC_CACHE_PREFER_SHARED,
            CachePreference::L1 => sys::CU_FUNC_CACHE_PREFER_L1,
            CachePreference::Equal => sys::CU_FUNC_CACHE_PREFER_EQUAL,
        };
        let rc = match &self.inner.handle {
            // SAFETY: a live kernel and device.
            Handle::Library(k, _) => unsafe { sys::cuKernelSetCacheConfig(*k, c, device.handle()) },
            Handle::Module(f, _) => {
                let _current = device.ensure_current()?;
                // SAFETY: a live function.
                unsafe { sys::cuFuncSetCacheConfig(*f, c) }
            }
        };
        rc.check(|| {
            format!(
                "setting the cache preference of kernel `{}`",
                self.inner.name
            )
        })
    }

    /// Occupancy queries for this kernel on `device`.
    pub fn occupancy<'a>(&'a self, device: &'a Device) -> Occupancy<'a> {
        Occupancy {
            kernel: self,
            device,
        }
    }
}

/// The attributes of a kernel on one device (`CUfunction_attribute`).
#[derive(Debug, Clone, Copy)]
pub struct KernelAttributes<'a> {
    kernel: &'a Kernel,
    device: &'a Device,
}

macro_rules! kernel_attrs {
    ($($(#[$m:meta])* $name:ident = $attr:ident;)*) => {
        impl KernelAttributes<'_> {
            $(
                $(#[$m])*
                ///
                /// # Errors
                /// The driver's error.
                pub fn $name(&self) -> Result<i32> {
                    self.kernel.attribute(sys::$attr, self.device)
                }
            )*
        }
    };
}

kernel_attrs! {
    /// The most threads a block of this kernel can have.
    max_threads_per_block = CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
    /// Statically allocated shared memory, in bytes.
    shared_size_bytes = CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES;
    /// Constant memory, in bytes.
    const_size_bytes = CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES;
    /// Local memory per thread, in bytes.
    local_size_bytes = CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES;
    /// Registers per thread.
    num_regs = CU_FUNC_ATTRIBUTE_NUM_REGS;
    /// The PTX virtual architecture it was compiled for (`90` for 9.0).
    ptx_version = CU_FUNC_ATTRIBUTE_PTX_VERSION;
    /// The binary architecture it was compiled for (`90` for 9.0).
    binary_version = CU_FUNC_ATTRIBUTE_BINARY_VERSION;
    /// Whether it was compiled with `-Xptxas --dlcm=ca`.
    cache_mode_ca = CU_FUNC_ATTRIBUTE_CACHE_MODE_CA;
    /// The most dynamic shared memory a launch may ask for (settable).
    max_dynamic_shared_size_bytes = CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
    /// The preferred shared-memory carveout, in percent (settable).
    preferred_shared_memory_carveout = CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
    /// Whether a launch must give a cluster size.
    cluster_size_must_be_set = CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET;
    /// The required cluster width (settable before first launch).
    required_cluster_width = CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH;
    /// The required cluster height.
    required_cluster_height = CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT;
    /// The required cluster depth.
    required_cluster_depth = CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH;
    /// Whether cluster sizes beyond the portable 8 are allowed (settable).
    non_portable_cluster_size_allowed = CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED;
    /// The cluster scheduling policy preference (settable).
    cluster_scheduling_policy_preference = CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
}

impl KernelAttributes<'_> {
    /// Sets the most dynamic shared memory a launch may ask for.
    ///
    /// # Errors
    /// The driver's error.
    pub fn set_max_dynamic_shared_size_bytes(&self, bytes: i32) -> Result<()> {
        self.kernel.set_attribute(
            sys::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes,
            self.device,
        )
    }

    /// Sets the preferred shared-memory carveout, in percent (0–100, or -1 for the
    /// default).
    ///
    /// # Errors
    /// The driver's error.
    pub fn set_preferred_shared_memory_carveout(&self, percent: i32) -> Result<()> {
        self.kernel.set_attribute(
            sys::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
            percent,
            self.device,
        )
    }

    /// Allows cluster sizes beyond the portable maximum of 8.
    ///
    /// # Errors
    /// The driver's error.
    pub fn set_non_portable_cluster_size_allowed(&self, allowed: bool) -> Result<()> {
        self.kernel.set_attribute(
            sys::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
            i32::from(allowed),
            self.device,
        )
    }
}

/// Occupancy queries for a kernel on one device.
#[derive(Debug, Clone, Copy)]
pub struct Occupancy<'a> {
    pub(crate) kernel: &'a Kernel,
    pub(crate) device: &'a Device,
}

impl Occupancy<'_> {
    /// How many blocks of `block_size` threads using `dynamic_smem` bytes of
    /// dynamic shared memory fit on one multiprocessor.
    ///
    /// # Errors
    /// The driver's error.
    pub fn max_active_blocks_per_multiprocessor(
        &self,
        block_size: u32,
        dynamic_smem: usize,
    ) -> Result<u32> {
        let f = self.kernel.function(self.device)?;
        let mut n = 0;
        let bs = i32::try_from(block_size)
            .map_err(|_| Error::invalid("an occupancy query", "block size too large"))?;
        // SAFETY: `n` is valid for writes; a live function in the current context.
        unsafe { sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut n, f, bs, dynamic_smem) }
            .check(|| format!("asking the occupancy of kernel `{}`", self.kernel.name()))?;
        Ok(n.max(0) as u32)
    }

    /// The block size that maximises occupancy and the smallest grid that reaches
    /// it: `(min_grid_size, block_size)`, for a fixed `dynamic_smem` per block and
    /// at most `block_size_limit` threads (0: no limit).
    ///
    /// # Errors
    /// The driver's error.
    pub fn max_potential_block_size(
        &self,
        dynamic_smem: usize,
        block_size_limit: u32,
    ) -> Result<(u32, u32)> {
        let f = self.kernel.function(self.device)?;
        let (mut grid, mut block) = (0, 0);
        let limit = i32::try_from(block_size_limit).unwrap_or(i32::MAX);
        // SAFETY: both are valid for writes; no per-block-size callback.
        unsafe {
            sys::cuOccupancyMaxPotentialBlockSize(
                &mut grid,
                &mut block,
                f,
                None,
                dynamic_smem,
                limit,
            )
        }
        .check(|| {
            format!(
                "asking the best block size of kernel `{}`",
                self.kernel.name()
            )
        })?;
        Ok((grid.max(0) as u32, block.max(0) as u32))
    }

    /// [`max_potential_block_size`](Self::max_potential_block_size) for a kernel
    /// whose dynamic shared memory depends on its block size:
    /// `block_size_to_dynamic_smem` gives the bytes a block of that many threads
    /// needs (`cuOccupancyMaxPotentialBlockSize`'s `blockSizeToDynamicSMemSize`;
    /// `cuda.core`'s `max_potential_block_size(CUoccupancyB2DSize, limit)`).
    /// Returns `(min_grid_size, block_size)`, for at most `block_size_limit`
    /// threads (0: no limit).
    ///
    /// ```no_run
    /// # fn f(kernel: &cudars_core::Kernel, dev: &cudars_core::Device) -> cudars_core::Result<()> {
    /// extern "C" fn smem(block_size: std::ffi::c_int) -> usize {
    ///     1024 * (block_size as usize / 32)
    /// }
    /// let (min_grid, block) = kernel.occupancy(dev).max_potential_block_size_with(smem, 0)?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// The driver's error.
    pub fn max_potential_block_size_with(
        &self,
        block_size_to_dynamic_smem: extern "C" fn(std::ffi::c_int) -> usize,
        block_size_limit: u32,
    ) -> Result<(u32, u32)> {
        let f = self.kernel.function(self.device)?;
        let (mut grid, mut block) = (0, 0);
        let limit = i32::try_from(block_size_limit).unwrap_or(i32::MAX);
        // A safe `extern "C" fn` is callable as the `unsafe` one the driver takes.
        let callback: unsafe extern "C" fn(std::ffi::c_int) -> usize = block_size_to_dynamic_smem;
        // SAFETY: both are valid for writes; the callback is a plain function the
        // driver calls during this call only; no fixed shared memory (it is the
        // callback's).
        unsafe {
            sys::cuOccupancyMaxPotentialBlockSize(
                &mut grid,
                &mut block,
                f,
                Some(callback),
                0,
                limit,
            )
        }
        .check(|| {
            format!(
                "asking the best block size of kernel `{}`",
                self.kernel.name()
            )
        })?;
        Ok((grid.max(0) as u32, block.max(0) as u32))
    }

    /// The dynamic shared memory available per block when `num_blocks` blocks of
    /// `block_size` threads run on one multiprocessor.
    ///
    /// # Errors
    /// The driver's error.
    pub fn available_dynamic_shared_memory_per_block(
        &self,
        num_blocks: u32,
        block_size: u32,
    ) -> Result<usize> {
        let f = self.kernel.function(self.device)?;
        let mut n = 0usize;
        let nb = i32::try_from(num_blocks)
            .map_err(|_| Error::invalid("an occupancy query", "too many blocks"))?;
        let bs = i32::try_from(block_size)
            .map_err(|_| Error::invalid("an occupancy query", "block size too large"))?;
        // SAFETY: `n` is valid for writes.
        unsafe { sys::cuOccupancyAvailableDynamicSMemPerBlock(&mut n, f, nb, bs) }.check(|| {
            format!(
                "asking the shared memory of kernel `{}`",
                self.kernel.name()
            )
        })?;
        Ok(n)
    }
}

/// Looking a kernel up in a module: here, so that `module` names no kernel.
impl Module {
    /// The kernel `name` (`cuModuleGetFunction`).
    ///
    /// # Errors
    /// The driver's error (`CUDA_ERROR_NOT_FOUND` for an unknown name).
    pub fn get_function(&self, name: &str) -> Result<Kernel> {
        let _current = self.current()?;
        let cname = c_name(self.lowered(name), "looking up a function")?;
        let mut f: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: a live module and a NUL-terminated name.
        unsafe { sys::cuModuleGetFunction(&mut f, self.handle(), cname.as_ptr()) }
            .check(|| format!("looking up function `{name}`"))?;
        Ok(Kernel::from_module(f, self.clone(), name))
    }
}
