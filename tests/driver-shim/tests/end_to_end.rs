//! The built shim (`libcudars_driver_shim.so`) in front of a fake driver, without
//! a GPU: a small C library that exports `cuGetProcAddress_v2` and
//! `cuDriverGetVersion` and hands out a `cuMemAlloc` and a `cuMemFree` that count
//! their calls, compiled here with the system's C compiler. Each scenario runs in
//! a child process (the shim reads its environment once): lookups come back
//! behind trampolines, rules and random schedules fail the calls they name
//! without reaching the driver, the counts and the exit report add up, and a
//! malformed rule makes the shim refuse every call.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::path::Path;
use std::process::Command;

const FAKE_DRIVER: &str = r#"
#include <stdint.h>
#include <stddef.h>
#include <string.h>
int fake_allocs = 0, fake_frees = 0;
static int alloc_(uint64_t *p, size_t n) { fake_allocs++; *p = 0x1000 + n; return 0; }
static int free_(uint64_t p) { (void)p; fake_frees++; return 0; }
void *fake_alloc_address(void) { return (void *)alloc_; }
int cuDriverGetVersion(int *v) { *v = 12080; return 0; }
int cuGetProcAddress_v2(const char *s, void **pfn, int version, uint64_t flags, int *status) {
    (void)version; (void)flags;
    void *f = !strcmp(s, "cuMemAlloc") ? (void *)alloc_ : !strcmp(s, "cuMemFree") ? (void *)free_ : NULL;
    *pfn = f;
    if (status) *status = f ? 0 : 1;
    return f ? 0 : 500;
}
"#;

const SCENARIO: &str = "CUDA_RS_SHIM_E2E_SCENARIO";
const SHIM: &str = "CUDA_RS_SHIM_E2E_SHIM";

type Gpa = unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64, *mut c_uint) -> c_uint;
type Alloc = unsafe extern "C" fn(*mut u64, usize) -> c_uint;
type Free = unsafe extern "C" fn(u64) -> c_uint;

fn dlopen(path: &Path) -> *mut c_void {
    let c = CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!h.is_null(), "cannot load {}", path.display());
    h
}

fn sym(handle: *mut c_void, name: &CStr) -> *mut c_void {
    // SAFETY: a live handle and a NUL-terminated name.
    let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
    assert!(!p.is_null(), "no {name:?}");
    p
}

/// The child's side: loads the shim and runs one scenario, printing what it sees.
fn child(scenario: &str) {
    let shim = dlopen(Path::new(&std::env::var(SHIM).unwrap()));
    // SAFETY: the shim's exports, with their C signatures.
    let gpa = unsafe { std::mem::transmute::<*mut c_void, Gpa>(sym(shim, c"cuGetProcAddress_v2")) };
    // SAFETY: as above.
    let set_faults = unsafe {
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*const c_char) -> c_uint>(sym(
            shim,
            c"cuda_rs_shim_set_faults",
        ))
    };
    // SAFETY: as above.
    let report = unsafe {
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_char, usize) -> usize>(sym(
            shim,
            c"cuda_rs_shim_report",
        ))
    };
    let lookup = |name: &CStr, version: c_int| {
        let (mut pfn, mut status) = (std::ptr::null_mut(), 9);
        // SAFETY: a NUL-terminated name and two locals.
        let rc = unsafe { gpa(name.as_ptr(), &mut pfn, version, 1, &mut status) };
        (rc, pfn)
    };
    let (rc, _) = lookup(c"cuMemAlloc", 3020);
    if scenario == "malformed" {
        println!("lookup rc {rc}");
        return;
    }
    assert_eq!(rc, 0);
    let real = CString::new(std::env::var("CUDA_RS_SHIM_REAL_DRIVER").unwrap()).unwrap();
    // SAFETY: the fake driver, already loaded by the shim.
    let fake = unsafe { libc::dlopen(real.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    assert!(!fake.is_null());
    // SAFETY: the fake's exports.
    let fake_address = unsafe {
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> *mut c_void>(sym(
            fake,
            c"fake_alloc_address",
        ))()
    };
    let counter = |name: &CStr| {
        // SAFETY: an `int` the fake exports.
        unsafe { *sym(fake, name).cast::<c_int>() }
    };
    let (_, alloc) = lookup(c"cuMemAlloc", 3020);
    let (_, free) = lookup(c"cuMemFree", 3020);
    println!("wrapped {}", alloc != fake_address);
    // Below the wrapped ABI the driver's own function comes back.
    println!(
        "unwrapped below {}",
        lookup(c"cuMemAlloc", 2000).1 == fake_address
    );
    // SAFETY: trampolines of cuMemAlloc's and cuMemFree's 3020 ABIs.
    let (alloc, free) = unsafe {
        (
            std::mem::transmute::<*mut c_void, Alloc>(alloc),
            std::mem::transmute::<*mut c_void, Free>(free),
        )
    };
    let mut rcs = Vec::new();
    let mut ptrs = Vec::new();
    for n in [16usize, 32, 64] {
        let mut p = 0u64;
        // SAFETY: a local to write.
        rcs.push(unsafe { alloc(&mut p, n) });
        ptrs.push(p);
    }
    for p in ptrs.iter().filter(|&&p| p != 0) {
        // SAFETY: the fake frees nothing.
        rcs.push(unsafe { free(*p) });
    }
    println!("rcs {rcs:?} ptrs {ptrs:?}");
    println!(
        "fake {} allocs {} frees",
        counter(c"fake_allocs"),
        counter(c"fake_frees")
    );
    let mut buf = vec![0u8; 4096];
    // SAFETY: `buf` holds 4096 bytes.
    let n = unsafe { report(buf.as_mut_ptr().cast(), buf.len()) };
    println!("report {}", String::from_utf8_lossy(&buf[..n]));
    // At run time: a rule for every free, then a malformed one that changes nothing.
    // SAFETY: NUL-terminated strings.
    unsafe {
        println!(
            "set {}",
            set_faults(c"cuMemFree:*:CUDA_ERROR_UNKNOWN".as_ptr())
        );
        println!("free now {}", free(0x1010));
        println!(
            "set bad {}",
            set_faults(c"cuMemFree:never:CUDA_ERROR_UNKNOWN".as_ptr())
        );
        println!("free still {}", free(0x1010));
    }
}

/// Runs `scenario` in a child with the fake driver and `envs`: (stdout, stderr).
fn run(scenario: &str, fake: &Path, envs: &[(&str, &str)]) -> (String, String) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["scenarios", "--exact", "--nocapture", "--test-threads=1"])
        .env_clear()
        .env(SCENARIO, scenario)
        .env(SHIM, common::shim_library())
        .env("CUDA_RS_SHIM_REAL_DRIVER", fake);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{scenario}:\n{stdout}\n{stderr}");
    (stdout, stderr)
}

#[test]
fn scenarios() {
    if let Ok(scenario) = std::env::var(SCENARIO) {
        child(&scenario);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("fake.c");
    std::fs::write(&src, FAKE_DRIVER).unwrap();
    let fake = dir.path().join("libfakecuda.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc)
        .args(["-shared", "-fPIC", "-o"])
        .arg(&fake)
        .arg(&src)
        .status();
    match built {
        Ok(s) if s.success() => {}
        other => {
            println!(
                "SKIPPED scenarios: needs a C compiler ({cc}) to build the fake driver: {other:?}"
            );
            return;
        }
    }
    let report_file = dir.path().join("report.json");

    // Rules: the second allocation fails without reaching the driver; the exit
    // report has the counts.
    let (out, err) = run(
        "rules",
        &fake,
        &[
            ("CUDA_RS_SHIM_FAIL", "cuMemAlloc:2:CUDA_ERROR_OUT_OF_MEMORY"),
            ("CUDA_RS_SHIM_REPORT", report_file.to_str().unwrap()),
        ],
    );
    for line in [
        "wrapped true",
        "unwrapped below true",
        "rcs [0, 2, 0, 0, 0] ptrs [4112, 0, 4160]",
        "fake 2 allocs 2 frees",
        r#"report {"calls":{"cuMemAlloc":3,"cuMemFree":2},"injected":{"cuMemAlloc":1},"created":{"memory":2,"#,
        r#""live":{"memory":0,"streams":0,"#,
        "set 0",
        "free now 999",
        "set bad 1",
        "free still 999",
    ] {
        assert!(out.contains(line), "no {line:?} in:\n{out}\n{err}");
    }
    assert!(
        err.contains("cudars-driver-shim: cuda_rs_shim_set_faults: `never`"),
        "{err}"
    );
    let at_exit = std::fs::read_to_string(&report_file).unwrap();
    assert!(
        at_exit.contains(r#""calls":{"cuMemFree":2}"#)
            && at_exit.contains(r#""injected":{"cuMemFree":2}"#),
        "{at_exit}"
    );

    // A random schedule that fails every call but releases.
    let (out, err) = run(
        "random",
        &fake,
        &[
            ("CUDA_RS_SHIM_FAIL_SEED", "1"),
            ("CUDA_RS_SHIM_FAIL_RATE", "1:CUDA_ERROR_OUT_OF_MEMORY"),
        ],
    );
    assert!(out.contains("rcs [2, 2, 2] ptrs [0, 0, 0]"), "{out}\n{err}");
    assert!(out.contains("fake 0 allocs 0 frees"), "{out}\n{err}");

    // A malformed rule: said on stderr, and every call refused.
    let (out, err) = run(
        "malformed",
        &fake,
        &[("CUDA_RS_SHIM_FAIL", "cuMemAlloc:0:CUDA_ERROR_OUT_OF_MEMORY")],
    );
    assert!(out.contains("lookup rc 1"), "{out}\n{err}");
    assert!(
        err.contains("cudars-driver-shim: CUDA_RS_SHIM_FAIL: `0` in `cuMemAlloc:0:CUDA_ERROR_OUT_OF_MEMORY` is not a call number"),
        "{err}"
    );
}
