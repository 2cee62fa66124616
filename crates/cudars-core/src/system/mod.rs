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
//! | `get_num_devices` | [`device_count`] (NVML's count, every GPU in the machine; CUDA's visible devices are [`Device::count`](crate::Device::count)) |
//! | `get_driver_branch` | [`driver_branch`] |
//! | `get_kernel_mode_driver_version` | [`kernel_mode_driver_version`] (numbers); [`driver_version`] (the string) |
//! | `get_nvml_version` | [`nvml_version`] |
//! | `get_process_name` | [`process_name`] |
//! | `get_p2p_status`, `get_topology_common_ancestor` | [`SystemDevice::p2p_status`], [`SystemDevice::topology_common_ancestor`] |
//! | `Device` | [`SystemDevice`] |
//! | `cuda.core.Device.to_system_device` | [`Device::to_system_device`](crate::Device::to_system_device) |
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
//! | `NvmlError` and its subclasses (`NotSupportedError`, …) | [`Error::Nvml`](crate::Error::Nvml), whose [`nvml_kind`](crate::Error::nvml_kind) is the [`NvmlErrorKind`] each subclass stands for, to `match` on ([`is_nvml_not_supported`](crate::Error::is_nvml_not_supported) for `NotSupportedError`) |
//! | `LibraryNotFoundError` (no NVML), `FunctionNotFoundError` | [`Error::Unavailable`](crate::Error::Unavailable) ([`is_unavailable`](crate::Error::is_unavailable)), as for any missing library or entry point; its [`nvml_kind`](crate::Error::nvml_kind) is [`NvmlErrorKind::LibraryNotFound`] or [`NvmlErrorKind::FunctionNotFound`] |
//!
//! # Settings
//!
//! The setters change the device for every process until changed back (or the
//! driver unloads, without persistence mode), and need root: without it NVML
//! refuses with [`NvmlErrorKind::NoPermission`], on a device without the feature
//! with `NotSupported`. An entry point the installed driver's NVML lacks is an
//! [`Error::Unavailable`](crate::Error::Unavailable) whose [`nvml_kind`](crate::Error::nvml_kind) is
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
//! driver's `cuInit` in [`Device`](crate::Device).
//!
//! NVML needs the driver's `libnvidia-ml.so.1` (`nvml.dll` on Windows), which is
//! installed with the display driver rather than the CUDA toolkit; without it every
//! function returns an [`Error::Unavailable`](crate::Error::Unavailable) whose reason lists where the library
//! was searched for.
//!
//! Errors are the crate's one [`Error`](crate::Error): NVML's own failures are
//! [`Error::Nvml`](crate::Error::Nvml), with NVML's code, name and description as the source.
//!
//! NVML numbers devices on its own: an NVML index is not a CUDA ordinal (NVML
//! ignores `CUDA_VISIBLE_DEVICES` and sorts by PCI bus id). Convert between the two
//! by UUID with [`Device::to_system_device`](crate::Device::to_system_device) and
//! [`SystemDevice::to_device`].

pub use crate::error::NvmlErrorKind;

pub(crate) mod clocks;
pub(crate) mod control;
pub(crate) mod device;
pub(crate) mod driver;
pub(crate) mod events;
pub(crate) mod fan;
pub(crate) mod fields;
pub(crate) mod hardware;
pub(crate) mod hardware_types;
pub(crate) mod info;
pub(crate) mod nvlink;
pub(crate) mod nvml;
pub(crate) mod status;

pub use clocks::{ClockId, ClockType, ClocksEventReasons};
pub use control::{ClockOffsets, DynamicPstatesInfo, MAX_PSTATE, PstateUtilization};
pub use device::SystemDevice;
pub use driver::{
    cuda_driver_version, device_count, driver_branch, driver_version, kernel_mode_driver_version,
    nvml_version, process_name, user_mode_driver_version,
};
pub use events::{EventSet, EventTypes, SystemEvent};
pub use fan::Fan;
pub use fields::{FieldId, FieldSample, FieldValue};
pub use hardware::BbxFlushTime;
pub use hardware_types::{
    AffinityScope, Bar1MemoryInfo, Brand, CoolerControl, CoolerInfo, CoolerTarget, DeviceArch,
    FanControlPolicy, InforomObject, MigMode,
};
pub use info::{Clocks, MemoryInfo, P2pCapability, P2pStatus, PciInfo, TopologyLevel, Utilization};
pub use nvlink::NvlinkInfo;
pub use nvml::{initialize, is_initialized, validate};
pub use status::{
    AddressingMode, DeviceAttributes, ProcessInfo, RepairStatus, TemperatureThreshold,
    ThermalSensor, ThermalTarget,
};
