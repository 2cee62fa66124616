//! The generated files: the entry table, the dispatching `unsafe fn`s (each
//! with its `// SAFETY:` comments) and the `mod.rs` that joins a module's
//! parts, built with `quote!` and formatted; a part whose text differs between
//! the OSes is written per OS ([`render_per_os`]).

use std::collections::BTreeMap;

use proc_macro2::{Literal, TokenStream};
use quote::{ToTokens, quote};

use super::apis::{Api, Kind, Os};
use super::parse::{CFn, EntryGen, aliases_to};
use super::{OUT_REL, c_lit, ident};
use crate::codegen::{SafetyComments, doc_lines, inner_doc_lines, reformat};
use crate::util::report;

/// One ABI of an entry point, as an expression of the table.
pub(super) fn abi_tokens(major: u32, api: &Api, e: &EntryGen) -> Result<TokenStream, String> {
    let ptds = match &e.ptds_symbol {
        Some(p) => {
            let p = c_lit(p)?;
            quote! { Some(#p) }
        }
        None => quote! { None },
    };
    let base = c_lit(if api.kind == Kind::Driver {
        &e.base
    } else {
        &e.symbol
    })?;
    let symbol = c_lit(&e.symbol)?;
    let major = Literal::u32_unsuffixed(major);
    let version = Literal::u32_unsuffixed(e.version);
    let ptds_version = Literal::u32_unsuffixed(e.ptds_version);
    Ok(quote! {
        crate::loader::Abi {
            major: #major,
            base: #base,
            symbol: #symbol,
            version: #version,
            ptds_symbol: #ptds,
            ptds_version: #ptds_version,
        }
    })
}

/// The `// SAFETY:` comments of a dispatching function, in the order of its
/// two `unsafe` blocks.
const WRAPPER_SAFETY: &[&str] = &[
    "this entry was resolved for this function, whose C signature this is.",
    "the caller upholds the C function's contract (see `# Safety`).",
];

/// One generated module (an API's main module or its `cuda12` module), in the
/// parts its files hold.
pub(super) struct ModuleParts {
    /// The module's documentation (`//!` in its `mod.rs`).
    doc: String,
    /// The CUDA 12 module: it sees its parent's items (`use super::*`) and
    /// re-exports its own by name, so that they shadow the parent's.
    child: bool,
    /// bindgen's types, constants, impls and layout checks.
    types: Vec<syn::Item>,
    /// The entry table.
    table: TokenStream,
    /// The dispatching functions.
    functions: TokenStream,
    /// The names of the functions, in order, each with the OS it is declared
    /// on alone (`None`: every OS).
    function_names: Vec<(String, Option<Os>)>,
    /// The `// SAFETY:` comments `functions` carries as markers.
    safety: SafetyComments,
}

/// The parts of a module that may differ between the OSes, each a file of
/// the module's folder (and, when it differs, `<part>_windows.rs` beside it).
const PARTS: [&str; 3] = ["functions", "table", "types"];

impl ModuleParts {
    /// The module's `mod.rs`, after `banner`; each part named in `per_os` is
    /// loaded from `<part>_windows.rs` on Windows.
    fn render_mod(&self, dir: &str, banner: &str, per_os: &[&str]) -> Result<String, String> {
        let doc = inner_doc_lines(&self.doc);
        let parent = if self.child {
            quote! { use super::*; }
        } else {
            quote! {}
        };
        let exports = if self.child {
            let mut type_names: Vec<String> = self.types.iter().filter_map(defined_name).collect();
            type_names.sort();
            type_names.dedup();
            let types = idents_of(&type_names)?;
            let everywhere: Vec<String> = self
                .function_names
                .iter()
                .filter(|(_, only)| only.is_none())
                .map(|(n, _)| n.clone())
                .collect();
            let fns = idents_of(&everywhere)?;
            let types = (!types.is_empty()).then(|| quote! { pub use self::types::{#(#types),*}; });
            let mut fns = if fns.is_empty() {
                quote! {}
            } else {
                quote! { pub use self::functions::{#(#fns),*}; }
            };
            // A function of one OS is re-exported there only.
            for (n, only) in &self.function_names {
                if only.is_some() {
                    let (cfg, n) = (os_cfg(*only), ident(n)?);
                    fns.extend(quote! { #cfg pub use self::functions::#n; });
                }
            }
            quote! {
                #fns
                pub(crate) use self::table::{ENTRIES, ENTRY_COUNT};
                #types
            }
        } else {
            quote! {
                pub use self::functions::*;
                pub(crate) use self::table::{ENTRIES, ENTRY_COUNT};
                pub use self::types::*;
            }
        };
        let mut mods = TokenStream::new();
        for part in PARTS {
            let name = ident(part)?;
            if per_os.contains(&part) {
                let windows = Literal::string(&format!("{part}_windows.rs"));
                mods.extend(quote! {
                    #[cfg_attr(windows, path = #windows)]
                    mod #name;
                });
            } else {
                mods.extend(quote! { mod #name; });
            }
        }
        let module = quote! {
            #doc
            #![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, missing_docs, unreachable_pub)]
            #![allow(rustdoc::all, unused_imports, dead_code, clippy::all)]
            #parent
            #mods
            #exports
        };
        reformat(&format!("{OUT_REL}/{dir}/mod.rs"), banner, module)
    }

    /// The file of `part` (one of [`PARTS`]), formatted after `banner`.
    fn render_part(&self, dir: &str, part: &str, banner: &str) -> Result<String, String> {
        let what = format!("{OUT_REL}/{dir}/{part}.rs");
        let parent = if self.child {
            quote! { use super::*; }
        } else {
            quote! {}
        };
        match part {
            "types" => {
                let items = &self.types;
                let types = quote! {
                    //! bindgen's types, constants and layout checks, as it wrote them.
                    #![allow(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]
                    #![allow(unpredictable_function_pointer_comparisons)]
                    #parent
                    #(#items)*
                };
                reformat(&what, banner, types)
            }
            "table" => {
                let table = &self.table;
                let table = quote! {
                    //! The entry points the loader resolves, in the order of the dispatch table.
                    #table
                };
                reformat(&what, banner, table)
            }
            "functions" => {
                let functions = &self.functions;
                let functions = quote! {
                    //! One `unsafe fn` per entry point, with the C name and signature, calling
                    //! through the entry table.
                    use super::*;
                    #functions
                };
                let text = reformat(&what, banner, functions)?;
                self.safety.place(&what, &text).map_err(|e| report(&e))
            }
            other => Err(format!("{what}: no module part {other}")),
        }
    }

    /// The module's files, formatted, each after `banner`: `mod.rs`, `types.rs`,
    /// `table.rs`, `functions.rs`.
    #[cfg(test)]
    fn render(&self, dir: &str, banner: &str) -> Result<Vec<(String, String)>, String> {
        let mut out = vec![("mod.rs".to_string(), self.render_mod(dir, banner, &[])?)];
        for part in PARTS {
            out.push((format!("{part}.rs"), self.render_part(dir, part, banner)?));
        }
        Ok(out)
    }
}

/// The files of one module folder from its Linux and Windows parts, as file
/// names and contents: each part once when both OSes give the same text, else
/// `<part>.rs` (every OS but Windows) and `<part>_windows.rs`, each saying so in
/// its banner, with `mod.rs` choosing between them. `mod.rs` itself must be the
/// same for both (it is: the OSes differ in layouts and integer types, never in
/// which items a module has).
pub(super) fn render_per_os(
    dir: &str,
    banner: &str,
    linux: &ModuleParts,
    windows: Option<&ModuleParts>,
) -> Result<Vec<(String, String)>, String> {
    let mut files = Vec::new();
    let mut per_os = Vec::new();
    for part in PARTS {
        // Each part is rendered once per OS, without a banner (which
        // `reformat` only puts in front), and compared.
        let l = linux.render_part(dir, part, "")?;
        let w = match windows {
            Some(w) => Some(w.render_part(dir, part, "")?),
            None => None,
        };
        match w {
            Some(w) if w != l => {
                per_os.push(part);
                let note = |os: Os, other: &str| {
                    format!(
                        "{banner}// This file is for {} (bindgen for {}); {other}.\n\n",
                        match os {
                            Os::Linux => "every OS but Windows",
                            Os::Windows => "Windows",
                        },
                        os.clang_target(),
                    )
                };
                let linux_banner = note(Os::Linux, &format!("Windows' is {part}_windows.rs"));
                let windows_banner = note(Os::Windows, &format!("the other OSes' is {part}.rs"));
                files.push((format!("{part}.rs"), format!("{linux_banner}{l}")));
                files.push((format!("{part}_windows.rs"), format!("{windows_banner}{w}")));
            }
            _ => files.push((format!("{part}.rs"), format!("{banner}{l}"))),
        }
    }
    let module = linux.render_mod(dir, banner, &per_os)?;
    let differs = match windows {
        Some(w) => module != w.render_mod(dir, banner, &per_os)?,
        None => false,
    };
    if differs {
        return Err(format!(
            "{OUT_REL}/{dir}/mod.rs differs between Linux and Windows (the module's items \
             differ, not only their layouts): the generator writes only the parts {PARTS:?} per OS"
        ));
    }
    files.insert(0, ("mod.rs".to_string(), module));
    Ok(files)
}

/// The names, as identifiers.
fn idents_of(names: &[String]) -> Result<Vec<proc_macro2::Ident>, String> {
    names.iter().map(|n| ident(n)).collect()
}

/// The name an item defines in its module (what a `use` can name).
pub(super) fn defined_name(item: &syn::Item) -> Option<String> {
    match item {
        syn::Item::Struct(i) => Some(i.ident.to_string()),
        syn::Item::Union(i) => Some(i.ident.to_string()),
        syn::Item::Enum(i) => Some(i.ident.to_string()),
        syn::Item::Type(i) => Some(i.ident.to_string()),
        syn::Item::Static(i) => Some(i.ident.to_string()),
        syn::Item::Fn(i) => Some(i.sig.ident.to_string()),
        syn::Item::Const(c) if c.ident != "_" => Some(c.ident.to_string()),
        _ => None,
    }
}

/// One entry point of a module: its entry, its C declaration, its ABIs (newest first).
pub(super) struct Row<'a> {
    pub(super) entry: &'a EntryGen,
    pub(super) func: &'a CFn,
    pub(super) abis: Vec<TokenStream>,
}

/// A module's parts: its types, its entry table and one dispatching `unsafe fn`
/// per entry (`child`: the CUDA 12 module, dispatching through `__entry12`).
pub(super) fn module_parts(
    api: &Api,
    child: bool,
    doc: String,
    types: Vec<syn::Item>,
    cuda_version: &str,
    aliases: &BTreeMap<String, syn::Type>,
    rows: &[Row<'_>],
) -> Result<ModuleParts, String> {
    let count = Literal::usize_unsuffixed(rows.len());
    let mut entries = Vec::with_capacity(rows.len());
    for r in rows {
        let name = c_lit(&r.entry.name)?;
        let abis = &r.abis;
        entries.push(quote! { crate::loader::Entry { name: #name, abis: &[#(#abis),*] } });
    }
    let table = quote! {
        /// How many entry points this module has.
        pub(crate) const ENTRY_COUNT: usize = #count;
        /// Every entry point of this module, in the order of the dispatch table, each
        /// with its ABIs, newest first.
        pub(crate) static ENTRIES: [crate::loader::Entry; ENTRY_COUNT] = [#(#entries),*];
    };
    let mut safety = SafetyComments::new(WRAPPER_SAFETY);
    let mut functions = TokenStream::new();
    for (idx, r) in rows.iter().enumerate() {
        functions.extend(wrapper(
            api,
            child,
            cuda_version,
            aliases,
            idx,
            r,
            &mut safety,
        )?);
    }
    Ok(ModuleParts {
        doc,
        child,
        types,
        table,
        functions,
        function_names: rows
            .iter()
            .map(|r| (r.entry.name.clone(), r.entry.only))
            .collect(),
        safety,
    })
}

/// The dispatching `unsafe fn` of entry `idx`: the C name and signature, a call
/// through the resolved entry, the API's fallback when it did not resolve.
fn wrapper(
    api: &Api,
    child: bool,
    cuda_version: &str,
    aliases: &BTreeMap<String, syn::Type>,
    idx: usize,
    r: &Row<'_>,
    safety: &mut SafetyComments,
) -> Result<TokenStream, String> {
    let (e, f) = (r.entry, r.func);
    let module = ident(api.module)?;
    let (entry_fn, unavailable) = if child {
        (quote! { __entry12 }, quote! { __unavailable12 })
    } else {
        (quote! { __entry }, quote! { __unavailable })
    };
    let idx_lit = Literal::usize_unsuffixed(idx);
    let names = f
        .inputs
        .iter()
        .map(|(n, _)| ident(n))
        .collect::<Result<Vec<_>, _>>()?;
    let tys: Vec<&syn::Type> = f.inputs.iter().map(|(_, t)| t).collect();
    let ret = f.output.as_ref().map(|t| t.to_token_stream().to_string());
    let ret_sig = match &f.output {
        Some(t) => quote! { -> #t },
        None => quote! {},
    };
    let (fallback, fb_doc) = match ret.as_deref() {
        None => (quote! { () }, "nothing"),
        Some(r) if r == api.result_type || aliases_to(r, api.result_type, aliases) => (
            quote! { crate::#module::#unavailable(#idx_lit) },
            "the library's \"not found\" code (see the module docs)",
        ),
        // cuFile's reads and writes return the bytes moved or a negative error:
        // -1 (its "see errno" error), never a byte count, noting why (for
        // `CufileError::from_io_result`) as the status fallback does.
        Some("isize") if api.module == "cufile" => (
            quote! { { let _ = crate::#module::#unavailable(#idx_lit); -1 } },
            "-1",
        ),
        Some(r) if r.starts_with("* const") => (quote! { ::core::ptr::null() }, "a null pointer"),
        Some(r) if r.starts_with("* mut") => (quote! { ::core::ptr::null_mut() }, "a null pointer"),
        // Plain values (`cudaCreateChannelDesc`'s struct, `nvrtcVersion`-like
        // integers): their zero value.
        Some(_) => (
            quote! { ::core::default::Default::default() },
            "the type's zero value",
        ),
    };
    let how = if api.kind == Kind::Driver && e.version != 0 {
        let more = if r.abis.len() > 1 {
            " or, on an older driver, at its CUDA 12 ABI of the same shape"
        } else {
            ""
        };
        format!(
            "resolved through `cuGetProcAddress(\"{}\", .., {}, ..)`{}{more}",
            e.base,
            e.version,
            if e.ptds_version != 0 {
                format!(" (per-thread default stream: version {})", e.ptds_version)
            } else {
                String::new()
            }
        )
    } else {
        let more = if r.abis.len() > 1 {
            " (or its CUDA 12 symbol, against a CUDA 12 library)"
        } else {
            ""
        };
        format!(
            "resolved as the exported symbol `{}`{}{more}",
            e.symbol,
            e.ptds_symbol
                .as_ref()
                .map(|p| format!(" (per-thread default stream: `{p}`)"))
                .unwrap_or_default()
        )
    };
    let doc = doc_lines(&format!(
        "`{name}` from `{header}` (CUDA {cuda_version}), {how}.\n\n\
         When the library or this entry point cannot be loaded, returns {fb_doc} without calling anything.\n\n\
         # Safety\n\n\
         This calls the C function directly: every pointer, handle and size must satisfy the contract\n\
         of `{name}` in NVIDIA's documentation (<{docs}>).",
        name = e.name,
        header = api.headers[0],
        docs = api.docs,
    ));
    let name = ident(&e.name)?;
    let resolved = safety.marker(0);
    let contract = safety.marker(1);
    let only = os_cfg(e.only);
    Ok(quote! {
        #doc
        #only
        #[inline]
        pub unsafe fn #name(#(#names: #tys),*) #ret_sig {
            match crate::#module::#entry_fn(#idx_lit) {
                Some(entry_fn) => {
                    #resolved
                    let entry_fn = unsafe {
                        ::core::mem::transmute::<unsafe extern "C" fn(), unsafe extern "C" fn(#(#tys),*) #ret_sig>(entry_fn)
                    };
                    #contract
                    unsafe { entry_fn(#(#names),*) }
                }
                None => #fallback,
            }
        }
    })
}

/// The `#[cfg]` of an item declared on one OS only (nothing when on all).
fn os_cfg(only: Option<Os>) -> TokenStream {
    match only {
        None => quote! {},
        Some(Os::Windows) => quote! { #[cfg(windows)] },
        Some(Os::Linux) => quote! { #[cfg(not(windows))] },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::apis::APIS;
    use crate::codegen::check_safety_comments;

    fn ptr(t: &str) -> syn::Type {
        syn::parse_str(t).unwrap()
    }

    /// The generator's output for a made-up API, without headers: every file
    /// parses, the table and the functions agree, and both `unsafe` blocks of
    /// every function carry their comment, however long the signature (a long
    /// one makes prettyplease break the call over several lines).
    #[test]
    fn a_module_renders_with_its_comments_and_parts() {
        let api = &APIS[2]; // nvrtc: exported symbols
        let short = CFn {
            symbol: "nvrtcShort".into(),
            inputs: vec![("p".into(), ptr("*mut ::core::ffi::c_int"))],
            output: Some(ptr("nvrtcResult")),
        };
        let long = CFn {
            symbol: "nvrtcLong".into(),
            inputs: (0..9)
                .map(|i| {
                    (
                        format!("argument_number_{i}"),
                        ptr("*const ::core::ffi::c_char"),
                    )
                })
                .collect(),
            output: Some(ptr("*mut ::core::ffi::c_void")),
        };
        let entry = |name: &str, func: usize| EntryGen {
            name: name.into(),
            base: name.into(),
            symbol: name.into(),
            version: 0,
            ptds_symbol: None,
            ptds_version: 0,
            func,
            only: None,
        };
        let (e0, e1) = (entry("nvrtcShort", 0), entry("nvrtcLong", 1));
        let rows = vec![
            Row {
                entry: &e0,
                func: &short,
                abis: vec![abi_tokens(13, api, &e0).unwrap()],
            },
            Row {
                entry: &e1,
                func: &long,
                abis: vec![abi_tokens(13, api, &e1).unwrap()],
            },
        ];
        let types: Vec<syn::Item> = vec![
            syn::parse_quote! { pub struct nvrtcResult(pub u32); },
            syn::parse_quote! { pub const NVRTC_SUCCESS: nvrtcResult = nvrtcResult(0); },
        ];
        let types: Vec<syn::Item> = types;
        let parts_of = |types: Vec<syn::Item>| {
            module_parts(
                api,
                true,
                "Doc.".into(),
                types,
                "13.0",
                &BTreeMap::new(),
                &rows,
            )
            .unwrap()
        };
        let parts = parts_of(types.clone());
        let files: BTreeMap<String, String> = parts
            .render("nvrtc_cuda12", "// banner\n")
            .unwrap()
            .into_iter()
            .collect();

        // Per OS: the same parts give the same files, once; a part that
        // differs is written twice and `mod.rs` picks Windows' on Windows.
        let same = render_per_os(
            "nvrtc_cuda12",
            "// banner\n",
            &parts,
            Some(&parts_of(types.clone())),
        )
        .unwrap();
        assert_eq!(same, parts.render("nvrtc_cuda12", "// banner\n").unwrap());
        let win_types: Vec<syn::Item> = vec![
            syn::parse_quote! { pub struct nvrtcResult(pub u32); },
            syn::parse_quote! { pub const NVRTC_SUCCESS: nvrtcResult = nvrtcResult(7); },
        ];
        let windows = parts_of(win_types);
        let split: BTreeMap<String, String> =
            render_per_os("nvrtc_cuda12", "// banner\n", &parts, Some(&windows))
                .unwrap()
                .into_iter()
                .collect();
        assert_eq!(
            split.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "functions.rs",
                "mod.rs",
                "table.rs",
                "types.rs",
                "types_windows.rs"
            ]
        );
        assert_eq!(split["functions.rs"], files["functions.rs"]);
        assert!(split["types_windows.rs"].contains("nvrtcResult(7)"));
        assert!(split["types.rs"].contains("nvrtcResult(0)"));
        assert!(split["types.rs"].contains("Windows' is types_windows.rs"));
        assert!(
            split["mod.rs"]
                .contains("#[cfg_attr(windows, path = \"types_windows.rs\")]\nmod types;"),
            "{}",
            split["mod.rs"]
        );
        syn::parse_file(&split["mod.rs"]).unwrap();
        // A module whose items differ (not only their text) is refused.
        let mut more = types.clone();
        more.push(syn::parse_quote! { pub type nvrtcLong_t = ::core::ffi::c_long; });
        let err = render_per_os("nvrtc_cuda12", "// banner\n", &parts, Some(&parts_of(more)))
            .unwrap_err();
        assert!(err.contains("mod.rs differs"), "{err}");

        assert_eq!(
            files.keys().map(String::as_str).collect::<Vec<_>>(),
            ["functions.rs", "mod.rs", "table.rs", "types.rs"]
        );
        for (name, text) in &files {
            assert!(text.starts_with("// banner\n"), "{name}");
            syn::parse_file(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let fns = &files["functions.rs"];
        assert_eq!(check_safety_comments("functions.rs", fns), Ok(4));
        assert!(fns.contains("crate::nvrtc::__entry12(1)"), "{fns}");
        assert!(
            fns.contains("None => crate::nvrtc::__unavailable12(0)"),
            "{fns}"
        );
        assert!(fns.contains("None => ::core::ptr::null_mut()"), "{fns}");
        let table = &files["table.rs"];
        assert!(table.contains("ENTRY_COUNT: usize = 2;"), "{table}");
        assert!(table.contains("name: c\"nvrtcLong\""), "{table}");
        let module = &files["mod.rs"];
        assert!(module.contains("use super::*;"), "{module}");
        assert!(
            module.contains("pub use self::functions::{nvrtcShort, nvrtcLong};"),
            "{module}"
        );
        assert!(
            module.contains("pub use self::types::{NVRTC_SUCCESS, nvrtcResult};"),
            "{module}"
        );
        // The functions keep clippy's `undocumented_unsafe_blocks` on: only
        // bindgen's types allow it.
        assert!(!fns.contains("undocumented_unsafe_blocks"), "{fns}");
        assert!(!module.contains("undocumented_unsafe_blocks"), "{module}");
        assert!(files["types.rs"].contains("undocumented_unsafe_blocks"));
    }

    /// An item of one OS is compiled there alone; one of every OS has no `#[cfg]`.
    #[test]
    fn os_only_items_get_their_cfg() {
        assert_eq!(os_cfg(Some(Os::Windows)).to_string(), "# [cfg (windows)]");
        assert_eq!(
            os_cfg(Some(Os::Linux)).to_string(),
            "# [cfg (not (windows))]"
        );
        assert!(os_cfg(None).is_empty());
    }
}
