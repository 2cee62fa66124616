//! The program cache on the workload of `../shared/reference/peers/bench.c` (its
//! two-kernel source): a compilation through [`compile_cached`] that hits a
//! [`FileProgramCache`], against one that compiles, printed as JSON lines with
//! peer `cuda-rs` (`cached_compile_ms`, `uncached_compile_ms`: medians, in ms).
//!
//! Needs NVRTC, not a GPU; without NVRTC it says so and measures nothing.
//! Run: `cargo bench -p cudars-core --bench cache`.

// Benchmark code: a failed step ends the run, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Instant;

use cudars_core::cache::{FileProgramCache, compile_cached};
use cudars_core::{CompileTarget, Program, ProgramOptions, SourceCode};

/// `BENCH_SRC` of `crates/cudars-bindings/tests/common/mod.rs`.
const SRC: &str = "extern \"C\" __global__ void empty(float* p, int n) {}\n\
extern \"C\" __global__ void saxpy(float a, const float* x, float* y, unsigned long long n) {\n\
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n\
  if (i < n) y[i] = a * x[i] + y[i];\n}\n";

const CACHED_RUNS: usize = 20;
const UNCACHED_RUNS: usize = 5;

fn line(metric: &str, value: f64) {
    println!("{{\"peer\":\"cuda-rs\",\"metric\":\"{metric}\",\"value\":{value:.4}}}");
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn ms(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1e3
}

fn main() {
    // Cargo passes `--bench`; there is nothing to filter.
    let version = match cudars_core::nvrtc::version() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("cache bench: no NVRTC ({e}); nothing to measure");
            return;
        }
    };
    // The GPU's architecture when there is one, else one NVRTC knows.
    let arch = match cudars_tests::gpu_status() {
        Ok(_) => cudars_core::Device::new(0).unwrap().arch().unwrap(),
        Err(_) => {
            let archs = cudars_core::nvrtc::supported_archs().unwrap();
            let n = if archs.contains(&90) {
                90
            } else {
                *archs.last().unwrap()
            };
            format!("sm_{n}")
        }
    };
    eprintln!("cache bench: NVRTC {version}, {arch}");
    let options = ProgramOptions {
        arch: Some(arch),
        ..Default::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let cache = FileProgramCache::new(dir.path()).unwrap();
    let cached = || {
        compile_cached(
            &cache,
            SourceCode::Cxx(SRC),
            options.clone(),
            CompileTarget::Cubin,
            &[],
        )
        .unwrap();
    };

    // Uncached: NVRTC every time (after one warm-up, which loads NVRTC).
    let uncached = || {
        Program::new(SourceCode::Cxx(SRC), options.clone())
            .unwrap()
            .compile(CompileTarget::Cubin, &[])
            .unwrap();
    };
    uncached();
    let uncached_ms = median((0..UNCACHED_RUNS).map(|_| ms(uncached)).collect());

    // The first call through the cache compiles and stores; then hits.
    let first_ms = ms(cached);
    assert_eq!(cache.len().unwrap(), 1);
    let cached_ms = median((0..CACHED_RUNS).map(|_| ms(cached)).collect());
    cache.clear().unwrap();
    eprintln!(
        "cache bench: miss (compile + store) {first_ms:.2} ms; hit median of {CACHED_RUNS} \
         {cached_ms:.4} ms; compile median of {UNCACHED_RUNS} {uncached_ms:.2} ms"
    );
    line("cached_compile_ms", cached_ms);
    line("uncached_compile_ms", uncached_ms);
}
