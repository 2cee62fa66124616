//! [`CompileTarget`]: what a compile produces. A leaf, named by the options (which
//! check a target against themselves), the compilers and the [`Program`].
//!
//! [`Program`]: crate::Program

use std::fmt;

use crate::code::object::CodeType;

/// What [`Program::compile`](crate::Program::compile) produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompileTarget {
    /// PTX text.
    Ptx,
    /// A cubin for one real architecture (needs `arch: Some("sm_XY")`).
    Cubin,
    /// LTO-IR for link-time optimisation (needs `link_time_optimization: true`).
    Ltoir,
}

impl CompileTarget {
    /// The kind of [`ObjectCode`](crate::ObjectCode) this target produces.
    pub fn code_type(self) -> CodeType {
        match self {
            Self::Ptx => CodeType::Ptx,
            Self::Cubin => CodeType::Cubin,
            Self::Ltoir => CodeType::Ltoir,
        }
    }
}

/// Writes `cuda.core`'s `target_type` string (`ptx`, `cubin`, `ltoir`): the
/// [`CodeType`] the target produces, as that writes itself, so
/// `CompileTarget::Ltoir` and `CodeType::Ltoir` both print `ltoir`.
impl fmt::Display for CompileTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.code_type(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_print_as_the_code_types_they_make() {
        for (target, name) in [
            (CompileTarget::Ptx, "ptx"),
            (CompileTarget::Cubin, "cubin"),
            (CompileTarget::Ltoir, "ltoir"),
        ] {
            assert_eq!(target.to_string(), name);
            assert_eq!(target.code_type().to_string(), name);
        }
        for (code, name) in [
            (CodeType::Fatbin, "fatbin"),
            (CodeType::Object, "object"),
            (CodeType::Library, "library"),
        ] {
            assert_eq!(code.to_string(), name);
        }
        assert_eq!(CodeType::Object.extension(), "o");
    }
}
