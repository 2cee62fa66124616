//! A GPU server's request path with a cuBLAS GEMM in it, awaited: 64 jobs in
//! flight at once over a pool of 8 streams (job `i` on stream `i % 8`), each
//! round of a job one request:
//!
//! 1. upload the job's input `X` (256×128 `f32`, row-major) from its page-locked
//!    buffer (`copy_from_pinned_async`: the future owns the buffer until the copy
//!    has run, then hands it back);
//! 2. a kernel, `Y = a·X + b` (`kernels!`, compiled by NVRTC for the device);
//! 3. a GEMM through cudars-blas, `Z = Y·Wᵀ` with `W` the server's 128×128
//!    weights, queued on the job's stream by that stream's cuBLAS handle;
//! 4. download `Z` into a new vector (`to_vec_async`: through the process's pool
//!    of page-locked staging blocks, which the future owns until the copy has run).
//!
//! The rounds run as tokio tasks on a multi-threaded runtime (8 workers), no
//! thread blocked per job; then the same requests run as the same program
//! written with blocking `Stream::sync` on a pool of 8 threads, one per stream
//! (each downloads into the job's page-locked buffer, waits with `sync`, and
//! copies the result into a new vector, as `to_vec_async` does). Three passes,
//! each blocking then awaited; every pass prints both rates, and the program
//! ends with their medians and the ratio, on lines that start with
//! `async_gemm_jobs:` and say `jobs/s` (a job here is one request: one upload,
//! kernel, GEMM and download).
//!
//! Before the passes, each stream's first GEMM (cuBLAS loads its kernels on a
//! handle's first call) computes `W·Wᵀ` and is awaited the way any library call
//! is: queue it, then `stream.completion().await`.
//!
//! **Every result is checked on the host, exactly (tolerance 0).** `X` and `W`
//! hold integers in −2..=2, `a` is in 1..=7 and `b` in −8..=8, so every element
//! of `Y`, every product and every partial sum of the GEMM is an integer of
//! magnitude at most 22·2·128 = 5,632 < 2²⁴: `f32` holds each exactly, whatever
//! order cuBLAS sums in (and TF32 would too). The CPU reference is exact integer
//! arithmetic: `Z[i][j] = a·(X·Wᵀ)[i][j] + b·Σₖ W[j][k]`, with `X·Wᵀ` computed
//! once per job (its input does not change between rounds).
//!
//! The GEMM needs cudars-blas and the kernel `kernels!` of cudars-core, which
//! cannot depend on cudars-blas; so this example lives here, beside `gemm`
//! (cudars-core's `async_jobs` is the same server without the GEMM).
//!
//! ```sh
//! cargo run -p cudars-blas --release --example async_gemm_jobs
//! ```
//!
//! Without a GPU it fails (exit code 1), saying why: it is a GPU program, run by
//! the GPU package's `run.sh` like every example.

use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use cudars_blas::{Blas, MatMut, MatRef, Op};
use cudars_core::{Device, DeviceBuffer, LaunchConfig, PinnedBuffer, Stream, StreamOptions};

/// This example's errors: CUDA's, cuBLAS's, the runtime's, or a wrong result
/// (this program's finding, not CUDA's).
#[derive(Debug, thiserror::Error)]
enum ExampleError {
    /// A CUDA call failed.
    #[error(transparent)]
    Cuda(#[from] cudars_core::Error),
    /// A cuBLAS call failed.
    #[error(transparent)]
    Blas(#[from] cudars_blas::Error),
    /// The tokio runtime did not start.
    #[error("starting the tokio runtime")]
    Runtime(#[source] std::io::Error),
    /// A result differs from the CPU reference.
    #[error("{what}: wrong result: {found}")]
    Wrong {
        /// Which result: a job's round, or a stream's warm-up GEMM.
        what: String,
        /// What differs.
        found: String,
    },
}

type Result<T, E = ExampleError> = std::result::Result<T, E>;

/// Jobs in flight at once.
const JOBS: usize = 64;
/// Streams in the pool (and tokio workers, and blocking threads).
const LANES: usize = 8;
/// Requests each job makes, one after another.
const ROUNDS: usize = 32;
/// Passes, each the blocking program then the awaited one.
const PASSES: usize = 3;
/// `X` is `M × K`, `W` is `N × K`, `Z = Y·Wᵀ` is `M × N`.
const M: usize = 256;
const K: usize = 128;
const N: usize = 128;

cudars_core::kernels! {
    /// The request's kernel: `scale_shift(&stream, &config, x, y, a, b, n)`.
    struct Prep = source r#"
        extern "C" __global__ void scale_shift(const float* x, float* y, float a, float b,
                                               unsigned long long n) {
            unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
            if (i < n) y[i] = a * x[i] + b;
        }
    "#;
}

/// One stream of the pool, its cuBLAS handle and its copy of the weights.
///
/// A handle is `Send` but not `Sync` (cuBLAS allows it on one thread at a
/// time), so the tasks that share the stream take turns with it through a lock,
/// held only while a call is queued.
///
/// The weights are allocated on this stream, so they are freed on it: a buffer
/// that a GEMM reads on a stream other than the one that frees it makes the call
/// order that free after its work (an event recorded, and the freeing stream
/// made to wait for it), which one shared copy would pay on every call and
/// which would tie the freeing stream to every other. `W` is 64 KiB: a copy per
/// stream costs nothing.
struct Lane {
    stream: Stream,
    blas: Mutex<Blas>,
    /// The weights `W` (`N × K`, row-major).
    w: DeviceBuffer<f32>,
}

impl Lane {
    fn blas(&self) -> MutexGuard<'_, Blas> {
        self.blas.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What every job shares: the streams, the kernel and the weights.
struct Server {
    lanes: Vec<Lane>,
    prep: Prep,
    /// `Σₖ W[j][k]` for each row `j` (the reference's `b` term).
    w_sums: Vec<i64>,
}

/// A job's device memory: its input, the kernel's output and the GEMM's.
struct DeviceSide {
    x: DeviceBuffer<f32>,
    y: DeviceBuffer<f32>,
    z: DeviceBuffer<f32>,
}

/// One job: its input (page-locked), the blocking program's download buffer
/// (page-locked), its device memory and its CPU reference's `X·Wᵀ`.
struct Job {
    id: usize,
    input: PinnedBuffer<f32>,
    output: PinnedBuffer<f32>,
    dev: DeviceSide,
    /// `X·Wᵀ` (`M × N`), exact.
    xw: Vec<i64>,
}

/// A small integer in −2..=2 from `seed` (SplitMix64).
fn small(seed: u64) -> i64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z % 5) as i64 - 2
}

/// The weights `W` (`N × K`).
fn weights() -> Vec<i64> {
    (0..N * K).map(|i| small(i as u64)).collect()
}

/// Job `id`'s input `X` (`M × K`).
fn input(id: usize) -> Vec<i64> {
    (0..M * K)
        .map(|i| small(((id as u64 + 1) << 32) | i as u64))
        .collect()
}

/// `A·Bᵀ` for a row-major `rows × K` `A` and `cols × K` `B`, in integers.
fn times_transposed(a: &[i64], b: &[i64], cols: usize) -> Vec<i64> {
    let mut out = Vec::with_capacity(a.len() / K * cols);
    for row in a.chunks_exact(K) {
        for col in b.chunks_exact(K).take(cols) {
            out.push(row.iter().zip(col).map(|(x, w)| x * w).sum());
        }
    }
    out
}

fn to_f32(v: &[i64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

/// Job `id`'s `a` and `b` for `round`.
fn coefficients(id: usize, round: usize) -> (i64, i64) {
    ((id % 7) as i64 + 1, (round % 17) as i64 - 8)
}

/// Compares `got` with the `rows × cols` matrix `want(i, j)`, exactly.
fn compare(
    what: impl Fn() -> String,
    got: &[f32],
    (rows, cols): (usize, usize),
    want: impl Fn(usize, usize) -> i64,
) -> Result<()> {
    let wrong = |found: String| ExampleError::Wrong {
        what: what(),
        found,
    };
    if got.len() != rows * cols {
        return Err(wrong(format!(
            "{} elements, not {rows} × {cols}",
            got.len()
        )));
    }
    for (i, row) in got.chunks_exact(cols).enumerate() {
        for (j, &g) in row.iter().enumerate() {
            let w = want(i, j);
            if g != w as f32 {
                return Err(wrong(format!(
                    "element [{i}][{j}] is {g}, the CPU reference {w} (tolerance 0)"
                )));
            }
        }
    }
    Ok(())
}

/// Checks job `id`'s result of `round` against the CPU reference (`w_sums`:
/// `Σₖ W[j][k]` per row `j` of `W`; `xw`: the job's `X·Wᵀ`).
fn check(w_sums: &[i64], xw: &[i64], id: usize, round: usize, z: &[f32]) -> Result<()> {
    let (a, b) = coefficients(id, round);
    compare(
        || format!("job {id}, round {round}"),
        z,
        (M, N),
        |i, j| a * xw[i * N + j] + b * w_sums[j],
    )
}

/// Queues request `round` of job `id` on `lane`'s stream, behind its upload:
/// the kernel `Y = a·X + b`, then `Z = Y·Wᵀ` through `blas` (the lane's handle).
fn queue_compute(
    server: &Server,
    lane: &Lane,
    blas: &Blas,
    dev: &mut DeviceSide,
    id: usize,
    round: usize,
) -> Result<()> {
    let (a, b) = coefficients(id, round);
    let stream = &lane.stream;
    let n = (M * K) as u64;
    // SAFETY: scale_shift reads x[0..n] and writes y[0..n]; both hold n = M·K floats.
    unsafe {
        server.prep.scale_shift(
            stream,
            &LaunchConfig::for_elements(n, 256),
            dev.x.view(),
            dev.y.view_mut(),
            a as f32,
            b as f32,
            n,
        )?;
    }
    blas.gemm(
        1.0,
        MatRef::row_major(dev.y.view(), M, K)?,
        Op::N,
        MatRef::row_major(lane.w.view(), N, K)?,
        Op::T,
        0.0,
        &mut MatMut::row_major(dev.z.view_mut(), M, N)?,
    )?;
    Ok(())
}

/// A job's rounds on the tokio runtime: each request's copies awaited, no thread
/// blocked. The job comes back for the next pass.
async fn run_job(server: Arc<Server>, job: Job) -> Result<Job> {
    let Job {
        id,
        mut input,
        output,
        mut dev,
        xw,
    } = job;
    let lane = &server.lanes[id % LANES];
    for round in 0..ROUNDS {
        // The future owns the page-locked input until the copy has run.
        let upload = dev.x.view_mut().copy_from_pinned_async(input, &lane.stream);
        // The handle's lock is held while the calls are queued, never across an
        // await (its guard is not `Send`: a task holding it would not compile).
        queue_compute(&server, lane, &lane.blas(), &mut dev, id, round)?;
        let download = dev.z.to_vec_async(&lane.stream);
        input = upload.await?;
        let z = download.await?;
        check(&server.w_sums, &xw, id, round, &z)?;
    }
    Ok(Job {
        id,
        input,
        output,
        dev,
        xw,
    })
}

/// The same rounds with a blocking wait per request, on a thread that owns
/// `lane` (and its handle, `blas`).
fn run_job_blocking(server: &Server, lane: &Lane, blas: &Blas, job: &mut Job) -> Result<()> {
    let s = &lane.stream;
    for round in 0..ROUNDS {
        job.dev.x.view_mut().copy_from_pinned(&job.input, s)?;
        queue_compute(server, lane, blas, &mut job.dev, job.id, round)?;
        job.dev.z.view().copy_to_pinned(&mut job.output, s)?;
        s.sync()?;
        // The owned result a server hands on, as `to_vec_async` gives it.
        let z = job.output.as_slice()?.to_vec();
        check(&server.w_sums, &job.xw, job.id, round, &z)?;
    }
    Ok(())
}

/// Each stream's first GEMM, `W·Wᵀ`, awaited as any library call is: queued
/// (it returns at once), then the stream's completion awaited; then checked.
async fn warm_up(server: Arc<Server>, lane: usize, want: Arc<Vec<i64>>) -> Result<()> {
    let lane_ref = &server.lanes[lane];
    let s = &lane_ref.stream;
    let mut gram = DeviceBuffer::<f32>::allocate(s.device(), N * N, s)?;
    lane_ref.blas().gemm(
        1.0,
        MatRef::row_major(lane_ref.w.view(), N, K)?,
        Op::N,
        MatRef::row_major(lane_ref.w.view(), N, K)?,
        Op::T,
        0.0,
        &mut MatMut::row_major(gram.view_mut(), N, N)?,
    )?;
    s.completion().await?;
    let got = gram.to_vec_async(s).await?;
    compare(
        || format!("stream {lane}'s warm-up GEMM (W·Wᵀ)"),
        &got,
        (N, N),
        |i, j| want[i * N + j],
    )
}

/// Jobs per second of every job's rounds, all in flight at once as tokio tasks;
/// the jobs come back.
fn awaited_pass(
    rt: &tokio::runtime::Runtime,
    server: &Arc<Server>,
    jobs: Vec<Job>,
) -> Result<(f64, Vec<Job>)> {
    let t = Instant::now();
    let jobs = rt.block_on(async {
        let tasks: Vec<_> = jobs
            .into_iter()
            .map(|job| tokio::spawn(run_job(Arc::clone(server), job)))
            .collect();
        let mut done = Vec::with_capacity(JOBS);
        for task in tasks {
            let job = task
                .await
                .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))?;
            done.push(job);
        }
        Ok::<_, ExampleError>(done)
    })?;
    Ok(((JOBS * ROUNDS) as f64 / t.elapsed().as_secs_f64(), jobs))
}

/// Jobs per second of every job's rounds on a pool of threads, one per stream,
/// each taking the next of its stream's jobs when done with one.
fn blocking_pass(server: &Server, jobs: &mut [Job]) -> Result<f64> {
    let mut per_lane: Vec<Vec<&mut Job>> = (0..LANES).map(|_| Vec::new()).collect();
    for job in jobs.iter_mut() {
        per_lane[job.id % LANES].push(job);
    }
    let t = Instant::now();
    std::thread::scope(|scope| {
        let handles: Vec<_> = server
            .lanes
            .iter()
            .zip(per_lane)
            .map(|(lane, mine)| {
                scope.spawn(move || -> Result<()> {
                    let blas = lane.blas();
                    for job in mine {
                        run_job_blocking(server, lane, &blas, job)?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
    })?;
    Ok((JOBS * ROUNDS) as f64 / t.elapsed().as_secs_f64())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn run() -> Result<()> {
    let dev = Device::new(0)?;
    dev.set_current()?;
    let opts = StreamOptions {
        non_blocking: true,
        priority: None,
    };
    let w_host = weights();
    let w_f32 = to_f32(&w_host);
    let lanes = (0..LANES)
        .map(|_| {
            let stream = dev.create_stream(opts)?;
            let blas = Mutex::new(Blas::new(&stream)?);
            let w = DeviceBuffer::from_host(&dev, &w_f32, &stream)?;
            Ok(Lane { stream, blas, w })
        })
        .collect::<Result<Vec<_>>>()?;
    let prep = Prep::load(&dev)?;
    let w_sums = w_host.chunks_exact(K).map(|r| r.iter().sum()).collect();

    // The CPU reference's matrix products, one per job, on as many threads as the pool.
    let next = AtomicUsize::new(0);
    let mut xws: Vec<(usize, Vec<i64>, Vec<i64>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..LANES)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let id = next.fetch_add(1, Ordering::Relaxed);
                        if id >= JOBS {
                            return mine;
                        }
                        let x = input(id);
                        let xw = times_transposed(&x, &w_host, N);
                        mine.push((id, x, xw));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    xws.sort_by_key(|(id, _, _)| *id);
    let mut jobs = xws
        .into_iter()
        .map(|(id, x, xw)| {
            let s = &lanes[id % LANES].stream;
            Ok(Job {
                id,
                input: PinnedBuffer::from_slice(&dev, &to_f32(&x))?,
                output: PinnedBuffer::zeroed(&dev, M * N)?,
                dev: DeviceSide {
                    x: DeviceBuffer::allocate(&dev, M * K, s)?,
                    y: DeviceBuffer::allocate(&dev, M * K, s)?,
                    z: DeviceBuffer::allocate(&dev, M * N, s)?,
                },
                xw,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    for lane in &lanes {
        lane.stream.sync()?;
    }
    let gram = Arc::new(times_transposed(&w_host, &w_host, N));
    let server = Arc::new(Server {
        lanes,
        prep,
        w_sums,
    });

    // As many tokio workers as blocking threads.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(LANES)
        .build()
        .map_err(ExampleError::Runtime)?;
    rt.block_on(async {
        let tasks: Vec<_> = (0..LANES)
            .map(|lane| tokio::spawn(warm_up(Arc::clone(&server), lane, Arc::clone(&gram))))
            .collect();
        for task in tasks {
            task.await
                .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))?;
        }
        Ok::<_, ExampleError>(())
    })?;

    println!(
        "async_gemm_jobs: {JOBS} jobs x {ROUNDS} requests on {LANES} streams on {}; a request: \
         upload {} KiB, scale_shift kernel, GEMM {M}x{K} . ({N}x{K})^T, download {} KiB; \
         every result checked exactly against the CPU",
        dev.name()?,
        M * K * 4 / 1024,
        M * N * 4 / 1024
    );
    println!(
        "async_gemm_jobs: warm-up: each stream's first GEMM (W.W^T) queued, awaited with \
         stream.completion().await, checked"
    );
    let (mut awaited, mut blocking) = (Vec::new(), Vec::new());
    for pass in 1..=PASSES {
        let b = blocking_pass(&server, &mut jobs)?;
        let (a, back) = awaited_pass(&rt, &server, jobs)?;
        jobs = back;
        println!(
            "async_gemm_jobs: pass {pass}: awaited {a:.0} jobs/s, blocking {b:.0} jobs/s, \
             ratio {:.2}",
            a / b
        );
        awaited.push(a);
        blocking.push(b);
    }
    drop(jobs);
    let (a, b) = (median(awaited), median(blocking));
    println!(
        "async_gemm_jobs: awaited (tokio, {LANES} workers, to_vec_async): {a:.0} jobs/s \
         (median of {PASSES} passes)"
    );
    println!(
        "async_gemm_jobs: blocking ({LANES} threads, Stream::sync): {b:.0} jobs/s \
         (median of {PASSES} passes)"
    );
    println!("async_gemm_jobs: ratio awaited/blocking: {:.2}", a / b);
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        // A driver older than cuBLAS's CUDA major (the first `Blas::new`
        // says so): say which driver it needs.
        Err(ExampleError::Blas(e)) if e.required_driver().is_some() => {
            println!("async_gemm_jobs: not on this driver: {}", e.report());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("async_gemm_jobs: {}", cudars_core::Report::new(&e));
            ExitCode::FAILURE
        }
    }
}
