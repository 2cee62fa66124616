//! The [`MemoryResource`] trait (what allocates a [`Buffer`](crate::Buffer)), what
//! memory it hands out ([`MemoryKind`], [`Location`]), the resource each device
//! allocates from, and the driver's advice and prefetch calls the resources share.

use std::fmt;
use std::sync::Arc;

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{device::Device, stream::Stream};

/// The resource an owned buffer gives its memory back to: one it holds an
/// `Arc` of, or a device's default pool, which the crate keeps for the life of
/// the process (so a buffer of it touches no reference count shared with
/// every other thread that allocates: rule 1 of the soundness contract holds
/// because that resource is never dropped).
pub(crate) enum Resource {
    /// Held by this buffer.
    Shared(Arc<dyn MemoryResource>),
    /// A device's default pool, which lives as long as the process
    /// (`memory::pool::default_pool`): the resource, and what its allocations
    /// and frees need, so that they skip the resource's vtable (`memory::pool`
    /// gives `Resource` its allocate and free).
    Static {
        /// The pool as a resource.
        erased: &'static Arc<dyn MemoryResource>,
        /// Its `CUmemoryPool`, as an address (a handle any thread may use,
        /// kept so that `Resource` stays `Send` and `Sync` as its parts are).
        pool: usize,
        /// Its device.
        device: Device,
    },
}

impl Resource {
    /// The resource's `Arc`.
    #[inline]
    pub(crate) fn arc(&self) -> &Arc<dyn MemoryResource> {
        match self {
            Self::Shared(a) => a,
            Self::Static { erased, .. } => erased,
        }
    }

    /// An `Arc` of the resource to keep (a clone for the static one).
    pub(crate) fn into_arc(self) -> Arc<dyn MemoryResource> {
        match self {
            Self::Shared(a) => a,
            Self::Static { erased, .. } => Arc::clone(erased),
        }
    }

    /// [`MemoryResource::device`].
    #[inline]
    pub(crate) fn device(&self) -> Device {
        match self {
            Self::Shared(a) => a.device(),
            Self::Static { device, .. } => *device,
        }
    }

    /// [`MemoryResource::kind`].
    #[inline]
    pub(crate) fn kind(&self) -> MemoryKind {
        match self {
            Self::Shared(a) => a.kind(),
            Self::Static { .. } => MemoryKind::Device,
        }
    }
}

impl std::ops::Deref for Resource {
    type Target = dyn MemoryResource;
    #[inline]
    fn deref(&self) -> &Self::Target {
        &**self.arc()
    }
}

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

impl MemoryKind {
    /// The kind of the memory at `ptr`, asked of the driver
    /// (`cuPointerGetAttribute`: `CU_POINTER_ATTRIBUTE_IS_MANAGED`, then
    /// `CU_POINTER_ATTRIBUTE_MEMORY_TYPE`): what `cuda.core`'s `Buffer` reports
    /// for a pointer wrapped by `Buffer.from_handle` without a memory resource.
    /// [`Buffer::from_raw`](crate::Buffer::from_raw) takes the kind from its
    /// caller; pass it this answer to make a buffer's
    /// [`is_host_accessible`](crate::Buffer::is_host_accessible) the driver's.
    /// Host memory registered with the driver is [`Pinned`](Self::Pinned).
    ///
    /// # Errors
    /// The driver's error (`CUDA_ERROR_INVALID_VALUE`) for an address CUDA
    /// does not know, such as pageable host memory.
    pub fn of_pointer(ptr: sys::CUdeviceptr) -> Result<Self> {
        crate::device::init()?;
        let mut managed: u32 = 0;
        let mut memory_type: u32 = 0;
        for (attribute, out) in [
            (
                sys::CU_POINTER_ATTRIBUTE_IS_MANAGED,
                (&raw mut managed).cast::<std::ffi::c_void>(),
            ),
            (
                sys::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                (&raw mut memory_type).cast(),
            ),
        ] {
            // SAFETY: each output is a live local of the size the attribute
            // writes (a bool as unsigned int, a CUmemorytype); the driver only
            // looks the address up, it does not dereference it.
            unsafe { sys::cuPointerGetAttribute(out, attribute, ptr) }
                .check(|| format!("asking the driver what memory address {ptr:#x} is"))?;
        }
        Ok(if managed != 0 {
            Self::Managed
        } else if memory_type == sys::CU_MEMORYTYPE_HOST.0 {
            Self::Pinned
        } else {
            Self::Device
        })
    }
}

/// An allocator of [`Buffer`](crate::Buffer)s. Implement it to plug in your own.
///
/// **Allocate with `allocate`, which returns an owning [`Buffer`](crate::Buffer)** (freed, through
/// the resource, when it is dropped or [closed](crate::Buffer::close)). It is a method of
/// every resource behind an `Arc`:
///
/// - `Arc<dyn MemoryResource>` (what [`Device::memory_resource`] returns): the
///   inherent [`allocate`](#method.allocate) of `dyn MemoryResource`;
/// - the crate's resources (`Arc<DeviceMemoryResource>`, `Arc<PinnedMemoryResource>`,
///   `Arc<LegacyPinnedMemoryResource>`, `Arc<ManagedMemoryResource>`,
///   `Arc<VirtualMemoryResource>`): an inherent `allocate` of each type, so no
///   import is needed (`Arc<ManagedMemoryResource>`'s returns a
///   [`ManagedBuffer`](crate::ManagedBuffer), which dereferences to its `Buffer`);
/// - an `Arc` of your own resource type: [`MemoryResourceExt::allocate`](crate::MemoryResourceExt::allocate) (import
///   the trait), or erase the type to `Arc<dyn MemoryResource>`.
///
/// All of them are [`Buffer::allocate`](crate::Buffer::allocate). The trait's raw allocation,
/// [`allocate_raw`](Self::allocate_raw), returns an address that nothing frees: it
/// is `unsafe` to call, and is what an implementation provides.
///
/// **The stream is optional where the resource is not stream-ordered**
/// ([`is_stream_ordered`](Self::is_stream_ordered) is `false`:
/// [`LegacyPinnedMemoryResource`](crate::LegacyPinnedMemoryResource), [`ManagedMemoryResource`](crate::ManagedMemoryResource) where it does not
/// use a pool ([`ManagedMemoryResource::legacy`](crate::ManagedMemoryResource::legacy), and drivers older than CUDA
/// 13), `VirtualMemoryResource` (feature `vmm`)), as in `cuda.core`:
/// `mr.allocate(size, None)` allocates at once, and the buffer is freed on the
/// device's legacy default stream (see [`Buffer::allocate`](crate::Buffer::allocate)). A stream-ordered
/// resource (a memory pool) needs `Some(&stream)` (or just `&stream`): the typed
/// resources take only a `&Stream`, and `Arc<dyn MemoryResource>` and
/// [`Buffer::allocate`](crate::Buffer::allocate) answer `None` with [`Error::InvalidArgument`].
///
/// ```no_run
/// # fn f() -> cudars_core::Result<()> {
/// use cudars_core::{Device, StreamOptions};
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
/// # fn f(dev: cudars_core::Device, stream: &cudars_core::Stream) -> cudars_core::Result<()> {
/// let ptr = dev.memory_resource()?.allocate_raw(1024, stream)?;
/// # Ok(()) }
/// ```
///
/// and `allocate` is a [`Buffer`](crate::Buffer), not an address:
///
/// ```compile_fail,E0308
/// # fn f(dev: cudars_core::Device, stream: &cudars_core::Stream) -> cudars_core::Result<()> {
/// let ptr: u64 = dev.memory_resource()?.allocate(1024, stream)?;
/// # Ok(()) }
/// ```
///
/// and a memory pool's own type takes no `None`:
///
/// ```compile_fail,E0308
/// # fn f(dev: cudars_core::Device) -> cudars_core::Result<()> {
/// let buf = dev.default_memory_resource()?.allocate(1024, None)?;
/// # Ok(()) }
/// ```
///
/// # Safety
/// `allocate_raw` must return memory of at least `size` bytes of the resource's
/// [`kind`](Self::kind), usable on `device()`, and `deallocate` must accept exactly
/// what `allocate_raw` returned. A resource whose
/// [`is_stream_ordered`](Self::is_stream_ordered) is `false` must return memory
/// that any stream may use as soon as `allocate_raw` returns. A `deallocate` that
/// returns an error must have freed nothing: a [`Buffer`](crate::Buffer) whose free fails hands
/// it to the deferred-free queue ([`deferred_frees`](crate::deferred_frees)),
/// which calls `deallocate` again with the same arguments, from another thread
/// and later in the stream's order, until it succeeds.
pub unsafe trait MemoryResource: fmt::Debug + Send + Sync {
    /// Allocates `size` bytes, ordered on `stream` where the resource can be, and
    /// returns their address, which **nothing owns or frees**: call `allocate` for
    /// a [`Buffer`](crate::Buffer) instead (see [`MemoryResource`]). This is the method an
    /// implementation provides; [`Buffer::allocate`](crate::Buffer::allocate) calls it.
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
    /// An error means nothing was freed (see the trait's `# Safety`): the crate's
    /// buffers retry it later. The crate never calls it on a driver callback
    /// thread (a host function), where CUDA calls are forbidden: a buffer dropped
    /// there is freed later, on an ordinary thread.
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
    /// a stream ([`Buffer::allocate`](crate::Buffer::allocate) with `None`); `allocate_raw` is then given the
    /// device's legacy default stream, which it must accept (and may ignore).
    /// Returning `true` is always safe: it only makes a stream required.
    fn is_stream_ordered(&self) -> bool {
        true
    }
}

/// Where managed memory should live or be prefetched to (`cuda.core`'s
/// `Device` and `Host` as locations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Location {
    /// A device's memory.
    Device(Device),
    /// Host memory (`Host()`).
    Host,
    /// Host memory of one NUMA node (`Host(numa_id)`; CUDA 12.2 drivers and
    /// newer). The id is unsigned: `cuda.core`'s `Host(numa_id=-1)` raises
    /// `ValueError`, and a negative node cannot be written here.
    HostNuma(u32),
    /// Host memory of the NUMA node closest to the CPU the calling thread runs
    /// on when the call is made (`Host.numa_current()`,
    /// `CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT`; CUDA 12.2 drivers and newer).
    /// Prefetches and preferred locations take it; the accessed-by advice and
    /// memory pools do not.
    HostNumaCurrent,
}

impl Location {
    /// Whether this is [`Location::HostNumaCurrent`] (`Host.is_numa_current`).
    pub fn is_numa_current(&self) -> bool {
        matches!(self, Self::HostNumaCurrent)
    }

    /// The NUMA node of [`Location::HostNuma`], `None` for every other location
    /// (`Host.numa_id`).
    ///
    /// ```
    /// use cudars_core::Location;
    /// assert_eq!(Location::HostNuma(1).numa_id(), Some(1));
    /// assert_eq!(Location::Host.numa_id(), None);
    /// assert_eq!(Location::HostNumaCurrent.numa_id(), None);
    /// ```
    pub fn numa_id(&self) -> Option<u32> {
        match self {
            Self::HostNuma(n) => Some(*n),
            _ => None,
        }
    }

    pub(crate) fn raw(self) -> sys::CUmemLocation {
        let (type_, id) = match self {
            Self::Device(d) => (sys::CU_MEM_LOCATION_TYPE_DEVICE, d.ordinal() as i32),
            Self::Host => (sys::CU_MEM_LOCATION_TYPE_HOST, 0),
            // A node past `i32::MAX` is none the driver has: `i32::MAX` is not
            // one either, so the driver refuses it (a negative id could mean
            // something else to it).
            Self::HostNuma(n) => (
                sys::CU_MEM_LOCATION_TYPE_HOST_NUMA,
                i32::try_from(n).unwrap_or(i32::MAX),
            ),
            Self::HostNumaCurrent => (sys::CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0),
        };
        mem_location(type_, id)
    }

    /// The location a driver reported as a type and an id: `None` for
    /// `CU_MEM_LOCATION_TYPE_INVALID` (no location).
    pub(crate) fn from_raw(
        type_: sys::CUmemLocationType,
        id: i32,
        what: &'static str,
    ) -> Result<Option<Self>> {
        Ok(Some(match type_ {
            sys::CU_MEM_LOCATION_TYPE_INVALID => return Ok(None),
            sys::CU_MEM_LOCATION_TYPE_DEVICE => device_of(id, what)?,
            sys::CU_MEM_LOCATION_TYPE_HOST => Self::Host,
            sys::CU_MEM_LOCATION_TYPE_HOST_NUMA => {
                Self::HostNuma(u32::try_from(id).map_err(|_| {
                    Error::unsupported(what, format!("the driver reported host NUMA node {id}"))
                })?)
            }
            sys::CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT => Self::HostNumaCurrent,
            other => {
                return Err(Error::unsupported(
                    what,
                    format!("the driver reported location type {}", other.0),
                ));
            }
        }))
    }

    /// The location as the CUDA 12.0 and 12.1 drivers take it: a device ordinal,
    /// `CU_DEVICE_CPU` for the host; host NUMA nodes need a CUDA 12.2 driver.
    fn legacy_device(self, what: &dyn Fn() -> String) -> Result<sys::CUdevice> {
        match self {
            Self::Device(d) => Ok(d.handle()),
            Self::Host => Ok(sys::CU_DEVICE_CPU),
            Self::HostNuma(_) | Self::HostNumaCurrent => {
                crate::versions::require_driver(12020, "a host NUMA memory location", what)?;
                Err(Error::unsupported(what(), "host NUMA memory locations"))
            }
        }
    }
}

/// A `CUmemLocation` of `type_` and `id`. (CUDA 13.4 put `id` in a union with
/// the locality-domain form of a device location; the layout is unchanged.)
pub(crate) const fn mem_location(type_: sys::CUmemLocationType, id: i32) -> sys::CUmemLocation {
    sys::CUmemLocation {
        type_,
        __bindgen_anon_1: sys::CUmemLocation_st__bindgen_ty_1 { id },
    }
}

/// The `id` of a `CUmemLocation`.
pub(crate) fn location_id(l: &sys::CUmemLocation) -> i32 {
    // SAFETY: the union's members are plain integers and `id` spans all of its
    // bytes, which this crate or the driver wrote (every `CUmemLocation` here is
    // made by `mem_location`, zeroed, or filled in by the driver).
    unsafe { l.__bindgen_anon_1.id }
}

/// A location given as a device ordinal, `CU_DEVICE_CPU` for the host or
/// `CU_DEVICE_INVALID` for none (`cuMemRangeGetAttribute`'s older form).
pub(crate) fn legacy_location(d: sys::CUdevice, what: &'static str) -> Result<Option<Location>> {
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
pub(crate) unsafe fn mem_advise(
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
pub(crate) unsafe fn mem_prefetch(
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

pub(crate) type ResourceMap =
    std::collections::HashMap<usize, Arc<dyn crate::memory::resource::MemoryResource>>;

/// The resources set with [`Device::set_memory_resource`](crate::Device::set_memory_resource), by device ordinal.
pub(crate) fn allocation_resources() -> &'static std::sync::RwLock<ResourceMap> {
    static SET: std::sync::OnceLock<std::sync::RwLock<ResourceMap>> = std::sync::OnceLock::new();
    SET.get_or_init(Default::default)
}

/// Whether [`Device::set_memory_resource`](crate::Device::set_memory_resource)
/// was ever called: until then every device allocates from its default pool,
/// and the allocation path takes no lock (`Device::allocation_resource`).
pub(crate) static RESOURCES_EVER_SET: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_locations_convert_both_ways() {
        for (loc, type_, id) in [
            (Location::Host, sys::CU_MEM_LOCATION_TYPE_HOST, 0),
            (
                Location::HostNuma(3),
                sys::CU_MEM_LOCATION_TYPE_HOST_NUMA,
                3,
            ),
            (
                Location::HostNumaCurrent,
                sys::CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT,
                0,
            ),
        ] {
            let raw = loc.raw();
            assert_eq!((raw.type_, location_id(&raw)), (type_, id), "{loc:?}");
            assert_eq!(Location::from_raw(type_, id, "t").unwrap(), Some(loc));
        }
        assert!(Location::HostNumaCurrent.is_numa_current());
        assert!(!Location::HostNuma(0).is_numa_current() && !Location::Host.is_numa_current());
    }

    #[test]
    fn no_location_and_unknown_types_from_the_driver() {
        assert_eq!(
            Location::from_raw(sys::CU_MEM_LOCATION_TYPE_INVALID, 7, "t").unwrap(),
            None
        );
        let e =
            Location::from_raw(sys::CUmemLocationType(99), 0, "reading a location").unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
        assert!(e.to_string().contains("reading a location"), "{e}");
        assert!(
            crate::error::Report::new(&e)
                .to_string()
                .contains("location type 99"),
            "{}",
            crate::error::Report::new(&e)
        );
        // A negative device ordinal is refused before any device is looked up.
        let e = Location::from_raw(sys::CU_MEM_LOCATION_TYPE_DEVICE, -2, "t").unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
    }

    #[test]
    #[cfg_attr(miri, ignore = "loads the CUDA driver (dlopen), which Miri cannot run")]
    fn older_drivers_take_the_host_by_ordinal_and_no_numa_node() {
        let what = || "prefetching".to_owned();
        assert_eq!(
            Location::Host.legacy_device(&what).unwrap(),
            sys::CU_DEVICE_CPU
        );
        for loc in [Location::HostNuma(0), Location::HostNumaCurrent] {
            let e = loc.legacy_device(&what).unwrap_err();
            assert!(matches!(e, Error::Unsupported { .. }), "{loc:?}: {e:?}");
        }
    }

    #[test]
    fn legacy_locations_from_the_driver() {
        assert_eq!(legacy_location(sys::CU_DEVICE_INVALID, "t").unwrap(), None);
        assert_eq!(
            legacy_location(sys::CU_DEVICE_CPU, "t").unwrap(),
            Some(Location::Host)
        );
    }
}
