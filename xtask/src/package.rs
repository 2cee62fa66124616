//! `cargo xtask package-tests --out DIR`: GPU tests for a machine without Rust.
//!
//! Builds every test and bench binary of the workspace in release mode without
//! running them, copies them (stripped) with the workspace's binaries into `DIR`, and
//! writes `DIR/run.sh`, which runs each test binary with `CUDA_TEST_REQUIRE_GPU=1`
//! and prints a per-binary and a total summary whose last line is
//! `N passed, N failed`, and `DIR/bench.sh`, which runs the benchmarks. The driver
//! shim (`tests/driver-shim`) goes to `DIR/shim/libcuda.so.1`, and
//! `DIR/run-shim.sh VERSION` runs `run.sh` over it, as if on an older driver. The
//! recording NVTX tool (`tests/nvtx-inject`) goes to `DIR/lib/nvtx/`, and
//! `DIR/run-nvtx.sh` runs the `profiled_quickstart` example under it.
//! `DIR/run-launchers.sh` (from `scripts/`) runs cudars-nccl's tests and example
//! as one process per GPU with each launcher's variables, over the GPUs' links
//! and over NCCL's socket transport between network namespaces; where the
//! package holds cudars-nccl's tests, `DIR/iproute/` carries Debian's `ip` and the
//! libraries it loads (the lent GPU machines have none), from `apt-get download`
//! as the glvnd libraries are; without the network the package goes without it,
//! and the script's socket runs fall back to loopback.
//! The folder is packed into `DIR.tar.xz`, which is what travels (at most 64 MiB:
//! stripped test binaries pack about tenfold).
//!
//! The OpenGL interop tests need glvnd's `libEGL.so.1` and `libOpenGL.so.0`, which a
//! bare GPU machine may lack: the package carries Debian's glvnd libraries
//! (`DIR/lib/egl/`, from `apt-get download`, cached in `target/gpu-pkg-debs/`), and
//! `run.sh` puts them on the loader's path only where the system has no
//! `libEGL.so.1`. `CUDA_RS_PACKAGE_NO_GL=1` packages without them (no network).

mod gl;
mod iproute;
mod scripts;

use serde_json::Value;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use self::gl::gl_libraries;
use self::iproute::iproute;
use self::scripts::{RUN_NVTX_SH, bench_sh, run_sh, run_shim_sh, write_script};
use crate::util::{cargo, no_more, run_cmd, take_value, workspace_root};

/// The most a package may weigh, so that it travels to a GPU machine.
const MAX_BYTES: u64 = 64 * 1024 * 1024;

struct Artifact {
    kind: &'static str,
    name: String,
    path: PathBuf,
}

/// Set to `1`, packaging goes on without the glvnd libraries (no network for
/// `apt-get download`); the OpenGL tests then need them on the GPU machine.
const NO_GL_ENV: &str = "CUDA_RS_PACKAGE_NO_GL";

/// The binaries whose every test calls cuBLAS, cuBLASLt, cuFFT, cuSOLVER (over
/// cuBLAS) or cuFile once the
/// driver is new enough: libraries that take driver functions by name, past the
/// driver shim, so `run-shim.sh` leaves them out where the crates would not refuse
/// them first (see the script).
fn calls_libraries_by_name(binary: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "cudars-blas--test-gpu",
        "cudars-fft--test-gpu",
        "cudars-file--test-gpu",
        "cudars-solver--test-gpu",
        "cudars-blas--example-",
        "cudars-fft--example-",
        "cudars-solver--example-",
        "cudars-nccl--example-data_parallel_mlp",
    ];
    PREFIXES.iter().any(|p| binary.starts_with(p))
}

/// Single tests of other binaries that call those libraries (`tests/tests/library_kit.rs`,
/// `tests/tests/library_drops.rs`).
const BY_NAME_LIBRARY_TESTS: &[&str] = &[
    "cublas_runs_on_a_green_context_stream",
    "cufft_runs_on_a_green_context_stream",
    "cusolver_runs_on_a_green_context_stream",
    "cublas_handles_dropped_on_a_driver_callback_thread_are_destroyed_later",
    "cusolver_handles_dropped_on_a_driver_callback_thread_are_destroyed_later",
    "fft_plans_dropped_on_a_driver_callback_thread_are_destroyed_later",
];

/// The package of the driver shim.
const SHIM_PACKAGE: &str = "cudars-driver-shim";

/// Runs `cargo ARGS --message-format=json-render-diagnostics` in the workspace
/// root and returns its `compiler-artifact` messages.
fn cargo_artifacts(args: &[&str]) -> Result<Vec<Value>, String> {
    let mut cmd = cargo();
    cmd.current_dir(workspace_root())
        .args(args)
        .arg("--message-format=json-render-diagnostics")
        .stdout(Stdio::piped());
    let shown = format!("{cmd:?}");
    let mut child = cmd.spawn().map_err(|e| format!("starting {shown}: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout from cargo")?;
    let mut out = Vec::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.map_err(|e| format!("reading cargo's output: {e}"))?;
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if msg["reason"] == "compiler-artifact" {
            out.push(msg);
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for cargo: {e}"))?;
    if !status.success() {
        return Err(format!("{shown} failed with {status}"));
    }
    Ok(out)
}

/// Builds `args` over the whole workspace: the test, bench, example and binary
/// targets to package.
fn build(args: &[&str]) -> Result<Vec<Artifact>, String> {
    let mut all = args.to_vec();
    all.push("--workspace");
    let mut out = Vec::new();
    for msg in cargo_artifacts(&all)? {
        let Some(exe) = msg["executable"].as_str() else {
            continue;
        };
        let target_kind = msg["target"]["kind"][0].as_str().unwrap_or("");
        let target_name = msg["target"]["name"].as_str().unwrap_or("unnamed");
        let package = package_name(msg["package_id"].as_str().unwrap_or("pkg"));
        // The xtask is a tool of this checkout, not something to run on a GPU machine.
        if package == "xtask" {
            continue;
        }
        let is_test = msg["profile"]["test"].as_bool().unwrap_or(false);
        let Some((kind, name)) = classify(target_kind, is_test, &package, target_name) else {
            continue;
        };
        out.push(Artifact {
            kind,
            name,
            path: PathBuf::from(exe),
        });
    }
    Ok(out)
}

/// The package of the recording NVTX tool (an NVTX injection library).
const NVTX_TOOL_PACKAGE: &str = "cudars-nvtx-inject";

/// Builds a cdylib package in release mode and returns its shared library.
fn build_shared_library(package: &str) -> Result<PathBuf, String> {
    let msgs = cargo_artifacts(&["build", "--release", "-p", package, "--lib"])?;
    shared_library(&msgs, package)
        .ok_or_else(|| format!("cargo built no shared library for {package}"))
}

/// `package`'s shared library among cargo's `compiler-artifact` messages.
fn shared_library(msgs: &[Value], package: &str) -> Option<PathBuf> {
    msgs.iter()
        .filter(|m| package_name(m["package_id"].as_str().unwrap_or("")) == package)
        .filter_map(|m| m["filenames"].as_array())
        .flatten()
        .filter_map(Value::as_str)
        .find(|f| f.ends_with(".so"))
        .map(PathBuf::from)
}

/// What a built target is in the package, and its file name there; `None` for
/// targets that are not packaged.
fn classify(
    target_kind: &str,
    is_test: bool,
    package: &str,
    target_name: &str,
) -> Option<(&'static str, String)> {
    Some(match (target_kind, is_test) {
        ("bench", _) => ("bench", format!("{package}--{target_name}")),
        ("bin", false) => ("bin", target_name.to_string()),
        // The shim's examples (`host_cost`) run against its fake driver, under
        // `scripts/host-cost.sh` here; on a GPU machine there is nothing for them.
        ("example", false) if package == SHIM_PACKAGE => return None,
        ("example", false) => ("example", format!("{package}--example-{target_name}")),
        // `--all-targets` also builds each example as a test harness with no tests;
        // packaging that under the example's name would make the runner "pass" an
        // example it never ran.
        ("example", true) => return None,
        // A proc-macro crate's unit tests link the toolchain's `libstd` dynamically
        // (it is not on a GPU machine) and need no GPU: they run in CI.
        ("proc-macro", true) => return None,
        // The tidy checks read the source tree, which does not travel; they need
        // no GPU and run in CI.
        ("test", true) if package == "cudars-tests" && target_name == "tidy" => return None,
        // A library's unit tests, whatever its crate types (`cdylib`, `rlib`, …).
        ("cdylib" | "rlib" | "dylib" | "staticlib", true) => {
            ("test", format!("{package}--lib-{target_name}"))
        }
        (_, true) => ("test", format!("{package}--{target_kind}-{target_name}")),
        _ => return None,
    })
}

/// The package name in a package id: `path+file:///…/cudars-bindings#0.1.0` or
/// `path+file:///…/tests#cudars-tests@0.0.0` or `registry+…#name@1.0`.
fn package_name(id: &str) -> String {
    let (url, frag) = id.rsplit_once('#').unwrap_or((id, ""));
    match frag.split_once('@') {
        Some((name, _)) => name.to_string(),
        None => url.rsplit('/').next().unwrap_or("pkg").to_string(),
    }
}

fn copy_stripped(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::copy(from, to).map_err(|e| format!("copying {}: {e}", from.display()))?;
    // `strip` is optional: without it the binary is only larger.
    match Command::new("strip")
        .arg("--strip-unneeded")
        .arg(to)
        .status()
    {
        Ok(s) if s.success() => {}
        _ => eprintln!("package-tests: note: could not strip {}", to.display()),
    }
    Ok(())
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut args = args.to_vec();
    let out = take_value(&mut args, "--out")?.ok_or("--out DIR is required")?;
    // `--packages cudars-blas,cudars-fft`: only those packages' tests, benches and
    // examples (the workspace's binaries always), to keep a package under the
    // size that travels to the GPU machine.
    let prefixes =
        |v: String| -> Vec<String> { v.split(',').map(|p| format!("{}--", p.trim())).collect() };
    let only: Option<Vec<String>> = take_value(&mut args, "--packages")?.map(prefixes);
    // `--exclude cudars-core`: every package but those (the second package of a
    // workspace too large for one).
    let excluded: Vec<String> = take_value(&mut args, "--exclude")?
        .map(prefixes)
        .unwrap_or_default();
    no_more(&args)?;
    let out = PathBuf::from(out);
    if out.exists() {
        std::fs::remove_dir_all(&out).map_err(|e| format!("clearing {}: {e}", out.display()))?;
    }
    let bin_dir = out.join("bin");
    std::fs::create_dir_all(&bin_dir)
        .map_err(|e| format!("creating {}: {e}", bin_dir.display()))?;

    let mut artifacts = build(&["test", "--release", "--all-targets", "--no-run"])?;
    artifacts.extend(build(&["bench", "--no-run"])?);
    // The examples as programs (`test --all-targets` builds them only as harnesses).
    artifacts.extend(build(&["build", "--release", "--examples"])?);
    // The workspace's own binaries (the pathfinder CLI, …) that tests start.
    // Two targets that build to one file (examples of one name in two packages)
    // would be packaged as the same program under two names.
    let mut by_path = std::collections::BTreeMap::new();
    for a in &artifacts {
        if let Some(other) = by_path
            .insert(&a.path, &a.name)
            .filter(|other| **other != a.name)
        {
            return Err(format!(
                "{} and {} are both built to {}; rename one of them",
                other,
                a.name,
                a.path.display()
            ));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut tests = Vec::new();
    let mut benches = Vec::new();
    let mut examples = Vec::new();
    let mut total: u64 = 0;
    for a in &artifacts {
        if !seen.insert(a.name.clone()) {
            continue;
        }
        if a.kind != "bin" {
            let named = |list: &[String]| list.iter().any(|p| a.name.starts_with(p.as_str()));
            if only.as_deref().is_some_and(|only| !named(only)) || named(&excluded) {
                continue;
            }
        }
        let dest = bin_dir.join(&a.name);
        copy_stripped(&a.path, &dest)?;
        total += std::fs::metadata(&dest).map(|m| m.len()).unwrap_or(0);
        match a.kind {
            "test" => tests.push(a.name.clone()),
            "bench" => benches.push(a.name.clone()),
            "example" => examples.push(a.name.clone()),
            _ => {}
        }
    }
    tests.sort();
    benches.sort();
    examples.sort();
    // The driver shim: run.sh as if on an older driver (run-shim.sh).
    let shim_dir = out.join("shim");
    std::fs::create_dir_all(&shim_dir)
        .map_err(|e| format!("creating {}: {e}", shim_dir.display()))?;
    let shim = shim_dir.join("libcuda.so.1");
    copy_stripped(&build_shared_library(SHIM_PACKAGE)?, &shim)?;
    total += std::fs::metadata(&shim).map(|m| m.len()).unwrap_or(0);
    // The recording NVTX tool: its tests and run-nvtx.sh load it from lib/nvtx/.
    let nvtx_dir = out.join("lib").join("nvtx");
    std::fs::create_dir_all(&nvtx_dir)
        .map_err(|e| format!("creating {}: {e}", nvtx_dir.display()))?;
    let nvtx_tool = nvtx_dir.join("libcudars_nvtx_inject.so");
    copy_stripped(&build_shared_library(NVTX_TOOL_PACKAGE)?, &nvtx_tool)?;
    total += std::fs::metadata(&nvtx_tool).map(|m| m.len()).unwrap_or(0);
    if std::env::var(NO_GL_ENV).is_ok_and(|v| v == "1") {
        println!("package-tests: {NO_GL_ENV}=1: no glvnd libraries in the package");
    } else {
        let egl = out.join("lib").join("egl");
        let libs = gl_libraries(&egl)?;
        total += libs;
        println!(
            "package-tests: glvnd's EGL/OpenGL libraries in {} ({:.1} MiB)",
            egl.display(),
            libs as f64 / (1024.0 * 1024.0)
        );
    }
    // `ip` for run-launchers.sh's network namespaces, only beside cudars-nccl's tests;
    // optional: without it the script's socket runs go over loopback, and say so.
    if tests.iter().any(|t| t.starts_with("cudars-nccl--")) {
        match iproute(&out.join("iproute")) {
            Ok(bytes) => {
                total += bytes;
                println!(
                    "package-tests: Debian's ip in {} ({:.1} MiB)",
                    out.join("iproute").display(),
                    bytes as f64 / (1024.0 * 1024.0)
                );
            }
            Err(e) => println!(
                "package-tests: warning: no iproute/ ({e}); run-launchers.sh's socket runs \
                 will use loopback on a machine without `ip`"
            ),
        }
    }
    write_script(&out.join("run.sh"), &run_sh(&tests, &examples))?;
    let by_name: Vec<String> = tests
        .iter()
        .chain(&examples)
        .filter(|b| calls_libraries_by_name(b))
        .cloned()
        .collect();
    write_script(
        &out.join("run-shim.sh"),
        &run_shim_sh(&by_name, BY_NAME_LIBRARY_TESTS),
    )?;
    write_script(&out.join("run-nvtx.sh"), RUN_NVTX_SH)?;
    write_script(&out.join("bench.sh"), &bench_sh(&benches))?;
    // The benchmark comparison: rounds beside C (and Python), a table of medians.
    let root = workspace_root();
    for (from, to) in [
        ("scripts/bench-rounds.sh", "bench-rounds.sh"),
        ("scripts/bench_table.py", "bench_table.py"),
        // cudars-nccl's multi-process runs: launchers' variables, both transports.
        ("scripts/run-launchers.sh", "run-launchers.sh"),
        ("crates/cudars-core/benches/c/graph.c", "c/graph.c"),
        ("crates/cudars-core/benches/c/hot.c", "c/hot.c"),
        ("crates/cudars-core/benches/c/peer.c", "c/peer.c"),
        ("crates/cudars-blas/benches/c/gemm.c", "c/gemm.c"),
        (
            "crates/cudars-blas/benches/c/gemm_cupy.py",
            "c/gemm_cupy.py",
        ),
        ("crates/cudars-fft/benches/c/fft.c", "c/fft.c"),
        ("crates/cudars-solver/benches/c/cholesky.c", "c/cholesky.c"),
        ("crates/cudars-nccl/benches/c/allreduce.c", "c/allreduce.c"),
        (
            "crates/cudars-nccl/benches/c/join_abort.c",
            "c/join_abort.c",
        ),
        (
            "crates/cudars-nccl/benches/c/allreduce_ranks.c",
            "c/allreduce_ranks.c",
        ),
        ("crates/cudars-core/benches/c/threads.c", "c/threads.c"),
        (
            "crates/cudars-core/benches/c/threads_cuda_core.py",
            "c/threads_cuda_core.py",
        ),
    ] {
        let dest = out.join(to);
        if let Some(p) = dest.parent() {
            std::fs::create_dir_all(p).map_err(|e| format!("creating {}: {e}", p.display()))?;
        }
        std::fs::copy(root.join(from), &dest).map_err(|e| format!("copying {from}: {e}"))?;
    }
    println!(
        "package-tests: {} test binaries, {} benches, {:.1} MiB in {}",
        tests.len(),
        benches.len(),
        total as f64 / (1024.0 * 1024.0),
        out.display()
    );
    // What travels is the archive: stripped binaries compress about tenfold.
    let archive = archive(&out)?;
    let packed = std::fs::metadata(&archive)
        .map(|m| m.len())
        .map_err(|e| format!("reading {}: {e}", archive.display()))?;
    println!(
        "package-tests: {:.1} MiB packed in {} (unpack: tar -xJf it, then run.sh)",
        packed as f64 / (1024.0 * 1024.0),
        archive.display()
    );
    if packed > MAX_BYTES {
        return Err(format!(
            "the packed package weighs {packed} bytes, over the {MAX_BYTES}-byte limit"
        ));
    }
    Ok(())
}

/// Packs `dir` into `DIR.tar.xz` beside it (`tar` and `xz`, as every Linux
/// machine has them), the folder's own name at the archive's top.
fn archive(dir: &Path) -> Result<PathBuf, String> {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Err(format!("{} names no folder to pack", dir.display()));
    };
    let mut file = name.to_os_string();
    file.push(".tar.xz");
    let archive = parent.join(file);
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let mut cmd = Command::new("tar");
    cmd.env("XZ_OPT", "-6 -T0")
        .arg("-cJf")
        .arg(&archive)
        .arg("-C")
        .arg(parent)
        .arg(name);
    run_cmd(&mut cmd).map_err(|e| format!("{e} (packing needs tar and xz)"))?;
    Ok(archive)
}

#[cfg(test)]
mod tests;
