//! Run-time compilation: CUDA C++ through NVRTC, NVVM IR through NVVM, and PTX
//! through the linker (the counterpart of `cuda.core`'s `Program` and
//! `ProgramOptions`).
//!
//! ```no_run
//! use cudars_core::{CompileTarget, Program, ProgramOptions, SourceCode};
//!
//! let src = "template<typename T> __global__ void add(T* x, T v) { x[threadIdx.x] += v; }";
//! let options = ProgramOptions {
//!     arch: Some("sm_90".into()),
//!     std: Some("c++17".into()),
//!     ..Default::default()
//! };
//! let program = Program::new(SourceCode::Cxx(src), options)?;
//! let cubin = program.compile(CompileTarget::Cubin, &["add<float>"])?;
//! println!("add<float> is {}", cubin.lowered_name("add<float>"));
//! # Ok::<(), cudars_core::Error>(())
//! ```

pub(crate) mod dispatch;
pub(crate) mod handle;
pub mod nvrtc;
pub(crate) mod nvrtc_args;
pub(crate) mod nvrtc_compile;
pub(crate) mod nvvm;
pub(crate) mod options;
pub(crate) mod program;
pub(crate) mod ptx;
pub(crate) mod target;

pub use handle::{ProgramHandle, RawProgramHandle};
pub use nvrtc::PchStatus;
pub use options::{CompilerBackend, ProgramOptions, toolkit_include_dirs};
pub use program::{Program, ProgramBackend, SourceCode};
pub use target::CompileTarget;
