//! A server's view of GPU work: 64 jobs in flight at once on a small pool of
//! streams, each an upload from page-locked memory, a kernel and a download,
//! awaited on a multi-threaded tokio runtime (no thread blocked per job), every
//! result checked; then the same jobs written with blocking `Stream::sync` on a
//! pool of threads (as many threads as the runtime has workers). Each side
//! downloads two ways: into a page-locked buffer the job owns (handed to the
//! future and back), and into a new vector (`to_vec_async` through the staging
//! pool, `to_vec` when blocking). Prints jobs per second for each.
//!
//! The same server with a cuBLAS GEMM in each job (upload, kernel, GEMM,
//! download) is cudars-blas's `async_gemm_jobs` example: cudars-core cannot
//! depend on cudars-blas.
//!
//! `cargo run -p cudars-core --release --example async_jobs`

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use cudars_core::{
    CompileTarget, ConstPtr, Device, DeviceBuffer, LaunchConfig, MutPtr, PinnedBuffer, Program,
    ProgramOptions, SourceCode, Stream, StreamOptions, TypedKernel,
};

/// This example's errors: CUDA's, the runtime's, or a wrong result (this
/// program's finding, not CUDA's).
#[derive(Debug, thiserror::Error)]
enum ExampleError {
    /// A CUDA call failed.
    #[error(transparent)]
    Cuda(#[from] cudars_core::Error),
    /// The tokio runtime did not start.
    #[error("starting the tokio runtime: {0}")]
    Runtime(std::io::Error),
    /// A job's result was wrong.
    #[error("job {id}, round {round}: the result is wrong")]
    Wrong { id: usize, round: usize },
}

type Result<T, E = ExampleError> = std::result::Result<T, E>;

const SRC: &str = r#"
extern "C" __global__ void affine(const float* x, float* y, float a, float b,
                                  unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b;
}
"#;

/// Jobs in flight at once.
const JOBS: usize = 64;
/// Streams in the pool.
const STREAMS: usize = 8;
/// Rounds each job runs (upload, kernel, download, check).
const ROUNDS: usize = 20;
/// Elements per job.
const N: usize = 1 << 18;

type Affine = TypedKernel<(ConstPtr<f32>, MutPtr<f32>, f32, f32, u64)>;

/// One job's memory: its input and output, on the host (page-locked) and on
/// the device.
struct Job {
    id: usize,
    up: PinnedBuffer<f32>,
    down: PinnedBuffer<f32>,
    x: DeviceBuffer<f32>,
    y: DeviceBuffer<f32>,
}

impl Job {
    fn new(dev: &Device, s: &Stream, id: usize) -> cudars_core::Result<Self> {
        let input: Vec<f32> = (0..N).map(|i| (i % 1000) as f32).collect();
        Ok(Self {
            id,
            up: PinnedBuffer::from_slice(dev, &input)?,
            down: PinnedBuffer::zeroed(dev, N)?,
            x: DeviceBuffer::allocate(dev, N, s)?,
            y: DeviceBuffer::allocate(dev, N, s)?,
        })
    }
}

/// Job `id`'s constants for `round`.
fn coefficients(id: usize, round: usize) -> (f32, f32) {
    ((id % 7) as f32 + 1.0, round as f32)
}

/// Whether `out` is job `id`'s right result for `round`.
fn check(id: usize, out: &[f32], round: usize) -> bool {
    let (a, b) = coefficients(id, round);
    out.iter()
        .enumerate()
        .all(|(i, &v)| v == a * (i % 1000) as f32 + b)
}

/// Queues job `id`'s kernel of `round` on `s`: `y = a * x + b`.
fn launch(
    k: &Affine,
    s: &Stream,
    x: &DeviceBuffer<f32>,
    y: &mut DeviceBuffer<f32>,
    id: usize,
    round: usize,
) -> cudars_core::Result<()> {
    let (a, b) = coefficients(id, round);
    let grid = LaunchConfig::new(N.div_ceil(256) as u32, 256u32);
    // SAFETY: the kernel reads and writes `n` = both views' length elements.
    unsafe { k.launch(s, &grid, (x.view(), y.view_mut(), a, b, N as u64)) }
}

/// Where a round's result goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Download {
    /// Into the job's page-locked buffer.
    Pinned,
    /// Into a new vector.
    Vec,
}

/// The jobs on a tokio runtime: each round awaited, no thread blocked.
async fn run_async(job: Job, k: Arc<Affine>, s: Stream, how: Download) -> Result<Job> {
    let Job {
        id,
        mut up,
        mut down,
        mut x,
        mut y,
    } = job;
    for round in 0..ROUNDS {
        // Each future owns its page-locked buffer until its copy is done.
        let upload = x.view_mut().copy_from_pinned_async(up, &s);
        launch(&k, &s, &x, &mut y, id, round)?;
        let ok = match how {
            Download::Pinned => {
                let download = y.view().copy_to_pinned_async(down, &s);
                up = upload.await?;
                down = download.await?;
                check(id, down.as_slice()?, round)
            }
            Download::Vec => {
                let download = y.to_vec_async(&s);
                up = upload.await?;
                check(id, &download.await?, round)
            }
        };
        if !ok {
            return Err(failed(id, round));
        }
    }
    Ok(Job { id, up, down, x, y })
}

/// The same work with a blocking wait per round.
fn run_blocking(job: &mut Job, k: &Affine, s: &Stream, how: Download) -> Result<()> {
    for round in 0..ROUNDS {
        job.x.view_mut().copy_from_pinned(&job.up, s)?;
        launch(k, s, &job.x, &mut job.y, job.id, round)?;
        let ok = match how {
            Download::Pinned => {
                job.y.view().copy_to_pinned(&mut job.down, s)?;
                s.sync()?;
                check(job.id, job.down.as_slice()?, round)
            }
            // Waits for the stream, the copy included.
            Download::Vec => check(job.id, &job.y.to_vec(s)?, round),
        };
        if !ok {
            return Err(failed(job.id, round));
        }
    }
    Ok(())
}

/// Jobs per second of every job's rounds on a pool of threads, one per stream.
fn blocking_rate(jobs: &mut [Job], k: &Affine, streams: &[Stream], how: Download) -> Result<f64> {
    let t = Instant::now();
    let next = AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<&mut Job>> =
        jobs.iter_mut().map(std::sync::Mutex::new).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = streams
            .iter()
            .map(|s| {
                let (next, slots) = (&next, &slots);
                scope.spawn(move || -> Result<()> {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(slot) = slots.get(i) else {
                            return Ok(());
                        };
                        let mut job = slot.lock().unwrap_or_else(|p| p.into_inner());
                        run_blocking(&mut job, k, s, how)?;
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
    })?;
    Ok((JOBS * ROUNDS) as f64 / t.elapsed().as_secs_f64())
}

/// Jobs per second of every job a task on `rt`, all in flight at once; the
/// jobs come back.
fn async_rate(
    rt: &tokio::runtime::Runtime,
    jobs: Vec<Job>,
    k: &Arc<Affine>,
    streams: &[Stream],
    how: Download,
) -> Result<(f64, Vec<Job>)> {
    let t = Instant::now();
    let jobs = rt.block_on(async {
        let tasks: Vec<_> = jobs
            .into_iter()
            .enumerate()
            .map(|(i, job)| {
                tokio::spawn(run_async(job, k.clone(), streams[i % STREAMS].clone(), how))
            })
            .collect();
        let mut done = Vec::new();
        for t in tasks {
            done.push(
                t.await
                    .unwrap_or_else(|p| std::panic::resume_unwind(p.into_panic()))?,
            );
        }
        Ok::<_, ExampleError>(done)
    })?;
    Ok(((JOBS * ROUNDS) as f64 / t.elapsed().as_secs_f64(), jobs))
}

fn failed(id: usize, round: usize) -> ExampleError {
    ExampleError::Wrong { id, round }
}

fn run() -> Result<()> {
    let dev = Device::new(0)?;
    dev.set_current()?;
    let kernel = Program::new(SourceCode::Cxx(SRC), ProgramOptions::for_device(&dev)?)?
        .compile(CompileTarget::Cubin, &[])?
        .get_kernel("affine")?;
    let k = Arc::new(Affine::new(kernel)?);
    let opts = StreamOptions {
        non_blocking: true,
        priority: None,
    };
    let streams: Vec<Stream> = (0..STREAMS)
        .map(|_| dev.create_stream(opts))
        .collect::<cudars_core::Result<_>>()?;
    let mut jobs: Vec<Job> = (0..JOBS)
        .map(|i| Job::new(&dev, &streams[i % STREAMS], i))
        .collect::<cudars_core::Result<_>>()?;
    for s in &streams {
        s.sync()?;
    }

    // As many tokio workers as blocking threads.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(STREAMS)
        .build()
        .map_err(ExampleError::Runtime)?;
    let mut rates = Vec::new();
    for how in [Download::Pinned, Download::Vec] {
        let blocking = blocking_rate(&mut jobs, &k, &streams, how)?;
        let (awaited, back) = async_rate(&rt, jobs, &k, &streams, how)?;
        jobs = back;
        rates.push((how, awaited, blocking));
    }
    drop(jobs);

    println!(
        "{JOBS} jobs x {ROUNDS} rounds of {} KiB on {STREAMS} streams, every result checked:",
        N * 4 / 1024
    );
    for (how, awaited, blocking) in rates {
        let what = match how {
            Download::Pinned => "into the job's pinned buffer",
            Download::Vec => "into a new Vec",
        };
        println!("  download {what}:");
        println!("    tokio ({STREAMS} workers), awaited:       {awaited:>10.0} jobs/s");
        println!("    {STREAMS} threads, blocking Stream::sync: {blocking:>10.0} jobs/s");
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("async_jobs: {}", cudars_core::Report::new(&e));
            ExitCode::FAILURE
        }
    }
}
