//! [`ProgramHandle`]: a compiler program made from a [`Program`]'s source, owned,
//! for raw NVRTC, NVVM or linker calls (`cuda.core`'s `Program.handle`).

use std::collections::BTreeMap;
use std::ffi::CString;

use cudars_bindings::{nvrtc, nvvm};

use crate::code::compile::nvrtc_compile::NvrtcProgram;
use crate::code::compile::nvvm::NvvmProgram;
use crate::code::compile::program::{Program, ProgramBackend, Source};
use crate::code::linker::{Linker, LinkerHandle};
use crate::code::object::{CodeType, ObjectCode};
use crate::error::{Error, Result};

/// A compiler program of its own, made from a [`Program`]'s source by
/// [`Program::create_handle`]: what `cuda.core`'s `Program.handle` is, for
/// calls this crate does not wrap ([`as_raw`](Self::as_raw)).
///
/// A [`Program`] holds no compiler program (each compile makes and destroys
/// its own, so that one `Program` compiles from many threads); this is one
/// made the way a compile makes it, not compiled yet: an NVRTC program of the
/// C++ source under the program's name, an NVVM program holding the NVVM IR,
/// the options' `extra_sources` and, with `use_libdevice`, libdevice, or for
/// PTX the [`Linker`] holding it, with the options'
/// [linker options](crate::ProgramOptions::to_linker_options). Compiler options are
/// given to the compile call (`nvrtcCompileProgram`, `nvvmCompileProgram`):
/// [`ProgramOptions::to_nvrtc_args`](crate::ProgramOptions::to_nvrtc_args) and
/// [`to_nvvm_args`](crate::ProgramOptions::to_nvvm_args) give the program's.
///
/// The handle is destroyed when this value is dropped (`nvrtcDestroyProgram`,
/// `nvvmDestroyProgram`, or the linker's), once; raw calls must not destroy it.
/// `Send` (NVRTC and NVVM let any thread use a program, one at a time), not
/// `Sync`.
///
/// ```no_run
/// use cudars_core::cudars_bindings::nvrtc;
/// use cudars_core::{Program, ProgramOptions, RawProgramHandle, SourceCode};
///
/// let src = "extern \"C\" __global__ void k(int *o) { *o = 1; }";
/// let options = ProgramOptions { arch: Some("sm_90".into()), ..Default::default() };
/// let program = Program::new(SourceCode::Cxx(src), options)?;
/// let handle = program.create_handle()?;
/// let RawProgramHandle::Nvrtc(raw) = handle.as_raw() else { unreachable!() };
/// // SAFETY: a live program (`handle` owns it); no options.
/// let rc = unsafe { nvrtc::nvrtcCompileProgram(raw, 0, std::ptr::null()) };
/// # let _ = rc;
/// # Ok::<(), cudars_core::Error>(())
/// ```
pub struct ProgramHandle {
    owned: Owned,
}

/// The owned program behind a [`ProgramHandle`].
enum Owned {
    Nvrtc(NvrtcProgram),
    Nvvm(NvvmProgram),
    Linker(Linker),
}

/// The raw handle of a [`ProgramHandle`] ([`ProgramHandle::as_raw`]): valid as
/// long as the `ProgramHandle` it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RawProgramHandle {
    /// An NVRTC program (C++).
    Nvrtc(nvrtc::nvrtcProgram),
    /// An NVVM program (NVVM IR).
    Nvvm(nvvm::nvvmProgram),
    /// The linker's handle (PTX): nvJitLink's or the driver's link state.
    Linker(LinkerHandle),
}

// SAFETY: an NVRTC or NVVM program is state of the compiler library that any
// thread may use, one at a time (`ProgramHandle` is not `Sync`, and this crate
// makes no call on it after creating it: raw calls are the caller's, under
// their own `unsafe`); dropping it on another thread destroys it there, which
// the libraries allow; a `Linker` is `Send`. Soundness contract: rule 11.
unsafe impl Send for ProgramHandle {}

impl std::fmt::Debug for ProgramHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgramHandle")
            .field("raw", &self.as_raw())
            .finish()
    }
}

impl ProgramHandle {
    /// The raw handle, for NVRTC, NVVM or linker calls: valid while this value
    /// lives; it must not be destroyed by the caller.
    pub fn as_raw(&self) -> RawProgramHandle {
        match &self.owned {
            Owned::Nvrtc(p) => RawProgramHandle::Nvrtc(p.0),
            Owned::Nvvm(p) => RawProgramHandle::Nvvm(p.0),
            Owned::Linker(l) => RawProgramHandle::Linker(l.handle()),
        }
    }

    /// The compiler the handle belongs to (as [`Program::backend`]).
    pub fn backend(&self) -> ProgramBackend {
        match &self.owned {
            Owned::Nvrtc(_) => ProgramBackend::Nvrtc,
            Owned::Nvvm(_) => ProgramBackend::Nvvm,
            Owned::Linker(_) => ProgramBackend::NvJitLink,
        }
    }

    /// The linker, for a PTX program's handle.
    pub fn linker(&self) -> Option<&Linker> {
        match &self.owned {
            Owned::Linker(l) => Some(l),
            _ => None,
        }
    }
}

impl Program {
    /// A compiler program of its own made from this program's source
    /// (`cuda.core`'s `Program.handle`; see [`ProgramHandle`]), for raw calls.
    ///
    /// # Errors
    /// [`Error::Tool`] when NVRTC or NVVM refuses to make the program;
    /// [`Error::Compile`] with NVVM's log when it refuses a module;
    /// [`Error::Unavailable`] when the compiler's library cannot be loaded; for
    /// PTX, as [`Linker::new`] (which needs an `arch`).
    pub fn create_handle(&self) -> Result<ProgramHandle> {
        let owned = match &self.source {
            Source::Cxx(src) => {
                let name = self.options.program_name();
                let c_name = CString::new(name).map_err(|_| {
                    Error::invalid(
                        "creating an NVRTC program",
                        "the program name contains a NUL byte",
                    )
                })?;
                Owned::Nvrtc(NvrtcProgram::create(src, &c_name, name)?)
            }
            Source::Nvvm(ir) => Owned::Nvvm(self.nvvm_program(ir, "creating an NVVM program")?),
            Source::Ptx(ptx) => {
                let input = ObjectCode::with_mapping(
                    ptx.as_bytes().to_vec(),
                    CodeType::Ptx,
                    self.options.program_name().to_owned(),
                    BTreeMap::new(),
                );
                Owned::Linker(Linker::new(&[&input], self.options.to_linker_options()?)?)
            }
        };
        Ok(ProgramHandle { owned })
    }
}
