//! `cargo xtask test`: the project's test run, as the README gives it.
//!
//! Prepares a Python virtual environment holding NVIDIA's CUDA wheels (the versions
//! pinned in `tests/wheels.txt`) under `target/cuda-venv`, then runs
//! `cargo test --workspace` with `VIRTUAL_ENV` pointing at it, so the real NVRTC,
//! nvJitLink, NVVM and runtime libraries are found, loaded and used without a GPU.
//! `CUDA_RS_REQUIRE_WHEELS=1` is set so that a test needing them fails rather than
//! skips if they are missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{cargo, run_cmd, take_flag, workspace_root};

/// Where the venv lives unless `CUDA_RS_TEST_VENV` names another.
pub(crate) fn venv_dir() -> PathBuf {
    match std::env::var_os("CUDA_RS_TEST_VENV") {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => workspace_root().join("target").join("cuda-venv"),
    }
}

/// Creates or refreshes the CUDA 13 wheels venv (`tests/wheels.txt`).
pub(crate) fn ensure_venv(venv: &Path) -> Result<(), String> {
    ensure_venv_from(venv, "tests/wheels.txt")
}

/// Creates or refreshes a venv holding the wheels pinned in `list` (relative to the
/// workspace root); a stamp file records what was installed.
fn ensure_venv_from(venv: &Path, list: &str) -> Result<(), String> {
    let root = workspace_root();
    let wheels =
        std::fs::read_to_string(root.join(list)).map_err(|e| format!("reading {list}: {e}"))?;
    let pins: Vec<&str> = wheels
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let stamp = venv.join(".cuda-rs-wheels");
    let want = pins.join("\n");
    if std::fs::read_to_string(&stamp).is_ok_and(|have| have == want) {
        println!("xtask test: wheels venv up to date at {}", venv.display());
        return Ok(());
    }
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    if !venv.join("bin").join("python").exists() {
        println!("xtask test: creating venv {}", venv.display());
        run_cmd(Command::new(&python).args(["-m", "venv"]).arg(venv))?;
    }
    println!("xtask test: installing {}", pins.join(" "));
    run_cmd(
        Command::new(venv.join("bin").join("python"))
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(&pins),
    )?;
    std::fs::write(&stamp, want).map_err(|e| format!("writing {}: {e}", stamp.display()))
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut args = args.to_vec();
    let passthrough: Vec<String> = match args.iter().position(|a| a == "--") {
        Some(i) => {
            let rest = args.split_off(i);
            rest[1..].to_vec()
        }
        None => Vec::new(),
    };
    let no_venv = take_flag(&mut args, "--no-venv");
    crate::util::no_more(&args)?;

    let mut cmd = cargo();
    cmd.current_dir(workspace_root())
        .args(["test", "--workspace", "--all-targets"]);
    if !no_venv {
        let venv = venv_dir();
        ensure_venv(&venv)?;
        wheels_env(&mut cmd, &venv);
    }
    cmd.args(&passthrough);
    run_cmd(&mut cmd)?;
    // Doc tests run separately: `--all-targets` leaves them out.
    let mut doc = cargo();
    doc.current_dir(workspace_root())
        .args(["test", "--workspace", "--doc"]);
    run_cmd(&mut doc)
}

/// `cargo xtask test-cuda12`: the CUDA 12 build of `cuda-bindings` and `cuda-core`
/// tested against NVIDIA's CUDA 12.9 wheels (`tests/wheels-cu12.txt`, in
/// `target/cuda12-venv`): the bindings generated from the 12.9 headers load,
/// compile and link with real CUDA 12 libraries, and refuse CUDA 13 ones (the
/// CUDA 13 venv of `cargo xtask test` is prepared too).
pub(crate) fn run_cuda12(args: &[String]) -> Result<(), String> {
    crate::util::no_more(args)?;
    let venv = workspace_root().join("target").join("cuda12-venv");
    ensure_venv_from(&venv, "tests/wheels-cu12.txt")?;
    // The CUDA 13 wheels too: the bindings must refuse them.
    let other = venv_dir();
    ensure_venv(&other)?;
    let mut cmd = cargo();
    cmd.current_dir(workspace_root())
        .args([
            "test",
            "-p",
            "cuda-bindings",
            "-p",
            "cuda-core",
            "--all-targets",
            "--no-default-features",
            "--features",
            "cuda-core/cuda-12,cuda-bindings/cuda-12,cuda-bindings/driver,\
             cuda-bindings/runtime,cuda-bindings/nvrtc,cuda-bindings/nvjitlink,\
             cuda-bindings/nvvm,cuda-bindings/nvml",
        ])
        .env("CUDA_RS_OTHER_MAJOR_VENV", &other)
        .env("CUDA_RS_REQUIRE_OTHER_MAJOR", "1");
    wheels_env(&mut cmd, &venv);
    run_cmd(&mut cmd)
}

/// Points a test run at the wheels in `venv` and makes tests that need them fail
/// rather than skip when they are missing.
fn wheels_env(cmd: &mut Command, venv: &Path) {
    cmd.env("VIRTUAL_ENV", venv)
        .env("CUDA_RS_TEST_VENV", venv)
        .env("CUDA_RS_REQUIRE_WHEELS", "1");
}

/// `cargo xtask quickstart`: the README's main job. Prepares the wheels venv and
/// runs cuda-core's `quickstart` example (NVRTC compiles SAXPY, the driver launches it, the
/// result is checked) with that environment.
pub(crate) fn quickstart(args: &[String]) -> Result<(), String> {
    crate::util::no_more(args)?;
    let venv = venv_dir();
    ensure_venv(&venv)?;
    let mut cmd = cargo();
    cmd.current_dir(workspace_root())
        .args([
            "run",
            "--quiet",
            "--release",
            "-p",
            "cuda-core",
            "--example",
            "quickstart",
        ])
        .env("VIRTUAL_ENV", &venv);
    run_cmd(&mut cmd)
}
