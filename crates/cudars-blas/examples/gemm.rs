//! A row-major SGEMM through cuBLAS, checked against the CPU: `C = A·Bᵀ` for a
//! 300×200 `A` and a 150×200 `B`, the shapes of a linear layer's forward pass.
//!
//! ```sh
//! cargo run -p cudars-blas --example gemm
//! ```

use cudars_blas::{Blas, MatMut, MatRef, Op};
use cudars_core::{Device, DeviceBuffer, StreamOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (m, n, k) = (300, 150, 200);
    let a: Vec<f32> = (0..m * k)
        .map(|i| ((i * 7) % 13) as f32 / 13.0 - 0.5)
        .collect();
    let b: Vec<f32> = (0..n * k)
        .map(|i| ((i * 5) % 11) as f32 / 11.0 - 0.5)
        .collect();

    let dev = Device::new(0)?;
    dev.set_current()?;
    let stream = dev.create_stream(StreamOptions::default())?;
    let blas = match Blas::new(&stream) {
        Ok(blas) => blas,
        // A driver older than cuBLAS's CUDA major: say which driver it needs.
        Err(e) if e.required_driver().is_some() => {
            println!("gemm: not on this driver: {}", e.report());
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let da = DeviceBuffer::from_host(&dev, &a, &stream)?;
    let db = DeviceBuffer::from_host(&dev, &b, &stream)?;
    let mut dc = DeviceBuffer::<f32>::zeroed(&dev, m * n, &stream)?;
    blas.gemm(
        1.0,
        MatRef::row_major(da.view(), m, k)?,
        Op::N,
        MatRef::row_major(db.view(), n, k)?,
        Op::T,
        0.0,
        &mut MatMut::row_major(dc.view_mut(), m, n)?,
    )?;
    let c = dc.to_vec(&stream)?;

    let mut worst = 0.0f64;
    for i in 0..m {
        for j in 0..n {
            let want: f64 = (0..k)
                .map(|l| f64::from(a[i * k + l]) * f64::from(b[j * k + l]))
                .sum();
            worst = worst.max((f64::from(c[i * n + j]) - want).abs());
        }
    }
    println!(
        "gemm: {m}×{k} · ({n}×{k})ᵀ on {}: largest error {worst:.2e}",
        dev.name()?
    );
    if worst > 1e-3 {
        return Err(format!("the GPU result differs from the CPU's by {worst}").into());
    }
    println!("gemm: correct");
    Ok(())
}
