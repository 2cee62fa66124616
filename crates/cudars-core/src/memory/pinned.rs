//! Page-locked host memory: [`LegacyPinnedMemoryResource`] (`cuMemHostAlloc`) and
//! the stream-ordered host pool [`PinnedMemoryResource`].

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{device::Device, stream::Stream};

use crate::{
    memory::allocate::owning_allocate, memory::resource::Location, memory::resource::MemoryKind,
    memory::resource::MemoryResource,
};

use super::pool::{
    PoolAttributes, PoolIpc, PoolReuse, create_pool, pool_allocate, pool_attributes, pool_bool,
    pool_free, pool_set_bool, pool_set_u64, pool_u64, set_release_threshold,
};

owning_allocate!(unordered LegacyPinnedMemoryResource);
owning_allocate!(ordered PinnedMemoryResource);

/// Page-locked host memory the classic way (`cuMemHostAlloc`, portable to every
/// context). Allocation is not stream-ordered: freeing waits for the buffer's free
/// stream. [`PinnedMemoryResource`] is the stream-ordered pool.
#[derive(Debug, Clone, Copy)]
pub struct LegacyPinnedMemoryResource {
    device: Device,
}

impl LegacyPinnedMemoryResource {
    /// A pinned-memory resource whose buffers are used from `device`.
    pub fn new(device: &Device) -> Self {
        Self { device: *device }
    }

    /// The device the memory is bound to: always `None`, `cuda.core`'s
    /// `LegacyPinnedMemoryResource.device_id` of -1. The memory is allocated
    /// portable (`CU_MEMHOSTALLOC_PORTABLE`), so every context of every device
    /// may use it; [`MemoryResource::device`] is only the device whose context
    /// makes the allocations (the one given to [`new`](Self::new)).
    pub fn device_id(&self) -> Option<Device> {
        None
    }
}

// SAFETY: `cuMemHostAlloc` memory is host memory the device can reach, freed by
// `cuMemFreeHost` with the pointer it returned.
// Soundness contract: rules 1 and 2.
unsafe impl MemoryResource for LegacyPinnedMemoryResource {
    unsafe fn allocate_raw(&self, size: usize, _stream: &Stream) -> Result<sys::CUdeviceptr> {
        let _current = self.device.ensure_current()?;
        let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: `p` is valid for writes.
        unsafe { sys::cuMemHostAlloc(&mut p, size, sys::CU_MEMHOSTALLOC_PORTABLE) }
            .check(|| format!("allocating {size} bytes of pinned host memory"))?;
        Ok(p as sys::CUdeviceptr)
    }

    unsafe fn deallocate(&self, ptr: sys::CUdeviceptr, size: usize, stream: &Stream) -> Result<()> {
        // Not stream-ordered: wait for work that may still use it, then free
        // regardless, unless the wait is refused for now (a capture forbids it):
        // then nothing is freed, and the buffer's free is retried later.
        crate::stream::drain_before_free(stream)?;
        // SAFETY: per the trait's contract, `ptr` came from `cuMemHostAlloc`.
        unsafe { sys::cuMemFreeHost(ptr as *mut std::ffi::c_void) }
            .check(|| format!("freeing {size} bytes of pinned host memory"))
    }

    fn kind(&self) -> MemoryKind {
        MemoryKind::Pinned
    }

    fn device(&self) -> Device {
        self.device
    }

    fn is_stream_ordered(&self) -> bool {
        false
    }
}

/// Stream-ordered page-locked host memory: a host-located memory pool
/// (`cuMemPoolCreate` with a host NUMA location) that `device` may read and write.
///
/// Made with `ipc_enabled`, the pool and its buffers can be shared with other
/// processes (Linux, feature `ipc`), like a device pool's: `export_handle`,
/// `import`, `uuid`, `register`, `from_registry`, `import_registered`, and
/// `Buffer::ipc_descriptor` / `Buffer::from_ipc_descriptor` (see
/// `IpcMemoryPool`).
#[derive(Debug)]
pub struct PinnedMemoryResource {
    device: Device,
    pub(crate) pool: sys::CUmemoryPool,
    numa_id: i32,
    pub(crate) ipc: PoolIpc,
}

// SAFETY: a CUmemoryPool is a handle any thread may use.
// Soundness contract: rule 11.
unsafe impl Send for PinnedMemoryResource {}
// SAFETY: as above; the driver serialises pool operations.
// Soundness contract: rule 11.
unsafe impl Sync for PinnedMemoryResource {}

/// Options for a [`PinnedMemoryResource`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PinnedMemoryResourceOptions {
    /// The host NUMA node the memory lives on: `Some(node)` (`CU_MEM_LOCATION_TYPE_HOST_NUMA`),
    /// or `None` (the default), as `cuda.core` has it: for an `ipc_enabled` pool
    /// the device's host NUMA node ([`DeviceProperties::host_numa_id`](crate::DeviceProperties::host_numa_id),
    /// as sharing a pool needs a node), otherwise wherever the OS places it
    /// (`CU_MEM_LOCATION_TYPE_HOST`).
    pub numa_id: Option<i32>,
    /// The most the pool may hold, in bytes; 0 for no limit.
    pub max_size: usize,
    /// The pool and its buffers may be shared with other processes through POSIX
    /// file descriptors (Linux, and a driver that can export host NUMA memory
    /// pools: the driver's error otherwise).
    pub ipc_enabled: bool,
}

impl PinnedMemoryResource {
    /// A pinned host pool whose buffers `device` can access.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for `ipc_enabled` where there are no POSIX file
    /// descriptors (Windows); the driver's error (`CUDA_ERROR_NOT_SUPPORTED` on
    /// drivers without host memory pools: use [`LegacyPinnedMemoryResource`]
    /// there).
    pub fn new(device: &Device, options: PinnedMemoryResourceOptions) -> Result<Self> {
        let what = || match options.numa_id {
            Some(n) => format!("creating a pinned host memory pool on NUMA node {n}"),
            None => "creating a pinned host memory pool".to_owned(),
        };
        if options.ipc_enabled && !cfg!(unix) {
            return Err(Error::unsupported(
                what(),
                "sharing memory pools between processes needs POSIX file descriptors (Linux)",
            ));
        }
        let location = match options.numa_id {
            // `cuda.core` raises `ValueError` for a negative node.
            Some(n) => Location::HostNuma(u32::try_from(n).map_err(|_| {
                Error::invalid(what(), "`numa_id` must be 0 or more (a host NUMA node)")
            })?),
            // As `cuda.core`: a shared pool lives on the device's host NUMA node.
            None if options.ipc_enabled => {
                let node = device.properties().host_numa_id()?;
                Location::HostNuma(u32::try_from(node).map_err(|_| {
                    Error::unsupported(
                        what(),
                        "the device reports no host NUMA node (`host_numa_id` is -1) for an \
                         IPC-enabled pool: set `numa_id`",
                    )
                })?)
            }
            None => Location::Host,
        };
        let _current = device.ensure_current()?;
        let pool = create_pool(
            sys::CU_MEM_ALLOCATION_TYPE_PINNED,
            location.raw(),
            (options.ipc_enabled, options.max_size),
            what,
        )?;
        let mut mr = Self {
            device: *device,
            pool,
            numa_id: location.numa_id().map_or(-1, |n| n as i32),
            ipc: PoolIpc::default(),
        };
        // On failure `mr` is dropped, which destroys the pool.
        mr.grant_device_access()?;
        mr.ipc = PoolIpc::made(pool, options.ipc_enabled)?;
        Ok(mr)
    }

    /// Lets `device` read and write the pool's memory (`cuMemPoolSetAccess`).
    fn grant_device_access(&self) -> Result<()> {
        let access = sys::CUmemAccessDesc {
            location: Location::Device(self.device).raw(),
            flags: sys::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: one valid access descriptor; a live pool.
        unsafe { sys::cuMemPoolSetAccess(self.pool, &access, 1) }.check(|| {
            format!(
                "letting device {} access a pinned pool",
                self.device.ordinal()
            )
        })
    }

    /// Imports a pinned pool another process exported (`cuda.core`'s
    /// `from_allocation_handle`; the exporter's `export_handle`), for `device`
    /// of this process, which is granted read and write access (access granted
    /// by the exporter does not carry over). The pool is released when this
    /// resource and every buffer imported through it are gone; its buffers come
    /// from the exporter, so allocating from it is refused.
    ///
    /// # Errors
    /// The driver's error.
    #[cfg(unix)]
    #[cfg_attr(docsrs, doc(cfg(unix)))]
    pub fn import(device: &Device, fd: std::os::fd::BorrowedFd<'_>) -> Result<Self> {
        let _current = device.ensure_current()?;
        let pool = crate::memory::fd::import_pool(fd, || {
            format!(
                "importing a pinned memory pool for device {}",
                device.ordinal()
            )
        })?;
        let imported = Self {
            device: *device,
            pool,
            // Host NUMA pools are the only ones with a NUMA node; the exporter's
            // node is not known here.
            numa_id: -1,
            ipc: PoolIpc::imported(),
        };
        imported.grant_device_access()?;
        Ok(imported)
    }

    /// Whether the pool's buffers can be shared with other processes (made with
    /// `ipc_enabled`, or imported).
    pub fn is_ipc_enabled(&self) -> bool {
        self.ipc.enabled
    }

    /// Whether the pool was imported from another process: its memory is
    /// allocated by the exporter, so allocating from it is refused.
    pub fn is_mapped(&self) -> bool {
        self.ipc.mapped
    }

    /// Whether this resource destroys its pool when it is dropped: always `true`,
    /// as every `PinnedMemoryResource` makes (or imports) a pool of its own
    /// (Python's `is_handle_owned`).
    pub fn is_handle_owned(&self) -> bool {
        true
    }

    /// The host NUMA node (-1 for a pool the OS places, `numa_id: None` without
    /// IPC, and for an imported pool, whose node is the exporter's business).
    pub fn numa_id(&self) -> i32 {
        self.numa_id
    }

    /// The driver's pool handle.
    pub fn handle(&self) -> sys::CUmemoryPool {
        self.pool
    }
}

// Deferred-release rule: on a driver callback thread the destroy (a CUDA call)
// is handed to the deferred queue instead of made there.
impl Drop for PinnedMemoryResource {
    fn drop(&mut self) {
        super::pool::destroy_pool(self.pool);
    }
}

// SAFETY: host-pool allocations are page-locked host memory `device` may access,
// freed with `cuMemFreeAsync`.
// Soundness contract: rules 1 and 2.
unsafe impl MemoryResource for PinnedMemoryResource {
    unsafe fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<sys::CUdeviceptr> {
        let what = || format!("allocating {size} bytes of pinned host memory");
        self.ipc.check_allocate(what)?;
        pool_allocate(self.pool, size, stream, what)
    }

    unsafe fn deallocate(&self, ptr: sys::CUdeviceptr, size: usize, stream: &Stream) -> Result<()> {
        // SAFETY: per the trait's contract.
        unsafe {
            pool_free(ptr, stream, || {
                format!("freeing {size} bytes of pinned host memory")
            })
        }
    }

    fn kind(&self) -> MemoryKind {
        MemoryKind::Pinned
    }

    fn device(&self) -> Device {
        self.device
    }
}

pool_attributes!(PinnedMemoryResource);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_pinned_memory_is_bound_to_no_device() {
        let d = Device::for_tests(1);
        let r = LegacyPinnedMemoryResource::new(&d);
        // cuda.core answers -1: portable memory, no device of its own.
        assert_eq!(r.device_id(), None);
        // The device whose context allocates is still the one given.
        assert_eq!(MemoryResource::device(&r), d);
        assert_eq!(r.kind(), MemoryKind::Pinned);
    }
}
