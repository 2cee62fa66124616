//! [`SystemDevice`]: a device as NVML sees it, found by index, UUID or PCI bus,
//! and its basic queries; [`Device::to_system_device`] from the CUDA side.

use std::ffi::c_uint;
use std::fmt;

use cudars_bindings::nvml::*;

use crate::device::Device;
use crate::error::{Error, Result};
use crate::system::driver::device_count;
use crate::system::info::{
    Clocks, MemoryInfo, P2pCapability, P2pStatus, PciInfo, TopologyLevel, Utilization,
};
use crate::system::nvml::{
    NvmlCheck as _, c_string, from_c_buf, init, pci_from, read_string, strip_uuid_prefix,
    struct_version,
};

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
    pub(crate) handle: nvmlDevice_t,
    /// The NVML index (of the parent GPU, for a MIG device).
    pub(crate) index: u32,
    /// For a MIG device, its index under the parent GPU.
    pub(crate) mig: Option<u32>,
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
    pub(crate) fn from_handle(handle: nvmlDevice_t) -> Result<Self> {
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
    pub(crate) fn ctx(&self, what: &str, function: &str) -> String {
        match self.mig {
            None => format!("{what} of NVML device {} ({function})", self.index),
            Some(m) => format!(
                "{what} of MIG device {m} of NVML device {} ({function})",
                self.index
            ),
        }
    }

    /// Reads one `c_uint` through `call`.
    pub(crate) fn read_uint(
        &self,
        what: &str,
        function: &str,
        call: impl FnOnce(nvmlDevice_t, *mut c_uint) -> nvmlReturn_t,
    ) -> Result<u32> {
        self.read_default(what, function, call)
    }

    /// Reads one value (a number, or a struct NVML fills in) through `call`,
    /// starting from its default.
    pub(crate) fn read_default<T: Default>(
        &self,
        what: &str,
        function: &str,
        call: impl FnOnce(nvmlDevice_t, *mut T) -> nvmlReturn_t,
    ) -> Result<T> {
        self.read_from(T::default(), what, function, call)
    }

    /// Reads one value through `call`, starting from `init` (a versioned
    /// struct with its version set, or the fields NVML reads filled in).
    pub(crate) fn read_from<T>(
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
pub(crate) fn is_older_driver(e: &Error) -> bool {
    matches!(
        e.nvml_code(),
        Some(NVML_ERROR_FUNCTION_NOT_FOUND | NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
    )
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

/// Reads a set of GPUs NVML fills in, given room for every GPU at once (some
/// drivers refuse the size query, a count of 0, of these calls with
/// `NVML_ERROR_INVALID_ARGUMENT`). NVML must be initialised.
pub(super) fn device_set<C: Into<std::borrow::Cow<'static, str>>>(
    context: impl FnOnce() -> C,
    call: impl FnOnce(*mut c_uint, *mut nvmlDevice_t) -> nvmlReturn_t,
) -> Result<Vec<SystemDevice>> {
    let mut handles =
        vec![std::ptr::null_mut(); crate::system::driver::device_count()?.max(1) as usize];
    let mut count = handles.len() as c_uint;
    call(&mut count, handles.as_mut_ptr()).check(context)?;
    handles.truncate(count as usize);
    handles.into_iter().map(SystemDevice::from_handle).collect()
}
