//! A dense linear solve `A·x = b` by LU with partial pivoting, as NVIDIA's
//! cuSOLVER `getrf` sample does it: factorise `A` (`getrf`), solve with the
//! factors (`getrs`), and check the solution on the CPU. Then the same matrix made
//! singular (a zero row), where cuSOLVER's `info` says so and the call returns the typed error
//! instead of factors full of infinities.
//!
//! ```sh
//! cargo run -p cudars-solver --example linear_solve
//! ```

use std::error::Error;

use cudars_core::{Device, DeviceBuffer, StreamOptions};
use cudars_solver::{MatMut, Op, Solver, SolverErrorKind};

fn main() -> Result<(), Box<dyn Error>> {
    let dev = Device::new(0)?;
    let stream = dev.create_stream(StreamOptions::default())?;
    let solver = Solver::new(&stream)?;

    // A = | 1 2  3 |   b = | 1 |
    //     | 4 5  6 |       | 2 |
    //     | 7 8 10 |       | 3 |
    // stored column by column, as cuSOLVER (LAPACK) expects.
    let n = 3;
    let a_host = [1.0f64, 4.0, 7.0, 2.0, 5.0, 8.0, 3.0, 6.0, 10.0];
    let b_host = [1.0f64, 2.0, 3.0];

    let mut a = DeviceBuffer::from_host(&dev, &a_host, &stream)?;
    let mut b = DeviceBuffer::from_host(&dev, &b_host, &stream)?;
    let mut ipiv = DeviceBuffer::<i32>::zeroed(&dev, n, &stream)?;

    let mut lu = MatMut::col_major(a.view_mut(), n, n)?;
    solver.getrf(&mut lu, ipiv.view_mut())?;
    let mut rhs = MatMut::col_major(b.view_mut(), n, 1)?;
    solver.getrs(Op::N, lu.as_ref(), ipiv.view(), &mut rhs)?;

    let x = b.to_vec(&stream)?;
    println!("pivots: {:?}", ipiv.to_vec(&stream)?);
    println!("x = {x:?}");
    // The residual A·x - b, on the CPU.
    let mut worst = 0.0f64;
    for i in 0..n {
        let ax: f64 = (0..n).map(|j| a_host[i + j * n] * x[j]).sum();
        worst = worst.max((ax - b_host[i]).abs());
    }
    println!("largest residual |A·x - b|: {worst:e}");
    if worst > 1e-12 {
        return Err(format!("the residual {worst:e} is too large").into());
    }

    // A singular A: its last row zeroed, so U's last pivot is exactly zero.
    let singular = [1.0f64, 4.0, 0.0, 2.0, 5.0, 0.0, 3.0, 6.0, 0.0];
    let mut a = DeviceBuffer::from_host(&dev, &singular, &stream)?;
    let mut lu = MatMut::col_major(a.view_mut(), n, n)?;
    match solver.getrf(&mut lu, ipiv.view_mut()) {
        Err(cudars_solver::Error::Extra(e))
            if e.kind == (SolverErrorKind::Singular { pivot: 2 }) =>
        {
            println!("as expected: {e}");
        }
        Err(e) => return Err(e.into()),
        Ok(()) => return Err("a singular matrix was factorised without an error".into()),
    }
    Ok(())
}
