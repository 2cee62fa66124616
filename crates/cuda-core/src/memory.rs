//! Buffers and the memory resources that allocate them.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use bytemuck::Pod;
use cuda_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{Context, Device, Stream};

/// What memory a resource hands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MemoryKind {
    /// Device memory: only kernels and copies touch it.
    Device,
    /// Page-locked host memory: the host reads and writes it, the device reaches it
    /// over the bus, and copies from it are truly asynchronous.
    Pinned,
    /// Managed (unified) memory: both sides, migrated on demand.
    Managed,
}

/// An allocator of [`Buffer`]s. Implement it to plug in your own.
///
/// **Allocate with `allocate`, which returns an owning [`Buffer`]** (freed, through
/// the resource, when it is dropped or [closed](Buffer::close)). It is a method of
/// every resource behind an `Arc`:
///
/// - `Arc<dyn MemoryResource>` (what [`Device::memory_resource`] returns): the
///   inherent [`allocate`](#method.allocate) of `dyn MemoryResource`;
/// - the crate's resources (`Arc<DeviceMemoryResource>`, `Arc<PinnedMemoryResource>`,
///   `Arc<LegacyPinnedMemoryResource>`, `Arc<ManagedMemoryResource>`,
///   `Arc<VirtualMemoryResource>`): an inherent `allocate` of each type, so no
///   import is needed;
/// - an `Arc` of your own resource type: [`MemoryResourceExt::allocate`] (import
///   the trait), or erase the type to `Arc<dyn MemoryResource>`.
///
/// All of them are [`Buffer::allocate`]. The trait's raw allocation,
/// [`allocate_raw`](Self::allocate_raw), returns an address that nothing frees: it
/// is `unsafe` to call, and is what an implementation provides.
///
/// **The stream is optional where the resource is not stream-ordered**
/// ([`is_stream_ordered`](Self::is_stream_ordered) is `false`:
/// [`LegacyPinnedMemoryResource`], [`ManagedMemoryResource`],
/// [`VirtualMemoryResource`](crate::VirtualMemoryResource)), as in `cuda.core`:
/// `mr.allocate(size, None)` allocates at once, and the buffer is freed on the
/// device's legacy default stream (see [`Buffer::allocate`]). A stream-ordered
/// resource (a memory pool) needs `Some(&stream)` (or just `&stream`): the typed
/// resources take only a `&Stream`, and `Arc<dyn MemoryResource>` and
/// [`Buffer::allocate`] answer `None` with [`Error::InvalidArgument`].
///
/// ```no_run
/// # fn f() -> cuda_core::Result<()> {
/// use cuda_core::{Device, StreamOptions};
/// let dev = Device::new(0)?;
/// let stream = dev.create_stream(StreamOptions::default())?;
/// // A `Buffer`, freed when it goes out of scope (here: at once).
/// let buf = dev.memory_resource()?.allocate(1024, &stream)?;
/// assert_eq!(buf.size(), 1024);
/// # Ok(()) }
/// ```
///
/// The raw allocation is not called by accident: outside `unsafe` it does not
/// compile,
///
/// ```compile_fail,E0133
/// # fn f(dev: cuda_core::Device, stream: &cuda_core::Stream) -> cuda_core::Result<()> {
/// let ptr = dev.memory_resource()?.allocate_raw(1024, stream)?;
/// # Ok(()) }
/// ```
///
/// and `allocate` is a [`Buffer`], not an address:
///
/// ```compile_fail,E0308
/// # fn f(dev: cuda_core::Device, stream: &cuda_core::Stream) -> cuda_core::Result<()> {
/// let ptr: u64 = dev.memory_resource()?.allocate(1024, stream)?;
/// # Ok(()) }
/// ```
///
/// and a memory pool's own type takes no `None`:
///
/// ```compile_fail,E0308
/// # fn f(dev: cuda_core::Device) -> cuda_core::Result<()> {
/// let buf = dev.default_memory_resource()?.allocate(1024, None)?;
/// # Ok(()) }
/// ```
///
/// # Safety
/// `allocate_raw` must return memory of at least `size` bytes of the resource's
/// [`kind`](Self::kind), usable on `device()`, and `deallocate` must accept exactly
/// what `allocate_raw` returned. A resource whose
/// [`is_stream_ordered`](Self::is_stream_ordered) is `false` must return memory
/// that any stream may use as soon as `allocate_raw` returns.
pub unsafe trait MemoryResource: fmt::Debug + Send + Sync {
    /// Allocates `size` bytes, ordered on `stream` where the resource can be, and
    /// returns their address, which **nothing owns or frees**: call `allocate` for
    /// a [`Buffer`] instead (see [`MemoryResource`]). This is the method an
    /// implementation provides; [`Buffer::allocate`] calls it.
    ///
    /// # Safety
    /// The caller takes the memory over. It must hand the address, with the same
    /// `size`, to this resource's [`deallocate`](Self::deallocate) once, after the
    /// last work that uses it, and free it no other way (or never: leaking is safe,
    /// but nothing reclaims the memory). Where the resource is stream-ordered, the
    /// memory exists only for work ordered after this call on `stream`.
    ///
    /// # Errors
    /// The resource's error.
    unsafe fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<sys::CUdeviceptr>;

    /// Frees what `allocate_raw` returned, ordered on `stream` where it can be.
    ///
    /// # Safety
    /// `ptr` and `size` must come from this resource's `allocate_raw`, once, and no
    /// work still to run may use the memory, other than work ordered before this
    /// call on `stream`.
    unsafe fn deallocate(&self, ptr: sys::CUdeviceptr, size: usize, stream: &Stream) -> Result<()>;

    /// The memory's kind.
    fn kind(&self) -> MemoryKind;

    /// The device the memory belongs to.
    fn device(&self) -> Device;

    /// Whether allocations and frees are ordered on a stream (a memory pool:
    /// `true`, the default), or happen at once whatever stream is passed (`false`).
    ///
    /// An owning allocation from a resource that says `false` may be made without
    /// a stream ([`Buffer::allocate`] with `None`); `allocate_raw` is then given the
    /// device's legacy default stream, which it must accept (and may ignore).
    /// Returning `true` is always safe: it only makes a stream required.
    fn is_stream_ordered(&self) -> bool {
        true
    }
}

impl dyn MemoryResource {
    /// Allocates an owning [`Buffer`] of `size` bytes from this resource, ordered on
    /// `stream` (see [`Buffer::allocate`]): `dev.memory_resource()?.allocate(n,
    /// &stream)?` is a buffer that frees itself. `None` for the stream allocates at
    /// once from a resource that is not stream-ordered.
    ///
    /// # Errors
    /// As [`Buffer::allocate`] (`None` for a stream-ordered resource is
    /// [`Error::InvalidArgument`]).
    pub fn allocate<'s>(
        self: &Arc<Self>,
        size: usize,
        stream: impl Into<Option<&'s Stream>>,
    ) -> Result<Buffer> {
        Buffer::allocate(Arc::clone(self), size, stream)
    }
}

/// The owning `allocate` for an `Arc` of any sized resource type, your own
/// included: `Arc::new(MyResource::new()).allocate(size, &stream)?` is a [`Buffer`].
///
/// The crate's resource types and `dyn MemoryResource` have the same method as an
/// inherent one, which method resolution picks first (no import needed); this trait
/// adds it for other types. It is sealed: implemented for `Arc<R>` only.
pub trait MemoryResourceExt: sealed::Sealed {
    /// Allocates an owning [`Buffer`] of `size` bytes from this resource, ordered on
    /// `stream` (see [`Buffer::allocate`]); `None` allocates at once from a resource
    /// that is not stream-ordered.
    ///
    /// # Errors
    /// As [`Buffer::allocate`].
    fn allocate<'s>(&self, size: usize, stream: impl Into<Option<&'s Stream>>) -> Result<Buffer>;
}

mod sealed {
    pub trait Sealed {}
    impl<R: super::MemoryResource + 'static> Sealed for std::sync::Arc<R> {}
}

impl<R: MemoryResource + 'static> MemoryResourceExt for Arc<R> {
    fn allocate<'s>(&self, size: usize, stream: impl Into<Option<&'s Stream>>) -> Result<Buffer> {
        Buffer::allocate(self.clone(), size, stream)
    }
}

/// An inherent owning `allocate` for a resource type of the crate, so that
/// `Arc<Type>::allocate` needs no import (method resolution picks it before
/// [`MemoryResourceExt::allocate`]). `ordered` resources take a `&Stream`;
/// `unordered` ones an optional stream (`None`: allocate at once).
macro_rules! owning_allocate {
    (ordered $t:ty $(, $doc:literal)?) => {
        impl $t {
            /// Allocates an owning [`Buffer`](crate::Buffer) of `size` bytes from this
            /// resource, ordered on `stream`, which becomes the buffer's free stream
            /// (see [`Buffer::allocate`](crate::Buffer::allocate)). The resource is
            /// stream-ordered: the stream is required.
            $(#[doc = ""] #[doc = $doc])?
            ///
            /// # Errors
            /// As [`Buffer::allocate`](crate::Buffer::allocate).
            pub fn allocate(
                self: &::std::sync::Arc<Self>,
                size: usize,
                stream: &$crate::Stream,
            ) -> $crate::Result<$crate::Buffer> {
                let mr: ::std::sync::Arc<dyn $crate::MemoryResource> = self.clone();
                $crate::Buffer::allocate(mr, size, stream)
            }
        }
    };
    (unordered $t:ty $(, $doc:literal)?) => {
        impl $t {
            /// Allocates an owning [`Buffer`](crate::Buffer) of `size` bytes from this
            /// resource. The resource is not stream-ordered: the memory is allocated
            /// at once, and the stream, optional, only becomes the buffer's free
            /// stream (`None`: the device's legacy default stream; see
            /// [`Buffer::allocate`](crate::Buffer::allocate)). `mr.allocate(n, None)`
            /// and `mr.allocate(n, &stream)` both work.
            $(#[doc = ""] #[doc = $doc])?
            ///
            /// # Errors
            /// As [`Buffer::allocate`](crate::Buffer::allocate).
            pub fn allocate<'s>(
                self: &::std::sync::Arc<Self>,
                size: usize,
                stream: impl Into<Option<&'s $crate::Stream>>,
            ) -> $crate::Result<$crate::Buffer> {
                let mr: ::std::sync::Arc<dyn $crate::MemoryResource> = self.clone();
                $crate::Buffer::allocate(mr, size, stream)
            }
        }
    };
}
pub(crate) use owning_allocate;

owning_allocate!(ordered DeviceMemoryResource);
owning_allocate!(unordered LegacyPinnedMemoryResource);
owning_allocate!(unordered ManagedMemoryResource);
owning_allocate!(ordered PinnedMemoryResource);

/// Device memory from a stream-ordered pool (`cuMemAllocFromPoolAsync`): the device's
/// default pool, or a pool of its own.
#[derive(Debug)]
pub struct DeviceMemoryResource {
    pub(crate) device: Device,
    pub(crate) pool: sys::CUmemoryPool,
    pub(crate) owned: bool,
    pub(crate) ipc: bool,
    /// Imported from another process ([`DeviceMemoryResource::import`]).
    pub(crate) mapped: bool,
    /// The pool's identity across processes, for IPC pools: made when the pool
    /// is, or given when an imported pool is registered.
    #[cfg(unix)]
    pub(crate) uuid: std::sync::OnceLock<crate::PoolUuid>,
    /// The pool's exported descriptor, made when an IPC pool is created (the driver
    /// exports a pool's buffers only once the pool itself has been exported).
    #[cfg(unix)]
    pub(crate) ipc_fd: Option<std::os::fd::OwnedFd>,
}

// SAFETY: a CUmemoryPool is a handle any thread may use.
unsafe impl Send for DeviceMemoryResource {}
// SAFETY: as above; the driver serialises pool operations.
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
    /// The device's default pool (`cuDeviceGetDefaultMemPool`).
    ///
    /// # Errors
    /// The driver's error.
    pub fn default_pool(device: &Device) -> Result<Self> {
        device.ensure_current()?;
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: `pool` is valid for writes.
        unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, device.handle()) }.check(|| {
            format!(
                "getting the default memory pool of device {}",
                device.ordinal()
            )
        })?;
        Ok(Self {
            device: *device,
            pool,
            owned: false,
            ipc: false,
            mapped: false,
            #[cfg(unix)]
            uuid: std::sync::OnceLock::new(),
            #[cfg(unix)]
            ipc_fd: None,
        })
    }

    /// A new pool on `device`, destroyed when this resource and every buffer from it
    /// are gone.
    ///
    /// # Errors
    /// The driver's error.
    pub fn new_pool(device: &Device, options: DeviceMemoryPoolOptions) -> Result<Self> {
        device.ensure_current()?;
        let props = sys::CUmemPoolProps {
            allocType: sys::CU_MEM_ALLOCATION_TYPE_PINNED,
            handleTypes: if options.ipc_enabled {
                sys::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
            } else {
                sys::CU_MEM_HANDLE_TYPE_NONE
            },
            location: sys::CUmemLocation {
                type_: sys::CU_MEM_LOCATION_TYPE_DEVICE,
                id: device.ordinal() as i32,
            },
            maxSize: options.max_size,
            ..Default::default()
        };
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: `props` is fully initialised; `pool` is valid for writes.
        unsafe { sys::cuMemPoolCreate(&mut pool, &props) }
            .check(|| format!("creating a memory pool on device {}", device.ordinal()))?;
        #[allow(unused_mut)]
        let mut mr = Self {
            device: *device,
            pool,
            owned: true,
            ipc: options.ipc_enabled,
            mapped: false,
            #[cfg(unix)]
            uuid: std::sync::OnceLock::new(),
            #[cfg(unix)]
            ipc_fd: None,
        };
        #[cfg(unix)]
        if options.ipc_enabled {
            // On failure `mr` is dropped, which destroys the pool.
            mr.ipc_fd = Some(crate::ipc::export_pool(pool)?);
            let _ = mr.uuid.set(crate::PoolUuid::new_random());
        }
        if let Some(t) = options.release_threshold {
            set_release_threshold(pool, t)?;
        }
        Ok(mr)
    }

    /// Whether the pool's allocations can be shared with other processes.
    pub fn is_ipc_enabled(&self) -> bool {
        self.ipc
    }

    /// The other devices that may read and write the pool's memory
    /// (`cuMemPoolGetAccess` for each device).
    ///
    /// # Errors
    /// The driver's error.
    pub fn peer_accessible_by(&self) -> Result<Vec<Device>> {
        let mut out = Vec::new();
        for d in Device::all()? {
            if d != self.device && self.access_of(d)? == sys::CU_MEM_ACCESS_FLAGS_PROT_READWRITE {
                out.push(d);
            }
        }
        Ok(out)
    }

    /// `cuMemPoolGetAccess` for one device.
    pub(crate) fn access_of(&self, d: Device) -> Result<sys::CUmemAccess_flags> {
        let mut flags = sys::CU_MEM_ACCESS_FLAGS_PROT_NONE;
        let mut loc = Location::Device(d).raw();
        // SAFETY: `flags` is valid for writes, `loc` names a device; a live pool.
        unsafe { sys::cuMemPoolGetAccess(&mut flags, self.pool, &mut loc) }.check(|| {
            format!(
                "reading whether device {} may access a pool of device {}",
                d.ordinal(),
                self.device.ordinal()
            )
        })?;
        Ok(flags)
    }

    /// Lets exactly `peers` (other devices) read and write the pool's memory, and
    /// revokes the access of every other device (`cuMemPoolSetAccess`). Access
    /// applies to buffers allocated before and after the call.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for the pool's own device among `peers`; the
    /// driver's error (`CUDA_ERROR_INVALID_DEVICE` for a device that cannot reach
    /// this one: see [`Device::can_access_peer`]).
    pub fn set_peer_accessible_by(&self, peers: &[Device]) -> Result<()> {
        let what = || {
            format!(
                "setting which devices may access a pool of device {}",
                self.device.ordinal()
            )
        };
        if peers.contains(&self.device) {
            return Err(Error::invalid(
                what(),
                "the pool's own device is not a peer",
            ));
        }
        // Grant `peers`; revoke only devices that have access now.
        let now = self.peer_accessible_by()?;
        let descs: Vec<sys::CUmemAccessDesc> = peers
            .iter()
            .map(|d| (*d, sys::CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
            .chain(
                now.into_iter()
                    .filter(|d| !peers.contains(d))
                    .map(|d| (d, sys::CU_MEM_ACCESS_FLAGS_PROT_NONE)),
            )
            .map(|(d, flags)| sys::CUmemAccessDesc {
                location: Location::Device(d).raw(),
                flags,
            })
            .collect();
        if descs.is_empty() {
            return Ok(());
        }
        // SAFETY: `descs` holds `descs.len()` valid descriptors; a live pool.
        unsafe { sys::cuMemPoolSetAccess(self.pool, descs.as_ptr(), descs.len()) }.check(what)
    }

    /// The driver's pool handle.
    pub fn handle(&self) -> sys::CUmemoryPool {
        self.pool
    }

    /// Whether the pool was imported from another process
    /// ([`import`](Self::import)): its memory is allocated by the exporter, so
    /// allocating from it is refused.
    pub fn is_mapped(&self) -> bool {
        self.mapped
    }
}

/// A stream-ordered allocation from `pool` (`cuMemAllocFromPoolAsync`).
fn pool_allocate(
    pool: sys::CUmemoryPool,
    size: usize,
    stream: &Stream,
    what: impl FnOnce() -> String,
) -> Result<sys::CUdeviceptr> {
    let _current = stream.context().ensure_current()?;
    let mut p: sys::CUdeviceptr = 0;
    // SAFETY: a live pool and stream; `p` is valid for writes.
    unsafe { sys::cuMemAllocFromPoolAsync(&mut p, size, pool, stream.handle()) }.check(what)?;
    Ok(p)
}

/// A stream-ordered free of a pool allocation (`cuMemFreeAsync`).
///
/// # Safety
/// `ptr` came from a pool allocation, is freed once, and no work other than that
/// ordered before this call on `stream` still uses it.
unsafe fn pool_free(
    ptr: sys::CUdeviceptr,
    stream: &Stream,
    what: impl FnOnce() -> String,
) -> Result<()> {
    let _current = stream.context().ensure_current()?;
    // SAFETY: per this function's contract.
    unsafe { sys::cuMemFreeAsync(ptr, stream.handle()) }.check(what)
}

fn set_release_threshold(pool: sys::CUmemoryPool, bytes: u64) -> Result<()> {
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

fn pool_set_u64(pool: sys::CUmemoryPool, attr: sys::CUmemPool_attribute, mut v: u64) -> Result<()> {
    // SAFETY: these attributes take a `cuuint64_t`; a live pool.
    unsafe { sys::cuMemPoolSetAttribute(pool, attr, (&raw mut v).cast()) }
        .check(|| format!("setting a memory pool's {}", pool_attr_name(attr)))
}

fn pool_bool(pool: sys::CUmemoryPool, attr: sys::CUmemPool_attribute) -> Result<bool> {
    let mut v: std::ffi::c_int = 0;
    // SAFETY: the reuse attributes write an `int`; a live pool.
    unsafe { sys::cuMemPoolGetAttribute(pool, attr, (&raw mut v).cast()) }
        .check(|| format!("reading a memory pool's {} policy", pool_attr_name(attr)))?;
    Ok(v != 0)
}

fn pool_set_bool(pool: sys::CUmemoryPool, attr: sys::CUmemPool_attribute, on: bool) -> Result<()> {
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
    fn attr(self) -> sys::CUmemPool_attribute {
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
/// [`DeviceMemoryResource::attributes`], [`PinnedMemoryResource::attributes`].
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

/// The attribute methods of a memory pool resource (a type with a `pool` field):
/// one text for the device and the pinned pools.
macro_rules! pool_attributes {
    ($t:ty) => {
        impl $t {
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
                pool_bool(self.pool, policy.attr())
            }

            /// Allows (`true`) or forbids reusing memory under `policy`.
            ///
            /// # Errors
            /// The driver's error.
            pub fn set_reuse(&self, policy: PoolReuse, allowed: bool) -> Result<()> {
                pool_set_bool(self.pool, policy.attr(), allowed)
            }

            /// The bytes the pool keeps at a synchronisation point rather than
            /// returning them to the system (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`).
            ///
            /// # Errors
            /// The driver's error.
            pub fn release_threshold(&self) -> Result<u64> {
                pool_u64(self.pool, sys::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
            }

            /// Sets the memory the pool keeps at a synchronisation point rather
            /// than returning it to the system (`u64::MAX`: keep everything).
            ///
            /// # Errors
            /// The driver's error.
            pub fn set_release_threshold(&self, bytes: u64) -> Result<()> {
                set_release_threshold(self.pool, bytes)
            }

            /// Returns memory the pool holds beyond `keep` bytes to the system
            /// (`cuMemPoolTrimTo`).
            ///
            /// # Errors
            /// The driver's error.
            pub fn trim_to(&self, keep: usize) -> Result<()> {
                // SAFETY: a live pool.
                unsafe { sys::cuMemPoolTrimTo(self.pool, keep) }.check(|| "trimming a memory pool")
            }

            /// Bytes the pool holds from the system now
            /// (`CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT`).
            ///
            /// # Errors
            /// The driver's error.
            pub fn reserved_bytes(&self) -> Result<u64> {
                pool_u64(self.pool, sys::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
            }

            /// The most bytes the pool has held from the system since it was made
            /// or [`reset_reserved_high`](Self::reset_reserved_high) was called
            /// (`CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH`).
            ///
            /// # Errors
            /// The driver's error.
            pub fn reserved_high_bytes(&self) -> Result<u64> {
                pool_u64(self.pool, sys::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
            }

            /// Resets the reserved high-water mark to the bytes held now.
            ///
            /// # Errors
            /// The driver's error.
            pub fn reset_reserved_high(&self) -> Result<()> {
                // The driver takes only 0 here, which resets the mark.
                pool_set_u64(self.pool, sys::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 0)
            }

            /// Bytes of the pool's memory in use by allocations now
            /// (`CU_MEMPOOL_ATTR_USED_MEM_CURRENT`).
            ///
            /// # Errors
            /// The driver's error.
            pub fn used_bytes(&self) -> Result<u64> {
                pool_u64(self.pool, sys::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
            }

            /// The most bytes in use by allocations since the pool was made or
            /// [`reset_used_high`](Self::reset_used_high) was called
            /// (`CU_MEMPOOL_ATTR_USED_MEM_HIGH`).
            ///
            /// # Errors
            /// The driver's error.
            pub fn used_high_bytes(&self) -> Result<u64> {
                pool_u64(self.pool, sys::CU_MEMPOOL_ATTR_USED_MEM_HIGH)
            }

            /// Resets the used high-water mark to the bytes in use now.
            ///
            /// # Errors
            /// The driver's error.
            pub fn reset_used_high(&self) -> Result<()> {
                // The driver takes only 0 here, which resets the mark.
                pool_set_u64(self.pool, sys::CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0)
            }
        }
    };
}
pool_attributes!(DeviceMemoryResource);
pool_attributes!(PinnedMemoryResource);

impl Drop for DeviceMemoryResource {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: an owned pool; every buffer holds an `Arc` of this resource, so
            // none is left (their frees are queued; the driver defers the release).
            let _ = unsafe { sys::cuMemPoolDestroy(self.pool) };
        }
    }
}

// SAFETY: pool allocations are device memory of `self.device`, freed with
// `cuMemFreeAsync`, which takes exactly what `cuMemAllocFromPoolAsync` returned.
unsafe impl MemoryResource for DeviceMemoryResource {
    unsafe fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<sys::CUdeviceptr> {
        let what = || {
            format!(
                "allocating {size} bytes on device {}",
                self.device.ordinal()
            )
        };
        if self.mapped {
            return Err(Error::unsupported(
                what(),
                "the pool was imported from another process, which allocates its memory",
            ));
        }
        pool_allocate(self.pool, size, stream, what)
    }

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
        self.device.ensure_current()?;
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

/// Managed (unified) memory (`cuMemAllocManaged`, attached globally).
/// Allocation is not stream-ordered: freeing waits for the buffer's free stream.
///
/// With a preferred location, every allocation is advised to live there
/// (`CU_MEM_ADVISE_SET_PREFERRED_LOCATION`).
#[derive(Debug, Clone, Copy)]
pub struct ManagedMemoryResource {
    device: Device,
    preferred: Option<Location>,
}

impl ManagedMemoryResource {
    /// A managed-memory resource for `device`, with no preferred location.
    pub fn new(device: &Device) -> Self {
        Self {
            device: *device,
            preferred: None,
        }
    }

    /// A managed-memory resource whose allocations prefer to live at `location`.
    pub fn with_preferred_location(device: &Device, location: Location) -> Self {
        Self {
            device: *device,
            preferred: Some(location),
        }
    }

    /// The preferred location of its allocations, if any.
    pub fn preferred_location(&self) -> Option<Location> {
        self.preferred
    }
}

// SAFETY: `cuMemAllocManaged` memory is reachable from host and device and freed by
// `cuMemFree` with the pointer it returned.
unsafe impl MemoryResource for ManagedMemoryResource {
    unsafe fn allocate_raw(&self, size: usize, _stream: &Stream) -> Result<sys::CUdeviceptr> {
        self.device.ensure_current()?;
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
                let _ = unsafe { sys::cuMemFree(p) };
                return Err(e);
            }
        }
        Ok(p)
    }

    unsafe fn deallocate(&self, ptr: sys::CUdeviceptr, size: usize, stream: &Stream) -> Result<()> {
        // Wait for work that may still use it, then free regardless.
        let _ = stream.drain();
        self.device.ensure_current()?;
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
        device.ensure_current()?;
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

/// Where managed memory should live or be prefetched to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Location {
    /// A device's memory.
    Device(Device),
    /// Host memory.
    Host,
    /// Host memory of one NUMA node.
    HostNuma(i32),
}

impl Location {
    pub(crate) fn raw(self) -> sys::CUmemLocation {
        let (type_, id) = match self {
            Self::Device(d) => (sys::CU_MEM_LOCATION_TYPE_DEVICE, d.ordinal() as i32),
            Self::Host => (sys::CU_MEM_LOCATION_TYPE_HOST, 0),
            Self::HostNuma(n) => (sys::CU_MEM_LOCATION_TYPE_HOST_NUMA, n),
        };
        sys::CUmemLocation { type_, id }
    }
}

impl Location {
    /// The location as the CUDA 12.0 and 12.1 drivers take it: a device ordinal,
    /// `CU_DEVICE_CPU` for the host; host NUMA nodes need a CUDA 12.2 driver.
    fn legacy_device(self, what: &dyn Fn() -> String) -> Result<sys::CUdevice> {
        match self {
            Self::Device(d) => Ok(d.handle()),
            Self::Host => Ok(sys::CU_DEVICE_CPU),
            Self::HostNuma(_) => {
                crate::versions::require_driver(12020, "a host NUMA memory location", what)?;
                Err(Error::unsupported(what(), "host NUMA memory locations"))
            }
        }
    }
}

/// A location given as a device ordinal, `CU_DEVICE_CPU` for the host or
/// `CU_DEVICE_INVALID` for none (`cuMemRangeGetAttribute`'s older form).
fn legacy_location(d: sys::CUdevice, what: &'static str) -> Result<Option<Location>> {
    if d == sys::CU_DEVICE_INVALID {
        Ok(None)
    } else if d == sys::CU_DEVICE_CPU {
        Ok(Some(Location::Host))
    } else {
        device_of(d, what).map(Some)
    }
}

/// The device location of the ordinal `d` the driver reported.
fn device_of(d: i32, what: &'static str) -> Result<Location> {
    let ordinal = usize::try_from(d)
        .map_err(|_| Error::unsupported(what, format!("the driver reported device {d}")))?;
    Ok(Location::Device(Device::new(ordinal)?))
}

/// `cuMemAdvise` at a `CUmemLocation` (CUDA 12.2 drivers and newer), else its
/// CUDA 12.0 shape, by device ordinal.
///
/// # Safety
/// `ptr` addresses `size` bytes of managed memory.
unsafe fn mem_advise(
    ptr: sys::CUdeviceptr,
    size: usize,
    advice: sys::CUmem_advise,
    location: Location,
    what: &dyn Fn() -> String,
) -> Result<()> {
    if crate::versions::driver_at_least(12020) {
        // SAFETY: per this function's contract.
        unsafe { sys::cuMemAdvise(ptr, size, advice, location.raw()) }.check(what)
    } else {
        let dev = location.legacy_device(what)?;
        // SAFETY: as above.
        unsafe { sys::cuda12::cuMemAdvise(ptr, size, advice, dev) }.check(what)
    }
}

/// `cuMemPrefetchAsync` to a `CUmemLocation` (CUDA 12.2 drivers and newer), else
/// its CUDA 12.0 shape, by device ordinal.
///
/// # Safety
/// `ptr` addresses `size` bytes of managed memory that stays allocated until the
/// work queued on `stream` has run.
unsafe fn mem_prefetch(
    ptr: sys::CUdeviceptr,
    size: usize,
    location: Location,
    stream: sys::CUstream,
    what: &dyn Fn() -> String,
) -> Result<()> {
    if crate::versions::driver_at_least(12020) {
        // SAFETY: per this function's contract.
        unsafe { sys::cuMemPrefetchAsync(ptr, size, location.raw(), 0, stream) }.check(what)
    } else {
        let dev = location.legacy_device(what)?;
        // SAFETY: as above.
        unsafe { sys::cuda12::cuMemPrefetchAsync(ptr, size, dev, stream) }.check(what)
    }
}

/// A span of memory from a [`MemoryResource`], or a foreign pointer.
///
/// An owned buffer is freed on drop through its resource, ordered on its *free
/// stream* (the stream it was allocated on, unless
/// [`set_free_stream`](Self::set_free_stream) changed it); the buffer keeps a clone
/// of that stream and an `Arc` of its resource, so neither can be destroyed first.
/// [`close`](Self::close) frees it and reports errors. `Buffer` is `Send + Sync`:
/// it is an address and a size, and every operation goes through a stream.
pub struct Buffer {
    ptr: sys::CUdeviceptr,
    size: usize,
    kind: MemoryKind,
    device: Device,
    owner: Option<(Arc<dyn MemoryResource>, Stream)>,
    /// Imported from another process (IPC).
    mapped: bool,
    /// What keeps foreign memory alive ([`Buffer::from_raw_with_owner`]).
    keep: Option<Arc<dyn Any + Send + Sync>>,
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("size", &self.size)
            .field("kind", &self.kind)
            .field("device", &self.device)
            .field("owned", &self.owner.is_some())
            .field("mapped", &self.mapped)
            .field("has_owner", &self.keep.is_some())
            .finish()
    }
}

impl Buffer {
    /// Allocates `size` bytes from `mr`, ordered on `stream`, which also becomes
    /// the buffer's free stream. The same as `mr.allocate(size, &stream)` (see
    /// [`MemoryResource`]).
    ///
    /// `stream` is an `Option<&Stream>` (or a `&Stream`). `None` is for resources
    /// that are not stream-ordered ([`MemoryResource::is_stream_ordered`] is
    /// `false`): the memory is allocated at once and the buffer's free stream is
    /// the device's legacy default stream ([`Stream::legacy_default`]), so that it
    /// is freed after the work that this crate's methods queue on it, on any
    /// stream, as for any buffer (see [`set_free_stream`](Self::set_free_stream)).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero size, a stream of another device, or
    /// no stream for a stream-ordered resource; the resource's error.
    pub fn allocate<'s>(
        mr: Arc<dyn MemoryResource>,
        size: usize,
        stream: impl Into<Option<&'s Stream>>,
    ) -> Result<Self> {
        let device = mr.device();
        let what = || format!("allocating {size} bytes on device {}", device.ordinal());
        if size == 0 {
            return Err(Error::zero_size(what()));
        }
        let legacy;
        let stream = match stream.into() {
            Some(s) => s,
            None if mr.is_stream_ordered() => {
                return Err(Error::invalid(
                    what(),
                    "the resource is stream-ordered (a memory pool): pass the stream to \
                     allocate on; only resources that are not stream-ordered take `None`",
                ));
            }
            None => {
                legacy = Stream::legacy_default(&device)?;
                &legacy
            }
        };
        if stream.device() != &device {
            return Err(Error::other_device(
                what(),
                format!("the stream belongs to device {}", stream.device().ordinal()),
            ));
        }
        // SAFETY: the buffer takes the memory over: `free` hands it, with `size`, to
        // `mr.deallocate` once (the owner is taken first), ordered on the free stream
        // after the buffer's own work.
        let ptr = unsafe { mr.allocate_raw(size, stream) }?;
        Ok(Self {
            ptr,
            size,
            kind: mr.kind(),
            device,
            owner: Some((mr, stream.clone())),
            mapped: false,
            keep: None,
        })
    }

    /// An owned buffer imported from another process (the IPC import path).
    #[cfg(unix)]
    pub(crate) fn mapped_from_parts(
        ptr: sys::CUdeviceptr,
        size: usize,
        kind: MemoryKind,
        device: Device,
        mr: Arc<dyn MemoryResource>,
        stream: &Stream,
    ) -> Self {
        Self {
            ptr,
            size,
            kind,
            device,
            owner: Some((mr, stream.clone())),
            mapped: true,
            keep: None,
        }
    }

    /// Wraps memory someone else owns; it is never freed by this buffer.
    ///
    /// # Safety
    /// `ptr` must address `size` bytes of memory of `kind` usable on `device`, valid
    /// for as long as the buffer and the work issued through it, and must not
    /// overlap another buffer that a copy with this one could involve (overlapping
    /// copies are undefined in CUDA).
    pub unsafe fn from_raw(
        ptr: sys::CUdeviceptr,
        size: usize,
        kind: MemoryKind,
        device: &Device,
    ) -> Self {
        Self {
            ptr,
            size,
            kind,
            device: *device,
            owner: None,
            mapped: false,
            keep: None,
        }
    }

    /// As [`from_raw`](Self::from_raw), keeping `owner` alive as long as the
    /// buffer (`cuda.core`'s `Buffer.from_handle(ptr, size, owner=…)`): the object
    /// that owns the memory, or anything whose life bounds it. [`owner`](Self::owner)
    /// hands it back. The buffer still never frees the memory; dropping it drops
    /// its reference to `owner`, at once, without waiting for work queued on the
    /// memory.
    ///
    /// ```no_run
    /// # fn f(dev: cuda_core::Device, s: &cuda_core::Stream) -> cuda_core::Result<()> {
    /// use std::sync::Arc;
    /// use cuda_core::{Buffer, MemoryKind};
    /// let theirs = Arc::new(dev.allocate(256, s)?);
    /// // SAFETY: `theirs` holds 256 bytes of device memory and lives as long as
    /// // `view` (which keeps it), and `view`'s work is synchronised before it drops.
    /// let view = unsafe {
    ///     Buffer::from_raw_with_owner(theirs.ptr(), 256, MemoryKind::Device, &dev, theirs.clone())
    /// };
    /// assert!(view.owner().is_some_and(|o| o.downcast_ref::<Buffer>().is_some()));
    /// # Ok(()) }
    /// ```
    ///
    /// # Safety
    /// As [`from_raw`](Self::from_raw), where "valid for as long as the buffer and
    /// the work issued through it" may be met by `owner`: the memory must stay
    /// valid while `owner` lives, and work issued through the buffer must
    /// complete before the last reference to `owner` goes.
    pub unsafe fn from_raw_with_owner(
        ptr: sys::CUdeviceptr,
        size: usize,
        kind: MemoryKind,
        device: &Device,
        owner: Arc<dyn Any + Send + Sync>,
    ) -> Self {
        Self {
            ptr,
            size,
            kind,
            device: *device,
            owner: None,
            mapped: false,
            keep: Some(owner),
        }
    }

    /// The object that keeps this buffer's foreign memory alive, given to
    /// [`from_raw_with_owner`](Self::from_raw_with_owner) (`None` otherwise: an
    /// owning buffer's memory is its [`memory_resource`](Self::memory_resource)'s).
    /// Downcast it to the type given.
    pub fn owner(&self) -> Option<&Arc<dyn Any + Send + Sync>> {
        self.keep.as_ref()
    }

    /// Whether the buffer was imported from another process
    /// ([`from_ipc_descriptor`](Self::from_ipc_descriptor)): its memory belongs to
    /// the exporter's pool.
    pub fn is_mapped(&self) -> bool {
        self.mapped
    }

    /// The device address.
    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// Changes the size (virtual memory growth).
    pub(crate) fn set_size(&mut self, size: usize) {
        self.size = size;
    }

    /// Where the device address is stored (a kernel argument points at it).
    pub(crate) fn ptr_ref(&self) -> *const sys::CUdeviceptr {
        &self.ptr
    }

    /// The size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The device it belongs to.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The kind of memory.
    pub fn kind(&self) -> MemoryKind {
        self.kind
    }

    /// The memory resource the buffer came from and returns its memory to
    /// (`None` for memory it does not own: [`Buffer::from_raw`]).
    pub fn memory_resource(&self) -> Option<&Arc<dyn MemoryResource>> {
        self.owner.as_ref().map(|(mr, _)| mr)
    }

    /// The stream the buffer is freed on (`None` for memory it does not own).
    pub fn free_stream(&self) -> Option<&Stream> {
        self.owner.as_ref().map(|(_, s)| s)
    }

    /// Whether the buffer owns its memory (and frees it when dropped).
    pub fn is_owned(&self) -> bool {
        self.owner.is_some()
    }

    /// Whether kernels can touch it (every kind can).
    pub fn is_device_accessible(&self) -> bool {
        true
    }

    /// Whether the host can read and write it directly.
    pub fn is_host_accessible(&self) -> bool {
        matches!(self.kind, MemoryKind::Pinned | MemoryKind::Managed)
    }

    /// Whether it is managed memory.
    pub fn is_managed(&self) -> bool {
        self.kind == MemoryKind::Managed
    }

    /// Changes the stream the buffer is freed on.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a stream of another device.
    pub fn set_free_stream(&mut self, stream: &Stream) -> Result<()> {
        let _current = self.check_stream(stream, "setting a buffer's free stream")?;
        if let Some((_, s)) = &mut self.owner {
            *s = stream.clone();
        }
        Ok(())
    }

    pub(crate) fn check_stream(
        &self,
        stream: &Stream,
        what: &'static str,
    ) -> Result<crate::context::Current> {
        if stream.device() != &self.device {
            return Err(Error::other_device(
                what,
                format!(
                    "the buffer is on device {} and the stream on device {}",
                    self.device.ordinal(),
                    stream.device().ordinal()
                ),
            ));
        }
        stream.context().ensure_current()
    }

    fn check_len(&self, bytes: usize, what: &'static str) -> Result<()> {
        if bytes > self.size {
            return Err(Error::out_of_range(
                what,
                format!(
                    "{bytes} bytes do not fit in a buffer of {} bytes",
                    self.size
                ),
            ));
        }
        Ok(())
    }

    /// Copies `src` into the start of the buffer on `stream`, and waits for the copy
    /// (so `src` may be reused at once).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `src` is larger than the buffer or the stream
    /// is of another device; the driver's error.
    pub fn copy_from_host<T: Pod>(&mut self, src: &[T], stream: &Stream) -> Result<()> {
        let bytes = std::mem::size_of_val(src);
        self.check_len(bytes, "copying host memory into a buffer")?;
        // SAFETY: `src` holds `bytes` readable bytes and the buffer at least as many;
        // the stream is drained before `src` can be touched again.
        unsafe { self.span(bytes, 1).upload(src.as_ptr().cast(), stream) }?;
        // Waits before the caller's memory is handed back (the whole context if
        // the stream cannot be waited for).
        stream.drain()
    }

    /// Copies the start of the buffer into `dst` on `stream`, and waits for the copy.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `dst` is larger than the buffer or the stream
    /// is of another device; the driver's error.
    pub fn copy_to_host<T: Pod>(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        let bytes = std::mem::size_of_val(dst);
        self.check_len(bytes, "copying a buffer to host memory")?;
        // SAFETY: `dst` holds `bytes` writable bytes (any bit pattern is a valid `T`:
        // `Pod`); the stream is drained before `dst` is handed back.
        unsafe {
            self.span(bytes, 1)
                .download(dst.as_mut_ptr().cast(), stream)
        }?;
        stream.drain()
    }

    /// The first `len` elements of `elem` bytes, as a span.
    fn span(&self, len: usize, elem: usize) -> crate::view::Span<'_> {
        crate::view::Span {
            buf: self,
            ptr: self.ptr,
            len,
            elem,
        }
    }

    /// Copies all of `src` into the start of this buffer, ordered on `stream`
    /// (asynchronous: both buffers are freed in stream order, so put their free
    /// streams after `stream`, or use one stream).
    ///
    /// Between buffers of two devices the copy is a peer copy
    /// (`cuMemcpyPeerAsync`), which needs neither peer access nor pool access (the
    /// driver stages it through the host where the devices cannot reach each
    /// other), and `stream` may belong to either device.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `src` is larger than this buffer or the stream
    /// belongs to neither buffer's device; the driver's error.
    pub fn copy_from(&mut self, src: &Buffer, stream: &Stream) -> Result<()> {
        self.check_len(src.size, "copying between buffers")?;
        copy_device(self, self.ptr, src, src.ptr, src.size, stream)
    }

    /// Copies this buffer into the start of `dst` (see [`copy_from`](Self::copy_from)).
    ///
    /// # Errors
    /// As [`copy_from`](Self::copy_from).
    pub fn copy_to(&self, dst: &mut Buffer, stream: &Stream) -> Result<()> {
        dst.copy_from(self, stream)
    }

    /// Fills the buffer with a byte, ordered on `stream`.
    ///
    /// # Errors
    /// The driver's error; a stream of another device.
    pub fn fill_u8(&mut self, value: u8, stream: &Stream) -> Result<()> {
        self.fill(value, stream)
    }

    /// Fills the buffer with a 2-byte pattern, ordered on `stream`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the size is not a multiple of 2; the driver's error.
    pub fn fill_u16(&mut self, value: u16, stream: &Stream) -> Result<()> {
        self.fill(value, stream)
    }

    /// Fills the buffer with a 4-byte pattern, ordered on `stream`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the size is not a multiple of 4; the driver's error.
    pub fn fill_u32(&mut self, value: u32, stream: &Stream) -> Result<()> {
        self.fill(value, stream)
    }

    /// Fills the buffer with copies of `value`, a 1-, 2-, 4- or 8-byte [`Pod`] value
    /// (`f32`, `i16`, `half::f16`, `u8`, `f64`, a `#[repr(C)]` pair of `u16`s, …),
    /// ordered on `stream`: `buf.fill(1.5f32, &stream)` where Python writes
    /// `buf.fill(np.float32(1.5), stream)`. The bytes of `value` are repeated as they
    /// are in memory (`cuMemsetD8/D16/D32Async`).
    ///
    /// The size is checked when the call is compiled to code (`cargo build`, not
    /// `cargo check`): 1, 2 and 4 bytes are one driver memset, 8 bytes (`f64`,
    /// `u64`) two strided 4-byte memsets; a value of another size does not build.
    ///
    /// ```
    /// # fn f(buf: &mut cuda_core::Buffer, s: &cuda_core::Stream) -> cuda_core::Result<()> {
    /// buf.fill(1.5f32, s)?;
    /// buf.fill(cuda_core::half::f16::from_f32(-2.0), s)?;
    /// buf.fill(7i8, s)?;
    /// buf.fill(0.25f64, s)?;
    /// # Ok(()) }
    /// ```
    ///
    /// ```compile_fail,E0080
    /// # fn f(buf: &mut cuda_core::Buffer, s: &cuda_core::Stream) -> cuda_core::Result<()> {
    /// buf.fill([1u8, 2, 3], s)?; // 3 bytes: no such memset
    /// # Ok(()) }
    /// # fn main() {
    /// #     let g: fn(&mut cuda_core::Buffer, &cuda_core::Stream) -> cuda_core::Result<()> = f;
    /// #     std::hint::black_box(g);
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the buffer's size or address is not a
    /// multiple of the value's size; the driver's error; a stream of another device.
    pub fn fill<T: Pod>(&mut self, value: T, stream: &Stream) -> Result<()> {
        const {
            assert!(
                matches!(std::mem::size_of::<T>(), 1 | 2 | 4 | 8),
                "Buffer::fill takes a value of 1, 2, 4 or 8 bytes"
            );
        }
        let len = self.typed_len::<T>("filling a buffer")?;
        self.span(len, std::mem::size_of::<T>())
            .fill(bytemuck::bytes_of(&value), stream)
    }

    pub(crate) fn require_managed(&self, what: &'static str) -> Result<()> {
        if self.kind != MemoryKind::Managed {
            return Err(Error::unsupported(
                what,
                format!(
                    "the buffer holds {:?} memory, not managed memory",
                    self.kind
                ),
            ));
        }
        Ok(())
    }

    /// Migrates managed memory to `location` ahead of use, ordered on `stream`.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for memory that is not managed; the driver's error.
    pub fn prefetch(&self, location: Location, stream: &Stream) -> Result<()> {
        self.require_managed("prefetching a buffer")?;
        let _current = self.check_stream(stream, "prefetching a buffer")?;
        // SAFETY: `size` bytes of managed memory, freed only after the stream's work.
        unsafe {
            mem_prefetch(self.ptr, self.size, location, stream.handle(), &|| {
                format!("prefetching {} bytes to {location:?}", self.size)
            })
        }?;
        self.order_free_after(stream)
    }

    /// Advises the driver that managed memory is mostly read (`true`), so it may
    /// keep read-only copies where it is read, or withdraws that advice (`false`).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for memory that is not managed; the driver's error.
    pub fn set_read_mostly(&self, read_mostly: bool) -> Result<()> {
        let advice = if read_mostly {
            sys::CU_MEM_ADVISE_SET_READ_MOSTLY
        } else {
            sys::CU_MEM_ADVISE_UNSET_READ_MOSTLY
        };
        self.advise(
            advice,
            Location::Device(self.device),
            "advising read-mostly",
        )
    }

    /// Sets (or with `None` unsets) where managed memory prefers to live.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for memory that is not managed; the driver's error.
    pub fn set_preferred_location(&self, location: Option<Location>) -> Result<()> {
        match location {
            Some(l) => self.advise(
                sys::CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
                l,
                "setting a preferred location",
            ),
            None => self.advise(
                sys::CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION,
                Location::Device(self.device),
                "unsetting the preferred location",
            ),
        }
    }

    /// Advises that `location` will access managed memory (`true`), keeping it
    /// mapped there, or withdraws that advice.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for memory that is not managed; the driver's error.
    pub fn set_accessed_by(&self, location: Location, accessed: bool) -> Result<()> {
        let advice = if accessed {
            sys::CU_MEM_ADVISE_SET_ACCESSED_BY
        } else {
            sys::CU_MEM_ADVISE_UNSET_ACCESSED_BY
        };
        self.advise(advice, location, "advising an accessing location")
    }

    /// Whether all of the managed memory is advised read-mostly
    /// (`CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY`; see
    /// [`set_read_mostly`](Self::set_read_mostly)).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for memory that is not managed; the driver's error.
    pub fn read_mostly(&self) -> Result<bool> {
        let mut v = [0i32];
        self.range_attribute(
            sys::CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
            &mut v,
            "reading a buffer's read-mostly advice",
        )?;
        Ok(v[0] != 0)
    }

    /// Where the managed memory prefers to live (see
    /// [`set_preferred_location`](Self::set_preferred_location)): `None` when no
    /// preferred location is set, or when its parts prefer different ones
    /// (`CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION`, with its type and id on
    /// CUDA 12.2 drivers and newer, so that a host NUMA node shows as such).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for memory that is not managed; the driver's error.
    pub fn preferred_location(&self) -> Result<Option<Location>> {
        self.location_attribute(
            sys::CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION,
            sys::CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE,
            sys::CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID,
            "reading a buffer's preferred location",
        )
    }

    /// Where the managed memory was last prefetched to
    /// ([`prefetch`](Self::prefetch)): `None` when it never was, or when its
    /// parts were last prefetched to different places
    /// (`CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION`, with type and id on CUDA
    /// 12.2 drivers and newer). It says where a prefetch was asked to go, not
    /// where the pages are now.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for memory that is not managed; the driver's error.
    pub fn last_prefetch_location(&self) -> Result<Option<Location>> {
        self.location_attribute(
            sys::CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION,
            sys::CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE,
            sys::CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID,
            "reading a buffer's last prefetch location",
        )
    }

    /// The locations advised to access all of the managed memory (see
    /// [`set_accessed_by`](Self::set_accessed_by)): devices, and
    /// [`Location::Host`] for the host (`CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY`).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for memory that is not managed; the driver's error.
    pub fn accessed_by(&self) -> Result<Vec<Location>> {
        const WHAT: &str = "reading which locations access a buffer";
        // One slot per device and one for the host; unused slots stay invalid.
        let mut v = vec![sys::CU_DEVICE_INVALID; Device::count()? + 1];
        self.range_attribute(sys::CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, &mut v, WHAT)?;
        v.into_iter()
            .filter(|&d| d != sys::CU_DEVICE_INVALID)
            .map(|d| legacy_location(d, WHAT))
            .collect::<Result<Vec<_>>>()
            .map(|locs| locs.into_iter().flatten().collect())
    }

    /// `cuMemRangeGetAttribute` over the whole buffer into `out` (4-byte values).
    fn range_attribute(
        &self,
        attr: sys::CUmem_range_attribute,
        out: &mut [i32],
        what: &'static str,
    ) -> Result<()> {
        self.require_managed(what)?;
        self.device.ensure_current()?;
        // SAFETY: `out` holds `size_of_val(out)` writable bytes, as many 4-byte
        // values as the attribute writes; `size` bytes of managed memory.
        unsafe {
            sys::cuMemRangeGetAttribute(
                out.as_mut_ptr().cast(),
                std::mem::size_of_val(out),
                attr,
                self.ptr,
                self.size,
            )
        }
        .check(|| what)
    }

    /// A location attribute: as a type and an id where the driver has them
    /// (CUDA 12.2), else as a device ordinal (`CU_DEVICE_CPU` for the host).
    fn location_attribute(
        &self,
        legacy: sys::CUmem_range_attribute,
        type_attr: sys::CUmem_range_attribute,
        id_attr: sys::CUmem_range_attribute,
        what: &'static str,
    ) -> Result<Option<Location>> {
        if !crate::versions::driver_at_least(12020) {
            let mut d = [0i32];
            self.range_attribute(legacy, &mut d, what)?;
            return legacy_location(d[0], what);
        }
        let (mut t, mut id) = ([0i32], [0i32]);
        self.range_attribute(type_attr, &mut t, what)?;
        let t = sys::CUmemLocationType(t[0] as _);
        if t == sys::CU_MEM_LOCATION_TYPE_INVALID {
            return Ok(None);
        }
        self.range_attribute(id_attr, &mut id, what)?;
        let id = id[0];
        Ok(Some(if t == sys::CU_MEM_LOCATION_TYPE_DEVICE {
            device_of(id, what)?
        } else if t == sys::CU_MEM_LOCATION_TYPE_HOST {
            Location::Host
        } else if t == sys::CU_MEM_LOCATION_TYPE_HOST_NUMA {
            Location::HostNuma(id)
        } else {
            return Err(Error::unsupported(
                what,
                format!("the driver reported location type {}", t.0),
            ));
        }))
    }

    fn advise(
        &self,
        advice: sys::CUmem_advise,
        location: Location,
        what: &'static str,
    ) -> Result<()> {
        self.require_managed(what)?;
        self.device.ensure_current()?;
        // SAFETY: `size` bytes of managed memory.
        unsafe { mem_advise(self.ptr, self.size, advice, location, &|| what.to_owned()) }
    }

    /// The host-visible contents as a slice, for pinned and managed memory.
    ///
    /// # Safety
    /// No work that writes the buffer may be pending or start while the slice
    /// lives (synchronise its streams first), and the buffer's bytes must be valid
    /// `T`s (guaranteed for `Pod` types).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for device memory; [`Error::InvalidArgument`] when the
    /// size or address does not fit `T`.
    pub unsafe fn as_host_slice<T: Pod>(&self) -> Result<&[T]> {
        let len = self.host_len::<T>("reading a buffer from the host")?;
        // SAFETY: host-accessible memory of `size` bytes, aligned for `T`; the caller
        // guarantees no concurrent writes.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr as usize as *const T, len) })
    }

    /// The host-visible contents as a mutable slice, for pinned and managed
    /// memory, without waiting for anything: the zero-copy host view, for a caller
    /// that has synchronised. [`host_slice_mut`](Self::host_slice_mut) is the safe
    /// form, which waits first.
    ///
    /// The slice borrows the buffer mutably, so while it lives no method of this
    /// crate can queue new work on the buffer. What the borrow cannot see is device
    /// work queued before, or launched from elsewhere with the buffer's address:
    /// that is what the caller vouches for.
    ///
    /// # Safety
    /// No device work (copies, fills, kernels, graphs, on any stream, or in another
    /// process) that reads or writes the buffer may be pending or start while the
    /// slice lives: synchronise the streams that used it first (or call
    /// [`host_slice_mut`](Self::host_slice_mut)). The host and the GPU writing the
    /// same memory at once is a data race.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for device memory; [`Error::InvalidArgument`] when the
    /// size or address does not fit `T`.
    pub unsafe fn as_host_slice_mut<T: Pod>(&mut self) -> Result<&mut [T]> {
        let len = self.host_len::<T>("writing a buffer from the host")?;
        // SAFETY: host-accessible memory of `size` bytes, aligned for `T` (checked),
        // any bit pattern of which is a valid `T` (`Pod`); the `&mut self` borrow
        // excludes every other view through this buffer, and the caller guarantees
        // that no device work touches it meanwhile.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr as usize as *mut T, len) })
    }

    /// Waits for the device work queued on the buffer, then gives its host-visible
    /// contents (pinned or managed memory) as a mutable slice: zero-copy host reads
    /// and writes, safely.
    ///
    /// ```no_run
    /// # fn f(dev: cuda_core::Device, s: &cuda_core::Stream) -> cuda_core::Result<()> {
    /// use std::sync::Arc;
    /// use cuda_core::LegacyPinnedMemoryResource;
    /// let mut buf = Arc::new(LegacyPinnedMemoryResource::new(&dev)).allocate(1024, None)?;
    /// buf.fill(2.0f32, s)?; // on the GPU, on `s`
    /// let host: &mut [f32] = buf.host_slice_mut()?; // waits for the fill
    /// assert!(host.iter().all(|&x| x == 2.0));
    /// host[0] = 1.0; // written straight into the pinned memory
    /// # Ok(()) }
    /// ```
    ///
    /// What it waits for: the buffer's free stream
    /// ([`free_stream`](Self::free_stream)). Every operation this crate queues on
    /// the buffer, on whatever stream (copies, fills, prefetches, batches), makes
    /// the free stream wait for it, so synchronising the free stream waits for all
    /// of them; and `&mut self` means none can be queued while the slice lives.
    /// A kernel or a graph that uses the buffer must be ordered before the free
    /// stream too, as [`launch`](crate::launch) requires of a buffer it is given
    /// (launch it on the free stream, or make the free stream wait for it).
    ///
    /// This costs a stream synchronisation; a caller that has synchronised already
    /// can use [`as_host_slice_mut`](Self::as_host_slice_mut).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for device memory, and for a buffer that does not own
    /// its memory ([`Buffer::from_raw`]: there is no free stream to wait for; use
    /// `as_host_slice_mut`); [`Error::InvalidArgument`] when the size or address
    /// does not fit `T`; the driver's error, including that of failed work.
    pub fn host_slice_mut<T: Pod>(&mut self) -> Result<&mut [T]> {
        const WHAT: &str = "viewing a buffer from the host";
        self.host_len::<T>(WHAT)?;
        let Some((_, free)) = &self.owner else {
            return Err(Error::unsupported(
                WHAT,
                "the buffer does not own its memory, so it has no free stream to wait \
                 for: synchronise its work and use `as_host_slice_mut`",
            ));
        };
        free.wait()?;
        // SAFETY: the free stream has been synchronised: every operation this
        // crate queued on the buffer had made it wait (see above), and kernels and
        // graphs given the buffer are ordered before it by their callers' contract.
        // `&mut self` keeps any new work from being queued through the buffer while
        // the slice lives.
        unsafe { self.as_host_slice_mut() }
    }

    /// The number of `T`s in the host-visible buffer, or why it cannot be viewed
    /// as `T`s.
    fn host_len<T: Pod>(&self, what: &'static str) -> Result<usize> {
        if !self.is_host_accessible() {
            return Err(Error::unsupported(
                what,
                "device memory is not host-accessible",
            ));
        }
        self.typed_len::<T>(what)
    }

    /// Orders this buffer's eventual free after the work queued so far on `stream`
    /// (an event recorded there, waited for by the free stream), when `stream` is not
    /// the free stream. Keeps stream-ordered frees from racing work on other streams.
    ///
    /// cuda-core's own operations (copies, fills, typed launches) do this for the
    /// buffers they touch. Code that queues work on a buffer through another
    /// library (cuBLAS, cuFFT, NCCL, a raw driver call) calls it after queueing,
    /// so that dropping the buffer cannot free memory the work still uses.
    /// Nothing is done when `stream` is the free stream or the buffer does not own
    /// its memory.
    ///
    /// # Errors
    /// The driver's error recording or waiting for the event; the stream has then
    /// been waited for, so the free still cannot overtake the work.
    #[inline]
    pub fn order_free_after(&self, stream: &Stream) -> Result<()> {
        match &self.owner {
            // The common case, on every typed launch: work on the free stream
            // itself (or memory this buffer does not free) needs nothing.
            Some((_, free))
                if !(free.handle() == stream.handle() && free.context() == stream.context()) =>
            {
                order_frees_after(std::iter::once(self), stream)
            }
            _ => Ok(()),
        }
    }

    /// Frees the buffer now (ordered on `stream`, or its free stream), reporting
    /// errors that dropping it would swallow.
    ///
    /// # Errors
    /// The resource's error.
    pub fn close(mut self, stream: Option<&Stream>) -> Result<()> {
        self.free(stream)
    }

    fn free(&mut self, stream: Option<&Stream>) -> Result<()> {
        let Some((mr, free_stream)) = self.owner.take() else {
            return Ok(());
        };
        if let Some(other) = stream {
            if other.device() != &self.device {
                // Put the owner back: the buffer stays valid and is freed later.
                self.owner = Some((mr, free_stream));
                return Err(Error::other_device(
                    "freeing a buffer",
                    format!(
                        "the buffer is on device {} and the stream on device {}",
                        self.device.ordinal(),
                        other.device().ordinal()
                    ),
                ));
            }
            // Work queued on the free stream must come before the free too.
            let e =
                crate::Event::in_context(free_stream.context(), crate::EventOptions::default())?;
            e.record(&free_stream)?;
            other.wait_event(&e)?;
        }
        let s = stream.unwrap_or(&free_stream);
        // SAFETY: `ptr`/`size` came from `mr.allocate_raw` and are freed once (the
        // owner was taken); later work cannot use them (the buffer is gone).
        unsafe { mr.deallocate(self.ptr, self.size, s) }
    }
}

/// Orders the frees of `buffers` after the work queued on `stream` so far: one
/// event recorded on `stream`, waited for by each distinct free stream that is not
/// `stream`. If that fails, waits for `stream` instead, so that no free can
/// overtake the work, and reports the error.
pub(crate) fn order_frees_after<'a>(
    buffers: impl Iterator<Item = &'a Buffer>,
    stream: &Stream,
) -> Result<()> {
    let mut frees: Vec<&Stream> = Vec::new();
    for b in buffers {
        if let Some((_, free)) = &b.owner {
            let same = |s: &Stream| s.handle() == free.handle() && s.context() == free.context();
            if !same(stream) && !frees.iter().any(|s| same(s)) {
                frees.push(free);
            }
        }
    }
    if frees.is_empty() {
        return Ok(());
    }
    let order = || -> Result<()> {
        let e = crate::Event::in_context(stream.context(), crate::EventOptions::default())?;
        e.record(stream)?;
        for free in &frees {
            free.wait_event(&e)?;
        }
        Ok(())
    };
    let r = order();
    if r.is_err() {
        let _ = stream.drain();
    }
    r
}

/// Copies `bytes` bytes from `src_ptr` (inside `src`) to `dst_ptr` (inside `dst`),
/// ordered on `stream`: `cuMemcpyAsync` on one device, `cuMemcpyPeerAsync` between
/// two (the stream may then be either device's). Orders both buffers' frees after
/// the copy. The caller checked that both spans lie in their buffers.
pub(crate) fn copy_device(
    dst: &Buffer,
    dst_ptr: sys::CUdeviceptr,
    src: &Buffer,
    src_ptr: sys::CUdeviceptr,
    bytes: usize,
    stream: &Stream,
) -> Result<()> {
    const WHAT: &str = "copying between buffers";
    if bytes == 0 {
        return Ok(());
    }
    if src.device == dst.device {
        let _current = dst.check_stream(stream, WHAT)?;
        // SAFETY: both spans are live and large enough; the copy is stream-ordered.
        unsafe { sys::cuMemcpyAsync(dst_ptr, src_ptr, bytes, stream.handle()) }
            .check(|| format!("copying {bytes} bytes between buffers"))?;
    } else {
        if stream.device() != &dst.device && stream.device() != &src.device {
            return Err(Error::other_device(
                WHAT,
                format!(
                    "the buffers are on devices {} and {}, the stream on device {}",
                    src.device.ordinal(),
                    dst.device.ordinal(),
                    stream.device().ordinal()
                ),
            ));
        }
        // The context of each side: the stream's for its own device, the primary
        // context for the other.
        let on = |d: &Device| -> Result<Context> {
            if stream.device() == d {
                Ok(stream.context().clone())
            } else {
                d.context()
            }
        };
        let (dst_ctx, src_ctx) = (on(&dst.device)?, on(&src.device)?);
        let _current = stream.context().ensure_current()?;
        // SAFETY: both spans are live and large enough, each in its device's
        // context; the copy is stream-ordered.
        unsafe {
            sys::cuMemcpyPeerAsync(
                dst_ptr,
                dst_ctx.handle(),
                src_ptr,
                src_ctx.handle(),
                bytes,
                stream.handle(),
            )
        }
        .check(|| {
            format!(
                "copying {bytes} bytes from device {} to device {}",
                src.device.ordinal(),
                dst.device.ordinal()
            )
        })?;
    }
    order_frees_after([dst, src].into_iter(), stream)
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // Errors cannot be reported from drop: `close` reports them.
        let _ = self.free(None);
    }
}
