//! The typed quickstart (SAXPY compiled with NVRTC, launched through a typed
//! handle) instrumented for Nsight Systems: `tracing` spans become NVTX ranges
//! through [`NvtxLayer`], a few ranges and marks are made by hand, and the device,
//! context, stream and event carry names on the timeline.
//!
//! ```sh
//! nsys profile -t cuda,nvtx cargo run --release -p cudars-nvtx --example profiled_quickstart
//! ```
//!
//! Without a profiler it runs as the quickstart does, and every NVTX call is a
//! no-op. Under the recording tool of the tests (`tests/nvtx-inject`), each call
//! is written to a file:
//!
//! ```sh
//! cargo build -p cudars-nvtx-inject && \
//! NVTX_INJECTION64_PATH=target/debug/libcudars_nvtx_inject.so CUDARS_NVTX_INJECT_LOG=nvtx.log \
//!   cargo run -p cudars-nvtx --example profiled_quickstart && cat nvtx.log
//! ```

use std::process::ExitCode;

use cudars_core::{
    CompileTarget, ConstPtr, Device, DeviceBuffer, EventOptions, LaunchConfig, MutPtr, Program,
    ProgramOptions, SourceCode, StreamOptions, TypedKernel,
};
use cudars_nvtx::{Attributes, Color, Domain, NvtxLayer, TimelineName as _};
use tracing_subscriber::layer::SubscriberExt as _;

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

type Error = Box<dyn std::error::Error>;

fn run() -> Result<(), Error> {
    // Every `tracing` span of the program is an NVTX range in the `cuda-rs` domain.
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(NvtxLayer::new()))?;
    cudars_nvtx::name_current_thread("main");
    println!("NVTX tool attached: {}", cudars_nvtx::tool_attached());
    // Ranges of this program's own, in a domain of its own.
    let app = Domain::new("profiled_quickstart");

    let dev = Device::new(0)?;
    dev.set_current()?;
    dev.name_on_timeline("saxpy GPU");
    dev.context()?.name_on_timeline("saxpy context");

    let saxpy = {
        let _s = tracing::info_span!("compile", arch = %dev.arch()?).entered();
        let options = ProgramOptions::for_device(&dev)?;
        let code =
            Program::new(SourceCode::Cxx(SAXPY), options)?.compile(CompileTarget::Cubin, &[])?;
        TypedKernel::<(f32, ConstPtr<f32>, MutPtr<f32>, u64)>::new(code.get_kernel("saxpy")?)?
    };

    let stream = dev.create_stream(StreamOptions::default())?;
    stream.name_on_timeline("saxpy stream");
    let done = dev.create_event(EventOptions::default())?;
    done.name_on_timeline("saxpy done");

    let n: u64 = 1 << 20;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let (dx, mut dy) = {
        let _r = app.range(Attributes::new("upload").color(Color::BLUE).payload(n));
        let dx = DeviceBuffer::from_host(&dev, &x, &stream)?;
        let mut dy = DeviceBuffer::<f32>::allocate(&dev, x.len(), &stream)?;
        dy.fill(1.0, &stream)?;
        (dx, dy)
    };
    for i in 0..3u32 {
        let _s = tracing::info_span!("iteration", i).entered();
        // SAFETY: saxpy reads x[0..n] and writes y[0..n]; both views hold n floats.
        // (The views' borrows keep `dy` from being read or freed meanwhile.)
        unsafe {
            saxpy.launch(
                &stream,
                &LaunchConfig::for_elements(n, 256),
                (2.0, dx.view(), dy.view_mut(), n),
            )
        }?;
    }
    done.record(&stream)?;
    let y = {
        let _r = app.range(Attributes::new("download").color(Color::GREEN));
        dy.to_vec(&stream)?
    };
    // y = 1 + 3 * 2 * x after three launches.
    if let Some(i) = (0..y.len()).find(|&i| y[i] != 1.0 + 6.0 * i as f32) {
        tracing::error!(index = i, got = y[i], "wrong result");
        return Err(format!("saxpy is wrong at element {i}: {}", y[i]).into());
    }
    app.mark(Attributes::new("verified").color(Color::RED));
    tracing::info!(elements = n, "saxpy verified");
    println!("saxpy on 2^20 elements, three times: correct");
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            match e.downcast_ref::<cudars_core::Error>() {
                Some(e) => eprintln!("profiled_quickstart: {}", e.report()),
                None => eprintln!("profiled_quickstart: {e}"),
            }
            ExitCode::FAILURE
        }
    }
}
