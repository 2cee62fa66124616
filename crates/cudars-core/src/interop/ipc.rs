//! Sharing memory pools, buffers and events with other processes (Linux: POSIX
//! file descriptors).
//!
//! The exporting process creates a pool with `ipc_enabled` (a device pool,
//! [`DeviceMemoryResource`], or a pinned host pool, [`PinnedMemoryResource`]: both
//! are [`IpcMemoryPool`]s with the same methods), sends the pool's file
//! descriptor ([`DeviceMemoryResource::export_handle`]) to the other process (over
//! a Unix socket with `SCM_RIGHTS`, by inheritance, or with `pidfd_getfd`), and
//! sends each buffer's [`IpcBufferDescriptor`] (plain bytes). The importer
//! rebuilds the pool ([`DeviceMemoryResource::import`]) and the buffers
//! ([`Buffer::from_ipc_descriptor`]). IPC events order work across the processes.
//!
//! A process that imports several pools can find them again by their
//! [`PoolUuid`]: the exporter sends [`DeviceMemoryResource::uuid`] along with the
//! descriptor, and the importer's [`DeviceMemoryResource::import_registered`] and
//! [`Buffer::from_registered_ipc_descriptor`] go through the process-wide
//! registry ([`DeviceMemoryResource::register`],
//! [`DeviceMemoryResource::from_registry`]).

use std::any::Any;
use std::collections::HashMap;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
pub use crate::memory::fd::PoolUuid;
use crate::memory::fd::{dup_pool_fd, import_pool};
use crate::{
    context::Context, device::Device, event::Event, event::EventOptions, memory::buffer::Buffer,
    memory::pinned::PinnedMemoryResource, memory::pool::DeviceMemoryResource,
    memory::resource::MemoryKind, memory::resource::MemoryResource, stream::Stream,
};

/// A memory pool whose allocations can be shared with other processes:
/// [`DeviceMemoryResource`] and [`PinnedMemoryResource`], made with
/// `ipc_enabled: true` or imported. Sealed: the crate's pools are the only
/// implementations. Both have the same IPC methods (`export_handle`, `import`,
/// `uuid`, `register`, `from_registry`, `import_registered`), and
/// [`Buffer::from_ipc_descriptor`] takes either.
#[cfg_attr(docsrs, doc(cfg(unix)))]
pub trait IpcMemoryPool: MemoryResource + sealed::Sealed + Sized + 'static {}

pub(crate) mod sealed {
    use cudars_bindings::driver as sys;

    /// What the generic IPC code needs of a pool.
    pub trait Sealed {
        /// What the pool is called in messages ("a memory pool", "a pinned
        /// memory pool").
        const NAME: &'static str;
        /// The driver's pool.
        fn raw_pool(&self) -> sys::CUmemoryPool;
        /// The pool's IPC state.
        fn ipc(&self) -> &crate::memory::pool::PoolIpc;
    }
}

/// The sealed part of [`IpcMemoryPool`] for a pool type with `pool` and `ipc`
/// fields.
macro_rules! ipc_memory_pool {
    ($t:ty, $name:literal) => {
        impl sealed::Sealed for $t {
            const NAME: &'static str = $name;
            fn raw_pool(&self) -> sys::CUmemoryPool {
                self.pool
            }
            fn ipc(&self) -> &crate::memory::pool::PoolIpc {
                &self.ipc
            }
        }
        impl IpcMemoryPool for $t {}
    };
}
ipc_memory_pool!(DeviceMemoryResource, "a memory pool");
ipc_memory_pool!(PinnedMemoryResource, "a pinned memory pool");

/// The pool's descriptor for another process: a new duplicate of the one
/// exported when the pool was made.
fn export_handle_of<P: IpcMemoryPool>(pool: &P) -> Result<OwnedFd> {
    let what = || format!("exporting {}", P::NAME);
    if !pool.ipc().enabled {
        return Err(Error::unsupported(
            what(),
            "the pool was not created with `ipc_enabled: true`",
        ));
    }
    let fd =
        pool.ipc().fd.as_ref().ok_or_else(|| {
            Error::unsupported(what(), "an imported pool cannot be exported again")
        })?;
    dup_pool_fd(fd)
}

#[cfg_attr(docsrs, doc(cfg(unix)))]
impl DeviceMemoryResource {
    /// Imports a pool another process exported
    /// ([`export_handle`](Self::export_handle)). The pool is released when this
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
        let _current = device.ensure_current()?;
        let pool = import_pool(fd, || {
            format!("importing a memory pool on device {}", device.ordinal())
        })?;
        let imported = Self {
            device: *device,
            pool,
            owned: true,
            ipc: crate::memory::pool::PoolIpc::imported(),
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
#[cfg_attr(docsrs, doc(cfg(unix)))]
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

/// The resource of an imported buffer: frees it (`cuMemFreeAsync`, through the
/// imported pool) but cannot allocate, and keeps the process's record of live
/// imports ([`imports`]) up to date.
#[derive(Debug)]
struct Imported {
    pool: Arc<dyn MemoryResource>,
}

/// The imports of this process, by address and by descriptor: which are
/// owned by a live [`Buffer`], and the frees still queued of those that are
/// gone. (With unified addressing an address names one mapping in the whole
/// process, whichever pool object, or second import of one pool, it came
/// through; the descriptor catches a second import before the driver is
/// asked, whatever address it would hand out.)
///
/// Soundness rule (issue 26, "one owner per mapping"): importing one
/// descriptor twice would give two owning buffers over one mapping (two frees,
/// and two `&mut` views of a pinned pool's host memory). The second import of
/// a live mapping is refused ([`InvalidKind::AlreadyImported`]) and its result
/// is not released (releasing it could unmap the first buffer's mapping).
/// A buffer's free is stream-ordered, so its mapping may outlive the buffer
/// until the stream runs the free: an import first waits for the queued frees
/// of earlier imports, so it can never be handed a mapping that a queued free
/// is about to release. The whole import (the waits, the driver's import, the
/// record) and each release happen under the registry's lock, which no host
/// function takes.
///
/// [`InvalidKind::AlreadyImported`]: crate::InvalidKind::AlreadyImported
///
/// `E` is what a queued free is waited for by (an [`Event`]; a plain value in
/// the unit tests).
#[derive(Debug)]
struct ImportRegistry<E> {
    /// Live imports: address to the descriptor's 64 bytes.
    live: std::collections::BTreeMap<sys::CUdeviceptr, [u8; 64]>,
    freeing: Vec<E>,
}

impl<E> ImportRegistry<E> {
    const fn new() -> Self {
        Self {
            live: std::collections::BTreeMap::new(),
            freeing: Vec::new(),
        }
    }

    /// The queued frees of earlier imports, taken out: the caller waits for
    /// each (and puts back those it cannot wait for).
    fn take_frees(&mut self) -> Vec<E> {
        std::mem::take(&mut self.freeing)
    }

    /// Whether a live import came from this descriptor.
    fn has_descriptor(&self, data: &[u8; 64]) -> bool {
        self.live.values().any(|d| d == data)
    }

    /// Records a new import of `data` at `ptr`; `false` (recording nothing)
    /// when the mapping or the descriptor is already owned.
    fn insert(&mut self, ptr: sys::CUdeviceptr, data: [u8; 64]) -> bool {
        if self.live.contains_key(&ptr) || self.has_descriptor(&data) {
            return false;
        }
        self.live.insert(ptr, data);
        true
    }

    /// The owner of an import is gone, its free queued behind `pending` (or
    /// already done: `None`).
    fn freed(&mut self, ptr: sys::CUdeviceptr, pending: Option<E>) {
        self.live.remove(&ptr);
        if let Some(e) = pending {
            self.freeing.push(e);
        }
    }
}

/// The process's imports (see [`ImportRegistry`]).
fn imports() -> std::sync::MutexGuard<'static, ImportRegistry<Event>> {
    static IMPORTS: Mutex<ImportRegistry<Event>> = Mutex::new(ImportRegistry::new());
    IMPORTS.lock().unwrap_or_else(PoisonError::into_inner)
}

// SAFETY: imported pointers are memory of the pool's kind, usable on its device,
// released with `cuMemFreeAsync` on the importing side.
// Soundness contract: rules 1 and 9.
unsafe impl MemoryResource for Imported {
    unsafe fn allocate_raw(&self, _size: usize, _stream: &Stream) -> Result<sys::CUdeviceptr> {
        Err(Error::unsupported(
            "allocating",
            "an imported pool's buffers come from the exporter",
        ))
    }

    unsafe fn deallocate(&self, ptr: sys::CUdeviceptr, size: usize, stream: &Stream) -> Result<()> {
        let mut reg = imports();
        // On failure, not freed (or not known to be): the mapping stays
        // recorded as owned, so it is never imported again (a leak, not a
        // second owner).
        // SAFETY: per the trait's contract.
        unsafe { self.pool.deallocate(ptr, size, stream) }?;
        // The mapping goes when the stream reaches the free: the next import
        // waits for this event first.
        let pending = || -> Result<Event> {
            let e = Event::in_context(stream.context(), EventOptions::default())?;
            e.record(stream)?;
            Ok(e)
        };
        match pending() {
            Ok(e) => reg.freed(ptr, Some(e)),
            // Without an event, wait for the free itself; if even that fails,
            // keep the record (never imported again).
            Err(e) => {
                if stream.drain().is_ok() {
                    reg.freed(ptr, None);
                }
                return Err(e);
            }
        }
        Ok(())
    }

    fn kind(&self) -> MemoryKind {
        self.pool.kind()
    }

    fn device(&self) -> Device {
        self.pool.device()
    }
}

#[cfg_attr(docsrs, doc(cfg(unix)))]
impl Buffer {
    /// The descriptor another process needs to import this buffer (which must come
    /// from a pool made with `ipc_enabled`: a [`DeviceMemoryResource`] or a
    /// [`PinnedMemoryResource`]). The importer should wait for the
    /// exporter's work on it (an IPC [`Event`]) before using it.
    ///
    /// # Errors
    /// The driver's error (`CUDA_ERROR_INVALID_VALUE` for memory not from an IPC pool).
    pub fn ipc_descriptor(&self) -> Result<IpcBufferDescriptor> {
        let mut d = sys::CUmemPoolPtrExportData::default();
        let _current = self.device().ensure_current()?;
        // SAFETY: `d` is valid for writes; the pointer is this buffer's.
        unsafe { sys::cuMemPoolExportPointer(&mut d, self.ptr()) }
            .check(|| "exporting a buffer")?;
        Ok(IpcBufferDescriptor {
            data: d.reserved,
            size: self.size() as u64,
        })
    }

    /// Imports a buffer another process exported from the pool `pool` was imported
    /// from (a device or a pinned pool: see [`IpcMemoryPool`]). It is released
    /// (on `stream`, its free stream) when dropped; the exporter must keep its
    /// buffer until then.
    ///
    /// One allocation has one owner in the importing process: importing a
    /// descriptor whose allocation is already imported into a live buffer (the
    /// same descriptor, or one the driver maps to a live buffer's address) is
    /// refused ([`InvalidKind::AlreadyImported`](crate::InvalidKind::AlreadyImported);
    /// `cuda.core` would hand out a second `Buffer` that frees the same
    /// mapping). Once that buffer is dropped, the descriptor can be imported
    /// again: the import first waits for the queued frees of the pool's
    /// imports.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero size, a size larger than the
    /// exported allocation (the import is released) or a stream of another
    /// device than the pool's, an allocation already imported
    /// ([`InvalidKind::AlreadyImported`](crate::InvalidKind::AlreadyImported));
    /// the driver's error, including that of waiting for an earlier free.
    pub fn from_ipc_descriptor<P: IpcMemoryPool>(
        pool: &Arc<P>,
        descriptor: &IpcBufferDescriptor,
        stream: &Stream,
    ) -> Result<Self> {
        let size = usize::try_from(descriptor.size)
            .ok()
            .filter(|&s| s > 0)
            .ok_or_else(|| Error::invalid("importing a buffer", "the size is zero or too large"))?;
        let device = pool.device();
        if stream.device() != &device {
            return Err(Error::other_device(
                "importing a buffer",
                "the stream is on another device",
            ));
        }
        let _current = stream.context().ensure_current()?;
        // Held to the end of the import: see `ImportRegistry`.
        let mut reg = imports();
        let mut waits = reg.take_frees().into_iter();
        while let Some(e) = waits.next() {
            if let Err(err) = e.sync() {
                // Not known to be freed: keep waiting for them next time.
                reg.freeing.extend(std::iter::once(e).chain(waits));
                return Err(err);
            }
        }
        let already = || {
            Error::invalid_as(
                crate::error::InvalidKind::AlreadyImported,
                "importing a buffer",
                "the allocation is already imported in this process by a live buffer; drop that \
                 buffer before importing it again",
            )
        };
        if reg.has_descriptor(&descriptor.data) {
            return Err(already());
        }
        let mut data = sys::CUmemPoolPtrExportData {
            reserved: descriptor.data,
        };
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: `data` holds the exporter's 64 bytes; `ptr` is valid for writes.
        unsafe { sys::cuMemPoolImportPointer(&mut ptr, pool.raw_pool(), &mut data) }
            .check(|| "importing a buffer")?;
        if !reg.insert(ptr, descriptor.data) {
            // The driver handed out a mapping a live buffer owns (another
            // descriptor of the same allocation): leave it to that buffer
            // (releasing it here could unmap it under its owner).
            return Err(already());
        }
        // The size comes from the other process: a buffer must never claim more
        // than the allocation the driver imported, or safe copies would run past it.
        if let Err(e) = check_imported_size(ptr, size) {
            // SAFETY: `ptr` was imported just now into this stream's context and
            // nothing else holds it.
            let freed = unsafe { sys::cuMemFreeAsync(ptr, stream.handle()) };
            // Forgotten once freed and waited for; otherwise it stays recorded
            // (never imported again).
            if freed == sys::CUDA_SUCCESS && stream.drain().is_ok() {
                reg.freed(ptr, None);
            }
            return Err(e);
        }
        drop(reg);
        let kind = pool.kind();
        let mr: Arc<dyn MemoryResource> = Arc::new(Imported { pool: pool.clone() });
        Ok(Buffer::from_parts(
            ptr,
            size,
            kind,
            device,
            (mr, stream),
            true,
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

#[cfg_attr(docsrs, doc(cfg(unix)))]
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

/// A registered pool: a [`DeviceMemoryResource`] or a [`PinnedMemoryResource`].
type Registry = HashMap<PoolUuid, Weak<dyn Any + Send + Sync>>;

/// The process-wide registry of IPC pools by UUID. It holds weak references: a
/// registered pool is still destroyed when its last `Arc` goes, and its entry is
/// then dead (pruned at the next registration).
fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

fn register_of<P: IpcMemoryPool + Send + Sync>(pool: &Arc<P>, uuid: PoolUuid) -> Result<()> {
    let what = || format!("registering {} as {uuid}", P::NAME);
    if !pool.ipc().enabled {
        return Err(Error::unsupported(
            what(),
            "only IPC-enabled pools are registered (made with `ipc_enabled: true`, or imported)",
        ));
    }
    let mut reg = registry().lock().unwrap_or_else(PoisonError::into_inner);
    reg.retain(|_, w| w.strong_count() > 0);
    if let Some(other) = reg.get(&uuid).and_then(Weak::upgrade) {
        if std::ptr::addr_eq(Arc::as_ptr(&other), Arc::as_ptr(pool)) {
            return Ok(());
        }
        return Err(Error::invalid(
            what(),
            "another memory pool is registered under this UUID",
        ));
    }
    let own = *pool.ipc().uuid.get_or_init(|| uuid);
    if own != uuid {
        return Err(Error::invalid(what(), format!("the pool's UUID is {own}")));
    }
    let weak: Weak<dyn Any + Send + Sync> = Arc::downgrade(pool) as Weak<P>;
    reg.insert(uuid, weak);
    Ok(())
}

/// The live pool registered under `uuid`, of any type.
fn registered(uuid: PoolUuid, what: impl FnOnce() -> String) -> Result<Arc<dyn Any + Send + Sync>> {
    registry()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&uuid)
        .and_then(Weak::upgrade)
        .ok_or_else(|| Error::invalid(what(), "no live pool is registered under this UUID"))
}

fn from_registry_of<P: IpcMemoryPool + Send + Sync>(uuid: PoolUuid) -> Result<Arc<P>> {
    let what = || format!("looking up {} {uuid} in the registry", P::NAME);
    registered(uuid, what)?.downcast::<P>().map_err(|_| {
        Error::invalid(
            what(),
            "the pool registered under this UUID is of another kind",
        )
    })
}

fn import_registered_of<P: IpcMemoryPool + Send + Sync>(
    device: &Device,
    uuid: PoolUuid,
    import: impl FnOnce() -> Result<P>,
) -> Result<Arc<P>> {
    if let Ok(known) = from_registry_of::<P>(uuid) {
        if known.device() != *device {
            return Err(Error::other_device(
                format!(
                    "importing {} {uuid} on device {}",
                    P::NAME,
                    device.ordinal()
                ),
                format!(
                    "the pool registered under this UUID is on device {}",
                    known.device().ordinal()
                ),
            ));
        }
        return Ok(known);
    }
    let pool = Arc::new(import()?);
    match register_of(&pool, uuid) {
        Ok(()) => Ok(pool),
        // Another thread imported and registered it meanwhile: use that one
        // (this import is released when `pool` drops).
        Err(e) => from_registry_of::<P>(uuid).map_err(|_| e),
    }
}

/// The IPC methods both pool types share (their `import` is their own).
macro_rules! ipc_pool_methods {
    ($t:ty) => {
        #[cfg_attr(docsrs, doc(cfg(unix)))]
        impl $t {
            /// The pool's shareable handle (`cuda.core`'s `allocation_handle`): a
            /// file descriptor another process imports with
            /// [`import`](Self::import). The pool is exported once, when it is
            /// created (the driver exports a pool's buffers only after that); each
            /// call returns a new duplicate of that descriptor, which the caller
            /// owns.
            ///
            /// # Errors
            /// [`Error::Unsupported`] for a pool made without `ipc_enabled` or
            /// imported from another process; [`Error::Io`] when the descriptor
            /// cannot be duplicated.
            pub fn export_handle(&self) -> Result<OwnedFd> {
                export_handle_of(self)
            }

            /// The pool's identity across processes, for an IPC-enabled pool: made
            /// when the pool was created here, or the one an imported pool was
            /// registered under ([`register`](Self::register)); `None` for other
            /// pools and for an imported pool not registered yet.
            pub fn uuid(&self) -> Option<PoolUuid> {
                self.ipc.uuid.get().copied()
            }

            /// Registers this IPC pool in the process-wide registry under `uuid`
            /// (`cuda.core`'s `register`), so that
            /// [`from_registry`](Self::from_registry) finds it. An imported pool
            /// takes `uuid` as its [`uuid`](Self::uuid); a pool made here must be
            /// registered under its own. Registering the same pool again under its
            /// UUID does nothing. The registry holds a weak reference: it does not
            /// keep the pool alive.
            ///
            /// # Errors
            /// [`Error::Unsupported`] for a pool that is not IPC-enabled;
            /// [`Error::InvalidArgument`] when the pool already has another UUID,
            /// or another live pool is registered under `uuid`.
            pub fn register(self: &Arc<Self>, uuid: PoolUuid) -> Result<()> {
                register_of(self, uuid)
            }

            /// The live pool of this type registered under `uuid` (`cuda.core`'s
            /// `from_registry`).
            ///
            /// # Errors
            /// [`Error::InvalidArgument`] when no pool registered under `uuid` is
            /// alive, or the one registered is of another type.
            pub fn from_registry(uuid: PoolUuid) -> Result<Arc<Self>> {
                from_registry_of(uuid)
            }

            /// Imports a pool another process exported, once per process: the
            /// pool registered under `uuid` (the exporter's [`uuid`](Self::uuid))
            /// when there is one, else the pool [`import`](Self::import)ed from
            /// `fd` and registered under `uuid`. `fd` is only read; the caller
            /// still owns it.
            ///
            /// # Errors
            /// [`Error::InvalidArgument`] when the registered pool is of another
            /// device than `device`; as [`import`](Self::import) and
            /// [`register`](Self::register).
            pub fn import_registered(
                device: &Device,
                fd: BorrowedFd<'_>,
                uuid: PoolUuid,
            ) -> Result<Arc<Self>> {
                import_registered_of(device, uuid, || Self::import(device, fd))
            }
        }
    };
}
ipc_pool_methods!(DeviceMemoryResource);
ipc_pool_methods!(PinnedMemoryResource);

#[cfg_attr(docsrs, doc(cfg(unix)))]
impl Buffer {
    /// Imports a buffer another process exported from the pool registered under
    /// `pool` (a [`DeviceMemoryResource`] or a [`PinnedMemoryResource`]: see
    /// [`DeviceMemoryResource::from_registry`], then
    /// [`from_ipc_descriptor`](Self::from_ipc_descriptor)).
    ///
    /// # Errors
    /// As [`DeviceMemoryResource::from_registry`] and
    /// [`from_ipc_descriptor`](Self::from_ipc_descriptor).
    pub fn from_registered_ipc_descriptor(
        pool: PoolUuid,
        descriptor: &IpcBufferDescriptor,
        stream: &Stream,
    ) -> Result<Self> {
        let any = registered(pool, || {
            format!("looking up memory pool {pool} in the registry")
        })?;
        match any.downcast::<DeviceMemoryResource>() {
            Ok(device) => Self::from_ipc_descriptor(&device, descriptor, stream),
            Err(any) => match any.downcast::<PinnedMemoryResource>() {
                Ok(pinned) => Self::from_ipc_descriptor(&pinned, descriptor, stream),
                Err(_) => Err(Error::invalid(
                    format!("importing a buffer of memory pool {pool}"),
                    "the registered object is not a memory pool",
                )),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ImportRegistry, PoolUuid};

    /// Issue 26, hole 9: a second import of a live mapping is refused; once
    /// its owner is gone the mapping can be imported again, after the queued
    /// frees of earlier imports have been waited for.
    #[test]
    fn a_live_import_has_one_owner_and_queued_frees_are_waited_for() {
        let (d1, d2, d3) = ([1u8; 64], [2u8; 64], [3u8; 64]);
        let mut reg = ImportRegistry::<&str>::new();
        assert!(reg.take_frees().is_empty());
        assert!(reg.insert(0x1000, d1));
        assert!(
            reg.has_descriptor(&d1),
            "refused before the driver is asked"
        );
        assert!(!reg.insert(0x1000, d3), "a second owner of one mapping");
        assert!(!reg.insert(0x3000, d1), "one descriptor, a second mapping");
        assert!(!reg.has_descriptor(&d3), "a refused import records nothing");
        assert!(reg.insert(0x2000, d2));
        reg.freed(0x1000, Some("free of 0x1000"));
        assert!(!reg.has_descriptor(&d1));
        // The next import waits for the queued free first.
        assert_eq!(reg.take_frees(), vec!["free of 0x1000"]);
        assert!(reg.take_frees().is_empty(), "each free is waited for once");
        assert!(
            reg.insert(0x1000, d1),
            "imported again once its owner is gone"
        );
        assert!(!reg.insert(0x2000, d3), "still owned");
        reg.freed(0x2000, None);
        assert!(reg.take_frees().is_empty(), "freed and waited for already");
        assert!(reg.insert(0x2000, d2));
    }

    #[test]
    fn uuids_are_version_4_distinct_and_print_as_uuids() {
        let a = PoolUuid::new_random();
        let b = PoolUuid::new_random();
        assert_ne!(a, b);
        assert_eq!(a.0[6] >> 4, 4);
        assert_eq!(a.0[8] >> 6, 0b10);
        let fixed = PoolUuid([
            0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0x4d, 0xef, 0x80, 0x11, 0x22, 0x33, 0x44, 0x55,
            0x66, 0x77,
        ]);
        assert_eq!(fixed.to_string(), "12345678-9abc-4def-8011-223344556677");
    }
}
