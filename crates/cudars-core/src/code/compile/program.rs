//! [`Program`]: the source, its options, and the compile that picks the backend
//! (NVRTC, NVVM or the PTX linker, each in its own module).

use std::ffi::CString;
use std::fmt;
use std::sync::{Mutex, PoisonError};

use crate::error::{Error, Result};

use super::nvrtc::PchStatus;
use super::options::LINKER_FIELDS;
use crate::code::compile::options::ProgramOptions;

/// The code a [`Program`] compiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceCode<'a> {
    /// CUDA C++ source, compiled by NVRTC.
    Cxx(&'a str),
    /// PTX text: returned as is for [`CompileTarget::Ptx`](crate::CompileTarget::Ptx), assembled and linked by
    /// the [`Linker`](crate::Linker) for [`CompileTarget::Cubin`](crate::CompileTarget::Cubin).
    Ptx(&'a str),
    /// NVVM IR, as text (LLVM assembly) or bitcode, compiled by NVVM.
    Nvvm(&'a [u8]),
}

/// The compiler behind a [`Program`] ([`Program::backend`]), as
/// [`LinkerBackend`](crate::LinkerBackend) names a [`Linker`](crate::Linker)'s.
///
/// It prints as `cuda.core`'s `Program.backend` string: `NVRTC`, `NVVM` or
/// `nvJitLink`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProgramBackend {
    /// NVRTC, for CUDA C++.
    Nvrtc,
    /// NVVM, for NVVM IR.
    Nvvm,
    /// The PTX linker: PTX is assembled and linked by a [`Linker`](crate::Linker).
    NvJitLink,
}

impl fmt::Display for ProgramBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Nvrtc => "NVRTC",
            Self::Nvvm => "NVVM",
            Self::NvJitLink => "nvJitLink",
        })
    }
}

/// The source, owned.
#[derive(Debug)]
pub(super) enum Source {
    Cxx(CString),
    Ptx(String),
    Nvvm(Vec<u8>),
}

/// A program to compile: CUDA C++ (NVRTC), NVVM IR (NVVM) or PTX (the linker).
///
/// [`new`](Self::new) checks the source and options; [`compile`](Self::compile)
/// compiles to PTX, a cubin or LTO-IR and returns [`ObjectCode`](crate::ObjectCode). Each compile makes
/// and destroys its own compiler program, so a `Program` may be compiled any number
/// of times, for several targets, from any thread (`Send + Sync`).
#[derive(Debug)]
pub struct Program {
    pub(super) source: Source,
    pub(super) options: ProgramOptions,
    log: Mutex<String>,
    /// What the last NVRTC compile did about a precompiled header.
    pub(super) pch: Mutex<Option<PchStatus>>,
}

impl Program {
    /// A program from source code and options. An unset
    /// [`arch`](ProgramOptions::arch) becomes the current device's, as in
    /// `cuda.core` (none where there is no GPU: see that field).
    ///
    /// # Errors
    /// The driver's error reading the current device's architecture, for an
    /// unset `arch` (not for no driver or no device);
    /// [`Error::Unsupported`] naming the options set that the backend has no
    /// counterpart for (for NVVM IR see [`to_nvvm_args`](ProgramOptions::to_nvvm_args);
    /// PTX takes those [`to_linker_options`](ProgramOptions::to_linker_options)
    /// carries over, and `name` and `arch`); [`Error::InvalidArgument`] for options
    /// the backend's argument check rejects ([`ProgramOptions::to_nvrtc_args`],
    /// [`to_nvvm_args`](ProgramOptions::to_nvvm_args)),
    /// C++ or PTX source containing a NUL byte, empty NVVM IR, or `extra_sources`
    /// with a source that is not NVVM IR.
    pub fn new(code: SourceCode<'_>, options: ProgramOptions) -> Result<Self> {
        const CONTEXT: &str = "creating a program";
        let options = options.with_current_device_arch()?;
        if !options.extra_sources.is_empty() && !matches!(code, SourceCode::Nvvm(_)) {
            return Err(Error::invalid(
                CONTEXT,
                "`extra_sources` are NVVM IR modules: they apply to NVVM IR programs only",
            ));
        }
        if options.use_libdevice && !matches!(code, SourceCode::Nvvm(_)) {
            return Err(Error::invalid(
                CONTEXT,
                "`use_libdevice` links NVVM IR: it applies to NVVM IR programs only \
                 (NVRTC links libdevice itself)",
            ));
        }
        let source = match code {
            SourceCode::Cxx(src) => {
                options.to_nvrtc_args()?;
                Source::Cxx(CString::new(src).map_err(|e| {
                    Error::invalid(
                        CONTEXT,
                        format!("the C++ source has a NUL byte at {}", e.nul_position()),
                    )
                })?)
            }
            SourceCode::Ptx(src) => {
                options.check_name()?;
                options.refuse_unsupported("the PTX linker", LINKER_FIELDS)?;
                // The options go to nvJitLink when the PTX is linked: read them
                // as it does now (a split compile among them is bounded).
                options
                    .linker_options_for(options.arch.clone().unwrap_or_default())
                    .checked_args()?;
                if src.contains('\0') {
                    return Err(Error::invalid(
                        CONTEXT,
                        "the PTX source contains a NUL byte",
                    ));
                }
                Source::Ptx(src.to_owned())
            }
            SourceCode::Nvvm(ir) => {
                options.to_nvvm_args()?;
                if ir.is_empty() {
                    return Err(Error::invalid(CONTEXT, "the NVVM IR is empty"));
                }
                for (name, module) in &options.extra_sources {
                    if name.contains('\0') || module.is_empty() {
                        return Err(Error::invalid(
                            CONTEXT,
                            format!(
                                "`extra_sources` entry {name:?} is empty or its name contains \
                                 a NUL byte"
                            ),
                        ));
                    }
                }
                Source::Nvvm(ir.to_vec())
            }
        };
        Ok(Self {
            source,
            options,
            log: Mutex::new(String::new()),
            pch: Mutex::new(None),
        })
    }

    /// The compiler behind this program: [`ProgramBackend::Nvrtc`] (C++),
    /// [`ProgramBackend::Nvvm`] (NVVM IR) or [`ProgramBackend::NvJitLink`] (PTX);
    /// it prints as `cuda.core`'s string (`NVRTC`, `NVVM`, `nvJitLink`).
    pub fn backend(&self) -> ProgramBackend {
        match self.source {
            Source::Cxx(_) => ProgramBackend::Nvrtc,
            Source::Nvvm(_) => ProgramBackend::Nvvm,
            Source::Ptx(_) => ProgramBackend::NvJitLink,
        }
    }

    /// The options the program was made with.
    pub fn options(&self) -> &ProgramOptions {
        &self.options
    }

    /// The log of the last compilation (warnings included; kept after a
    /// successful compile too). Empty before the first.
    pub fn log(&self) -> String {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// What the last NVRTC compile of this program with `pch` or `create_pch` did
    /// about a precompiled header (`None` before such a compile, or when NVRTC
    /// cannot say). A compile answered from a program cache (`cache`, feature `cache`) runs
    /// no compiler: it makes no PCH and leaves this as it was.
    pub fn pch_status(&self) -> Option<PchStatus> {
        *self.pch.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn set_log(&self, log: String) {
        *self.log.lock().unwrap_or_else(PoisonError::into_inner) = log;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backends_print_as_cuda_core_names_them() {
        for (backend, name) in [
            (ProgramBackend::Nvrtc, "NVRTC"),
            (ProgramBackend::Nvvm, "NVVM"),
            (ProgramBackend::NvJitLink, "nvJitLink"),
        ] {
            assert_eq!(backend.to_string(), name);
        }
    }
}
