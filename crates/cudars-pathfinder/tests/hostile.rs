//! Hostile input to the pathfinder: any name given to the library API, any
//! arguments given to the `cudars-pathfinder` CLI. Each gets an answer or a typed
//! error (the CLI: exit code 0, 1 or 2 and a message), never a panic.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ffi::OsString;
#[cfg(unix)]
use std::os::unix::ffi::OsStringExt as _;
use std::process::{Command, Stdio};

use proptest::prelude::*;

mod common;
use common::cli;

/// Runs the CLI with `args` in an empty environment: (exit code, stderr).
fn run(args: &[OsString], stdout: Stdio) -> (i32, String) {
    let empty = tempfile::tempdir().unwrap();
    let out = Command::new(cli())
        .args(args)
        .env_clear()
        .env("PATH", empty.path())
        .env("HOME", empty.path())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .expect("running cudars-pathfinder");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Names near real ones, real ones, path-like ones, and arbitrary text.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("cudart".to_string()),
        Just("nvrtc".to_string()),
        Just("cuda".to_string()),
        Just("libdevice".to_string()),
        Just("nvcc".to_string()),
        Just(String::new()),
        Just("../../etc/passwd".to_string()),
        Just("/usr/lib/x86_64-linux-gnu/libc.so.6".to_string()),
        Just("cudart\0".to_string()),
        "[a-zA-Z0-9_./\\-]{0,24}",
        ".{0,24}",
    ]
}

/// Bytes that are not always UTF-8, as an argument (Unix: any bytes but NUL).
#[cfg(unix)]
fn raw_arg() -> impl Strategy<Value = OsString> {
    proptest::collection::vec(any::<u8>(), 1..12)
        .prop_map(|b| OsString::from_vec(b.into_iter().filter(|&c| c != 0).collect()))
}

/// Elsewhere, arbitrary text.
#[cfg(not(unix))]
fn raw_arg() -> impl Strategy<Value = OsString> {
    "(?s).{1,12}".prop_map(|s| OsString::from(s.replace('\0', "")))
}

/// A CLI argument: the words it knows, names, and bytes that are not UTF-8.
fn arg() -> impl Strategy<Value = OsString> {
    prop_oneof![
        prop_oneof![
            Just("load"),
            Just("locate"),
            Just("find"),
            Just("header"),
            Just("binary"),
            Just("bitcode"),
            Just("static"),
            Just("list"),
            Just("help"),
            Just("--json"),
            Just("--verbose"),
            Just("-v"),
            Just("--version"),
            Just("--"),
            Just("-"),
        ]
        .prop_map(OsString::from),
        name().prop_map(|n| OsString::from(n.replace('\0', ""))),
        raw_arg(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cudars_tests::proptest_cases(48)))]

    /// The library API: any name is an answer or a `PathfinderError`.
    #[test]
    fn any_name_is_an_answer_or_an_error(name in name()) {
        let _ = cudars_pathfinder::locate_nvidia_dynamic_lib(&name);
        let _ = cudars_pathfinder::find_nvidia_header_directory(&name);
        let _ = cudars_pathfinder::find_nvidia_binary_utility(&name);
        let _ = cudars_pathfinder::find_bitcode_lib(&name);
        let _ = cudars_pathfinder::find_static_lib(&name);
        if let Err(e) = cudars_pathfinder::load_nvidia_dynamic_lib(&name) {
            prop_assert!(!e.to_string().is_empty());
        }
    }

    /// The CLI: exit code 0, 1 or 2, never a panic (whose exit code is 101).
    #[test]
    fn any_arguments_give_an_exit_code_not_a_panic(args in proptest::collection::vec(arg(), 0..5)) {
        let (code, stderr) = run(&args, Stdio::null());
        prop_assert!(matches!(code, 0..=2), "{args:?}: exit {code}\n{stderr}");
        prop_assert!(!stderr.contains("panicked"), "{args:?}:\n{stderr}");
    }
}

/// An argument that is not UTF-8 was a panic in `std::env::args`; it is bad usage.
#[cfg(unix)]
#[test]
fn an_argument_that_is_not_utf8_is_bad_usage() {
    let (code, stderr) = run(
        &[OsString::from("load"), OsString::from_vec(vec![b'c', 0xff])],
        Stdio::null(),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("not valid UTF-8"), "{stderr}");
}

/// Output nobody reads (stdout a pipe whose read end is closed, as after
/// `| head` exits) was a panic in `println!`; the CLI exits with its usual code.
#[cfg(unix)]
#[test]
fn a_closed_stdout_is_not_a_panic() {
    use std::os::fd::{FromRawFd as _, OwnedFd};
    for args in [&["--version"][..], &["help"], &["list"]] {
        let mut fds = [0i32; 2];
        // SAFETY: `fds` has room for the two descriptors `pipe` writes.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors are fresh and owned here, once each.
        let (read_end, write_end) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        drop(read_end);
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        let (code, stderr) = run(&args, Stdio::from(write_end));
        assert_eq!(code, 0, "{args:?}:\n{stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}:\n{stderr}");
    }
}
