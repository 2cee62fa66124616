//! A 2-D circular convolution by FFT, checked against the direct sum on the CPU:
//! a 256×192 image and a 5×5 kernel (zero-padded to the image's size) go through
//! real-to-complex plans, their spectra are multiplied by an NVRTC kernel, and a
//! complex-to-real plan brings the product back.
//!
//! ```sh
//! cargo run -p cudars-fft --example fft_convolution
//! ```

use std::error::Error;

use cudars_core::{
    CompileTarget, ConstPtr, Device, DeviceBuffer, LaunchConfig, MutPtr, Program, ProgramOptions,
    SourceCode, StreamOptions, TypedKernel,
};
use cudars_fft::{Complex32, Kind, Plan};

const H: usize = 256;
const W: usize = 192;
const K: usize = 5;

/// `b[i] = a[i] · b[i] · scale`, complex.
const MULTIPLY: &str = r#"
extern "C" __global__ void multiply(const float2 *a, float2 *b, float scale, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float2 x = a[i], y = b[i];
        b[i] = make_float2((x.x * y.x - x.y * y.y) * scale, (x.x * y.y + x.y * y.x) * scale);
    }
}
"#;

fn main() -> Result<(), Box<dyn Error>> {
    let image: Vec<f32> = (0..H * W)
        .map(|i| {
            let (r, c) = ((i / W) as f32, (i % W) as f32);
            (r * 0.05).sin() * (c * 0.08).cos() + ((i * 7919) % 13) as f32 / 13.0
        })
        .collect();
    // A 5×5 kernel (a blur with a sharpened centre), placed at the origin of an
    // image-sized array, wrapping around: a circular convolution.
    let mut kernel = vec![0.0f32; H * W];
    for dr in 0..K {
        for dc in 0..K {
            let weight = if dr == K / 2 && dc == K / 2 {
                2.0
            } else {
                -1.0 / 24.0
            };
            let r = (dr + H - K / 2) % H;
            let c = (dc + W - K / 2) % W;
            kernel[r * W + c] = weight;
        }
    }

    let dev = Device::new(0)?;
    dev.set_current()?;
    let s = dev.create_stream(StreamOptions::default())?;
    let code = Program::new(SourceCode::Cxx(MULTIPLY), ProgramOptions::for_device(&dev)?)?
        .compile(CompileTarget::Cubin, &[])?;
    let multiply = TypedKernel::<(ConstPtr<Complex32>, MutPtr<Complex32>, f32, u32)>::new(
        code.get_kernel("multiply")?,
    )?;

    let spectrum = H * (W / 2 + 1);
    let forward = match Plan::<f32>::new(&[H, W], 1, Kind::R2C, &s) {
        Ok(plan) => plan,
        // A driver older than cuFFT's CUDA major: say which driver it needs.
        Err(e) if e.required_driver().is_some() => {
            println!("fft_convolution: not on this driver: {}", e.report());
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let inverse = Plan::<f32>::new(&[H, W], 1, Kind::C2R, &s)?;
    let d_image = DeviceBuffer::from_host(&dev, &image, &s)?;
    let d_kernel = DeviceBuffer::from_host(&dev, &kernel, &s)?;
    let mut f_image = DeviceBuffer::<Complex32>::allocate(&dev, spectrum, &s)?;
    let mut f_kernel = DeviceBuffer::<Complex32>::allocate(&dev, spectrum, &s)?;
    forward.r2c(d_image.view(), f_image.view_mut())?;
    forward.r2c(d_kernel.view(), f_kernel.view_mut())?;
    let n = spectrum as u32;
    // SAFETY: `multiply` reads a[0..n] and writes b[0..n]; both views hold
    // `spectrum` complex numbers.
    unsafe {
        multiply.launch(
            &s,
            &LaunchConfig::for_elements(u64::from(n), 256),
            (f_kernel.view(), f_image.view_mut(), 1.0 / (H * W) as f32, n),
        )
    }?;
    let mut d_out = DeviceBuffer::<f32>::allocate(&dev, H * W, &s)?;
    inverse.c2r(f_image.view_mut(), d_out.view_mut())?;
    let got = d_out.to_vec(&s)?;

    let mut worst = 0.0f64;
    for r in 0..H {
        for c in 0..W {
            let mut want = 0.0f64;
            for dr in 0..K {
                for dc in 0..K {
                    let (kr, kc) = ((dr + H - K / 2) % H, (dc + W - K / 2) % W);
                    let (ir, ic) = ((r + H - kr) % H, (c + W - kc) % W);
                    want += f64::from(kernel[kr * W + kc]) * f64::from(image[ir * W + ic]);
                }
            }
            worst = worst.max((f64::from(got[r * W + c]) - want).abs());
        }
    }
    println!(
        "fft_convolution: {H}×{W} image ∗ {K}×{K} kernel on {}: largest error {worst:.2e}",
        dev.name()?
    );
    if worst > 1e-4 {
        return Err(format!("the FFT convolution differs from the direct sum by {worst}").into());
    }
    println!("fft_convolution: correct");
    Ok(())
}
