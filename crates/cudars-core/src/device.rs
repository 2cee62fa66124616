//! Devices and their primary contexts.

use std::ffi::{CStr, c_char};
use std::fmt;
use std::sync::OnceLock;

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};

/// `cuInit(0)`, once per process; its result is remembered.
pub(crate) fn init() -> Result<()> {
    static INIT: OnceLock<sys::CUresult> = OnceLock::new();
    // SAFETY: `cuInit` takes flags by value and may be called from any thread.
    let rc = *INIT.get_or_init(|| unsafe { sys::cuInit(0) });
    rc.check(|| "initialising the CUDA driver (cuInit)")
}

/// A CUDA device, by ordinal.
///
/// `Device` is a plain `Copy` value (an ordinal and the driver's handle): it owns
/// nothing, and it is `Send + Sync`. Work is issued through the device's primary
/// context, which [`set_current`](Self::set_current) makes current on the calling
/// thread; the crate retains each primary context once and keeps it for the life of
/// the process, so no stream, event or buffer can outlive its context.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Device {
    ordinal: i32,
    handle: sys::CUdevice,
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({})", self.ordinal)
    }
}

/// How many devices' primary contexts the crate retains (one slot each).
const MAX_PRIMARY: usize = 64;

/// The primary context of each device, as `Device::primary_context`
/// retained it (never released).
static PRIMARY: [OnceLock<usize>; MAX_PRIMARY] = [const { OnceLock::new() }; MAX_PRIMARY];

/// Whether `ctx` is a device's primary context that this crate retained: read
/// from the crate's own record, no driver call.
pub(crate) fn is_retained_primary(ctx: sys::CUcontext) -> bool {
    !ctx.is_null()
        && PRIMARY
            .iter()
            .any(|slot| slot.get().is_some_and(|&c| c == ctx as usize))
}

/// The ordinal of the device whose primary context, as this crate retained it,
/// is `ctx`: read from the crate's own record, no driver call.
pub(crate) fn retained_primary_ordinal(ctx: sys::CUcontext) -> Option<usize> {
    if ctx.is_null() {
        return None;
    }
    PRIMARY
        .iter()
        .position(|slot| slot.get().is_some_and(|&c| c == ctx as usize))
}

impl Device {
    /// A device value for unit tests that make no driver call (its handle is
    /// the ordinal).
    #[cfg(test)]
    pub(crate) fn for_tests(ordinal: i32) -> Self {
        Self {
            ordinal,
            handle: ordinal,
        }
    }

    /// How many CUDA devices there are.
    ///
    /// # Errors
    /// The driver's error; [`Error::Unavailable`](crate::Error::Unavailable) when
    /// there is no driver (its reason lists where it was searched for).
    pub fn count() -> Result<usize> {
        init()?;
        let mut n = 0;
        // SAFETY: `n` is valid for writes.
        unsafe { sys::cuDeviceGetCount(&mut n) }.check(|| "counting CUDA devices")?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// Every device, in ordinal order.
    ///
    /// # Errors
    /// As [`count`](Self::count).
    pub fn all() -> Result<Vec<Self>> {
        (0..Self::count()?).map(Self::new).collect()
    }

    /// The device with this ordinal.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when there is no such device; the driver's error
    /// otherwise.
    pub fn new(ordinal: usize) -> Result<Self> {
        let count = Self::count()?;
        if ordinal >= count {
            return Err(Error::out_of_range(
                format!("opening device {ordinal}"),
                format!("there are {count} CUDA device(s)"),
            ));
        }
        let ordinal = i32::try_from(ordinal)
            .map_err(|_| Error::out_of_range("opening a device", "ordinal too large"))?;
        let mut handle = 0;
        // SAFETY: `handle` is valid for writes; the ordinal is in range.
        unsafe { sys::cuDeviceGet(&mut handle, ordinal) }
            .check(|| format!("opening device {ordinal}"))?;
        Ok(Self { ordinal, handle })
    }

    /// The device of the calling thread's current context, or device 0 when no
    /// context is current: `cuda.core`'s `Device()` (and the CUDA runtime's
    /// `cudaGetDevice`). It makes nothing current (call
    /// [`set_current`](Self::set_current) for that).
    ///
    /// A context is current on a thread after [`set_current`](Self::set_current),
    /// [`Context::set_current`](crate::Context::set_current) or any operation of
    /// this crate on that thread (each makes its device's context current).
    ///
    /// # Errors
    /// The driver's error (with the pathfinder's message when there is no
    /// driver); [`Error::InvalidArgument`] when there is no device 0.
    pub fn current() -> Result<Self> {
        init()?;
        let mut handle: sys::CUdevice = 0;
        // SAFETY: `handle` is valid for writes.
        let rc = unsafe { sys::cuCtxGetDevice(&mut handle) };
        if rc == sys::CUDA_ERROR_INVALID_CONTEXT {
            // No current context, or a current one that is not valid: tell them
            // apart as `cuda.core` does, and only the first means device 0.
            let mut ctx: sys::CUcontext = std::ptr::null_mut();
            // SAFETY: `ctx` is valid for writes.
            unsafe { sys::cuCtxGetCurrent(&mut ctx) }.check(|| "reading the current context")?;
            if ctx.is_null() {
                return Self::new(0);
            }
        }
        rc.check(|| "reading the current context's device")?;
        Self::from_driver_handle(handle, "reading the current context's device")
    }

    /// The device whose driver handle is `handle` (a `CUdevice` the driver
    /// returned): a handle, so the ordinal it belongs to is looked up.
    pub(crate) fn from_driver_handle(handle: sys::CUdevice, what: &'static str) -> Result<Self> {
        for ordinal in 0..Self::count()? {
            let dev = Self::new(ordinal)?;
            if dev.handle == handle {
                return Ok(dev);
            }
        }
        Err(Error::invalid(
            what,
            format!("the driver named device handle {handle}, which no ordinal has"),
        ))
    }

    /// The ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal as usize
    }

    /// The driver's handle.
    pub fn handle(&self) -> sys::CUdevice {
        self.handle
    }

    /// The device's name (`NVIDIA H100 80GB HBM3`).
    ///
    /// # Errors
    /// The driver's error.
    pub fn name(&self) -> Result<String> {
        let mut buf = [0 as c_char; 256];
        // SAFETY: `buf` holds 256 bytes.
        unsafe { sys::cuDeviceGetName(buf.as_mut_ptr(), 256, self.handle) }
            .check(|| format!("reading the name of device {}", self.ordinal))?;
        // SAFETY: the driver wrote a NUL-terminated string.
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    }

    /// The device's UUID, as the 16 bytes the driver reports.
    ///
    /// # Errors
    /// The driver's error.
    pub fn uuid(&self) -> Result<[u8; 16]> {
        let mut u = sys::CUuuid::default();
        // SAFETY: `u` is valid for writes.
        unsafe { sys::cuDeviceGetUuid(&mut u, self.handle) }
            .check(|| format!("reading the UUID of device {}", self.ordinal))?;
        Ok(u.bytes.map(|b| b as u8))
    }

    /// The UUID in `nvidia-smi`'s form: `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    ///
    /// # Errors
    /// The driver's error.
    pub fn uuid_string(&self) -> Result<String> {
        let b = self.uuid()?;
        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
        Ok(format!(
            "GPU-{}-{}-{}-{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..32]
        ))
    }

    /// The PCI bus id (`0000:3b:00.0`).
    ///
    /// # Errors
    /// The driver's error.
    pub fn pci_bus_id(&self) -> Result<String> {
        let mut buf = [0 as c_char; 32];
        // SAFETY: `buf` holds 32 bytes, more than the 13 the id needs.
        unsafe { sys::cuDeviceGetPCIBusId(buf.as_mut_ptr(), 32, self.handle) }
            .check(|| format!("reading the PCI bus id of device {}", self.ordinal))?;
        // SAFETY: the driver wrote a NUL-terminated string.
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    }

    /// One raw attribute (`cuDeviceGetAttribute`).
    ///
    /// # Errors
    /// The driver's error (an attribute this driver does not know is
    /// `CUDA_ERROR_INVALID_VALUE`).
    pub fn attribute(&self, attr: sys::CUdevice_attribute) -> Result<i32> {
        let mut v = 0;
        // SAFETY: `v` is valid for writes.
        unsafe { sys::cuDeviceGetAttribute(&mut v, attr, self.handle) }
            .check(|| format!("reading attribute {} of device {}", attr.0, self.ordinal))?;
        Ok(v)
    }

    /// The compute capability, `(major, minor)`.
    ///
    /// # Errors
    /// The driver's error.
    pub fn compute_capability(&self) -> Result<(u32, u32)> {
        let major = self.attribute(sys::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = self.attribute(sys::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        Ok((major as u32, minor as u32))
    }

    /// The architecture name compilers take: `sm_90`.
    ///
    /// # Errors
    /// The driver's error.
    pub fn arch(&self) -> Result<String> {
        let (major, minor) = self.compute_capability()?;
        Ok(format!("sm_{major}{minor}"))
    }

    /// Total memory in bytes.
    ///
    /// # Errors
    /// The driver's error.
    pub fn total_memory(&self) -> Result<usize> {
        let mut n = 0;
        // SAFETY: `n` is valid for writes.
        unsafe { sys::cuDeviceTotalMem(&mut n, self.handle) }
            .check(|| format!("reading the memory size of device {}", self.ordinal))?;
        Ok(n)
    }

    /// The device's primary context, retained once for the life of the process.
    pub(crate) fn primary_context(&self) -> Result<sys::CUcontext> {
        let slot = PRIMARY.get(self.ordinal as usize).ok_or_else(|| {
            Error::unsupported(
                "retaining a primary context",
                format!("more than {MAX_PRIMARY} devices"),
            )
        })?;
        if let Some(c) = slot.get() {
            return Ok(*c as sys::CUcontext);
        }
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: `ctx` is valid for writes; the retain is never released (see the
        // type's docs), so the context lives as long as the process.
        unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, self.handle) }
            .check(|| format!("retaining the primary context of device {}", self.ordinal))?;
        let kept = *slot.get_or_init(|| ctx as usize);
        if kept != ctx as usize {
            // Another thread won the race; give back this retain.
            // SAFETY: balances the retain above.
            let rc = unsafe { sys::cuDevicePrimaryCtxRelease(self.handle) };
            crate::cleanup::driver(
                rc,
                "releasing a device's primary context (cuDevicePrimaryCtxRelease)",
            );
        }
        Ok(kept as sys::CUcontext)
    }

    /// Whether this device can access `peer`'s memory directly.
    ///
    /// # Errors
    /// The driver's error.
    pub fn can_access_peer(&self, peer: &Device) -> Result<bool> {
        if peer == self {
            return Ok(true);
        }
        let mut v = 0;
        // SAFETY: `v` is valid for writes.
        unsafe { sys::cuDeviceCanAccessPeer(&mut v, self.handle, peer.handle) }.check(|| {
            format!(
                "asking whether device {} can access device {}",
                self.ordinal, peer.ordinal
            )
        })?;
        Ok(v != 0)
    }
}
