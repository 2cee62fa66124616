//! Sharing a virtual memory allocation with another process (Unix): the
//! exporter's [`VirtualMemoryResource::ipc_descriptor`] makes a
//! [`VirtualMemoryIpcDescriptor`] (the buffer's size, the granularity, the handle
//! type and one shareable handle per physical chunk); the importer's
//! [`VirtualMemoryIpcDescriptor::import`] reserves an address range, imports each
//! chunk (`cuMemImportFromShareableHandle`), maps it (`cuMemMap`) and grants its
//! device access (`cuMemSetAccess`): one mapped [`Buffer`] that owns what it
//! imported.
//!
//! The descriptor travels in two parts. [`to_bytes`](VirtualMemoryIpcDescriptor::to_bytes)
//! is plain data (any channel will do). For
//! [`VirtualMemoryHandleType::Fabric`] the handles are in those bytes; for
//! [`VirtualMemoryHandleType::PosixFd`] they are file descriptors, which only the
//! kernel can carry to another process: send [`fds`](VirtualMemoryIpcDescriptor::fds)
//! over a Unix socket with `SCM_RIGHTS` (as the `ipc` example does, all of them
//! in one message with the bytes), let the child inherit them, or take them with `pidfd_getfd`, and
//! rebuild the descriptor with [`from_bytes`](VirtualMemoryIpcDescriptor::from_bytes)
//! and the received descriptors, in the same order.

use std::os::fd::{AsFd as _, AsRawFd as _, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex, PoisonError};

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::memory::resource::{Location, MemoryKind, MemoryResource};
use crate::memory::vmm::{Allocation, Chunk, VirtualMemoryResource, VmmStep, run_steps};
use crate::memory::vmm_options::{
    ExportedChunk, ShareableHandle, VirtualMemoryAccess, VirtualMemoryHandleType,
};
use crate::{device::Device, memory::buffer::Buffer, stream::Stream};

/// The first bytes of a serialized descriptor, with its format's version.
const MAGIC: &[u8; 8] = b"CRSVMM01";
/// Bytes of the header: magic, handle type, chunk count, size, granularity.
const HEADER: usize = 8 + 4 + 4 + 8 + 8;
/// Bytes per chunk besides a fabric handle: offset and size.
const CHUNK: usize = 16;

/// What another process needs to map one buffer of a [`VirtualMemoryResource`]
/// (`cuda.core`'s `VirtualMemoryBuffer.ipc_descriptor`): the buffer's size, the
/// allocation granularity, the handle type and each physical chunk's offset,
/// size and shareable handle, in address order. Made by
/// [`VirtualMemoryResource::ipc_descriptor`], sent as
/// [`to_bytes`](Self::to_bytes) plus, for POSIX descriptors, [`fds`](Self::fds),
/// rebuilt by [`from_bytes`](Self::from_bytes) and mapped by
/// [`import`](Self::import).
///
/// The bytes are plain data: any channel will do. Fabric handles
/// ([`VirtualMemoryHandleType::Fabric`]) are in them; POSIX file descriptors
/// ([`VirtualMemoryHandleType::PosixFd`]) are not, as only the kernel can carry
/// a descriptor to another process: send them over a Unix socket with
/// `SCM_RIGHTS` (as the `ipc` example does, one message for all of them), let a
/// child process inherit them, or take them with `pidfd_getfd`, and hand the
/// received ones to `from_bytes` in the same order.
///
/// It owns its POSIX descriptors: they close when it is dropped. The physical
/// memory stays alive while any process holds a mapping or an imported handle
/// of it, so the exporter may free its buffer once the importer has imported.
#[derive(Debug)]
pub struct VirtualMemoryIpcDescriptor {
    size: usize,
    granularity: usize,
    handle_type: VirtualMemoryHandleType,
    chunks: Vec<ExportedChunk>,
}

fn invalid(message: impl Into<String>) -> Error {
    Error::invalid("reading a virtual memory IPC descriptor", message.into())
}

/// Reads the little-endian integer of `N` bytes at `at`.
fn le<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[at..at + N]);
    out
}

impl VirtualMemoryIpcDescriptor {
    /// A descriptor of `chunks` (in address order, from offset 0, each a
    /// non-zero multiple of `granularity`) mapping `size` bytes.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero size or granularity, a chunk that
    /// is not where the previous one ends or not a multiple of the granularity,
    /// a handle of another type than `handle_type`, or chunks that together
    /// hold fewer than `size` bytes.
    fn new(
        size: usize,
        granularity: usize,
        handle_type: VirtualMemoryHandleType,
        chunks: Vec<ExportedChunk>,
    ) -> Result<Self> {
        if size == 0 {
            return Err(invalid("the size is zero"));
        }
        if granularity == 0 {
            return Err(invalid("the granularity is zero"));
        }
        let mut end = 0usize;
        for (i, c) in chunks.iter().enumerate() {
            if c.offset != end {
                return Err(invalid(format!(
                    "chunk {i} starts at {} where the previous one ends at {end}",
                    c.offset
                )));
            }
            if c.size == 0 || c.size % granularity != 0 {
                return Err(invalid(format!(
                    "chunk {i} holds {} bytes, not a non-zero multiple of the granularity {granularity}",
                    c.size
                )));
            }
            let kind_matches = matches!(
                (&c.handle, handle_type),
                (ShareableHandle::Fd(_), VirtualMemoryHandleType::PosixFd)
                    | (ShareableHandle::Fabric(_), VirtualMemoryHandleType::Fabric)
            );
            if !kind_matches {
                return Err(invalid(format!(
                    "chunk {i}'s handle is not of the descriptor's type {handle_type:?}"
                )));
            }
            end = end
                .checked_add(c.size)
                .ok_or_else(|| invalid("the chunks span more than the address space"))?;
        }
        if end < size {
            return Err(invalid(format!(
                "the chunks hold {end} bytes, fewer than the buffer's {size}"
            )));
        }
        Ok(Self {
            size,
            granularity,
            handle_type,
            chunks,
        })
    }

    /// The buffer's size in bytes (what [`import`](Self::import)'s buffer has).
    pub fn size(&self) -> usize {
        self.size
    }

    /// The allocation granularity of the exporting resource: the alignment of
    /// the range the importer reserves.
    pub fn granularity(&self) -> usize {
        self.granularity
    }

    /// The kind of the chunks' handles.
    pub fn handle_type(&self) -> VirtualMemoryHandleType {
        self.handle_type
    }

    /// The exported chunks, in address order.
    pub fn chunks(&self) -> &[ExportedChunk] {
        &self.chunks
    }

    /// The POSIX descriptors of the chunks, in chunk order: what must reach the
    /// other process beside [`to_bytes`](Self::to_bytes) (`SCM_RIGHTS`,
    /// inheritance or `pidfd_getfd`). Empty for fabric handles, which are in
    /// the bytes.
    pub fn fds(&self) -> Vec<BorrowedFd<'_>> {
        self.chunks
            .iter()
            .filter_map(|c| match &c.handle {
                ShareableHandle::Fd(fd) => Some(fd.as_fd()),
                ShareableHandle::Fabric(_) => None,
            })
            .collect()
    }

    /// The descriptor as plain bytes, little-endian: `CRSVMM01`, the handle
    /// type (1 POSIX descriptor, 8 fabric: the driver's values) and the chunk count as `u32`, the
    /// size and the granularity as `u64`, then per chunk its offset and size
    /// as `u64` and, for fabric handles, the 64 bytes of the handle. POSIX
    /// descriptors are not in the bytes: send [`fds`](Self::fds) with them.
    pub fn to_bytes(&self) -> Vec<u8> {
        let fabric = self.handle_type == VirtualMemoryHandleType::Fabric;
        let per = CHUNK + if fabric { 64 } else { 0 };
        let mut b = Vec::with_capacity(HEADER + per * self.chunks.len());
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&handle_code(self.handle_type).to_le_bytes());
        b.extend_from_slice(&(self.chunks.len() as u32).to_le_bytes());
        b.extend_from_slice(&(self.size as u64).to_le_bytes());
        b.extend_from_slice(&(self.granularity as u64).to_le_bytes());
        for c in &self.chunks {
            b.extend_from_slice(&(c.offset as u64).to_le_bytes());
            b.extend_from_slice(&(c.size as u64).to_le_bytes());
            if let ShareableHandle::Fabric(h) = &c.handle {
                b.extend_from_slice(h);
            }
        }
        b
    }

    /// The descriptor [`to_bytes`](Self::to_bytes) wrote, with the POSIX
    /// descriptors that came with it (one per chunk, in chunk order; none for
    /// fabric handles), which it takes over (they close when it is dropped, or
    /// here on an error).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for bytes that are not such a descriptor
    /// (another magic or length, an unknown handle type, sizes past this
    /// platform's, chunks that do not follow one another from offset 0 in
    /// granularity multiples, or hold fewer bytes than the size), or a number of
    /// descriptors other than the chunks'.
    pub fn from_bytes(bytes: &[u8], fds: Vec<OwnedFd>) -> Result<Self> {
        if bytes.len() < HEADER || &bytes[..8] != MAGIC {
            return Err(invalid(
                "the bytes do not start with a descriptor's header (`CRSVMM01`)",
            ));
        }
        let code = u32::from_le_bytes(le(bytes, 8));
        let handle_type =
            handle_of_code(code).ok_or_else(|| invalid(format!("unknown handle type {code}")))?;
        let count = u32::from_le_bytes(le(bytes, 12)) as usize;
        let usize_of = |v: u64, what: &str| {
            usize::try_from(v).map_err(|_| invalid(format!("the {what} {v} does not fit here")))
        };
        let size = usize_of(u64::from_le_bytes(le(bytes, 16)), "size")?;
        let granularity = usize_of(u64::from_le_bytes(le(bytes, 24)), "granularity")?;
        let fabric = handle_type == VirtualMemoryHandleType::Fabric;
        let per = CHUNK + if fabric { 64 } else { 0 };
        let expected = count
            .checked_mul(per)
            .and_then(|n| n.checked_add(HEADER))
            .ok_or_else(|| invalid(format!("{count} chunks do not fit in memory")))?;
        if bytes.len() != expected {
            return Err(invalid(format!(
                "{count} chunks take {expected} bytes, got {}",
                bytes.len()
            )));
        }
        let wanted_fds = if fabric { 0 } else { count };
        if fds.len() != wanted_fds {
            return Err(invalid(format!(
                "{count} chunks of {handle_type:?} handles come with {wanted_fds} descriptors, got {}",
                fds.len()
            )));
        }
        let mut fds = fds.into_iter();
        let mut chunks = Vec::with_capacity(count);
        for i in 0..count {
            let at = HEADER + i * per;
            let offset = usize_of(u64::from_le_bytes(le(bytes, at)), "chunk offset")?;
            let csize = usize_of(u64::from_le_bytes(le(bytes, at + 8)), "chunk size")?;
            let handle = if fabric {
                ShareableHandle::Fabric(le(bytes, at + CHUNK))
            } else {
                // Counted above: one per chunk.
                let fd = fds
                    .next()
                    .ok_or_else(|| invalid("fewer descriptors than chunks"))?;
                ShareableHandle::Fd(fd)
            };
            chunks.push(ExportedChunk {
                offset,
                size: csize,
                handle,
            });
        }
        Self::new(size, granularity, handle_type, chunks)
    }

    /// Maps the exported memory into this process (`cuda.core`'s
    /// `VirtualMemoryBuffer.from_ipc_descriptor`): reserves an address range
    /// aligned to the granularity, imports each chunk
    /// (`cuMemImportFromShareableHandle`), maps it in order (`cuMemMap`) and
    /// gives `device` read-write access to the whole range (`cuMemSetAccess`).
    /// The buffer owns the range, the mappings and the imported handles; its
    /// free stream is `stream`, which the free waits for before it unmaps
    /// (the resource is not stream-ordered, as [`VirtualMemoryResource`]'s).
    /// A failure partway undoes every step done so far (unmaps, releases, then
    /// frees the range); what cannot be undone now goes to the deferred-free
    /// queue (rule 6 of the soundness contract): nothing is left behind.
    ///
    /// Each import is a new mapping of its own, so importing one descriptor
    /// twice (or in the exporting process) gives buffers that alias the same
    /// memory at different addresses (rule 9 holds: each mapping has one
    /// owner; the memory is device memory, never lent to the host as a
    /// slice). A copy between two aliases overlaps, and its result is
    /// unspecified, as CUDA leaves overlapping copies. The memory is shared
    /// with the exporter: order the work of both sides (an IPC
    /// [`Event`](crate::Event)) before reading what the other wrote.
    ///
    /// `device` is the device, in this process's numbering, whose kernels and
    /// copies will use the buffer (any device that can reach the memory).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a stream of another device than
    /// `device`; [`Error::Unsupported`] when this platform has no such handles;
    /// the driver's error of the step that failed (importing, reserving,
    /// mapping or granting access), with what was done undone.
    pub fn import(&self, device: &Device, stream: &Stream) -> Result<Buffer> {
        let what = || {
            format!(
                "importing a virtual memory buffer on device {}",
                device.ordinal()
            )
        };
        if stream.device() != device {
            return Err(Error::other_device(
                what(),
                "the stream is on another device",
            ));
        }
        if let Some(why) = self.handle_type.unavailable_here() {
            return Err(Error::unsupported(what(), why));
        }
        let _current = device.ensure_current()?;
        let reserved = self.chunks.iter().map(|c| c.size).sum::<usize>();
        let access = [sys::CUmemAccessDesc {
            location: Location::Device(*device).raw(),
            flags: VirtualMemoryAccess::ReadWrite.raw(),
        }];
        let (base, allocation) = map_imported(*device, self, reserved, &access)?;
        let mr: Arc<dyn MemoryResource> = Arc::new(ImportedVirtualMemory {
            device: *device,
            base,
            allocation: Mutex::new(Some(allocation)),
        });
        Ok(Buffer::from_parts(
            base,
            self.size,
            MemoryKind::Device,
            *device,
            (mr, stream),
            true,
        ))
    }
}

/// The wire code of a handle type: the driver's `CUmemAllocationHandleType`
/// value (1 for a POSIX descriptor, 8 for a fabric handle).
fn handle_code(t: VirtualMemoryHandleType) -> u32 {
    t.raw().0
}

/// The handle type of a wire code, for the types a descriptor can hold.
fn handle_of_code(code: u32) -> Option<VirtualMemoryHandleType> {
    [
        VirtualMemoryHandleType::PosixFd,
        VirtualMemoryHandleType::Fabric,
    ]
    .into_iter()
    .find(|&t| handle_code(t) == code)
}

/// Imports one chunk's handle (`cuMemImportFromShareableHandle`).
fn import_chunk(
    handle: &ShareableHandle,
    handle_type: VirtualMemoryHandleType,
) -> Result<sys::CUmemGenericAllocationHandle> {
    let mut out: sys::CUmemGenericAllocationHandle = 0;
    let mut fabric: [u8; 64];
    let os_handle: *mut std::ffi::c_void = match handle {
        // A POSIX descriptor is passed by value, as an `int` in a pointer-sized slot.
        ShareableHandle::Fd(fd) => fd.as_raw_fd() as usize as *mut std::ffi::c_void,
        // A fabric handle is passed by address.
        ShareableHandle::Fabric(h) => {
            fabric = *h;
            fabric.as_mut_ptr().cast()
        }
    };
    // SAFETY: `out` is valid for writes; the descriptor stays open (or the
    // fabric handle's bytes live) for the call; the type matches the handle
    // (checked when the descriptor was made).
    unsafe { sys::cuMemImportFromShareableHandle(&mut out, os_handle, handle_type.raw()) }
        .check(|| "importing a physical allocation (cuMemImportFromShareableHandle)")?;
    Ok(out)
}

/// The steps that undo what an import has done: each mapped chunk unmapped and
/// released, each imported but unmapped handle released, then the range freed.
fn undo_steps(
    base: sys::CUdeviceptr,
    reserved: usize,
    mapped: &[Chunk],
    unmapped: &[sys::CUmemGenericAllocationHandle],
) -> Vec<VmmStep> {
    let mut steps = Vec::with_capacity(2 * mapped.len() + unmapped.len() + 1);
    let mut at = base;
    for c in mapped {
        steps.push(VmmStep::Unmap(at, c.size));
        steps.push(VmmStep::Release(c.handle));
        at += c.size as u64;
    }
    steps.extend(unmapped.iter().map(|&h| VmmStep::Release(h)));
    if reserved > 0 {
        steps.push(VmmStep::AddressFree(base, reserved));
    }
    steps
}

/// Undoes a failed import with `steps`; what fails now goes to the
/// deferred-free queue, retried until it succeeds (never leaked).
fn undo(device: Device, steps: Vec<VmmStep>) {
    let (left, r) = run_steps(steps);
    if let Err(e) = r {
        crate::memory::vmm::defer_steps(
            device,
            left,
            0,
            Some(crate::error::Report::new(&e).to_string()),
        );
    }
}

/// Imports, reserves, maps and grants `access`: the range's base and the
/// allocation that records it, or the first error with everything undone.
fn map_imported(
    device: Device,
    d: &VirtualMemoryIpcDescriptor,
    reserved: usize,
    access: &[sys::CUmemAccessDesc],
) -> Result<(sys::CUdeviceptr, Allocation)> {
    let mut handles = Vec::with_capacity(d.chunks.len());
    for c in &d.chunks {
        match import_chunk(&c.handle, d.handle_type) {
            Ok(h) => handles.push(h),
            Err(e) => {
                undo(device, undo_steps(0, 0, &[], &handles));
                return Err(e);
            }
        }
    }
    let mut base: sys::CUdeviceptr = 0;
    // SAFETY: `base` is valid for writes; the granularity is non-zero (checked
    // when the descriptor was made); no hint, no flags.
    let rc = unsafe { sys::cuMemAddressReserve(&mut base, reserved, d.granularity, 0, 0) };
    if let Err(e) = rc.check(|| format!("reserving {reserved} bytes of address space")) {
        undo(device, undo_steps(0, 0, &[], &handles));
        return Err(e);
    }
    let mut mapped: Vec<Chunk> = Vec::with_capacity(handles.len());
    let mut at = base;
    for (i, c) in d.chunks.iter().enumerate() {
        // SAFETY: `at..at+size` lies in the range reserved above, unmapped; the
        // handle was imported above.
        let rc = unsafe { sys::cuMemMap(at, c.size, 0, handles[i], 0) };
        if let Err(e) = rc.check(|| format!("mapping imported chunk {i} ({} bytes)", c.size)) {
            undo(device, undo_steps(base, reserved, &mapped, &handles[i..]));
            return Err(e);
        }
        mapped.push(Chunk {
            handle: handles[i],
            size: c.size,
        });
        at += c.size as u64;
    }
    if let Err(e) = crate::memory::vmm::set_access_raw(base, reserved, access) {
        undo(device, undo_steps(base, reserved, &mapped, &[]));
        return Err(e);
    }
    Ok((
        base,
        Allocation {
            reserved,
            chunks: mapped,
            mapped: reserved,
            access: access.to_vec(),
        },
    ))
}

/// The resource of an imported virtual memory buffer: it cannot allocate; its
/// free unmaps and releases the imported chunks and frees the range, after the
/// free stream's work.
struct ImportedVirtualMemory {
    device: Device,
    base: sys::CUdeviceptr,
    allocation: Mutex<Option<Allocation>>,
}

impl std::fmt::Debug for ImportedVirtualMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImportedVirtualMemory")
            .field("device", &self.device)
            .field("base", &format_args!("{:#x}", self.base))
            .finish()
    }
}

impl ImportedVirtualMemory {
    fn take(&self) -> Option<Allocation> {
        self.allocation
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

// SAFETY: `Allocation` holds plain driver values (handles, addresses, access
// descriptors without pointers); it is behind a mutex.
// Soundness contract: rule 11.
unsafe impl Send for ImportedVirtualMemory {}
// SAFETY: as above.
// Soundness contract: rule 11.
unsafe impl Sync for ImportedVirtualMemory {}

// SAFETY: the one range this resource mapped is device-reachable memory usable
// on `device` (granted read-write at import); `deallocate` waits for the free
// stream, then unmaps and releases exactly what the import made, once (the
// allocation is taken out).
// Soundness contract: rules 1, 2, 4 and 6.
unsafe impl MemoryResource for ImportedVirtualMemory {
    unsafe fn allocate_raw(&self, _size: usize, _stream: &Stream) -> Result<sys::CUdeviceptr> {
        Err(Error::unsupported(
            "allocating",
            "an imported virtual memory buffer's memory comes from the exporter",
        ))
    }

    unsafe fn deallocate(
        &self,
        ptr: sys::CUdeviceptr,
        _size: usize,
        stream: &Stream,
    ) -> Result<()> {
        let what = "freeing an imported virtual memory buffer";
        if ptr != self.base {
            return Err(Error::invalid(what, "unknown address"));
        }
        // Nothing is freed while the wait is refused for now (the free is retried).
        crate::stream::drain_before_free(stream)?;
        if let Some(a) = self.take() {
            VirtualMemoryResource::free_allocation(self.device, self.base, a);
        }
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

// Frees-are-never-lost rule (6): the buffer frees the import through
// `deallocate`; were it never called, what is left is freed (or deferred) here.
impl Drop for ImportedVirtualMemory {
    fn drop(&mut self) {
        if let Some(a) = self.take() {
            VirtualMemoryResource::free_allocation(self.device, self.base, a);
        }
    }
}

impl VirtualMemoryResource {
    /// The descriptor another process needs to map `buffer` (from this
    /// resource; `cuda.core`'s `VirtualMemoryBuffer.ipc_descriptor`): one
    /// shareable handle per physical chunk, exported now
    /// ([`export_handles`](Self::export_handles)), with the buffer's size and
    /// the granularity. See [`VirtualMemoryIpcDescriptor`] for how it travels.
    ///
    /// # Errors
    /// As [`export_handles`](Self::export_handles).
    pub fn ipc_descriptor(&self, buffer: &Buffer) -> Result<VirtualMemoryIpcDescriptor> {
        let chunks = self.export_handles(buffer)?;
        VirtualMemoryIpcDescriptor::new(
            buffer.size(),
            self.granularity,
            self.options.handle_type,
            chunks,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fd() -> OwnedFd {
        std::fs::File::open("/dev/null").map(OwnedFd::from).unwrap()
    }

    fn fabric(offsets: &[(usize, usize)]) -> Vec<ExportedChunk> {
        offsets
            .iter()
            .enumerate()
            .map(|(i, &(offset, size))| ExportedChunk {
                offset,
                size,
                handle: ShareableHandle::Fabric([i as u8; 64]),
            })
            .collect()
    }

    const G: usize = 2 << 20;

    #[test]
    fn fabric_descriptors_round_trip_as_bytes_alone() {
        let d = VirtualMemoryIpcDescriptor::new(
            3 * G - 5,
            G,
            VirtualMemoryHandleType::Fabric,
            fabric(&[(0, G), (G, 2 * G)]),
        )
        .unwrap();
        assert!(d.fds().is_empty());
        let b = d.to_bytes();
        assert_eq!(b.len(), HEADER + 2 * (CHUNK + 64));
        let back = VirtualMemoryIpcDescriptor::from_bytes(&b, Vec::new()).unwrap();
        assert_eq!((back.size(), back.granularity()), (3 * G - 5, G));
        assert_eq!(back.handle_type(), VirtualMemoryHandleType::Fabric);
        assert_eq!(u32::from_le_bytes(le(&b, 8)), 8, "the driver's value");
        let got: Vec<_> = back
            .chunks()
            .iter()
            .map(|c| match c.handle {
                ShareableHandle::Fabric(h) => (c.offset, c.size, h[0]),
                ShareableHandle::Fd(_) => panic!("a descriptor"),
            })
            .collect();
        assert_eq!(got, [(0, G, 0), (G, 2 * G, 1)]);
        assert_eq!(back.to_bytes(), b);
        // A fabric descriptor takes no file descriptors.
        let e = VirtualMemoryIpcDescriptor::from_bytes(&b, vec![fd()]).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    }

    #[test]
    fn posix_descriptors_travel_beside_the_bytes_one_per_chunk() {
        let chunks = vec![
            ExportedChunk {
                offset: 0,
                size: G,
                handle: ShareableHandle::Fd(fd()),
            },
            ExportedChunk {
                offset: G,
                size: G,
                handle: ShareableHandle::Fd(fd()),
            },
        ];
        let d = VirtualMemoryIpcDescriptor::new(2 * G, G, VirtualMemoryHandleType::PosixFd, chunks)
            .unwrap();
        assert_eq!(d.fds().len(), 2);
        let b = d.to_bytes();
        assert_eq!(b.len(), HEADER + 2 * CHUNK);
        for n in [0, 1, 3] {
            let fds = (0..n).map(|_| fd()).collect();
            let e = VirtualMemoryIpcDescriptor::from_bytes(&b, fds).unwrap_err();
            assert!(e.to_string().contains("descriptors"), "{e}");
        }
        let back = VirtualMemoryIpcDescriptor::from_bytes(&b, vec![fd(), fd()]).unwrap();
        assert_eq!(back.chunks().len(), 2);
        assert_eq!(back.to_bytes(), b);
    }

    #[test]
    fn malformed_descriptors_are_refused() {
        let h = VirtualMemoryHandleType::Fabric;
        let bad = |size, g, chunks: &[(usize, usize)]| {
            VirtualMemoryIpcDescriptor::new(size, g, h, fabric(chunks)).unwrap_err()
        };
        assert!(bad(0, G, &[(0, G)]).to_string().contains("size is zero"));
        assert!(bad(G, 0, &[(0, G)]).to_string().contains("granularity"));
        assert!(bad(G, G, &[(G, G)]).to_string().contains("starts at"));
        assert!(
            bad(G, G, &[(0, G), (2 * G, G)])
                .to_string()
                .contains("starts at")
        );
        assert!(bad(G, G, &[(0, G + 1)]).to_string().contains("multiple"));
        assert!(bad(G, G, &[(0, 0)]).to_string().contains("multiple"));
        assert!(bad(2 * G, G, &[(0, G)]).to_string().contains("fewer"));
        assert!(bad(G, G, &[]).to_string().contains("fewer"));
        let mixed = vec![ExportedChunk {
            offset: 0,
            size: G,
            handle: ShareableHandle::Fd(fd()),
        }];
        let e = VirtualMemoryIpcDescriptor::new(G, G, h, mixed).unwrap_err();
        assert!(e.to_string().contains("type"), "{e}");
        // Bytes: the header, the handle type, the length.
        let good = VirtualMemoryIpcDescriptor::new(G, G, h, fabric(&[(0, G)]))
            .unwrap()
            .to_bytes();
        for (cut, why) in [
            (&good[..HEADER - 1], "header"),
            (&good[..good.len() - 1], "take"),
        ] {
            let e = VirtualMemoryIpcDescriptor::from_bytes(cut, Vec::new()).unwrap_err();
            assert!(e.to_string().contains(why), "{e}");
        }
        let mut other = good.clone();
        other[8] = 2;
        let e = VirtualMemoryIpcDescriptor::from_bytes(&other, Vec::new()).unwrap_err();
        assert!(e.to_string().contains("unknown handle type"), "{e}");
        let mut magic = good.clone();
        magic[0] ^= 1;
        assert!(VirtualMemoryIpcDescriptor::from_bytes(&magic, Vec::new()).is_err());
        let mut huge = good;
        huge[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = VirtualMemoryIpcDescriptor::from_bytes(&huge, Vec::new()).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    }

    #[test]
    fn undoing_a_partial_import_unmaps_releases_then_frees_the_range() {
        let mapped = [
            Chunk {
                handle: 11,
                size: G,
            },
            Chunk {
                handle: 12,
                size: 2 * G,
            },
        ];
        let steps = undo_steps(0x1000_0000, 4 * G, &mapped, &[13]);
        let s = format!("{steps:?}");
        assert_eq!(
            s,
            format!(
                "[Unmap({}, {G}), Release(11), Unmap({}, {}), Release(12), Release(13), AddressFree({}, {})]",
                0x1000_0000u64,
                0x1000_0000u64 + G as u64,
                2 * G,
                0x1000_0000u64,
                4 * G
            )
        );
        // Before the range was reserved: only the imported handles.
        assert_eq!(
            format!("{:?}", undo_steps(0, 0, &[], &[7, 8])),
            "[Release(7), Release(8)]"
        );
    }
}
