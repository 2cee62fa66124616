//! Module-scope variables of loaded code: a `__device__` array and a `__managed__`
//! counter, reached through a `Library` (`ObjectCode::to_library`). The host writes
//! both with `Global::write`, two kernels update them, the host reads them back with
//! `Global::read` (and the managed one also directly), and the library lists its
//! kernels: the `extern "C"` one by its plain name, the C++ one mangled.
//!
//! `cargo run -p cudars-core --example library_globals`

use std::process::ExitCode;

use cudars_core::{
    CompileTarget, Device, DeviceBuffer, LaunchConfig, LibraryOptions, MutPtr, Program,
    ProgramOptions, SourceCode, StreamOptions, TypedKernel,
};

const SRC: &str = r#"
__device__ float table[8];
__managed__ unsigned int launches;

extern "C" __global__ void scale_table(float by) {
    table[threadIdx.x] *= by;
    if (threadIdx.x == 0) atomicAdd(&launches, 1u);
}

__global__ void sum_table(float *out) {
    float s = 0.0f;
    for (int i = 0; i < 8; ++i) s += table[i];
    *out = s;
    atomicAdd(&launches, 1u);
}
"#;

mod common;
use common::{Result, wrong};

fn run() -> Result<()> {
    let dev = Device::new(0)?;
    dev.set_current()?;
    println!("device 0: {} ({})", dev.name()?, dev.arch()?);
    let stream = dev.create_stream(StreamOptions::default())?;

    let options = ProgramOptions {
        name: Some("globals.cu".into()),
        arch: Some(dev.arch()?),
        ..Default::default()
    };
    // `sum_table` is not `extern "C"`: name it so that its mangled name is recorded.
    let code = Program::new(SourceCode::Cxx(SRC), options)?
        .compile(CompileTarget::Cubin, &["sum_table"])?;
    let lib = code.to_library(&LibraryOptions::default())?;

    let kernels = lib.kernels()?;
    println!("the library holds {} kernel(s):", kernels.len());
    for k in &kernels {
        println!("  {} ({} parameter(s))", k.name(), k.num_arguments()?);
    }
    if kernels.len() != 2 {
        return Err(wrong(
            "listing the library's kernels",
            format!("{} kernels, not 2", kernels.len()),
        ));
    }

    let table = lib.get_global(&dev.context()?, "table")?;
    let launches = lib.get_managed("launches")?;
    println!(
        "__device__ table: {} bytes at {:#x}; __managed__ launches: {} bytes at {:#x}",
        table.size(),
        table.ptr(),
        launches.size(),
        launches.ptr()
    );

    let initial: [f32; 8] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
    table.write(&initial, &stream)?;
    launches.write(&[40u32], &stream)?;
    // A write of the wrong size is refused before the driver is called.
    if table.write(&[0f32; 4], &stream).is_ok() {
        return Err(wrong(
            "writing 16 bytes into a 32-byte global",
            "the write was accepted".into(),
        ));
    }

    // The kernels' parameter lists, checked once against the library's kernels.
    let scale = TypedKernel::<(f32,)>::new(lib.get_kernel("scale_table")?)?;
    let sum = TypedKernel::<(MutPtr<f32>,)>::new(lib.get_kernel("sum_table")?)?;
    let mut out = DeviceBuffer::<f32>::zeroed(&dev, 1, &stream)?;
    // SAFETY: scale_table touches table[0..8] with 8 threads: its own global.
    unsafe { scale.launch(&stream, &LaunchConfig::new(1, 8), (3.0,)) }?;
    // SAFETY: sum_table writes out[0], which `out` holds.
    unsafe { sum.launch(&stream, &LaunchConfig::new(1, 1), (out.view_mut(),)) }?;

    let mut now = [0f32; 8];
    table.read(&mut now, &stream)?;
    let expect: Vec<f32> = initial.iter().map(|v| v * 3.0).collect();
    if now[..] != expect[..] {
        return Err(wrong(
            "reading the table back",
            format!("{now:?}, not {expect:?}"),
        ));
    }
    let total = out.to_vec(&stream)?;
    if total[0] != 108.0 {
        return Err(wrong(
            "checking sum_table",
            format!("the sum is {}, not 108", total[0]),
        ));
    }
    let mut count = [0u32];
    launches.read(&mut count, &stream)?;
    stream.sync()?;
    // SAFETY: a managed `unsigned int` (the driver reported its 4 bytes), so the
    // address is valid on the host; the stream is synchronised and no other work
    // is running, so nothing writes it while it is read.
    let direct = unsafe { std::ptr::read_volatile(launches.ptr() as usize as *const u32) };
    if count[0] != 42 || direct != 42 {
        return Err(wrong(
            "reading the managed counter",
            format!(
                "Global::read gives {}, the host pointer {direct}; expected 42",
                count[0]
            ),
        ));
    }
    println!("table after scale_table(3): {now:?}");
    println!("sum_table: {}", total[0]);
    println!(
        "launches: 40 written + 2 kernels = {} (read directly: {direct})",
        count[0]
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("library_globals: {}", cudars_core::Report::new(&e));
            ExitCode::FAILURE
        }
    }
}
