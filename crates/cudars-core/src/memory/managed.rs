//! Managed (unified) memory: [`ManagedMemoryResource`], a stream-ordered pool of
//! managed memory where the driver has one (CUDA 13), else `cuMemAllocManaged`.

use std::sync::Arc;

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{device::Device, memory::buffer::Buffer, stream::Stream};

use super::pool::{
    PoolAttributes, PoolReuse, create_pool, pool_allocate, pool_attributes, pool_bool, pool_free,
    pool_set_bool, pool_set_u64, pool_u64, set_release_threshold,
};
use super::resource::mem_advise;
use crate::{
    memory::managed_buffer::ManagedBuffer, memory::resource::Location,
    memory::resource::MemoryKind, memory::resource::MemoryResource,
};

/// The driver version with pools of managed memory (`cuMemPoolCreate` with
/// `CU_MEM_ALLOCATION_TYPE_MANAGED`, `cuMemGetMemPool`).
const MANAGED_POOLS: i32 = 13000;

/// No preferred location, for a pool of managed memory (the id is unused; -1 as
/// `cuda.core` passes it).
const NO_LOCATION: sys::CUmemLocation =
    crate::memory::resource::mem_location(sys::CU_MEM_LOCATION_TYPE_NONE, -1);

/// Managed (unified) memory, reachable from the host and every device and
/// migrated on demand (`cuda.core`'s `ManagedMemoryResource`). Its
/// [`allocate`](Self::allocate) returns a [`ManagedBuffer`].
///
/// Where the driver has them (CUDA 13), allocations come from a
/// **stream-ordered pool** of managed memory (`cuMemAllocFromPoolAsync`, freed
/// with `cuMemFreeAsync`): the driver's current managed pool
/// ([`new`](Self::new)) or a pool of its own ([`new_pool`](Self::new_pool),
/// [`with_preferred_location`](Self::with_preferred_location)). The pool has the
/// attributes of a device pool ([`attributes`](Self::attributes),
/// [`release_threshold`](Self::release_threshold), …), and a stream is needed to
/// allocate. Otherwise (older drivers, or devices whose driver has no managed
/// pool: `CUDA_ERROR_NOT_SUPPORTED`) memory comes from `cuMemAllocManaged`,
/// attached globally; allocation is then not stream-ordered (the stream is
/// optional), freeing waits for the buffer's free stream, and the pool methods
/// answer [`Error::Unsupported`]. [`is_pool`](Self::is_pool) says which;
/// [`legacy`](Self::legacy) always takes the second way.
///
/// Managed pools cannot be shared with other processes
/// ([`is_ipc_enabled`](Self::is_ipc_enabled) is `false`).
///
/// **Memory advice needs `cuMemAllocManaged` memory:** the CUDA 13.0 driver (580)
/// refuses every `cuMemAdvise` on pool memory (read-mostly, preferred location,
/// accessed-by: `CUDA_ERROR_NOT_SUPPORTED`, measured on an H100), while prefetch
/// and discard work. Take [`legacy`](Self::legacy) memory to advise it; a pool's
/// preferred location is set for the whole pool
/// ([`with_preferred_location`](Self::with_preferred_location)).
#[derive(Debug)]
pub struct ManagedMemoryResource {
    device: Device,
    preferred: Option<Location>,
    /// The pool allocations come from; null: `cuMemAllocManaged`.
    pool: sys::CUmemoryPool,
    /// Whether the pool is this resource's own, destroyed with it.
    owned: bool,
}

// SAFETY: a CUmemoryPool is a handle any thread may use.
// Soundness contract: rule 11.
unsafe impl Send for ManagedMemoryResource {}
// SAFETY: as above; the driver serialises pool operations.
// Soundness contract: rule 11.
unsafe impl Sync for ManagedMemoryResource {}

/// Options for a new pool of managed memory
/// ([`ManagedMemoryResource::new_pool`]; `cuda.core`'s
/// `ManagedMemoryResourceOptions`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ManagedMemoryResourceOptions {
    /// Where the pool's memory prefers to live: a device, the host or a host
    /// NUMA node (not [`Location::HostNumaCurrent`], which a pool does not
    /// take); `None` for no preference.
    pub preferred_location: Option<Location>,
    /// Memory the pool keeps, rather than returning it to the system, at a
    /// synchronisation point; `None` for the driver's default (0).
    pub release_threshold: Option<u64>,
}

impl ManagedMemoryResourceOptions {
    /// Options with `location` as the preferred location.
    pub fn preferred_at(location: Location) -> Self {
        Self {
            preferred_location: Some(location),
            ..Self::default()
        }
    }
}

impl ManagedMemoryResource {
    /// Managed memory for `device` with no preferred location: from the driver's
    /// current pool of managed memory (`cuMemGetMemPool`; the default pool unless
    /// one was set) on CUDA 13 drivers, else from `cuMemAllocManaged`.
    ///
    /// # Errors
    /// The driver's error (other than a managed pool being unsupported, which
    /// falls back to `cuMemAllocManaged`).
    pub fn new(device: &Device) -> Result<Self> {
        if crate::versions::driver_at_least(MANAGED_POOLS) {
            let _current = device.ensure_current()?;
            // No location: the managed pool is not one device's.
            let mut loc = NO_LOCATION;
            let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
            // SAFETY: `pool` and `loc` are valid for the call.
            let rc = unsafe {
                sys::cuMemGetMemPool(&mut pool, &mut loc, sys::CU_MEM_ALLOCATION_TYPE_MANAGED)
            };
            if rc != sys::CUDA_ERROR_NOT_SUPPORTED {
                rc.check(|| "getting the current pool of managed memory")?;
                return Ok(Self {
                    device: *device,
                    preferred: None,
                    pool,
                    owned: false,
                });
            }
        }
        Ok(Self::legacy(device, None))
    }

    /// Managed memory for `device` whose allocations prefer to live at
    /// `location`: a new pool of managed memory there on CUDA 13 drivers
    /// ([`new_pool`](Self::new_pool)), else `cuMemAllocManaged` with each
    /// allocation advised so (`CU_MEM_ADVISE_SET_PREFERRED_LOCATION`).
    ///
    /// # Errors
    /// As [`new_pool`](Self::new_pool).
    pub fn with_preferred_location(device: &Device, location: Location) -> Result<Self> {
        if crate::versions::driver_at_least(MANAGED_POOLS) {
            match Self::new_pool(device, ManagedMemoryResourceOptions::preferred_at(location)) {
                Err(e) if e.driver_code() == Some(sys::CUDA_ERROR_NOT_SUPPORTED) => {}
                other => return other,
            }
        }
        Ok(Self::legacy(device, Some(location)))
    }

    /// A new pool of managed memory (`cuMemPoolCreate` with
    /// `CU_MEM_ALLOCATION_TYPE_MANAGED`), destroyed when this resource and every
    /// buffer from it are gone.
    ///
    /// # Errors
    /// [`Error::Unsupported`] on a driver older than CUDA 13.0;
    /// [`Error::InvalidArgument`] for [`Location::HostNumaCurrent`] as the
    /// preferred location; the driver's error (`CUDA_ERROR_NOT_SUPPORTED` where
    /// the device has no managed pools).
    pub fn new_pool(device: &Device, options: ManagedMemoryResourceOptions) -> Result<Self> {
        let what = || {
            format!(
                "creating a pool of managed memory for device {}",
                device.ordinal()
            )
        };
        crate::versions::require_driver(MANAGED_POOLS, "pools of managed memory", what)?;
        let location = match options.preferred_location {
            Some(Location::HostNumaCurrent) => {
                return Err(Error::invalid(
                    what(),
                    "a pool's preferred location is a device, the host or a host NUMA \
                     node, not the calling thread's NUMA node",
                ));
            }
            Some(l) => l.raw(),
            None => NO_LOCATION,
        };
        let _current = device.ensure_current()?;
        let pool = create_pool(
            sys::CU_MEM_ALLOCATION_TYPE_MANAGED,
            location,
            (false, 0),
            what,
        )?;
        // From here on dropping `mr` destroys the pool.
        let mr = Self {
            device: *device,
            preferred: options.preferred_location,
            pool,
            owned: true,
        };
        if let Some(t) = options.release_threshold {
            set_release_threshold(pool, t)?;
        }
        Ok(mr)
    }

    /// Managed memory from `cuMemAllocManaged` (attached globally), whatever the
    /// driver: not stream-ordered, with each allocation advised to prefer
    /// `preferred` when it is given.
    pub fn legacy(device: &Device, preferred: Option<Location>) -> Self {
        Self {
            device: *device,
            preferred,
            pool: std::ptr::null_mut(),
            owned: false,
        }
    }

    /// The preferred location of its allocations, if any.
    pub fn preferred_location(&self) -> Option<Location> {
        self.preferred
    }

    /// Whether allocations come from a stream-ordered pool of managed memory
    /// (else from `cuMemAllocManaged`).
    pub fn is_pool(&self) -> bool {
        !self.pool.is_null()
    }

    /// The driver's pool handle (`None` for `cuMemAllocManaged` memory).
    pub fn handle(&self) -> Option<sys::CUmemoryPool> {
        self.is_pool().then_some(self.pool)
    }

    /// Whether the pool is this resource's own (`cuda.core`'s
    /// `is_handle_owned`), destroyed when the resource and its buffers are gone.
    pub fn is_handle_owned(&self) -> bool {
        self.owned
    }

    /// Whether allocations can be shared with other processes: never, for
    /// managed memory.
    pub fn is_ipc_enabled(&self) -> bool {
        false
    }

    /// The pool the attribute methods read, or why there is none.
    fn pool_or_unsupported(&self) -> Result<sys::CUmemoryPool> {
        if self.is_pool() {
            Ok(self.pool)
        } else {
            Err(Error::unsupported(
                "reading or setting a managed memory pool's attributes",
                "the resource allocates with cuMemAllocManaged, not from a pool (pools of \
                 managed memory need a CUDA 13 driver)",
            ))
        }
    }

    /// Allocates an owning [`ManagedBuffer`] of `size` bytes, ordered on
    /// `stream`, which becomes its free stream (see
    /// [`Buffer::allocate`](crate::Buffer::allocate)). From a pool
    /// ([`is_pool`](Self::is_pool)) the stream is required; from
    /// `cuMemAllocManaged` it is optional (`None`: the memory is allocated at
    /// once and freed on the device's legacy default stream).
    ///
    /// # Errors
    /// As [`Buffer::allocate`](crate::Buffer::allocate) (`None` for a pool is
    /// [`Error::InvalidArgument`]).
    pub fn allocate<'s>(
        self: &Arc<Self>,
        size: usize,
        stream: impl Into<Option<&'s Stream>>,
    ) -> Result<ManagedBuffer> {
        let mr: Arc<dyn MemoryResource> = self.clone();
        Buffer::allocate(mr, size, stream).map(ManagedBuffer::new_unchecked)
    }
}

pool_attributes!(ManagedMemoryResource, |mr| mr.pool_or_unsupported());

// Deferred-release rule: on a driver callback thread the destroy (a CUDA call)
// is handed to the deferred queue instead of made there.
impl Drop for ManagedMemoryResource {
    fn drop(&mut self) {
        if self.owned {
            super::pool::destroy_pool(self.pool);
        }
    }
}

// SAFETY: `cuMemAllocManaged` and managed-pool memory is reachable from host and
// device; the first is freed by `cuMemFree`, the second by `cuMemFreeAsync`, each
// with the pointer its allocation returned. `cuMemAllocManaged` memory is usable
// on any stream at once, as a resource that is not stream-ordered must be.
// Soundness contract: rules 1 and 2.
unsafe impl MemoryResource for ManagedMemoryResource {
    unsafe fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<sys::CUdeviceptr> {
        if self.is_pool() {
            return pool_allocate(self.pool, size, stream, || {
                format!("allocating {size} bytes from a pool of managed memory")
            });
        }
        let _current = self.device.ensure_current()?;
        let mut p: sys::CUdeviceptr = 0;
        // SAFETY: `p` is valid for writes.
        unsafe { sys::cuMemAllocManaged(&mut p, size, sys::CU_MEM_ATTACH_GLOBAL.0) }
            .check(|| format!("allocating {size} bytes of managed memory"))?;
        if let Some(loc) = self.preferred {
            // SAFETY: `p` addresses `size` bytes of managed memory just allocated.
            let rc = unsafe {
                mem_advise(
                    p,
                    size,
                    sys::CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
                    loc,
                    &|| "advising a preferred location for managed memory".to_owned(),
                )
            };
            if let Err(e) = rc {
                // SAFETY: frees what was allocated above, once.
                let rc = unsafe { sys::cuMemFree(p) };
                crate::cleanup::driver(rc, "freeing managed memory (cuMemFree)");
                return Err(e);
            }
        }
        Ok(p)
    }

    unsafe fn deallocate(&self, ptr: sys::CUdeviceptr, size: usize, stream: &Stream) -> Result<()> {
        if self.is_pool() {
            // SAFETY: per the trait's contract, `ptr` came from the pool.
            return unsafe {
                pool_free(ptr, stream, || {
                    format!("freeing {size} bytes of a pool of managed memory")
                })
            };
        }
        // Wait for work that may still use it, then free regardless, unless the
        // wait is refused for now (then nothing is freed; the free is retried).
        crate::stream::drain_before_free(stream)?;
        let _current = self.device.ensure_current()?;
        // SAFETY: per the trait's contract, `ptr` came from `cuMemAllocManaged`.
        unsafe { sys::cuMemFree(ptr) }.check(|| format!("freeing {size} bytes of managed memory"))
    }

    fn kind(&self) -> MemoryKind {
        MemoryKind::Managed
    }

    fn device(&self) -> Device {
        self.device
    }

    fn is_stream_ordered(&self) -> bool {
        self.is_pool()
    }
}
