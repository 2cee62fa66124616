//! Typed kernels generated from a `.cu` file: `cudars_core::kernels!` reads the
//! `extern "C" __global__` signatures of `examples/kernels/generated_kernels.cu`
//! at build time and writes one typed launch function per kernel; at run time
//! NVRTC compiles the embedded source for the GPU, through the on-disk program
//! cache (a second run compiles nothing), and each kernel is checked against its
//! parameters as it is loaded.
//!
//! `cargo run -p cudars-core --example generated_kernels` (with NVIDIA's wheels:
//! `VIRTUAL_ENV=target/cuda-venv`). Without a GPU it compiles the source and says
//! what is missing.

use std::process::ExitCode;
use std::time::Instant;

use cudars_core::cache::{FileProgramCache, InMemoryProgramCache, ProgramCache};
use cudars_core::{Device, DeviceBuffer, LaunchConfig, ProgramOptions, StreamOptions};

mod common;
use common::{Result, wrong};

/// The C `struct Affine` (`#[repr(C)]`, the same fields in the same order).
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Affine {
    scale: f32,
    shift: f32,
    n: u32,
}

cudars_core::kernels! {
    /// The example's kernels: `scale_shift(&stream, &config, &Affine, x, y)` and
    /// `histogram(&stream, &config, data, bins, n)`.
    struct Kernels = "examples/kernels/generated_kernels.cu";
    type Affine = Affine;
}

fn run() -> Result<()> {
    // The user's cache directory; this process's memory where there is none.
    let cache: Box<dyn ProgramCache> = match FileProgramCache::open_default() {
        Ok(c) => {
            println!("program cache: {}", c.dir().display());
            Box::new(c)
        }
        Err(e) => {
            println!(
                "program cache: in memory ({})",
                cudars_core::Report::new(&e)
            );
            Box::new(InMemoryProgramCache::new())
        }
    };
    let dev = match Device::new(0) {
        Ok(d) => d,
        Err(e) => {
            // No GPU: compile anyway (PTX for a virtual architecture), then explain.
            let options = ProgramOptions {
                arch: Some("compute_90".into()),
                ..Default::default()
            };
            let ptx = Kernels::compile(options, Some(cache.as_ref()))?;
            println!(
                "compiled {} ({}) to {} bytes of PTX",
                Kernels::PROGRAM_NAME,
                Kernels::KERNELS.join(", "),
                ptx.code().len()
            );
            eprintln!("generated_kernels: cannot launch without a usable GPU and NVIDIA driver:");
            return Err(e.into());
        }
    };
    dev.set_current()?;
    let stream = dev.create_stream(StreamOptions::default())?;

    let t = Instant::now();
    let k = Kernels::load_cached(&dev, cache.as_ref())?;
    println!(
        "loaded {} for {} in {:.1} ms",
        Kernels::KERNELS.join(", "),
        dev.arch()?,
        t.elapsed().as_secs_f64() * 1e3
    );

    // y = 3x + 1 on the second half of the arrays only.
    let n = 1 << 20;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let dx = DeviceBuffer::from_host(&dev, &x, &stream)?;
    let mut dy = DeviceBuffer::<f32>::zeroed(&dev, n, &stream)?;
    let half = n / 2;
    let p = Affine {
        scale: 3.0,
        shift: 1.0,
        n: half as u32,
    };
    // SAFETY: scale_shift touches x[0..p.n] and y[0..p.n]; both views hold n/2.
    unsafe {
        k.scale_shift(
            &stream,
            &LaunchConfig::for_elements(half as u64, 256),
            &p,
            dx.slice(half..)?,
            dy.slice_mut(half..)?,
        )?
    };
    let y = dy.to_vec(&stream)?;
    for (i, v) in y.iter().enumerate() {
        let want = if i < half { 0.0 } else { 3.0 * x[i] + 1.0 };
        if *v != want {
            return Err(wrong(
                "scale_shift",
                format!("y[{i}] = {v}, expected {want}"),
            ));
        }
    }

    // A histogram of bytes, with a grid smaller than the data (grid-stride loop).
    let data: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
    let ddata = DeviceBuffer::from_host(&dev, &data, &stream)?;
    let mut bins = DeviceBuffer::<u32>::zeroed(&dev, 256, &stream)?;
    // SAFETY: histogram reads data[0..n] (the view holds n) and writes bins[v]
    // for byte values v < 256 (the view holds 256).
    unsafe {
        k.histogram(
            &stream,
            &LaunchConfig::new(64, 256),
            ddata.view(),
            bins.view_mut(),
            n,
        )?
    };
    let mut want = [0u32; 256];
    for &b in &data {
        want[b as usize] += 1;
    }
    let got = bins.to_vec(&stream)?;
    if got != want {
        return Err(wrong(
            "histogram",
            "the device's bins differ from the host's".into(),
        ));
    }
    println!("scale_shift and histogram on {n} elements: correct");
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("generated_kernels: {}", cudars_core::Report::new(&e));
            ExitCode::FAILURE
        }
    }
}
