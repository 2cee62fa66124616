//! The macro's input and the code it generates.

use std::collections::HashSet;
use std::path::PathBuf;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Ident, LitStr, Token, Type, Visibility};

use crate::cparse::{self, Base, Kernel, Param, ParamKind, Scalar, Types, is_keyword};
use crate::ctypes::{self, Elem, Final};

mod kw {
    syn::custom_keyword!(source);
    syn::custom_keyword!(only);
}

/// Where the CUDA source comes from.
pub(crate) enum Origin {
    /// A file, relative to the calling crate's `CARGO_MANIFEST_DIR`.
    File(LitStr),
    /// Inline text: `source "…"`.
    Inline(LitStr),
}

/// `type CName = RustType;`, or `unsafe type CName = RustType;` for a C type
/// the macro cannot check (the caller then proves the layout).
pub(crate) struct Mapping {
    pub(crate) c_name: Ident,
    pub(crate) rust: Type,
    /// `unsafe type`: the escape hatch.
    pub(crate) unchecked: bool,
}

/// The macro's input:
///
/// ```text
/// #[attributes] VIS struct NAME = "path/to/file.cu";   (or: = source "…";)
/// type CName = RustType;                               (any number)
/// unsafe type CName = RustType;                        (a C type the macro cannot check)
/// only kernel_a, kernel_b;                             (optional)
/// ```
pub(crate) struct Input {
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: Ident,
    origin: Origin,
    mappings: Vec<Mapping>,
    /// The kernels wanted (`only a, b;`); all when `None`.
    only: Option<Vec<Ident>>,
}

impl Parse for Input {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        input.parse::<Token![struct]>()?;
        let name: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        let origin = if input.peek(kw::source) {
            input.parse::<kw::source>()?;
            Origin::Inline(input.parse()?)
        } else {
            Origin::File(input.parse().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "expected the source's path (a string literal relative to the crate's \
                     manifest directory) or `source \"…\"`",
                )
            })?)
        };
        input.parse::<Token![;]>()?;
        let mut mappings: Vec<Mapping> = Vec::new();
        let mut only: Option<Vec<Ident>> = None;
        while !input.is_empty() {
            if input.peek(kw::only) {
                let kw = input.parse::<kw::only>()?;
                if only.is_some() {
                    return Err(syn::Error::new(kw.span, "`only` is given twice"));
                }
                let mut names: Vec<Ident> = Vec::new();
                loop {
                    let name = input.call(syn::ext::IdentExt::parse_any)?;
                    if names.contains(&name) {
                        return Err(syn::Error::new(
                            name.span(),
                            format!("`{name}` is listed twice"),
                        ));
                    }
                    names.push(name);
                    if input.peek(Token![;]) {
                        break;
                    }
                    input.parse::<Token![,]>()?;
                }
                input.parse::<Token![;]>()?;
                only = Some(names);
                continue;
            }
            let unchecked = input.parse::<Option<Token![unsafe]>>()?.is_some();
            input.parse::<Token![type]>()?;
            let c_name: Ident = input.call(syn::ext::IdentExt::parse_any)?;
            input.parse::<Token![=]>()?;
            let rust: Type = input.parse()?;
            input.parse::<Token![;]>()?;
            if mappings.iter().any(|m| m.c_name == c_name) {
                return Err(syn::Error::new(
                    c_name.span(),
                    format!("`{c_name}` is mapped twice"),
                ));
            }
            mappings.push(Mapping {
                c_name,
                rust,
                unchecked,
            });
        }
        Ok(Self {
            attrs,
            vis,
            name,
            origin,
            mappings,
            only,
        })
    }
}

/// The longest parameter list `cudars_core::Signature` is implemented for.
const MAX_PARAMS: usize = 16;

/// Names the generated type's own items take: no kernel may be called so.
const RESERVED: &[&str] = &["load", "load_cached", "load_with", "compile", "from_object"];

/// A Rust identifier for a C name: raw when it is a Rust keyword; `None` for
/// the few keywords that cannot be raw (`self`, `Self`, `super`, `crate`, `_`).
fn rust_ident(name: &str) -> Option<Ident> {
    if syn::parse_str::<Ident>(name).is_ok() {
        return Some(Ident::new(name, Span::call_site()));
    }
    if matches!(name, "self" | "Self" | "super" | "crate" | "_") {
        return None;
    }
    syn::parse_str::<Ident>(&format!("r#{name}")).ok()
}

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

/// One parameter, in the three places it appears.
struct GenParam {
    /// In the `TypedKernel` signature tuple.
    sig: TokenStream,
    /// The method's argument: `name: Type`.
    arg: TokenStream,
    /// Its element in the argument tuple.
    value: TokenStream,
}

/// An element or value type in Rust, with what proves it.
struct ElemOut {
    /// The Rust type.
    ty: TokenStream,
    /// The user's mapped type (passed by value as `Val<T>`), not a scalar.
    mapped: bool,
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

struct Ctx<'a> {
    input: &'a Input,
    file: String,
    used: HashSet<String>,
    types: Types,
    /// Compile-time checks of the mappings (`const _: () = …;`).
    checks: Vec<TokenStream>,
}

impl<'a> Ctx<'a> {
    fn span(&self) -> Span {
        match &self.input.origin {
            Origin::File(l) | Origin::Inline(l) => l.span(),
        }
    }

    fn error(&self, message: String) -> syn::Error {
        syn::Error::new(self.span(), message)
    }

    fn mapping(&self, c_name: &str) -> Option<&'a Mapping> {
        let input: &'a Input = self.input;
        input.mappings.iter().find(|m| m.c_name == c_name)
    }

    /// The Rust type of a parameter: its signature type, argument and value,
    /// and what the caller takes on for it, if anything.
    fn param(
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
        if let Some(object) = self.handle_object(p) {
            return Ok(GenParam {
                sig: object.clone(),
                arg: quote!(#id: &#object),
                value: quote!(#id),
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
            return Ok(if ptr.constant {
                GenParam {
                    sig: quote!(::cudars_core::ConstPtr<#t>),
                    arg: quote!(#id: ::cudars_core::DeviceView<'_, #t>),
                    value: quote!(#id),
                }
            } else {
                GenParam {
                    sig: quote!(::cudars_core::MutPtr<#t>),
                    arg: quote!(#id: ::cudars_core::DeviceViewMut<'_, #t>),
                    value: quote!(#id),
                }
            });
        }
        if r.elem.fin == Final::Void {
            return Err(self.error(format!("{where_}: a `void` parameter")));
        }
        let e = self.elem(&where_, &pname, &p.decl, &r.elem, notes)?;
        let t = e.ty;
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
            }
        } else if e.mapped {
            GenParam {
                sig: quote!(::cudars_core::Val<#t>),
                arg: quote!(#id: &#t),
                value: quote!(*#id),
            }
        } else {
            GenParam {
                sig: t.clone(),
                arg: quote!(#id: #t),
                value: quote!(#id),
            }
        })
    }

    /// The handle type a by-value texture, surface or tensor-map parameter
    /// takes (`cudaTextureObject_t` → `TextureObject`, `cudaSurfaceObject_t` →
    /// `SurfaceObject`, `CUtensorMap` → `TensorMapDescriptor`, each by
    /// reference), unless the source declares `CUtensorMap` or the input maps
    /// the name (then it is what that says).
    fn handle_object(&self, p: &Param) -> Option<TokenStream> {
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
            "cudaTextureObject_t" | "CUtexObject" if *base == Base::Scalar(Scalar::U64) => {
                Some(quote!(::cudars_core::TextureObject))
            }
            "cudaSurfaceObject_t" | "CUsurfObject" if *base == Base::Scalar(Scalar::U64) => {
                Some(quote!(::cudars_core::SurfaceObject))
            }
            "CUtensorMap"
                if ctypes::resolve(&self.types, base, false, 0)
                    .map_or(true, |r| matches!(r.elem.fin, Final::Unresolved(_))) =>
            {
                Some(quote!(::cudars_core::TensorMapDescriptor))
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

/// Generates the struct and its `impl`.
pub(crate) fn expand(input: &Input) -> syn::Result<TokenStream> {
    let (text, file, embed, program_name) = match &input.origin {
        Origin::File(lit) => {
            let rel = lit.value();
            let dir = std::env::var_os("CARGO_MANIFEST_DIR").ok_or_else(|| {
                syn::Error::new(
                    lit.span(),
                    "CARGO_MANIFEST_DIR is not set (is cargo building this?)",
                )
            })?;
            let path = PathBuf::from(dir).join(&rel);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                syn::Error::new(lit.span(), format!("cannot read `{}`: {e}", path.display()))
            })?;
            let abs = path.to_str().ok_or_else(|| {
                syn::Error::new(lit.span(), "the source's path is not valid UTF-8")
            })?;
            let embed = quote!(::core::include_str!(#abs));
            let name = rel.rsplit(['/', '\\']).next().unwrap_or(&rel).to_string();
            (text, format!("`{rel}`"), embed, name)
        }
        Origin::Inline(lit) => (
            lit.value(),
            "the inline source".to_string(),
            quote!(#lit),
            format!("{}.cu", input.name),
        ),
    };
    let mut ctx = Ctx {
        input,
        file,
        used: HashSet::new(),
        types: Types::default(),
        checks: Vec::new(),
    };
    let parsed = cparse::parse(&text).map_err(|e| ctx.error(format!("{} {e}", ctx.file)))?;
    ctx.types = parsed.types.clone();
    let kernels: Vec<&Kernel> = match &input.only {
        None => parsed.kernels.iter().collect(),
        Some(wanted) => {
            let mut out = Vec::new();
            for w in wanted {
                let name = w.to_string();
                let name = name.strip_prefix("r#").unwrap_or(&name);
                if let Some(k) = parsed.kernels.iter().find(|k| k.name == name) {
                    out.push(k);
                } else if let Some(s) = parsed.skipped.iter().find(|s| s.name == name) {
                    return Err(syn::Error::new(
                        w.span(),
                        format!("`{name}` ({} line {}) is {}", ctx.file, s.pos.line, s.why),
                    ));
                } else {
                    let all: Vec<&str> = parsed.kernels.iter().map(|k| k.name.as_str()).collect();
                    return Err(syn::Error::new(
                        w.span(),
                        format!(
                            "{} has no `extern \"C\" __global__` function `{name}`; it has: {}",
                            ctx.file,
                            all.join(", ")
                        ),
                    ));
                }
            }
            out
        }
    };
    if kernels.is_empty() {
        let mut msg = format!(
            "{} has no `extern \"C\" __global__` function (the preprocessor is not run: \
             write `extern \"C\"` and `__global__` out, not through macros)",
            ctx.file
        );
        for s in &parsed.skipped {
            msg.push_str(&format!(
                "; `{}` (line {}) is {}",
                s.name, s.pos.line, s.why
            ));
        }
        return Err(ctx.error(msg));
    }

    let ty = &input.name;
    let vis = &input.vis;
    let attrs = &input.attrs;
    let mut fields = Vec::new();
    let mut loads = Vec::new();
    let mut methods = Vec::new();
    let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
    for k in kernels.iter().copied() {
        let kname = &k.name;
        let where_ = format!("{} line {}: kernel `{kname}`", ctx.file, k.pos.line);
        if RESERVED.contains(&kname.as_str()) {
            return Err(ctx.error(format!(
                "{where_}: its name is one of the generated type's own functions ({})",
                RESERVED.join(", ")
            )));
        }
        if kname
            .strip_suffix("_kernel")
            .is_some_and(|b| names.contains(&b))
        {
            return Err(ctx.error(format!(
                "{where_}: its name is that of the accessor of kernel `{}`",
                &kname[..kname.len() - 7]
            )));
        }
        let method = rust_ident(kname)
            .ok_or_else(|| ctx.error(format!("{where_}: its name cannot be a Rust function's")))?;
        let accessor = format_ident!("{}_kernel", kname);
        let mut taken: HashSet<String> =
            ["stream", "config"].iter().map(|s| s.to_string()).collect();
        let c_params = k
            .params
            .as_ref()
            .map_err(|e| ctx.error(format!("{} {e}", ctx.file)))?;
        if c_params.len() > MAX_PARAMS {
            return Err(ctx.error(format!(
                "{where_}: {} parameters; a typed kernel takes up to {MAX_PARAMS} \
                 (pass the others in a struct)",
                c_params.len()
            )));
        }
        let mut params = Vec::new();
        let mut notes = Vec::new();
        for (i, p) in c_params.iter().enumerate() {
            let pname = match &p.name {
                Some(n) if !taken.contains(n) && rust_ident(n).is_some() => n.clone(),
                Some(n)
                    if !taken.contains(&format!("{n}_"))
                        && rust_ident(&format!("{n}_")).is_some() =>
                {
                    format!("{n}_")
                }
                _ => format!("arg{i}"),
            };
            taken.insert(pname.clone());
            let id = rust_ident(&pname).unwrap_or_else(|| format_ident!("arg{}", i));
            let gp = ctx.param(k, i, p, &id, &mut notes)?;
            params.push(gp);
        }
        let sigs: Vec<&TokenStream> = params.iter().map(|p| &p.sig).collect();
        let args: Vec<&TokenStream> = params.iter().map(|p| &p.arg).collect();
        let values: Vec<&TokenStream> = params.iter().map(|p| &p.value).collect();
        let decls: Vec<&str> = c_params.iter().map(|p| p.decl.as_str()).collect();
        let sig = quote!((#(#sigs,)*));
        let field = &method;
        fields.push(quote!(#field: ::cudars_core::TypedKernel<#sig>));
        loads.push(quote! {
            #field: ::cudars_core::TypedKernel::with_param_names(code.get_kernel(#kname)?, &[#(#decls),*])?
        });
        let notes: Vec<String> = notes.iter().map(|n| format!(" * {n}")).collect();
        let doc_sig = format!(" {}", k.signature);
        let doc_where = format!(" ({}, line {})", ctx.file.trim_matches('`'), k.pos.line);
        let launch_doc = format!(" Launches `{kname}` on `stream` with `config`:");
        let accessor_doc = format!(
            " The typed kernel behind [`{kname}`](Self::{method}) (attributes, occupancy, graphs)."
        );
        methods.push(quote! {
            #[doc = #launch_doc]
            ///
            /// ```text
            #[doc = #doc_sig]
            /// ```
            #[doc = #doc_where]
            ///
            /// Views must be on the stream's device; their buffers' frees are
            /// ordered after the launch.
            ///
            /// # Safety
            /// A kernel is arbitrary device code: the macro proves its signature,
            /// not what its body does. Proven: the count and order of the
            /// arguments and the type of each, every pointer's element type and
            /// every value's type read from the source (its `typedef`s and
            /// `using`s followed; a type it cannot resolve is a compile error);
            /// the sizes are checked again against the kernel when it is loaded
            /// (CUDA 12.4 and later); the borrows keep the memory alive and
            /// writable views exclusive. Left to the caller:
            ///
            /// * the kernel reaches only memory its pointer arguments name, and
            ///   only within their views: the counts, indices and strides among
            ///   the other arguments, and the launch configuration, must keep
            ///   every access inside each view's length (a kernel that touches
            ///   `x[0..n]` needs `n` no greater than `x`'s length);
            /// * it writes only through its non-`const` pointers;
            /// * it does not race with work on other streams that uses the same
            ///   memory;
            /// * the code loaded is compiled from [`SOURCE`](Self::SOURCE), with
            ///   no macro (of the compile options or of a header it includes)
            ///   changing a type its signatures name: the macro reads the source
            ///   without running the preprocessor.
            #(#[doc = #notes])*
            ///
            /// # Errors
            /// `cudars_core::Error::InvalidArgument` for a view of another device or
            /// invalid dimensions; the driver's error.
            // The parameters keep their C names (`N`, `lda`), and kernels theirs.
            #[allow(clippy::too_many_arguments, non_snake_case)]
            pub unsafe fn #method(
                &self,
                stream: &::cudars_core::Stream,
                config: &::cudars_core::LaunchConfig,
                #(#args),*
            ) -> ::cudars_core::Result<()> {
                // SAFETY: the caller upholds this function's contract, which is
                // `TypedKernel::launch`'s.
                unsafe { self.#field.launch(stream, config, (#(#values,)*)) }
            }

            #[doc = #accessor_doc]
            #[allow(non_snake_case)]
            pub fn #accessor(&self) -> &::cudars_core::TypedKernel<#sig> {
                &self.#field
            }
        });
    }
    for m in &input.mappings {
        if !ctx.used.contains(&m.c_name.to_string()) {
            return Err(syn::Error::new(
                m.c_name.span(),
                format!(
                    "no kernel parameter of {} has the type `{}`",
                    ctx.file, m.c_name
                ),
            ));
        }
    }
    let list = names
        .iter()
        .map(|n| {
            let id = rust_ident(n).map_or_else(|| n.to_string(), |i| i.to_string());
            format!("[`{n}`](Self::{id})")
        })
        .collect::<Vec<_>>()
        .join(", ");
    let struct_doc = format!(
        " The kernels of {} ({list}), compiled with NVRTC when loaded \
         ([`load`](Self::load)) and checked against their parameters.",
        ctx.file
    );
    let source_doc = format!(
        " The CUDA C++ source ({}), embedded at build time.",
        ctx.file
    );
    let checks = &ctx.checks;
    Ok(quote! {
        #(#checks)*

        #(#attrs)*
        ///
        #[doc = #struct_doc]
        #[derive(Debug, Clone)]
        #[allow(non_snake_case)]
        #vis struct #ty {
            #(#fields,)*
        }

        impl #ty {
            #[doc = #source_doc]
            pub const SOURCE: &'static str = #embed;
            /// The program's name in compiler diagnostics (when the options name none).
            pub const PROGRAM_NAME: &'static str = #program_name;
            /// The kernels' names, in source order.
            pub const KERNELS: &'static [&'static str] = &[#(#names),*];

            /// Compiles [`SOURCE`](Self::SOURCE) for `device`'s architecture
            /// (`ProgramOptions::for_device`) and loads its kernels.
            ///
            /// # Errors
            /// As [`load_with`](Self::load_with).
            pub fn load(device: &::cudars_core::Device) -> ::cudars_core::Result<Self> {
                Self::load_with(::cudars_core::ProgramOptions::for_device(device)?, ::core::option::Option::None)
            }

            /// [`load`](Self::load) through a program cache: a compilation this
            /// cache has seen (in any process, for a file cache) is not repeated.
            ///
            /// # Errors
            /// As [`load_with`](Self::load_with).
            pub fn load_cached(
                device: &::cudars_core::Device,
                cache: &dyn ::cudars_core::cache::ProgramCache,
            ) -> ::cudars_core::Result<Self> {
                Self::load_with(::cudars_core::ProgramOptions::for_device(device)?, ::core::option::Option::Some(cache))
            }

            /// Compiles with `options` (through `cache` when given) and loads the
            /// kernels.
            ///
            /// # Errors
            /// As [`compile`](Self::compile) and [`from_object`](Self::from_object).
            pub fn load_with(
                options: ::cudars_core::ProgramOptions,
                cache: ::core::option::Option<&dyn ::cudars_core::cache::ProgramCache>,
            ) -> ::cudars_core::Result<Self> {
                Self::from_object(&Self::compile(options, cache)?)
            }

            /// Compiles [`SOURCE`](Self::SOURCE) with NVRTC: a cubin when
            /// `options.arch` is a real architecture (`sm_90`), else PTX (for a
            /// virtual one, `compute_90`, or NVRTC's default; the driver compiles
            /// it for the GPU when it is loaded); through `cache` when given. A program with
            /// no name is named [`PROGRAM_NAME`](Self::PROGRAM_NAME).
            ///
            /// # Errors
            /// The compiler's error (with its log) or its absence
            /// (`cudars_core::Error::Unavailable`); the cache's errors.
            pub fn compile(
                mut options: ::cudars_core::ProgramOptions,
                cache: ::core::option::Option<&dyn ::cudars_core::cache::ProgramCache>,
            ) -> ::cudars_core::Result<::cudars_core::ObjectCode> {
                if options.name.is_none() {
                    options.name = ::core::option::Option::Some(Self::PROGRAM_NAME.into());
                }
                let target = if options.arch.as_deref().is_some_and(|a| a.starts_with("sm_")) {
                    ::cudars_core::CompileTarget::Cubin
                } else {
                    ::cudars_core::CompileTarget::Ptx
                };
                let code = ::cudars_core::SourceCode::Cxx(Self::SOURCE);
                match cache {
                    ::core::option::Option::Some(cache) => {
                        ::cudars_core::cache::compile_cached(cache, code, options, target, &[])
                    }
                    ::core::option::Option::None => {
                        ::cudars_core::Program::new(code, options)?.compile(target, &[])
                    }
                }
            }

            /// Loads the kernels from code compiled from [`SOURCE`](Self::SOURCE)
            /// and checks each against its parameters.
            ///
            /// # Errors
            /// The driver's error loading the code or finding a kernel;
            /// `cudars_core::Error::InvalidArgument` naming the kernel and the
            /// parameter whose size differs from its Rust type's.
            pub fn from_object(code: &::cudars_core::ObjectCode) -> ::cudars_core::Result<Self> {
                ::core::result::Result::Ok(Self {
                    #(#loads,)*
                })
            }

            #(#methods)*
        }
    })
}

#[cfg(test)]
mod tests {
    // Test code: a failed step is a failed test, reported by panicking.
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn run(input: &str) -> Result<String, String> {
        let input: Input = syn::parse_str(input).map_err(|e| format!("parse: {e}"))?;
        expand(&input)
            .map(|t| t.to_string())
            .map_err(|e| e.to_string())
    }

    fn fails(input: &str, want: &str) {
        match run(input) {
            Ok(code) => panic!("expected an error containing {want:?}, got\n{code}"),
            Err(e) => assert!(e.contains(want), "{e}\n(expected {want:?})"),
        }
    }

    #[test]
    fn generates_typed_methods_with_views_scalars_and_mapped_structs() {
        let code = run(r##"
            pub struct K = source r#"
                struct P { float a; };
                extern "C" __global__ void k(const float* x, float* y, P p, unsigned n, void* raw) {}
            "#;
            type P = crate::P;
            unsafe type void = u8;
        "##)
        .unwrap();
        let code = code.replace(' ', "");
        assert!(code.contains("pubstructK{k:::cudars_core::TypedKernel<(::cudars_core::ConstPtr<f32>,::cudars_core::MutPtr<f32>,::cudars_core::Val<crate::P>,u32,::cudars_core::MutPtr<u8>,)>,}"), "{code}");
        assert!(code.contains("x:::cudars_core::DeviceView<'_,f32>,y:::cudars_core::DeviceViewMut<'_,f32>,p:&crate::P,n:u32,raw:::cudars_core::DeviceViewMut<'_,u8>"), "{code}");
        assert!(code.contains("(x,y,*p,n,raw,)"), "{code}");
        assert!(code.contains("with_param_names(code.get_kernel(\"k\")?,&[\"constfloat*x\",\"float*y\",\"Pp\",\"unsignedn\",\"void*raw\"])"), "{code}");
        assert!(code.contains("pubfnk_kernel(&self)"), "{code}");
    }

    /// Issue 28, point 7: textures, surfaces and tensor maps are typed
    /// parameters taken by reference; a mapped struct that holds pointers is
    /// `Lent` (its views borrowed for the launch), one without stays `Val`.
    #[test]
    fn handles_and_structs_of_pointers_take_typed_arguments() {
        let code = run(r##"
            pub struct K = source r#"
                struct Span { float* data; unsigned n; };
                struct Plain { float a; };
                extern "C" __global__ void k(cudaTextureObject_t t, cudaSurfaceObject_t s,
                                             const __grid_constant__ CUtensorMap m, Span sp, Plain p) {}
            "#;
            type Span = crate::Span;
            type Plain = crate::Plain;
        "##)
        .unwrap()
        .replace(' ', "");
        assert!(code.contains("TypedKernel<(::cudars_core::TextureObject,::cudars_core::SurfaceObject,::cudars_core::TensorMapDescriptor,::cudars_core::Lent<crate::Span>,::cudars_core::Val<crate::Plain>,)>"), "{code}");
        assert!(code.contains("t:&::cudars_core::TextureObject,s:&::cudars_core::SurfaceObject,m:&::cudars_core::TensorMapDescriptor,sp:::cudars_core::LentVal<'_,crate::Span>,p:&crate::Plain"), "{code}");
        assert!(code.contains("(t,s,m,sp,*p,)"), "{code}");
    }

    #[test]
    fn keywords_and_the_launch_names_are_renamed() {
        let code = run(r##"struct K = source r#"extern "C" __global__ void type(int* in, int stream, int config, int self, float) {}"#;"##).unwrap();
        let code = code.replace(' ', "");
        assert!(code.contains("pubunsafefnr#type(&self,stream:&::cudars_core::Stream,config:&::cudars_core::LaunchConfig,r#in:::cudars_core::DeviceViewMut<'_,i32>,stream_:i32,config_:i32,self_:i32,arg4:f32)"), "{code}");
    }

    #[test]
    fn errors_name_the_file_line_kernel_parameter_and_type() {
        fails(
            r##"struct K = source r#"

                extern "C" __global__ void k(float* y, Params p) {}"#;"##,
            "the inline source line 3: kernel `k`, parameter 1 (`Params p`): `Params` is not declared in the source as a `typedef`, `using`, `struct`, `class`, `union` or `enum`; the macro proves every element and value type from the source and cannot resolve this one",
        );
        fails(
            r##"struct K = source r#"extern "C" __global__ void k(const void* p) {}"#;"##,
            "parameter 0 (`const void* p`): `void` has no element type the macro can check: declare the pointer with its real element type, or take the element type on yourself with `unsafe type void = u8;`",
        );
        fails(
            r##"struct K = source r#"extern "C" __global__ void k(float** p) {}"#;"##,
            "the inline source line 1:30: kernel `k`, parameter 0 (`float** p`): a pointer to a pointer",
        );
        fails(
            r##"struct K = source r#"extern "C" __global__ void k(float* p) {}"#; type Unused = u32;"##,
            "no kernel parameter of the inline source has the type `Unused`",
        );
        fails(
            r##"struct K = source r#"__global__ void k(float* p) {} template <int N> __global__ void t() {}"#;"##,
            "the inline source has no `extern \"C\" __global__` function (the preprocessor is not run: write `extern \"C\"` and `__global__` out, not through macros); `k` (line 1) is not `extern \"C\"` (its name is mangled); `t` (line 1) is a template",
        );
        fails(
            r##"struct K = source r#"extern "C" __global__ void load(float* p) {}"#;"##,
            "kernel `load`: its name is one of the generated type's own functions",
        );
        fails(
            r##"struct K = source r#"extern "C" __global__ void f() {} extern "C" __global__ void f_kernel() {}"#;"##,
            "kernel `f_kernel`: its name is that of the accessor of kernel `f`",
        );
        fails(
            r##"struct K = source r#"extern "C" __global__ void self() {}"#;"##,
            "kernel `self`: its name cannot be a Rust function's",
        );
        fails(r#"struct K = "no/such/file.cu";"#, "cannot read");
        fails(
            r#"struct K = "a.cu"; type T = u8; type T = u16;"#,
            "parse: `T` is mapped twice",
        );
        fails(r#"struct K = 5;"#, "expected the source's path");
        let many = (0..17)
            .map(|i| format!("int p{i}"))
            .collect::<Vec<_>>()
            .join(", ");
        fails(
            &format!("struct K = source r#\"extern \"C\" __global__ void k({many}) {{}}\"#;"),
            "kernel `k`: 17 parameters; a typed kernel takes up to 16",
        );
        let sixteen = (0..16)
            .map(|i| format!("int p{i}"))
            .collect::<Vec<_>>()
            .join(", ");
        assert!(
            run(&format!(
                "struct K = source r#\"extern \"C\" __global__ void k({sixteen}) {{}}\"#;"
            ))
            .is_ok()
        );
    }

    #[test]
    fn only_selects_kernels_and_names_what_cannot_be_selected() {
        let src = r##"struct K = source r#"
            extern "C" __global__ void bad(float** p) {}
            extern "C" __global__ void good(float* p) {}
            extern "C" __global__ void type(int n) {}
            template <typename T> __global__ void tmpl(T* p) {}
            __global__ void mangled(float* p) {}
        "#;"##;
        let code = run(&format!("{src} only good, r#type;")).unwrap();
        assert!(code.contains("pub unsafe fn good"), "{code}");
        assert!(code.contains("pub unsafe fn r#type"), "{code}");
        assert!(!code.contains("fn bad"), "{code}");
        assert!(code.contains("[`type`](Self::r#type)"), "{code}");
        assert!(
            code.contains("KERNELS : & 'static [& 'static str] = & [\"good\" , \"type\"]"),
            "{code}"
        );
        fails(src, "line 2:44: kernel `bad`, parameter 0 (`float** p`)");
        fails(
            &format!("{src} only tmpl;"),
            "`tmpl` (the inline source line 5) is a template (templates have no C name",
        );
        fails(
            &format!("{src} only mangled;"),
            "`mangled` (the inline source line 6) is not `extern \"C\"`",
        );
        fails(
            &format!("{src} only nothere;"),
            "the inline source has no `extern \"C\" __global__` function `nothere`; it has: bad, good, type",
        );
        fails(
            &format!("{src} only good, good;"),
            "parse: `good` is listed twice",
        );
        fails(
            &format!("{src} only good; only bad;"),
            "parse: `only` is given twice",
        );
    }

    /// The review's case: `typedef double real;` with a mapping to `f32`
    /// compiled, and the launch wrote twice the view's bytes.
    #[test]
    fn a_typedef_maps_to_its_c_type_and_a_mapping_that_says_otherwise_is_refused() {
        let src = r##"struct K = source r#"typedef double real;
            extern "C" __global__ void k(real* out, const real* in, real v, int n) {}"#;"##;
        let code = run(src).unwrap().replace(' ', "");
        assert!(
            code.contains(
                "TypedKernel<(::cudars_core::MutPtr<f64>,::cudars_core::ConstPtr<f64>,f64,i32,)>"
            ),
            "{code}"
        );
        assert!(
            code.contains("out:::cudars_core::DeviceViewMut<'_,f64>,r#in:::cudars_core::DeviceView<'_,f64>,v:f64,n:i32"),
            "{code}"
        );
        fails(
            &format!("{src} type real = f32;"),
            "the inline source line 2: kernel `k`, parameter 0 (`real* out`): `type real = f32;` \
             contradicts the source: `real` (typedef at line 1), which is `double`, whose Rust \
             type is `f64`",
        );
        fails(
            &format!("{src} type real = ::core::primitive::f32;"),
            "`type real = ::core::primitive::f32;` contradicts the source",
        );
        // The same type, written out: accepted, nothing to check at run time.
        let code = run(&format!("{src} type real = f64;")).unwrap();
        assert!(!code.contains("SameType"), "{code}");
        // A path the macro cannot compare: a compile-time identity check.
        let code = run(&format!("{src} type real = crate::Real;")).unwrap();
        let flat = code.replace(' ', "");
        assert!(flat.contains("same::<crate::Real,f64>()"), "{code}");
        assert!(
            code.contains("contradicts the source: `real` (typedef at line 1), which is `double`"),
            "{code}"
        );
        // `unsafe` for what the macro checks is refused.
        fails(
            &format!("{src} unsafe type real = f64;"),
            "which the macro checks the Rust type against: write `type real = f64;` (without `unsafe`)",
        );
    }

    #[test]
    fn chains_usings_stdint_and_pointer_typedefs() {
        let code = run(r##"struct K = source r#"
            typedef double real; typedef real scalar_t; using count_t = unsigned long long;
            typedef const float* cfp; typedef int32_t i32_t;
            extern "C" __global__ void k(scalar_t* y, count_t n, cfp x, i32_t m, const scalar_t* __restrict__ z) {}"#;"##)
        .unwrap()
        .replace(' ', "");
        assert!(
            code.contains("y:::cudars_core::DeviceViewMut<'_,f64>,n:u64,x:::cudars_core::DeviceView<'_,f32>,m:i32,z:::cudars_core::DeviceView<'_,f64>"),
            "{code}"
        );
        fails(
            r##"struct K = source r#"typedef float* fp; extern "C" __global__ void k(fp x) {}"#; type fp = u8;"##,
            "`fp` is a pointer type (typedef at line 1); the macro gives it a view of its element type",
        );
        fails(
            r##"struct K = source r#"typedef float* fp; extern "C" __global__ void k(fp* x) {}"#;"##,
            "parameter 0 (`fp* x`): a pointer to a pointer (`fp` is a pointer type: typedef at line 1)",
        );
        fails(
            r##"struct K = source r#"typedef bool flag; extern "C" __global__ void k(flag* x) {}"#;"##,
            "a pointer to `bool` (`flag` (typedef at line 1), which is `bool`)",
        );
        fails(
            r##"struct K = source r#"typedef double real; typedef real r2;
                extern "C" __global__ void k(r2* x) {}"#; type r2 = f64; type real = f64;"##,
            "both `r2` and `real` are mapped, and the source makes them one type",
        );
    }

    #[test]
    fn what_the_macro_cannot_resolve_is_refused_with_what_to_do() {
        fails(
            r##"struct K = source r#"#define real double
                extern "C" __global__ void k(real* x, int n) {}"#;"##,
            "parameter 0 (`real* x`): `real` is a preprocessor macro (`#define real` at line 1), \
             and the macro reads the source without running the preprocessor; the macro proves \
             every element and value type from the source and cannot resolve this one: write the \
             type out (`double* x`), or declare it in the source (`typedef double real;`",
        );
        fails(
            r##"struct K = source r#"#define real double
                extern "C" __global__ void k(real* x, int n) {}"#; type real = f64;"##,
            "so `type real = f64;` cannot be checked; declare the type in the source so that the \
             macro can read it, or write `unsafe type real = f64;`",
        );
        fails(
            r##"struct K = source r#"#define float double
                extern "C" __global__ void k(float* x) {}"#;"##,
            "parameter 0 (`float* x`): `float` is a preprocessor macro (`#define float` at line 1)",
        );
        // Qualifiers that do not change a type may be defined away.
        assert!(
            run(r##"struct K = source r#"#define __restrict__
                #define __grid_constant__
                extern "C" __global__ void k(float* __restrict__ x) {}"#;"##)
            .is_ok()
        );
        fails(
            r##"struct K = source r#"#define const
                extern "C" __global__ void k(const float* x) {}"#;"##,
            "`const` is a preprocessor macro",
        );
        fails(
            r##"struct K = source r#"#include "vec.h"
                extern "C" __global__ void k(const Vec3* v) {}"#;"##,
            "`Vec3` is not declared in the source as a `typedef`, `using`, `struct`, `class`, \
             `union` or `enum` (it may come from `#include \"vec.h\"`, which the macro does not \
             read)",
        );
        fails(
            r##"struct K = source r#"#ifdef F64
                typedef double real;
                #else
                typedef float real;
                #endif
                extern "C" __global__ void k(real* x) {}"#;"##,
            "`real` is declared 2 times differently (lines 2, 4)",
        );
        fails(
            r##"struct K = source r#"extern "C" __global__ void k(void* p) {}"#; type void = u8;"##,
            "has no layout to check `u8` against: declare the pointer with its real element type, \
             or write `unsafe type void = u8;`",
        );
        // The escape hatch: accepted, and the launch function's `# Safety` says
        // what the caller takes on.
        let code = run(r##"struct K = source r#"#include "vec.h"
                extern "C" __global__ void k(const Vec3* v, void* raw, float* y) {}"#;
                unsafe type Vec3 = [f32; 3]; unsafe type void = u8;"##)
        .unwrap();
        assert!(
            code.contains("`v` (`const Vec3* v`): `Vec3` is not declared in the source"),
            "{code}"
        );
        assert!(
            code.contains("it is the caller's to prove that `[f32; 3]` is the type the compiled source gives `Vec3`"),
            "{code}"
        );
        assert!(
            code.contains("`raw` (`void* raw`) points to `void`, given the element type `u8`"),
            "{code}"
        );
        let flat = code.replace(' ', "");
        assert!(
            flat.contains("v:::cudars_core::DeviceView<'_,[f32;3]>"),
            "{code}"
        );
    }

    #[test]
    fn struct_and_enum_mappings_are_checked_against_the_source_layout() {
        let src = r##"struct K = source r#"
            struct __align__(8) P { float a; double b[2]; unsigned char c; long d; };
            struct Q { P inner; int* ptr; };
            enum class Mode : unsigned short { A, B };
            extern "C" __global__ void k(P p, const Q* q, Mode m) {}"#;"##;
        let code = run(&format!(
            "{src} type P = crate::P; type Q = crate::Q; type Mode = u16;"
        ))
        .unwrap();
        let flat = code.replace(' ', "");
        // The mirror of P (with its alignment) and the check of each mapping.
        assert!(
            flat.contains("#[repr(C,align(8))]#[derive(Clone,Copy)]#[allow(dead_code,non_camel_case_types)]struct__CudarsLayout0{f0:f32,f1:[f64;2],f2:u8,f3:::core::ffi::c_long,}"),
            "{code}"
        );
        assert!(
            flat.contains("struct__CudarsLayout1{f0:__CudarsLayout0,f1:*constu8,}"),
            "{code}"
        );
        assert!(
            flat.contains("::core::mem::size_of::<crate::P>()==::core::mem::size_of::<__CudarsLayout0>()&&::core::mem::align_of::<crate::P>()==::core::mem::align_of::<__CudarsLayout0>()"),
            "{code}"
        );
        assert!(
            flat.contains("::core::mem::size_of::<u16>()==::core::mem::size_of::<u16>()"),
            "{code}"
        );
        assert!(
            code.contains("`type P = crate::P;`: the Rust type's size or alignment differs from that of `P` (struct at line 2)"),
            "{code}"
        );
        assert!(
            code.contains("that its fields are the C fields, in order and of the same types, is the caller's to prove"),
            "{code}"
        );
        fails(
            &format!("{src} unsafe type P = crate::P; type Q = crate::Q; type Mode = u16;"),
            "(without `unsafe`)",
        );
        fails(
            &format!("{src} type Q = crate::Q; type Mode = u16;"),
            "parameter 0 (`P p`): the C type `P` (struct at line 2) has no Rust type: name a `Pod` type of the same layout (`type P = MyType;`)",
        );
        // Layouts the macro does not read need `unsafe type`.
        let bits = r##"struct K = source r#"
            struct B { unsigned a : 3; };
            enum Old { X };
            extern "C" __global__ void k(B b, Old o) {}"#;"##;
        fails(
            &format!("{bits} type B = u32; unsafe type Old = i32;"),
            "`B` (struct at line 2): the macro does not read its layout (it has a bit-field (`unsigned a:3`)), so `type B = u32;` cannot be checked",
        );
        fails(
            &format!("{bits} unsafe type B = u32; type Old = i32;"),
            "an unscoped enum without a fixed underlying type",
        );
        let code = run(&format!(
            "{bits} unsafe type B = u32; unsafe type Old = i32;"
        ))
        .unwrap();
        assert!(
            code.contains("`b` (`B b`): `B` (struct at line 2) has a layout the macro does not read (it has a bit-field"),
            "{code}"
        );
        assert!(!code.contains("size_of"), "{code}");
    }

    #[test]
    fn the_safety_section_says_what_is_left_to_the_caller() {
        let code =
            run(r##"struct K = source r#"extern "C" __global__ void k(float* y, int n) {}"#;"##)
                .unwrap();
        for want in [
            "the macro proves its signature",
            "every pointer's element type and",
            "a type it cannot resolve is a compile error",
            "Left to the caller",
            "only within their views: the counts, indices and strides among",
            "it writes only through its non-`const` pointers",
            "without running the preprocessor",
        ] {
            assert!(code.contains(want), "{want:?} in\n{code}");
        }
    }

    #[test]
    fn a_file_is_read_relative_to_the_manifest_and_embedded() {
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();
        let code = run(r#"struct K = "tests/sample.cu";"#).unwrap();
        let path = std::path::Path::new(&dir).join("tests/sample.cu");
        assert!(
            code.contains(&format!("include_str ! ({:?})", path.to_str().unwrap())),
            "{code}"
        );
        assert!(code.contains("\"sample.cu\""), "{code}");
    }
}
