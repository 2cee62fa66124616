//! Compiling CUDA C++ with NVRTC: the [`Program`] compile for
//! [`SourceCode::Cxx`](crate::SourceCode::Cxx), and the NVRTC program it makes and
//! destroys. NVRTC's process-wide queries are the public `nvrtc` module, below.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString, c_char, c_int};
use std::sync::PoisonError;

use cudars_bindings::IntoResult as _;
use cudars_bindings::{Version, nvrtc};

use crate::code::compile::nvrtc::{pch_status, version};
use crate::code::compile::options::ProgramOptions;
use crate::code::compile::program::Program;
use crate::code::compile::target::CompileTarget;
use crate::code::object::ObjectCode;
use crate::code::strings::{cstrings, strip_nul, text};
use crate::error::{Error, Result};

impl Program {
    pub(super) fn compile_nvrtc(
        &self,
        src: &CStr,
        target: CompileTarget,
        name_expressions: &[&str],
    ) -> Result<ObjectCode> {
        let opts = &self.options;
        let name = opts.program_name();
        let check = "compiling C++ with NVRTC";
        match target {
            CompileTarget::Ltoir if !opts.wants_lto() => {
                return Err(Error::invalid(
                    check,
                    "LTO-IR needs `link_time_optimization: true` (NVRTC's -dlto)",
                ));
            }
            CompileTarget::Ptx | CompileTarget::Cubin if opts.wants_lto() => {
                return Err(Error::invalid(
                    check,
                    format!(
                        "`link_time_optimization` makes NVRTC emit LTO-IR only: compile to \
                         CompileTarget::Ltoir, or turn it off for {target}"
                    ),
                ));
            }
            CompileTarget::Cubin => {
                opts.real_arch(check)?;
            }
            _ => {}
        }
        if opts.use_bundled_headers {
            prepare_bundled_headers(opts, name)?;
        }
        let args = cstrings(opts.to_nvrtc_args()?, check)?;
        let arg_ptrs: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
        let num_args = c_int::try_from(arg_ptrs.len())
            .map_err(|_| Error::invalid(check, "too many options"))?;
        let mut exprs = Vec::with_capacity(name_expressions.len());
        for e in name_expressions {
            let c = CString::new(*e).map_err(|_| {
                Error::invalid(check, format!("name expression {e:?} contains a NUL byte"))
            })?;
            if !exprs.iter().any(|(s, _)| s == e) {
                exprs.push((*e, c));
            }
        }
        let c_name = CString::new(name)
            .map_err(|_| Error::invalid(check, "the program name contains a NUL byte"))?;

        let prog = NvrtcProgram::create(src, &c_name, name)?;
        for (expr, c) in &exprs {
            // SAFETY: `prog` is live; `c` is NUL-terminated and outlives the call.
            unsafe { nvrtc::nvrtcAddNameExpression(prog.0, c.as_ptr()) }
                .result()
                .map_err(|e| {
                    Error::tool(format!("adding name expression {expr:?} to {name}"), e)
                })?;
        }
        // SAFETY: `prog` is live; `arg_ptrs` holds `num_args` pointers to
        // NUL-terminated strings in `args`, which outlive the call.
        let rc = unsafe { nvrtc::nvrtcCompileProgram(prog.0, num_args, arg_ptrs.as_ptr()) };
        let log = prog
            .bytes(nvrtc::nvrtcGetProgramLogSize, nvrtc::nvrtcGetProgramLog)
            .map(|b| text(&b))
            .unwrap_or_default();
        self.set_log(log.clone());
        if opts.pch || opts.create_pch.is_some() {
            *self.pch.lock().unwrap_or_else(PoisonError::into_inner) = pch_status(prog.0);
        }
        if let Err(e) = rc.result() {
            return Err(Error::compile(
                format!("compiling {name} with NVRTC"),
                log,
                e,
            ));
        }

        let mut mapping = BTreeMap::new();
        for (expr, c) in &exprs {
            let mut lowered: *const c_char = std::ptr::null();
            // SAFETY: `prog` is live and compiled; `c` was added as a name
            // expression before compiling; `lowered` is valid for writes.
            unsafe { nvrtc::nvrtcGetLoweredName(prog.0, c.as_ptr(), &mut lowered) }
                .result()
                .map_err(|e| Error::tool(format!("looking up the lowered name of {expr:?}"), e))?;
            if lowered.is_null() {
                continue;
            }
            // SAFETY: NVRTC returns a NUL-terminated string owned by `prog`, which
            // is still live; it is copied before `prog` is destroyed.
            let mangled = unsafe { CStr::from_ptr(lowered) }
                .to_string_lossy()
                .into_owned();
            mapping.insert((*expr).to_owned(), mangled);
        }

        let (code, what) = match target {
            CompileTarget::Ptx => (
                prog.bytes(nvrtc::nvrtcGetPTXSize, nvrtc::nvrtcGetPTX),
                "PTX",
            ),
            CompileTarget::Cubin => (
                prog.bytes(nvrtc::nvrtcGetCUBINSize, nvrtc::nvrtcGetCUBIN),
                "cubin",
            ),
            CompileTarget::Ltoir => (
                prog.bytes(nvrtc::nvrtcGetLTOIRSize, nvrtc::nvrtcGetLTOIR),
                "LTO-IR",
            ),
        };
        let mut code = code.map_err(|e| Error::tool(format!("reading {name}'s {what}"), e))?;
        if target == CompileTarget::Ptx {
            strip_nul(&mut code);
        }
        if code.is_empty() {
            return Err(Error::invalid(
                format!("reading {name}'s {what}"),
                format!("NVRTC produced no {what} with these options"),
            ));
        }
        Ok(ObjectCode::with_mapping(
            code,
            target.code_type(),
            name.to_owned(),
            mapping,
        ))
    }
}

/// The oldest NVRTC with `--use-bundled-headers`.
const BUNDLED_HEADERS_NVRTC: Version = Version {
    major: 13,
    minor: 3,
};

/// Checks that NVRTC has bundled headers and makes the directory they go into.
fn prepare_bundled_headers(opts: &ProgramOptions, name: &str) -> Result<()> {
    let context = || format!("compiling {name} with NVRTC's bundled headers");
    let have = version()?;
    if have < BUNDLED_HEADERS_NVRTC {
        return Err(Error::unsupported(
            context(),
            format!(
                "`use_bundled_headers` needs NVRTC {BUNDLED_HEADERS_NVRTC} or newer; this NVRTC is \
                 {have} (put the toolkit's headers on the include path instead: \
                 `ProgramOptions::with_toolkit_headers`)"
            ),
        ));
    }
    let dir = match &opts.bundled_headers_dir {
        Some(d) => d.clone(),
        None => ProgramOptions::default_bundled_headers_dir()?,
    };
    std::fs::create_dir_all(&dir).map_err(|e| Error::Io {
        context: format!("{}: creating {}", context(), dir.display()).into(),
        source: e,
    })
}

/// An NVRTC program, destroyed on drop.
pub(crate) struct NvrtcProgram(pub(crate) nvrtc::nvrtcProgram);

type NvrtcSizeFn = unsafe fn(nvrtc::nvrtcProgram, *mut usize) -> nvrtc::nvrtcResult;
type NvrtcGetFn = unsafe fn(nvrtc::nvrtcProgram, *mut c_char) -> nvrtc::nvrtcResult;

impl NvrtcProgram {
    /// A new program of the C++ source `src` named `c_name` (`name`, for
    /// errors), with no headers (`nvrtcCreateProgram`, which copies both).
    pub(crate) fn create(src: &CStr, c_name: &CStr, name: &str) -> Result<Self> {
        let mut prog = NvrtcProgram(std::ptr::null_mut());
        // SAFETY: `prog.0` is valid for writes; `src` and `c_name` are
        // NUL-terminated and outlive the call; no headers are passed.
        unsafe {
            nvrtc::nvrtcCreateProgram(
                &mut prog.0,
                src.as_ptr(),
                c_name.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        }
        .result()
        .map_err(|e| Error::tool(format!("creating NVRTC program {name}"), e))?;
        Ok(prog)
    }

    /// One of the program's outputs, through its size and copy functions.
    fn bytes(&self, size: NvrtcSizeFn, get: NvrtcGetFn) -> Result<Vec<u8>, nvrtc::NvrtcError> {
        crate::code::strings::sized_output(
            // SAFETY: the program is live; `n` is valid for writes.
            |n| unsafe { size(self.0, n) }.result(),
            // SAFETY: `buf` holds the bytes NVRTC said it will write.
            |buf| unsafe { get(self.0, buf.cast()) }.result(),
        )
    }
}

// Rule 1 of the soundness contract: the program is owned here and destroyed once;
// a failed destroy goes to the cleanup hook, never dropped silently.
impl Drop for NvrtcProgram {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: a program created by nvrtcCreateProgram, destroyed once here.
            let r = unsafe { nvrtc::nvrtcDestroyProgram(&mut self.0) }.result();
            crate::cleanup::report(r.map_err(|e| {
                crate::error::Error::tool("destroying an NVRTC program (nvrtcDestroyProgram)", e)
            }));
        }
    }
}
