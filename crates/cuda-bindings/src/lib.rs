//! Raw bindings to the CUDA C APIs, loaded at run time through `cuda-pathfinder`.
//!
//! This crate is being built: it will carry bindgen-generated FFI for the driver
//! (`cuda.h`), runtime (`cuda_runtime_api.h`), NVRTC, nvJitLink, NVVM and NVML, with
//! every entry point resolved at run time so nothing links to CUDA at build time.
//!
//! ```text
//! Nothing is exported yet: the crate builds and links without CUDA installed.
//! ```
