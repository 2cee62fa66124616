//! [`Fan`]: one fan of a device, its speed, target and control policy.

use crate::error::Result;
use crate::system::device::SystemDevice;
use crate::system::hardware_types::FanControlPolicy;
use crate::{system::nvml::NvmlCheck as _, system::nvml::struct_version};
use cudars_bindings::nvml::*;
use std::ffi::c_uint;

/// One fan of a device ([`SystemDevice::fan`]; `FanInfo` in Python). A plain
/// `Copy` value: the device and the fan's number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fan {
    pub(super) device: SystemDevice,
    pub(super) fan: u32,
}

impl Fan {
    /// The fan's number on its device.
    pub fn index(&self) -> u32 {
        self.fan
    }

    /// Reads one `c_uint` of this fan.
    fn read(
        &self,
        what: &str,
        function: &str,
        call: impl FnOnce(nvmlDevice_t, c_uint, *mut c_uint) -> nvmlReturn_t,
    ) -> Result<u32> {
        let mut v = 0;
        call(self.device.handle, self.fan, &mut v).check(|| {
            self.device
                .ctx(&format!("{what} of fan {}", self.fan), function)
        })?;
        Ok(v)
    }

    /// The speed the fan is meant to run at, in percent of its maximum; it may
    /// exceed 100 (`nvmlDeviceGetFanSpeed_v2`; `speed` in Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// passively cooled boards).
    pub fn speed(&self) -> Result<u32> {
        self.read(
            "reading the speed",
            "nvmlDeviceGetFanSpeed_v2",
            |h, f, p| {
                // SAFETY: `h` is a valid device handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetFanSpeed_v2(h, f, p) }
            },
        )
    }

    /// The speed the fan is meant to run at, in RPM (`nvmlDeviceGetFanSpeedRPM`;
    /// `speed_rpm` in Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// passively cooled boards).
    pub fn speed_rpm(&self) -> Result<u32> {
        let mut s = nvmlFanSpeedInfo_t {
            version: struct_version::<nvmlFanSpeedInfo_t>(1),
            fan: self.fan,
            speed: 0,
        };
        // SAFETY: a valid device handle; `s` is valid for writes and its version
        // and fan fields are set.
        unsafe { nvmlDeviceGetFanSpeedRPM(self.device.handle, &mut s) }.check(|| {
            self.device.ctx(
                &format!("reading the RPM of fan {}", self.fan),
                "nvmlDeviceGetFanSpeedRPM",
            )
        })?;
        Ok(s.speed)
    }

    /// The speed the driver (or a manual setting) aims the fan at, in percent
    /// (`nvmlDeviceGetTargetFanSpeed`; `target_speed` in Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// passively cooled boards).
    pub fn target_speed(&self) -> Result<u32> {
        self.read(
            "reading the target speed",
            "nvmlDeviceGetTargetFanSpeed",
            |h, f, p| {
                // SAFETY: `h` is a valid device handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetTargetFanSpeed(h, f, p) }
            },
        )
    }

    /// How the fan is controlled (`nvmlDeviceGetFanControlPolicy_v2`;
    /// `control_policy` in Python).
    ///
    /// # Errors
    /// NVML's error ([`NvmlErrorKind::NotSupported`](crate::NvmlErrorKind) on
    /// passively cooled boards).
    pub fn control_policy(&self) -> Result<FanControlPolicy> {
        let p = self.read(
            "reading the control policy",
            "nvmlDeviceGetFanControlPolicy_v2",
            |h, f, p| {
                // SAFETY: `h` is a valid device handle; `p` is valid for writes.
                unsafe { nvmlDeviceGetFanControlPolicy_v2(h, f, p) }
            },
        )?;
        Ok(match p {
            NVML_FAN_POLICY_TEMPERATURE_CONTINOUS_SW => FanControlPolicy::TemperatureControlled,
            NVML_FAN_POLICY_MANUAL => FanControlPolicy::Manual,
            other => FanControlPolicy::Other(other),
        })
    }
}
