//! The cost of an NVTX range, printed as JSON lines like the other benchmarks:
//!
//! * `nvtx_range_ns`: `cudars_nvtx::range("…")` created and dropped (a push and a
//!   pop) with no tool attached: what instrumentation costs a program that is not
//!   being profiled.
//! * `nvtx_domain_range_ns`: the same in a [`Domain`], with a registered string.
//! * `nvtx_range_tool_ns`: the range with a tool attached (this package's recording
//!   library, with no log file: the crossing into a tool and back, and the
//!   message's copy, not a profiler's own work).
//!
//! Each figure is the median of 7 runs of 2^20 ranges. The tool is attached in a
//! child process (NVTX reads its environment once per process).
//!
//! Run: `cargo bench -p cudars-nvtx-inject` (or `bench.sh` in a GPU test package).

// Benchmark code: a failed step is a failed run, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use cudars_nvtx::Domain;

const ITERS: u32 = 1 << 20;
const CHILD: &str = "CUDARS_NVTX_BENCH_CHILD";

fn line(metric: &str, value: f64) {
    println!("{{\"peer\":\"cuda-rs\",\"metric\":\"{metric}\",\"value\":{value:.2}}}");
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ns_per(f: impl Fn()) -> f64 {
    median(
        (0..7)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..ITERS {
                    f();
                }
                t.elapsed().as_nanos() as f64 / f64::from(ITERS)
            })
            .collect(),
    )
}

/// The recording library: beside this binary (`cargo bench`) or in the GPU
/// package's `lib/nvtx/`.
fn tool_library() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [
        dir.join("libcudars_nvtx_inject.so"),
        dir.join("../lib/nvtx/libcudars_nvtx_inject.so"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

fn main() {
    if std::env::var_os(CHILD).is_some() {
        assert!(cudars_nvtx::tool_attached(), "the tool did not attach");
        line(
            "nvtx_range_tool_ns",
            ns_per(|| drop(cudars_nvtx::range(black_box("step")))),
        );
        return;
    }
    assert!(
        !cudars_nvtx::tool_attached(),
        "run the benchmark without NVTX_INJECTION64_PATH (it attaches the tool itself)"
    );
    line(
        "nvtx_range_ns",
        ns_per(|| drop(cudars_nvtx::range(black_box("step")))),
    );
    let domain = Domain::new("bench");
    let s = domain.register_string("step");
    line(
        "nvtx_domain_range_ns",
        ns_per(|| drop(domain.range(black_box(&s)))),
    );
    match tool_library() {
        Some(lib) => {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .env(CHILD, "1")
                .env(cudars_nvtx::INJECTION_PATH_VAR, lib)
                .env_remove("CUDARS_NVTX_INJECT_LOG")
                .output()
                .unwrap();
            print!("{}", String::from_utf8_lossy(&out.stdout));
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        None => {
            eprintln!("nvtx bench: no libcudars_nvtx_inject.so beside the binary: no tool figure")
        }
    }
}
