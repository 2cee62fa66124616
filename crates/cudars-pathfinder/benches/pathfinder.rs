//! Benchmark of the pathfinder, printed as JSON lines beside `cuda.pathfinder`'s
//! figures (`../shared/reference/peers.md`):
//!
//! * `pathfinder_cached_ns`: a cached `load_nvidia_dynamic_lib` call.
//! * `pathfinder_locate_<lib>_us`: the search alone, no loading (median).
//! * `pathfinder_load_<lib>_ms`: the first load in a fresh process (median of 5
//!   child processes), as Python's `load_<lib>_ms`.
//!
//! Run: `cargo bench -p cudars-pathfinder` (or `bench.sh` from `cargo xtask package-tests`).

// Test and benchmark code: a failed step is a failed run, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::time::Instant;

use cudars_pathfinder::{load_nvidia_dynamic_lib, locate_nvidia_dynamic_lib};

const LIBS: &[&str] = &[
    "cudart",
    "nvrtc",
    "nvJitLink",
    "nvvm",
    "cublas",
    "nvml",
    "cuda",
];

fn line(metric: &str, value: f64, extra: &str) {
    println!("{{\"peer\":\"cuda-rs\",\"metric\":\"{metric}\",\"value\":{value:.4}{extra}}}");
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn child(lib: &str) {
    let t = Instant::now();
    let r = load_nvidia_dynamic_lib(lib);
    let ms = t.elapsed().as_secs_f64() * 1e3;
    match r {
        Ok(l) => println!("{ms} {}", l.found_via()),
        Err(e) => println!("{ms} ERR:{}", e.kind_name()),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child-load") {
        child(&args[i + 1]);
        return;
    }
    let exe = std::env::current_exe().expect("bench executable path");

    for lib in LIBS {
        let mut times = Vec::new();
        let mut via = String::new();
        for _ in 0..5 {
            let out = std::process::Command::new(&exe)
                .args(["--child-load", lib])
                .output()
                .expect("child run");
            let text = String::from_utf8_lossy(&out.stdout);
            let mut parts = text.split_whitespace();
            times.push(
                parts
                    .next()
                    .and_then(|t| t.parse().ok())
                    .unwrap_or(f64::NAN),
            );
            via = parts.next().unwrap_or("?").to_string();
        }
        line(
            &format!("pathfinder_load_{lib}_ms"),
            median(times),
            &format!(",\"found_via\":\"{via}\""),
        );
    }

    for lib in LIBS {
        let _ = locate_nvidia_dynamic_lib(lib);
        let mut times = Vec::with_capacity(200);
        let mut via = String::from("ERR");
        for _ in 0..200 {
            let t = Instant::now();
            let r = black_box(locate_nvidia_dynamic_lib(black_box(lib)));
            times.push(t.elapsed().as_secs_f64() * 1e6);
            if let Ok(l) = r {
                via = l.found_via.to_string();
            }
        }
        line(
            &format!("pathfinder_locate_{lib}_us"),
            median(times),
            &format!(",\"found_via\":\"{via}\""),
        );
    }

    let Some(lib) = LIBS.iter().find(|l| load_nvidia_dynamic_lib(l).is_ok()) else {
        eprintln!("pathfinder bench: no library could be loaded; set VIRTUAL_ENV or CUDA_HOME");
        return;
    };
    const N: u32 = 10_000_000;
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..N {
            black_box(load_nvidia_dynamic_lib(black_box(lib)).is_ok());
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e9 / f64::from(N));
    }
    line("pathfinder_cached_ns", best, &format!(",\"lib\":\"{lib}\""));
}
