//! Virtual memory: reserve an address range, back it with physical chunks, and
//! grow an allocation in place (`cuMemAddressReserve`, `cuMemCreate`, `cuMemMap`).

use std::collections::HashMap;
use std::sync::Mutex;

use cuda_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{Buffer, Device, MemoryKind, MemoryResource, Stream};

/// Which granularity allocations are rounded to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Granularity {
    /// The driver's recommended granularity (the default; usually 2 MiB).
    #[default]
    Recommended,
    /// The smallest the driver accepts.
    Minimum,
}

/// Options of a [`VirtualMemoryResource`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VirtualMemoryOptions {
    /// Address space reserved per allocation, so it can grow in place; 0 reserves
    /// 4× the first size.
    pub reserve: usize,
    /// The rounding of sizes.
    pub granularity: Granularity,
    /// Other devices that may access the memory (read and write).
    pub peer_access: Vec<Device>,
}

struct Chunk {
    handle: sys::CUmemGenericAllocationHandle,
    size: usize,
}

struct Allocation {
    reserved: usize,
    chunks: Vec<Chunk>,
    mapped: usize,
}

/// Device memory from the virtual memory API: each allocation reserves an address
/// range and maps physical chunks into it; [`grow`](Self::grow) maps more chunks
/// after the existing ones, so a buffer keeps its address and its data.
///
/// Not stream-ordered: freeing waits for the buffer's free stream.
pub struct VirtualMemoryResource {
    device: Device,
    options: VirtualMemoryOptions,
    granularity: usize,
    allocations: Mutex<HashMap<sys::CUdeviceptr, Allocation>>,
}

impl std::fmt::Debug for VirtualMemoryResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VirtualMemoryResource")
            .field("device", &self.device)
            .field("granularity", &self.granularity)
            .finish()
    }
}

fn prop(device: &Device) -> sys::CUmemAllocationProp {
    sys::CUmemAllocationProp {
        type_: sys::CU_MEM_ALLOCATION_TYPE_PINNED,
        location: sys::CUmemLocation {
            type_: sys::CU_MEM_LOCATION_TYPE_DEVICE,
            id: device.ordinal() as i32,
        },
        ..Default::default()
    }
}

impl VirtualMemoryResource {
    /// A resource on `device`.
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the device has no virtual memory management;
    /// the driver's error.
    pub fn new(device: &Device, options: VirtualMemoryOptions) -> Result<Self> {
        let _current = device.ensure_current()?;
        if device.attribute(sys::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)? == 0 {
            return Err(Error::unsupported(
                format!(
                    "creating a virtual memory resource on device {}",
                    device.ordinal()
                ),
                "the device does not support virtual memory management",
            ));
        }
        let p = prop(device);
        let flag = match options.granularity {
            Granularity::Recommended => sys::CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
            Granularity::Minimum => sys::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
        };
        let mut granularity = 0usize;
        // SAFETY: `p` describes device memory; `granularity` is valid for writes.
        unsafe { sys::cuMemGetAllocationGranularity(&mut granularity, &p, flag) }
            .check(|| "reading the allocation granularity")?;
        if granularity == 0 {
            return Err(Error::unsupported(
                "creating a virtual memory resource",
                "granularity 0",
            ));
        }
        Ok(Self {
            device: *device,
            options,
            granularity,
            allocations: Mutex::new(HashMap::new()),
        })
    }

    /// The granularity sizes are rounded up to.
    pub fn granularity(&self) -> usize {
        self.granularity
    }

    fn round(&self, size: usize) -> Result<usize> {
        size.checked_next_multiple_of(self.granularity)
            .ok_or_else(|| Error::invalid("a virtual allocation", "the size is too large"))
    }

    /// Creates a physical chunk and maps it at `at`, with access for this device
    /// and the peers. Releases what it made on failure.
    fn map_chunk(&self, at: sys::CUdeviceptr, size: usize) -> Result<Chunk> {
        let p = prop(&self.device);
        let mut handle: sys::CUmemGenericAllocationHandle = 0;
        // SAFETY: `p` describes device memory; `size` is a granularity multiple.
        unsafe { sys::cuMemCreate(&mut handle, size, &p, 0) }
            .check(|| format!("creating {size} bytes of physical memory"))?;
        let release = |h| {
            // SAFETY: a handle from `cuMemCreate`, released once.
            let _ = unsafe { sys::cuMemRelease(h) };
        };
        // SAFETY: `at..at+size` lies in a range this resource reserved and left unmapped.
        let mapped = unsafe { sys::cuMemMap(at, size, 0, handle, 0) };
        if let Err(e) = mapped.check(|| "mapping physical memory") {
            release(handle);
            return Err(e);
        }
        let mut access: Vec<sys::CUmemAccessDesc> = std::iter::once(self.device)
            .chain(self.options.peer_access.iter().copied())
            .map(|d| sys::CUmemAccessDesc {
                location: sys::CUmemLocation {
                    type_: sys::CU_MEM_LOCATION_TYPE_DEVICE,
                    id: d.ordinal() as i32,
                },
                flags: sys::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            })
            .collect();
        access.dedup_by_key(|a| a.location.id);
        // SAFETY: the range was just mapped; `access` holds `len` descriptors.
        let rc = unsafe { sys::cuMemSetAccess(at, size, access.as_ptr(), access.len()) };
        if let Err(e) = rc.check(|| "granting access to virtual memory") {
            // SAFETY: undoes the mapping above.
            let _ = unsafe { sys::cuMemUnmap(at, size) };
            release(handle);
            return Err(e);
        }
        Ok(Chunk { handle, size })
    }

    fn free_allocation(base: sys::CUdeviceptr, a: Allocation) {
        let mut at = base;
        for c in a.chunks {
            // SAFETY: each chunk was mapped at `at`, in order; unmapped and released once.
            unsafe {
                let _ = sys::cuMemUnmap(at, c.size);
                let _ = sys::cuMemRelease(c.handle);
            }
            at += c.size as u64;
        }
        // SAFETY: the range this allocation reserved, freed once.
        let _ = unsafe { sys::cuMemAddressFree(base, a.reserved) };
    }

    /// Grows `buffer` (from this resource) to at least `new_size` bytes, in place:
    /// its address and its contents stay. Growing past the reserved range is an
    /// error (reserve more with [`VirtualMemoryOptions::reserve`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a buffer of another resource, a smaller size,
    /// or a size beyond the reservation; the driver's error.
    pub fn grow(&self, buffer: &mut Buffer, new_size: usize) -> Result<()> {
        let what = "growing a virtual allocation";
        let new_size = self.round(new_size)?;
        let mut allocs = self.allocations.lock().unwrap_or_else(|e| e.into_inner());
        let a = allocs
            .get_mut(&buffer.ptr())
            .ok_or_else(|| Error::invalid(what, "the buffer does not come from this resource"))?;
        if new_size <= a.mapped {
            buffer.set_size(new_size.max(buffer.size()));
            return Ok(());
        }
        if new_size > a.reserved {
            return Err(Error::out_of_range(
                what,
                format!("{new_size} bytes exceed the {} reserved", a.reserved),
            ));
        }
        let _current = self.device.ensure_current()?;
        let extra = new_size - a.mapped;
        let chunk = self.map_chunk(buffer.ptr() + a.mapped as u64, extra)?;
        a.chunks.push(chunk);
        a.mapped = new_size;
        buffer.set_size(new_size);
        Ok(())
    }
}

// SAFETY: allocations are device memory of `device`, mapped read-write for it;
// `deallocate` undoes exactly what `allocate_raw` made, found by address.
unsafe impl MemoryResource for VirtualMemoryResource {
    unsafe fn allocate_raw(&self, size: usize, _stream: &Stream) -> Result<sys::CUdeviceptr> {
        let _current = self.device.ensure_current()?;
        let size = self.round(size)?;
        let reserve = if self.options.reserve == 0 {
            size.saturating_mul(4)
        } else {
            self.round(self.options.reserve)?.max(size)
        };
        let mut base: sys::CUdeviceptr = 0;
        // SAFETY: `base` is valid for writes; no fixed address or alignment asked.
        unsafe { sys::cuMemAddressReserve(&mut base, reserve, 0, 0, 0) }
            .check(|| format!("reserving {reserve} bytes of address space"))?;
        match self.map_chunk(base, size) {
            Ok(chunk) => {
                let a = Allocation {
                    reserved: reserve,
                    chunks: vec![chunk],
                    mapped: size,
                };
                self.allocations
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(base, a);
                Ok(base)
            }
            Err(e) => {
                // SAFETY: the range reserved above, freed once.
                let _ = unsafe { sys::cuMemAddressFree(base, reserve) };
                Err(e)
            }
        }
    }

    unsafe fn deallocate(
        &self,
        ptr: sys::CUdeviceptr,
        _size: usize,
        stream: &Stream,
    ) -> Result<()> {
        let _ = stream.drain();
        let a = self
            .allocations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&ptr)
            .ok_or_else(|| Error::invalid("freeing a virtual allocation", "unknown address"))?;
        Self::free_allocation(ptr, a);
        Ok(())
    }

    fn kind(&self) -> MemoryKind {
        MemoryKind::Device
    }

    fn device(&self) -> Device {
        self.device
    }

    fn is_stream_ordered(&self) -> bool {
        false
    }
}

impl Drop for VirtualMemoryResource {
    fn drop(&mut self) {
        // Buffers hold an `Arc` of the resource, so none is left; free leftovers.
        let allocs = std::mem::take(
            self.allocations
                .get_mut()
                .unwrap_or_else(|e| e.into_inner()),
        );
        for (base, a) in allocs {
            Self::free_allocation(base, a);
        }
    }
}

crate::memory::owning_allocate!(
    unordered VirtualMemoryResource,
    "The size is rounded up to the granularity (see [`granularity`](Self::granularity))."
);
