//! The compiler's proof of the signatures `kernels!` gives its launch functions.
//!
//! The macro reads a kernel's parameters from the C source when the crate is
//! compiled, without running the preprocessor, and gives each a Rust type. What
//! it read is not trusted alone: every compilation of the embedded source
//! ([`compile`], which the generated `compile`, `load`, `load_cached` and
//! `load_with` go through) appends, after the user's code and in the same
//! translation unit, a check the macro's table of [`Signature`]s describes. For
//! each kernel NVRTC itself then proves, with its own preprocessor and type
//! system (the options' `-D` defines and pre-included headers included):
//!
//! * the function the macro read has C linkage and is the one the kernel's
//!   name loads (a C-linkage redeclaration of it under the name is compiled);
//! * its type is `void(P0, P1, …)` with exactly the parameters the Rust
//!   signature stands for: pointer or value, `const` on a pointee, and each
//!   scalar the C type of the Rust one (integer types of one size and
//!   signedness are one, as they are one Rust type: `long` and `long long`
//!   where both are 8 bytes); a mapped struct, union or enum is a class, union
//!   or enum type of the mapped Rust type's size and alignment; an
//!   `unsafe type` is any type (the caller's to prove), but still a pointee or
//!   a value as the Rust side says.
//!
//! A mismatch fails the compilation; it is reported as
//! [`Error::InvalidArgument`] of kind [`InvalidKind::KernelSignature`] naming
//! the kernel, the C signature the launch function takes and the one the
//! compiler sees. The check is C++11 (`decltype`, `static_assert`, variadic
//! templates): a source compiled as C++03 is refused. It defines nothing that
//! reaches the object code.
//!
//! This module is the generated code's; its items are public so the macro's
//! expansion can name them.

use std::fmt::Write as _;

use crate::code::cache::ProgramCache;
use crate::code::compile::options::ProgramOptions;
use crate::code::compile::program::{Program, SourceCode};
use crate::code::compile::target::CompileTarget;
use crate::code::object::ObjectCode;
use crate::error::{Error, InvalidKind, Result};

/// The file name the appended check's diagnostics carry (`#line`), which tells
/// its errors from the user's code's.
pub const CHECK_FILE: &str = "cudars-kernel-check";

/// A C type as a launch function takes it: a parameter's value type or a
/// pointer's element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CType {
    /// A type spelled out as C++ writes it without a header (`float`,
    /// `unsigned long long`, `decltype(sizeof(0))`), or a type the source must
    /// name for the kernel to compile (`__half`, `cudaTextureObject_t`).
    Named(&'static str),
    /// A struct, union or enum of the source, taken as a Rust type of this size
    /// and alignment: the compiler's type must be a class, union or enum type
    /// with them. `name` is the C name, for messages.
    Layout {
        /// The C name (for messages).
        name: &'static str,
        /// The Rust type's size in bytes.
        size: usize,
        /// The Rust type's alignment in bytes.
        align: usize,
    },
    /// A type given by `unsafe type` (the caller proves it): any type. `name`
    /// is the C name, for messages.
    Any {
        /// The C name (for messages).
        name: &'static str,
    },
}

/// One parameter of a [`Signature`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Param {
    /// Passed by value.
    Value(CType),
    /// A pointer (a view), to `const` elements when `constant`.
    Pointer {
        /// The elements are `const` (a shared view).
        constant: bool,
        /// The element type.
        elem: CType,
    },
}

/// A kernel as its launch function takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Signature {
    /// The kernel's (C) name.
    pub name: &'static str,
    /// The namespaces the macro read it in, as a qualifier (`::` at the top
    /// level, `::a::b::` in `namespace a { namespace b { … } }`).
    pub scope: &'static str,
    /// Its parameters, in order.
    pub params: &'static [Param],
}

impl CType {
    /// As the check writes it.
    fn check_spelling(&self) -> String {
        match self {
            Self::Named(s) => (*s).to_string(),
            Self::Layout { size, align, .. } => {
                format!("__cudars_kc::layout<{size}ULL, {align}ULL>")
            }
            Self::Any { .. } => "__cudars_kc::any".to_string(),
        }
    }

    /// As messages write it.
    fn shown(&self) -> String {
        match self {
            Self::Named(s) => (*s).to_string(),
            Self::Layout { name, size, align } => {
                format!("{name} /* {size} bytes, aligned to {align} */")
            }
            Self::Any { name } => format!("{name} /* unsafe type */"),
        }
    }
}

impl Param {
    fn spelled(&self, ty: impl Fn(&CType) -> String) -> String {
        match self {
            Self::Value(t) => ty(t),
            Self::Pointer { constant, elem } => {
                format!("{}{}*", if *constant { "const " } else { "" }, ty(elem))
            }
        }
    }
}

impl Signature {
    /// The C signature the launch function takes (`void k(const float*, int)`).
    pub fn c_signature(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| p.spelled(CType::shown))
            .collect();
        format!("void {}({})", self.name, params.join(", "))
    }
}

/// The C++ appended to a source compiled for `signatures` (see the module's
/// documentation).
pub fn check_source(signatures: &[Signature]) -> String {
    let mut body = String::from(PRELUDE);
    for (i, s) in signatures.iter().enumerate() {
        let params: Vec<String> = s
            .params
            .iter()
            .map(|p| p.spelled(CType::check_spelling))
            .collect();
        let f = format!("{}{}", s.scope, s.name);
        // One block a kernel, its first line at `block_line(body, i)`.
        let _ = write!(
            body,
            "namespace __cudars_kc_{i} {{ /* kernel {name} */\n\
             typedef __cudars_kc::params<decltype(&{f})>::function __cudars_f;\n\
             extern \"C\" __attribute__((global)) __cudars_f {name};\n\
             static_assert(__cudars_kc::kernel<{i}, decltype(&{f}), void (*)({params})>::value, \
             \"cudars-kernel-check: kernel {name}\");\n\
             }}\n",
            name = s.name,
            params = params.join(", "),
        );
    }
    // Every identifier the check uses loses any meaning a macro of the source
    // or of the options gave it: the check reads as written.
    let mut out = format!("\n\n#line 1 \"{CHECK_FILE}\"\n");
    for id in identifiers(&body) {
        let _ = writeln!(out, "#undef {id}");
    }
    out.push_str(&body);
    out
}

/// The line (1-based, in [`CHECK_FILE`]) of each kernel's block in
/// [`check_source`]'s text, and the line after the last.
fn block_lines(check: &str, count: usize) -> Vec<u32> {
    // `check` starts with two blank lines and the `#line` directive; the line
    // after the directive is line 1.
    let mut lines = Vec::with_capacity(count + 1);
    let mut line = 0u32;
    for l in check.lines() {
        if l.starts_with("#line ") {
            line = 1;
            continue;
        }
        if line == 0 {
            continue;
        }
        if l.starts_with("namespace __cudars_kc_") && l.contains("/* kernel ") {
            lines.push(line);
        }
        line += 1;
    }
    lines.push(line);
    lines
}

/// The distinct identifiers of `text`, in order (numbers' suffixes are not).
fn identifiers(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut out: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let from = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let id = &text[from..i];
            if !out.contains(&id) {
                out.push(id);
            }
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The check's helpers: type identity, integer types by size and signedness,
/// and the comparison of a kernel's type with the expected one, whose failure
/// names both (`[with Kernel=0, Seen=…, Expected=…]` in NVRTC's log).
const PRELUDE: &str = r#"namespace __cudars_kc {
template <class A, class B> struct same { static const bool value = false; };
template <class A> struct same<A, A> { static const bool value = true; };
template <bool C, class A, class B> struct pick { typedef A type; };
template <class A, class B> struct pick<false, A, B> { typedef B type; };
struct any;
template <unsigned long long N, unsigned long long A> struct layout;
template <int N, bool S> struct integer;
template <> struct integer<1, true> { typedef signed char type; };
template <> struct integer<1, false> { typedef unsigned char type; };
template <> struct integer<2, true> { typedef short type; };
template <> struct integer<2, false> { typedef unsigned short type; };
template <> struct integer<4, true> { typedef int type; };
template <> struct integer<4, false> { typedef unsigned int type; };
template <> struct integer<8, true> { typedef long long type; };
template <> struct integer<8, false> { typedef unsigned long long type; };
template <class T> struct canon { typedef T type; };
template <class T> struct canon<const T> { typedef const typename canon<T>::type type; };
template <class T> struct canon<volatile T> { typedef typename canon<T>::type type; };
template <class T> struct canon<const volatile T> { typedef const typename canon<T>::type type; };
template <class T> struct canon<T*> { typedef typename canon<T>::type* type; };
template <> struct canon<char> { typedef integer<sizeof(char), ((char)-1 < 0)>::type type; };
template <> struct canon<long> { typedef integer<sizeof(long), true>::type type; };
template <> struct canon<unsigned long> { typedef integer<sizeof(long), false>::type type; };
template <class S, unsigned long long N, unsigned long long A> struct record {
  typedef typename pick<(__is_class(S) || __is_union(S) || __is_enum(S)) && sizeof(S) == N && alignof(S) == A, layout<N, A>, S>::type type;
};
template <class S, class E> struct fit { typedef typename canon<S>::type type; };
template <class S> struct fit<S, any> { typedef any type; };
template <class S> struct fit<S*, any> { typedef S* type; };
template <class S> struct fit<S*, any*> { typedef any* type; };
template <class S> struct fit<const S*, any*> { typedef const S* type; };
template <class S> struct fit<const S*, const any*> { typedef const any* type; };
template <class S, unsigned long long N, unsigned long long A> struct fit<S, layout<N, A> > { typedef typename record<S, N, A>::type type; };
template <class S, unsigned long long N, unsigned long long A> struct fit<S*, layout<N, A> > { typedef S* type; };
template <class S, unsigned long long N, unsigned long long A> struct fit<S*, layout<N, A>*> { typedef typename record<S, N, A>::type* type; };
template <class S, unsigned long long N, unsigned long long A> struct fit<const S*, layout<N, A>*> { typedef const S* type; };
template <class S, unsigned long long N, unsigned long long A> struct fit<const S*, const layout<N, A>*> { typedef const typename record<S, N, A>::type* type; };
template <class F> struct params { static const int count = -1; };
template <class... A> struct params<void (*)(A...)> { static const int count = sizeof...(A); typedef void function(A...); };
template <bool Fits, class S, class E> struct fit_all { typedef S type; };
template <class... S, class... E> struct fit_all<true, void (*)(S...), void (*)(E...)> { typedef void (*type)(typename fit<S, E>::type...); };
template <class F> struct canon_all { typedef F type; };
template <class... E> struct canon_all<void (*)(E...)> { typedef void (*type)(typename canon<E>::type...); };
template <int Kernel, class Seen, class Expected> struct kernel {
  static const bool value = same<typename fit_all<params<Seen>::count == params<Expected>::count, Seen, Expected>::type,
                                 typename canon_all<Expected>::type>::value;
  static_assert(value, "cudars-kernel-check: the kernel's type differs from its launch function's");
};
}
"#;

/// `source` followed by the check of `signatures`.
pub fn checked_source(source: &str, signatures: &[Signature]) -> String {
    let mut s = String::with_capacity(source.len() + 8192);
    s.push_str(source);
    s.push_str(&check_source(signatures));
    s
}

/// Compiles `source` with the check of `signatures` appended (through `cache`
/// when given; the check is part of the cache key, being part of the source).
///
/// # Errors
/// [`Error::InvalidArgument`] of kind [`InvalidKind::KernelSignature`] when
/// the compiler refuses the check alone (naming each kernel whose signature
/// differs, the C signature its launch function takes and, where NVRTC's log
/// says it, the type the compiler sees); the compiler's error otherwise (a
/// source that does not compile), with its log; the cache's errors.
pub fn compile(
    source: &str,
    signatures: &[Signature],
    options: ProgramOptions,
    target: CompileTarget,
    cache: Option<&dyn ProgramCache>,
) -> Result<ObjectCode> {
    let check = check_source(signatures);
    let mut text = String::with_capacity(source.len() + check.len());
    text.push_str(source);
    text.push_str(&check);
    let name = options.name.clone().unwrap_or_default();
    let code = SourceCode::Cxx(&text);
    let compiled = match cache {
        Some(cache) => crate::code::cache::compile_cached(cache, code, options, target, &[]),
        None => Program::new(code, options).and_then(|p| p.compile(target, &[])),
    };
    compiled.map_err(|e| match e.log() {
        Some(log) => signature_error(&name, signatures, &check, log).unwrap_or(e),
        None => e,
    })
}

/// The typed error for a log whose every error lies in the check; `None` when
/// one lies elsewhere (the source itself does not compile).
fn signature_error(
    program: &str,
    signatures: &[Signature],
    check: &str,
    log: &str,
) -> Option<Error> {
    let blocks = block_lines(check, signatures.len());
    let mut errors = Vec::new();
    // Each kernel refused, with the type the compiler sees when the log says.
    let mut kernels: Vec<(usize, Option<String>)> = Vec::new();
    fn add(kernels: &mut Vec<(usize, Option<String>)>, k: usize, seen: Option<String>) {
        match kernels.iter_mut().find(|(i, _)| *i == k) {
            Some((_, s)) => {
                if s.is_none() {
                    *s = seen;
                }
            }
            None => kernels.push((k, seen)),
        }
    }
    for line in log.lines() {
        if let Some((file, at)) = error_line(line) {
            if file != CHECK_FILE {
                return None;
            }
            errors.push(line.trim().to_string());
            // The kernel whose block the error is in.
            if let Some(k) = blocks.windows(2).position(|w| w[0] <= at && at < w[1]) {
                add(&mut kernels, k, None);
            }
        }
        if let Some((k, seen)) = instantiation(line) {
            if k < signatures.len() {
                add(&mut kernels, k, Some(seen));
            }
        }
    }
    if errors.is_empty() {
        return None;
    }
    let mut message = String::new();
    for (k, seen) in &kernels {
        let s = &signatures[*k];
        let _ = write!(
            message,
            "{}kernel `{}`: its launch function takes `{}`, ",
            if message.is_empty() { "" } else { "; " },
            s.name,
            s.c_signature()
        );
        match seen {
            Some(seen) => {
                let _ = write!(message, "the compiler sees `{seen}`");
            }
            None => message.push_str(
                "which the compiler does not find as a C-linkage `__global__` function of that \
                 type",
            ),
        }
    }
    if kernels.is_empty() {
        message.push_str("the compiler refused the check of the kernels' signatures");
    }
    let _ = write!(message, " (the compiler's errors: {})", errors.join(" | "));
    let program = if program.is_empty() {
        "the program".to_string()
    } else {
        format!("`{program}`")
    };
    Some(Error::invalid_as(
        InvalidKind::KernelSignature,
        format!("compiling {program} with the check of its kernels' signatures"),
        message,
    ))
}

/// `file(line): error: …` (or `catastrophic error`): the file and the line.
fn error_line(line: &str) -> Option<(&str, u32)> {
    let end = line
        .find("): error")
        .or_else(|| line.find("): catastrophic error"))?;
    let open = line[..end].rfind('(')?;
    let n = line[open + 1..end].parse().ok()?;
    Some((&line[..open], n))
}

/// From `… kernel<Kernel, Seen, Expected> [with Kernel=3, Seen=void (*)(…), Expected=…]`:
/// the kernel's index and the type the compiler sees.
fn instantiation(line: &str) -> Option<(usize, String)> {
    let at = line.find("__cudars_kc::kernel<Kernel, Seen, Expected> [with Kernel=")?;
    let rest = &line[at..];
    let rest = &rest[rest.find("Kernel=")? + "Kernel=".len()..];
    let comma = rest.find(", Seen=")?;
    let k = rest[..comma].trim().parse().ok()?;
    let rest = &rest[comma + ", Seen=".len()..];
    let seen = &rest[..rest.find(", Expected=")?];
    let seen = seen.trim();
    // `void (*)(const double *, int)` as a signature: `void (const double *, int)`.
    let seen = seen
        .strip_prefix("void (*)")
        .map_or_else(|| seen.to_string(), |params| format!("void {params}"));
    Some((k, seen))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIG: &[Signature] = &[
        Signature {
            name: "k",
            scope: "::",
            params: &[
                Param::Pointer {
                    constant: true,
                    elem: CType::Named("float"),
                },
                Param::Value(CType::Named("int")),
            ],
        },
        Signature {
            name: "p",
            scope: "::ns::",
            params: &[Param::Value(CType::Layout {
                name: "Pair",
                size: 16,
                align: 8,
            })],
        },
    ];

    #[test]
    fn the_check_names_each_kernel_and_undefines_what_it_uses() {
        let c = check_source(SIG);
        assert!(
            c.starts_with("\n\n#line 1 \"cudars-kernel-check\"\n"),
            "{c}"
        );
        for id in [
            "static_assert",
            "float",
            "int",
            "k",
            "p",
            "ns",
            "decltype",
            "N",
            "T",
        ] {
            assert!(c.contains(&format!("\n#undef {id}\n")), "{id} in {c}");
        }
        // Numbers' suffixes are not identifiers.
        assert!(!c.contains("#undef ULL"), "{c}");
        assert!(c.contains(
            "static_assert(__cudars_kc::kernel<0, decltype(&::k), void (*)(const float*, int)>::value"
        ));
        assert!(c.contains("extern \"C\" __attribute__((global)) __cudars_f p;"));
        assert!(
            c.contains("kernel<1, decltype(&::ns::p), void (*)(__cudars_kc::layout<16ULL, 8ULL>)>")
        );
        assert_eq!(SIG[0].c_signature(), "void k(const float*, int)");
        assert_eq!(
            SIG[1].c_signature(),
            "void p(Pair /* 16 bytes, aligned to 8 */)"
        );
        let blocks = block_lines(&c, 2);
        assert_eq!(blocks.len(), 3);
        let lines: Vec<&str> = c.lines().skip(3).collect();
        assert!(lines[blocks[0] as usize - 1].starts_with("namespace __cudars_kc_0 {"));
        assert!(lines[blocks[1] as usize - 1].starts_with("namespace __cudars_kc_1 {"));
    }

    #[test]
    fn a_log_of_the_check_alone_is_a_signature_error_naming_both_types() {
        let c = check_source(SIG);
        let log = "cudars-kernel-check(48): error: static assertion failed with \"x\"\n    \
                   static_assert(value, \"x\");\n          detected during instantiation of class \
                   \"__cudars_kc::kernel<Kernel, Seen, Expected> [with Kernel=0, Seen=void (*)(const double *, int), \
                   Expected=void (*)(const float *, int)]\" at line 54\n";
        let e = signature_error("k.cu", SIG, &c, log).unwrap();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::KernelSignature));
        let text = e.to_string();
        assert!(text.contains("kernel `k`"), "{text}");
        assert!(text.contains("void k(const float*, int)"), "{text}");
        assert!(text.contains("void (const double *, int)"), "{text}");
        assert!(text.contains("k.cu"), "{text}");
        // An error in the user's code is the user's.
        let log2 = format!("k.cu(3): error: identifier \"x\" is undefined\n{log}");
        assert!(signature_error("k.cu", SIG, &c, &log2).is_none());
        // An error in a kernel's block names that kernel.
        let blocks = block_lines(&c, 2);
        let log3 = format!(
            "cudars-kernel-check({}): error: declaration is incompatible with previous \"p\"\n",
            blocks[1] + 2
        );
        let text = signature_error("k.cu", SIG, &c, &log3).unwrap().to_string();
        assert!(text.contains("kernel `p`"), "{text}");
        assert!(!text.contains("kernel `k`"), "{text}");
    }
}
