//! Modules (`cuModule*`): code loaded into one context.

use std::fmt;
use std::sync::Arc;

use cudars_bindings::driver as sys;

use crate::code::jit::{JitOptions, loadable};
use crate::code::strings::c_name;
use crate::error::{Check as _, Error, Result};
use crate::{
    code::library_handle::Library, code::object::CodeType, code::object::ObjectCode,
    context::Context,
};

/// Whether the driver loads modules lazily (`CUDA_MODULE_LOADING`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadingMode {
    /// Functions are loaded on first use.
    Lazy,
    /// Everything is loaded with the module.
    Eager,
}

/// Code loaded into one context (`cuModuleLoadDataEx`, `cuModuleLoadFatBinary`),
/// unloaded on drop of the last clone. Prefer [`Library`], which is
/// context-independent; modules are here for code that needs them.
#[derive(Clone)]
pub struct Module {
    inner: Arc<Inner>,
}

struct Inner {
    handle: sys::CUmodule,
    /// The context the module lives in.
    ctx: Option<Context>,
    /// Whether this crate loaded it (and unloads it on drop); a library's module
    /// belongs to the library it keeps alive.
    owned: bool,
    _library: Option<Library>,
    info_log: String,
    symbol_mapping: std::collections::BTreeMap<String, String>,
}

// SAFETY: module handles may be used from any thread (with their context current,
// which every method ensures).
// Soundness contract: rule 11.
unsafe impl Send for Inner {}
// SAFETY: as above.
// Soundness contract: rule 11.
unsafe impl Sync for Inner {}

impl fmt::Debug for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Module")
            .field("handle", &self.inner.handle)
            .finish()
    }
}

impl Module {
    /// Loads cubin, PTX or fatbin code into `ctx`, JIT-compiling PTX with
    /// `options`; the JIT's logs are kept ([`info_log`](Self::info_log)) or
    /// returned in the error.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for LTO-IR, objects and static libraries;
    /// [`Error::Compile`] with the JIT's error log; the driver's error.
    pub fn load(ctx: &Context, code: &ObjectCode, options: &JitOptions) -> Result<Self> {
        let what = || format!("loading {} `{}` as a module", code.code_type(), code.name());
        if !matches!(
            code.code_type(),
            CodeType::Cubin | CodeType::Ptx | CodeType::Fatbin
        ) {
            return Err(Error::invalid(
                what(),
                "only cubin, PTX and fatbin load directly",
            ));
        }
        let _current = ctx.ensure_current()?;
        crate::code::jit::check_image(code)?;
        let bytes = loadable(code);
        let mut jit = options.raw();
        let mut handle: sys::CUmodule = std::ptr::null_mut();
        let rc = if code.code_type() == CodeType::Fatbin {
            // SAFETY: a complete fat binary image.
            unsafe { sys::cuModuleLoadFatBinary(&mut handle, bytes.as_ptr().cast()) }
        } else {
            // SAFETY: a complete image; the option arrays and log buffers live in
            // `jit` for the call.
            unsafe {
                sys::cuModuleLoadDataEx(
                    &mut handle,
                    bytes.as_ptr().cast(),
                    jit.count(),
                    jit.keys.as_mut_ptr(),
                    jit.values.as_mut_ptr(),
                )
            }
        };
        if rc != sys::CUDA_SUCCESS {
            let source = cudars_bindings::driver::DriverError::new(rc);
            let log = jit.error_log();
            return Err(if log.is_empty() {
                Error::from_driver(what(), source)
            } else {
                Error::compile(what(), log, source)
            });
        }
        Ok(Self {
            inner: Arc::new(Inner {
                handle,
                ctx: Some(ctx.clone()),
                owned: true,
                _library: None,
                info_log: jit.info_log(),
                symbol_mapping: code.symbol_mapping().clone(),
            }),
        })
    }

    pub(crate) fn borrowed(handle: sys::CUmodule, library: Library, ctx: Context) -> Self {
        Self {
            inner: Arc::new(Inner {
                handle,
                ctx: Some(ctx),
                owned: false,
                _library: Some(library),
                info_log: String::new(),
                symbol_mapping: Default::default(),
            }),
        }
    }

    /// The driver's handle.
    pub fn handle(&self) -> sys::CUmodule {
        self.inner.handle
    }

    /// The JIT's info log from loading.
    pub fn info_log(&self) -> &str {
        &self.inner.info_log
    }

    /// Makes the module's context current (when it knows it) for a call on it
    /// or one of its functions.
    pub(crate) fn current(&self) -> Result<Option<crate::context::Current>> {
        self.inner
            .ctx
            .as_ref()
            .map(Context::ensure_current)
            .transpose()
    }

    pub(crate) fn lowered<'a>(&'a self, name: &'a str) -> &'a str {
        crate::code::object::lower(&self.inner.symbol_mapping, name)
    }

    /// The address and size of the global `name` (`cuModuleGetGlobal`).
    ///
    /// # Errors
    /// The driver's error.
    pub fn get_global(&self, name: &str) -> Result<(sys::CUdeviceptr, usize)> {
        let _current = self.current()?;
        let cname = c_name(self.lowered(name), "looking up a global")?;
        let (mut p, mut n) = (0, 0);
        // SAFETY: both are valid for writes; a live module.
        unsafe { sys::cuModuleGetGlobal(&mut p, &mut n, self.inner.handle, cname.as_ptr()) }
            .check(|| format!("looking up global `{name}`"))?;
        Ok((p, n))
    }

    /// Whether the driver loads modules lazily.
    ///
    /// # Errors
    /// The driver's error.
    pub fn loading_mode() -> Result<LoadingMode> {
        crate::device::init()?;
        let mut m = sys::CU_MODULE_EAGER_LOADING;
        // SAFETY: `m` is valid for writes.
        unsafe { sys::cuModuleGetLoadingMode(&mut m) }
            .check(|| "reading the module loading mode")?;
        Ok(if m == sys::CU_MODULE_LAZY_LOADING {
            LoadingMode::Lazy
        } else {
            LoadingMode::Eager
        })
    }
}

// Deferred-release rule: on a driver callback thread the unload (a CUDA call) is
// handed to the deferred queue instead of made there.
impl Drop for Inner {
    fn drop(&mut self) {
        if let (true, Some(ctx)) = (self.owned, &self.ctx) {
            let ctx = ctx.clone();
            let unload = move |h: sys::CUmodule| {
                let _current = ctx.ensure_current();
                // SAFETY: an owned module, unloaded once, after every kernel from it.
                let rc = unsafe { sys::cuModuleUnload(h) };
                crate::cleanup::driver(rc, "unloading a module (cuModuleUnload)");
            };
            if crate::deferred::must_defer() {
                // SAFETY: the owned module handle; its one unload moves to the queue.
                unsafe { crate::deferred::defer_handle("unloading a module", self.handle, unload) };
                return;
            }
            unload(self.handle);
        }
    }
}
