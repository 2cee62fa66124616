//! Streams: ordered queues of work on a device.

use std::fmt;

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::panics::PanicSlot;
use crate::{context::Context, device::Device, event::Event};

/// How to create a [`Stream`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamOptions {
    /// `true`: the stream does not synchronise with the legacy default stream
    /// (`CU_STREAM_NON_BLOCKING`).
    pub non_blocking: bool,
    /// The priority; `None` for the default. Must lie in
    /// [`Device::stream_priority_range`].
    pub priority: Option<i32>,
}

/// A stream: work issued to it runs in order, asynchronously to the host.
///
/// An owned stream is destroyed on drop (work already queued still completes, as
/// the driver guarantees); [`Stream::from_raw`] wraps a handle someone else owns
/// and leaves it alone. `Stream` is `Send + Sync`: the driver's stream functions
/// may be called from any thread, and every method makes the stream's device
/// current first.
///
/// `Stream` is a cheap handle: clones share one stream, which is destroyed when the
/// last clone goes. Buffers keep a clone of the stream they free on, so a stream can
/// never be destroyed under a pending free.
#[derive(Clone)]
pub struct Stream {
    inner: std::sync::Arc<Inner>,
}

struct Inner {
    handle: sys::CUstream,
    /// A number no other `Stream` of the process has had or will have (rule 5:
    /// the identity of an ordinary stream's queue; a destroyed stream's handle
    /// may be the driver's answer to the next `cuStreamCreate`, its id never is).
    id: u64,
    ctx: Context,
    owned: bool,
    /// The handle names the calling thread's per-thread default stream
    /// (`CU_STREAM_PER_THREAD`, or null where the per-thread variants are in
    /// use): a different queue on each thread that uses it (rule 5 of the
    /// soundness contract, `docs/architecture.md`).
    per_thread: bool,
    /// Panics of host functions queued on the stream, until reported.
    panics: std::sync::Arc<PanicSlot>,
    /// The capture gate: held shared from a check that the stream is not
    /// capturing to the end of the queuing it guards (a host function, a copy
    /// into host memory, an event record: `launch_host_func`,
    /// `while_not_capturing`), exclusively by what may start or end a capture
    /// of this stream (`begin_capture`, `begin_capture_into`, `end_capture`, a
    /// `GraphCapture`'s end, `wait_event`, through which a stream joins
    /// another's capture). So no capture begins or ends
    /// between the check and the queuing.
    capture_gate: std::sync::RwLock<()>,
    /// The stream captures into a graph it does not own
    /// ([`Stream::begin_capture_into`]): only that capture's guard ends it, so
    /// [`Stream::end_capture`] never wraps the borrowed graph as an owned one.
    /// Written under the capture gate held exclusively.
    captures_into: std::sync::atomic::AtomicBool,
}

// SAFETY: a CUstream is a handle the driver lets any thread use. The one
// thread-bound meaning a handle can have, the per-thread default stream, is
// resolved on every use by the calling thread (rule 5 of the soundness contract,
// `docs/architecture.md`): the crate identifies queues with `QueueId`, which
// names the thread for such a stream, never by the handle alone.
unsafe impl Send for Inner {}
// SAFETY: as above; every method takes `&self` and the driver serialises.
// Soundness contract: rule 11.
unsafe impl Sync for Inner {}

/// A stream's capture gate, held shared ([`Stream::capture_gate_shared`]).
///
/// Its drop uncounts the gate on the thread's tally, which the deferred queue
/// reads so that no release runs under a gate (soundness contract, rule 6). The
/// guard is crate-private and never forgotten; were it, the tally would only
/// stay high, and that thread would leave deferred releases to other threads
/// and the reaper: never a release under a gate, nothing freed early.
pub(crate) struct SharedGate<'a> {
    _guard: std::sync::RwLockReadGuard<'a, ()>,
}

impl Drop for SharedGate<'_> {
    fn drop(&mut self) {
        crate::deferred::capture_gate_released();
    }
}

/// Which queue of the device a stream's work goes to when queued from the
/// calling thread: the handle and its context, and for a per-thread default
/// stream the thread (each thread has its own). Two streams with equal ids
/// queue onto one queue, in order; the crate's "same stream" shortcuts compare
/// these, never handles alone (`CU_STREAM_LEGACY` has one value in every
/// context, and `CU_STREAM_PER_THREAD` one on every thread).
///
/// An ordinary stream's queue is named by its `Stream`'s process-unique id
/// (clones share it), never by its handle: the driver may give a destroyed
/// stream's handle to a new stream, which is another queue. Two `Stream`s
/// wrapping one handle ([`Stream::from_raw`]) count as two queues, which costs
/// a wait at most. The special handles (null, `CU_STREAM_LEGACY`,
/// `CU_STREAM_PER_THREAD`) are constants that no stream is destroyed under:
/// they are named by the handle and context (and thread), so that every wrapper
/// of one default stream is its one queue.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct QueueId {
    /// The `Stream`'s id for an ordinary handle; 0 for a special one.
    stream: u64,
    /// The handle for a special handle; 0 for an ordinary one.
    handle: usize,
    ctx: usize,
    thread: Option<std::thread::ThreadId>,
}

/// The next [`Inner::id`]: 0 is never handed out (it stands for "a special
/// handle" in [`QueueId`]).
static NEXT_STREAM_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl QueueId {
    /// Whether waiting for this queue from the calling thread waits for it:
    /// `false` for another thread's per-thread default stream, which only
    /// synchronising the whole context reaches.
    pub(crate) fn reachable_here(&self) -> bool {
        self.thread.is_none_or(|t| t == std::thread::current().id())
    }
}

impl Stream {
    fn wrap(handle: sys::CUstream, ctx: Context, owned: bool) -> Self {
        let per_thread = handle == sys::CU_STREAM_PER_THREAD
            || (handle.is_null() && sys::per_thread_default_stream().unwrap_or(false));
        Self {
            inner: std::sync::Arc::new(Inner {
                handle,
                // Relaxed: only uniqueness matters, which the atomic add gives.
                id: NEXT_STREAM_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                ctx,
                owned,
                per_thread,
                panics: Default::default(),
                capture_gate: Default::default(),
                captures_into: Default::default(),
            }),
        }
    }

    /// The queue this stream's work goes to when queued from the calling thread
    /// (see [`QueueId`]).
    #[inline]
    pub(crate) fn queue_id(&self) -> QueueId {
        let ordinary = self.is_ordinary();
        QueueId {
            stream: if ordinary { self.inner.id } else { 0 },
            handle: if ordinary {
                0
            } else {
                self.inner.handle as usize
            },
            ctx: self.inner.ctx.handle() as usize,
            thread: self.inner.per_thread.then(|| std::thread::current().id()),
        }
    }

    /// Whether work queued now on `self` and on `other`, from the calling
    /// thread, goes to one queue (and so runs in the order it was queued).
    #[inline]
    pub(crate) fn is_same_queue(&self, other: &Stream) -> bool {
        // An ordinary stream is its own queue (by id, see `QueueId`: a handle
        // may be reused). Per-thread default streams of one context name the
        // calling thread's queue alike, and the legacy one its context's.
        if self.is_ordinary() || other.is_ordinary() {
            return self.inner.id == other.inner.id;
        }
        self.inner.handle == other.inner.handle
            && self.inner.ctx.handle() == other.inner.ctx.handle()
    }

    /// Whether the handle names this one stream wherever it is used: not null,
    /// `CU_STREAM_LEGACY` or `CU_STREAM_PER_THREAD`, which name a default stream
    /// of whatever context is current on the calling thread.
    #[inline]
    pub(crate) fn is_ordinary(&self) -> bool {
        let h = self.inner.handle;
        !(h.is_null() || h == sys::CU_STREAM_LEGACY || h == sys::CU_STREAM_PER_THREAD)
    }

    /// Makes the stream's context current for one driver call that names this
    /// stream, and says whether that was taken on trust: for an ordinary stream
    /// handle (not null, `CU_STREAM_LEGACY` or `CU_STREAM_PER_THREAD`, which
    /// name the current context's default streams) of a context that is not
    /// green, and that this thread last made or saw current, no driver call
    /// is made (the driver takes the context from the stream). Otherwise one
    /// `cuCtxGetCurrent` (and `cuCtxSetCurrent` when it differs), or a green
    /// context's lock. Callers go through [`call`](Self::call), which asks the
    /// driver and retries when the trust was misplaced.
    #[inline]
    pub(crate) fn enter(&self) -> Result<(crate::context::Current, bool)> {
        // The operations' gate (see `context::ensure_current`), for the
        // trusted path too.
        crate::deferred::refuse_on_callback()?;
        if self.is_ordinary() && self.inner.ctx.is_known_current() {
            return Ok((crate::context::Current::none(), true));
        }
        self.inner.ctx.ensure_current().map(|c| (c, false))
    }

    /// Makes `call`, a driver call that names this stream (a launch, a
    /// stream-ordered allocation, free or copy, an event record), with the
    /// stream's context current, and returns its result. When the context was
    /// taken as current on trust ([`enter`](Self::enter)) and the call fails
    /// with a context or handle error, something outside the crate changed the
    /// thread's context: the driver is asked, and the call made once more.
    /// `call` must do nothing when it fails (driver calls that fail do not
    /// queue work).
    #[inline]
    pub(crate) fn call(&self, mut call: impl FnMut() -> sys::CUresult) -> Result<sys::CUresult> {
        let (_current, trusted) = self.enter()?;
        let rc = call();
        if trusted && misplaced_trust(rc) {
            return self.call_again(call);
        }
        Ok(rc)
    }

    #[cold]
    fn call_again(&self, mut call: impl FnMut() -> sys::CUresult) -> Result<sys::CUresult> {
        crate::context::forget_current();
        let _current = self.inner.ctx.ensure_current()?;
        Ok(call())
    }

    /// Whether the handle names the per-thread default stream: the calling
    /// thread's own queue, a different one on each thread
    /// ([`per_thread_default`](Self::per_thread_default)).
    pub fn is_per_thread_default(&self) -> bool {
        self.inner.per_thread
    }

    /// The stream a buffer allocated or re-homed onto this stream is freed on:
    /// the stream itself, or, for a per-thread default stream (whose handle
    /// would name another queue on the thread that drops the buffer), its
    /// context's legacy default stream, which runs after the work queued on
    /// every blocking stream of the context, per-thread ones included (rule 5
    /// of the soundness contract).
    pub(crate) fn for_frees(&self) -> Stream {
        if self.inner.per_thread {
            Self::wrap(sys::CU_STREAM_LEGACY, self.inner.ctx.clone(), false)
        } else {
            self.clone()
        }
    }
}

/// Streams are equal when they have the same driver handle, as `cuda.core`'s
/// `Stream.__eq__` decides: clones of a stream, and streams wrapping one handle
/// ([`Stream::from_handle`]). The default streams' handles are the same for every
/// device, so `Stream::legacy_default` of two devices compare equal, as
/// `cuda.core`'s `LEGACY_DEFAULT_STREAM` is one object.
impl PartialEq for Stream {
    fn eq(&self, other: &Self) -> bool {
        self.inner.handle == other.inner.handle
    }
}

impl Eq for Stream {}

/// Hashes the handle, as equality compares it (`cuda.core`'s `Stream.__hash__`).
impl std::hash::Hash for Stream {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.inner.handle as usize).hash(state);
    }
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("handle", &self.inner.handle)
            .field("context", &self.inner.ctx)
            .field("owned", &self.inner.owned)
            .finish()
    }
}

impl Stream {
    /// Creates a stream in `device`'s primary context.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a priority outside the device's range; the
    /// driver's error.
    pub fn new(device: &Device, options: StreamOptions) -> Result<Self> {
        Self::in_context(&Context::primary(device)?, options)
    }

    /// Creates a stream in `ctx`. In a green context the stream comes from
    /// `cuGreenCtxStreamCreate` and is non-blocking whatever `options` say (the
    /// driver allows no other kind there).
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn in_context(ctx: &Context, options: StreamOptions) -> Result<Self> {
        let device = ctx.device();
        let flags = if options.non_blocking {
            sys::CU_STREAM_NON_BLOCKING.0
        } else {
            sys::CU_STREAM_DEFAULT.0
        };
        let priority = match options.priority {
            None => 0,
            Some(p) => {
                let (least, greatest) = device.stream_priority_range()?;
                if p > least || p < greatest {
                    return Err(Error::out_of_range(
                        format!("creating a stream on device {}", device.ordinal()),
                        format!("priority {p} is outside the device's range {greatest}..={least}"),
                    ));
                }
                p
            }
        };
        let mut handle: sys::CUstream = std::ptr::null_mut();
        if let Some(green) = ctx.green_handle() {
            // Green rule: a call on a green context holds its guard.
            let _current = ctx.ensure_current()?;
            // SAFETY: `handle` is valid for writes; `green` is live (`ctx` holds
            // it); green-context streams must be non-blocking.
            unsafe {
                sys::cuGreenCtxStreamCreate(
                    &mut handle,
                    green,
                    sys::CU_STREAM_NON_BLOCKING.0,
                    priority,
                )
            }
            .check(|| {
                format!(
                    "creating a stream in a green context on device {}",
                    device.ordinal()
                )
            })?;
            return Ok(Self::wrap(handle, ctx.clone(), true));
        }
        let _current = ctx.ensure_current()?;
        // SAFETY: `handle` is valid for writes; the context is current.
        unsafe { sys::cuStreamCreateWithPriority(&mut handle, flags, priority) }
            .check(|| format!("creating a stream on device {}", device.ordinal()))?;
        Ok(Self::wrap(handle, ctx.clone(), true))
    }

    /// The legacy default stream of `device`'s primary context (`CU_STREAM_LEGACY`),
    /// which synchronises with every blocking stream. Not owned.
    ///
    /// # Errors
    /// The driver's error.
    pub fn legacy_default(device: &Device) -> Result<Self> {
        Ok(Self::wrap(
            sys::CU_STREAM_LEGACY,
            Context::primary(device)?,
            false,
        ))
    }

    /// The per-thread default stream of `device`'s primary context
    /// (`CU_STREAM_PER_THREAD`). Not owned.
    ///
    /// The handle names **the calling thread's** queue wherever the `Stream` is
    /// used: moved to another thread, it queues onto that thread's per-thread
    /// stream. The crate never takes two uses of it on different threads for
    /// one queue (rule 5 of the soundness contract, `docs/architecture.md`):
    /// buffers allocated on it are freed on the context's legacy default
    /// stream, and a wait the crate makes for work another thread queued on it
    /// synchronises the context. [`sync`](Self::sync) waits for the calling
    /// thread's queue.
    ///
    /// # Errors
    /// The driver's error.
    pub fn per_thread_default(device: &Device) -> Result<Self> {
        Ok(Self::wrap(
            sys::CU_STREAM_PER_THREAD,
            Context::primary(device)?,
            false,
        ))
    }

    /// Wraps a stream handle created elsewhere, without owning it.
    ///
    /// # Safety
    /// `handle` must be a valid stream of `ctx` (or one of the special handles) and
    /// stay valid for as long as the returned `Stream` and everything that uses it.
    /// A capture of `handle` must not begin or end, through another wrapper or
    /// another library, while work is being queued through this one after a
    /// check that it is not capturing (a host function, a copy into pinned
    /// memory, `to_vec_async`, a future's record: each checks the capture
    /// status under a gate that only this `Stream` and its clones take).
    pub unsafe fn from_raw(handle: sys::CUstream, ctx: &Context) -> Self {
        Self::wrap(handle, ctx.clone(), false)
    }

    /// Adopts a stream another library made (`cuda.core`'s `Stream.from_handle`),
    /// finding its context and device from the driver (`cuStreamGetCtx`,
    /// `cuCtxGetDevice`). The stream is **borrowed**: this `Stream` and its clones
    /// never destroy it ([`is_owned`](Self::is_owned) is `false`), and neither is
    /// its context. Its context is the device's primary context when it is that
    /// one, and otherwise a borrowed [`Context`] (not primary, never destroyed).
    /// [`from_raw`](Self::from_raw) does the same for a caller that knows the
    /// context.
    ///
    /// The special handles (null, `CU_STREAM_LEGACY`, `CU_STREAM_PER_THREAD`)
    /// stand for the default streams of the context current on the calling
    /// thread, which is what the driver then reports;
    /// [`legacy_default`](Self::legacy_default) and
    /// [`per_thread_default`](Self::per_thread_default) name a device instead.
    ///
    /// ```no_run
    /// # fn f(dev: cudars_core::Device) -> cudars_core::Result<()> {
    /// let theirs = dev.create_stream(Default::default())?;
    /// // SAFETY: `theirs` outlives `ours` and everything queued through it.
    /// let ours = unsafe { cudars_core::Stream::from_handle(theirs.handle())? };
    /// assert_eq!(ours.device(), theirs.device());
    /// assert!(!ours.is_owned());
    /// # Ok(()) }
    /// ```
    ///
    /// # Safety
    /// `handle` must be a live stream (or one of the special handles) whose
    /// stream and context stay alive, and are destroyed by nobody, for as long as
    /// the returned `Stream`, its clones and everything that holds one (buffers
    /// freed on it, pending frees included) exist. Buffers keep their free stream
    /// until they are freed, so adopt a stream for allocation only if its owner
    /// outlives them. As for [`from_raw`](Self::from_raw), a capture of the
    /// stream must not begin or end elsewhere while a host function is being
    /// queued through this one.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a stream of a green context (adopt it with
    /// [`from_raw`](Self::from_raw) and the green [`Context`], which serialises
    /// the threads that use it); the driver's error (an invalid handle is
    /// `CUDA_ERROR_INVALID_HANDLE` or `CUDA_ERROR_INVALID_CONTEXT`, as far as the
    /// driver can tell).
    pub unsafe fn from_handle(handle: sys::CUstream) -> Result<Self> {
        const WHAT: &str = "adopting a stream handle";
        crate::device::init()?;
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        if crate::versions::driver_at_least(12050) {
            let mut green: sys::CUgreenCtx = std::ptr::null_mut();
            // SAFETY: both outputs are valid for writes; the caller vouches for
            // the handle.
            unsafe { sys::cuStreamGetCtx_v2(handle, &mut ctx, &mut green) }.check(|| WHAT)?;
            if !green.is_null() {
                return Err(Error::unsupported(
                    WHAT,
                    "the stream belongs to a green context: adopt it with `Stream::from_raw` \
                     and the green `Context`",
                ));
            }
        } else {
            // SAFETY: as above.
            unsafe { sys::cuStreamGetCtx(handle, &mut ctx) }.check(|| WHAT)?;
        }
        let device = context_device(ctx, WHAT)?;
        // SAFETY: the driver names `ctx` as the live stream's context, which the
        // caller keeps alive.
        let ctx = unsafe { Context::adopt(ctx, &device) }?;
        Ok(Self::wrap(handle, ctx, false))
    }

    /// The driver's handle.
    pub fn handle(&self) -> sys::CUstream {
        self.inner.handle
    }

    /// The device the stream belongs to.
    pub fn device(&self) -> &Device {
        self.inner.ctx.device()
    }

    /// The context the stream belongs to.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// Whether the stream does not synchronise with the legacy default stream.
    ///
    /// # Errors
    /// The driver's error.
    pub fn is_non_blocking(&self) -> Result<bool> {
        // Green rule: every call on a green context's stream holds its lock.
        let _green = self.inner.ctx.green_guard()?;
        let mut flags = 0;
        // SAFETY: `flags` is valid for writes; the handle is live.
        unsafe { sys::cuStreamGetFlags(self.inner.handle, &mut flags) }
            .check(|| "reading a stream's flags")?;
        Ok(flags & sys::CU_STREAM_NON_BLOCKING.0 != 0)
    }

    /// Whether this `Stream` destroys its handle on drop.
    pub fn is_owned(&self) -> bool {
        self.inner.owned
    }

    /// The stream's priority.
    ///
    /// # Errors
    /// The driver's error.
    pub fn priority(&self) -> Result<i32> {
        // Green rule: every call on a green context's stream holds its lock.
        let _green = self.inner.ctx.green_guard()?;
        let mut p = 0;
        // SAFETY: `p` is valid for writes; the handle is live.
        unsafe { sys::cuStreamGetPriority(self.inner.handle, &mut p) }
            .check(|| "reading a stream's priority")?;
        Ok(p)
    }

    /// Waits until all work queued so far has completed, then reports host
    /// functions of this stream that panicked
    /// ([`launch_host_func`](Self::launch_host_func)), once: the record is taken,
    /// and the stream stays usable.
    ///
    /// # Errors
    /// The driver's error, including errors of the queued work (a panic record
    /// then waits for the next call); [`Error::HostCallbackPanicked`] when the
    /// work completed but a host function panicked.
    pub fn sync(&self) -> Result<()> {
        self.wait()?;
        // Frees deferred until the work they waited for was done.
        crate::deferred::poll();
        match self.inner.panics.take() {
            None => Ok(()),
            Some(panic) => Err(Error::HostCallbackPanicked {
                context: "synchronising a stream".into(),
                panic,
            }),
        }
    }

    /// `cuStreamSynchronize`, leaving panic records for [`sync`](Self::sync): what
    /// the crate's own waits use, so that only the user's `sync` reports a host
    /// function's panic.
    pub(crate) fn wait(&self) -> Result<()> {
        // Held for green contexts too: the driver does not synchronise calls that
        // touch one green context from several threads, waits included.
        let _current = self.inner.ctx.ensure_current()?;
        // SAFETY: a live stream.
        unsafe { sys::cuStreamSynchronize(self.inner.handle) }.check(|| "synchronising a stream")
    }

    /// Holds the capture gate shared: no capture of this stream begins or ends
    /// (through this `Stream` and its clones) while the guard lives. While a
    /// thread holds one, the deferred queue runs nothing on it
    /// ([`holds_capture_gate`](crate::deferred::holds_capture_gate)): a release made there (a free's retry, which
    /// may wait on this stream and so take its gate exclusively, or a user's
    /// `Drop`) could take the gate again and deadlock.
    pub(crate) fn capture_gate_shared(&self) -> SharedGate<'_> {
        let guard = self
            .inner
            .capture_gate
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        crate::deferred::capture_gate_taken();
        SharedGate { _guard: guard }
    }

    /// Holds the capture gate exclusively, for a call that may start or end a
    /// capture of this stream.
    pub(crate) fn capture_gate_exclusive(&self) -> std::sync::RwLockWriteGuard<'_, ()> {
        self.inner
            .capture_gate
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the stream captures into a graph it does not own (see
    /// [`Stream::begin_capture_into`]); read and written under the capture
    /// gate held exclusively.
    pub(crate) fn captures_into(&self) -> &std::sync::atomic::AtomicBool {
        &self.inner.captures_into
    }

    /// Where host functions of this stream record their panics.
    pub(crate) fn panic_slot(&self) -> &std::sync::Arc<PanicSlot> {
        &self.inner.panics
    }

    /// Waits for the stream; if that fails, waits for its whole context instead, so
    /// no queued work is left running, and reports the stream's error. For paths
    /// that release memory the queued work may still use (a host function's panic
    /// is left for [`sync`](Self::sync) to report).
    ///
    /// Rule 4 of the soundness contract (`docs/architecture.md`): when the
    /// stream's wait fails, it is tried again with the thread in relaxed
    /// capture mode (another thread's global-mode capture forbids the wait, and
    /// only that), then the context's, up to three times. An error that the
    /// first wait reported once is not reported again, so a later wait does
    /// wait; one that persists through every try is a sticky error (the
    /// context is lost, and the driver runs none of its queued work any more)
    /// or a driver that is gone: either way nothing queued can still touch the
    /// memory the caller releases next.
    pub(crate) fn drain(&self) -> Result<()> {
        let Err(e) = self.wait() else {
            return Ok(());
        };
        let _relaxed = crate::deferred::RelaxedCapture::enter();
        match self.wait() {
            // Only a capture elsewhere forbade the wait: it has waited now.
            Ok(()) if crate::deferred::refused_for_now(&e) => return Ok(()),
            Ok(()) => return Err(e),
            Err(_) => {}
        }
        for _ in 0..3 {
            if self.context().sync().is_ok() {
                break;
            }
        }
        Err(e)
    }

    /// Whether all work queued so far has completed, without waiting.
    ///
    /// # Errors
    /// The driver's error for failed work.
    pub fn is_done(&self) -> Result<bool> {
        let _current = self.inner.ctx.ensure_current()?;
        // SAFETY: a live stream.
        let rc = unsafe { sys::cuStreamQuery(self.inner.handle) };
        if rc == sys::CUDA_ERROR_NOT_READY {
            return Ok(false);
        }
        rc.check(|| "querying a stream")?;
        Ok(true)
    }

    /// Records an event at this point of the stream.
    ///
    /// # Errors
    /// As [`Event::record`].
    pub fn record(&self, event: &Event) -> Result<()> {
        event.record(self)
    }

    /// Records a new event, made with `options` in this stream's context, at
    /// this point of the stream and returns it: Python's `stream.record()`
    /// (which makes the event when given none). To record one event again and
    /// again, make it once and use [`record`](Self::record).
    ///
    /// ```no_run
    /// use cudars_core::{Device, EventOptions, StreamOptions};
    ///
    /// let dev = Device::new(0)?;
    /// let stream = dev.create_stream(StreamOptions::default())?;
    /// let start = stream.record_new_event(EventOptions::default())?;
    /// // … work on `stream` …
    /// let end = stream.record_new_event(EventOptions::default())?;
    /// end.sync()?;
    /// println!("{:?}", end.elapsed_since(&start)?);
    /// # Ok::<(), cudars_core::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Event::in_context`] and [`Event::record`].
    pub fn record_new_event(&self, options: crate::event::EventOptions) -> Result<Event> {
        let event = Event::in_context(self.context(), options)?;
        event.record(self)?;
        Ok(event)
    }

    /// Makes later work on this stream wait until `event` has completed.
    ///
    /// An IPC event (`ipc: true`, or opened from another process) can be waited
    /// for only on a stream of its own device: on the H200s of driver 580 a wait
    /// on another device's stream crashed the process inside the driver. Wait on a
    /// stream of the event's device, then [`wait_stream`](Self::wait_stream) on
    /// that stream.
    ///
    /// # Errors
    /// [`Error::Unsupported`](crate::Error::Unsupported) for an IPC event of
    /// another device; the driver's error.
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        if event.options().ipc && event.device() != self.device() {
            return Err(crate::error::Error::unsupported(
                "making a stream wait for an event",
                format!(
                    "the event is an IPC event of device {} and the stream is on device {} \
                     (wait on a stream of device {0}, then wait for that stream)",
                    event.device().ordinal(),
                    self.device().ordinal()
                ),
            ));
        }
        let (_current, trusted) = self.enter()?;
        // Waiting for an event recorded in a capture joins this stream to it:
        // not while a host function is being queued here (the capture gate).
        let _gate = self.capture_gate_exclusive();
        let wait = || {
            // SAFETY: a live stream and a live event.
            unsafe { sys::cuStreamWaitEvent(self.inner.handle, event.handle(), 0) }
        };
        let mut rc = wait();
        if trusted && misplaced_trust(rc) {
            crate::context::forget_current();
            let _current = self.inner.ctx.ensure_current()?;
            rc = wait();
        }
        rc.check(|| "making a stream wait for an event")
    }

    /// As [`wait_event`](Self::wait_event), without taking the capture gate:
    /// for a caller that holds it shared ([`while_not_capturing`](Self::while_not_capturing),
    /// which found the stream not capturing), waiting for an event that was
    /// recorded outside any capture. Such a wait cannot join this stream to a
    /// capture (only an event recorded in one does), which is what the gate
    /// keeps out of the window; and taking the gate again there would deadlock.
    pub(crate) fn wait_event_uncaptured(&self, event: &Event) -> Result<()> {
        self.call(|| {
            // SAFETY: a live stream and a live event.
            unsafe { sys::cuStreamWaitEvent(self.inner.handle, event.handle(), 0) }
        })?
        .check(|| "making a stream wait for an event")
    }

    /// Makes later work on this stream wait for all work queued so far on `other`
    /// (through an event recorded on `other`).
    ///
    /// # Errors
    /// The driver's error.
    pub fn wait_stream(&self, other: &Stream) -> Result<()> {
        let e = Event::in_context(other.context(), crate::event::EventOptions::default())?;
        e.record(other)?;
        self.wait_event(&e)
    }
}

/// Recording an event needs the stream it is recorded on: here, so that events sit
/// below streams.
impl Event {
    /// Records the event at the current end of `stream`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a stream of another device; the driver's error.
    pub fn record(&self, stream: &Stream) -> Result<()> {
        if stream.context() != self.context() {
            return Err(Error::other_device(
                "recording an event",
                format!(
                    "the event and the stream belong to different contexts (devices {} and {})",
                    self.device().ordinal(),
                    stream.device().ordinal()
                ),
            ));
        }
        stream
            .call(|| {
                // SAFETY: a live event and stream of the same context.
                unsafe { sys::cuEventRecord(self.handle(), stream.handle()) }
            })?
            .check(|| "recording an event")
    }
}

// Deferred-release rule: on a driver callback thread the destroy (a CUDA call)
// is handed to the deferred queue instead of made there.
impl Drop for Inner {
    fn drop(&mut self) {
        if self.owned {
            let ctx = self.ctx.clone();
            let destroy = move |s: sys::CUstream| {
                // Errors cannot be reported from drop; the handle is gone either way.
                let _current = ctx.ensure_current();
                // SAFETY: an owned, live stream, destroyed once.
                let rc = unsafe { sys::cuStreamDestroy(s) };
                crate::cleanup::driver(rc, "destroying a stream (cuStreamDestroy)");
            };
            if crate::deferred::must_defer() {
                // SAFETY: the owned stream; its one destroy moves to the queue.
                unsafe {
                    crate::deferred::defer_handle("destroying a stream", self.handle, destroy)
                };
                return;
            }
            destroy(self.handle);
        }
    }
}

/// Whether `rc`, from a call made with the context taken as current on trust
/// ([`Stream::enter`]), may mean that another context was current after all.
#[inline]
fn misplaced_trust(rc: sys::CUresult) -> bool {
    // Success first: the one compare of the hot path.
    rc != sys::CUDA_SUCCESS
        && (rc == sys::CUDA_ERROR_INVALID_CONTEXT
            || rc == sys::CUDA_ERROR_INVALID_HANDLE
            || rc == sys::CUDA_ERROR_CONTEXT_IS_DESTROYED)
}

/// The device of the live context `ctx`: pushed current for `cuCtxGetDevice`,
/// then popped, so the calling thread's current context is left as it was.
fn context_device(ctx: sys::CUcontext, what: &'static str) -> Result<Device> {
    // The push and pop leave the current context as it was, unless one fails.
    crate::context::forget_current();
    // SAFETY: the caller passes a live context.
    unsafe { sys::cuCtxPushCurrent(ctx) }.check(|| what)?;
    let mut dev: sys::CUdevice = 0;
    // SAFETY: `dev` is valid for writes; `ctx` is current.
    let rc = unsafe { sys::cuCtxGetDevice(&mut dev) };
    let mut popped: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: pops what was pushed above.
    let pop = unsafe { sys::cuCtxPopCurrent(&mut popped) };
    rc.check(|| what)?;
    pop.check(|| what)?;
    Device::from_driver_handle(dev, what)
}

// Streams of a context and of a device.
impl Context {
    /// A new stream in this context.
    ///
    /// # Errors
    /// As [`Stream::new`].
    pub fn create_stream(&self, options: StreamOptions) -> Result<Stream> {
        Stream::in_context(self, options)
    }
}

impl Device {
    /// A new stream on this device (see [`Stream::new`](crate::Stream::new)).
    ///
    /// # Errors
    /// As [`Stream::new`](crate::Stream::new).
    pub fn create_stream(
        &self,
        options: crate::stream::StreamOptions,
    ) -> Result<crate::stream::Stream> {
        crate::stream::Stream::new(self, options)
    }

    /// The stream work goes to when none is named: the legacy default stream, or the
    /// per-thread default stream when `CUDA_RS_PER_THREAD_DEFAULT_STREAM=1`.
    ///
    /// # Errors
    /// The driver's error.
    pub fn default_stream(&self) -> Result<Stream> {
        if cudars_bindings::driver::per_thread_default_stream().unwrap_or(false) {
            Stream::per_thread_default(self)
        } else {
            Stream::legacy_default(self)
        }
    }
}

/// Waits for `stream` before a free that is not stream-ordered (and for its
/// context if that fails, as `Stream::drain` does). A wait refused for now is
/// the error, so that the caller frees nothing and its free is retried; any
/// other failure lets the free go ahead (the failed work runs no more).
pub(crate) fn drain_before_free(stream: &Stream) -> Result<()> {
    match stream.drain() {
        Err(e) if crate::deferred::refused_for_now(&e) => Err(e),
        _ => Ok(()),
    }
}
