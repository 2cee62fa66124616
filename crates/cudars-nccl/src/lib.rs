//! NCCL for Rust: communicators over several GPUs, in one process or one per
//! GPU, running collectives and point-to-point transfers on cudars-core streams
//! and typed device views.
//!
//! ```no_run
//! use cudars_core::{Device, DeviceBuffer, StreamOptions};
//! use cudars_nccl::{Communicator, ReduceOp};
//!
//! // One rank on GPU 0 (with N GPUs: `Communicator::init_all` and a `Group`).
//! let dev = Device::new(0)?;
//! let comm = Communicator::init_all(std::slice::from_ref(&dev))?.remove(0);
//! let stream = dev.create_stream(StreamOptions::default())?;
//! let mut x = DeviceBuffer::from_host(&dev, &[1.0f32, 2.0, 3.0], &stream)?;
//! comm.all_reduce_in_place(x.view_mut(), ReduceOp::Sum, &stream)?;
//! assert_eq!(x.to_vec(&stream)?, [1.0, 2.0, 3.0]);
//! # Ok::<(), cudars_nccl::Error>(())
//! ```
//!
//! - [`Communicator`]: [`init_all`](Communicator::init_all) for one process
//!   driving several GPUs, [`init_rank`](Communicator::init_rank) with a
//!   [`UniqueId`] for one GPU per process (the id travels as bytes or hex text),
//!   [`split`](Communicator::split), [`abort`](Communicator::abort),
//!   [`async_error`](Communicator::async_error).
//! - Collectives on typed views ([`Element`]: integers, `f16`, `bf16`, `f32`,
//!   `f64`): all-reduce, broadcast, reduce, all-gather, reduce-scatter (each also
//!   in place), all-to-all, gather, scatter, and send/receive; [`Group`] issues
//!   several as one NCCL group.
//! - [`World`]: this process's rank, size and local rank from a launcher's
//!   variables (torchrun, Slurm, Open MPI, MPICH/PMI), its GPU, and
//!   [`World::join`] / [`Communicator::from_env`]: the communicator, met
//!   through NCCL's own bootstrap (`NCCL_COMM_ID`), made non-blocking under a
//!   timeout and aborted on failure ([`WorldError`]).
//! - Reductions: a built-in [`ReduceOp`] or a pre-multiplied sum
//!   ([`Communicator::pre_mul_sum`], a [`CustomOp`]), both taken as a
//!   [`Reduction`]. An entry point the loaded NCCL predates is
//!   [`Error::TooOld`], naming the release that added it.
//! - Every length, rank and device is checked before NCCL is called
//!   ([`Error::InvalidArgument`]), and each buffer's stream-ordered free is
//!   ordered after the stream the operation ran on.
//!
//! NCCL is found at run time by the pathfinder (NVIDIA's `nvidia-nccl` wheels,
//! conda, the system); a missing library is [`Error::Unavailable`].
//!
//! # Which driver
//! NCCL is built for one CUDA major (NVIDIA ships it per major), but unlike
//! cuBLAS, cuFFT, cuRAND and cuFile it does not say which: `ncclGetVersion`
//! gives NCCL's own version (2.28), the same in both builds. So this crate
//! makes no driver check before NCCL is called (the other library crates
//! return `DriverTooOld` on a driver older than their library's CUDA major
//! before calling it). NCCL has its own rule instead: it takes each driver
//! entry point it uses through `cuGetProcAddress` at a fixed ABI version and
//! turns features off by the driver's version (minor-version compatibility
//! since NCCL 2.9.9); whatever it refuses is its own status
//! ([`Error::Library`], with NCCL's message).
//!
//! One refusal is told apart: NCCL's CUDA runtime refusing the driver
//! (`ncclUnhandledCudaError`, "CUDA driver version is insufficient for CUDA
//! runtime version"), as a CUDA 13 NCCL does on a CUDA 12 driver when a
//! communicator is made. It is [`Error::DriverTooOld`], as for the other
//! library crates: "making a NCCL communicator of 1 ranks in one process:
//! NCCL 2.28 (built for a newer CUDA major) needs a CUDA 13.0 driver; this
//! driver is CUDA 12.4". As NCCL does not say its CUDA major, the error names
//! the first major after the driver's, the least NCCL's can be (a runtime
//! runs on every driver of its own major), and that major's `.0` driver as
//! the one it needs.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod collectives;
mod comm;
mod error;
mod group;
mod id;
mod launcher;
mod op;
mod types;
mod world;

pub use comm::{CommConfig, Communicator};
pub use error::{Error, Result, TimedOut, WorldError};
pub use group::Group;
pub use id::{UNIQUE_ID_BYTES, UniqueId};
pub use launcher::{EnvError, Launcher};
pub use types::{CustomOp, Element, ReduceOp, Reduction};
pub use world::{DEFAULT_JOIN_TIMEOUT, NCCL_COMM_ID, World};

/// The loaded NCCL's version: major, minor and patch, e.g. `(2, 28, 9)`.
///
/// # Errors
/// [`Error::Unavailable`] when NCCL cannot be loaded; NCCL's error.
pub fn version() -> Result<(i32, i32, i32)> {
    cudars_bindings::nccl::version()
        .map_err(|source| error::from_nccl(source, "asking NCCL for its version"))
}
