//! A templated kernel compiled with NVRTC name expressions: `add<float>` and
//! `add<int>` are instantiated, the compiler reports the mangled name of each, and
//! both are looked up by their source names, launched and checked. A name that was
//! not given to the compiler is not instantiated, and looking it up fails.
//!
//! `cargo run -p cudars-core --example templates_and_names`

use std::process::ExitCode;

use cudars_core::{
    CompileTarget, ConstPtr, Device, DeviceBuffer, LaunchConfig, MutPtr, Program, ProgramOptions,
    SourceCode, StreamOptions, TypedKernel,
};

const ADD: &str = r#"
template <typename T>
__global__ void add(const T *a, const T *b, T *out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
"#;

/// The source names to instantiate and look up.
const NAMES: [&str; 2] = ["add<float>", "add<int>"];

mod common;
use common::{Result, wrong};

fn run() -> Result<()> {
    let dev = Device::new(0)?;
    dev.set_current()?;
    let arch = dev.arch()?;
    println!("device 0: {} ({arch})", dev.name()?);

    let options = ProgramOptions {
        name: Some("add.cu".into()),
        arch: Some(arch),
        std: Some("c++17".into()),
        ..Default::default()
    };
    let code =
        Program::new(SourceCode::Cxx(ADD), options)?.compile(CompileTarget::Cubin, &NAMES)?;
    println!(
        "compiled {} to a {}-byte {}; name expressions:",
        code.name(),
        code.code().len(),
        code.code_type()
    );
    for (source, mangled) in code.symbol_mapping() {
        println!("  {source:<12} -> {mangled}");
    }
    for name in NAMES {
        if !code.symbol_mapping().contains_key(name) {
            return Err(wrong(
                "reading the name expressions",
                format!("NVRTC reported no mangled name for {name}"),
            ));
        }
    }

    let stream = dev.create_stream(StreamOptions::default())?;
    let n: u32 = 4096;
    let config = LaunchConfig::for_elements(n.into(), 256);
    let len = n as usize;

    // add<float>, looked up by its source name and typed with its instantiation's
    // parameters (checked once, here).
    let add_f32 = TypedKernel::<(ConstPtr<f32>, ConstPtr<f32>, MutPtr<f32>, u32)>::new(
        code.get_kernel("add<float>")?,
    )?;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| 1000.0 - i as f32).collect();
    let (da, db) = (
        DeviceBuffer::from_host(&dev, &a, &stream)?,
        DeviceBuffer::from_host(&dev, &b, &stream)?,
    );
    let mut dout = DeviceBuffer::<f32>::allocate(&dev, len, &stream)?;
    // SAFETY: add reads a[0..n] and b[0..n] and writes out[0..n]; each holds n.
    unsafe { add_f32.launch(&stream, &config, (da.view(), db.view(), dout.view_mut(), n)) }?;
    let out = dout.to_vec(&stream)?;
    if let Some(i) = (0..len).find(|&i| out[i] != a[i] + b[i]) {
        return Err(wrong(
            "checking add<float>",
            format!("element {i} is {}, not {}", out[i], a[i] + b[i]),
        ));
    }
    println!(
        "add<float> ({}) on {n} elements is correct",
        code.lowered_name("add<float>")
    );

    // add<int>: another instantiation, another signature, arrays of i32.
    let add_i32 = TypedKernel::<(ConstPtr<i32>, ConstPtr<i32>, MutPtr<i32>, u32)>::new(
        code.get_kernel("add<int>")?,
    )?;
    let a: Vec<i32> = (0..n as i32).map(|i| i * 3 - 7000).collect();
    let b: Vec<i32> = (0..n as i32).map(|i| 1 << (i % 20)).collect();
    let (da, db) = (
        DeviceBuffer::from_host(&dev, &a, &stream)?,
        DeviceBuffer::from_host(&dev, &b, &stream)?,
    );
    let mut dout = DeviceBuffer::<i32>::allocate(&dev, len, &stream)?;
    // SAFETY: as for add<float>.
    unsafe { add_i32.launch(&stream, &config, (da.view(), db.view(), dout.view_mut(), n)) }?;
    let out = dout.to_vec(&stream)?;
    if let Some(i) = (0..len).find(|&i| out[i] != a[i] + b[i]) {
        return Err(wrong(
            "checking add<int>",
            format!("element {i} is {}, not {}", out[i], a[i] + b[i]),
        ));
    }
    println!(
        "add<int>   ({}) on {n} elements is correct",
        code.lowered_name("add<int>")
    );

    // The mangled name works as well as the source name.
    let by_mangled = code.get_kernel(code.lowered_name("add<int>"))?;
    println!(
        "looked up by its mangled name, add<int> takes {} arguments",
        by_mangled.num_arguments()?
    );

    // add<double> was never named, so never instantiated.
    match code.get_kernel("add<double>") {
        Ok(_) => {
            return Err(wrong(
                "looking up add<double>",
                "found a kernel that was never instantiated".into(),
            ));
        }
        Err(e) => println!(
            "add<double> is not in the cubin, as expected: {}",
            cudars_core::Report::new(&e)
        ),
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("templates_and_names: {}", cudars_core::Report::new(&e));
            ExitCode::FAILURE
        }
    }
}
