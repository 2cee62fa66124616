//! Page-locked host memory: [`LegacyPinnedMemoryResource`] (`cuMemHostAlloc`) and
//! the stream-ordered host pool [`PinnedMemoryResource`].

use cuda_bindings::driver as sys;

use crate::error::{Check as _, Result};
use crate::{Device, Stream};

use super::{MemoryKind, MemoryResource, owning_allocate};

use super::pool::{
    PoolAttributes, PoolReuse, pool_allocate, pool_attributes, pool_bool, pool_free, pool_set_bool,
    pool_set_u64, pool_u64, set_release_threshold,
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
}

// SAFETY: `cuMemHostAlloc` memory is host memory the device can reach, freed by
// `cuMemFreeHost` with the pointer it returned.
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
        // regardless.
        let _ = stream.drain();
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
#[derive(Debug)]
pub struct PinnedMemoryResource {
    device: Device,
    pool: sys::CUmemoryPool,
    numa_id: i32,
}

// SAFETY: a CUmemoryPool is a handle any thread may use.
unsafe impl Send for PinnedMemoryResource {}
// SAFETY: as above; the driver serialises pool operations.
unsafe impl Sync for PinnedMemoryResource {}

/// Options for a [`PinnedMemoryResource`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PinnedMemoryResourceOptions {
    /// The host NUMA node the memory lives on (0 on most machines).
    pub numa_id: i32,
    /// The most the pool may hold, in bytes; 0 for no limit.
    pub max_size: usize,
}

impl PinnedMemoryResource {
    /// A pinned host pool whose buffers `device` can access.
    ///
    /// # Errors
    /// The driver's error (`CUDA_ERROR_NOT_SUPPORTED` on drivers without host
    /// memory pools: use [`LegacyPinnedMemoryResource`] there).
    pub fn new(device: &Device, options: PinnedMemoryResourceOptions) -> Result<Self> {
        let _current = device.ensure_current()?;
        let props = sys::CUmemPoolProps {
            allocType: sys::CU_MEM_ALLOCATION_TYPE_PINNED,
            handleTypes: sys::CU_MEM_HANDLE_TYPE_NONE,
            location: sys::CUmemLocation {
                type_: sys::CU_MEM_LOCATION_TYPE_HOST_NUMA,
                id: options.numa_id,
            },
            maxSize: options.max_size,
            ..Default::default()
        };
        let what = || {
            format!(
                "creating a pinned host memory pool on NUMA node {}",
                options.numa_id
            )
        };
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: `props` is fully initialised; `pool` is valid for writes.
        unsafe { sys::cuMemPoolCreate(&mut pool, &props) }.check(what)?;
        let mr = Self {
            device: *device,
            pool,
            numa_id: options.numa_id,
        };
        let access = sys::CUmemAccessDesc {
            location: sys::CUmemLocation {
                type_: sys::CU_MEM_LOCATION_TYPE_DEVICE,
                id: device.ordinal() as i32,
            },
            flags: sys::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: one valid access descriptor.
        unsafe { sys::cuMemPoolSetAccess(pool, &access, 1) }
            .check(|| format!("letting device {} access a pinned pool", device.ordinal()))?;
        Ok(mr)
    }

    /// The host NUMA node.
    pub fn numa_id(&self) -> i32 {
        self.numa_id
    }

    /// The driver's pool handle.
    pub fn handle(&self) -> sys::CUmemoryPool {
        self.pool
    }
}

impl Drop for PinnedMemoryResource {
    fn drop(&mut self) {
        // SAFETY: an owned pool; buffers hold an `Arc` of this resource, so none is left.
        let _ = unsafe { sys::cuMemPoolDestroy(self.pool) };
    }
}

// SAFETY: host-pool allocations are page-locked host memory `device` may access,
// freed with `cuMemFreeAsync`.
unsafe impl MemoryResource for PinnedMemoryResource {
    unsafe fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<sys::CUdeviceptr> {
        pool_allocate(self.pool, size, stream, || {
            format!("allocating {size} bytes of pinned host memory")
        })
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
