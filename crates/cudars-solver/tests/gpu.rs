//! cuSOLVER on the GPU, against CPU references: LU and Cholesky solves of
//! well-conditioned random systems (`f32` and `f64`, both transposes, both
//! triangles, batched), QR's `Q·R = A` and `Qᵀ·A = [R; 0]`, the eigenvalues of a
//! symmetric matrix against a CPU Jacobi, the singular values (and `U·Σ·Vᵀ = A`),
//! and the typed errors: a singular LU, a Cholesky of a matrix that is not
//! positive definite (alone and in a batch), and shapes refused before cuSOLVER.
//! Without a GPU each test prints `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it
//! fails.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cudars_core::{Device, DeviceBuffer, InvalidKind, Stream, StreamOptions};
use cudars_solver::{
    EigJob, Element, Error, Fill, MatMut, MatRef, Op, Side, Solver, SolverErrorKind,
};
use cudars_tests::require_gpu;

fn setup() -> (Device, Stream) {
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = dev.create_stream(StreamOptions::default()).unwrap();
    (dev, s)
}

/// A deterministic generator of values in [-1, 1).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    fn vec(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.next()).collect()
    }
}

/// The element types the tests run in, with a tolerance each.
trait Real: Element + std::fmt::Debug {
    const TOL: f64;
    fn of(x: f64) -> Self;
    fn f(self) -> f64;
}

impl Real for f32 {
    const TOL: f64 = 2e-3;
    fn of(x: f64) -> Self {
        x as f32
    }
    fn f(self) -> f64 {
        f64::from(self)
    }
}

impl Real for f64 {
    const TOL: f64 = 1e-9;
    fn of(x: f64) -> Self {
        x
    }
    fn f(self) -> f64 {
        self
    }
}

fn cast<T: Real>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::of(x)).collect()
}

fn back<T: Real>(v: &[T]) -> Vec<f64> {
    v.iter().map(|&x| x.f()).collect()
}

/// `C = op(A)·B`, column-major: `A` is `m × k` (or `k × m` transposed), `B` `k × n`.
fn matmul(a: &[f64], op: Op, m: usize, k: usize, b: &[f64], n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for j in 0..n {
        for i in 0..m {
            c[i + j * m] = (0..k)
                .map(|l| {
                    let av = match op {
                        Op::N => a[i + l * m],
                        Op::T => a[l + i * k],
                    };
                    av * b[l + j * k]
                })
                .sum();
        }
    }
    c
}

/// A random `n × n` matrix with `n` added to its diagonal: well conditioned.
fn dominant(rng: &mut Lcg, n: usize) -> Vec<f64> {
    let mut a = rng.vec(n * n);
    for i in 0..n {
        a[i + i * n] += n as f64;
    }
    a
}

/// `M·Mᵀ + n·I` for a random `M`: symmetric positive definite, well conditioned.
fn spd(rng: &mut Lcg, n: usize) -> Vec<f64> {
    let m = rng.vec(n * n);
    let mut mt = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            mt[j + i * n] = m[i + j * n];
        }
    }
    let mut a = matmul(&m, Op::N, n, n, &mt, n);
    for i in 0..n {
        a[i + i * n] += n as f64;
    }
    a
}

/// A random symmetric `n × n` matrix.
fn symmetric(rng: &mut Lcg, n: usize) -> Vec<f64> {
    let mut a = vec![0.0; n * n];
    for j in 0..n {
        for i in j..n {
            let v = rng.next();
            a[i + j * n] = v;
            a[j + i * n] = v;
        }
    }
    a
}

/// The eigenvalues of a symmetric matrix by cyclic Jacobi rotations, ascending.
fn jacobi_eigenvalues(mut a: Vec<f64>, n: usize) -> Vec<f64> {
    for _sweep in 0..60 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .filter(|(i, j)| i != j)
            .map(|(i, j)| a[i + j * n] * a[i + j * n])
            .sum();
        if off < 1e-30 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p + q * n];
                if apq.abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q + q * n] - a[p + p * n]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (akp, akq) = (a[k + p * n], a[k + q * n]);
                    a[k + p * n] = c * akp - s * akq;
                    a[k + q * n] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p + k * n], a[q + k * n]);
                    a[p + k * n] = c * apk - s * aqk;
                    a[q + k * n] = s * apk + c * aqk;
                }
            }
        }
    }
    let mut w: Vec<f64> = (0..n).map(|i| a[i + i * n]).collect();
    w.sort_by(f64::total_cmp);
    w
}

fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    let scale = want.iter().fold(1.0f64, |m, x| m.max(x.abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * scale,
            "{what}[{i}]: {g} vs {w} (tolerance {tol} × {scale})"
        );
    }
}

fn solver(s: &Stream) -> Option<Solver> {
    cudars_tests::needs_library_driver!(Solver::new(s))
}

fn lu_solve<T: Real>() {
    let (dev, s) = setup();
    let Some(solver) = solver(&s) else { return };
    let (n, nrhs) = (48, 3);
    let mut rng = Lcg(7);
    let a = dominant(&mut rng, n);
    let x = rng.vec(n * nrhs);
    for op in [Op::N, Op::T] {
        let b = matmul(&a, op, n, n, &x, nrhs);
        let mut da = DeviceBuffer::from_host(&dev, &cast::<T>(&a), &s).unwrap();
        let mut db = DeviceBuffer::from_host(&dev, &cast::<T>(&b), &s).unwrap();
        let mut ipiv = DeviceBuffer::<i32>::zeroed(&dev, n, &s).unwrap();
        let mut lu = MatMut::col_major(da.view_mut(), n, n).unwrap();
        solver.getrf(&mut lu, ipiv.view_mut()).unwrap();
        let mut bm = MatMut::col_major(db.view_mut(), n, nrhs).unwrap();
        solver.getrs(op, lu.as_ref(), ipiv.view(), &mut bm).unwrap();
        let got = back(&db.to_vec(&s).unwrap());
        assert_close(&got, &x, T::TOL, &format!("{} LU solve, {op:?}", T::NAME));
        // The pivots are 1-based row indices.
        let p = ipiv.to_vec(&s).unwrap();
        assert!(p.iter().all(|&r| r >= 1 && r as usize <= n), "{p:?}");
    }
}

#[test]
fn lu_solves_a_well_conditioned_system() {
    require_gpu!();
    lu_solve::<f64>();
    lu_solve::<f32>();
}

fn cholesky_solve<T: Real>() {
    let (dev, s) = setup();
    let Some(solver) = solver(&s) else { return };
    let (n, nrhs) = (40, 2);
    let mut rng = Lcg(11);
    let a = spd(&mut rng, n);
    let x = rng.vec(n * nrhs);
    let b = matmul(&a, Op::N, n, n, &x, nrhs);
    for fill in [Fill::Lower, Fill::Upper] {
        let mut da = DeviceBuffer::from_host(&dev, &cast::<T>(&a), &s).unwrap();
        let mut db = DeviceBuffer::from_host(&dev, &cast::<T>(&b), &s).unwrap();
        let mut am = MatMut::col_major(da.view_mut(), n, n).unwrap();
        solver.potrf(fill, &mut am).unwrap();
        let mut bm = MatMut::col_major(db.view_mut(), n, nrhs).unwrap();
        solver.potrs(fill, am.as_ref(), &mut bm).unwrap();
        let got = back(&db.to_vec(&s).unwrap());
        assert_close(
            &got,
            &x,
            T::TOL,
            &format!("{} Cholesky solve, {fill:?}", T::NAME),
        );
    }
}

#[test]
fn cholesky_solves_a_symmetric_positive_definite_system() {
    require_gpu!();
    cholesky_solve::<f64>();
    cholesky_solve::<f32>();
}

#[test]
fn a_singular_lu_is_a_typed_error_naming_the_pivot() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(solver) = solver(&s) else { return };
    // Rank one: after the pivot on 2, U(1, 1) = 2 - 0.5·4 = 0 exactly.
    let mut da = DeviceBuffer::from_host(&dev, &[1.0f64, 2.0, 2.0, 4.0], &s).unwrap();
    let mut ipiv = DeviceBuffer::<i32>::zeroed(&dev, 2, &s).unwrap();
    let mut am = MatMut::col_major(da.view_mut(), 2, 2).unwrap();
    let e = solver.getrf(&mut am, ipiv.view_mut()).unwrap_err();
    match &e {
        Error::Extra(x) => {
            assert_eq!(x.kind, SolverErrorKind::Singular { pivot: 1 }, "{e}");
            assert_eq!(x.matrix, None);
        }
        other => panic!("expected a singular matrix, got {other:?}"),
    }
    assert!(e.to_string().contains("singular"), "{e}");
    assert!(e.to_string().contains("getrf"), "{e}");
    // The handle is still good.
    let mut da = DeviceBuffer::from_host(&dev, &[2.0f64, 0.0, 0.0, 4.0], &s).unwrap();
    let mut am = MatMut::col_major(da.view_mut(), 2, 2).unwrap();
    solver.getrf(&mut am, ipiv.view_mut()).unwrap();
}

#[test]
fn a_cholesky_of_an_indefinite_matrix_is_a_typed_error_naming_the_minor() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(solver) = solver(&s) else { return };
    // [[1, 2], [2, 1]]: eigenvalues 3 and -1; the minor of order 2 fails.
    // [[-1, 0], [0, 1]]: the minor of order 1 fails.
    for (a, order) in [([1.0f64, 2.0, 2.0, 1.0], 2), ([-1.0, 0.0, 0.0, 1.0], 1)] {
        for fill in [Fill::Lower, Fill::Upper] {
            let mut da = DeviceBuffer::from_host(&dev, &a, &s).unwrap();
            let mut am = MatMut::col_major(da.view_mut(), 2, 2).unwrap();
            let e = solver.potrf(fill, &mut am).unwrap_err();
            match &e {
                Error::Extra(x) => {
                    assert_eq!(
                        x.kind,
                        SolverErrorKind::NotPositiveDefinite { order },
                        "{fill:?}: {e}"
                    );
                }
                other => panic!("expected an indefinite matrix, got {other:?}"),
            }
            assert!(e.to_string().contains("not positive definite"), "{e}");
        }
    }
}

#[test]
fn batched_cholesky_solves_each_system_and_names_the_failing_matrix() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(solver) = solver(&s) else { return };
    let (n, batch) = (6, 5);
    let mut rng = Lcg(3);
    let mats: Vec<Vec<f64>> = (0..batch).map(|_| spd(&mut rng, n)).collect();
    let xs: Vec<Vec<f64>> = (0..batch).map(|_| rng.vec(n)).collect();
    let a: Vec<f64> = mats.concat();
    let b: Vec<f64> = mats
        .iter()
        .zip(&xs)
        .flat_map(|(m, x)| matmul(m, Op::N, n, n, x, 1))
        .collect();
    for fill in [Fill::Lower, Fill::Upper] {
        let mut da = DeviceBuffer::from_host(&dev, &a, &s).unwrap();
        let mut db = DeviceBuffer::from_host(&dev, &b, &s).unwrap();
        let mut am = MatMut::col_major(da.view_mut(), n, n).unwrap();
        solver.potrf_batched(fill, &mut am, n * n, batch).unwrap();
        let mut bm = MatMut::col_major(db.view_mut(), n, 1).unwrap();
        solver
            .potrs_batched(fill, am.as_ref(), n * n, &mut bm, n, batch)
            .unwrap();
        let got = db.to_vec(&s).unwrap();
        assert_close(
            &got,
            &xs.concat(),
            1e-9,
            &format!("batched Cholesky {fill:?}"),
        );
    }
    // The same buffers again (the kept pointer arrays), then on another stream
    // (the kept arrays dropped with the old stream's).
    let mut da = DeviceBuffer::from_host(&dev, &a, &s).unwrap();
    let mut db = DeviceBuffer::from_host(&dev, &b, &s).unwrap();
    let mut solver = solver;
    let s2 = dev.create_stream(StreamOptions::default()).unwrap();
    for round in 0..3 {
        if round == 2 {
            solver.set_stream(&s2).unwrap();
        }
        let st = solver.stream().clone();
        da.copy_from_host(&a, &st).unwrap();
        db.copy_from_host(&b, &st).unwrap();
        let mut am = MatMut::col_major(da.view_mut(), n, n).unwrap();
        solver
            .potrf_batched(Fill::Lower, &mut am, n * n, batch)
            .unwrap();
        let mut bm = MatMut::col_major(db.view_mut(), n, 1).unwrap();
        solver
            .potrs_batched(Fill::Lower, am.as_ref(), n * n, &mut bm, n, batch)
            .unwrap();
        let got = db.to_vec(&st).unwrap();
        assert_close(
            &got,
            &xs.concat(),
            1e-9,
            &format!("batched Cholesky, round {round}"),
        );
    }
    // Matrix 2 of the batch is negative definite: its minor of order 1 fails.
    let mut bad = mats.clone();
    bad[2] = vec![0.0; n * n];
    for i in 0..n {
        bad[2][i + i * n] = -1.0;
    }
    let mut da = DeviceBuffer::from_host(&dev, &bad.concat(), &s).unwrap();
    let mut am = MatMut::col_major(da.view_mut(), n, n).unwrap();
    let e = solver
        .potrf_batched(Fill::Lower, &mut am, n * n, batch)
        .unwrap_err();
    match &e {
        Error::Extra(x) => {
            assert_eq!(x.matrix, Some(2), "{e}");
            assert_eq!(
                x.kind,
                SolverErrorKind::NotPositiveDefinite { order: 1 },
                "{e}"
            );
        }
        other => panic!("expected an indefinite matrix, got {other:?}"),
    }
    assert!(e.to_string().contains("matrix 2 of the batch"), "{e}");
}

#[test]
fn qr_gives_q_times_r_equal_to_a() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(solver) = solver(&s) else { return };
    let (m, n) = (12, 7);
    let mut rng = Lcg(5);
    let a = rng.vec(m * n);
    let mut da = DeviceBuffer::from_host(&dev, &a, &s).unwrap();
    let mut tau = DeviceBuffer::<f64>::zeroed(&dev, n, &s).unwrap();
    let mut am = MatMut::col_major(da.view_mut(), m, n).unwrap();
    solver.geqrf(&mut am, tau.view_mut()).unwrap();
    let factored = da.to_vec(&s).unwrap();
    // R: the upper triangle of the first n rows.
    let mut r = vec![0.0; n * n];
    for j in 0..n {
        for i in 0..=j {
            r[i + j * n] = factored[i + j * m];
        }
    }
    // Qᵀ·A = [R; 0], with Q applied from the Householder vectors (ormqr).
    let reflectors = DeviceBuffer::from_host(&dev, &factored, &s).unwrap();
    let mut dc = DeviceBuffer::from_host(&dev, &a, &s).unwrap();
    let qr = MatRef::col_major(reflectors.view(), m, n).unwrap();
    let mut cm = MatMut::col_major(dc.view_mut(), m, n).unwrap();
    solver
        .ormqr(Side::Left, Op::T, qr, tau.view(), &mut cm)
        .unwrap();
    let qta = dc.to_vec(&s).unwrap();
    let mut want = vec![0.0; m * n];
    for j in 0..n {
        for i in 0..n {
            want[i + j * m] = r[i + j * n];
        }
    }
    assert_close(&qta, &want, 1e-12, "Qᵀ·A");
    // Q explicitly (orgqr): Q·R = A and QᵀQ = I.
    let mut am = MatMut::col_major(da.view_mut(), m, n).unwrap();
    solver.orgqr(&mut am, tau.view()).unwrap();
    let q = da.to_vec(&s).unwrap();
    assert_close(&matmul(&q, Op::N, m, n, &r, n), &a, 1e-12, "Q·R");
    let mut identity = vec![0.0; n * n];
    for i in 0..n {
        identity[i + i * n] = 1.0;
    }
    assert_close(&matmul(&q, Op::T, n, m, &q, n), &identity, 1e-12, "QᵀQ");
}

#[test]
fn symmetric_eigenvalues_match_a_cpu_jacobi() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(solver) = solver(&s) else { return };
    let n = 16;
    let mut rng = Lcg(13);
    let a = symmetric(&mut rng, n);
    let want = jacobi_eigenvalues(a.clone(), n);
    for (job, fill) in [
        (EigJob::ValuesAndVectors, Fill::Lower),
        (EigJob::Values, Fill::Upper),
    ] {
        let mut da = DeviceBuffer::from_host(&dev, &a, &s).unwrap();
        let mut w = DeviceBuffer::<f64>::zeroed(&dev, n, &s).unwrap();
        let mut am = MatMut::col_major(da.view_mut(), n, n).unwrap();
        solver.syevd(job, fill, &mut am, w.view_mut()).unwrap();
        let got = w.to_vec(&s).unwrap();
        assert_close(&got, &want, 1e-10, &format!("eigenvalues {job:?} {fill:?}"));
        if job == EigJob::ValuesAndVectors {
            // A·v = λ·v for every column.
            let v = da.to_vec(&s).unwrap();
            let av = matmul(&a, Op::N, n, n, &v, n);
            let lv: Vec<f64> = (0..n * n).map(|k| v[k] * got[k / n]).collect();
            assert_close(&av, &lv, 1e-10, "A·V = V·Λ");
        }
    }
    // f32 too, against the same reference.
    let mut da = DeviceBuffer::from_host(&dev, &cast::<f32>(&a), &s).unwrap();
    let mut w = DeviceBuffer::<f32>::zeroed(&dev, n, &s).unwrap();
    let mut am = MatMut::col_major(da.view_mut(), n, n).unwrap();
    solver
        .syevd(EigJob::Values, Fill::Lower, &mut am, w.view_mut())
        .unwrap();
    assert_close(
        &back(&w.to_vec(&s).unwrap()),
        &want,
        1e-4,
        "f32 eigenvalues",
    );
}

#[test]
fn singular_values_match_the_cpu_and_rebuild_the_matrix() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(solver) = solver(&s) else { return };
    let (m, n) = (10, 6);
    let mut rng = Lcg(17);
    let a = rng.vec(m * n);
    // σ² are the eigenvalues of AᵀA.
    let ata = matmul(&a, Op::T, n, m, &a, n);
    let mut want: Vec<f64> = jacobi_eigenvalues(ata, n)
        .into_iter()
        .map(|l| l.max(0.0).sqrt())
        .collect();
    want.reverse();
    // Values only.
    let mut da = DeviceBuffer::from_host(&dev, &a, &s).unwrap();
    let mut sv = DeviceBuffer::<f64>::zeroed(&dev, n, &s).unwrap();
    let mut am = MatMut::col_major(da.view_mut(), m, n).unwrap();
    solver.gesvd(&mut am, sv.view_mut(), None, None).unwrap();
    assert_close(&sv.to_vec(&s).unwrap(), &want, 1e-10, "singular values");
    // With U and Vᵀ: U·Σ·Vᵀ = A.
    let mut da = DeviceBuffer::from_host(&dev, &a, &s).unwrap();
    let mut du = DeviceBuffer::<f64>::zeroed(&dev, m * m, &s).unwrap();
    let mut dvt = DeviceBuffer::<f64>::zeroed(&dev, n * n, &s).unwrap();
    let mut am = MatMut::col_major(da.view_mut(), m, n).unwrap();
    let mut um = MatMut::col_major(du.view_mut(), m, m).unwrap();
    let mut vtm = MatMut::col_major(dvt.view_mut(), n, n).unwrap();
    solver
        .gesvd(&mut am, sv.view_mut(), Some(&mut um), Some(&mut vtm))
        .unwrap();
    let sigma = sv.to_vec(&s).unwrap();
    assert_close(&sigma, &want, 1e-10, "singular values with vectors");
    let u = du.to_vec(&s).unwrap();
    let vt = dvt.to_vec(&s).unwrap();
    // The first n columns of U, scaled by Σ.
    let us: Vec<f64> = (0..m * n).map(|k| u[k] * sigma[k / m]).collect();
    assert_close(&matmul(&us, Op::N, m, n, &vt, n), &a, 1e-10, "U·Σ·Vᵀ");
}

#[test]
fn shapes_are_refused_before_cusolver_is_called() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(solver) = solver(&s) else { return };
    let mut buf = DeviceBuffer::<f64>::zeroed(&dev, 64, &s).unwrap();
    let mut other = DeviceBuffer::<f64>::zeroed(&dev, 64, &s).unwrap();
    let mut ipiv = DeviceBuffer::<i32>::zeroed(&dev, 2, &s).unwrap();
    let out_of_range = |e: Error| {
        assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange), "{e}");
        e.to_string()
    };
    // A pivot array shorter than min(m, n).
    let mut a = MatMut::col_major(buf.view_mut(), 4, 3).unwrap();
    let e = solver.getrf(&mut a, ipiv.view_mut()).unwrap_err();
    assert!(out_of_range(e).contains("ipiv holds 2 elements"));
    // LU factors that are not square; a right-hand side of the wrong height.
    let mut b = MatMut::col_major(other.view_mut(), 3, 1).unwrap();
    let e = solver
        .getrs(Op::N, a.as_ref(), ipiv.view(), &mut b)
        .unwrap_err();
    assert!(out_of_range(e).contains("not square"));
    let a = MatMut::col_major(buf.view_mut(), 4, 4).unwrap();
    let e = solver.potrs(Fill::Lower, a.as_ref(), &mut b).unwrap_err();
    assert!(out_of_range(e).contains("B has 3 rows"));
    // A wide SVD, and a U of the wrong shape.
    let mut wide = MatMut::col_major(buf.view_mut(), 3, 5).unwrap();
    let e = solver
        .gesvd(&mut wide, other.view_mut(), None, None)
        .unwrap_err();
    assert!(out_of_range(e).contains("fewer rows (3) than columns (5)"));
    let mut tall = MatMut::col_major(buf.view_mut(), 5, 3).unwrap();
    let mut u = MatMut::col_major(other.view_mut(), 3, 3).unwrap();
    let e = solver
        .gesvd(
            &mut tall,
            DeviceBuffer::<f64>::zeroed(&dev, 3, &s).unwrap().view_mut(),
            Some(&mut u),
            None,
        )
        .unwrap_err();
    assert!(out_of_range(e).contains("U is 3×3, not 5×5"));
    // A batch whose matrices would overlap, and one longer than the view.
    let mut a = MatMut::col_major(buf.view_mut(), 4, 4).unwrap();
    let e = solver.potrf_batched(Fill::Lower, &mut a, 8, 3).unwrap_err();
    assert!(out_of_range(e).contains("would overlap"));
    let e = solver
        .potrf_batched(Fill::Lower, &mut a, 16, 5)
        .unwrap_err();
    assert!(out_of_range(e).contains("fewer than 5 matrices"));
    // Q of the wrong size for C.
    let qr = MatRef::col_major(other.view(), 5, 3).unwrap();
    let mut c = MatMut::col_major(buf.view_mut(), 4, 2).unwrap();
    let tau = DeviceBuffer::<f64>::zeroed(&dev, 3, &s).unwrap();
    let e = solver
        .ormqr(Side::Left, Op::N, qr, tau.view(), &mut c)
        .unwrap_err();
    assert!(out_of_range(e).contains("Q is 5×5 but C has 4 rows"));
}

#[test]
fn a_solver_moved_to_another_stream_keeps_solving() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(mut solver) = solver(&s) else { return };
    let s2 = dev.create_stream(StreamOptions::default()).unwrap();
    solver.set_stream(&s2).unwrap();
    assert_eq!(solver.stream().handle(), s2.handle());
    let mut da = DeviceBuffer::from_host(&dev, &[4.0f64, 2.0, 2.0, 3.0], &s2).unwrap();
    let mut db = DeviceBuffer::from_host(&dev, &[2.0f64, 1.0], &s2).unwrap();
    let mut am = MatMut::col_major(da.view_mut(), 2, 2).unwrap();
    solver.potrf(Fill::Lower, &mut am).unwrap();
    let mut bm = MatMut::col_major(db.view_mut(), 2, 1).unwrap();
    solver.potrs(Fill::Lower, am.as_ref(), &mut bm).unwrap();
    assert_close(
        &db.to_vec(&s2).unwrap(),
        &[0.5, 0.0],
        1e-15,
        "after set_stream",
    );
    // The handle can move to a thread and be dropped there.
    std::thread::spawn(move || drop(solver)).join().unwrap();
}
