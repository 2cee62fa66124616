//! Fuzzes cudars-core's image check (see `cudars_fuzz::image`). With
//! `cargo fuzz` (nightly, `--cfg fuzzing`) a libFuzzer target; built
//! otherwise, it replays the files or directories given (the seed corpus).
#![cfg_attr(fuzzing, no_main)]

#[cfg(fuzzing)]
libfuzzer_sys::fuzz_target!(|data: &[u8]| cudars_fuzz::image(data));

#[cfg(not(fuzzing))]
fn main() {
    cudars_fuzz::replay(cudars_fuzz::image);
}
