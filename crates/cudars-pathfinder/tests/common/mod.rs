//! What the pathfinder's integration tests share.

use std::path::{Path, PathBuf};

/// The `cudars-pathfinder` CLI: `CUDA_PATHFINDER_BIN`, else the one cargo built.
pub(crate) fn cli() -> PathBuf {
    if let Some(p) = std::env::var_os("CUDA_PATHFINDER_BIN") {
        return PathBuf::from(p);
    }
    match option_env!("CARGO_BIN_EXE_cuda-pathfinder") {
        Some(p) => PathBuf::from(p),
        // Cargo 1.85 with `-Zbuild-std` (the Windows cross build) does not set it: the
        // tool is built beside `deps/`, where this test binary is.
        None => {
            let exe = std::env::current_exe().unwrap_or_default();
            let dir = exe
                .parent()
                .and_then(Path::parent)
                .unwrap_or(Path::new("."));
            dir.join(format!("cudars-pathfinder{}", std::env::consts::EXE_SUFFIX))
        }
    }
}
