//! NVML events: [`EventTypes`] and [`EventSet`].

use std::ffi::c_uint;

use cudars_bindings::nvml::*;

use crate::error::Result;
use crate::system::device::SystemDevice;
use crate::system::nvml::{NvmlCheck as _, init};

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
        let rc = unsafe { nvmlEventSetFree(self.set) };
        crate::cleanup::report(rc.check(|| "freeing an NVML event set (nvmlEventSetFree)"));
    }
}
