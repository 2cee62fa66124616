//! Awaiting GPU work (issue 29), printed as JSON lines like `core.rs`:
//! - `await_latency_us`: an empty kernel queued, then `stream.completion()`
//!   awaited on a current-thread tokio runtime (the default: a first-poll spin of
//!   up to 20 µs); `sync_latency_us`: the same with `Stream::sync`, interleaved
//!   in the same rounds (C's figures: `c/await.c`); `await_nospin_latency_us`:
//!   the await with `Completion::spin_first(0)` (the reactor's wake);
//! - `spin_<S>us_work_<W>us_ratio`: for kernels that run about `W` µs, the await
//!   with a first-poll spin of `S` µs over `Stream::sync` (how the default
//!   spin was chosen);
//! - `await_1000_per_s`: futures resolved per second with 1,000 pending at once
//!   (an empty kernel and a completion each, on eight streams);
//! - `await_cpu_ms_per_100ms`: CPU time (user + system, the whole process) used
//!   while 1,000 futures wait on a 100 ms kernel, awaited one after another;
//!   `await_cpu_spawned_ms_per_100ms`: the same with each future its own task
//!   (all first polled while the kernel runs);
//! - `to_vec_async_1mib_us`: a 1 MiB `to_vec_async` awaited (staging pool warm),
//!   beside `to_vec_1mib_us` (`DeviceView::to_vec`, blocking).
//!
//! Run: `cargo bench -p cudars-core --bench await` (or `bench.sh` from
//! `cargo xtask package-tests`).

// Benchmark code: a failed step ends the run, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use cudars_core::{
    CompileTarget, Device, LaunchConfig, Program, ProgramOptions, SourceCode, Stream,
    StreamOptions, TypedKernel,
};

const SRC: &str = "extern \"C\" __global__ void empty() {}\n\
extern \"C\" __global__ void spin(unsigned long long cycles) {\n\
  unsigned long long t0 = clock64();\n\
  while (clock64() - t0 < cycles) {}\n}\n";

fn line(metric: &str, value: f64) {
    println!("{{\"peer\":\"cuda-rs\",\"metric\":\"{metric}\",\"value\":{value:.4}}}");
}

/// The process's CPU time so far (user + system).
#[cfg(unix)]
fn cpu_time() -> Option<Duration> {
    // SAFETY: `usage` is valid for writes.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF is always valid.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return None;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Some(tv(usage.ru_utime) + tv(usage.ru_stime))
}

/// Not measured here.
#[cfg(not(unix))]
fn cpu_time() -> Option<Duration> {
    None
}

fn main() {
    if let Err(why) = cudars_tests::gpu_status() {
        eprintln!("await bench: no GPU ({why}); nothing to measure");
        return;
    }
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let code = Program::new(
        SourceCode::Cxx(SRC),
        ProgramOptions::for_device(&dev).unwrap(),
    )
    .unwrap()
    .compile(CompileTarget::Cubin, &[])
    .unwrap();
    let empty = TypedKernel::<()>::new(code.get_kernel("empty").unwrap()).unwrap();
    let spin = TypedKernel::<(u64,)>::new(code.get_kernel("spin").unwrap()).unwrap();
    let one = LaunchConfig::new(1u32, 1u32);
    let opts = StreamOptions {
        non_blocking: true,
        priority: None,
    };
    let s = dev.create_stream(opts).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let launch_empty = |s: &Stream| {
        // SAFETY: the kernel touches no memory.
        unsafe { empty.launch(s, &one, ()) }.unwrap();
    };

    // Latency: interleaved rounds, the best round of each.
    const N: u32 = 2000;
    let (mut best_sync, mut best_await, mut best_nospin) =
        (f64::INFINITY, f64::INFINITY, f64::INFINITY);
    for round in 0..8 {
        let t = Instant::now();
        for _ in 0..N {
            launch_empty(&s);
            s.sync().unwrap();
        }
        let sync_us = t.elapsed().as_secs_f64() * 1e6 / f64::from(N);
        let t = Instant::now();
        rt.block_on(async {
            for _ in 0..N {
                launch_empty(&s);
                s.completion().await.unwrap();
            }
        });
        let await_us = t.elapsed().as_secs_f64() * 1e6 / f64::from(N);
        let t = Instant::now();
        rt.block_on(async {
            for _ in 0..N {
                launch_empty(&s);
                s.completion().spin_first(Duration::ZERO).await.unwrap();
            }
        });
        let nospin_us = t.elapsed().as_secs_f64() * 1e6 / f64::from(N);
        // The first round warms up.
        if round > 0 {
            best_sync = best_sync.min(sync_us);
            best_await = best_await.min(await_us);
            best_nospin = best_nospin.min(nospin_us);
        }
    }
    line("sync_latency_us", best_sync);
    line("await_latency_us", best_await);
    line("await_nospin_latency_us", best_nospin);

    // The spin against the work's length: the await over a blocking sync, for
    // kernels of about `work` µs (at about 1.75 GHz), best of 3 rounds of 200.
    for work in [0u64, 10, 30, 100, 300] {
        let cycles = work * 1750;
        let run = |s: &Stream| {
            // SAFETY: touches no memory.
            unsafe { spin.launch(s, &one, (cycles,)) }.unwrap();
        };
        for spin_us in [0u64, 5, 10, 20, 50] {
            let mut best = f64::INFINITY;
            for _ in 0..3 {
                let t = Instant::now();
                for _ in 0..200 {
                    run(&s);
                    s.sync().unwrap();
                }
                let sync = t.elapsed().as_secs_f64();
                let t = Instant::now();
                rt.block_on(async {
                    for _ in 0..200 {
                        run(&s);
                        s.completion()
                            .spin_first(Duration::from_micros(spin_us))
                            .await
                            .unwrap();
                    }
                });
                best = best.min(t.elapsed().as_secs_f64() / sync);
            }
            line(&format!("spin_{spin_us}us_work_{work}us_ratio"), best);
        }
    }

    // Throughput with 1,000 futures pending at once.
    let streams: Vec<Stream> = (0..8).map(|_| dev.create_stream(opts).unwrap()).collect();
    let mut best = 0f64;
    for _ in 0..5 {
        let t = Instant::now();
        rt.block_on(async {
            let mut pending = Vec::with_capacity(1000);
            for i in 0..1000 {
                let s = &streams[i % streams.len()];
                launch_empty(s);
                pending.push(s.completion());
            }
            for f in pending {
                f.await.unwrap();
            }
        });
        best = best.max(1000.0 / t.elapsed().as_secs_f64());
    }
    line("await_1000_per_s", best);

    // CPU time while 1,000 futures wait on a 100 ms kernel (about 1.75 GHz SM
    // clock), awaited one after another, then each its own task.
    let cycles = 175_000_000u64;
    for spawned in [false, true] {
        // SAFETY: touches no memory.
        unsafe { spin.launch(&s, &one, (cycles,)) }.unwrap();
        let pending: Vec<_> = (0..1000).map(|_| s.completion()).collect();
        let (wall, cpu) = (Instant::now(), cpu_time());
        rt.block_on(async {
            if spawned {
                let tasks: Vec<_> = pending.into_iter().map(tokio::spawn).collect();
                for t in tasks {
                    t.await.unwrap().unwrap();
                }
            } else {
                for f in pending {
                    f.await.unwrap();
                }
            }
        });
        let wall = wall.elapsed();
        if let (Some(before), Some(after)) = (cpu, cpu_time()) {
            let cpu = after.saturating_sub(before);
            let name = if spawned {
                "await_cpu_spawned_ms_per_100ms"
            } else {
                "await_cpu_ms_per_100ms"
            };
            line(name, cpu.as_secs_f64() * 1e3 * 0.1 / wall.as_secs_f64());
        }
    }

    // A 1 MiB download into a new vector: awaited through the staging pool,
    // and blocking.
    let buf = cudars_core::DeviceBuffer::<f32>::allocate(&dev, 1 << 18, &s).unwrap();
    s.sync().unwrap();
    let (mut best_async, mut best_blocking) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..5 {
        let t = Instant::now();
        rt.block_on(async {
            for _ in 0..200 {
                let v = buf.to_vec_async(&s).await.unwrap();
                assert_eq!(v.len(), 1 << 18);
            }
        });
        best_async = best_async.min(t.elapsed().as_secs_f64() * 1e6 / 200.0);
        let t = Instant::now();
        for _ in 0..200 {
            let v = buf.view().to_vec(&s).unwrap();
            assert_eq!(v.len(), 1 << 18);
        }
        best_blocking = best_blocking.min(t.elapsed().as_secs_f64() * 1e6 / 200.0);
    }
    line("to_vec_async_1mib_us", best_async);
    line("to_vec_1mib_us", best_blocking);
}
