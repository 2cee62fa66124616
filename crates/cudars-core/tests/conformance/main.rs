//! `cuda.core`'s own test suite, ported: one module per Python test file
//! (`cuda_core/tests/<dir>/test_<name>.py` is `<dir>_<name>.rs`, `test_<name>.py` at
//! the top is `<name>.rs`), at the commit pinned by `docs/reference/cuda-core-tests.txt`.
//!
//! Each test is named after the Python test it ports (a method `TestX::test_y` as
//! `TestX__test_y`, a parameter case `test_x[a-b]` as `test_x__a_b`), keeps its
//! sources and values, and asserts what it asserts, a Python exception being an
//! `Err` of the matching kind. A test that fails because `cudars-core` does
//! otherwise is `#[ignore = "differs: …"]`, saying how. The manifest
//! (`docs/reference/cuda-core-tests-manifest.toml`, checked by [`manifest`]) maps
//! every Python id to its Rust test here or says why it has none.
//!
//! One test binary for the whole suite: one link instead of one per file.
//! Tests that need a GPU fail without one when `CUDA_TEST_REQUIRE_GPU=1` (the GPU
//! package sets it) and otherwise print `SKIPPED` and return; tests that need a
//! library from NVIDIA's wheels (NVRTC, nvJitLink, NVVM) fail without it when
//! `CUDA_RS_REQUIRE_WHEELS=1`.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// `<Class>__<test>`: the Python names kept whole, which the snake-case lint does not allow.
#![allow(non_snake_case)]

#[cfg(target_os = "linux")]
mod checkpoint;
mod context;
mod cuda_utils;
mod device;
mod event;
#[cfg(all(unix, feature = "gl"))]
#[path = "../gl_headless/mod.rs"]
mod gl_headless;
mod graph_definition;
mod graph_definition_errors;
mod graph_definition_integration;
mod graph_definition_lifetime;
mod graph_definition_mutation;
mod graph_device_launch;
mod graph_graph_builder;
mod graph_graph_builder_conditional;
mod graph_graph_memory_resource;
mod graph_graph_update;
mod graph_options;
#[cfg(all(unix, feature = "gl", feature = "dlpack"))]
mod graphics;
mod green_context;
mod host;
mod launcher;
mod linker;
mod manifest;
mod memory;
#[cfg(all(feature = "ipc", target_os = "linux"))]
mod memory_ipc_errors;
#[cfg(all(feature = "ipc", target_os = "linux"))]
mod memory_ipc_event_ipc;
#[cfg(all(feature = "ipc", target_os = "linux"))]
mod memory_ipc_leaks;
#[cfg(all(feature = "ipc", target_os = "linux"))]
mod memory_ipc_memory_ipc;
#[cfg(all(feature = "ipc", target_os = "linux"))]
mod memory_ipc_peer_access;
#[cfg(all(feature = "ipc", target_os = "linux"))]
mod memory_ipc_send_buffers;
mod memory_managed_ops;
mod memory_peer_access;
mod module;
mod object_protocols;
mod program;
#[cfg(feature = "cache")]
mod program_cache;
#[cfg(feature = "cache")]
mod program_cache_multiprocess;
#[cfg(feature = "cache")]
mod program_compile_cache;
mod stream;
#[cfg(feature = "dlpack")]
mod strided_layout;
#[cfg(feature = "nvml")]
mod system_nvml_context;
#[cfg(feature = "nvml")]
mod system_system_device;
#[cfg(feature = "nvml")]
mod system_system_system;
#[cfg(all(feature = "tensor-maps", feature = "dlpack", feature = "half"))]
mod tensor_map;
#[cfg(feature = "arrays")]
mod texture_surface;
#[cfg(feature = "dlpack")]
mod utils;
#[cfg(feature = "dlpack")]
mod utils_dlpack;
