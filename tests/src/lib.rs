//! Helpers shared by the tests of every cuda-rs crate.
//!
//! * [`require_gpu!`]: the first line of a GPU test. Without a usable GPU the test
//!   prints why and returns (a skip, said out loud); with `CUDA_TEST_REQUIRE_GPU=1`
//!   it fails instead, so a GPU test run can never pass by skipping.
//! * [`gpu_status`]: whether this process can use a GPU, and if not, why.
//! * [`require_env_or_skip`]: the same skip-or-fail rule for other prerequisites
//!   (for example the NVIDIA wheels venv, required when `CUDA_RS_REQUIRE_WHEELS=1`).
//! * [`proptest_cases`]: how many cases a property test runs (`PROPTEST_CASES`).
//! * [`needs_driver!`] / [`needs_library_driver!`]: a feature or library the
//!   driver is too old for is asserted as its typed error, never skipped.
//! * [`DriverShim`] / [`require_shim`]: the driver shim's fault rules and handle
//!   counts, for tests run under it (`run-shim.sh`).

// A test-support crate: failing a test is done by panicking, as `assert!` does.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::ffi::{c_int, c_uint, c_void};
use std::sync::OnceLock;

/// An error and each of its sources, joined by `": "`: every level says only its
/// own part.
pub fn report(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// The environment variable that turns a missing GPU from a skip into a failure.
pub const REQUIRE_GPU_VAR: &str = "CUDA_TEST_REQUIRE_GPU";

fn truthy(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Whether this process can use a GPU: `Ok(number of devices)` or `Err(why not)`.
///
/// Loads the driver through `cudars-pathfinder` and calls `cuInit(0)` and
/// `cuDeviceGetCount`; the answer is worked out once per process.
pub fn gpu_status() -> Result<i32, String> {
    static STATUS: OnceLock<Result<i32, String>> = OnceLock::new();
    STATUS.get_or_init(probe_gpu).clone()
}

fn probe_gpu() -> Result<i32, String> {
    let lib = cudars_pathfinder::load_nvidia_dynamic_lib("cuda")
        .map_err(|e| format!("no CUDA driver: {}", report(&e)))?;
    type CuInit = unsafe extern "C" fn(c_uint) -> c_int;
    type CuDeviceGetCount = unsafe extern "C" fn(*mut c_int) -> c_int;
    let init = driver_fn(lib, c"cuInit").ok_or("the driver library has no cuInit")?;
    let count =
        driver_fn(lib, c"cuDeviceGetCount").ok_or("the driver library has no cuDeviceGetCount")?;
    // SAFETY: both symbols come from libcuda and have these C signatures in cuda.h.
    let (init, count): (CuInit, CuDeviceGetCount) = unsafe {
        (
            std::mem::transmute::<*mut c_void, CuInit>(init),
            std::mem::transmute::<*mut c_void, CuDeviceGetCount>(count),
        )
    };
    // SAFETY: cuInit takes flags by value and may be called any number of times.
    let rc = unsafe { init(0) };
    if rc != 0 {
        return Err(format!("cuInit(0) failed with CUresult {rc}"));
    }
    let mut n: c_int = 0;
    // SAFETY: `n` is a valid, writable c_int for the duration of the call.
    let rc = unsafe { count(&mut n) };
    if rc != 0 {
        return Err(format!("cuDeviceGetCount failed with CUresult {rc}"));
    }
    if n < 1 {
        return Err("the driver reports no CUDA device".into());
    }
    Ok(n)
}

/// A driver function of CUDA 12.0's ABI, through `cuGetProcAddress_v2` (as the
/// bindings resolve them, so that a driver shim that exports only that is enough),
/// else by its exported symbol.
fn driver_fn(lib: &cudars_pathfinder::LoadedDl, name: &std::ffi::CStr) -> Option<*mut c_void> {
    type GetProcAddress = unsafe extern "C" fn(
        *const std::ffi::c_char,
        *mut *mut c_void,
        c_int,
        u64,
        *mut c_int,
    ) -> c_int;
    if let Some(gpa) = lib.symbol(c"cuGetProcAddress_v2") {
        // SAFETY: `cuGetProcAddress_v2` has this signature in every driver exporting it.
        let gpa = unsafe { std::mem::transmute::<*mut c_void, GetProcAddress>(gpa.as_ptr()) };
        let (mut p, mut status) = (std::ptr::null_mut(), 0);
        // SAFETY: `name` is NUL-terminated; both out-pointers are valid for writes.
        let rc = unsafe { gpa(name.as_ptr(), &mut p, 12000, 0, &mut status) };
        if rc == 0 && !p.is_null() {
            return Some(p);
        }
    }
    lib.symbol(name).map(|p| p.as_ptr())
}

/// The installed driver's CUDA version (`cuDriverGetVersion`, as `1000 * major +
/// 10 * minor`), 0 without a driver. Under the driver shim, the emulated one.
pub fn driver_version() -> i32 {
    static V: OnceLock<i32> = OnceLock::new();
    *V.get_or_init(|| {
        let Ok(lib) = cudars_pathfinder::load_nvidia_dynamic_lib("cuda") else {
            return 0;
        };
        let Some(f) = driver_fn(lib, c"cuDriverGetVersion") else {
            return 0;
        };
        // SAFETY: `CUresult cuDriverGetVersion(int *)`.
        let f = unsafe {
            std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_int) -> c_int>(f)
        };
        let mut v = 0;
        // SAFETY: `v` is valid for writes.
        if unsafe { f(&mut v) } == 0 { v } else { 0 }
    })
}

/// For a feature that needs a CUDA `needs` driver (`12080`): on an older driver
/// (a real one or the shim's) asserts that `result` is the typed error saying so
/// (its `required_driver()` names `needs`) and gives `None`; otherwise unwraps it.
/// Tests of such features never skip: they check the error instead.
#[macro_export]
macro_rules! needs_driver {
    ($needs:expr, $result:expr) => {{
        let needs: i32 = $needs;
        let have = $crate::driver_version();
        let result = $result;
        if have < needs {
            let e = match result {
                Ok(_) => panic!("a CUDA {needs} feature worked on a CUDA {have} driver"),
                Err(e) => e,
            };
            let req = e
                .required_driver()
                .unwrap_or_else(|| panic!("expected a driver-version error, got: {}", e.report()));
            assert_eq!(
                req.needs.major * 1000 + req.needs.minor * 10,
                needs,
                "the error names another version: {e}"
            );
            println!("as expected on a CUDA {have} driver: {e}");
            None
        } else {
            Some(result.unwrap())
        }
    }};
}

/// For a library crate's handle, plan, generator or cuFile driver (`Blas::new(&s)`,
/// `Plan::new(..)`): on a driver (a real one or the shim's) older than the
/// library's CUDA major, asserts that `result` is the typed `DriverTooOld` error
/// (its `required_driver()` names this driver, and an `X.0` driver of a newer
/// major than it) and gives `None`; otherwise unwraps it. Library tests never
/// skip on such a driver: they check the error, print it, and end.
///
/// ```no_run
/// use cudars_core::{Device, StreamOptions};
///
/// let s = Device::new(0).unwrap().create_stream(StreamOptions::default()).unwrap();
/// let Some(blas) = cudars_tests::needs_library_driver!(cudars_blas::Blas::new(&s)) else {
///     return; // the driver is too old for cuBLAS: the error was checked and printed
/// };
/// // … the test, in full
/// # drop(blas);
/// ```
#[macro_export]
macro_rules! needs_library_driver {
    ($result:expr) => {{
        match $result {
            Ok(v) => Some(v),
            Err(e) => {
                let have = $crate::driver_version();
                let report = e.report().to_string();
                let req = e.required_driver().unwrap_or_else(|| {
                    panic!("expected a library too new for the driver, got: {report}")
                });
                assert_eq!(
                    req.driver.major * 1000 + req.driver.minor * 10,
                    have,
                    "the error names another driver: {report}"
                );
                assert!(
                    req.needs.minor == 0 && req.needs.major > req.driver.major,
                    "a library of a CUDA major this driver has was refused: {report}"
                );
                let says = format!(
                    "{} needs a CUDA {} driver; this driver is CUDA {}",
                    req.feature, req.needs, req.driver
                );
                assert!(report.contains(&says), "{report}");
                println!("as expected on a CUDA {have} driver: {report}");
                None
            }
        }
    }};
}

/// Decides whether a test that needs `what` goes on.
///
/// Returns `true` when `available` is `Ok`. Otherwise prints a skip line naming the
/// test and the reason and returns `false`, unless `require_var` is set to a true
/// value, in which case it panics (the test fails).
pub fn require_or_skip(
    test: &str,
    what: &str,
    require_var: &str,
    available: Result<(), String>,
) -> bool {
    match available {
        Ok(()) => true,
        Err(why) if truthy(require_var) => {
            panic!("{test}: {what} is required ({require_var} is set) but unavailable: {why}")
        }
        Err(why) => {
            println!(
                "SKIPPED {test}: needs {what}: {why} (set {require_var}=1 to make this a failure)"
            );
            eprintln!("SKIPPED {test}: needs {what}: {why}");
            false
        }
    }
}

/// The name of the running test (libtest names each test's thread after it).
pub fn current_test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("<unnamed test>")
        .to_string()
}

/// [`require_or_skip`] for a GPU, governed by `CUDA_TEST_REQUIRE_GPU`.
pub fn require_gpu(test: &str) -> bool {
    require_or_skip(
        test,
        "a CUDA GPU",
        REQUIRE_GPU_VAR,
        gpu_status().map(|_| ()),
    )
}

/// [`require_or_skip`] for an environment variable that must name something.
pub fn require_env_or_skip(test: &str, var: &str, require_var: &str) -> Option<String> {
    let value = std::env::var(var).ok().filter(|v| !v.is_empty());
    let status = value
        .clone()
        .map(|_| ())
        .ok_or_else(|| format!("{var} is not set"));
    if require_or_skip(test, var, require_var, status) {
        value
    } else {
        None
    }
}

/// The first line of a test that needs a GPU: skips (printing why) without one, and
/// fails without one when `CUDA_TEST_REQUIRE_GPU=1`.
///
/// ```no_run
/// #[test]
/// fn allocates() {
///     cudars_tests::require_gpu!();
///     // ... GPU work ...
/// }
/// ```
#[macro_export]
macro_rules! require_gpu {
    () => {
        if !$crate::require_gpu(&$crate::current_test_name()) {
            return;
        }
    };
}

/// The environment variable that turns too few GPUs for a multi-GPU test from a skip
/// into a failure (set it on machines with several GPUs).
pub const REQUIRE_MULTI_GPU_VAR: &str = "CUDA_TEST_REQUIRE_MULTI_GPU";

/// [`require_or_skip`] for at least `n` GPUs: a missing GPU follows
/// [`require_gpu()`]; too few GPUs skip, or fail when `CUDA_TEST_REQUIRE_MULTI_GPU=1`.
pub fn require_gpus(test: &str, n: i32) -> bool {
    if !require_gpu(test) {
        return false;
    }
    let have = gpu_status().unwrap_or(0);
    require_or_skip(
        test,
        &format!("{n} CUDA GPUs"),
        REQUIRE_MULTI_GPU_VAR,
        if have >= n {
            Ok(())
        } else {
            Err(format!("this machine has {have}"))
        },
    )
}

/// The first line of a test that needs `n` GPUs (see [`require_gpus()`]).
#[macro_export]
macro_rules! require_gpus {
    ($n:expr) => {
        if !$crate::require_gpus(&$crate::current_test_name(), $n) {
            return;
        }
    };
}

/// The environment variable a test sets when it re-runs itself in a child process.
pub const CHILD_VAR: &str = "CUDA_RS_TEST_CHILD";

/// Whether this process is a child started by [`run_test_in_child`].
pub fn in_child() -> bool {
    truthy(CHILD_VAR)
}

/// Re-runs the current test binary for the single test `test` in a child process
/// with exactly the environment `envs` (plus [`CHILD_VAR`] and
/// `CUDA_TEST_REQUIRE_GPU` when set), so a test can change environment variables
/// without racing the others. Panics, with the child's output, unless the child
/// ran that one test and it passed.
pub fn run_test_in_child(test: &str, envs: &[(&str, &std::ffi::OsStr)]) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = std::process::Command::new(exe);
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env_clear()
        .env(CHILD_VAR, "1");
    // Windows itself needs `SystemRoot` in every process's environment.
    let system = if cfg!(windows) {
        &["SystemRoot"][..]
    } else {
        &[]
    };
    for var in [REQUIRE_GPU_VAR, "CUDA_RS_REQUIRE_WHEELS"]
        .iter()
        .chain(system)
    {
        if let Some(v) = std::env::var_os(var) {
            cmd.env(var, v);
        }
    }
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("starting the child test process");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child run of {test} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    print!("{stdout}");
}

/// The environment variable that turns a missing NVIDIA wheel library (NVRTC,
/// nvJitLink, NVVM, the runtime) from a skip into a failure. `cargo xtask test`
/// sets it.
pub const REQUIRE_WHEELS_VAR: &str = "CUDA_RS_REQUIRE_WHEELS";

/// Whether the library `lib` (a pathfinder catalogue name) loads; skips (printing
/// why) when it does not, or fails when [`REQUIRE_WHEELS_VAR`] or, for tests that
/// also need a GPU, [`REQUIRE_GPU_VAR`] is set.
pub fn require_lib(test: &str, lib: &str) -> bool {
    let status = cudars_pathfinder::load_nvidia_dynamic_lib(lib)
        .map(|_| ())
        .map_err(|e| report(&e));
    let var = if truthy(REQUIRE_GPU_VAR) {
        REQUIRE_GPU_VAR
    } else {
        REQUIRE_WHEELS_VAR
    };
    require_or_skip(test, &format!("the `{lib}` library"), var, status)
}

/// The first line of a test that needs NVIDIA libraries (`"nvrtc"`, `"nvJitLink"`,
/// …): skips without them, fails without them under `cargo xtask test` or on a GPU
/// run.
#[macro_export]
macro_rules! require_libs {
    ($($lib:expr),+ $(,)?) => {
        $(
            if !$crate::require_lib(&$crate::current_test_name(), $lib) {
                return;
            }
        )+
    };
}

/// The CUDA major of the toolkit libraries (runtime, NVRTC, nvJitLink) this test
/// run was pointed at: `CUDA_RS_EXPECT_MAJOR`, which `cargo xtask test` sets for
/// each of its passes (12.9 wheels, 13.0 wheels). `None` when unset: then a test
/// accepts either supported major.
pub fn expected_major() -> Option<i32> {
    std::env::var("CUDA_RS_EXPECT_MAJOR")
        .ok()
        .and_then(|v| v.trim().parse().ok())
}

/// Asserts that a library's CUDA major is the one this run expects (or, when the
/// run names none, one of the supported majors).
#[track_caller]
pub fn assert_expected_major(what: &str, major: i32) {
    match expected_major() {
        Some(m) => assert_eq!(major, m, "{what} is CUDA {major}, this run expects {m}"),
        None => assert!(
            major == 12 || major == 13,
            "{what} is CUDA {major}, neither 12 nor 13"
        ),
    }
}

/// Lowercase hex of `bytes`: how IPC tests hand handles to a child process in an
/// environment variable.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|x| format!("{x:02x}")).collect()
}

/// The bytes [`hex`] wrote. Panics on anything else (test input).
pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digits"))
        .collect()
}

/// Re-runs the single test `test` of this test binary in a child process that
/// inherits the open descriptor `fd` (its close-on-exec flag is cleared) and gets
/// `envs` on top of this process's environment. Panics, with the child's exit
/// status and output, unless the child ran that test and it passed.
#[cfg(unix)]
pub fn run_test_with_fd(test: &str, fd: std::os::fd::BorrowedFd<'_>, envs: &[(&str, String)]) {
    run_test_with_fds(test, &[fd], envs);
}

/// [`run_test_with_fd`] with several descriptors, each inherited by the child.
#[cfg(unix)]
pub fn run_test_with_fds(test: &str, fds: &[std::os::fd::BorrowedFd<'_>], envs: &[(&str, String)]) {
    use std::os::fd::AsRawFd as _;
    for fd in fds {
        // SAFETY: clearing FD_CLOEXEC on a descriptor the caller holds open.
        let rc = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, 0) };
        assert_eq!(
            rc,
            0,
            "clearing FD_CLOEXEC: {}",
            std::io::Error::last_os_error()
        );
    }
    let out = std::process::Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([test, "--exact", "--nocapture"])
        .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .expect("starting the child process");
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "child failed: {:?}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The variable that sets how many cases each property test runs (proptest's own).
pub const PROPTEST_CASES_VAR: &str = "PROPTEST_CASES";

/// How many cases a property test runs: `PROPTEST_CASES` when it is set to a
/// number, else `default`. The defaults keep the whole property suite of the
/// workspace to a few seconds on a small CI machine; a longer hunt sets the
/// variable (`PROPTEST_CASES=100000 cargo test -p cudars-core hostile`).
///
/// Under Miri, which runs code thousands of times slower, the default is at most
/// [`MIRI_PROPTEST_CASES`]: enough to run each property's code paths through
/// Miri's checks (the variable still decides when set).
pub fn proptest_cases(default: u32) -> u32 {
    let default = if cfg!(miri) {
        default.min(MIRI_PROPTEST_CASES)
    } else {
        default
    };
    std::env::var(PROPTEST_CASES_VAR)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// The most cases a property test runs by default under Miri.
pub const MIRI_PROPTEST_CASES: u32 = 4;

/// The variable that turns "not running under the driver shim" from a skip into
/// a failure (`run-shim.sh` sets it).
pub const REQUIRE_SHIM_VAR: &str = "CUDA_RS_REQUIRE_SHIM";

/// The driver shim's test controls (`tests/driver-shim`), found in the loaded
/// `libcuda.so.1` when it is the shim: set fault rules or a random schedule,
/// and read the call and handle counts.
#[derive(Clone, Copy)]
pub struct DriverShim {
    set_faults: unsafe extern "C" fn(*const std::ffi::c_char) -> c_uint,
    set_random: unsafe extern "C" fn(u64, u32, c_uint) -> c_uint,
    report: unsafe extern "C" fn(*mut std::ffi::c_char, usize) -> usize,
}

impl DriverShim {
    /// The shim's controls, or why they are not there (no driver, or a driver
    /// that is not the shim).
    pub fn find() -> Result<Self, String> {
        let lib = cudars_pathfinder::load_nvidia_dynamic_lib("cuda")
            .map_err(|e| format!("no CUDA driver: {}", report(&e)))?;
        let sym = |name: &std::ffi::CStr| {
            lib.symbol(name).map(|p| p.as_ptr()).ok_or_else(|| {
                format!(
                    "the loaded driver {} is not the driver shim (no {name:?}); run under run-shim.sh",
                    lib.abs_path().display()
                )
            })
        };
        let (set_faults, set_random, report) = (
            sym(c"cuda_rs_shim_set_faults")?,
            sym(c"cuda_rs_shim_set_random_faults")?,
            sym(c"cuda_rs_shim_report")?,
        );
        // SAFETY: the shim exports these three functions with these C signatures.
        unsafe {
            Ok(Self {
                set_faults: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(*const std::ffi::c_char) -> c_uint,
                >(set_faults),
                set_random: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(u64, u32, c_uint) -> c_uint,
                >(set_random),
                report: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(*mut std::ffi::c_char, usize) -> usize,
                >(report),
            })
        }
    }

    /// Replaces the fault plan with `rules` (`cuMemAlloc:2:CUDA_ERROR_OUT_OF_MEMORY`,
    /// empty for none) and restarts the call counts. Panics if the shim refuses them.
    pub fn set_faults(&self, rules: &str) {
        let c = std::ffi::CString::new(rules).expect("rules without NUL");
        // SAFETY: a NUL-terminated string.
        let rc = unsafe { (self.set_faults)(c.as_ptr()) };
        assert_eq!(rc, 0, "the shim refused the fault rules {rules:?}");
    }

    /// Replaces the fault plan with a random schedule: each call that releases
    /// nothing fails with probability `rate_ppb` / 10^9, returning `error`.
    pub fn set_random_faults(&self, seed: u64, rate_ppb: u32, error: c_uint) {
        // SAFETY: plain values.
        let rc = unsafe { (self.set_random)(seed, rate_ppb, error) };
        assert_eq!(rc, 0, "the shim refused the random schedule");
    }

    /// The counts, as the shim's JSON.
    pub fn report_json(&self) -> String {
        // SAFETY: a NULL buffer asks for the length only.
        let n = unsafe { (self.report)(std::ptr::null_mut(), 0) };
        // Room for growth between the two calls (more calls, longer numbers).
        let mut buf = vec![0u8; n + 4096];
        // SAFETY: `buf` is valid for `buf.len()` bytes.
        let m = unsafe { (self.report)(buf.as_mut_ptr().cast(), buf.len()) };
        assert!(m < buf.len(), "the report grew past its buffer");
        buf.truncate(m);
        String::from_utf8(buf).expect("the report is UTF-8")
    }

    /// One object of the report (`calls`, `injected`, `created`, `released`,
    /// `live`): name to number.
    pub fn counts(&self, section: &str) -> std::collections::BTreeMap<String, i64> {
        parse_counts(&self.report_json(), section)
    }
}

/// The `"section":{"name":n,…}` object of the shim's flat JSON report.
pub fn parse_counts(json: &str, section: &str) -> std::collections::BTreeMap<String, i64> {
    let start = format!("\"{section}\":{{");
    let Some(at) = json.find(&start) else {
        panic!("no {section} in the shim's report: {json}");
    };
    let body = &json[at + start.len()..];
    let body = &body[..body.find('}').expect("a closed object")];
    body.split(',')
        .filter(|item| !item.is_empty())
        .map(|item| {
            let (name, n) = item.split_once(':').expect("name:number");
            (
                name.trim_matches('"').to_string(),
                n.parse().expect("a number"),
            )
        })
        .collect()
}

/// The driver shim's controls, or `None` after printing a skip line (or a
/// failure under `CUDA_RS_REQUIRE_SHIM=1`) when the process is not running
/// under the shim.
pub fn require_shim(test: &str) -> Option<DriverShim> {
    match DriverShim::find() {
        Ok(s) => Some(s),
        Err(why) => {
            require_or_skip(test, "the driver shim", REQUIRE_SHIM_VAR, Err(why));
            None
        }
    }
}

/// A cheap deterministic pseudo-random sequence (xorshift64, started from
/// `seed | 1`), for test data that differs between runs of nothing.
pub fn xorshift64(seed: u64) -> impl Iterator<Item = u64> {
    let mut x = seed | 1;
    std::iter::repeat_with(move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shims_report_is_read_by_section() {
        let json = r#"{"calls":{"cuMemAlloc":3,"cuMemFree":2},"injected":{},"live":{"memory":-1,"streams":0}}"#;
        let calls = parse_counts(json, "calls");
        assert_eq!(calls.get("cuMemAlloc"), Some(&3));
        assert_eq!(calls.len(), 2);
        assert!(parse_counts(json, "injected").is_empty());
        assert_eq!(parse_counts(json, "live").get("memory"), Some(&-1));
    }

    #[test]
    fn proptest_cases_default_unless_set() {
        if std::env::var_os(PROPTEST_CASES_VAR).is_none() {
            assert_eq!(proptest_cases(17), 17);
        }
    }
}
