//! `cargo xtask test`: the project's test run, as the README gives it.
//!
//! Builds the tests once, then runs them three times: against NVIDIA's CUDA 13.0
//! wheels (`tests/wheels.txt`, in `target/cuda-venv`), the CUDA 12.9 wheels
//! (`tests/wheels-cu12.txt`, in `target/cuda12-venv`) and the newest CUDA 13
//! wheels (`tests/wheels-cu13-latest.txt`, in `target/cuda13-latest-venv`: the
//! toolkit the bindings' headers come from), each pass with
//! `VIRTUAL_ENV` pointing at its venv, so the real NVRTC, nvJitLink, NVVM and
//! runtime libraries of both majors are found, loaded and used by the same
//! binaries without a GPU. `CUDA_RS_EXPECT_MAJOR` tells the tests which major the
//! pass is for; `CUDA_RS_REQUIRE_WHEELS=1` makes a test needing the wheels fail
//! rather than skip if they are missing. `--cuda 12|13|13-latest` runs one pass.

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
    let cuda = crate::util::take_value(&mut args, "--cuda")?;
    crate::util::no_more(&args)?;
    let passes: &[Pass] = match cuda.as_deref() {
        None | Some("all") => &[Pass::Cuda13, Pass::Cuda12, Pass::Cuda13Latest],
        Some("13") => &[Pass::Cuda13],
        Some("12") => &[Pass::Cuda12],
        Some("13-latest") => &[Pass::Cuda13Latest],
        Some(o) => return Err(format!("--cuda takes 12, 13, 13-latest or all, not `{o}`")),
    };

    // One build, then one pass per major: the same binaries drive the CUDA 13.0
    // and the CUDA 12.9 wheels. Every feature of every crate, so that the parts
    // a dependent opts into (cudars-core's `cache`, `half`, `nvml`, `macros`) are
    // tested too.
    let mut build = cargo();
    build.current_dir(workspace_root()).args([
        "test",
        "--workspace",
        "--all-features",
        "--all-targets",
        "--no-run",
    ]);
    run_cmd(&mut build)?;
    for &pass in passes {
        let major = pass.major();
        let mut cmd = cargo();
        cmd.current_dir(workspace_root()).arg("test");
        if pass == Pass::Cuda13 {
            cmd.args(["--workspace", "--all-features", "--all-targets"]);
        } else {
            // The CUDA 12 and newest-13 passes rerun the crates whose behaviour
            // depends on the toolkit (the pathfinder's layout tests are about the
            // CUDA 13.0 wheels' layout); the binaries are those of the build above.
            cmd.args([
                "-p",
                "cudars-bindings",
                "-p",
                "cudars-core",
                "--all-features",
                "--all-targets",
            ]);
        }
        if !no_venv {
            let venv = pass.venv();
            ensure_venv_from(&venv, pass.wheels_list())?;
            wheels_env(&mut cmd, &venv);
            cmd.env("CUDA_RS_EXPECT_MAJOR", major.to_string());
            println!("xtask test: the {} pass ({})", pass.label(), venv.display());
        }
        cmd.args(&passthrough);
        run_cmd(&mut cmd)?;
        if no_venv {
            break;
        }
    }
    // Doc tests run separately: `--all-targets` leaves them out.
    let mut doc = cargo();
    doc.current_dir(workspace_root())
        .args(["test", "--workspace", "--all-features", "--doc"]);
    run_cmd(&mut doc)
}

/// One run of the tests against one set of wheels.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// CUDA 13.0 (`tests/wheels.txt`), as the GPU machines' driver.
    Cuda13,
    /// CUDA 12.9 (`tests/wheels-cu12.txt`).
    Cuda12,
    /// The newest CUDA 13 (`tests/wheels-cu13-latest.txt`), the headers' toolkit.
    Cuda13Latest,
}

impl Pass {
    fn major(self) -> u32 {
        match self {
            Self::Cuda12 => 12,
            Self::Cuda13 | Self::Cuda13Latest => 13,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Cuda13 => "CUDA 13.0",
            Self::Cuda12 => "CUDA 12.9",
            Self::Cuda13Latest => "newest CUDA 13",
        }
    }

    fn wheels_list(self) -> &'static str {
        match self {
            Self::Cuda13Latest => "tests/wheels-cu13-latest.txt",
            _ => wheels_list(self.major()),
        }
    }

    fn venv(self) -> PathBuf {
        match self {
            Self::Cuda13Latest => workspace_root().join("target").join("cuda13-latest-venv"),
            _ => venv_for(self.major()),
        }
    }
}

/// The wheels list of a major (relative to the workspace root).
fn wheels_list(major: u32) -> &'static str {
    if major == 12 {
        "tests/wheels-cu12.txt"
    } else {
        "tests/wheels.txt"
    }
}

/// The venv of a major's wheels: `venv_dir()` for CUDA 13, `target/cuda12-venv`
/// for CUDA 12.
pub(crate) fn venv_for(major: u32) -> PathBuf {
    if major == 12 {
        workspace_root().join("target").join("cuda12-venv")
    } else {
        venv_dir()
    }
}

/// Points a test run at the wheels in `venv` and makes tests that need them fail
/// rather than skip when they are missing.
fn wheels_env(cmd: &mut Command, venv: &Path) {
    cmd.env("VIRTUAL_ENV", venv)
        .env("CUDA_RS_TEST_VENV", venv)
        .env("CUDA_RS_REQUIRE_WHEELS", "1");
}

/// `cargo xtask quickstart`: the README's main job. Prepares the wheels venv and
/// runs cudars-core's `quickstart` example (NVRTC compiles SAXPY, the driver launches it, the
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
            "cudars-core",
            "--example",
            "quickstart",
        ])
        .env("VIRTUAL_ENV", &venv);
    run_cmd(&mut cmd)
}
