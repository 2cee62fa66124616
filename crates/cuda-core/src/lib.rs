//! Safe, idiomatic CUDA for Rust: the counterpart of NVIDIA's `cuda.core`.
//!
//! ```no_run
//! use std::sync::Arc;
//! use cuda_core::{Buffer, Device, DeviceMemoryResource, StreamOptions};
//!
//! let dev = Device::new(0)?;
//! dev.set_current()?;
//! println!("{} ({})", dev.name()?, dev.arch()?);
//! let stream = dev.create_stream(StreamOptions::default())?;
//! let pool = Arc::new(DeviceMemoryResource::default_pool(&dev)?);
//! let mut buf = Buffer::allocate(pool, 4 * 1024, &stream)?;
//! buf.copy_from_host(&[1.0f32; 1024], &stream)?;
//! let mut back = vec![0f32; 1024];
//! buf.copy_to_host(&mut back, &stream)?;
//! assert!(back.iter().all(|&x| x == 1.0));
//! # Ok::<(), cuda_core::Error>(())
//! ```
//!
//! Built on [`cuda_bindings`]; nothing links to CUDA at build time. Every failure
//! is an [`Error`] that carries CUDA's error (code, name, description) and what was
//! being done; a missing driver is an error that lists where it was searched for.
//!
//! This release covers devices, primary contexts, streams, events, buffers and
//! memory resources. Programs (NVRTC/NVVM), linking, kernels and launch, and graphs
//! are being built.

mod context;
mod device;
mod error;
mod event;
mod jit;
mod kernel;
mod launch;
mod library;
mod linker;
mod memory;
mod module;
mod object;
mod program;
mod properties;
mod stream;

pub use context::{Context, ContextOptions};
pub use cuda_bindings;
pub use device::Device;
pub use error::{Error, Result, ToolError};
pub use event::{Event, EventOptions};
pub use jit::JitOptions;
pub use kernel::{CachePreference, Kernel, KernelAttributes, Occupancy};
pub use launch::{DevicePtr, Dim3, KernelArg, LaunchConfig, launch, launch_raw};
pub use library::{Global, Library, LibraryOptions};
pub use linker::{Linker, LinkerBackend, LinkerOptions};
pub use memory::{
    Buffer, DeviceMemoryPoolOptions, DeviceMemoryResource, LegacyPinnedMemoryResource, Location,
    ManagedMemoryResource, MemoryKind, MemoryResource, PinnedMemoryResource,
    PinnedMemoryResourceOptions,
};
pub use module::{LoadingMode, Module};
pub use object::{CodeType, ObjectCode};
pub use program::{
    CompileTarget, Program, ProgramOptions, SourceCode, nvrtc_supported_archs, nvrtc_version,
};
pub use properties::DeviceProperties;
pub use stream::{Stream, StreamOptions};
