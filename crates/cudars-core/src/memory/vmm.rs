//! Virtual memory: reserve an address range, back it with physical chunks, and
//! grow, shrink or re-protect an allocation in place (`cuMemAddressReserve`,
//! `cuMemCreate`, `cuMemMap`, `cuMemSetAccess`, `cuMemUnmap`).

use std::collections::HashMap;
use std::sync::Mutex;

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::memory::resource::location_id;
use crate::memory::vmm_options::{
    ExportedChunk, ShareableHandle, VirtualMemoryAccess, VirtualMemoryAllocationType,
    VirtualMemoryHandleType, VirtualMemoryOptions,
};
use crate::{
    device::Device, memory::buffer::Buffer, memory::resource::Location,
    memory::resource::MemoryKind, memory::resource::MemoryResource, stream::Stream,
};

pub(crate) struct Chunk {
    pub(crate) handle: sys::CUmemGenericAllocationHandle,
    pub(crate) size: usize,
}

pub(crate) struct Allocation {
    pub(crate) reserved: usize,
    pub(crate) chunks: Vec<Chunk>,
    pub(crate) mapped: usize,
    /// The access the allocation's mappings have now ([`VirtualMemoryResource::set_access`]
    /// changes it); new chunks get the same.
    pub(crate) access: Vec<sys::CUmemAccessDesc>,
}

/// Memory from the virtual memory API: each allocation reserves an address range
/// and maps physical chunks into it. [`grow`](Self::grow) maps more chunks after
/// the existing ones, [`shrink`](Self::shrink) unmaps and releases the last ones,
/// and [`set_access`](Self::set_access) re-protects the mapping: a buffer keeps its
/// address and its data. [`VirtualMemoryOptions`] chooses the memory's location,
/// kind, exportable handle, alignment and who may access it.
///
/// Not stream-ordered: freeing and shrinking wait for the buffer's free stream.
pub struct VirtualMemoryResource {
    pub(crate) device: Device,
    pub(crate) options: VirtualMemoryOptions,
    pub(crate) prop: sys::CUmemAllocationProp,
    pub(crate) granularity: usize,
    pub(crate) align: usize,
    pub(crate) allocations: Mutex<HashMap<sys::CUdeviceptr, Allocation>>,
}

// SAFETY: `prop` holds plain values (its only pointer, the Windows handle
// metadata, is always null); the allocations are behind a mutex.
// Soundness contract: rule 11.
unsafe impl Send for VirtualMemoryResource {}
// SAFETY: as above.
// Soundness contract: rule 11.
unsafe impl Sync for VirtualMemoryResource {}

impl std::fmt::Debug for VirtualMemoryResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VirtualMemoryResource")
            .field("device", &self.device)
            .field("granularity", &self.granularity)
            .field("options", &self.options)
            .finish()
    }
}

/// The physical memory `options` asks for, on `device` (`cuMemCreate`'s
/// properties).
pub(crate) fn allocation_prop(
    device: &Device,
    options: &VirtualMemoryOptions,
) -> sys::CUmemAllocationProp {
    let mut p = sys::CUmemAllocationProp {
        type_: match options.allocation_type {
            VirtualMemoryAllocationType::Pinned => sys::CU_MEM_ALLOCATION_TYPE_PINNED,
            VirtualMemoryAllocationType::Managed => sys::CU_MEM_ALLOCATION_TYPE_MANAGED,
        },
        requestedHandleTypes: options.handle_type.raw(),
        location: options.location.raw(device),
        ..Default::default()
    };
    p.allocFlags.gpuDirectRDMACapable = u8::from(options.gpu_direct_rdma);
    p
}

/// The access descriptors of `options` for memory of `device`: the device's own
/// (unless [`VirtualMemoryAccess::None`]), then each peer once.
pub(crate) fn access_descs(
    device: &Device,
    options: &VirtualMemoryOptions,
) -> Vec<sys::CUmemAccessDesc> {
    let mut out: Vec<sys::CUmemAccessDesc> = Vec::new();
    let mut add = |d: Device, access: VirtualMemoryAccess| {
        let id = d.ordinal() as i32;
        if access != VirtualMemoryAccess::None
            && !out.iter().any(|a| location_id(&a.location) == id)
        {
            out.push(sys::CUmemAccessDesc {
                location: Location::Device(d).raw(),
                flags: access.raw(),
            });
        }
    };
    add(*device, options.self_access);
    for p in options.peer_access.iter().filter(|p| *p != device) {
        add(*p, options.peer_access_flags);
    }
    out
}

/// The checks of `options` that need no device: alignment and hint against
/// `granularity`, and the handle type against this platform.
pub(crate) fn check_options(options: &VirtualMemoryOptions, granularity: usize) -> Result<()> {
    let what = "creating a virtual memory resource";
    let align = options.addr_align;
    if align != 0 && (!align.is_power_of_two() || align % granularity != 0) {
        return Err(Error::invalid(
            what,
            format!(
                "the address alignment {align} is not a power of two that is a multiple of the granularity {granularity}"
            ),
        ));
    }
    if options.addr_hint % granularity as u64 != 0 {
        return Err(Error::invalid(
            what,
            format!(
                "the address hint {:#x} is not a multiple of the granularity {granularity}",
                options.addr_hint
            ),
        ));
    }
    if let Some(why) = options.handle_type.unavailable_here() {
        return Err(Error::unsupported(what, why));
    }
    Ok(())
}

/// Unmaps and releases `chunks`, the first mapped at `at`, in order; all of
/// them, whatever fails, and reports the first failure.
pub(crate) fn unmap_chunks(
    mut at: sys::CUdeviceptr,
    chunks: impl IntoIterator<Item = Chunk>,
) -> Result<()> {
    let mut first = Ok(());
    for c in chunks {
        // SAFETY: each chunk was mapped at `at`, in order; unmapped and released once.
        let (unmapped, released) =
            unsafe { (sys::cuMemUnmap(at, c.size), sys::cuMemRelease(c.handle)) };
        if first.is_ok() {
            first = unmapped
                .check(|| "unmapping virtual memory")
                .and_then(|()| released.check(|| "releasing physical memory"));
        }
        at += c.size as u64;
    }
    first
}

/// One step of freeing a virtual allocation.
#[derive(Debug, Clone, Copy)]
pub(crate) enum VmmStep {
    Unmap(sys::CUdeviceptr, usize),
    Release(sys::CUmemGenericAllocationHandle),
    AddressFree(sys::CUdeviceptr, usize),
}

/// Runs `steps` in order; returns those that failed, and the range's free while
/// a mapping in it is left (empty when all are done), with the first error.
pub(crate) fn run_steps(steps: Vec<VmmStep>) -> (Vec<VmmStep>, Result<()>) {
    let mut left = Vec::new();
    let mut first = None;
    for step in steps {
        let rc = match step {
            VmmStep::AddressFree(..) if left.iter().any(|s| matches!(s, VmmStep::Unmap(..))) => {
                left.push(step);
                continue;
            }
            // SAFETY: a chunk this allocation mapped there, unmapped once (a failed
            // unmap unmapped nothing, and is retried alone).
            VmmStep::Unmap(at, size) => unsafe { sys::cuMemUnmap(at, size) },
            // SAFETY: the chunk's physical memory, released once.
            VmmStep::Release(h) => unsafe { sys::cuMemRelease(h) },
            // SAFETY: the range this allocation reserved, freed once, with no
            // mapping left in it.
            VmmStep::AddressFree(base, size) => unsafe { sys::cuMemAddressFree(base, size) },
        };
        if let Err(e) = rc.check(|| format!("freeing virtual memory ({step:?})")) {
            first.get_or_insert(e);
            left.push(step);
        }
    }
    let r = match first {
        None if left.is_empty() => Ok(()),
        None => Err(Error::invalid(
            "freeing virtual memory",
            "a mapping is left",
        )),
        Some(e) => Err(e),
    };
    (left, r)
}

/// Queues the steps left of freeing a virtual allocation of `bytes` bytes of
/// `device`, retried with its context current (the drain runs on any thread).
pub(crate) fn defer_steps(
    device: Device,
    steps: Vec<VmmStep>,
    bytes: usize,
    first_error: Option<String>,
) {
    let mut left = steps;
    crate::deferred::defer("freeing virtual memory", bytes, first_error, move || {
        let _current = device.ensure_current()?;
        let (rest, r) = run_steps(std::mem::take(&mut left));
        left = rest;
        r
    });
}

impl VirtualMemoryResource {
    /// A resource on `device`, with `options` checked first.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an address alignment that is not a power of
    /// two multiple of the granularity, or a hint that is not a multiple of it;
    /// [`Error::Unsupported`] when the device has no virtual memory management,
    /// no host-located virtual memory (for a host location), no GPUDirect RDMA
    /// with virtual memory (for `gpu_direct_rdma`), cannot export the handle type
    /// (or the platform has no such handles), or the driver is older than CUDA 13
    /// for managed memory; the driver's error (for a location it does not take).
    pub fn new(device: &Device, options: VirtualMemoryOptions) -> Result<Self> {
        let what = || {
            format!(
                "creating a virtual memory resource on device {}",
                device.ordinal()
            )
        };
        let _current = device.ensure_current()?;
        let needs = |attr: sys::CUdevice_attribute, why: &str| -> Result<()> {
            if device.attribute(attr)? == 0 {
                return Err(Error::unsupported(what(), why));
            }
            Ok(())
        };
        needs(
            sys::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
            "the device does not support virtual memory management",
        )?;
        if options.location.is_host() {
            needs(
                sys::CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                "the device does not support host-located virtual memory",
            )?;
        }
        if options.gpu_direct_rdma {
            needs(
                sys::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
                "the device does not support GPUDirect RDMA with virtual memory",
            )?;
        }
        if let Some(why) = options.handle_type.unavailable_here() {
            return Err(Error::unsupported(what(), why));
        }
        if let Some(attr) = options.handle_type.attribute() {
            needs(
                attr,
                "the device cannot export virtual memory with this handle type",
            )?;
        }
        if options.allocation_type == VirtualMemoryAllocationType::Managed {
            crate::versions::require_driver(13000, "managed virtual memory", what)?;
        }
        let prop = allocation_prop(device, &options);
        let mut granularity = 0usize;
        // SAFETY: `prop` is fully initialised; `granularity` is valid for writes.
        unsafe {
            sys::cuMemGetAllocationGranularity(&mut granularity, &prop, options.granularity.raw())
        }
        .check(|| format!("{}: reading the allocation granularity", what()))?;
        if granularity == 0 {
            return Err(Error::unsupported(
                what(),
                "the driver reported granularity 0",
            ));
        }
        check_options(&options, granularity)?;
        let align = if options.addr_align == 0 {
            granularity
        } else {
            options.addr_align
        };
        Ok(Self {
            device: *device,
            options,
            prop,
            granularity,
            align,
            allocations: Mutex::new(HashMap::new()),
        })
    }

    /// The granularity sizes are rounded up to.
    pub fn granularity(&self) -> usize {
        self.granularity
    }

    /// The options the resource was made with.
    pub fn options(&self) -> &VirtualMemoryOptions {
        &self.options
    }

    pub(crate) fn round(&self, size: usize, what: &'static str) -> Result<usize> {
        if size == 0 {
            return Err(Error::zero_size(what));
        }
        size.checked_next_multiple_of(self.granularity)
            .ok_or_else(|| Error::invalid(what, "the size is too large"))
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<sys::CUdeviceptr, Allocation>> {
        self.allocations
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Creates a physical chunk and maps it at `at`, with `access`. Releases what
    /// it made on failure.
    pub(crate) fn map_chunk(
        &self,
        at: sys::CUdeviceptr,
        size: usize,
        access: &[sys::CUmemAccessDesc],
    ) -> Result<Chunk> {
        let mut handle: sys::CUmemGenericAllocationHandle = 0;
        // SAFETY: `prop` was checked by `cuMemGetAllocationGranularity`; `size` is
        // a granularity multiple.
        unsafe { sys::cuMemCreate(&mut handle, size, &self.prop, 0) }
            .check(|| format!("creating {size} bytes of physical memory"))?;
        let release = |h| {
            // SAFETY: a handle from `cuMemCreate`, released once.
            let rc = unsafe { sys::cuMemRelease(h) };
            crate::cleanup::driver(rc, "releasing a physical allocation (cuMemRelease)");
        };
        // SAFETY: `at..at+size` lies in a range this resource reserved and left unmapped.
        let mapped = unsafe { sys::cuMemMap(at, size, 0, handle, 0) };
        if let Err(e) = mapped.check(|| "mapping physical memory") {
            release(handle);
            return Err(e);
        }
        if let Err(e) = set_access_raw(at, size, access) {
            // SAFETY: undoes the mapping above.
            let rc = unsafe { sys::cuMemUnmap(at, size) };
            crate::cleanup::driver(rc, "unmapping virtual memory (cuMemUnmap)");
            release(handle);
            return Err(e);
        }
        Ok(Chunk { handle, size })
    }

    /// Unmaps and releases an allocation's chunks and frees its range. The steps
    /// that fail (and all of them on a driver callback thread, where no CUDA call
    /// is made) go to the deferred-free queue, retried until they succeed: freed
    /// or queued, never leaked (the deferred-free rule).
    pub(crate) fn free_allocation(device: Device, base: sys::CUdeviceptr, a: Allocation) {
        let mut steps = Vec::with_capacity(2 * a.chunks.len() + 1);
        let mut at = base;
        for c in &a.chunks {
            steps.push(VmmStep::Unmap(at, c.size));
            steps.push(VmmStep::Release(c.handle));
            at += c.size as u64;
        }
        steps.push(VmmStep::AddressFree(base, a.reserved));
        let bytes = a.mapped;
        if crate::deferred::must_defer() {
            defer_steps(device, steps, bytes, None);
            return;
        }
        let (left, r) = run_steps(steps);
        if let Err(e) = r {
            defer_steps(
                device,
                left,
                bytes,
                Some(crate::error::Report::new(&e).to_string()),
            );
        }
    }

    /// Grows `buffer` (from this resource) to at least `new_size` bytes, in place:
    /// its address and its contents stay, and the new part gets the access the
    /// buffer has now. Growing past the reserved range is an error (reserve more
    /// with [`VirtualMemoryOptions::reserve`]). A size the buffer already has
    /// changes nothing.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a buffer of another resource, a zero size, a
    /// size smaller than the buffer's ([`shrink`](Self::shrink) that), or a size
    /// beyond the reservation; the driver's error.
    pub fn grow(&self, buffer: &mut Buffer, new_size: usize) -> Result<()> {
        let what = "growing a virtual allocation";
        let new_size = self.round(new_size, what)?;
        if new_size < buffer.size() {
            return Err(Error::invalid(
                what,
                format!(
                    "{new_size} bytes is less than the buffer's {} (shrink it instead)",
                    buffer.size()
                ),
            ));
        }
        let mut allocs = self.lock();
        let a = find(&mut allocs, buffer, what)?;
        if new_size <= a.mapped {
            buffer.set_size(new_size);
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
        let chunk = self.map_chunk(buffer.ptr() + a.mapped as u64, extra, &a.access)?;
        a.chunks.push(chunk);
        a.mapped = new_size;
        buffer.set_size(new_size);
        Ok(())
    }

    /// Shrinks `buffer` (from this resource) to `new_size` bytes (rounded up to
    /// the granularity), in place: its address and the contents it keeps stay.
    /// The physical chunks wholly past the new size are unmapped and released
    /// (chunks are what the allocation and each [`grow`](Self::grow) mapped; a
    /// chunk the new end falls inside stays mapped whole until the buffer is
    /// freed or shrunk below it); the address range stays reserved, so the buffer
    /// can grow again. Waits first for the buffer's free stream, so work ordered
    /// there is done with the tail.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a buffer of another resource, a zero size or
    /// a size larger than the buffer's; the stream's error; the driver's error
    /// from unmapping (the buffer is shrunk all the same).
    pub fn shrink(&self, buffer: &mut Buffer, new_size: usize) -> Result<()> {
        let what = "shrinking a virtual allocation";
        let new_size = self.round(new_size, what)?;
        if new_size > buffer.size() {
            return Err(Error::invalid(
                what,
                format!(
                    "{new_size} bytes is more than the buffer's {} (grow it instead)",
                    buffer.size()
                ),
            ));
        }
        let mut allocs = self.lock();
        let a = find(&mut allocs, buffer, what)?;
        // The chunks to keep: those that start before the new end.
        let mut keep = 0;
        let mut kept_bytes = 0;
        for c in &a.chunks {
            if kept_bytes >= new_size {
                break;
            }
            kept_bytes += c.size;
            keep += 1;
        }
        if keep < a.chunks.len() {
            if let Some(s) = buffer.free_stream() {
                s.drain()?;
            }
            let _current = self.device.ensure_current()?;
            let tail = a.chunks.split_off(keep);
            let unmapped = unmap_chunks(buffer.ptr() + kept_bytes as u64, tail);
            a.mapped = kept_bytes;
            buffer.set_size(new_size);
            return unmapped;
        }
        buffer.set_size(new_size);
        Ok(())
    }

    /// Grows `buffer` to `new_size` bytes, in place (`cuda.core`'s
    /// `modify_allocation`): [`grow`](Self::grow) for a larger size; a size the
    /// buffer has, or a smaller one, leaves it as it is, as in `cuda.core`
    /// ([`shrink`](Self::shrink) gives memory back).
    ///
    /// # Errors
    /// As [`grow`](Self::grow).
    pub fn modify_allocation(&self, buffer: &mut Buffer, new_size: usize) -> Result<()> {
        if new_size <= buffer.size() {
            return Ok(());
        }
        self.grow(buffer, new_size)
    }

    /// Re-protects `buffer` (from this resource): each device in `access` gets
    /// that access to all of the buffer's memory (`cuMemSetAccess`); devices not
    /// listed keep theirs. Later growth gets the same access. A device with
    /// [`VirtualMemoryAccess::Read`] that writes the memory faults, which leaves
    /// its context unusable.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a buffer of another resource or a device
    /// listed twice; the driver's error (`CUDA_ERROR_INVALID_DEVICE` for a device
    /// that cannot reach the memory).
    pub fn set_access(
        &self,
        buffer: &Buffer,
        access: &[(Device, VirtualMemoryAccess)],
    ) -> Result<()> {
        let what = "setting the access to a virtual allocation";
        for (i, (d, _)) in access.iter().enumerate() {
            if access[..i].iter().any(|(e, _)| e == d) {
                return Err(Error::invalid(
                    what,
                    format!("device {} is listed twice", d.ordinal()),
                ));
            }
        }
        let mut allocs = self.lock();
        let a = find(&mut allocs, buffer, what)?;
        let descs: Vec<sys::CUmemAccessDesc> = access
            .iter()
            .map(|(d, flags)| sys::CUmemAccessDesc {
                location: Location::Device(*d).raw(),
                flags: flags.raw(),
            })
            .collect();
        let _current = self.device.ensure_current()?;
        set_access_raw(buffer.ptr(), a.mapped, &descs)?;
        for d in descs {
            a.access
                .retain(|x| location_id(&x.location) != location_id(&d.location));
            if d.flags != sys::CU_MEM_ACCESS_FLAGS_PROT_NONE {
                a.access.push(d);
            }
        }
        Ok(())
    }

    /// The access `device` has to `buffer` (from this resource) now
    /// (`cuMemGetAccess`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a buffer of another resource; the driver's
    /// error.
    pub fn access(&self, buffer: &Buffer, device: &Device) -> Result<VirtualMemoryAccess> {
        find(
            &mut self.lock(),
            buffer,
            "reading the access to a virtual allocation",
        )?;
        let mut flags: u64 = 0;
        let loc = Location::Device(*device).raw();
        // SAFETY: `flags` is valid for writes; the buffer's start is mapped.
        unsafe { sys::cuMemGetAccess(&mut flags, &loc, buffer.ptr()) }.check(|| {
            format!(
                "reading the access of device {} to a virtual allocation",
                device.ordinal()
            )
        })?;
        Ok(match flags {
            f if f == u64::from(sys::CU_MEM_ACCESS_FLAGS_PROT_READWRITE.0) => {
                VirtualMemoryAccess::ReadWrite
            }
            f if f == u64::from(sys::CU_MEM_ACCESS_FLAGS_PROT_READ.0) => VirtualMemoryAccess::Read,
            _ => VirtualMemoryAccess::None,
        })
    }

    /// The bytes of physical memory mapped for `buffer` (from this resource): at
    /// least its size (see [`shrink`](Self::shrink)).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a buffer of another resource.
    pub fn mapped_size(&self, buffer: &Buffer) -> Result<usize> {
        let what = "reading a virtual allocation's mapped size";
        find(&mut self.lock(), buffer, what).map(|a| a.mapped)
    }

    /// Exports the physical memory of `buffer` (from this resource) as shareable
    /// handles (`cuMemExportToShareableHandle`), one per chunk, in address order,
    /// for another process to import (`cuMemImportFromShareableHandle`) and map.
    ///
    /// # Errors
    /// [`Error::Unsupported`] unless the resource was made with a
    /// [`handle_type`](VirtualMemoryOptions::handle_type) this crate exports
    /// ([`PosixFd`](VirtualMemoryHandleType::PosixFd) on Unix,
    /// [`Fabric`](VirtualMemoryHandleType::Fabric));
    /// [`Error::InvalidArgument`] for a buffer of another resource; the driver's
    /// error.
    pub fn export_handles(&self, buffer: &Buffer) -> Result<Vec<ExportedChunk>> {
        let what = "exporting a virtual allocation";
        let handle_type = self.options.handle_type;
        if matches!(
            handle_type,
            VirtualMemoryHandleType::None | VirtualMemoryHandleType::Win32Kmt
        ) {
            return Err(Error::unsupported(
                what,
                format!(
                    "the resource's handle type is {handle_type:?} (use `PosixFd` or `Fabric`)"
                ),
            ));
        }
        let mut allocs = self.lock();
        let a = find(&mut allocs, buffer, what)?;
        let mut out = Vec::with_capacity(a.chunks.len());
        let mut offset = 0;
        for c in &a.chunks {
            let handle = export_chunk(c.handle, handle_type)?;
            out.push(ExportedChunk {
                offset,
                size: c.size,
                handle,
            });
            offset += c.size;
        }
        Ok(out)
    }
}

/// The allocation of `buffer` among `allocs`, or an error saying `buffer` is
/// another resource's.
pub(crate) fn find<'a>(
    allocs: &'a mut HashMap<sys::CUdeviceptr, Allocation>,
    buffer: &Buffer,
    what: &'static str,
) -> Result<&'a mut Allocation> {
    allocs
        .get_mut(&buffer.ptr())
        .ok_or_else(|| Error::invalid(what, "the buffer does not come from this resource"))
}

/// `cuMemSetAccess` of `descs` over `size` mapped bytes at `at` (nothing for none).
pub(crate) fn set_access_raw(
    at: sys::CUdeviceptr,
    size: usize,
    descs: &[sys::CUmemAccessDesc],
) -> Result<()> {
    if descs.is_empty() {
        return Ok(());
    }
    // SAFETY: the range is mapped; `descs` holds `len` descriptors.
    unsafe { sys::cuMemSetAccess(at, size, descs.as_ptr(), descs.len()) }
        .check(|| "setting the access to virtual memory")
}

/// One chunk's shareable handle of `handle_type` (a POSIX descriptor or a fabric
/// handle).
pub(crate) fn export_chunk(
    chunk: sys::CUmemGenericAllocationHandle,
    handle_type: VirtualMemoryHandleType,
) -> Result<ShareableHandle> {
    let what = "exporting a virtual allocation's physical memory";
    match handle_type {
        #[cfg(unix)]
        VirtualMemoryHandleType::PosixFd => {
            let mut fd: std::ffi::c_int = -1;
            // SAFETY: the POSIX descriptor type writes an `int`; a live chunk.
            unsafe {
                sys::cuMemExportToShareableHandle((&raw mut fd).cast(), chunk, handle_type.raw(), 0)
            }
            .check(|| what)?;
            crate::memory::fd::owned_fd(fd, what).map(ShareableHandle::Fd)
        }
        VirtualMemoryHandleType::Fabric => {
            let mut h = sys::CUmemFabricHandle::default();
            // SAFETY: the fabric type writes a `CUmemFabricHandle`; a live chunk.
            unsafe {
                sys::cuMemExportToShareableHandle((&raw mut h).cast(), chunk, handle_type.raw(), 0)
            }
            .check(|| what)?;
            Ok(ShareableHandle::Fabric(h.data))
        }
        other => Err(Error::unsupported(
            what,
            format!("handles of type {other:?} are not exported by this crate"),
        )),
    }
}

// SAFETY: allocations are memory of the resource's location, mapped with the
// options' access for `device`; `deallocate` undoes exactly what `allocate_raw`
// made, found by address.
// Soundness contract: rules 1, 2 and 4 (frees wait for the free stream).
unsafe impl MemoryResource for VirtualMemoryResource {
    unsafe fn allocate_raw(&self, size: usize, _stream: &Stream) -> Result<sys::CUdeviceptr> {
        let what = "allocating virtual memory";
        let _current = self.device.ensure_current()?;
        let size = self.round(size, what)?;
        let reserve = if self.options.reserve == 0 {
            size.saturating_mul(4)
        } else {
            self.round(self.options.reserve, what)?.max(size)
        };
        let mut base: sys::CUdeviceptr = 0;
        // SAFETY: `base` is valid for writes; the alignment is a power of two and
        // the hint a granularity multiple (checked in `new`).
        unsafe {
            sys::cuMemAddressReserve(&mut base, reserve, self.align, self.options.addr_hint, 0)
        }
        .check(|| format!("reserving {reserve} bytes of address space"))?;
        let access = access_descs(&self.device, &self.options);
        match self.map_chunk(base, size, &access) {
            Ok(chunk) => {
                let a = Allocation {
                    reserved: reserve,
                    chunks: vec![chunk],
                    mapped: size,
                    access,
                };
                self.lock().insert(base, a);
                Ok(base)
            }
            Err(e) => {
                // SAFETY: the range reserved above, freed once.
                let rc = unsafe { sys::cuMemAddressFree(base, reserve) };
                crate::cleanup::driver(rc, "freeing a virtual address range (cuMemAddressFree)");
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
        // Nothing is freed while the wait is refused for now (the free is retried).
        crate::stream::drain_before_free(stream)?;
        let a = self
            .lock()
            .remove(&ptr)
            .ok_or_else(|| Error::invalid("freeing a virtual allocation", "unknown address"))?;
        Self::free_allocation(self.device, ptr, a);
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
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for (base, a) in allocs {
            Self::free_allocation(self.device, base, a);
        }
    }
}

crate::memory::allocate::owning_allocate!(
    unordered VirtualMemoryResource,
    "The size is rounded up to the granularity (see [`granularity`](Self::granularity))."
);

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::memory::vmm_options::*;

    fn opts() -> VirtualMemoryOptions {
        VirtualMemoryOptions::default()
    }

    #[test]
    fn alignment_must_be_a_power_of_two_multiple_of_the_granularity() {
        let g = 2 << 20;
        for ok in [0, g, 2 * g, 64 * g] {
            let o = VirtualMemoryOptions {
                addr_align: ok,
                ..opts()
            };
            assert!(check_options(&o, g).is_ok(), "{ok}");
        }
        for bad in [g / 2, 3 * g, g + 1, 4096] {
            let o = VirtualMemoryOptions {
                addr_align: bad,
                ..opts()
            };
            match check_options(&o, g) {
                Err(Error::InvalidArgument { message, .. }) => {
                    assert!(message.contains("alignment"), "{message}")
                }
                other => panic!("alignment {bad} was not refused: {other:?}"),
            }
        }
    }

    #[test]
    fn the_hint_must_be_a_multiple_of_the_granularity() {
        let g = 2 << 20;
        let at = |addr_hint| VirtualMemoryOptions {
            addr_hint,
            ..opts()
        };
        assert!(check_options(&at(0), g).is_ok());
        assert!(check_options(&at(0x7f00_0000_0000), g).is_ok());
        assert!(matches!(
            check_options(&at(0x7f00_0000_1000), g),
            Err(Error::InvalidArgument { .. })
        ));
    }

    #[test]
    fn handle_types_of_other_platforms_are_refused_before_the_driver() {
        let with = |handle_type| VirtualMemoryOptions {
            handle_type,
            ..opts()
        };
        let g = 2 << 20;
        assert!(check_options(&with(VirtualMemoryHandleType::None), g).is_ok());
        let posix = check_options(&with(VirtualMemoryHandleType::PosixFd), g);
        let win = check_options(&with(VirtualMemoryHandleType::Win32Kmt), g);
        assert_eq!(posix.is_ok(), cfg!(unix), "{posix:?}");
        assert_eq!(win.is_ok(), cfg!(windows), "{win:?}");
        for e in [posix, win].into_iter().filter_map(Result::err) {
            assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
        }
    }

    #[test]
    fn options_map_to_the_drivers_properties() {
        let d = Device::for_tests(3);
        let p = allocation_prop(&d, &opts());
        assert_eq!(p.type_, sys::CU_MEM_ALLOCATION_TYPE_PINNED);
        assert_eq!(p.requestedHandleTypes, sys::CU_MEM_HANDLE_TYPE_NONE);
        assert_eq!(
            (p.location.type_, location_id(&p.location)),
            (sys::CU_MEM_LOCATION_TYPE_DEVICE, 3)
        );
        assert_eq!(p.allocFlags.gpuDirectRDMACapable, 0);
        assert!(p.win32HandleMetaData.is_null());
        let p = allocation_prop(
            &d,
            &VirtualMemoryOptions {
                allocation_type: VirtualMemoryAllocationType::Managed,
                handle_type: VirtualMemoryHandleType::Fabric,
                location: VirtualMemoryLocation::HostNuma(1),
                gpu_direct_rdma: true,
                ..opts()
            },
        );
        assert_eq!(p.type_, sys::CU_MEM_ALLOCATION_TYPE_MANAGED);
        assert_eq!(p.requestedHandleTypes, sys::CU_MEM_HANDLE_TYPE_FABRIC);
        assert_eq!(
            (p.location.type_, location_id(&p.location)),
            (sys::CU_MEM_LOCATION_TYPE_HOST_NUMA, 1)
        );
        assert_eq!(p.allocFlags.gpuDirectRDMACapable, 1);
        for (loc, t) in [
            (VirtualMemoryLocation::Host, sys::CU_MEM_LOCATION_TYPE_HOST),
            (
                VirtualMemoryLocation::HostNumaCurrent,
                sys::CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT,
            ),
        ] {
            assert_eq!(loc.raw(&d).type_, t);
            assert!(loc.is_host());
        }
        assert_eq!(
            VirtualMemoryHandleType::PosixFd.raw(),
            sys::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        );
        assert_eq!(
            VirtualMemoryHandleType::Win32Kmt.raw(),
            sys::CU_MEM_HANDLE_TYPE_WIN32_KMT
        );
    }

    #[test]
    fn access_lists_the_device_then_each_peer_once() {
        let d0 = Device::for_tests(0);
        let d1 = Device::for_tests(1);
        let d2 = Device::for_tests(2);
        let ids = |v: &[sys::CUmemAccessDesc]| -> Vec<(i32, sys::CUmemAccess_flags)> {
            v.iter()
                .map(|a| (location_id(&a.location), a.flags))
                .collect()
        };
        let rw = sys::CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        let r = sys::CU_MEM_ACCESS_FLAGS_PROT_READ;
        assert_eq!(ids(&access_descs(&d0, &opts())), [(0, rw)]);
        let o = VirtualMemoryOptions {
            peer_access: vec![d1, d0, d2, d1],
            peer_access_flags: VirtualMemoryAccess::Read,
            self_access: VirtualMemoryAccess::ReadWrite,
            ..opts()
        };
        assert_eq!(ids(&access_descs(&d0, &o)), [(0, rw), (1, r), (2, r)]);
        // No access for the device itself: only the peers are mapped.
        let o = VirtualMemoryOptions {
            peer_access: vec![d1],
            self_access: VirtualMemoryAccess::None,
            ..opts()
        };
        assert_eq!(ids(&access_descs(&d0, &o)), [(1, rw)]);
        let none = VirtualMemoryOptions {
            self_access: VirtualMemoryAccess::None,
            ..opts()
        };
        assert!(access_descs(&d0, &none).is_empty());
        assert_eq!(
            VirtualMemoryAccess::None.raw(),
            sys::CU_MEM_ACCESS_FLAGS_PROT_NONE
        );
        assert_eq!(VirtualMemoryAccess::Read.raw(), r);
    }
}
