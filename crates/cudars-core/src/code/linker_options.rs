//! [`LinkerOptions`]: how to link, as nvJitLink's options (`cuda.core`'s
//! `LinkerOptions`), checked once for both linkers. Below the [`Linker`] and its
//! two backends, and below the compilers, which turn their own options into these.
//!
//! [`Linker`]: crate::Linker

use crate::code::arch::Arch;
use crate::code::tool_args::{Tool, check_marked};
use crate::error::{Error, Result};

pub(crate) const OPTIONS_CONTEXT: &str = "checking the linker options";

/// How to link: nvJitLink's options, as `cuda.core`'s `LinkerOptions` spells them.
///
/// `arch` is required: start from [`LinkerOptions::new`] and update fields (or
/// from `Default`, whose empty `arch` every use rejects until it is set):
///
/// ```
/// use cudars_core::LinkerOptions;
///
/// let options = LinkerOptions {
///     link_time_optimization: true,
///     ..LinkerOptions::new("sm_90")
/// };
/// assert_eq!(options.to_nvjitlink_args()?, ["-arch=sm_90", "-lto"]);
/// # Ok::<(), cudars_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkerOptions {
    /// The name of the linked [`ObjectCode`](crate::ObjectCode) (`linked` when `None`).
    pub name: Option<String>,
    /// The target architecture, required: `sm_XY` (optionally with an `a`/`f`
    /// suffix), or `compute_XY` when linking to PTX (`-arch=`).
    pub arch: String,
    /// The most registers a kernel may use (`-maxrregcount=`); at least 1.
    pub max_register_count: Option<u32>,
    /// Report the time each phase takes, in the info log (`-time`).
    pub time: bool,
    /// Verbose info log (`-verbose`).
    pub verbose: bool,
    /// Link-time optimisation of LTO-IR inputs (`-lto`).
    pub link_time_optimization: bool,
    /// Produce PTX instead of a cubin (`-ptx`; needs `link_time_optimization`).
    pub ptx: bool,
    /// The optimisation level, 0 to 3 (`-O`).
    pub optimization_level: Option<u32>,
    /// Debug information (`-g`).
    pub debug: bool,
    /// Line information (`-lineinfo`).
    pub lineinfo: bool,
    /// Flush denormals to zero, for LTO (`-ftz=`).
    pub ftz: Option<bool>,
    /// IEEE-rounded division, for LTO (`-prec-div=`).
    pub prec_div: Option<bool>,
    /// IEEE-rounded square root, for LTO (`-prec-sqrt=`).
    pub prec_sqrt: Option<bool>,
    /// Fused multiply-add contraction, for LTO (`-fma=`).
    pub fma: Option<bool>,
    /// The only kernels used (the rest may be dropped), by mangled name
    /// (`-kernels-used=`).
    pub kernels_used: Vec<String>,
    /// The only variables used, by mangled name (`-variables-used=`).
    pub variables_used: Vec<String>,
    /// Optimise away unused device variables (`-optimize-unused-variables`).
    pub optimize_unused_variables: bool,
    /// Options for ptxas, each passed as `-Xptxas=<option>`.
    pub ptxas_options: Vec<String>,
    /// Compile with up to this many threads, 0 for as many as there are CPUs
    /// (`-split-compile=`); at most 1024 (nvJitLink's ptxas starts that many
    /// threads, and crashes or hangs the process when it cannot), as is every
    /// split compile asked of ptxas through `ptxas_options` or `extra`.
    pub split_compile: Option<u32>,
    /// Extended split compilation with up to this many threads
    /// (`-split-compile-extended=`); at most 1024, as `split_compile`.
    pub split_compile_extended: Option<u32>,
    /// Do not use the compilation cache (`-no-cache`; with the driver's linker,
    /// `CU_JIT_CACHE_MODE` set to `CU_JIT_CACHE_OPTION_NONE`).
    pub no_cache: bool,
    /// An incremental (relocatable) link (`-r`): the result may keep undefined
    /// device references, to be resolved by a later link that takes it as an
    /// input (`cuda.core`'s `LinkerOptions(relocatable=True)`). The result is a
    /// relocatable cubin from [`Linker::link`](crate::Linker::link), or, with
    /// `link_time_optimization`, LTO-IR from
    /// [`Linker::link_ltoir`](crate::Linker::link_ltoir) (which keeps later links
    /// able to optimise across it). Not loadable until a final link resolves it.
    ///
    /// Needs nvJitLink 13.2 or newer: an older one makes
    /// [`Linker::new`](crate::Linker::new) fail with [`Error::Unsupported`]
    /// naming both versions, before nvJitLink is called. The driver's linker has
    /// no counterpart ([`Error::Unsupported`]); nor can it be combined with `ptx`
    /// ([`Error::InvalidArgument`]).
    #[doc(alias = "incremental")]
    pub relocatable: bool,
    /// Numba's debug mode (`-numba-debug`, nvJitLink's single-dash spelling of
    /// [`ProgramOptions::numba_debug`](crate::ProgramOptions::numba_debug)'s
    /// `--numba-debug`).
    /// Passed to nvJitLink, which decides: the nvJitLink releases of CUDA 12 and
    /// 13 know no such option and fail [`Linker::new`](crate::Linker::new) with their
    /// `NVJITLINK_ERROR_UNRECOGNIZED_OPTION` (an [`Error::Tool`] whose context
    /// lists the options given), never ignoring it silently. The driver's linker has no
    /// counterpart: [`Error::Unsupported`] before the driver is called.
    pub numba_debug: bool,
    /// More nvJitLink options, after all the others, as nvJitLink spells them
    /// (`-Xptxas=-v`, `-jump-table-density=0`). The whole argument vector is
    /// read once, as nvJitLink reads it, before nvJitLink sees it: an option
    /// the crate's parser does not know is refused ([`Error::InvalidArgument`];
    /// an unknown `-X…` forwarding option among them), and every split compile
    /// asked for (`-split-compile`, `-split-compile-extended`, ptxas's through
    /// `-Xptxas`, here or in `ptxas_options`, NVVM's through `-Xnvvm`) is held
    /// to `split_compile`'s bound.
    pub extra: Vec<String>,
    /// Options passed after [`extra`](Self::extra) **unchecked**, for what the
    /// parser cannot read (a newer nvJitLink's option); only
    /// [`UncheckedOptions::new`](crate::code::tool_args::UncheckedOptions::new), which is
    /// `unsafe`, makes a non-empty one. The driver's linker has no counterpart
    /// ([`Error::Unsupported`]).
    pub extra_unchecked: crate::code::tool_args::UncheckedOptions,
}

impl Default for LinkerOptions {
    /// No `arch` yet (it must be set before use); everything else nvJitLink's
    /// default.
    fn default() -> Self {
        Self::new(String::new())
    }
}

impl LinkerOptions {
    /// Options for `device`'s architecture ([`Device::arch`](crate::Device::arch):
    /// `sm_90` on an H100), everything else left at nvJitLink's default.
    ///
    /// # Errors
    /// The driver's error reading the compute capability.
    pub fn for_device(device: &crate::device::Device) -> crate::error::Result<Self> {
        Ok(Self::new(device.arch()?))
    }

    /// Options for the current device's architecture
    /// ([`Device::current`](crate::Device::current)), which is what `cuda.core`'s
    /// `LinkerOptions()` does when `arch` is not given.
    ///
    /// # Errors
    /// As [`Device::current`](crate::Device::current) and
    /// [`for_device`](Self::for_device).
    pub fn for_current_device() -> crate::error::Result<Self> {
        Self::for_device(&crate::device::Device::current()?)
    }

    /// Options for `arch` (`sm_90`), everything else left at nvJitLink's default.
    pub fn new(arch: impl Into<String>) -> Self {
        Self {
            name: None,
            arch: arch.into(),
            max_register_count: None,
            time: false,
            verbose: false,
            link_time_optimization: false,
            ptx: false,
            optimization_level: None,
            debug: false,
            lineinfo: false,
            ftz: None,
            prec_div: None,
            prec_sqrt: None,
            fma: None,
            kernels_used: Vec::new(),
            variables_used: Vec::new(),
            optimize_unused_variables: false,
            ptxas_options: Vec::new(),
            split_compile: None,
            split_compile_extended: None,
            no_cache: false,
            relocatable: false,
            numba_debug: false,
            extra: Vec::new(),
            extra_unchecked: crate::code::tool_args::UncheckedOptions::default(),
        }
    }

    /// The options as nvJitLink takes them (`-arch=sm_90`, `-lto`, …), in
    /// `cuda.core`'s order, [`extra`](Self::extra) last.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the field, for a missing `arch` or one that
    /// is not `sm_XY` (or `compute_XY` with `ptx`), a `max_register_count` of 0, an
    /// `optimization_level` above 3, a split compile of more than 1024 threads
    /// however it is asked for, an `extra` option nvJitLink's parser here does
    /// not know, a ptxas option of only whitespace, an empty name or option, or
    /// NUL bytes.
    pub fn to_nvjitlink_args(&self) -> Result<Vec<String>> {
        let arch = self.check()?;
        if !arch.real && !self.ptx {
            return Err(Error::invalid(
                OPTIONS_CONTEXT,
                format!(
                    "`arch` {:?} is virtual: a cubin needs sm_XY (compute_XY is for \
                     `ptx: true` only)",
                    self.arch
                ),
            ));
        }
        let mut out = self.checked_args()?;
        for option in self.extra_unchecked.as_slice() {
            if option.is_empty() || option.contains('\0') {
                return Err(Error::invalid(
                    OPTIONS_CONTEXT,
                    format!(
                        "`extra_unchecked` has an empty entry or one with a NUL byte: {option:?}"
                    ),
                ));
            }
            out.push(option.clone());
        }
        Ok(out)
    }

    /// The options before [`extra_unchecked`](Self::extra_unchecked), read as
    /// nvJitLink reads them ([`check_args`](crate::code::tool_args::check_args)); `arch` is not checked here.
    pub(crate) fn checked_args(&self) -> Result<Vec<String>> {
        let mut out = vec![format!("-arch={}", self.arch)];
        let mut marks: Vec<(usize, &'static str)> = Vec::new();
        if let Some(n) = self.max_register_count {
            out.push(format!("-maxrregcount={n}"));
        }
        let flags = [
            (self.time, "-time"),
            (self.verbose, "-verbose"),
            (self.link_time_optimization, "-lto"),
            (self.ptx, "-ptx"),
        ];
        out.extend(flags.iter().filter(|f| f.0).map(|f| f.1.to_owned()));
        if let Some(n) = self.optimization_level {
            out.push(format!("-O{n}"));
        }
        let flags = [(self.debug, "-g"), (self.lineinfo, "-lineinfo")];
        out.extend(flags.iter().filter(|f| f.0).map(|f| f.1.to_owned()));
        for (field, value) in [
            ("ftz", self.ftz),
            ("prec-div", self.prec_div),
            ("prec-sqrt", self.prec_sqrt),
            ("fma", self.fma),
        ] {
            if let Some(b) = value {
                out.push(format!("-{field}={b}"));
            }
        }
        out.extend(
            self.kernels_used
                .iter()
                .map(|k| format!("-kernels-used={k}")),
        );
        out.extend(
            self.variables_used
                .iter()
                .map(|v| format!("-variables-used={v}")),
        );
        if self.optimize_unused_variables {
            out.push("-optimize-unused-variables".to_owned());
        }
        marks.push((out.len(), "ptxas_options"));
        out.extend(self.ptxas_options.iter().map(|o| format!("-Xptxas={o}")));
        if let Some(n) = self.split_compile {
            marks.push((out.len(), "split_compile"));
            out.push(format!("-split-compile={n}"));
        }
        if let Some(n) = self.split_compile_extended {
            marks.push((out.len(), "split_compile_extended"));
            out.push(format!("-split-compile-extended={n}"));
        }
        marks.push((out.len(), "options"));
        if self.no_cache {
            out.push("-no-cache".to_owned());
        }
        if self.relocatable {
            out.push("-r".to_owned());
        }
        if self.numba_debug {
            out.push("-numba-debug".to_owned());
        }
        marks.push((out.len(), "extra"));
        out.extend(self.extra.iter().cloned());
        check_marked(Tool::NvJitLink, &out, &marks, OPTIONS_CONTEXT)?;
        Ok(out)
    }

    /// Checks what every backend needs; returns the parsed architecture.
    pub(crate) fn check(&self) -> Result<Arch> {
        if self.arch.is_empty() {
            return Err(Error::invalid(
                OPTIONS_CONTEXT,
                "`arch` is required (sm_XY, e.g. \"sm_90\")",
            ));
        }
        let arch = Arch::parse_or_invalid(&self.arch, OPTIONS_CONTEXT)?;
        if self.max_register_count == Some(0) {
            return Err(Error::invalid(
                OPTIONS_CONTEXT,
                "`max_register_count` must be at least 1",
            ));
        }
        if let Some(n) = self.optimization_level {
            if n > 3 {
                return Err(Error::invalid(
                    OPTIONS_CONTEXT,
                    format!("`optimization_level` {n} is not 0 to 3"),
                ));
            }
        }
        let lists: [(&str, &[String]); 4] = [
            ("kernels_used", &self.kernels_used),
            ("variables_used", &self.variables_used),
            ("ptxas_options", &self.ptxas_options),
            ("extra", &self.extra),
        ];
        for (field, values) in lists {
            if let Some(v) = values.iter().find(|v| v.is_empty() || v.contains('\0')) {
                return Err(Error::invalid(
                    OPTIONS_CONTEXT,
                    format!("`{field}` has an empty entry or one with a NUL byte: {v:?}"),
                ));
            }
        }
        if self.relocatable && self.ptx {
            return Err(Error::invalid(
                OPTIONS_CONTEXT,
                "`relocatable` and `ptx` cannot be combined: an incremental link yields a \
                 relocatable cubin or LTO-IR, never PTX",
            ));
        }
        if let Some(n) = &self.name {
            if n.is_empty() || n.contains('\0') {
                return Err(Error::invalid(
                    OPTIONS_CONTEXT,
                    format!("`name` {n:?} is empty or contains a NUL byte"),
                ));
            }
        }
        Ok(arch)
    }
}
