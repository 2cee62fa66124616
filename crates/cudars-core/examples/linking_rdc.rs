//! Separate compilation with link-time optimisation: two CUDA C++ sources with
//! relocatable device code, one calling a `__device__` function and reading a
//! `__device__` variable the other defines, each compiled by NVRTC to LTO-IR, then
//! linked and optimised together into one cubin by nvJitLink (or by the driver's
//! linker when nvJitLink is not installed). The linked kernel is launched and
//! checked.
//!
//! `cargo run -p cudars-core --example linking_rdc`

use std::process::ExitCode;

use cudars_core::{
    CompileTarget, ConstPtr, Device, DeviceBuffer, LaunchConfig, Linker, LinkerOptions, MutPtr,
    ObjectCode, Program, ProgramOptions, SourceCode, StreamOptions, TypedKernel,
};

/// The kernel: calls `poly` and reads `offset`, both defined in the other file.
const APPLY: &str = r#"
extern __device__ float poly(float x);
extern __device__ float offset;

extern "C" __global__ void apply(const float *x, float *y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = poly(x[i]) + offset;
}
"#;

/// The library: `poly(x) = 2x² + 1` and `offset = 10`.
const POLY: &str = r#"
__device__ float offset = 10.0f;

__device__ float poly(float x) {
    return 2.0f * x * x + 1.0f;
}
"#;

mod common;
use common::{Result, wrong};

/// Compiles one relocatable source to LTO-IR.
fn to_ltoir(name: &str, src: &str, arch: &str) -> Result<ObjectCode> {
    let options = ProgramOptions {
        name: Some(name.into()),
        arch: Some(arch.into()),
        relocatable_device_code: true,
        link_time_optimization: true,
        ..Default::default()
    };
    let code = Program::new(SourceCode::Cxx(src), options)?.compile(CompileTarget::Ltoir, &[])?;
    println!(
        "  {name}: {} bytes of {}",
        code.code().len(),
        code.code_type()
    );
    Ok(code)
}

fn run() -> Result<()> {
    let dev = Device::new(0)?;
    dev.set_current()?;
    let arch = dev.arch()?;
    println!("device 0: {} ({arch})", dev.name()?);

    println!("NVRTC, relocatable device code, LTO-IR:");
    let apply = to_ltoir("apply.cu", APPLY, &arch)?;
    let poly = to_ltoir("poly.cu", POLY, &arch)?;

    let options = LinkerOptions {
        name: Some("apply+poly".into()),
        link_time_optimization: true,
        verbose: true,
        ..LinkerOptions::new(arch.clone())
    };
    let linker = Linker::new(&[&apply, &poly], options)?;
    let linked = linker.link()?;
    println!(
        "linked by {} into a {}-byte {} `{}`",
        linker.backend(),
        linked.code().len(),
        linked.code_type(),
        linked.name()
    );
    let info = linker.info_log();
    if info.trim().is_empty() {
        println!("info log: (empty)");
    } else {
        println!("info log:");
        for line in info.lines() {
            println!("  {line}");
        }
    }

    // The parameter list, checked once against the linked kernel.
    let apply = TypedKernel::<(ConstPtr<f32>, MutPtr<f32>, u32)>::new(linked.get_kernel("apply")?)?;
    let stream = dev.create_stream(StreamOptions::default())?;
    // Small integers keep 2x² + 1 + 10 exact in f32, with or without FMA.
    let n: u32 = 1024;
    let x: Vec<f32> = (0..n).map(|i| i as f32 - 512.0).collect();
    let dx = DeviceBuffer::from_host(&dev, &x, &stream)?;
    let mut dy = DeviceBuffer::<f32>::allocate(&dev, x.len(), &stream)?;
    // SAFETY: apply reads x[0..n] and writes y[0..n]; both views hold n floats.
    unsafe {
        apply.launch(
            &stream,
            &LaunchConfig::for_elements(n.into(), 256),
            (dx.view(), dy.view_mut(), n),
        )
    }?;
    let y = dy.to_vec(&stream)?;
    let expect = |v: f32| 2.0 * v * v + 1.0 + 10.0;
    if let Some(i) = (0..y.len()).find(|&i| y[i] != expect(x[i])) {
        return Err(wrong(
            "checking the linked kernel",
            format!("y[{i}] is {}, not {}", y[i], expect(x[i])),
        ));
    }
    println!(
        "apply (from apply.cu, calling poly.cu) on {n} elements is correct: \
         y[0] = {}, y[{}] = {}",
        y[0],
        n - 1,
        y[y.len() - 1]
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("linking_rdc: {}", cudars_core::Report::new(&e));
            ExitCode::FAILURE
        }
    }
}
