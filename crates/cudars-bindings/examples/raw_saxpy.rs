//! Compile a SAXPY kernel with NVRTC, launch it with the driver API, check the
//! result, print timings: the raw bindings end to end, written as the C would be.
//!
//! `cargo run -p cudars-bindings --example raw_saxpy` (with a CUDA toolkit or
//! NVIDIA's wheels where the pathfinder finds them; `cargo xtask quickstart` runs
//! `cudars-core`'s safe version of the same program).
//! Without a GPU it still compiles the kernel and then says what is missing.

use std::error::Error;
use std::ffi::{CString, c_char, c_void};
use std::process::ExitCode;
use std::time::Instant;

use cudars_bindings::IntoResult as _;
use cudars_bindings::driver::*;
use cudars_bindings::nvrtc::*;

const SRC: &str = r#"
extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

/// NVRTC: CUDA C++ to a cubin for `arch` (or PTX for a `compute_XX` target).
fn compile(arch: &str) -> Result<Vec<u8>, Box<dyn Error>> {
    let src = CString::new(SRC)?;
    let opt = CString::new(format!("--gpu-architecture={arch}"))?;
    let opts: [*const c_char; 1] = [opt.as_ptr()];
    let mut prog: nvrtcProgram = std::ptr::null_mut();
    // SAFETY: valid NUL-terminated source and name; no headers.
    unsafe {
        nvrtcCreateProgram(
            &mut prog,
            src.as_ptr(),
            c"saxpy.cu".as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    }
    .result()?;
    // SAFETY: `prog` is live and the option strings outlive the call.
    let compiled = unsafe { nvrtcCompileProgram(prog, 1, opts.as_ptr()) }.result();
    let image = compiled.map_err(Box::<dyn Error>::from).and_then(|()| {
        let cubin = arch.starts_with("sm_");
        let mut size = 0usize;
        // SAFETY: `prog` compiled; `size` is writable.
        unsafe {
            if cubin {
                nvrtcGetCUBINSize(prog, &mut size)
            } else {
                nvrtcGetPTXSize(prog, &mut size)
            }
        }
        .result()?;
        let mut image = vec![0u8; size];
        // SAFETY: `image` holds the `size` bytes NVRTC asked for.
        unsafe {
            if cubin {
                nvrtcGetCUBIN(prog, image.as_mut_ptr().cast())
            } else {
                nvrtcGetPTX(prog, image.as_mut_ptr().cast())
            }
        }
        .result()?;
        Ok(image)
    });
    // SAFETY: destroys the program created above, once.
    unsafe { nvrtcDestroyProgram(&mut prog) }.result()?;
    image
}

/// An error and its causes: each level says its own part (the code; why the
/// call could not be made; where the library was searched for), so all are
/// printed, joined by `": "`.
fn report(e: &dyn Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

fn run() -> Result<(), Box<dyn Error>> {
    let t0 = Instant::now();
    let nvrtc = cudars_bindings::nvrtc::library()?;
    println!(
        "NVRTC {} from {} ({})",
        cudars_bindings::nvrtc::version()?,
        nvrtc.abs_path().display(),
        nvrtc.found_via()
    );

    // The driver: without one, compile for a virtual architecture and explain.
    // SAFETY: `cuInit` takes flags by value.
    if let Err(e) = unsafe { cuInit(0) }.result() {
        let ptx = compile("compute_90")?;
        println!(
            "compiled saxpy to {} bytes of PTX in {:.1} ms",
            ptx.len(),
            t0.elapsed().as_secs_f64() * 1e3
        );
        return Err(format!(
            "cannot launch: the CUDA driver is not usable.\n  {}\n\
             A GPU with NVIDIA's driver installed is needed to run kernels; \
             `cargo run -p cudars-pathfinder -- doctor` shows what is found where.",
            report(&e)
        )
        .into());
    }
    let mut dev: CUdevice = 0;
    // SAFETY: `dev` is writable; ordinal 0 exists when cuInit succeeded... or errors.
    unsafe { cuDeviceGet(&mut dev, 0) }.result()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: writable ints, a valid device.
    unsafe {
        cuDeviceGetAttribute(
            &mut major,
            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            dev,
        )
    }
    .result()?;
    // SAFETY: as above.
    unsafe {
        cuDeviceGetAttribute(
            &mut minor,
            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
            dev,
        )
    }
    .result()?;
    let mut name = [0 as c_char; 128];
    // SAFETY: `name` holds 128 bytes.
    unsafe { cuDeviceGetName(name.as_mut_ptr(), 128, dev) }.result()?;
    // SAFETY: the driver wrote a NUL-terminated name.
    let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy();
    println!(
        "device 0: {name} (sm_{major}{minor}), driver {}",
        cudars_bindings::driver::version()?
    );

    let t = Instant::now();
    let cubin = compile(&format!("sm_{major}{minor}"))?;
    let compile_ms = t.elapsed().as_secs_f64() * 1e3;

    let mut ctx: CUcontext = std::ptr::null_mut();
    // SAFETY: a valid device; the context is released at the end.
    unsafe { cuDevicePrimaryCtxRetain(&mut ctx, dev) }.result()?;
    let result = launch_and_check(ctx, &cubin);
    // SAFETY: releases the retain above, once.
    unsafe { cuDevicePrimaryCtxRelease(dev) }.result()?;
    let launch_ms = result?;
    println!(
        "saxpy on 2^20 elements is correct: compile {compile_ms:.1} ms, copy+launch+copy {launch_ms:.2} ms, \
         first result {:.0} ms after start",
        t0.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}

fn launch_and_check(ctx: CUcontext, cubin: &[u8]) -> Result<f64, Box<dyn Error>> {
    // SAFETY: `ctx` is a retained primary context.
    unsafe { cuCtxSetCurrent(ctx) }.result()?;
    let mut module: CUmodule = std::ptr::null_mut();
    // SAFETY: `cubin` is a complete image NVRTC made for this device.
    unsafe { cuModuleLoadData(&mut module, cubin.as_ptr().cast()) }.result()?;
    let mut f: CUfunction = std::ptr::null_mut();
    // SAFETY: a loaded module and a NUL-terminated name.
    unsafe { cuModuleGetFunction(&mut f, module, c"saxpy".as_ptr()) }.result()?;

    let n: usize = 1 << 20;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut y = vec![1.0f32; n];
    let t = Instant::now();
    let (mut dx, mut dy): (CUdeviceptr, CUdeviceptr) = (0, 0);
    // SAFETY: writable handles; sizes in bytes.
    unsafe { cuMemAlloc(&mut dx, n * 4) }.result()?;
    // SAFETY: as above.
    unsafe { cuMemAlloc(&mut dy, n * 4) }.result()?;
    // SAFETY: each copy moves `n * 4` bytes between buffers of that size.
    unsafe { cuMemcpyHtoD(dx, x.as_ptr().cast(), n * 4) }.result()?;
    // SAFETY: as above.
    unsafe { cuMemcpyHtoD(dy, y.as_ptr().cast(), n * 4) }.result()?;
    let mut a = 2.0f32;
    let mut nn = n as u64;
    let mut args: [*mut c_void; 4] = [
        (&raw mut a).cast(),
        (&raw mut dx).cast(),
        (&raw mut dy).cast(),
        (&raw mut nn).cast(),
    ];
    let grid = u32::try_from(n.div_ceil(256))?;
    // SAFETY: the arguments match `saxpy(float, const float*, float*, unsigned long long)`.
    unsafe {
        cuLaunchKernel(
            f,
            grid,
            1,
            1,
            256,
            1,
            1,
            0,
            std::ptr::null_mut(),
            args.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
    .result()?;
    // SAFETY: as above; the synchronous copy waits for the kernel.
    unsafe { cuMemcpyDtoH(y.as_mut_ptr().cast(), dy, n * 4) }.result()?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    // SAFETY: frees what was allocated above, once; unloads the module.
    unsafe {
        cuMemFree(dx).result()?;
        cuMemFree(dy).result()?;
        cuModuleUnload(module).result()?;
    }
    if let Some(i) = (0..n).find(|&i| y[i] != 2.0 * i as f32 + 1.0) {
        return Err(format!(
            "saxpy is wrong at {i}: {} != {}",
            y[i],
            2.0 * i as f32 + 1.0
        )
        .into());
    }
    Ok(ms)
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("raw_saxpy: {}", report(&*e));
            ExitCode::FAILURE
        }
    }
}
