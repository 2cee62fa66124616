//! Device buffers registered with cuFile (`cuFileBufRegister`).

use std::mem::ManuallyDrop;

use bytemuck::Pod;
use cudars_bindings::cufile as sys;
use cudars_core::{DeviceBuffer, DeviceView, DeviceViewMut};

use crate::driver::Driver;
use crate::error::{Result, check};

/// A device array registered with cuFile for the life of this value
/// (`cuFileBufRegister`; `cuFileBufDeregister` when dropped or by
/// [`into_inner`](Self::into_inner)).
///
/// With GPUDirect Storage, registering a buffer that is read into or written
/// from many times pins its mapping once instead of at every transfer; in
/// compatibility mode it changes nothing. It owns the array and hands out its
/// views, so the memory cannot be freed or replaced while registered.
///
/// Owning it (rather than borrowing it) is what makes it sound to leak: with
/// `std::mem::forget` the registration and the memory are leaked together, so
/// a registration can never outlive its memory (a later allocation at the same
/// address would otherwise meet a stale registration of freed pages).
///
/// ```compile_fail
/// # fn f(driver: &cudars_file::Driver, buf: cudars_core::DeviceBuffer<u8>) {
/// let reg = cudars_file::RegisteredBuffer::new(driver, buf).unwrap();
/// std::mem::forget(reg);
/// drop(buf); // the array moved into the registration: it cannot be freed here
/// # }
/// ```
#[derive(Debug)]
pub struct RegisteredBuffer<T: Pod> {
    /// Dropped by hand, after the deregistration, or leaked with the
    /// registration when the transfers on it cannot be waited for.
    buf: ManuallyDrop<DeviceBuffer<T>>,
    driver: ManuallyDrop<Driver>,
}

impl<T: Pod> RegisteredBuffer<T> {
    /// Registers the whole of `buf`, taking it over ([`into_inner`](Self::into_inner)
    /// gives it back).
    ///
    /// # Errors
    /// cuFile's error (`CU_FILE_MEMORY_ALREADY_REGISTERED`,
    /// `CU_FILE_GPU_MEMORY_PINNING_FAILED`, …); cudars-core's error making the
    /// buffer's context current. The buffer is dropped (freed in stream order).
    pub fn new(driver: &Driver, buf: DeviceBuffer<T>) -> Result<Self> {
        let (ptr, bytes) = (buf.view().ptr(), buf.view().byte_len());
        let _scope = crate::handle::make_current(buf.as_buffer())?;
        // SAFETY: `ptr` is `bytes` bytes of device memory that `Self` owns
        // until it deregisters them (or leaks both); the driver is open.
        let status = unsafe { sys::cuFileBufRegister(ptr as *const _, bytes, 0) };
        check(status, || {
            format!("registering {bytes} bytes of device memory with cuFile")
        })?;
        Ok(Self {
            buf: ManuallyDrop::new(buf),
            driver: ManuallyDrop::new(driver.clone()),
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

    /// The registered array.
    pub fn array(&self) -> &DeviceBuffer<T> {
        &self.buf
    }

    /// Deregisters the array after the transfers queued on it, and gives it
    /// back.
    ///
    /// # Errors
    /// cudars-core's error waiting for the transfers; the array is then
    /// leaked, still registered (cuFile may still use the registration).
    pub fn into_inner(self) -> Result<DeviceBuffer<T>> {
        let mut this = ManuallyDrop::new(self);
        // On failure `this` is leaked whole: the array with its registration.
        this.deregister()?;
        // SAFETY: `this` is never used or dropped again; each field is moved
        // out once.
        let (buf, driver) = unsafe {
            (
                ManuallyDrop::take(&mut this.buf),
                ManuallyDrop::take(&mut this.driver),
            )
        };
        drop(driver);
        Ok(buf)
    }

    /// Waits for the work ordered before the array's free (every transfer
    /// queued on it, on any stream, orders the free after itself), then
    /// deregisters it. Called once, by `into_inner` or drop.
    fn deregister(&mut self) -> Result<()> {
        let buffer = self.buf.as_buffer();
        if let Some(free) = buffer.free_stream() {
            free.sync()?;
        }
        // Entered after the wait (cudars-core's operations make their own
        // context current, and a scope holds a green context's lock).
        let _scope = crate::handle::make_current(buffer)?;
        // SAFETY: registered in `new`, deregistered once (by the one caller
        // that consumes `self`), while the memory is still allocated and no
        // transfer is queued on it (waited for above; the caller's `&mut`
        // excludes new ones).
        let _ = unsafe { sys::cuFileBufDeregister(buffer.ptr() as *const _) };
        Ok(())
    }
}

impl<T: Pod> Drop for RegisteredBuffer<T> {
    // Soundness rule (issue 26): this drop is not needed for soundness. The
    // value owns the array, so leaking it leaks the registration with its
    // memory; when it does run, it deregisters only after the transfers on
    // the array have finished, and frees the array only after that.
    fn drop(&mut self) {
        if self.deregister().is_ok() {
            // SAFETY: dropped once, here; neither is used again.
            unsafe {
                ManuallyDrop::drop(&mut self.buf);
                ManuallyDrop::drop(&mut self.driver);
            }
        }
        // Otherwise both are leaked with the registration.
    }
}
