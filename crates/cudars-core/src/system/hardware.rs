//! What a GPU is and how it is built, as NVML reports it: MIG, InfoROM, CPU and
//! memory affinity, BAR1, fans and coolers, architecture, brand, NUMA node,
//! persistence and display modes.

use std::ffi::{c_uint, c_ulong};

use cudars_bindings::nvml::*;

use crate::error::Result;
use crate::system::device::{SystemDevice, device_set};
use crate::system::fan::Fan;
use crate::system::hardware_types::{
    AFFINITY_BITS, AffinityScope, Bar1MemoryInfo, Brand, CoolerControl, CoolerInfo, DeviceArch,
    InforomObject, MigMode, cooler_targets, unpack_bitmask,
};
use crate::{
    system::nvml::NvmlCheck as _, system::nvml::read_string, system::nvml::struct_version,
};

impl SystemDevice {
    /// Reads an `nvmlEnableState_t` through `call`, as a `bool`.
    fn read_enabled(
        &self,
        what: &str,
        function: &str,
        call: impl FnOnce(nvmlDevice_t, *mut nvmlEnableState_t) -> nvmlReturn_t,
    ) -> Result<bool> {
        self.read_from(NVML_FEATURE_DISABLED, what, function, call)
            .map(|state| state == NVML_FEATURE_ENABLED)
    }

    /// The architecture (`nvmlDeviceGetArchitecture`; `arch` in Python):
    /// [`DeviceArch::Hopper`] on an H100.
    ///
    /// # Errors
    /// NVML's error.
    pub fn arch(&self) -> Result<DeviceArch> {
        let a = self.read_uint(
            "reading the architecture",
            "nvmlDeviceGetArchitecture",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetArchitecture(h, p) }
            },
        )?;
        Ok(DeviceArch::from_raw(a))
    }

    /// The product brand (`nvmlDeviceGetBrand`): [`Brand::Tesla`] on data-centre
    /// GPUs; `to_string()` gives Python's `brand` string.
    ///
    /// # Errors
    /// NVML's error.
    pub fn brand(&self) -> Result<Brand> {
        self.read_from(
            NVML_BRAND_UNKNOWN,
            "reading the brand",
            "nvmlDeviceGetBrand",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetBrand(h, p) }
            },
        )
        .map(Brand::from_raw)
    }

    /// The NUMA node the GPU itself is (`nvmlDeviceGetNumaNodeId`;
    /// `numa_node_id` in Python), on platforms where GPU memory is a NUMA node
    /// (Grace Hopper). It is not the node nearest the GPU: for that see
    /// [`memory_affinity`](Self::memory_affinity).
    ///
    /// # Errors
    /// NVML's error: [`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// platforms where the GPU is not a NUMA node.
    pub fn numa_node_id(&self) -> Result<u32> {
        self.read_uint(
            "reading the NUMA node",
            "nvmlDeviceGetNumaNodeId",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetNumaNodeId(h, p) }
            },
        )
    }

    /// Whether persistence mode is on (`nvmlDeviceGetPersistenceMode`;
    /// `is_persistence_mode_enabled` in Python): the driver stays loaded while
    /// no client uses the GPU. Linux only.
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// Windows).
    pub fn is_persistence_mode_enabled(&self) -> Result<bool> {
        self.read_enabled(
            "reading the persistence mode",
            "nvmlDeviceGetPersistenceMode",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetPersistenceMode(h, p) }
            },
        )
    }

    /// Whether a display is connected to one of the GPU's connectors
    /// (`nvmlDeviceGetDisplayMode`; `is_display_connected` in Python).
    ///
    /// # Errors
    /// NVML's error.
    pub fn is_display_connected(&self) -> Result<bool> {
        self.read_enabled(
            "reading the display mode",
            "nvmlDeviceGetDisplayMode",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetDisplayMode(h, p) }
            },
        )
    }

    /// Whether a display is initialised on the GPU, monitor or not
    /// (`nvmlDeviceGetDisplayActive`; `is_display_active` in Python).
    ///
    /// # Errors
    /// NVML's error.
    pub fn is_display_active(&self) -> Result<bool> {
        self.read_enabled(
            "reading whether a display is active",
            "nvmlDeviceGetDisplayActive",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetDisplayActive(h, p) }
            },
        )
    }

    /// The minor number of the device node, `/dev/nvidia<minor>`
    /// (`nvmlDeviceGetMinorNumber`; `minor_number` in Python). Linux only.
    ///
    /// # Errors
    /// NVML's error.
    pub fn minor_number(&self) -> Result<u32> {
        self.read_uint(
            "reading the minor number",
            "nvmlDeviceGetMinorNumber",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetMinorNumber(h, p) }
            },
        )
    }

    /// The GPU module's identifier on its baseboard, 0 for boards that are not
    /// baseboards (`nvmlDeviceGetModuleId`; `module_id` in Python).
    ///
    /// # Errors
    /// NVML's error.
    pub fn module_id(&self) -> Result<u32> {
        self.read_uint("reading the module id", "nvmlDeviceGetModuleId", |h, p| {
            // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
            unsafe { nvmlDeviceGetModuleId(h, p) }
        })
    }

    // --- MIG ---------------------------------------------------------------

    /// Whether this handle is a MIG device (one compute instance of a GPU in
    /// MIG mode), as [`mig_device`](Self::mig_device) returns
    /// (`nvmlDeviceIsMigDeviceHandle`; `mig.is_mig_device` in Python).
    ///
    /// # Errors
    /// NVML's error.
    pub fn is_mig_device(&self) -> Result<bool> {
        let v = self.read_uint(
            "asking whether it is a MIG device",
            "nvmlDeviceIsMigDeviceHandle",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceIsMigDeviceHandle(h, p) }
            },
        )?;
        Ok(v != 0)
    }

    /// The current and pending MIG mode (`nvmlDeviceGetMigMode`; `mig.mode` and
    /// `mig.pending_mode` in Python).
    ///
    /// # Errors
    /// NVML's error: [`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on GPUs
    /// without MIG (before Ampere, consumer boards).
    pub fn mig_mode(&self) -> Result<MigMode> {
        let (mut current, mut pending) = (0, 0);
        // SAFETY: the handle is valid (see the type's docs); both outputs are
        // valid for writes.
        unsafe { nvmlDeviceGetMigMode(self.handle, &mut current, &mut pending) }
            .check(|| self.ctx("reading the MIG mode", "nvmlDeviceGetMigMode"))?;
        Ok(MigMode {
            current: current == NVML_DEVICE_MIG_ENABLE,
            pending: pending == NVML_DEVICE_MIG_ENABLE,
        })
    }

    /// How many MIG devices can exist under this GPU, 0 when MIG is off
    /// (`nvmlDeviceGetMaxMigDeviceCount`; `mig.device_count` in Python). Some
    /// indices below it may hold no MIG device: [`mig_devices`](Self::mig_devices)
    /// skips those.
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on GPUs
    /// without MIG).
    pub fn mig_device_count(&self) -> Result<u32> {
        self.read_uint(
            "reading the MIG device count",
            "nvmlDeviceGetMaxMigDeviceCount",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetMaxMigDeviceCount(h, p) }
            },
        )
    }

    /// The MIG device at `index` under this GPU
    /// (`nvmlDeviceGetMigDeviceHandleByIndex`; `mig.get_device_by_index` in
    /// Python), usable with the queries NVML answers per compute instance. Its
    /// [`index`](Self::index) is this GPU's. A MIG device's handle stays valid
    /// until its compute instance is destroyed (or the GPU reset); ask again
    /// after reconfiguring MIG.
    ///
    /// # Errors
    /// NVML's error: [`NvmlErrorKind::NotFound`](crate::NvmlErrorKind) when no
    /// MIG device is at `index`, `InvalidArgument` past
    /// [`mig_device_count`](Self::mig_device_count), `NotSupported` without MIG.
    pub fn mig_device(&self, index: u32) -> Result<SystemDevice> {
        let mut handle = std::ptr::null_mut();
        // SAFETY: the handle is valid (see the type's docs); `handle` is valid for
        // writes.
        unsafe { nvmlDeviceGetMigDeviceHandleByIndex(self.handle, index, &mut handle) }.check(
            || {
                self.ctx(
                    &format!("opening MIG device {index}"),
                    "nvmlDeviceGetMigDeviceHandleByIndex",
                )
            },
        )?;
        Ok(SystemDevice {
            handle,
            index: self.index,
            mig: Some(index),
        })
    }

    /// Every MIG device under this GPU (`mig.get_all_devices` in Python): those
    /// of the indices below [`mig_device_count`](Self::mig_device_count) that
    /// hold one. Empty when MIG is off.
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on GPUs
    /// without MIG).
    pub fn mig_devices(&self) -> Result<Vec<SystemDevice>> {
        let mut out = Vec::new();
        for i in 0..self.mig_device_count()? {
            match self.mig_device(i) {
                Ok(d) => out.push(d),
                Err(e) if e.nvml_kind() == Some(crate::error::NvmlErrorKind::NotFound) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// The GPU a MIG device belongs to
    /// (`nvmlDeviceGetDeviceHandleFromMigDeviceHandle`; `mig.parent` in Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::InvalidArgument`](crate::NvmlErrorKind) when
    /// this is not a MIG device).
    pub fn mig_parent(&self) -> Result<SystemDevice> {
        let mut handle = std::ptr::null_mut();
        // SAFETY: the handle is valid (see the type's docs); `handle` is valid for
        // writes.
        unsafe { nvmlDeviceGetDeviceHandleFromMigDeviceHandle(self.handle, &mut handle) }.check(
            || {
                self.ctx(
                    "reading the parent GPU",
                    "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
                )
            },
        )?;
        SystemDevice::from_handle(handle)
    }

    // --- InfoROM -----------------------------------------------------------

    /// The InfoROM image version (`nvmlDeviceGetInforomImageVersion`;
    /// `inforom.image_version` in Python), which, like the VBIOS version,
    /// names exactly what is flashed on the board.
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on boards
    /// without an InfoROM).
    pub fn inforom_image_version(&self) -> Result<String> {
        read_string(
            NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE,
            || {
                self.ctx(
                    "reading the InfoROM image version",
                    "nvmlDeviceGetInforomImageVersion",
                )
            },
            |buf, len| {
                // SAFETY: the handle is valid; `buf` is valid for writes of `len`
                // bytes.
                unsafe { nvmlDeviceGetInforomImageVersion(self.handle, buf, len) }
            },
        )
    }

    /// The version of one InfoROM object (`nvmlDeviceGetInforomVersion`;
    /// `inforom.get_version` in Python): which features the board's InfoROM
    /// supports.
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on boards
    /// without an InfoROM or without that object).
    pub fn inforom_version(&self, object: InforomObject) -> Result<String> {
        read_string(
            NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE,
            || {
                self.ctx(
                    &format!("reading the version of InfoROM object {object:?}"),
                    "nvmlDeviceGetInforomVersion",
                )
            },
            |buf, len| {
                // SAFETY: the handle is valid; `buf` is valid for writes of `len`
                // bytes.
                unsafe { nvmlDeviceGetInforomVersion(self.handle, object.raw(), buf, len) }
            },
        )
    }

    /// The checksum of the configuration stored in the InfoROM
    /// (`nvmlDeviceGetInforomConfigurationChecksum`;
    /// `inforom.configuration_checksum` in Python): equal on two GPUs with the
    /// same configuration.
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on boards
    /// without an InfoROM).
    pub fn inforom_configuration_checksum(&self) -> Result<u32> {
        self.read_uint(
            "reading the InfoROM configuration checksum",
            "nvmlDeviceGetInforomConfigurationChecksum",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetInforomConfigurationChecksum(h, p) }
            },
        )
    }

    /// Reads the InfoROM from flash and checks its checksums
    /// (`nvmlDeviceValidateInforom`; `inforom.validate` in Python).
    ///
    /// # Errors
    /// NVML's error: [`NvmlErrorKind::CorruptedInforom`](crate::NvmlErrorKind)
    /// when it is corrupted, `NotSupported` on boards without an InfoROM.
    pub fn validate_inforom(&self) -> Result<()> {
        // SAFETY: the handle is valid (see the type's docs).
        unsafe { nvmlDeviceValidateInforom(self.handle) }
            .check(|| self.ctx("validating the InfoROM", "nvmlDeviceValidateInforom"))
    }

    /// When the BBX (black box) InfoROM object was last flushed during this
    /// run of the driver, and how long the flush took
    /// (`nvmlDeviceGetLastBBXFlushTime`; `inforom.bbx_flush_time` in Python).
    ///
    /// # Errors
    /// NVML's error: [`NvmlErrorKind::NotReady`](crate::NvmlErrorKind) when the
    /// object has not been flushed yet, `NotSupported` on boards without an
    /// InfoROM.
    pub fn inforom_bbx_flush_time(&self) -> Result<BbxFlushTime> {
        let (mut timestamp, mut duration_us) = (0, 0);
        // SAFETY: the handle is valid (see the type's docs); both outputs are
        // valid for writes.
        unsafe { nvmlDeviceGetLastBBXFlushTime(self.handle, &mut timestamp, &mut duration_us) }
            .check(|| {
                self.ctx(
                    "reading when the InfoROM black box was last flushed",
                    "nvmlDeviceGetLastBBXFlushTime",
                )
            })?;
        Ok(BbxFlushTime {
            timestamp,
            // `unsigned long`: 64 bits on Linux, 32 on Windows.
            #[allow(clippy::useless_conversion)]
            duration_us: u64::from(duration_us),
        })
    }

    /// The board part number programmed into the InfoROM
    /// (`nvmlDeviceGetBoardPartNumber`; `inforom.board_part_number` in Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) when the
    /// board has none).
    pub fn board_part_number(&self) -> Result<String> {
        read_string(
            NVML_DEVICE_PART_NUMBER_BUFFER_SIZE,
            || {
                self.ctx(
                    "reading the board part number",
                    "nvmlDeviceGetBoardPartNumber",
                )
            },
            |buf, len| {
                // SAFETY: the handle is valid; `buf` is valid for writes of `len`
                // bytes.
                unsafe { nvmlDeviceGetBoardPartNumber(self.handle, buf, len) }
            },
        )
    }

    // --- Affinity ----------------------------------------------------------

    /// Reads an affinity bitmask through `call` and unpacks it.
    fn read_affinity(
        &self,
        what: &str,
        function: &str,
        call: impl FnOnce(nvmlDevice_t, c_uint, *mut c_ulong) -> nvmlReturn_t,
    ) -> Result<Vec<usize>> {
        let words = AFFINITY_BITS / c_ulong::BITS as usize;
        let mut set: Vec<c_ulong> = vec![0; words];
        call(self.handle, words as c_uint, set.as_mut_ptr()).check(|| self.ctx(what, function))?;
        Ok(unpack_bitmask(&set))
    }

    /// The CPUs (`AffinityScope::Node`: those of the NUMA nodes; `Socket`: of
    /// the sockets) nearest the GPU, as CPU numbers
    /// (`nvmlDeviceGetCpuAffinityWithinScope`; `get_cpu_affinity` in Python).
    /// Linux only.
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// Windows and some virtual machines).
    pub fn cpu_affinity(&self, scope: AffinityScope) -> Result<Vec<usize>> {
        self.read_affinity(
            &format!("reading the {scope:?} CPU affinity"),
            "nvmlDeviceGetCpuAffinityWithinScope",
            |h, n, p| {
                // SAFETY: `h` is this device's valid handle; `p` holds `n` words.
                unsafe { nvmlDeviceGetCpuAffinityWithinScope(h, n, p, scope.raw()) }
            },
        )
    }

    /// The NUMA nodes (`AffinityScope::Node`) or CPU sockets (`Socket`) with the
    /// best memory affinity to the GPU, as node or socket numbers
    /// (`nvmlDeviceGetMemoryAffinity`; `get_memory_affinity` in Python). Linux
    /// only.
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// Windows and some virtual machines).
    pub fn memory_affinity(&self, scope: AffinityScope) -> Result<Vec<usize>> {
        self.read_affinity(
            &format!("reading the {scope:?} memory affinity"),
            "nvmlDeviceGetMemoryAffinity",
            |h, n, p| {
                // SAFETY: `h` is this device's valid handle; `p` holds `n` words.
                unsafe { nvmlDeviceGetMemoryAffinity(h, n, p, scope.raw()) }
            },
        )
    }

    /// Binds the calling thread to the CPUs nearest the GPU
    /// (`nvmlDeviceSetCpuAffinity`; `set_cpu_affinity` in Python). Linux only.
    ///
    /// # Errors
    /// NVML's error.
    pub fn set_cpu_affinity(&self) -> Result<()> {
        // SAFETY: the handle is valid (see the type's docs).
        unsafe { nvmlDeviceSetCpuAffinity(self.handle) }.check(|| {
            self.ctx(
                "binding the calling thread to the CPUs near",
                "nvmlDeviceSetCpuAffinity",
            )
        })
    }

    /// Undoes [`set_cpu_affinity`](Self::set_cpu_affinity): the calling thread
    /// may run on any CPU again (`nvmlDeviceClearCpuAffinity`;
    /// `clear_cpu_affinity` in Python). Linux only.
    ///
    /// # Errors
    /// NVML's error.
    pub fn clear_cpu_affinity(&self) -> Result<()> {
        // SAFETY: the handle is valid (see the type's docs).
        unsafe { nvmlDeviceClearCpuAffinity(self.handle) }.check(|| {
            self.ctx(
                "clearing the calling thread's CPU binding to",
                "nvmlDeviceClearCpuAffinity",
            )
        })
    }

    /// The GPUs nearest to CPU `cpu` (`nvmlSystemGetTopologyGpuSet`;
    /// `get_all_devices_with_cpu_affinity` in Python). Linux only.
    ///
    /// # Errors
    /// NVML's error.
    pub fn all_with_cpu_affinity(cpu: u32) -> Result<Vec<SystemDevice>> {
        crate::system::nvml::init()?;
        device_set(
            || format!("finding the GPUs near CPU {cpu} (nvmlSystemGetTopologyGpuSet)"),
            |count, out| {
                // SAFETY: `count` is valid for writes and `out` holds `*count`
                // handles.
                unsafe { nvmlSystemGetTopologyGpuSet(cpu, count, out) }
            },
        )
    }

    // --- BAR1 --------------------------------------------------------------

    /// BAR1 memory: total, free and used (`nvmlDeviceGetBAR1MemoryInfo`;
    /// `bar1_memory_info` in Python).
    ///
    /// # Errors
    /// NVML's error.
    pub fn bar1_memory_info(&self) -> Result<Bar1MemoryInfo> {
        let m: nvmlBAR1Memory_t = self.read_default(
            "reading the BAR1 memory usage",
            "nvmlDeviceGetBAR1MemoryInfo",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetBAR1MemoryInfo(h, p) }
            },
        )?;
        Ok(Bar1MemoryInfo {
            total: m.bar1Total,
            free: m.bar1Free,
            used: m.bar1Used,
        })
    }

    // --- Fans and coolers --------------------------------------------------

    /// How many fans the board has (`nvmlDeviceGetNumFans`; `num_fans` in
    /// Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// passively cooled boards, most data-centre GPUs).
    pub fn fan_count(&self) -> Result<u32> {
        self.read_uint("counting the fans", "nvmlDeviceGetNumFans", |h, p| {
            // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
            unsafe { nvmlDeviceGetNumFans(h, p) }
        })
    }

    /// Fan `fan` of the board (`get_fan` in Python), whose queries go to NVML
    /// when called; a number past [`fan_count`](Self::fan_count) makes them fail
    /// with [`NvmlErrorKind::InvalidArgument`](crate::NvmlErrorKind).
    pub fn fan(&self, fan: u32) -> Fan {
        Fan { device: *self, fan }
    }

    /// The lowest and highest speed the fans may be set to, in percent
    /// (`nvmlDeviceGetMinMaxFanSpeed`; `FanInfo.min_max_speed` in Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// passively cooled boards).
    pub fn fan_min_max_speed(&self) -> Result<(u32, u32)> {
        let (mut lo, mut hi) = (0, 0);
        // SAFETY: the handle is valid (see the type's docs); both outputs are
        // valid for writes.
        unsafe { nvmlDeviceGetMinMaxFanSpeed(self.handle, &mut lo, &mut hi) }
            .check(|| self.ctx("reading the fan speed range", "nvmlDeviceGetMinMaxFanSpeed"))?;
        Ok((lo, hi))
    }

    /// Cooler `index`: its control signal and what it cools
    /// (`nvmlDeviceGetCoolerInfo`; `cooler` in Python, for cooler 0).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// boards without coolers NVML can see, and drivers before R565).
    pub fn cooler_info(&self, index: u32) -> Result<CoolerInfo> {
        let mut c = nvmlCoolerInfo_t {
            version: struct_version::<nvmlCoolerInfo_t>(1),
            index,
            ..Default::default()
        };
        // SAFETY: the handle is valid (see the type's docs); `c` is valid for writes
        // and its version and index fields are set.
        unsafe { nvmlDeviceGetCoolerInfo(self.handle, &mut c) }.check(|| {
            self.ctx(
                &format!("reading cooler {index}"),
                "nvmlDeviceGetCoolerInfo",
            )
        })?;
        let signal_type = match c.signalType {
            NVML_THERMAL_COOLER_SIGNAL_NONE => None,
            NVML_THERMAL_COOLER_SIGNAL_TOGGLE => Some(CoolerControl::Toggle),
            NVML_THERMAL_COOLER_SIGNAL_VARIABLE => Some(CoolerControl::Variable),
            other => Some(CoolerControl::Other(other.0)),
        };
        Ok(CoolerInfo {
            signal_type,
            targets: cooler_targets(c.target.0),
        })
    }
}

/// The last flush of the InfoROM's BBX (black box) object
/// ([`SystemDevice::inforom_bbx_flush_time`]; the pair `bbx_flush_time` returns
/// in Python).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BbxFlushTime {
    /// When the flush started, as NVML's timestamp.
    pub timestamp: u64,
    /// How long the flush took, in microseconds.
    pub duration_us: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::system::fan::*;
    #[allow(unused_imports)]
    use crate::system::hardware_types::*;
    use crate::system::nvml::read_list;

    #[test]
    fn bitmasks_unpack_to_indices() {
        let bits = c_ulong::BITS as usize;
        assert_eq!(unpack_bitmask(&[]), Vec::<usize>::new());
        assert_eq!(unpack_bitmask(&[0, 0]), Vec::<usize>::new());
        assert_eq!(unpack_bitmask(&[0b1011]), [0, 1, 3]);
        assert_eq!(
            unpack_bitmask(&[1 << (bits - 1), 0b10]),
            [bits - 1, bits + 1]
        );
        assert_eq!(unpack_bitmask(&[c_ulong::MAX]).len(), bits);
    }

    #[test]
    fn cooler_target_masks_name_each_target() {
        assert_eq!(cooler_targets(0), []);
        assert_eq!(cooler_targets(2), [CoolerTarget::Gpu]);
        assert_eq!(
            cooler_targets(NVML_THERMAL_COOLER_TARGET_GPU_RELATED.0),
            [
                CoolerTarget::Gpu,
                CoolerTarget::Memory,
                CoolerTarget::PowerSupply
            ]
        );
    }

    #[test]
    fn raw_values_map_to_names_and_unknown_ones_are_kept() {
        assert_eq!(
            DeviceArch::from_raw(NVML_DEVICE_ARCH_HOPPER),
            DeviceArch::Hopper
        );
        assert_eq!(DeviceArch::from_raw(77), DeviceArch::Other(77));
        assert_eq!(Brand::from_raw(NVML_BRAND_TESLA).to_string(), "Tesla");
        assert_eq!(
            Brand::from_raw(NVML_BRAND_GEFORCE_RTX).to_string(),
            "GeForce RTX"
        );
        assert_eq!(Brand::from_raw(nvmlBrandType_t(99)), Brand::Other(99));
    }

    #[test]
    #[cfg_attr(miri, ignore = "loads NVML (dlopen), which Miri cannot run")]
    fn lists_are_read_in_two_calls_and_may_grow() {
        // A list of 3 that grows to 5 between the first two calls.
        let mut calls = 0;
        let got = read_list(
            0,
            || "test",
            |count: *mut c_uint, out: *mut u32| {
                calls += 1;
                // SAFETY: `count` points to the caller's count.
                let have = unsafe { *count };
                let len = if calls == 1 { 3 } else { 5 };
                // SAFETY: as above.
                unsafe { *count = len };
                if have < len {
                    return NVML_ERROR_INSUFFICIENT_SIZE;
                }
                for i in 0..len {
                    // SAFETY: `out` holds `have >= len` elements.
                    unsafe { *out.add(i as usize) = 10 + i };
                }
                NVML_SUCCESS
            },
        )
        .unwrap();
        assert_eq!(got, [10, 11, 12, 13, 14]);
        assert_eq!(calls, 3);
        // A call that counts with success is asked again with room.
        let mut calls = 0;
        let got = read_list(
            0,
            || "test",
            |count: *mut c_uint, out: *mut u32| {
                calls += 1;
                // SAFETY: `count` points to the caller's count; `out` holds it.
                unsafe {
                    if *count >= 2 {
                        *out = 7;
                        *out.add(1) = 8;
                    }
                    *count = 2;
                }
                NVML_SUCCESS
            },
        )
        .unwrap();
        assert_eq!((got, calls), (vec![7, 8], 2));
        // An empty list answers the first call with success.
        let empty: Vec<u32> = read_list(0, || "test", |_, _| NVML_SUCCESS).unwrap();
        assert!(empty.is_empty());
        // A failure is NVML's error, with the context.
        let e = read_list::<u32, _>(0, || "reading", |_, _| NVML_ERROR_NOT_SUPPORTED).unwrap_err();
        assert_eq!(
            e.nvml_kind(),
            Some(crate::error::NvmlErrorKind::NotSupported)
        );
    }
}
