//! Nothing here: the test is `tests/paths.rs`, which uses `kernels!` with no
//! crate named `cudars_core` in scope (this package depends on `cudars` and on
//! `cudars-core` renamed `cuda-core`).
