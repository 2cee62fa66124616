//! How to compile a [`Program`](super::Program): [`ProgramOptions`] and its translation
//! into each backend's arguments (NVRTC's, NVVM's, the linker's). Pure functions of
//! the options, unit-tested without a compiler.

use std::path::{Path, PathBuf};

use crate::code::arch::Arch;
use crate::code::linker_options::LinkerOptions;
use crate::device::Device;
use crate::error::{Error, Result};

use crate::code::compile::target::CompileTarget;

/// The name a program gets when [`ProgramOptions::name`] is `None`.
pub(crate) const DEFAULT_NAME: &str = "default_program";

/// How to compile a [`Program`](crate::Program): NVRTC's options, as `cuda.core`'s
/// `ProgramOptions` spells them.
///
/// Every field defaults to "not given" (the compiler's own default). Build one with
/// struct-update syntax:
///
/// ```
/// use cudars_core::ProgramOptions;
///
/// let options = ProgramOptions {
///     arch: Some("sm_90".into()),
///     define_macro: vec![("N".into(), Some("128".into()))],
///     ..Default::default()
/// };
/// let args = options.to_nvrtc_args()?;
/// assert_eq!(args, ["-arch=sm_90", "--define-macro=N=128"]);
/// # Ok::<(), cudars_core::Error>(())
/// ```
///
/// **An unset [`arch`](Self::arch) is the current device's**, as in `cuda.core`'s
/// `ProgramOptions()`: [`Program::new`](crate::Program::new) fills it in from
/// the current device (see that field); without a GPU it stays the compiler's
/// own default. For another device, start from [`for_device`](Self::for_device)
/// ([`for_current_device`](Self::for_current_device) fills it in at once):
///
/// ```no_run
/// use cudars_core::{Device, ProgramOptions};
///
/// let dev = Device::new(0)?;
/// let options = ProgramOptions {
///     std: Some("c++17".into()),
///     ..ProgramOptions::for_device(&dev)? // arch: Some("sm_90") on an H100
/// };
/// // Python's `ProgramOptions(std="c++17")`: the current device (device 0 if none).
/// let same = ProgramOptions { std: Some("c++17".into()), ..ProgramOptions::for_current_device()? };
/// # Ok::<(), cudars_core::Error>(())
/// ```
///
/// Headers: [`with_toolkit_headers`](Self::with_toolkit_headers) puts the CUDA
/// runtime's and CCCL's include directories (from the wheels or a toolkit) on
/// [`include_path`](Self::include_path), for `#include <cooperative_groups.h>`,
/// `<cuda/std/…>`, `<cub/…>`; with NVRTC 13.3 or newer,
/// [`use_bundled_headers`](Self::use_bundled_headers) uses the headers NVRTC
/// carries instead.
///
/// For NVVM IR only the options NVVM has a counterpart for apply (see
/// [`to_nvvm_args`](Self::to_nvvm_args)); for PTX the code-generation options go
/// to the [`Linker`](crate::Linker) (see [`to_linker_options`](Self::to_linker_options)). Setting
/// an option the backend has no counterpart for (a C++ front-end option such as
/// `std`, macros, include paths or diagnostics, for NVVM IR or PTX) is
/// [`Error::Unsupported`] naming it, never silently ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProgramOptions {
    /// The program's name: the file name in diagnostics and the name of the
    /// compiled [`ObjectCode`](crate::ObjectCode) (`default_program` when `None`).
    pub name: Option<String>,
    /// The target architecture: `sm_XY` (real: PTX and a cubin), `compute_XY`
    /// (virtual: PTX only), either with an `a` or `f` suffix (`sm_90a`)
    /// (`-arch=`, as `cuda.core` writes it; NVVM `-arch=compute_XY`).
    ///
    /// **`None` is the current device**, as in `cuda.core`:
    /// [`Program::new`](crate::Program::new) (and the program cache's key) sets
    /// it to the architecture of [`Device::current`] (the current context's
    /// device, or device 0), and [`Program::options`](crate::Program::options)
    /// shows it. Where there is no GPU to ask (no CUDA driver, or no device;
    /// `cuda.core` raises there) it stays `None`: nothing is passed and the
    /// compiler's own default applies, for NVRTC and NVVM their oldest supported
    /// virtual architecture, `compute_75` for CUDA 13 and `compute_52` for CUDA
    /// 12 (PTX and LTO-IR are made for it, which the driver compiles for the GPU
    /// when it is loaded), and a cubin refuses it with
    /// [`Error::InvalidArgument`]. The options themselves never ask the driver:
    /// [`to_nvrtc_args`](Self::to_nvrtc_args) and
    /// [`to_linker_options`](Self::to_linker_options) of unset options have no
    /// architecture (the linker refuses them). Set it from a device with
    /// [`for_device`](Self::for_device) or
    /// [`for_current_device`](Self::for_current_device).
    pub arch: Option<String>,
    /// The C++ dialect, `c++03` to `c++20` (`--std=`).
    pub std: Option<String>,
    /// Relocatable device code, for separate compilation and linking
    /// (`--relocatable-device-code=true`).
    pub relocatable_device_code: bool,
    /// Extensible whole-program mode (`--extensible-whole-program`).
    pub extensible_whole_program: bool,
    /// Device debug information (`--device-debug`; NVVM `-g`).
    pub debug: bool,
    /// Line information (`--generate-line-info`; NVVM `-generate-line-info`).
    pub lineinfo: bool,
    /// Device-code optimisation on or off (`--dopt=on|off`; NVVM `-opt=3|0`).
    pub device_code_optimize: Option<bool>,
    /// Options for ptxas, each passed as `--ptxas-options=<option>`.
    pub ptxas_options: Vec<String>,
    /// The most registers a kernel may use (`--maxrregcount=`); at least 1.
    pub max_register_count: Option<u32>,
    /// Flush denormals to zero (`--ftz=`; NVVM `-ftz=`).
    pub ftz: Option<bool>,
    /// IEEE-rounded square root (`--prec-sqrt=`; NVVM `-prec-sqrt=`).
    pub prec_sqrt: Option<bool>,
    /// IEEE-rounded division and reciprocal (`--prec-div=`; NVVM `-prec-div=`).
    pub prec_div: Option<bool>,
    /// Fused multiply-add contraction (`--fmad=`; NVVM `-fma=`).
    pub fma: Option<bool>,
    /// Fast math (`--use_fast_math`); for NVVM the `ftz`/`prec_div`/`prec_sqrt`/`fma`
    /// settings it implies, where those are not given.
    pub use_fast_math: bool,
    /// More aggressive device-code vectorisation (`--extra-device-vectorization`).
    pub extra_device_vectorization: bool,
    /// Emit LTO-IR for link-time optimisation (NVRTC's `-dlto`, which makes LTO-IR
    /// only); needed for [`CompileTarget::Ltoir`] from C++. NVVM IR compiles to
    /// either target whatever this is (the target gives NVVM `-gen-lto`, as in
    /// `cuda.core`); its cubin is linked from LTO-IR with link-time optimisation
    /// when this is set, from PTX otherwise.
    pub link_time_optimization: bool,
    /// Optimise the LTO-IR further (`--gen-opt-lto`).
    pub gen_opt_lto: bool,
    /// Macros to define: `(name, None)` is `--define-macro=name`, `(name,
    /// Some(value))` is `--define-macro=name=value`. A name is an identifier,
    /// optionally with a parameter list (`F(a,b)`).
    pub define_macro: Vec<(String, Option<String>)>,
    /// Macros to undefine (`--undefine-macro=`).
    pub undefine_macro: Vec<String>,
    /// Directories searched for `#include` (`--include-path=`).
    pub include_path: Vec<PathBuf>,
    /// Headers included before the source (`--pre-include=`).
    pub pre_include: Vec<String>,
    /// Do not search the source's own directory for includes (`--no-source-include`).
    pub no_source_include: bool,
    /// Treat `std::move`/`std::forward` as built-ins (`--builtin-move-forward=`).
    pub builtin_move_forward: Option<bool>,
    /// Treat `std::initializer_list` as built-in (`--builtin-initializer-list=`).
    pub builtin_initializer_list: Option<bool>,
    /// Suppress all warnings (`--disable-warnings`).
    pub disable_warnings: bool,
    /// Assume kernel pointer parameters are `__restrict__` (`--restrict`).
    pub restrict: bool,
    /// Treat unannotated functions as `__device__` (`--device-as-default-execution-space`).
    pub device_as_default_execution_space: bool,
    /// Allow `__int128` in device code (`--device-int128`).
    pub device_int128: bool,
    /// Allow `__float128` in device code (`--device-float128`).
    pub device_float128: bool,
    /// Report optimisations of this kind (`--optimization-info=`; NVRTC knows `inline`).
    pub optimization_info: Option<String>,
    /// Leave diagnostic numbers out of messages (`--no-display-error-number`).
    pub no_display_error_number: bool,
    /// Diagnostics (by number) to turn into errors (`--diag-error=`).
    pub diag_error: Vec<u32>,
    /// Diagnostics (by number) to suppress (`--diag-suppress=`).
    pub diag_suppress: Vec<u32>,
    /// Diagnostics (by number) to turn into warnings (`--diag-warn=`).
    pub diag_warn: Vec<u32>,
    /// Shorter diagnostics (`--brief-diagnostics=`).
    pub brief_diagnostics: Option<bool>,
    /// Write the compiler's phase timings to this file, as CSV (`--time=`).
    pub time: Option<PathBuf>,
    /// Compile with up to this many threads, 0 for as many as there are CPUs
    /// (`--split-compile=`); at most 1024. NVRTC compiling for a real
    /// architecture starts exactly this many threads for ptxas, and crashes or
    /// hangs the process when it cannot (NVRTC 12.9 and 13.0), so a larger
    /// count is refused before it is called. `ptxas_options` asking ptxas for
    /// a split compile (`--split-compile=N`) are held to the same bound.
    pub split_compile: Option<u32>,
    /// Check the device code's syntax only (`--fdevice-syntax-only`).
    pub fdevice_syntax_only: bool,
    /// Omit some implicit headers, for faster compiles (`--minimal`).
    pub minimal: bool,
    /// Do not use the compilation cache (`--no-cache`).
    pub no_cache: bool,
    /// Write a Chrome trace of the compile to this file (`--fdevice-time-trace=`).
    pub fdevice_time_trace: Option<PathBuf>,
    /// The seed of the compiler's random numbers (`--frandom-seed=`).
    pub frandom_seed: Option<String>,
    /// Faster compilation at some cost in code quality: `0`, `min`, `mid` or `max`
    /// (`--Ofast-compile=`).
    pub ofast_compile: Option<String>,
    /// More NVVM IR modules (name, text or bitcode) compiled with an NVVM IR
    /// program; NVVM only.
    pub extra_sources: Vec<(String, Vec<u8>)>,
    /// Link NVIDIA's libdevice (the math library as NVVM IR), found by the
    /// pathfinder (`find_bitcode_lib("libdevice")`), lazily: only the functions
    /// the program calls are kept. NVVM only.
    pub use_libdevice: bool,
    /// Precompiled headers, automatically: NVRTC creates a PCH for the headers
    /// this program includes, or uses one it made before (`--pch`).
    pub pch: bool,
    /// Create a precompiled header at this path (`--create-pch=`).
    pub create_pch: Option<PathBuf>,
    /// Use the precompiled header at this path (`--use-pch=`).
    pub use_pch: Option<PathBuf>,
    /// Where automatic PCH files go (`--pch-dir=`).
    pub pch_dir: Option<PathBuf>,
    /// Report in the log whether a PCH was created or used (`--pch-messages=`).
    pub pch_messages: Option<bool>,
    /// Say in the log why a PCH could not be created or used (`--pch-verbose=`).
    pub pch_verbose: Option<bool>,
    /// Instantiate templates while creating the PCH
    /// (`--instantiate-templates-in-pch=`).
    pub instantiate_templates_in_pch: Option<bool>,
    /// Use the CUDA runtime and CCCL headers that NVRTC carries
    /// (`--use-bundled-headers=<dir>`, NVRTC 13.3 or newer): NVRTC installs them
    /// into [`bundled_headers_dir`](Self::bundled_headers_dir) (once) and puts
    /// them on the include path, so `#include <cuda/std/…>` or
    /// `<cooperative_groups.h>` compile with no toolkit or wheel headers. With an
    /// older NVRTC, compiling is [`Error::Unsupported`] (naming both versions);
    /// [`with_toolkit_headers`](Self::with_toolkit_headers) works with any NVRTC.
    pub use_bundled_headers: bool,
    /// Where NVRTC installs its bundled headers for
    /// [`use_bundled_headers`](Self::use_bundled_headers); `None`:
    /// [`default_bundled_headers_dir`](Self::default_bundled_headers_dir) (a
    /// directory per NVRTC version in the user's cache directory).
    pub bundled_headers_dir: Option<PathBuf>,
    /// Extra debug information for Numba's CUDA debugger support, with `debug`
    /// (`--numba-debug`, for NVVM too, as `cuda.core` writes it). Compilers that do not know the
    /// option fail the compile with their invalid-option error
    /// ([`Error::Compile`], whose log names it): NVRTC 13.0 does.
    pub numba_debug: bool,
    /// More options, after all the others, as the compiler spells them
    /// (`-Xptxas=-v`, `--define-macro=N`, `-DN`). The whole argument vector is
    /// read once, as the compiler reads it, before the compiler sees it: an
    /// option the crate's parser does not know is refused
    /// ([`Error::InvalidArgument`]; an unknown `-X…` forwarding option among
    /// them), and every split compile asked for, of NVRTC or of ptxas (through
    /// `-Xptxas`/`--ptxas-options`, here or in `ptxas_options`, `=` or next-entry
    /// forms, decimal, octal or hex), is held to `split_compile`'s bound. For
    /// NVVM IR, the options NVVM takes.
    pub extra: Vec<String>,
    /// Options passed after [`extra`](Self::extra) **unchecked**, for what the
    /// parser cannot read (a newer compiler's option); only
    /// [`UncheckedOptions::new`](crate::code::tool_args::UncheckedOptions::new), which is
    /// `unsafe`, makes a non-empty one. Not taken for PTX (the linker's are
    /// [`LinkerOptions::extra_unchecked`]).
    pub extra_unchecked: crate::code::tool_args::UncheckedOptions,
}

/// The compilers [`ProgramOptions::as_bytes`] writes options for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CompilerBackend {
    /// NVRTC (CUDA C++).
    Nvrtc,
    /// NVVM (NVVM IR).
    Nvvm,
}

impl std::str::FromStr for CompilerBackend {
    type Err = Error;

    /// `nvrtc` or `nvvm`, in any case, as `cuda.core`'s `as_bytes` takes them
    /// (and as [`Program::backend`](crate::Program::backend) names them).
    fn from_str(s: &str) -> Result<Self> {
        if s.eq_ignore_ascii_case("nvrtc") {
            Ok(Self::Nvrtc)
        } else if s.eq_ignore_ascii_case("nvvm") {
            Ok(Self::Nvvm)
        } else {
            Err(Error::invalid(
                "choosing a compiler backend",
                format!("{s:?} is not a compiler backend: expected `nvrtc` or `nvvm`"),
            ))
        }
    }
}

/// The options NVVM takes (every other field set is refused for NVVM IR).
pub(crate) const NVVM_FIELDS: &[&str] = &[
    "name",
    "arch",
    "debug",
    "lineinfo",
    "device_code_optimize",
    "ftz",
    "prec_sqrt",
    "prec_div",
    "fma",
    "use_fast_math",
    "link_time_optimization",
    "extra_sources",
    "use_libdevice",
    "numba_debug",
    "extra",
    "extra_unchecked",
];

/// The options the linker takes for PTX ([`ProgramOptions::to_linker_options`]).
pub(super) const LINKER_FIELDS: &[&str] = &[
    "name",
    "arch",
    "max_register_count",
    "time",
    "debug",
    "lineinfo",
    "ftz",
    "prec_div",
    "prec_sqrt",
    "fma",
    "split_compile",
    "ptxas_options",
    "no_cache",
    // Taken and ignored, as `cuda.core`'s linker takes it ("plumb-through; no-op
    // at link time"), so that one set of options with `--numba-debug` compiles
    // every stage of a Numba-style pipeline.
    "numba_debug",
];

pub(crate) const OPTIONS_CONTEXT: &str = "checking the program options";

/// An option list under construction: every argument is checked for NUL bytes.
pub(crate) struct Args {
    pub(crate) context: &'static str,
    pub(crate) out: Vec<String>,
    /// Where each field's options start in `out` (for the messages of
    /// [`check`](Self::check)); before the first mark, "the options".
    marks: Vec<(usize, &'static str)>,
}

impl Args {
    pub(crate) fn new(context: &'static str) -> Self {
        Self {
            context,
            out: Vec::new(),
            marks: Vec::new(),
        }
    }

    /// The options pushed from now on come from `field`.
    pub(crate) fn field(&mut self, field: &'static str) {
        self.marks.push((self.out.len(), field));
    }

    /// Reads the options assembled so far as `tool` reads them
    /// ([`check_args`](crate::code::tool_args::check_args)).
    pub(crate) fn check(&self, tool: crate::code::tool_args::Tool) -> Result<()> {
        crate::code::tool_args::check_marked(tool, &self.out, &self.marks, self.context)
    }

    /// Appends the unchecked options (NUL bytes and empty entries still refused).
    pub(crate) fn unchecked(
        &mut self,
        options: &crate::code::tool_args::UncheckedOptions,
    ) -> Result<()> {
        self.field("extra_unchecked");
        for option in options.as_slice() {
            self.text("extra_unchecked", option, "")?;
        }
        Ok(())
    }

    pub(crate) fn push(&mut self, field: &str, arg: String) -> Result<()> {
        if arg.contains('\0') {
            return Err(Error::invalid(
                self.context,
                format!("`{field}` contains a NUL byte: {arg:?}"),
            ));
        }
        self.out.push(arg);
        Ok(())
    }

    pub(crate) fn flag(&mut self, on: bool, arg: &str) {
        if on {
            self.out.push(arg.to_owned());
        }
    }

    pub(crate) fn text(&mut self, field: &str, value: &str, option: &str) -> Result<()> {
        if value.is_empty() {
            return Err(Error::invalid(
                self.context,
                format!("`{field}` has an empty entry"),
            ));
        }
        self.push(field, format!("{option}{value}"))
    }

    pub(crate) fn path(&mut self, field: &str, path: &Path, option: &str) -> Result<()> {
        let Some(p) = path.to_str() else {
            return Err(Error::invalid(
                self.context,
                format!("`{field}` is not valid UTF-8: {}", path.display()),
            ));
        };
        self.text(field, p, option)
    }
}

pub(crate) fn on_off(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

pub(crate) fn one_zero(b: bool) -> &'static str {
    if b { "1" } else { "0" }
}

pub(crate) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A macro name: an identifier, optionally with a parameter list (`F(a, b)`,
/// `F()`, `F(...)`).
pub(crate) fn is_macro_name(s: &str) -> bool {
    let Some((name, rest)) = s.split_once('(') else {
        return is_identifier(s);
    };
    let Some(params) = rest.strip_suffix(')') else {
        return false;
    };
    is_identifier(name)
        && (params.trim().is_empty()
            || params
                .split(',')
                .map(str::trim)
                .all(|p| p == "..." || is_identifier(p)))
}

impl ProgramOptions {
    /// The options as `backend` takes them, as bytes (`as_bytes` in Python):
    /// [`to_nvrtc_args`](Self::to_nvrtc_args) or
    /// [`to_nvvm_args`](Self::to_nvvm_args), plus NVVM's `-gen-lto` when
    /// `target` is [`CompileTarget::Ltoir`] (which NVVM needs for LTO-IR). Pass
    /// a backend by name with `"nvvm".parse()?`.
    ///
    /// ```
    /// use cudars_core::{CompileTarget, CompilerBackend, ProgramOptions};
    ///
    /// let options = ProgramOptions { arch: Some("sm_90".into()), debug: true, ..Default::default() };
    /// assert_eq!(
    ///     options.as_bytes(CompilerBackend::Nvvm, Some(CompileTarget::Ltoir))?,
    ///     [b"-arch=compute_90".to_vec(), b"-g".to_vec(), b"-gen-lto".to_vec()]
    /// );
    /// assert_eq!(options.as_bytes("nvrtc".parse()?, None)?[1], b"--device-debug");
    /// # Ok::<(), cudars_core::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`to_nvrtc_args`](Self::to_nvrtc_args) and
    /// [`to_nvvm_args`](Self::to_nvvm_args).
    pub fn as_bytes(
        &self,
        backend: CompilerBackend,
        target: Option<CompileTarget>,
    ) -> Result<Vec<Vec<u8>>> {
        let mut args = match backend {
            CompilerBackend::Nvrtc => self.to_nvrtc_args()?,
            CompilerBackend::Nvvm => {
                let mut args = self.to_nvvm_args()?;
                if target == Some(CompileTarget::Ltoir) && !args.iter().any(|a| a == "-gen-lto") {
                    args.push("-gen-lto".to_owned());
                }
                args
            }
        };
        Ok(args.drain(..).map(String::into_bytes).collect())
    }

    /// The options NVVM understands, as it takes them: `-arch=compute_XY` (an
    /// `sm_XY` arch becomes `compute_XY`), `-opt=0|3` from
    /// [`device_code_optimize`](Self::device_code_optimize), `-g`,
    /// `-generate-line-info`, `-ftz=`/`-prec-div=`/`-prec-sqrt=`/`-fma=` (`0`/`1`,
    /// implied by `use_fast_math` where not given), `--numba-debug`, then
    /// [`extra`](Self::extra). NVVM's `-gen-lto` is not among them: the target
    /// decides it, as in `cuda.core` (see [`as_bytes`](Self::as_bytes)). `name`, `extra_sources` and `use_libdevice` apply
    /// to the program, not the option list.
    ///
    /// # Errors
    /// [`Error::Unsupported`] naming every other field that is set (C++
    /// front-end and NVRTC options NVVM has no counterpart for: `std`,
    /// `define_macro`, `max_register_count`, …); [`Error::InvalidArgument`] for
    /// a malformed `arch`, NUL bytes or empty entries in `name` or `extra`, or
    /// an `extra` option that is not one of NVVM's (see [`extra`](Self::extra)).
    pub fn to_nvvm_args(&self) -> Result<Vec<String>> {
        let mut a = Args::new(OPTIONS_CONTEXT);
        self.check_name()?;
        self.refuse_unsupported("NVVM", NVVM_FIELDS)?;
        if let Some(arch) = &self.arch {
            let arch = Arch::parse_or_invalid(arch, OPTIONS_CONTEXT)?;
            a.out.push(format!("-arch={}", arch.virtual_name()));
        }
        if let Some(on) = self.device_code_optimize {
            a.out.push(if on { "-opt=3" } else { "-opt=0" }.to_owned());
        }
        a.flag(self.debug, "-g");
        a.flag(self.lineinfo, "-generate-line-info");
        let fast = |explicit: Option<bool>, implied: bool| {
            explicit.or_else(|| self.use_fast_math.then_some(implied))
        };
        if let Some(b) = fast(self.ftz, true) {
            a.out.push(format!("-ftz={}", one_zero(b)));
        }
        if let Some(b) = fast(self.prec_div, false) {
            a.out.push(format!("-prec-div={}", one_zero(b)));
        }
        if let Some(b) = fast(self.prec_sqrt, false) {
            a.out.push(format!("-prec-sqrt={}", one_zero(b)));
        }
        if let Some(b) = fast(self.fma, true) {
            a.out.push(format!("-fma={}", one_zero(b)));
        }
        a.flag(self.numba_debug, "--numba-debug");
        a.field("extra");
        for extra in &self.extra {
            a.text("extra", extra, "")?;
        }
        a.check(crate::code::tool_args::Tool::Nvvm)?;
        a.unchecked(&self.extra_unchecked)?;
        Ok(a.out)
    }

    /// The [`LinkerOptions`] that assemble and link PTX compiled with these
    /// options: `arch`, `max_register_count`, `time` (on when a file is given),
    /// `debug`, `lineinfo`, `ftz`, `prec_div`, `prec_sqrt`, `fma`,
    /// `split_compile`, `ptxas_options` and `no_cache` carry over, and the name.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `arch` is not given (the linker needs one).
    pub fn to_linker_options(&self) -> Result<LinkerOptions> {
        let Some(arch) = &self.arch else {
            return Err(Error::invalid(
                OPTIONS_CONTEXT,
                "linking needs an `arch` (sm_XY)",
            ));
        };
        Ok(self.linker_options_for(arch.clone()))
    }

    /// [`to_linker_options`](Self::to_linker_options) for `arch`, which may be
    /// empty (for checking the free-form options without an architecture).
    pub(super) fn linker_options_for(&self, arch: String) -> LinkerOptions {
        LinkerOptions {
            name: Some(self.program_name().to_owned()),
            max_register_count: self.max_register_count,
            time: self.time.is_some(),
            debug: self.debug,
            lineinfo: self.lineinfo,
            ftz: self.ftz,
            prec_div: self.prec_div,
            prec_sqrt: self.prec_sqrt,
            fma: self.fma,
            split_compile: self.split_compile,
            ptxas_options: self.ptxas_options.clone(),
            no_cache: self.no_cache,
            ..LinkerOptions::new(arch)
        }
    }

    /// Options that compile for `device`: `arch` is its architecture (`sm_90`
    /// on an H100, as [`Device::arch`] gives it), everything else is the default.
    /// Update other fields with struct-update syntax (`ProgramOptions { std: …,
    /// ..ProgramOptions::for_device(&dev)? }`).
    ///
    /// # Errors
    /// The driver's error reading the compute capability.
    pub fn for_device(device: &Device) -> Result<Self> {
        Ok(Self {
            arch: Some(device.arch()?),
            ..Self::default()
        })
    }

    /// Options that compile for the current device ([`Device::current`]: the
    /// current context's device, or device 0 when no context is current), which is
    /// what `cuda.core`'s `ProgramOptions()` does when `arch` is not given.
    ///
    /// # Errors
    /// As [`Device::current`] and [`for_device`](Self::for_device) (no driver or
    /// no device is an error: compiling without a GPU needs an explicit `arch`).
    pub fn for_current_device() -> Result<Self> {
        Self::for_device(&Device::current()?)
    }

    /// These options with an unset [`arch`](Self::arch) filled in as
    /// `cuda.core`'s `ProgramOptions` fills it: the current device's
    /// architecture ([`Device::current`], [`Device::arch`]). Where there is no
    /// GPU to ask (no CUDA driver, or a driver with no device) it stays unset,
    /// the compiler's default, so that compiling needs no GPU (`cuda.core`
    /// raises there). [`Program::new`](crate::Program::new) and the program
    /// cache's key call this.
    ///
    /// # Errors
    /// Any other driver error reading the device or its compute capability.
    pub(crate) fn with_current_device_arch(mut self) -> Result<Self> {
        if self.arch.is_none() {
            self.arch = current_device_arch()?;
        }
        Ok(self)
    }

    /// These options with the include directories of the CUDA runtime headers
    /// (`cudart`: `cuda_runtime.h`, `cooperative_groups.h`, `cuda_fp16.h`, …) and
    /// of CCCL (`cccl`: `<cuda/std/…>`, `<cub/…>`, `<thrust/…>`) added to
    /// [`include_path`](Self::include_path), CCCL first, each once.
    ///
    /// They are found as [`toolkit_include_dirs`] finds them: by the pathfinder,
    /// in NVIDIA's wheels (`nvidia-cuda-runtime` and `nvidia-cuda-cccl`, with
    /// `-cu12` for CUDA 12), conda, `CUDA_PATH`/`CUDA_HOME` or the toolkit the
    /// system's `libcudart` belongs to. Use headers of the same CUDA major as
    /// NVRTC.
    ///
    /// ```no_run
    /// use cudars_core::{CompileTarget, Program, ProgramOptions, SourceCode};
    ///
    /// let src = "#include <cooperative_groups.h>\n#include <cuda/std/type_traits>\n\
    ///            extern \"C\" __global__ void k(int *o) { *o = cuda::std::is_integral<int>::value; }";
    /// let options = ProgramOptions { arch: Some("sm_90".into()), ..Default::default() }
    ///     .with_toolkit_headers()?;
    /// let ptx = Program::new(SourceCode::Cxx(src), options)?.compile(CompileTarget::Ptx, &[])?;
    /// # Ok::<(), cudars_core::Error>(())
    /// ```
    ///
    /// # Errors
    /// The pathfinder's [`PathfinderError`](cudars_pathfinder::PathfinderError):
    /// `NotFound` names the headers that were not found (`cudart` or `cccl`) and
    /// lists every place searched. `?` turns it into
    /// [`Error::Pathfinder`] (the pathfinder's error as its source) in a
    /// function that returns this crate's [`Result`].
    pub fn with_toolkit_headers(mut self) -> Result<Self, cudars_pathfinder::PathfinderError> {
        for dir in toolkit_include_dirs()? {
            if !self.include_path.contains(&dir) {
                self.include_path.push(dir);
            }
        }
        Ok(self)
    }

    /// The directory NVRTC installs its bundled headers into when
    /// [`use_bundled_headers`](Self::use_bundled_headers) is set and
    /// [`bundled_headers_dir`](Self::bundled_headers_dir) is not:
    /// `<cache>/cuda-rs/nvrtc-bundled-headers/<major>.<minor>` for the loaded
    /// NVRTC (`<cache>` is `$XDG_CACHE_HOME` or `~/.cache` on Linux), so that
    /// NVRTC versions do not share headers. Without NVRTC, the version part is
    /// left out.
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the system has no cache directory (no home
    /// directory): set `bundled_headers_dir`.
    pub fn default_bundled_headers_dir() -> Result<PathBuf> {
        let base = dirs::cache_dir().ok_or_else(|| {
            Error::unsupported(
                "choosing a directory for NVRTC's bundled headers",
                "the system has no cache directory: set `bundled_headers_dir`",
            )
        })?;
        let dir = base.join("cuda-rs").join("nvrtc-bundled-headers");
        Ok(match super::nvrtc::version() {
            Ok(version) => dir.join(version.to_string()),
            Err(_) => dir,
        })
    }

    pub(super) fn program_name(&self) -> &str {
        self.name.as_deref().unwrap_or(DEFAULT_NAME)
    }

    pub(super) fn check_name(&self) -> Result<()> {
        match &self.name {
            Some(n) if n.is_empty() || n.contains('\0') => Err(Error::invalid(
                OPTIONS_CONTEXT,
                format!("`name` {n:?} is empty or contains a NUL byte"),
            )),
            _ => Ok(()),
        }
    }

    /// Whether the options ask NVRTC for LTO-IR (the field, or `-dlto` in `extra`).
    pub(super) fn wants_lto(&self) -> bool {
        self.link_time_optimization
            || self
                .extra
                .iter()
                .any(|e| e == "-dlto" || e == "--dlink-time-opt")
    }

    /// The real architecture a cubin is built for, or why there is none.
    pub(super) fn real_arch(&self, context: &'static str) -> Result<&str> {
        match &self.arch {
            Some(arch) if Arch::parse(arch).is_some_and(|a| a.real) => Ok(arch),
            Some(arch) => Err(Error::invalid(
                context,
                format!(
                    "a cubin needs a real architecture (sm_XY), but `arch` is {arch:?}; \
                     compile to PTX for a virtual one"
                ),
            )),
            None => Err(Error::invalid(
                context,
                "a cubin needs a real architecture: set `arch: Some(\"sm_XY\".into())`",
            )),
        }
    }
}

/// The include directories of the CUDA runtime headers (`cudart`) and of CCCL
/// (`cccl`), CCCL first, as [`ProgramOptions::with_toolkit_headers`] adds them
/// (one directory when both are in the same place, as in CUDA 12 toolkits).
///
/// Found by [`cudars_pathfinder::find_nvidia_header_directory`]: NVIDIA's wheels
/// (`nvidia-cuda-runtime` and `nvidia-cuda-cccl`), conda, `CUDA_PATH`/`CUDA_HOME`,
/// or the toolkit of the system's `libcudart`.
///
/// # Errors
/// [`PathfinderError::NotFound`](cudars_pathfinder::PathfinderError::NotFound)
/// naming the headers not found (`cccl` or `cudart`), with every place searched.
pub fn toolkit_include_dirs() -> Result<Vec<PathBuf>, cudars_pathfinder::PathfinderError> {
    let mut dirs: Vec<PathBuf> = Vec::with_capacity(2);
    for name in ["cccl", "cudart"] {
        let dir = cudars_pathfinder::find_nvidia_header_directory(name)?.abs_path;
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    Ok(dirs)
}

/// The current device's architecture (`sm_90`), or `None` when there is no GPU
/// to ask: no CUDA driver ([`Error::Unavailable`]), or a driver without a
/// device (`CUDA_ERROR_NO_DEVICE`, or no device 0: `CUDA_ERROR_INVALID_DEVICE`).
fn current_device_arch() -> Result<Option<String>> {
    match Device::current().and_then(|d| d.arch()) {
        Ok(arch) => Ok(Some(arch)),
        Err(e) if no_gpu(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether `e` says there is no GPU to ask (see [`current_device_arch`]).
fn no_gpu(e: &Error) -> bool {
    use cudars_bindings::driver as sys;
    e.is_unavailable()
        || matches!(
            e.driver_code(),
            Some(sys::CUDA_ERROR_NO_DEVICE | sys::CUDA_ERROR_INVALID_DEVICE)
        )
}

#[cfg(test)]
mod tests;
