//! NVVM: compiling NVVM IR ([`SourceCode::Nvvm`](crate::SourceCode::Nvvm)).

use std::collections::BTreeMap;
use std::ffi::{CString, c_char, c_int};

use cudars_bindings::IntoResult as _;
use cudars_bindings::nvvm;

use crate::code::object::ObjectCode;
use crate::code::strings::{cstrings, strip_nul, text};
use crate::error::{Error, Result};

use super::ptx::link_into_cubin;
use crate::code::compile::program::Program;
use crate::code::compile::target::CompileTarget;

impl Program {
    pub(super) fn compile_nvvm(&self, ir: &[u8], target: CompileTarget) -> Result<ObjectCode> {
        let opts = &self.options;
        let check = "compiling NVVM IR with NVVM";
        if target == CompileTarget::Cubin {
            // NVVM makes PTX (or LTO-IR); the linker makes the cubin.
            let arch = opts.real_arch(check)?;
            let mut lopts = opts.to_linker_options()?;
            lopts.arch = arch.to_owned();
            let step = if opts.link_time_optimization {
                lopts.link_time_optimization = true;
                CompileTarget::Ltoir
            } else {
                CompileTarget::Ptx
            };
            let intermediate = self.compile_nvvm(ir, step)?;
            let nvvm_log = self.log();
            return link_into_cubin(self, &intermediate, lopts, nvvm_log);
        }
        let name = opts.program_name();
        // The target decides `-gen-lto`, as in `cuda.core`: LTO-IR gets it,
        // PTX must not have it (NVVM would write LTO-IR where PTX is expected).
        let mut args = opts.to_nvvm_args()?;
        let gen_lto = |a: &String| a == "-gen-lto" || a == "--gen-lto";
        match target {
            CompileTarget::Ltoir if !args.iter().any(gen_lto) => args.push("-gen-lto".to_owned()),
            CompileTarget::Ptx if args.iter().any(gen_lto) => {
                return Err(Error::invalid(
                    check,
                    "`extra` has -gen-lto, which makes NVVM emit LTO-IR: compile to \
                     CompileTarget::Ltoir for it",
                ));
            }
            _ => {}
        }
        let args = cstrings(args, check)?;
        let mut arg_ptrs: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
        let num_args = c_int::try_from(arg_ptrs.len())
            .map_err(|_| Error::invalid(check, "too many options"))?;
        let prog = self.nvvm_program(ir, check)?;
        // SAFETY: `prog` is live; `arg_ptrs` holds `num_args` pointers to
        // NUL-terminated strings in `args`, which outlive the call (NVVM only reads
        // them, whatever the header's pointer type says).
        let rc = unsafe { nvvm::nvvmCompileProgram(prog.0, num_args, arg_ptrs.as_mut_ptr()) };
        let log = prog.log();
        self.set_log(log.clone());
        if let Err(e) = rc.result() {
            return Err(Error::compile(
                format!("compiling {name} with NVVM"),
                log,
                e,
            ));
        }
        let mut code = prog
            .bytes(nvvm::nvvmGetCompiledResultSize, nvvm::nvvmGetCompiledResult)
            .map_err(|e| Error::tool(format!("reading {name}'s {target}"), e))?;
        if target == CompileTarget::Ptx {
            strip_nul(&mut code);
        }
        if code.is_empty() {
            return Err(Error::invalid(
                format!("reading {name}'s {target}"),
                format!("NVVM produced no {target}"),
            ));
        }
        Ok(ObjectCode::with_mapping(
            code,
            target.code_type(),
            name.to_owned(),
            BTreeMap::new(),
        ))
    }

    /// A new NVVM program holding `ir` (named by the options), the options'
    /// `extra_sources` and, with `use_libdevice`, libdevice (lazily added), not
    /// compiled. A failure to add a module records NVVM's log as the program's.
    pub(crate) fn nvvm_program(&self, ir: &[u8], check: &'static str) -> Result<NvvmProgram> {
        let opts = &self.options;
        let name = opts.program_name();
        let mut modules: Vec<(CString, &[u8])> = Vec::with_capacity(1 + opts.extra_sources.len());
        modules.push((
            CString::new(name).map_err(|_| Error::invalid(check, "the name has a NUL byte"))?,
            ir,
        ));
        for (n, m) in &opts.extra_sources {
            modules.push((
                CString::new(n.as_str())
                    .map_err(|_| Error::invalid(check, "an extra source name has a NUL byte"))?,
                m,
            ));
        }

        let mut prog = NvvmProgram(std::ptr::null_mut());
        // SAFETY: `prog.0` is valid for writes.
        unsafe { nvvm::nvvmCreateProgram(&mut prog.0) }
            .result()
            .map_err(|e| Error::tool(format!("creating NVVM program {name}"), e))?;
        for (module_name, module) in &modules {
            // SAFETY: `prog` is live; `module` is `module.len()` readable bytes and
            // `module_name` is NUL-terminated; NVVM copies both.
            let rc = unsafe {
                nvvm::nvvmAddModuleToProgram(
                    prog.0,
                    module.as_ptr().cast(),
                    module.len(),
                    module_name.as_ptr(),
                )
            };
            if let Err(e) = rc.result() {
                let log = prog.log();
                self.set_log(log.clone());
                return Err(Error::compile(
                    format!(
                        "adding NVVM IR module {} to {name}",
                        module_name.to_string_lossy()
                    ),
                    log,
                    e,
                ));
            }
        }
        if opts.use_libdevice {
            let located = cudars_pathfinder::find_bitcode_lib("libdevice").map_err(|e| {
                Error::unsupported(format!("linking libdevice into {name}"), e.to_string())
            })?;
            let bitcode = std::fs::read(&located.abs_path).map_err(|e| Error::Io {
                context: format!("reading libdevice from {}", located.abs_path.display()).into(),
                source: e,
            })?;
            // SAFETY: `prog` is live; `bitcode` is `bitcode.len()` readable bytes and
            // the name is NUL-terminated; NVVM copies both.
            let rc = unsafe {
                nvvm::nvvmLazyAddModuleToProgram(
                    prog.0,
                    bitcode.as_ptr().cast(),
                    bitcode.len(),
                    c"libdevice".as_ptr(),
                )
            };
            if let Err(e) = rc.result() {
                let log = prog.log();
                self.set_log(log.clone());
                return Err(Error::compile(
                    format!("adding libdevice to {name}"),
                    log,
                    e,
                ));
            }
        }
        Ok(prog)
    }
}

/// An NVVM program, destroyed on drop.
pub(crate) struct NvvmProgram(pub(crate) nvvm::nvvmProgram);

type NvvmSizeFn = unsafe fn(nvvm::nvvmProgram, *mut usize) -> nvvm::nvvmResult;
type NvvmGetFn = unsafe fn(nvvm::nvvmProgram, *mut c_char) -> nvvm::nvvmResult;

impl NvvmProgram {
    /// One of the program's outputs, through its size and copy functions.
    fn bytes(&self, size: NvvmSizeFn, get: NvvmGetFn) -> Result<Vec<u8>, nvvm::NvvmError> {
        crate::code::strings::sized_output(
            // SAFETY: the program is live; `n` is valid for writes.
            |n| unsafe { size(self.0, n) }.result(),
            // SAFETY: `buf` holds the bytes NVVM said it will write.
            |buf| unsafe { get(self.0, buf.cast()) }.result(),
        )
    }

    /// The program's log (empty if it cannot be read).
    fn log(&self) -> String {
        self.bytes(nvvm::nvvmGetProgramLogSize, nvvm::nvvmGetProgramLog)
            .map(|b| text(&b))
            .unwrap_or_default()
    }
}

// Rule 1 of the soundness contract: the program is owned here and destroyed once;
// a failed destroy goes to the cleanup hook, never dropped silently.
impl Drop for NvvmProgram {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: a program created by nvvmCreateProgram, destroyed once here.
            let r = unsafe { nvvm::nvvmDestroyProgram(&mut self.0) }.result();
            crate::cleanup::report(r.map_err(|e| {
                crate::error::Error::tool("destroying an NVVM program (nvvmDestroyProgram)", e)
            }));
        }
    }
}
