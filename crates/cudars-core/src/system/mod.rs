//! System and device information from NVML, the NVIDIA Management Library: the
//! counterpart of `cuda.core.system`.
//!
//! ```no_run
//! use cudars_core::system::{self, SystemDevice};
//!
//! println!("driver {} (CUDA {}), NVML {}", system::driver_version()?,
//!          system::cuda_driver_version()?, system::nvml_version()?);
//! for dev in SystemDevice::all()? {
//!     let mem = dev.memory_info()?;
//!     println!("{}: {} ({} of {} bytes used, {} °C)", dev.index(), dev.name()?,
//!              mem.used, mem.total, dev.temperature_celsius()?);
//! }
//! // From a CUDA device to its NVML device and back.
//! let nvml_dev = cudars_core::Device::new(0)?.to_system_device()?;
//! assert_eq!(nvml_dev.to_device()?.ordinal(), 0);
//! # Ok::<(), cudars_core::Error>(())
//! ```
//!
//! | `cuda.core.system` | here |
//! |---|---|
//! | `get_num_devices` | [`device_count`] |
//! | `get_driver_branch` | [`driver_branch`] |
//! | `get_kernel_mode_driver_version` | [`driver_version`] |
//! | `get_nvml_version` | [`nvml_version`] |
//! | `get_process_name` | [`process_name`] |
//! | `get_p2p_status`, `get_topology_common_ancestor` | [`SystemDevice::p2p_status`], [`SystemDevice::topology_common_ancestor`] |
//! | `Device` | [`SystemDevice`] |
//! | `cuda.core.Device.to_system_device` | [`Device::to_system_device`] |
//! | `Device.arch`, `brand`, `numa_node_id`, `is_persistence_mode_enabled`, `bar1_memory_info` | [`SystemDevice::arch`], [`brand`](SystemDevice::brand), [`numa_node_id`](SystemDevice::numa_node_id), [`is_persistence_mode_enabled`](SystemDevice::is_persistence_mode_enabled), [`bar1_memory_info`](SystemDevice::bar1_memory_info) |
//! | `Device.mig` | [`SystemDevice::mig_mode`], [`mig_device_count`](SystemDevice::mig_device_count), [`mig_devices`](SystemDevice::mig_devices), [`mig_parent`](SystemDevice::mig_parent), … |
//! | `Device.get_field_values` | [`SystemDevice::field_values`] ([`FieldId`], [`FieldSample`], [`FieldValue`]) |
//! | `Device.inforom` | [`SystemDevice::inforom_image_version`], [`inforom_version`](SystemDevice::inforom_version), … |
//! | `Device.get_cpu_affinity`, `get_memory_affinity` | [`SystemDevice::cpu_affinity`], [`memory_affinity`](SystemDevice::memory_affinity) |
//! | `Device.get_fan`, `num_fans`, `cooler` | [`SystemDevice::fan`] ([`Fan`]), [`fan_count`](SystemDevice::fan_count), [`cooler_info`](SystemDevice::cooler_info) |
//! | `Device.current_clock_event_reasons`, `get_clock` | [`SystemDevice::current_clock_event_reasons`] ([`ClocksEventReasons`]), [`clock`](SystemDevice::clock), [`applications_clock`](SystemDevice::applications_clock), … |
//! | `Device.inforom.bbx_flush_time` | [`SystemDevice::inforom_bbx_flush_time`] ([`BbxFlushTime`]) |
//! | `Device.supported_pstates`, `dynamic_pstates_info`, `get_clock(t).get_min_max_clock_of_pstate_mhz`, `get_offsets` | [`SystemDevice::supported_performance_states`], [`dynamic_pstates_info`](SystemDevice::dynamic_pstates_info) ([`DynamicPstatesInfo`]), [`min_max_clock_of_pstate`](SystemDevice::min_max_clock_of_pstate), [`clock_offsets`](SystemDevice::clock_offsets) ([`ClockOffsets`]) |
//! | setting `is_persistence_mode_enabled`, `mig.mode`, `FanInfo.speed`; `set_default_speed` | [`SystemDevice::set_persistence_mode`], [`set_mig_mode`](SystemDevice::set_mig_mode), [`Fan::set_speed`], [`Fan::set_default_speed`] |
//! | NVML's clock and power setters | [`SystemDevice::set_applications_clocks`], [`reset_applications_clocks`](SystemDevice::reset_applications_clocks), [`set_gpu_locked_clocks`](SystemDevice::set_gpu_locked_clocks), [`set_memory_locked_clocks`](SystemDevice::set_memory_locked_clocks), [`set_clock_offset`](SystemDevice::set_clock_offset), [`set_power_management_limit`](SystemDevice::set_power_management_limit), … (root; see below) |
//! | `Device.compute_running_processes`, `temperature.get_threshold`, `margin`, `get_thermal_settings` | [`SystemDevice::compute_running_processes`] ([`ProcessInfo`]), [`temperature_threshold`](SystemDevice::temperature_threshold) ([`TemperatureThreshold`]), [`temperature_margin`](SystemDevice::temperature_margin), [`thermal_settings`](SystemDevice::thermal_settings) ([`ThermalSensor`], [`ThermalTarget`]) |
//! | `Device.pci_info`'s link generation, width, throughput and replays | [`SystemDevice::max_pcie_link_generation`], [`current_pcie_link_width`](SystemDevice::current_pcie_link_width), [`pcie_throughput_kbps`](SystemDevice::pcie_throughput_kbps), … |
//! | `Device.is_c2c_enabled`, `addressing_mode`, `attributes`, `repair_status`, `get_topology_nearest_gpus` | [`SystemDevice::is_c2c_enabled`], [`addressing_mode`](SystemDevice::addressing_mode) ([`AddressingMode`]), [`attributes`](SystemDevice::attributes) ([`DeviceAttributes`]), [`repair_status`](SystemDevice::repair_status) ([`RepairStatus`]), [`topology_nearest_gpus`](SystemDevice::topology_nearest_gpus) |
//! | `NvmlError` and its subclasses (`NotSupportedError`, …) | [`Error::Nvml`], whose [`nvml_kind`](Error::nvml_kind) is the [`NvmlErrorKind`] each subclass stands for, to `match` on ([`is_nvml_not_supported`](Error::is_nvml_not_supported) for `NotSupportedError`) |
//! | `LibraryNotFoundError` (no NVML), `FunctionNotFoundError` | [`Error::Unavailable`] ([`is_unavailable`](Error::is_unavailable)), as for any missing library or entry point; its [`nvml_kind`](Error::nvml_kind) is [`NvmlErrorKind::LibraryNotFound`] or [`NvmlErrorKind::FunctionNotFound`] |
//!
//! # Settings
//!
//! The setters change the device for every process until changed back (or the
//! driver unloads, without persistence mode), and need root: without it NVML
//! refuses with [`NvmlErrorKind::NoPermission`], on a device without the feature
//! with `NotSupported`. An entry point the installed driver's NVML lacks is an
//! [`Error::Unavailable`] whose [`nvml_kind`](Error::nvml_kind) is
//! [`NvmlErrorKind::FunctionNotFound`].
//!
//! # NVML's lifetime
//!
//! The first call into this module initialises NVML (`nvmlInit`) once for the
//! process, and the module never shuts it down. NVML counts its initialisations
//! and only tears down when every `nvmlInit` has been matched by an
//! `nvmlShutdown`, so other code in the process (another crate, a plugin,
//! [`cudars_bindings::nvml::version`]) may initialise and shut down NVML as it likes
//! without invalidating the handles held here; and since this module holds its
//! one reference until the process exits, a [`SystemDevice`] stays valid for the
//! life of the process. An initialisation failure is remembered, as is the
//! driver's `cuInit` in [`Device`].
//!
//! NVML needs the driver's `libnvidia-ml.so.1` (`nvml.dll` on Windows), which is
//! installed with the display driver rather than the CUDA toolkit; without it every
//! function returns an [`Error::Unavailable`] whose reason lists where the library
//! was searched for.
//!
//! Errors are the crate's one [`Error`]: NVML's own failures are
//! [`Error::Nvml`], with NVML's code, name and description as the source.
//!
//! NVML numbers devices on its own: an NVML index is not a CUDA ordinal (NVML
//! ignores `CUDA_VISIBLE_DEVICES` and sorts by PCI bus id). Convert between the two
//! by UUID with [`Device::to_system_device`] and
//! [`SystemDevice::to_device`].

use std::borrow::Cow;
use std::ffi::{CStr, CString, c_char, c_uint};
use std::fmt;
use std::sync::OnceLock;

use cudars_bindings::IntoResult as _;
use cudars_bindings::nvml::*;

use crate::Device;
pub use crate::error::NvmlErrorKind;
use crate::error::{Error, Result};

mod clocks;
mod control;
mod fields;
mod hardware;
mod status;

pub use clocks::{ClockId, ClockType, ClocksEventReasons};
pub use control::{ClockOffsets, DynamicPstatesInfo, MAX_PSTATE, PstateUtilization};
pub use fields::{FieldId, FieldSample, FieldValue};
pub use hardware::{
    AffinityScope, Bar1MemoryInfo, BbxFlushTime, Brand, CoolerControl, CoolerInfo, CoolerTarget,
    DeviceArch, Fan, FanControlPolicy, InforomObject, MigMode,
};
pub use status::{
    AddressingMode, DeviceAttributes, ProcessInfo, RepairStatus, TemperatureThreshold,
    ThermalSensor, ThermalTarget,
};

/// Checks an NVML status, attaching what was being done (built only on failure).
trait NvmlCheck {
    fn check<C: Into<Cow<'static, str>>>(self, context: impl FnOnce() -> C) -> Result<()>;
}

impl NvmlCheck for nvmlReturn_t {
    #[inline]
    fn check<C: Into<Cow<'static, str>>>(self, context: impl FnOnce() -> C) -> Result<()> {
        // `result()` builds the error at once, so that it picks up this thread's note
        // of why an entry point was unavailable.
        self.result()
            .map_err(|source| Error::nvml(context(), source))
    }
}

/// `nvmlInit`, once per process and never undone (see the module docs); its result
/// is remembered.
fn init() -> Result<()> {
    static INIT: OnceLock<Result<(), NvmlError>> = OnceLock::new();
    INIT.get_or_init(|| {
        // SAFETY: `nvmlInit` takes no arguments and may be called from any thread.
        unsafe { nvmlInit() }.result()
    })
    .clone()
    .map_err(|source| Error::nvml("initialising NVML (nvmlInit)", source))
}

/// The version number of a versioned NVML struct (`NVML_STRUCT_VERSION` in
/// `nvml.h`): its size, with the version in the top byte.
const fn struct_version<T>(version: u32) -> c_uint {
    (std::mem::size_of::<T>() as c_uint) | (version << 24)
}

/// The string in a buffer NVML filled, up to its first NUL (or the whole buffer).
fn from_c_buf(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf.iter().map(|&c| c as u8).collect();
    match CStr::from_bytes_until_nul(&bytes) {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// Calls an NVML function that writes a NUL-terminated string into a buffer of
/// `len` bytes, and reads the string back.
fn read_string<C: Into<Cow<'static, str>>>(
    len: u32,
    context: impl FnOnce() -> C,
    call: impl FnOnce(*mut c_char, c_uint) -> nvmlReturn_t,
) -> Result<String> {
    let mut buf = vec![0 as c_char; len as usize];
    call(buf.as_mut_ptr(), len).check(context)?;
    Ok(from_c_buf(&buf))
}

fn pci_from(p: &nvmlPciInfo_t) -> PciInfo {
    PciInfo {
        bus_id: from_c_buf(&p.busId),
        domain: p.domain,
        bus: p.bus,
        device: p.device,
        pci_device_id: p.pciDeviceId,
        pci_subsystem_id: p.pciSubSystemId,
        base_class: None,
        sub_class: None,
    }
}

/// A UUID without its `GPU-` or `MIG-` prefix (either case).
fn strip_uuid_prefix(uuid: &str) -> &str {
    for prefix in ["GPU-", "MIG-"] {
        // `get`: no panic where a multi-byte character straddles the prefix.
        if let (Some(head), Some(rest)) = (uuid.get(..prefix.len()), uuid.get(prefix.len()..)) {
            if head.eq_ignore_ascii_case(prefix) {
                return rest;
            }
        }
    }
    uuid
}

/// A C string for NVML, or an argument error naming what it was for.
fn c_string(s: &str, what: &'static str) -> Result<CString> {
    CString::new(s).map_err(|_| {
        Error::invalid(
            format!("looking up an NVML device by {what} {s:?}"),
            "the string contains a NUL byte",
        )
    })
}

/// The version of the installed display driver, as NVML reports it
/// (`nvmlSystemGetDriverVersion`), e.g. `"580.95.05"`: the kernel-mode driver's
/// version (`get_kernel_mode_driver_version` in Python).
///
/// # Errors
/// NVML's error; [`Error::is_unavailable`] without a driver.
pub fn driver_version() -> Result<String> {
    init()?;
    read_string(
        NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE,
        || "reading the driver version (nvmlSystemGetDriverVersion)",
        |buf, len| {
            // SAFETY: `buf` is valid for writes of `len` bytes; NVML is initialised.
            unsafe { nvmlSystemGetDriverVersion(buf, len) }
        },
    )
}

/// NVML's own version (`nvmlSystemGetNVMLVersion`), e.g. `"13.580.95.05"`.
///
/// # Errors
/// NVML's error; [`Error::is_unavailable`] without a driver.
pub fn nvml_version() -> Result<String> {
    init()?;
    read_string(
        NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE,
        || "reading the NVML version (nvmlSystemGetNVMLVersion)",
        |buf, len| {
            // SAFETY: `buf` is valid for writes of `len` bytes; NVML is initialised.
            unsafe { nvmlSystemGetNVMLVersion(buf, len) }
        },
    )
}

/// The driver's branch (`nvmlSystemGetDriverBranch`), e.g. `"r580_00"`.
///
/// # Errors
/// NVML's error (`NVML_ERROR_FUNCTION_NOT_FOUND` from drivers older than the
/// call); [`Error::is_unavailable`] without a driver.
pub fn driver_branch() -> Result<String> {
    init()?;
    let mut info = nvmlSystemDriverBranchInfo_t {
        version: struct_version::<nvmlSystemDriverBranchInfo_t>(1),
        branch: [0; 80],
    };
    let len = info.branch.len() as c_uint;
    // SAFETY: `info` is valid for writes and its version field is set; `len` is
    // the length of its `branch` buffer, as `nvml.h` asks.
    unsafe { nvmlSystemGetDriverBranch(&mut info, len) }
        .check(|| "reading the driver branch (nvmlSystemGetDriverBranch)")?;
    Ok(from_c_buf(&info.branch))
}

/// The highest CUDA version the driver supports
/// (`nvmlSystemGetCudaDriverVersion_v2`), e.g. 13.0.
///
/// # Errors
/// NVML's error; [`Error::is_unavailable`] without a driver.
pub fn cuda_driver_version() -> Result<cudars_bindings::Version> {
    init()?;
    let mut v = 0;
    // SAFETY: `v` is valid for writes; NVML is initialised.
    unsafe { nvmlSystemGetCudaDriverVersion_v2(&mut v) }
        .check(|| "reading the CUDA driver version (nvmlSystemGetCudaDriverVersion_v2)")?;
    Ok(cudars_bindings::Version::from_cuda(v))
}

/// The CUDA version of the user-mode driver this process loaded (libcuda's
/// `cuDriverGetVersion`), e.g. 13.0: `get_user_mode_driver_version` in Python,
/// where [`driver_version`] is the kernel-mode one. Needs no NVML; it differs
/// from [`cuda_driver_version`] only where the user-mode driver is not the one
/// installed with the kernel module (a forward-compatibility package, or the
/// test suite's driver shim).
///
/// # Errors
/// The driver's error; [`Error::is_unavailable`] without a driver.
pub fn user_mode_driver_version() -> Result<cudars_bindings::Version> {
    cudars_bindings::driver::version()
        .map_err(|e| Error::from_driver("reading the user-mode driver's CUDA version", e))
}

/// How many GPUs NVML sees (`nvmlDeviceGetCount`): every GPU in the machine,
/// including those `CUDA_VISIBLE_DEVICES` hides from CUDA and those this process
/// may not be allowed to use.
///
/// # Errors
/// NVML's error; [`Error::is_unavailable`] without a driver.
pub fn device_count() -> Result<u32> {
    init()?;
    let mut n = 0;
    // SAFETY: `n` is valid for writes; NVML is initialised.
    unsafe { nvmlDeviceGetCount(&mut n) }.check(|| "counting NVML devices (nvmlDeviceGetCount)")?;
    Ok(n)
}

/// The name of the running process `pid` (`nvmlSystemGetProcessName`), e.g. the
/// path of its executable.
///
/// # Errors
/// NVML's error (`NVML_ERROR_NOT_FOUND` when there is no such process);
/// [`Error::is_unavailable`] without a driver.
pub fn process_name(pid: u32) -> Result<String> {
    init()?;
    read_string(
        4096,
        || format!("reading the name of process {pid} (nvmlSystemGetProcessName)"),
        |buf, len| {
            // SAFETY: `buf` is valid for writes of `len` bytes; NVML is initialised.
            unsafe { nvmlSystemGetProcessName(pid, buf, len) }
        },
    )
}

/// A GPU as NVML sees it: the counterpart of `cuda.core.system.Device`.
///
/// A plain `Copy` value: NVML's handle and the device's NVML index. Handles are
/// valid for as long as NVML stays initialised, which this module guarantees for
/// the life of the process (see the module docs), so a `SystemDevice` never
/// dangles.
///
/// `SystemDevice` is `Send + Sync`: the handle is an opaque pointer that NVML
/// itself owns and never frees while initialised, nothing here dereferences it, and
/// NVML is thread-safe (its documentation allows concurrent calls from any threads
/// on the same device).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SystemDevice {
    handle: nvmlDevice_t,
    /// The NVML index (of the parent GPU, for a MIG device).
    index: u32,
    /// For a MIG device, its index under the parent GPU.
    mig: Option<u32>,
}

// SAFETY: see the type's docs: the handle is an opaque token owned by NVML for the
// life of the process, and NVML's API is thread-safe.
// Soundness contract: rule 11.
unsafe impl Send for SystemDevice {}
// SAFETY: as for `Send`; no method mutates Rust-visible state through `&self`.
// Soundness contract: rule 11.
unsafe impl Sync for SystemDevice {}

impl fmt::Debug for SystemDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.mig {
            None => write!(f, "SystemDevice({})", self.index),
            Some(m) => write!(f, "SystemDevice({}, MIG {m})", self.index),
        }
    }
}

/// A device's memory, in bytes ([`SystemDevice::memory_info`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct MemoryInfo {
    /// Total physical memory.
    pub total: u64,
    /// Memory reserved by the driver and firmware, counted neither as free nor as
    /// used (0 when the driver cannot say). CUDA's total,
    /// [`Device::total_memory`], leaves it out.
    pub reserved: u64,
    /// Unallocated memory.
    pub free: u64,
    /// Allocated memory.
    pub used: u64,
}

/// How busy a device was over NVML's last sample period
/// ([`SystemDevice::utilization`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct Utilization {
    /// Percent of the time one or more kernels were running.
    pub gpu_percent: u32,
    /// Percent of the time device memory was being read or written.
    pub memory_percent: u32,
}

/// A device's clocks, in MHz ([`SystemDevice::clocks`], [`SystemDevice::max_clocks`]).
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

/// Where a device sits on the PCI bus ([`SystemDevice::pci_info`]).
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

/// A kind of peer-to-peer access ([`SystemDevice::p2p_status`]).
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
    fn raw(self) -> nvmlGpuP2PCapsIndex_t {
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
/// ([`SystemDevice::p2p_status`]).
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
    fn from_raw(s: nvmlGpuP2PStatus_t) -> Self {
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
/// ([`SystemDevice::topology_common_ancestor`]).
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
    fn raw(self) -> nvmlGpuTopologyLevel_t {
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

    fn from_raw(l: nvmlGpuTopologyLevel_t) -> Self {
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

impl SystemDevice {
    /// The device with this NVML index (`nvmlDeviceGetHandleByIndex`). NVML indices
    /// are not CUDA ordinals: see the module docs.
    ///
    /// # Errors
    /// NVML's error (`NVML_ERROR_INVALID_ARGUMENT` for an index out of range,
    /// `NVML_ERROR_NO_PERMISSION` for a device this process may not use);
    /// [`Error::is_unavailable`] without a driver.
    pub fn new(index: u32) -> Result<Self> {
        init()?;
        let mut handle = std::ptr::null_mut();
        // SAFETY: `handle` is valid for writes; NVML is initialised.
        unsafe { nvmlDeviceGetHandleByIndex(index, &mut handle) }
            .check(|| format!("opening NVML device {index} (nvmlDeviceGetHandleByIndex)"))?;
        Ok(Self {
            handle,
            index,
            mig: None,
        })
    }

    /// The device with this UUID (`nvmlDeviceGetHandleByUUID`), in the form
    /// `nvidia-smi` prints and [`Device::uuid_string`]
    /// returns: `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    ///
    /// # Errors
    /// NVML's error (`NVML_ERROR_NOT_FOUND` when no device has the UUID);
    /// [`Error::InvalidArgument`] for a string with a NUL byte;
    /// [`Error::is_unavailable`] without a driver.
    pub fn from_uuid(uuid: &str) -> Result<Self> {
        let c = c_string(uuid, "UUID")?;
        init()?;
        let mut handle = std::ptr::null_mut();
        // SAFETY: `c` is a NUL-terminated string and `handle` is valid for writes.
        unsafe { nvmlDeviceGetHandleByUUID(c.as_ptr(), &mut handle) }
            .check(|| format!("looking up the NVML device {uuid} (nvmlDeviceGetHandleByUUID)"))?;
        Self::from_handle(handle)
    }

    /// The device at this PCI bus id (`nvmlDeviceGetHandleByPciBusId`), in either
    /// NVML's form (`00000000:3B:00.0`) or CUDA's
    /// ([`Device::pci_bus_id`], `0000:3b:00.0`).
    ///
    /// # Errors
    /// NVML's error (`NVML_ERROR_NOT_FOUND` when no device is there);
    /// [`Error::InvalidArgument`] for a string with a NUL byte;
    /// [`Error::is_unavailable`] without a driver.
    pub fn from_pci_bus_id(bus_id: &str) -> Result<Self> {
        let c = c_string(bus_id, "PCI bus id")?;
        init()?;
        let mut handle = std::ptr::null_mut();
        // SAFETY: `c` is a NUL-terminated string and `handle` is valid for writes.
        unsafe { nvmlDeviceGetHandleByPciBusId(c.as_ptr(), &mut handle) }.check(|| {
            format!("looking up the NVML device at PCI {bus_id} (nvmlDeviceGetHandleByPciBusId)")
        })?;
        Self::from_handle(handle)
    }

    /// Every device NVML sees, in NVML index order.
    ///
    /// # Errors
    /// As [`device_count`] and [`new`](Self::new).
    pub fn all() -> Result<Vec<Self>> {
        (0..device_count()?).map(Self::new).collect()
    }

    /// Wraps a handle NVML returned, reading its index; a MIG device's handle
    /// (from a `MIG-…` UUID) is found among its parent's MIG devices.
    fn from_handle(handle: nvmlDevice_t) -> Result<Self> {
        let mut is_mig = 0;
        // SAFETY: `handle` came from NVML; `is_mig` is valid for writes. A driver
        // without MIG (or the call) answers with an error: not a MIG device.
        let mig = unsafe { nvmlDeviceIsMigDeviceHandle(handle, &mut is_mig) } == NVML_SUCCESS
            && is_mig != 0;
        if mig {
            let mut parent = std::ptr::null_mut();
            // SAFETY: `handle` is a MIG device's; `parent` is valid for writes.
            unsafe { nvmlDeviceGetDeviceHandleFromMigDeviceHandle(handle, &mut parent) }.check(
                || "finding the GPU of an NVML MIG device (nvmlDeviceGetDeviceHandleFromMigDeviceHandle)",
            )?;
            let parent = Self::from_handle(parent)?;
            for i in 0..parent.mig_device_count()? {
                match parent.mig_device(i) {
                    Ok(m) if m.handle == handle => return Ok(m),
                    _ => {}
                }
            }
            return Err(Error::unsupported(
                format!("finding an NVML MIG device of NVML device {}", parent.index),
                "it is not among the GPU's MIG devices (was MIG reconfigured?)",
            ));
        }
        let mut index = 0;
        // SAFETY: `handle` came from NVML, which stays initialised; `index` is valid
        // for writes.
        unsafe { nvmlDeviceGetIndex(handle, &mut index) }
            .check(|| "reading the index of an NVML device (nvmlDeviceGetIndex)")?;
        Ok(Self {
            handle,
            index,
            mig: None,
        })
    }

    /// NVML's handle, for calls this type does not wrap. It stays valid for the
    /// life of the process.
    pub fn handle(&self) -> nvmlDevice_t {
        self.handle
    }

    /// The device's NVML index (not its CUDA ordinal); for a MIG device
    /// ([`mig_device`](Self::mig_device)), its parent GPU's.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Describes an operation on this device, for error contexts.
    fn ctx(&self, what: &str, function: &str) -> String {
        match self.mig {
            None => format!("{what} of NVML device {} ({function})", self.index),
            Some(m) => format!(
                "{what} of MIG device {m} of NVML device {} ({function})",
                self.index
            ),
        }
    }

    /// Reads one `c_uint` through `call`.
    fn read_uint(
        &self,
        what: &str,
        function: &str,
        call: impl FnOnce(nvmlDevice_t, *mut c_uint) -> nvmlReturn_t,
    ) -> Result<u32> {
        self.read_default(what, function, call)
    }

    /// Reads one value (a number, or a struct NVML fills in) through `call`,
    /// starting from its default.
    fn read_default<T: Default>(
        &self,
        what: &str,
        function: &str,
        call: impl FnOnce(nvmlDevice_t, *mut T) -> nvmlReturn_t,
    ) -> Result<T> {
        self.read_from(T::default(), what, function, call)
    }

    /// Reads one value through `call`, starting from `init` (a versioned
    /// struct with its version set, or the fields NVML reads filled in).
    fn read_from<T>(
        &self,
        init: T,
        what: &str,
        function: &str,
        call: impl FnOnce(nvmlDevice_t, *mut T) -> nvmlReturn_t,
    ) -> Result<T> {
        let mut v = init;
        call(self.handle, &mut v).check(|| self.ctx(what, function))?;
        Ok(v)
    }

    /// The product name (`nvmlDeviceGetName`), e.g. `NVIDIA H100 80GB HBM3`.
    ///
    /// # Errors
    /// NVML's error.
    pub fn name(&self) -> Result<String> {
        read_string(
            NVML_DEVICE_NAME_V2_BUFFER_SIZE,
            || self.ctx("reading the name", "nvmlDeviceGetName"),
            |buf, len| {
                // SAFETY: the handle is valid (see the type's docs); `buf` is valid
                // for writes of `len` bytes.
                unsafe { nvmlDeviceGetName(self.handle, buf, len) }
            },
        )
    }

    /// The UUID (`nvmlDeviceGetUUID`), `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`,
    /// as [`Device::uuid_string`] writes it.
    ///
    /// # Errors
    /// NVML's error.
    pub fn uuid(&self) -> Result<String> {
        read_string(
            NVML_DEVICE_UUID_V2_BUFFER_SIZE,
            || self.ctx("reading the UUID", "nvmlDeviceGetUUID"),
            |buf, len| {
                // SAFETY: the handle is valid (see the type's docs); `buf` is valid
                // for writes of `len` bytes.
                unsafe { nvmlDeviceGetUUID(self.handle, buf, len) }
            },
        )
    }

    /// The UUID without NVML's `GPU-` or `MIG-` prefix
    /// (`uuid_without_prefix` in Python): `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    ///
    /// # Errors
    /// NVML's error.
    pub fn uuid_without_prefix(&self) -> Result<String> {
        Ok(strip_uuid_prefix(&self.uuid()?).to_owned())
    }

    /// The board's serial number (`nvmlDeviceGetSerial`), as printed on it.
    ///
    /// # Errors
    /// NVML's error; [`Error::is_nvml_not_supported`] on boards without one
    /// (most GeForce boards).
    pub fn serial(&self) -> Result<String> {
        read_string(
            NVML_DEVICE_SERIAL_BUFFER_SIZE,
            || self.ctx("reading the serial number", "nvmlDeviceGetSerial"),
            |buf, len| {
                // SAFETY: the handle is valid (see the type's docs); `buf` is valid
                // for writes of `len` bytes.
                unsafe { nvmlDeviceGetSerial(self.handle, buf, len) }
            },
        )
    }

    /// Total, reserved, free and used memory (`nvmlDeviceGetMemoryInfo_v2`; with
    /// drivers that lack it, `nvmlDeviceGetMemoryInfo`, whose `used` includes the
    /// reserved memory and whose `reserved` is then 0).
    ///
    /// # Errors
    /// NVML's error.
    pub fn memory_info(&self) -> Result<MemoryInfo> {
        let mut m = nvmlMemory_v2_t {
            version: struct_version::<nvmlMemory_v2_t>(2),
            ..Default::default()
        };
        // SAFETY: the handle is valid (see the type's docs); `m` is valid for writes
        // and its version field is set.
        let v2 = unsafe { nvmlDeviceGetMemoryInfo_v2(self.handle, &mut m) }
            .check(|| self.ctx("reading the memory usage", "nvmlDeviceGetMemoryInfo_v2"));
        match v2 {
            Ok(()) => Ok(MemoryInfo {
                total: m.total,
                reserved: m.reserved,
                free: m.free,
                used: m.used,
            }),
            Err(e) if is_older_driver(&e) => {
                let mut m = nvmlMemory_t::default();
                // SAFETY: the handle is valid (see the type's docs); `m` is valid for
                // writes.
                unsafe { nvmlDeviceGetMemoryInfo(self.handle, &mut m) }
                    .check(|| self.ctx("reading the memory usage", "nvmlDeviceGetMemoryInfo"))?;
                Ok(MemoryInfo {
                    total: m.total,
                    reserved: 0,
                    free: m.free,
                    used: m.used,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// How busy the GPU and its memory were over the last sample period
    /// (`nvmlDeviceGetUtilizationRates`).
    ///
    /// # Errors
    /// NVML's error ([`Error::is_nvml_not_supported`] on some devices and in
    /// some virtualised setups).
    pub fn utilization(&self) -> Result<Utilization> {
        let mut u = nvmlUtilization_t::default();
        // SAFETY: the handle is valid (see the type's docs); `u` is valid for writes.
        unsafe { nvmlDeviceGetUtilizationRates(self.handle, &mut u) }
            .check(|| self.ctx("reading the utilisation", "nvmlDeviceGetUtilizationRates"))?;
        Ok(Utilization {
            gpu_percent: u.gpu,
            memory_percent: u.memory,
        })
    }

    /// The GPU die's temperature in °C (`nvmlDeviceGetTemperatureV` with
    /// `NVML_TEMPERATURE_GPU`, the versioned-struct query `nvml.h` offers in place
    /// of `nvmlDeviceGetTemperature`; with drivers that lack it, the latter).
    ///
    /// # Errors
    /// NVML's error.
    pub fn temperature_celsius(&self) -> Result<i32> {
        let mut t = nvmlTemperature_t {
            version: struct_version::<nvmlTemperature_t>(1),
            sensorType: NVML_TEMPERATURE_GPU,
            temperature: 0,
        };
        // SAFETY: the handle is valid (see the type's docs); `t` is valid for writes
        // and its version and sensor fields are set.
        let v = unsafe { nvmlDeviceGetTemperatureV(self.handle, &mut t) }
            .check(|| self.ctx("reading the temperature", "nvmlDeviceGetTemperatureV"));
        match v {
            Ok(()) => Ok(t.temperature),
            Err(e) if is_older_driver(&e) => {
                let c = self.read_uint(
                    "reading the temperature",
                    "nvmlDeviceGetTemperature",
                    |h, p| {
                        // SAFETY: `h` is this device's valid handle; `p` is valid for
                        // writes.
                        unsafe { nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU, p) }
                    },
                )?;
                Ok(i32::try_from(c).unwrap_or(i32::MAX))
            }
            Err(e) => Err(e),
        }
    }

    /// The board's power draw in milliwatts (`nvmlDeviceGetPowerUsage`).
    ///
    /// # Errors
    /// NVML's error ([`Error::is_nvml_not_supported`] on boards that cannot
    /// measure it).
    pub fn power_usage_milliwatts(&self) -> Result<u32> {
        self.read_uint(
            "reading the power draw",
            "nvmlDeviceGetPowerUsage",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetPowerUsage(h, p) }
            },
        )
    }

    /// The power limit in effect, in milliwatts (`nvmlDeviceGetEnforcedPowerLimit`:
    /// the lowest of the limits set by the board, the administrator and the
    /// system).
    ///
    /// # Errors
    /// NVML's error ([`Error::is_nvml_not_supported`] on boards without power
    /// management).
    pub fn power_limit_milliwatts(&self) -> Result<u32> {
        self.read_uint(
            "reading the power limit",
            "nvmlDeviceGetEnforcedPowerLimit",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetEnforcedPowerLimit(h, p) }
            },
        )
    }

    /// Reads all four clocks with `get` (`nvmlDeviceGetClockInfo` or
    /// `nvmlDeviceGetMaxClockInfo`).
    fn read_clocks(
        &self,
        what: &str,
        function: &str,
        get: unsafe fn(nvmlDevice_t, nvmlClockType_t, *mut c_uint) -> nvmlReturn_t,
    ) -> Result<Clocks> {
        let one = |kind: nvmlClockType_t, name: &str| {
            self.read_uint(&format!("{what} ({name})"), function, |h, p| {
                // SAFETY: `get` is one of NVML's clock queries; `h` is this device's
                // valid handle and `p` is valid for writes.
                unsafe { get(h, kind, p) }
            })
        };
        Ok(Clocks {
            graphics_mhz: one(NVML_CLOCK_GRAPHICS, "graphics")?,
            sm_mhz: one(NVML_CLOCK_SM, "SM")?,
            memory_mhz: one(NVML_CLOCK_MEM, "memory")?,
            video_mhz: one(NVML_CLOCK_VIDEO, "video")?,
        })
    }

    /// The current clocks (`nvmlDeviceGetClockInfo`).
    ///
    /// # Errors
    /// NVML's error (for any one of the four clocks).
    pub fn clocks(&self) -> Result<Clocks> {
        self.read_clocks(
            "reading the current clock",
            "nvmlDeviceGetClockInfo",
            nvmlDeviceGetClockInfo,
        )
    }

    /// The highest clocks the device supports (`nvmlDeviceGetMaxClockInfo`).
    ///
    /// # Errors
    /// NVML's error (for any one of the four clocks).
    pub fn max_clocks(&self) -> Result<Clocks> {
        self.read_clocks(
            "reading the maximum clock",
            "nvmlDeviceGetMaxClockInfo",
            nvmlDeviceGetMaxClockInfo,
        )
    }

    /// Where the device sits on the PCI bus, and its PCI ids and class
    /// (`nvmlDeviceGetPciInfoExt`; with drivers that lack it,
    /// `nvmlDeviceGetPciInfo`, without the class codes).
    ///
    /// # Errors
    /// NVML's error.
    pub fn pci_info(&self) -> Result<PciInfo> {
        let mut x = nvmlPciInfoExt_t {
            version: struct_version::<nvmlPciInfoExt_t>(1),
            ..Default::default()
        };
        // SAFETY: the handle is valid (see the type's docs); `x` is valid for writes
        // and its version is set.
        let ext = unsafe { nvmlDeviceGetPciInfoExt(self.handle, &mut x) }
            .check(|| self.ctx("reading the PCI information", "nvmlDeviceGetPciInfoExt"));
        match ext {
            Ok(()) => Ok(PciInfo {
                bus_id: from_c_buf(&x.busId),
                domain: x.domain,
                bus: x.bus,
                device: x.device,
                pci_device_id: x.pciDeviceId,
                pci_subsystem_id: x.pciSubSystemId,
                base_class: Some(x.baseClass),
                sub_class: Some(x.subClass),
            }),
            Err(e) if is_older_driver(&e) => {
                let mut p = nvmlPciInfo_t::default();
                // SAFETY: the handle is valid (see the type's docs); `p` is valid
                // for writes.
                unsafe { nvmlDeviceGetPciInfo(self.handle, &mut p) }
                    .check(|| self.ctx("reading the PCI information", "nvmlDeviceGetPciInfo"))?;
                Ok(pci_from(&p))
            }
            Err(e) => Err(e),
        }
    }

    /// The compute capability, `(major, minor)`
    /// (`nvmlDeviceGetCudaComputeCapability`).
    ///
    /// # Errors
    /// NVML's error.
    pub fn compute_capability(&self) -> Result<(i32, i32)> {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: the handle is valid (see the type's docs); both outputs are valid
        // for writes.
        unsafe { nvmlDeviceGetCudaComputeCapability(self.handle, &mut major, &mut minor) }.check(
            || {
                self.ctx(
                    "reading the compute capability",
                    "nvmlDeviceGetCudaComputeCapability",
                )
            },
        )?;
        Ok((major, minor))
    }

    /// The performance state, `Some(0)` (P0, fastest) to `Some(15)` (P15,
    /// slowest), or `None` when NVML reports it unknown
    /// (`nvmlDeviceGetPerformanceState`).
    ///
    /// # Errors
    /// NVML's error.
    pub fn performance_state(&self) -> Result<Option<u32>> {
        let mut s = NVML_PSTATE_UNKNOWN;
        // SAFETY: the handle is valid (see the type's docs); `s` is valid for writes.
        unsafe { nvmlDeviceGetPerformanceState(self.handle, &mut s) }.check(|| {
            self.ctx(
                "reading the performance state",
                "nvmlDeviceGetPerformanceState",
            )
        })?;
        Ok((s.0 <= 15).then_some(s.0))
    }

    /// The speed the (first) fan is set to, in percent of its maximum
    /// (`nvmlDeviceGetFanSpeed`); it may exceed 100 on some boards.
    ///
    /// # Errors
    /// NVML's error; [`Error::is_nvml_not_supported`] on passively cooled boards
    /// (most data-centre GPUs).
    pub fn fan_speed_percent(&self) -> Result<u32> {
        self.read_uint("reading the fan speed", "nvmlDeviceGetFanSpeed", |h, p| {
            // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
            unsafe { nvmlDeviceGetFanSpeed(h, p) }
        })
    }

    /// Whether this device and `other` can use `capability` peer to peer
    /// (`nvmlDeviceGetP2PStatus`; `get_p2p_status` in Python).
    ///
    /// # Errors
    /// NVML's error.
    pub fn p2p_status(&self, other: &SystemDevice, capability: P2pCapability) -> Result<P2pStatus> {
        let mut s = NVML_P2P_STATUS_UNKNOWN;
        // SAFETY: both handles are valid (see the type's docs); `s` is valid for
        // writes.
        unsafe { nvmlDeviceGetP2PStatus(self.handle, other.handle, capability.raw(), &mut s) }
            .check(|| {
                format!(
                    "reading the peer-to-peer {capability:?} status of NVML devices {} and {} \
                     (nvmlDeviceGetP2PStatus)",
                    self.index, other.index
                )
            })?;
        Ok(P2pStatus::from_raw(s))
    }

    /// The closest connection this device and `other` share
    /// (`nvmlDeviceGetTopologyCommonAncestor`; `get_topology_common_ancestor` in
    /// Python).
    ///
    /// # Errors
    /// NVML's error ([`Error::is_nvml_not_supported`] on platforms without
    /// topology information).
    pub fn topology_common_ancestor(&self, other: &SystemDevice) -> Result<TopologyLevel> {
        let mut l = NVML_TOPOLOGY_SYSTEM;
        // SAFETY: both handles are valid (see the type's docs); `l` is valid for
        // writes.
        unsafe { nvmlDeviceGetTopologyCommonAncestor(self.handle, other.handle, &mut l) }.check(
            || {
                format!(
                    "reading the common topology ancestor of NVML devices {} and {} \
                     (nvmlDeviceGetTopologyCommonAncestor)",
                    self.index, other.index
                )
            },
        )?;
        Ok(TopologyLevel::from_raw(l))
    }

    /// The CUDA device with the same UUID, among those CUDA sees.
    ///
    /// # Errors
    /// NVML's error reading the UUID; the driver's error ([`Error::Driver`]);
    /// [`Error::Unsupported`] when no CUDA device has this UUID (it is hidden by
    /// `CUDA_VISIBLE_DEVICES`, or not usable by CUDA).
    pub fn to_device(&self) -> Result<Device> {
        let uuid = self.uuid()?;
        for dev in Device::all()? {
            if dev.uuid_string()?.eq_ignore_ascii_case(&uuid) {
                return Ok(dev);
            }
        }
        Err(Error::unsupported(
            format!(
                "finding the CUDA device of NVML device {} ({uuid})",
                self.index
            ),
            "no CUDA device has this UUID (is it hidden by CUDA_VISIBLE_DEVICES?)",
        ))
    }
}

/// Whether `e` says the driver predates the call or struct version used: NVML
/// lacks the entry point (NVML's code, or the symbol missing from its library,
/// which [`Error::nvml_code`] reports as the same code), or refused the struct
/// version.
fn is_older_driver(e: &Error) -> bool {
    matches!(
        e.nvml_code(),
        Some(NVML_ERROR_FUNCTION_NOT_FOUND | NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
    )
}

/// A set of NVML event kinds (`nvmlEventType*` bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EventTypes(pub u64);

impl EventTypes {
    /// A single-bit ECC error.
    pub const SINGLE_BIT_ECC_ERROR: Self = Self(nvmlEventTypeSingleBitEccError as u64);
    /// A double-bit ECC error.
    pub const DOUBLE_BIT_ECC_ERROR: Self = Self(nvmlEventTypeDoubleBitEccError as u64);
    /// A performance-state change.
    pub const PSTATE: Self = Self(nvmlEventTypePState as u64);
    /// A critical Xid error (the event's data is the Xid).
    pub const XID_CRITICAL_ERROR: Self = Self(nvmlEventTypeXidCriticalError as u64);
    /// A clock change.
    pub const CLOCK: Self = Self(nvmlEventTypeClock as u64);
    /// A power-source change.
    pub const POWER_SOURCE_CHANGE: Self = Self(nvmlEventTypePowerSourceChange as u64);
    /// Every kind NVML knows.
    pub const ALL: Self = Self(nvmlEventTypeAll as u64);

    /// Whether every kind in `other` is in this set.
    pub fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl std::ops::BitOr for EventTypes {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl std::ops::BitAnd for EventTypes {
    type Output = Self;
    fn bitand(self, rhs: Self) -> Self {
        Self(self.0 & rhs.0)
    }
}

/// One event from [`EventSet::wait`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct SystemEvent {
    /// The NVML index of the device it happened on.
    pub device_index: u32,
    /// Its kind (one bit).
    pub event_type: EventTypes,
    /// Kind-specific data (the Xid of an Xid error).
    pub data: u64,
    /// The GPU instance (MIG), or `u32::MAX` when not applicable.
    pub gpu_instance_id: u32,
    /// The compute instance (MIG), or `u32::MAX` when not applicable.
    pub compute_instance_id: u32,
}

/// A set of devices and event kinds to wait on (`nvmlEventSet_t`;
/// `register_events` in Python). Freed when dropped.
#[derive(Debug)]
pub struct EventSet {
    set: nvmlEventSet_t,
}

// SAFETY: an NVML event set may be used from any thread; NVML serialises.
// Soundness contract: rule 11.
unsafe impl Send for EventSet {}
// SAFETY: as above.
// Soundness contract: rule 11.
unsafe impl Sync for EventSet {}

impl EventSet {
    /// An empty set (`nvmlEventSetCreate`).
    ///
    /// # Errors
    /// NVML's error.
    pub fn new() -> Result<Self> {
        init()?;
        let mut set: nvmlEventSet_t = std::ptr::null_mut();
        // SAFETY: `set` is valid for writes.
        unsafe { nvmlEventSetCreate(&mut set) }
            .check(|| "creating an NVML event set (nvmlEventSetCreate)")?;
        Ok(Self { set })
    }

    /// Adds `types` of events of `device` to the set (`nvmlDeviceRegisterEvents`).
    ///
    /// # Errors
    /// NVML's error (`NVML_ERROR_NOT_SUPPORTED` for kinds the device does not
    /// report: see [`SystemDevice::supported_event_types`]).
    pub fn register(&self, device: &SystemDevice, types: EventTypes) -> Result<()> {
        // SAFETY: a live set and a valid device handle.
        unsafe { nvmlDeviceRegisterEvents(device.handle, types.0, self.set) }.check(|| {
            device.ctx(
                &format!("registering events {:#x}", types.0),
                "nvmlDeviceRegisterEvents",
            )
        })
    }

    /// Waits up to `timeout` (whole milliseconds) for an event
    /// (`nvmlEventSetWait`): `None` when none came.
    ///
    /// # Errors
    /// NVML's error; an Xid error on the GPU is reported as an event, not an
    /// error.
    pub fn wait(&self, timeout: std::time::Duration) -> Result<Option<SystemEvent>> {
        let ms = c_uint::try_from(timeout.as_millis()).unwrap_or(c_uint::MAX);
        let mut data = nvmlEventData_t::default();
        // SAFETY: a live set; `data` is valid for writes.
        let rc = unsafe { nvmlEventSetWait(self.set, &mut data, ms) };
        if rc == NVML_ERROR_TIMEOUT {
            return Ok(None);
        }
        rc.check(|| "waiting for an NVML event (nvmlEventSetWait)")?;
        let mut index = 0;
        // SAFETY: the event's device handle comes from NVML; `index` is valid for
        // writes.
        unsafe { nvmlDeviceGetIndex(data.device, &mut index) }
            .check(|| "reading the index of an event's device (nvmlDeviceGetIndex)")?;
        Ok(Some(SystemEvent {
            device_index: index,
            event_type: EventTypes(data.eventType),
            data: data.eventData,
            gpu_instance_id: data.gpuInstanceId,
            compute_instance_id: data.computeInstanceId,
        }))
    }
}

impl Drop for EventSet {
    fn drop(&mut self) {
        // SAFETY: a live set, freed once.
        let _ = unsafe { nvmlEventSetFree(self.set) };
    }
}

/// One NVLink of a device ([`SystemDevice::nvlinks`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct NvlinkInfo {
    /// The link's number on the device.
    pub link: u32,
    /// Whether the link is up.
    pub active: bool,
    /// The NVLink version (`nvmlDeviceGetNvLinkVersion`), when known.
    pub version: Option<u32>,
    /// What is at the other end, when known.
    pub remote: Option<PciInfo>,
}

impl SystemDevice {
    /// The kinds of events this device can report
    /// (`nvmlDeviceGetSupportedEventTypes`).
    ///
    /// # Errors
    /// NVML's error.
    pub fn supported_event_types(&self) -> Result<EventTypes> {
        let mut t = 0;
        // SAFETY: a valid device handle; `t` is valid for writes.
        unsafe { nvmlDeviceGetSupportedEventTypes(self.handle, &mut t) }.check(|| {
            self.ctx(
                "reading the supported event types",
                "nvmlDeviceGetSupportedEventTypes",
            )
        })?;
        Ok(EventTypes(t))
    }

    /// The device's NVLinks (`nvmlDeviceGetNvLinkState`, `…Version`,
    /// `…RemotePciInfo` for each of the `NVML_NVLINK_MAX_LINKS` links); empty for
    /// a device without NVLink.
    ///
    /// # Errors
    /// NVML's error, other than "not supported" (no NVLink) and "invalid argument"
    /// (no such link).
    pub fn nvlinks(&self) -> Result<Vec<NvlinkInfo>> {
        let mut out = Vec::new();
        for link in 0..NVML_NVLINK_MAX_LINKS {
            let mut state = NVML_FEATURE_DISABLED;
            // SAFETY: a valid device handle; `state` is valid for writes.
            let rc = unsafe { nvmlDeviceGetNvLinkState(self.handle, link, &mut state) };
            if rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT {
                continue;
            }
            rc.check(|| {
                self.ctx(
                    &format!("reading NVLink {link}"),
                    "nvmlDeviceGetNvLinkState",
                )
            })?;
            let mut version = 0;
            // SAFETY: as above.
            let version = (unsafe { nvmlDeviceGetNvLinkVersion(self.handle, link, &mut version) }
                == NVML_SUCCESS)
                .then_some(version);
            let mut p = nvmlPciInfo_t::default();
            // SAFETY: as above.
            let remote = (unsafe { nvmlDeviceGetNvLinkRemotePciInfo(self.handle, link, &mut p) }
                == NVML_SUCCESS)
                .then(|| pci_from(&p));
            out.push(NvlinkInfo {
                link,
                active: state == NVML_FEATURE_ENABLED,
                version,
                remote,
            });
        }
        Ok(out)
    }
}

// NVML's view of the device.
impl Device {
    /// This device as NVML sees it, found by UUID (`to_system_device` in Python).
    ///
    /// # Errors
    /// The driver's error reading the UUID ([`Error::Driver`]); NVML's error
    /// ([`Error::is_unavailable`] without NVML).
    pub fn to_system_device(&self) -> Result<SystemDevice> {
        let uuid = self.uuid_string()?;
        SystemDevice::from_uuid(&uuid)
    }
}
