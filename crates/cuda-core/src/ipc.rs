//! Sharing memory pools, buffers and events with other processes (Linux: POSIX
//! file descriptors).
//!
//! The exporting process creates a pool with `ipc_enabled`, sends the pool's file
//! descriptor ([`DeviceMemoryResource::export_handle`]) to the other process (over
//! a Unix socket with `SCM_RIGHTS`, by inheritance, or with `pidfd_getfd`), and
//! sends each buffer's [`IpcBufferDescriptor`] (plain bytes). The importer
//! rebuilds the pool ([`DeviceMemoryResource::import`]) and the buffers
//! ([`Buffer::from_ipc_descriptor`]). IPC events order work across the processes.

use std::os::fd::{AsRawFd as _, BorrowedFd, FromRawFd as _, OwnedFd};
use std::sync::Arc;

use cuda_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{
    Buffer, Context, Device, DeviceMemoryResource, Event, EventOptions, MemoryKind, MemoryResource,
    Stream,
};

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
    if fd < 0 {
        return Err(Error::unsupported(
            "exporting a memory pool",
            "the driver returned no descriptor",
        ));
    }
    // SAFETY: the driver handed us a new descriptor, which we now own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // Keep a close-on-exec duplicate, so that processes this one starts do not
    // inherit the pool by accident; the original closes here.
    dup_pool_fd(&fd)
}

/// A close-on-exec duplicate of a pool's descriptor (std's `try_clone` sets the
/// flag).
fn dup_pool_fd(fd: &OwnedFd) -> Result<OwnedFd> {
    fd.try_clone().map_err(|e| Error::Io {
        context: "duplicating a memory pool's descriptor".into(),
        source: e,
    })
}

impl DeviceMemoryResource {
    /// The pool's shareable handle: a file descriptor another process can import.
    /// The pool is exported once, when it is created (the driver exports a pool's
    /// buffers only after that); each call returns a new duplicate of that
    /// descriptor, which the caller owns.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a pool made without `ipc_enabled` or imported
    /// from another process; [`Error::Io`] when the descriptor cannot be
    /// duplicated.
    pub fn export_handle(&self) -> Result<OwnedFd> {
        if !self.ipc {
            return Err(Error::unsupported(
                "exporting a memory pool",
                "the pool was not created with `ipc_enabled: true`",
            ));
        }
        let fd = self.ipc_fd.as_ref().ok_or_else(|| {
            Error::unsupported(
                "exporting a memory pool",
                "an imported pool cannot be exported again",
            )
        })?;
        dup_pool_fd(fd)
    }

    /// Imports a pool another process exported. The pool is released when this
    /// resource and every buffer imported through it are gone.
    ///
    /// `device` is the device whose memory the pool holds, in this process's
    /// numbering (which `CUDA_VISIBLE_DEVICES` may make differ from the
    /// exporter's). For kernels on other devices of this process, grant them access
    /// with [`set_peer_accessible_by`](Self::set_peer_accessible_by): access
    /// granted by the exporter does not carry over.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the pool's memory is not on `device`; the
    /// driver's error.
    pub fn import(device: &Device, fd: BorrowedFd<'_>) -> Result<Self> {
        device.ensure_current()?;
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
        .check(|| format!("importing a memory pool on device {}", device.ordinal()))?;
        let imported = Self {
            device: *device,
            pool,
            owned: true,
            ipc: true,
            ipc_fd: None,
        };
        // The owning device always has access; any other device has none until
        // this process grants it, so a wrong `device` shows here rather than as a
        // fault in the first kernel.
        if imported.access_of(*device)? != sys::CU_MEM_ACCESS_FLAGS_PROT_READWRITE {
            return Err(Error::other_device(
                format!("importing a memory pool on device {}", device.ordinal()),
                "the pool's memory is on another device (pass the device that holds it)",
            ));
        }
        Ok(imported)
    }
}

/// What another process needs to import one buffer of a shared pool: 64 opaque
/// bytes from the driver and the size. Plain data: send it any way you like
/// ([`to_bytes`](Self::to_bytes)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpcBufferDescriptor {
    /// `CUmemPoolPtrExportData`.
    pub data: [u8; 64],
    /// The buffer's size in bytes.
    pub size: u64,
}

impl IpcBufferDescriptor {
    /// 72 bytes: the data, then the size (little-endian).
    pub fn to_bytes(&self) -> [u8; 72] {
        let mut b = [0u8; 72];
        b[..64].copy_from_slice(&self.data);
        b[64..].copy_from_slice(&self.size.to_le_bytes());
        b
    }

    /// The inverse of [`to_bytes`](Self::to_bytes).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] unless `bytes` is 72 bytes long.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        if bytes.len() != 72 {
            return Err(Error::invalid(
                "reading an IPC buffer descriptor",
                format!("expected 72 bytes, got {}", bytes.len()),
            ));
        }
        let mut data = [0u8; 64];
        data.copy_from_slice(&bytes[..64]);
        let mut size = [0u8; 8];
        size.copy_from_slice(&bytes[64..]);
        Ok(Self {
            data,
            size: u64::from_le_bytes(size),
        })
    }
}

/// The resource of an imported buffer: frees it (`cuMemFreeAsync`) but cannot
/// allocate.
#[derive(Debug)]
struct Imported {
    pool: Arc<DeviceMemoryResource>,
}

// SAFETY: imported pointers are device memory of the pool's device, released with
// `cuMemFreeAsync` on the importing side.
unsafe impl MemoryResource for Imported {
    unsafe fn allocate_raw(&self, _size: usize, _stream: &Stream) -> Result<sys::CUdeviceptr> {
        Err(Error::unsupported(
            "allocating",
            "an imported pool's buffers come from the exporter",
        ))
    }

    unsafe fn deallocate(&self, ptr: sys::CUdeviceptr, size: usize, stream: &Stream) -> Result<()> {
        // SAFETY: per the trait's contract.
        unsafe { self.pool.deallocate(ptr, size, stream) }
    }

    fn kind(&self) -> MemoryKind {
        MemoryKind::Device
    }

    fn device(&self) -> Device {
        self.pool.device
    }
}

impl Buffer {
    /// The descriptor another process needs to import this buffer (which must come
    /// from a pool made with `ipc_enabled`). The importer should wait for the
    /// exporter's work on it (an IPC [`Event`]) before using it.
    ///
    /// # Errors
    /// The driver's error (`CUDA_ERROR_INVALID_VALUE` for memory not from an IPC pool).
    pub fn ipc_descriptor(&self) -> Result<IpcBufferDescriptor> {
        let mut d = sys::CUmemPoolPtrExportData::default();
        self.device().ensure_current()?;
        // SAFETY: `d` is valid for writes; the pointer is this buffer's.
        unsafe { sys::cuMemPoolExportPointer(&mut d, self.ptr()) }
            .check(|| "exporting a buffer")?;
        Ok(IpcBufferDescriptor {
            data: d.reserved,
            size: self.size() as u64,
        })
    }

    /// Imports a buffer another process exported from the pool `pool` was imported
    /// from. It is released (on `stream`, its free stream) when dropped; the
    /// exporter must keep its buffer until then.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero size, a size larger than the
    /// exported allocation (the import is released) or a stream of another
    /// device; the driver's error.
    pub fn from_ipc_descriptor(
        pool: &Arc<DeviceMemoryResource>,
        descriptor: &IpcBufferDescriptor,
        stream: &Stream,
    ) -> Result<Self> {
        let size = usize::try_from(descriptor.size)
            .ok()
            .filter(|&s| s > 0)
            .ok_or_else(|| Error::invalid("importing a buffer", "the size is zero or too large"))?;
        if stream.device() != &pool.device {
            return Err(Error::other_device(
                "importing a buffer",
                "the stream is on another device",
            ));
        }
        let _current = stream.context().ensure_current()?;
        let mut data = sys::CUmemPoolPtrExportData {
            reserved: descriptor.data,
        };
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: `data` holds the exporter's 64 bytes; `ptr` is valid for writes.
        unsafe { sys::cuMemPoolImportPointer(&mut ptr, pool.pool, &mut data) }
            .check(|| "importing a buffer")?;
        // The size comes from the other process: a buffer must never claim more
        // than the allocation the driver imported, or safe copies would run past it.
        if let Err(e) = check_imported_size(ptr, size) {
            // SAFETY: `ptr` was imported just now into this stream's context and
            // nothing else holds it.
            let _ = unsafe { sys::cuMemFreeAsync(ptr, stream.handle()) };
            return Err(e);
        }
        let mr: Arc<dyn MemoryResource> = Arc::new(Imported { pool: pool.clone() });
        Ok(Buffer::owned_from_parts(
            ptr,
            size,
            MemoryKind::Device,
            pool.device,
            mr,
            stream,
        ))
    }
}

/// Checks that `size` bytes from `ptr` lie inside the allocation that holds `ptr`.
fn check_imported_size(ptr: sys::CUdeviceptr, size: usize) -> Result<()> {
    let what = "importing a buffer";
    let mut base: sys::CUdeviceptr = 0;
    let mut extent: usize = 0;
    // SAFETY: both outputs are locals; `ptr` is an address the driver just imported.
    unsafe { sys::cuMemGetAddressRange(&mut base, &mut extent, ptr) }
        .check(|| "querying the size of an imported buffer's allocation")?;
    let available = (base as u128 + extent as u128).saturating_sub(ptr as u128);
    if size as u128 > available {
        return Err(Error::out_of_range(
            what,
            format!(
                "the descriptor says {size} bytes, but the exported allocation holds {available} from that address"
            ),
        ));
    }
    Ok(())
}

impl Event {
    /// The 64-byte handle another process opens this event with. The event must
    /// have been made with `ipc: true`.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for an event without `ipc`; the driver's error.
    pub fn ipc_handle(&self) -> Result<[u8; 64]> {
        if !self.options.ipc {
            return Err(Error::unsupported(
                "exporting an event",
                "the event was not made with `ipc: true`",
            ));
        }
        let mut h = sys::CUipcEventHandle::default();
        // SAFETY: `h` is valid for writes; a live IPC event.
        unsafe { sys::cuIpcGetEventHandle(&mut h, self.handle) }.check(|| "exporting an event")?;
        Ok(h.reserved.map(|c| c as u8))
    }

    /// Opens an event another process exported, in `ctx`.
    ///
    /// # Errors
    /// The driver's error.
    pub fn from_ipc_handle(ctx: &Context, handle: &[u8; 64]) -> Result<Self> {
        let _current = ctx.ensure_current()?;
        let h = sys::CUipcEventHandle {
            reserved: handle.map(|b| b as std::ffi::c_char),
        };
        let mut e: sys::CUevent = std::ptr::null_mut();
        // SAFETY: `e` is valid for writes; the handle is the exporter's bytes.
        unsafe { sys::cuIpcOpenEventHandle(&mut e, h) }.check(|| "opening an IPC event")?;
        Ok(Event {
            handle: e,
            ctx: ctx.clone(),
            options: EventOptions {
                timing: false,
                blocking_sync: false,
                ipc: true,
            },
        })
    }
}
