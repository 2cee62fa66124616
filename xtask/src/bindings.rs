//! `cargo xtask regen-bindings`: bindgen over the pinned CUDA headers.
//!
//! For every CUDA major in `headers/pins.json` and every API (driver, runtime,
//! NVRTC, nvJitLink, NVVM, NVML, the math and communication libraries) this runs
//! bindgen (as a library) over the headers that `cargo xtask fetch-headers` put
//! in `.headers/`, keeps bindgen's types, constants and layout checks, and turns
//! its function declarations into run-time dispatch: a table of entry points
//! (`ENTRIES`) the hand-written loader resolves once, and one `unsafe fn` per
//! public C name that calls through it. Everything it adds is built as `quote!`
//! token streams and formatted by `prettyplease`; the `// SAFETY:` comments go
//! through formatting as markers that [`SafetyComments`] places and counts.
//!
//! The result is, per API, `crates/cudars-bindings/src/generated/<api>/` and
//! `<api>_cuda12/`, each with `types.rs`, `table.rs`, `functions.rs` and the
//! `mod.rs` that joins them. Every file goes through
//! [`ensure_file_contents`]: written only when it changes, or, with `--check`,
//! named (with the command that fixes it) when it is stale; files the generator
//! no longer makes are removed (or, with `--check`, named).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use proc_macro2::{Literal, TokenStream};
use quote::{ToTokens, quote};

use crate::codegen::{
    FileError, Generator, SafetyComments, doc_lines, ensure_file_contents, inner_doc_lines,
    prune_dir, reformat,
};
use crate::headers;
use crate::util::{no_more, report, take_flag, workspace_root};

/// How an API's entry points are resolved at run time.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `cuGetProcAddress` at the ABI version `cudaTypedefs.h` records.
    Driver,
    /// `dlsym` of the exported (possibly versioned) symbol.
    Dlsym,
}

/// One C API.
pub(crate) struct Api {
    /// The Rust module (and cargo feature) name.
    pub(crate) module: &'static str,
    /// The header bindgen reads (and those whose items it keeps).
    pub(crate) headers: &'static [&'static str],
    /// Extra headers whose items are kept (types the API uses).
    extra_files: &'static [&'static str],
    /// Extra headers read for `#define` name mappings.
    kind: Kind,
    /// The type every call returns (and the fallback is built from).
    pub(crate) result_type: &'static str,
    /// Whether bindgen's layout checks are kept.
    layout_tests: bool,
    /// The NVIDIA documentation of the API.
    pub(crate) docs: &'static str,
    /// Whether the library is versioned by CUDA major (`libcudart.so.12` and
    /// `.so.13` are different libraries with different ABIs), so that an entry
    /// resolves only against a library of a major whose headers give its shape.
    pub(crate) by_major: bool,
}

/// Every C API the bindings cover; `library_docs` reads it for
/// `docs/adding-a-library.md`.
pub(crate) const APIS: [Api; 13] = [
    Api {
        module: "driver",
        // OpenGL interop (`cuGraphicsGLRegisterBuffer`, …) is in the driver
        // and resolved the same way; its header includes <GL/gl.h> for two
        // types, which a stand-in gives (see `stub_include_dir`).
        headers: &["cuda.h", "cudaTypedefs.h", "cudaGL.h", "cudaGLTypedefs.h"],
        extra_files: &[],
        kind: Kind::Driver,
        result_type: "CUresult",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/cuda-driver-api/",
        by_major: false,
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
        by_major: true,
    },
    Api {
        module: "nvrtc",
        headers: &["nvrtc.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "nvrtcResult",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/nvrtc/",
        by_major: true,
    },
    Api {
        module: "nvjitlink",
        headers: &["nvJitLink.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "nvJitLinkResult",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/nvjitlink/",
        by_major: true,
    },
    Api {
        module: "nvfatbin",
        headers: &["nvFatbin.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "nvFatbinResult",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/nvfatbin/",
        by_major: true,
    },
    Api {
        module: "nvvm",
        headers: &["nvvm.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "nvvmResult",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/libnvvm-api/",
        by_major: false,
    },
    Api {
        module: "nvml",
        headers: &["nvml.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "nvmlReturn_t",
        layout_tests: true,
        docs: "https://docs.nvidia.com/deploy/nvml-api/",
        by_major: false,
    },
    Api {
        module: "cublas",
        headers: &["cublas_v2.h"],
        extra_files: &["cublas_api.h"],
        kind: Kind::Dlsym,
        result_type: "cublasStatus_t",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/cublas/",
        by_major: true,
    },
    Api {
        module: "cublaslt",
        headers: &["cublasLt.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "cublasStatus_t",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/cublas/#using-the-cublaslt-api",
        by_major: true,
    },
    Api {
        module: "curand",
        headers: &["curand.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "curandStatus_t",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/curand/",
        by_major: false,
    },
    Api {
        module: "cufft",
        headers: &["cufft.h", "cufftXt.h"],
        extra_files: &["cudalibxt.h"],
        kind: Kind::Dlsym,
        result_type: "cufftResult",
        layout_tests: true,
        docs: "https://docs.nvidia.com/cuda/cufft/",
        by_major: true,
    },
    Api {
        module: "nccl",
        headers: &["nccl.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "ncclResult_t",
        layout_tests: true,
        docs: "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api.html",
        by_major: false,
    },
    Api {
        module: "cufile",
        headers: &["cufile.h"],
        extra_files: &[],
        kind: Kind::Dlsym,
        result_type: "CUfileError_t",
        layout_tests: true,
        docs: "https://docs.nvidia.com/gpudirect-storage/api-reference-guide/",
        by_major: false,
    },
];

/// The operating systems the bindings are generated for. Their C types differ
/// (C's `long` is 8 bytes on Linux and 4 on Windows, so are the structs that
/// hold one), so bindgen runs once per OS; a file whose text differs between
/// them is written twice (`types.rs` and `types_windows.rs`), and the module's
/// `mod.rs` picks one with `#[cfg_attr(windows, path = ..)]`. Entry points one
/// OS alone declares do not split the other parts: see [`align_entries`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Os {
    /// Linux x86_64 (and every other non-Windows target).
    Linux,
    /// Windows x64.
    Windows,
}

impl Os {
    /// The target clang parses the headers for.
    fn clang_target(self) -> &'static str {
        match self {
            Os::Linux => "x86_64-unknown-linux-gnu",
            Os::Windows => "x86_64-pc-windows-msvc",
        }
    }

    /// The name used in file names and messages.
    fn name(self) -> &'static str {
        match self {
            Os::Linux => "linux",
            Os::Windows => "windows",
        }
    }
}

/// The result enums whose constant names get a generated `name()` table.
const RESULT_ENUMS: [&str; 12] = [
    "cudaError_enum",
    "cudaError",
    "nvrtcResult",
    "nvJitLinkResult",
    "nvFatbinResult",
    "nvvmResult",
    "nvmlReturn_enum",
    "cublasStatus_t",
    "curandStatus",
    "cufftResult_t",
    "ncclResult_t",
    "CUfileOpError",
];

/// Where the generated files go, relative to the workspace root.
const OUT_REL: &str = "crates/cudars-bindings/src/generated";

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut args = args.to_vec();
    let check = take_flag(&mut args, "--check");
    no_more(&args)?;
    require_headers()?;
    let files = generate_all()?;
    let stale = write_all(&files, check)?;
    if check {
        if stale.is_empty() {
            eprintln!("regen-bindings --check: the generated bindings are up to date");
        } else {
            for e in &stale {
                eprintln!("regen-bindings --check: {e}");
            }
            return Err(format!(
                "{} generated files differ from what the pinned headers give (run `{}`)",
                stale.len(),
                Generator::Bindings.command()
            ));
        }
    }
    Ok(())
}

/// Fails, saying how to fetch them, unless the pinned headers of every major
/// are in `.headers/` with their pinned checksums.
fn require_headers() -> Result<(), String> {
    for major in headers::MAJORS {
        let bad = headers::verify(major)?;
        if !bad.is_empty() {
            return Err(format!(
                "the CUDA {major} headers in .headers/ are missing or differ from headers/pins.json \
                 (run `cargo xtask fetch-headers` first):\n  {}",
                bad.join("\n  ")
            ));
        }
    }
    Ok(())
}

/// Brings every generated file (relative path under [`OUT_REL`] to contents)
/// up to date and removes the files of [`OUT_REL`] the generator no longer
/// makes; with `check`, changes nothing and returns each stale or orphaned
/// file instead.
fn write_all(files: &BTreeMap<PathBuf, String>, check: bool) -> Result<Vec<FileError>, String> {
    let out_dir = workspace_root().join(OUT_REL);
    let keep: BTreeSet<PathBuf> = files.keys().cloned().collect();
    let mut stale =
        prune_dir(Generator::Bindings, &out_dir, &keep, check).map_err(|e| report(&e))?;
    for (rel, text) in files {
        match ensure_file_contents(Generator::Bindings, &out_dir.join(rel), text, check) {
            Ok(_) => {}
            Err(e @ FileError::Stale { .. }) => stale.push(e),
            Err(e) => return Err(report(&e)),
        }
    }
    Ok(stale)
}

/// APIs that exist on Linux only (cuFile: GPUDirect Storage has no Windows
/// library, and its header needs a POSIX C library): no Windows pass, and
/// `cudars-bindings` compiles their module on Linux only.
const LINUX_ONLY: &[&str] = &["cufile"];

/// Generates every file, as paths relative to [`OUT_REL`] and their contents:
/// for each API, `<api>/` (the CUDA 13 declarations, each entry point carrying
/// every ABI of the pinned majors that has its shape) and `<api>_cuda12/` (what
/// CUDA 12 declares differently or only there), each of them split into
/// `types.rs` (bindgen's types and constants), `table.rs` (the entry table),
/// `functions.rs` (the dispatching `unsafe fn`s) and the `mod.rs` that joins them.
/// bindgen runs for each [`Os`]; a part whose text differs between them is
/// written per OS (see [`render_per_os`]).
fn generate_all() -> Result<BTreeMap<PathBuf, String>, String> {
    let pins13 = headers::pins(13)?;
    let pins12 = headers::pins(12)?;
    let mut out = BTreeMap::new();
    for api in &APIS {
        eprintln!("regen-bindings: {}", api.module);
        let (inc13, inc12) = (headers::include_dir(13), headers::include_dir(12));
        let mut p13 = parse_api(13, &pins13, &inc13, api, Os::Linux, None)?;
        let mut p12 = parse_api(12, &pins12, &inc12, api, Os::Linux, None)?;
        // No Windows pass for a module compiled on Linux only: its Linux parts
        // stand for both (one file each).
        let (main_win, diff_win) = if LINUX_ONLY.contains(&api.module) {
            (None, None)
        } else {
            let mut w13 = parse_api(13, &pins13, &inc13, api, Os::Windows, Some(&p13))?;
            let mut w12 = parse_api(12, &pins12, &inc12, api, Os::Windows, Some(&p12))?;
            align_entries(&mut p13, &mut w13);
            align_entries(&mut p12, &mut w12);
            let (main, diff) = assemble(api, &w13, &w12)?;
            (Some(main), Some(diff))
        };
        let (main, diff) = assemble(api, &p13, &p12)?;
        let header_list: Vec<&str> = api.headers.iter().chain(api.extra_files).copied().collect();
        let dirs = [
            (
                api.module.to_string(),
                main,
                main_win,
                banner(&[&pins13, &pins12], &header_list),
            ),
            (
                format!("{}_cuda12", api.module),
                diff,
                diff_win,
                banner(&[&pins12], &header_list),
            ),
        ];
        for (dir, linux, windows, banner) in dirs {
            for (file, text) in render_per_os(&dir, &banner, &linux, windows.as_ref())? {
                out.insert(Path::new(&dir).join(file), text);
            }
        }
    }
    Ok(out)
}

/// Gives the Linux and the Windows parse of one major the same entry list, so
/// that `table.rs` and `functions.rs` come out as one text for both OSes: the
/// entries both declare, in order, then the Linux-only ones, then the
/// Windows-only ones, each taken (with its C declaration) from the OS that
/// declares it and marked as that OS's. An OS-only function is compiled on its
/// OS only (`#[cfg]`); its table entry is everywhere, and elsewhere simply does
/// not resolve, like any entry point a driver lacks.
fn align_entries(linux: &mut Parsed, windows: &mut Parsed) {
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

fn banner(pins: &[&headers::MajorPins], headers_used: &[&str]) -> String {
    let mut s = String::new();
    s.push_str(
        "// @generated by `cargo xtask regen-bindings` (bindgen over the pinned CUDA headers).\n",
    );
    s.push_str("// DO NOT EDIT: change xtask/src/bindings.rs or headers/pins.json and rerun\n");
    s.push_str("// `cargo xtask fetch-headers && cargo xtask regen-bindings`.\n");
    for p in pins {
        let _ = writeln!(
            s,
            "// CUDA {}; headers: {}.",
            p.cuda_version,
            headers_used.join(", ")
        );
        s.push_str("// From the wheels:");
        for w in &p.packages {
            let _ = write!(s, " {}=={}", w.name, w.version);
        }
        s.push_str(".\n");
    }
    s.push('\n');
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
#[derive(Clone)]
struct CFn {
    symbol: String,
    inputs: Vec<(String, syn::Type)>,
    output: Option<syn::Type>,
}

/// One entry point of the generated table.
#[derive(Clone)]
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
    /// Declared on this OS only (`cuWGLGetDevice`: Windows): its function is
    /// compiled there only, its table entry is everywhere (see [`align_entries`]).
    only: Option<Os>,
}

/// What bindgen and the headers of one major give for one API.
struct Parsed {
    /// `13.0`, `12.9`.
    cuda_version: String,
    /// Types, constants, impls and layout checks (the `#define` casts included).
    items: Vec<syn::Item>,
    /// The declared functions.
    fns: Vec<CFn>,
    /// One per public name, sorted by it; `func` indexes `fns`.
    entries: Vec<EntryGen>,
    /// Type aliases, to compare signatures.
    aliases: BTreeMap<String, syn::Type>,
    /// The result enum's `name()` table.
    name_impl: Vec<syn::Item>,
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

/// CCCL's `<nv/target>`, which `cuda_fp16.h` and `cuda_bf16.h` include even when
/// read as C, only for C++ and device code: an empty stand-in (in `target/`) keeps
/// the bindings independent of the CCCL headers. OpenGL's `<GL/gl.h>`, which
/// `cudaGL.h` includes for `GLuint` and `GLenum` alone: a stand-in with the two
/// types as the OpenGL specification defines them (32-bit unsigned), so the
/// bindings depend on no OpenGL headers and are the same on every machine.
///
/// For Windows, also the C library headers the CUDA headers include
/// ([`WINDOWS_LIBC_STANDINS`]): there is no Windows C library (nor a clang
/// resource folder) here, and bindgen keeps only the CUDA headers' items anyway.
/// The stand-ins define the C types and limits from clang's predefined macros
/// for the target (`__SIZE_TYPE__`, `__LONG_MAX__`, …), so they are the target's
/// own; a CUDA header that used anything more of the C library would fail to
/// parse (an unknown name is clang's error) rather than bind wrongly.
fn stub_include_dir(os: Os) -> Result<std::path::PathBuf, String> {
    let dir = crate::util::workspace_root()
        .join("target")
        .join("bindgen-stubs")
        .join(os.name());
    let write = |rel: &str, text: &str| -> Result<(), String> {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| format!("creating {}: {e}", parent.display()))?;
        }
        fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))
    };
    write(
        "nv/target",
        "/* cuda-rs: empty stand-in for CCCL's <nv/target>, used only by C++ and device code */\n",
    )?;
    write(
        "GL/gl.h",
        "/* cuda-rs: stand-in for OpenGL's <GL/gl.h>: the two types cudaGL.h uses */\n\
         #pragma once\n\
         typedef unsigned int GLenum;\n\
         typedef unsigned int GLuint;\n",
    )?;
    if os == Os::Windows {
        for (h, body) in WINDOWS_LIBC_STANDINS {
            write(
                h,
                &format!(
                    "/* cuda-rs: stand-in for the C library's <{h}>, from clang's target macros */\n\
                     #pragma once\n{body}"
                ),
            )?;
        }
    }
    Ok(dir)
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

/// The C library headers the bound CUDA headers include, as stand-ins built on
/// clang's predefined macros (see [`stub_include_dir`]).
const WINDOWS_LIBC_STANDINS: [(&str, &str); 6] = [
    (
        "stddef.h",
        "typedef __SIZE_TYPE__ size_t;\n\
         typedef __PTRDIFF_TYPE__ ptrdiff_t;\n\
         typedef __WCHAR_TYPE__ wchar_t;\n\
         #define NULL ((void *)0)\n\
         #define offsetof(t, m) __builtin_offsetof(t, m)\n",
    ),
    (
        "stdint.h",
        "typedef __INT8_TYPE__ int8_t;\n\
         typedef __INT16_TYPE__ int16_t;\n\
         typedef __INT32_TYPE__ int32_t;\n\
         typedef __INT64_TYPE__ int64_t;\n\
         typedef __UINT8_TYPE__ uint8_t;\n\
         typedef __UINT16_TYPE__ uint16_t;\n\
         typedef __UINT32_TYPE__ uint32_t;\n\
         typedef __UINT64_TYPE__ uint64_t;\n\
         typedef __INTPTR_TYPE__ intptr_t;\n\
         typedef __UINTPTR_TYPE__ uintptr_t;\n\
         #define INT32_MAX __INT32_MAX__\n\
         #define INT64_MAX __INT64_MAX__\n\
         #define UINT32_MAX __UINT32_MAX__\n\
         #define UINT64_MAX __UINT64_MAX__\n",
    ),
    (
        "limits.h",
        "#define CHAR_BIT __CHAR_BIT__\n\
         #define SCHAR_MAX __SCHAR_MAX__\n\
         #define SHRT_MAX __SHRT_MAX__\n\
         #define INT_MAX __INT_MAX__\n\
         #define LONG_MAX __LONG_MAX__\n\
         #define LLONG_MAX __LONG_LONG_MAX__\n\
         #define INT_MIN (-__INT_MAX__ - 1)\n\
         #define LONG_MIN (-__LONG_MAX__ - 1L)\n\
         #define LLONG_MIN (-__LONG_LONG_MAX__ - 1LL)\n\
         #define UCHAR_MAX (__SCHAR_MAX__ * 2 + 1)\n\
         #define USHRT_MAX (__SHRT_MAX__ * 2 + 1)\n\
         #define UINT_MAX (__INT_MAX__ * 2U + 1U)\n\
         #define ULONG_MAX (__LONG_MAX__ * 2UL + 1UL)\n\
         #define ULLONG_MAX (__LONG_LONG_MAX__ * 2ULL + 1ULL)\n",
    ),
    ("stdlib.h", "#include <stddef.h>\n"),
    (
        // `cuComplex.h`'s inline functions call these.
        "math.h",
        "double fabs(double);\n\
         float fabsf(float);\n\
         double sqrt(double);\n\
         float sqrtf(float);\n\
         double hypot(double, double);\n\
         float hypotf(float, float);\n",
    ),
    (
        // `cublasLtLoggerSetFile` takes a `FILE *`, whose layout is the C
        // library's own: opaque here, as the Windows C library declares it to users.
        "stdio.h",
        "#include <stddef.h>\ntypedef struct _iobuf FILE;\n",
    ),
];

fn parse_api(
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

/// `s` as an identifier, or why it is not one.
fn ident(s: &str) -> Result<proc_macro2::Ident, String> {
    syn::parse_str::<proc_macro2::Ident>(s)
        .map_err(|e| format!("`{s}` is not a Rust identifier: {e}"))
}

/// `s` as a C string literal (`c"s"`).
fn c_lit(s: &str) -> Result<proc_macro2::Literal, String> {
    let c = std::ffi::CString::new(s).map_err(|e| format!("`{s}` as a C string: {e}"))?;
    Ok(proc_macro2::Literal::c_string(&c))
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

/// One ABI of an entry point, as an expression of the table.
fn abi_tokens(major: u32, api: &Api, e: &EntryGen) -> Result<TokenStream, String> {
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
struct ModuleParts {
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
fn render_per_os(
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
fn defined_name(item: &syn::Item) -> Option<String> {
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

/// The main module (CUDA 13 declarations; each entry with every ABI of the same
/// shape) and the CUDA 12 module (what 12.9 declares differently or only there).
fn assemble(api: &Api, p13: &Parsed, p12: &Parsed) -> Result<(ModuleParts, ModuleParts), String> {
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

/// One entry point of a module: its entry, its C declaration, its ABIs (newest first).
struct Row<'a> {
    entry: &'a EntryGen,
    func: &'a CFn,
    abis: Vec<TokenStream>,
}

/// A module's parts: its types, its entry table and one dispatching `unsafe fn`
/// per entry (`child`: the CUDA 12 module, dispatching through `__entry12`).
fn module_parts(
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

/// The `#define NAME ((TYPE)VALUE)` constants bindgen cannot evaluate
/// (`CU_STREAM_LEGACY`, `CU_LAUNCH_PARAM_END`, `cudaCpuDeviceId`, …), as Rust
/// constants of that type.
fn cast_defines(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::check_safety_comments;

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

    /// The stale-file check of `cargo xtask regen-bindings --check`, under
    /// `cargo test`: regenerates every file from the pinned headers and fails
    /// naming each one that differs. Without the headers (`cargo xtask
    /// fetch-headers` puts them in `.headers/`, which is not committed) it says
    /// so and passes; CI fetches them and runs `--check` as well.
    #[test]
    fn generated_bindings_are_fresh() {
        let absent: Vec<PathBuf> = headers::MAJORS
            .iter()
            .map(|&m| headers::include_dir(m))
            .filter(|d| !d.is_dir())
            .collect();
        if !absent.is_empty() {
            eprintln!(
                "SKIPPED generated_bindings_are_fresh: no pinned headers in {} \
                 (run `cargo xtask fetch-headers`; CI runs `cargo xtask regen-bindings --check`)",
                absent
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return;
        }
        require_headers().unwrap();
        let files = generate_all().unwrap();
        let stale = write_all(&files, true).unwrap();
        let shown: Vec<String> = stale.iter().map(|e| report(e)).collect();
        assert!(
            shown.is_empty(),
            "stale generated files:\n  {}",
            shown.join("\n  ")
        );
    }

    /// Every committed `functions.rs` (and `functions_windows.rs`, where
    /// Windows has its own) has its two `// SAFETY:` comments in each of its
    /// functions, directly above each `unsafe` block (clippy's
    /// `undocumented_unsafe_blocks` checks the same when the crate is linted).
    #[test]
    fn committed_functions_comment_every_unsafe_block() {
        let out = workspace_root().join(OUT_REL);
        let mut dirs = 0;
        for api in &APIS {
            for dir in [api.module.to_string(), format!("{}_cuda12", api.module)] {
                for file in ["functions.rs", "functions_windows.rs"] {
                    let path = out.join(&dir).join(file);
                    if file != "functions.rs" && !path.exists() {
                        continue;
                    }
                    let text = fs::read_to_string(&path).unwrap();
                    let fns = text.matches("\npub unsafe fn ").count();
                    let blocks = check_safety_comments(&path.display().to_string(), &text)
                        .unwrap_or_else(|e| panic!("{e}"));
                    assert_eq!(blocks, 2 * fns, "{}", path.display());
                    assert!(
                        !text.contains("__cuda_rs_safety_comment"),
                        "{}",
                        path.display()
                    );
                }
                dirs += 1;
            }
        }
        assert_eq!(dirs, 2 * APIS.len());
    }

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
        assert_eq!(os_cfg(Some(Os::Windows)).to_string(), "# [cfg (windows)]");
        assert!(os_cfg(None).is_empty());
    }
}
