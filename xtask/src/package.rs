//! `cargo xtask package-tests --out DIR`: GPU tests for a machine without Rust.
//!
//! Builds every test and bench binary of the workspace in release mode without
//! running them, copies them (stripped) with the workspace's binaries into `DIR`, and
//! writes `DIR/run.sh`, which runs each test binary with `CUDA_TEST_REQUIRE_GPU=1`
//! and prints a per-binary and a total summary whose last line is
//! `N passed, N failed`, and `DIR/bench.sh`, which runs the benchmarks. The driver
//! shim (`tests/driver-shim`) goes to `DIR/shim/libcuda.so.1`, and
//! `DIR/run-shim.sh VERSION` runs `run.sh` over it, as if on an older driver.
//! The folder is packed into `DIR.tar.xz`, which is what travels (at most 64 MiB:
//! stripped test binaries pack about tenfold).
//!
//! The OpenGL interop tests need glvnd's `libEGL.so.1` and `libOpenGL.so.0`, which a
//! bare GPU machine may lack: the package carries Debian's glvnd libraries
//! (`DIR/lib/egl/`, from `apt-get download`, cached in `target/gpu-pkg-debs/`), and
//! `run.sh` puts them on the loader's path only where the system has no
//! `libEGL.so.1`. `CUDA_RS_PACKAGE_NO_GL=1` packages without them (no network).

use serde_json::Value;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util::{cargo, no_more, run_cmd, take_value, workspace_root};

/// The most a package may weigh, so that it travels to a GPU machine.
const MAX_BYTES: u64 = 64 * 1024 * 1024;

struct Artifact {
    kind: &'static str,
    name: String,
    path: PathBuf,
}

/// Debian's glvnd packages: the EGL, OpenGL, GLX and GLES dispatch libraries the
/// OpenGL interop tests load (the NVIDIA driver provides the vendor library).
const GL_DEBS: &[&str] = &[
    "libegl1",
    "libglvnd0",
    "libopengl0",
    "libgl1",
    "libglx0",
    "libgles2",
];

/// Set to `1`, packaging goes on without the glvnd libraries (no network for
/// `apt-get download`); the OpenGL tests then need them on the GPU machine.
const NO_GL_ENV: &str = "CUDA_RS_PACKAGE_NO_GL";

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

/// Builds the driver shim in release mode and returns its shared library.
fn build_shim() -> Result<PathBuf, String> {
    let msgs = cargo_artifacts(&["build", "--release", "-p", SHIM_PACKAGE, "--lib"])?;
    shim_library(&msgs).ok_or_else(|| format!("cargo built no shared library for {SHIM_PACKAGE}"))
}

/// The shim's shared library among cargo's `compiler-artifact` messages.
fn shim_library(msgs: &[Value]) -> Option<PathBuf> {
    msgs.iter()
        .filter(|m| package_name(m["package_id"].as_str().unwrap_or("")) == SHIM_PACKAGE)
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
    copy_stripped(&build_shim()?, &shim)?;
    total += std::fs::metadata(&shim).map(|m| m.len()).unwrap_or(0);
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
    write_script(&out.join("run.sh"), &run_sh(&tests, &examples))?;
    write_script(&out.join("run-shim.sh"), RUN_SHIM_SH)?;
    write_script(&out.join("bench.sh"), &bench_sh(&benches))?;
    // The benchmark comparison: rounds beside C (and Python), a table of medians.
    let root = workspace_root();
    for (from, to) in [
        ("scripts/bench-rounds.sh", "bench-rounds.sh"),
        ("scripts/bench_table.py", "bench_table.py"),
        ("crates/cudars-core/benches/c/graph.c", "c/graph.c"),
        ("crates/cudars-core/benches/c/hot.c", "c/hot.c"),
        ("crates/cudars-core/benches/c/peer.c", "c/peer.c"),
        ("crates/cudars-blas/benches/c/gemm.c", "c/gemm.c"),
        (
            "crates/cudars-blas/benches/c/gemm_cupy.py",
            "c/gemm_cupy.py",
        ),
        ("crates/cudars-fft/benches/c/fft.c", "c/fft.c"),
        ("crates/cudars-nccl/benches/c/allreduce.c", "c/allreduce.c"),
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

/// The `.deb` of each of [`GL_DEBS`] in `cache`, downloaded there (amd64, from
/// the Debian archive the machine's apt knows) when one is missing.
fn gl_debs(cache: &Path) -> Result<Vec<PathBuf>, String> {
    let find = |name: &str| -> Option<PathBuf> {
        let prefix = format!("{name}_");
        std::fs::read_dir(cache)
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&prefix) && n.ends_with("_amd64.deb"))
            })
    };
    if GL_DEBS.iter().all(|d| find(d).is_some()) {
        println!("package-tests: glvnd .debs from {}", cache.display());
    } else {
        let lists = cache.join("apt-lists");
        std::fs::create_dir_all(lists.join("partial"))
            .map_err(|e| format!("creating {}: {e}", lists.display()))?;
        // amd64 whatever this machine is; apt's lists and caches under `cache`, so
        // neither the system's apt state nor root is needed.
        let opts = [
            "-qq".to_string(),
            "-oAPT::Architecture=amd64".to_string(),
            "-oAPT::Architectures=amd64".to_string(),
            format!("-oDir::State::Lists={}", lists.display()),
            "-oDir::Cache::pkgcache=".to_string(),
            "-oDir::Cache::srcpkgcache=".to_string(),
            "-oDebug::NoLocking=1".to_string(),
        ];
        let hint = format!(
            "the GPU package carries Debian's glvnd libraries ({}) for the OpenGL tests;              set {NO_GL_ENV}=1 to package without them",
            GL_DEBS.join(" ")
        );
        run_cmd(Command::new("apt-get").args(&opts).arg("update"))
            .map_err(|e| format!("{e}: {hint}"))?;
        run_cmd(
            Command::new("apt-get")
                .current_dir(cache)
                .args(&opts)
                .arg("download")
                .args(GL_DEBS),
        )
        .map_err(|e| format!("{e}: {hint}"))?;
    }
    GL_DEBS
        .iter()
        .map(|d| {
            find(d).ok_or_else(|| {
                format!(
                    "apt-get download left no {d}_*_amd64.deb in {}",
                    cache.display()
                )
            })
        })
        .collect()
}

/// Unpacks the glvnd `.deb`s into `dest`: each library under its soname
/// (`libEGL.so.1`), as the loader looks for it; returns the bytes copied.
fn gl_libraries(dest: &Path) -> Result<u64, String> {
    let cache = workspace_root().join("target").join("gpu-pkg-debs");
    std::fs::create_dir_all(&cache).map_err(|e| format!("creating {}: {e}", cache.display()))?;
    let debs = gl_debs(&cache)?;
    let tmp = tempfile::tempdir().map_err(|e| format!("a temporary folder: {e}"))?;
    for deb in &debs {
        run_cmd(Command::new("dpkg-deb").arg("-x").arg(deb).arg(tmp.path()))
            .map_err(|e| format!("{e} (unpacking needs dpkg-deb)"))?;
    }
    let libdir = tmp.path().join("usr/lib/x86_64-linux-gnu");
    std::fs::create_dir_all(dest).map_err(|e| format!("creating {}: {e}", dest.display()))?;
    let mut total = 0;
    let mut names = Vec::new();
    for entry in
        std::fs::read_dir(&libdir).map_err(|e| format!("reading {}: {e}", libdir.display()))?
    {
        let entry = entry.map_err(|e| format!("reading {}: {e}", libdir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !is_soname(&name) {
            continue;
        }
        // The soname is a link to the versioned file: copy what it points at.
        let to = dest.join(&name);
        total += std::fs::copy(entry.path(), &to).map_err(|e| format!("copying {name}: {e}"))?;
        names.push(name);
    }
    names.sort();
    for want in ["libEGL.so.1", "libGLdispatch.so.0", "libOpenGL.so.0"] {
        if !names.iter().any(|n| n == want) {
            return Err(format!(
                "the glvnd .debs hold no {want} (found: {})",
                names.join(" ")
            ));
        }
    }
    Ok(total)
}

/// Whether a file name is a library's soname: `libX.so.N`.
fn is_soname(name: &str) -> bool {
    name.starts_with("lib")
        && name
            .split_once(".so.")
            .is_some_and(|(_, v)| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
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

fn write_script(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("chmod {}: {e}", path.display()))?;
    }
    Ok(())
}

const PRELUDE: &str = r#"#!/usr/bin/env bash
# Generated by `cargo xtask package-tests`. Runs on a machine with a GPU and no Rust.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export CUDA_PATHFINDER_BIN="$here/bin/cudars-pathfinder"
"#;

/// `run.sh`'s set-up of EGL for the OpenGL interop tests: the package's glvnd
/// (`lib/egl`) where the system has no `libEGL.so.1`, and NVIDIA's EGL vendor file
/// where glvnd would not look for it.
const EGL_ENV: &str = r#"# OpenGL interop (the graphics_gl tests) loads glvnd's libEGL.so.1: the package's copy
# (lib/egl, Debian's glvnd) when the system has none. The 64-bit entries only.
ldconfig_p() {
  local l
  for l in ldconfig /sbin/ldconfig /usr/sbin/ldconfig; do
    if command -v "$l" >/dev/null 2>&1; then "$l" -p 2>/dev/null; return; fi
  done
}
if [ -d "$here/lib/egl" ] && ! ldconfig_p | awk '/libEGL\.so\.1 / && !/\(libc6\)/ {f=1} END {exit !f}'; then
  export LD_LIBRARY_PATH="$here/lib/egl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
# NVIDIA's EGL vendor file, where the driver's container set-up puts it.
if [ -z "${__EGL_VENDOR_LIBRARY_FILENAMES:-}" ]; then
  for f in /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json /usr/share/glvnd/egl_vendor.d/10_nvidia.json; do
    if [ -e "$f" ]; then export __EGL_VENDOR_LIBRARY_FILENAMES="$f"; break; fi
  done
fi
"#;

fn run_sh(tests: &[String], examples: &[String]) -> String {
    let mut s = String::from(PRELUDE);
    s.push_str(EGL_ENV);
    s.push_str(
        r#"export CUDA_TEST_REQUIRE_GPU=1
# NVLink multicast (NVLS) stays off: on shared multi-GPU hosts it can take the GPUs down.
export NCCL_NVLS_ENABLE=0
# Usage: run.sh [filter]   (the filter is passed to every test binary)
logdir="${CUDA_RS_TEST_LOGS:-$(mktemp -d)}"
mkdir -p "$logdir"
total_pass=0; total_fail=0; total_skip=0; bad_bins=0
"#,
    );
    s.push_str("tests=(\n");
    for t in tests {
        s.push_str(&format!("  {t}\n"));
    }
    s.push_str(")\nexamples=(\n");
    for e in examples {
        s.push_str(&format!("  {e}\n"));
    }
    s.push_str(")\n");
    s.push_str(
        r#"for t in "${tests[@]}"; do
  log="$logdir/$t.log"
  # --nocapture: a skipped test's "SKIPPED <test>: needs ..." line reaches the log.
  "$here/bin/$t" "$@" --nocapture >"$log" 2>&1
  rc=$?
  p=$(grep -E '^test result:' "$log" | sed -E 's/.* ([0-9]+) passed.*/\1/' | awk '{s+=$1} END {print s+0}')
  f=$(grep -E '^test result:' "$log" | sed -E 's/.* ([0-9]+) failed.*/\1/' | awk '{s+=$1} END {print s+0}')
  # A skipped test returned early and counts as passed in libtest's line: count it
  # as skipped instead (each skip is printed twice, to stdout and stderr).
  skipped=$(grep -oE 'SKIPPED [^ ]+: needs' "$log" | sort -u | wc -l)
  p=$((p - skipped)); [ $p -lt 0 ] && p=0
  if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  if [ $rc -ne 0 ]; then
    bad_bins=$((bad_bins+1)); status=FAIL
    echo "---- $t (exit $rc) ----"; tail -n 60 "$log"; echo "----"
  else
    status=ok
  fi
  printf '%-60s %-4s %4d passed, %d failed, %d skipped\n' "$t" "$status" "$p" "$f" "$skipped"
  total_pass=$((total_pass+p)); total_fail=$((total_fail+f)); total_skip=$((total_skip+skipped))
done
# Examples count as one test each: they pass when they exit 0.
for e in "${examples[@]}"; do
  log="$logdir/$e.log"
  "$here/bin/$e" >"$log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then p=1; f=0; status=ok; else p=0; f=1; status=FAIL; bad_bins=$((bad_bins+1)); echo "---- $e (exit $rc) ----"; tail -n 30 "$log"; echo "----"; fi
  printf '%-60s %-4s %4d passed, %d failed, %d skipped\n' "$e" "$status" "$p" "$f" 0
  total_pass=$((total_pass+p)); total_fail=$((total_fail+f))
done
echo "logs: $logdir"
echo "binaries: ${#tests[@]}, failing: $bad_bins"
echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ $total_fail -eq 0 ]
"#,
    );
    s
}

/// `run-shim.sh VERSION [run.sh args]`: `run.sh` with the driver shim first on
/// the loader's path, emulating driver `VERSION` over the real driver.
const RUN_SHIM_SH: &str = r#"#!/usr/bin/env bash
# Generated by `cargo xtask package-tests`. Runs on a machine with a GPU and no Rust.
# Usage: run-shim.sh VERSION [run.sh args]   (VERSION as cuDriverGetVersion says it: 12040 for 12.4,
#        or `real` for the real driver's own: the shim's fault injection and handle counts only)
# Runs run.sh with shim/libcuda.so.1 first on the loader's path: programs see a driver
# of VERSION (its version, entry points and ABIs) over the real one, and tests that
# need the shim (the fault sweep) run instead of skipping.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ $# -lt 1 ]; then
  echo "usage: run-shim.sh VERSION [run.sh args]   (e.g. run-shim.sh 12040 for CUDA 12.4, run-shim.sh real fault_sweep)" >&2
  exit 2
fi
version="$1"; shift
case "$version" in
  real) ;;
  ''|*[!0-9]*) echo "run-shim.sh: VERSION must be an integer such as 12040 (CUDA 12.4) or real, not '$version'" >&2; exit 2 ;;
esac
real="${CUDA_RS_SHIM_REAL_DRIVER:-}"
if [ -z "$real" ]; then
  # The loader's cache lists the 64-bit driver as "(libc6,x86-64)" or "(libc6,AArch64)"
  # and a 32-bit one as "(libc6)": skip the latter.
  for ldconfig in ldconfig /sbin/ldconfig /usr/sbin/ldconfig; do
    real=$("$ldconfig" -p 2>/dev/null | awk '/libcuda\.so\.1 / && !/\(libc6\)/ {print $NF; exit}')
    [ -n "$real" ] && break
  done
fi
if [ -z "$real" ] || [ ! -e "$real" ]; then
  echo "run-shim.sh: no real CUDA driver (libcuda.so.1) found${real:+ at $real}; set CUDA_RS_SHIM_REAL_DRIVER to it" >&2
  exit 1
fi
export CUDA_RS_SHIM_REAL_DRIVER="$real"
if [ "$version" = real ]; then
  unset CUDA_RS_SHIM_DRIVER_VERSION
else
  export CUDA_RS_SHIM_DRIVER_VERSION="$version"
fi
export CUDA_RS_REQUIRE_SHIM=1
export LD_LIBRARY_PATH="$here/shim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
resolved="$(readlink -f "$real" 2>/dev/null || echo "$real")"
if [ "$version" = real ]; then
  echo "run-shim.sh: the shim over the real driver $real ($resolved), at its own version"
else
  echo "run-shim.sh: emulating CUDA driver $version over the real driver $real ($resolved)"
fi
exec "$here/run.sh" "$@"
"#;

fn bench_sh(benches: &[String]) -> String {
    let mut s = String::from(PRELUDE);
    s.push_str(
        "# Runs every benchmark; each prints JSON lines {\"peer\",\"metric\",\"value\"}.\nrc=0\n",
    );
    for b in benches {
        s.push_str(&format!("\"$here/bin/{b}\" --bench \"$@\" || rc=1\n"));
    }
    s.push_str("exit $rc\n");
    s
}

#[cfg(test)]
mod tests {
    use super::{
        EGL_ENV, RUN_SHIM_SH, SHIM_PACKAGE, classify, gl_libraries, is_soname, shim_library,
    };
    use serde_json::json;
    use std::path::PathBuf;

    #[test]
    fn the_shim_is_the_shared_library_of_its_package() {
        let msgs = [
            json!({
                "reason": "compiler-artifact",
                "package_id": "path+file:///w/vendor/libc#libc@0.2.191",
                "filenames": ["/t/release/deps/liblibc.rlib"],
            }),
            json!({
                "reason": "compiler-artifact",
                "package_id": format!("path+file:///w/tests/driver-shim#{SHIM_PACKAGE}@0.0.0"),
                "filenames": [
                    "/t/release/libcudars_driver_shim.rlib",
                    "/t/release/libcudars_driver_shim.so",
                ],
            }),
        ];
        assert_eq!(
            shim_library(&msgs),
            Some(PathBuf::from("/t/release/libcudars_driver_shim.so"))
        );
        assert_eq!(shim_library(&msgs[..1]), None);
    }

    /// Runs a copy of run-shim.sh beside a run.sh that prints what it was given.
    #[cfg(unix)]
    fn run_shim(args: &[&str], real: &str) -> (i32, String, String) {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("run-shim.sh"), RUN_SHIM_SH).unwrap();
        let run = dir.path().join("run.sh");
        std::fs::write(
            &run,
            "#!/usr/bin/env bash\necho \"args=$*\"\necho \"real=$CUDA_RS_SHIM_REAL_DRIVER\"\n\
             echo \"version=${CUDA_RS_SHIM_DRIVER_VERSION-unset}\"\necho \"path=$LD_LIBRARY_PATH\"\n\
             echo \"require=$CUDA_RS_REQUIRE_SHIM\"\n\
             echo '3 passed, 0 failed, 1 skipped'\n",
        )
        .unwrap();
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = std::process::Command::new("bash")
            .arg(dir.path().join("run-shim.sh"))
            .args(args)
            .env("CUDA_RS_SHIM_REAL_DRIVER", real)
            .env("LD_LIBRARY_PATH", "/before")
            .output()
            .unwrap();
        // run-shim.sh names its folder as `cd` and `pwd` see it.
        let mut stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        for here in [dir.path().to_path_buf(), dir.path().canonicalize().unwrap()] {
            stdout = stdout.replace(&*here.to_string_lossy(), "PKG");
        }
        (
            out.status.code().unwrap_or(-1),
            stdout,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    #[cfg(unix)]
    #[test]
    fn run_shim_puts_the_shim_first_and_runs_run_sh() {
        let real = tempfile::NamedTempFile::new().unwrap();
        let real = real.path().to_str().unwrap();
        let (rc, out, err) = run_shim(&["12040", "green"], real);
        assert_eq!(rc, 0, "{out}{err}");
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[0].starts_with(&format!(
                "run-shim.sh: emulating CUDA driver 12040 over the real driver {real}"
            )),
            "{out}"
        );
        assert_eq!(
            &lines[1..],
            [
                "args=green",
                &format!("real={real}"),
                "version=12040",
                "path=PKG/shim:/before",
                "require=1",
                "3 passed, 0 failed, 1 skipped",
            ]
        );
        // `real`: the shim without emulating a version, for its faults and counts.
        let (rc, out, err) = run_shim(&["real", "fault_sweep"], real);
        assert_eq!(rc, 0, "{out}{err}");
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[0].starts_with(&format!(
                "run-shim.sh: the shim over the real driver {real} ("
            )),
            "{out}"
        );
        assert_eq!(
            &lines[1..5],
            [
                "args=fault_sweep",
                &format!("real={real}"),
                "version=unset",
                "path=PKG/shim:/before",
            ]
        );
    }

    #[cfg(unix)]
    #[test]
    fn run_shim_refuses_a_bad_version_or_a_missing_driver() {
        let real = tempfile::NamedTempFile::new().unwrap();
        let real = real.path().to_str().unwrap();
        let (rc, _, err) = run_shim(&[], real);
        assert_eq!(rc, 2);
        assert!(err.contains("usage: run-shim.sh VERSION"), "{err}");
        let (rc, _, err) = run_shim(&["12.4"], real);
        assert_eq!(rc, 2);
        assert!(err.contains("not '12.4'"), "{err}");
        let (rc, _, err) = run_shim(&["reall"], real);
        assert_eq!(rc, 2);
        assert!(err.contains("or real, not 'reall'"), "{err}");
        let (rc, out, err) = run_shim(&["12040"], "/nonexistent/libcuda.so.1");
        assert_eq!(rc, 1);
        assert!(out.is_empty(), "{out}");
        assert!(err.contains("found at /nonexistent/libcuda.so.1"), "{err}");
    }

    #[test]
    fn only_sonames_of_the_glvnd_debs_are_packaged() {
        for yes in ["libEGL.so.1", "libGLdispatch.so.0", "libGLESv2.so.2"] {
            assert!(is_soname(yes), "{yes}");
        }
        for no in [
            "libEGL.so.1.1.0",
            "libEGL.so",
            "libEGL.so.",
            "README",
            "libx.so.1a",
        ] {
            assert!(!is_soname(no), "{no}");
        }
    }

    /// Downloads (or takes from target/gpu-pkg-debs) and unpacks the glvnd
    /// libraries: needs apt-get and the network the first time.
    #[test]
    #[ignore = "needs apt-get and the Debian archive (or the .debs cached in target/)"]
    fn the_glvnd_libraries_unpack_under_their_sonames() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = gl_libraries(dir.path()).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "libEGL.so.1",
                "libGL.so.1",
                "libGLESv2.so.2",
                "libGLX.so.0",
                "libGLdispatch.so.0",
                "libOpenGL.so.0"
            ]
        );
        assert!(bytes > 100_000 && bytes < 8 << 20, "{bytes}");
    }

    /// Runs run.sh's EGL set-up with `ldconfig -p` printing `cache`; returns
    /// `LD_LIBRARY_PATH` and `__EGL_VENDOR_LIBRARY_FILENAMES` as it leaves them.
    #[cfg(unix)]
    fn egl_env(cache: &str, with_libs: bool, vendor: Option<&str>) -> (String, String) {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("fakebin");
        std::fs::create_dir_all(&fake).unwrap();
        let ldconfig = fake.join("ldconfig");
        std::fs::write(&ldconfig, format!("#!/bin/sh\nprintf '%s\\n' '{cache}'\n")).unwrap();
        std::fs::set_permissions(&ldconfig, std::fs::Permissions::from_mode(0o755)).unwrap();
        if with_libs {
            std::fs::create_dir_all(dir.path().join("lib/egl")).unwrap();
        }
        let script = format!(
            "here={}\n{EGL_ENV}\necho \"$LD_LIBRARY_PATH\"\necho \"${{__EGL_VENDOR_LIBRARY_FILENAMES-unset}}\"\n",
            dir.path().display()
        );
        let mut cmd = std::process::Command::new("bash");
        cmd.arg("-c").arg(script).env(
            "PATH",
            format!(
                "{}:{}",
                fake.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        );
        cmd.env("LD_LIBRARY_PATH", "/before");
        match vendor {
            Some(v) => cmd.env("__EGL_VENDOR_LIBRARY_FILENAMES", v),
            None => cmd.env_remove("__EGL_VENDOR_LIBRARY_FILENAMES"),
        };
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text =
            String::from_utf8_lossy(&out.stdout).replace(&*dir.path().to_string_lossy(), "PKG");
        let mut lines = text.lines().map(str::to_string);
        (lines.next().unwrap(), lines.next().unwrap())
    }

    #[cfg(unix)]
    #[test]
    fn run_sh_adds_the_packaged_egl_only_where_the_system_lacks_it() {
        let none = "\t2 libs found in cache `/etc/ld.so.cache'";
        let (ld, vendor) = egl_env(none, true, Some("/mine.json"));
        assert_eq!(ld, "PKG/lib/egl:/before");
        // A variable the user set stays.
        assert_eq!(vendor, "/mine.json");
        // A 32-bit libEGL does not count.
        let i386 = "\tlibEGL.so.1 (libc6) => /usr/lib/i386-linux-gnu/libEGL.so.1";
        assert_eq!(egl_env(i386, true, None).0, "PKG/lib/egl:/before");
        let system = "\tlibEGL.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libEGL.so.1";
        assert_eq!(egl_env(system, true, None).0, "/before");
        // A package made with CUDA_RS_PACKAGE_NO_GL=1 has no lib/egl.
        assert_eq!(egl_env(none, false, None).0, "/before");
    }

    #[test]
    fn examples_are_packaged_as_programs_never_as_empty_test_harnesses() {
        assert_eq!(
            classify("example", false, "cudars-core", "ipc"),
            Some(("example", "cudars-core--example-ipc".to_string()))
        );
        assert_eq!(classify("example", true, "cudars-core", "ipc"), None);
        assert_eq!(
            classify("test", true, "cudars-core", "gpu"),
            Some(("test", "cudars-core--test-gpu".to_string()))
        );
        assert_eq!(
            classify("bench", false, "cudars-core", "core"),
            Some(("bench", "cudars-core--core".to_string()))
        );
        assert_eq!(classify("lib", false, "cudars-core", "cudars_core"), None);
        // The driver shim's unit tests (a cdylib and rlib) are named as any library's.
        assert_eq!(
            classify("cdylib", true, "cudars-driver-shim", "cudars_driver_shim"),
            Some((
                "test",
                "cudars-driver-shim--lib-cudars_driver_shim".to_string()
            ))
        );
        assert_eq!(
            classify("lib", true, "cudars-core", "cudars_core"),
            Some(("test", "cudars-core--lib-cudars_core".to_string()))
        );
        assert_eq!(classify("cdylib", false, "cudars-driver-shim", "x"), None);
        assert_eq!(classify("test", true, "cudars-tests", "tidy"), None);
    }
}
