//! Registered files, and reads and writes between them and device memory.

use std::fs::File;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::os::fd::AsRawFd as _;
use std::sync::{Arc, Mutex, PoisonError};

use bytemuck::Pod;
use cudars_bindings::cufile as sys;
use cudars_core::{
    Buffer, Context, ContextScope, DeviceView, DeviceViewMut, Event, EventOptions, InvalidKind,
    Stream,
};

use crate::driver::Driver;
use crate::error::{Error, Result, check, from_status};

/// An open file registered with cuFile (`cuFileHandleRegister`): reads and
/// writes between it and device memory. It keeps the [`File`] open and the
/// [`Driver`] alive, and deregisters itself when dropped.
///
/// A transfer queued on a stream ([`read_async`](Self::read_async),
/// [`write_async`](Self::write_async)) keeps the registration, the file and
/// the driver alive by itself until the stream has passed it, whatever becomes
/// of its [`PendingIo`] (which may be leaked with `std::mem::forget`): dropping
/// the handle first waits for such transfers, and a registration whose
/// transfers cannot be waited for is leaked rather than torn down under them.
///
/// GPUDirect Storage moves data only for files opened with `O_DIRECT`
/// (`std::os::unix::fs::OpenOptionsExt::custom_flags(libc::O_DIRECT)`) on a file
/// system it supports; in compatibility mode any regular file works.
#[derive(Debug)]
pub struct FileHandle {
    inner: Arc<Registration>,
}

/// The registration behind a [`FileHandle`], shared with the transfers queued
/// through it: deregistered (and the file closed, and its hold on the driver
/// released) when the handle and every such transfer are gone.
#[derive(Debug)]
struct Registration {
    raw: sys::CUfileHandle_t,
    /// Closed after the deregistration (which `Drop` may defer): taken out in
    /// `Drop`, dropped nowhere else.
    file: ManuallyDrop<File>,
    /// Released after the deregistration, as `file`.
    driver: ManuallyDrop<Driver>,
}

// SAFETY: a cuFile handle is a process-wide registration of a file descriptor;
// cuFile's I/O functions may be called on it from any thread, concurrently.
// Soundness contract: rules 8 and 11.
unsafe impl Send for Registration {}
// SAFETY: as above; `&Registration` only reads and writes through cuFile.
// Soundness contract: rules 8 and 11.
unsafe impl Sync for Registration {}

impl Drop for Registration {
    // Soundness rule (issue 26, "queued work owns what it uses"): a
    // `Registration` is shared by its `FileHandle` and by every in-flight
    // entry of a transfer queued through it ([`IN_FLIGHT`]), and an entry is
    // released only once its event says the stream has passed the transfer.
    // So the last reference, whose drop this is, goes after every transfer
    // through the registration has finished, whether or not any guard ran.
    // On a driver callback thread the deregistration runs later, on an
    // ordinary thread (rule 6), and the file and the driver go after it there.
    fn drop(&mut self) {
        // SAFETY: each taken once, here; neither field is used again.
        let (file, driver) = unsafe {
            (
                ManuallyDrop::take(&mut self.file),
                ManuallyDrop::take(&mut self.driver),
            )
        };
        let mut keep = Some((file, driver));
        let destroy = move |raw| {
            // SAFETY: deregistered once; no I/O is under way (see above),
            // and the file and the driver (dropped after this) are still open.
            unsafe { sys::cuFileHandleDeregister(raw) };
            drop(keep.take());
            Ok(())
        };
        // SAFETY: registered in `FileHandle::register`, deregistered only here;
        // cuFile lets any thread deregister it.
        unsafe {
            cudars_core::release_or_defer("deregistering a file from cuFile", self.raw, destroy)
        };
    }
}

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
            inner: Arc::new(Registration {
                raw,
                file: ManuallyDrop::new(file),
                driver: ManuallyDrop::new(driver.clone()),
            }),
        })
    }

    /// The registered file.
    pub fn file(&self) -> &File {
        &self.inner.file
    }

    fn raw(&self) -> sys::CUfileHandle_t {
        self.inner.raw
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
        let _scope = prepare_sync(dst.buffer())?;
        // SAFETY: `dst` is `byte_len` bytes of device memory, exclusively
        // borrowed for the call; the work queued on it has finished; the handle
        // is registered.
        let ret =
            unsafe { sys::cuFileRead(self.raw(), dst.ptr() as *mut _, dst.byte_len(), offset, 0) };
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
        let _scope = prepare_sync(src.buffer())?;
        // SAFETY: `src` is `byte_len` readable bytes of device memory, borrowed
        // for the call; the work queued on it has finished; the handle is
        // registered.
        let ret = unsafe {
            sys::cuFileWrite(self.raw(), src.ptr() as *const _, src.byte_len(), offset, 0)
        };
        sys::CufileError::from_io_result(ret).map_err(|e| from_status(what, e))
    }

    /// Queues a read of up to `dst.byte_len()` bytes from `file_offset` into
    /// `dst` on `stream` (`cuFileReadAsync`): it runs after the work queued on
    /// `stream` before it, and work queued after it sees the bytes. The returned
    /// [`PendingIo`] borrows `dst` and this handle; [`wait`](PendingIo::wait)
    /// says how many bytes were read. The transfer itself owns the parameters
    /// cuFile reads when the stream gets there and a share of the handle's
    /// registration, released once the stream has passed it (an event), so
    /// leaking the `PendingIo` and then dropping the handle, the driver or the
    /// buffer is safe: the handle's drop waits for the transfer, and the
    /// buffer's free is ordered after it.
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
        // Transfers whose streams have moved on since release what they held.
        settle_finished();
        // Made before the transfer is queued, so that once it is, nothing but
        // recording can fail.
        let event = Event::in_context(stream.context(), EventOptions::default())?;
        let op = Arc::new(Transfer {
            params: Box::into_raw(Box::new(AsyncParams {
                size: bytes,
                file_offset: offset,
                buf_offset: 0,
                done: 0,
            })),
            _registration: Arc::clone(&self.inner),
        });
        let p = op.params;
        let call = match dir {
            Dir::Read => sys::cuFileReadAsync,
            Dir::Write => sys::cuFileWriteAsync,
        };
        // The stream's context for cuFile's call alone (cudars-core's own
        // operations around it make their own context current).
        let scope = ContextScope::for_stream(stream)?;
        // SAFETY: the memory is `bytes` bytes of device memory on the stream's
        // device, borrowed (exclusively for a read) while the `PendingIo`
        // lives, and its free is ordered after this work below (which holds if
        // the `PendingIo` is leaked too). The four parameters live in the
        // `Transfer`'s box and the registration in its `Arc`; `track` below
        // keeps both until an event recorded after the transfer has completed
        // (or forever).
        let status = unsafe {
            call(
                self.raw(),
                ptr as *mut _,
                &raw mut (*p).size,
                &raw mut (*p).file_offset,
                &raw mut (*p).buf_offset,
                &raw mut (*p).done,
                stream.handle().cast(),
            )
        };
        drop(scope);
        // Nothing was queued on failure: the transfer's state may go.
        check(status, || format!("{what}, ordered on a stream"))?;
        // From here on the stream owns a use of `op`: it is released only
        // after the stream has passed the transfer.
        let tracked = track(&op, event, stream);
        // The buffer's stream-ordered free waits for the transfer, even if the
        // `PendingIo` is leaked.
        let ordered = buf.order_free_after(stream);
        let pending = PendingIo {
            op: Some(op),
            stream,
            what,
            _borrow: PhantomData,
        };
        tracked?;
        ordered?;
        Ok(pending)
    }
}

impl Drop for FileHandle {
    // Soundness rule (issue 26): not needed for soundness, since queued
    // transfers hold the registration themselves (see `Registration`'s drop);
    // this waits for them so that the registration, the descriptor and the
    // driver go now rather than at a later call.
    // On a driver callback thread (where the waits are forbidden) it runs
    // later, on an ordinary thread (rule 6).
    fn drop(&mut self) {
        let inner = self.inner.clone();
        let destroy = move |()| {
            settle_of(&inner);
            Ok(())
        };
        // SAFETY: `()` stands for nothing to release but the handle's own
        // clone of the registration, which the wait holds.
        unsafe {
            cudars_core::release_or_defer("waiting for a cuFile handle's transfers", (), destroy)
        };
    }
}

/// A transfer queued on a stream: the parameters cuFile reads when the stream
/// reaches it (and whose `done` it writes), and the registration it goes
/// through. Freed when the last of its [`PendingIo`] and its [`IN_FLIGHT`]
/// entry goes, and the entry goes only once the stream has passed the
/// transfer.
#[derive(Debug)]
struct Transfer {
    params: *mut AsyncParams,
    _registration: Arc<Registration>,
}

// SAFETY: `params` is a heap box that cuFile writes only while the transfer
// runs on the stream; this crate reads `done` only after the stream has passed
// the transfer (an event or a stream synchronisation), and frees the box only
// when the `Transfer` is dropped, which the `IN_FLIGHT` entry delays until
// then. Nothing else touches it, from any thread.
// Soundness contract: rules 8 and 11.
unsafe impl Send for Transfer {}
// SAFETY: as above: `&Transfer` only reads `done`, after the transfer.
// Soundness contract: rules 8 and 11.
unsafe impl Sync for Transfer {}

impl Transfer {
    /// The number of bytes moved, or -1 (cuFile's `done`).
    ///
    /// Only for after the stream has passed the transfer.
    fn done(&self) -> isize {
        // SAFETY: the box is live (freed only by `drop`); the caller waited
        // for the transfer, so cuFile no longer writes it.
        unsafe { (*self.params).done }
    }
}

impl Drop for Transfer {
    // Soundness rule (issue 26): the last reference to a `Transfer` is dropped
    // only after the stream has passed it (its `IN_FLIGHT` entry outlives the
    // transfer, and a transfer that could not be tracked is leaked), so cuFile
    // no longer reads or writes the box.
    fn drop(&mut self) {
        // SAFETY: from `Box::into_raw` in `queue`, freed once, here.
        drop(unsafe { Box::from_raw(self.params) });
    }
}

/// A transfer in flight: an event recorded on its stream after it, and the
/// transfer it keeps alive until the event has completed.
struct InFlight {
    event: Event,
    op: Arc<Transfer>,
}

/// Every transfer queued and not yet known to be finished, in this process.
/// Drained by [`settle_finished`] (at each new transfer and each
/// [`PendingIo`] wait) and by [`settle_of`] (when a [`FileHandle`] goes).
/// Never locked across a wait.
static IN_FLIGHT: Mutex<Vec<InFlight>> = Mutex::new(Vec::new());

fn in_flight() -> std::sync::MutexGuard<'static, Vec<InFlight>> {
    IN_FLIGHT.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Keeps `op` alive until the stream has passed it: an `IN_FLIGHT` entry with
/// `event` recorded on `stream` now. If the event cannot be recorded, waits
/// for the stream instead; if that fails too, leaks `op` (the registration,
/// the file and the driver stay open for good: safe).
fn track(op: &Arc<Transfer>, event: Event, stream: &Stream) -> Result<()> {
    match event.record(stream) {
        Ok(()) => {
            in_flight().push(InFlight {
                event,
                op: Arc::clone(op),
            });
            Ok(())
        }
        Err(e) => {
            if stream.sync().is_err() {
                std::mem::forget(Arc::clone(op));
            }
            Err(e.into())
        }
    }
}

/// Releases the transfers whose events have completed (their state is
/// dropped outside the lock: dropping a registration calls cuFile).
fn settle_finished() {
    let done: Vec<InFlight> = {
        let mut list = in_flight();
        let (done, pending) = std::mem::take(&mut *list)
            .into_iter()
            .partition(|f| matches!(f.event.is_done(), Ok(true)));
        *list = pending;
        done
    };
    drop(done);
}

/// Waits for the transfers through `reg` and releases them; one whose event
/// cannot be waited for stays in flight (never released: safe).
fn settle_of(reg: &Arc<Registration>) {
    let mine: Vec<InFlight> = {
        let mut list = in_flight();
        let (mine, others) = std::mem::take(&mut *list)
            .into_iter()
            .partition(|f| Arc::ptr_eq(&f.op._registration, reg));
        *list = others;
        mine
    };
    let mut stuck = Vec::new();
    for f in mine {
        if f.event.sync().is_err() {
            stuck.push(f);
        }
    }
    if !stuck.is_empty() {
        in_flight().extend(stuck);
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
/// [`FileHandle::write_async`]: it borrows the device memory and the handle,
/// and shares the transfer's state (the parameters cuFile reads when the
/// stream reaches it).
///
/// [`wait`](Self::wait) synchronises the stream and returns the bytes moved.
/// Dropping it without waiting synchronises the stream too. Neither is needed
/// for soundness: the transfer's state, with the handle's registration, is
/// held by the transfer itself until an event recorded after it has
/// completed. Leaking a `PendingIo` (`std::mem::forget`) is safe: the handle's
/// drop waits for the transfer, and the buffer's free is ordered after it.
#[must_use = "the transfer's result comes from `wait`; dropping it waits for the stream"]
#[derive(Debug)]
pub struct PendingIo<'a> {
    op: Option<Arc<Transfer>>,
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
        let Some(op) = self.op.take() else {
            return Ok(0);
        };
        // On failure the transfer may not have run: dropping `op` is still
        // safe (its `IN_FLIGHT` entry keeps the state until it has).
        self.stream.sync()?;
        let done = op.done();
        drop(op);
        settle_finished();
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
    // Waits for the transfer; on a driver callback thread (where the wait is
    // forbidden) it waits later, on an ordinary thread (rule 6), and the
    // transfer's state (kept alive by its `IN_FLIGHT` entry in any case) goes
    // after it there. A wait refused for now is tried again.
    fn drop(&mut self) {
        let Some(op) = self.op.take() else {
            return;
        };
        let stream = self.stream.clone();
        let mut op = Some(op);
        let destroy = move |()| {
            let waited = stream.sync();
            if waited.is_ok() {
                drop(op.take());
                settle_finished();
            }
            waited
        };
        // SAFETY: `()` stands for nothing to release but the transfer's own
        // state, which the closure owns.
        unsafe { cudars_core::release_or_defer("waiting for a cuFile transfer", (), destroy) };
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

/// Makes the context of `buf`'s memory current for the returned scope: its
/// free stream's, else its device's primary context.
pub(crate) fn make_current(buf: &Buffer) -> Result<ContextScope> {
    Ok(match buf.free_stream() {
        Some(free) => ContextScope::for_stream(free)?,
        None => ContextScope::enter(&Context::primary(buf.device())?)?,
    })
}

/// Before a synchronous transfer: the buffer's context current (for the
/// returned scope), and the work cudars-core queued on the buffer (ordered
/// before its free) finished.
fn prepare_sync(buf: &Buffer) -> Result<ContextScope> {
    // The wait first: cudars-core's operations make their own context current,
    // and a scope holds a green context's lock.
    if let Some(free) = buf.free_stream() {
        free.sync()?;
    }
    make_current(buf)
}
