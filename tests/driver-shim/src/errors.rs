//! The driver's `CUresult` names and codes, for fault rules
//! (`CUDA_ERROR_OUT_OF_MEMORY` → 2), read from cudars-bindings' generated
//! `CUresult::name` table, which has every code `cuda.h` names; a test checks
//! that each name of `cuda.h` is found.

use std::ffi::c_uint;

use cudars_bindings::driver::CUresult;

/// `CUDA_ERROR_UNKNOWN`: a random schedule's error unless one is named (999,
/// the highest code `cuda.h` has).
pub const CUDA_ERROR_UNKNOWN: c_uint = cudars_bindings::driver::CUDA_ERROR_UNKNOWN.0;

/// The code of the `CUresult` named `name`.
pub fn code_of(name: &str) -> Option<c_uint> {
    (0..=CUDA_ERROR_UNKNOWN).find(|&c| CUresult(c).name() == Some(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_of_cuda_h_is_here() {
        let generated =
            include_str!("../../../crates/cudars-bindings/src/generated/driver/types.rs");
        let in_header: Vec<&str> = generated
            .lines()
            .filter_map(|l| l.strip_prefix("pub const "))
            .filter_map(|l| l.split_once(": cudaError_enum"))
            .map(|(name, _)| name)
            .collect();
        assert!(in_header.len() > 100, "{}", in_header.len());
        for name in &in_header {
            assert!(code_of(name).is_some(), "{name} is missing");
        }
        assert_eq!(code_of("CUDA_ERROR_OUT_OF_MEMORY"), Some(2));
        assert_eq!(code_of("CUDA_ERROR_NOPE"), None);
    }
}
