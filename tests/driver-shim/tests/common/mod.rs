//! Helpers the driver-shim tests share: finding the shim, and running this
//! test's binary again as a child that loads it as `libcuda.so.1` in its
//! fake-driver mode.

// Not every test uses every helper.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// The shim's shared library: the one built with the library this test links
/// (in `deps/` beside the test's binary; the copy one level up is `cargo
/// build`'s and may be stale), or, in the GPU test package, `shim/libcuda.so.1`
/// beside `bin/`.
pub(crate) fn shim_library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap();
    let candidates = [
        dir.join("libcudars_driver_shim.so"),
        dir.join("../shim/libcuda.so.1"),
    ];
    candidates
        .iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("no shim library at {candidates:?}"))
        .clone()
}

/// Runs the test `test` of this binary again as a child, with `child_env` set
/// and the shim loaded as the driver in its fake-driver mode
/// (`CUDA_RS_SHIM_FAKE_DRIVER=1`); prints the child's output, checks that it
/// succeeded and printed `expected`.
pub(crate) fn run_fake_driver_child(test: &str, child_env: &str, expected: &str) {
    run_fake_driver_child_with(test, &[(child_env, "1")], &[], expected);
}

/// [`run_fake_driver_child`] with the variables `env` set in the child, and
/// those of `pass_through` that are set here passed on (`PATH` always is).
pub(crate) fn run_fake_driver_child_with(
    test: &str,
    env: &[(&str, &str)],
    pass_through: &[&str],
    expected: &str,
) {
    // The loader finds the shim by the driver's soname in a directory of its own.
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(shim_library(), dir.path().join("libcuda.so.1")).unwrap();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LD_LIBRARY_PATH", dir.path())
        .env("CUDA_RS_SHIM_FAKE_DRIVER", "1")
        .envs(env.iter().copied());
    for var in pass_through {
        if let Some(v) = std::env::var_os(var) {
            cmd.env(var, v);
        }
    }
    let out = cmd.output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    println!("{stdout}");
    assert!(
        out.status.success(),
        "the child failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains(expected), "{stdout}\n{stderr}");
}
