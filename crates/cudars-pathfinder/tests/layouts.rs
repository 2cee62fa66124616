//! The search order against real NVIDIA libraries laid out as a venv, a conda
//! prefix, a `CUDA_HOME` tree, a directory the OS loader searches (`LD_LIBRARY_PATH`
//! on Linux, `PATH` on Windows) and a toolkit found by its canary. Each case runs the
//! `cudars-pathfinder` CLI in a child process with an environment built from nothing,
//! so no test sees another's variables.
//!
//! The libraries come from NVIDIA's wheels in the venv named by `CUDA_RS_TEST_VENV`
//! (`cargo xtask test` makes it; for Windows, a venv-shaped directory of the
//! `win_amd64` wheels, see `scripts/windows-tests.sh`). Without it these tests skip,
//! saying so, unless `CUDA_RS_REQUIRE_WHEELS=1`, when they fail. The same tests run
//! on Linux and, built for `x86_64-pc-windows-gnu`, under Wine: [`plat`] holds the
//! file names and directories that differ.

// Test and benchmark code: a failed step is a failed run, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;
use common::cli;

/// What differs between the platforms: where the wheels put each file (relative to
/// `nvidia/cu13`) and where a toolkit, conda and the OS loader look.
#[cfg(unix)]
mod plat {
    pub(crate) const NVRTC: &str = "lib/libnvrtc.so.13";
    pub(crate) const NVJITLINK: &str = "lib/libnvJitLink.so.13";
    pub(crate) const CUDART: &str = "lib/libcudart.so.13";
    pub(crate) const NVVM: &str = "lib/libnvvm.so.4";
    pub(crate) const CUDADEVRT: &str = "lib/libcudadevrt.a";
    /// cuBLAS and cuBLASLt's file names (stand-ins are made under these names).
    pub(crate) const CUBLAS: [&str; 2] = ["libcublas.so.13", "libcublasLt.so.13"];
    /// Where conda keeps libraries and NVVM, under `$CONDA_PREFIX`.
    pub(crate) const CONDA_LIB: &str = "lib";
    pub(crate) const CONDA_NVVM: &str = "nvvm/lib64";
    /// Where a toolkit keeps libraries and NVVM, under its root.
    pub(crate) const CTK_LIB: &str = "lib64";
    pub(crate) const CTK_NVVM: &str = "nvvm/lib64";
    /// The variable the OS loader searches.
    pub(crate) const LOADER_PATH: &str = "LD_LIBRARY_PATH";
    /// Where site-packages is under a venv.
    pub(crate) fn site_packages(venv: &std::path::Path) -> Option<std::path::PathBuf> {
        std::fs::read_dir(venv.join("lib"))
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.path().join("site-packages"))
            .find(|p| p.join("nvidia/cu13").join(NVRTC).is_file())
    }
    /// The venv's interpreter directory.
    pub(crate) const VENV_BIN: &str = "bin";
    /// Links `src` as `dst` (a symbolic link).
    pub(crate) fn link(src: &std::path::Path, dst: &std::path::Path) -> std::io::Result<()> {
        std::os::unix::fs::symlink(src, dst)
    }
}

#[cfg(windows)]
mod plat {
    pub(crate) const NVRTC: &str = "bin/x86_64/nvrtc64_130_0.dll";
    pub(crate) const NVJITLINK: &str = "bin/x86_64/nvJitLink_130_0.dll";
    pub(crate) const CUDART: &str = "bin/x86_64/cudart64_13.dll";
    pub(crate) const NVVM: &str = "bin/x86_64/nvvm64_40_0.dll";
    pub(crate) const CUDADEVRT: &str = "lib/x64/cudadevrt.lib";
    pub(crate) const CUBLAS: [&str; 2] = ["cublas64_13.dll", "cublasLt64_13.dll"];
    pub(crate) const CONDA_LIB: &str = "Library/bin";
    pub(crate) const CONDA_NVVM: &str = "Library/nvvm/bin";
    pub(crate) const CTK_LIB: &str = "bin/x64";
    pub(crate) const CTK_NVVM: &str = "nvvm/bin/x64";
    pub(crate) const LOADER_PATH: &str = "PATH";
    pub(crate) fn site_packages(venv: &std::path::Path) -> Option<std::path::PathBuf> {
        let sp = venv.join("Lib/site-packages");
        sp.join("nvidia/cu13").join(NVRTC).is_file().then_some(sp)
    }
    pub(crate) const VENV_BIN: &str = "Scripts";
    /// Links `src` as `dst`: a hard link, else a copy (symbolic links need a
    /// privilege on Windows).
    pub(crate) fn link(src: &std::path::Path, dst: &std::path::Path) -> std::io::Result<()> {
        std::fs::hard_link(src, dst).or_else(|_| std::fs::copy(src, dst).map(drop))
    }
}

/// The venv's `nvidia/cu13` directory, or `None` (the test then skips or fails).
fn wheels(test: &str) -> Option<PathBuf> {
    let venv =
        cudars_tests::require_env_or_skip(test, "CUDA_RS_TEST_VENV", "CUDA_RS_REQUIRE_WHEELS")?;
    // Absolute (under Wine a Unix path becomes `Z:\...`), as the CLI reports paths.
    let venv = std::path::absolute(&venv).unwrap();
    let sp = plat::site_packages(&venv)
        .unwrap_or_else(|| panic!("no nvidia/cu13 wheels under {}", venv.display()));
    Some(sp.join("nvidia/cu13"))
}

fn site_packages_of(cu13: &Path) -> PathBuf {
    cu13.parent().and_then(Path::parent).unwrap().to_path_buf()
}

fn venv_of(cu13: &Path) -> PathBuf {
    // Linux: <venv>/lib/python3.X/site-packages/nvidia/cu13;
    // Windows: <venv>/Lib/site-packages/nvidia/cu13.
    let up = if cfg!(windows) { 4 } else { 5 };
    cu13.ancestors().nth(up).unwrap().to_path_buf()
}

/// Links the wheel's `files` (relative to `nvidia/cu13`) into `dir`.
fn place(cu13: &Path, dir: &Path, files: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    for f in files {
        let src = cu13.join(f);
        assert!(src.is_file(), "{} missing from the wheels", src.display());
        plat::link(&src, &dir.join(src.file_name().unwrap())).unwrap();
    }
}

/// The file name of a wheel file given relative to `nvidia/cu13`.
fn file(rel: &str) -> &str {
    rel.rsplit('/').next().unwrap()
}

const CORE_LIBS: &[&str] = &[plat::NVRTC, plat::NVJITLINK, plat::CUDART];

struct Run {
    code: i32,
    lines: Vec<Value>,
    stderr: String,
}

impl Run {
    fn get(&self, name: &str) -> &Value {
        self.lines
            .iter()
            .find(|v| v["libname"] == name || v["name"] == name)
            .unwrap_or_else(|| {
                panic!(
                    "no line for {name} in {:?} (stderr: {})",
                    self.lines, self.stderr
                )
            })
    }

    fn via(&self, name: &str) -> &str {
        let v = self.get(name);
        v["found_via"]
            .as_str()
            .unwrap_or_else(|| panic!("{name} not found: {v}"))
    }

    fn path(&self, name: &str) -> PathBuf {
        PathBuf::from(self.get(name)["abs_path"].as_str().unwrap())
    }
}

/// Runs the CLI with only `envs` set (and an empty `PATH` and `HOME` unless given).
fn run(args: &[&str], envs: &[(&str, &OsStr)]) -> Run {
    let empty = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(cli());
    cmd.args(args)
        .env_clear()
        .env("PATH", empty.path())
        .env("HOME", empty.path());
    // Windows itself needs `SystemRoot` in every process's environment.
    if let Some(root) = std::env::var_os("SystemRoot").filter(|_| cfg!(windows)) {
        cmd.env("SystemRoot", root);
    }
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("running cudars-pathfinder");
    let stdout = String::from_utf8(out.stdout).unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        lines: stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Whether this machine's OS loader sees a CUDA toolkit (`/usr/local/cuda` in
/// `ld.so.cache`, as on GPU machines): then the `system-ctk-root` step finds what
/// the temporary layouts leave out, and the tests expect that instead.
fn system_ctk_visible() -> bool {
    let r = run(&["locate", "cudart", "--json"], &[]);
    r.code == 0
        && r.lines
            .first()
            .is_some_and(|l| l["found_via"] == "system-search")
}

fn os(p: &Path) -> &OsStr {
    p.as_os_str()
}

#[test]
fn venv_wheels_are_found_via_site_packages() {
    let Some(cu13) = wheels("venv_wheels_are_found_via_site_packages") else {
        return;
    };
    let venv = venv_of(&cu13);
    let r = run(
        &["load", "nvrtc", "nvJitLink", "cudart", "nvvm", "--json"],
        &[("VIRTUAL_ENV", os(&venv))],
    );
    assert_eq!(r.code, 0, "{:?} {}", r.lines, r.stderr);
    for (name, file) in [
        ("nvrtc", plat::NVRTC),
        ("nvJitLink", plat::NVJITLINK),
        ("cudart", plat::CUDART),
        ("nvvm", plat::NVVM),
    ] {
        assert_eq!(r.via(name), "site-packages");
        assert_eq!(r.path(name), cu13.join(file));
        assert_eq!(r.get(name)["was_already_loaded_from_elsewhere"], false);
        let mut keys: Vec<&str> = r
            .get(name)
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "abs_path",
                "found_via",
                "libname",
                "was_already_loaded_from_elsewhere"
            ]
        );
    }
}

#[test]
fn site_packages_found_through_pythonpath_and_python_on_path() {
    let Some(cu13) = wheels("site_packages_found_through_pythonpath_and_python_on_path") else {
        return;
    };
    let sp = site_packages_of(&cu13);
    let r = run(&["load", "nvJitLink", "--json"], &[("PYTHONPATH", os(&sp))]);
    assert_eq!(
        (r.via("nvJitLink"), r.path("nvJitLink")),
        ("site-packages", cu13.join(plat::NVJITLINK))
    );
    // No VIRTUAL_ENV: the venv is found from the python3 on PATH and its pyvenv.cfg.
    let bin = venv_of(&cu13).join(plat::VENV_BIN);
    let r = run(&["load", "nvJitLink", "--json"], &[("PATH", os(&bin))]);
    assert_eq!(
        (r.via("nvJitLink"), r.path("nvJitLink")),
        ("site-packages", cu13.join(plat::NVJITLINK))
    );
}

#[test]
fn conda_prefix_is_searched() {
    let Some(cu13) = wheels("conda_prefix_is_searched") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let conda = t.path().join("conda");
    place(&cu13, &conda.join(plat::CONDA_LIB), CORE_LIBS);
    place(&cu13, &conda.join(plat::CONDA_NVVM), &[plat::NVVM]);
    let r = run(
        &["load", "nvrtc", "cudart", "nvvm", "--json"],
        &[("CONDA_PREFIX", os(&conda))],
    );
    assert_eq!(r.code, 0, "{:?}", r.lines);
    assert_eq!(
        (r.via("nvrtc"), r.path("nvrtc")),
        ("conda", conda.join(plat::CONDA_LIB).join(file(plat::NVRTC)))
    );
    assert_eq!(
        (r.via("cudart"), r.path("cudart")),
        (
            "conda",
            conda.join(plat::CONDA_LIB).join(file(plat::CUDART))
        )
    );
    assert_eq!(
        (r.via("nvvm"), r.path("nvvm")),
        ("conda", conda.join(plat::CONDA_NVVM).join(file(plat::NVVM)))
    );
}

#[test]
fn cuda_home_and_cuda_path_are_labelled_cuda_path_and_cuda_path_wins() {
    let Some(cu13) = wheels("cuda_home_and_cuda_path_are_labelled_cuda_path_and_cuda_path_wins")
    else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let (a, b) = (t.path().join("cuda-a"), t.path().join("cuda-b"));
    for root in [&a, &b] {
        place(&cu13, &root.join(plat::CTK_LIB), CORE_LIBS);
        place(&cu13, &root.join(plat::CTK_NVVM), &[plat::NVVM]);
    }
    let nvrtc = |root: &Path| root.join(plat::CTK_LIB).join(file(plat::NVRTC));
    let r = run(
        &["load", "nvrtc", "nvvm", "--json"],
        &[("CUDA_HOME", os(&b))],
    );
    assert_eq!((r.via("nvrtc"), r.path("nvrtc")), ("CUDA_PATH", nvrtc(&b)));
    assert_eq!(
        (r.via("nvvm"), r.path("nvvm")),
        ("CUDA_PATH", b.join(plat::CTK_NVVM).join(file(plat::NVVM)))
    );
    let r = run(
        &["load", "nvrtc", "--json"],
        &[("CUDA_HOME", os(&b)), ("CUDA_PATH", os(&a))],
    );
    assert_eq!((r.via("nvrtc"), r.path("nvrtc")), ("CUDA_PATH", nvrtc(&a)));
}

#[test]
fn the_loader_search_path_is_system_search() {
    let Some(cu13) = wheels("the_loader_search_path_is_system_search") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("ld");
    place(&cu13, &dir, CORE_LIBS);
    let r = run(
        &["load", "nvJitLink", "cudart", "--json"],
        &[(plat::LOADER_PATH, os(&dir))],
    );
    assert_eq!(
        (r.via("nvJitLink"), r.path("nvJitLink")),
        ("system-search", dir.join(file(plat::NVJITLINK)))
    );
    assert_eq!(r.via("cudart"), "system-search");
    // Located without loading: the same file, by reading the loader's search path.
    let r = run(
        &["locate", "nvJitLink", "--json"],
        &[(plat::LOADER_PATH, os(&dir))],
    );
    assert_eq!(
        (r.via("nvJitLink"), r.path("nvJitLink")),
        ("system-search", dir.join(file(plat::NVJITLINK)))
    );
}

#[test]
fn nvvm_is_found_from_the_cudart_canary() {
    let Some(cu13) = wheels("nvvm_is_found_from_the_cudart_canary") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let ctk = t.path().join("ctk");
    place(&cu13, &ctk.join(plat::CTK_LIB), CORE_LIBS);
    place(&cu13, &ctk.join(plat::CTK_NVVM), &[plat::NVVM]);
    let r = run(
        &["load", "nvvm", "--json"],
        &[(plat::LOADER_PATH, os(&ctk.join(plat::CTK_LIB)))],
    );
    assert_eq!(
        (r.via("nvvm"), r.path("nvvm")),
        (
            "system-ctk-root",
            ctk.join(plat::CTK_NVVM).join(file(plat::NVVM))
        )
    );
    // The canary was only read, not loaded: cudart still loads by the usual steps.
    let r = run(
        &["load", "nvvm", "cudart", "--json"],
        &[(plat::LOADER_PATH, os(&ctk.join(plat::CTK_LIB)))],
    );
    assert_eq!(r.via("cudart"), "system-search");
}

#[test]
fn steps_are_taken_in_order() {
    let Some(cu13) = wheels("steps_are_taken_in_order") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let conda = t.path().join("conda");
    let home = t.path().join("cuda");
    let ld = t.path().join("ld");
    place(&cu13, &conda.join(plat::CONDA_LIB), CORE_LIBS);
    place(&cu13, &home.join(plat::CTK_LIB), CORE_LIBS);
    place(&cu13, &ld, CORE_LIBS);
    let venv = venv_of(&cu13);
    let all: Vec<(&str, &OsStr)> = vec![
        ("VIRTUAL_ENV", os(&venv)),
        ("CONDA_PREFIX", os(&conda)),
        (plat::LOADER_PATH, os(&ld)),
        ("CUDA_HOME", os(&home)),
    ];
    let expect = ["site-packages", "conda", "system-search", "CUDA_PATH"];
    for (i, want) in expect.iter().enumerate() {
        let r = run(&["load", "nvrtc", "--json"], &all[i..]);
        assert_eq!(r.via("nvrtc"), *want, "with {:?}", &all[i..]);
    }
}

// LD_PRELOAD has no Windows counterpart; `inprocess.rs` covers the Windows case.
#[cfg(unix)]
#[test]
fn a_library_loaded_before_is_reported_as_already_loaded() {
    let Some(cu13) = wheels("a_library_loaded_before_is_reported_as_already_loaded") else {
        return;
    };
    let so = cu13.join(plat::NVJITLINK);
    // LD_PRELOAD loads it at process start, before the pathfinder looks; even with the
    // venv available, the loaded copy wins.
    let r = run(
        &["load", "nvJitLink", "--json"],
        &[
            ("LD_PRELOAD", os(&so)),
            ("VIRTUAL_ENV", os(&venv_of(&cu13))),
        ],
    );
    let v = r.get("nvJitLink");
    assert_eq!(v["found_via"], "was-already-loaded-from-elsewhere");
    assert_eq!(v["was_already_loaded_from_elsewhere"], true);
    assert_eq!(r.path("nvJitLink"), so);
}

#[test]
fn dependencies_are_loaded_first_and_their_failure_is_named() {
    let Some(cu13) = wheels("dependencies_are_loaded_first_and_their_failure_is_named") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("cuda");
    let lib = home.join(plat::CTK_LIB);
    std::fs::create_dir_all(&lib).unwrap();
    // Stand-ins: real, loadable libraries under cuBLAS's names (cublas needs cublasLt).
    let [cublas, cublas_lt] = plat::CUBLAS;
    std::fs::copy(cu13.join(plat::NVJITLINK), lib.join(cublas)).unwrap();
    let r = run(&["load", "cublas", "--json"], &[("CUDA_HOME", os(&home))]);
    assert_eq!(r.code, 1);
    let e = &r.get("cublas")["error"];
    assert_eq!(e["kind"], "dependency", "{e}");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("`cublasLt`"), "{e}");
    // The CLI prints the chain: the dependency's failure once, with its search list.
    assert!(
        message.starts_with("library `cublas` needs `cublasLt`, which could not be loaded: "),
        "{message}"
    );
    assert_eq!(
        message.matches("searched, in order").count(),
        1,
        "{message}"
    );
    std::fs::copy(cu13.join(plat::CUDART), lib.join(cublas_lt)).unwrap();
    let r = run(
        &["load", "cublas", "cublasLt", "--json"],
        &[("CUDA_HOME", os(&home))],
    );
    assert_eq!(r.code, 0, "{:?}", r.lines);
    assert_eq!(r.path("cublas"), lib.join(cublas));
    assert_eq!(r.path("cublasLt"), lib.join(cublas_lt));
}

#[test]
fn not_found_lists_every_place_in_order_and_exits_1() {
    let t = tempfile::tempdir().unwrap();
    let conda = t.path().join("conda");
    std::fs::create_dir_all(&conda).unwrap();
    let r = run(&["load", "nvvm", "--json"], &[("CONDA_PREFIX", os(&conda))]);
    if system_ctk_visible() {
        // The machine's toolkit is found through the loader's canary.
        assert_eq!(r.code, 0, "{:?}", r.lines);
        assert_eq!(r.via("nvvm"), "system-ctk-root");
        return;
    }
    assert_eq!(r.code, 1);
    let e = &r.get("nvvm")["error"];
    assert_eq!(e["kind"], "not-found");
    let steps: Vec<&str> = e["searched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    let mut order: Vec<&str> = steps.clone();
    order.dedup();
    assert_eq!(
        order,
        [
            "site-packages",
            "conda",
            "was-already-loaded-from-elsewhere",
            "system-search",
            "CUDA_PATH",
            "system-ctk-root"
        ],
        "{e}"
    );
    let msg = e["message"].as_str().unwrap();
    let conda_nvvm = if cfg!(windows) {
        "Library/nvvm/bin/x64"
    } else {
        "nvvm/lib64"
    };
    let conda_nvvm: PathBuf = conda.join(conda_nvvm).components().collect();
    assert!(msg.contains(&conda_nvvm.display().to_string()), "{msg}");
    assert!(msg.contains(file(plat::NVVM)), "{msg}");
}

#[test]
fn the_driver_is_only_looked_for_by_the_loader() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("cuda");
    let lib = home.join(plat::CTK_LIB);
    std::fs::create_dir_all(&lib).unwrap();
    // A driver library under CUDA_HOME is never taken: the driver comes from the loader.
    let driver = if cfg!(windows) {
        "nvcuda.dll"
    } else {
        "libcuda.so.1"
    };
    std::fs::write(lib.join(driver), b"not a library").unwrap();
    let r = run(
        &["load", "cuda", "nvml", "--json"],
        &[("CUDA_HOME", os(&home))],
    );
    for name in ["cuda", "nvml"] {
        let e = &r.get(name)["error"];
        if e.is_null() {
            // A machine with a driver: then it came from the loader.
            let via = r.via(name);
            assert!(
                via == "system-search" || via == "was-already-loaded-from-elsewhere",
                "{via}"
            );
            continue;
        }
        let steps: Vec<&str> = e["searched"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["step"].as_str().unwrap())
            .collect();
        assert!(
            steps
                .iter()
                .all(|s| *s == "was-already-loaded-from-elsewhere" || *s == "system-search"),
            "{steps:?}"
        );
    }
}

#[test]
fn unknown_names_are_errors_of_their_own() {
    let r = run(&["load", "nvrtcc", "--json"], &[]);
    assert_eq!(r.code, 1);
    assert_eq!(r.get("nvrtcc")["error"]["kind"], "unknown-name");
    let r = run(&["find", "header", "nope", "--json"], &[]);
    assert_eq!(r.code, 1);
    assert_eq!(r.get("nope")["error"]["kind"], "unknown-name");
}

#[test]
fn headers_bitcode_and_static_libs_come_from_the_wheels() {
    let Some(cu13) = wheels("headers_bitcode_and_static_libs_come_from_the_wheels") else {
        return;
    };
    let venv = venv_of(&cu13);
    let env = [("VIRTUAL_ENV", os(&venv))];
    let r = run(
        &[
            "find",
            "header",
            "nvrtc",
            "cudart",
            "nvjitlink",
            "nvvm",
            "--json",
        ],
        &env,
    );
    assert_eq!(r.code, 0, "{:?}", r.lines);
    for n in ["nvrtc", "cudart", "nvjitlink", "nvvm"] {
        assert_eq!(
            (r.via(n), r.path(n)),
            ("site-packages", cu13.join("include"))
        );
    }
    // `device` is cuda.pathfinder's name for libdevice; both work.
    let r = run(&["find", "bitcode", "libdevice", "device", "--json"], &env);
    assert_eq!(r.code, 0, "{:?}", r.lines);
    for n in ["libdevice", "device"] {
        assert_eq!(
            (r.via(n), r.path(n)),
            ("site-packages", cu13.join("nvvm/libdevice/libdevice.10.bc"))
        );
    }
    let r = run(&["find", "static", "cudadevrt", "--json"], &env);
    assert_eq!(r.path("cudadevrt"), cu13.join(plat::CUDADEVRT));
}

#[test]
fn binary_utilities_from_cuda_home_then_path() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("cuda");
    let elsewhere = t.path().join("elsewhere");
    let nvcc = if cfg!(windows) { "nvcc.exe" } else { "nvcc" };
    for d in [home.join("bin"), elsewhere.clone()] {
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(nvcc), b"#!/bin/sh\n").unwrap();
    }
    let r = run(
        &["find", "binary", "nvcc", "--json"],
        &[("CUDA_HOME", os(&home)), ("PATH", os(&elsewhere))],
    );
    assert_eq!(
        (r.via("nvcc"), r.path("nvcc")),
        ("CUDA_PATH", home.join("bin").join(nvcc))
    );
    let r = run(
        &["find", "binary", "nvcc", "--json"],
        &[("PATH", os(&elsewhere))],
    );
    // Nsight Systems' wheel keeps `nsys` in a directory of its own.
    let sp = t.path().join("site-packages");
    let nsys_dir = sp.join("nvidia/nsight_systems/bin");
    let nsys = if cfg!(windows) { "nsys.exe" } else { "nsys" };
    std::fs::create_dir_all(&nsys_dir).unwrap();
    std::fs::write(nsys_dir.join(nsys), b"").unwrap();
    let r3 = run(
        &["find", "binary", "nsys", "--json"],
        &[("PYTHONPATH", os(&sp))],
    );
    assert_eq!(
        (r3.via("nsys"), r3.path("nsys")),
        ("site-packages", nsys_dir.join(nsys))
    );
    let r2 = run(&["find", "binary", "ptxas", "--json"], &[]);
    if system_ctk_visible() {
        // The machine's toolkit root comes before `PATH`.
        assert_eq!(r.via("nvcc"), "system-ctk-root");
        assert_eq!(r2.via("ptxas"), "system-ctk-root");
        return;
    }
    assert_eq!(
        (r.via("nvcc"), r.path("nvcc")),
        ("PATH", elsewhere.join(nvcc))
    );
    assert_eq!(r2.code, 1);
    assert_eq!(r2.get("ptxas")["error"]["kind"], "not-found");
}

#[test]
fn doctor_reports_what_it_finds() {
    let Some(cu13) = wheels("doctor_reports_what_it_finds") else {
        return;
    };
    let venv = venv_of(&cu13);
    let mut cmd = Command::new(cli());
    cmd.arg("doctor").env_clear().env("VIRTUAL_ENV", &venv);
    if let Some(root) = std::env::var_os("SystemRoot").filter(|_| cfg!(windows)) {
        cmd.env("SystemRoot", root);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let line = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} row in:\n{text}"))
            .to_string()
    };
    let rows = |name: &str| -> Vec<&str> {
        text.lines()
            .filter(|l| l.split_whitespace().next() == Some(name))
            .collect()
    };
    // The toolkit section gives NVRTC's CUDA version, the library table its origin.
    let nvrtc = rows("nvrtc");
    assert!(nvrtc.iter().any(|l| l.contains("CUDA 13.0 at")), "{text}");
    assert!(
        nvrtc.iter().any(|l| l.contains("found via site-packages")),
        "{text}"
    );
    assert!(line("cublas").contains("needs `cublasLt`"), "{text}");
    assert!(line("libdevice").contains("libdevice.10.bc"), "{text}");
    assert!(text.contains("Summary: "), "{text}");
}
