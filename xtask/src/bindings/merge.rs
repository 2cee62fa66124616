//! Joining the parses: the Linux and the Windows parse of one major get one
//! entry list ([`align_entries`]), and CUDA 13's and CUDA 12's become the main
//! module and the `cuda12` module of what CUDA 12 declares differently
//! ([`assemble`]).

use std::collections::{BTreeMap, BTreeSet};

use quote::ToTokens;

use super::apis::{Api, Kind, Os};
use super::parse::{CFn, EntryGen, Parsed, canon_sig};
use super::render::{ModuleParts, Row, abi_tokens, defined_name, module_parts};

/// Gives the Linux and the Windows parse of one major the same entry list, so
/// that `table.rs` and `functions.rs` come out as one text for both OSes: the
/// entries both declare, in order, then the Linux-only ones, then the
/// Windows-only ones, each taken (with its C declaration) from the OS that
/// declares it and marked as that OS's. An OS-only function is compiled on its
/// OS only (`#[cfg]`); its table entry is everywhere, and elsewhere simply does
/// not resolve, like any entry point a driver lacks.
pub(super) fn align_entries(linux: &mut Parsed, windows: &mut Parsed) {
    let names =
        |p: &Parsed| -> BTreeSet<String> { p.entries.iter().map(|e| e.name.clone()).collect() };
    let (on_linux, on_windows) = (names(linux), names(windows));
    let own = |p: &Parsed, other: &BTreeSet<String>, os: Os| -> Vec<(EntryGen, CFn)> {
        p.entries
            .iter()
            .filter(|e| !other.contains(&e.name))
            .map(|e| {
                let mut e = e.clone();
                e.only = Some(os);
                let f = p.fns[e.func].clone();
                (e, f)
            })
            .collect()
    };
    let linux_only = own(linux, &on_windows, Os::Linux);
    let windows_only = own(windows, &on_linux, Os::Windows);
    for p in [&mut *linux, &mut *windows] {
        p.entries
            .retain(|e| on_linux.contains(&e.name) && on_windows.contains(&e.name));
        for (e, f) in linux_only.iter().chain(&windows_only) {
            let mut e = e.clone();
            e.func = p.fns.len();
            p.fns.push(f.clone());
            p.entries.push(e);
        }
    }
}

/// The name an item defines or belongs to: a type's, a constant's, an impl's
/// self type, the type a layout check (`const _`) measures.
fn item_key(item: &syn::Item) -> Option<String> {
    if let Some(name) = defined_name(item) {
        return Some(name);
    }
    match item {
        syn::Item::Const(c) => measured_type(&c.expr.to_token_stream()),
        syn::Item::Impl(i) => match &*i.self_ty {
            syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        },
        _ => None,
    }
}

/// The `X` of the first `size_of::<X>` in a layout check.
fn measured_type(ts: &proc_macro2::TokenStream) -> Option<String> {
    let toks: Vec<proc_macro2::TokenTree> = ts.clone().into_iter().collect();
    for (i, t) in toks.iter().enumerate() {
        match t {
            proc_macro2::TokenTree::Group(g) => {
                if let Some(x) = measured_type(&g.stream()) {
                    return Some(x);
                }
            }
            proc_macro2::TokenTree::Ident(id) if id == "size_of" || id == "align_of" => {
                // `size_of` `:` `:` `<` `X`
                if let Some(proc_macro2::TokenTree::Ident(x)) = toks.get(i + 4) {
                    return Some(x.to_string());
                }
            }
            _ => {}
        }
    }
    None
}

/// Every identifier in a token stream.
fn idents(ts: proc_macro2::TokenStream, out: &mut BTreeSet<String>) {
    for t in ts {
        match t {
            proc_macro2::TokenTree::Ident(i) => {
                out.insert(i.to_string());
            }
            proc_macro2::TokenTree::Group(g) => idents(g.stream(), out),
            _ => {}
        }
    }
}

/// Items grouped by [`item_key`], each group as its token text (to compare across
/// majors) and the items themselves (in order).
fn groups(items: &[syn::Item]) -> BTreeMap<String, (String, Vec<&syn::Item>)> {
    let mut out: BTreeMap<String, (String, Vec<&syn::Item>)> = BTreeMap::new();
    for item in items {
        if let Some(k) = item_key(item) {
            let e = out.entry(k).or_default();
            e.0.push_str(&item.to_token_stream().to_string());
            e.0.push('\n');
            e.1.push(item);
        }
    }
    out
}

/// A signature with every alias resolved and pointer mutability erased (`*mut T`
/// and `*const T` are one ABI).
fn abi_sig(f: &CFn, aliases: &BTreeMap<String, syn::Type>) -> String {
    let tys: Vec<syn::Type> = f.inputs.iter().map(|(_, t)| t.clone()).collect();
    canon_sig(&tys, f.output.as_ref(), aliases).replace("*const ", "*mut ")
}

/// The names a function's parameter and return types mention.
fn fn_idents(f: &CFn) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (_, t) in &f.inputs {
        idents(t.to_token_stream(), &mut out);
    }
    if let Some(o) = &f.output {
        idents(o.to_token_stream(), &mut out);
    }
    out
}

/// The main module (CUDA 13 declarations; each entry with every ABI of the same
/// shape) and the CUDA 12 module (what 12.9 declares differently or only there).
pub(super) fn assemble(
    api: &Api,
    p13: &Parsed,
    p12: &Parsed,
) -> Result<(ModuleParts, ModuleParts), String> {
    let g13 = groups(&p13.items);
    let g12 = groups(&p12.items);
    let names12: BTreeSet<&String> = g12.keys().collect();
    // What CUDA 12 declares differently or only there, closed over the items
    // that mention it (a struct holding a changed struct is changed too).
    let mut differ: BTreeSet<String> = g12
        .iter()
        .filter(|(k, (text, _))| g13.get(*k).map(|g| &g.0) != Some(text))
        .map(|(k, _)| k.clone())
        .collect();
    let refs: BTreeMap<&String, BTreeSet<String>> = g12
        .iter()
        .map(|(k, (_, items))| {
            let mut ids = BTreeSet::new();
            for i in items {
                idents(i.to_token_stream(), &mut ids);
            }
            ids.retain(|x| x != k && names12.contains(x));
            (k, ids)
        })
        .collect();
    loop {
        let grow: Vec<String> = refs
            .iter()
            .filter(|(k, r)| !differ.contains(**k) && r.iter().any(|x| differ.contains(x)))
            .map(|(k, _)| (*k).clone())
            .collect();
        if grow.is_empty() {
            break;
        }
        differ.extend(grow);
    }

    // Entries of 12.9 with the same shape as 13.0's (same ABI, no changed type).
    let e12: BTreeMap<&str, &EntryGen> = p12.entries.iter().map(|e| (e.name.as_str(), e)).collect();
    let same_shape = |e13: &EntryGen| -> Option<&EntryGen> {
        let e = *e12.get(e13.name.as_str())?;
        let (f12, f13) = (&p12.fns[e.func], &p13.fns[e13.func]);
        let same = abi_sig(f12, &p12.aliases) == abi_sig(f13, &p13.aliases)
            && fn_idents(f12).iter().all(|x| !differ.contains(x));
        same.then_some(e)
    };

    // The main module.
    let main_doc = format!(
        "The `{m}` API: bindgen's types and constants from the CUDA {v13} headers, and\n\
         run-time dispatching functions, each resolved at the newest ABI that the\n\
         loaded library offers among those of CUDA {v13} and {v12} with the same shape.\n\
         What CUDA {v12} declares differently is in [`cuda12`](super::cuda12).\n\n\
         Everything here mirrors the C headers one to one (names, layouts, values),\n\
         so it is documented by NVIDIA's documentation of the C API rather than item by item.\n\n\
         The parts: `types.rs` (bindgen's types and constants), `table.rs` (the entry\n\
         table the loader resolves) and `functions.rs` (one `unsafe fn` per entry).",
        m = api.module,
        v13 = p13.cuda_version,
        v12 = p12.cuda_version
    );
    let mut types13 = p13.items.clone();
    types13.extend(p13.name_impl.clone());
    let mut rows = Vec::new();
    let mut shared = 0usize;
    for e in &p13.entries {
        let mut abis = vec![abi_tokens(13, api, e)?];
        if let Some(old) = same_shape(e) {
            shared += 1;
            let differs = old.symbol != e.symbol
                || old.version != e.version
                || old.ptds_symbol != e.ptds_symbol
                || old.ptds_version != e.ptds_version;
            if api.by_major || differs {
                abis.push(abi_tokens(12, api, old)?);
            }
        }
        rows.push(Row {
            entry: e,
            func: &p13.fns[e.func],
            abis,
        });
    }
    let main = module_parts(
        api,
        false,
        main_doc,
        types13,
        &p13.cuda_version,
        &p13.aliases,
        &rows,
    )?;

    // The CUDA 12 module.
    let diff_doc = format!(
        "The `{m}` API as CUDA {v12} declares it, where that differs from CUDA {v13}:\n\
         the types, constants and functions whose shape changed or that CUDA {v13}\n\
         dropped. Everything else is the parent module's (`use super::*`).\n\n\
         A function here resolves {how}.",
        m = api.module,
        v13 = p13.cuda_version,
        v12 = p12.cuda_version,
        how = if api.by_major {
            "only against a CUDA 12 library"
        } else if api.kind == Kind::Driver {
            "at its CUDA 12 ABI version, on any driver that offers it"
        } else {
            "by its CUDA 12 symbol"
        }
    );
    let kept: Vec<syn::Item> = p12
        .items
        .iter()
        .filter(|i| item_key(i).is_some_and(|k| differ.contains(&k)))
        .cloned()
        .collect();
    let e13: BTreeMap<&str, &EntryGen> = p13.entries.iter().map(|e| (e.name.as_str(), e)).collect();
    let mut rows = Vec::new();
    for e in &p12.entries {
        // Only in CUDA 12, or of another shape there.
        let keep = e13
            .get(e.name.as_str())
            .is_none_or(|x| same_shape(x).is_none());
        if keep {
            rows.push(Row {
                entry: e,
                func: &p12.fns[e.func],
                abis: vec![abi_tokens(12, api, e)?],
            });
        }
    }
    eprintln!(
        "regen-bindings: {}: {} entry points ({} with a CUDA 12 ABI of the same shape), {} CUDA 12 only or reshaped, {} CUDA 12 items differ",
        api.module,
        p13.entries.len(),
        shared,
        rows.len(),
        differ.len()
    );
    let diff = module_parts(
        api,
        true,
        diff_doc,
        kept,
        &p12.cuda_version,
        &p12.aliases,
        &rows,
    )?;
    Ok((main, diff))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entry points declared on one OS alone go last, in the same order on
    /// both, each with its own declaration and marked as that OS's; the shared
    /// ones keep their order.
    #[test]
    fn both_oses_get_one_entry_list() {
        let parsed = |names: &[&str]| Parsed {
            cuda_version: "13.0".into(),
            items: Vec::new(),
            fns: names
                .iter()
                .map(|n| CFn {
                    symbol: (*n).into(),
                    inputs: Vec::new(),
                    output: None,
                })
                .collect(),
            entries: names
                .iter()
                .enumerate()
                .map(|(i, n)| EntryGen {
                    name: (*n).into(),
                    base: (*n).into(),
                    symbol: (*n).into(),
                    version: 0,
                    ptds_symbol: None,
                    ptds_version: 0,
                    func: i,
                    only: None,
                })
                .collect(),
            aliases: BTreeMap::new(),
            name_impl: Vec::new(),
        };
        let mut linux = parsed(&["a", "l", "z"]);
        let mut windows = parsed(&["a", "w", "z"]);
        align_entries(&mut linux, &mut windows);
        for p in [&linux, &windows] {
            let got: Vec<(&str, &str, Option<Os>)> = p
                .entries
                .iter()
                .map(|e| (e.name.as_str(), p.fns[e.func].symbol.as_str(), e.only))
                .collect();
            assert_eq!(
                got,
                [
                    ("a", "a", None),
                    ("z", "z", None),
                    ("l", "l", Some(Os::Linux)),
                    ("w", "w", Some(Os::Windows)),
                ]
            );
        }
    }
}
