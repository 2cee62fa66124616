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
//! through formatting as markers that [`SafetyComments`](crate::codegen::SafetyComments) places and counts.
//!
//! The result is, per API, `crates/cudars-bindings/src/generated/<api>/` and
//! `<api>_cuda12/`, each with `types.rs`, `table.rs`, `functions.rs` and the
//! `mod.rs` that joins them. Every file goes through
//! [`ensure_file_contents`]: written only when it changes, or, with `--check`,
//! named (with the command that fixes it) when it is stale; files the generator
//! no longer makes are removed (or, with `--check`, named).
//!
//! The generator's parts, in the order the data flows through them:
//!
//! - [`apis`]: the table of C APIs (headers, how entries resolve, result enum)
//!   and the operating systems.
//! - [`parse`]: one bindgen pass (API × CUDA major × OS) into a
//!   [`Parsed`](parse::Parsed), with the help of [`defines`] (what the headers'
//!   text says that bindgen does not) and [`stubs`] (stand-in headers).
//! - [`merge`]: the Linux and Windows parses get one entry list; CUDA 13's and
//!   12's become the main module and the `cuda12` module.
//! - [`render`]: each module's `types.rs`, `table.rs`, `functions.rs` and
//!   `mod.rs`, per OS where the text differs.
//! - this module: the command, which writes (or checks) every file.
//!
//! Architecture Invariant: the output depends only on the pinned headers and
//! this code (no local path, clock or host OS reaches it), so `--check` on any
//! machine agrees with the committed files.

mod apis;
mod defines;
mod merge;
mod parse;
mod render;
mod stubs;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub(crate) use self::apis::APIS;
use self::apis::{LINUX_ONLY, Os};
use self::merge::{align_entries, assemble};
use self::parse::parse_api;
use self::render::render_per_os;
use crate::codegen::{FileError, Generator, ensure_file_contents, prune_dir};
use crate::headers;
use crate::util::{no_more, report, take_flag, workspace_root};

/// Where the generated files go, relative to the workspace root.
const OUT_REL: &str = "crates/cudars-bindings/src/generated";

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut args = args.to_vec();
    let check = take_flag(&mut args, "--check");
    no_more(&args)?;
    require_libclang()?;
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
/// What to do about a missing libclang, the end of every error that reports one.
const LIBCLANG_HELP: &str = "install it (Debian/Ubuntu: `apt-get install libclang-dev`; \
     Fedora: `dnf install clang-devel`; macOS: `xcode-select --install` or `brew install llvm`), \
     or set LIBCLANG_PATH to the directory that holds libclang.so (libclang.dylib, libclang.dll)";

/// Loads libclang the way bindgen will (clang-sys's search: `LIBCLANG_PATH`
/// alone when set, else `llvm-config --libdir`, then the standard directories),
/// before bindgen is called: bindgen panics when it cannot, where this says
/// what to install.
fn require_libclang() -> Result<(), String> {
    clang_sys::load()
        .map_err(|e| format!("bindgen needs libclang, and it was not found ({e}): {LIBCLANG_HELP}"))
}

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

fn banner(pins: &[&headers::MajorPins], headers_used: &[&str]) -> String {
    let mut s = String::new();
    s.push_str(
        "// @generated by `cargo xtask regen-bindings` (bindgen over the pinned CUDA headers).\n",
    );
    s.push_str("// DO NOT EDIT: change xtask/src/bindings/ or headers/pins.json and rerun\n");
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

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::codegen::check_safety_comments;

    /// The stale-file check of `cargo xtask regen-bindings --check`, under
    /// `cargo test`: regenerates every file from the pinned headers and fails
    /// naming each one that differs. Without the headers (`cargo xtask
    /// fetch-headers` puts them in `.headers/`, which is not committed) it says
    /// so and passes; CI fetches them and runs `--check` as well.
    /// Without libclang the freshness check fails with the same error as the
    /// command (what to install), not with bindgen's panic.
    #[test]
    fn generated_bindings_are_fresh() -> Result<(), String> {
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
            return Ok(());
        }
        require_libclang()?;
        require_headers().unwrap();
        let files = generate_all().unwrap();
        let stale = write_all(&files, true).unwrap();
        let shown: Vec<String> = stale.iter().map(|e| report(e)).collect();
        assert!(
            shown.is_empty(),
            "stale generated files:\n  {}",
            shown.join("\n  ")
        );
        Ok(())
    }

    /// Set in the child of [`without_libclang_regen_bindings_says_what_to_install`].
    const NO_LIBCLANG_CHILD: &str = "CUDA_RS_XTASK_NO_LIBCLANG_CHILD";

    /// Issue 43 point 14: with no libclang to be found (`LIBCLANG_PATH` an empty
    /// directory, which clang-sys then searches alone, and no `llvm-config` on
    /// `PATH`), `regen-bindings --check` returns the error that names what to
    /// install before bindgen is called (`main` prints it and exits non-zero);
    /// bindgen used to panic. Run in a child process, whose environment is its
    /// own.
    #[test]
    fn without_libclang_regen_bindings_says_what_to_install() {
        if std::env::var_os(NO_LIBCLANG_CHILD).is_some() {
            let e = run(&["--check".to_string()]).unwrap_err();
            assert!(
                e.contains("libclang-dev") && e.contains("LIBCLANG_PATH"),
                "{e}"
            );
            assert!(e.contains("bindgen needs libclang"), "{e}");
            assert_eq!(require_libclang().unwrap_err(), e);
            println!("NO_LIBCLANG_CHILD_OK");
            return;
        }
        let empty = tempfile::tempdir().unwrap();
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "bindings::tests::without_libclang_regen_bindings_says_what_to_install",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(NO_LIBCLANG_CHILD, "1")
            .env("LIBCLANG_PATH", empty.path())
            .env("PATH", empty.path())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "the child failed:\n{text}");
        assert!(text.contains("NO_LIBCLANG_CHILD_OK"), "{text}");
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
}
