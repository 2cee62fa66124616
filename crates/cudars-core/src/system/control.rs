//! Performance states, and the settings an administrator changes: persistence
//! mode, the power limit, application and locked clocks, clock offsets and fan
//! speeds.
//!
//! Every setter needs root (or, on Windows, an administrator) and a device that
//! lets the setting change: without the permission NVML fails with
//! [`NvmlErrorKind::NoPermission`](crate::NvmlErrorKind), on a device without
//! the feature with `NotSupported`. A setting lasts until it is changed back
//! (or, without persistence mode, until the driver unloads): each setter names
//! the call that undoes it.

use std::ffi::c_uint;

use cudars_bindings::nvml::*;

use super::clocks::ClockType;
use crate::error::{Error, InvalidKind, Result};
use crate::system::device::SystemDevice;
use crate::system::fan::Fan;
use crate::{system::nvml::NvmlCheck as _, system::nvml::struct_version};

/// The lowest-performance state NVML numbers: P15 (P0 is the fastest).
pub const MAX_PSTATE: u32 = 15;

/// NVML's value for performance state `pstate` (0 for P0, …, 15 for P15), or an
/// [`InvalidKind::OutOfRange`] error naming what was being done.
fn pstate_raw(pstate: u32, doing: impl FnOnce() -> String) -> Result<nvmlPstates_t> {
    if pstate > MAX_PSTATE {
        return Err(Error::invalid_as(
            InvalidKind::OutOfRange,
            doing(),
            format!("performance state {pstate} is not one of P0 to P{MAX_PSTATE}"),
        ));
    }
    Ok(nvmlPstates_t(NVML_PSTATE_0.0 + pstate))
}

/// The performance states in a list NVML filled, up to the first unused slot
/// (`NVML_PSTATE_UNKNOWN`), as numbers 0 to 15, fastest (P0) first, each once.
fn pstates_from(raw: &[nvmlPstates_t]) -> Vec<u32> {
    let mut states: Vec<u32> = raw
        .iter()
        .take_while(|p| **p != NVML_PSTATE_UNKNOWN)
        .filter(|p| p.0 <= MAX_PSTATE)
        .map(|p| p.0)
        .collect();
    states.sort_unstable();
    states.dedup();
    states
}

/// The minimum, maximum and current offset of a clock at one performance
/// state, in MHz ([`SystemDevice::clock_offsets`]; `ClockOffsets` in Python).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClockOffsets {
    /// The offset applied now (`clock_offset_mhz`).
    pub current_mhz: i32,
    /// The lowest offset that may be set (`min_offset_mhz`).
    pub min_mhz: i32,
    /// The highest offset that may be set (`max_offset_mhz`).
    pub max_mhz: i32,
}

/// How busy one utilisation domain was over the last second, and the
/// thresholds at which the driver changes performance state
/// ([`SystemDevice::dynamic_pstates_info`]; `GpuDynamicPstatesUtilization` in
/// Python).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PstateUtilization {
    /// Whether the GPU has this domain (`is_present`).
    pub is_present: bool,
    /// The percentage of the last second the domain was busy.
    pub percentage: u32,
    /// Crossing this percentage upwards may raise the performance state.
    pub increase_threshold: u32,
    /// Crossing this percentage downwards may lower the performance state.
    pub decrease_threshold: u32,
}

/// The utilisation samples that drive performance-state changes, one per
/// domain ([`SystemDevice::dynamic_pstates_info`]; `GpuDynamicPstatesInfo` in
/// Python).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DynamicPstatesInfo {
    /// NVML's flags (reserved, 0 today).
    pub flags: u32,
    /// One entry per domain, indexed by [`DynamicPstatesInfo::GPU`],
    /// [`FRAME_BUFFER`](Self::FRAME_BUFFER), [`VIDEO`](Self::VIDEO) and
    /// [`BUS`](Self::BUS); the rest are reserved (not present).
    pub domains: [PstateUtilization; NVML_MAX_GPU_UTILIZATIONS as usize],
}

impl DynamicPstatesInfo {
    /// The graphics engine's domain.
    pub const GPU: usize = NVML_GPU_UTILIZATION_DOMAIN_GPU.0 as usize;
    /// The frame buffer's (memory) domain.
    pub const FRAME_BUFFER: usize = NVML_GPU_UTILIZATION_DOMAIN_FB.0 as usize;
    /// The video engines' domain.
    pub const VIDEO: usize = NVML_GPU_UTILIZATION_DOMAIN_VID.0 as usize;
    /// The bus's (PCIe) domain.
    pub const BUS: usize = NVML_GPU_UTILIZATION_DOMAIN_BUS.0 as usize;

    pub(crate) fn from_raw(raw: &nvmlGpuDynamicPstatesInfo_t) -> Self {
        let mut domains = [PstateUtilization::default(); NVML_MAX_GPU_UTILIZATIONS as usize];
        for (d, u) in domains.iter_mut().zip(raw.utilization.iter()) {
            *d = PstateUtilization {
                is_present: u.bIsPresent != 0,
                percentage: u.percentage,
                increase_threshold: u.incThreshold,
                decrease_threshold: u.decThreshold,
            };
        }
        Self {
            flags: raw.flags,
            domains,
        }
    }
}

impl SystemDevice {
    /// Calls a setter and checks its status.
    fn apply(&self, what: &str, function: &str, status: nvmlReturn_t) -> Result<()> {
        status.check(|| self.ctx(what, function))
    }

    // --- Performance states ------------------------------------------------

    /// The performance states the device supports, fastest first, as numbers 0
    /// (P0) to 15 (P15) (`nvmlDeviceGetSupportedPerformanceStates`;
    /// `supported_pstates` in Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// devices that do not report them).
    pub fn supported_performance_states(&self) -> Result<Vec<u32>> {
        const MAX: usize = NVML_MAX_GPU_PERF_PSTATES as usize;
        // `nvml.h` gives the size in bytes; some wrappers pass a count instead.
        // Room for `size` entries either way: whichever NVML means, it cannot
        // write past the buffer.
        let size = MAX * std::mem::size_of::<nvmlPstates_t>();
        let mut raw = vec![NVML_PSTATE_UNKNOWN; size];
        // SAFETY: the handle is valid (see the type's docs); `raw` holds `size`
        // entries, at least `size` bytes.
        unsafe {
            nvmlDeviceGetSupportedPerformanceStates(self.handle, raw.as_mut_ptr(), size as c_uint)
        }
        .check(|| {
            self.ctx(
                "reading the supported performance states",
                "nvmlDeviceGetSupportedPerformanceStates",
            )
        })?;
        Ok(pstates_from(&raw[..MAX]))
    }

    /// The lowest and highest clock of `clock` at performance state `pstate`
    /// (0 to 15), in MHz (`nvmlDeviceGetMinMaxClockOfPState`;
    /// `get_clock(t).get_min_max_clock_of_pstate_mhz(p)` in Python).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] ([`InvalidKind::OutOfRange`]) for a `pstate`
    /// above 15; NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind)
    /// or `InvalidArgument` for a state or clock the device lacks).
    pub fn min_max_clock_of_pstate(&self, clock: ClockType, pstate: u32) -> Result<(u32, u32)> {
        let what = || format!("reading the {clock:?} clock range of P{pstate}");
        let p = pstate_raw(pstate, || {
            self.ctx(&what(), "nvmlDeviceGetMinMaxClockOfPState")
        })?;
        let (mut lo, mut hi) = (0, 0);
        // SAFETY: the handle is valid (see the type's docs); both outputs are
        // valid for writes.
        unsafe { nvmlDeviceGetMinMaxClockOfPState(self.handle, clock.raw(), p, &mut lo, &mut hi) }
            .check(|| self.ctx(&what(), "nvmlDeviceGetMinMaxClockOfPState"))?;
        Ok((lo, hi))
    }

    /// The offset applied to `clock` at performance state `pstate` (0 to 15)
    /// and the range it may be set in (`nvmlDeviceGetClockOffsets`;
    /// `get_clock(t).get_offsets(p)` in Python).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] ([`InvalidKind::OutOfRange`]) for a `pstate`
    /// above 15; NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind)
    /// for a clock without offsets; `FunctionNotFound` with drivers before R555).
    pub fn clock_offsets(&self, clock: ClockType, pstate: u32) -> Result<ClockOffsets> {
        let what = || format!("reading the {clock:?} clock offsets of P{pstate}");
        let mut o = nvmlClockOffset_t {
            version: struct_version::<nvmlClockOffset_t>(1),
            type_: clock.raw(),
            pstate: pstate_raw(pstate, || self.ctx(&what(), "nvmlDeviceGetClockOffsets"))?,
            clockOffsetMHz: 0,
            minClockOffsetMHz: 0,
            maxClockOffsetMHz: 0,
        };
        // SAFETY: the handle is valid (see the type's docs); `o` is valid for
        // writes and its version, clock and state fields are set.
        unsafe { nvmlDeviceGetClockOffsets(self.handle, &mut o) }
            .check(|| self.ctx(&what(), "nvmlDeviceGetClockOffsets"))?;
        Ok(ClockOffsets {
            current_mhz: o.clockOffsetMHz,
            min_mhz: o.minClockOffsetMHz,
            max_mhz: o.maxClockOffsetMHz,
        })
    }

    /// Sets the offset of `clock` at performance state `pstate` (0 to 15) to
    /// `offset_mhz`, within [`clock_offsets`](Self::clock_offsets)' range
    /// (`nvmlDeviceSetClockOffsets`). Set the offset read before to undo it;
    /// 0 is the default.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] ([`InvalidKind::OutOfRange`]) for a `pstate`
    /// above 15; NVML's error: [`NvmlErrorKind::NoPermission`](crate::NvmlErrorKind)
    /// without root, `NotSupported` for a clock without offsets,
    /// `InvalidArgument` for an offset out of range, `FunctionNotFound` with
    /// drivers before R555.
    pub fn set_clock_offset(&self, clock: ClockType, pstate: u32, offset_mhz: i32) -> Result<()> {
        let what =
            || format!("setting the {clock:?} clock offset of P{pstate} to {offset_mhz} MHz");
        let mut o = nvmlClockOffset_t {
            version: struct_version::<nvmlClockOffset_t>(1),
            type_: clock.raw(),
            pstate: pstate_raw(pstate, || self.ctx(&what(), "nvmlDeviceSetClockOffsets"))?,
            clockOffsetMHz: offset_mhz,
            minClockOffsetMHz: 0,
            maxClockOffsetMHz: 0,
        };
        // SAFETY: the handle is valid (see the type's docs); `o` is a valid,
        // versioned struct NVML reads.
        let status = unsafe { nvmlDeviceSetClockOffsets(self.handle, &mut o) };
        self.apply(&what(), "nvmlDeviceSetClockOffsets", status)
    }

    /// The utilisation samples that drive the device's performance-state
    /// changes (`nvmlDeviceGetDynamicPstatesInfo`; `dynamic_pstates_info` in
    /// Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// devices that do not report them).
    pub fn dynamic_pstates_info(&self) -> Result<DynamicPstatesInfo> {
        let info = self.read_default(
            "reading the dynamic performance-state information",
            "nvmlDeviceGetDynamicPstatesInfo",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetDynamicPstatesInfo(h, p) }
            },
        )?;
        Ok(DynamicPstatesInfo::from_raw(&info))
    }

    // --- Application and locked clocks ---------------------------------------

    /// Sets the application clocks: memory at `memory_mhz` (one of
    /// [`supported_memory_clocks`](Self::supported_memory_clocks)) and graphics
    /// at `graphics_mhz` (one of
    /// [`supported_graphics_clocks(memory_mhz)`](Self::supported_graphics_clocks))
    /// (`nvmlDeviceSetApplicationsClocks`). Undo with
    /// [`reset_applications_clocks`](Self::reset_applications_clocks).
    ///
    /// # Errors
    /// NVML's error: [`NvmlErrorKind::NoPermission`](crate::NvmlErrorKind)
    /// without root (unless application clocks are unrestricted),
    /// `InvalidArgument` for a clock pair the device does not support,
    /// `NotSupported` on boards without application clocks.
    pub fn set_applications_clocks(&self, memory_mhz: u32, graphics_mhz: u32) -> Result<()> {
        // SAFETY: the handle is valid (see the type's docs).
        let status =
            unsafe { nvmlDeviceSetApplicationsClocks(self.handle, memory_mhz, graphics_mhz) };
        self.apply(
            &format!(
                "setting the application clocks to {memory_mhz} MHz (memory) and \
                 {graphics_mhz} MHz (graphics)"
            ),
            "nvmlDeviceSetApplicationsClocks",
            status,
        )
    }

    /// Resets the application clocks to their defaults
    /// ([`default_applications_clock`](Self::default_applications_clock))
    /// (`nvmlDeviceResetApplicationsClocks`).
    ///
    /// # Errors
    /// NVML's error: [`NvmlErrorKind::NoPermission`](crate::NvmlErrorKind)
    /// without root, `NotSupported` on boards without application clocks.
    pub fn reset_applications_clocks(&self) -> Result<()> {
        // SAFETY: the handle is valid (see the type's docs).
        let status = unsafe { nvmlDeviceResetApplicationsClocks(self.handle) };
        self.apply(
            "resetting the application clocks",
            "nvmlDeviceResetApplicationsClocks",
            status,
        )
    }

    /// Locks the graphics clock between `min_mhz` and `max_mhz`
    /// (`nvmlDeviceSetGpuLockedClocks`; `nvidia-smi -lgc`). Undo with
    /// [`reset_gpu_locked_clocks`](Self::reset_gpu_locked_clocks).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `min_mhz` exceeds `max_mhz`; NVML's
    /// error: [`NvmlErrorKind::NoPermission`](crate::NvmlErrorKind) without
    /// root, `NotSupported` before Volta.
    pub fn set_gpu_locked_clocks(&self, min_mhz: u32, max_mhz: u32) -> Result<()> {
        self.set_locked(
            "graphics",
            "nvmlDeviceSetGpuLockedClocks",
            min_mhz,
            max_mhz,
            nvmlDeviceSetGpuLockedClocks,
        )
    }

    /// Unlocks the graphics clock (`nvmlDeviceResetGpuLockedClocks`;
    /// `nvidia-smi -rgc`).
    ///
    /// # Errors
    /// NVML's error: [`NvmlErrorKind::NoPermission`](crate::NvmlErrorKind)
    /// without root, `NotSupported` before Volta.
    pub fn reset_gpu_locked_clocks(&self) -> Result<()> {
        // SAFETY: the handle is valid (see the type's docs).
        let status = unsafe { nvmlDeviceResetGpuLockedClocks(self.handle) };
        self.apply(
            "unlocking the graphics clock",
            "nvmlDeviceResetGpuLockedClocks",
            status,
        )
    }

    /// Locks the memory clock between `min_mhz` and `max_mhz`
    /// (`nvmlDeviceSetMemoryLockedClocks`; `nvidia-smi -lmc`). Undo with
    /// [`reset_memory_locked_clocks`](Self::reset_memory_locked_clocks).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `min_mhz` exceeds `max_mhz`; NVML's
    /// error: [`NvmlErrorKind::NoPermission`](crate::NvmlErrorKind) without
    /// root, `NotSupported` before Ampere.
    pub fn set_memory_locked_clocks(&self, min_mhz: u32, max_mhz: u32) -> Result<()> {
        self.set_locked(
            "memory",
            "nvmlDeviceSetMemoryLockedClocks",
            min_mhz,
            max_mhz,
            nvmlDeviceSetMemoryLockedClocks,
        )
    }

    /// Unlocks the memory clock (`nvmlDeviceResetMemoryLockedClocks`;
    /// `nvidia-smi -rmc`).
    ///
    /// # Errors
    /// NVML's error: [`NvmlErrorKind::NoPermission`](crate::NvmlErrorKind)
    /// without root, `NotSupported` before Ampere.
    pub fn reset_memory_locked_clocks(&self) -> Result<()> {
        // SAFETY: the handle is valid (see the type's docs).
        let status = unsafe { nvmlDeviceResetMemoryLockedClocks(self.handle) };
        self.apply(
            "unlocking the memory clock",
            "nvmlDeviceResetMemoryLockedClocks",
            status,
        )
    }

    /// Checks a locked-clock range and sets it through `set`.
    fn set_locked(
        &self,
        which: &str,
        function: &str,
        min_mhz: u32,
        max_mhz: u32,
        set: unsafe fn(nvmlDevice_t, c_uint, c_uint) -> nvmlReturn_t,
    ) -> Result<()> {
        let what = format!("locking the {which} clock between {min_mhz} and {max_mhz} MHz");
        if min_mhz > max_mhz {
            return Err(Error::invalid(
                self.ctx(&what, function),
                "the lowest clock exceeds the highest",
            ));
        }
        // SAFETY: `set` is one of NVML's locked-clock setters; the handle is
        // valid (see the type's docs).
        let status = unsafe { set(self.handle, min_mhz, max_mhz) };
        self.apply(&what, function, status)
    }

    // --- MIG, persistence mode and power limit -------------------------------

    /// Turns MIG mode on or off (`nvmlDeviceSetMigMode`; setting `mig.mode` in
    /// Python). The change is pending ([`mig_mode`](Self::mig_mode)'s
    /// `pending`) until NVML can activate it, which needs the GPU idle and may
    /// need a reset.
    ///
    /// # Errors
    /// NVML's error: [`NvmlErrorKind::NoPermission`](crate::NvmlErrorKind)
    /// without root, `NotSupported` on GPUs without MIG. When NVML took the
    /// setting but could not activate it yet, the activation's status
    /// (`InUse`, `ResetRequired`, …), with the mode left pending.
    pub fn set_mig_mode(&self, enabled: bool) -> Result<()> {
        let (mode, what) = if enabled {
            (NVML_DEVICE_MIG_ENABLE, "turning MIG mode on")
        } else {
            (NVML_DEVICE_MIG_DISABLE, "turning MIG mode off")
        };
        let mut activation = NVML_SUCCESS;
        // SAFETY: the handle is valid (see the type's docs); `activation` is valid
        // for writes.
        let status = unsafe { nvmlDeviceSetMigMode(self.handle, mode, &mut activation) };
        self.apply(what, "nvmlDeviceSetMigMode", status)?;
        self.apply(
            &format!("{what}: the mode is pending, activating it"),
            "nvmlDeviceSetMigMode",
            activation,
        )
    }

    /// Turns persistence mode on or off (`nvmlDeviceSetPersistenceMode`;
    /// setting `is_persistence_mode_enabled` in Python). Linux only; read it
    /// with [`is_persistence_mode_enabled`](Self::is_persistence_mode_enabled).
    ///
    /// # Errors
    /// NVML's error: [`NvmlErrorKind::NoPermission`](crate::NvmlErrorKind)
    /// without root, `NotSupported` on Windows.
    pub fn set_persistence_mode(&self, enabled: bool) -> Result<()> {
        let mode = if enabled {
            NVML_FEATURE_ENABLED
        } else {
            NVML_FEATURE_DISABLED
        };
        // SAFETY: the handle is valid (see the type's docs).
        let status = unsafe { nvmlDeviceSetPersistenceMode(self.handle, mode) };
        self.apply(
            if enabled {
                "turning persistence mode on"
            } else {
                "turning persistence mode off"
            },
            "nvmlDeviceSetPersistenceMode",
            status,
        )
    }

    /// The power limit set by the administrator (or the default), in
    /// milliwatts (`nvmlDeviceGetPowerManagementLimit`); the limit in effect
    /// is [`power_limit_milliwatts`](Self::power_limit_milliwatts).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// boards without power management).
    pub fn power_management_limit_milliwatts(&self) -> Result<u32> {
        self.read_uint(
            "reading the power management limit",
            "nvmlDeviceGetPowerManagementLimit",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetPowerManagementLimit(h, p) }
            },
        )
    }

    /// The power limit the board starts with, in milliwatts
    /// (`nvmlDeviceGetPowerManagementDefaultLimit`).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// boards without power management).
    pub fn default_power_management_limit_milliwatts(&self) -> Result<u32> {
        self.read_uint(
            "reading the default power management limit",
            "nvmlDeviceGetPowerManagementDefaultLimit",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetPowerManagementDefaultLimit(h, p) }
            },
        )
    }

    /// The lowest and highest power limit that may be set, in milliwatts
    /// (`nvmlDeviceGetPowerManagementLimitConstraints`).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// boards without power management).
    pub fn power_management_limit_constraints(&self) -> Result<(u32, u32)> {
        let (mut lo, mut hi) = (0, 0);
        // SAFETY: the handle is valid (see the type's docs); both outputs are
        // valid for writes.
        unsafe { nvmlDeviceGetPowerManagementLimitConstraints(self.handle, &mut lo, &mut hi) }
            .check(|| {
                self.ctx(
                    "reading the power limit range",
                    "nvmlDeviceGetPowerManagementLimitConstraints",
                )
            })?;
        Ok((lo, hi))
    }

    /// Sets the power limit to `milliwatts`, within
    /// [`power_management_limit_constraints`](Self::power_management_limit_constraints)
    /// (`nvmlDeviceSetPowerManagementLimit`; `nvidia-smi -pl`). Undo by setting
    /// the limit read before, or
    /// [`default_power_management_limit_milliwatts`](Self::default_power_management_limit_milliwatts).
    ///
    /// # Errors
    /// NVML's error: [`NvmlErrorKind::NoPermission`](crate::NvmlErrorKind)
    /// without root, `InvalidArgument` for a limit out of range,
    /// `NotSupported` on boards without power management.
    pub fn set_power_management_limit(&self, milliwatts: u32) -> Result<()> {
        // SAFETY: the handle is valid (see the type's docs).
        let status = unsafe { nvmlDeviceSetPowerManagementLimit(self.handle, milliwatts) };
        self.apply(
            &format!("setting the power limit to {milliwatts} mW"),
            "nvmlDeviceSetPowerManagementLimit",
            status,
        )
    }
}

impl Fan {
    /// Sets the fan's speed to `percent` of its maximum, within
    /// [`SystemDevice::fan_min_max_speed`], and its control policy to manual
    /// (`nvmlDeviceSetFanSpeed_v2`; setting `speed` in Python). Undo with
    /// [`set_default_speed`](Self::set_default_speed).
    ///
    /// # Errors
    /// NVML's error: [`NvmlErrorKind::NoPermission`](crate::NvmlErrorKind)
    /// without root, `InvalidArgument` for a speed out of range or a fan the
    /// board lacks, `NotSupported` on passively cooled boards.
    pub fn set_speed(&self, percent: u32) -> Result<()> {
        // SAFETY: the device handle is valid (see `SystemDevice`'s docs).
        let status = unsafe { nvmlDeviceSetFanSpeed_v2(self.device.handle, self.fan, percent) };
        self.device.apply(
            &format!("setting the speed of fan {} to {percent}%", self.fan),
            "nvmlDeviceSetFanSpeed_v2",
            status,
        )
    }

    /// Gives the fan back to the driver's temperature control
    /// (`nvmlDeviceSetDefaultFanSpeed_v2`; `set_default_speed` in Python).
    ///
    /// # Errors
    /// NVML's error: [`NvmlErrorKind::NoPermission`](crate::NvmlErrorKind)
    /// without root, `NotSupported` on passively cooled boards.
    pub fn set_default_speed(&self) -> Result<()> {
        // SAFETY: the device handle is valid (see `SystemDevice`'s docs).
        let status = unsafe { nvmlDeviceSetDefaultFanSpeed_v2(self.device.handle, self.fan) };
        self.device.apply(
            &format!("restoring the default speed of fan {}", self.fan),
            "nvmlDeviceSetDefaultFanSpeed_v2",
            status,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pstates_are_checked_and_numbered_as_nvml_numbers_them() {
        assert_eq!(pstate_raw(0, String::new).unwrap(), NVML_PSTATE_0);
        assert_eq!(pstate_raw(15, String::new).unwrap(), NVML_PSTATE_15);
        let e = pstate_raw(16, || "reading P16".to_owned()).unwrap_err();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange), "{e:?}");
        assert_eq!(
            e.to_string(),
            "reading P16: performance state 16 is not one of P0 to P15"
        );
        assert_eq!(e.nvml_code(), None);
    }

    #[test]
    fn a_pstate_list_ends_at_the_first_unused_slot() {
        let raw = [
            NVML_PSTATE_15,
            NVML_PSTATE_0,
            nvmlPstates_t(2),
            NVML_PSTATE_0,
            NVML_PSTATE_UNKNOWN,
            nvmlPstates_t(5),
        ];
        assert_eq!(pstates_from(&raw), [0, 2, 15]);
        assert!(pstates_from(&[NVML_PSTATE_UNKNOWN; 4]).is_empty());
    }

    #[test]
    fn dynamic_pstates_are_read_per_domain() {
        let mut raw = nvmlGpuDynamicPstatesInfo_t {
            flags: 3,
            ..Default::default()
        };
        raw.utilization[1].bIsPresent = 1;
        raw.utilization[1].percentage = 40;
        raw.utilization[1].incThreshold = 70;
        raw.utilization[1].decThreshold = 30;
        let info = DynamicPstatesInfo::from_raw(&raw);
        assert_eq!(info.flags, 3);
        assert_eq!(
            info.domains[DynamicPstatesInfo::FRAME_BUFFER],
            PstateUtilization {
                is_present: true,
                percentage: 40,
                increase_threshold: 70,
                decrease_threshold: 30,
            }
        );
        assert!(!info.domains[DynamicPstatesInfo::GPU].is_present);
        assert_eq!(
            (
                DynamicPstatesInfo::GPU,
                DynamicPstatesInfo::FRAME_BUFFER,
                DynamicPstatesInfo::VIDEO,
                DynamicPstatesInfo::BUS
            ),
            (0, 1, 2, 3)
        );
    }

    #[test]
    fn the_clock_offset_struct_carries_nvml_version_1() {
        assert_eq!(
            struct_version::<nvmlClockOffset_t>(1),
            (std::mem::size_of::<nvmlClockOffset_t>() as c_uint) | (1 << 24)
        );
        assert_eq!(std::mem::size_of::<nvmlClockOffset_t>(), 24);
    }
}
