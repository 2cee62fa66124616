//! Helpers the cudars-bindings tests and benchmark share: compiling with NVRTC through
//! the raw bindings.

#![allow(dead_code)]

use std::ffi::{CString, c_char};

use cudars_bindings::IntoResult as _;
use cudars_bindings::nvrtc::*;

/// What NVRTC produced.
pub(crate) struct Compiled {
    pub(crate) ptx: Vec<u8>,
    /// Empty unless a real `sm_XX` architecture was given.
    pub(crate) cubin: Vec<u8>,
    /// Empty unless `-dlto` was given.
    pub(crate) ltoir: Vec<u8>,
    pub(crate) log: String,
}

/// Compiles `src` with `opts`; on failure the error carries NVRTC's log.
pub(crate) fn compile(src: &str, name: &str, opts: &[&str]) -> Result<Compiled, String> {
    let src = CString::new(src).map_err(|e| e.to_string())?;
    let name = CString::new(name).map_err(|e| e.to_string())?;
    let opts: Vec<CString> = opts.iter().map(|o| CString::new(*o).unwrap()).collect();
    let opt_ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    let mut prog: nvrtcProgram = std::ptr::null_mut();
    // SAFETY: valid NUL-terminated strings; no headers.
    unsafe {
        nvrtcCreateProgram(
            &mut prog,
            src.as_ptr(),
            name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    }
    .result()
    .map_err(|e| e.to_string())?;
    // SAFETY: `prog` is a live program; the options outlive the call.
    let rc = unsafe { nvrtcCompileProgram(prog, opt_ptrs.len() as i32, opt_ptrs.as_ptr()) };
    let log = get(prog, nvrtcGetProgramLogSize, nvrtcGetProgramLog);
    let log = String::from_utf8_lossy(log.strip_suffix(&[0]).unwrap_or(&log)).into_owned();
    let out = rc
        .result()
        .map_err(|e| format!("{e}\n{log}"))
        .map(|()| Compiled {
            ptx: get(prog, nvrtcGetPTXSize, nvrtcGetPTX),
            cubin: get(prog, nvrtcGetCUBINSize, nvrtcGetCUBIN),
            ltoir: get(prog, nvrtcGetLTOIRSize, nvrtcGetLTOIR),
            log,
        });
    // SAFETY: destroys the program created above, once.
    unsafe { nvrtcDestroyProgram(&mut prog) }
        .result()
        .map_err(|e| e.to_string())?;
    out
}

type SizeFn = unsafe fn(nvrtcProgram, *mut usize) -> nvrtcResult;
type GetFn = unsafe fn(nvrtcProgram, *mut c_char) -> nvrtcResult;

fn get(prog: nvrtcProgram, size: SizeFn, get: GetFn) -> Vec<u8> {
    let mut n = 0usize;
    // SAFETY: `prog` is live; `n` is writable.
    if unsafe { size(prog, &mut n) }.result().is_err() || n == 0 {
        return Vec::new();
    }
    let mut buf = vec![0u8; n];
    // SAFETY: `buf` holds the `n` bytes NVRTC said it needs.
    if unsafe { get(prog, buf.as_mut_ptr().cast()) }
        .result()
        .is_err()
    {
        return Vec::new();
    }
    buf
}

/// The SAXPY and empty kernels of `../shared/reference/peers/bench.c`.
pub(crate) const BENCH_SRC: &str = "extern \"C\" __global__ void empty(float* p, int n) {}\n\
extern \"C\" __global__ void saxpy(float a, const float* x, float* y, unsigned long long n) {\n\
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n\
  if (i < n) y[i] = a * x[i] + y[i];\n}\n";

pub(crate) const ELF_MAGIC: &[u8] = b"\x7fELF";

/// `sm_XY` of a device (the driver must be initialised).
pub(crate) fn arch(dev: cudars_bindings::driver::CUdevice) -> String {
    use cudars_bindings::driver::*;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both are valid for writes; `dev` came from `cuDeviceGet`.
    unsafe {
        cuDeviceGetAttribute(
            &mut major,
            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            dev,
        )
    }
    .result()
    .unwrap();
    // SAFETY: as above.
    unsafe {
        cuDeviceGetAttribute(
            &mut minor,
            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
            dev,
        )
    }
    .result()
    .unwrap();
    format!("sm_{major}{minor}")
}
