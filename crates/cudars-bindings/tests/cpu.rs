//! What runs without a GPU: the wheels' runtime through the generated bindings, the
//! "not found" paths of the driver and NVML, error conversion, and struct layouts
//! against the C compiler's sizes (NVRTC, nvJitLink and NVVM: `compile.rs`).

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// SAFETY (for every `unsafe` block below): each calls the C API as its documentation
// asks, with pointers to live locals and buffers of the sizes the API reported.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;

use cudars_bindings::IntoResult as _;
use cudars_bindings::{Unavailable, driver, nvjitlink, nvml, nvrtc, nvvm, runtime};
use cudars_tests::require_libs;

#[test]
fn runtime_from_the_wheels_reports_its_version() {
    require_libs!("cudart");
    let v = runtime::version().unwrap();
    cudars_tests::assert_expected_major("the runtime", v.major);
    assert_eq!(runtime::cuda_major(), Some(v.major as u32));
    let lib = runtime::library().unwrap();
    assert!(lib.abs_path().to_string_lossy().contains("libcudart.so"));
    let (resolved, total) = runtime::resolved_count().unwrap();
    assert!(total > 250, "{total} runtime entry points");
    // A CUDA 12 runtime resolves the entry points of one shape in both majors
    // here, and its own shape of the others in `cuda12`.
    let (resolved12, total12) = runtime::cuda12::resolved_count().unwrap();
    let resolved = if v.major == 12 {
        assert!(
            resolved12 * 10 > total12 * 9,
            "{resolved12}/{total12} CUDA 12 shapes resolved"
        );
        resolved + resolved12
    } else {
        assert_eq!(
            resolved12, 0,
            "the CUDA 12 shapes never resolve against CUDA 13"
        );
        resolved
    };
    assert!(resolved > total * 9 / 10, "{resolved}/{total} resolved");
    assert!(runtime::is_available("cudaMalloc"));
    assert!(!runtime::is_available("cudaNoSuchThing"));
    // Without a driver the runtime answers with a code, not a crash.
    let mut n = -1;
    let rc = unsafe { runtime::cudaGetDeviceCount(&mut n) };
    if cudars_tests::gpu_status().is_err() {
        let e = rc.result().unwrap_err();
        assert_ne!(e.name(), "cudaSuccess");
        assert!(e.description().is_some_and(|d| !d.is_empty()), "{e}");
    }
}

/// The messages of an error and of each of its sources, in order.
fn chain(e: &(dyn std::error::Error + 'static)) -> Vec<String> {
    std::iter::successors(Some(e), |&e| e.source())
        .map(ToString::to_string)
        .collect()
}

/// Without a driver, driver calls return `CUDA_ERROR_NOT_FOUND` and the error
/// carries the pathfinder's list of places searched; with one, they work.
#[test]
fn driver_calls_without_a_driver_say_what_is_missing() {
    match cudars_pathfinder::load_nvidia_dynamic_lib("cuda") {
        Ok(_) => {
            unsafe { driver::cuInit(0) }.result().unwrap();
            assert!(driver::version().unwrap().major >= 12);
            assert!(driver::is_available("cuMemAlloc"));
        }
        Err(pf) => {
            let e = unsafe { driver::cuInit(0) }.result().unwrap_err();
            assert_eq!(e.code(), driver::CUDA_ERROR_NOT_FOUND);
            assert_eq!(e.name(), "CUDA_ERROR_NOT_FOUND");
            match e.unavailable() {
                Some(Unavailable::Library { error, .. }) => {
                    assert_eq!(error.to_string(), pf.to_string())
                }
                other => panic!("expected a library error, got {other:?}"),
            }
            // Each level says its own part: the code, then why the call could not be
            // made, then where the library was searched for.
            let chain = chain(&e);
            assert_eq!(
                chain,
                [
                    "CUDA_ERROR_NOT_FOUND (500): the entry point could not be called".to_string(),
                    "the CUDA driver library could not be loaded".to_string(),
                    pf.to_string(),
                ]
            );
            assert!(
                chain[2].contains("libcuda.so.1") && chain[2].contains("system-search"),
                "{chain:?}"
            );
            assert!(driver::library().is_err());
            assert!(!driver::is_available("cuMemAlloc"));
            assert!(driver::resolved_count().is_none());
            assert!(matches!(
                driver::why_unavailable("cuMemAlloc"),
                Some(Unavailable::Library { .. })
            ));
            // version() goes through the same path.
            assert!(driver::version().unwrap_err().unavailable().is_some());
        }
    }
}

#[test]
fn nvml_without_a_driver_says_what_is_missing() {
    match cudars_pathfinder::load_nvidia_dynamic_lib("nvml") {
        Ok(_) => {
            unsafe { nvml::nvmlInit() }.result().unwrap();
            unsafe { nvml::nvmlShutdown() }.result().unwrap();
        }
        Err(_) => {
            let e = unsafe { nvml::nvmlInit() }.result().unwrap_err();
            assert_eq!(e.code(), nvml::NVML_ERROR_LIBRARY_NOT_FOUND);
            let chain = chain(&e);
            assert_eq!(chain.len(), 3, "{chain:?}");
            assert!(!chain[0].contains("libnvidia-ml.so.1"), "{chain:?}");
            assert!(chain[2].contains("libnvidia-ml.so.1"), "{chain:?}");
            assert!(matches!(e.unavailable(), Some(Unavailable::Library { .. })));
            let e = nvml::version().unwrap_err();
            assert_eq!(e.code(), nvml::NVML_ERROR_LIBRARY_NOT_FOUND);
        }
    }
}

#[test]
fn status_codes_convert_with_names() {
    assert!(driver::CUDA_SUCCESS.result().is_ok());
    assert!(nvrtc::NVRTC_SUCCESS.result().is_ok());
    assert_eq!(
        driver::CUDA_ERROR_OUT_OF_MEMORY.name(),
        Some("CUDA_ERROR_OUT_OF_MEMORY")
    );
    assert_eq!(
        runtime::cudaErrorMemoryAllocation.name(),
        Some("cudaErrorMemoryAllocation")
    );
    assert_eq!(
        nvjitlink::NVJITLINK_ERROR_MISSING_ARCH.name(),
        Some("NVJITLINK_ERROR_MISSING_ARCH")
    );
    assert_eq!(
        nvvm::NVVM_ERROR_COMPILATION.name(),
        Some("NVVM_ERROR_COMPILATION")
    );
    assert_eq!(
        nvml::NVML_ERROR_NOT_FOUND.name(),
        Some("NVML_ERROR_NOT_FOUND")
    );
    assert_eq!(driver::cudaError_enum(123_456).name(), None);
    let e = nvjitlink::NVJITLINK_ERROR_MISSING_ARCH
        .result()
        .unwrap_err();
    assert_eq!(e.code(), nvjitlink::NVJITLINK_ERROR_MISSING_ARCH);
    assert!(
        e.to_string()
            .starts_with("NVJITLINK_ERROR_MISSING_ARCH (2): "),
        "{e}"
    );
    // An unknown code still converts, with its number.
    let e = driver::cudaError_enum(123_456).result().unwrap_err();
    assert!(e.to_string().contains("123456"), "{e}");
    fn is_error<E: std::error::Error + Send + Sync + 'static>(_: &E) {}
    is_error(&e);
}

/// Sizes and offsets from the C compiler (gcc, x86-64) over the pinned CUDA 13 headers.
#[test]
fn struct_layouts_match_c() {
    use std::mem::{offset_of, size_of};
    assert_eq!(size_of::<driver::CUDA_MEMCPY2D>(), 128);
    assert_eq!(size_of::<driver::CUDA_MEMCPY3D>(), 200);
    assert_eq!(size_of::<driver::CUlaunchConfig>(), 56);
    assert_eq!(size_of::<driver::CUlaunchAttribute>(), 72);
    assert_eq!(size_of::<driver::CUtensorMap>(), 128);
    assert_eq!(size_of::<driver::CUuuid>(), 16);
    assert_eq!(size_of::<driver::CUmemPoolProps>(), 88);
    assert_eq!(offset_of!(driver::CUDA_MEMCPY3D, WidthInBytes), 176);
    assert_eq!(size_of::<runtime::cudaDeviceProp>(), 1008);
    assert_eq!(size_of::<nvml::nvmlMemory_t>(), 24);
    assert_eq!(size_of::<driver::CUdeviceptr>(), 8);
}

/// One build drives both majors: an entry point whose shape differs between CUDA
/// 12 and 13 (`cudaGetDeviceProperties`: `cudaDeviceProp` changed) resolves only
/// in the module of the loaded runtime's major, and the other says which to call.
/// `cargo xtask test` runs this against the 12.9 wheels and the 13.0 wheels.
#[test]
fn reshaped_entry_points_resolve_only_for_the_loaded_major() {
    require_libs!("cudart", "nvrtc", "nvJitLink");
    let major = runtime::cuda_major().unwrap();
    cudars_tests::assert_expected_major("the runtime", major as i32);
    let (here, there) = if major == 12 {
        (
            runtime::cuda12::is_available("cudaGetDeviceProperties"),
            runtime::why_unavailable("cudaGetDeviceProperties"),
        )
    } else {
        (
            runtime::is_available("cudaGetDeviceProperties"),
            runtime::cuda12::why_unavailable("cudaGetDeviceProperties"),
        )
    };
    assert!(here, "the CUDA {major} shape must resolve");
    match there {
        Some(Unavailable::OtherShape { found, instead, .. }) => {
            assert_eq!(found, major as i32);
            let want = if major == 12 {
                "runtime::cuda12::cudaGetDeviceProperties"
            } else {
                "cudars_bindings::runtime::cudaGetDeviceProperties"
            };
            assert!(instead.contains(want), "{instead}");
        }
        other => panic!("the other shape must be refused, got {other:?}"),
    }
    // Entry points of one shape in both majors resolve with either, and so do
    // the versioned nvJitLink symbols (`__nvJitLinkCreate_12_9` / `_13_0`).
    assert!(runtime::is_available("cudaMalloc"));
    assert!(nvrtc::is_available("nvrtcCompileProgram"));
    assert!(nvjitlink::is_available("nvJitLinkCreate"));
    assert_eq!(nvjitlink::cuda_major(), Some(major));
    // A function CUDA 13 dropped exists only for CUDA 12 libraries.
    assert_eq!(nvrtc::cuda12::is_available("nvrtcGetNVVMSize"), major == 12);
    // Calling the refused shape returns "not found" and says why.
    let mut prop = std::mem::MaybeUninit::<runtime::cudaDeviceProp>::zeroed();
    if major == 12 {
        let rc = unsafe { runtime::cudaGetDeviceProperties(prop.as_mut_ptr(), 0) };
        let e = rc.result().unwrap_err();
        let chain = chain(&e);
        assert!(
            matches!(e.unavailable(), Some(Unavailable::OtherShape { .. })),
            "{chain:?}"
        );
        // The code is this level's; the function to call instead is its source's.
        assert_eq!(
            chain[0],
            "cudaErrorSymbolNotFound (500): the entry point could not be called"
        );
        assert!(
            chain[1].contains("runtime::cuda12::cudaGetDeviceProperties"),
            "{chain:?}"
        );
    }
}

/// A thread that refuses driver and runtime calls (what cudars-core sets on a
/// driver callback thread) gets `CUDA_ERROR_NOT_PERMITTED` and
/// `cudaErrorNotPermitted` without the library being called (here it is not
/// even loaded: the "not found" code would come otherwise), with a name that
/// needs no driver; nested marks restore what was before, and other threads
/// are not affected.
#[test]
fn a_thread_that_refuses_calls_gets_not_permitted_without_a_call() {
    assert!(!driver::calls_refused_on_this_thread());
    assert!(!driver::refuse_calls_on_this_thread(true));
    assert!(driver::refuse_calls_on_this_thread(true), "nested");
    let mut n = 0;
    let rc = unsafe { driver::cuDeviceGetCount(&mut n) };
    assert_eq!(rc, driver::CUDA_ERROR_NOT_PERMITTED);
    let e = rc.result().unwrap_err();
    assert_eq!(e.name(), "CUDA_ERROR_NOT_PERMITTED");
    assert!(e.unavailable().is_none(), "{e}");
    let rc = unsafe { runtime::cudaGetDeviceCount(&mut n) };
    assert_eq!(rc, runtime::cudaErrorNotPermitted);
    // Another thread calls as before.
    std::thread::spawn(|| {
        assert!(!driver::calls_refused_on_this_thread());
        let mut n = 0;
        let rc = unsafe { driver::cuDeviceGetCount(&mut n) };
        assert_ne!(rc, driver::CUDA_ERROR_NOT_PERMITTED);
    })
    .join()
    .unwrap();
    assert!(
        driver::refuse_calls_on_this_thread(true),
        "the inner mark put back"
    );
    assert!(driver::calls_refused_on_this_thread());
    assert!(driver::refuse_calls_on_this_thread(false));
    assert!(!driver::calls_refused_on_this_thread());
    let rc = unsafe { driver::cuDeviceGetCount(&mut n) };
    assert_ne!(rc, driver::CUDA_ERROR_NOT_PERMITTED);
}
