//! A kernel parameter's C type to its Rust type: views for pointers, scalars
//! and the user's mapped types for values, each proven from the source (its
//! `typedef`s and `using`s followed by `ctypes`); a mapped struct or enum gets
//! a compile-time check of its layout against a `#[repr(C)]` mirror of the C one.

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::{Ident, Type};

use super::input::{Input, Mapping, Origin};
use crate::cparse::{self, Base, Kernel, Param, ParamKind, Scalar, Types, is_keyword};
use crate::ctypes::{self, Elem, Final};

fn scalar_type(s: Scalar) -> TokenStream {
    match s {
        Scalar::CChar => quote!(::core::ffi::c_char),
        Scalar::I8 => quote!(i8),
        Scalar::U8 => quote!(u8),
        Scalar::I16 => quote!(i16),
        Scalar::U16 => quote!(u16),
        Scalar::I32 => quote!(i32),
        Scalar::U32 => quote!(u32),
        Scalar::CLong => quote!(::core::ffi::c_long),
        Scalar::CULong => quote!(::core::ffi::c_ulong),
        Scalar::I64 => quote!(i64),
        Scalar::U64 => quote!(u64),
        Scalar::Usize => quote!(usize),
        Scalar::Isize => quote!(isize),
        Scalar::F32 => quote!(f32),
        Scalar::F64 => quote!(f64),
        Scalar::F16 => quote!(::cudars_core::half::f16),
        Scalar::Bf16 => quote!(::cudars_core::half::bf16),
        Scalar::Bool => quote!(bool),
    }
}

/// `scalar_type(s)` as text (for the tests of the spellings).
#[cfg(test)]
pub(super) fn scalar_type_text(s: Scalar) -> String {
    scalar_type(s).to_string()
}

/// The C type the compiler's check of a signature expects for a scalar whose
/// Rust type is `scalar_type(s)`: spelled without headers where C++ can
/// (`size_t` is `decltype(sizeof(0))`), and the check compares integer types
/// by size and signedness, as their Rust types are (`c_long` is `i64` where
/// `long` is 8 bytes). The inverse of `scalar_type`, one spelling a Rust type.
pub(super) fn c_spelling(s: Scalar) -> &'static str {
    match s {
        Scalar::CChar => "char",
        Scalar::I8 => "signed char",
        Scalar::U8 => "unsigned char",
        Scalar::I16 => "short",
        Scalar::U16 => "unsigned short",
        Scalar::I32 => "int",
        Scalar::U32 => "unsigned int",
        Scalar::CLong => "long",
        Scalar::CULong => "unsigned long",
        Scalar::I64 => "long long",
        Scalar::U64 => "unsigned long long",
        Scalar::Usize => "decltype(sizeof(0))",
        Scalar::Isize => "decltype((char*)0 - (char*)0)",
        Scalar::F32 => "float",
        Scalar::F64 => "double",
        Scalar::F16 => "__half",
        Scalar::Bf16 => "__nv_bfloat16",
        Scalar::Bool => "bool",
    }
}

/// A `cudars_core::kernel_check::CType::Named`.
fn named(c: &str) -> TokenStream {
    quote!(::cudars_core::kernel_check::CType::Named(#c))
}

/// A `cudars_core::kernel_check::CType::Layout` of `rust`'s size and alignment.
fn layout_of(name: &str, rust: &TokenStream) -> TokenStream {
    quote!(::cudars_core::kernel_check::CType::Layout {
        name: #name,
        size: ::core::mem::size_of::<#rust>(),
        align: ::core::mem::align_of::<#rust>(),
    })
}

/// A `cudars_core::kernel_check::CType::Any` (an `unsafe type`).
fn any(name: &str) -> TokenStream {
    quote!(::cudars_core::kernel_check::CType::Any { name: #name })
}

/// One parameter, in the three places it appears.
pub(super) struct GenParam {
    /// In the `TypedKernel` signature tuple.
    pub(super) sig: TokenStream,
    /// The method's argument: `name: Type`.
    pub(super) arg: TokenStream,
    /// Its element in the argument tuple.
    pub(super) value: TokenStream,
    /// What the compiler's check expects of it (a
    /// `cudars_core::kernel_check::Param`).
    pub(super) check: TokenStream,
}

/// An element or value type in Rust, with what proves it.
struct ElemOut {
    /// The Rust type.
    ty: TokenStream,
    /// The user's mapped type (passed by value as `Val<T>`), not a scalar.
    mapped: bool,
    /// The C type the compiler's check expects (a
    /// `cudars_core::kernel_check::CType`).
    c: TokenStream,
}

/// The Rust primitive a path names (`f64`, `core::primitive::f64`), if it is one.
fn primitive(ty: &Type) -> Option<String> {
    let Type::Path(p) = ty else {
        return None;
    };
    if p.qself.is_some() || p.path.segments.iter().any(|s| !s.arguments.is_empty()) {
        return None;
    }
    let segs: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let last = match segs.as_slice() {
        [x] => x,
        [c, pr, x] if (c == "core" || c == "std") && pr == "primitive" => x,
        _ => return None,
    };
    const PRIMITIVES: &[&str] = &[
        "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "i128", "u128", "isize", "usize",
        "f32", "f64", "bool", "char",
    ];
    PRIMITIVES.contains(&last.as_str()).then(|| last.clone())
}

/// The Rust primitive a C scalar is, where its Rust type is one.
fn scalar_primitive(s: Scalar) -> Option<&'static str> {
    Some(match s {
        Scalar::I8 => "i8",
        Scalar::U8 => "u8",
        Scalar::I16 => "i16",
        Scalar::U16 => "u16",
        Scalar::I32 => "i32",
        Scalar::U32 => "u32",
        Scalar::I64 => "i64",
        Scalar::U64 => "u64",
        Scalar::Usize => "usize",
        Scalar::Isize => "isize",
        Scalar::F32 => "f32",
        Scalar::F64 => "f64",
        Scalar::Bool => "bool",
        Scalar::CChar | Scalar::CLong | Scalar::CULong | Scalar::F16 | Scalar::Bf16 => return None,
    })
}

/// A type as the user wrote it, for messages (`crate::P`, not `crate :: P`).
fn type_text(ty: &impl quote::ToTokens) -> String {
    quote!(#ty)
        .to_string()
        .replace(" :: ", "::")
        .replace(":: ", "::")
        .replace(" < ", "<")
        .replace(" >", ">")
        .replace(" ,", ",")
        .replace("& ", "&")
        .replace("[ ", "[")
        .replace(" ]", "]")
        .replace(" ;", ";")
}

/// A message for `#[diagnostic::on_unimplemented]` or `assert!`: no braces.
fn plain(message: &str) -> String {
    message.replace(['{', '}'], "")
}

/// What the expansion knows while it maps one source's kernels.
pub(super) struct Ctx<'a> {
    /// The macro's input.
    pub(super) input: &'a Input,
    /// The source as messages name it (`` `kernels.cu` ``, "the inline source").
    pub(super) file: String,
    /// The mapped C names a parameter used (a mapping no parameter uses is an error).
    pub(super) used: HashSet<String>,
    /// The source's type declarations.
    pub(super) types: Types,
    /// Compile-time checks of the mappings (`const _: () = …;`).
    pub(super) checks: Vec<TokenStream>,
}

impl<'a> Ctx<'a> {
    fn span(&self) -> Span {
        match &self.input.origin {
            Origin::File(l) | Origin::Inline(l) => l.span(),
            // Errors about the declarations point at them.
            Origin::Expr(e) => self
                .input
                .declare
                .as_ref()
                .map_or_else(|| syn::spanned::Spanned::span(e), |d| d.span()),
        }
    }

    pub(super) fn error(&self, message: String) -> syn::Error {
        syn::Error::new(self.span(), message)
    }

    fn mapping(&self, c_name: &str) -> Option<&'a Mapping> {
        let input: &'a Input = self.input;
        input.mappings.iter().find(|m| m.c_name == c_name)
    }

    /// The Rust type of a parameter: its signature type, argument and value,
    /// and what the caller takes on for it, if anything.
    pub(super) fn param(
        &mut self,
        k: &Kernel,
        index: usize,
        p: &Param,
        id: &Ident,
        notes: &mut Vec<String>,
    ) -> syn::Result<GenParam> {
        let where_ = format!(
            "{} line {}: kernel `{}`, parameter {index} (`{}`)",
            self.file, k.pos.line, k.name, p.decl
        );
        for w in p.words.iter().filter(|w| is_keyword(w)) {
            if let Some(pos) = ctypes::macro_named(&self.types, w) {
                return Err(self.error(format!(
                    "{where_}: `{w}` is a preprocessor macro (`#define {w}` at line {}); the macro \
                     reads signatures without running the preprocessor: remove the `#define`",
                    pos.line
                )));
            }
        }
        if let Some((object, c)) = self.handle_object(p) {
            // A tensor map borrows what it describes: the signature names it
            // `'static` (a marker), the argument takes any borrow.
            let (sig, arg) = if object.to_string().contains("TensorMapDescriptor") {
                (quote!(#object<'static>), quote!(#object<'_>))
            } else {
                (object.clone(), object.clone())
            };
            return Ok(GenParam {
                sig,
                arg: quote!(#id: &#arg),
                value: quote!(#id),
                check: quote!(::cudars_core::kernel_check::Param::Value(#c)),
            });
        }
        let (base, constant, stars) = match &p.kind {
            ParamKind::Value(b) => (b, false, 0),
            ParamKind::Pointer { elem, constant } => (elem, *constant, 1),
        };
        let r = ctypes::resolve(&self.types, base, constant, stars)
            .map_err(|why| self.error(format!("{where_}: {why}")))?;
        let pname = p
            .name
            .clone()
            .unwrap_or_else(|| format!("parameter {index}"));
        if let Some(ptr) = &r.pointer {
            for l in &ptr.links {
                if let Some(m) = self.mapping(&l.name) {
                    return Err(syn::Error::new(
                        m.c_name.span(),
                        format!(
                            "{where_}: `{}` is a pointer type ({}); the macro gives it a view of \
                             its element type: remove `type {} = …;`",
                            l.name, l.what, l.name
                        ),
                    ));
                }
            }
            if r.elem.fin == Final::Scalar(Scalar::Bool) {
                return Err(self.error(format!(
                    "{where_}: a pointer to `bool` ({}) has no element type (not every byte is a \
                     valid bool); use `unsigned char*`",
                    r.elem.describe(&self.types)
                )));
            }
            let e = self.elem(&where_, &pname, &p.decl, &r.elem, notes)?;
            let t = e.ty;
            let constant = ptr.constant;
            let c = e.c;
            let check = quote!(::cudars_core::kernel_check::Param::Pointer {
                constant: #constant,
                elem: #c,
            });
            return Ok(if ptr.constant {
                GenParam {
                    sig: quote!(::cudars_core::ConstPtr<#t>),
                    arg: quote!(#id: ::cudars_core::DeviceView<'_, #t>),
                    value: quote!(#id),
                    check,
                }
            } else {
                GenParam {
                    sig: quote!(::cudars_core::MutPtr<#t>),
                    arg: quote!(#id: ::cudars_core::DeviceViewMut<'_, #t>),
                    value: quote!(#id),
                    check,
                }
            });
        }
        if r.elem.fin == Final::Void {
            return Err(self.error(format!("{where_}: a `void` parameter")));
        }
        let e = self.elem(&where_, &pname, &p.decl, &r.elem, notes)?;
        let t = e.ty;
        let c = e.c;
        let check = quote!(::cudars_core::kernel_check::Param::Value(#c));
        let holds_pointers = match r.elem.fin {
            Final::Record(i) => self.types.records.get(i).is_some_and(
                |rec| matches!(&rec.body, Some(Ok(b)) if b.fields.iter().any(|f| f.ty.stars > 0)),
            ),
            _ => false,
        };
        Ok(if e.mapped && holds_pointers {
            // A struct of pointers lends the views its `ViewPtr`s point into.
            GenParam {
                sig: quote!(::cudars_core::Lent<#t>),
                arg: quote!(#id: ::cudars_core::LentVal<'_, #t>),
                value: quote!(#id),
                check,
            }
        } else if e.mapped {
            GenParam {
                sig: quote!(::cudars_core::Val<#t>),
                arg: quote!(#id: &#t),
                value: quote!(*#id),
                check,
            }
        } else {
            GenParam {
                sig: t.clone(),
                arg: quote!(#id: #t),
                value: quote!(#id),
                check,
            }
        })
    }

    /// The handle type a by-value texture, surface or tensor-map parameter
    /// takes (`cudaTextureObject_t` → `TextureObject`, `cudaSurfaceObject_t` →
    /// `SurfaceObject`, `CUtensorMap` → `TensorMapDescriptor`, each by
    /// reference), unless the source declares `CUtensorMap` or the input maps
    /// the name (then it is what that says).
    fn handle_object(&self, p: &Param) -> Option<(TokenStream, TokenStream)> {
        let ParamKind::Value(base) = &p.kind else {
            return None;
        };
        let names: Vec<&str> = p
            .words
            .iter()
            .map(String::as_str)
            .filter(|w| !crate::cparse::QUALIFIERS.contains(w))
            .collect();
        let [name] = names.as_slice() else {
            return None;
        };
        if self.mapping(name).is_some() {
            return None;
        }
        match *name {
            "cudaTextureObject_t" | "CUtexObject" if *base == Base::Scalar(Scalar::U64) => Some((
                quote!(::cudars_core::TextureObject),
                named("unsigned long long"),
            )),
            "cudaSurfaceObject_t" | "CUsurfObject" if *base == Base::Scalar(Scalar::U64) => Some((
                quote!(::cudars_core::SurfaceObject),
                named("unsigned long long"),
            )),
            "CUtensorMap"
                if ctypes::resolve(&self.types, base, false, 0)
                    .map_or(true, |r| matches!(r.elem.fin, Final::Unresolved(_))) =>
            {
                // CUDA's `CUtensorMap`: 128 bytes, aligned to 64.
                Some((
                    quote!(::cudars_core::TensorMapDescriptor),
                    quote!(::cudars_core::kernel_check::CType::Layout {
                        name: "CUtensorMap",
                        size: 128,
                        align: 64,
                    }),
                ))
            }
            _ => None,
        }
    }

    /// The Rust type of a value or element type, checked against what the
    /// source makes it, or refused.
    fn elem(
        &mut self,
        where_: &str,
        pname: &str,
        decl: &str,
        elem: &Elem,
        notes: &mut Vec<String>,
    ) -> syn::Result<ElemOut> {
        let mapped: Vec<&'a Mapping> = elem
            .links
            .iter()
            .filter_map(|l| self.mapping(&l.name))
            .collect();
        if let [a, b, ..] = mapped.as_slice() {
            return Err(syn::Error::new(
                b.c_name.span(),
                format!(
                    "{where_}: both `{}` and `{}` are mapped, and the source makes them one type \
                     ({}): keep one mapping",
                    a.c_name,
                    b.c_name,
                    elem.describe(&self.types)
                ),
            ));
        }
        let m = mapped.first().copied();
        if let Some(m) = m {
            self.used.insert(m.c_name.to_string());
        }
        let desc = elem.describe(&self.types);
        let written = elem
            .links
            .first()
            .map_or_else(|| "T".to_string(), |l| l.name.clone());
        let unchecked_needed = |why: &str, m: &Mapping| {
            syn::Error::new(
                m.c_name.span(),
                format!(
                    "{where_}: {desc}: {why}, so `type {} = {};` cannot be checked; declare the \
                     type in the source so that the macro can read it, or write `unsafe type {} = \
                     {};` to take its layout on yourself (the launch functions' `# Safety` then \
                     say so)",
                    m.c_name,
                    type_text(&m.rust),
                    m.c_name,
                    type_text(&m.rust)
                ),
            )
        };
        let unsafe_not_needed = |m: &Mapping| {
            syn::Error::new(
                m.c_name.span(),
                format!(
                    "{where_}: {desc}, which the macro checks the Rust type against: write \
                     `type {} = {};` (without `unsafe`)",
                    m.c_name,
                    type_text(&m.rust)
                ),
            )
        };
        let rust = |m: &Mapping| {
            let t = &m.rust;
            quote!(#t)
        };
        match &elem.fin {
            Final::Scalar(s) => {
                let expected = scalar_type(*s);
                if let Some(m) = m {
                    if m.unchecked {
                        return Err(unsafe_not_needed(m));
                    }
                    let ours = type_text(&expected);
                    let theirs = type_text(&m.rust);
                    let message = format!(
                        "{where_}: `type {} = {theirs};` contradicts the source: {desc}, whose \
                         Rust type is `{ours}` (a view must hold the kernel's element type, or its \
                         indexing runs past the view); map `{}` to `{ours}`, or drop the mapping: \
                         the macro maps it itself",
                        m.c_name, m.c_name
                    );
                    match (primitive(&m.rust), scalar_primitive(*s)) {
                        (Some(a), Some(b)) if a != b => {
                            return Err(syn::Error::new(m.c_name.span(), message));
                        }
                        (Some(_), Some(_)) => {}
                        _ => self
                            .checks
                            .push(identity_check(&m.rust, &expected, &message)),
                    }
                }
                Ok(ElemOut {
                    ty: expected,
                    mapped: false,
                    c: named(c_spelling(*s)),
                })
            }
            Final::Void => match m {
                None => Err(self.error(format!(
                    "{where_}: {desc} has no element type the macro can check: declare the \
                     pointer with its real element type, or take the element type on yourself \
                     with `unsafe type void = u8;`"
                ))),
                Some(m) if !m.unchecked => Err(syn::Error::new(
                    m.c_name.span(),
                    format!(
                        "{where_}: {desc} has no layout to check `{}` against: declare the \
                         pointer with its real element type, or write `unsafe type {} = {};` to \
                         take it on yourself",
                        type_text(&m.rust),
                        m.c_name,
                        type_text(&m.rust)
                    ),
                )),
                Some(m) => {
                    notes.push(format!(
                        "`{pname}` (`{decl}`) points to `void`, given the element type `{}` by \
                         `unsafe type {} = …;`: the kernel's accesses through it are untyped, and \
                         that they stay within the view's bytes (its length times the size of \
                         `{}`) and read them as what they hold is the caller's to prove.",
                        type_text(&m.rust),
                        m.c_name,
                        type_text(&m.rust)
                    ));
                    Ok(ElemOut {
                        ty: rust(m),
                        mapped: true,
                        c: named("void"),
                    })
                }
            },
            Final::Record(i) => {
                let layout = self.layout(*i);
                match (m, layout) {
                    (None, layout) => {
                        let how = match layout {
                            Ok(_) => format!("`type {written} = MyType;`"),
                            Err(why) => format!(
                                "`unsafe type {written} = MyType;`: the macro does not read its \
                                 layout ({why}), so that layout is then yours to prove"
                            ),
                        };
                        Err(self.error(format!(
                            "{where_}: the C type {desc} has no Rust type: name a `Pod` type of \
                             the same layout ({how})"
                        )))
                    }
                    (Some(m), Ok((items, mirror))) => {
                        if m.unchecked {
                            return Err(unsafe_not_needed(m));
                        }
                        let message = format!(
                            "{where_}: `type {} = {};`: the Rust type's size or alignment differs \
                             from that of {desc}, laid out from the fields the source declares",
                            m.c_name,
                            type_text(&m.rust)
                        );
                        self.checks
                            .push(layout_check(&m.rust, &items, &mirror, &message));
                        notes.push(format!(
                            "`{pname}` (`{decl}`): `{}` has the size and alignment of {desc} \
                             (checked at compile time); that its fields are the C fields, in \
                             order and of the same types, is the caller's to prove.",
                            type_text(&m.rust)
                        ));
                        Ok(ElemOut {
                            ty: rust(m),
                            mapped: true,
                            c: layout_of(&self.types.records[*i].name, &rust(m)),
                        })
                    }
                    (Some(m), Err(why)) => {
                        if !m.unchecked {
                            return Err(unchecked_needed(
                                &format!("the macro does not read its layout ({why})"),
                                m,
                            ));
                        }
                        notes.push(format!(
                            "`{pname}` (`{decl}`): {desc} has a layout the macro does not read \
                             ({why}); with `unsafe type {} = …;` it is the caller's to prove that \
                             `{}` has that layout (size, alignment and fields).",
                            m.c_name,
                            type_text(&m.rust)
                        ));
                        Ok(ElemOut {
                            ty: rust(m),
                            mapped: true,
                            c: any(&self.types.records[*i].name),
                        })
                    }
                }
            }
            Final::Enum(i) => {
                let under = self.types.enums[*i].underlying.clone();
                match (m, under) {
                    (None, under) => {
                        let how = match under {
                            Ok(s) => format!(
                                "`type {written} = MyType;`, with the size and alignment of `{}`",
                                s.c_name()
                            ),
                            Err(why) => format!(
                                "`unsafe type {written} = MyType;`: {why}, so its size is then \
                                 yours to prove"
                            ),
                        };
                        Err(self.error(format!(
                            "{where_}: the C type {desc} has no Rust type: name a `Pod` type of \
                             the same layout ({how})"
                        )))
                    }
                    (Some(m), Ok(s)) => {
                        if m.unchecked {
                            return Err(unsafe_not_needed(m));
                        }
                        let message = format!(
                            "{where_}: `type {} = {};`: the Rust type's size or alignment differs \
                             from that of {desc}, whose underlying type is `{}`",
                            m.c_name,
                            type_text(&m.rust),
                            s.c_name()
                        );
                        let under = scalar_type(s);
                        self.checks
                            .push(layout_check(&m.rust, &[], &under, &message));
                        Ok(ElemOut {
                            ty: rust(m),
                            mapped: true,
                            c: layout_of(&self.types.enums[*i].name, &rust(m)),
                        })
                    }
                    (Some(m), Err(why)) => {
                        if !m.unchecked {
                            return Err(unchecked_needed(&why, m));
                        }
                        notes.push(format!(
                            "`{pname}` (`{decl}`): {desc}: {why}; with `unsafe type {} = …;` it is \
                             the caller's to prove that `{}` has its size and alignment.",
                            m.c_name,
                            type_text(&m.rust)
                        ));
                        Ok(ElemOut {
                            ty: rust(m),
                            mapped: true,
                            c: any(&self.types.enums[*i].name),
                        })
                    }
                }
            }
            Final::Unresolved(why) => {
                let last = elem
                    .links
                    .last()
                    .map_or_else(|| written.clone(), |l| l.name.clone());
                match m {
                    None => Err(self.error(format!(
                        "{where_}: {why}; the macro proves every element and value type from the \
                         source and cannot resolve this one: write the type out (`double* x`), \
                         or declare it in the source (`typedef double {last};`, or the struct \
                         itself); for a type of a header, map it with `unsafe type {written} = MyType;`, which makes its \
                         layout yours to prove"
                    ))),
                    Some(m) if !m.unchecked => Err(unchecked_needed(why, m)),
                    Some(m) => {
                        notes.push(format!(
                            "`{pname}` (`{decl}`): {why}; with `unsafe type {} = …;` it is the \
                             caller's to prove that `{}` is the type the compiled source gives \
                             `{last}` (the same size, alignment and representation).",
                            m.c_name,
                            type_text(&m.rust)
                        ));
                        Ok(ElemOut {
                            ty: rust(m),
                            mapped: true,
                            c: any(&last),
                        })
                    }
                }
            }
        }
    }

    /// The C layout of record `i` as a `#[repr(C)]` Rust mirror: the items to
    /// declare and the mirror's type; or why the macro does not read it.
    fn layout(&self, i: usize) -> Result<(Vec<TokenStream>, TokenStream), String> {
        let mut items = Vec::new();
        let ty = self.mirror(i, &mut items, &mut Vec::new(), &mut Vec::new())?;
        Ok((items, ty))
    }

    fn mirror(
        &self,
        i: usize,
        items: &mut Vec<TokenStream>,
        done: &mut Vec<usize>,
        visiting: &mut Vec<usize>,
    ) -> Result<TokenStream, String> {
        let r = &self.types.records[i];
        let ident = format_ident!("__CudarsLayout{}", i);
        if done.contains(&i) {
            return Ok(quote!(#ident));
        }
        let body = match &r.body {
            None => {
                return Err(format!(
                    "`{} {}` is only declared in the source (line {}), not defined",
                    r.keyword, r.name, r.pos.line
                ));
            }
            Some(Err(why)) => return Err(why.clone()),
            Some(Ok(b)) => b,
        };
        visiting.push(i);
        let mut fields = Vec::new();
        for (k, f) in body.fields.iter().enumerate() {
            let t = self
                .field_type(&f.ty, items, done, visiting)
                .map_err(|why| format!("field `{}`: {why}", f.name))?;
            let name = format_ident!("f{}", k);
            fields.push(quote!(#name: #t));
        }
        visiting.pop();
        let repr = match body.align {
            None => quote!(#[repr(C)]),
            Some(a) if a.is_power_of_two() && a <= 1 << 29 => {
                let a = proc_macro2::Literal::u64_unsuffixed(a);
                quote!(#[repr(C, align(#a))])
            }
            Some(a) => return Err(format!("its alignment {a} is not a power of two")),
        };
        let kw = if r.keyword == "union" {
            quote!(union)
        } else {
            quote!(struct)
        };
        items.push(quote! {
            #repr
            #[derive(Clone, Copy)]
            #[allow(dead_code, non_camel_case_types)]
            #kw #ident { #(#fields,)* }
        });
        done.push(i);
        Ok(quote!(#ident))
    }

    fn field_type(
        &self,
        dc: &cparse::Declarator,
        items: &mut Vec<TokenStream>,
        done: &mut Vec<usize>,
        visiting: &mut Vec<usize>,
    ) -> Result<TokenStream, String> {
        for w in dc.words.iter().filter(|w| is_keyword(w)) {
            if let Some(pos) = ctypes::macro_named(&self.types, w) {
                return Err(format!(
                    "`{w}` is a preprocessor macro (`#define {w}` at line {})",
                    pos.line
                ));
            }
        }
        let mut t = if dc.stars > 0 {
            quote!(*const u8)
        } else {
            let r = ctypes::resolve(&self.types, &dc.base, dc.constant, 0)?;
            if r.pointer.is_some() {
                quote!(*const u8)
            } else {
                match &r.elem.fin {
                    Final::Scalar(s) => scalar_type(*s),
                    Final::Void => return Err("a `void` field".into()),
                    Final::Record(j) if visiting.contains(j) => {
                        return Err("the type contains itself".into());
                    }
                    Final::Record(j) => self.mirror(*j, items, done, visiting)?,
                    Final::Enum(j) => match &self.types.enums[*j].underlying {
                        Ok(s) => scalar_type(*s),
                        Err(why) => return Err(why.clone()),
                    },
                    Final::Unresolved(why) => return Err(why.clone()),
                }
            }
        };
        for d in dc.dims.iter().rev() {
            let n = d.ok_or("an array whose length is not a number")?;
            let n = proc_macro2::Literal::u64_unsuffixed(n);
            t = quote!([#t; #n]);
        }
        Ok(t)
    }
}

/// `const _` checking that `rust` is `expected`, failing with `message`.
fn identity_check(rust: &Type, expected: &TokenStream, message: &str) -> TokenStream {
    let message = plain(&format!("kernels!: {message}"));
    let span = syn::spanned::Spanned::span(rust);
    quote_spanned! {span=>
        const _: () = {
            #[diagnostic::on_unimplemented(message = #message, label = "not the C type's Rust type")]
            trait SameType<T: ?Sized> {}
            impl<T: ?Sized> SameType<T> for T {}
            const fn same<A: ?Sized + SameType<B>, B: ?Sized>() {}
            same::<#rust, #expected>();
        };
    }
}

/// `const _` checking that `rust` has the size and alignment of `mirror`
/// (declared by `items`), failing with `message`.
fn layout_check(
    rust: &Type,
    items: &[TokenStream],
    mirror: &TokenStream,
    message: &str,
) -> TokenStream {
    let message = plain(&format!("kernels!: {message}"));
    let span = syn::spanned::Spanned::span(rust);
    quote_spanned! {span=>
        const _: () = {
            #(#items)*
            ::core::assert!(
                ::core::mem::size_of::<#rust>() == ::core::mem::size_of::<#mirror>()
                    && ::core::mem::align_of::<#rust>() == ::core::mem::align_of::<#mirror>(),
                #message
            );
        };
    }
}
