//! Peer access to a [`DeviceMemoryResource`]'s memory: which other devices may read
//! and write it, and granting or revoking that (`cuMemPoolGetAccess`,
//! `cuMemPoolSetAccess`).

use cudars_bindings::driver as sys;

use crate::device::Device;
use crate::error::{Check as _, Error, Result};
use crate::memory::pool::DeviceMemoryResource;
use crate::memory::resource::Location;

impl DeviceMemoryResource {
    /// The other devices that may read and write the pool's memory
    /// (`cuMemPoolGetAccess` for each device).
    ///
    /// # Errors
    /// The driver's error.
    pub fn peer_accessible_by(&self) -> Result<Vec<Device>> {
        let mut out = Vec::new();
        for d in Device::all()? {
            if d != self.device && self.access_of(d)? == sys::CU_MEM_ACCESS_FLAGS_PROT_READWRITE {
                out.push(d);
            }
        }
        Ok(out)
    }

    /// `cuMemPoolGetAccess` for one device.
    pub(crate) fn access_of(&self, d: Device) -> Result<sys::CUmemAccess_flags> {
        let mut flags = sys::CU_MEM_ACCESS_FLAGS_PROT_NONE;
        let mut loc = Location::Device(d).raw();
        // SAFETY: `flags` is valid for writes, `loc` names a device; a live pool.
        unsafe { sys::cuMemPoolGetAccess(&mut flags, self.pool, &mut loc) }.check(|| {
            format!(
                "reading whether device {} may access a pool of device {}",
                d.ordinal(),
                self.device.ordinal()
            )
        })?;
        Ok(flags)
    }

    /// Lets exactly `peers` read and write the pool's memory, and revokes the
    /// access of every other device (`cuMemPoolSetAccess`). Access applies to
    /// buffers allocated before and after the call. As in `cuda.core`, the
    /// pool's own device (which always has access) is left out of `peers`, and
    /// repeats count once.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`], before any access changes, naming the
    /// devices that cannot reach this one ([`Device::can_access_peer`];
    /// `cuda.core`'s `ValueError`); the driver's error.
    pub fn set_peer_accessible_by(&self, peers: &[Device]) -> Result<()> {
        let what = || {
            format!(
                "setting which devices may access a pool of device {}",
                self.device.ordinal()
            )
        };
        let mut wanted: Vec<Device> = Vec::with_capacity(peers.len());
        for d in peers {
            if *d != self.device && !wanted.contains(d) {
                wanted.push(*d);
            }
        }
        let mut unreachable = Vec::new();
        for d in &wanted {
            if !self.device.can_access_peer(d)? {
                unreachable.push(d.ordinal().to_string());
            }
        }
        if !unreachable.is_empty() {
            return Err(Error::invalid(
                what(),
                format!(
                    "device {} cannot access peer(s): {}",
                    self.device.ordinal(),
                    unreachable.join(", ")
                ),
            ));
        }
        let peers = wanted.as_slice();
        // Grant `peers`; revoke only devices that have access now.
        let now = self.peer_accessible_by()?;
        let descs: Vec<sys::CUmemAccessDesc> = peers
            .iter()
            .map(|d| (*d, sys::CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
            .chain(
                now.into_iter()
                    .filter(|d| !peers.contains(d))
                    .map(|d| (d, sys::CU_MEM_ACCESS_FLAGS_PROT_NONE)),
            )
            .map(|(d, flags)| sys::CUmemAccessDesc {
                location: Location::Device(d).raw(),
                flags,
            })
            .collect();
        if descs.is_empty() {
            return Ok(());
        }
        // SAFETY: `descs` holds `descs.len()` valid descriptors; a live pool.
        unsafe { sys::cuMemPoolSetAccess(self.pool, descs.as_ptr(), descs.len()) }.check(what)
    }
}
