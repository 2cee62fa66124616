//! Device buffers registered with cuFile (`cuFileBufRegister`).

use std::mem::ManuallyDrop;

use bytemuck::Pod;
use cudars_bindings::cufile as sys;
use cudars_core::{Buffer, Context, ContextScope, DeviceBuffer, DeviceView, DeviceViewMut};

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
        deregister(this.buf.as_buffer())?;
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
}

/// Waits for the work ordered before `buffer`'s free (every transfer queued on
/// it, on any stream, orders the free after itself), then deregisters it.
/// Called once per registration, by `into_inner` or drop.
fn deregister(buffer: &Buffer) -> cudars_core::Result<()> {
    if let Some(free) = buffer.free_stream() {
        free.sync()?;
    }
    // Entered after the wait (cudars-core's operations make their own context
    // current, and a scope holds a green context's lock).
    let _scope = match buffer.free_stream() {
        Some(free) => ContextScope::for_stream(free)?,
        None => ContextScope::enter(&Context::primary(buffer.device())?)?,
    };
    // SAFETY: registered in `new`, deregistered once (by the one caller that
    // consumes the registration), while the memory is still allocated and no
    // transfer is queued on it (waited for above; the caller owns the array,
    // so no new one can be).
    let _ = unsafe { sys::cuFileBufDeregister(buffer.ptr() as *const _) };
    Ok(())
}

impl<T: Pod> Drop for RegisteredBuffer<T> {
    // Soundness rule (issue 26): this drop is not needed for soundness. The
    // value owns the array, so leaking it leaks the registration with its
    // memory; when it does run, it deregisters only after the transfers on
    // the array have finished, and frees the array only after that.
    //
    // On a driver callback thread (where the wait is forbidden) all of it runs
    // later, on an ordinary thread (rule 6); a wait refused for now (during a
    // capture) is tried again.
    fn drop(&mut self) {
        // SAFETY: each taken once, here; neither field is used again.
        let (buf, driver) = unsafe {
            (
                ManuallyDrop::take(&mut self.buf).into_buffer(),
                ManuallyDrop::take(&mut self.driver),
            )
        };
        // Leaked with the registration unless the deregistration succeeds: a
        // failure that is final drops the closure, and with it this, which
        // drops nothing.
        let mut keep = Some(ManuallyDrop::new((buf, driver)));
        let destroy = move |()| {
            let Some(kept) = &keep else {
                return Ok(());
            };
            deregister(&kept.0)?;
            drop(keep.take().map(ManuallyDrop::into_inner));
            Ok(())
        };
        // SAFETY: `()` stands for the registration of `buf`'s memory, which
        // the closure owns with the memory and releases only there.
        unsafe { cudars_core::release_or_defer("deregistering a buffer from cuFile", (), destroy) };
    }
}
