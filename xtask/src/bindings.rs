//! `cargo xtask regen-bindings`: bindgen over the pinned CUDA headers.
//!
//! For every CUDA major in `headers/pins.json` and every API (driver, runtime,
//! NVRTC, nvJitLink, NVVM, NVML) this runs bindgen (as a library) over the
//! headers that `cargo xtask fetch-headers` put in `.headers/`, keeps bindgen's
//! types, constants and layout checks, and turns its function declarations into
//! run-time dispatch: a table of entry points (`ENTRIES`) the hand-written loader
//! resolves once, and one `unsafe fn` per public C name that calls through it.
//! The result is `crates/cuda-bindings/src/generated/cuda<major>/<api>.rs`.
//!
//! `--check` generates into a temporary folder and fails naming every file that
//! differs from the committed one.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use quote::ToTokens;

use crate::headers;
use crate::util::{no_more, take_flag, take_value, workspace_root};

/// How an API's entry points are resolved at run time.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `cuGetProcAddress` at the ABI version `cudaTypedefs.h` records.
    Driver,
    /// `dlsym` of the exported (possibly versioned) symbol.
    Dlsym,
}

/// One C API.
struct Api {
    /// The Rust module (and cargo feature) name.
    module: &'static str,
    /// The header bindgen reads (and those whose items it keeps).
    headers: &'static [&'static str],
    /// Extra headers whose items are kept (types the API uses).
    extra_files: &'static [&'static str],
    /// Extra headers read for `#define` name mappings.
    kind: Kind,
    /// The type every call returns (and the fallback is built from).
    result_type: &'static str,
    /// Whether bindgen's layout checks are kept.
    layout_tests: bool,
    /// The NVIDIA documentation of the API.
    docs: &'static str,
}

const APIS: [Api; 6] = [
    Api {
        module: "driver",
        headers: &["cuda.h", "cudaTypedefs.h"],
        extra_files: &[],
        kind: Kind::Driver,
        result_type: "CUresult",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/cuda-driver-api/",
    },
    Api {
        module: "runtime",
        headers: &["cuda_runtime_api.h"],
        extra_files: &[
            "driver_types.h",
            "vector_types.h",
            "surface_types.h",
            "texture_types.h",
            "library_types.h",
            "cuda_device_runtime_api.h",
        ],
        kind: Kind::Dlsym,
        result_type: "cudaError_t",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/cuda-runtime-api/",
    },
    Api {
        module: "nvrtc",
        headers: &["nvrtc.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "nvrtcResult",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/nvrtc/",
    },
    Api {
        module: "nvjitlink",
        headers: &["nvJitLink.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "nvJitLinkResult",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/nvjitlink/",
    },
    Api {
        module: "nvvm",
        headers: &["nvvm.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "nvvmResult",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/libnvvm-api/",
    },
    Api {
        module: "nvml",
        headers: &["nvml.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "nvmlReturn_t",
        layout_tests: true,
        docs: "https://docs.nvidia.com/deploy/nvml-api/",
    },
];

/// The result enums whose constant names get a generated `name()` table.
const RESULT_ENUMS: [&str; 6] = [
    "cudaError_enum",
    "cudaError",
    "nvrtcResult",
    "nvJitLinkResult",
    "nvvmResult",
    "nvmlReturn_enum",
];

/// Where the generated files of one major go, relative to the workspace root.
fn out_rel(major: u32) -> PathBuf {
    Path::new("crates/cuda-bindings/src/generated").join(format!("cuda{major}"))
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut args = args.to_vec();
    let check = take_flag(&mut args, "--check");
    let cuda = take_value(&mut args, "--cuda")?;
    no_more(&args)?;
    let majors: Vec<u32> = match cuda.as_deref() {
        None | Some("all") => headers::MAJORS.to_vec(),
        Some("12") => vec![12],
        Some("13") => vec![13],
        Some(o) => return Err(format!("--cuda takes 12, 13 or all, not `{o}`")),
    };
    let root = workspace_root();
    let tmp = tempfile::tempdir().map_err(|e| format!("creating a temporary folder: {e}"))?;
    let mut differ = Vec::new();
    for major in majors {
        let bad = headers::verify(major)?;
        if !bad.is_empty() {
            return Err(format!(
                "the CUDA {major} headers in .headers/ are missing or differ from headers/pins.json \
                 (run `cargo xtask fetch-headers --cuda {major}` first):\n  {}",
                bad.join("\n  ")
            ));
        }
        let files = generate_major(major, tmp.path())?;
        let committed_dir = root.join(out_rel(major));
        // Files the generator no longer writes are stale too.
        let mut expected: BTreeSet<String> = files.keys().cloned().collect();
        if let Ok(rd) = fs::read_dir(&committed_dir) {
            for e in rd.flatten() {
                if let Some(n) = e.file_name().to_str() {
                    if n.ends_with(".rs") && !expected.contains(n) {
                        if check {
                            differ.push(format!(
                                "{} (no longer generated)",
                                out_rel(major).join(n).display()
                            ));
                        } else {
                            fs::remove_file(e.path())
                                .map_err(|er| format!("removing {n}: {er}"))?;
                        }
                    }
                }
            }
        }
        for (name, text) in files {
            let rel = out_rel(major).join(&name);
            let dst = root.join(&rel);
            if check {
                let old = fs::read_to_string(&dst).unwrap_or_default();
                if old != text {
                    differ.push(rel.display().to_string());
                }
            } else {
                if let Some(p) = dst.parent() {
                    fs::create_dir_all(p).map_err(|e| format!("creating {}: {e}", p.display()))?;
                }
                fs::write(&dst, text).map_err(|e| format!("writing {}: {e}", dst.display()))?;
                eprintln!("regen-bindings: wrote {}", rel.display());
            }
            expected.remove(&name);
        }
    }
    if check {
        if differ.is_empty() {
            eprintln!("regen-bindings --check: the generated bindings are up to date");
        } else {
            return Err(format!(
                "these generated files differ from what the pinned headers give \
                 (run `cargo xtask fetch-headers && cargo xtask regen-bindings`):\n  {}",
                differ.join("\n  ")
            ));
        }
    }
    Ok(())
}

/// Generates every file of one major: file name to contents (already formatted).
fn generate_major(major: u32, _tmp: &Path) -> Result<BTreeMap<String, String>, String> {
    let pins = headers::pins(major)?;
    let inc = headers::include_dir(major);
    let mut out = BTreeMap::new();
    for api in &APIS {
        eprintln!("regen-bindings: CUDA {major} {}", api.module);
        let body = generate_api(major, &pins, &inc, api)?;
        let header_list: Vec<&str> = api.headers.iter().chain(api.extra_files).copied().collect();
        let mut text = banner(major, &pins, &header_list);
        text.push_str(&format_rust(api.module, &body)?);
        out.insert(format!("{}.rs", api.module), text);
    }
    Ok(out)
}

/// Formats generated code with `prettyplease` (pinned by Cargo.lock, so the output
/// does not depend on the installed rustfmt), then puts back the `// SAFETY:`
/// comments that parsing drops.
fn format_rust(module: &str, text: &str) -> Result<String, String> {
    let file: syn::File = syn::parse_str(text)
        .map_err(|e| format!("the generated {module} module does not parse: {e}"))?;
    let pretty = prettyplease::unparse(&file);
    let mut out = String::with_capacity(pretty.len() + pretty.len() / 8);
    for line in pretty.lines() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        if trimmed.starts_with("let entry_fn = unsafe {") {
            let _ = writeln!(
                out,
                "{indent}// SAFETY: this entry was resolved for this function, whose C signature this is."
            );
        } else if trimmed.starts_with("unsafe { entry_fn(") {
            let _ = writeln!(
                out,
                "{indent}// SAFETY: the caller upholds the C function's contract (see `# Safety`)."
            );
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

fn banner(major: u32, pins: &headers::MajorPins, headers_used: &[&str]) -> String {
    let mut s = String::new();
    s.push_str(
        "// @generated by `cargo xtask regen-bindings` (bindgen over the pinned CUDA headers).\n",
    );
    s.push_str("// DO NOT EDIT: change xtask/src/bindings.rs or headers/pins.json and rerun\n");
    s.push_str(&format!(
        "// `cargo xtask fetch-headers --cuda {major} && cargo xtask regen-bindings --cuda {major}`.\n"
    ));
    s.push_str(&format!(
        "// CUDA {}; headers: {}.\n",
        pins.cuda_version,
        headers_used.join(", ")
    ));
    s.push_str("// From the wheels:");
    for p in &pins.packages {
        s.push_str(&format!(" {}=={}", p.name, p.version));
    }
    s.push_str(".\n\n");
    s
}

/// A `#define A <body>` that maps a public name to a symbol.
#[derive(Debug, Clone)]
struct Mapping {
    /// The symbol the public name expands to.
    target: String,
    /// `Some("_ptds")`/`Some("_ptsz")` when the mapping goes through a per-thread macro.
    per_thread: Option<&'static str>,
}

/// Reads `#define NAME TARGET` and `#define NAME __..._PTDS(TARGET)` lines.
fn read_defines(text: &str) -> BTreeMap<String, Vec<Mapping>> {
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
fn split_version_suffix(s: &str) -> (&str, Option<u32>) {
    if let Some(pos) = s.rfind("_v") {
        let num = &s[pos + 2..];
        if !num.is_empty() && num.chars().all(|c| c.is_ascii_digit()) {
            return (&s[..pos], num.parse().ok());
        }
    }
    (s, None)
}

/// A declared C function, as bindgen saw it (after macro expansion).
struct CFn {
    symbol: String,
    inputs: Vec<(String, syn::Type)>,
    output: Option<syn::Type>,
}

/// One entry point of the generated table.
struct EntryGen {
    /// The public C name (what the Rust function is called).
    name: String,
    /// The base name `cuGetProcAddress` takes (driver) or the symbol (others).
    base: String,
    /// The exported symbol.
    symbol: String,
    /// The ABI version (driver; 0 when `cudaTypedefs.h` has none that fits).
    version: u32,
    /// The per-thread default stream symbol, when there is one.
    ptds_symbol: Option<String>,
    /// The per-thread ABI version (driver; 0 when none).
    ptds_version: u32,
    func: usize,
}

fn generate_api(
    major: u32,
    pins: &headers::MajorPins,
    inc: &Path,
    api: &Api,
) -> Result<String, String> {
    let wrapper: String = api
        .headers
        .iter()
        .map(|h| format!("#include <{h}>\n"))
        .collect();
    let mut builder = bindgen::Builder::default()
        .header_contents("cuda_rs_bindgen_wrapper.h", &wrapper)
        .clang_arg(format!("-I{}", inc.display()))
        .clang_arg("--target=x86_64-unknown-linux-gnu")
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
    if let Ok(t) = bindgen::RustTarget::stable(85, 0) {
        builder = builder.rust_target(t);
    }
    for h in api.headers.iter().chain(api.extra_files) {
        builder = builder.allowlist_file(format!(".*[/\\\\]{}", regex_escape(h)));
    }
    let bindings = builder.generate().map_err(|e| {
        format!(
            "bindgen over {} (CUDA {major}): {e}",
            api.headers.join(", ")
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
    let file: syn::File = syn::parse_str(&code)
        .map_err(|e| format!("parsing bindgen's output for {}: {e}", api.module))?;

    let mut kept: Vec<syn::Item> = Vec::new();
    let mut fns: Vec<CFn> = Vec::new();
    let mut aliases: BTreeMap<String, syn::Type> = BTreeMap::new();
    let mut pfns: BTreeMap<String, syn::TypeBareFn> = BTreeMap::new();
    let mut result_consts: Vec<(String, String, String)> = Vec::new();
    let mut consts: BTreeSet<String> = BTreeSet::new();
    for item in file.items {
        match item {
            syn::Item::ForeignMod(fm) => {
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
                            result_consts.push((
                                ty.clone(),
                                c.ident.to_string(),
                                arg.to_token_stream().to_string(),
                            ));
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
                if suffix.is_some() {
                    vs.last().copied()
                } else {
                    vs.first().copied()
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

    // Assemble the file.
    let mut s = String::new();
    s.push_str(&format!(
        "//! The `{}` API of CUDA {}: bindgen's types and constants, and run-time dispatching functions.\n",
        api.module, pins.cuda_version
    ));
    s.push_str(
        "//!\n//! Everything here mirrors the C headers one to one (names, layouts, values),\n",
    );
    s.push_str("//! so it is documented by NVIDIA's documentation of the C API rather than item by item.\n");
    s.push_str(
        "#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, missing_docs, unreachable_pub)]\n",
    );
    s.push_str(
        "#![allow(clippy::all, clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]\n",
    );
    s.push_str("#![allow(rustdoc::all, unused_imports, dead_code, unpredictable_function_pointer_comparisons)]\n\n");
    let kept_file = syn::File {
        shebang: None,
        attrs: vec![],
        items: kept,
    };
    s.push_str(&prettyplease::unparse(&kept_file));
    s.push('\n');
    s.push_str(&cast_defines(&header_text, &aliases, &consts));

    // name() for the result enum.
    if let Some((enum_name, _, _)) = result_consts.first() {
        let mut seen = BTreeSet::new();
        s.push_str(&format!(
            "impl {enum_name} {{\n/// The C name of this code, when the headers know it.\npub const fn name(self) -> Option<&'static str> {{\nmatch self.0 {{\n"
        ));
        for (ty, cname, val) in &result_consts {
            if ty == enum_name && seen.insert(val.clone()) {
                let _ = writeln!(s, "{val} => Some(\"{cname}\"),");
            }
        }
        s.push_str("_ => None,\n}\n}\n}\n\n");
    }

    // The entry table.
    let _ = writeln!(
        s,
        "/// How many entry points this API has.\npub(crate) const ENTRY_COUNT: usize = {};\n\n\
         /// Every entry point of this API, in the order of the dispatch table.\npub(crate) static ENTRIES: [crate::loader::Entry; ENTRY_COUNT] = [",
        entries.len()
    );
    for e in &entries {
        let ptds = match &e.ptds_symbol {
            Some(p) => format!("Some(c\"{p}\")"),
            None => "None".into(),
        };
        let _ = writeln!(
            s,
            "crate::loader::Entry {{ name: c\"{}\", base: c\"{}\", symbol: c\"{}\", version: {}, ptds_symbol: {ptds}, ptds_version: {} }},",
            e.name, e.base, e.symbol, e.version, e.ptds_version
        );
    }
    s.push_str("];\n\n");

    // The functions.
    let header_of = api.headers[0];
    for (idx, e) in entries.iter().enumerate() {
        let f = &fns[e.func];
        let args: Vec<String> = f
            .inputs
            .iter()
            .map(|(n, t)| format!("{n}: {}", t.to_token_stream()))
            .collect();
        let tys: Vec<String> = f
            .inputs
            .iter()
            .map(|(_, t)| t.to_token_stream().to_string())
            .collect();
        let names: Vec<&str> = f.inputs.iter().map(|(n, _)| n.as_str()).collect();
        let ret = f.output.as_ref().map(|t| t.to_token_stream().to_string());
        let ret_sig = ret.as_ref().map(|r| format!(" -> {r}")).unwrap_or_default();
        let fallback = match ret.as_deref() {
            None => "()".to_string(),
            Some(r) if r == api.result_type || aliases_to(r, api.result_type, &aliases) => {
                format!("crate::{}::__unavailable({idx})", api.module)
            }
            Some(r) if r.starts_with("* const") => "::core::ptr::null()".into(),
            Some(r) if r.starts_with("* mut") => "::core::ptr::null_mut()".into(),
            // Plain values (`cudaCreateChannelDesc`'s struct, `nvrtcVersion`-like
            // integers): their zero value.
            Some(_) => "::core::default::Default::default()".into(),
        };
        let how = if api.kind == Kind::Driver && e.version != 0 {
            format!(
                "resolved through `cuGetProcAddress(\"{}\", .., {}, ..)`{}",
                e.base,
                e.version,
                if e.ptds_version != 0 {
                    format!(" (per-thread default stream: version {})", e.ptds_version)
                } else {
                    String::new()
                }
            )
        } else {
            format!(
                "resolved as the exported symbol `{}`{}",
                e.symbol,
                e.ptds_symbol
                    .as_ref()
                    .map(|p| format!(" (per-thread default stream: `{p}`)"))
                    .unwrap_or_default()
            )
        };
        let _ = writeln!(
            s,
            "/// `{name}` from `{header_of}` (CUDA {ver}), {how}.\n///\n\
             /// When the library or this entry point cannot be loaded, returns {fb_doc} without calling anything.\n///\n\
             /// # Safety\n///\n\
             /// This calls the C function directly: every pointer, handle and size must satisfy the contract\n\
             /// of `{name}` in NVIDIA's documentation (<{docs}>).\n\
             #[inline]\npub unsafe fn {name}({args}){ret_sig} {{\n\
             match crate::{module}::__entry({idx}) {{\n\
             Some(entry_fn) => {{\n\
             let entry_fn = unsafe {{ ::core::mem::transmute::<unsafe extern \"C\" fn(), unsafe extern \"C\" fn({tys}){ret_sig}>(entry_fn) }};\n\
             unsafe {{ entry_fn({names}) }}\n\
             }}\n\
             None => {fallback},\n\
             }}\n}}\n",
            name = e.name,
            ver = pins.cuda_version,
            module = api.module,
            fb_doc = if fallback.starts_with("crate::") {
                "the library's \"not found\" code (see the module docs)"
            } else if fallback == "()" {
                "nothing"
            } else if fallback.contains("null") {
                "a null pointer"
            } else {
                "the type's zero value"
            },
            docs = api.docs,
            args = args.join(", "),
            tys = tys.join(", "),
            names = names.join(", "),
        );
    }
    Ok(s)
}

/// The `#define NAME ((TYPE)VALUE)` constants bindgen cannot evaluate
/// (`CU_STREAM_LEGACY`, `CU_LAUNCH_PARAM_END`, `cudaCpuDeviceId`, …), as Rust
/// constants of that type.
fn cast_defines(
    header_text: &str,
    aliases: &BTreeMap<String, syn::Type>,
    consts: &BTreeSet<String>,
) -> String {
    let mut out = String::new();
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
            "void*" => "*mut ::core::ffi::c_void".to_string(),
            "int" => "::core::ffi::c_int".to_string(),
            t if is_ident(t) && aliases.contains_key(t) => t.to_string(),
            _ => continue,
        };
        let value_ok = is_ident(value) && consts.contains(value)
            || value
                .strip_prefix('-')
                .unwrap_or(value)
                .strip_prefix("0x")
                .map_or_else(
                    || {
                        value
                            .strip_prefix('-')
                            .unwrap_or(value)
                            .chars()
                            .all(|c| c.is_ascii_digit())
                    },
                    |h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()),
                );
        if !is_ident(name) || consts.contains(name) || !value_ok || !seen.insert(name.to_string()) {
            continue;
        }
        let value = if value.starts_with('-') && rust_ty.starts_with('*') {
            continue;
        } else if value.starts_with('-') {
            format!("({value})")
        } else {
            value.to_string()
        };
        let _ = writeln!(
            out,
            "/// `#define {name} (({ty}){})` in the C header.\npub const {name}: {rust_ty} = {value} as {rust_ty};",
            value.trim_matches(|c| c == '(' || c == ')')
        );
    }
    out
}

/// Whether the alias `name` resolves to `target`.
fn aliases_to(name: &str, target: &str, aliases: &BTreeMap<String, syn::Type>) -> bool {
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

/// `nvJitLink.h`'s `static inline nvJitLinkX(...) { return __nvJitLinkX_13_0(...); }` → `nvJitLinkX`.
fn nvjitlink_public(symbol: &str, header: &str) -> Option<String> {
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
fn canon_sig(
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
