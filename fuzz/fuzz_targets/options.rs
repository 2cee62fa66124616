//! Fuzzes cudars-core's free-form option parser (see `cudars_fuzz::options`).
//! With `cargo fuzz` (nightly, `--cfg fuzzing`) a libFuzzer target; built
//! otherwise, it replays the files or directories given (the seed corpus).
#![cfg_attr(fuzzing, no_main)]

#[cfg(fuzzing)]
libfuzzer_sys::fuzz_target!(|data: &[u8]| cudars_fuzz::options(data));

#[cfg(not(fuzzing))]
fn main() {
    cudars_fuzz::replay(cudars_fuzz::options);
}
