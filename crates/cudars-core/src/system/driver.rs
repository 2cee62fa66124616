//! What NVML says of the system: driver, NVML and CUDA versions, the device count,
//! process names.

use std::ffi::c_uint;

use cudars_bindings::nvml::*;

use crate::error::{Error, Result};
use crate::system::nvml::{NvmlCheck as _, from_c_buf, init, read_string, struct_version};

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

/// The kernel-mode driver's version as numbers, `[580, 95, 5]` for
/// `"580.95.05"`: [`driver_version`] read as `cuda.core`'s
/// `get_kernel_mode_driver_version` returns it (a tuple of ints), to compare
/// with `>=` as a version (`kernel_mode_driver_version()? >= [580, 65]`).
///
/// # Errors
/// As [`driver_version`]; [`Error::InvalidArgument`] when NVML's string is not
/// numbers joined by dots.
pub fn kernel_mode_driver_version() -> Result<Vec<u32>> {
    parse_dotted(&driver_version()?)
}

/// The numbers of a dotted version string (`"580.95.05"` → `[580, 95, 5]`).
pub(crate) fn parse_dotted(version: &str) -> Result<Vec<u32>> {
    version
        .trim()
        .split('.')
        .map(|part| {
            part.parse::<u32>().map_err(|_| {
                Error::invalid(
                    "reading the kernel-mode driver version (nvmlSystemGetDriverVersion)",
                    format!("{version:?} is not numbers joined by dots"),
                )
            })
        })
        .collect()
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
/// may not be allowed to use. Index [`SystemDevice`](super::SystemDevice)s with it.
///
/// **This is not CUDA's count.** With `CUDA_VISIBLE_DEVICES=1` on a machine of
/// two GPUs it is 2 while CUDA sees one device: the devices
/// [`Device::new`](crate::Device::new) takes are counted by
/// [`Device::count`](crate::Device::count) (`cuDeviceGetCount`, as the
/// runtime's `cudaGetDeviceCount`). NVML's indices are not CUDA's ordinals
/// either: match devices by UUID
/// ([`SystemDevice::uuid`](super::SystemDevice::uuid) and
/// [`Device::uuid`](crate::Device::uuid)).
///
/// # Errors
/// NVML's error; [`Error::is_unavailable`] without a driver.
pub fn device_count() -> Result<u32> {
    crate::system::nvml::device_count()
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

#[cfg(test)]
mod tests {
    use super::parse_dotted;

    #[test]
    fn dotted_versions_read_as_numbers() {
        assert_eq!(parse_dotted("580.95.05").unwrap(), [580, 95, 5]);
        assert_eq!(parse_dotted("575.51").unwrap(), [575, 51]);
        assert!(parse_dotted("580.95.05").unwrap() >= vec![580, 65]);
        assert!(parse_dotted("").is_err());
        assert!(parse_dotted("580.x").is_err());
    }
}
