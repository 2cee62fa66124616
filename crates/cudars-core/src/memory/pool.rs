//! The device's stream-ordered memory pools: [`DeviceMemoryResource`] (the
//! default pool or one of its own), its options and attributes, and the pool calls
//! the host pools of [`PinnedMemoryResource`](super::PinnedMemoryResource) share.

use std::sync::{Arc, OnceLock};

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{device::Device, stream::Stream};

use crate::{
    memory::resource::Location, memory::resource::MemoryKind, memory::resource::MemoryResource,
    memory::resource::Resource,
};

impl DeviceMemoryResource {
    /// Allocates an owning [`Buffer`](crate::Buffer) of `size` bytes from this
    /// resource, ordered on `stream`, which becomes the buffer's free stream
    /// (see [`Buffer::allocate`](crate::Buffer::allocate)). The resource is
    /// stream-ordered: the stream is required.
    ///
    /// # Errors
    /// As [`Buffer::allocate`](crate::Buffer::allocate).
    pub fn allocate(
        self: &Arc<Self>,
        size: usize,
        stream: &Stream,
    ) -> Result<crate::memory::buffer::Buffer> {
        // The device's default pool as `default_memory_resource` hands it out:
        // the buffer refers to the process-wide resource, touching no count.
        let mr = match cached_default_pool(&self.device) {
            Some(d) if Arc::ptr_eq(&d.typed, self) => d.resource(),
            _ => Resource::Shared(self.clone()),
        };
        crate::memory::buffer::Buffer::allocate_in(mr, size, Some(stream))
    }
}

/// A device's default pool as one resource for the whole process, typed and
/// erased (one allocation): what [`Device::default_memory_resource`] and the
/// allocations of [`Device::allocate`] and `DeviceBuffer::allocate` use. It is
/// never dropped, so buffers of it refer to it without an `Arc` of their own.
pub(crate) struct DefaultPool {
    pub(crate) typed: Arc<DeviceMemoryResource>,
    pub(crate) erased: Arc<dyn MemoryResource>,
}

impl DefaultPool {
    /// The pool as an owned buffer holds it.
    pub(crate) fn resource(&'static self) -> Resource {
        Resource::Static {
            erased: &self.erased,
            pool: self.typed.pool as usize,
            device: self.typed.device,
        }
    }
}

// The hot calls of an allocation and its free: a default pool's go straight to
// `cuMemAllocFromPoolAsync` and `cuMemFreeAsync` (what its `MemoryResource` impl
// does: a default pool is never an imported one), any other resource's through
// its vtable. They shadow the trait's methods reached through `Deref`.
impl Resource {
    /// [`MemoryResource::allocate_raw`].
    ///
    /// # Safety
    /// As [`MemoryResource::allocate_raw`].
    #[inline]
    pub(crate) unsafe fn allocate_raw(
        &self,
        size: usize,
        stream: &Stream,
    ) -> Result<sys::CUdeviceptr> {
        match self {
            Self::Static { pool, device, .. } => {
                pool_allocate(*pool as sys::CUmemoryPool, size, stream, || {
                    format!("allocating {size} bytes on device {}", device.ordinal())
                })
            }
            // SAFETY: the caller keeps the trait's contract.
            Self::Shared(a) => unsafe { a.allocate_raw(size, stream) },
        }
    }

    /// [`MemoryResource::deallocate`].
    ///
    /// # Safety
    /// As [`MemoryResource::deallocate`].
    #[inline]
    pub(crate) unsafe fn deallocate(
        &self,
        ptr: sys::CUdeviceptr,
        size: usize,
        stream: &Stream,
    ) -> Result<()> {
        match self {
            // SAFETY: per the trait's contract, which the caller keeps: `ptr`
            // came from this pool and is freed once, after its work.
            Self::Static { device, .. } => unsafe {
                pool_free(ptr, stream, || {
                    format!("freeing {size} bytes on device {}", device.ordinal())
                })
            },
            // SAFETY: the caller keeps the trait's contract.
            Self::Shared(a) => unsafe { a.deallocate(ptr, size, stream) },
        }
    }
}

/// How many devices' default pools are kept (as many as primary contexts).
const CACHED_DEVICES: usize = 64;

static DEFAULT_POOLS: [OnceLock<DefaultPool>; CACHED_DEVICES] =
    [const { OnceLock::new() }; CACHED_DEVICES];

/// The device's default pool, if made already.
#[inline]
fn cached_default_pool(device: &Device) -> Option<&'static DefaultPool> {
    DEFAULT_POOLS.get(device.ordinal())?.get()
}

/// The device's default pool, made on first use; `Ok(None)` for a device
/// beyond the [`CACHED_DEVICES`] kept (the caller makes a resource of its own).
pub(crate) fn default_pool(device: &Device) -> Result<Option<&'static DefaultPool>> {
    let Some(slot) = DEFAULT_POOLS.get(device.ordinal()) else {
        return Ok(None);
    };
    if let Some(d) = slot.get() {
        return Ok(Some(d));
    }
    let typed = Arc::new(DeviceMemoryResource::default_pool_uncached(device)?);
    let erased: Arc<dyn MemoryResource> = typed.clone();
    // Another thread may have won the race: its resource is the one kept (this
    // one names the same pool, which the driver owns).
    Ok(Some(slot.get_or_init(|| DefaultPool { typed, erased })))
}

/// Device memory from a stream-ordered pool (`cuMemAllocFromPoolAsync`): the device's
/// default pool, or a pool of its own.
#[derive(Debug)]
pub struct DeviceMemoryResource {
    pub(crate) device: Device,
    pub(crate) pool: sys::CUmemoryPool,
    pub(crate) owned: bool,
    pub(crate) ipc: PoolIpc,
}

/// What a memory pool (a device or a pinned one) knows about sharing itself with
/// other processes.
// `pub` for the sealed IPC trait of `ipc.rs`, which exists on Unix with the
// `ipc` feature only.
#[cfg_attr(not(all(unix, feature = "ipc")), allow(unreachable_pub))]
#[derive(Debug, Default)]
pub struct PoolIpc {
    /// Made with `ipc_enabled`, or imported.
    pub(crate) enabled: bool,
    /// Imported from another process: the exporter allocates its memory.
    pub(crate) mapped: bool,
    /// The pool's identity across processes, for IPC pools: made when the pool
    /// is, or given when an imported pool is registered.
    #[cfg(all(unix, feature = "ipc"))]
    pub(crate) uuid: std::sync::OnceLock<crate::memory::fd::PoolUuid>,
    /// The pool's exported descriptor, made when an IPC pool is created (the driver
    /// exports a pool's buffers only once the pool itself has been exported).
    #[cfg(all(unix, feature = "ipc"))]
    pub(crate) fd: Option<std::os::fd::OwnedFd>,
}

impl PoolIpc {
    /// The state of a pool made here with POSIX file descriptor handles when
    /// `enabled`: exported at once, with a new UUID. (Set it on the resource made
    /// before, so that a failure destroys the pool.)
    pub(crate) fn made(pool: sys::CUmemoryPool, enabled: bool) -> Result<Self> {
        #[cfg(not(all(unix, feature = "ipc")))]
        let _ = pool;
        Ok(Self {
            enabled,
            mapped: false,
            #[cfg(all(unix, feature = "ipc"))]
            uuid: if enabled {
                std::sync::OnceLock::from(crate::memory::fd::PoolUuid::new_random())
            } else {
                std::sync::OnceLock::new()
            },
            #[cfg(all(unix, feature = "ipc"))]
            fd: if enabled {
                Some(crate::memory::fd::export_pool(pool)?)
            } else {
                None
            },
        })
    }

    /// The state of a pool imported from another process.
    #[cfg(unix)]
    pub(crate) fn imported() -> Self {
        Self {
            enabled: true,
            mapped: true,
            #[cfg(feature = "ipc")]
            uuid: std::sync::OnceLock::new(),
            #[cfg(feature = "ipc")]
            fd: None,
        }
    }

    /// Refuses allocating from an imported pool.
    pub(crate) fn check_allocate(&self, what: impl FnOnce() -> String) -> Result<()> {
        if self.mapped {
            return Err(Error::unsupported(
                what(),
                "the pool was imported from another process, which allocates its memory",
            ));
        }
        Ok(())
    }
}

// SAFETY: a CUmemoryPool is a handle any thread may use.
// Soundness contract: rule 11.
unsafe impl Send for DeviceMemoryResource {}
// SAFETY: as above; the driver serialises pool operations.
// Soundness contract: rule 11.
unsafe impl Sync for DeviceMemoryResource {}

/// Options for a new device memory pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceMemoryPoolOptions {
    /// The most the pool may hold, in bytes; 0 for no limit.
    pub max_size: usize,
    /// Memory the pool keeps, rather than returning it to the system, at a
    /// synchronisation point; `None` for the driver's default (0).
    pub release_threshold: Option<u64>,
    /// Allocations may be shared with other processes through POSIX file
    /// descriptors.
    pub ipc_enabled: bool,
}

impl DeviceMemoryResource {
    /// The device's default pool (`cuDeviceGetDefaultMemPool`), with its
    /// release threshold raised to the maximum (`u64::MAX`) when it is 0, as
    /// `cuda.core`'s `DeviceMemoryResource(dev)` does: memory freed to the pool
    /// stays reserved for the next allocation instead of going back to the
    /// system at every synchronisation (the driver's default, 0, makes a
    /// free-then-allocate loop pay an OS round trip each time). A threshold
    /// set to anything else is kept; set it back with
    /// [`set_release_threshold`](Self::set_release_threshold) (0 returns memory
    /// at once) and trim with [`trim_to`](Self::trim_to).
    ///
    /// This is the process-wide resource that
    /// [`Device::default_memory_resource`] hands out (the same `Arc`, for the
    /// first 64 devices), so `DeviceMemoryResource::default_pool(&dev)?.allocate(n, &s)`
    /// is `cuda.core`'s `DeviceMemoryResource(dev).allocate(n, stream)` and its
    /// buffers take the default pool's direct path.
    ///
    /// ```no_run
    /// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// use cudars_core::DeviceMemoryResource;
    /// let buf = DeviceMemoryResource::default_pool(dev)?.allocate(1 << 20, s)?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// The driver's error.
    pub fn default_pool(device: &Device) -> Result<Arc<Self>> {
        match default_pool(device)? {
            Some(d) => {
                // As cuda.core's constructor, every call: a threshold set back
                // to 0 since is raised again (a pool attribute: no current
                // context needed).
                raise_release_threshold(d.typed.pool)?;
                Ok(d.typed.clone())
            }
            None => Ok(Arc::new(Self::default_pool_uncached(device)?)),
        }
    }

    /// The default pool as a resource of its own, its release threshold raised
    /// (see [`default_pool`](Self::default_pool)).
    pub(crate) fn default_pool_uncached(device: &Device) -> Result<Self> {
        let _current = device.ensure_current()?;
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: `pool` is valid for writes.
        unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, device.handle()) }.check(|| {
            format!(
                "getting the default memory pool of device {}",
                device.ordinal()
            )
        })?;
        raise_release_threshold(pool)?;
        Ok(Self {
            device: *device,
            pool,
            owned: false,
            ipc: PoolIpc::default(),
        })
    }

    /// A new pool on `device`, destroyed when this resource and every buffer from it
    /// are gone.
    ///
    /// # Errors
    /// The driver's error.
    pub fn new_pool(device: &Device, options: DeviceMemoryPoolOptions) -> Result<Self> {
        let _current = device.ensure_current()?;
        let pool = create_pool(
            sys::CU_MEM_ALLOCATION_TYPE_PINNED,
            Location::Device(*device).raw(),
            (options.ipc_enabled, options.max_size),
            || format!("creating a memory pool on device {}", device.ordinal()),
        )?;
        let mut mr = Self {
            device: *device,
            pool,
            owned: true,
            ipc: PoolIpc::default(),
        };
        // On failure `mr` is dropped, which destroys the pool.
        mr.ipc = PoolIpc::made(pool, options.ipc_enabled)?;
        if let Some(t) = options.release_threshold {
            set_release_threshold(pool, t)?;
        }
        Ok(mr)
    }

    /// Whether the pool's allocations can be shared with other processes.
    pub fn is_ipc_enabled(&self) -> bool {
        self.ipc.enabled
    }

    /// Whether this resource destroys its pool when it is dropped: `true` for a
    /// pool of its own ([`new_pool`](Self::new_pool)) or an imported one, `false`
    /// for the device's default or current pool, which the driver owns
    /// (Python's `is_handle_owned`).
    pub fn is_handle_owned(&self) -> bool {
        self.owned
    }

    /// The driver's pool handle.
    pub fn handle(&self) -> sys::CUmemoryPool {
        self.pool
    }

    /// Whether the pool was imported from another process
    /// (`import`, feature `ipc`): its memory is allocated by the exporter, so
    /// allocating from it is refused.
    pub fn is_mapped(&self) -> bool {
        self.ipc.mapped
    }
}

/// A stream-ordered allocation from `pool` (`cuMemAllocFromPoolAsync`).
#[inline]
pub(super) fn pool_allocate(
    pool: sys::CUmemoryPool,
    size: usize,
    stream: &Stream,
    what: impl FnOnce() -> String,
) -> Result<sys::CUdeviceptr> {
    let mut p: sys::CUdeviceptr = 0;
    stream
        .call(|| {
            // SAFETY: a live pool and stream; `p` is valid for writes.
            unsafe { sys::cuMemAllocFromPoolAsync(&mut p, size, pool, stream.handle()) }
        })?
        .check(what)?;
    Ok(p)
}

/// A stream-ordered free of a pool allocation (`cuMemFreeAsync`).
///
/// # Safety
/// `ptr` came from a pool allocation, is freed once, and no work other than that
/// ordered before this call on `stream` still uses it.
#[inline]
pub(super) unsafe fn pool_free(
    ptr: sys::CUdeviceptr,
    stream: &Stream,
    what: impl FnOnce() -> String,
) -> Result<()> {
    stream
        .call(|| {
            // SAFETY: per this function's contract (a failed free frees nothing,
            // so `call` may make it again).
            unsafe { sys::cuMemFreeAsync(ptr, stream.handle()) }
        })?
        .check(what)
}

/// Destroys an owned pool whose buffers are all gone (each holds an `Arc` of its
/// resource; their frees are queued, and the driver defers the release), at once
/// or, on a driver callback thread, through the deferred queue.
pub(super) fn destroy_pool(pool: sys::CUmemoryPool) {
    let destroy = |p: sys::CUmemoryPool| {
        // SAFETY: an owned pool, destroyed once, after every buffer from it.
        let rc = unsafe { sys::cuMemPoolDestroy(p) };
        crate::cleanup::driver(rc, "destroying a memory pool (cuMemPoolDestroy)");
    };
    if crate::deferred::must_defer() {
        // SAFETY: the owned pool handle; its one destroy moves to the queue.
        unsafe { crate::deferred::defer_handle("destroying a memory pool", pool, destroy) };
    } else {
        destroy(pool);
    }
}

/// Raises a pool's release threshold to `u64::MAX` when it is 0 (the driver's
/// default), as `cuda.core` does for a device's pool; any other value is kept.
fn raise_release_threshold(pool: sys::CUmemoryPool) -> Result<()> {
    if pool_u64(pool, sys::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)? == 0 {
        set_release_threshold(pool, u64::MAX)?;
    }
    Ok(())
}

pub(super) fn set_release_threshold(pool: sys::CUmemoryPool, bytes: u64) -> Result<()> {
    pool_set_u64(pool, sys::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, bytes)
}

/// The name of a pool attribute, for error messages.
fn pool_attr_name(attr: sys::CUmemPool_attribute) -> &'static str {
    match attr {
        sys::CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES => "reuse-follow-event-dependencies",
        sys::CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC => "reuse-allow-opportunistic",
        sys::CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES => {
            "reuse-allow-internal-dependencies"
        }
        sys::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD => "release threshold",
        sys::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT => "reserved memory",
        sys::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH => "reserved memory high-water mark",
        sys::CU_MEMPOOL_ATTR_USED_MEM_CURRENT => "used memory",
        sys::CU_MEMPOOL_ATTR_USED_MEM_HIGH => "used memory high-water mark",
        _ => "attribute",
    }
}

pub(crate) fn pool_u64(pool: sys::CUmemoryPool, attr: sys::CUmemPool_attribute) -> Result<u64> {
    let mut v: u64 = 0;
    // SAFETY: these attributes write a `cuuint64_t`; a live pool.
    unsafe { sys::cuMemPoolGetAttribute(pool, attr, (&raw mut v).cast()) }
        .check(|| format!("reading a memory pool's {}", pool_attr_name(attr)))?;
    Ok(v)
}

pub(super) fn pool_set_u64(
    pool: sys::CUmemoryPool,
    attr: sys::CUmemPool_attribute,
    mut v: u64,
) -> Result<()> {
    // SAFETY: these attributes take a `cuuint64_t`; a live pool.
    unsafe { sys::cuMemPoolSetAttribute(pool, attr, (&raw mut v).cast()) }
        .check(|| format!("setting a memory pool's {}", pool_attr_name(attr)))
}

pub(super) fn pool_bool(pool: sys::CUmemoryPool, attr: sys::CUmemPool_attribute) -> Result<bool> {
    let mut v: std::ffi::c_int = 0;
    // SAFETY: the reuse attributes write an `int`; a live pool.
    unsafe { sys::cuMemPoolGetAttribute(pool, attr, (&raw mut v).cast()) }
        .check(|| format!("reading a memory pool's {} policy", pool_attr_name(attr)))?;
    Ok(v != 0)
}

pub(super) fn pool_set_bool(
    pool: sys::CUmemoryPool,
    attr: sys::CUmemPool_attribute,
    on: bool,
) -> Result<()> {
    let mut v = std::ffi::c_int::from(on);
    // SAFETY: the reuse attributes take an `int`; a live pool.
    unsafe { sys::cuMemPoolSetAttribute(pool, attr, (&raw mut v).cast()) }
        .check(|| format!("setting a memory pool's {} policy", pool_attr_name(attr)))
}

/// A policy by which a memory pool may reuse memory freed on one stream for an
/// allocation on another (`CU_MEMPOOL_ATTR_REUSE_*`; all three are on by
/// default). [`DeviceMemoryResource::reuse`], [`set_reuse`](DeviceMemoryResource::set_reuse).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PoolReuse {
    /// Reuse memory whose free is ordered before the allocation through events
    /// the allocating stream has waited for
    /// (`CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES`).
    FollowEventDependencies,
    /// Reuse memory whose free has already completed, without any dependency
    /// (`CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC`): the result depends on timing.
    AllowOpportunistic,
    /// Reuse memory whose free is still pending by making the allocating stream
    /// wait for it (`CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES`).
    AllowInternalDependencies,
}

impl PoolReuse {
    pub(super) fn attr(self) -> sys::CUmemPool_attribute {
        match self {
            Self::FollowEventDependencies => sys::CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES,
            Self::AllowOpportunistic => sys::CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
            Self::AllowInternalDependencies => {
                sys::CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES
            }
        }
    }
}

/// A memory pool's attributes at one moment (`cuda.core`'s `attributes`):
/// [`DeviceMemoryResource::attributes`], [`PinnedMemoryResource::attributes`](super::PinnedMemoryResource::attributes),
/// [`ManagedMemoryResource::attributes`](super::ManagedMemoryResource::attributes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolAttributes {
    /// [`PoolReuse::FollowEventDependencies`].
    pub reuse_follow_event_dependencies: bool,
    /// [`PoolReuse::AllowOpportunistic`].
    pub reuse_allow_opportunistic: bool,
    /// [`PoolReuse::AllowInternalDependencies`].
    pub reuse_allow_internal_dependencies: bool,
    /// Bytes the pool keeps at a synchronisation point rather than returning
    /// them to the system.
    pub release_threshold: u64,
    /// Bytes the pool holds from the system.
    pub reserved_mem_current: u64,
    /// The most bytes it has held since it was made or the mark was reset.
    pub reserved_mem_high: u64,
    /// Bytes in use by allocations.
    pub used_mem_current: u64,
    /// The most bytes in use since the pool was made or the mark was reset.
    pub used_mem_high: u64,
}

/// The attribute methods of a memory pool resource: one text for the device,
/// the pinned and the managed pools. `pool_attributes!(T)` reads a `pool` field;
/// `pool_attributes!(T, |r| expr)` gets the pool from `expr`, a
/// `Result<CUmemoryPool>` of `r: &T` (for a resource that may have no pool).
macro_rules! pool_attributes {
    ($t:ty) => {
        pool_attributes!($t, |this| Ok::<_, $crate::error::Error>(this.pool));
    };
    ($t:ty, |$this:ident| $pool:expr) => {
        impl $t {
            /// The pool the attribute methods address.
            fn attributes_pool(&self) -> Result<sys::CUmemoryPool> {
                let $this = self;
                $pool
            }

            /// All the pool's attributes (`cuMemPoolGetAttribute`, one call each).
            ///
            /// # Errors
            /// The driver's error.
            pub fn attributes(&self) -> Result<PoolAttributes> {
                Ok(PoolAttributes {
                    reuse_follow_event_dependencies: self
                        .reuse(PoolReuse::FollowEventDependencies)?,
                    reuse_allow_opportunistic: self.reuse(PoolReuse::AllowOpportunistic)?,
                    reuse_allow_internal_dependencies: self
                        .reuse(PoolReuse::AllowInternalDependencies)?,
                    release_threshold: self.release_threshold()?,
                    reserved_mem_current: self.reserved_bytes()?,
                    reserved_mem_high: self.reserved_high_bytes()?,
                    used_mem_current: self.used_bytes()?,
                    used_mem_high: self.used_high_bytes()?,
                })
            }

            /// Whether the pool may reuse memory under `policy`.
            ///
            /// # Errors
            /// The driver's error.
            pub fn reuse(&self, policy: PoolReuse) -> Result<bool> {
                pool_bool(self.attributes_pool()?, policy.attr())
            }

            /// Allows (`true`) or forbids reusing memory under `policy`.
            ///
            /// # Errors
            /// The driver's error.
            pub fn set_reuse(&self, policy: PoolReuse, allowed: bool) -> Result<()> {
                pool_set_bool(self.attributes_pool()?, policy.attr(), allowed)
            }

            /// The bytes the pool keeps at a synchronisation point rather than
            /// returning them to the system (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`).
            ///
            /// # Errors
            /// The driver's error.
            pub fn release_threshold(&self) -> Result<u64> {
                pool_u64(
                    self.attributes_pool()?,
                    sys::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                )
            }

            /// Sets the memory the pool keeps at a synchronisation point rather
            /// than returning it to the system (`u64::MAX`: keep everything).
            ///
            /// # Errors
            /// The driver's error.
            pub fn set_release_threshold(&self, bytes: u64) -> Result<()> {
                set_release_threshold(self.attributes_pool()?, bytes)
            }

            /// Returns memory the pool holds beyond `keep` bytes to the system
            /// (`cuMemPoolTrimTo`).
            ///
            /// # Errors
            /// The driver's error.
            pub fn trim_to(&self, keep: usize) -> Result<()> {
                let pool = self.attributes_pool()?;
                // SAFETY: a live pool.
                unsafe { sys::cuMemPoolTrimTo(pool, keep) }.check(|| "trimming a memory pool")
            }

            /// Bytes the pool holds from the system now
            /// (`CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT`).
            ///
            /// # Errors
            /// The driver's error.
            pub fn reserved_bytes(&self) -> Result<u64> {
                pool_u64(
                    self.attributes_pool()?,
                    sys::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
                )
            }

            /// The most bytes the pool has held from the system since it was made
            /// or [`reset_reserved_high`](Self::reset_reserved_high) was called
            /// (`CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH`).
            ///
            /// # Errors
            /// The driver's error.
            pub fn reserved_high_bytes(&self) -> Result<u64> {
                pool_u64(
                    self.attributes_pool()?,
                    sys::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
                )
            }

            /// Resets the reserved high-water mark to the bytes held now.
            ///
            /// # Errors
            /// The driver's error.
            pub fn reset_reserved_high(&self) -> Result<()> {
                // The driver takes only 0 here, which resets the mark.
                pool_set_u64(
                    self.attributes_pool()?,
                    sys::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
                    0,
                )
            }

            /// Bytes of the pool's memory in use by allocations now
            /// (`CU_MEMPOOL_ATTR_USED_MEM_CURRENT`).
            ///
            /// # Errors
            /// The driver's error.
            pub fn used_bytes(&self) -> Result<u64> {
                pool_u64(
                    self.attributes_pool()?,
                    sys::CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
                )
            }

            /// The most bytes in use by allocations since the pool was made or
            /// [`reset_used_high`](Self::reset_used_high) was called
            /// (`CU_MEMPOOL_ATTR_USED_MEM_HIGH`).
            ///
            /// # Errors
            /// The driver's error.
            pub fn used_high_bytes(&self) -> Result<u64> {
                pool_u64(self.attributes_pool()?, sys::CU_MEMPOOL_ATTR_USED_MEM_HIGH)
            }

            /// Resets the used high-water mark to the bytes in use now.
            ///
            /// # Errors
            /// The driver's error.
            pub fn reset_used_high(&self) -> Result<()> {
                // The driver takes only 0 here, which resets the mark.
                pool_set_u64(
                    self.attributes_pool()?,
                    sys::CU_MEMPOOL_ATTR_USED_MEM_HIGH,
                    0,
                )
            }
        }
    };
}
pub(super) use pool_attributes;
pool_attributes!(DeviceMemoryResource);

// Deferred-release rule: on a driver callback thread the destroy (a CUDA call)
// is handed to the deferred queue instead of made there.
impl Drop for DeviceMemoryResource {
    fn drop(&mut self) {
        if self.owned {
            super::pool::destroy_pool(self.pool);
        }
    }
}

// SAFETY: pool allocations are device memory of `self.device`, freed with
// `cuMemFreeAsync`, which takes exactly what `cuMemAllocFromPoolAsync` returned.
// Soundness contract: rules 1 and 2.
unsafe impl MemoryResource for DeviceMemoryResource {
    #[inline]
    unsafe fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<sys::CUdeviceptr> {
        let what = || {
            format!(
                "allocating {size} bytes on device {}",
                self.device.ordinal()
            )
        };
        self.ipc.check_allocate(what)?;
        pool_allocate(self.pool, size, stream, what)
    }

    #[inline]
    unsafe fn deallocate(&self, ptr: sys::CUdeviceptr, size: usize, stream: &Stream) -> Result<()> {
        // SAFETY: per the trait's contract.
        unsafe {
            pool_free(ptr, stream, || {
                format!("freeing {size} bytes on device {}", self.device.ordinal())
            })
        }
    }

    fn kind(&self) -> MemoryKind {
        MemoryKind::Device
    }

    fn device(&self) -> Device {
        self.device
    }
}

/// A new memory pool (`cuMemPoolCreate`) of `alloc` memory at `location`;
/// `(ipc, max_size)`: exportable as POSIX file descriptors, and the most it
/// may hold (0: no limit). The caller has made the device's context current.
pub(super) fn create_pool(
    alloc: sys::CUmemAllocationType,
    location: sys::CUmemLocation,
    (ipc, max_size): (bool, usize),
    what: impl FnOnce() -> String,
) -> Result<sys::CUmemoryPool> {
    let props = sys::CUmemPoolProps {
        allocType: alloc,
        handleTypes: if ipc {
            sys::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        } else {
            sys::CU_MEM_HANDLE_TYPE_NONE
        },
        location,
        maxSize: max_size,
        ..Default::default()
    };
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: `props` is fully initialised; `pool` is valid for writes.
    unsafe { sys::cuMemPoolCreate(&mut pool, &props) }.check(what)?;
    Ok(pool)
}

// The memory resource `Device::allocate` uses.
impl Device {
    /// The device's default memory resource: its default stream-ordered pool
    /// (`cuDeviceGetDefaultMemPool`).
    ///
    /// # Errors
    /// The driver's error.
    pub fn default_memory_resource(
        &self,
    ) -> Result<std::sync::Arc<crate::memory::pool::DeviceMemoryResource>> {
        Ok(match crate::memory::pool::default_pool(self)? {
            Some(d) => d.typed.clone(),
            None => std::sync::Arc::new(
                crate::memory::pool::DeviceMemoryResource::default_pool_uncached(self)?,
            ),
        })
    }

    /// Makes `mr` the resource [`allocate`](Self::allocate) uses on this device, for
    /// the whole process (`None`: back to the default pool). Buffers already
    /// allocated keep their own resource.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a resource of
    /// another device.
    pub fn set_memory_resource(
        &self,
        mr: Option<std::sync::Arc<dyn crate::memory::resource::MemoryResource>>,
    ) -> Result<()> {
        if let Some(m) = mr.as_ref().filter(|m| m.device() != *self) {
            return Err(crate::error::Error::other_device(
                format!("setting the memory resource of device {}", self.ordinal()),
                format!("the resource belongs to device {}", m.device().ordinal()),
            ));
        }
        let mut set = crate::memory::resource::allocation_resources()
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // From now on allocations look in the map (under its lock).
        crate::memory::resource::RESOURCES_EVER_SET
            .store(true, std::sync::atomic::Ordering::Release);
        match mr {
            Some(m) => {
                set.insert(self.ordinal(), m);
            }
            None => {
                set.remove(&self.ordinal());
            }
        }
        Ok(())
    }

    /// The resource [`allocate`](Self::allocate) uses: the one set with
    /// [`set_memory_resource`](Self::set_memory_resource), or else the default pool
    /// ([`default_memory_resource`](Self::default_memory_resource)).
    ///
    /// # Errors
    /// The driver's error (reading the default pool).
    pub fn memory_resource(
        &self,
    ) -> Result<std::sync::Arc<dyn crate::memory::resource::MemoryResource>> {
        Ok(self.allocation_resource()?.arc().clone())
    }

    /// The resource [`allocate`](Self::allocate) uses, as a buffer holds it: the
    /// default pool (the common case: no lock, no count touched) unless
    /// another was set.
    #[inline]
    pub(crate) fn allocation_resource(&self) -> Result<crate::memory::resource::Resource> {
        if !crate::memory::resource::RESOURCES_EVER_SET.load(std::sync::atomic::Ordering::Acquire) {
            if let Some(d) = cached_default_pool(self) {
                return Ok(d.resource());
            }
        }
        self.allocation_resource_slow()
    }

    /// [`allocation_resource`](Self::allocation_resource) when a resource was
    /// ever set, or the default pool is not made yet.
    #[cold]
    fn allocation_resource_slow(&self) -> Result<crate::memory::resource::Resource> {
        use crate::memory::resource::Resource;
        if !crate::memory::resource::RESOURCES_EVER_SET.load(std::sync::atomic::Ordering::Acquire) {
            if let Some(d) = crate::memory::pool::default_pool(self)? {
                return Ok(d.resource());
            }
        }
        let set = crate::memory::resource::allocation_resources()
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&self.ordinal())
            .cloned();
        Ok(match set {
            Some(m) => Resource::Shared(m),
            None => match crate::memory::pool::default_pool(self)? {
                Some(d) => d.resource(),
                None => Resource::Shared(self.default_memory_resource()?),
            },
        })
    }

    /// Allocates `size` bytes from the device's memory resource
    /// ([`memory_resource`](Self::memory_resource): the default pool unless another
    /// was set), ordered on `stream`. `None` for the stream works only when the
    /// resource set is not stream-ordered (see
    /// [`Buffer::allocate`](crate::Buffer::allocate)).
    ///
    /// # Errors
    /// As [`Buffer::allocate`](crate::Buffer::allocate).
    pub fn allocate<'s>(
        &self,
        size: usize,
        stream: impl Into<Option<&'s Stream>>,
    ) -> Result<crate::memory::buffer::Buffer> {
        crate::memory::buffer::Buffer::allocate_in(self.allocation_resource()?, size, stream.into())
    }
}

#[cfg(test)]
mod tests {
    use super::PoolIpc;

    #[test]
    fn a_pool_without_ipc_is_not_shared() {
        // Without IPC nothing is exported, so no pool is needed.
        let plain = PoolIpc::made(std::ptr::null_mut(), false).unwrap();
        assert!(!plain.enabled && !plain.mapped);
        #[cfg(all(unix, feature = "ipc"))]
        assert!(plain.fd.is_none() && plain.uuid.get().is_none());
        assert!(plain.check_allocate(|| "allocating".into()).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn an_imported_pool_is_not_allocated_from() {
        use super::Error;

        let imported = PoolIpc::imported();
        assert!(imported.enabled && imported.mapped);
        match imported.check_allocate(|| "allocating 1 byte".into()) {
            Err(Error::Unsupported {
                context, message, ..
            }) => {
                assert_eq!(context, "allocating 1 byte");
                assert!(message.contains("imported"), "{message}");
            }
            other => panic!("allocating from an imported pool: {other:?}"),
        }
    }
}
