//! The plain values the basic queries return: memory, utilisation, clocks, PCI,
//! peer-to-peer status and topology.

use cudars_bindings::nvml::*;

/// A device's memory, in bytes ([`SystemDevice::memory_info`](crate::system::SystemDevice::memory_info)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct MemoryInfo {
    /// Total physical memory.
    pub total: u64,
    /// Memory reserved by the driver and firmware, counted neither as free nor as
    /// used (0 when the driver cannot say). CUDA's total,
    /// [`Device::total_memory`](crate::Device::total_memory), leaves it out.
    pub reserved: u64,
    /// Unallocated memory.
    pub free: u64,
    /// Allocated memory.
    pub used: u64,
}

/// How busy a device was over NVML's last sample period
/// ([`SystemDevice::utilization`](crate::system::SystemDevice::utilization)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct Utilization {
    /// Percent of the time one or more kernels were running.
    pub gpu_percent: u32,
    /// Percent of the time device memory was being read or written.
    pub memory_percent: u32,
}

/// A device's clocks, in MHz ([`SystemDevice::clocks`](crate::system::SystemDevice::clocks), [`SystemDevice::max_clocks`](crate::system::SystemDevice::max_clocks)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct Clocks {
    /// The graphics clock.
    pub graphics_mhz: u32,
    /// The SM clock.
    pub sm_mhz: u32,
    /// The memory clock.
    pub memory_mhz: u32,
    /// The video encoder/decoder clock.
    pub video_mhz: u32,
}

/// Where a device sits on the PCI bus ([`SystemDevice::pci_info`](crate::system::SystemDevice::pci_info)).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct PciInfo {
    /// The bus id, `domain:bus:device.function` in hex, as NVML writes it
    /// (`00000000:3B:00.0`: NVML pads the domain to 8 digits).
    pub bus_id: String,
    /// The PCI domain.
    pub domain: u32,
    /// The bus number.
    pub bus: u32,
    /// The device number on the bus.
    pub device: u32,
    /// The combined device and vendor id (`0x233010DE`).
    pub pci_device_id: u32,
    /// The combined subsystem and subsystem-vendor id.
    pub pci_subsystem_id: u32,
    /// The 8-bit PCI base class code (`0x03`, display controller), where the
    /// driver reports it (`nvmlDeviceGetPciInfoExt`, R520 and newer).
    pub base_class: Option<u32>,
    /// The 8-bit PCI sub class code (`0x02` for a 3D controller), where the
    /// driver reports it.
    pub sub_class: Option<u32>,
}

impl PciInfo {
    /// The PCI vendor id, `0x10DE` for NVIDIA (the low half of
    /// [`pci_device_id`](Self::pci_device_id); `vendor_id` in Python).
    pub fn vendor_id(&self) -> u16 {
        (self.pci_device_id & 0xFFFF) as u16
    }

    /// The PCI device id (the high half of
    /// [`pci_device_id`](Self::pci_device_id); `device_id` in Python).
    pub fn device_id(&self) -> u16 {
        (self.pci_device_id >> 16) as u16
    }

    /// The subsystem id (the high half of
    /// [`pci_subsystem_id`](Self::pci_subsystem_id); `subsystem_id` in
    /// Python's `PciInfo` is the whole value).
    pub fn subsystem_device_id(&self) -> u16 {
        (self.pci_subsystem_id >> 16) as u16
    }
}

/// A kind of peer-to-peer access ([`SystemDevice::p2p_status`](crate::system::SystemDevice::p2p_status)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum P2pCapability {
    /// Peer reads.
    Read,
    /// Peer writes.
    Write,
    /// Peer access over NVLink.
    Nvlink,
    /// Peer atomics.
    Atomics,
    /// Peer access over PCIe.
    Pci,
}

impl P2pCapability {
    pub(crate) fn raw(self) -> nvmlGpuP2PCapsIndex_t {
        match self {
            Self::Read => NVML_P2P_CAPS_INDEX_READ,
            Self::Write => NVML_P2P_CAPS_INDEX_WRITE,
            Self::Nvlink => NVML_P2P_CAPS_INDEX_NVLINK,
            Self::Atomics => NVML_P2P_CAPS_INDEX_ATOMICS,
            Self::Pci => NVML_P2P_CAPS_INDEX_PCI,
        }
    }
}

/// Whether two devices can use a peer-to-peer capability, and if not, why
/// ([`SystemDevice::p2p_status`](crate::system::SystemDevice::p2p_status)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum P2pStatus {
    /// Supported.
    Ok,
    /// The chipset does not support it.
    ChipsetNotSupported,
    /// One of the GPUs does not support it.
    GpuNotSupported,
    /// The I/O hub topology does not support it.
    IohTopologyNotSupported,
    /// Disabled by a registry key (driver setting).
    DisabledByRegkey,
    /// Not supported.
    NotSupported,
    /// NVML does not know, or reported a status this crate does not know.
    Unknown,
}

impl P2pStatus {
    pub(crate) fn from_raw(s: nvmlGpuP2PStatus_t) -> Self {
        match s {
            NVML_P2P_STATUS_OK => Self::Ok,
            NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED => Self::ChipsetNotSupported,
            NVML_P2P_STATUS_GPU_NOT_SUPPORTED => Self::GpuNotSupported,
            NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED => Self::IohTopologyNotSupported,
            NVML_P2P_STATUS_DISABLED_BY_REGKEY => Self::DisabledByRegkey,
            NVML_P2P_STATUS_NOT_SUPPORTED => Self::NotSupported,
            _ => Self::Unknown,
        }
    }

    /// Whether the capability is supported.
    pub fn is_ok(self) -> bool {
        self == Self::Ok
    }
}

/// The closest connection two devices share, nearest first
/// ([`SystemDevice::topology_common_ancestor`](crate::system::SystemDevice::topology_common_ancestor)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum TopologyLevel {
    /// The same board (multi-GPU boards).
    Internal,
    /// A single PCIe switch.
    Single,
    /// Several PCIe switches, without crossing the host bridge.
    Multiple,
    /// The same host bridge.
    HostBridge,
    /// The same NUMA node, across host bridges.
    Node,
    /// Across NUMA nodes (an SMP interconnect such as QPI or UPI).
    System,
    /// A level this crate does not know (NVML's raw value).
    Other(u32),
}

impl TopologyLevel {
    pub(crate) fn raw(self) -> nvmlGpuTopologyLevel_t {
        match self {
            Self::Internal => NVML_TOPOLOGY_INTERNAL,
            Self::Single => NVML_TOPOLOGY_SINGLE,
            Self::Multiple => NVML_TOPOLOGY_MULTIPLE,
            Self::HostBridge => NVML_TOPOLOGY_HOSTBRIDGE,
            Self::Node => NVML_TOPOLOGY_NODE,
            Self::System => NVML_TOPOLOGY_SYSTEM,
            Self::Other(l) => nvmlGpuTopologyLevel_t(l),
        }
    }

    pub(crate) fn from_raw(l: nvmlGpuTopologyLevel_t) -> Self {
        match l {
            NVML_TOPOLOGY_INTERNAL => Self::Internal,
            NVML_TOPOLOGY_SINGLE => Self::Single,
            NVML_TOPOLOGY_MULTIPLE => Self::Multiple,
            NVML_TOPOLOGY_HOSTBRIDGE => Self::HostBridge,
            NVML_TOPOLOGY_NODE => Self::Node,
            NVML_TOPOLOGY_SYSTEM => Self::System,
            other => Self::Other(other.0),
        }
    }
}
