//! Managed (unified) memory: [`ManagedMemoryResource`].

use cuda_bindings::driver as sys;

use crate::error::{Check as _, Result};
use crate::{Device, Stream};

use super::{Location, MemoryKind, MemoryResource, owning_allocate};

use super::mem_advise;

owning_allocate!(unordered ManagedMemoryResource);

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
                let _ = unsafe { sys::cuMemFree(p) };
                return Err(e);
            }
        }
        Ok(p)
    }

    unsafe fn deallocate(&self, ptr: sys::CUdeviceptr, size: usize, stream: &Stream) -> Result<()> {
        // Wait for work that may still use it, then free regardless.
        let _ = stream.drain();
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
        false
    }
}
