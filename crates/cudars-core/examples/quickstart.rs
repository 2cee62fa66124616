//! Compile SAXPY with NVRTC, launch it through a typed handle on typed device
//! arrays, check the result, print timings: the safe API end to end. Without a GPU it still compiles the kernel and says what is
//! missing, in the pathfinder's words.
//!
//! `cargo xtask quickstart` (NVIDIA's wheels in a venv) or
//! `cargo run -p cudars-core --example quickstart`.

use std::process::ExitCode;
use std::time::Instant;

use cudars_core::{
    CompileTarget, ConstPtr, Device, DeviceBuffer, LaunchConfig, MutPtr, Program, ProgramOptions,
    SourceCode, StreamOptions, TypedKernel,
};

/// The errors of this program: CUDA's, or a wrong result.
///
/// A failed CUDA call is a [`cudars_core::Error`] (it says what was being done and
/// what CUDA answered). A wrong answer is not a CUDA error: it is this program's
/// finding, so it gets a variant of the program's own error type instead of
/// borrowing one of `cudars_core::Error`'s. `#[from]` lets `?` convert CUDA's
/// errors; `main` can tell the two apart. (`Box<dyn std::error::Error>` works as
/// well where nobody matches on the error.)
#[derive(Debug, thiserror::Error)]
enum QuickstartError {
    /// A CUDA call failed.
    #[error(transparent)]
    Cuda(#[from] cudars_core::Error),
    /// saxpy computed a wrong element.
    #[error("saxpy is wrong at element {index}: {got} != {expected}")]
    WrongResult {
        index: usize,
        got: f32,
        expected: f32,
    },
}

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

fn run() -> Result<(), QuickstartError> {
    let t0 = Instant::now();
    println!("NVRTC {}", cudars_core::nvrtc::version()?);
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
                 (`cargo run -p cudars-pathfinder -- doctor` shows what is found where):"
            );
            return Err(e.into());
        }
    };
    dev.set_current()?;
    println!("device 0: {} ({})", dev.name()?, dev.arch()?);

    let t = Instant::now();
    // Compile for this GPU (an unset `arch` would be the current device's too,
    // as in Python; `for_device` names the device).
    let options = ProgramOptions::for_device(&dev)?;
    let code = Program::new(SourceCode::Cxx(SAXPY), options)?.compile(CompileTarget::Cubin, &[])?;
    // The kernel's parameter list as a type, checked once against the kernel.
    let saxpy =
        TypedKernel::<(f32, ConstPtr<f32>, MutPtr<f32>, u64)>::new(code.get_kernel("saxpy")?)?;
    let compile_ms = t.elapsed().as_secs_f64() * 1e3;

    let t = Instant::now();
    let stream = dev.create_stream(StreamOptions::default())?;
    let n: u64 = 1 << 20;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let dx = DeviceBuffer::from_host(&dev, &x, &stream)?;
    let mut dy = DeviceBuffer::<f32>::allocate(&dev, x.len(), &stream)?;
    dy.fill(1.0, &stream)?;
    // SAFETY: saxpy reads x[0..n] and writes y[0..n]; both views hold n floats.
    // (The views' borrows keep `dy` from being read or freed meanwhile.)
    unsafe {
        saxpy.launch(
            &stream,
            &LaunchConfig::for_elements(n, 256),
            (2.0, dx.view(), dy.view_mut(), n),
        )
    }?;
    let y = dy.to_vec(&stream)?;
    let run_ms = t.elapsed().as_secs_f64() * 1e3;

    if let Some(i) = (0..y.len()).find(|&i| y[i] != 2.0 * i as f32 + 1.0) {
        return Err(QuickstartError::WrongResult {
            index: i,
            got: y[i],
            expected: 2.0 * i as f32 + 1.0,
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
        Err(QuickstartError::Cuda(e)) => {
            eprintln!("quickstart: {}", e.report());
            ExitCode::FAILURE
        }
        // Not CUDA's failure: the program ran and computed the wrong answer.
        Err(e @ QuickstartError::WrongResult { .. }) => {
            eprintln!("quickstart: {e}");
            ExitCode::from(2)
        }
    }
}
