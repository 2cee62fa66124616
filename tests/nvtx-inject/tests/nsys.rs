//! Where Nsight Systems is installed (and a GPU is there): `nsys profile` runs the
//! `profiled_quickstart` example of cudars-nvtx and `nsys stats` finds its ranges,
//! the proof that a real profiler, not only the recording tool, receives them.
//! Elsewhere the test skips and says why (`CUDA_RS_REQUIRE_NSYS=1` makes that a
//! failure).

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

/// Set to `1`, a missing `nsys` fails this test instead of skipping it.
const REQUIRE_NSYS_VAR: &str = "CUDA_RS_REQUIRE_NSYS";

fn nsys() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").ok_or("PATH is unset")?;
    std::env::split_paths(&path)
        .map(|d| d.join("nsys"))
        .find(|p| p.is_file())
        .ok_or_else(|| "no `nsys` on PATH".to_string())
}

/// The example program: cargo's (`target/<profile>/examples/`) or the GPU
/// package's (`bin/cudars-nvtx--example-profiled_quickstart`).
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap();
    let candidates = [
        dir.join("../examples/profiled_quickstart"),
        dir.join("cudars-nvtx--example-profiled_quickstart"),
    ];
    candidates
        .iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no profiled_quickstart at {candidates:?} (cargo build -p cudars-nvtx --examples)"
            )
        })
        .clone()
}

#[test]
fn nsys_profiles_the_example_and_finds_its_ranges() {
    let test = cudars_tests::current_test_name();
    let nsys = nsys();
    let available = nsys.as_ref().map(|_| ()).map_err(Clone::clone);
    if !cudars_tests::require_or_skip(&test, "Nsight Systems", REQUIRE_NSYS_VAR, available) {
        return;
    }
    if !cudars_tests::require_gpu(&test) {
        return;
    }
    let nsys = nsys.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report");
    let out = Command::new(&nsys)
        .args([
            "profile",
            "--trace=cuda,nvtx",
            "--force-overwrite=true",
            "-o",
        ])
        .arg(&report)
        .arg(example())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nsys profile failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let rep = dir.path().join("report.nsys-rep");
    // The report's name changed over Nsight's versions: nvtx_sum, then nvtxsum.
    let stats = ["nvtx_sum", "nvtxsum"]
        .iter()
        .find_map(|r| {
            let o = Command::new(&nsys)
                .args(["stats", "--report", r, "--format", "csv"])
                .arg(&rep)
                .output()
                .ok()?;
            let s = String::from_utf8_lossy(&o.stdout).into_owned();
            (o.status.success() && s.contains("upload")).then_some(s)
        })
        .unwrap_or_else(|| panic!("nsys stats found no NVTX ranges in {}", rep.display()));
    for range in ["upload", "download", "iteration", "compile"] {
        assert!(
            stats.contains(range),
            "no `{range}` range in nsys stats:\n{stats}"
        );
    }
}
