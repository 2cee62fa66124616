//! Device buffers registered with cuFile (`cuFileBufRegister`).

use bytemuck::Pod;
use cudars_bindings::cufile as sys;
use cudars_core::{DeviceBuffer, DeviceView, DeviceViewMut};

use crate::driver::Driver;
use crate::error::{Result, check};

/// A device array registered with cuFile for the life of this guard
/// (`cuFileBufRegister`; `cuFileBufDeregister` when dropped).
///
/// With GPUDirect Storage, registering a buffer that is read into or written
/// from many times pins its mapping once instead of at every transfer; in
/// compatibility mode it changes nothing. The guard borrows the array
/// exclusively and hands out its views, so the memory cannot be freed or
/// replaced while registered.
#[derive(Debug)]
pub struct RegisteredBuffer<'a, T: Pod> {
    buf: &'a mut DeviceBuffer<T>,
    _driver: Driver,
}

impl<'a, T: Pod> RegisteredBuffer<'a, T> {
    /// Registers the whole of `buf`.
    ///
    /// # Errors
    /// cuFile's error (`CU_FILE_MEMORY_ALREADY_REGISTERED`,
    /// `CU_FILE_GPU_MEMORY_PINNING_FAILED`, …); cudars-core's error making the
    /// buffer's context current.
    pub fn new(driver: &Driver, buf: &'a mut DeviceBuffer<T>) -> Result<Self> {
        let (ptr, bytes) = (buf.view().ptr(), buf.view().byte_len());
        crate::handle::make_current(buf.as_buffer())?;
        // SAFETY: `ptr` is `bytes` bytes of device memory that the guard keeps
        // allocated (and borrowed) until it deregisters them; the driver is open.
        let status = unsafe { sys::cuFileBufRegister(ptr as *const _, bytes, 0) };
        check(status, || {
            format!("registering {bytes} bytes of device memory with cuFile")
        })?;
        Ok(Self {
            buf,
            _driver: driver.clone(),
        })
    }

    /// The registered array, shared.
    pub fn view(&self) -> DeviceView<'_, T> {
        self.buf.view()
    }

    /// The registered array, for reading into.
    pub fn view_mut(&mut self) -> DeviceViewMut<'_, T> {
        self.buf.view_mut()
    }
}

impl<T: Pod> Drop for RegisteredBuffer<'_, T> {
    fn drop(&mut self) {
        let ptr = self.buf.view().ptr();
        // SAFETY: registered in `new`, deregistered once here, while the memory
        // is still allocated (borrowed for the guard's life).
        let _ = unsafe { sys::cuFileBufDeregister(ptr as *const _) };
    }
}
