//! cuFile (GPUDirect Storage) for Rust: reads and writes between files and
//! cudars-core's device views, synchronous or ordered on a stream. Linux only (on
//! other systems the crate is empty).
//!
//! ```no_run
//! use cudars_core::{Device, DeviceBuffer, StreamOptions};
//! use cudars_file::{Driver, FileHandle};
//!
//! let dev = Device::new(0)?;
//! let stream = dev.create_stream(StreamOptions::default())?;
//! let driver = Driver::open()?;
//! let file = std::fs::File::open("weights.bin")?;
//! let handle = FileHandle::register(&driver, file)?;
//! let mut buf = DeviceBuffer::<u8>::allocate(&dev, 1 << 20, &stream)?;
//! // Synchronous: the bytes are in device memory when it returns.
//! let n = handle.read(buf.view_mut(), 0)?;
//! // Stream-ordered: queued on `stream`, finished by `wait`.
//! let n = handle.read_async(buf.view_mut(), 0, &stream)?.wait()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Driver`] opens cuFile's driver (once per process, closed when the last
//! `Driver` and [`FileHandle`] are gone) and reports its [`DriverProperties`],
//! among them whether I/O goes through GPUDirect Storage (the `nvidia-fs` kernel
//! driver) or through cuFile's **compatibility mode**, which moves the data with
//! POSIX I/O and a bounce buffer in host memory. Where `nvidia-fs` is absent,
//! compatibility mode is what runs: cuFile allows it by default
//! (`properties.allow_compat_mode` in its JSON configuration, the file
//! `CUFILE_ENV_PATH_JSON` names), and [`DriverOptions`] can allow or force it
//! before the driver opens.
//!
//! [`FileHandle`] registers an open [`File`](std::fs::File) with cuFile and keeps
//! it open. Its reads and writes take typed device views: [`read`](FileHandle::read)
//! and [`write`](FileHandle::write) wait for the work cudars-core queued on the
//! buffer, move the bytes and return; [`read_async`](FileHandle::read_async) and
//! [`write_async`](FileHandle::write_async) (`cuFileReadAsync`/`cuFileWriteAsync`,
//! cuFile 1.7 and CUDA 12.2 or newer) queue the transfer on a stream and return a
//! [`PendingIo`] that borrows the view until it is waited for; the transfer
//! itself keeps the parameters cuFile reads, and the file's registration, until
//! the stream has passed it. [`RegisteredBuffer`]
//! takes over and registers a device array that is transferred to and from many times
//! (`cuFileBufRegister`), which GPUDirect Storage then need not map each time.
//!
//! cuFile is found at run time by the pathfinder (NVIDIA's `nvidia-cufile`
//! wheel, a CUDA toolkit, the system's libraries); a missing library is
//! [`Error::Unavailable`].
//!
//! # Which driver
//! cuFile follows CUDA's minor-version compatibility: a cuFile of CUDA 13.x
//! runs on any CUDA 13.0 driver or newer, one of CUDA 12.x on any 12.0 driver
//! or newer, and none runs on a driver of an older major. Opening the [`Driver`] first asks
//! cuFile its version (`cuFileGetVersion`; cuFile is 1.x, and 1.5 to 1.14 are CUDA 12's, 1.15 on CUDA 13's, no GPU needed) and the driver its CUDA
//! version (both once per process) and, on a driver too old for cuFile's CUDA
//! major, returns [`Error::DriverTooOld`] before cuFile is called: "cuFile 1.15
//! needs a CUDA 13.0 driver; this driver is CUDA 12.4", not the opaque status
//! cuFile would give. Its [`required_driver`](cudars_core::LibraryError::required_driver)
//! holds the versions.

#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg(target_os = "linux")]

mod driver;
mod error;
mod handle;
mod registered;

pub use driver::{Driver, DriverOptions, DriverProperties};
pub use error::{Error, Result};
pub use handle::{FileHandle, PendingIo};
pub use registered::RegisteredBuffer;

/// The version of the cuFile library found (`cuFileGetVersion`), e.g. 1.15; it
/// needs neither a GPU nor the driver to be open.
///
/// # Errors
/// [`Error::Unavailable`] when cuFile cannot be loaded.
pub fn version() -> Result<cudars_bindings::Version> {
    cudars_bindings::cufile::version()
        .map_err(|e| error::from_status("asking cuFile its version (cuFileGetVersion)", e))
}
