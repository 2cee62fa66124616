//! The values the hardware queries return: architecture, brand, MIG mode,
//! InforomObject names, affinity scopes, BAR1 memory, fan and cooler kinds.

use cudars_bindings::nvml::*;
use std::ffi::c_ulong;

/// The GPU architecture NVML reports ([`SystemDevice::arch`](crate::system::SystemDevice::arch); `DeviceArch` in
/// Python).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeviceArch {
    /// Kepler.
    Kepler,
    /// Maxwell.
    Maxwell,
    /// Pascal.
    Pascal,
    /// Volta.
    Volta,
    /// Turing.
    Turing,
    /// Ampere.
    Ampere,
    /// Ada Lovelace.
    Ada,
    /// Hopper.
    Hopper,
    /// Blackwell.
    Blackwell,
    /// NVML says it does not know (`NVML_DEVICE_ARCH_UNKNOWN`).
    Unknown,
    /// A value this crate does not know (NVML's raw value).
    Other(u32),
}

impl DeviceArch {
    pub(crate) fn from_raw(a: nvmlDeviceArchitecture_t) -> Self {
        match a {
            NVML_DEVICE_ARCH_KEPLER => Self::Kepler,
            NVML_DEVICE_ARCH_MAXWELL => Self::Maxwell,
            NVML_DEVICE_ARCH_PASCAL => Self::Pascal,
            NVML_DEVICE_ARCH_VOLTA => Self::Volta,
            NVML_DEVICE_ARCH_TURING => Self::Turing,
            NVML_DEVICE_ARCH_AMPERE => Self::Ampere,
            NVML_DEVICE_ARCH_ADA => Self::Ada,
            NVML_DEVICE_ARCH_HOPPER => Self::Hopper,
            NVML_DEVICE_ARCH_BLACKWELL => Self::Blackwell,
            NVML_DEVICE_ARCH_UNKNOWN => Self::Unknown,
            other => Self::Other(other),
        }
    }
}

/// The product brand NVML reports ([`SystemDevice::brand`](crate::system::SystemDevice::brand)); it displays as
/// Python's `brand` string (`Tesla`, `GeForce RTX`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Brand {
    /// NVML does not know.
    Unknown,
    /// Quadro.
    Quadro,
    /// Tesla (data-centre GPUs: A100, H100, …).
    Tesla,
    /// NVS.
    Nvs,
    /// GRID.
    Grid,
    /// GeForce.
    GeForce,
    /// Titan.
    Titan,
    /// NVIDIA virtual applications.
    NvidiaVapps,
    /// NVIDIA virtual PC.
    NvidiaVpc,
    /// NVIDIA virtual compute server.
    NvidiaVcs,
    /// NVIDIA RTX virtual workstation.
    NvidiaVws,
    /// NVIDIA cloud gaming (also vGaming: NVML gives both one value).
    NvidiaCloudGaming,
    /// Quadro RTX.
    QuadroRtx,
    /// NVIDIA RTX.
    NvidiaRtx,
    /// NVIDIA.
    Nvidia,
    /// GeForce RTX.
    GeForceRtx,
    /// Titan RTX.
    TitanRtx,
    /// A value this crate does not know (NVML's raw value).
    Other(u32),
}

impl Brand {
    pub(crate) fn from_raw(b: nvmlBrandType_t) -> Self {
        match b {
            NVML_BRAND_UNKNOWN => Self::Unknown,
            NVML_BRAND_QUADRO => Self::Quadro,
            NVML_BRAND_TESLA => Self::Tesla,
            NVML_BRAND_NVS => Self::Nvs,
            NVML_BRAND_GRID => Self::Grid,
            NVML_BRAND_GEFORCE => Self::GeForce,
            NVML_BRAND_TITAN => Self::Titan,
            NVML_BRAND_NVIDIA_VAPPS => Self::NvidiaVapps,
            NVML_BRAND_NVIDIA_VPC => Self::NvidiaVpc,
            NVML_BRAND_NVIDIA_VCS => Self::NvidiaVcs,
            NVML_BRAND_NVIDIA_VWS => Self::NvidiaVws,
            NVML_BRAND_NVIDIA_CLOUD_GAMING => Self::NvidiaCloudGaming,
            NVML_BRAND_QUADRO_RTX => Self::QuadroRtx,
            NVML_BRAND_NVIDIA_RTX => Self::NvidiaRtx,
            NVML_BRAND_NVIDIA => Self::Nvidia,
            NVML_BRAND_GEFORCE_RTX => Self::GeForceRtx,
            NVML_BRAND_TITAN_RTX => Self::TitanRtx,
            other => Self::Other(other.0),
        }
    }
}

impl std::fmt::Display for Brand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            Self::Unknown => "Unknown",
            Self::Quadro => "Quadro",
            Self::Tesla => "Tesla",
            Self::Nvs => "NVS",
            Self::Grid => "GRID",
            Self::GeForce => "GeForce",
            Self::Titan => "Titan",
            Self::NvidiaVapps => "NVIDIA vApps",
            Self::NvidiaVpc => "NVIDIA VPC",
            Self::NvidiaVcs => "NVIDIA VCS",
            Self::NvidiaVws => "NVIDIA VWS",
            Self::NvidiaCloudGaming => "NVIDIA Cloud Gaming",
            Self::QuadroRtx => "Quadro RTX",
            Self::NvidiaRtx => "NVIDIA RTX",
            Self::Nvidia => "NVIDIA",
            Self::GeForceRtx => "GeForce RTX",
            Self::TitanRtx => "Titan RTX",
            Self::Other(v) => return write!(f, "brand {v}"),
        };
        f.write_str(s)
    }
}

/// A device's MIG (Multi-Instance GPU) mode ([`SystemDevice::mig_mode`](crate::system::SystemDevice::mig_mode)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct MigMode {
    /// Whether MIG is enabled now.
    pub current: bool,
    /// Whether MIG will be enabled after the next activation (a GPU reset).
    pub pending: bool,
}

/// An InfoROM object whose version can be read
/// ([`SystemDevice::inforom_version`](crate::system::SystemDevice::inforom_version)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InforomObject {
    /// The OEM object.
    Oem,
    /// The ECC object.
    Ecc,
    /// The power-management object.
    Power,
    /// The DRAM-encryption object.
    Den,
}

impl InforomObject {
    pub(crate) fn raw(self) -> nvmlInforomObject_t {
        match self {
            Self::Oem => NVML_INFOROM_OEM,
            Self::Ecc => NVML_INFOROM_ECC,
            Self::Power => NVML_INFOROM_POWER,
            Self::Den => NVML_INFOROM_DEN,
        }
    }
}

/// Which kind of set an affinity query returns
/// ([`SystemDevice::cpu_affinity`](crate::system::SystemDevice::cpu_affinity), [`SystemDevice::memory_affinity`](crate::system::SystemDevice::memory_affinity)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum AffinityScope {
    /// NUMA nodes (the default).
    #[default]
    Node,
    /// CPU sockets.
    Socket,
}

impl AffinityScope {
    pub(crate) fn raw(self) -> nvmlAffinityScope_t {
        match self {
            Self::Node => NVML_AFFINITY_SCOPE_NODE,
            Self::Socket => NVML_AFFINITY_SCOPE_SOCKET,
        }
    }
}

/// BAR1 memory, in bytes: the window through which the CPU and other PCIe
/// devices reach device memory ([`SystemDevice::bar1_memory_info`](crate::system::SystemDevice::bar1_memory_info)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct Bar1MemoryInfo {
    /// Total BAR1 memory.
    pub total: u64,
    /// Unallocated BAR1 memory.
    pub free: u64,
    /// Allocated BAR1 memory.
    pub used: u64,
}

/// How a fan is controlled ([`Fan::control_policy`](crate::system::Fan::control_policy)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FanControlPolicy {
    /// The driver controls the fan by temperature.
    TemperatureControlled,
    /// The fan is set by hand.
    Manual,
    /// A value this crate does not know (NVML's raw value).
    Other(u32),
}

/// How a cooler's control signal works ([`CoolerInfo::signal_type`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CoolerControl {
    /// On or off.
    Toggle,
    /// A variable speed.
    Variable,
    /// A value this crate does not know (NVML's raw value).
    Other(u32),
}

/// What a cooler cools ([`CoolerInfo::targets`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CoolerTarget {
    /// Nothing.
    None,
    /// The GPU.
    Gpu,
    /// The memory.
    Memory,
    /// The power supply.
    PowerSupply,
}

/// One cooler of a device ([`SystemDevice::cooler_info`](crate::system::SystemDevice::cooler_info)).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct CoolerInfo {
    /// How its control signal works; `None` when NVML says it has none.
    pub signal_type: Option<CoolerControl>,
    /// What it cools.
    pub targets: Vec<CoolerTarget>,
}

/// The set bits of an NVML bitmask (CPU or NUMA-node set), as indices, lowest
/// first: bit `b` of word `w` is index `w * c_ulong::BITS + b`.
pub(super) fn unpack_bitmask(words: &[c_ulong]) -> Vec<usize> {
    let bits = c_ulong::BITS as usize;
    let mut out = Vec::new();
    for (w, &word) in words.iter().enumerate() {
        let mut rest = word;
        while rest != 0 {
            let b = rest.trailing_zeros() as usize;
            out.push(w * bits + b);
            rest &= rest - 1;
        }
    }
    out
}

/// The targets in a cooler's target mask.
pub(super) fn cooler_targets(mask: u32) -> Vec<CoolerTarget> {
    [
        (NVML_THERMAL_COOLER_TARGET_NONE, CoolerTarget::None),
        (NVML_THERMAL_COOLER_TARGET_GPU, CoolerTarget::Gpu),
        (NVML_THERMAL_COOLER_TARGET_MEMORY, CoolerTarget::Memory),
        (
            NVML_THERMAL_COOLER_TARGET_POWER_SUPPLY,
            CoolerTarget::PowerSupply,
        ),
    ]
    .into_iter()
    .filter(|(bit, _)| mask & bit.0 != 0)
    .map(|(_, t)| t)
    .collect()
}

/// The number of CPUs and NUMA nodes the affinity queries make room for: 8192,
/// the largest `NR_CPUS` Linux is configured with.
pub(crate) const AFFINITY_BITS: usize = 8192;
