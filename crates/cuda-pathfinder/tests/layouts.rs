//! The search order against real NVIDIA libraries laid out as a venv, a conda
//! prefix, a `CUDA_HOME` tree, an `LD_LIBRARY_PATH` directory and a toolkit found by
//! its canary. Each case runs the `cuda-pathfinder` CLI in a child process with an
//! environment built from nothing, so no test sees another's variables.
//!
//! The libraries come from NVIDIA's wheels in the venv named by `CUDA_RS_TEST_VENV`
//! (`cargo xtask test` makes it). Without it these tests skip, saying so, unless
//! `CUDA_RS_REQUIRE_WHEELS=1`, when they fail.

// Test and benchmark code: a failed step is a failed run, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn cli() -> PathBuf {
    match std::env::var_os("CUDA_PATHFINDER_BIN") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_BIN_EXE_cuda-pathfinder")),
    }
}

/// The venv's `nvidia/cu13` directory, or `None` (the test then skips or fails).
fn wheels(test: &str) -> Option<PathBuf> {
    let venv =
        cuda_rs_tests::require_env_or_skip(test, "CUDA_RS_TEST_VENV", "CUDA_RS_REQUIRE_WHEELS")?;
    let lib = Path::new(&venv).join("lib");
    let found = std::fs::read_dir(&lib)
        .unwrap_or_else(|e| panic!("{}: {e}", lib.display()))
        .filter_map(Result::ok)
        .map(|e| e.path().join("site-packages/nvidia/cu13"))
        .find(|p| p.join("lib/libnvrtc.so.13").is_file());
    Some(found.unwrap_or_else(|| panic!("no nvidia/cu13 wheels under {}", lib.display())))
}

fn site_packages_of(cu13: &Path) -> PathBuf {
    cu13.parent().and_then(Path::parent).unwrap().to_path_buf()
}

fn venv_of(cu13: &Path) -> PathBuf {
    // <venv>/lib/python3.X/site-packages/nvidia/cu13
    cu13.ancestors().nth(5).unwrap().to_path_buf()
}

/// Symlinks the wheel's `files` (relative to `nvidia/cu13`) into `dir`.
fn place(cu13: &Path, dir: &Path, files: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    for f in files {
        let src = cu13.join(f);
        assert!(src.is_file(), "{} missing from the wheels", src.display());
        std::os::unix::fs::symlink(&src, dir.join(src.file_name().unwrap())).unwrap();
    }
}

const CORE_LIBS: &[&str] = &[
    "lib/libnvrtc.so.13",
    "lib/libnvJitLink.so.13",
    "lib/libcudart.so.13",
];

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
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("running cuda-pathfinder");
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
        ("nvrtc", "lib/libnvrtc.so.13"),
        ("nvJitLink", "lib/libnvJitLink.so.13"),
        ("cudart", "lib/libcudart.so.13"),
        ("nvvm", "lib/libnvvm.so.4"),
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
        ("site-packages", cu13.join("lib/libnvJitLink.so.13"))
    );
    // No VIRTUAL_ENV: the venv is found from the python3 on PATH and its pyvenv.cfg.
    let bin = venv_of(&cu13).join("bin");
    let r = run(&["load", "nvJitLink", "--json"], &[("PATH", os(&bin))]);
    assert_eq!(
        (r.via("nvJitLink"), r.path("nvJitLink")),
        ("site-packages", cu13.join("lib/libnvJitLink.so.13"))
    );
}

#[test]
fn conda_prefix_is_searched() {
    let Some(cu13) = wheels("conda_prefix_is_searched") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let conda = t.path().join("conda");
    place(&cu13, &conda.join("lib"), CORE_LIBS);
    place(&cu13, &conda.join("nvvm/lib64"), &["lib/libnvvm.so.4"]);
    let r = run(
        &["load", "nvrtc", "cudart", "nvvm", "--json"],
        &[("CONDA_PREFIX", os(&conda))],
    );
    assert_eq!(r.code, 0, "{:?}", r.lines);
    assert_eq!(
        (r.via("nvrtc"), r.path("nvrtc")),
        ("conda", conda.join("lib/libnvrtc.so.13"))
    );
    assert_eq!(
        (r.via("cudart"), r.path("cudart")),
        ("conda", conda.join("lib/libcudart.so.13"))
    );
    assert_eq!(
        (r.via("nvvm"), r.path("nvvm")),
        ("conda", conda.join("nvvm/lib64/libnvvm.so.4"))
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
        place(&cu13, &root.join("lib64"), CORE_LIBS);
        place(&cu13, &root.join("nvvm/lib64"), &["lib/libnvvm.so.4"]);
    }
    let r = run(
        &["load", "nvrtc", "nvvm", "--json"],
        &[("CUDA_HOME", os(&b))],
    );
    assert_eq!(
        (r.via("nvrtc"), r.path("nvrtc")),
        ("CUDA_PATH", b.join("lib64/libnvrtc.so.13"))
    );
    assert_eq!(
        (r.via("nvvm"), r.path("nvvm")),
        ("CUDA_PATH", b.join("nvvm/lib64/libnvvm.so.4"))
    );
    let r = run(
        &["load", "nvrtc", "--json"],
        &[("CUDA_HOME", os(&b)), ("CUDA_PATH", os(&a))],
    );
    assert_eq!(
        (r.via("nvrtc"), r.path("nvrtc")),
        ("CUDA_PATH", a.join("lib64/libnvrtc.so.13"))
    );
}

#[test]
fn ld_library_path_is_system_search() {
    let Some(cu13) = wheels("ld_library_path_is_system_search") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("ld");
    place(&cu13, &dir, CORE_LIBS);
    let r = run(
        &["load", "nvJitLink", "cudart", "--json"],
        &[("LD_LIBRARY_PATH", os(&dir))],
    );
    assert_eq!(
        (r.via("nvJitLink"), r.path("nvJitLink")),
        ("system-search", dir.join("libnvJitLink.so.13"))
    );
    assert_eq!(r.via("cudart"), "system-search");
}

#[test]
fn nvvm_is_found_from_the_cudart_canary() {
    let Some(cu13) = wheels("nvvm_is_found_from_the_cudart_canary") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let ctk = t.path().join("ctk");
    place(&cu13, &ctk.join("lib64"), CORE_LIBS);
    place(&cu13, &ctk.join("nvvm/lib64"), &["lib/libnvvm.so.4"]);
    let r = run(
        &["load", "nvvm", "--json"],
        &[("LD_LIBRARY_PATH", os(&ctk.join("lib64")))],
    );
    assert_eq!(
        (r.via("nvvm"), r.path("nvvm")),
        ("system-ctk-root", ctk.join("nvvm/lib64/libnvvm.so.4"))
    );
    // The canary was only read, not loaded: cudart still loads by the usual steps.
    let r = run(
        &["load", "nvvm", "cudart", "--json"],
        &[("LD_LIBRARY_PATH", os(&ctk.join("lib64")))],
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
    place(&cu13, &conda.join("lib"), CORE_LIBS);
    place(&cu13, &home.join("lib64"), CORE_LIBS);
    place(&cu13, &ld, CORE_LIBS);
    let venv = venv_of(&cu13);
    let all: Vec<(&str, &OsStr)> = vec![
        ("VIRTUAL_ENV", os(&venv)),
        ("CONDA_PREFIX", os(&conda)),
        ("LD_LIBRARY_PATH", os(&ld)),
        ("CUDA_HOME", os(&home)),
    ];
    let expect = ["site-packages", "conda", "system-search", "CUDA_PATH"];
    for (i, want) in expect.iter().enumerate() {
        let r = run(&["load", "nvrtc", "--json"], &all[i..]);
        assert_eq!(r.via("nvrtc"), *want, "with {:?}", &all[i..]);
    }
}

#[test]
fn a_library_loaded_before_is_reported_as_already_loaded() {
    let Some(cu13) = wheels("a_library_loaded_before_is_reported_as_already_loaded") else {
        return;
    };
    let so = cu13.join("lib/libnvJitLink.so.13");
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
    std::fs::create_dir_all(home.join("lib64")).unwrap();
    // Stand-ins: real, loadable ELF files under cuBLAS's names (cublas needs cublasLt).
    std::fs::copy(
        cu13.join("lib/libnvJitLink.so.13"),
        home.join("lib64/libcublas.so.13"),
    )
    .unwrap();
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
    std::fs::copy(
        cu13.join("lib/libcudart.so.13"),
        home.join("lib64/libcublasLt.so.13"),
    )
    .unwrap();
    let r = run(
        &["load", "cublas", "cublasLt", "--json"],
        &[("CUDA_HOME", os(&home))],
    );
    assert_eq!(r.code, 0, "{:?}", r.lines);
    assert_eq!(r.path("cublas"), home.join("lib64/libcublas.so.13"));
    assert_eq!(r.path("cublasLt"), home.join("lib64/libcublasLt.so.13"));
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
    assert!(
        msg.contains(&conda.join("nvvm/lib64").display().to_string()),
        "{msg}"
    );
    assert!(msg.contains("libnvvm.so.4"), "{msg}");
}

#[test]
fn the_driver_is_only_looked_for_by_the_loader() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("cuda");
    std::fs::create_dir_all(home.join("lib64")).unwrap();
    // A libcuda.so.1 under CUDA_HOME is never taken: the driver comes from the loader.
    std::fs::write(home.join("lib64/libcuda.so.1"), b"not a library").unwrap();
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
    let r = run(&["find", "bitcode", "libdevice", "--json"], &env);
    assert_eq!(
        r.path("libdevice"),
        cu13.join("nvvm/libdevice/libdevice.10.bc")
    );
    let r = run(&["find", "static", "cudadevrt", "--json"], &env);
    assert_eq!(r.path("cudadevrt"), cu13.join("lib/libcudadevrt.a"));
}

#[test]
fn binary_utilities_from_cuda_home_then_path() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("cuda");
    let elsewhere = t.path().join("elsewhere");
    for d in [home.join("bin"), elsewhere.clone()] {
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("nvcc"), b"#!/bin/sh\n").unwrap();
    }
    let r = run(
        &["find", "binary", "nvcc", "--json"],
        &[("CUDA_HOME", os(&home)), ("PATH", os(&elsewhere))],
    );
    assert_eq!(
        (r.via("nvcc"), r.path("nvcc")),
        ("CUDA_PATH", home.join("bin/nvcc"))
    );
    let r = run(
        &["find", "binary", "nvcc", "--json"],
        &[("PATH", os(&elsewhere))],
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
        ("PATH", elsewhere.join("nvcc"))
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
    let out = Command::new(cli())
        .arg("doctor")
        .env_clear()
        .env("VIRTUAL_ENV", &venv)
        .output()
        .unwrap();
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
