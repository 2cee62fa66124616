//! NVLink: [`NvlinkInfo`] and the device's links.

use cudars_bindings::nvml::*;

use crate::error::Result;
use crate::system::device::SystemDevice;
use crate::system::events::EventTypes;
use crate::system::info::PciInfo;
use crate::system::nvml::{NvmlCheck as _, pci_from};

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
