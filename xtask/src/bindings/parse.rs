//! One bindgen pass: an API's headers of one CUDA major, parsed for one OS,
//! into a [`Parsed`]: bindgen's items (types, constants, layout checks), the
//! declared C functions, and one [`EntryGen`] per public name with the symbol
//! and ABI version it resolves at (the driver's from `cudaTypedefs.h`'s `PFN_`
//! typedefs, compared through [`canon_sig`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use quote::{ToTokens, quote};

use super::apis::{Api, Kind, Os, RESULT_ENUMS};
use super::defines::{Mapping, cast_defines, nvjitlink_public, read_defines, split_version_suffix};
use super::ident;
use super::stubs::stub_include_dir;
use crate::headers;

/// A declared C function, as bindgen saw it (after macro expansion).
#[derive(Clone)]
pub(super) struct CFn {
    pub(super) symbol: String,
    pub(super) inputs: Vec<(String, syn::Type)>,
    pub(super) output: Option<syn::Type>,
}

/// One entry point of the generated table.
#[derive(Clone)]
pub(super) struct EntryGen {
    /// The public C name (what the Rust function is called).
    pub(super) name: String,
    /// The base name `cuGetProcAddress` takes (driver) or the symbol (others).
    pub(super) base: String,
    /// The exported symbol.
    pub(super) symbol: String,
    /// The ABI version (driver; 0 when `cudaTypedefs.h` has none that fits).
    pub(super) version: u32,
    /// The per-thread default stream symbol, when there is one.
    pub(super) ptds_symbol: Option<String>,
    /// The per-thread ABI version (driver; 0 when none).
    pub(super) ptds_version: u32,
    pub(super) func: usize,
    /// Declared on this OS only (`cuWGLGetDevice`: Windows): its function is
    /// compiled there only, its table entry is everywhere (see [`align_entries`](super::merge::align_entries)).
    pub(super) only: Option<Os>,
}

/// What bindgen and the headers of one major give for one API.
pub(super) struct Parsed {
    /// `13.0`, `12.9`.
    pub(super) cuda_version: String,
    /// Types, constants, impls and layout checks (the `#define` casts included).
    pub(super) items: Vec<syn::Item>,
    /// The declared functions.
    pub(super) fns: Vec<CFn>,
    /// One per public name, sorted by it; `func` indexes `fns`.
    pub(super) entries: Vec<EntryGen>,
    /// Type aliases, to compare signatures.
    pub(super) aliases: BTreeMap<String, syn::Type>,
    /// The result enum's `name()` table.
    pub(super) name_impl: Vec<syn::Item>,
}

/// The workspace's MSRV (`rust-version` in Cargo.toml, which xtask inherits) as
/// bindgen's target, so the generated code uses nothing newer than the crates
/// promise.
fn msrv_target() -> Result<bindgen::RustTarget, String> {
    let msrv = env!("CARGO_PKG_RUST_VERSION");
    let mut parts = msrv.split('.').map(str::parse::<u64>);
    let target = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(Ok(1)), Some(Ok(minor)), patch, None) => {
            let patch = match patch {
                None => 0,
                Some(Ok(p)) => p,
                Some(Err(_)) => {
                    return Err(format!("rust-version `{msrv}` is not 1.MINOR[.PATCH]"));
                }
            };
            bindgen::RustTarget::stable(minor, patch)
                .map_err(|e| format!("rust-version {msrv} as bindgen's target: {e}"))?
        }
        _ => return Err(format!("rust-version `{msrv}` is not 1.MINOR[.PATCH]")),
    };
    Ok(target)
}

/// Gives each C enum of `items` (bindgen's newtypes, `struct E(pub c_int)`)
/// the integer type it has in `host` (the Linux parse), and its constants
/// `host`'s values. MSVC makes every C enum an `int`, GCC an `unsigned int`
/// unless a value is negative: the same 4 bytes, passed the same way, and the
/// same bits for every value, so one Rust type per enum serves both OSes and
/// code that reads `.0` compiles for either. Anything else (another width, a
/// constant `host` lacks) is an error: that would be a real difference.
fn unify_enum_types(items: &mut [syn::Item], host: &[syn::Item]) -> Result<(), String> {
    let host_enums = enum_newtypes(host);
    let host_consts: BTreeMap<String, &syn::ItemConst> = host
        .iter()
        .filter_map(|i| match i {
            syn::Item::Const(c) => Some((c.ident.to_string(), c)),
            _ => None,
        })
        .collect();
    let mut changed = BTreeSet::new();
    for item in items.iter_mut() {
        let syn::Item::Struct(st) = item else {
            continue;
        };
        let name = st.ident.to_string();
        let (Some(field), Some(host_ty)) = (enum_field(st), host_enums.get(&name)) else {
            continue;
        };
        if field.ty.to_token_stream().to_string() != host_ty.to_token_stream().to_string() {
            field.ty = host_ty.clone();
            changed.insert(name);
        }
    }
    for item in items.iter_mut() {
        let syn::Item::Const(c) = item else { continue };
        let ty = c.ty.to_token_stream().to_string();
        if !changed.contains(&ty) {
            continue;
        }
        let same = host_consts
            .get(&c.ident.to_string())
            .filter(|h| h.ty.to_token_stream().to_string() == ty)
            .ok_or_else(|| {
                format!(
                    "the enum constant {} ({ty}) has no counterpart of that type on Linux",
                    c.ident
                )
            })?;
        c.expr = same.expr.clone();
    }
    Ok(())
}

/// bindgen's C enums among `items` (`#[repr(transparent)] struct E(pub c_int)`
/// or `c_uint`), by name, with their integer type.
fn enum_newtypes(items: &[syn::Item]) -> BTreeMap<String, syn::Type> {
    let mut out = BTreeMap::new();
    for item in items {
        if let syn::Item::Struct(st) = item {
            let name = st.ident.to_string();
            let mut st = st.clone();
            if let Some(f) = enum_field(&mut st) {
                out.insert(name, f.ty.clone());
            }
        }
    }
    out
}

/// The one field of a C enum's newtype (see [`enum_newtypes`]).
fn enum_field(st: &mut syn::ItemStruct) -> Option<&mut syn::Field> {
    let transparent = st.attrs.iter().any(|a| {
        a.path().is_ident("repr") && a.meta.to_token_stream().to_string().contains("transparent")
    });
    let syn::Fields::Unnamed(fields) = &mut st.fields else {
        return None;
    };
    if !transparent || fields.unnamed.len() != 1 {
        return None;
    }
    let field = fields.unnamed.first_mut()?;
    let ty = field.ty.to_token_stream().to_string().replace(' ', "");
    matches!(ty.as_str(), "::core::ffi::c_int" | "::core::ffi::c_uint").then_some(field)
}

pub(super) fn parse_api(
    major: u32,
    pins: &headers::MajorPins,
    inc: &Path,
    api: &Api,
    os: Os,
    host: Option<&Parsed>,
) -> Result<Parsed, String> {
    let wrapper: String = api
        .headers
        .iter()
        .map(|h| format!("#include <{h}>\n"))
        .collect();
    let mut builder = bindgen::Builder::default()
        .header_contents("cuda_rs_bindgen_wrapper.h", &wrapper)
        .clang_arg(format!("-I{}", inc.display()))
        .clang_arg(format!("-I{}", stub_include_dir(os)?.display()))
        .clang_arg(format!("--target={}", os.clang_target()))
        .default_enum_style(bindgen::EnumVariation::NewType {
            is_bitfield: false,
            is_global: true,
        })
        .prepend_enum_name(false)
        .derive_default(true)
        .derive_eq(true)
        .derive_hash(true)
        .generate_comments(false)
        .layout_tests(api.layout_tests)
        .ctypes_prefix("::core::ffi")
        .use_core()
        .merge_extern_blocks(true)
        .rust_edition(bindgen::RustEdition::Edition2024)
        .formatter(bindgen::Formatter::None);
    builder = builder.rust_target(msrv_target()?);
    for h in api.headers.iter().chain(api.extra_files) {
        builder = builder.allowlist_file(format!(".*[/\\\\]{}", regex_escape(h)));
    }
    let bindings = builder.generate().map_err(|e| {
        format!(
            "bindgen over {} (CUDA {major}, {}): {e}",
            api.headers.join(", "),
            os.clang_target()
        )
    })?;
    let code = bindings.to_string();
    // bindgen writes absolute header paths nowhere in its output, but be sure.
    let inc_str = inc.display().to_string();
    if code.contains(&inc_str) {
        return Err(format!(
            "bindgen output for {} names the local folder {inc_str}",
            api.module
        ));
    }
    let mut file: syn::File = syn::parse_str(&code)
        .map_err(|e| format!("parsing bindgen's output for {}: {e}", api.module))?;
    if let Some(host) = host {
        unify_enum_types(&mut file.items, &host.items)
            .map_err(|e| format!("{} (CUDA {major}, {}): {e}", api.module, os.clang_target()))?;
    }

    let mut kept: Vec<syn::Item> = Vec::new();
    let mut fns: Vec<CFn> = Vec::new();
    let mut aliases: BTreeMap<String, syn::Type> = BTreeMap::new();
    let mut pfns: BTreeMap<String, syn::TypeBareFn> = BTreeMap::new();
    let mut result_consts: Vec<(String, String, syn::Expr)> = Vec::new();
    let mut consts: BTreeSet<String> = BTreeSet::new();
    for item in file.items {
        match item {
            syn::Item::ForeignMod(fm) => {
                // The dispatching functions call through `extern "C"` pointers.
                // That is every function's ABI on both OSes: on x86_64 Windows the
                // headers' `__stdcall` (`CUDAAPI`, `CUDARTAPI`, `CUBLASWINAPI`, …)
                // is ignored by the compiler and the one C calling convention
                // applies (`extern "system"` is the same there). A target where it
                // is not ignored (32-bit x86) would need the ABI carried per entry.
                let abi = fm.abi.name.as_ref().map(syn::LitStr::value);
                if abi.as_deref() != Some("C") {
                    return Err(format!(
                        "{} (CUDA {major}, {}): bindgen declared functions with the ABI {abi:?}, \
                         but the dispatch table calls through `extern \"C\"`",
                        api.module,
                        os.clang_target()
                    ));
                }
                for fi in fm.items {
                    if let syn::ForeignItem::Fn(f) = fi {
                        if f.sig.variadic.is_some() {
                            eprintln!("regen-bindings: skipping variadic {}", f.sig.ident);
                            continue;
                        }
                        let mut inputs = Vec::new();
                        for (i, arg) in f.sig.inputs.iter().enumerate() {
                            if let syn::FnArg::Typed(pt) = arg {
                                let name = match &*pt.pat {
                                    syn::Pat::Ident(pi) => pi.ident.to_string(),
                                    _ => format!("arg{i}"),
                                };
                                inputs.push((name, (*pt.ty).clone()));
                            }
                        }
                        let output = match &f.sig.output {
                            syn::ReturnType::Default => None,
                            syn::ReturnType::Type(_, t) => Some((**t).clone()),
                        };
                        fns.push(CFn {
                            symbol: f.sig.ident.to_string(),
                            inputs,
                            output,
                        });
                    }
                }
            }
            syn::Item::Type(t) => {
                let name = t.ident.to_string();
                if let Some(bf) = option_fn(&t.ty) {
                    if name.starts_with("PFN_") {
                        pfns.insert(name.clone(), bf);
                    }
                }
                aliases.insert(name, (*t.ty).clone());
                kept.push(syn::Item::Type(t));
            }
            syn::Item::Const(c) => {
                let ty = c.ty.to_token_stream().to_string();
                if RESULT_ENUMS.contains(&ty.as_str()) {
                    if let syn::Expr::Call(call) = &*c.expr {
                        if let Some(arg) = call.args.first() {
                            result_consts.push((ty.clone(), c.ident.to_string(), arg.clone()));
                        }
                    }
                }
                consts.insert(c.ident.to_string());
                kept.push(syn::Item::Const(c));
            }
            other => kept.push(other),
        }
    }

    // The `#define` mappings of the API's headers.
    let mut defines: BTreeMap<String, Vec<Mapping>> = BTreeMap::new();
    let mut header_text = String::new();
    for h in api.headers.iter().chain(api.extra_files) {
        let path = inc.join(h);
        let text =
            fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        for (k, v) in read_defines(&text) {
            defines.entry(k).or_default().extend(v);
        }
        header_text.push_str(&text);
    }
    let symbols: BTreeSet<String> = fns.iter().map(|f| f.symbol.clone()).collect();
    // symbol -> (public name, per-thread suffix)
    let mut public: BTreeMap<String, (String, Option<&'static str>)> = BTreeMap::new();
    for (name, maps) in &defines {
        for m in maps {
            if symbols.contains(&m.target) && (!symbols.contains(name) || name == &m.target) {
                let e = public
                    .entry(m.target.clone())
                    .or_insert_with(|| (name.clone(), m.per_thread));
                if e.1.is_none() {
                    e.1 = m.per_thread;
                }
                if name != &m.target && e.0 == m.target {
                    e.0 = name.clone();
                }
            }
        }
    }

    let mut entries: Vec<EntryGen> = Vec::new();
    let mut seen_names = BTreeSet::new();
    let mut no_pfn = Vec::new();
    for (i, f) in fns.iter().enumerate() {
        let (mut name, per_thread) = public
            .get(&f.symbol)
            .cloned()
            .unwrap_or_else(|| (f.symbol.clone(), None));
        if api.module == "nvjitlink" {
            if let Some(p) = nvjitlink_public(&f.symbol, &header_text) {
                name = p;
            }
        }
        if !seen_names.insert(name.clone()) {
            return Err(format!(
                "{}: two symbols map to the public name {name}",
                api.module
            ));
        }
        let ptds_symbol = per_thread.map(|suf| format!("{}{suf}", f.symbol));
        let mut e = EntryGen {
            name,
            base: f.symbol.clone(),
            symbol: f.symbol.clone(),
            version: 0,
            ptds_symbol,
            ptds_version: 0,
            func: i,
            only: None,
        };
        if api.kind == Kind::Driver {
            let (base, suffix) = split_version_suffix(&f.symbol);
            e.base = base.to_string();
            let sig = canon_sig(
                &f.inputs.iter().map(|(_, t)| t.clone()).collect::<Vec<_>>(),
                f.output.as_ref(),
                &aliases,
            );
            let pick = |per_thread: bool| -> Option<u32> {
                let mut vs: Vec<u32> = pfns
                    .iter()
                    .filter_map(|(pname, bf)| {
                        let rest = pname
                            .strip_prefix("PFN_")?
                            .strip_prefix(base)?
                            .strip_prefix("_v")?;
                        let (num, pt) = match rest.split_once('_') {
                            Some((n, "ptds" | "ptsz")) => (n, true),
                            Some(_) => return None,
                            None => (rest, false),
                        };
                        if pt != per_thread {
                            return None;
                        }
                        let v: u32 = num.parse().ok()?;
                        let tys: Vec<syn::Type> = bf.inputs.iter().map(|a| a.ty.clone()).collect();
                        let out = match &bf.output {
                            syn::ReturnType::Default => None,
                            syn::ReturnType::Type(_, t) => Some((**t).clone()),
                        };
                        (canon_sig(&tys, out.as_ref(), &aliases) == sig).then_some(v)
                    })
                    .collect();
                vs.sort_unstable();
                match suffix {
                    // A suffixed symbol takes the newest ABI of its shape, but
                    // the newest ABIs go to newer suffixes first: where the
                    // header also exports `cuGraphAddNode_v3` (13.4's ABI, the
                    // same C shape), `cuGraphAddNode_v2` keeps 12.3's, as
                    // the headers before `_v3` said.
                    Some(n) => {
                        let newer = symbols
                            .iter()
                            .filter(|s| {
                                let (b, m) = split_version_suffix(s);
                                b == base && m.is_some_and(|m| m > n)
                            })
                            .count();
                        vs.len()
                            .checked_sub(1 + newer)
                            .map(|i| vs[i])
                            .or_else(|| vs.first().copied())
                    }
                    None => vs.first().copied(),
                }
            };
            match pick(false) {
                Some(v) => e.version = v,
                None => no_pfn.push(f.symbol.clone()),
            }
            if let Some(v) = pick(true) {
                e.ptds_version = v;
            }
        }
        entries.push(e);
    }
    if !no_pfn.is_empty() {
        eprintln!(
            "regen-bindings: CUDA {major} driver: {} functions have no matching PFN in cudaTypedefs.h \
             and resolve by their exported symbol: {}",
            no_pfn.len(),
            no_pfn.join(", ")
        );
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));

    let casts = cast_defines(&header_text, &aliases, &consts)?;
    let casts: syn::File = syn::parse2(casts)
        .map_err(|e| format!("the `#define` casts of {} do not parse: {e}", api.module))?;
    kept.extend(casts.items);

    // name() for the result enum: the first one the headers declare, and for
    // cuFile also its own (`CUfileOpError`, after the `CUresult` of `cuda.h`).
    let mut enum_names: Vec<&str> = Vec::new();
    for (ty, _, _) in &result_consts {
        if !enum_names.contains(&ty.as_str()) {
            enum_names.push(ty);
        }
    }
    if api.module != "cufile" {
        enum_names.truncate(1);
    }
    let mut name_impl = Vec::new();
    for enum_name in enum_names {
        let mut seen = BTreeSet::new();
        let arms = result_consts
            .iter()
            .filter(|(ty, _, val)| {
                ty == enum_name && seen.insert(val.to_token_stream().to_string())
            })
            .map(|(_, cname, val)| quote! { #val => Some(#cname), });
        let enum_ident = ident(enum_name)?;
        let ts = quote! {
            impl #enum_ident {
                /// The C name of this code, when the headers know it.
                pub const fn name(self) -> Option<&'static str> {
                    match self.0 {
                        #(#arms)*
                        _ => None,
                    }
                }
            }
        };
        name_impl.push(
            syn::parse2::<syn::Item>(ts)
                .map_err(|e| format!("the `name()` impl of {} does not parse: {e}", api.module))?,
        );
    }
    Ok(Parsed {
        cuda_version: pins.cuda_version.clone(),
        items: kept,
        fns,
        entries,
        aliases,
        name_impl,
    })
}

/// `Option<unsafe extern "C" fn(..)>` → the fn type.
fn option_fn(ty: &syn::Type) -> Option<syn::TypeBareFn> {
    let syn::Type::Path(p) = ty else { return None };
    let seg = p.path.segments.last()?;
    if seg.ident != "Option" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(ab) = &seg.arguments else {
        return None;
    };
    match ab.args.first()? {
        syn::GenericArgument::Type(syn::Type::BareFn(bf)) => Some(bf.clone()),
        _ => None,
    }
}

/// A signature with every type alias resolved, as a string to compare.
pub(super) fn canon_sig(
    inputs: &[syn::Type],
    output: Option<&syn::Type>,
    aliases: &BTreeMap<String, syn::Type>,
) -> String {
    let mut s = String::from("(");
    for t in inputs {
        s.push_str(&canon(t, aliases, 0));
        s.push(',');
    }
    s.push_str(")->");
    if let Some(o) = output {
        s.push_str(&canon(o, aliases, 0));
    }
    s
}

fn canon(t: &syn::Type, aliases: &BTreeMap<String, syn::Type>, depth: u32) -> String {
    if depth > 16 {
        return t.to_token_stream().to_string();
    }
    match t {
        syn::Type::Ptr(p) => {
            let m = if p.mutability.is_some() {
                "*mut "
            } else {
                "*const "
            };
            format!("{m}{}", canon(&p.elem, aliases, depth + 1))
        }
        syn::Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            let seg = &p.path.segments[0];
            let name = seg.ident.to_string();
            if matches!(seg.arguments, syn::PathArguments::None) {
                if let Some(a) = aliases.get(&name) {
                    if option_fn(a).is_none() {
                        return canon(a, aliases, depth + 1);
                    }
                }
            }
            t.to_token_stream().to_string().replace(' ', "")
        }
        syn::Type::Path(p) => {
            // `::core::ffi::c_uint` and friends.
            p.path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default()
        }
        other => other.to_token_stream().to_string().replace(' ', ""),
    }
}

/// Whether the alias `name` resolves to `target`.
pub(super) fn aliases_to(name: &str, target: &str, aliases: &BTreeMap<String, syn::Type>) -> bool {
    let mut cur = name.to_string();
    for _ in 0..8 {
        if cur == target {
            return true;
        }
        match aliases.get(&cur) {
            Some(t) => cur = t.to_token_stream().to_string(),
            None => break,
        }
    }
    aliases
        .get(target)
        .is_some_and(|t| t.to_token_stream().to_string() == name)
}

fn regex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bindgen_targets_the_workspace_msrv() {
        let target = super::msrv_target().unwrap();
        let msrv = env!("CARGO_PKG_RUST_VERSION");
        let shown = target.to_string();
        assert!(
            shown == msrv || shown == format!("{msrv}.0"),
            "bindgen targets {shown}, rust-version is {msrv}"
        );
    }

    /// Windows' `int` enums take Linux's type and values; a constant Linux
    /// lacks is an error, and other newtypes are left alone.
    #[test]
    fn enums_keep_the_linux_integer_type_on_windows() {
        let host: Vec<syn::Item> = vec![
            syn::parse_quote! { #[repr(transparent)] pub struct E(pub ::core::ffi::c_uint); },
            syn::parse_quote! { pub const E_MAX: E = E(4294967295); },
            syn::parse_quote! { #[repr(transparent)] pub struct S(pub ::core::ffi::c_int); },
        ];
        let mut win: Vec<syn::Item> = vec![
            syn::parse_quote! { #[repr(transparent)] pub struct E(pub ::core::ffi::c_int); },
            syn::parse_quote! { pub const E_MAX: E = E(-1); },
            syn::parse_quote! { #[repr(transparent)] pub struct S(pub ::core::ffi::c_int); },
        ];
        unify_enum_types(&mut win, &host).unwrap();
        let text = |items: &[syn::Item]| {
            items
                .iter()
                .map(|i| i.to_token_stream().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(text(&win), text(&host));

        let mut extra: Vec<syn::Item> = vec![
            syn::parse_quote! { #[repr(transparent)] pub struct E(pub ::core::ffi::c_int); },
            syn::parse_quote! { pub const E_NEW: E = E(-1); },
        ];
        let err = unify_enum_types(&mut extra, &host).unwrap_err();
        assert!(err.contains("E_NEW"), "{err}");
    }
}
