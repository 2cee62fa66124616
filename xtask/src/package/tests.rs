use std::path::PathBuf;

use serde_json::json;

use super::gl::{gl_libraries, is_soname};
use super::iproute::iproute;
use super::scripts::{EGL_ENV, run_shim_sh};
use super::{SHIM_PACKAGE, classify, shared_library};

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
        shared_library(&msgs, SHIM_PACKAGE),
        Some(PathBuf::from("/t/release/libcudars_driver_shim.so"))
    );
    assert_eq!(shared_library(&msgs[..1], SHIM_PACKAGE), None);
    assert_eq!(shared_library(&msgs, "cudars-nvtx-inject"), None);
}

/// Runs a copy of run-shim.sh beside a run.sh that prints what it was given.
#[cfg(unix)]
fn run_shim(args: &[&str], real: &str) -> (i32, String, String) {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let script = run_shim_sh(
        &[
            "cudars-blas--test-gpu".to_string(),
            "cudars-blas--example-gemm".to_string(),
        ],
        &["cublas_runs_on_a_green_context_stream"],
    );
    std::fs::write(dir.path().join("run-shim.sh"), script).unwrap();
    let run = dir.path().join("run.sh");
    std::fs::write(
        &run,
        "#!/usr/bin/env bash\necho \"args=$*\"\necho \"real=$CUDA_RS_SHIM_REAL_DRIVER\"\n\
         echo \"version=${CUDA_RS_SHIM_DRIVER_VERSION-unset}\"\necho \"path=$LD_LIBRARY_PATH\"\n\
         echo \"require=$CUDA_RS_REQUIRE_SHIM\"\n\
         echo \"not run=${CUDA_RS_NOT_RUN_BINARIES-unset} / ${CUDA_RS_NOT_RUN_TESTS-unset}\"\n\
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
            // Below the libraries' CUDA major, their tests run (and assert the
            // crates' refusal).
            "not run=unset / unset",
            "3 passed, 0 failed, 1 skipped",
        ]
    );
    // At or above it, what calls them past the shim is left out.
    let (rc, out, err) = run_shim(&["13000"], real);
    assert_eq!(rc, 0, "{out}{err}");
    assert!(
        out.contains(
            "not run=cudars-blas--test-gpu cudars-blas--example-gemm / \
             cublas_runs_on_a_green_context_stream"
        ),
        "{out}"
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

/// Downloads (or takes from target/gpu-pkg-debs) and unpacks iproute2: `ip` and
/// every library it needs beyond glibc, under their sonames.
#[test]
#[ignore = "needs apt-get and the Debian archive (or the .debs cached in target/)"]
fn the_packaged_ip_finds_its_libraries() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = iproute(dir.path()).unwrap();
    assert!(dir.path().join("ip").is_file());
    let mut names: Vec<String> = std::fs::read_dir(dir.path().join("lib"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for want in ["libbpf.so.1", "libcap.so.2", "libmnl.so.0", "libz.so.1"] {
        assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
    }
    assert!(bytes > 500_000 && bytes < 8 << 20, "{bytes}");
    // It runs from there (on an x86-64 Linux with glibc, as the GPU machines are).
    if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        let out = std::process::Command::new(dir.path().join("ip"))
            .arg("-V")
            .env("LD_LIBRARY_PATH", dir.path().join("lib"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("iproute2"),
            "{out:?}"
        );
    }
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
    let text = String::from_utf8_lossy(&out.stdout).replace(&*dir.path().to_string_lossy(), "PKG");
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
        classify("example", false, "cudars-driver-shim", "host_cost"),
        None
    );
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
