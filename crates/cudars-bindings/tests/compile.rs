//! Compiling and linking on the CPU through the generated bindings: NVRTC (to PTX,
//! cubin and LTO-IR), nvJitLink (cubins and LTO-IR) and NVVM, against NVIDIA's
//! wheels. These need only the `nvrtc`, `nvjitlink`, `nvvm` and `driver` features,
//! the ones whose bindings compile for Windows too, so the same tests run on Linux
//! and, built for `x86_64-pc-windows-gnu`, under Wine with the `win_amd64` wheels
//! (`scripts/windows-tests.sh`).

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// SAFETY (for every `unsafe` block below): each calls the C API as its documentation
// asks, with pointers to live locals and buffers of the sizes the API reported.
#![allow(clippy::undocumented_unsafe_blocks)]

mod common;

use std::ffi::{CString, c_char};

use cudars_bindings::IntoResult as _;
use cudars_bindings::{nvjitlink, nvrtc, nvvm};
use cudars_tests::require_libs;

#[test]
fn nvrtc_compiles_to_ptx_and_cubin() {
    require_libs!("nvrtc");
    let v = nvrtc::version().unwrap();
    cudars_tests::assert_expected_major("NVRTC", v.major);
    let out =
        common::compile(common::BENCH_SRC, "bench.cu", &["--gpu-architecture=sm_90"]).unwrap();
    let ptx = String::from_utf8_lossy(&out.ptx);
    assert!(
        ptx.contains(".entry saxpy") && ptx.contains(".entry empty"),
        "{ptx}"
    );
    assert!(out.cubin.starts_with(common::ELF_MAGIC));
    // A virtual architecture gives PTX only.
    let out = common::compile(
        common::BENCH_SRC,
        "bench.cu",
        &["--gpu-architecture=compute_90"],
    )
    .unwrap();
    assert!(!out.ptx.is_empty() && out.cubin.is_empty());
}

#[test]
fn nvrtc_compile_errors_carry_the_log() {
    require_libs!("nvrtc");
    let err = common::compile("__global__ void k() { undefined_name = 1; }", "bad.cu", &[])
        .err()
        .unwrap();
    assert!(err.contains("NVRTC_ERROR_COMPILATION"), "{err}");
    assert!(
        err.contains("undefined_name") && err.contains("bad.cu"),
        "{err}"
    );
    let err = common::compile("", "x.cu", &["--no-such-option"])
        .err()
        .unwrap();
    assert!(err.contains("NVRTC_ERROR_INVALID_OPTION"), "{err}");
}

fn jitlink(
    opts: &[&str],
    inputs: &[(&[u8], nvjitlink::nvJitLinkInputType, &str)],
) -> Result<Vec<u8>, String> {
    use nvjitlink::*;
    let opts: Vec<CString> = opts.iter().map(|o| CString::new(*o).unwrap()).collect();
    let mut ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    let mut h: nvJitLinkHandle = std::ptr::null_mut();
    // CUDA 12's header takes `const char **`, CUDA 13's `const char * const *`.
    unsafe { nvJitLinkCreate(&mut h, ptrs.len() as u32, ptrs.as_mut_ptr()) }
        .result()
        .map_err(|e| e.to_string())?;
    let mut result = Ok(());
    for (data, kind, name) in inputs {
        let name = CString::new(*name).unwrap();
        result =
            unsafe { nvJitLinkAddData(h, *kind, data.as_ptr().cast(), data.len(), name.as_ptr()) }
                .result();
        if result.is_err() {
            break;
        }
    }
    if result.is_ok() {
        result = unsafe { nvJitLinkComplete(h) }.result();
    }
    let out = match result {
        Ok(()) => {
            let mut n = 0;
            unsafe { nvJitLinkGetLinkedCubinSize(h, &mut n) }
                .result()
                .unwrap();
            let mut cubin = vec![0u8; n];
            unsafe { nvJitLinkGetLinkedCubin(h, cubin.as_mut_ptr().cast()) }
                .result()
                .unwrap();
            Ok(cubin)
        }
        Err(e) => {
            let mut n = 0;
            unsafe { nvJitLinkGetErrorLogSize(h, &mut n) }
                .result()
                .unwrap();
            let mut log = vec![0u8; n.max(1)];
            unsafe { nvJitLinkGetErrorLog(h, log.as_mut_ptr().cast()) }
                .result()
                .unwrap();
            Err(format!("{e}\n{}", String::from_utf8_lossy(&log)))
        }
    };
    unsafe { nvJitLinkDestroy(&mut h) }.result().unwrap();
    out
}

const CALLER: &str = "extern __device__ float scale(float x);\n\
extern \"C\" __global__ void apply(float* p) { p[threadIdx.x] = scale(p[threadIdx.x]); }\n";
const CALLEE: &str = "__device__ float scale(float x) { return 3.0f * x; }\n";

#[test]
fn nvjitlink_links_two_cubins_and_two_ltoir_objects() {
    require_libs!("nvrtc", "nvJitLink");
    let v = nvjitlink::version().unwrap();
    cudars_tests::assert_expected_major("nvJitLink", v.major);
    use nvjitlink::{NVJITLINK_INPUT_CUBIN, NVJITLINK_INPUT_LTOIR};
    let rdc = ["--gpu-architecture=sm_90", "--relocatable-device-code=true"];
    let a = common::compile(CALLER, "caller.cu", &rdc).unwrap();
    let b = common::compile(CALLEE, "callee.cu", &rdc).unwrap();
    let linked = jitlink(
        &["-arch=sm_90"],
        &[
            (&a.cubin, NVJITLINK_INPUT_CUBIN, "caller"),
            (&b.cubin, NVJITLINK_INPUT_CUBIN, "callee"),
        ],
    )
    .unwrap();
    assert!(linked.starts_with(common::ELF_MAGIC));

    let lto = [
        "--gpu-architecture=sm_90",
        "--relocatable-device-code=true",
        "-dlto",
    ];
    let a = common::compile(CALLER, "caller.cu", &lto).unwrap();
    let b = common::compile(CALLEE, "callee.cu", &lto).unwrap();
    assert!(!a.ltoir.is_empty() && !b.ltoir.is_empty());
    let linked = jitlink(
        &["-arch=sm_90", "-lto"],
        &[
            (&a.ltoir, NVJITLINK_INPUT_LTOIR, "caller"),
            (&b.ltoir, NVJITLINK_INPUT_LTOIR, "callee"),
        ],
    )
    .unwrap();
    assert!(linked.starts_with(common::ELF_MAGIC));

    // The callee alone leaves `scale` undefined: a link error with a log.
    let err = jitlink(
        &["-arch=sm_90"],
        &[(&a.ltoir, NVJITLINK_INPUT_LTOIR, "caller")],
    );
    let lto_missing = jitlink(
        &["-arch=sm_90", "-lto"],
        &[(&a.ltoir, NVJITLINK_INPUT_LTOIR, "caller")],
    );
    assert!(
        err.is_err() || lto_missing.is_err(),
        "linking without the callee succeeded"
    );
    // A bad option is an error of its own.
    let err = jitlink(&["-no-such-option"], &[]).unwrap_err();
    assert!(err.contains("NVJITLINK_ERROR"), "{err}");
}

const NVVM_IR: &str = r#"target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define void @ave(i32 %a, i32 %b, i32* %c) {
entry:
  %add = add nsw i32 %a, %b
  %div = sdiv i32 %add, 2
  store i32 %div, i32* %c, align 4
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (i32, i32, i32*)* @ave, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0, i32 3, i32 1}
"#;

#[test]
fn nvvm_compiles_a_module_to_ptx() {
    require_libs!("nvvm");
    use nvvm::*;
    let v = nvvm::version().unwrap();
    assert!(v.major >= 2, "{v}");
    let mut prog: nvvmProgram = std::ptr::null_mut();
    unsafe { nvvmCreateProgram(&mut prog) }.result().unwrap();
    unsafe {
        nvvmAddModuleToProgram(
            prog,
            NVVM_IR.as_ptr().cast(),
            NVVM_IR.len(),
            c"ave".as_ptr(),
        )
    }
    .result()
    .unwrap();
    let mut opts = [c"-arch=compute_90".as_ptr()];
    let rc = unsafe { nvvmCompileProgram(prog, 1, opts.as_mut_ptr()) };
    let mut n = 0;
    unsafe { nvvmGetProgramLogSize(prog, &mut n) }
        .result()
        .unwrap();
    let mut log = vec![0u8; n.max(1)];
    unsafe { nvvmGetProgramLog(prog, log.as_mut_ptr().cast()) }
        .result()
        .unwrap();
    rc.result()
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&log)));
    unsafe { nvvmGetCompiledResultSize(prog, &mut n) }
        .result()
        .unwrap();
    let mut ptx = vec![0u8; n];
    unsafe { nvvmGetCompiledResult(prog, ptx.as_mut_ptr().cast()) }
        .result()
        .unwrap();
    let ptx = String::from_utf8_lossy(&ptx);
    assert!(ptx.contains(".entry ave"), "{ptx}");
    // Garbage IR is an error, described by NVVM.
    let mut bad: nvvmProgram = std::ptr::null_mut();
    unsafe { nvvmCreateProgram(&mut bad) }.result().unwrap();
    let junk = b"this is not IR";
    let add =
        unsafe { nvvmAddModuleToProgram(bad, junk.as_ptr().cast(), junk.len(), c"junk".as_ptr()) };
    let rc = add
        .result()
        .and_then(|()| unsafe { nvvmCompileProgram(bad, 0, std::ptr::null_mut()) }.result());
    let e = rc.unwrap_err();
    assert!(e.name().starts_with("NVVM_ERROR_"), "{e}");
    unsafe { nvvmDestroyProgram(&mut bad) }.result().unwrap();
    unsafe { nvvmDestroyProgram(&mut prog) }.result().unwrap();
}
