//! GPU tests of the raw bindings: the driver and NVML for real. Without a GPU each
//! test prints `SKIPPED` and returns; with `CUDA_TEST_REQUIRE_GPU=1` it fails.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// SAFETY (for every `unsafe` block below): each calls the C API as its documentation
// asks, with handles created in the same test and pointers to live locals and
// buffers of the sizes passed.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;

use std::ffi::{CStr, c_void};

use cudars_bindings::IntoResult as _;
use cudars_bindings::driver::*;
use cudars_tests::{require_gpu, require_libs};

/// Makes device 0's primary context current and returns (device, context).
fn primary_context() -> (CUdevice, CUcontext) {
    unsafe { cuInit(0) }.result().unwrap();
    let mut dev: CUdevice = 0;
    unsafe { cuDeviceGet(&mut dev, 0) }.result().unwrap();
    let mut ctx: CUcontext = std::ptr::null_mut();
    unsafe { cuDevicePrimaryCtxRetain(&mut ctx, dev) }
        .result()
        .unwrap();
    unsafe { cuCtxSetCurrent(ctx) }.result().unwrap();
    (dev, ctx)
}

#[test]
fn devices_have_names_and_memory() {
    require_gpu!();
    let (dev, ctx) = primary_context();
    let mut count = 0;
    unsafe { cuDeviceGetCount(&mut count) }.result().unwrap();
    assert!(count >= 1);
    let mut name = [0 as std::ffi::c_char; 256];
    unsafe { cuDeviceGetName(name.as_mut_ptr(), 256, dev) }
        .result()
        .unwrap();
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    assert!(name.contains("NVIDIA") || !name.is_empty(), "{name}");
    let mut total = 0usize;
    unsafe { cuDeviceTotalMem(&mut total, dev) }
        .result()
        .unwrap();
    assert!(total > 1 << 30, "{total} bytes");
    let (mut free, mut total2) = (0usize, 0usize);
    unsafe { cuMemGetInfo(&mut free, &mut total2) }
        .result()
        .unwrap();
    assert_eq!(total, total2);
    assert!(free > 0 && free <= total);
    let v = cudars_bindings::driver::version().unwrap();
    assert!(v.major >= 12, "{v}");
    let (resolved, all) = resolved_count().unwrap();
    // The headers are CUDA 13.5's: a 13.0 driver has 91% of their entry points,
    // a 12.4 driver (the shim's `run-shim.sh 12040`) 85%.
    assert!(
        resolved * 5 > all * 4,
        "{resolved}/{all} driver entry points resolved"
    );
    println!(
        "{name}, {} MiB, driver {v}, {resolved}/{all} entry points",
        total >> 20
    );
    let _ = ctx;
    unsafe { cuDevicePrimaryCtxRelease(dev) }.result().unwrap();
}

#[test]
fn explicit_context_alloc_and_copy_round_trip() {
    require_gpu!();
    unsafe { cuInit(0) }.result().unwrap();
    let mut dev = 0;
    unsafe { cuDeviceGet(&mut dev, 0) }.result().unwrap();
    let mut ctx: CUcontext = std::ptr::null_mut();
    // CUDA 12.5 and newer drivers take optional creation parameters; both shapes
    // are there, and the driver's version picks.
    if version().unwrap() >= cudars_bindings::Version::from_cuda(12050) {
        unsafe { cuCtxCreate(&mut ctx, std::ptr::null_mut(), 0, dev) }
            .result()
            .unwrap();
    } else {
        unsafe { cuda12::cuCtxCreate(&mut ctx, 0, dev) }
            .result()
            .unwrap();
    }
    let n = 1 << 20;
    let host: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let mut dptr: CUdeviceptr = 0;
    unsafe { cuMemAlloc(&mut dptr, n * 4) }.result().unwrap();
    unsafe { cuMemcpyHtoD(dptr, host.as_ptr().cast(), n * 4) }
        .result()
        .unwrap();
    let mut back = vec![0u32; n];
    unsafe { cuMemcpyDtoH(back.as_mut_ptr().cast(), dptr, n * 4) }
        .result()
        .unwrap();
    assert_eq!(host, back);
    unsafe { cuMemsetD32(dptr, 0xdead_beef, n) }
        .result()
        .unwrap();
    unsafe { cuMemcpyDtoH(back.as_mut_ptr().cast(), dptr, n * 4) }
        .result()
        .unwrap();
    assert!(back.iter().all(|&x| x == 0xdead_beef));
    unsafe { cuMemFree(dptr) }.result().unwrap();
    // A bad free is an error, not a crash.
    let e = unsafe { cuMemFree(dptr) }.result().unwrap_err();
    assert_ne!(e.code(), CUDA_SUCCESS);
    assert!(e.description().is_some_and(|d| !d.is_empty()), "{e}");
    unsafe { cuCtxDestroy(ctx) }.result().unwrap();
}

fn saxpy_args_and_check(launch: impl FnOnce(CUstream, &mut [*mut c_void])) {
    let n: usize = 1 << 20;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y = vec![1.0f32; n];
    let (mut dx, mut dy): (CUdeviceptr, CUdeviceptr) = (0, 0);
    unsafe { cuMemAlloc(&mut dx, n * 4) }.result().unwrap();
    unsafe { cuMemAlloc(&mut dy, n * 4) }.result().unwrap();
    unsafe { cuMemcpyHtoD(dx, x.as_ptr().cast(), n * 4) }
        .result()
        .unwrap();
    unsafe { cuMemcpyHtoD(dy, y.as_ptr().cast(), n * 4) }
        .result()
        .unwrap();
    let mut stream: CUstream = std::ptr::null_mut();
    unsafe { cuStreamCreate(&mut stream, CU_STREAM_NON_BLOCKING.0) }
        .result()
        .unwrap();
    let mut a = 2.0f32;
    let mut nn = n as u64;
    let mut args: [*mut c_void; 4] = [
        (&raw mut a).cast(),
        (&raw mut dx).cast(),
        (&raw mut dy).cast(),
        (&raw mut nn).cast(),
    ];
    launch(stream, &mut args);
    unsafe { cuStreamSynchronize(stream) }.result().unwrap();
    let mut out = vec![0f32; n];
    unsafe { cuMemcpyDtoH(out.as_mut_ptr().cast(), dy, n * 4) }
        .result()
        .unwrap();
    for (i, v) in out.iter().enumerate() {
        assert_eq!(*v, 2.0 * i as f32 + 1.0, "saxpy wrong at {i}");
    }
    unsafe { cuStreamDestroy(stream) }.result().unwrap();
    unsafe { cuMemFree(dx) }.result().unwrap();
    unsafe { cuMemFree(dy) }.result().unwrap();
}

#[test]
fn nvrtc_kernel_through_cu_module_load_data() {
    require_gpu!();
    require_libs!("nvrtc");
    let (dev, _ctx) = primary_context();
    let arch = common::arch(dev);
    let out = common::compile(
        common::BENCH_SRC,
        "bench.cu",
        &[&format!("--gpu-architecture={arch}")],
    )
    .unwrap();
    for image in [out.cubin.clone(), {
        // PTX is JIT-compiled by the driver; it must be NUL-terminated.
        let mut p = out.ptx.clone();
        if p.last() != Some(&0) {
            p.push(0);
        }
        p
    }] {
        let mut module: CUmodule = std::ptr::null_mut();
        unsafe { cuModuleLoadData(&mut module, image.as_ptr().cast()) }
            .result()
            .unwrap();
        let mut f: CUfunction = std::ptr::null_mut();
        unsafe { cuModuleGetFunction(&mut f, module, c"saxpy".as_ptr()) }
            .result()
            .unwrap();
        saxpy_args_and_check(|stream, args| {
            unsafe {
                cuLaunchKernel(
                    f,
                    4096,
                    1,
                    1,
                    256,
                    1,
                    1,
                    0,
                    stream,
                    args.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            }
            .result()
            .unwrap();
        });
        // A name the module lacks is CUDA_ERROR_NOT_FOUND.
        let e = unsafe { cuModuleGetFunction(&mut f, module, c"nope".as_ptr()) }
            .result()
            .unwrap_err();
        assert_eq!(e.code(), CUDA_ERROR_NOT_FOUND);
        assert!(
            e.unavailable().is_none(),
            "a real driver error is not an unavailable entry point"
        );
        unsafe { cuModuleUnload(module) }.result().unwrap();
    }
}

#[test]
fn nvrtc_kernel_through_cu_library_load_data() {
    require_gpu!();
    require_libs!("nvrtc");
    let (dev, _ctx) = primary_context();
    let out = common::compile(
        common::BENCH_SRC,
        "bench.cu",
        &[&format!("--gpu-architecture={}", common::arch(dev))],
    )
    .unwrap();
    let mut lib: CUlibrary = std::ptr::null_mut();
    unsafe {
        cuLibraryLoadData(
            &mut lib,
            out.cubin.as_ptr().cast(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    }
    .result()
    .unwrap();
    let mut count = 0u32;
    unsafe { cuLibraryGetKernelCount(&mut count, lib) }
        .result()
        .unwrap();
    assert_eq!(count, 2);
    let mut kernel: CUkernel = std::ptr::null_mut();
    unsafe { cuLibraryGetKernel(&mut kernel, lib, c"saxpy".as_ptr()) }
        .result()
        .unwrap();
    saxpy_args_and_check(|stream, args| {
        unsafe {
            cuLaunchKernel(
                kernel as CUfunction,
                4096,
                1,
                1,
                256,
                1,
                1,
                0,
                stream,
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .unwrap();
    });
    unsafe { cuLibraryUnload(lib) }.result().unwrap();
}

/// `cuStreamGetId(NULL)` names the stream the null handle means: the legacy default
/// stream normally, this thread's own default stream in per-thread mode.
fn null_stream_is_per_thread() -> bool {
    let _ = primary_context();
    let (mut null_id, mut legacy_id) = (0u64, 0u64);
    unsafe { cuStreamGetId(std::ptr::null_mut(), &mut null_id) }
        .result()
        .unwrap();
    unsafe { cuStreamGetId(CU_STREAM_LEGACY, &mut legacy_id) }
        .result()
        .unwrap();
    null_id != legacy_id
}

#[test]
fn legacy_default_stream_by_default() {
    require_gpu!();
    if cudars_tests::in_child() {
        return;
    }
    assert!(!null_stream_is_per_thread());
    assert_eq!(per_thread_default_stream(), Some(false));
}

#[test]
fn per_thread_default_stream_when_asked() {
    require_gpu!();
    if !cudars_tests::in_child() {
        let mut envs: Vec<(&str, std::ffi::OsString)> =
            ["PATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV", "CUDA_HOME"]
                .iter()
                .filter_map(|k| std::env::var_os(k).map(|v| (*k, v)))
                .collect();
        envs.push((cudars_bindings::PER_THREAD_DEFAULT_STREAM_VAR, "1".into()));
        let envs: Vec<(&str, &std::ffi::OsStr)> =
            envs.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
        cudars_tests::run_test_in_child("per_thread_default_stream_when_asked", &envs);
        return;
    }
    assert!(null_stream_is_per_thread());
    assert_eq!(per_thread_default_stream(), Some(true));
    // Work on the per-thread default stream runs and is ordered.
    let n = 1 << 16;
    let mut d: CUdeviceptr = 0;
    unsafe { cuMemAlloc(&mut d, n * 4) }.result().unwrap();
    unsafe { cuMemsetD32Async(d, 7, n, std::ptr::null_mut()) }
        .result()
        .unwrap();
    let mut back = vec![0u32; n];
    unsafe { cuMemcpyDtoHAsync(back.as_mut_ptr().cast(), d, n * 4, std::ptr::null_mut()) }
        .result()
        .unwrap();
    unsafe { cuStreamSynchronize(std::ptr::null_mut()) }
        .result()
        .unwrap();
    assert!(back.iter().all(|&x| x == 7));
    unsafe { cuMemFree(d) }.result().unwrap();
}

#[test]
fn nvml_names_the_device_and_its_memory() {
    require_gpu!();
    use cudars_bindings::nvml::*;
    unsafe { nvmlInit() }.result().unwrap();
    let mut count = 0u32;
    unsafe { nvmlDeviceGetCount(&mut count) }.result().unwrap();
    assert!(count >= 1);
    let mut dev: nvmlDevice_t = std::ptr::null_mut();
    unsafe { nvmlDeviceGetHandleByIndex(0, &mut dev) }
        .result()
        .unwrap();
    let mut name = [0 as std::ffi::c_char; 96];
    unsafe { nvmlDeviceGetName(dev, name.as_mut_ptr(), 96) }
        .result()
        .unwrap();
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let mut mem = nvmlMemory_t::default();
    unsafe { nvmlDeviceGetMemoryInfo(dev, &mut mem) }
        .result()
        .unwrap();
    assert!(mem.total > 1 << 30 && mem.used <= mem.total, "{mem:?}");
    // The driver agrees on the name.
    let (cu_dev, _) = primary_context();
    let mut cu_name = [0 as std::ffi::c_char; 256];
    unsafe { cuDeviceGetName(cu_name.as_mut_ptr(), 256, cu_dev) }
        .result()
        .unwrap();
    let cu_name = unsafe { CStr::from_ptr(cu_name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    assert_eq!(name, cu_name);
    println!(
        "NVML: {name}, {} MiB total, {} MiB used",
        mem.total >> 20,
        mem.used >> 20
    );
    // A bad index is an NVML error with NVML's description.
    let e = unsafe { nvmlDeviceGetHandleByIndex(10_000, &mut dev) }
        .result()
        .unwrap_err();
    assert_eq!(e.code(), NVML_ERROR_INVALID_ARGUMENT);
    unsafe { nvmlShutdown() }.result().unwrap();
    let (nvml_version, driver_version) = cudars_bindings::nvml::version().unwrap();
    assert!(
        nvml_version.contains(&driver_version),
        "{nvml_version} / {driver_version}"
    );
}
