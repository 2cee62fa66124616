//! The macro's input and the code it generates.

use std::collections::HashSet;
use std::path::PathBuf;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Ident, LitStr, Token, Type, Visibility};

use crate::cparse::{self, Base, Kernel, ParamKind, Scalar};

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

/// `type CName = RustType;`
pub(crate) struct Mapping {
    pub(crate) c_name: Ident,
    pub(crate) rust: Type,
}

/// The macro's input:
///
/// ```text
/// #[attributes] VIS struct NAME = "path/to/file.cu";   (or: = source "…";)
/// type CName = RustType;                               (any number)
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
            mappings.push(Mapping { c_name, rust });
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

/// A C type resolved to Rust: a built-in scalar, or the user's mapped type.
enum Resolved {
    Scalar(TokenStream),
    Mapped(Type),
}

struct Ctx<'a> {
    input: &'a Input,
    file: String,
    used: HashSet<String>,
}

impl Ctx<'_> {
    fn span(&self) -> Span {
        match &self.input.origin {
            Origin::File(l) | Origin::Inline(l) => l.span(),
        }
    }

    fn error(&self, message: String) -> syn::Error {
        syn::Error::new(self.span(), message)
    }

    fn base(&mut self, k: &Kernel, index: usize, decl: &str, b: &Base) -> syn::Result<Resolved> {
        match b {
            Base::Scalar(s) => Ok(Resolved::Scalar(scalar_type(*s))),
            Base::Named(n) => match self.input.mappings.iter().find(|m| m.c_name == n) {
                Some(m) => {
                    self.used.insert(n.clone());
                    Ok(Resolved::Mapped(m.rust.clone()))
                }
                None => {
                    let hint = if n == "void" {
                        "`void*` has no element type: name one (`type void = u8;`), or declare the \
                         pointer's real element type"
                            .to_string()
                    } else {
                        format!(
                            "the C type `{n}` has no Rust type: name a `Pod` type of the same layout \
                             (`type {n} = MyType;`)"
                        )
                    };
                    Err(self.error(format!(
                        "{} line {}: kernel `{}`, parameter {index} (`{decl}`): {hint}",
                        self.file, k.pos.line, k.name
                    )))
                }
            },
        }
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
    };
    let parsed = cparse::parse(&text).map_err(|e| ctx.error(format!("{} {e}", ctx.file)))?;
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
            let gp = match &p.kind {
                ParamKind::Value(b) => match ctx.base(k, i, &p.decl, b)? {
                    Resolved::Scalar(s) => GenParam {
                        sig: s.clone(),
                        arg: quote!(#id: #s),
                        value: quote!(#id),
                    },
                    Resolved::Mapped(t) => GenParam {
                        sig: quote!(::cudars_core::Val<#t>),
                        arg: quote!(#id: &#t),
                        value: quote!(*#id),
                    },
                },
                ParamKind::Pointer { elem, constant } => {
                    let t = match ctx.base(k, i, &p.decl, elem)? {
                        Resolved::Scalar(s) => s,
                        Resolved::Mapped(t) => quote!(#t),
                    };
                    if *constant {
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
                    }
                }
            };
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
            /// A kernel is arbitrary device code. The signature fixes the count,
            /// sizes and kinds of the arguments (checked against the kernel when
            /// it was loaded), and the borrows keep the memory alive and writable
            /// views exclusive; what remains for the caller: the kernel must stay
            /// within the views it is given (their lengths bound what the
            /// indices, counts and strides among the other arguments let it
            /// touch), must write only through its non-`const` pointers, and must
            /// not race with work on other streams that uses the same memory. On a
            /// driver before CUDA 12.4 the signature itself is unchecked and the
            /// source must be the one compiled.
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
    Ok(quote! {
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
            type void = u8;
        "##)
        .unwrap();
        let code = code.replace(' ', "");
        assert!(code.contains("pubstructK{k:::cudars_core::TypedKernel<(::cudars_core::ConstPtr<f32>,::cudars_core::MutPtr<f32>,::cudars_core::Val<crate::P>,u32,::cudars_core::MutPtr<u8>,)>,}"), "{code}");
        assert!(code.contains("x:::cudars_core::DeviceView<'_,f32>,y:::cudars_core::DeviceViewMut<'_,f32>,p:&crate::P,n:u32,raw:::cudars_core::DeviceViewMut<'_,u8>"), "{code}");
        assert!(code.contains("(x,y,*p,n,raw,)"), "{code}");
        assert!(code.contains("with_param_names(code.get_kernel(\"k\")?,&[\"constfloat*x\",\"float*y\",\"Pp\",\"unsignedn\",\"void*raw\"])"), "{code}");
        assert!(code.contains("pubfnk_kernel(&self)"), "{code}");
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
            "the inline source line 3: kernel `k`, parameter 1 (`Params p`): the C type `Params` has no Rust type: name a `Pod` type of the same layout (`type Params = MyType;`)",
        );
        fails(
            r##"struct K = source r#"extern "C" __global__ void k(const void* p) {}"#;"##,
            "`void*` has no element type: name one (`type void = u8;`)",
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
