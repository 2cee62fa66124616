//! Registered files, and reads and writes between them and device memory.

use std::fs::File;
use std::marker::PhantomData;
use std::os::fd::AsRawFd as _;

use bytemuck::Pod;
use cudars_bindings::cufile as sys;
use cudars_core::{Buffer, DeviceView, DeviceViewMut, InvalidKind, Stream};

use crate::driver::Driver;
use crate::error::{Error, Result, check, from_status};

/// An open file registered with cuFile (`cuFileHandleRegister`): reads and
/// writes between it and device memory. It keeps the [`File`] open and the
/// [`Driver`] alive, and deregisters itself when dropped.
///
/// GPUDirect Storage moves data only for files opened with `O_DIRECT`
/// (`std::os::unix::fs::OpenOptionsExt::custom_flags(libc::O_DIRECT)`) on a file
/// system it supports; in compatibility mode any regular file works.
#[derive(Debug)]
pub struct FileHandle {
    raw: sys::CUfileHandle_t,
    file: File,
    _driver: Driver,
}

// SAFETY: a cuFile handle is a process-wide registration of a file descriptor;
// cuFile's I/O functions may be called on it from any thread, concurrently.
unsafe impl Send for FileHandle {}
// SAFETY: as above; `&FileHandle` only reads and writes through cuFile.
unsafe impl Sync for FileHandle {}

/// Which way a transfer goes, for messages.
#[derive(Clone, Copy)]
enum Dir {
    Read,
    Write,
}

impl Dir {
    fn describe(self, bytes: usize, offset: u64) -> String {
        match self {
            Self::Read => {
                format!("reading {bytes} bytes at file offset {offset} into device memory")
            }
            Self::Write => {
                format!("writing {bytes} bytes of device memory at file offset {offset}")
            }
        }
    }
}

impl FileHandle {
    /// Registers `file` with cuFile.
    ///
    /// # Errors
    /// cuFile's error (`CU_FILE_INVALID_FILE_TYPE` for something that is not a
    /// regular file, `CU_FILE_IO_NOT_SUPPORTED` for a file system GPUDirect
    /// Storage cannot use when compatibility mode is off, …).
    pub fn register(driver: &Driver, file: File) -> Result<Self> {
        let fd = file.as_raw_fd();
        let mut descr = sys::CUfileDescr_t {
            type_: sys::CU_FILE_HANDLE_TYPE_OPAQUE_FD,
            handle: sys::CUfileDescr_t__bindgen_ty_1 { fd },
            fs_ops: std::ptr::null(),
        };
        let mut raw: sys::CUfileHandle_t = std::ptr::null_mut();
        // SAFETY: `raw` and `descr` are valid; `descr` names an open descriptor
        // that `file` keeps open for the handle's life; the driver is open.
        let status = unsafe { sys::cuFileHandleRegister(&mut raw, &mut descr) };
        check(status, || {
            format!("registering file descriptor {fd} with cuFile")
        })?;
        Ok(Self {
            raw,
            file,
            _driver: driver.clone(),
        })
    }

    /// The registered file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Reads up to `dst.byte_len()` bytes from `file_offset` into `dst`
    /// (`cuFileRead`) and returns how many were read (fewer at the end of the
    /// file). The work cudars-core queued on `dst`'s buffer is waited for first;
    /// the bytes are in device memory when it returns.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an offset beyond `i64`; cuFile's error
    /// (with the OS error behind it); cudars-core's error waiting for the buffer.
    pub fn read<T: Pod>(&self, dst: DeviceViewMut<'_, T>, file_offset: u64) -> Result<usize> {
        let what = Dir::Read.describe(dst.byte_len(), file_offset);
        let offset = file_offset_of(file_offset, &what)?;
        prepare_sync(dst.buffer())?;
        // SAFETY: `dst` is `byte_len` bytes of device memory, exclusively
        // borrowed for the call; the work queued on it has finished; the handle
        // is registered.
        let ret =
            unsafe { sys::cuFileRead(self.raw, dst.ptr() as *mut _, dst.byte_len(), offset, 0) };
        sys::CufileError::from_io_result(ret).map_err(|e| from_status(what, e))
    }

    /// Writes `src` at `file_offset` (`cuFileWrite`) and returns how many bytes
    /// were written. The work cudars-core queued on `src`'s buffer is waited for
    /// first; the bytes are in the file (its page cache) when it returns.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub fn write<T: Pod>(&self, src: DeviceView<'_, T>, file_offset: u64) -> Result<usize> {
        let what = Dir::Write.describe(src.byte_len(), file_offset);
        let offset = file_offset_of(file_offset, &what)?;
        prepare_sync(src.buffer())?;
        // SAFETY: `src` is `byte_len` readable bytes of device memory, borrowed
        // for the call; the work queued on it has finished; the handle is
        // registered.
        let ret =
            unsafe { sys::cuFileWrite(self.raw, src.ptr() as *const _, src.byte_len(), offset, 0) };
        sys::CufileError::from_io_result(ret).map_err(|e| from_status(what, e))
    }

    /// Queues a read of up to `dst.byte_len()` bytes from `file_offset` into
    /// `dst` on `stream` (`cuFileReadAsync`): it runs after the work queued on
    /// `stream` before it, and work queued after it sees the bytes. The returned
    /// [`PendingIo`] holds the parameters cuFile reads when the stream gets there
    /// and borrows `dst` and this handle; [`wait`](PendingIo::wait) says how
    /// many bytes were read.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] ([`InvalidKind::OtherDevice`]) for a stream of
    /// another device than `dst`'s, or an offset beyond `i64`; cuFile's error
    /// (`CU_FILE_ASYNC_NOT_SUPPORTED`; [`Error::Unavailable`] for a cuFile older
    /// than the stream API).
    pub fn read_async<'a, T: Pod>(
        &'a self,
        dst: DeviceViewMut<'a, T>,
        file_offset: u64,
        stream: &'a Stream,
    ) -> Result<PendingIo<'a>> {
        let span = (dst.buffer(), dst.ptr(), dst.byte_len());
        self.queue(Dir::Read, span, file_offset, stream)
    }

    /// Queues a write of `src` at `file_offset` on `stream`
    /// (`cuFileWriteAsync`), after the work queued on `stream` before it; see
    /// [`read_async`](Self::read_async).
    ///
    /// # Errors
    /// As [`read_async`](Self::read_async).
    pub fn write_async<'a, T: Pod>(
        &'a self,
        src: DeviceView<'a, T>,
        file_offset: u64,
        stream: &'a Stream,
    ) -> Result<PendingIo<'a>> {
        let span = (src.buffer(), src.ptr(), src.byte_len());
        self.queue(Dir::Write, span, file_offset, stream)
    }

    fn queue<'a>(
        &'a self,
        dir: Dir,
        (buf, ptr, bytes): (&Buffer, cudars_bindings::driver::CUdeviceptr, usize),
        file_offset: u64,
        stream: &'a Stream,
    ) -> Result<PendingIo<'a>> {
        let what = dir.describe(bytes, file_offset);
        let offset = file_offset_of(file_offset, &what)?;
        if buf.device() != stream.device() {
            return Err(Error::invalid(
                what,
                InvalidKind::OtherDevice,
                format!(
                    "the memory is on device {} and the stream on device {}",
                    buf.device().ordinal(),
                    stream.device().ordinal()
                ),
            ));
        }
        stream.context().set_current()?;
        let mut params = Box::new(AsyncParams {
            size: bytes,
            file_offset: offset,
            buf_offset: 0,
            done: 0,
        });
        let p: *mut AsyncParams = &mut *params;
        let call = match dir {
            Dir::Read => sys::cuFileReadAsync,
            Dir::Write => sys::cuFileWriteAsync,
        };
        // SAFETY: the memory is `bytes` bytes of device memory on the stream's
        // device, borrowed (exclusively for a read) for the `PendingIo`'s life,
        // and its free is ordered after this work below; the four parameters
        // live in a box the `PendingIo` frees only after the stream has run the
        // operation (or leaks); the handle outlives the `PendingIo`.
        let status = unsafe {
            call(
                self.raw,
                ptr as *mut _,
                &raw mut (*p).size,
                &raw mut (*p).file_offset,
                &raw mut (*p).buf_offset,
                &raw mut (*p).done,
                stream.handle().cast(),
            )
        };
        // Nothing was queued on failure: the box may go.
        check(status, || format!("{what}, ordered on a stream"))?;
        let pending = PendingIo {
            params: Some(params),
            stream,
            what,
            _borrow: PhantomData,
        };
        // The buffer's stream-ordered free waits for the transfer, even if the
        // `PendingIo` is leaked.
        buf.order_free_after(stream)?;
        Ok(pending)
    }
}

impl Drop for FileHandle {
    fn drop(&mut self) {
        // SAFETY: registered in `register`, deregistered once here; no I/O is
        // under way (a `PendingIo` borrows the handle until the stream ran it).
        unsafe { sys::cuFileHandleDeregister(self.raw) };
    }
}

/// The parameters of a stream-ordered transfer, which cuFile reads (and whose
/// `done` it writes) when the stream reaches it.
#[repr(C)]
struct AsyncParams {
    size: usize,
    file_offset: sys::off_t,
    buf_offset: sys::off_t,
    done: isize,
}

/// A transfer queued on a stream by [`FileHandle::read_async`] or
/// [`FileHandle::write_async`]: it owns the parameters cuFile reads when the
/// stream reaches the transfer and borrows the device memory and the handle.
///
/// [`wait`](Self::wait) synchronises the stream and returns the bytes moved.
/// Dropping it without waiting synchronises the stream too (the parameters must
/// outlive the transfer); if that synchronisation fails, the parameters are
/// leaked rather than freed under cuFile. Leaking a `PendingIo`
/// (`std::mem::forget`) leaks them as well: safe, and the buffer's free is still
/// ordered after the transfer.
#[must_use = "the transfer's result comes from `wait`; dropping it waits for the stream"]
#[derive(Debug)]
pub struct PendingIo<'a> {
    params: Option<Box<AsyncParams>>,
    stream: &'a Stream,
    what: String,
    _borrow: PhantomData<&'a mut ()>,
}

impl std::fmt::Debug for AsyncParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncParams")
            .field("size", &self.size)
            .field("file_offset", &self.file_offset)
            .finish_non_exhaustive()
    }
}

impl PendingIo<'_> {
    /// Waits for the stream and returns how many bytes the transfer moved
    /// (fewer than asked for a read that reached the end of the file).
    ///
    /// # Errors
    /// cudars-core's error synchronising the stream; cuFile's error for the
    /// transfer.
    pub fn wait(mut self) -> Result<usize> {
        self.finish()
    }

    fn finish(&mut self) -> Result<usize> {
        let Some(params) = self.params.take() else {
            return Ok(0);
        };
        if let Err(e) = self.stream.sync() {
            // The transfer may not have run: cuFile may still read the box.
            Box::leak(params);
            return Err(e.into());
        }
        let done = params.done;
        drop(params);
        match done {
            -1 => Err(from_status(
                std::mem::take(&mut self.what),
                sys::CufileError::new(sys::CUfileError {
                    err: sys::CU_FILE_IO_ERROR,
                    cu_err: sys::CUDA_SUCCESS,
                }),
            )),
            n => sys::CufileError::from_io_result(n)
                .map_err(|e| from_status(std::mem::take(&mut self.what), e)),
        }
    }
}

impl Drop for PendingIo<'_> {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// `file_offset` as `off_t`, or why it is not one.
fn file_offset_of(file_offset: u64, what: &str) -> Result<sys::off_t> {
    sys::off_t::try_from(file_offset).map_err(|_| {
        Error::invalid(
            what.to_owned(),
            InvalidKind::OutOfRange,
            format!(
                "the file offset {file_offset} is beyond the largest offset, {}",
                i64::MAX
            ),
        )
    })
}

/// Makes the context of `buf`'s memory current: its free stream's, else its
/// device's primary context.
pub(crate) fn make_current(buf: &Buffer) -> Result<()> {
    match buf.free_stream() {
        Some(free) => free.context().set_current()?,
        None => buf.device().set_current()?,
    }
    Ok(())
}

/// Before a synchronous transfer: the buffer's context current, and the work
/// cudars-core queued on the buffer (ordered before its free) finished.
fn prepare_sync(buf: &Buffer) -> Result<()> {
    make_current(buf)?;
    if let Some(free) = buf.free_stream() {
        free.sync()?;
    }
    Ok(())
}
