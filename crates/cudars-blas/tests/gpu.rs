//! cuBLAS and cuBLASLt on the GPU against a CPU reference: every element type,
//! every layout mix, batched GEMM, level-1 operations, epilogues, and the typed
//! errors. Without a GPU each test prints `SKIPPED`; with
//! `CUDA_TEST_REQUIRE_GPU=1` it fails.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cudars_blas::{
    BiasAlong, Blas, BlasLt, Element, Epilogue, Layout, MatMut, MatRef, Op, Strided,
};
use cudars_core::half::{bf16, f16};
use cudars_core::{Device, DeviceBuffer, InvalidKind, Stream, StreamOptions};
use cudars_tests::require_gpu;

fn setup() -> (Device, Stream) {
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = dev.create_stream(StreamOptions::default()).unwrap();
    (dev, s)
}

/// Deterministic values in [-1, 1).
fn data(n: usize, seed: u64) -> Vec<f64> {
    cudars_tests::xorshift64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .take(n)
        .map(|x| (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0)
        .collect()
}

trait Conv: Element {
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    fn scalar(v: f64) -> Self::Scalar;
    /// Relative tolerance of a dot product of length `k`.
    const TOL: f64;
}
impl Conv for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self.into()
    }
    fn scalar(v: f64) -> f32 {
        v as f32
    }
    const TOL: f64 = 1e-4;
}
impl Conv for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn scalar(v: f64) -> f64 {
        v
    }
    const TOL: f64 = 1e-12;
}
impl Conv for f16 {
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    fn scalar(v: f64) -> f32 {
        v as f32
    }
    const TOL: f64 = 1e-2;
}
impl Conv for bf16 {
    fn from_f64(v: f64) -> Self {
        bf16::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    fn scalar(v: f64) -> f32 {
        v as f32
    }
    const TOL: f64 = 2e-2;
}

fn at(m: &[f64], layout: Layout, ld: usize, i: usize, j: usize) -> f64 {
    match layout {
        Layout::ColMajor => m[i + j * ld],
        Layout::RowMajor => m[i * ld + j],
    }
}

fn lead(layout: Layout, rows: usize, cols: usize) -> usize {
    match layout {
        Layout::ColMajor => rows,
        Layout::RowMajor => cols,
    }
}

fn check_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    let scale = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * scale,
            "{what}: element {i}: {g} vs {w} (tol {tol}, scale {scale})"
        );
    }
}

/// GEMM of one type over every layout and transpose mix, with beta ≠ 0.
fn gemm_case<T: Conv>(blas: &Blas, dev: &Device, s: &Stream) {
    let (m, n, k) = (37, 29, 41);
    let (alpha, beta) = (0.75, -0.5);
    for la in [Layout::ColMajor, Layout::RowMajor] {
        for lc in [Layout::ColMajor, Layout::RowMajor] {
            for op_a in [Op::N, Op::T] {
                for op_b in [Op::N, Op::T] {
                    let lb = la;
                    let (ar, ac) = if op_a == Op::N { (m, k) } else { (k, m) };
                    let (br, bc) = if op_b == Op::N { (k, n) } else { (n, k) };
                    let q = |v: Vec<f64>| -> Vec<f64> {
                        v.into_iter().map(|x| T::from_f64(x).to_f64()).collect()
                    };
                    let (a, b, c0) = (q(data(ar * ac, 1)), q(data(br * bc, 2)), q(data(m * n, 3)));
                    let up = |v: &[f64]| {
                        DeviceBuffer::from_host(
                            dev,
                            &v.iter().map(|&x| T::from_f64(x)).collect::<Vec<_>>(),
                            s,
                        )
                        .unwrap()
                    };
                    let (da, db, mut dc) = (up(&a), up(&b), up(&c0));
                    let (lda, ldb, ldc) = (lead(la, ar, ac), lead(lb, br, bc), lead(lc, m, n));
                    blas.gemm(
                        T::scalar(alpha),
                        MatRef::new(da.view(), ar, ac, lda, la).unwrap(),
                        op_a,
                        MatRef::new(db.view(), br, bc, ldb, lb).unwrap(),
                        op_b,
                        T::scalar(beta),
                        &mut MatMut::new(dc.view_mut(), m, n, ldc, lc).unwrap(),
                    )
                    .unwrap();
                    let got: Vec<f64> = dc.to_vec(s).unwrap().into_iter().map(T::to_f64).collect();
                    let mut want = vec![0.0; m * n];
                    for i in 0..m {
                        for j in 0..n {
                            let mut acc = 0.0;
                            for l in 0..k {
                                let av = if op_a == Op::N {
                                    at(&a, la, lda, i, l)
                                } else {
                                    at(&a, la, lda, l, i)
                                };
                                let bv = if op_b == Op::N {
                                    at(&b, lb, ldb, l, j)
                                } else {
                                    at(&b, lb, ldb, j, l)
                                };
                                acc += av * bv;
                            }
                            let idx = match lc {
                                Layout::ColMajor => i + j * ldc,
                                Layout::RowMajor => i * ldc + j,
                            };
                            want[idx] = alpha * acc + beta * c0[idx];
                        }
                    }
                    check_close(
                        &got,
                        &want,
                        T::TOL,
                        &format!("{} {la:?}/{lc:?} {op_a:?}{op_b:?}", T::NAME),
                    );
                }
            }
        }
    }
}

#[test]
fn gemm_matches_the_cpu_for_every_type_and_layout() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(blas) = cudars_tests::needs_library_driver!(Blas::new(&s)) else {
        return;
    };
    gemm_case::<f32>(&blas, &dev, &s);
    gemm_case::<f64>(&blas, &dev, &s);
    gemm_case::<f16>(&blas, &dev, &s);
    gemm_case::<bf16>(&blas, &dev, &s);
}

#[test]
fn strided_batched_gemm_matches_the_cpu() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(blas) = cudars_tests::needs_library_driver!(Blas::new(&s)) else {
        return;
    };
    let (m, n, k, batch) = (8, 6, 5, 7);
    let (sa, sb, sc) = (m * k + 3, k * n, m * n + 1);
    let a = data(sa * batch, 4);
    let b = data(sb * batch, 5);
    let da = DeviceBuffer::from_host(&dev, &a.iter().map(|&x| x as f32).collect::<Vec<_>>(), &s)
        .unwrap();
    let db = DeviceBuffer::from_host(&dev, &b.iter().map(|&x| x as f32).collect::<Vec<_>>(), &s)
        .unwrap();
    let mut dc = DeviceBuffer::<f32>::zeroed(&dev, sc * batch, &s).unwrap();
    let mut c = MatMut::row_major(dc.view_mut(), m, n).unwrap();
    blas.gemm_strided_batched(
        1.0,
        Strided::new(MatRef::row_major(da.view(), m, k).unwrap(), sa),
        Op::N,
        Strided::new(MatRef::row_major(db.view(), k, n).unwrap(), sb),
        Op::N,
        0.0,
        Strided::new(&mut c, sc),
        batch,
    )
    .unwrap();
    let got = dc.to_vec(&s).unwrap();
    for p in 0..batch {
        for i in 0..m {
            for j in 0..n {
                let want: f64 = (0..k)
                    .map(|l| a[p * sa + i * k + l] * b[p * sb + l * n + j])
                    .sum();
                let g = f64::from(got[p * sc + i * n + j]);
                assert!(
                    (g - want).abs() < 1e-4,
                    "batch {p} ({i},{j}): {g} vs {want}"
                );
            }
        }
    }
    // A C stride smaller than one matrix would overlap the results.
    let mut c = MatMut::row_major(dc.view_mut(), m, n).unwrap();
    let e = blas
        .gemm_strided_batched(
            1.0,
            Strided::new(MatRef::row_major(da.view(), m, k).unwrap(), sa),
            Op::N,
            Strided::new(MatRef::row_major(db.view(), k, n).unwrap(), sb),
            Op::N,
            0.0,
            Strided::new(&mut c, m * n - 1),
            2,
        )
        .unwrap_err();
    assert_eq!(
        e.invalid_kind(),
        Some(InvalidKind::OutOfRange),
        "{}",
        e.report()
    );
}

fn level1_case<T: Conv>(blas: &Blas, dev: &Device, s: &Stream) {
    let n = 1000;
    let q = |v: Vec<f64>| -> Vec<f64> { v.into_iter().map(|x| T::from_f64(x).to_f64()).collect() };
    let (x, y) = (q(data(n, 7)), q(data(n, 8)));
    let up = |v: &[f64]| {
        DeviceBuffer::from_host(
            dev,
            &v.iter().map(|&x| T::from_f64(x)).collect::<Vec<_>>(),
            s,
        )
        .unwrap()
    };
    let (dx, mut dy) = (up(&x), up(&y));
    // dot
    let got = blas.dot(dx.view(), dy.view()).unwrap().to_f64();
    let want: f64 = x.iter().zip(&y).map(|(a, b)| a * b).sum();
    assert!(
        (got - want).abs() <= T::TOL * 40.0,
        "{} dot {got} vs {want}",
        T::NAME
    );
    // axpy
    blas.axpy(T::scalar(2.0), dx.view(), dy.view_mut()).unwrap();
    let got: Vec<f64> = dy.to_vec(s).unwrap().into_iter().map(T::to_f64).collect();
    let want: Vec<f64> = x.iter().zip(&y).map(|(a, b)| 2.0 * a + b).collect();
    check_close(&got, &want, T::TOL, &format!("{} axpy", T::NAME));
    // scal
    blas.scal(T::scalar(-0.5), dy.view_mut()).unwrap();
    let got2: Vec<f64> = dy.to_vec(s).unwrap().into_iter().map(T::to_f64).collect();
    let want2: Vec<f64> = got.iter().map(|v| -0.5 * v).collect();
    check_close(&got2, &want2, T::TOL, &format!("{} scal", T::NAME));
    // gemv: row-major 40×25, transposed.
    let (r, c) = (40, 25);
    let a = q(data(r * c, 9));
    let da = up(&a);
    let xv = q(data(r, 10));
    let dxv = up(&xv);
    let mut dyv = DeviceBuffer::<T>::zeroed(dev, c, s).unwrap();
    blas.gemv(
        T::scalar(1.0),
        MatRef::row_major(da.view(), r, c).unwrap(),
        Op::T,
        dxv.view(),
        T::scalar(0.0),
        dyv.view_mut(),
    )
    .unwrap();
    let got: Vec<f64> = dyv.to_vec(s).unwrap().into_iter().map(T::to_f64).collect();
    let want: Vec<f64> = (0..c)
        .map(|j| (0..r).map(|i| a[i * c + j] * xv[i]).sum())
        .collect();
    check_close(&got, &want, T::TOL, &format!("{} gemv", T::NAME));
}

#[test]
fn level_one_and_gemv_match_the_cpu_for_every_type() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(blas) = cudars_tests::needs_library_driver!(Blas::new(&s)) else {
        return;
    };
    level1_case::<f32>(&blas, &dev, &s);
    level1_case::<f64>(&blas, &dev, &s);
    level1_case::<f16>(&blas, &dev, &s);
    level1_case::<bf16>(&blas, &dev, &s);
}

#[test]
fn bad_shapes_and_lengths_are_typed_errors() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(blas) = cudars_tests::needs_library_driver!(Blas::new(&s)) else {
        return;
    };
    let a = DeviceBuffer::<f32>::zeroed(&dev, 12, &s).unwrap();
    let mut c = DeviceBuffer::<f32>::zeroed(&dev, 12, &s).unwrap();
    // 3×4 · 3×4 does not multiply.
    let e = blas
        .gemm(
            1.0,
            MatRef::row_major(a.view(), 3, 4).unwrap(),
            Op::N,
            MatRef::row_major(a.view(), 3, 4).unwrap(),
            Op::N,
            0.0,
            &mut MatMut::row_major(c.view_mut(), 3, 4).unwrap(),
        )
        .unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange));
    assert!(
        e.report()
            .to_string()
            .contains("op(A) is 3×4 and op(B) is 3×4"),
        "{}",
        e.report()
    );
    // A view too short for its matrix.
    let e = MatRef::row_major(a.view(), 4, 4).unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange));
    // Level 1 lengths.
    let e = blas
        .axpy(1.0, a.slice(..5).unwrap(), c.view_mut())
        .unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange));
    assert!(blas.dot(a.view(), a.slice(1..).unwrap()).is_err());
}

fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
}

#[test]
fn cublaslt_epilogues_match_the_cpu() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(mut lt) = cudars_tests::needs_library_driver!(BlasLt::new(&s)) else {
        return;
    };
    let (m, n, k) = (64, 48, 96);
    let x = data(m * k, 11);
    let w = data(k * n, 12);
    let bias_cols = data(n, 13);
    let bias_rows = data(m, 14);
    let f = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<_>>();
    let (dx, dw) = (
        DeviceBuffer::from_host(&dev, &f(&x), &s).unwrap(),
        DeviceBuffer::from_host(&dev, &f(&w), &s).unwrap(),
    );
    let (dbc, dbr) = (
        DeviceBuffer::from_host(&dev, &f(&bias_cols), &s).unwrap(),
        DeviceBuffer::from_host(&dev, &f(&bias_rows), &s).unwrap(),
    );
    let prod = |i: usize, j: usize| -> f64 { (0..k).map(|l| x[i * k + l] * w[l * n + j]).sum() };
    for (name, act) in [("none", 0), ("relu", 1), ("gelu", 2)] {
        for layout in [Layout::RowMajor, Layout::ColMajor] {
            let mut dy = DeviceBuffer::<f32>::zeroed(&dev, m * n, &s).unwrap();
            let epi = match act {
                0 => Epilogue::none(),
                1 => Epilogue::relu(),
                _ => Epilogue::gelu(),
            };
            let (epi, along) = match layout {
                Layout::RowMajor => (
                    epi.with_bias(dbc.view(), BiasAlong::Columns),
                    BiasAlong::Columns,
                ),
                Layout::ColMajor => (epi.with_bias(dbr.view(), BiasAlong::Rows), BiasAlong::Rows),
            };
            let ldy = lead(layout, m, n);
            lt.matmul(
                1.0,
                MatRef::row_major(dx.view(), m, k).unwrap(),
                Op::N,
                MatRef::row_major(dw.view(), k, n).unwrap(),
                Op::N,
                0.0,
                &mut MatMut::new(dy.view_mut(), m, n, ldy, layout).unwrap(),
                epi,
            )
            .unwrap();
            let got = dy.to_vec(&s).unwrap();
            for i in 0..m {
                for j in 0..n {
                    let b = if along == BiasAlong::Columns {
                        bias_cols[j]
                    } else {
                        bias_rows[i]
                    };
                    let v = prod(i, j) + b;
                    let want = match act {
                        0 => v,
                        1 => v.max(0.0),
                        _ => gelu(v),
                    };
                    let g = f64::from(
                        got[match layout {
                            Layout::RowMajor => i * n + j,
                            Layout::ColMajor => i + j * m,
                        }],
                    );
                    assert!(
                        (g - want).abs() < 2e-3,
                        "{name} {layout:?} ({i},{j}): {g} vs {want}"
                    );
                }
            }
        }
    }
    // A bias per row of a row-major result is refused, not transposed.
    let mut dy = DeviceBuffer::<f32>::zeroed(&dev, m * n, &s).unwrap();
    let e = lt
        .matmul(
            1.0,
            MatRef::row_major(dx.view(), m, k).unwrap(),
            Op::N,
            MatRef::row_major(dw.view(), k, n).unwrap(),
            Op::N,
            0.0,
            &mut MatMut::row_major(dy.view_mut(), m, n).unwrap(),
            Epilogue::none().with_bias(dbr.view(), BiasAlong::Rows),
        )
        .unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::Other), "{}", e.report());
    // A bias of the wrong length.
    let e = lt
        .matmul(
            1.0,
            MatRef::row_major(dx.view(), m, k).unwrap(),
            Op::N,
            MatRef::row_major(dw.view(), k, n).unwrap(),
            Op::N,
            0.0,
            &mut MatMut::row_major(dy.view_mut(), m, n).unwrap(),
            Epilogue::none().with_bias(dbr.view(), BiasAlong::Columns),
        )
        .unwrap_err();
    assert_eq!(
        e.invalid_kind(),
        Some(InvalidKind::OutOfRange),
        "{}",
        e.report()
    );
}

#[test]
fn cublaslt_half_precision_matmul_matches_the_cpu() {
    require_gpu!();
    let (dev, s) = setup();
    let Some(mut lt) = cudars_tests::needs_library_driver!(BlasLt::new(&s)) else {
        return;
    };
    let (m, n, k) = (128, 64, 256);
    let q =
        |v: Vec<f64>| -> Vec<f64> { v.into_iter().map(|x| bf16::from_f64(x).to_f64()).collect() };
    let (a, b) = (q(data(m * k, 21)), q(data(k * n, 22)));
    let up = |v: &[f64]| {
        DeviceBuffer::from_host(
            &dev,
            &v.iter().map(|&x| bf16::from_f64(x)).collect::<Vec<_>>(),
            &s,
        )
        .unwrap()
    };
    let (da, db) = (up(&a), up(&b));
    let mut dc = DeviceBuffer::<bf16>::zeroed(&dev, m * n, &s).unwrap();
    lt.matmul(
        1.0,
        MatRef::row_major(da.view(), m, k).unwrap(),
        Op::N,
        MatRef::row_major(db.view(), k, n).unwrap(),
        Op::N,
        0.0,
        &mut MatMut::row_major(dc.view_mut(), m, n).unwrap(),
        Epilogue::none(),
    )
    .unwrap();
    let got: Vec<f64> = dc
        .to_vec(&s)
        .unwrap()
        .into_iter()
        .map(bf16::to_f64)
        .collect();
    let want: Vec<f64> = (0..m * n)
        .map(|p| (0..k).map(|l| a[(p / n) * k + l] * b[l * n + p % n]).sum())
        .collect();
    check_close(&got, &want, 2e-2, "bf16 cuBLASLt");
}

/// Issue 26, hole 11: calls through one handle on two streams shared its
/// workspace and could overlap. `set_stream` now makes the new stream wait for
/// the old one, so read-modify-write calls alternated between two streams all
/// land (a race would lose updates).
#[test]
fn calls_stay_ordered_across_set_stream() {
    require_gpu!();
    let (dev, s1) = setup();
    let s2 = dev.create_stream(StreamOptions::default()).unwrap();
    let n = 1usize << 24;
    let x = DeviceBuffer::from_host(&dev, &vec![1.0f32; n], &s1).unwrap();
    let mut y = DeviceBuffer::from_host(&dev, &vec![1.0f32; n], &s1).unwrap();
    let Some(mut blas) = cudars_tests::needs_library_driver!(Blas::new(&s1)) else {
        return;
    };
    let rounds = 8;
    for _ in 0..rounds {
        blas.axpy(1.0f32, x.view(), y.view_mut()).unwrap();
        blas.set_stream(&s2).unwrap();
        blas.axpy(1.0f32, x.view(), y.view_mut()).unwrap();
        blas.set_stream(&s1).unwrap();
    }
    let want = 1.0 + 2.0 * rounds as f32;
    assert!(
        y.to_vec(&s1).unwrap().iter().all(|&v| v == want),
        "an update was lost: calls overlapped through set_stream"
    );
}
