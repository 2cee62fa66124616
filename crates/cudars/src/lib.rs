//! CUDA for Rust in one dependency: every crate of cuda-rs behind a feature of its own.
//!
//! ```no_run
//! use cudars::core::{
//!     CompileTarget, ConstPtr, Device, DeviceBuffer, LaunchConfig, MutPtr, Program,
//!     ProgramOptions, SourceCode, StreamOptions, TypedKernel,
//! };
//!
//! let dev = Device::new(0)?;
//! dev.set_current()?;
//! let stream = dev.create_stream(StreamOptions::default())?;
//!
//! // Compile with NVRTC for this GPU, then type the kernel's parameters (checked once, here).
//! let src = r#"extern "C" __global__ void scale(const float *x, float *y, float a, unsigned n) {
//!     unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
//!     if (i < n) y[i] = a * x[i];
//! }"#;
//! let code = Program::new(SourceCode::Cxx(src), ProgramOptions::for_device(&dev)?)?
//!     .compile(CompileTarget::Cubin, &[])?;
//! let scale = TypedKernel::<(ConstPtr<f32>, MutPtr<f32>, f32, u32)>::new(code.get_kernel("scale")?)?;
//!
//! let n = 1024u32;
//! let x = DeviceBuffer::from_host(&dev, &vec![1.0f32; n as usize], &stream)?;
//! let mut y = DeviceBuffer::<f32>::zeroed(&dev, n as usize, &stream)?;
//! // SAFETY: `scale` reads x[0..n] and writes y[0..n]; both hold `n` floats.
//! unsafe { scale.launch(&stream, &LaunchConfig::for_elements(n.into(), 256), (x.view(), y.view_mut(), 3.0, n))? };
//! assert!(y.to_vec(&stream)?.iter().all(|&v| v == 3.0));
//! # Ok::<(), cudars::core::Error>(())
//! ```
//!
//! `cargo add cudars` gives [`core`] with all of its optional parts (its `kernels!`
//! macro, the program cache, `f16`/`bf16`, NVML's system information, the runtime's
//! version, DLPack and strided views, IPC, virtual memory, arrays and textures,
//! OpenGL interop, tensor maps); each library
//! is one more feature (`cargo add cudars --features blas,fft`):
//!
//! | feature | module | crate | what it is |
//! |---|---|---|---|
//! | `core` (default) | `cudars::core` | [`cudars-core`](https://docs.rs/cudars-core) | the safe API: devices, streams, memory, compilation, kernels, graphs |
//! | `macros` (default) | `cudars::core::kernels!` | [`cudars-core-macros`](https://docs.rs/cudars-core-macros) | typed launch functions from a `.cu` file's kernels (turns `cache` and `half` on) |
//! | `cache` (through `macros`) | `cudars::core::cache` | `cudars-core`'s `cache` feature | the program cache |
//! | `half` (through `macros`) | `cudars::core::half` | `cudars-core`'s `half` feature | `f16`/`bf16` kernel arguments, fill values and DLPack dtypes |
//! | `nvml` (default) | `cudars::core::system` | `cudars-core`'s `nvml` feature | NVML system information |
//! | `runtime` (default) | `cudars::core::versions()`'s runtime entry | `cudars-core`'s `runtime` feature | the runtime's version and location |
//! | `dlpack` (default) | `cudars::core::dlpack`, `cudars::core::StridedMemoryView` | `cudars-core`'s `dlpack` feature | DLPack, the CUDA Array Interface, strided views |
//! | `ipc` (default) | `cudars::core::IpcMemoryPool` | `cudars-core`'s `ipc` feature | pools, buffers and events shared between processes (Unix) |
//! | `vmm` (default) | `cudars::core::VirtualMemoryResource` | `cudars-core`'s `vmm` feature | virtual memory |
//! | `arrays` (default) | `cudars::core::OpaqueArray`, `TextureObject` | `cudars-core`'s `arrays` feature | arrays, textures, surfaces |
//! | `gl` (default) | `cudars::core::GraphicsResource` | `cudars-core`'s `gl` feature | OpenGL interop (turns `arrays` on) |
//! | `tensor-maps` (default) | `cudars::core::TensorMapDescriptor` | `cudars-core`'s `tensor-maps` feature | Hopper's tensor maps |
//! | `blas` | `cudars::blas` | [`cudars-blas`](https://docs.rs/cudars-blas) | cuBLAS and cuBLASLt |
//! | `rand` | `cudars::rand` | [`cudars-rand`](https://docs.rs/cudars-rand) | cuRAND generators |
//! | `solver` | `cudars::solver` | [`cudars-solver`](https://docs.rs/cudars-solver) | cuSOLVER's dense LU, Cholesky, QR, eigensolver and SVD |
//! | `fft` | `cudars::fft` | [`cudars-fft`](https://docs.rs/cudars-fft) | cuFFT plans |
//! | `nccl` | `cudars::nccl` | [`cudars-nccl`](https://docs.rs/cudars-nccl) | NCCL communicators and collectives |
//! | `file` | `cudars::file` | [`cudars-file`](https://docs.rs/cudars-file) | cuFile (GPUDirect Storage), Linux only |
//! | `nvtx` | `cudars::nvtx` | [`cudars-nvtx`](https://docs.rs/cudars-nvtx) | NVTX ranges, marks and names on the Nsight timeline |
//! | `nvtx-tracing` | `cudars::nvtx::NvtxLayer` | [`cudars-nvtx`](https://docs.rs/cudars-nvtx) | `tracing` spans as NVTX ranges |
//! | `bindings` | `cudars::bindings` | [`cudars-bindings`](https://docs.rs/cudars-bindings) | the raw FFI (driver, runtime, NVRTC, nvJitLink, NVVM, NVML) |
//! | `pathfinder` | `cudars::pathfinder` | [`cudars-pathfinder`](https://docs.rs/cudars-pathfinder) | finding and loading CUDA's libraries, headers and tools |
//!
//! The features are additive; each library feature turns `core` on, whose types
//! (streams, device views) their calls take (`nvtx` does not: NVTX needs no CUDA;
//! with `core` also on, `cudars::nvtx::TimelineName` names `core`'s objects). Nothing links to CUDA at build time:
//! the libraries are found and loaded at run time.
//!
//! # Module names
//!
//! Each module is the crate itself, re-exported: `cudars::core::Device` is
//! `cudars_core::Device`, and the two names are interchangeable (one type, one
//! version). The module `cudars::core` does not hide the standard library's `core`:
//! write `cudars::core::…` (or `use cudars::core as cuda;`). Only a
//! `use cudars::core;` (or a glob, `use cudars::*;`, which is best avoided for this
//! reason) would make a bare `core::…` path in that module mean cuda-rs' crate;
//! `::core::…` is always the standard one.
//!
//! `cudars::core::kernels!` needs no dependency on `cudars-core` of your own: the
//! code it generates names the crate through the path the macro was reached by
//! (`crate = path;` first in its input names it explicitly).
//!
//! Each crate keeps its own version (see the project's `docs/releasing.md`): a
//! release of `cudars` names the versions of the crates it re-exports, and a
//! breaking release of any of them is a breaking release of `cudars`.

#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "core")]
#[cfg_attr(docsrs, doc(cfg(feature = "core")))]
#[doc(inline)]
pub use cudars_core as core;

#[cfg(feature = "blas")]
#[cfg_attr(docsrs, doc(cfg(feature = "blas")))]
#[doc(inline)]
pub use cudars_blas as blas;

#[cfg(feature = "rand")]
#[cfg_attr(docsrs, doc(cfg(feature = "rand")))]
#[doc(inline)]
pub use cudars_rand as rand;

#[cfg(feature = "solver")]
#[cfg_attr(docsrs, doc(cfg(feature = "solver")))]
#[doc(inline)]
pub use cudars_solver as solver;

#[cfg(feature = "fft")]
#[cfg_attr(docsrs, doc(cfg(feature = "fft")))]
#[doc(inline)]
pub use cudars_fft as fft;

#[cfg(feature = "nccl")]
#[cfg_attr(docsrs, doc(cfg(feature = "nccl")))]
#[doc(inline)]
pub use cudars_nccl as nccl;

#[cfg(feature = "file")]
#[cfg_attr(docsrs, doc(cfg(feature = "file")))]
#[doc(inline)]
pub use cudars_file as file;

#[cfg(feature = "nvtx")]
#[cfg_attr(docsrs, doc(cfg(feature = "nvtx")))]
#[doc(inline)]
pub use cudars_nvtx as nvtx;

#[cfg(feature = "bindings")]
#[cfg_attr(docsrs, doc(cfg(feature = "bindings")))]
#[doc(inline)]
pub use cudars_bindings as bindings;

#[cfg(feature = "pathfinder")]
#[cfg_attr(docsrs, doc(cfg(feature = "pathfinder")))]
#[doc(inline)]
pub use cudars_pathfinder as pathfinder;

/// The README's example, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
