//! Safe, idiomatic CUDA for Rust.
//!
//! This crate is being built: it will offer `Device`, `Context`, `Stream`, `Event`,
//! `Buffer` and memory resources, `Program` (NVRTC/NVVM), `Linker`, `ObjectCode`,
//! `Library`, `Kernel`, `LaunchConfig` and launch, graphs, and system information,
//! matching the capabilities of NVIDIA's `cuda.core`.
//!
//! ```text
//! Nothing is exported yet: the crate builds and links without CUDA installed.
//! ```
