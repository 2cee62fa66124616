//! Libraries (`cuLibrary*`): context-independent loaded code.

use std::ffi::{CStr, c_char, c_void};
use std::sync::Arc;

use bytemuck::Pod;
use cudars_bindings::driver as sys;

use crate::code::jit::{JitOptions, loadable};
use crate::code::library_handle::{Inner, Library};
use crate::code::strings::c_name;
use crate::error::{Check as _, Error, Result};
use crate::{
    code::kernel::Kernel, code::module::Module, code::object::CodeType, code::object::ObjectCode,
    context::Context, stream::Stream,
};

/// Options of [`Library::load`] (`CUlibraryOption`) and the JIT options for PTX.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LibraryOptions {
    /// `CU_LIBRARY_BINARY_IS_PRESERVED`: the driver may keep pointing at the code
    /// bytes instead of copying them; the [`Library`] then keeps its own copy alive.
    pub binary_is_preserved: bool,
    /// JIT options for PTX in the code.
    pub jit: JitOptions,
}

impl Library {
    fn lowered<'a>(&'a self, name: &'a str) -> &'a str {
        crate::code::object::lower(&self.inner.symbol_mapping, name)
    }

    /// Loads cubin, PTX or fatbin code.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for code kinds the driver cannot load (LTO-IR,
    /// objects, static libraries: link them first); [`Error::Compile`] with the
    /// JIT's error log when PTX does not compile; the driver's error.
    pub fn load(code: &ObjectCode, options: &LibraryOptions) -> Result<Self> {
        let what = || {
            format!(
                "loading {} `{}` as a library",
                code.code_type(),
                code.name()
            )
        };
        if !matches!(
            code.code_type(),
            CodeType::Cubin | CodeType::Ptx | CodeType::Fatbin
        ) {
            return Err(Error::invalid(
                what(),
                "only cubin, PTX and fatbin load directly; link other kinds with `Linker` first",
            ));
        }
        crate::code::jit::check_image(code)?;
        crate::device::init()?;
        let bytes = loadable(code);
        let mut jit = options.jit.raw();
        let mut lib_keys: Vec<sys::CUlibraryOption> = Vec::new();
        let mut lib_values: Vec<*mut c_void> = Vec::new();
        if options.binary_is_preserved {
            lib_keys.push(sys::CU_LIBRARY_BINARY_IS_PRESERVED);
            // The option's value travels in the pointer slot: 1 = true.
            lib_values.push(std::ptr::without_provenance_mut(1));
        }
        // Keep our own copy when the driver may point at it.
        let kept = options.binary_is_preserved.then(|| bytes.to_vec());
        let ptr: *const c_void = match &kept {
            Some(k) => k.as_ptr().cast(),
            None => bytes.as_ptr().cast(),
        };
        let mut handle: sys::CUlibrary = std::ptr::null_mut();
        // SAFETY: `ptr` addresses a complete image; the option arrays and log buffers
        // live in `jit`/`lib_*` for the call; counts match the arrays.
        let rc = unsafe {
            sys::cuLibraryLoadData(
                &mut handle,
                ptr,
                jit.keys.as_mut_ptr(),
                jit.values.as_mut_ptr(),
                jit.count(),
                lib_keys.as_mut_ptr(),
                lib_values.as_mut_ptr(),
                lib_keys.len() as u32,
            )
        };
        if rc != sys::CUDA_SUCCESS {
            let source = cudars_bindings::driver::DriverError::new(rc);
            let log = jit.error_log();
            if !log.is_empty() {
                return Err(Error::compile(what(), log, source));
            }
            return Err(Error::from_driver(what(), source));
        }
        Ok(Self {
            inner: Arc::new(Inner {
                handle,
                _code: kept,
                info_log: jit.info_log(),
                symbol_mapping: code.symbol_mapping().clone(),
            }),
        })
    }

    /// Loads code from a file (`cuLibraryLoadFromFile`).
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read; as [`load`](Self::load).
    pub fn load_file(
        path: impl AsRef<std::path::Path>,
        code_type: CodeType,
        options: &LibraryOptions,
    ) -> Result<Self> {
        Self::load(&ObjectCode::from_file(path, code_type)?, options)
    }

    /// The kernel `name` (a name expression given to the compiler, or the plain or
    /// mangled symbol).
    ///
    /// # Errors
    /// The driver's error (`CUDA_ERROR_NOT_FOUND` for an unknown name).
    pub fn get_kernel(&self, name: &str) -> Result<Kernel> {
        let cname = c_name(self.lowered(name), "looking up a kernel")?;
        let mut k: sys::CUkernel = std::ptr::null_mut();
        // SAFETY: a live library and a NUL-terminated name.
        unsafe { sys::cuLibraryGetKernel(&mut k, self.inner.handle, cname.as_ptr()) }
            .check(|| format!("looking up kernel `{name}`"))?;
        Kernel::from_library(k, self.clone(), name)
    }

    /// How many kernels the library holds.
    ///
    /// # Errors
    /// The driver's error.
    pub fn kernel_count(&self) -> Result<usize> {
        let mut n = 0u32;
        // SAFETY: `n` is valid for writes.
        unsafe { sys::cuLibraryGetKernelCount(&mut n, self.inner.handle) }
            .check(|| "counting kernels")?;
        Ok(n as usize)
    }

    /// Every kernel of the library.
    ///
    /// # Errors
    /// The driver's error.
    pub fn kernels(&self) -> Result<Vec<Kernel>> {
        let n = self.kernel_count()?;
        let mut ks: Vec<sys::CUkernel> = vec![std::ptr::null_mut(); n];
        // SAFETY: `ks` holds `n` slots.
        unsafe { sys::cuLibraryEnumerateKernels(ks.as_mut_ptr(), n as u32, self.inner.handle) }
            .check(|| "enumerating kernels")?;
        ks.into_iter()
            .map(|k| {
                let mut p: *const c_char = std::ptr::null();
                // SAFETY: a kernel of this library; the name is owned by the driver.
                unsafe { sys::cuKernelGetName(&mut p, k) }.check(|| "reading a kernel's name")?;
                let name = if p.is_null() {
                    String::new()
                } else {
                    // SAFETY: a NUL-terminated name the library keeps.
                    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
                };
                Kernel::from_library(k, self.clone(), &name)
            })
            .collect()
    }

    /// The `__device__` (or `__constant__`) variable `name`: its address and size
    /// in `ctx`'s copy (each context has its own). The [`Global`] keeps `ctx` alive.
    ///
    /// # Errors
    /// The driver's error (`CUDA_ERROR_NOT_FOUND` for an unknown name).
    pub fn get_global(&self, ctx: &Context, name: &str) -> Result<Global> {
        let _current = ctx.ensure_current()?;
        let cname = c_name(self.lowered(name), "looking up a global")?;
        let (mut ptr, mut size) = (0, 0);
        // SAFETY: both are valid for writes; a live library.
        unsafe { sys::cuLibraryGetGlobal(&mut ptr, &mut size, self.inner.handle, cname.as_ptr()) }
            .check(|| format!("looking up global `{name}`"))?;
        Ok(Global {
            ptr,
            size,
            name: name.to_string(),
            _library: self.clone(),
            _ctx: Some(ctx.clone()),
        })
    }

    /// The `__managed__` variable `name`: its address (valid on host and device)
    /// and size.
    ///
    /// # Errors
    /// The driver's error.
    pub fn get_managed(&self, name: &str) -> Result<Global> {
        let cname = c_name(self.lowered(name), "looking up a managed variable")?;
        let (mut ptr, mut size) = (0, 0);
        // SAFETY: both are valid for writes; a live library.
        unsafe { sys::cuLibraryGetManaged(&mut ptr, &mut size, self.inner.handle, cname.as_ptr()) }
            .check(|| format!("looking up managed variable `{name}`"))?;
        Ok(Global {
            ptr,
            size,
            name: name.to_string(),
            _library: self.clone(),
            _ctx: None,
        })
    }

    /// The address of the unified function `name` (`cuLibraryGetUnifiedFunction`).
    ///
    /// # Errors
    /// The driver's error.
    pub fn get_unified_function(&self, name: &str) -> Result<*mut c_void> {
        let cname = c_name(self.lowered(name), "looking up a unified function")?;
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: `p` is valid for writes; a live library.
        unsafe { sys::cuLibraryGetUnifiedFunction(&mut p, self.inner.handle, cname.as_ptr()) }
            .check(|| format!("looking up unified function `{name}`"))?;
        Ok(p)
    }

    /// The module of the library in `ctx` (the [`Module`] keeps `ctx` alive).
    ///
    /// # Errors
    /// The driver's error.
    pub fn get_module(&self, ctx: &Context) -> Result<Module> {
        let _current = ctx.ensure_current()?;
        let mut m: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: `m` is valid for writes; a live library.
        unsafe { sys::cuLibraryGetModule(&mut m, self.inner.handle) }
            .check(|| "getting a library's module")?;
        Ok(Module::borrowed(m, self.clone(), ctx.clone()))
    }
}

/// A `__device__`, `__constant__` or `__managed__` variable of a loaded
/// [`Library`]: its address and size, with typed copies to and from it. Keeps the
/// library loaded.
#[derive(Debug, Clone)]
pub struct Global {
    ptr: sys::CUdeviceptr,
    size: usize,
    name: String,
    _library: Library,
    /// The context whose copy this is (`None` for managed variables).
    _ctx: Option<Context>,
}

impl Global {
    /// The device address.
    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// The size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    fn check(&self, bytes: usize, what: &'static str) -> Result<()> {
        if bytes != self.size {
            return Err(Error::invalid(
                what,
                format!(
                    "`{}` is {} bytes, the host side {bytes}",
                    self.name, self.size
                ),
            ));
        }
        Ok(())
    }

    /// Writes `value` (exactly the variable's size) on `stream`, and waits.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a size mismatch; the driver's error.
    pub fn write<T: Pod>(&self, value: &[T], stream: &Stream) -> Result<()> {
        let bytes = std::mem::size_of_val(value);
        self.check(bytes, "writing a global variable")?;
        let _current = stream.context().ensure_current()?;
        // SAFETY: `bytes` readable bytes into a live global of that size; waited on.
        unsafe { sys::cuMemcpyHtoDAsync(self.ptr, value.as_ptr().cast(), bytes, stream.handle()) }
            .check(|| format!("writing global `{}`", self.name))?;
        stream.drain()
    }

    /// Reads the variable into `out` (exactly its size) on `stream`, and waits.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a size mismatch; the driver's error.
    pub fn read<T: Pod>(&self, out: &mut [T], stream: &Stream) -> Result<()> {
        let bytes = std::mem::size_of_val(out);
        self.check(bytes, "reading a global variable")?;
        let _current = stream.context().ensure_current()?;
        // SAFETY: `bytes` writable bytes (any pattern is a valid `Pod`); waited on.
        unsafe {
            sys::cuMemcpyDtoHAsync(out.as_mut_ptr().cast(), self.ptr, bytes, stream.handle())
        }
        .check(|| format!("reading global `{}`", self.name))?;
        stream.drain()
    }
}

impl ObjectCode {
    /// The [`Library`] this code is loaded as, loaded with `options` if it is
    /// not loaded yet. There is one library per `ObjectCode`: the one
    /// [`library`](Self::library) and [`get_kernel`](Self::get_kernel) use, so a
    /// `__constant__` or `__device__` variable written through the returned
    /// library is the one the code's kernels read. (`Library::load` loads a
    /// separate copy, with variables of its own.)
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the code is already loaded with other
    /// options (a second load would be a second copy of every variable: load it
    /// with [`Library::load`] if that is what you mean); as [`Library::load`].
    pub fn to_library(&self, options: &LibraryOptions) -> Result<Library> {
        self.loaded_with(options)
    }

    fn loaded_with(&self, options: &LibraryOptions) -> Result<Library> {
        let kept = match self.inner.loaded.get() {
            Some(kept) => kept,
            None => {
                let l = Library::load(self, options)?;
                // A load that lost a race to another thread's is dropped here
                // (unloaded); the kept one is checked below like any other.
                self.inner
                    .loaded
                    .get_or_init(|| (l, Box::new(options.clone())))
            }
        };
        let loaded_with = kept.1.downcast_ref::<LibraryOptions>();
        if loaded_with != Some(options) {
            return Err(Error::invalid(
                format!(
                    "loading {} `{}` as a library",
                    self.code_type(),
                    self.name()
                ),
                format!(
                    "this code is already loaded with other options ({loaded_with:?}); \
                     an `ObjectCode` is loaded once, so that its kernels and variables \
                     are one module's: use `Library::load` for a separate copy"
                ),
            ));
        }
        Ok(kept.0.clone())
    }

    /// The kernel `name` (source name expression, plain or mangled name); the code
    /// is loaded as a library on first use and kept.
    ///
    /// # Errors
    /// As [`Library::load`] and [`Library::get_kernel`].
    pub fn get_kernel(&self, name: &str) -> Result<Kernel> {
        self.library()?.get_kernel(name)
    }

    /// The [`Library`] this code is loaded as, on first use (by this call,
    /// [`get_kernel`](Self::get_kernel), [`handle`](Self::handle),
    /// [`get_module`](Self::get_module) or [`to_library`](Self::to_library)) and
    /// kept: every later call returns the same library. Loaded with the default
    /// options unless `to_library` loaded it first with its own.
    ///
    /// # Errors
    /// As [`Library::load`].
    pub fn library(&self) -> Result<Library> {
        if let Some((l, _)) = self.inner.loaded.get() {
            return Ok(l.clone());
        }
        self.loaded_with(&LibraryOptions::default())
    }

    /// The driver's handle of the loaded code (`cuda.core`'s
    /// `ObjectCode.handle`): the `CUlibrary` of [`library`](Self::library),
    /// loaded on first use. It stays valid as long as this `ObjectCode` (or a
    /// clone of the library) lives.
    ///
    /// # Errors
    /// As [`Library::load`].
    pub fn handle(&self) -> Result<sys::CUlibrary> {
        Ok(self.library()?.handle())
    }

    /// The module of the loaded code in `ctx` (`cuda.core`'s
    /// `ObjectCode.get_module`): [`library`](Self::library)'s module there
    /// (`cuLibraryGetModule`). The [`Module`] keeps the library and `ctx` alive.
    ///
    /// # Errors
    /// As [`Library::load`] and [`Library::get_module`].
    pub fn get_module(&self, ctx: &Context) -> Result<Module> {
        self.library()?.get_module(ctx)
    }
}
