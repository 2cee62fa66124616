//! What runs on a device and how it is doing: compute processes, the PCIe link,
//! temperature thresholds and margin, chip-to-chip mode, the addressing mode,
//! the device's attributes, pending repairs, and the GPUs nearest it.

use std::ffi::c_uint;

use cudars_bindings::nvml::*;

use crate::error::{Error, Result};
use crate::system::device::device_set;
use crate::system::nvml::read_list;
use crate::{system::device::SystemDevice, system::info::TopologyLevel};
use crate::{system::nvml::NvmlCheck as _, system::nvml::struct_version};

/// A process with a compute context on a device
/// ([`SystemDevice::compute_running_processes`]; `ProcessInfo` in Python).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProcessInfo {
    /// The process id.
    pub pid: u32,
    /// The device memory the process uses, in bytes; `None` where NVML cannot
    /// say (Windows with the WDDM driver model).
    pub used_gpu_memory: Option<u64>,
    /// The GPU instance the process runs in, on a MIG device.
    pub gpu_instance_id: Option<u32>,
    /// The compute instance the process runs in, on a MIG device.
    pub compute_instance_id: Option<u32>,
}

impl ProcessInfo {
    pub(crate) fn from_raw(p: &nvmlProcessInfo_t) -> Self {
        // NVML writes all ones where it has no value.
        let id = |v: c_uint| (v != c_uint::MAX).then_some(v);
        Self {
            pid: p.pid,
            used_gpu_memory: (p.usedGpuMemory != u64::MAX).then_some(p.usedGpuMemory),
            gpu_instance_id: id(p.gpuInstanceId),
            compute_instance_id: id(p.computeInstanceId),
        }
    }
}

/// A temperature threshold ([`SystemDevice::temperature_threshold`];
/// `TemperatureThresholds` in Python).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TemperatureThreshold {
    /// The GPU shuts down.
    Shutdown,
    /// The GPU slows down (hardware slowdown).
    Slowdown,
    /// The memory's highest operating temperature.
    MemoryMax,
    /// The GPU's highest operating temperature.
    GpuMax,
    /// The lowest acoustic threshold that may be set.
    AcousticMin,
    /// The acoustic threshold set now.
    AcousticCurrent,
    /// The highest acoustic threshold that may be set.
    AcousticMax,
    /// The GPS (GPU performance boost) threshold set now.
    GpsCurrent,
}

impl TemperatureThreshold {
    pub(crate) fn raw(self) -> nvmlTemperatureThresholds_t {
        match self {
            Self::Shutdown => NVML_TEMPERATURE_THRESHOLD_SHUTDOWN,
            Self::Slowdown => NVML_TEMPERATURE_THRESHOLD_SLOWDOWN,
            Self::MemoryMax => NVML_TEMPERATURE_THRESHOLD_MEM_MAX,
            Self::GpuMax => NVML_TEMPERATURE_THRESHOLD_GPU_MAX,
            Self::AcousticMin => NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MIN,
            Self::AcousticCurrent => NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_CURR,
            Self::AcousticMax => NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MAX,
            Self::GpsCurrent => NVML_TEMPERATURE_THRESHOLD_GPS_CURR,
        }
    }
}

/// How the device addresses host memory ([`SystemDevice::addressing_mode`];
/// `AddressingMode` in Python).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AddressingMode {
    /// Heterogeneous memory management: the kernel driver mirrors host page
    /// tables.
    Hmm,
    /// Address translation services: the GPU uses the CPU's page tables.
    Ats,
    /// A mode this crate does not know (NVML's raw value).
    Other(u32),
}

/// Resource counts of a device or MIG device ([`SystemDevice::attributes`];
/// `DeviceAttributes` in Python).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceAttributes {
    /// Streaming multiprocessors.
    pub multiprocessor_count: u32,
    /// Shared copy engines.
    pub shared_copy_engine_count: u32,
    /// Shared decoders.
    pub shared_decoder_count: u32,
    /// Shared encoders.
    pub shared_encoder_count: u32,
    /// Shared JPEG engines.
    pub shared_jpeg_count: u32,
    /// Shared optical-flow accelerators.
    pub shared_ofa_count: u32,
    /// GPU instance slices.
    pub gpu_instance_slice_count: u32,
    /// Compute instance slices.
    pub compute_instance_slice_count: u32,
    /// Device memory, in MiB.
    pub memory_size_mib: u64,
}

/// Repairs the device waits for ([`SystemDevice::repair_status`];
/// `RepairStatus` in Python).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RepairStatus {
    /// A channel repair is pending.
    pub channel_repair_pending: bool,
    /// A TPC repair is pending.
    pub tpc_repair_pending: bool,
}

/// A thermal sensor's target, what it measures ([`ThermalSensor::target`]), or
/// which sensors to ask for ([`SystemDevice::thermal_settings`]);
/// `ThermalTarget` in Python.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ThermalTarget {
    /// No target.
    None,
    /// The GPU die.
    Gpu,
    /// The memory.
    Memory,
    /// The power supply.
    PowerSupply,
    /// The board.
    Board,
    /// The visual computing device's board.
    VcdBoard,
    /// The visual computing device's inlet.
    VcdInlet,
    /// The visual computing device's outlet.
    VcdOutlet,
    /// Every target (to ask for all sensors).
    All,
    /// NVML does not know.
    Unknown,
    /// A target this crate does not know (NVML's raw value).
    Other(i32),
}

/// The named targets and NVML's values for them.
const THERMAL_TARGETS: [(ThermalTarget, nvmlThermalTarget_t); 10] = [
    (ThermalTarget::None, NVML_THERMAL_TARGET_NONE),
    (ThermalTarget::Gpu, NVML_THERMAL_TARGET_GPU),
    (ThermalTarget::Memory, NVML_THERMAL_TARGET_MEMORY),
    (ThermalTarget::PowerSupply, NVML_THERMAL_TARGET_POWER_SUPPLY),
    (ThermalTarget::Board, NVML_THERMAL_TARGET_BOARD),
    (ThermalTarget::VcdBoard, NVML_THERMAL_TARGET_VCD_BOARD),
    (ThermalTarget::VcdInlet, NVML_THERMAL_TARGET_VCD_INLET),
    (ThermalTarget::VcdOutlet, NVML_THERMAL_TARGET_VCD_OUTLET),
    (ThermalTarget::All, NVML_THERMAL_TARGET_ALL),
    (ThermalTarget::Unknown, NVML_THERMAL_TARGET_UNKNOWN),
];

impl ThermalTarget {
    pub(crate) fn raw(self) -> nvmlThermalTarget_t {
        match self {
            Self::Other(v) => nvmlThermalTarget_t(v),
            named => THERMAL_TARGETS
                .iter()
                .find(|(t, _)| *t == named)
                .map_or(NVML_THERMAL_TARGET_UNKNOWN, |(_, raw)| *raw),
        }
    }

    pub(crate) fn from_raw(raw: nvmlThermalTarget_t) -> Self {
        THERMAL_TARGETS
            .iter()
            .find(|(_, r)| *r == raw)
            .map_or(Self::Other(raw.0), |(t, _)| *t)
    }
}

/// One thermal sensor's reading and range ([`SystemDevice::thermal_settings`];
/// `ThermalSensor` in Python).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ThermalSensor {
    /// The sensor's controller, as NVML numbers it (`nvmlThermalController_t`:
    /// 1 for the GPU's internal sensor, -1 unknown; `ThermalController` in
    /// Python).
    pub controller: i32,
    /// The lowest temperature of the default range, in °C.
    pub default_min_temp: i32,
    /// The highest temperature of the default range, in °C.
    pub default_max_temp: i32,
    /// The temperature now, in °C.
    pub current_temp: i32,
    /// What the sensor measures.
    pub target: ThermalTarget,
}

impl SystemDevice {
    /// The readings and ranges of the thermal sensors of `sensor`
    /// ([`ThermalTarget::All`] for every one; `nvmlDeviceGetThermalSettings`;
    /// `temperature.get_thermal_settings` in Python).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a negative [`ThermalTarget::Other`] or
    /// [`ThermalTarget::Unknown`]; NVML's error
    /// ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on boards without
    /// such sensors).
    pub fn thermal_settings(&self, sensor: ThermalTarget) -> Result<Vec<ThermalSensor>> {
        let what = || format!("reading the thermal settings of {sensor:?}");
        let index = c_uint::try_from(sensor.raw().0).map_err(|_| {
            Error::invalid(
                self.ctx(&what(), "nvmlDeviceGetThermalSettings"),
                "NVML numbers no sensor so",
            )
        })?;
        let zero = nvmlGpuThermalSettings_t__bindgen_ty_1 {
            controller: NVML_THERMAL_CONTROLLER_NONE,
            defaultMinTemp: 0,
            defaultMaxTemp: 0,
            currentTemp: 0,
            target: NVML_THERMAL_TARGET_NONE,
        };
        let mut t = nvmlGpuThermalSettings_t {
            count: 0,
            sensor: [zero; 3],
        };
        // SAFETY: the handle is valid (see the type's docs); `t` is valid for
        // writes.
        unsafe { nvmlDeviceGetThermalSettings(self.handle, index, &mut t) }
            .check(|| self.ctx(&what(), "nvmlDeviceGetThermalSettings"))?;
        Ok(sensors_from(&t))
    }

    /// The processes with a compute context on the device, such as CUDA
    /// programs (`nvmlDeviceGetComputeRunningProcesses`;
    /// `compute_running_processes` in Python). Graphics-only processes are not
    /// listed; the list may change at any time.
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NoPermission`](crate::NvmlErrorKind) for
    /// the whole list of a MIG-enabled GPU without the privilege).
    pub fn compute_running_processes(&self) -> Result<Vec<ProcessInfo>> {
        let raw = read_list(
            nvmlProcessInfo_t::default(),
            || {
                self.ctx(
                    "listing the compute processes",
                    "nvmlDeviceGetComputeRunningProcesses",
                )
            },
            |count, out| {
                // SAFETY: a valid handle; `count` is valid for writes and `out`
                // holds `*count` entries.
                unsafe { nvmlDeviceGetComputeRunningProcesses(self.handle, count, out) }
            },
        )?;
        Ok(raw.iter().map(ProcessInfo::from_raw).collect())
    }

    /// A temperature threshold in °C (`nvmlDeviceGetTemperatureThreshold`;
    /// `temperature.get_threshold` in Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) for
    /// thresholds the board does not have).
    pub fn temperature_threshold(&self, threshold: TemperatureThreshold) -> Result<u32> {
        self.read_uint(
            &format!("reading the {threshold:?} temperature threshold"),
            "nvmlDeviceGetTemperatureThreshold",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetTemperatureThreshold(h, threshold.raw(), p) }
            },
        )
    }

    /// How far the GPU is from its nearest slowdown threshold, in °C
    /// (`nvmlDeviceGetMarginTemperature`; `temperature.margin` in Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// boards that do not report it).
    pub fn temperature_margin(&self) -> Result<i32> {
        let init = nvmlMarginTemperature_t {
            version: struct_version::<nvmlMarginTemperature_t>(1),
            marginTemperature: 0,
        };
        let m = self.read_from(
            init,
            "reading the temperature margin",
            "nvmlDeviceGetMarginTemperature",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for
                // writes and its version is set.
                unsafe { nvmlDeviceGetMarginTemperature(h, p) }
            },
        )?;
        Ok(m.marginTemperature)
    }

    /// The highest PCIe generation the device and the system allow together
    /// (`nvmlDeviceGetMaxPcieLinkGeneration`; `pci_info.link_generation` in
    /// Python).
    ///
    /// # Errors
    /// NVML's error.
    pub fn max_pcie_link_generation(&self) -> Result<u32> {
        self.read_uint(
            "reading the highest PCIe link generation",
            "nvmlDeviceGetMaxPcieLinkGeneration",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetMaxPcieLinkGeneration(h, p) }
            },
        )
    }

    /// The highest PCIe generation the GPU supports
    /// (`nvmlDeviceGetGpuMaxPcieLinkGeneration`; `pci_info.max_link_generation`
    /// in Python).
    ///
    /// # Errors
    /// NVML's error.
    pub fn gpu_max_pcie_link_generation(&self) -> Result<u32> {
        self.read_uint(
            "reading the GPU's highest PCIe link generation",
            "nvmlDeviceGetGpuMaxPcieLinkGeneration",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetGpuMaxPcieLinkGeneration(h, p) }
            },
        )
    }

    /// The widest PCIe link the device and the system allow together, in lanes
    /// (`nvmlDeviceGetMaxPcieLinkWidth`; `pci_info.max_link_width` in Python).
    ///
    /// # Errors
    /// NVML's error.
    pub fn max_pcie_link_width(&self) -> Result<u32> {
        self.read_uint(
            "reading the widest PCIe link",
            "nvmlDeviceGetMaxPcieLinkWidth",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetMaxPcieLinkWidth(h, p) }
            },
        )
    }

    /// The PCIe generation the link runs at now (it drops when idle)
    /// (`nvmlDeviceGetCurrPcieLinkGeneration`; `pci_info.current_link_generation`
    /// in Python).
    ///
    /// # Errors
    /// NVML's error.
    pub fn current_pcie_link_generation(&self) -> Result<u32> {
        self.read_uint(
            "reading the current PCIe link generation",
            "nvmlDeviceGetCurrPcieLinkGeneration",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetCurrPcieLinkGeneration(h, p) }
            },
        )
    }

    /// The PCIe link's width now, in lanes (`nvmlDeviceGetCurrPcieLinkWidth`;
    /// `pci_info.current_link_width` in Python).
    ///
    /// # Errors
    /// NVML's error.
    pub fn current_pcie_link_width(&self) -> Result<u32> {
        self.read_uint(
            "reading the current PCIe link width",
            "nvmlDeviceGetCurrPcieLinkWidth",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetCurrPcieLinkWidth(h, p) }
            },
        )
    }

    /// PCIe traffic over the last 20 ms, in KB/s: `(received, transmitted)`
    /// (`nvmlDeviceGetPcieThroughput`; `pci_info.rx_throughput` and
    /// `tx_throughput` in Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) in
    /// virtual machines with a vGPU).
    pub fn pcie_throughput_kbps(&self) -> Result<(u32, u32)> {
        let one = |counter: nvmlPcieUtilCounter_t, which: &str| {
            self.read_uint(
                &format!("reading the PCIe {which} throughput"),
                "nvmlDeviceGetPcieThroughput",
                |h, p| {
                    // SAFETY: `h` is this device's valid handle; `p` is valid for
                    // writes.
                    unsafe { nvmlDeviceGetPcieThroughput(h, counter, p) }
                },
            )
        };
        Ok((
            one(NVML_PCIE_UTIL_RX_BYTES, "receive")?,
            one(NVML_PCIE_UTIL_TX_BYTES, "transmit")?,
        ))
    }

    /// How many times the PCIe link replayed a transfer
    /// (`nvmlDeviceGetPcieReplayCounter`; `pci_info.replay_counter` in Python).
    ///
    /// # Errors
    /// NVML's error.
    pub fn pcie_replay_counter(&self) -> Result<u32> {
        self.read_uint(
            "reading the PCIe replay counter",
            "nvmlDeviceGetPcieReplayCounter",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetPcieReplayCounter(h, p) }
            },
        )
    }

    /// Whether the chip-to-chip (C2C) link to the CPU is on, as on Grace
    /// Hopper (`nvmlDeviceGetC2cModeInfoV`; `is_c2c_enabled` in Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// GPUs without C2C).
    pub fn is_c2c_enabled(&self) -> Result<bool> {
        let info: nvmlC2cModeInfo_v1_t = self.read_default(
            "reading the C2C mode",
            "nvmlDeviceGetC2cModeInfoV",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetC2cModeInfoV(h, p) }
            },
        )?;
        Ok(info.isC2cEnabled != 0)
    }

    /// How the device addresses host memory, or `None` when it does neither
    /// through HMM nor ATS (`nvmlDeviceGetAddressingMode`; `addressing_mode` in
    /// Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::FunctionNotFound`](crate::NvmlErrorKind)
    /// with drivers before R570).
    pub fn addressing_mode(&self) -> Result<Option<AddressingMode>> {
        let init = nvmlDeviceAddressingMode_t {
            version: struct_version::<nvmlDeviceAddressingMode_t>(1),
            value: 0,
        };
        let m = self.read_from(
            init,
            "reading the addressing mode",
            "nvmlDeviceGetAddressingMode",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for
                // writes and its version is set.
                unsafe { nvmlDeviceGetAddressingMode(h, p) }
            },
        )?;
        Ok(match nvmlDeviceAddressingModeType_t(m.value) {
            NVML_DEVICE_ADDRESSING_MODE_NONE => None,
            NVML_DEVICE_ADDRESSING_MODE_HMM => Some(AddressingMode::Hmm),
            NVML_DEVICE_ADDRESSING_MODE_ATS => Some(AddressingMode::Ats),
            other => Some(AddressingMode::Other(other.0)),
        })
    }

    /// The device's resource counts: SMs, shared engines, MIG slices, memory
    /// (`nvmlDeviceGetAttributes`; `attributes` in Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind)
    /// before Ampere and on Windows).
    pub fn attributes(&self) -> Result<DeviceAttributes> {
        let a: nvmlDeviceAttributes_t = self.read_default(
            "reading the device attributes",
            "nvmlDeviceGetAttributes",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetAttributes(h, p) }
            },
        )?;
        Ok(DeviceAttributes {
            multiprocessor_count: a.multiprocessorCount,
            shared_copy_engine_count: a.sharedCopyEngineCount,
            shared_decoder_count: a.sharedDecoderCount,
            shared_encoder_count: a.sharedEncoderCount,
            shared_jpeg_count: a.sharedJpegCount,
            shared_ofa_count: a.sharedOfaCount,
            gpu_instance_slice_count: a.gpuInstanceSliceCount,
            compute_instance_slice_count: a.computeInstanceSliceCount,
            memory_size_mib: a.memorySizeMB,
        })
    }

    /// Whether a channel or TPC repair is pending (`nvmlDeviceGetRepairStatus`;
    /// `repair_status` in Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind)
    /// before Ampere; `FunctionNotFound` with older drivers).
    pub fn repair_status(&self) -> Result<RepairStatus> {
        let init = nvmlRepairStatus_t {
            version: struct_version::<nvmlRepairStatus_t>(1),
            ..Default::default()
        };
        let r = self.read_from(
            init,
            "reading the repair status",
            "nvmlDeviceGetRepairStatus",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for
                // writes and its version is set.
                unsafe { nvmlDeviceGetRepairStatus(h, p) }
            },
        )?;
        Ok(RepairStatus {
            channel_repair_pending: r.bChannelRepairPending != 0,
            tpc_repair_pending: r.bTpcRepairPending != 0,
        })
    }

    /// The GPUs connected to this one at `level` of the topology
    /// (`nvmlDeviceGetTopologyNearestGpus`; `get_topology_nearest_gpus` in
    /// Python). Linux only.
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// Windows).
    pub fn topology_nearest_gpus(&self, level: TopologyLevel) -> Result<Vec<SystemDevice>> {
        device_set(
            || {
                self.ctx(
                    &format!("finding the GPUs at topology level {level:?}"),
                    "nvmlDeviceGetTopologyNearestGpus",
                )
            },
            |count, out| {
                // SAFETY: a valid handle; `count` is valid for writes and `out`
                // holds `*count` handles.
                unsafe { nvmlDeviceGetTopologyNearestGpus(self.handle, level.raw(), count, out) }
            },
        )
    }
}

/// The sensors NVML filled in (at most the three the struct holds).
fn sensors_from(t: &nvmlGpuThermalSettings_t) -> Vec<ThermalSensor> {
    t.sensor
        .iter()
        .take(t.count as usize)
        .map(|s| ThermalSensor {
            controller: s.controller.0,
            default_min_temp: s.defaultMinTemp,
            default_max_temp: s.defaultMaxTemp,
            current_temp: s.currentTemp,
            target: ThermalTarget::from_raw(s.target),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::PciInfo;
    use super::*;

    #[test]
    fn process_values_nvml_lacks_are_none() {
        let p = ProcessInfo::from_raw(&nvmlProcessInfo_t {
            pid: 42,
            usedGpuMemory: u64::MAX,
            gpuInstanceId: u32::MAX,
            computeInstanceId: u32::MAX,
        });
        assert_eq!(
            p,
            ProcessInfo {
                pid: 42,
                used_gpu_memory: None,
                gpu_instance_id: None,
                compute_instance_id: None,
            }
        );
        let p = ProcessInfo::from_raw(&nvmlProcessInfo_t {
            pid: 7,
            usedGpuMemory: 1 << 20,
            gpuInstanceId: 1,
            computeInstanceId: 0,
        });
        assert_eq!(p.used_gpu_memory, Some(1 << 20));
        assert_eq!(
            (p.gpu_instance_id, p.compute_instance_id),
            (Some(1), Some(0))
        );
    }

    #[test]
    fn thermal_targets_round_trip_and_sensors_stop_at_the_count() {
        for (t, raw) in THERMAL_TARGETS {
            assert_eq!(t.raw(), raw);
            assert_eq!(ThermalTarget::from_raw(raw), t);
        }
        assert_eq!(
            ThermalTarget::from_raw(nvmlThermalTarget_t(3)),
            ThermalTarget::Other(3)
        );
        assert_eq!(ThermalTarget::Other(3).raw(), nvmlThermalTarget_t(3));
        let one = nvmlGpuThermalSettings_t__bindgen_ty_1 {
            controller: NVML_THERMAL_CONTROLLER_GPU_INTERNAL,
            defaultMinTemp: -5,
            defaultMaxTemp: 95,
            currentTemp: 40,
            target: NVML_THERMAL_TARGET_GPU,
        };
        let t = nvmlGpuThermalSettings_t {
            count: 1,
            sensor: [one; 3],
        };
        assert_eq!(
            sensors_from(&t),
            [ThermalSensor {
                controller: 1,
                default_min_temp: -5,
                default_max_temp: 95,
                current_temp: 40,
                target: ThermalTarget::Gpu,
            }]
        );
        // A count past the struct's room reads only what is there.
        let t = nvmlGpuThermalSettings_t { count: 9, ..t };
        assert_eq!(sensors_from(&t).len(), 3);
    }

    #[test]
    fn uuid_prefixes_are_stripped() {
        use crate::system::nvml::strip_uuid_prefix;
        let bare = "2c9d9b41-1f0a-7d3e-8c4b-0a1b2c3d4e5f";
        assert_eq!(strip_uuid_prefix(&format!("GPU-{bare}")), bare);
        assert_eq!(strip_uuid_prefix(&format!("MIG-{bare}")), bare);
        assert_eq!(strip_uuid_prefix(&format!("gpu-{bare}")), bare);
        assert_eq!(strip_uuid_prefix(bare), bare);
        assert_eq!(strip_uuid_prefix("GP"), "GP");
        assert_eq!(strip_uuid_prefix("GPU€x"), "GPU€x");
    }

    #[test]
    fn pci_ids_split_into_vendor_and_device() {
        let p = PciInfo {
            pci_device_id: 0x2330_10DE,
            pci_subsystem_id: 0x16C1_10DE,
            ..PciInfo::default()
        };
        assert_eq!((p.vendor_id(), p.device_id()), (0x10DE, 0x2330));
        assert_eq!(p.subsystem_device_id(), 0x16C1);
    }

    #[test]
    fn thresholds_and_levels_map_to_nvml_values() {
        assert_eq!(
            TemperatureThreshold::Shutdown.raw(),
            NVML_TEMPERATURE_THRESHOLD_SHUTDOWN
        );
        assert_eq!(
            TemperatureThreshold::GpsCurrent.raw(),
            NVML_TEMPERATURE_THRESHOLD_GPS_CURR
        );
        for level in [
            TopologyLevel::Internal,
            TopologyLevel::Single,
            TopologyLevel::Multiple,
            TopologyLevel::HostBridge,
            TopologyLevel::Node,
            TopologyLevel::System,
            TopologyLevel::Other(77),
        ] {
            assert_eq!(TopologyLevel::from_raw(level.raw()), level);
        }
    }
}
