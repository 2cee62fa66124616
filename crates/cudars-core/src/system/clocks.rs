//! Clocks beyond the current and maximum ones: application clocks, the clocks
//! a device supports, boost, and why clocks are held down (clock-event, once
//! "throttle", reasons).

use std::ffi::c_uint;

use cudars_bindings::nvml::*;

use crate::error::Result;
use crate::system::device::SystemDevice;
use crate::system::nvml::NvmlCheck as _;
use crate::system::nvml::read_list;

/// A clock domain (`ClockType` in Python).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ClockType {
    /// The graphics clock.
    Graphics,
    /// The SM clock.
    Sm,
    /// The memory clock.
    Memory,
    /// The video encoder/decoder clock.
    Video,
}

impl ClockType {
    pub(super) fn raw(self) -> nvmlClockType_t {
        match self {
            Self::Graphics => NVML_CLOCK_GRAPHICS,
            Self::Sm => NVML_CLOCK_SM,
            Self::Memory => NVML_CLOCK_MEM,
            Self::Video => NVML_CLOCK_VIDEO,
        }
    }
}

/// Which value of a clock to read ([`SystemDevice::clock`]; `ClockId` in
/// Python).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ClockId {
    /// The clock now.
    Current,
    /// The application clock the user set (the target).
    ApplicationTarget,
    /// The default application clock.
    ApplicationDefault,
    /// The highest clock the customer may boost to.
    CustomerBoostMax,
}

impl ClockId {
    pub(crate) fn raw(self) -> nvmlClockId_t {
        match self {
            Self::Current => NVML_CLOCK_ID_CURRENT,
            Self::ApplicationTarget => NVML_CLOCK_ID_APP_CLOCK_TARGET,
            Self::ApplicationDefault => NVML_CLOCK_ID_APP_CLOCK_DEFAULT,
            Self::CustomerBoostMax => NVML_CLOCK_ID_CUSTOMER_BOOST_MAX,
        }
    }
}

/// A set of reasons why a device's clocks are held below their maximum
/// (`nvmlClocksEventReason*` bits; `ClocksEventReasons` in Python, formerly
/// "throttle reasons"). Test with [`contains`](Self::contains), list with
/// [`iter`](Self::iter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ClocksEventReasons(pub u64);

impl ClocksEventReasons {
    /// No reason: the clocks run as high as they may.
    pub const NONE: Self = Self(nvmlClocksEventReasonNone as u64);
    /// Nothing runs on the GPU, so the clocks are lowered.
    pub const GPU_IDLE: Self = Self(nvmlClocksEventReasonGpuIdle as u64);
    /// The application clocks setting caps them.
    pub const APPLICATIONS_CLOCKS_SETTING: Self =
        Self(nvmlClocksEventReasonApplicationsClocksSetting as u64);
    /// The software power cap.
    pub const SW_POWER_CAP: Self = Self(nvmlClocksEventReasonSwPowerCap as u64);
    /// A hardware slowdown (temperature, power brake, …) halves them or more.
    pub const HW_SLOWDOWN: Self = Self(nvmlClocksThrottleReasonHwSlowdown as u64);
    /// Sync boost: a group of GPUs runs at the clocks of the slowest.
    pub const SYNC_BOOST: Self = Self(nvmlClocksEventReasonSyncBoost as u64);
    /// The software thermal slowdown.
    pub const SW_THERMAL_SLOWDOWN: Self = Self(nvmlClocksEventReasonSwThermalSlowdown as u64);
    /// The hardware thermal slowdown.
    pub const HW_THERMAL_SLOWDOWN: Self = Self(nvmlClocksThrottleReasonHwThermalSlowdown as u64);
    /// The external power brake.
    pub const HW_POWER_BRAKE_SLOWDOWN: Self =
        Self(nvmlClocksThrottleReasonHwPowerBrakeSlowdown as u64);
    /// The display clock setting.
    pub const DISPLAY_CLOCK_SETTING: Self = Self(nvmlClocksEventReasonDisplayClockSetting as u64);

    /// Every reason this crate names, with its name, in bit order.
    const NAMED: [(Self, &'static str); 9] = [
        (Self::GPU_IDLE, "GPU_IDLE"),
        (
            Self::APPLICATIONS_CLOCKS_SETTING,
            "APPLICATIONS_CLOCKS_SETTING",
        ),
        (Self::SW_POWER_CAP, "SW_POWER_CAP"),
        (Self::HW_SLOWDOWN, "HW_SLOWDOWN"),
        (Self::SYNC_BOOST, "SYNC_BOOST"),
        (Self::SW_THERMAL_SLOWDOWN, "SW_THERMAL_SLOWDOWN"),
        (Self::HW_THERMAL_SLOWDOWN, "HW_THERMAL_SLOWDOWN"),
        (Self::HW_POWER_BRAKE_SLOWDOWN, "HW_POWER_BRAKE_SLOWDOWN"),
        (Self::DISPLAY_CLOCK_SETTING, "DISPLAY_CLOCK_SETTING"),
    ];

    /// Whether every reason in `other` is in this set.
    pub fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether the set is empty ([`NONE`](Self::NONE)).
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The reasons in the set, one bit each, lowest first (bits this crate does
    /// not name included, each as a set of its own).
    pub fn iter(self) -> impl Iterator<Item = Self> {
        (0..64)
            .map(|b| 1u64 << b)
            .filter(move |bit| self.0 & bit != 0)
            .map(Self)
    }

    /// The names of the reasons in the set (`GPU_IDLE`, `SW_POWER_CAP`, …, as
    /// Python's enum names them), lowest bit first; an unnamed bit is written
    /// `0x…`.
    pub fn names(self) -> Vec<String> {
        self.iter()
            .map(|r| {
                Self::NAMED
                    .iter()
                    .find(|(n, _)| *n == r)
                    .map_or_else(|| format!("{:#x}", r.0), |(_, name)| (*name).to_owned())
            })
            .collect()
    }
}

impl std::ops::BitOr for ClocksEventReasons {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl std::ops::BitAnd for ClocksEventReasons {
    type Output = Self;
    fn bitand(self, rhs: Self) -> Self {
        Self(self.0 & rhs.0)
    }
}

impl SystemDevice {
    /// Reads a clock of `clock` through `call`.
    fn read_clock(
        &self,
        what: &str,
        function: &str,
        clock: ClockType,
        call: impl FnOnce(nvmlDevice_t, nvmlClockType_t, *mut c_uint) -> nvmlReturn_t,
    ) -> Result<u32> {
        let mut v = 0;
        call(self.handle, clock.raw(), &mut v)
            .check(|| self.ctx(&format!("{what} ({clock:?})"), function))?;
        Ok(v)
    }

    /// One value of one clock, in MHz (`nvmlDeviceGetClock`;
    /// `get_clock(type).get_current_mhz(id)` in Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) for
    /// values the device does not report).
    pub fn clock(&self, clock: ClockType, id: ClockId) -> Result<u32> {
        self.read_clock(
            &format!("reading the {id:?} clock"),
            "nvmlDeviceGetClock",
            clock,
            |h, t, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetClock(h, t, id.raw(), p) }
            },
        )
    }

    /// The highest clock the customer may boost `clock` to, in MHz
    /// (`nvmlDeviceGetMaxCustomerBoostClock`; `get_max_customer_boost_mhz` in
    /// Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) before
    /// Pascal and for clocks without one).
    pub fn max_customer_boost_clock(&self, clock: ClockType) -> Result<u32> {
        self.read_clock(
            "reading the maximum customer boost clock",
            "nvmlDeviceGetMaxCustomerBoostClock",
            clock,
            |h, t, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetMaxCustomerBoostClock(h, t, p) }
            },
        )
    }

    /// The application clock `clock` is set to, in MHz: the clock kernels run
    /// at unless something holds it down (`nvmlDeviceGetApplicationsClock`).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on boards
    /// without application clocks, most consumer GPUs).
    pub fn applications_clock(&self, clock: ClockType) -> Result<u32> {
        self.read_clock(
            "reading the application clock",
            "nvmlDeviceGetApplicationsClock",
            clock,
            |h, t, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetApplicationsClock(h, t, p) }
            },
        )
    }

    /// The default application clock of `clock`, in MHz
    /// (`nvmlDeviceGetDefaultApplicationsClock`).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on boards
    /// without application clocks).
    pub fn default_applications_clock(&self, clock: ClockType) -> Result<u32> {
        self.read_clock(
            "reading the default application clock",
            "nvmlDeviceGetDefaultApplicationsClock",
            clock,
            |h, t, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetDefaultApplicationsClock(h, t, p) }
            },
        )
    }

    /// The memory clocks application clocks may be set to, in MHz, highest
    /// first (`nvmlDeviceGetSupportedMemoryClocks`).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on boards
    /// without application clocks).
    pub fn supported_memory_clocks(&self) -> Result<Vec<u32>> {
        read_list(
            0,
            || {
                self.ctx(
                    "reading the supported memory clocks",
                    "nvmlDeviceGetSupportedMemoryClocks",
                )
            },
            |count, out| {
                // SAFETY: a valid handle; `count` is valid for writes and `out`
                // holds `*count` clocks.
                unsafe { nvmlDeviceGetSupportedMemoryClocks(self.handle, count, out) }
            },
        )
    }

    /// The graphics clocks application clocks may be set to with memory clock
    /// `memory_mhz` (one of [`supported_memory_clocks`](Self::supported_memory_clocks)),
    /// in MHz, highest first (`nvmlDeviceGetSupportedGraphicsClocks`).
    ///
    /// # Errors
    /// NVML's error: [`NvmlErrorKind::NotFound`](crate::NvmlErrorKind) or
    /// `InvalidArgument` for a memory clock that is not supported, `NotSupported`
    /// on boards without application clocks.
    pub fn supported_graphics_clocks(&self, memory_mhz: u32) -> Result<Vec<u32>> {
        read_list(
            0,
            || {
                self.ctx(
                    &format!(
                        "reading the graphics clocks supported with memory at {memory_mhz} MHz"
                    ),
                    "nvmlDeviceGetSupportedGraphicsClocks",
                )
            },
            |count, out| {
                // SAFETY: a valid handle; `count` is valid for writes and `out`
                // holds `*count` clocks.
                unsafe { nvmlDeviceGetSupportedGraphicsClocks(self.handle, memory_mhz, count, out) }
            },
        )
    }

    /// Whether auto boosted clocks are on, and whether they are on by default
    /// (`nvmlDeviceGetAutoBoostedClocksEnabled`;
    /// `is_auto_boosted_clocks_enabled` in Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// Pascal and newer, where application clocks control boosting).
    pub fn auto_boosted_clocks_enabled(&self) -> Result<(bool, bool)> {
        let (mut now, mut default) = (NVML_FEATURE_DISABLED, NVML_FEATURE_DISABLED);
        // SAFETY: the handle is valid (see the type's docs); both outputs are
        // valid for writes.
        unsafe { nvmlDeviceGetAutoBoostedClocksEnabled(self.handle, &mut now, &mut default) }
            .check(|| {
                self.ctx(
                    "reading the auto boost setting",
                    "nvmlDeviceGetAutoBoostedClocksEnabled",
                )
            })?;
        Ok((now == NVML_FEATURE_ENABLED, default == NVML_FEATURE_ENABLED))
    }

    /// Why the clocks are held down now
    /// (`nvmlDeviceGetCurrentClocksEventReasons`;
    /// `current_clock_event_reasons` in Python).
    ///
    /// # Errors
    /// NVML's error.
    pub fn current_clock_event_reasons(&self) -> Result<ClocksEventReasons> {
        self.read_default(
            "reading why the clocks are held down",
            "nvmlDeviceGetCurrentClocksEventReasons",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetCurrentClocksEventReasons(h, p) }
            },
        )
        .map(ClocksEventReasons)
    }

    /// The reasons [`current_clock_event_reasons`](Self::current_clock_event_reasons)
    /// can report on this device (`nvmlDeviceGetSupportedClocksEventReasons`;
    /// `supported_clock_event_reasons` in Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) in
    /// virtual machines with a vGPU).
    pub fn supported_clock_event_reasons(&self) -> Result<ClocksEventReasons> {
        self.read_default(
            "reading which clock event reasons are reported",
            "nvmlDeviceGetSupportedClocksEventReasons",
            |h, p| {
                // SAFETY: `h` is this device's valid handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetSupportedClocksEventReasons(h, p) }
            },
        )
        .map(ClocksEventReasons)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_event_reasons_are_a_set_of_named_bits() {
        let r = ClocksEventReasons::GPU_IDLE | ClocksEventReasons::SW_POWER_CAP;
        assert!(r.contains(ClocksEventReasons::GPU_IDLE));
        assert!(r.contains(ClocksEventReasons::SW_POWER_CAP));
        assert!(!r.contains(ClocksEventReasons::HW_SLOWDOWN));
        assert!(r.contains(ClocksEventReasons::NONE));
        assert!(ClocksEventReasons::NONE.is_empty());
        assert_eq!(
            r.iter().collect::<Vec<_>>(),
            [
                ClocksEventReasons::GPU_IDLE,
                ClocksEventReasons::SW_POWER_CAP
            ]
        );
        assert_eq!(r.names(), ["GPU_IDLE", "SW_POWER_CAP"]);
        // NVML's bits, as `nvml.h` numbers them.
        assert_eq!(ClocksEventReasons::HW_SLOWDOWN.0, 0x8);
        assert_eq!(ClocksEventReasons::DISPLAY_CLOCK_SETTING.0, 0x100);
        // A bit this crate does not name is kept and shown in hex.
        let unknown = ClocksEventReasons(0x1000) | ClocksEventReasons::HW_THERMAL_SLOWDOWN;
        assert_eq!(unknown.names(), ["HW_THERMAL_SLOWDOWN", "0x1000"]);
        assert_eq!(
            (unknown & ClocksEventReasons(0x1000)).0,
            0x1000,
            "{unknown:?}"
        );
    }
}
