//! What the reader produces: positions and errors, the scalar and base types,
//! parameters, kernels, declarators and the types a source declares. A leaf:
//! the lexer, the parser, the declarator and type readers all build these.

use std::fmt;

/// Where something is in the source (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pos {
    pub(crate) line: u32,
    pub(crate) col: u32,
}

/// A problem with the source, at a place in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError {
    pub(crate) pos: Pos,
    pub(crate) message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}:{}: {}",
            self.pos.line, self.pos.col, self.message
        )
    }
}

/// What the preprocessor lines of a source say that matters to its types (the
/// preprocessor itself is not run).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Directives {
    /// The names `#define` gives a meaning to, with where.
    pub(crate) macros: Vec<(String, Pos)>,
    /// What `#include` names (`<cuda_fp16.h>`, `"mine.h"`).
    pub(crate) includes: Vec<String>,
}

/// A C scalar type a kernel parameter (or a pointer's element) can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scalar {
    /// `char` (signed or not as the platform's `char`).
    CChar,
    /// `signed char`, `int8_t`.
    I8,
    /// `unsigned char`, `uint8_t`.
    U8,
    /// `short`, `int16_t`.
    I16,
    /// `unsigned short`, `uint16_t`.
    U16,
    /// `int`, `int32_t`.
    I32,
    /// `unsigned`, `uint32_t`.
    U32,
    /// `long` (the platform's: 64 bits on Linux, 32 on Windows).
    CLong,
    /// `unsigned long`.
    CULong,
    /// `long long`, `int64_t`.
    I64,
    /// `unsigned long long`, `uint64_t`, texture and surface objects.
    U64,
    /// `size_t`, `uintptr_t`.
    Usize,
    /// `ptrdiff_t`, `intptr_t`, `ssize_t`.
    Isize,
    /// `float`.
    F32,
    /// `double`.
    F64,
    /// `__half`, `half`.
    F16,
    /// `__nv_bfloat16`, `nv_bfloat16`.
    Bf16,
    /// `bool`.
    Bool,
}

impl Scalar {
    /// Whether it is an integer type (an enum's underlying type can be).
    pub(crate) fn is_integer(self) -> bool {
        !matches!(self, Self::F32 | Self::F64 | Self::F16 | Self::Bf16)
    }

    /// How C spells it.
    pub(crate) fn c_name(self) -> &'static str {
        match self {
            Self::CChar => "char",
            Self::I8 => "signed char",
            Self::U8 => "unsigned char",
            Self::I16 => "short",
            Self::U16 => "unsigned short",
            Self::I32 => "int",
            Self::U32 => "unsigned int",
            Self::CLong => "long",
            Self::CULong => "unsigned long",
            Self::I64 => "long long",
            Self::U64 => "unsigned long long",
            Self::Usize => "size_t",
            Self::Isize => "ptrdiff_t",
            Self::F32 => "float",
            Self::F64 => "double",
            Self::F16 => "__half",
            Self::Bf16 => "__nv_bfloat16",
            Self::Bool => "bool",
        }
    }
}

/// A parameter's type, or a pointer's element type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Base {
    /// A built-in scalar.
    Scalar(Scalar),
    /// Another type name (a struct, an enum, a typedef, `void`): the macro's
    /// input must name a Rust type for it.
    Named(String),
}

/// What a parameter is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParamKind {
    /// Passed by value.
    Value(Base),
    /// A pointer: `const` when the element is.
    Pointer { elem: Base, constant: bool },
}

/// One kernel parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Param {
    /// Its name in the source, if it has one.
    pub(crate) name: Option<String>,
    pub(crate) kind: ParamKind,
    /// The declaration as written (tokens joined).
    pub(crate) decl: String,
    /// The identifiers of its type (keywords and qualifiers included), for the
    /// check against the source's macros.
    pub(crate) words: Vec<String>,
}

/// One `extern "C" __global__` function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Kernel {
    pub(crate) name: String,
    /// The namespaces it is declared in, as a qualifier: `::`, `::a::b::`
    /// (anonymous ones left out, as name lookup sees through them).
    pub(crate) scope: String,
    /// The parameters, or why one of them has no Rust type (an error only if
    /// the kernel is wanted).
    pub(crate) params: Result<Vec<Param>, ParseError>,
    /// The signature as written (tokens joined, attributes included).
    pub(crate) signature: String,
    pub(crate) pos: Pos,
}

/// A `__global__` function that has no C name (a template, or C++ linkage).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Skipped {
    pub(crate) name: String,
    pub(crate) why: &'static str,
    pub(crate) pos: Pos,
}

/// What a source holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Source {
    /// The `extern "C"` kernels, in source order, each once.
    pub(crate) kernels: Vec<Kernel>,
    /// The `__global__` functions that are not `extern "C"`.
    pub(crate) skipped: Vec<Skipped>,
    /// The types the source declares, and its macros and includes.
    pub(crate) types: Types,
}

/// A `typedef` or `using` alias.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Alias {
    pub(crate) name: String,
    /// What it names, or why the macro cannot say (an array or function type).
    pub(crate) target: Result<Declarator, String>,
    pub(crate) pos: Pos,
    /// `typedef` or `using`.
    pub(crate) how: &'static str,
}

/// One field of a struct or union.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    pub(crate) name: String,
    pub(crate) ty: Declarator,
}

/// The fields of a struct or union, when the macro can read its layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Body {
    pub(crate) fields: Vec<Field>,
    /// `__align__(N)` or `alignas(N)` on the type.
    pub(crate) align: Option<u64>,
}

/// A `struct`, `class` or `union` the source declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) name: String,
    /// `struct`, `class` or `union`.
    pub(crate) keyword: &'static str,
    /// Its fields; `None` for a declaration without a body; `Err` says why its
    /// layout is not read (a bit-field, a base class, member functions, …).
    pub(crate) body: Option<Result<Body, String>>,
    pub(crate) pos: Pos,
}

/// An `enum` the source declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Enum {
    pub(crate) name: String,
    /// Its underlying type (fixed, or `int` for a scoped enum), or why it has
    /// none the macro knows.
    pub(crate) underlying: Result<Scalar, String>,
    pub(crate) pos: Pos,
}

/// Every type declaration the source makes (in any namespace or `extern`
/// block, under any `#if` arm), and its preprocessor lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Types {
    pub(crate) aliases: Vec<Alias>,
    pub(crate) records: Vec<Record>,
    pub(crate) enums: Vec<Enum>,
    pub(crate) directives: Directives,
}

/// A declaration's type and name, as written (`const float* __restrict__ x`,
/// `real v[4]`, `unsigned long long`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Declarator {
    /// The declared name, if there is one.
    pub(crate) name: Option<String>,
    /// The type the stars point to (or the type itself, without stars).
    pub(crate) base: Base,
    /// `const` applies to the base (`const T`, `T const`, `const T*`).
    pub(crate) constant: bool,
    /// How many `*`.
    pub(crate) stars: usize,
    /// The array dimensions (`[4]`: `Some(4)`; `[]` or `[N]`: `None`).
    pub(crate) dims: Vec<Option<u64>>,
    /// Every identifier of the type as written (keywords and qualifiers
    /// included, the name not), to be checked against the source's macros.
    pub(crate) words: Vec<String>,
}
