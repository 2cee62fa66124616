//! Contexts: the primary context of each device, and explicit ones.

use std::fmt;
use std::sync::{Arc, PoisonError};

use cudars_bindings::driver as sys;

use crate::device::Device;
use crate::error::{Check as _, Error, Result};
use crate::sync::thread::{self, ThreadId};
use crate::sync::{Condvar, Mutex};

/// A CUDA context: a device's primary context (what [`Device::set_current`] uses
/// and what everything uses by default) or an explicit one from
/// [`Context::create`].
///
/// `Context` is a cheap handle: clones share one context. An explicit context is
/// destroyed when the last clone goes, and every stream and event made in it holds
/// a clone, so it cannot be destroyed under them. Primary contexts are retained once
/// per process and never released. `Send + Sync`: every operation makes the context
/// current on the calling thread first, so many threads may use many contexts.
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

struct Inner {
    handle: sys::CUcontext,
    device: Device,
    /// Whether this crate made the context (and destroys it on drop).
    owned: bool,
    /// Whether it is the device's primary context.
    primary: bool,
    /// The green context `handle` was made from (null for other contexts).
    green: sys::CUgreenCtx,
    /// For a green context: which thread has it current (the driver allows one at
    /// a time and does not synchronise).
    green_lock: Option<GreenLock>,
}

/// The contexts this crate owns (made by [`Context::create`] or from a green
/// context), by handle, so that [`Device::set_current_context`] can hand back
/// the one it replaced as the owning [`Context`] it is. Architecture Invariant:
/// an entry is only ever upgraded, never trusted by its handle alone: a
/// destroyed context's handle may be reused by the driver for a context this
/// crate does not own, and then its entry's upgrade fails (the last clone is
/// gone), so no `Context` is made for a handle it does not own.
static OWNED: std::sync::Mutex<Vec<(usize, std::sync::Weak<Inner>)>> =
    std::sync::Mutex::new(Vec::new());

/// Records a context this crate owns in [`OWNED`], dropping the entries of
/// contexts gone since.
fn register_owned(inner: &Arc<Inner>) {
    let mut owned = OWNED.lock().unwrap_or_else(PoisonError::into_inner);
    owned.retain(|(_, w)| w.strong_count() > 0);
    owned.push((inner.handle as usize, Arc::downgrade(inner)));
}

/// The live context this crate owns whose handle is `handle`, if any.
fn owned_context(handle: sys::CUcontext) -> Option<Context> {
    let owned = OWNED.lock().unwrap_or_else(PoisonError::into_inner);
    owned
        .iter()
        .filter(|(h, _)| *h == handle as usize)
        .find_map(|(_, w)| w.upgrade())
        .map(|inner| Context { inner })
}

/// The context a thread had current before [`Device::set_current_context`]
/// replaced it: what `cuda.core`'s `Device.set_current(ctx)` returns.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum PreviousContext {
    /// A context this crate can hold: a device's primary context (retained
    /// for the process), or a context made by [`Context::create`] or
    /// [`Context::create_green`](crate::Context::create_green) that is still
    /// alive (the same context as the caller's clones: this value keeps it
    /// alive too).
    Context(Context),
    /// A context made outside this crate (a raw `cuCtxCreate`, another
    /// library): its handle, borrowed. This crate cannot keep it alive (the
    /// driver counts no references to such a context), so it gives no
    /// [`Context`] for it; put it back with a raw `cuCtxSetCurrent` while its
    /// owner keeps it alive.
    Foreign(sys::CUcontext),
}

impl PreviousContext {
    /// The driver's handle of the context.
    pub fn handle(&self) -> sys::CUcontext {
        match self {
            Self::Context(c) => c.handle(),
            Self::Foreign(h) => *h,
        }
    }

    /// The context, when this crate can hold it (not a foreign one).
    pub fn context(&self) -> Option<&Context> {
        match self {
            Self::Context(c) => Some(c),
            Self::Foreign(_) => None,
        }
    }
}

/// Who holds a green context current: a thread and how deeply it nested.
#[derive(Default)]
struct GreenLock {
    owner: Mutex<(Option<ThreadId>, usize)>,
    freed: Condvar,
}

impl GreenLock {
    /// Waits until no other thread holds the context, then holds it (once more,
    /// if this thread holds it already).
    fn acquire(&self) {
        let me = thread::current().id();
        let mut g = self.owner.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            match g.0 {
                None => {
                    *g = (Some(me), 1);
                    return;
                }
                Some(t) if t == me => {
                    g.1 += 1;
                    return;
                }
                Some(_) => g = self.freed.wait(g).unwrap_or_else(PoisonError::into_inner),
            }
        }
    }

    fn release(&self) {
        let mut g = self.owner.lock().unwrap_or_else(PoisonError::into_inner);
        g.1 = g.1.saturating_sub(1);
        if g.1 == 0 {
            g.0 = None;
            self.freed.notify_one();
        }
    }
}

/// Proof that a context is current on this thread, for as long as it lives.
///
/// For most contexts this is nothing: the context stays current afterwards, as
/// CUDA leaves it. A green context may be current on only one thread at a time, so
/// for one the guard holds it for this thread (a per-context lock that the same
/// thread may take again, further down the stack), makes it current if it is not,
/// and on drop makes the previous context current again and releases the lock.
/// Guards are crate-internal and dropped in the reverse order of their making.
#[must_use = "the context is only guaranteed current while the guard lives"]
pub(crate) struct Current {
    green: Option<GreenHold>,
}

impl Current {
    /// A guard that holds nothing: the context is current already (see
    /// `Stream::enter`).
    #[inline]
    pub(crate) fn none() -> Self {
        Self { green: None }
    }
}

struct GreenHold {
    ctx: Context,
    /// What was current before, restored on drop when `restore`.
    prev: sys::CUcontext,
    /// Whether `prev` was a green context this thread held.
    prev_green: bool,
    restore: bool,
}

// Green rule (rule 11 of the soundness contract): a held green context is put
// back, and its lock released, when the guard goes; a guard that holds nothing
// (every call on a context already current) costs one test, inlined.
impl Drop for Current {
    #[inline]
    fn drop(&mut self) {
        if let Some(h) = self.green.take() {
            h.leave();
        }
    }
}

impl GreenHold {
    #[cold]
    #[inline(never)]
    fn leave(self) {
        held_green_leave(self.ctx.inner.handle);
        if self.restore {
            restore_current(self.prev, self.prev_green, &self.ctx.inner.device);
        }
        if let Some(lock) = &self.ctx.inner.green_lock {
            lock.release();
        }
    }
}

std::thread_local! {
    /// The green contexts this thread holds (their `CUcontext`s, once per hold):
    /// rule 11 of the soundness contract lets a thread have a green context
    /// current only while it holds it, so a guard puts a green context back
    /// only if it is still here.
    static HELD_GREEN: std::cell::RefCell<Vec<usize>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

fn held_green_enter(ctx: sys::CUcontext) {
    let _ = HELD_GREEN.try_with(|h| h.borrow_mut().push(ctx as usize));
}

fn held_green_leave(ctx: sys::CUcontext) {
    let _ = HELD_GREEN.try_with(|h| {
        let mut h = h.borrow_mut();
        if let Some(i) = h.iter().rposition(|&c| c == ctx as usize) {
            h.swap_remove(i);
        }
    });
}

/// Whether `ctx` is (or, when the thread's bookkeeping is already gone, may be)
/// a green context this thread holds.
pub(crate) fn may_be_held_green(ctx: sys::CUcontext) -> bool {
    !ctx.is_null()
        && HELD_GREEN
            .try_with(|h| h.borrow().contains(&(ctx as usize)))
            .unwrap_or(true)
}

/// Makes `prev` current again: what a guard of a context of `device` leaves
/// behind. A green `prev` (`prev_green`) is put back only while this thread
/// still holds it (rule 11); otherwise `device`'s primary context is made
/// current instead (not null: `cuCtxSetCurrent(NULL)` pops the thread's
/// context stack and would bring back whatever lies beneath). Errors have
/// nowhere to go: the next operation makes its own context current anyway.
pub(crate) fn restore_current(prev: sys::CUcontext, prev_green: bool, device: &Device) {
    let still_held = !prev_green
        || HELD_GREEN
            .try_with(|h| h.borrow().contains(&(prev as usize)))
            .unwrap_or(false);
    let target = if still_held {
        prev
    } else {
        device.primary_context().unwrap_or(std::ptr::null_mut())
    };
    // `KNOWN_CURRENT` follows, except for a green context, never trusted.
    let green = prev_green && still_held;
    let record = |rc: sys::CUresult| {
        if green {
            forget_current();
        } else {
            set_current_result(target, rc);
        }
    };
    let mut cur: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: `cur` is valid for writes.
    let read = unsafe { sys::cuCtxGetCurrent(&mut cur) };
    if read == sys::CUDA_SUCCESS && cur == target {
        record(read);
        return;
    }
    // SAFETY: `target` is a context that was current on this thread when the
    // guard was made (a green one held by this thread, checked above), the
    // device's primary context (retained for the process) or, when that cannot
    // be had, null. One destroyed since is refused by the driver
    // (`CUDA_ERROR_CONTEXT_IS_DESTROYED` or `CUDA_ERROR_INVALID_CONTEXT`),
    // which this ignores.
    let rc = unsafe { sys::cuCtxSetCurrent(target) };
    record(rc);
}

// SAFETY: a CUcontext may be made current on any thread; `Inner` has no
// thread-bound state. A green context is current on one thread at a time:
// `green_lock` sees to it.
// Soundness contract: rule 11.
unsafe impl Send for Inner {}
// SAFETY: as above; the driver serialises context operations.
// Soundness contract: rule 11.
unsafe impl Sync for Inner {}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("handle", &self.inner.handle)
            .field("device", &self.inner.device)
            .field("primary", &self.inner.primary)
            .field("owned", &self.inner.owned)
            .field("green", &!self.inner.green.is_null())
            .finish()
    }
}

impl PartialEq for Context {
    fn eq(&self, other: &Self) -> bool {
        self.inner.handle == other.inner.handle
    }
}

impl Eq for Context {}

/// Hashes the handle, as equality compares it (`cuda.core`'s `Context.__hash__`).
impl std::hash::Hash for Context {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.inner.handle as usize).hash(state);
    }
}

/// How to create an explicit [`Context`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContextOptions {
    /// `CU_CTX_SCHED_BLOCKING_SYNC`: synchronising calls block the thread instead of
    /// spinning.
    pub blocking_sync: bool,
    /// `CU_CTX_MAP_HOST`: allow mapped pinned host memory.
    pub map_host: bool,
}

impl Context {
    /// The primary context of `device` (retained once for the process).
    ///
    /// # Errors
    /// The driver's error.
    pub fn primary(device: &Device) -> Result<Self> {
        let handle = device.primary_context()?;
        Ok(Self {
            inner: Arc::new(Inner {
                handle,
                device: *device,
                owned: false,
                primary: true,
                green: std::ptr::null_mut(),
                green_lock: None,
            }),
        })
    }

    /// A new context on `device` (`cuCtxCreate`). It is current on the calling
    /// thread afterwards, as the driver leaves it.
    ///
    /// # Errors
    /// The driver's error.
    pub fn create(device: &Device, options: ContextOptions) -> Result<Self> {
        crate::device::init()?;
        let mut flags = 0;
        if options.blocking_sync {
            flags |= sys::CU_CTX_SCHED_BLOCKING_SYNC.0;
        }
        if options.map_host {
            flags |= sys::CU_CTX_MAP_HOST.0;
        }
        let mut handle: sys::CUcontext = std::ptr::null_mut();
        let rc = if crate::versions::driver_at_least(12050) {
            // SAFETY: `handle` is valid for writes; no creation parameters.
            unsafe { sys::cuCtxCreate(&mut handle, std::ptr::null_mut(), flags, device.handle()) }
        } else {
            // SAFETY: as above (the shape of drivers before CUDA 12.5).
            unsafe { sys::cuda12::cuCtxCreate(&mut handle, flags, device.handle()) }
        };
        // `cuCtxCreate` makes the new context current (pushes it).
        forget_current();
        rc.check(|| format!("creating a context on device {}", device.ordinal()))?;
        let inner = Arc::new(Inner {
            handle,
            device: *device,
            owned: true,
            primary: false,
            green: std::ptr::null_mut(),
            green_lock: None,
        });
        register_owned(&inner);
        Ok(Self { inner })
    }

    /// Wraps a context made from the live green context `green`, owning both.
    pub(crate) fn wrap_green(
        handle: sys::CUcontext,
        green: sys::CUgreenCtx,
        device: Device,
    ) -> Self {
        let inner = Arc::new(Inner {
            handle,
            device,
            owned: true,
            primary: false,
            green,
            green_lock: Some(GreenLock::default()),
        });
        register_owned(&inner);
        Self { inner }
    }

    /// The driver's handle (for a green context, the `CUcontext` made from it).
    pub fn handle(&self) -> sys::CUcontext {
        self.inner.handle
    }

    /// The green context's handle, for a green context
    /// ([`Context::create_green`]).
    pub fn green_handle(&self) -> Option<sys::CUgreenCtx> {
        (!self.inner.green.is_null()).then_some(self.inner.green)
    }

    /// Whether this is a green context.
    pub fn is_green(&self) -> bool {
        !self.inner.green.is_null()
    }

    /// The device.
    pub fn device(&self) -> &Device {
        &self.inner.device
    }

    /// Whether this is the device's primary context.
    pub fn is_primary(&self) -> bool {
        self.inner.primary
    }

    /// The context `handle` (neither a green context nor made from one) of
    /// `device`: the device's primary context when it is that one, otherwise a
    /// borrowed handle, never destroyed by this crate.
    ///
    /// # Safety
    /// `handle` must be a live context of `device` that stays alive as long as the
    /// returned `Context` and everything made or adopted in it.
    pub(crate) unsafe fn adopt(handle: sys::CUcontext, device: &Device) -> Result<Self> {
        let primary = Self::primary(device)?;
        if primary.handle() == handle {
            return Ok(primary);
        }
        Ok(Self {
            inner: Arc::new(Inner {
                handle,
                device: *device,
                owned: false,
                primary: false,
                green: std::ptr::null_mut(),
                green_lock: None,
            }),
        })
    }

    /// Makes the context current on the calling thread.
    ///
    /// # Errors
    /// [`Error::Unsupported`](crate::Error::Unsupported) for a green context (the
    /// driver lets one be current on only one thread at a time, so this crate makes
    /// it current for the length of each operation, or of a
    /// [`ContextScope`](crate::ContextScope), and no longer); the driver's error.
    pub fn set_current(&self) -> Result<()> {
        if self.is_green() {
            return Err(crate::error::Error::unsupported(
                "making a context current",
                "a green context is made current only for the length of each operation \
                 (the driver allows one thread at a time); use its streams instead",
            ));
        }
        crate::deferred::refuse_on_callback()?;
        // SAFETY: a live context (clones keep it alive).
        let rc = unsafe { sys::cuCtxSetCurrent(self.inner.handle) };
        set_current_result(self.inner.handle, rc).check(|| "making a context current")
    }

    /// Makes the context current if it is not; hold the guard for the length of the
    /// operation (see [`Current`]).
    #[inline]
    pub(crate) fn ensure_current(&self) -> Result<Current> {
        match &self.inner.green_lock {
            None => ensure_current(self.inner.handle, || "making a context current".into()),
            Some(lock) => self.enter_green(lock),
        }
    }

    /// Whether this thread last made or saw this context current, so that a
    /// driver call naming one of its ordinary streams may skip the check (see
    /// `KNOWN_CURRENT`); never for a green context.
    #[inline]
    pub(crate) fn is_known_current(&self) -> bool {
        self.inner.green_lock.is_none() && known_current(self.inner.handle)
    }

    /// For a green context, [`ensure_current`](Self::ensure_current)'s guard (the
    /// context's lock, which every call on it must hold); for any other, nothing:
    /// for calls that need no current context but must not race a green one.
    /// Refused on a driver callback thread, as `ensure_current` is.
    #[inline]
    pub(crate) fn green_guard(&self) -> Result<Option<Current>> {
        // The operations' gate (see `ensure_current`): the calls that need no
        // current context (a stream's or event's wait, query or flags) come
        // here first.
        crate::deferred::refuse_on_callback()?;
        match &self.inner.green_lock {
            None => Ok(None),
            Some(lock) => self.enter_green(lock).map(Some),
        }
    }

    #[cold]
    fn enter_green(&self, lock: &GreenLock) -> Result<Current> {
        // The operations' gate (see `ensure_current`), before the lock: a host
        // function waiting for a green context another thread holds would
        // wait for its own stream.
        crate::deferred::refuse_on_callback()?;
        lock.acquire();
        held_green_enter(self.inner.handle);
        let mut prev: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: `prev` is valid for writes.
        let rc = unsafe { sys::cuCtxGetCurrent(&mut prev) };
        if let Err(e) = rc.check(|| "reading the current context") {
            held_green_leave(self.inner.handle);
            lock.release();
            return Err(e);
        }
        // Even when this thread holds the context already, something nested may
        // have made another one current since: check every time.
        let restore = prev != self.inner.handle;
        let prev_green = may_be_held_green(prev);
        // From here on, dropping `guard` puts `prev` back (if it changes) and
        // releases the lock.
        let guard = Current {
            green: Some(GreenHold {
                ctx: self.clone(),
                prev,
                prev_green,
                restore,
            }),
        };
        if restore {
            // A green context is never trusted as current (see `KNOWN_CURRENT`).
            forget_current();
            // SAFETY: a live green context's `CUcontext` (this clone keeps it).
            unsafe { sys::cuCtxSetCurrent(self.inner.handle) }
                .check(|| "making a green context current")?;
        }
        Ok(guard)
    }

    /// Waits for all work in the context.
    ///
    /// # Errors
    /// The driver's error, including errors of earlier asynchronous work.
    pub fn sync(&self) -> Result<()> {
        let _current = self.ensure_current()?;
        // SAFETY: a current context.
        unsafe { sys::cuCtxSynchronize() }.check(|| "synchronising a context")?;
        drop(_current);
        // Frees deferred until the work they waited for was done.
        crate::deferred::poll();
        Ok(())
    }
}

/// What [`Device::set_current_context`] hands back for `prev`, the context
/// current on this thread now (null: none): a [`Context`] for a primary
/// context or a live one this crate owns, else the borrowed handle.
fn previous_context(prev: sys::CUcontext) -> Result<Option<PreviousContext>> {
    if prev.is_null() {
        return Ok(None);
    }
    if let Some(ctx) = owned_context(prev) {
        return Ok(Some(PreviousContext::Context(ctx)));
    }
    if let Some(ordinal) = crate::device::retained_primary_ordinal(prev) {
        let dev = Device::new(ordinal)?;
        return Ok(Some(PreviousContext::Context(Context::primary(&dev)?)));
    }
    // A primary context someone else retained (the runtime's, say) is still a
    // device's primary context: ask the driver whose it is, and retain it only
    // when it is active (a current primary context is), so that asking makes
    // no context.
    // A context the driver cannot describe (destroyed while current, by another
    // thread or outside the crate) is handed back as the handle it was: the
    // caller is moving the thread off it, which must not fail because of it.
    let mut handle: sys::CUdevice = 0;
    // SAFETY: `handle` is valid for writes; `prev` is current on this thread.
    if unsafe { sys::cuCtxGetDevice(&mut handle) } != sys::CUDA_SUCCESS {
        return Ok(Some(PreviousContext::Foreign(prev)));
    }
    let dev = Device::from_driver_handle(handle, "reading the current context's device")?;
    let (mut flags, mut active) = (0u32, 0i32);
    // SAFETY: both out-pointers are valid for writes.
    let rc = unsafe { sys::cuDevicePrimaryCtxGetState(dev.handle(), &mut flags, &mut active) };
    if rc != sys::CUDA_SUCCESS {
        return Ok(Some(PreviousContext::Foreign(prev)));
    }
    if active != 0 {
        let primary = Context::primary(&dev)?;
        if primary.handle() == prev {
            return Ok(Some(PreviousContext::Context(primary)));
        }
    }
    Ok(Some(PreviousContext::Foreign(prev)))
}

/// Makes `ctx` (a live context that is not green) current on this thread unless
/// it already is: one `cuCtxGetCurrent`, and `cuCtxSetCurrent` only when they
/// differ. The one way the crate makes a context current before an operation
/// ([`Context::ensure_current`] and [`Device::ensure_current`] both come here);
/// the guard restores nothing for such a context.
pub(crate) fn ensure_current(
    ctx: sys::CUcontext,
    what: impl FnOnce() -> String,
) -> Result<Current> {
    // The operations' gate: no CUDA call from a driver callback thread.
    crate::deferred::refuse_on_callback()?;
    let mut cur: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: `cur` is valid for writes.
    let rc = unsafe { sys::cuCtxGetCurrent(&mut cur) };
    if rc != sys::CUDA_SUCCESS {
        forget_current();
        rc.check(|| "reading the current context")?;
    }
    if cur != ctx {
        // SAFETY: the caller passes a live context.
        let rc = unsafe { sys::cuCtxSetCurrent(ctx) };
        set_current_result(ctx, rc).check(what)?;
    } else {
        KNOWN_CURRENT.with(|k| k.set(ctx as usize));
    }
    Ok(Current { green: None })
}

thread_local! {
    /// The context this crate last made current, or saw current, on this thread
    /// (null: unknown). Architecture Invariant: it is trusted only by
    /// [`Stream::enter`](crate::Stream), for a driver call that names an
    /// ordinary stream handle of a context that is not green, where the driver
    /// takes the context from the stream, not from the thread; every call that
    /// depends on the current context itself (a special stream handle, a
    /// creation, a context-wide synchronisation) asks the driver
    /// (`ensure_current`). Every place the crate changes the current context
    /// updates or forgets it; code outside the crate that changes it (a raw
    /// `cuCtxSetCurrent`, a library that sets its device) can make it stale,
    /// and then the call fails with a context or handle error, on which
    /// `Stream::call` asks the driver and tries once more.
    static KNOWN_CURRENT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether `ctx` is what this thread last made or saw current (see
/// `KNOWN_CURRENT`).
#[inline]
pub(crate) fn known_current(ctx: sys::CUcontext) -> bool {
    KNOWN_CURRENT.with(|k| k.get() == ctx as usize && !ctx.is_null())
}

/// Whether what this thread last made or saw current (see `KNOWN_CURRENT`) is
/// a device's primary context, as the crate retained it: no driver call.
pub(crate) fn known_current_is_primary() -> bool {
    let k = KNOWN_CURRENT.with(std::cell::Cell::get);
    crate::device::is_retained_primary(k as sys::CUcontext)
}

/// Forgets which context is current on this thread: the next
/// [`ensure_current`] asks the driver.
pub(crate) fn forget_current() {
    KNOWN_CURRENT.with(|k| k.set(0));
}

/// Records the outcome of `cuCtxSetCurrent(ctx)` in `KNOWN_CURRENT` and hands
/// the result back.
pub(crate) fn set_current_result(ctx: sys::CUcontext, rc: sys::CUresult) -> sys::CUresult {
    KNOWN_CURRENT.with(|k| {
        k.set(if rc == sys::CUDA_SUCCESS {
            ctx as usize
        } else {
            0
        })
    });
    rc
}

// Deferred-release rule: on a driver callback thread the destroy (a CUDA call)
// is handed to the deferred queue instead of made there: the context's fields
// move into a new `Inner`, dropped there, and this one releases nothing.
impl Drop for Inner {
    fn drop(&mut self) {
        if (self.owned || !self.green.is_null()) && crate::deferred::must_defer() {
            let moved = Inner {
                handle: self.handle,
                device: self.device,
                owned: std::mem::replace(&mut self.owned, false),
                primary: self.primary,
                green: std::mem::replace(&mut self.green, std::ptr::null_mut()),
                green_lock: self.green_lock.take(),
            };
            crate::deferred::defer_drop("destroying a context", moved);
            return;
        }
        if !self.green.is_null() {
            // SAFETY: an owned green context (which owns `handle`), destroyed once,
            // after every stream and event made in it (they hold clones).
            let rc = unsafe { sys::cuGreenCtxDestroy(self.green) };
            crate::cleanup::driver(rc, "destroying a green context (cuGreenCtxDestroy)");
        } else if self.owned {
            // A destroyed context's handle may be reused by the next one made.
            forget_current();
            // SAFETY: an owned context, destroyed once, after every stream and event
            // made in it (they hold clones).
            let rc = unsafe { sys::cuCtxDestroy(self.handle) };
            crate::cleanup::driver(rc, "destroying a context (cuCtxDestroy)");
        }
    }
}

/// loom model checks (`RUSTFLAGS="--cfg loom" cargo test -p cudars-core --lib
/// --release loom`) of [`GreenLock`] as it is: loom runs every interleaving of the
/// threads, reports a deadlock (a lost wake-up) and, through the `UnsafeCell`
/// standing in for "the context is current on this thread", any two threads
/// inside the lock at once.
#[cfg(test)]
#[cfg(loom)]
mod loom_tests {
    use super::GreenLock;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    #[derive(Default)]
    struct Guarded {
        lock: GreenLock,
        /// Touched only while holding `lock`.
        uses: UnsafeCell<usize>,
    }

    // SAFETY: `uses` is only touched by the holder of `lock` (what the model
    // checks: loom reports concurrent access to the cell); rule 11 of the
    // soundness contract is what this model checks.
    unsafe impl Sync for Guarded {}

    impl Guarded {
        fn use_it(&self) {
            // SAFETY: the caller holds `lock`; loom checks that no other thread
            // touches the cell meanwhile.
            self.uses.with_mut(|n| unsafe { *n += 1 });
        }

        fn uses(&self) -> usize {
            // SAFETY: called after every other thread has been joined.
            self.uses.with(|n| unsafe { *n })
        }

        fn is_free(&self) -> bool {
            let g = self.lock.owner.lock().unwrap();
            g.0.is_none() && g.1 == 0
        }
    }

    /// One thread nests the lock (as nested operations take it again further
    /// down the stack) while another takes it once: they never hold it together,
    /// the inner release does not let the other thread in, and it ends free.
    #[test]
    fn loom_green_lock_nests_and_excludes() {
        loom::model(|| {
            let g = Arc::new(Guarded::default());
            let t = {
                let g = g.clone();
                loom::thread::spawn(move || {
                    g.lock.acquire();
                    g.lock.acquire();
                    g.use_it();
                    g.lock.release();
                    g.use_it();
                    g.lock.release();
                })
            };
            g.lock.acquire();
            g.use_it();
            g.lock.release();
            t.join().unwrap();
            assert_eq!(g.uses(), 3);
            assert!(g.is_free());
        });
    }

    /// Three threads contend, one of them nesting: each release wakes one waiter
    /// (`notify_one`), and no interleaving leaves a thread waiting on a free lock
    /// (loom fails a model in which every thread is blocked).
    #[test]
    fn loom_green_lock_wakes_every_waiter() {
        loom::model(|| {
            let g = Arc::new(Guarded::default());
            let ts: Vec<_> = [1, 2]
                .into_iter()
                .map(|depth| {
                    let g = g.clone();
                    loom::thread::spawn(move || {
                        for _ in 0..depth {
                            g.lock.acquire();
                        }
                        g.use_it();
                        for _ in 0..depth {
                            g.lock.release();
                        }
                    })
                })
                .collect();
            g.lock.acquire();
            g.use_it();
            g.lock.release();
            for t in ts {
                t.join().unwrap();
            }
            assert_eq!(g.uses(), 3);
            assert!(g.is_free());
        });
    }
}

// The device's contexts (the ground floor's `Device` knows no context).
impl Device {
    /// The device's primary context.
    ///
    /// # Errors
    /// The driver's error.
    pub fn context(&self) -> Result<Context> {
        Context::primary(self)
    }

    /// A new explicit context on this device (see [`Context::create`]).
    ///
    /// # Errors
    /// The driver's error.
    pub fn create_context(&self, options: ContextOptions) -> Result<Context> {
        Context::create(self, options)
    }
}

/// What a device does through its primary context: here, above the device, so
/// that `device` names no context.
impl Device {
    /// Makes this device's primary context current on the calling thread
    /// (`cuda.core`'s `Device.set_current()`; with a context,
    /// [`set_current_context`](Self::set_current_context)).
    ///
    /// # Errors
    /// The driver's error.
    pub fn set_current(&self) -> Result<()> {
        crate::deferred::refuse_on_callback()?;
        let ctx = self.primary_context()?;
        // SAFETY: a retained, live context.
        let rc = unsafe { sys::cuCtxSetCurrent(ctx) };
        set_current_result(ctx, rc)
            .check(|| format!("making device {}'s context current", self.ordinal()))
    }

    /// Makes `ctx`, a context of this device, current on the calling thread in
    /// place of the context that was (`cuCtxSetCurrent`, which replaces the top
    /// of the thread's context stack), and returns that one: `cuda.core`'s
    /// `Device.set_current(ctx)`, which pops the previous context and returns
    /// it. `None` when no context was current.
    ///
    /// The previous context comes back as a [`Context`] when this crate can
    /// hold it (a primary context, or a live context this crate made: the
    /// same context as its other clones) and as a borrowed handle
    /// ([`PreviousContext::Foreign`]) when something else made it. Nothing
    /// changes when this fails.
    ///
    /// ```no_run
    /// use cudars_core::{ContextOptions, Device, PreviousContext};
    ///
    /// let dev = Device::new(0)?;
    /// dev.set_current()?;
    /// let mine = dev.create_context(ContextOptions::default())?;
    /// // `Context::create` left `mine` current; put the primary context back.
    /// let prev = dev.set_current_context(&dev.context()?)?;
    /// assert!(matches!(prev, Some(PreviousContext::Context(c)) if c == mine));
    /// # Ok::<(), cudars_core::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) (of kind
    /// [`InvalidKind::OtherDevice`](crate::InvalidKind::OtherDevice)) when `ctx`
    /// is a context of another device;
    /// [`Error::Unsupported`](crate::Error::Unsupported) for a green context (see
    /// [`Context::set_current`]); the driver's error.
    pub fn set_current_context(&self, ctx: &Context) -> Result<Option<PreviousContext>> {
        const WHAT: &str = "making a context current";
        if ctx.device() != self {
            return Err(Error::other_device(
                WHAT,
                format!(
                    "the context is one of device {}, not of device {}",
                    ctx.device().ordinal(),
                    self.ordinal()
                ),
            ));
        }
        if ctx.is_green() {
            return Err(Error::unsupported(
                WHAT,
                "a green context is made current only for the length of each operation \
                 (the driver allows one thread at a time); use its streams instead",
            ));
        }
        crate::deferred::refuse_on_callback()?;
        let mut prev: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: `prev` is valid for writes.
        unsafe { sys::cuCtxGetCurrent(&mut prev) }.check(|| "reading the current context")?;
        // Told apart while `prev` is still current (its device is read from the
        // thread), before anything changes.
        let previous = previous_context(prev)?;
        // SAFETY: a live context (the caller's clone keeps it alive), not green.
        let rc = unsafe { sys::cuCtxSetCurrent(ctx.inner.handle) };
        set_current_result(ctx.inner.handle, rc).check(|| WHAT)?;
        Ok(previous)
    }

    /// Makes the device current if it is not (every operation calls this first, so
    /// that work goes to the right device whichever thread issues it).
    pub(crate) fn ensure_current(&self) -> Result<Current> {
        // The primary context is retained for the life of the process.
        ensure_current(self.primary_context()?, || {
            format!("making device {}'s context current", self.ordinal())
        })
    }

    /// Waits for all work on the device's primary context.
    ///
    /// # Errors
    /// The driver's error, including errors of earlier asynchronous work.
    pub fn sync(&self) -> Result<()> {
        let _current = self.ensure_current()?;
        // SAFETY: a current context.
        unsafe { sys::cuCtxSynchronize() }
            .check(|| format!("synchronising device {}", self.ordinal()))?;
        // Frees deferred until the work they waited for was done.
        crate::deferred::poll();
        Ok(())
    }

    /// Free and total memory in bytes, as the driver sees them now
    /// (`cuMemGetInfo`, through the device's primary context).
    ///
    /// # Errors
    /// The driver's error.
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        let _current = self.ensure_current()?;
        let (mut free, mut total) = (0, 0);
        // SAFETY: both are valid for writes; the device's context is current.
        unsafe { sys::cuMemGetInfo(&mut free, &mut total) }
            .check(|| format!("reading the free memory of device {}", self.ordinal()))?;
        Ok((free, total))
    }

    /// Lets this device's context access `peer`'s memory. Enabling it twice is not
    /// an error.
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the devices cannot be peers; the driver's error.
    pub fn enable_peer_access(&self, peer: &Device) -> Result<()> {
        if !self.can_access_peer(peer)? {
            return Err(Error::unsupported(
                format!(
                    "enabling peer access from device {} to {}",
                    self.ordinal(),
                    peer.ordinal()
                ),
                "the devices cannot access each other's memory",
            ));
        }
        if peer == self {
            return Ok(());
        }
        let _current = self.ensure_current()?;
        let peer_ctx = peer.primary_context()?;
        // SAFETY: a live peer context; flags must be 0.
        let rc = unsafe { sys::cuCtxEnablePeerAccess(peer_ctx, 0) };
        if rc == sys::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
            return Ok(());
        }
        rc.check(|| {
            format!(
                "enabling peer access from device {} to {}",
                self.ordinal(),
                peer.ordinal()
            )
        })
    }

    /// The priority range of streams on this device: `(least, greatest)`; a
    /// greater priority is a numerically smaller value.
    ///
    /// # Errors
    /// The driver's error.
    pub fn stream_priority_range(&self) -> Result<(i32, i32)> {
        let _current = self.ensure_current()?;
        let (mut least, mut greatest) = (0, 0);
        // SAFETY: both are valid for writes.
        unsafe { sys::cuCtxGetStreamPriorityRange(&mut least, &mut greatest) }
            .check(|| format!("reading the stream priorities of device {}", self.ordinal()))?;
        Ok((least, greatest))
    }
}
