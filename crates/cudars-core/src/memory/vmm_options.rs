//! What a [`VirtualMemoryResource`](crate::VirtualMemoryResource) is made from
//! and hands out: granularity, access, location, allocation and handle types,
//! the options, and exported chunks with their shareable handles.

use crate::{device::Device, memory::resource::Location};
use cudars_bindings::driver as sys;

/// Which granularity allocations are rounded to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Granularity {
    /// The driver's recommended granularity (the default; usually 2 MiB).
    #[default]
    Recommended,
    /// The smallest the driver accepts.
    Minimum,
}

impl Granularity {
    pub(crate) fn raw(self) -> sys::CUmemAllocationGranularity_flags {
        match self {
            Self::Recommended => sys::CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
            Self::Minimum => sys::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
        }
    }
}

/// How a device may touch virtual memory (`CUmemAccess_flags`; `cuda.core`'s
/// `VirtualMemoryAccessType`: `"rw"`, `"r"`, `None`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum VirtualMemoryAccess {
    /// Read and write (`CU_MEM_ACCESS_FLAGS_PROT_READWRITE`; the default).
    #[default]
    ReadWrite,
    /// Read only (`CU_MEM_ACCESS_FLAGS_PROT_READ`): a write is a fault, which
    /// leaves the device's context unusable.
    Read,
    /// No access (`CU_MEM_ACCESS_FLAGS_PROT_NONE`).
    None,
}

impl VirtualMemoryAccess {
    pub(crate) fn raw(self) -> sys::CUmemAccess_flags {
        match self {
            Self::ReadWrite => sys::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            Self::Read => sys::CU_MEM_ACCESS_FLAGS_PROT_READ,
            Self::None => sys::CU_MEM_ACCESS_FLAGS_PROT_NONE,
        }
    }
}

/// Where the physical memory lives (`CUmemLocationType`; `cuda.core`'s
/// `VirtualMemoryLocationType`). Whatever the location, the memory is reached
/// through devices (copies and kernels): host slices of these buffers are refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum VirtualMemoryLocation {
    /// On the resource's device (the default).
    #[default]
    Device,
    /// In host memory (`CU_MEM_LOCATION_TYPE_HOST`; the drivers that take it
    /// for `cuMemCreate` decide the node).
    Host,
    /// In host memory on this NUMA node (`CU_MEM_LOCATION_TYPE_HOST_NUMA`).
    HostNuma(u32),
    /// In host memory on the NUMA node of the calling thread
    /// (`CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT`).
    HostNumaCurrent,
}

impl VirtualMemoryLocation {
    pub(crate) fn raw(self, device: &Device) -> sys::CUmemLocation {
        match self {
            Self::Device => Location::Device(*device),
            Self::Host => Location::Host,
            Self::HostNuma(node) => Location::HostNuma(node),
            Self::HostNumaCurrent => Location::HostNumaCurrent,
        }
        .raw()
    }

    pub(crate) fn is_host(self) -> bool {
        !matches!(self, Self::Device)
    }
}

/// The kind of physical memory (`CUmemAllocationType`; `cuda.core`'s
/// `VirtualMemoryAllocationType`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum VirtualMemoryAllocationType {
    /// Pinned memory that does not migrate (`CU_MEM_ALLOCATION_TYPE_PINNED`; the
    /// default).
    #[default]
    Pinned,
    /// Managed memory (`CU_MEM_ALLOCATION_TYPE_MANAGED`; a CUDA 13 driver).
    Managed,
}

/// The kind of shareable handle the physical memory can be exported as
/// (`CUmemAllocationHandleType`; `cuda.core`'s `VirtualMemoryHandleType`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum VirtualMemoryHandleType {
    /// Not exportable (the default; `cuda.core` defaults to `"posix_fd"`).
    #[default]
    None,
    /// A POSIX file descriptor (`CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`; Unix).
    PosixFd,
    /// A Windows KMT handle (`CU_MEM_HANDLE_TYPE_WIN32_KMT`; Windows). Exporting
    /// it through this crate is not supported yet.
    Win32Kmt,
    /// A 64-byte fabric handle (`CU_MEM_HANDLE_TYPE_FABRIC`; Linux, on systems
    /// with a memory fabric).
    Fabric,
}

impl VirtualMemoryHandleType {
    pub(crate) fn raw(self) -> sys::CUmemAllocationHandleType {
        match self {
            Self::None => sys::CU_MEM_HANDLE_TYPE_NONE,
            Self::PosixFd => sys::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            Self::Win32Kmt => sys::CU_MEM_HANDLE_TYPE_WIN32_KMT,
            Self::Fabric => sys::CU_MEM_HANDLE_TYPE_FABRIC,
        }
    }

    /// Why this platform has no such handle, if it has none.
    pub(crate) fn unavailable_here(self) -> Option<&'static str> {
        match self {
            Self::PosixFd if !cfg!(unix) => {
                Some("POSIX file descriptor handles exist only on Unix")
            }
            Self::Win32Kmt if !cfg!(windows) => Some("Win32 KMT handles exist only on Windows"),
            Self::Fabric if !cfg!(target_os = "linux") => {
                Some("fabric handles exist only on Linux")
            }
            _ => None,
        }
    }

    /// The device attribute that says whether the device can export the handle.
    pub(crate) fn attribute(self) -> Option<sys::CUdevice_attribute> {
        match self {
            Self::None => None,
            Self::PosixFd => {
                Some(sys::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)
            }
            Self::Win32Kmt => Some(sys::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED),
            Self::Fabric => Some(sys::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED),
        }
    }
}

/// Options of a [`VirtualMemoryResource`](crate::VirtualMemoryResource) (`cuda.core`'s
/// `VirtualMemoryResourceOptions`). Every option is checked when the resource is
/// made, before any memory is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VirtualMemoryOptions {
    /// Address space reserved per allocation, so it can grow in place; 0 reserves
    /// 4× the first size.
    pub reserve: usize,
    /// The rounding of sizes.
    pub granularity: Granularity,
    /// Other devices that may access the memory, with [`peer_access_flags`](Self::peer_access_flags).
    /// The resource's own device here is ignored: [`self_access`](Self::self_access) is its access.
    pub peer_access: Vec<Device>,
    /// How the devices of [`peer_access`](Self::peer_access) may access the
    /// memory (`cuda.core`'s `peer_access`).
    pub peer_access_flags: VirtualMemoryAccess,
    /// How the resource's device may access the memory (`cuda.core`'s
    /// `self_access`).
    pub self_access: VirtualMemoryAccess,
    /// The alignment of each reserved address range: 0 for the granularity, else
    /// a power of two and a multiple of the granularity (`addr_align`).
    pub addr_align: usize,
    /// Where to try to reserve address ranges (a hint the driver may ignore; a
    /// multiple of the granularity): 0 lets the driver choose (`addr_hint`).
    pub addr_hint: u64,
    /// The kind of physical memory (`allocation_type`).
    pub allocation_type: VirtualMemoryAllocationType,
    /// Where the physical memory lives (`location_type`).
    pub location: VirtualMemoryLocation,
    /// The kind of shareable handle the memory can be exported as
    /// ([`VirtualMemoryResource::export_handles`](crate::VirtualMemoryResource::export_handles),
    /// and on Unix `VirtualMemoryResource::ipc_descriptor`; `handle_type`).
    pub handle_type: VirtualMemoryHandleType,
    /// Make the memory usable for GPUDirect RDMA (`gpuDirectRDMACapable`): only on
    /// devices that support it with virtual memory (`gpu_direct_rdma`).
    pub gpu_direct_rdma: bool,
}

/// One physical chunk of an allocation, exported ([`VirtualMemoryResource::export_handles`](crate::VirtualMemoryResource::export_handles)).
#[derive(Debug)]
#[non_exhaustive]
pub struct ExportedChunk {
    /// Where the chunk is mapped, in bytes from the buffer's start.
    pub offset: usize,
    /// Its size in bytes.
    pub size: usize,
    /// The shareable handle.
    pub handle: ShareableHandle,
}

/// A shareable handle of physical memory (`cuMemExportToShareableHandle`).
#[derive(Debug)]
#[non_exhaustive]
pub enum ShareableHandle {
    /// A POSIX file descriptor ([`VirtualMemoryHandleType::PosixFd`]), which the
    /// caller owns.
    #[cfg(unix)]
    #[cfg_attr(docsrs, doc(cfg(unix)))]
    Fd(std::os::fd::OwnedFd),
    /// A fabric handle ([`VirtualMemoryHandleType::Fabric`]).
    Fabric([u8; 64]),
}
