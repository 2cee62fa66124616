//! Linking compiled device code into a cubin (or PTX) with nvJitLink, or with the
//! driver's JIT linker when nvJitLink is not installed (the counterpart of
//! `cuda.core`'s `Linker` and `LinkerOptions`).
//!
//! ```no_run
//! use cudars_core::{CompileTarget, Linker, LinkerOptions, Program, ProgramOptions, SourceCode};
//!
//! let rdc = ProgramOptions {
//!     arch: Some("sm_90".into()),
//!     relocatable_device_code: true,
//!     ..Default::default()
//! };
//! let a = Program::new(SourceCode::Cxx("extern __device__ float f(float);\n\
//!     extern \"C\" __global__ void k(float* p) { *p = f(*p); }"), rdc.clone())?
//!     .compile(CompileTarget::Cubin, &[])?;
//! let b = Program::new(SourceCode::Cxx("__device__ float f(float x) { return 2 * x; }"), rdc)?
//!     .compile(CompileTarget::Cubin, &[])?;
//! let linked = Linker::new(&[&a, &b], LinkerOptions::new("sm_90"))?.link()?;
//! assert!(linked.code().starts_with(b"\x7fELF"));
//! # Ok::<(), cudars_core::Error>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};

use cudars_bindings::driver::{self as sys};
use cudars_bindings::nvjitlink as jl;

use crate::code::linker_backends::{DriverLink, JitLink};
use crate::code::linker_options::LinkerOptions;
use crate::code::object::{CodeType, ObjectCode};
use crate::code::strings::text;
use crate::error::{Error, Result};

/// Which linker a [`Linker`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkerBackend {
    /// nvJitLink (`libnvJitLink`), which runs on the CPU.
    NvJitLink,
    /// The driver's JIT linker (`cuLinkCreate`, …): needs a current context, and
    /// knows fewer options.
    Driver,
}

impl fmt::Display for LinkerBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NvJitLink => "nvJitLink",
            Self::Driver => "driver",
        })
    }
}

/// A link of compiled inputs into one cubin (or PTX).
///
/// [`new`](Self::new) adds the inputs; [`link`](Self::link) completes the link and
/// returns the result, whose symbol mapping is the union of the inputs'. The
/// linker handle is destroyed on drop. `Send + Sync`: calls are serialised.
pub struct Linker {
    pub(crate) backend: LinkerBackend,
    pub(crate) name: String,
    pub(crate) code_type: CodeType,
    pub(crate) mapping: BTreeMap<String, String>,
    pub(crate) state: Mutex<State>,
}

impl fmt::Debug for Linker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Linker")
            .field("backend", &self.backend)
            .field("name", &self.name)
            .field("code_type", &self.code_type)
            .finish_non_exhaustive()
    }
}

pub(crate) enum State {
    NvJitLink(JitLink),
    Driver(DriverLink),
}

impl State {
    pub(crate) fn output(&self) -> Option<&ObjectCode> {
        match self {
            Self::NvJitLink(s) => s.output.as_ref(),
            Self::Driver(s) => s.output.as_ref(),
        }
    }

    pub(crate) fn output_mut(&mut self) -> &mut Option<ObjectCode> {
        match self {
            Self::NvJitLink(s) => &mut s.output,
            Self::Driver(s) => &mut s.output,
        }
    }
}

impl Linker {
    /// Starts a link of `inputs` with nvJitLink, or with the driver's linker when
    /// nvJitLink cannot be loaded (see [`backend`](Self::backend)).
    ///
    /// Each input goes in as its [`CodeType`] says: cubin, PTX, LTO-IR, fatbin,
    /// object or library.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for no inputs or bad options
    /// ([`LinkerOptions::to_nvjitlink_args`]); [`Error::Compile`] with the error
    /// log when the linker rejects an input; [`Error::Tool`] (nvJitLink) or
    /// [`Error::Driver`] when the linker cannot be created; [`Error::Unavailable`]
    /// when neither nvJitLink nor the driver can be loaded; [`Error::Unsupported`]
    /// for options the driver's linker lacks.
    pub fn new(inputs: &[&ObjectCode], options: LinkerOptions) -> Result<Self> {
        let backend = if jl::is_available("nvJitLinkCreate") {
            LinkerBackend::NvJitLink
        } else {
            LinkerBackend::Driver
        };
        Self::with_backend(inputs, options, backend)
    }

    /// [`new`](Self::new) with the backend chosen by the caller.
    ///
    /// # Errors
    /// As [`new`](Self::new); [`Error::Unavailable`] when the chosen backend's
    /// library cannot be loaded.
    pub fn with_backend(
        inputs: &[&ObjectCode],
        options: LinkerOptions,
        backend: LinkerBackend,
    ) -> Result<Self> {
        if inputs.is_empty() {
            return Err(Error::invalid("creating a linker", "there are no inputs"));
        }
        let mut mapping = BTreeMap::new();
        for input in inputs {
            mapping.extend(
                input
                    .symbol_mapping()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone())),
            );
        }
        let name = options.name.clone().unwrap_or_else(|| "linked".to_owned());
        let code_type = if options.ptx {
            CodeType::Ptx
        } else {
            CodeType::Cubin
        };
        let state = match backend {
            LinkerBackend::NvJitLink => State::NvJitLink(JitLink::new(inputs, &options)?),
            LinkerBackend::Driver => State::Driver(DriverLink::new(inputs, &options)?),
        };
        Ok(Self {
            backend,
            name,
            code_type,
            mapping,
            state: Mutex::new(state),
        })
    }

    /// Which linker this is.
    pub fn backend(&self) -> LinkerBackend {
        self.backend
    }

    /// The linker's handle (Python's `Linker.handle`): the nvJitLink handle or the
    /// driver's link state, for calls this crate does not wrap. It stays valid as
    /// long as the `Linker`; the `Linker` destroys it.
    ///
    /// Using it is `unsafe`: the caller must not destroy it, and must not call into
    /// it while another thread uses this `Linker` (the crate serialises its own calls
    /// on the handle with a lock the raw handle does not take).
    pub fn handle(&self) -> LinkerHandle {
        match &*self.lock() {
            State::NvJitLink(s) => LinkerHandle::NvJitLink(s.handle),
            State::Driver(s) => LinkerHandle::Driver(s.state),
        }
    }

    /// Completes the link and returns the linked cubin (or PTX, with
    /// [`LinkerOptions::ptx`]). A second call returns the same result.
    ///
    /// # Errors
    /// [`Error::Compile`] with the linker's error log when the link fails (an
    /// undefined symbol, for instance); [`Error::Tool`] or [`Error::Driver`] when
    /// the result cannot be read.
    pub fn link(&self) -> Result<ObjectCode> {
        let mut state = self.lock();
        if let Some(done) = state.output() {
            return Ok(done.clone());
        }
        let code = match &mut *state {
            State::NvJitLink(s) => s.complete(&self.name)?,
            State::Driver(s) => s.complete(&self.name)?,
        };
        let object = ObjectCode::with_mapping(
            code,
            self.code_type,
            self.name.clone(),
            self.mapping.clone(),
        );
        *state.output_mut() = Some(object.clone());
        Ok(object)
    }

    /// Completes the link and returns the linked LTO-IR (`cuda.core`'s
    /// `Linker.link("ltoir")`, `nvJitLinkGetLinkedLTOIR`): the inputs' LTO-IR
    /// joined, still unoptimised across the link, for a later [`Linker`] with
    /// `link_time_optimization` to take as an input ([`CodeType::Ltoir`]).
    /// With [`LinkerOptions::relocatable`] the result may keep undefined
    /// references: the stages of an incremental link. A second call returns the
    /// same result; [`link`](Self::link) on the same linker returns its cubin.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] without `link_time_optimization`, or when
    /// linking to PTX; [`Error::Unsupported`] on the driver's linker and when the
    /// loaded nvJitLink is older than 13.3 (the first with linked LTO-IR), naming
    /// its version; otherwise as [`link`](Self::link).
    pub fn link_ltoir(&self) -> Result<ObjectCode> {
        let mut state = self.lock();
        let s = match &mut *state {
            State::NvJitLink(s) => s,
            State::Driver(_) => {
                return Err(Error::unsupported(
                    format!("reading the linked LTO-IR of {}", self.name),
                    "the driver's linker cannot output LTO-IR (nvJitLink 13.3 can)",
                ));
            }
        };
        if let Some(done) = &s.ltoir_output {
            return Ok(done.clone());
        }
        let code = s.complete_ltoir(&self.name)?;
        let object = ObjectCode::with_mapping(
            code,
            CodeType::Ltoir,
            self.name.clone(),
            self.mapping.clone(),
        );
        s.ltoir_output = Some(object.clone());
        Ok(object)
    }

    /// The linker's info log (empty when it wrote none).
    pub fn info_log(&self) -> String {
        match &*self.lock() {
            State::NvJitLink(s) => s.log(jl::nvJitLinkGetInfoLogSize, jl::nvJitLinkGetInfoLog),
            State::Driver(s) => text(&s.info_log),
        }
    }

    /// The linker's error log (empty when it wrote none).
    pub fn error_log(&self) -> String {
        match &*self.lock() {
            State::NvJitLink(s) => s.error_log(),
            State::Driver(s) => text(&s.error_log),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A [`Linker`]'s raw handle, by backend ([`Linker::handle`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkerHandle {
    /// An nvJitLink handle.
    NvJitLink(jl::nvJitLinkHandle),
    /// The driver linker's state (`cuLinkCreate`).
    Driver(sys::CUlinkState),
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::code::linker_backends::*;
    use crate::error::InvalidKind;
    use crate::error::kind_of as kind;

    #[test]
    fn every_option_is_spelled_in_cuda_cores_order() {
        let all = LinkerOptions {
            name: Some("out".into()),
            max_register_count: Some(32),
            time: true,
            verbose: true,
            link_time_optimization: true,
            ptx: true,
            optimization_level: Some(2),
            debug: true,
            lineinfo: true,
            ftz: Some(true),
            prec_div: Some(false),
            prec_sqrt: Some(true),
            fma: Some(false),
            kernels_used: vec!["k".into()],
            variables_used: vec!["v".into()],
            optimize_unused_variables: true,
            ptxas_options: vec!["-v".into()],
            split_compile: Some(0),
            split_compile_extended: Some(4),
            no_cache: true,
            numba_debug: true,
            extra: vec!["-jump-table-density=0".into()],
            // SAFETY: never given to nvJitLink (this test only renders options).
            extra_unchecked: unsafe { crate::code::tool_args::UncheckedOptions::new(["-X"]) },
            ..LinkerOptions::new("compute_90a")
        };
        assert_eq!(
            all.to_nvjitlink_args().unwrap(),
            [
                "-arch=compute_90a",
                "-maxrregcount=32",
                "-time",
                "-verbose",
                "-lto",
                "-ptx",
                "-O2",
                "-g",
                "-lineinfo",
                "-ftz=true",
                "-prec-div=false",
                "-prec-sqrt=true",
                "-fma=false",
                "-kernels-used=k",
                "-variables-used=v",
                "-optimize-unused-variables",
                "-Xptxas=-v",
                "-split-compile=0",
                "-split-compile-extended=4",
                "-no-cache",
                "-numba-debug",
                "-jump-table-density=0",
                "-X"
            ]
        );
        // The name is the output's, never an option.
        assert_eq!(
            LinkerOptions::new("sm_90").to_nvjitlink_args().unwrap(),
            ["-arch=sm_90"]
        );
    }

    #[test]
    fn bad_values_are_refused_naming_the_field() {
        let refused = |o: LinkerOptions, field: &str| {
            let r = o.to_nvjitlink_args();
            let msg = r.as_ref().map_err(ToString::to_string).unwrap_err();
            assert!(msg.contains(field), "{msg}");
            assert_eq!(kind(r), InvalidKind::Other);
        };
        let sm90 = || LinkerOptions::new("sm_90");
        refused(
            LinkerOptions {
                max_register_count: Some(0),
                ..sm90()
            },
            "`max_register_count`",
        );
        refused(
            LinkerOptions {
                name: Some(String::new()),
                ..sm90()
            },
            "`name`",
        );
        refused(
            LinkerOptions {
                name: Some("a\0b".into()),
                ..sm90()
            },
            "`name`",
        );
        refused(
            LinkerOptions {
                kernels_used: vec!["k\0".into()],
                ..sm90()
            },
            "`kernels_used`",
        );
        refused(
            LinkerOptions {
                variables_used: vec![String::new()],
                ..sm90()
            },
            "`variables_used`",
        );
        refused(
            LinkerOptions {
                ptxas_options: vec![String::new()],
                ..sm90()
            },
            "`ptxas_options`",
        );
        refused(LinkerOptions::new("sm_90b"), "`arch`");
    }
}
