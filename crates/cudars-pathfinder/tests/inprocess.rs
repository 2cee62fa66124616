//! The library API inside one process: caching, concurrency, handles, symbols and
//! the nvrtc-builtins companion. Each test re-runs itself in a child process with
//! the venv of NVIDIA's wheels as its only environment.

// Test and benchmark code: a failed step is a failed run, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ffi::OsStr;
use std::path::Path;

use cudars_pathfinder::{FoundVia, load_nvidia_dynamic_lib, loaded_libraries};

fn in_venv_child(test: &str) -> bool {
    if cudars_tests::in_child() {
        return true;
    }
    if let Some(venv) =
        cudars_tests::require_env_or_skip(test, "CUDA_RS_TEST_VENV", "CUDA_RS_REQUIRE_WHEELS")
    {
        let venv = std::path::PathBuf::from(venv);
        cudars_tests::run_test_in_child(test, &[("VIRTUAL_ENV", OsStr::new(&venv))]);
    }
    false
}

#[test]
fn cached_calls_return_the_same_reference() {
    if !in_venv_child("cached_calls_return_the_same_reference") {
        return;
    }
    let a = load_nvidia_dynamic_lib("nvJitLink").unwrap();
    let b = load_nvidia_dynamic_lib("nvJitLink").unwrap();
    assert!(std::ptr::eq(a, b));
    assert_eq!(a.found_via(), FoundVia::SitePackages);
    assert!(a.abs_path().is_absolute() && a.abs_path().is_file());
    assert!(loaded_libraries().any(|l| std::ptr::eq(l, a)));
    // A real symbol resolves; a made-up one does not.
    assert!(a.symbol(c"nvJitLinkVersion").is_some());
    assert!(a.symbol(c"nvJitLinkNoSuchFunction").is_none());
}

#[test]
fn concurrent_first_calls_load_once() {
    if !in_venv_child("concurrent_first_calls_load_once") {
        return;
    }
    let barrier = std::sync::Barrier::new(16);
    let addrs: Vec<usize> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..16)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    load_nvidia_dynamic_lib("cudart")
                        .map(|l| l as *const _ as usize)
                        .unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(addrs.windows(2).all(|w| w[0] == w[1]), "{addrs:?}");
    assert_eq!(
        loaded_libraries()
            .filter(|l| l.libname() == "cudart")
            .count(),
        1
    );
}

#[test]
fn the_runtime_from_the_wheel_answers() {
    if !in_venv_child("the_runtime_from_the_wheel_answers") {
        return;
    }
    let rt = load_nvidia_dynamic_lib("cudart").unwrap();
    let f = rt.symbol(c"cudaRuntimeGetVersion").unwrap();
    type GetVersion = unsafe extern "C" fn(*mut i32) -> i32;
    // SAFETY: cudaRuntimeGetVersion has this signature in cuda_runtime_api.h.
    let f = unsafe { std::mem::transmute::<*mut std::ffi::c_void, GetVersion>(f.as_ptr()) };
    let mut v = 0;
    // SAFETY: `v` is a valid, writable int.
    let rc = unsafe { f(&mut v) };
    // The Windows runtime answers cudaErrorNotSupported (801) where no driver is
    // installed (as under Wine); Linux's answers without one.
    if cfg!(windows) && rc == 801 {
        return;
    }
    assert_eq!(rc, 0);
    cudars_tests::assert_expected_major("the wheel's runtime", v / 1000);
}

#[test]
fn nvrtc_from_a_wheel_brings_its_builtins() {
    if !in_venv_child("nvrtc_from_a_wheel_brings_its_builtins") {
        return;
    }
    let nvrtc = load_nvidia_dynamic_lib("nvrtc").unwrap();
    assert_eq!(nvrtc.found_via(), FoundVia::SitePackages);
    let builtins = builtins_beside(nvrtc.abs_path());
    assert!(is_loaded(&builtins), "{builtins} was not loaded with nvrtc");
}

/// The file name of the `nvrtc-builtins` library beside NVRTC at `nvrtc`.
fn builtins_beside(nvrtc: &Path) -> String {
    let prefix = if cfg!(windows) {
        "nvrtc-builtins64_1"
    } else {
        "libnvrtc-builtins.so.1"
    };
    std::fs::read_dir(nvrtc.parent().unwrap())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().into_string().unwrap())
        .find(|n| n.starts_with(prefix) && !n.contains(".alt."))
        .unwrap()
}

/// Windows has no run path: NVRTC that other code loaded finds its builtins (by bare
/// name) once the pathfinder has been asked for it.
#[cfg(windows)]
#[test]
fn nvrtc_loaded_by_other_code_gets_its_builtins_on_windows() {
    if !in_venv_child("nvrtc_loaded_by_other_code_gets_its_builtins_on_windows") {
        return;
    }
    let located = cudars_pathfinder::locate_nvidia_dynamic_lib("nvrtc").unwrap();
    // SAFETY: loading NVIDIA's library runs its initialisers, which need nothing.
    let lib = unsafe { libloading::Library::new(&located.abs_path) }.unwrap();
    std::mem::forget(lib);
    let builtins = builtins_beside(&located.abs_path);
    assert!(!is_loaded(&builtins), "{builtins} loaded with NVRTC itself");
    let nvrtc = load_nvidia_dynamic_lib("nvrtc").unwrap();
    assert_eq!(nvrtc.found_via(), FoundVia::WasAlreadyLoadedFromElsewhere);
    assert!(is_loaded(&builtins), "{builtins} was not preloaded");
    // Its directory is on PATH for anything else it loads by bare name.
    let dir = nvrtc.abs_path().parent().unwrap();
    let path = std::env::var_os("PATH").unwrap();
    assert!(std::env::split_paths(&path).any(|p| p == dir), "{path:?}");
}

/// Whether the process has loaded a library of this file name (not loading it).
#[cfg(unix)]
fn is_loaded(file_name: &str) -> bool {
    let c = std::ffi::CString::new(
        std::path::Path::new(file_name)
            .as_os_str()
            .as_encoded_bytes(),
    )
    .unwrap();
    // SAFETY: RTLD_NOLOAD only asks whether the library is loaded.
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    !h.is_null()
}

/// Whether the process has loaded a library of this file name (not loading it).
#[cfg(windows)]
fn is_loaded(file_name: &str) -> bool {
    libloading::os::windows::Library::open_already_loaded(file_name)
        .map(std::mem::forget)
        .is_ok()
}

#[test]
fn a_library_loaded_by_other_code_is_reported_as_already_loaded() {
    if !in_venv_child("a_library_loaded_by_other_code_is_reported_as_already_loaded") {
        return;
    }
    // Find the wheel's nvJitLink without loading it, then load it as other code
    // would, by its full path.
    let located = cudars_pathfinder::locate_nvidia_dynamic_lib("nvJitLink").unwrap();
    assert_eq!(located.found_via, FoundVia::SitePackages);
    // SAFETY: loading NVIDIA's library runs its initialisers, which need nothing.
    let lib = unsafe { libloading::Library::new(&located.abs_path) }.unwrap();
    // Other code owns it and never unloads it here.
    std::mem::forget(lib);
    let loaded = load_nvidia_dynamic_lib("nvJitLink").unwrap();
    assert_eq!(loaded.found_via(), FoundVia::WasAlreadyLoadedFromElsewhere);
    assert!(loaded.was_already_loaded_from_elsewhere());
    assert_eq!(
        std::fs::canonicalize(loaded.abs_path()).unwrap(),
        std::fs::canonicalize(&located.abs_path).unwrap()
    );
    assert!(loaded.symbol(c"nvJitLinkVersion").is_some());
}
