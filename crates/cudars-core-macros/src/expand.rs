//! The code the macro generates: for each kernel a typed launch method and an
//! accessor, and the struct that compiles and loads them.
//!
//! The parts: [`input`] (the macro's input syntax) and [`params`] (each kernel
//! parameter's C type to its Rust type, with the compile-time checks of the
//! user's type mappings against the source's layouts).

mod declared;
mod input;
mod params;

use std::collections::HashSet;
use std::path::PathBuf;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

pub(crate) use self::input::Input;
use self::input::Origin;
use self::params::Ctx;
use crate::cparse::{self, Kernel, Types};

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

/// Generates the struct and its `impl`, naming the crate as `crate = path;`
/// says (`::cudars_core` when not given): every path the generation writes as
/// `::cudars_core::…` is rewritten in one pass at the end, so that no spelling
/// of it anywhere in the generation can escape the option.
pub(crate) fn expand(input: &Input) -> syn::Result<TokenStream> {
    let out = expand_default_path(input)?;
    Ok(match &input.krate {
        Some(krate) => rename_crate(out, krate),
        None => out,
    })
}

/// Keywords a path may follow (after any other identifier, `::cudars_core`
/// continues a path instead of starting one).
const KEYWORDS_BEFORE_PATH: &[&str] = &[
    "dyn", "impl", "as", "mut", "const", "in", "for", "where", "return", "let", "ref", "move",
    "static", "type", "break", "else", "match", "if", "while", "unsafe",
];

/// `tokens` with each `:: cudars_core` (a path's root) replaced by `krate`.
fn rename_crate(tokens: TokenStream, krate: &TokenStream) -> TokenStream {
    use proc_macro2::{Group, TokenTree};
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out: Vec<TokenTree> = Vec::with_capacity(trees.len());
    let mut i = 0;
    while i < trees.len() {
        let root = match (&trees[i], trees.get(i + 1), trees.get(i + 2)) {
            (TokenTree::Punct(a), Some(TokenTree::Punct(b)), Some(TokenTree::Ident(id))) => {
                a.as_char() == ':'
                    && a.spacing() == proc_macro2::Spacing::Joint
                    && b.as_char() == ':'
                    && id == "cudars_core"
                    // Not the tail of a longer path (`a::cudars_core`); after
                    // a keyword (`dyn ::cudars_core::…`), a root.
                    && !matches!(out.last(), Some(TokenTree::Ident(p)) if !KEYWORDS_BEFORE_PATH.contains(&p.to_string().as_str()))
            }
            _ => false,
        };
        if root {
            out.extend(krate.clone());
            i += 3;
            continue;
        }
        match &trees[i] {
            TokenTree::Group(g) => {
                let mut inner = Group::new(g.delimiter(), rename_crate(g.stream(), krate));
                inner.set_span(g.span());
                out.push(TokenTree::Group(inner));
            }
            t => out.push(t.clone()),
        }
        i += 1;
    }
    out.into_iter().collect()
}

/// [`expand`] with the crate at `::cudars_core`.
fn expand_default_path(input: &Input) -> syn::Result<TokenStream> {
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
        Origin::Expr(expr) => {
            let shown = quote!(#expr).to_string();
            let Some(decl) = &input.declare else {
                return Err(syn::Error::new_spanned(
                    expr,
                    format!(
                        "the macro reads the kernels' signatures when the crate compiles, and \
                         cannot see the value of `{shown}`: repeat the declarations the \
                         kernels need with `declare r#\"extern \"C\" __global__ void k(…);\"#;` \
                         (checked against the source at compile time), or give the text \
                         itself (`source r#\"…\"#`) or its file (`= \"kernels/ops.cu\"`, \
                         relative to the crate's manifest directory)"
                    ),
                ));
            };
            (
                decl.value(),
                format!("the declarations of `{shown}`"),
                quote!(#expr),
                format!("{}.cu", input.name),
            )
        }
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
    let mut signatures = Vec::new();
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
        let checks: Vec<&TokenStream> = params.iter().map(|p| &p.check).collect();
        let scope = &k.scope;
        signatures.push(quote! {
            ::cudars_core::kernel_check::Signature {
                name: #kname,
                scope: #scope,
                params: &[#(#checks),*],
            }
        });
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
            /// every value's type: read from the source when the crate compiles
            /// (its `typedef`s and `using`s followed; a type the macro cannot
            /// resolve is a compile error), and proven by the compiler when
            /// [`compile`](Self::compile) compiles the source with a check of
            /// them; the sizes are checked again against the kernel when it is
            /// loaded (CUDA 12.4 and later); the borrows keep the memory alive
            /// and writable views exclusive. Left to the caller:
            ///
            /// * the kernel reaches only memory its pointer arguments name, and
            ///   only within their views: the counts, indices and strides among
            ///   the other arguments, and the launch configuration, must keep
            ///   every access inside each view's length (a kernel that touches
            ///   `x[0..n]` needs `n` no greater than `x`'s length);
            /// * it writes only through its non-`const` pointers;
            /// * it does not race with work on other streams that uses the same
            ///   memory;
            /// * the code loaded is code [`compile`](Self::compile) made (as
            ///   `load`, `load_cached` and `load_with` load): its compilation
            ///   proved each kernel's type; code given to
            ///   [`from_object`](Self::from_object) from elsewhere is checked
            ///   for its parameters' sizes only.
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
    let mut checks = ctx.checks.clone();
    if let Origin::Expr(expr) = &input.origin {
        let shown = quote!(#expr).to_string();
        checks.push(declared::check(
            &input.name,
            &shown,
            &declared::declarations(&text),
        ));
    }
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
            /// The kernels' signatures as the launch functions take them:
            /// [`compile`](Self::compile) has the compiler prove each against
            /// [`SOURCE`](Self::SOURCE) (`cudars_core::kernel_check`).
            pub const SIGNATURES: &'static [::cudars_core::kernel_check::Signature] = &[#(#signatures),*];

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
            /// virtual one, `compute_90`, or, unset, for the current device, as
            /// `Program::new` fills it in (NVRTC's default without a GPU); the
            /// driver compiles it for the GPU when it is loaded); through `cache`
            /// when given. A program with
            /// no name is named [`PROGRAM_NAME`](Self::PROGRAM_NAME).
            ///
            /// The source is compiled with a check of
            /// [`SIGNATURES`](Self::SIGNATURES) after it, in the same
            /// translation unit: the compiler, with its own preprocessor and
            /// the options' defines and headers, proves each kernel has the
            /// C-linkage type its launch function takes (the check is part of
            /// the cache key, and of every cached entry).
            ///
            /// # Errors
            /// `cudars_core::Error::InvalidArgument` of kind
            /// `InvalidKind::KernelSignature` naming each kernel whose type the
            /// compiler sees otherwise, and both signatures; the compiler's
            /// error (with its log) or its absence
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
                ::cudars_core::kernel_check::compile(Self::SOURCE, Self::SIGNATURES, options, target, cache)
            }

            /// Loads the kernels from code [`compile`](Self::compile) made
            /// and checks each against its parameters' sizes (code compiled
            /// otherwise has had no check of its types: see the launch
            /// functions' `# Safety`).
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
mod tests;
