//! POSIX file descriptors of pools and allocations (Unix): what memory/ needs to
//! export and import them, and a pool's identity across processes ([`PoolUuid`]). Sharing itself (pool IPC, buffer descriptors, IPC
//! events) is `crate::interop::ipc`'s.

#[cfg(feature = "ipc")]
use std::hash::{BuildHasher as _, Hasher as _};
use std::os::fd::{AsRawFd as _, BorrowedFd};
#[cfg(any(feature = "ipc", feature = "vmm"))]
use std::os::fd::{FromRawFd as _, OwnedFd};

use cudars_bindings::driver as sys;

#[cfg(any(feature = "ipc", feature = "vmm"))]
use crate::error::Error;
use crate::error::{Check as _, Result};

#[cfg(any(feature = "ipc", feature = "vmm"))]
/// Takes over `fd`, a new descriptor a driver export just returned; a negative
/// one (no descriptor) is [`Error::Unsupported`].
pub(crate) fn owned_fd(fd: std::ffi::c_int, what: &'static str) -> Result<OwnedFd> {
    if fd < 0 {
        return Err(Error::unsupported(
            what,
            "the driver returned no descriptor",
        ));
    }
    // SAFETY: the driver handed us a new descriptor, which we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(feature = "ipc")]
/// Exports `pool` (made with the POSIX file descriptor handle type) as a new
/// descriptor.
pub(crate) fn export_pool(pool: sys::CUmemoryPool) -> Result<OwnedFd> {
    let mut fd: std::ffi::c_int = -1;
    // SAFETY: `fd` receives an `int` for the POSIX file descriptor handle type; a
    // live pool.
    unsafe {
        sys::cuMemPoolExportToShareableHandle(
            (&raw mut fd).cast(),
            pool,
            sys::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            0,
        )
    }
    .check(|| "exporting a memory pool")?;
    let fd = owned_fd(fd, "exporting a memory pool")?;
    // Keep a close-on-exec duplicate, so that processes this one starts do not
    // inherit the pool by accident; the original closes here.
    dup_pool_fd(&fd)
}

#[cfg(feature = "ipc")]
/// A close-on-exec duplicate of a pool's descriptor (std's `try_clone` sets the
/// flag).
pub(crate) fn dup_pool_fd(fd: &OwnedFd) -> Result<OwnedFd> {
    fd.try_clone().map_err(|e| Error::Io {
        context: "duplicating a memory pool's descriptor".into(),
        source: e,
    })
}

/// Imports the pool another process exported as `fd` (`cuMemPoolImportFromShareableHandle`).
pub(crate) fn import_pool(
    fd: BorrowedFd<'_>,
    what: impl FnOnce() -> String,
) -> Result<sys::CUmemoryPool> {
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // The handle is passed by value, as an `int` in a pointer-sized slot.
    let raw = fd.as_raw_fd() as usize as *mut std::ffi::c_void;
    // SAFETY: `pool` is valid for writes; the descriptor stays open for the call.
    unsafe {
        sys::cuMemPoolImportFromShareableHandle(
            &mut pool,
            raw,
            sys::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            0,
        )
    }
    .check(what)?;
    Ok(pool)
}

/// The identity of an IPC memory pool across processes (`cuda.core`'s
/// `DeviceMemoryResource.uuid`): 16 random bytes, a version 4 UUID, made when an
/// IPC-enabled pool is created. The exporter sends it with the pool's descriptor;
/// an importer registers the imported pool under it
/// ([`DeviceMemoryResource::register`](crate::DeviceMemoryResource::register)) and finds it again
/// ([`DeviceMemoryResource::from_registry`](crate::DeviceMemoryResource::from_registry)). It prints in the usual
/// `8-4-4-4-12` hexadecimal form.
#[cfg(feature = "ipc")]
#[cfg_attr(docsrs, doc(cfg(unix)))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PoolUuid(pub [u8; 16]);

#[cfg(feature = "ipc")]
impl PoolUuid {
    /// A new random (version 4) UUID, from the standard library's per-process
    /// random hash keys (seeded from the operating system) and a counter.
    pub(crate) fn new_random() -> Self {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let half = |salt: u64| {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(n);
            h.write_u64(salt);
            h.write_u32(std::process::id());
            h.finish().to_le_bytes()
        };
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&half(0));
        b[8..].copy_from_slice(&half(1));
        b[6] = (b[6] & 0x0f) | 0x40; // version 4
        b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
        Self(b)
    }
}

#[cfg(feature = "ipc")]
impl std::fmt::Display for PoolUuid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, byte) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}
