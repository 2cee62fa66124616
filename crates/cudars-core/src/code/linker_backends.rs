//! The two linkers behind [`Linker`](crate::Linker): nvJitLink's handle and
//! the driver's `CUlinkState`, each created, fed, finished and destroyed here.

use crate::code::linker_options::{LinkerOptions, OPTIONS_CONTEXT};
use crate::code::object::{CodeType, ObjectCode};
use crate::code::strings::{input_bytes, input_name, strip_nul, text};
use crate::error::{Check as _, Error, Result};
use cudars_bindings::IntoResult as _;
use cudars_bindings::driver::{self as sys, DriverError};
use cudars_bindings::nvjitlink as jl;
use std::ffi::{CString, c_char, c_uint, c_void};

/// An nvJitLink handle and what it needs kept alive.
pub(crate) struct JitLink {
    pub(crate) handle: jl::nvJitLinkHandle,
    pub(crate) ptx: bool,
    /// Whether the link optimises LTO-IR (`-lto`): linked LTO-IR needs it.
    pub(crate) lto: bool,
    /// Whether `nvJitLinkComplete` has succeeded (it is called once).
    pub(crate) completed: bool,
    pub(crate) output: Option<ObjectCode>,
    /// The linked LTO-IR, once read ([`Linker::link_ltoir`](crate::Linker::link_ltoir)).
    pub(crate) ltoir_output: Option<ObjectCode>,
    /// The inputs' bytes, kept for the handle's life.
    pub(crate) _inputs: Vec<Vec<u8>>,
}

// SAFETY: an nvJitLink handle may be used from any thread, one call at a time; the
// `Mutex` in `Linker` serialises every use.
// Soundness contract: rule 11.
unsafe impl Send for JitLink {}

pub(crate) type JitSizeFn = unsafe fn(jl::nvJitLinkHandle, *mut usize) -> jl::nvJitLinkResult;
/// A copy function: the byte type differs (`char` for logs and PTX, `void` for cubin).
pub(crate) type JitGetFn<P> = unsafe fn(jl::nvJitLinkHandle, *mut P) -> jl::nvJitLinkResult;

impl JitLink {
    pub(crate) fn new(inputs: &[&ObjectCode], options: &LinkerOptions) -> Result<Self> {
        let args = options.to_nvjitlink_args()?;
        if options.relocatable {
            require_nvjitlink(
                (13, 2),
                "an incremental link (`LinkerOptions::relocatable`, `-r`)",
                || "creating an nvJitLink linker".into(),
            )?;
        }
        let args: Vec<CString> = args
            .into_iter()
            .map(CString::new)
            .collect::<Result<_, _>>()
            .map_err(|_| Error::invalid(OPTIONS_CONTEXT, "an option has a NUL byte"))?;
        let mut ptrs: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
        let count = u32::try_from(ptrs.len())
            .map_err(|_| Error::invalid(OPTIONS_CONTEXT, "too many options"))?;
        let mut this = Self {
            handle: std::ptr::null_mut(),
            ptx: options.ptx,
            lto: options.link_time_optimization,
            completed: false,
            output: None,
            ltoir_output: None,
            _inputs: Vec::with_capacity(inputs.len()),
        };
        // SAFETY: `this.handle` is valid for writes; `ptrs` holds `count` pointers
        // to NUL-terminated strings in `args`, which outlive the call (CUDA 12's
        // header takes them as mutable, CUDA 13's as const; nvJitLink only reads).
        unsafe { jl::nvJitLinkCreate(&mut this.handle, count, ptrs.as_mut_ptr()) }
            .result()
            .map_err(|e| {
                // Name the options: nvJitLink's refusal of one does not say which.
                let given: Vec<_> = args.iter().map(|a| a.to_string_lossy()).collect();
                Error::tool(
                    format!(
                        "creating an nvJitLink linker with options `{}` (nvJitLinkCreate)",
                        given.join(" ")
                    ),
                    e,
                )
            })?;
        for input in inputs {
            let kind = match input.code_type() {
                CodeType::Cubin => jl::NVJITLINK_INPUT_CUBIN,
                CodeType::Ptx => jl::NVJITLINK_INPUT_PTX,
                CodeType::Ltoir => jl::NVJITLINK_INPUT_LTOIR,
                CodeType::Fatbin => jl::NVJITLINK_INPUT_FATBIN,
                CodeType::Object => jl::NVJITLINK_INPUT_OBJECT,
                CodeType::Library => jl::NVJITLINK_INPUT_LIBRARY,
            };
            let bytes = input_bytes(input);
            let name = input_name(input);
            // SAFETY: the handle is live; `bytes` is `bytes.len()` readable bytes,
            // kept alive with the handle; `name` is NUL-terminated.
            let rc = unsafe {
                jl::nvJitLinkAddData(
                    this.handle,
                    kind,
                    bytes.as_ptr().cast(),
                    bytes.len(),
                    name.as_ptr(),
                )
            };
            this._inputs.push(bytes);
            if let Err(e) = rc.result() {
                return Err(Error::compile(
                    format!(
                        "adding {} input {} to the nvJitLink link",
                        input.code_type(),
                        input.name()
                    ),
                    this.error_log(),
                    e,
                ));
            }
        }
        Ok(this)
    }

    /// `nvJitLinkComplete`, once.
    fn finish(&mut self, name: &str) -> Result<()> {
        if self.completed {
            return Ok(());
        }
        // SAFETY: the handle is live and every input has been added.
        if let Err(e) = unsafe { jl::nvJitLinkComplete(self.handle) }.result() {
            return Err(Error::compile(
                format!("linking {} with nvJitLink", name),
                self.error_log(),
                e,
            ));
        }
        self.completed = true;
        Ok(())
    }

    /// Completes the link and reads the linked LTO-IR.
    pub(crate) fn complete_ltoir(&mut self, name: &str) -> Result<Vec<u8>> {
        let context = || format!("reading the linked LTO-IR of {name}");
        if !self.lto {
            return Err(Error::invalid(
                context(),
                "linked LTO-IR needs `link_time_optimization` (-lto)",
            ));
        }
        if self.ptx {
            return Err(Error::invalid(
                context(),
                "the link was asked for PTX (`ptx`); LTO-IR is read from a link to a cubin",
            ));
        }
        require_nvjitlink((13, 3), "linked LTO-IR (`nvJitLinkGetLinkedLTOIR`)", || {
            context().into()
        })?;
        if !jl::is_available("nvJitLinkGetLinkedLTOIR")
            || !jl::is_available("nvJitLinkGetLinkedLTOIRSize")
        {
            return Err(Error::unsupported(
                context(),
                "the loaded nvJitLink does not export nvJitLinkGetLinkedLTOIR",
            ));
        }
        self.finish(name)?;
        let code = self
            .bytes(jl::nvJitLinkGetLinkedLTOIRSize, jl::nvJitLinkGetLinkedLTOIR)
            .map_err(|e| Error::tool(context(), e))?;
        if code.is_empty() {
            return Err(Error::invalid(context(), "nvJitLink produced no LTO-IR"));
        }
        Ok(code)
    }

    pub(crate) fn complete(&mut self, name: &str) -> Result<Vec<u8>> {
        self.finish(name)?;
        let (code, what) = if self.ptx {
            let ptx = self.bytes(jl::nvJitLinkGetLinkedPtxSize, jl::nvJitLinkGetLinkedPtx);
            (ptx, "PTX")
        } else {
            let cubin = self.bytes(jl::nvJitLinkGetLinkedCubinSize, jl::nvJitLinkGetLinkedCubin);
            (cubin, "cubin")
        };
        let mut code = code.map_err(|e| Error::tool(format!("reading the linked {what}"), e))?;
        if self.ptx {
            strip_nul(&mut code);
        }
        if code.is_empty() {
            return Err(Error::invalid(
                format!("linking {}", name),
                format!("nvJitLink produced no {what}"),
            ));
        }
        Ok(code)
    }

    pub(crate) fn bytes<P>(
        &self,
        size: JitSizeFn,
        get: JitGetFn<P>,
    ) -> Result<Vec<u8>, jl::NvJitLinkError> {
        crate::code::strings::sized_output(
            // SAFETY: the handle is live; `n` is valid for writes.
            |n| unsafe { size(self.handle, n) }.result(),
            // SAFETY: `buf` holds the bytes nvJitLink said it will write.
            |buf| unsafe { get(self.handle, buf.cast::<P>()) }.result(),
        )
    }

    pub(crate) fn log(&self, size: JitSizeFn, get: JitGetFn<c_char>) -> String {
        self.bytes(size, get).map(|b| text(&b)).unwrap_or_default()
    }

    pub(crate) fn error_log(&self) -> String {
        self.log(jl::nvJitLinkGetErrorLogSize, jl::nvJitLinkGetErrorLog)
    }
}

impl Drop for JitLink {
    fn drop(&mut self) {
        if !self.handle.is_null() {
            // SAFETY: a handle from nvJitLinkCreate, destroyed once here.
            let r = unsafe { jl::nvJitLinkDestroy(&mut self.handle) }.result();
            crate::cleanup::report(
                r.map_err(|e| Error::tool("destroying an nvJitLink linker (nvJitLinkDestroy)", e)),
            );
        }
    }
}

/// `Ok` when the loaded nvJitLink is `needs` (major, minor) or newer, else
/// [`Error::Unsupported`] naming `feature`, the version it needs and the loaded
/// one. A version that cannot be read is nvJitLink's own error.
pub(crate) fn require_nvjitlink(
    needs: (i32, i32),
    feature: &str,
    context: impl FnOnce() -> std::borrow::Cow<'static, str>,
) -> Result<()> {
    let have = jl::version().map_err(|e| Error::tool("reading nvJitLink's version", e))?;
    if (have.major, have.minor) >= needs {
        return Ok(());
    }
    Err(Error::unsupported(
        context(),
        format!(
            "{feature} needs nvJitLink {}.{}; the loaded nvJitLink is {}.{}",
            needs.0, needs.1, have.major, have.minor
        ),
    ))
}

/// The size of each of the driver linker's log buffers.
pub(crate) const DRIVER_LOG_BYTES: usize = 1 << 20;

/// A driver link state and the buffers and option arrays it writes into.
pub(crate) struct DriverLink {
    pub(crate) state: sys::CUlinkState,
    /// The context current when the state was created: the driver's linker works
    /// in it, so it is made current again before each later call.
    pub(crate) ctx: sys::CUcontext,
    pub(crate) output: Option<ObjectCode>,
    pub(crate) info_log: Vec<u8>, // `Vec`, not `Box`: moving it keeps the driver's pointer valid
    pub(crate) error_log: Vec<u8>,
    /// The option keys and values given to `cuLinkCreate`: the driver keeps
    /// pointers into them for the state's life.
    pub(crate) _keys: Box<[sys::CUjit_option]>,
    pub(crate) _values: Box<[*mut c_void]>,
    /// The inputs' bytes, kept for the state's life.
    pub(crate) _inputs: Vec<Vec<u8>>,
}

// SAFETY: a CUlinkState may be used from any thread with its context current, one
// call at a time; the `Mutex` in `Linker` serialises every use. The buffers it
// points into are owned here.
// Soundness contract: rule 11.
unsafe impl Send for DriverLink {}

impl DriverLink {
    pub(crate) fn new(inputs: &[&ObjectCode], options: &LinkerOptions) -> Result<Self> {
        const CONTEXT: &str = "linking with the driver's JIT linker";
        let arch = options.check()?;
        let unsupported = [
            ("time", options.time),
            ("ptx", options.ptx),
            ("kernels_used", !options.kernels_used.is_empty()),
            ("variables_used", !options.variables_used.is_empty()),
            (
                "optimize_unused_variables",
                options.optimize_unused_variables,
            ),
            ("ptxas_options", !options.ptxas_options.is_empty()),
            ("split_compile", options.split_compile.is_some()),
            (
                "split_compile_extended",
                options.split_compile_extended.is_some(),
            ),
            ("relocatable", options.relocatable),
            ("numba_debug", options.numba_debug),
            ("extra", !options.extra.is_empty()),
            ("extra_unchecked", !options.extra_unchecked.is_empty()),
        ];
        if let Some((field, _)) = unsupported.iter().find(|(_, set)| *set) {
            return Err(Error::unsupported(
                CONTEXT,
                format!("the driver's linker has no counterpart of `{field}` (nvJitLink has)"),
            ));
        }
        // The images, by what they are, before the link state exists.
        for input in inputs {
            crate::code::jit::check_link_input(input)?;
        }
        let mut info_log = vec![0u8; DRIVER_LOG_BYTES];
        let mut error_log = vec![0u8; DRIVER_LOG_BYTES];
        // Integer option values travel in the pointer itself, as cuda.h says.
        let int = |v: u32| v as usize as *mut c_void;
        let target = arch.number
            + match arch.suffix {
                Some('a') => 0x1_0000,
                Some('f') => 0x2_0000,
                _ => 0,
            };
        let mut keys = vec![
            sys::CU_JIT_INFO_LOG_BUFFER,
            sys::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            sys::CU_JIT_ERROR_LOG_BUFFER,
            sys::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            sys::CU_JIT_TARGET,
        ];
        let mut values = vec![
            info_log.as_mut_ptr().cast(),
            DRIVER_LOG_BYTES as *mut c_void,
            error_log.as_mut_ptr().cast(),
            DRIVER_LOG_BYTES as *mut c_void,
            int(target),
        ];
        let mut add = |key, value| {
            keys.push(key);
            values.push(value);
        };
        if let Some(n) = options.max_register_count {
            add(sys::CU_JIT_MAX_REGISTERS, int(n));
        }
        if options.verbose {
            add(sys::CU_JIT_LOG_VERBOSE, int(1));
        }
        if options.link_time_optimization {
            add(sys::CU_JIT_LTO, int(1));
        }
        if let Some(n) = options.optimization_level {
            add(sys::CU_JIT_OPTIMIZATION_LEVEL, int(n));
        }
        if options.debug {
            add(sys::CU_JIT_GENERATE_DEBUG_INFO, int(1));
        }
        if options.lineinfo {
            add(sys::CU_JIT_GENERATE_LINE_INFO, int(1));
        }
        if options.no_cache {
            // `cuda.core`'s `CU_JIT_CACHE_MODE` = `CU_JIT_CACHE_OPTION_NONE`.
            add(sys::CU_JIT_CACHE_MODE, int(sys::CU_JIT_CACHE_OPTION_NONE.0));
        }
        // ftz, prec_div, prec_sqrt and fma are deprecated in the driver (they applied
        // to its LTO only) and, as in cuda.core, not passed.
        let mut keys = keys.into_boxed_slice();
        let mut values = values.into_boxed_slice();
        let count = c_uint::try_from(keys.len())
            .map_err(|_| Error::invalid(OPTIONS_CONTEXT, "too many options"))?;
        let mut this = Self {
            state: std::ptr::null_mut(),
            ctx: std::ptr::null_mut(),
            output: None,
            info_log,
            error_log,
            _keys: Box::default(),
            _values: Box::default(),
            _inputs: Vec::with_capacity(inputs.len()),
        };
        // SAFETY: `keys` and `values` hold `count` entries; the log buffers they
        // point to are owned by `this` (boxed: they do not move) and outlive the
        // state, as do the arrays, which `this` keeps; `this.state` is valid for
        // writes.
        unsafe {
            sys::cuLinkCreate(
                count,
                keys.as_mut_ptr(),
                values.as_mut_ptr(),
                &mut this.state,
            )
        }
        .check(|| {
            "creating the driver's JIT linker (cuLinkCreate; nvJitLink is unavailable, and \
             the driver's linker needs a current context)"
        })?;
        // SAFETY: `this.ctx` is valid for writes.
        unsafe { sys::cuCtxGetCurrent(&mut this.ctx) }
            .check(|| "reading the current context for the driver's JIT linker")?;
        this._keys = keys;
        this._values = values;
        for input in inputs {
            let kind = match input.code_type() {
                CodeType::Cubin => sys::CU_JIT_INPUT_CUBIN,
                CodeType::Ptx => sys::CU_JIT_INPUT_PTX,
                CodeType::Ltoir => sys::CU_JIT_INPUT_NVVM,
                CodeType::Fatbin => sys::CU_JIT_INPUT_FATBINARY,
                CodeType::Object => sys::CU_JIT_INPUT_OBJECT,
                CodeType::Library => sys::CU_JIT_INPUT_LIBRARY,
            };
            let mut bytes = input_bytes(input);
            let name = input_name(input);
            // SAFETY: the state is live; `bytes` is `bytes.len()` bytes, kept alive
            // with the state (the driver only reads it); `name` is NUL-terminated;
            // no per-input options.
            let rc = unsafe {
                sys::cuLinkAddData(
                    this.state,
                    kind,
                    bytes.as_mut_ptr().cast(),
                    bytes.len(),
                    name.as_ptr(),
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            };
            this._inputs.push(bytes);
            if rc != sys::CUDA_SUCCESS {
                return Err(Error::compile(
                    format!(
                        "adding {} input {} to the driver's link",
                        input.code_type(),
                        input.name()
                    ),
                    text(&this.error_log),
                    DriverError::new(rc),
                ));
            }
        }
        Ok(this)
    }

    /// Makes the creating context current on this thread (through the crate's one
    /// current-context guard); hold the guard for the length of the call.
    pub(crate) fn enter(&self) -> Result<crate::context::Current> {
        // The context the state was made in; the driver linker's docs require it
        // to outlive the state.
        crate::context::ensure_current(self.ctx, || {
            "making the driver JIT linker's context current".into()
        })
    }

    pub(crate) fn complete(&self, name: &str) -> Result<Vec<u8>> {
        let _current = self.enter()?;
        let mut cubin: *mut c_void = std::ptr::null_mut();
        let mut size = 0usize;
        // SAFETY: the state is live and every input has been added; both outputs
        // are valid for writes.
        let rc = unsafe { sys::cuLinkComplete(self.state, &mut cubin, &mut size) };
        if rc != sys::CUDA_SUCCESS {
            return Err(Error::compile(
                format!("linking {} with the driver's JIT linker", name),
                text(&self.error_log),
                DriverError::new(rc),
            ));
        }
        if cubin.is_null() || size == 0 {
            return Err(Error::invalid(
                format!("linking {}", name),
                "the driver's linker produced no cubin",
            ));
        }
        // SAFETY: the driver returned `size` bytes at `cubin`, owned by the state,
        // which is live; they are copied before it is destroyed.
        Ok(unsafe { std::slice::from_raw_parts(cubin.cast::<u8>(), size) }.to_vec())
    }
}

// Deferred-release rule: on a driver callback thread the destroy (a CUDA call)
// is handed to the deferred queue: the state and every buffer it points into
// move to a `DriverLink` dropped there, and this one releases nothing.
impl Drop for DriverLink {
    fn drop(&mut self) {
        if !self.state.is_null() && crate::deferred::must_defer() {
            let moved = DriverLink {
                state: std::mem::replace(&mut self.state, std::ptr::null_mut()),
                ctx: self.ctx,
                output: self.output.take(),
                info_log: std::mem::take(&mut self.info_log),
                error_log: std::mem::take(&mut self.error_log),
                _keys: std::mem::take(&mut self._keys),
                _values: std::mem::take(&mut self._values),
                _inputs: std::mem::take(&mut self._inputs),
            };
            crate::deferred::defer_drop("destroying a driver link", moved);
            return;
        }
        if !self.state.is_null() {
            let _current = self.enter();
            // SAFETY: a state from cuLinkCreate, destroyed once here.
            let rc = unsafe { sys::cuLinkDestroy(self.state) };
            crate::cleanup::driver(rc, "destroying the driver's link state (cuLinkDestroy)");
        }
    }
}
