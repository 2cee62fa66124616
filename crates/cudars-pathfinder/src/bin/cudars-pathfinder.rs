//! `cudars-pathfinder`: load and find NVIDIA libraries, headers and tools from the
//! command line, and diagnose a CUDA set-up (`cudars-pathfinder doctor`).

use std::ffi::{c_int, c_void};
use std::io::Write as _;
use std::process::ExitCode;

use cudars_pathfinder::{
    ArtifactKind, LoadedDl, Located, PathfinderError, catalog, find_bitcode_lib,
    find_nvidia_binary_utility, find_nvidia_header_directory, find_static_lib,
    load_nvidia_dynamic_lib, locate_nvidia_dynamic_lib, supported_names,
};
use serde_json::json;

const USAGE: &str = "\
cudars-pathfinder: find and load NVIDIA CUDA libraries, headers and tools

usage:
  cudars-pathfinder load <name>... [--json]     load libraries (cudart, nvrtc, nvJitLink, nvvm, cuda, nvml, ...)
  cudars-pathfinder locate <name>... [--json]   find libraries on disk without loading them
  cudars-pathfinder find <header|binary|bitcode|static> <name>... [--json]
  cudars-pathfinder doctor [--verbose]          what is found where, and why not
  cudars-pathfinder list                        every supported name
  cudars-pathfinder --version

exit code: 0 when everything asked for was found, 1 when something was not, 2 on bad usage.
";

fn main() -> ExitCode {
    // `std::env::args` would panic on an argument that is not UTF-8.
    let mut args: Vec<String> = Vec::new();
    for arg in std::env::args_os().skip(1) {
        match arg.into_string() {
            Ok(a) => args.push(a),
            Err(bad) => {
                emit_err(&format!(
                    "cudars-pathfinder: the argument {bad:?} is not valid UTF-8"
                ));
                return ExitCode::from(2);
            }
        }
    }
    let json = take_flag(&mut args, "--json");
    let verbose = take_flag(&mut args, "--verbose") | take_flag(&mut args, "-v");
    let Some(cmd) = (!args.is_empty()).then(|| args.remove(0)) else {
        emit_err(USAGE.trim_end());
        return ExitCode::from(2);
    };
    match cmd.as_str() {
        "load" if !args.is_empty() => load(&args, json),
        "locate" if !args.is_empty() => locate(&args, json),
        "find" if args.len() >= 2 => {
            let kind = args.remove(0);
            find(&kind, &args, json)
        }
        "doctor" => doctor(verbose),
        "list" => list(),
        "--version" | "-V" => {
            emit(&format!("cudars-pathfinder {}", env!("CARGO_PKG_VERSION")));
            ExitCode::SUCCESS
        }
        "help" | "--help" | "-h" => {
            emit(USAGE.trim_end());
            ExitCode::SUCCESS
        }
        _ => {
            emit_err(USAGE.trim_end());
            ExitCode::from(2)
        }
    }
}

fn take_flag(args: &mut Vec<String>, flag: &str) -> bool {
    let before = args.len();
    args.retain(|a| a != flag);
    args.len() != before
}

fn error_json(name: &str, e: &PathfinderError) -> serde_json::Value {
    json!({
        "libname": name,
        "error": {
            "kind": e.kind_name(),
            "message": message(e),
            "searched": e.searched().iter().map(|s| json!({"step": s.step, "place": s.place, "outcome": s.outcome})).collect::<Vec<_>>(),
        }
    })
}

/// The error and its causes, each said once (`a: b: c`): a failed dependency's
/// own error is its source, not part of its message.
fn message(e: &PathfinderError) -> String {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// One line on stderr; a closed stderr is not worth a panic either.
fn emit_err(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

fn emit(line: &str) {
    let mut out = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ = writeln!(out, "{line}");
}

fn load(names: &[String], json: bool) -> ExitCode {
    let mut ok = true;
    for name in names {
        match load_nvidia_dynamic_lib(name) {
            Ok(l) => {
                if json {
                    emit(
                        &json!({
                            "libname": name,
                            "abs_path": l.abs_path().display().to_string(),
                            "found_via": l.found_via().label(),
                            "was_already_loaded_from_elsewhere": l.was_already_loaded_from_elsewhere(),
                        })
                        .to_string(),
                    );
                } else {
                    emit(&format!(
                        "{name}: {} (via {})",
                        l.abs_path().display(),
                        l.found_via()
                    ));
                }
            }
            Err(e) => {
                ok = false;
                if json {
                    emit(&error_json(name, &e).to_string());
                } else {
                    emit_err(&format!("{name}: error: {}", message(&e)));
                }
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn locate(names: &[String], json: bool) -> ExitCode {
    let mut ok = true;
    for name in names {
        match locate_nvidia_dynamic_lib(name) {
            Ok(l) => {
                if json {
                    emit(
                        &json!({"libname": name, "abs_path": l.abs_path.display().to_string(), "found_via": l.found_via.label()})
                            .to_string(),
                    );
                } else {
                    emit(&format!(
                        "{name}: {} (via {})",
                        l.abs_path.display(),
                        l.found_via
                    ));
                }
            }
            Err(e) => {
                ok = false;
                if json {
                    emit(&error_json(name, &e).to_string());
                } else {
                    emit_err(&format!("{name}: error: {}", message(&e)));
                }
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

type Finder = fn(&str) -> Result<Located, PathfinderError>;

fn finder(kind: &str) -> Option<(ArtifactKind, Finder)> {
    Some(match kind {
        "header" | "headers" => (
            ArtifactKind::HeaderDir,
            find_nvidia_header_directory as Finder,
        ),
        "binary" | "bin" => (ArtifactKind::BinaryUtility, find_nvidia_binary_utility),
        "bitcode" => (ArtifactKind::BitcodeLib, find_bitcode_lib),
        "static" => (ArtifactKind::StaticLib, find_static_lib),
        _ => return None,
    })
}

fn find(kind: &str, names: &[String], json: bool) -> ExitCode {
    let Some((_, f)) = finder(kind) else {
        emit_err(&format!(
            "unknown kind `{kind}`: use header, binary, bitcode or static"
        ));
        return ExitCode::from(2);
    };
    let mut ok = true;
    for name in names {
        match f(name) {
            Ok(l) => {
                if json {
                    emit(&json!({"name": name, "abs_path": l.abs_path.display().to_string(), "found_via": l.found_via.label()}).to_string());
                } else {
                    emit(&format!(
                        "{name}: {} (via {})",
                        l.abs_path.display(),
                        l.found_via
                    ));
                }
            }
            Err(e) => {
                ok = false;
                if json {
                    let mut v = error_json(name, &e);
                    if let Some(o) = v.as_object_mut() {
                        o.remove("libname");
                        o.insert("name".into(), json!(name));
                    }
                    emit(&v.to_string());
                } else {
                    emit_err(&format!("{name}: error: {}", message(&e)));
                }
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn list() -> ExitCode {
    emit(&format!(
        "libraries: {}",
        catalog::supported_nvidia_libnames()
            .collect::<Vec<_>>()
            .join(" ")
    ));
    for (label, kind) in [
        ("headers", ArtifactKind::HeaderDir),
        ("binaries", ArtifactKind::BinaryUtility),
        ("bitcode", ArtifactKind::BitcodeLib),
        ("static", ArtifactKind::StaticLib),
    ] {
        emit(&format!("{label}: {}", supported_names(kind).join(" ")));
    }
    ExitCode::SUCCESS
}

/// The driver's CUDA version (`cuDriverGetVersion`; needs no `cuInit`).
fn driver_version(cuda: &LoadedDl) -> Result<(i32, i32), String> {
    let sym = cuda
        .symbol(c"cuDriverGetVersion")
        .ok_or("libcuda has no cuDriverGetVersion")?;
    type GetVersion = unsafe extern "C" fn(*mut c_int) -> c_int;
    // SAFETY: cuDriverGetVersion has this signature in cuda.h.
    let f = unsafe { std::mem::transmute::<*mut c_void, GetVersion>(sym.as_ptr()) };
    let mut v: c_int = 0;
    // SAFETY: `v` is a valid, writable int.
    let rc = unsafe { f(&mut v) };
    if rc != 0 {
        return Err(format!("cuDriverGetVersion failed with CUresult {rc}"));
    }
    Ok((v / 1000, (v % 1000) / 10))
}

/// The CUDA version a toolkit library reports of itself (`cudaRuntimeGetVersion`,
/// `nvrtcVersion`, `nvJitLinkVersion`), as `major.minor`: what decides which ABI
/// cudars-bindings drives it through.
fn toolkit_version(name: &str, lib: &LoadedDl) -> Option<(i32, i32)> {
    type One = unsafe extern "C" fn(*mut c_int) -> c_int;
    type Two = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;
    match name {
        "cudart" => {
            let sym = lib.symbol(c"cudaRuntimeGetVersion")?;
            // SAFETY: `cudaRuntimeGetVersion(int*)` in every CUDA version.
            let f = unsafe { std::mem::transmute::<*mut c_void, One>(sym.as_ptr()) };
            let mut v: c_int = 0;
            // SAFETY: `v` is valid for writes.
            (unsafe { f(&mut v) } == 0).then_some((v / 1000, (v % 1000) / 10))
        }
        "nvrtc" | "nvJitLink" => {
            let sym = if name == "nvrtc" {
                lib.symbol(c"nvrtcVersion")?
            } else {
                lib.symbol(c"nvJitLinkVersion")?
            };
            // SAFETY: both take two `int*` (nvJitLink's are `unsigned*`, same layout).
            let f = unsafe { std::mem::transmute::<*mut c_void, Two>(sym.as_ptr()) };
            let (mut a, mut b): (c_int, c_int) = (0, 0);
            // SAFETY: both are valid for writes.
            (unsafe { f(&mut a, &mut b) } == 0).then_some((a, b))
        }
        _ => None,
    }
}

/// One line on why something was not found; `doctor --verbose` prints the whole error.
fn short_reason(e: &PathfinderError) -> String {
    match e {
        PathfinderError::NotFound { searched, .. } => format!("searched {} places", searched.len()),
        PathfinderError::Dependency {
            dependency, source, ..
        } => {
            format!("needs `{dependency}`: {}", short_reason(source))
        }
        other => other.to_string(),
    }
}

fn show_env(var: &str) -> String {
    match std::env::var_os(var) {
        Some(v) if !v.is_empty() => v.to_string_lossy().into_owned(),
        _ => "(not set)".into(),
    }
}

fn doctor(verbose: bool) -> ExitCode {
    emit(&format!(
        "cudars-pathfinder {} doctor",
        env!("CARGO_PKG_VERSION")
    ));
    emit("\nEnvironment");
    for var in [
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "CUDA_PATH",
        "CUDA_HOME",
        "LD_LIBRARY_PATH",
        "PYTHONPATH",
    ] {
        emit(&format!("  {var:<16} {}", show_env(var)));
    }
    let sp = cudars_pathfinder::site_packages_dirs();
    if sp.is_empty() {
        emit("  site-packages    (none found)");
    }
    for (i, d) in sp.iter().enumerate() {
        emit(&format!(
            "  {:<16} {}",
            if i == 0 { "site-packages" } else { "" },
            d.display()
        ));
    }

    emit("\nDriver");
    match load_nvidia_dynamic_lib("cuda") {
        Ok(cuda) => match driver_version(cuda) {
            Ok((maj, min)) => emit(&format!(
                "  CUDA {maj}.{min} driver at {}",
                cuda.abs_path().display()
            )),
            Err(e) => emit(&format!(
                "  driver at {} but: {e}",
                cuda.abs_path().display()
            )),
        },
        Err(e) => emit(&format!(
            "  no CUDA driver ({}): libcuda.so.1 comes with the NVIDIA driver, not the toolkit or the wheels",
            if verbose {
                message(&e)
            } else {
                short_reason(&e)
            }
        )),
    }

    emit("\nToolkit libraries (their CUDA major picks the ABI cudars-bindings uses: 12 or 13)");
    for name in ["cudart", "nvrtc", "nvJitLink"] {
        match load_nvidia_dynamic_lib(name) {
            Ok(l) => match toolkit_version(name, l) {
                Some((maj, min)) => emit(&format!(
                    "  {name:<10} CUDA {maj}.{min} at {}",
                    l.abs_path().display()
                )),
                None => emit(&format!(
                    "  {name:<10} at {} (it does not say its version)",
                    l.abs_path().display()
                )),
            },
            Err(e) => emit(&format!("  {name:<10} not found ({})", short_reason(&e))),
        }
    }

    let mut found = 0usize;
    let all = catalog::catalog();
    emit(&format!("\nLibraries ({})", all.len()));
    emit(&format!("  {:<14} {:<34} {}", "name", "status", "path"));
    for d in all {
        let (status, detail) = match load_nvidia_dynamic_lib(d.name) {
            Ok(l) => {
                found += 1;
                (
                    format!("found via {}", l.found_via()),
                    l.abs_path().display().to_string(),
                )
            }
            Err(e) => {
                let s = match &e {
                    PathfinderError::NotFound { .. } => "not found".to_string(),
                    other => other.kind_name().to_string(),
                };
                (
                    s,
                    if verbose {
                        message(&e)
                    } else {
                        short_reason(&e)
                    },
                )
            }
        };
        emit(&format!("  {:<14} {:<34} {}", d.name, status, detail));
    }

    let mut other_found = 0usize;
    let mut other_total = 0usize;
    for (title, kind) in [
        ("Header directories", ArtifactKind::HeaderDir),
        ("Binary utilities", ArtifactKind::BinaryUtility),
        ("Bitcode libraries", ArtifactKind::BitcodeLib),
        ("Static libraries", ArtifactKind::StaticLib),
    ] {
        let Some((_, f)) = finder(match kind {
            ArtifactKind::HeaderDir => "header",
            ArtifactKind::BinaryUtility => "binary",
            ArtifactKind::BitcodeLib => "bitcode",
            _ => "static",
        }) else {
            continue;
        };
        emit(&format!("\n{title}"));
        for name in supported_names(kind) {
            other_total += 1;
            match f(name) {
                Ok(l) => {
                    other_found += 1;
                    emit(&format!(
                        "  {name:<18} {:<30} {}",
                        format!("found via {}", l.found_via),
                        l.abs_path.display()
                    ));
                }
                Err(e) if verbose => emit(&format!("  {name:<18} {}", message(&e))),
                Err(_) => emit(&format!("  {name:<18} not found")),
            }
        }
    }
    emit(&format!(
        "\nSummary: {found} of {} libraries and {other_found} of {other_total} headers/tools/files found.",
        all.len()
    ));
    if !verbose {
        emit(
            "Run `cudars-pathfinder doctor --verbose` to see every place searched for what was not found.",
        );
    }
    ExitCode::SUCCESS
}
