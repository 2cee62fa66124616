//! [`Program::compile`]: the one place that picks a compiler for a program's
//! source. Above the program and the three compilers (each adds its compile to
//! [`Program`] in its own module), so that `program` names none of them.

use crate::code::compile::program::{Program, Source};
use crate::code::compile::target::CompileTarget;
use crate::code::object::ObjectCode;
use crate::error::{Error, Result};

impl Program {
    /// Compiles to `target`.
    ///
    /// `name_expressions` (C++ only) name the kernels and variables to look up
    /// afterwards, such as `add<float>` or `&counter`: each is instantiated if it
    /// is a template, and the result's [`ObjectCode::symbol_mapping`] maps it to its
    /// mangled name.
    ///
    /// * C++ goes through NVRTC: PTX, a cubin (needs an `sm_XY` `arch`) or LTO-IR
    ///   (needs `link_time_optimization`, which gives LTO-IR only).
    /// * NVVM IR goes through NVVM: PTX, or LTO-IR (`-gen-lto`, added for that
    ///   target); a cubin is linked by the [`Linker`](crate::Linker) from LTO-IR
    ///   with `link_time_optimization`, from PTX without.
    /// * PTX is returned as is for [`CompileTarget::Ptx`] and linked into a cubin by
    ///   the [`Linker`](crate::Linker) for [`CompileTarget::Cubin`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a target the source or options cannot
    /// produce, name expressions on a non-C++ program, or a name expression with a
    /// NUL byte; [`Error::Compile`] with the compiler's log when compilation fails;
    /// [`Error::Tool`] when another compiler call fails; [`Error::Unavailable`]
    /// when the compiler's library cannot be loaded (its reason says where it
    /// was searched for).
    pub fn compile(&self, target: CompileTarget, name_expressions: &[&str]) -> Result<ObjectCode> {
        if !name_expressions.is_empty() && !matches!(self.source, Source::Cxx(_)) {
            return Err(Error::invalid(
                format!("compiling a {} program to {target}", self.backend()),
                "name expressions apply to C++ programs only",
            ));
        }
        match &self.source {
            Source::Cxx(src) => self.compile_nvrtc(src, target, name_expressions),
            Source::Nvvm(ir) => self.compile_nvvm(ir, target),
            Source::Ptx(ptx) => self.compile_ptx(ptx, target),
        }
    }

    /// [`compile`](Self::compile) without name expressions, for code whose
    /// kernels are `extern "C"` (looked up by their plain names): Python's
    /// `program.compile(target)`.
    ///
    /// ```no_run
    /// use cudars_core::{CompileTarget, Program, ProgramOptions, SourceCode};
    ///
    /// let src = "extern \"C\" __global__ void k(int *o) { *o = 1; }";
    /// let ptx = Program::new(SourceCode::Cxx(src), ProgramOptions::default())?
    ///     .compile_to(CompileTarget::Ptx)?;
    /// # Ok::<(), cudars_core::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`compile`](Self::compile).
    pub fn compile_to(&self, target: CompileTarget) -> Result<ObjectCode> {
        self.compile(target, &[])
    }
}
