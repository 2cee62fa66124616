//! Checkpoint and restore a running CUDA process: this program starts a worker
//! (itself, as `checkpoint worker`) that fills 1 GiB of device memory and waits; it
//! then locks the worker, checkpoints it (the worker's memory moves to the host and
//! the GPU is released), restores and unlocks it, timing each step. The worker
//! finds its data intact.
//!
//! `cargo run -p cudars-core --example checkpoint` (Linux, driver 555 or later).

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use cudars_core::checkpoint::{Process, ProcessState};
use cudars_core::{Device, DeviceBuffer, StreamOptions};

const BYTES: usize = 1 << 30;
const PATTERN: u32 = 0x5eed_c0de;

/// This example's errors: CUDA's, talking to the worker process, or a check
/// that failed (this program's findings, not CUDA's).
#[derive(Debug, thiserror::Error)]
enum ExampleError {
    /// A CUDA call failed.
    #[error(transparent)]
    Cuda(#[from] cudars_core::Error),
    /// Starting or talking to the worker failed.
    #[error("{context}: {source}")]
    Io {
        context: &'static str,
        source: std::io::Error,
    },
    /// Something is not as it should be.
    #[error("{context}: {message}")]
    Failed {
        context: &'static str,
        message: String,
    },
}

type Result<T, E = ExampleError> = std::result::Result<T, E>;

fn io(context: &'static str) -> impl FnOnce(std::io::Error) -> ExampleError {
    move |source| ExampleError::Io { context, source }
}

fn failed(context: &'static str, message: String) -> ExampleError {
    ExampleError::Failed { context, message }
}

/// The worker: fill, say READY, wait for a line, check.
fn worker() -> Result<()> {
    let dev = Device::new(0)?;
    dev.set_current()?;
    let s = dev.create_stream(StreamOptions::default())?;
    let mut b = DeviceBuffer::<u32>::allocate(&dev, BYTES / 4, &s)?;
    b.fill(PATTERN, &s)?;
    s.sync()?;
    println!("READY");
    std::io::stdout()
        .flush()
        .map_err(io("writing to the parent"))?;
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(io("waiting for the parent"))?;
    let back = b.to_vec(&s)?;
    let good = back.iter().filter(|&&x| x == PATTERN).count();
    println!(
        "worker: {good} of {} words intact after the restore",
        BYTES / 4
    );
    if good != BYTES / 4 {
        return Err(failed("checking the worker's data", "data lost".into()));
    }
    Ok(())
}

fn timed<T>(what: &str, f: impl FnOnce() -> cudars_core::Result<T>) -> Result<T> {
    let t = Instant::now();
    let r = f()?;
    println!("{what:<12} {:>8.1} ms", t.elapsed().as_secs_f64() * 1e3);
    Ok(r)
}

fn controller() -> Result<()> {
    let dev = Device::new(0)?;
    let exe = std::env::current_exe().map_err(io("finding this program"))?;
    let mut child = Command::new(exe)
        .arg("worker")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(io("starting the worker"))?;
    let mut out = BufReader::new(
        child
            .stdout
            .take()
            .ok_or_else(|| failed("starting the worker", "no pipe to its output".into()))?,
    );
    let mut line = String::new();
    out.read_line(&mut line).map_err(io("reading the worker"))?;
    if line.trim() != "READY" {
        let _ = child.kill();
        return Err(failed(
            "starting the worker",
            format!("it said {line:?} (see its error above)"),
        ));
    }
    let p = Process::new(child.id())?;
    println!(
        "worker pid {}: {:?}, restore thread {}",
        p.pid(),
        p.state()?,
        p.restore_thread_id()?
    );
    let (free_before, total) = dev.memory_info()?;
    let cycle = || -> Result<usize> {
        timed("lock", || p.lock(Some(Duration::from_secs(30))))?;
        timed("checkpoint", || p.checkpoint())?;
        let (free_during, _) = dev.memory_info()?;
        println!(
            "state {:?}; free GPU memory {} MiB -> {} MiB of {} MiB",
            p.state()?,
            free_before >> 20,
            free_during >> 20,
            total >> 20
        );
        timed("restore", || p.restore(&[]))?;
        timed("unlock", || p.unlock())?;
        Ok(free_during)
    };
    let free_during = match cycle() {
        Ok(f) => f,
        Err(e) => {
            // Leave no worker locked or checkpointed behind: it would wait forever.
            let _ = p.restore(&[]);
            let _ = p.unlock();
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    };
    let state = p.state()?;
    println!("state {state:?}");
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| failed("resuming the worker", "no pipe to its input".into()))?;
    writeln!(stdin, "GO").map_err(io("resuming the worker"))?;
    drop(stdin);
    for l in out.lines() {
        println!("{}", l.map_err(io("reading the worker"))?);
    }
    let status = child.wait().map_err(io("waiting for the worker"))?;
    if !status.success() || state != ProcessState::Running || free_during < free_before + BYTES {
        return Err(failed(
            "checkpointing the worker",
            format!("worker {status}, state {state:?}"),
        ));
    }
    Ok(())
}

fn main() -> ExitCode {
    let r = if std::env::args().nth(1).as_deref() == Some("worker") {
        worker()
    } else {
        controller()
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        // An older driver lacks the feature: say which driver it needs.
        Err(ExampleError::Cuda(e)) if e.required_driver().is_some() => {
            println!("checkpoint: not on this driver: {}", e.report());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("checkpoint: {}", cudars_core::Report::new(&e));
            ExitCode::FAILURE
        }
    }
}
