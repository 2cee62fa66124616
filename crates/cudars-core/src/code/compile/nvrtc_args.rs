//! NVRTC's command line from [`ProgramOptions`](crate::ProgramOptions): every
//! option NVRTC takes, spelled as NVRTC spells it, and a typed refusal for each
//! one it does not.

use crate::code::arch::Arch;
use crate::code::compile::options::{
    Args, OPTIONS_CONTEXT, ProgramOptions, is_identifier, is_macro_name, on_off,
};
use crate::code::tool_args::Tool;
use crate::error::{Error, Result};

impl ProgramOptions {
    /// The options as NVRTC takes them (`-arch=sm_90`, …), in
    /// `cuda.core`'s order, [`extra`](Self::extra) last (then
    /// [`extra_unchecked`](Self::extra_unchecked)). The assembled vector is
    /// read once, as NVRTC reads it, before it is returned (see `extra`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the field, for an `arch` that is not
    /// `sm_XY`/`compute_XY` (optionally with an `a`/`f` suffix), a macro name that
    /// is not an identifier, a `std` that is not `c++NN`, a `max_register_count` of
    /// 0, a split compile of more than 1024 threads however it is asked for
    /// (`split_compile`, or NVRTC's or ptxas's option in `ptxas_options` or
    /// `extra`), a ptxas option of only whitespace, an `extra` option NVRTC's
    /// parser here does not know, an unknown `ofast_compile` level, empty
    /// entries, non-UTF-8 paths or NUL bytes.
    pub fn to_nvrtc_args(&self) -> Result<Vec<String>> {
        let mut a = Args::new(OPTIONS_CONTEXT);
        self.check_name()?;
        if let Some(arch) = &self.arch {
            Arch::parse_or_invalid(arch, OPTIONS_CONTEXT)?;
            a.push("arch", format!("-arch={arch}"))?;
        }
        if self.relocatable_device_code {
            a.flag(true, "--relocatable-device-code=true");
        }
        a.flag(self.extensible_whole_program, "--extensible-whole-program");
        a.flag(self.debug, "--device-debug");
        a.flag(self.lineinfo, "--generate-line-info");
        if let Some(on) = self.device_code_optimize {
            a.flag(true, if on { "--dopt=on" } else { "--dopt=off" });
        }
        a.field("ptxas_options");
        for opt in &self.ptxas_options {
            a.text("ptxas_options", opt, "--ptxas-options=")?;
        }
        a.field("options");
        if let Some(n) = self.max_register_count {
            if n == 0 {
                return Err(Error::invalid(
                    OPTIONS_CONTEXT,
                    "`max_register_count` must be at least 1",
                ));
            }
            a.out.push(format!("--maxrregcount={n}"));
        }
        if let Some(b) = self.ftz {
            a.out.push(format!("--ftz={}", on_off(b)));
        }
        if let Some(b) = self.prec_sqrt {
            a.out.push(format!("--prec-sqrt={}", on_off(b)));
        }
        if let Some(b) = self.prec_div {
            a.out.push(format!("--prec-div={}", on_off(b)));
        }
        if let Some(b) = self.fma {
            a.out.push(format!("--fmad={}", on_off(b)));
        }
        a.flag(self.use_fast_math, "--use_fast_math");
        a.flag(
            self.extra_device_vectorization,
            "--extra-device-vectorization",
        );
        a.flag(self.link_time_optimization, "-dlto");
        a.flag(self.gen_opt_lto, "--gen-opt-lto");
        for (name, value) in &self.define_macro {
            if !is_macro_name(name) {
                return Err(Error::invalid(
                    OPTIONS_CONTEXT,
                    format!(
                        "`define_macro` name {name:?} is not an identifier (optionally with \
                         a parameter list)"
                    ),
                ));
            }
            match value {
                None => a.push("define_macro", format!("--define-macro={name}"))?,
                Some(v) => a.push("define_macro", format!("--define-macro={name}={v}"))?,
            }
        }
        for name in &self.undefine_macro {
            if !is_identifier(name) {
                return Err(Error::invalid(
                    OPTIONS_CONTEXT,
                    format!("`undefine_macro` name {name:?} is not an identifier"),
                ));
            }
            a.out.push(format!("--undefine-macro={name}"));
        }
        for dir in &self.include_path {
            a.path("include_path", dir, "--include-path=")?;
        }
        for header in &self.pre_include {
            a.text("pre_include", header, "--pre-include=")?;
        }
        a.flag(self.no_source_include, "--no-source-include");
        if let Some(std) = &self.std {
            let ok = std
                .strip_prefix("c++")
                .is_some_and(|v| v.len() == 2 && v.bytes().all(|b| b.is_ascii_digit()));
            if !ok {
                return Err(Error::invalid(
                    OPTIONS_CONTEXT,
                    format!("`std` {std:?} is not a C++ dialect (c++11, c++14, c++17, c++20)"),
                ));
            }
            a.out.push(format!("--std={std}"));
        }
        if let Some(b) = self.builtin_move_forward {
            a.out.push(format!("--builtin-move-forward={}", on_off(b)));
        }
        if let Some(b) = self.builtin_initializer_list {
            a.out
                .push(format!("--builtin-initializer-list={}", on_off(b)));
        }
        a.flag(self.disable_warnings, "--disable-warnings");
        a.flag(self.restrict, "--restrict");
        a.flag(
            self.device_as_default_execution_space,
            "--device-as-default-execution-space",
        );
        a.flag(self.device_int128, "--device-int128");
        a.flag(self.device_float128, "--device-float128");
        if let Some(info) = &self.optimization_info {
            a.text("optimization_info", info, "--optimization-info=")?;
        }
        a.flag(self.no_display_error_number, "--no-display-error-number");
        for n in &self.diag_error {
            a.out.push(format!("--diag-error={n}"));
        }
        for n in &self.diag_suppress {
            a.out.push(format!("--diag-suppress={n}"));
        }
        for n in &self.diag_warn {
            a.out.push(format!("--diag-warn={n}"));
        }
        if let Some(b) = self.brief_diagnostics {
            a.out.push(format!("--brief-diagnostics={}", on_off(b)));
        }
        if let Some(path) = &self.time {
            a.path("time", path, "--time=")?;
        }
        if let Some(n) = self.split_compile {
            // Held to `MAX_SPLIT_COMPILE_THREADS` with every other spelling, by
            // the one check below.
            a.field("split_compile");
            a.out.push(format!("--split-compile={n}"));
            a.field("options");
        }
        a.flag(self.fdevice_syntax_only, "--fdevice-syntax-only");
        a.flag(self.minimal, "--minimal");
        a.flag(self.no_cache, "--no-cache");
        if let Some(path) = &self.fdevice_time_trace {
            a.path("fdevice_time_trace", path, "--fdevice-time-trace=")?;
        }
        if let Some(seed) = &self.frandom_seed {
            a.text("frandom_seed", seed, "--frandom-seed=")?;
        }
        if let Some(level) = &self.ofast_compile {
            if !["0", "min", "mid", "max"].contains(&level.as_str()) {
                return Err(Error::invalid(
                    OPTIONS_CONTEXT,
                    format!("`ofast_compile` {level:?} is not one of 0, min, mid, max"),
                ));
            }
            a.out.push(format!("--Ofast-compile={level}"));
        }
        a.flag(self.pch, "--pch");
        for (field, path, flag) in [
            ("create_pch", &self.create_pch, "--create-pch="),
            ("use_pch", &self.use_pch, "--use-pch="),
            ("pch_dir", &self.pch_dir, "--pch-dir="),
        ] {
            if let Some(path) = path {
                let path = path.to_str().ok_or_else(|| {
                    Error::invalid(OPTIONS_CONTEXT, format!("`{field}` is not UTF-8: {path:?}"))
                })?;
                if path.is_empty() {
                    return Err(Error::invalid(
                        OPTIONS_CONTEXT,
                        format!("`{field}` is empty"),
                    ));
                }
                a.push(field, format!("{flag}{path}"))?;
            }
        }
        for (on, flag) in [
            (self.pch_messages, "--pch-messages="),
            (self.pch_verbose, "--pch-verbose="),
            (
                self.instantiate_templates_in_pch,
                "--instantiate-templates-in-pch=",
            ),
        ] {
            if let Some(on) = on {
                a.out.push(format!("{flag}{on}"));
            }
        }
        if self.use_bundled_headers {
            let dir = match &self.bundled_headers_dir {
                Some(d) => d.clone(),
                None => Self::default_bundled_headers_dir()?,
            };
            a.path("bundled_headers_dir", &dir, "--use-bundled-headers=")?;
        }
        a.flag(self.numba_debug, "--numba-debug");
        a.field("extra");
        for extra in &self.extra {
            a.text("extra", extra, "")?;
        }
        a.check(Tool::Nvrtc)?;
        a.unchecked(&self.extra_unchecked)?;
        Ok(a.out)
    }

    /// The fields that are set (differ from the default), by name.
    pub(super) fn set_fields(&self) -> Vec<&'static str> {
        [
            ("name", self.name.is_some()),
            ("arch", self.arch.is_some()),
            ("std", self.std.is_some()),
            ("relocatable_device_code", self.relocatable_device_code),
            ("extensible_whole_program", self.extensible_whole_program),
            ("debug", self.debug),
            ("lineinfo", self.lineinfo),
            ("device_code_optimize", self.device_code_optimize.is_some()),
            ("ptxas_options", !self.ptxas_options.is_empty()),
            ("max_register_count", self.max_register_count.is_some()),
            ("ftz", self.ftz.is_some()),
            ("prec_sqrt", self.prec_sqrt.is_some()),
            ("prec_div", self.prec_div.is_some()),
            ("fma", self.fma.is_some()),
            ("use_fast_math", self.use_fast_math),
            (
                "extra_device_vectorization",
                self.extra_device_vectorization,
            ),
            ("link_time_optimization", self.link_time_optimization),
            ("gen_opt_lto", self.gen_opt_lto),
            ("define_macro", !self.define_macro.is_empty()),
            ("undefine_macro", !self.undefine_macro.is_empty()),
            ("include_path", !self.include_path.is_empty()),
            ("pre_include", !self.pre_include.is_empty()),
            ("no_source_include", self.no_source_include),
            ("builtin_move_forward", self.builtin_move_forward.is_some()),
            (
                "builtin_initializer_list",
                self.builtin_initializer_list.is_some(),
            ),
            ("disable_warnings", self.disable_warnings),
            ("restrict", self.restrict),
            (
                "device_as_default_execution_space",
                self.device_as_default_execution_space,
            ),
            ("device_int128", self.device_int128),
            ("device_float128", self.device_float128),
            ("optimization_info", self.optimization_info.is_some()),
            ("no_display_error_number", self.no_display_error_number),
            ("diag_error", !self.diag_error.is_empty()),
            ("diag_suppress", !self.diag_suppress.is_empty()),
            ("diag_warn", !self.diag_warn.is_empty()),
            ("brief_diagnostics", self.brief_diagnostics.is_some()),
            ("time", self.time.is_some()),
            ("split_compile", self.split_compile.is_some()),
            ("fdevice_syntax_only", self.fdevice_syntax_only),
            ("minimal", self.minimal),
            ("no_cache", self.no_cache),
            ("fdevice_time_trace", self.fdevice_time_trace.is_some()),
            ("frandom_seed", self.frandom_seed.is_some()),
            ("ofast_compile", self.ofast_compile.is_some()),
            ("extra_sources", !self.extra_sources.is_empty()),
            ("use_libdevice", self.use_libdevice),
            ("pch", self.pch),
            ("create_pch", self.create_pch.is_some()),
            ("use_pch", self.use_pch.is_some()),
            ("pch_dir", self.pch_dir.is_some()),
            ("pch_messages", self.pch_messages.is_some()),
            ("pch_verbose", self.pch_verbose.is_some()),
            (
                "instantiate_templates_in_pch",
                self.instantiate_templates_in_pch.is_some(),
            ),
            ("use_bundled_headers", self.use_bundled_headers),
            ("bundled_headers_dir", self.bundled_headers_dir.is_some()),
            ("numba_debug", self.numba_debug),
            ("extra", !self.extra.is_empty()),
            ("extra_unchecked", !self.extra_unchecked.is_empty()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect()
    }

    /// [`Error::Unsupported`] naming the fields set here that `backend` (which
    /// takes the fields `supported`) has no counterpart for.
    pub(super) fn refuse_unsupported(&self, backend: &str, supported: &[&str]) -> Result<()> {
        let refused: Vec<String> = self
            .set_fields()
            .into_iter()
            .filter(|f| !supported.contains(f))
            .map(|f| format!("`{f}`"))
            .collect();
        if refused.is_empty() {
            return Ok(());
        }
        Err(Error::unsupported(
            OPTIONS_CONTEXT,
            format!("{backend} has no counterpart for {}", refused.join(", ")),
        ))
    }
}
