//! The macro's input: the struct to generate, where its CUDA source is, the
//! type mappings and the kernels wanted.

use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Expr, Ident, LitStr, Token, Type, Visibility};

mod kw {
    syn::custom_keyword!(source);
    syn::custom_keyword!(only);
    syn::custom_keyword!(declare);
}

/// Where the CUDA source comes from.
pub(crate) enum Origin {
    /// A file, relative to the calling crate's `CARGO_MANIFEST_DIR`.
    File(LitStr),
    /// Inline text: `source "…"`.
    Inline(LitStr),
    /// A constant expression the macro cannot read (`source KERNELS`, a `const`
    /// or `static` path, `include_str!(…)`, `concat!(…)`): the signatures come
    /// from `declare "…";`, checked against the text at compile time.
    Expr(Box<Expr>),
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
/// crate = path::to::cudars_core;                       (optional, first)
/// #[attributes] VIS struct NAME = "path/to/file.cu";   (or: = source "…";)
///                                                      (or: = source EXPR; declare "…";)
/// type CName = RustType;                               (any number)
/// unsafe type CName = RustType;                        (a C type the macro cannot check)
/// only kernel_a, kernel_b;                             (optional)
/// ```
pub(crate) struct Input {
    /// `crate = path;`: where the generated code finds `cudars-core` (serde's
    /// `#[serde(crate = "…")]` convention); `::cudars_core` when not given.
    /// `cudars_core::kernels!` passes its own `$crate`, so that the macro works
    /// under a renamed dependency and through the `cudars` umbrella.
    pub(super) krate: Option<proc_macro2::TokenStream>,
    pub(super) attrs: Vec<Attribute>,
    pub(super) vis: Visibility,
    pub(super) name: Ident,
    pub(super) origin: Origin,
    pub(super) mappings: Vec<Mapping>,
    /// The kernels wanted (`only a, b;`); all when `None`.
    pub(super) only: Option<Vec<Ident>>,
    /// `declare "…";`: the declarations of a source given as an expression.
    pub(super) declare: Option<LitStr>,
}

/// What the macro expects after `=`.
const EXPECTED: &str = "expected the source's path (a string literal relative to the crate's \
     manifest directory), `source \"…\"` (the text) or `source EXPR` (a constant `&str` \
     expression, with `declare \"…\";`)";

impl Parse for Input {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let krate = if input.peek(Token![crate]) && input.peek2(Token![=]) {
            let kw = input.parse::<Token![crate]>()?;
            input.parse::<Token![=]>()?;
            // The path's tokens as given, up to the `;` (a `$crate` from a
            // `macro_rules!` caller included, with its hygiene).
            let path = input.step(|cursor| {
                let mut rest = *cursor;
                let mut tokens = proc_macro2::TokenStream::new();
                while let Some((tt, next)) = rest.token_tree() {
                    if matches!(&tt, proc_macro2::TokenTree::Punct(p) if p.as_char() == ';') {
                        return Ok((tokens, rest));
                    }
                    tokens.extend(std::iter::once(tt));
                    rest = next;
                }
                Err(cursor.error("expected `;` after `crate = path`"))
            })?;
            input.parse::<Token![;]>()?;
            if path.is_empty() {
                return Err(syn::Error::new(
                    kw.span,
                    "`crate = path;` needs the path to cudars-core (`crate = ::cudars::core;`)",
                ));
            }
            Some(path)
        } else {
            None
        };
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        input.parse::<Token![struct]>()?;
        let name: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        let origin = if input.peek(kw::source) {
            input.parse::<kw::source>()?;
            if input.peek(LitStr) {
                Origin::Inline(input.parse()?)
            } else {
                Origin::Expr(Box::new(input.parse()?))
            }
        } else if input.peek(LitStr) {
            Origin::File(input.parse()?)
        } else {
            let expr: Expr = input
                .parse()
                .map_err(|e| syn::Error::new(e.span(), EXPECTED))?;
            let include = matches!(&expr, Expr::Macro(m) if m.mac.path.is_ident("include_str"));
            return Err(syn::Error::new_spanned(
                expr,
                if include {
                    "`kernels!` reads the file itself: write its path relative to the crate's \
                     manifest directory, `struct Name = \"kernels/ops.cu\";` (embedded as \
                     `include_str!` would, and its signatures checked at compile time)"
                } else {
                    EXPECTED
                },
            ));
        };
        input.parse::<Token![;]>()?;
        let mut mappings: Vec<Mapping> = Vec::new();
        let mut only: Option<Vec<Ident>> = None;
        let mut declare: Option<LitStr> = None;
        while !input.is_empty() {
            if input.peek(kw::declare) {
                let kw = input.parse::<kw::declare>()?;
                if declare.is_some() {
                    return Err(syn::Error::new(kw.span, "`declare` is given twice"));
                }
                if !matches!(origin, Origin::Expr(_)) {
                    return Err(syn::Error::new(
                        kw.span,
                        "`declare` is for a source the macro cannot read (`source EXPR`): \
                         the declarations of a file or an inline source are read from it",
                    ));
                }
                declare = Some(input.parse()?);
                input.parse::<Token![;]>()?;
                continue;
            }
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
            krate,
            attrs,
            vis,
            name,
            origin,
            mappings,
            only,
            declare,
        })
    }
}
