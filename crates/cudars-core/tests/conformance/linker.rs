//! `cuda_core/tests/test_linker.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says:
//! each test named after its Python test, with its values, a Python exception an
//! `Err` of the matching kind, a port that fails because `cudars-core` does
//! otherwise `#[ignore = "differs: …"]`.
//!
//! nvJitLink runs on the CPU, so the links with it need NVRTC and nvJitLink from
//! the wheels and no GPU: `ARCH` is the current device's architecture, or
//! `sm_90` without a GPU. The tests of the driver's linker (`cuLinkCreate`, which
//! needs a context) need a GPU; the Python suite runs them only where nvJitLink
//! is missing, the port forces that backend with `Linker::with_backend`.
//!
//! Names: `Linker(*codes, options=o)` is `Linker::new(&[codes…], o)`;
//! `link("cubin")` is `link()`, and `link("ptx")` is `link()` with
//! `LinkerOptions::ptx` (the target is an option here); `get_error_log()` and
//! `get_info_log()` are `error_log()` and `info_log()`; `Linker.which_backend()`
//! is a linker's `backend()`; `LinkerOptions()` without `arch` is
//! `LinkerOptions::for_current_device()`; `options.name` unset names the result
//! `linked`. The driver's linker refuses an option it has no counterpart of with
//! `Error::Unsupported` (Python's `ValueError`), before the driver is called.

use cudars_core::{
    CodeType, CompileTarget, Error, Linker, LinkerBackend, LinkerHandle, LinkerOptions, ObjectCode,
    Program, ProgramOptions, SourceCode,
};
use cudars_tests::{require_gpu, require_libs};

/// `ARCH`: the current device's architecture, or `sm_90` (the H100's) without a GPU.
fn arch() -> String {
    LinkerOptions::for_current_device()
        .map(|o| o.arch)
        .unwrap_or_else(|_| "sm_90".to_owned())
}

const KERNEL_A: &str = "
extern __device__ int B();
extern __device__ int C(int a, int b);
__global__ void A() { int result = C(B(), 1);}
";
const DEVICE_FUNCTION_B: &str = "__device__ int B() { return 0; }";
const DEVICE_FUNCTION_C: &str = "__device__ int C(int a, int b) { return a + b; }";

fn compile(source: &str, options: ProgramOptions, target: CompileTarget) -> ObjectCode {
    Program::new(SourceCode::Cxx(source), options)
        .unwrap()
        .compile(target, &[])
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `ProgramOptions(relocatable_device_code=True)` for `ARCH`.
fn rdc() -> ProgramOptions {
    ProgramOptions {
        arch: Some(arch()),
        relocatable_device_code: true,
        ..ProgramOptions::default()
    }
}

/// The `compile_ptx_functions` fixture: A, B and C as relocatable PTX.
fn compile_ptx_functions() -> [ObjectCode; 3] {
    [KERNEL_A, DEVICE_FUNCTION_B, DEVICE_FUNCTION_C].map(|s| compile(s, rdc(), CompileTarget::Ptx))
}

/// The `compile_ltoir_functions` fixture: A, B and C as LTO-IR.
fn compile_ltoir_functions() -> [ObjectCode; 3] {
    let lto = || ProgramOptions {
        arch: Some(arch()),
        link_time_optimization: true,
        ..ProgramOptions::default()
    };
    [KERNEL_A, DEVICE_FUNCTION_B, DEVICE_FUNCTION_C]
        .map(|s| compile(s, lto(), CompileTarget::Ltoir))
}

fn refs(codes: &[ObjectCode]) -> Vec<&ObjectCode> {
    codes.iter().collect()
}

/// `linked_code.name == options.name`: the options' name, `linked` when unset.
fn assert_named_as(linked: &ObjectCode, options: &LinkerOptions) {
    assert_eq!(linked.name(), options.name.as_deref().unwrap_or("linked"));
}

#[test]
fn test_linker_options_as_bytes_nvjitlink() {
    let options = LinkerOptions {
        debug: true,
        ftz: Some(true),
        max_register_count: Some(32),
        ..LinkerOptions::new("sm_80")
    };
    let options_str = options.to_nvjitlink_args().unwrap();
    for expected in ["-arch=sm_80", "-g", "-ftz=true", "-maxrregcount=32"] {
        assert!(
            options_str.iter().any(|o| o == expected),
            "{expected} not in {options_str:?}"
        );
    }
}

/// Python's `Linker()` takes default options; Rust's options name their
/// architecture, so the test names one.
#[test]
fn test_linker_empty_object_codes_raises() {
    match Linker::new(&[], LinkerOptions::new("sm_80")) {
        Err(Error::InvalidArgument { .. }) => {}
        Err(e) => panic!("expected Error::InvalidArgument (Python's ValueError), got {e:?}"),
        Ok(_) => panic!("a linker of no inputs was made"),
    }
}

/// `ARCH` is the current device's in Python; the options are only rendered,
/// so without a GPU any architecture does (`sm_90` then).
#[test]
fn test_linker_options_nvjitlink_options_as_str() {
    let arch = LinkerOptions::for_current_device()
        .map(|o| o.arch)
        .unwrap_or_else(|_| "sm_90".to_owned());
    let opts = LinkerOptions {
        debug: true,
        lineinfo: true,
        ..LinkerOptions::new(arch.clone())
    };
    let options: Vec<String> = opts.to_nvjitlink_args().unwrap();
    assert!(options.contains(&format!("-arch={arch}")), "{options:?}");
    assert!(options.iter().any(|o| o == "-g"), "{options:?}");
    assert!(options.iter().any(|o| o == "-lineinfo"), "{options:?}");
}

/// The parametrised option sets of `test_linker_init` (those of the nvJitLink
/// backend, which the wheels provide), each linked to a cubin.
#[test]
fn test_linker_init() {
    require_libs!("nvrtc", "nvJitLink");
    let arch = arch();
    let codes = compile_ptx_functions();
    let with = |f: &dyn Fn(&mut LinkerOptions)| {
        let mut o = LinkerOptions::new(arch.clone());
        f(&mut o);
        o
    };
    let strings = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let default =
        LinkerOptions::for_current_device().unwrap_or_else(|_| LinkerOptions::new(arch.clone()));
    let options = vec![
        default,
        with(&|o| o.verbose = true),
        with(&|o| o.max_register_count = Some(32)),
        with(&|o| o.optimization_level = Some(3)),
        with(&|o| o.debug = true),
        with(&|o| o.lineinfo = true),
        with(&|o| o.time = true),
        with(&|o| o.optimize_unused_variables = true),
        with(&|o| o.ptxas_options = strings(&["-v"])),
        with(&|o| o.ptxas_options = strings(&["-v", "--verbose"])),
        with(&|o| o.ptxas_options = strings(&["-v", "--verbose"])),
        with(&|o| o.split_compile = Some(0)),
        with(&|o| o.split_compile_extended = Some(1)),
        with(&|o| o.ftz = Some(true)),
        with(&|o| o.prec_div = Some(true)),
        with(&|o| o.prec_sqrt = Some(true)),
        with(&|o| o.fma = Some(true)),
        with(&|o| o.kernels_used = strings(&["A"])),
        with(&|o| o.kernels_used = strings(&["C", "B"])),
        with(&|o| o.kernels_used = strings(&["C", "B"])),
        with(&|o| o.variables_used = strings(&["var1"])),
        with(&|o| o.variables_used = strings(&["var1", "var2"])),
        with(&|o| o.variables_used = strings(&["var1", "var2"])),
        // nvJitLink 12.5 and newer (the wheels are 12.9 or 13).
        with(&|o| o.no_cache = true),
    ];
    for options in options {
        let linker = Linker::new(&refs(&codes), options.clone())
            .unwrap_or_else(|e| panic!("{options:?}: {e}"));
        let object_code = linker.link().unwrap_or_else(|e| panic!("{options:?}: {e}"));
        assert_eq!(object_code.code_type(), CodeType::Cubin);
        assert_eq!(linker.backend(), LinkerBackend::NvJitLink);
        assert_eq!(linker.backend().to_string(), "nvJitLink");
    }
}

/// Python's nvJitLink refuses the architecture `99` when the linker is made
/// (`nvJitLinkError`); here the options are checked first, at the same call,
/// as `Error::InvalidArgument`.
#[test]
fn test_linker_init_invalid_arch() {
    require_libs!("nvrtc", "nvJitLink");
    let codes = compile_ptx_functions();
    let options = LinkerOptions {
        ptx: true,
        ..LinkerOptions::new("99")
    };
    match Linker::new(&refs(&codes), options) {
        Err(Error::InvalidArgument { .. }) => {}
        other => panic!("expected Error::InvalidArgument, got {other:?}"),
    }
}

#[test]
fn test_linker_link_ptx_nvjitlink() {
    require_libs!("nvrtc", "nvJitLink");
    let codes = compile_ltoir_functions();
    let options = LinkerOptions {
        link_time_optimization: true,
        ptx: true,
        ..LinkerOptions::new(arch())
    };
    let linker = Linker::new(&refs(&codes), options.clone()).unwrap();
    let linked_code = linker.link().unwrap();
    assert_eq!(linked_code.code_type(), CodeType::Ptx);
    assert_named_as(&linked_code, &options);
}

#[test]
fn test_linker_link_cubin() {
    require_libs!("nvrtc", "nvJitLink");
    let codes = compile_ptx_functions();
    let options = LinkerOptions::new(arch());
    let linker = Linker::new(&refs(&codes), options.clone()).unwrap();
    let linked_code = linker.link().unwrap();
    assert_eq!(linked_code.code_type(), CodeType::Cubin);
    assert_named_as(&linked_code, &options);
}

#[test]
fn test_linker_link_ptx_multiple() {
    require_libs!("nvrtc", "nvJitLink");
    let ptxes: Vec<ObjectCode> = compile_ptx_functions()
        .iter()
        .map(|obj| ObjectCode::from_ptx(obj.code().to_vec()).unwrap())
        .collect();
    let options = LinkerOptions::new(arch());
    let linker = Linker::new(&refs(&ptxes), options.clone()).unwrap();
    let linked_code = linker.link().unwrap();
    assert_eq!(linked_code.code_type(), CodeType::Cubin);
    assert_named_as(&linked_code, &options);
}

#[test]
fn test_linker_get_error_log() {
    require_libs!("nvrtc", "nvJitLink");
    let options = LinkerOptions {
        name: Some("ABC".into()),
        ..LinkerOptions::new(arch())
    };
    let replacement_kernel = "
extern __device__ int Z();
extern __device__ int C(int a, int b);
__global__ void A() { int result = C(Z(), 1);}
";
    let dummy_program = compile(
        replacement_kernel,
        ProgramOptions {
            name: Some("CBA".into()),
            ..rdc()
        },
        CompileTarget::Ptx,
    );
    let [_, b, c] = compile_ptx_functions();
    let linker = Linker::new(&[&dummy_program, &b, &c], options).unwrap();
    match linker.link() {
        Err(Error::Compile { .. } | Error::Tool { .. } | Error::Driver { .. }) => {
            let log: String = linker.error_log();
            // Python checks the text on the driver's linker only (nvJitLink's
            // log names the missing symbol too).
            assert!(log.contains("_Z1Zv"), "{log}");
        }
        Err(e) => panic!("expected a link error, got {e:?}"),
        Ok(_) => {}
    }
}

#[test]
fn test_linker_get_info_log() {
    require_libs!("nvrtc", "nvJitLink");
    let codes = compile_ptx_functions();
    let linker = Linker::new(&refs(&codes), LinkerOptions::new(arch())).unwrap();
    linker.link().unwrap();
    let _log: String = linker.info_log();
}

#[test]
fn test_linker_logs_cached_after_link() {
    require_libs!("nvrtc", "nvJitLink");
    let codes = compile_ptx_functions();
    let linker = Linker::new(&refs(&codes), LinkerOptions::new(arch())).unwrap();
    linker.link().unwrap();
    let err_log = linker.error_log();
    let info_log = linker.info_log();
    assert_eq!(linker.error_log(), err_log);
    assert_eq!(linker.info_log(), info_log);
}

#[test]
fn test_linker_handle() {
    require_libs!("nvrtc", "nvJitLink");
    let codes = compile_ptx_functions();
    let linker = Linker::new(&refs(&codes), LinkerOptions::new(arch())).unwrap();
    match linker.handle() {
        LinkerHandle::NvJitLink(h) => assert!(!h.is_null()),
        LinkerHandle::Driver(h) => assert!(!h.is_null()),
    }
}

/// Python's test runs on the driver's linker only (where nvJitLink is missing);
/// here that backend is chosen. `close()` is the drop.
#[test]
fn test_driver_linker_lifetime_no_heap_corruption() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = cudars_core::Device::new(0).unwrap();
    d.set_current().unwrap();
    let codes = compile_ptx_functions();
    let linker = Linker::with_backend(
        &refs(&codes),
        LinkerOptions::new(arch()),
        LinkerBackend::Driver,
    )
    .unwrap();
    linker.link().unwrap();
    drop(linker);

    let obj_a = compile(KERNEL_A, rdc(), CompileTarget::Ptx);
    let obj_b = compile(DEVICE_FUNCTION_B, rdc(), CompileTarget::Ptx);
    let obj_c = compile(DEVICE_FUNCTION_C, rdc(), CompileTarget::Ptx);
    let linker = Linker::with_backend(
        &[&obj_a, &obj_b, &obj_c],
        LinkerOptions::new(arch()),
        LinkerBackend::Driver,
    )
    .unwrap();
    assert_eq!(linker.backend(), LinkerBackend::Driver);
    linker.link().unwrap();
    drop(linker);
}

/// As above, on the driver's linker. Python reads the log again after
/// `close()`; a dropped linker cannot be read here, so it is read twice.
#[test]
fn test_driver_linker_preserves_error_log_after_close() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = cudars_core::Device::new(0).unwrap();
    d.set_current().unwrap();
    let bad_kernel = "
extern __device__ int Z();
__global__ void A() { int r = Z(); }
";
    let bad_obj = compile(bad_kernel, rdc(), CompileTarget::Ptx);
    let linker = Linker::with_backend(
        &[&bad_obj],
        LinkerOptions::new(arch()),
        LinkerBackend::Driver,
    )
    .unwrap();
    match linker.link() {
        Err(Error::Compile { .. } | Error::Driver { .. }) => {}
        other => panic!("expected the driver's link error (CUDAError), got {other:?}"),
    }
    let error_log = linker.error_log();
    assert!(!error_log.is_empty());
    assert_eq!(linker.error_log(), error_log);
    let _info: String = linker.info_log();
}

/// `Linker.which_backend()` with nvJitLink available: a linker's backend.
#[test]
fn TestWhichBackendClassmethod__test_which_backend_returns_nvjitlink() {
    require_libs!("nvrtc", "nvJitLink");
    let codes = compile_ptx_functions();
    let linker = Linker::new(&refs(&codes), LinkerOptions::new(arch())).unwrap();
    assert_eq!(linker.backend().to_string(), "nvJitLink");
}

/// `Linker.which_backend()` with the driver's linker (Python patches the
/// memoised choice; here the backend is chosen).
#[test]
fn TestWhichBackendClassmethod__test_which_backend_returns_driver() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = cudars_core::Device::new(0).unwrap();
    d.set_current().unwrap();
    let codes = compile_ptx_functions();
    let linker = Linker::with_backend(
        &refs(&codes),
        LinkerOptions::new(arch()),
        LinkerBackend::Driver,
    )
    .unwrap();
    assert_eq!(linker.backend().to_string(), "driver");
}

/// `_prepare_driver_options` of an option the driver's linker lacks raises
/// `ValueError` naming it: here `Error::Unsupported` naming it, from the
/// driver's linker, before the driver is called (so no GPU is needed). The
/// input is never read.
fn prepare_driver_options_unsupported_raises(field: &str, set: impl Fn(&mut LinkerOptions)) {
    let mut opts = LinkerOptions::new(arch());
    set(&mut opts);
    let input = ObjectCode::from_ptx(b"// never read".to_vec()).unwrap();
    match Linker::with_backend(&[&input], opts, LinkerBackend::Driver) {
        Err(e @ Error::Unsupported { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(&format!("`{field}`")), "{msg}");
        }
        other => panic!("expected Error::Unsupported naming `{field}`, got {other:?}"),
    }
}

#[test]
fn test_prepare_driver_options_unsupported_raises__kwargs0_time_option_is_not_supported_by_the_driver_API()
 {
    prepare_driver_options_unsupported_raises("time", |o| o.time = true);
}

#[test]
fn test_prepare_driver_options_unsupported_raises__kwargs1_ptx_option_is_not_supported_by_the_driver_API()
 {
    prepare_driver_options_unsupported_raises("ptx", |o| o.ptx = true);
}

#[test]
fn test_prepare_driver_options_unsupported_raises__kwargs2_ptxas_options_option_is_not_supported_by_the_driver_API()
 {
    prepare_driver_options_unsupported_raises("ptxas_options", |o| {
        o.ptxas_options = vec!["-v".into()]
    });
}

#[test]
fn test_prepare_driver_options_unsupported_raises__kwargs3_split_compile_option_is_not_supported_by_the_driver_API()
 {
    prepare_driver_options_unsupported_raises("split_compile", |o| o.split_compile = Some(0));
}

#[test]
fn test_prepare_driver_options_unsupported_raises__kwargs4_split_compile_extended_option_is_not_supported_by_the_driver_API()
 {
    prepare_driver_options_unsupported_raises("split_compile_extended", |o| {
        o.split_compile_extended = Some(1);
    });
}
