//! What the headers' text says and bindgen does not: the `#define`s that map a
//! public name to a versioned or per-thread symbol, the `#define NAME
//! ((TYPE)VALUE)` constants bindgen cannot evaluate, and nvJitLink's
//! `static inline` public names.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};

use super::ident;
use crate::codegen::doc_lines;

/// A `#define A <body>` that maps a public name to a symbol.
#[derive(Debug, Clone)]
pub(super) struct Mapping {
    /// The symbol the public name expands to.
    pub(super) target: String,
    /// `Some("_ptds")`/`Some("_ptsz")` when the mapping goes through a per-thread macro.
    pub(super) per_thread: Option<&'static str>,
}

/// Reads `#define NAME TARGET` and `#define NAME __..._PTDS(TARGET)` lines.
pub(super) fn read_defines(text: &str) -> BTreeMap<String, Vec<Mapping>> {
    let mut out: BTreeMap<String, Vec<Mapping>> = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim_start();
        let Some(rest) = line.strip_prefix('#') else {
            continue;
        };
        let rest = rest.trim_start();
        let Some(rest) = rest.strip_prefix("define") else {
            continue;
        };
        if !rest.starts_with([' ', '\t']) {
            continue;
        }
        let mut parts = rest.split_whitespace();
        let Some(name) = parts.next() else { continue };
        if name.contains('(') || !is_ident(name) {
            continue;
        }
        let body: String = parts.collect::<Vec<_>>().join("");
        let body = body.split("//").next().unwrap_or("").to_string();
        let (target, per_thread) = if let Some(inner) = macro_arg(&body, "PTDS") {
            (inner, Some("_ptds"))
        } else if let Some(inner) = macro_arg(&body, "PTSZ") {
            (inner, Some("_ptsz"))
        } else {
            (body.clone(), None)
        };
        if is_ident(&target) {
            out.entry(name.to_string())
                .or_default()
                .push(Mapping { target, per_thread });
        }
    }
    out
}

/// `__CUDA_API_PTDS(x)` / `__CUDART_API_PTSZ(x)` → `x`.
fn macro_arg(body: &str, which: &str) -> Option<String> {
    let open = body.find('(')?;
    let head = &body[..open];
    if !(head.starts_with("__CUDA") && head.ends_with(&format!("_{which}"))) {
        return None;
    }
    let inner = body[open + 1..].strip_suffix(')')?;
    Some(inner.to_string())
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// Splits `name_v12` into (`name`, Some(12)).
pub(super) fn split_version_suffix(s: &str) -> (&str, Option<u32>) {
    if let Some(pos) = s.rfind("_v") {
        let num = &s[pos + 2..];
        if !num.is_empty() && num.chars().all(|c| c.is_ascii_digit()) {
            return (&s[..pos], num.parse().ok());
        }
    }
    (s, None)
}

/// The `#define NAME ((TYPE)VALUE)` constants bindgen cannot evaluate
/// (`CU_STREAM_LEGACY`, `CU_LAUNCH_PARAM_END`, `cudaCpuDeviceId`, …), as Rust
/// constants of that type.
pub(super) fn cast_defines(
    header_text: &str,
    aliases: &BTreeMap<String, syn::Type>,
    consts: &BTreeSet<String>,
) -> Result<TokenStream, String> {
    let mut out = TokenStream::new();
    let mut seen = BTreeSet::new();
    for line in header_text.lines() {
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix("define") else {
            continue;
        };
        let mut parts = rest.split_whitespace();
        let Some(name) = parts.next() else { continue };
        let body: String = parts
            .take_while(|p| !p.starts_with("/*") && !p.starts_with("//"))
            .collect();
        let Some(inner) = body.strip_prefix("((").and_then(|b| b.strip_suffix(')')) else {
            continue;
        };
        let Some((ty, value)) = inner.split_once(')') else {
            continue;
        };
        let rust_ty = match ty {
            "void*" => quote! { *mut ::core::ffi::c_void },
            "int" => quote! { ::core::ffi::c_int },
            t if is_ident(t) && aliases.contains_key(t) => ident(t)?.into_token_stream(),
            _ => continue,
        };
        let digits = value.strip_prefix('-').unwrap_or(value);
        let value_ok = is_ident(value) && consts.contains(value)
            || digits.strip_prefix("0x").map_or_else(
                || !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()),
                |h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()),
            );
        if !is_ident(name) || consts.contains(name) || !value_ok || !seen.insert(name.to_string()) {
            continue;
        }
        let negative = value.starts_with('-');
        if negative && ty == "void*" {
            continue;
        }
        let magnitude: TokenStream = digits
            .parse()
            .map_err(|e| format!("the value of `#define {name}` ({value}): {e}"))?;
        let value_tokens = if negative {
            quote! { (-#magnitude) }
        } else {
            magnitude
        };
        let doc = doc_lines(&format!(
            "`#define {name} (({ty}){value})` in the C header."
        ));
        let name = ident(name)?;
        out.extend(quote! {
            #doc
            pub const #name: #rust_ty = #value_tokens as #rust_ty;
        });
    }
    Ok(out)
}

/// `nvJitLink.h`'s `static inline nvJitLinkX(...) { return __nvJitLinkX_13_0(...); }` → `nvJitLinkX`.
pub(super) fn nvjitlink_public(symbol: &str, header: &str) -> Option<String> {
    let rest = symbol.strip_prefix("__")?;
    // Drop the `_<major>_<minor>` suffix.
    let mut parts: Vec<&str> = rest.rsplitn(3, '_').collect();
    if parts.len() != 3
        || !parts[0].chars().all(|c| c.is_ascii_digit())
        || !parts[1].chars().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let public = parts.pop()?.to_string();
    let has_wrapper = header.contains(&format!("return {symbol}"))
        && header
            .lines()
            .any(|l| l.contains("static inline") && l.contains(&format!(" {public}")));
    has_wrapper.then_some(public)
}
