//! `cuda_core/tests/test_module.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says.
//!
//! Most need a GPU (`init_cuda`: device 0, current); those that only compile
//! (LTO-IR, which no driver loads) need NVRTC alone and run anywhere.
//!
//! Names: `ObjectCode.from_ptx(code, symbol_mapping=m)` is
//! `ObjectCode::from_ptx(code)?.with_symbol_mapping(m)`; the `from_*` of a file
//! path is `ObjectCode::from_file(path, CodeType::…)`, which reads the file at
//! once (cuda.core keeps the path as `code` and reads it at load: here `code()`
//! is the file's bytes, and a `&str` and a `&Path` both name it);
//! `kernel.attributes` is `kernel.attributes(&device)` (the view is per device,
//! cuda.core's `attributes[device]`), whose boolean attributes are `0`/`1`
//! `i32`s; `kernel.occupancy` is `kernel.occupancy(&device)`; `arguments_info`
//! is `params()` (`(offset, size)` pairs); `Kernel.from_handle(h, mod)` is the
//! `unsafe` `Kernel::from_handle(h, Some(library))`. Python's `TypeError`s for
//! arguments of the wrong type are compile errors here (the manifest says so).

use std::path::Path;

use cudars_core::cudars_bindings::driver as sys;
use cudars_core::{
    CodeType, CompileTarget, Device, Error, FatbinBuilder, Grid, Kernel, LaunchConfig, ObjectCode,
    Program, ProgramOptions, SourceCode, StreamOptions, launch,
};
use cudars_tests::{require_gpu, require_libs};

const SAXPY_KERNEL: &str = r"
template<typename T>
__global__ void saxpy(const T a,
                    const T* x,
                    const T* y,
                    T* out,
                    size_t N) {
    const unsigned int tid = threadIdx.x + blockIdx.x * blockDim.x;
    for (size_t i=tid; i<N; i+=gridDim.x*blockDim.x) {
        out[tid] = a * x[tid] + y[tid];
    }
}
";

const SAXPY_NAMES: &[&str] = &["saxpy<float>", "saxpy<double>"];

/// The `init_cuda` fixture: device 0, current on this thread.
fn init_cuda() -> Device {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    d
}

/// `ProgramOptions()` with `init_cuda`: the device's architecture.
fn options(d: &Device) -> ProgramOptions {
    ProgramOptions::for_device(d).unwrap()
}

fn compile(
    source: &str,
    options: ProgramOptions,
    target: CompileTarget,
    names: &[&str],
) -> ObjectCode {
    Program::new(SourceCode::Cxx(source), options)
        .unwrap()
        .compile(target, names)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The `get_saxpy_kernel_cubin` fixture: `(saxpy<float>, the cubin)`.
fn get_saxpy_kernel_cubin(d: &Device) -> (Kernel, ObjectCode) {
    let code = compile(SAXPY_KERNEL, options(d), CompileTarget::Cubin, SAXPY_NAMES);
    (code.get_kernel("saxpy<float>").unwrap(), code)
}

/// The `get_saxpy_kernel_ptx` fixture: `(ptx bytes, the object code)`.
fn get_saxpy_kernel_ptx(d: &Device) -> (Vec<u8>, ObjectCode) {
    let code = compile(SAXPY_KERNEL, options(d), CompileTarget::Ptx, SAXPY_NAMES);
    (code.code().to_vec(), code)
}

/// The `get_saxpy_kernel_ltoir` fixture; compiled for the current device when
/// there is one (as `init_cuda` makes it), else for NVRTC's default.
fn get_saxpy_kernel_ltoir() -> ObjectCode {
    let options = ProgramOptions {
        link_time_optimization: true,
        ..ProgramOptions::for_current_device().unwrap_or_default()
    };
    compile(SAXPY_KERNEL, options, CompileTarget::Ltoir, SAXPY_NAMES)
}

fn assert_invalid<T: std::fmt::Debug>(r: cudars_core::Result<T>) {
    match r {
        Err(Error::InvalidArgument { .. }) => {}
        other => panic!(
            "expected Error::InvalidArgument (Python's ValueError/RuntimeError), got {other:?}"
        ),
    }
}

/// A fresh directory for one test (pytest's `tmp_path`).
fn tmp_path(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "cudars-conformance-module-{}-{test}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn test_kernel_attributes_per_device_view() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = init_cuda();
    let (kernel, _) = get_saxpy_kernel_cubin(&d);
    let current = Device::current().unwrap();
    let default_view = kernel.attributes(&current);
    let by_id = Device::new(d.ordinal()).unwrap();
    let int_view = kernel.attributes(&by_id);
    let dev_view = kernel.attributes(&d);
    let regs = default_view.num_regs().unwrap();
    assert_eq!(regs, int_view.num_regs().unwrap());
    assert_eq!(regs, dev_view.num_regs().unwrap());
    assert_eq!(
        default_view.max_threads_per_block().unwrap(),
        int_view.max_threads_per_block().unwrap()
    );
}

#[test]
fn test_get_kernel() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = init_cuda();
    let kernel = r#"extern "C" __global__ void ABC() { }"#;
    let object_code = compile(
        kernel,
        ProgramOptions {
            relocatable_device_code: true,
            ..options(&d)
        },
        CompileTarget::Ptx,
        &[],
    );
    // Lazy loading: get_kernel loads the code and returns a valid kernel.
    let k = object_code.get_kernel("ABC").unwrap();
    assert!(!object_code.handle().unwrap().is_null());
    assert!(!k.handle().is_null());
    // Python's bytes name is the same name here.
    assert!(!object_code.get_kernel("ABC").unwrap().handle().is_null());
}

/// `test_read_only_kernel_attributes[<attr>-<type>]`: the attribute read through
/// the current device's view and each device's (by `Device` and by ordinal);
/// a `bool` one is 0 or 1.
fn read_only_kernel_attribute(
    attr: &str,
    is_bool: bool,
    get: impl Fn(&cudars_core::KernelAttributes<'_>) -> cudars_core::Result<i32>,
) {
    let d = init_cuda();
    let (kernel, _) = get_saxpy_kernel_cubin(&d);
    let check = |v: i32| {
        if is_bool {
            assert!(v == 0 || v == 1, "{attr} = {v} is not a bool");
        }
    };
    let current = Device::current().unwrap();
    check(get(&kernel.attributes(&current)).unwrap());
    for device in Device::all().unwrap() {
        check(get(&kernel.attributes(&device)).unwrap());
        let by_id = Device::new(device.ordinal()).unwrap();
        check(get(&kernel.attributes(&by_id)).unwrap());
    }
}

#[test]
fn test_read_only_kernel_attributes__max_threads_per_block_int() {
    require_gpu!();
    require_libs!("nvrtc");
    read_only_kernel_attribute("max_threads_per_block", false, |a| {
        a.max_threads_per_block()
    });
}

#[test]
fn test_read_only_kernel_attributes__shared_size_bytes_int() {
    require_gpu!();
    require_libs!("nvrtc");
    read_only_kernel_attribute("shared_size_bytes", false, |a| a.shared_size_bytes());
}

#[test]
fn test_read_only_kernel_attributes__const_size_bytes_int() {
    require_gpu!();
    require_libs!("nvrtc");
    read_only_kernel_attribute("const_size_bytes", false, |a| a.const_size_bytes());
}

#[test]
fn test_read_only_kernel_attributes__local_size_bytes_int() {
    require_gpu!();
    require_libs!("nvrtc");
    read_only_kernel_attribute("local_size_bytes", false, |a| a.local_size_bytes());
}

#[test]
fn test_read_only_kernel_attributes__num_regs_int() {
    require_gpu!();
    require_libs!("nvrtc");
    read_only_kernel_attribute("num_regs", false, |a| a.num_regs());
}

#[test]
fn test_read_only_kernel_attributes__ptx_version_int() {
    require_gpu!();
    require_libs!("nvrtc");
    read_only_kernel_attribute("ptx_version", false, |a| a.ptx_version());
}

#[test]
fn test_read_only_kernel_attributes__binary_version_int() {
    require_gpu!();
    require_libs!("nvrtc");
    read_only_kernel_attribute("binary_version", false, |a| a.binary_version());
}

#[test]
fn test_read_only_kernel_attributes__cache_mode_ca_bool() {
    require_gpu!();
    require_libs!("nvrtc");
    read_only_kernel_attribute("cache_mode_ca", true, |a| a.cache_mode_ca());
}

#[test]
fn test_read_only_kernel_attributes__cluster_size_must_be_set_bool() {
    require_gpu!();
    require_libs!("nvrtc");
    read_only_kernel_attribute("cluster_size_must_be_set", true, |a| {
        a.cluster_size_must_be_set()
    });
}

#[test]
fn test_read_only_kernel_attributes__max_dynamic_shared_size_bytes_int() {
    require_gpu!();
    require_libs!("nvrtc");
    read_only_kernel_attribute("max_dynamic_shared_size_bytes", false, |a| {
        a.max_dynamic_shared_size_bytes()
    });
}

#[test]
fn test_read_only_kernel_attributes__preferred_shared_memory_carveout_int() {
    require_gpu!();
    require_libs!("nvrtc");
    read_only_kernel_attribute("preferred_shared_memory_carveout", false, |a| {
        a.preferred_shared_memory_carveout()
    });
}

#[test]
fn test_read_only_kernel_attributes__required_cluster_width_int() {
    require_gpu!();
    require_libs!("nvrtc");
    read_only_kernel_attribute("required_cluster_width", false, |a| {
        a.required_cluster_width()
    });
}

#[test]
fn test_read_only_kernel_attributes__required_cluster_height_int() {
    require_gpu!();
    require_libs!("nvrtc");
    read_only_kernel_attribute("required_cluster_height", false, |a| {
        a.required_cluster_height()
    });
}

#[test]
fn test_read_only_kernel_attributes__required_cluster_depth_int() {
    require_gpu!();
    require_libs!("nvrtc");
    read_only_kernel_attribute("required_cluster_depth", false, |a| {
        a.required_cluster_depth()
    });
}

#[test]
fn test_read_only_kernel_attributes__non_portable_cluster_size_allowed_bool() {
    require_gpu!();
    require_libs!("nvrtc");
    read_only_kernel_attribute("non_portable_cluster_size_allowed", true, |a| {
        a.non_portable_cluster_size_allowed()
    });
}

#[test]
fn test_read_only_kernel_attributes__cluster_scheduling_policy_preference_int() {
    require_gpu!();
    require_libs!("nvrtc");
    read_only_kernel_attribute("cluster_scheduling_policy_preference", false, |a| {
        a.cluster_scheduling_policy_preference()
    });
}

#[test]
fn test_object_code_load_ptx() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = init_cuda();
    let (ptx, module) = get_saxpy_kernel_ptx(&d);
    let sym_map = module.symbol_mapping().clone();
    let mod_obj = ObjectCode::from_ptx(ptx.clone())
        .unwrap()
        .with_symbol_mapping(sym_map);
    assert_eq!(module.code(), &ptx[..]);
    mod_obj.get_kernel("saxpy<double>").unwrap(); // force loading
}

/// `test_object_code_load_*_from_file[str|path]`: `path` given as `&str` or `&Path`.
fn load_from_file(
    test: &str,
    file: &str,
    code: &ObjectCode,
    code_type: CodeType,
    as_str: bool,
) -> ObjectCode {
    let path = tmp_path(test).join(file);
    std::fs::write(&path, code.code()).unwrap();
    let obj = if as_str {
        ObjectCode::from_file(path.to_str().unwrap(), code_type)
    } else {
        ObjectCode::from_file(Path::new(&path), code_type)
    }
    .unwrap()
    .with_symbol_mapping(code.symbol_mapping().clone());
    // cuda.core's `code` is the path; here the file is read at once.
    assert_eq!(obj.code(), code.code());
    assert_eq!(obj.code_type(), code_type);
    std::fs::remove_dir_all(path.parent().unwrap()).ok();
    obj
}

fn object_code_load_ptx_from_file(test: &str, as_str: bool) {
    let d = init_cuda();
    let (_, module) = get_saxpy_kernel_ptx(&d);
    let obj = load_from_file(test, "test.ptx", &module, CodeType::Ptx, as_str);
    obj.get_kernel("saxpy<double>").unwrap(); // force loading
}

#[test]
fn test_object_code_load_ptx_from_file__str() {
    require_gpu!();
    require_libs!("nvrtc");
    object_code_load_ptx_from_file("ptx_str", true);
}

#[test]
fn test_object_code_load_ptx_from_file__path() {
    require_gpu!();
    require_libs!("nvrtc");
    object_code_load_ptx_from_file("ptx_path", false);
}

#[test]
fn test_object_code_load_cubin() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = init_cuda();
    let (_, module) = get_saxpy_kernel_cubin(&d);
    let cubin = module.code().to_vec();
    let obj = ObjectCode::from_cubin(cubin.clone())
        .unwrap()
        .with_symbol_mapping(module.symbol_mapping().clone());
    assert_eq!(obj.code(), &cubin[..]);
    obj.get_kernel("saxpy<double>").unwrap(); // force loading
}

fn object_code_load_cubin_from_file(test: &str, as_str: bool) {
    let d = init_cuda();
    let (_, module) = get_saxpy_kernel_cubin(&d);
    let obj = load_from_file(test, "test.cubin", &module, CodeType::Cubin, as_str);
    obj.get_kernel("saxpy<double>").unwrap(); // force loading
}

#[test]
fn test_object_code_load_cubin_from_file__str() {
    require_gpu!();
    require_libs!("nvrtc");
    object_code_load_cubin_from_file("cubin_str", true);
}

#[test]
fn test_object_code_load_cubin_from_file__path() {
    require_gpu!();
    require_libs!("nvrtc");
    object_code_load_cubin_from_file("cubin_path", false);
}

#[test]
fn test_object_code_handle() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = init_cuda();
    let (_, module) = get_saxpy_kernel_cubin(&d);
    assert!(!module.handle().unwrap().is_null());
}

/// Needs no GPU: LTO-IR is refused before any driver call.
#[test]
fn test_object_code_load_ltoir() {
    require_libs!("nvrtc");
    let module = get_saxpy_kernel_ltoir();
    let ltoir = module.code().to_vec();
    let obj = ObjectCode::from_ltoir(ltoir.clone())
        .unwrap()
        .with_symbol_mapping(module.symbol_mapping().clone());
    assert_eq!(obj.code(), &ltoir[..]);
    assert_eq!(obj.code_type(), CodeType::Ltoir);
    assert_eq!(obj.code_type().to_string(), "ltoir");
    // LTO-IR does not load: link it first (Python's RuntimeError
    // 'Unsupported code type "ltoir"').
    assert_invalid(obj.get_kernel("saxpy<float>"));
}

fn object_code_load_ltoir_from_file(test: &str, as_str: bool) {
    let module = get_saxpy_kernel_ltoir();
    let obj = load_from_file(test, "test.ltoir", &module, CodeType::Ltoir, as_str);
    assert_eq!(obj.code_type().to_string(), "ltoir");
}

#[test]
fn test_object_code_load_ltoir_from_file__str() {
    require_libs!("nvrtc");
    object_code_load_ltoir_from_file("ltoir_str", true);
}

#[test]
fn test_object_code_load_ltoir_from_file__path() {
    require_libs!("nvrtc");
    object_code_load_ltoir_from_file("ltoir_path", false);
}

/// The `get_saxpy_fatbin` fixture: a fatbin of a cubin for the device and PTX
/// for a second architecture (`sm_75`, or `sm_80` on a 7.5 device), with the
/// cubin's symbol mapping.
fn get_saxpy_fatbin(d: &Device) -> (ObjectCode, std::collections::BTreeMap<String, String>) {
    let (major, minor) = d.compute_capability().unwrap();
    saxpy_fatbin(&format!("{major}{minor}"))
}

/// `get_saxpy_fatbin` for the device architecture `arch` (`90`).
fn saxpy_fatbin(arch: &str) -> (ObjectCode, std::collections::BTreeMap<String, String>) {
    let arch = arch.to_owned();
    let second_arch = if arch == "75" { "80" } else { "75" };
    let cubin = compile(
        SAXPY_KERNEL,
        ProgramOptions {
            arch: Some(format!("sm_{arch}")),
            ..ProgramOptions::default()
        },
        CompileTarget::Cubin,
        SAXPY_NAMES,
    );
    let sym_map = cubin.symbol_mapping().clone();
    let ptx = compile(
        SAXPY_KERNEL,
        ProgramOptions {
            arch: Some(format!("sm_{second_arch}")),
            ..ProgramOptions::default()
        },
        CompileTarget::Ptx,
        SAXPY_NAMES,
    );
    let fatbin = FatbinBuilder::new()
        .cubin(&cubin, &arch)
        .unwrap()
        .ptx(&ptx, second_arch, &format!("-arch=sm_{second_arch}"))
        .unwrap()
        .build()
        .unwrap();
    (fatbin, sym_map)
}

#[test]
fn test_object_code_load_fatbin() {
    require_gpu!();
    require_libs!("nvrtc", "nvfatbin");
    let d = init_cuda();
    let (fatbin, sym_map) = get_saxpy_fatbin(&d);
    let bytes = fatbin.code().to_vec();
    let obj = ObjectCode::from_fatbin(bytes.clone())
        .unwrap()
        .with_symbol_mapping(sym_map);
    assert_eq!(obj.code(), &bytes[..]);
    assert_eq!(obj.code_type(), CodeType::Fatbin);
    assert_eq!(obj.code_type().to_string(), "fatbin");
    obj.get_kernel("saxpy<double>").unwrap(); // force loading
}

fn object_code_load_fatbin_from_file(test: &str, as_str: bool) {
    let d = init_cuda();
    let (fatbin, sym_map) = get_saxpy_fatbin(&d);
    let fatbin = fatbin.with_symbol_mapping(sym_map);
    let obj = load_from_file(test, "test.fatbin", &fatbin, CodeType::Fatbin, as_str);
    obj.get_kernel("saxpy<double>").unwrap(); // force loading
}

#[test]
fn test_object_code_load_fatbin_from_file__str() {
    require_gpu!();
    require_libs!("nvrtc", "nvfatbin");
    object_code_load_fatbin_from_file("fatbin_str", true);
}

#[test]
fn test_object_code_load_fatbin_from_file__path() {
    require_gpu!();
    require_libs!("nvrtc", "nvfatbin");
    object_code_load_fatbin_from_file("fatbin_path", false);
}

#[test]
fn test_saxpy_arguments() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = init_cuda();
    let (krn, _) = get_saxpy_kernel_cubin(&d);
    assert_eq!(krn.num_arguments().unwrap(), 5);
    let arg_info = krn.params().unwrap();
    assert_eq!(arg_info.len(), krn.num_arguments().unwrap());
    // struct { float a; float* x; float* y; float* out; size_t N; } on a 64-bit host.
    let expected = [(0, 4), (8, 8), (16, 8), (24, 8), (32, 8)];
    assert_eq!(arg_info, &expected[..]);
}

/// `test_num_arguments[<type>-<nargs>]`: `foo<nargs>(<type> p_0, …)`, whose
/// parameters lie as the members of a C struct of `nargs` `<type>`s.
fn num_arguments(c_type_name: &str, size: usize, nargs: usize) {
    let d = init_cuda();
    let args_str = (0..nargs)
        .map(|i| format!("{c_type_name} p_{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let src = format!("__global__ void foo{nargs}({args_str}) {{ }}");
    let name = format!("foo{nargs}");
    let module = compile(&src, options(&d), CompileTarget::Cubin, &[&name]);
    let krn = module.get_kernel(&name).unwrap();
    assert_eq!(krn.num_arguments().unwrap(), nargs);
    let expected: Vec<(usize, usize)> = (0..nargs).map(|i| (i * size, size)).collect();
    assert_eq!(krn.params().unwrap(), &expected[..]);
}

#[test]
fn test_num_arguments__int_0() {
    require_gpu!();
    require_libs!("nvrtc");
    num_arguments("int", 4, 0);
}

#[test]
fn test_num_arguments__int_1() {
    require_gpu!();
    require_libs!("nvrtc");
    num_arguments("int", 4, 1);
}

#[test]
fn test_num_arguments__int_2() {
    require_gpu!();
    require_libs!("nvrtc");
    num_arguments("int", 4, 2);
}

#[test]
fn test_num_arguments__int_3() {
    require_gpu!();
    require_libs!("nvrtc");
    num_arguments("int", 4, 3);
}

#[test]
fn test_num_arguments__int_16() {
    require_gpu!();
    require_libs!("nvrtc");
    num_arguments("int", 4, 16);
}

#[test]
fn test_num_arguments__short_0() {
    require_gpu!();
    require_libs!("nvrtc");
    num_arguments("short", 2, 0);
}

#[test]
fn test_num_arguments__short_1() {
    require_gpu!();
    require_libs!("nvrtc");
    num_arguments("short", 2, 1);
}

#[test]
fn test_num_arguments__short_2() {
    require_gpu!();
    require_libs!("nvrtc");
    num_arguments("short", 2, 2);
}

#[test]
fn test_num_arguments__short_3() {
    require_gpu!();
    require_libs!("nvrtc");
    num_arguments("short", 2, 3);
}

#[test]
fn test_num_arguments__short_16() {
    require_gpu!();
    require_libs!("nvrtc");
    num_arguments("short", 2, 16);
}

fn occupancy_max_active_block_per_multiprocessor(smem_size_per_block: u32, block_size: u32) {
    let d = init_cuda();
    let (kernel, _) = get_saxpy_kernel_cubin(&d);
    let props = d.properties();
    assert!(block_size <= props.max_threads_per_block().unwrap());
    assert!(smem_size_per_block <= props.max_shared_memory_per_block().unwrap());
    let num_blocks_per_sm = kernel
        .occupancy(&d)
        .max_active_blocks_per_multiprocessor(block_size, smem_size_per_block as usize)
        .unwrap();
    assert!(num_blocks_per_sm > 0);
    let kernel_threads_per_sm = num_blocks_per_sm * block_size;
    let kernel_smem_size_per_sm = num_blocks_per_sm * smem_size_per_block;
    assert!(kernel_threads_per_sm <= props.max_threads_per_multiprocessor().unwrap());
    assert!(kernel_smem_size_per_sm <= props.max_shared_memory_per_multiprocessor().unwrap());
    let regs = kernel.attributes(&d).num_regs().unwrap() as u32;
    assert!(regs * num_blocks_per_sm <= props.max_registers_per_multiprocessor().unwrap());
}

#[test]
fn test_occupancy_max_active_block_per_multiprocessor__0_32() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_block_per_multiprocessor(0, 32);
}

#[test]
fn test_occupancy_max_active_block_per_multiprocessor__0_64() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_block_per_multiprocessor(0, 64);
}

#[test]
fn test_occupancy_max_active_block_per_multiprocessor__0_96() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_block_per_multiprocessor(0, 96);
}

#[test]
fn test_occupancy_max_active_block_per_multiprocessor__0_120() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_block_per_multiprocessor(0, 120);
}

#[test]
fn test_occupancy_max_active_block_per_multiprocessor__0_128() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_block_per_multiprocessor(0, 128);
}

#[test]
fn test_occupancy_max_active_block_per_multiprocessor__0_256() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_block_per_multiprocessor(0, 256);
}

#[test]
fn test_occupancy_max_active_block_per_multiprocessor__32_32() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_block_per_multiprocessor(32, 32);
}

#[test]
fn test_occupancy_max_active_block_per_multiprocessor__32_64() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_block_per_multiprocessor(32, 64);
}

#[test]
fn test_occupancy_max_active_block_per_multiprocessor__32_96() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_block_per_multiprocessor(32, 96);
}

#[test]
fn test_occupancy_max_active_block_per_multiprocessor__32_120() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_block_per_multiprocessor(32, 120);
}

#[test]
fn test_occupancy_max_active_block_per_multiprocessor__32_128() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_block_per_multiprocessor(32, 128);
}

#[test]
fn test_occupancy_max_active_block_per_multiprocessor__32_256() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_block_per_multiprocessor(32, 256);
}

#[test]
fn test_occupancy_max_active_block_per_multiprocessor__4096_32() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_block_per_multiprocessor(4096, 32);
}

#[test]
fn test_occupancy_max_active_block_per_multiprocessor__4096_64() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_block_per_multiprocessor(4096, 64);
}

#[test]
fn test_occupancy_max_active_block_per_multiprocessor__4096_96() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_block_per_multiprocessor(4096, 96);
}

#[test]
fn test_occupancy_max_active_block_per_multiprocessor__4096_120() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_block_per_multiprocessor(4096, 120);
}

#[test]
fn test_occupancy_max_active_block_per_multiprocessor__4096_128() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_block_per_multiprocessor(4096, 128);
}

#[test]
fn test_occupancy_max_active_block_per_multiprocessor__4096_256() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_block_per_multiprocessor(4096, 256);
}

/// Python's last step (`max_potential_block_size(Ellipsis, …)` raising
/// `TypeError`) does not compile here.
fn occupancy_max_potential_block_size_constant(smem_size_per_block: u32, block_size_limit: u32) {
    let d = init_cuda();
    let (kernel, _) = get_saxpy_kernel_cubin(&d);
    let props = d.properties();
    assert!(block_size_limit <= props.max_threads_per_block().unwrap());
    assert!(smem_size_per_block <= props.max_shared_memory_per_block().unwrap());
    let (min_grid_size, max_block_size) = kernel
        .occupancy(&d)
        .max_potential_block_size(smem_size_per_block as usize, block_size_limit)
        .unwrap();
    assert!(min_grid_size > 0);
    assert!(max_block_size > 0);
    if block_size_limit > 0 {
        assert!(max_block_size <= block_size_limit);
    } else {
        assert!(max_block_size <= props.max_threads_per_block().unwrap());
    }
}

#[test]
fn test_occupancy_max_potential_block_size_constant__0_32() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(0, 32);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__0_64() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(0, 64);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__0_96() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(0, 96);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__0_120() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(0, 120);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__0_128() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(0, 128);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__0_256() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(0, 256);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__0_0() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(0, 0);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__32_32() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(32, 32);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__32_64() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(32, 64);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__32_96() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(32, 96);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__32_120() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(32, 120);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__32_128() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(32, 128);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__32_256() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(32, 256);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__32_0() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(32, 0);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__4096_32() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(4096, 32);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__4096_64() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(4096, 64);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__4096_96() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(4096, 96);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__4096_120() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(4096, 120);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__4096_128() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(4096, 128);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__4096_256() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(4096, 256);
}

#[test]
fn test_occupancy_max_potential_block_size_constant__4096_0() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_constant(4096, 0);
}

/// `shared_memory_needed` of `test_occupancy_max_potential_block_size_b2dsize`:
/// the dynamic shared memory a block of `block_size` threads needs.
extern "C" fn shared_memory_needed(block_size: std::ffi::c_int) -> usize {
    1024 * (block_size as usize / 32)
}

/// Python's numba `cfunc` is an `extern "C" fn` here.
fn occupancy_max_potential_block_size_b2dsize(block_size_limit: u32) {
    let d = init_cuda();
    let (kernel, _) = get_saxpy_kernel_cubin(&d);
    let (min_grid_size, max_block_size) = kernel
        .occupancy(&d)
        .max_potential_block_size_with(shared_memory_needed, block_size_limit)
        .unwrap();
    let props = d.properties();
    assert!(block_size_limit <= props.max_threads_per_block().unwrap());
    assert!(min_grid_size > 0);
    assert!(max_block_size > 0);
    if block_size_limit > 0 {
        assert!(max_block_size <= block_size_limit);
    } else {
        assert!(max_block_size <= props.max_threads_per_block().unwrap());
    }
}

#[test]
fn test_occupancy_max_potential_block_size_b2dsize__32() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_b2dsize(32);
}

#[test]
fn test_occupancy_max_potential_block_size_b2dsize__64() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_b2dsize(64);
}

#[test]
fn test_occupancy_max_potential_block_size_b2dsize__96() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_b2dsize(96);
}

#[test]
fn test_occupancy_max_potential_block_size_b2dsize__120() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_b2dsize(120);
}

#[test]
fn test_occupancy_max_potential_block_size_b2dsize__128() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_b2dsize(128);
}

#[test]
fn test_occupancy_max_potential_block_size_b2dsize__277() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_b2dsize(277);
}

#[test]
fn test_occupancy_max_potential_block_size_b2dsize__0() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_potential_block_size_b2dsize(0);
}

fn occupancy_available_dynamic_shared_memory_per_block(num_blocks_per_sm: u32, block_size: u32) {
    let d = init_cuda();
    let (kernel, _) = get_saxpy_kernel_cubin(&d);
    let props = d.properties();
    assert!(block_size <= props.max_threads_per_block().unwrap());
    assert!(num_blocks_per_sm * block_size <= props.max_threads_per_multiprocessor().unwrap());
    let smem_size = kernel
        .occupancy(&d)
        .available_dynamic_shared_memory_per_block(num_blocks_per_sm, block_size)
        .unwrap();
    assert!(smem_size <= props.max_shared_memory_per_block().unwrap() as usize);
    assert!(
        num_blocks_per_sm as usize * smem_size
            <= props.max_shared_memory_per_multiprocessor().unwrap() as usize
    );
}

#[test]
fn test_occupancy_available_dynamic_shared_memory_per_block__4_32() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_available_dynamic_shared_memory_per_block(4, 32);
}

#[test]
fn test_occupancy_available_dynamic_shared_memory_per_block__2_64() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_available_dynamic_shared_memory_per_block(2, 64);
}

#[test]
fn test_occupancy_available_dynamic_shared_memory_per_block__2_96() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_available_dynamic_shared_memory_per_block(2, 96);
}

#[test]
fn test_occupancy_available_dynamic_shared_memory_per_block__3_120() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_available_dynamic_shared_memory_per_block(3, 120);
}

#[test]
fn test_occupancy_available_dynamic_shared_memory_per_block__2_128() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_available_dynamic_shared_memory_per_block(2, 128);
}

#[test]
fn test_occupancy_available_dynamic_shared_memory_per_block__1_256() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_available_dynamic_shared_memory_per_block(1, 256);
}

/// Whether the device has thread-block clusters (Python skips below 9.0).
fn has_clusters(d: &Device) -> bool {
    let cc = d.compute_capability().unwrap();
    if cc < (9, 0) {
        println!(
            "SKIPPED: device with compute capability 90 or higher is required for cluster support"
        );
        return false;
    }
    true
}

/// `LaunchConfig(grid=128, block=64, cluster=cluster)` (grid in clusters when
/// there is one). Python's keyword-only `stream` is a compile-time check here.
fn occupancy_max_active_clusters(cluster: Option<u32>) {
    let d = init_cuda();
    let (kernel, _) = get_saxpy_kernel_cubin(&d);
    if !has_clusters(&d) {
        return;
    }
    let config = match cluster {
        None => LaunchConfig::new(128, 64),
        Some(c) => LaunchConfig::with_clusters(Grid::clusters(128), c, 64).unwrap(),
    };
    let stream = d.default_stream().unwrap();
    let _max_active_clusters: u32 = kernel
        .occupancy(&d)
        .max_active_clusters(&config, &stream)
        .unwrap();
}

#[test]
fn test_occupancy_max_active_clusters__None() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_clusters(None);
}

#[test]
fn test_occupancy_max_active_clusters__2() {
    require_gpu!();
    require_libs!("nvrtc");
    occupancy_max_active_clusters(Some(2));
}

#[test]
fn test_occupancy_max_potential_cluster_size() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = init_cuda();
    let (kernel, _) = get_saxpy_kernel_cubin(&d);
    if !has_clusters(&d) {
        return;
    }
    let config = LaunchConfig::new(128, 64);
    let stream = d.default_stream().unwrap();
    let _max_potential_cluster_size: u32 = kernel
        .occupancy(&d)
        .max_potential_cluster_size(&config, &stream)
        .unwrap();
}

#[test]
fn test_kernel_from_handle() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = init_cuda();
    let (original_kernel, objcode) = get_saxpy_kernel_cubin(&d);
    let handle = original_kernel.kernel_handle().unwrap();
    // SAFETY: a live kernel of `objcode`'s library, which the new kernel keeps.
    let kernel_from_handle =
        unsafe { Kernel::from_handle(handle, Some(objcode.library().unwrap())) }.unwrap();
    let max_threads = kernel_from_handle
        .attributes(&d)
        .max_threads_per_block()
        .unwrap();
    assert!(max_threads > 0);
}

#[test]
fn test_kernel_from_handle_no_module() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = init_cuda();
    let (original_kernel, _objcode) = get_saxpy_kernel_cubin(&d);
    let handle = original_kernel.kernel_handle().unwrap();
    // SAFETY: a live kernel; `original_kernel` keeps its library loaded for
    // longer than the adopted one lives.
    let kernel_from_handle = unsafe { Kernel::from_handle(handle, None) }.unwrap();
    let max_threads = kernel_from_handle
        .attributes(&d)
        .max_threads_per_block()
        .unwrap();
    assert!(max_threads > 0);
    drop(kernel_from_handle);
    drop(original_kernel);
}

#[test]
fn test_kernel_from_handle_multiple_instances() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = init_cuda();
    let (original_kernel, objcode) = get_saxpy_kernel_cubin(&d);
    let handle = original_kernel.kernel_handle().unwrap();
    let lib = objcode.library().unwrap();
    // SAFETY: a live kernel of `lib`, which each new kernel keeps.
    let adopt = || unsafe { Kernel::from_handle(handle, Some(lib.clone())) }.unwrap();
    let (kernel1, kernel2, kernel3) = (adopt(), adopt(), adopt());
    assert_eq!(kernel1.kernel_handle(), Some(handle));
    assert_eq!(kernel2.kernel_handle(), Some(handle));
    assert_eq!(kernel3.kernel_handle(), Some(handle));
    assert_eq!(kernel1.handle(), kernel2.handle());
    assert_eq!(kernel2.handle(), kernel3.handle());
}

#[test]
fn test_kernel_from_handle_foreign_kernel() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = init_cuda();
    let module = compile(
        SAXPY_KERNEL,
        options(&d),
        CompileTarget::Cubin,
        &["saxpy<float>"],
    );
    let cubin = module.code().to_vec();
    let mangled = std::ffi::CString::new(module.symbol_mapping()["saxpy<float>"].as_str()).unwrap();
    let mut cu_lib: sys::CUlibrary = std::ptr::null_mut();
    // SAFETY: `cubin` is a complete image, alive for the call; no options.
    let rc = unsafe {
        sys::cuLibraryLoadData(
            &mut cu_lib,
            cubin.as_ptr().cast(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    };
    assert_eq!(rc, sys::CUDA_SUCCESS, "cuLibraryLoadData");
    let mut cu_kernel: sys::CUkernel = std::ptr::null_mut();
    // SAFETY: a live library and a NUL-terminated name.
    let rc = unsafe { sys::cuLibraryGetKernel(&mut cu_kernel, cu_lib, mangled.as_ptr()) };
    assert_eq!(rc, sys::CUDA_SUCCESS, "cuLibraryGetKernel");
    // SAFETY: a live kernel whose library is unloaded only after `k` is dropped.
    let k = unsafe { Kernel::from_handle(cu_kernel, None) }.unwrap();
    assert!(k.attributes(&d).max_threads_per_block().unwrap() > 0);
    drop(k);
    // SAFETY: the library loaded above; nothing uses it any more.
    let rc = unsafe { sys::cuLibraryUnload(cu_lib) };
    assert_eq!(rc, sys::CUDA_SUCCESS, "cuLibraryUnload");
}

#[test]
fn test_kernel_keeps_library_alive() {
    require_gpu!();
    require_libs!("nvrtc");
    let device = init_cuda();
    let get_kernel_only = || {
        let code = r#"
        extern "C" __global__ void write_value(int* out) {
            if (threadIdx.x == 0 && blockIdx.x == 0) {
                *out = 42;
            }
        }
        "#;
        let object_code = compile(code, options(&device), CompileTarget::Cubin, &[]);
        object_code.get_kernel("write_value").unwrap()
        // `object_code` is dropped here.
    };
    let kernel = get_kernel_only();
    assert!(!kernel.handle().is_null());
    assert_eq!(kernel.num_arguments().unwrap(), 1);

    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let mut dev_buf = device.allocate(4, &stream).unwrap();
    dev_buf.copy_from_host(&[0i32], &stream).unwrap();
    // SAFETY: the kernel writes one int through the pointer, which `dev_buf` holds.
    unsafe { launch(&stream, &LaunchConfig::new(1, 1), &kernel, &[&dev_buf]) }.unwrap();
    let mut result = [0i32];
    dev_buf.copy_to_host(&mut result, &stream).unwrap();
    stream.sync().unwrap();
    assert_eq!(result[0], 42, "Expected 42, got {}", result[0]);
}
