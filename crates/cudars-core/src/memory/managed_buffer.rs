//! [`ManagedBuffer`]: a [`Buffer`] of managed memory, with the operations only
//! managed memory has (prefetch, discard, advice and its getters).

use std::ops::{Deref, DerefMut};

use cudars_bindings::driver as sys;

use crate::error::{Error, Result};
use crate::memory::batch::sealed::{AsRange, Range};
use crate::memory::batch::{BatchRange, BatchRangeMut};
use crate::{device::Device, stream::Stream};

use super::resource::{legacy_location, mem_advise, mem_prefetch};
use crate::{memory::buffer::Buffer, memory::resource::Location};

/// What [`ManagedBuffer::from_buffer`] and `from_buffer_ref` do, for their error.
const TAKING_OVER: &str = "using a buffer as managed memory";

/// A [`Buffer`] of managed (unified) memory (`cuda.core`'s `ManagedBuffer`):
/// what [`ManagedMemoryResource::allocate`](super::ManagedMemoryResource::allocate)
/// returns, or a managed `Buffer` taken over with
/// [`from_buffer`](Self::from_buffer) (or borrowed as one with
/// [`from_buffer_ref`](Self::from_buffer_ref), e.g. the buffer of a
/// [`DeviceBuffer`](crate::DeviceBuffer) of managed memory).
///
/// It dereferences to its [`Buffer`], so copies, fills, typed views
/// ([`view`](Buffer::view), [`view_mut`](Buffer::view_mut)), host slices and
/// every function taking a `&Buffer` or `&mut Buffer` work on it as they do on
/// any buffer; the batch functions ([`prefetch_batch`](crate::prefetch_batch),
/// [`discard_batch`](crate::discard_batch), …) take it directly. The managed
/// operations are its own, so calling them on device or pinned memory does not
/// compile:
///
/// ```compile_fail,E0599
/// # fn f(dev: cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
/// let buf = dev.allocate(1024, s)?; // device memory: a plain `Buffer`
/// buf.prefetch(cudars_core::Location::Host, s)?;
/// # Ok(()) }
/// ```
///
/// ```no_run
/// # fn f(dev: cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
/// use std::sync::Arc;
/// use cudars_core::{Location, ManagedMemoryResource};
/// let mr = Arc::new(ManagedMemoryResource::new(&dev)?);
/// let mut buf = mr.allocate(1 << 20, s)?;
/// buf.fill_pattern(1.0f32, s)?; // a `Buffer` method
/// buf.set_read_mostly(true)?;
/// buf.prefetch(Location::Device(dev), s)?;
/// assert!(buf.read_mostly()?);
/// buf.discard(s)?; // CUDA 13 drivers
/// # Ok(()) }
/// ```
///
/// The managed operations check the memory's kind again, so a `Buffer` of
/// another kind put in its place through `DerefMut` is refused with
/// [`Error::Unsupported`] rather than handed to the driver.
#[derive(Debug)]
// Transparent: `from_buffer_ref` views a `&Buffer` as a `&ManagedBuffer`.
#[repr(transparent)]
pub struct ManagedBuffer(Buffer);

impl ManagedBuffer {
    /// Wraps a buffer known to hold managed memory.
    pub(super) fn new_unchecked(buffer: Buffer) -> Self {
        Self(buffer)
    }

    /// Takes a `Buffer` of managed memory over (one of
    /// [`ManagedMemoryResource`](super::ManagedMemoryResource) allocated through
    /// `Arc<dyn MemoryResource>`, or [`Buffer::from_raw`] with
    /// [`MemoryKind::Managed`](super::MemoryKind::Managed)).
    ///
    /// # Errors
    /// [`Error::Unsupported`], with the buffer back, for memory of another kind.
    // The buffer comes back whole on failure, as `DeviceBuffer::from_buffer`'s does.
    #[allow(clippy::result_large_err)]
    pub fn from_buffer(buffer: Buffer) -> std::result::Result<Self, (Error, Buffer)> {
        match buffer.require_managed(TAKING_OVER) {
            Ok(()) => Ok(Self(buffer)),
            Err(e) => Err((e, buffer)),
        }
    }

    /// A borrowed `Buffer` of managed memory as a `ManagedBuffer`, for its
    /// managed operations: `ManagedBuffer::from_buffer_ref(typed.as_buffer())?
    /// .prefetch(loc, &s)?` for a [`DeviceBuffer`](crate::DeviceBuffer) of
    /// managed memory.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for memory of another kind.
    pub fn from_buffer_ref(buffer: &Buffer) -> Result<&Self> {
        buffer.require_managed(TAKING_OVER)?;
        // SAFETY: `ManagedBuffer` is `repr(transparent)` over `Buffer`, so the
        // reference has the same layout and lifetime; the memory is managed.
        Ok(unsafe { &*std::ptr::from_ref(buffer).cast::<Self>() })
    }

    /// The buffer, without its managed operations.
    pub fn into_buffer(self) -> Buffer {
        self.0
    }

    /// Frees the memory now, reporting errors that dropping it would swallow
    /// (see [`Buffer::close`]).
    ///
    /// # Errors
    /// As [`Buffer::close`].
    pub fn close(self, stream: Option<&Stream>) -> Result<()> {
        self.0.close(stream)
    }

    /// Migrates the memory to `location` ahead of use, ordered on `stream`
    /// (`cuMemPrefetchAsync`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a stream of another device;
    /// [`Error::Unsupported`] for a host NUMA location on a driver older than CUDA
    /// 12.2; the driver's error.
    pub fn prefetch(&self, location: Location, stream: &Stream) -> Result<()> {
        const WHAT: &str = "prefetching a buffer";
        self.0.require_managed(WHAT)?;
        let _current = self.0.check_stream(stream, WHAT)?;
        let size = self.0.size();
        // SAFETY: `size` bytes of managed memory, freed only after the stream's work.
        unsafe {
            mem_prefetch(self.0.ptr(), size, location, stream.handle(), &|| {
                format!("prefetching {size} bytes to {location:?}")
            })
        }?;
        self.0.order_free_after(stream)
    }

    /// Discards the contents, ordered on `stream`: the driver may drop the pages
    /// instead of migrating them, and reads see unspecified (but initialised)
    /// values until the memory is written or prefetched again
    /// (`cuMemDiscardBatchAsync` with one range; CUDA 13 drivers).
    ///
    /// # Errors
    /// [`Error::Unsupported`] on a driver older than CUDA 13.0, which has no
    /// discard (its [`required_driver`](Error::required_driver) says so);
    /// [`Error::InvalidArgument`] for a stream of another device; the driver's
    /// error.
    pub fn discard(&mut self, stream: &Stream) -> Result<()> {
        crate::memory::batch::discard_one(&mut self.0, stream)
    }

    /// Discards the contents and prefetches the (now unspecified) pages to
    /// `location`, ordered on `stream`: the way to move memory that is about to
    /// be overwritten without copying it (`cuMemDiscardAndPrefetchBatchAsync`
    /// with one range; CUDA 13 drivers).
    ///
    /// # Errors
    /// As [`discard`](Self::discard).
    pub fn discard_prefetch(&mut self, location: Location, stream: &Stream) -> Result<()> {
        crate::memory::batch::discard_prefetch_one(&mut self.0, location, stream)
    }

    /// Advises the driver that the memory is mostly read (`true`), so it may
    /// keep read-only copies where it is read, or withdraws that advice
    /// (`false`). `cuda.core`'s `read_mostly = …`.
    ///
    /// # Errors
    /// The driver's error.
    pub fn set_read_mostly(&self, read_mostly: bool) -> Result<()> {
        let advice = if read_mostly {
            sys::CU_MEM_ADVISE_SET_READ_MOSTLY
        } else {
            sys::CU_MEM_ADVISE_UNSET_READ_MOSTLY
        };
        // The driver ignores the location of this advice.
        self.advise(
            advice,
            Location::Device(*self.0.device()),
            "advising read-mostly",
        )
    }

    /// Sets (or with `None` unsets) where the memory prefers to live: a device,
    /// the host, a host NUMA node or the current thread's
    /// ([`Location::HostNumaCurrent`]). `cuda.core`'s `preferred_location = …`.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a host NUMA location on a driver older than
    /// CUDA 12.2; the driver's error.
    pub fn set_preferred_location(&self, location: Option<Location>) -> Result<()> {
        match location {
            Some(l) => self.advise(
                sys::CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
                l,
                "setting a preferred location",
            ),
            None => self.advise(
                sys::CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION,
                Location::Device(*self.0.device()),
                "unsetting the preferred location",
            ),
        }
    }

    /// Advises that `location`, a device or the host, will access the memory
    /// (`true`), keeping it mapped there, or withdraws that advice.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a host NUMA location (the advice takes a
    /// device or the host); the driver's error.
    pub fn set_accessed_by(&self, location: Location, accessed: bool) -> Result<()> {
        const WHAT: &str = "advising an accessing location";
        if let Location::HostNuma(_) | Location::HostNumaCurrent = location {
            return Err(Error::invalid(
                WHAT,
                format!("{location:?}: the accessed-by advice takes a device or the host"),
            ));
        }
        let advice = if accessed {
            sys::CU_MEM_ADVISE_SET_ACCESSED_BY
        } else {
            sys::CU_MEM_ADVISE_UNSET_ACCESSED_BY
        };
        self.advise(advice, location, WHAT)
    }

    /// Whether all of the memory is advised read-mostly
    /// (`CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY`; see
    /// [`set_read_mostly`](Self::set_read_mostly)).
    ///
    /// # Errors
    /// The driver's error.
    pub fn read_mostly(&self) -> Result<bool> {
        let mut v = [0i32];
        self.range_attribute(
            sys::CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
            &mut v,
            "reading a buffer's read-mostly advice",
        )?;
        Ok(v[0] != 0)
    }

    /// Where the memory prefers to live (see
    /// [`set_preferred_location`](Self::set_preferred_location)): `None` when no
    /// preferred location is set, or when its parts prefer different ones
    /// (`CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION`, with its type and id on
    /// CUDA 12.2 drivers and newer, so that a host NUMA node shows as such).
    ///
    /// # Errors
    /// The driver's error.
    pub fn preferred_location(&self) -> Result<Option<Location>> {
        self.location_attribute(
            sys::CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION,
            sys::CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE,
            sys::CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID,
            "reading a buffer's preferred location",
        )
    }

    /// Where the memory was last prefetched to ([`prefetch`](Self::prefetch)):
    /// `None` when it never was, or when its parts were last prefetched to
    /// different places (`CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION`, with
    /// type and id on CUDA 12.2 drivers and newer). It says where a prefetch was
    /// asked to go, not where the pages are now.
    ///
    /// # Errors
    /// The driver's error.
    pub fn last_prefetch_location(&self) -> Result<Option<Location>> {
        self.location_attribute(
            sys::CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION,
            sys::CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE,
            sys::CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID,
            "reading a buffer's last prefetch location",
        )
    }

    /// The locations advised to access all of the memory (see
    /// [`set_accessed_by`](Self::set_accessed_by)): devices, and
    /// [`Location::Host`] for the host (`CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY`).
    ///
    /// # Errors
    /// The driver's error.
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
        use crate::error::Check as _;
        self.0.require_managed(what)?;
        let _current = self.0.device().ensure_current()?;
        // SAFETY: `out` holds `size_of_val(out)` writable bytes, as many 4-byte
        // values as the attribute writes; `size` bytes of managed memory.
        unsafe {
            sys::cuMemRangeGetAttribute(
                out.as_mut_ptr().cast(),
                std::mem::size_of_val(out),
                attr,
                self.0.ptr(),
                self.0.size(),
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
        Location::from_raw(t, id[0], what)
    }

    fn advise(
        &self,
        advice: sys::CUmem_advise,
        location: Location,
        what: &'static str,
    ) -> Result<()> {
        self.0.require_managed(what)?;
        let _current = self.0.device().ensure_current()?;
        // SAFETY: `size` bytes of managed memory.
        unsafe {
            mem_advise(self.0.ptr(), self.0.size(), advice, location, &|| {
                what.to_owned()
            })
        }
    }
}

// A managed buffer is a whole range for the batch calls (`memory::batch`).
impl AsRange for ManagedBuffer {
    fn range(&self) -> Range<'_> {
        (**self).range()
    }
}
impl BatchRange for ManagedBuffer {}
impl BatchRangeMut for ManagedBuffer {}

impl Deref for ManagedBuffer {
    type Target = Buffer;

    fn deref(&self) -> &Buffer {
        &self.0
    }
}

impl DerefMut for ManagedBuffer {
    fn deref_mut(&mut self) -> &mut Buffer {
        &mut self.0
    }
}

impl AsRef<Buffer> for ManagedBuffer {
    fn as_ref(&self) -> &Buffer {
        &self.0
    }
}

impl AsMut<Buffer> for ManagedBuffer {
    fn as_mut(&mut self) -> &mut Buffer {
        &mut self.0
    }
}

impl From<ManagedBuffer> for Buffer {
    fn from(b: ManagedBuffer) -> Self {
        b.0
    }
}
