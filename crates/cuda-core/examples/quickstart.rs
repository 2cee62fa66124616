//! Compile SAXPY with NVRTC, launch it, check the result, print timings: the safe
//! API end to end. Without a GPU it still compiles the kernel and says what is
//! missing, in the pathfinder's words.
//!
//! `cargo xtask quickstart` (NVIDIA's wheels in a venv) or
//! `cargo run -p cuda-core --example quickstart`.

use std::process::ExitCode;
use std::time::Instant;

use cuda_core::{
    CompileTarget, Device, LaunchConfig, Program, ProgramOptions, Result, SourceCode,
    StreamOptions, launch,
};

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

fn run() -> Result<()> {
    let t0 = Instant::now();
    let (major, minor) = cuda_core::nvrtc_version()?;
    println!("NVRTC {major}.{minor}");
    let dev = match Device::new(0) {
        Ok(d) => d,
        Err(e) => {
            // No GPU: compile anyway, then explain.
            let options = ProgramOptions {
                arch: Some("compute_90".into()),
                ..Default::default()
            };
            let ptx =
                Program::new(SourceCode::Cxx(SAXPY), options)?.compile(CompileTarget::Ptx, &[])?;
            println!(
                "compiled saxpy to {} bytes of PTX in {:.1} ms",
                ptx.code().len(),
                t0.elapsed().as_secs_f64() * 1e3
            );
            eprintln!(
                "quickstart: cannot launch without a usable GPU and NVIDIA driver \
                 (`cargo run -p cuda-pathfinder -- doctor` shows what is found where):"
            );
            return Err(e);
        }
    };
    dev.set_current()?;
    println!("device 0: {} ({})", dev.name()?, dev.arch()?);

    let t = Instant::now();
    let options = ProgramOptions {
        arch: Some(dev.arch()?),
        ..Default::default()
    };
    let code = Program::new(SourceCode::Cxx(SAXPY), options)?.compile(CompileTarget::Cubin, &[])?;
    let kernel = code.get_kernel("saxpy")?;
    let compile_ms = t.elapsed().as_secs_f64() * 1e3;

    let t = Instant::now();
    let stream = dev.create_stream(StreamOptions::default())?;
    let n: u64 = 1 << 20;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut dx = dev.allocate(x.len() * 4, &stream)?;
    let mut dy = dev.allocate(x.len() * 4, &stream)?;
    dx.copy_from_host(&x, &stream)?;
    dy.copy_from_host(&vec![1.0f32; x.len()], &stream)?;
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::for_elements(n, 256),
            &kernel,
            &[&2.0f32, &dx, &dy, &n],
        )
    }?;
    let mut y = vec![0f32; x.len()];
    dy.copy_to_host(&mut y, &stream)?;
    let run_ms = t.elapsed().as_secs_f64() * 1e3;

    if let Some(i) = (0..y.len()).find(|&i| y[i] != 2.0 * i as f32 + 1.0) {
        return Err(cuda_core::Error::Unsupported {
            context: "checking saxpy".into(),
            message: format!("wrong at {i}: {} != {}", y[i], 2.0 * i as f32 + 1.0),
            requires: None,
        });
    }
    println!(
        "saxpy on 2^20 elements is correct: compile+load {compile_ms:.1} ms, \
         copy+launch+copy {run_ms:.2} ms, first result {:.0} ms after start",
        t0.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("quickstart: {e}");
            ExitCode::FAILURE
        }
    }
}
