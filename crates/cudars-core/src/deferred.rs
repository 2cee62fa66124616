//! Deferred releases: frees and destroys that cannot run now, kept until they can.
//!
//! Two things make a release impossible at the moment an owner drops: a driver
//! callback thread (a host function, a graph host node, a user object's
//! destructor), where CUDA forbids CUDA calls, and a call that fails (a free
//! refused during a global-mode stream capture, `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`,
//! for one). Either way the release is pushed, with everything it needs (the
//! resource's `Arc`, the address and size, the free stream's clone), onto one
//! process-wide queue, and retried on an ordinary thread: opportunistically at the
//! crate's next allocation, free, stream or device synchronisation on any thread
//! that is not a callback thread, and by a background reaper thread (started on
//! the first push) that retries with backoff, so the memory comes back even if the
//! program never calls the crate again. A release that keeps failing is retried,
//! never dropped. [`deferred_frees`] counts what waits; [`drain_deferred_frees`]
//! retries it now and reports.
//!
//! **Architecture Invariant:** the crate's driver-callback trampolines mark their
//! thread for the length of the call ([`CallbackScope`]); a `Drop` that calls CUDA
//! asks [`must_defer`] first and, on a marked thread, moves what it would release
//! into the queue without calling CUDA. The fast paths pay one relaxed atomic load
//! ([`STATE`] is zero while no callback runs and nothing waits).

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use crate::error::Result;

/// Low 32 bits: releases queued. High 32 bits: driver-callback trampolines
/// running, on any thread. Zero in the common case, so that the checks on the
/// allocation and free paths are one relaxed load that finds nothing to do.
static STATE: AtomicU64 = AtomicU64::new(0);
const CALLBACK: u64 = 1 << 32;
const PENDING: u64 = CALLBACK - 1;

thread_local! {
    /// Whether this thread is inside one of the crate's driver-callback trampolines.
    static ON_CALLBACK: Cell<bool> = const { Cell::new(false) };
    /// Whether this thread is draining the queue (a release that frees a buffer
    /// must not drain again, recursively).
    static DRAINING: Cell<bool> = const { Cell::new(false) };
}

/// Marks the current thread as a driver callback thread while it lives: the
/// trampolines hold one around everything they run and drop, so that a release
/// reached from there is deferred instead of calling CUDA, an operation is
/// refused ([`refuse_on_callback`]), and any other driver call, through any
/// path, returns `CUDA_ERROR_NOT_PERMITTED` without reaching the driver (the
/// bindings' refusal, `driver::refuse_calls_on_this_thread`).
pub(crate) struct CallbackScope {
    prev: bool,
    prev_refusing: bool,
}

impl CallbackScope {
    pub(crate) fn enter() -> Self {
        // Counted before the thread is marked: this thread's own `must_defer`
        // sees its own increment (program order), so a marked thread never
        // misses its mark through the fast path.
        STATE.fetch_add(CALLBACK, Ordering::Relaxed);
        let prev = ON_CALLBACK.try_with(|c| c.replace(true)).unwrap_or(false);
        let prev_refusing = cudars_bindings::driver::refuse_calls_on_this_thread(true);
        Self {
            prev,
            prev_refusing,
        }
    }
}

impl Drop for CallbackScope {
    fn drop(&mut self) {
        cudars_bindings::driver::refuse_calls_on_this_thread(self.prev_refusing);
        let _ = ON_CALLBACK.try_with(|c| c.set(self.prev));
        STATE.fetch_sub(CALLBACK, Ordering::Relaxed);
    }
}

std::thread_local! {
    /// How many streams' capture gates the thread holds shared
    /// (`Stream::capture_gate_shared`).
    static GATES_HELD: Cell<usize> = const { Cell::new(0) };
}

/// Counts a capture gate the calling thread took (`Stream::capture_gate_shared`).
pub(crate) fn capture_gate_taken() {
    let _ = GATES_HELD.try_with(|n| n.set(n.get() + 1));
}

/// Counts a capture gate the calling thread let go.
pub(crate) fn capture_gate_released() {
    let _ = GATES_HELD.try_with(|n| n.set(n.get().saturating_sub(1)));
}

/// Whether the calling thread holds a stream's capture gate: the deferred
/// queue then runs nothing on it ([`poll`]): a release made there (a free's
/// retry) could take the gate again and deadlock.
pub(crate) fn holds_capture_gate() -> bool {
    GATES_HELD.try_with(|n| n.get() > 0).unwrap_or(false)
}

/// Whether a release reached now must be deferred: the calling thread is inside
/// a driver callback, where CUDA calls are forbidden. One relaxed load when no
/// callback runs anywhere.
#[inline]
pub(crate) fn must_defer() -> bool {
    STATE.load(Ordering::Relaxed) >= CALLBACK && on_callback_thread()
}

#[cold]
fn on_callback_thread() -> bool {
    ON_CALLBACK.try_with(Cell::get).unwrap_or(false)
}

/// What [`callback_refusal`]'s error says was being done.
pub(crate) const CALLBACK_REFUSAL: &str = "a CUDA call from a driver callback thread (a host \
     function or graph host node), where CUDA forbids it: refused before calling the driver \
     (CUDA_ERROR_NOT_PERMITTED); do the work on an ordinary thread, after the stream reaches \
     the host function";

/// The gate of an operation (every driver call but a release's): on a driver
/// callback thread, where CUDA forbids CUDA calls (they may fail or hang: a
/// `Stream::sync` of the stream whose host function is running waits for
/// itself), the operation's error ([`callback_refusal`]) instead of the call.
/// The funnels every operation goes through before its first driver call
/// (`context::ensure_current`, `Stream::enter`, `ContextScope`) ask it, as do
/// the operations that call the driver without a current context. One relaxed
/// load when no callback runs anywhere.
#[inline]
pub(crate) fn refuse_on_callback() -> Result<()> {
    if must_defer() {
        return Err(callback_refusal());
    }
    Ok(())
}

/// The error of a CUDA call refused on a driver callback thread: a driver
/// error of code `CUDA_ERROR_NOT_PERMITTED` (what CUDA documents such a call
/// may return; [`refused_for_now`] holds it), whose context says why. Made
/// without calling the driver.
#[cold]
#[inline(never)]
pub(crate) fn callback_refusal() -> crate::error::Error {
    crate::error::Error::Driver {
        context: Cow::Borrowed(CALLBACK_REFUSAL),
        source: cudars_bindings::driver::DriverError::new(
            cudars_bindings::driver::CUDA_ERROR_NOT_PERMITTED,
        ),
    }
}

/// The gate of a release (a free, a destroy): whether it must be deferred (the
/// calling thread is a driver callback thread); on an ordinary thread, drains
/// the waiting releases first. One relaxed load when no callback runs anywhere
/// and nothing waits.
#[inline]
pub(crate) fn release_gate() -> bool {
    if STATE.load(Ordering::Relaxed) == 0 {
        return false;
    }
    release_gate_cold()
}

#[cold]
fn release_gate_cold() -> bool {
    if on_callback_thread() {
        return true;
    }
    // Not under a capture gate: a release could take it again (`stream.rs`).
    if STATE.load(Ordering::Relaxed) & PENDING != 0 && !holds_capture_gate() {
        let _ = drain_once();
    }
    false
}

/// Retries waiting releases if there are any and this thread may call CUDA: the
/// opportunistic drain of the allocation, free and synchronisation paths. One
/// relaxed load when nothing waits.
#[inline]
pub(crate) fn poll() {
    if STATE.load(Ordering::Relaxed) & PENDING != 0 {
        poll_cold();
    }
}

#[cold]
fn poll_cold() {
    // Not under a capture gate: a release could take it again (`stream.rs`).
    if !on_callback_thread() && !holds_capture_gate() {
        let _ = drain_once();
    }
}

/// Whether `e` is a refusal that may pass: a call forbidden for the moment (a
/// stream capture in progress, a driver callback thread), as opposed to a
/// failure of the work itself.
pub(crate) fn refused_for_now(e: &crate::error::Error) -> bool {
    use cudars_bindings::driver as sys;
    e.driver_code().is_some_and(|c| {
        [
            sys::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
            sys::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
            sys::CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
            sys::CUDA_ERROR_CAPTURED_EVENT,
            sys::CUDA_ERROR_NOT_PERMITTED,
        ]
        .contains(&c)
    })
}

/// A release waiting in the queue.
struct Deferred {
    what: Cow<'static, str>,
    bytes: usize,
    /// Releases, returning `Ok` when done (the item leaves the queue) and the
    /// error to retry later otherwise.
    retry: Box<dyn FnMut() -> Result<()> + Send>,
    attempts: u64,
    last_error: Option<String>,
}

struct Queue {
    items: Mutex<VecDeque<Deferred>>,
    wake: Condvar,
    reaper: AtomicBool,
}

static QUEUE: Queue = Queue {
    items: Mutex::new(VecDeque::new()),
    wake: Condvar::new(),
    reaper: AtomicBool::new(false),
};

fn lock() -> std::sync::MutexGuard<'static, VecDeque<Deferred>> {
    QUEUE.items.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Queues a release of `bytes` bytes (0 for a handle) that `retry` performs, to
/// be retried on an ordinary thread until it returns `Ok`. `first_error` is why
/// it could not run now (`None`: it was not tried, on a callback thread). Calls
/// no CUDA, so callback threads may call it.
pub(crate) fn defer(
    what: impl Into<Cow<'static, str>>,
    bytes: usize,
    first_error: Option<String>,
    retry: impl FnMut() -> Result<()> + Send + 'static,
) {
    defer_boxed(what.into(), bytes, first_error, Box::new(retry));
}

/// [`defer`] past its generic arguments: one copy for every caller.
fn defer_boxed(
    what: Cow<'static, str>,
    bytes: usize,
    first_error: Option<String>,
    retry: Box<dyn FnMut() -> Result<()> + Send>,
) {
    let item = Deferred {
        what,
        bytes,
        retry,
        attempts: u64::from(first_error.is_some()),
        last_error: first_error,
    };
    // Counted before it can be drained (and the count decremented).
    STATE.fetch_add(1, Ordering::Relaxed);
    lock().push_back(item);
    QUEUE.wake.notify_all();
    start_reaper();
}

/// Queues `value` to be dropped on an ordinary thread: for a `Drop` reached on a
/// driver callback thread whose release calls CUDA, which moves what it releases
/// into a value of its own type and defers that.
pub(crate) fn defer_drop<T: Send + 'static>(what: &'static str, value: T) {
    let mut value = Some(value);
    defer(what, 0, None, move || {
        drop(value.take());
        Ok(())
    });
}

/// A driver handle on its way to the deferred queue.
struct SendHandle<H>(H);

// SAFETY: `defer_handle` wraps only driver handles, which the driver lets any
// thread release, and hands the wrapper to nothing but the one release
// (rules 6 and 11 of the soundness contract).
unsafe impl<H> Send for SendHandle<H> {}

/// Queues the release of a driver handle, run once on an ordinary thread: for a
/// `Drop` reached on a driver callback thread ([`must_defer`]).
///
/// # Safety
/// `handle` must be a driver handle any thread may release, owned by the caller,
/// which hands its one release over as `release` (and does not release it).
pub(crate) unsafe fn defer_handle<H: 'static>(
    what: &'static str,
    handle: H,
    release: impl FnOnce(H) + Send + 'static,
) {
    let mut once = Some((SendHandle(handle), release));
    defer(what, 0, None, move || {
        if let Some((h, release)) = once.take() {
            release(h.0);
        }
        Ok(())
    });
}

/// Queues a library handle's destroy, retried on an ordinary thread while it
/// fails with a refusal for now ([`refused_for_now`]); another failure ends
/// it (the destroy decided what to keep). `first_error` is why it could not
/// run now (`None`: not tried, on a callback thread). For
/// [`release_or_defer`](crate::release_or_defer).
///
/// # Safety
/// As [`defer_handle`]: `handle` is a handle any thread may release, owned by
/// the caller, which hands its release over as `destroy` (and does not release
/// it).
pub(crate) unsafe fn defer_destroy<H: Copy + 'static>(
    what: &'static str,
    handle: H,
    first_error: Option<String>,
    mut destroy: impl FnMut(H) -> Result<()> + Send + 'static,
) {
    let handle = SendHandle(handle);
    defer(what, 0, first_error, move || {
        // Closures capture disjoint fields: name the wrapper whole so that the
        // closure owns it (and is `Send` through it).
        let h = &handle;
        match destroy(h.0) {
            Err(e) if refused_for_now(&e) => Err(e),
            // Done, or given up for good (the destroy kept what it must).
            _ => Ok(()),
        }
    });
}

/// How many releases wait in the queue: frees that failed or were reached on a
/// driver callback thread (a host function or graph host node that dropped the
/// last owner of a [`Buffer`](crate::Buffer)), and handles whose destruction was
/// reached there.
///
/// They are retried on ordinary threads: at the crate's next allocation, free,
/// [`Stream::sync`](crate::Stream::sync) or
/// [`Device::sync`](crate::Device::sync), and by a background
/// thread with backoff. [`drain_deferred_frees`] retries them at once.
pub fn deferred_frees() -> usize {
    // Counts the releases a drain holds out of the queue while it retries them.
    (STATE.load(Ordering::Relaxed) & PENDING) as usize
}

/// What [`drain_deferred_frees`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeferredFrees {
    /// Releases done by this call (by this call alone: another thread's drain may
    /// have done some of the others meanwhile).
    pub released: usize,
    /// Releases still waiting (retried later; never dropped).
    pub pending: usize,
    /// Bytes those waiting releases hold.
    pub pending_bytes: usize,
    /// What the first waiting release frees and its last error, when one waits.
    pub first_error: Option<String>,
}

impl fmt::Display for DeferredFrees {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} deferred releases done, {} waiting ({} bytes)",
            self.released, self.pending, self.pending_bytes
        )?;
        if let Some(e) = &self.first_error {
            write!(f, "; first: {e}")?;
        }
        Ok(())
    }
}

/// Retries every waiting release now, on this thread, and reports. Called on a
/// driver callback thread (inside a host function), it retries nothing.
pub fn drain_deferred_frees() -> DeferredFrees {
    if on_callback_thread() {
        return report(0);
    }
    drain_once()
}

fn report(released: usize) -> DeferredFrees {
    let q = lock();
    DeferredFrees {
        released,
        pending: deferred_frees(),
        pending_bytes: q.iter().map(|d| d.bytes).sum(),
        first_error: q.front().map(|d| {
            format!(
                "{} ({} attempts): {}",
                d.what,
                d.attempts,
                d.last_error.as_deref().unwrap_or("not tried yet")
            )
        }),
    }
}

/// Takes the waiting releases out of the queue, retries each once with the lock
/// released (a release may wait for a stream, or free a buffer), and puts back
/// those that fail, in order. A nested drain (a release reaching a free) returns
/// at once.
fn drain_once() -> DeferredFrees {
    if DRAINING.try_with(|d| d.replace(true)).unwrap_or(true) {
        return report(0);
    }
    let taken: Vec<Deferred> = lock().drain(..).collect();
    let relaxed = (!taken.is_empty()).then(RelaxedCapture::enter);
    let mut failed = Vec::new();
    let mut released = 0;
    for mut d in taken {
        d.attempts += 1;
        // A release must not unwind into the reaper or the caller's drop: a
        // panicking one is kept, and retried.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (d.retry)()));
        match r {
            Ok(Ok(())) => released += 1,
            Ok(Err(e)) => {
                d.last_error = Some(crate::error::Report::new(&e).to_string());
                failed.push(d);
            }
            Err(payload) => {
                d.last_error = Some("the release panicked".to_owned());
                // The payload's own drop may panic: keep it from unwinding.
                crate::panics::drop_caught(payload);
                failed.push(d);
            }
        }
    }
    drop(relaxed);
    {
        let mut q = lock();
        // Released items leave the count; failed ones go back in front of those
        // pushed meanwhile (still counted).
        STATE.fetch_sub(released as u64, Ordering::Relaxed);
        for d in failed.into_iter().rev() {
            q.push_front(d);
        }
    }
    let _ = DRAINING.try_with(|d| d.set(false));
    report(released)
}

/// Starts the reaper thread once (again if starting failed).
fn start_reaper() {
    if QUEUE.reaper.swap(true, Ordering::AcqRel) {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("cudars-deferred-frees".into())
        .spawn(reaper);
    if spawned.is_err() {
        // The opportunistic drains still run; the next push tries again.
        QUEUE.reaper.store(false, Ordering::Release);
    }
}

/// The reaper's backoff: from 1 ms, doubling to 1 s, while releases keep failing.
const BACKOFF_MIN: Duration = Duration::from_millis(1);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

fn reaper() {
    let mut backoff = BACKOFF_MIN;
    loop {
        {
            // Sleep until something waits (or the backoff passes).
            let q = lock();
            let (q, _) = QUEUE
                .wake
                .wait_timeout_while(q, backoff, |q| q.is_empty())
                .unwrap_or_else(PoisonError::into_inner);
            if q.is_empty() {
                backoff = BACKOFF_MIN;
                continue;
            }
        }
        let r = drain_once();
        backoff = if r.pending == 0 || r.released > 0 {
            BACKOFF_MIN
        } else {
            (backoff * 2).min(BACKOFF_MAX)
        };
        if r.pending > 0 {
            std::thread::sleep(backoff);
        }
    }
}

/// The calling thread in relaxed capture mode while it lives
/// (`cuThreadExchangeStreamCaptureMode`, CUDA's documented way to make a
/// potentially unsafe call during a capture), then back in its own mode. A drain
/// holds one, so that a global-mode capture (of this thread or another) neither
/// refuses its frees nor is invalidated by them; a free ordered on a capturing
/// stream is not tried (see `Buffer`'s deferred free), and one that still
/// conflicts fails and waits for the next try.
pub(crate) struct RelaxedCapture {
    prev: Option<cudars_bindings::driver::CUstreamCaptureMode>,
}

impl RelaxedCapture {
    pub(crate) fn enter() -> Self {
        let mut mode = cudars_bindings::driver::CU_STREAM_CAPTURE_MODE_RELAXED;
        // SAFETY: `mode` is valid for reads and writes. Without a driver the
        // binding returns its "not found" code and calls nothing.
        let rc = unsafe { cudars_bindings::driver::cuThreadExchangeStreamCaptureMode(&mut mode) };
        Self {
            prev: (rc == cudars_bindings::driver::CUDA_SUCCESS).then_some(mode),
        }
    }
}

impl Drop for RelaxedCapture {
    fn drop(&mut self) {
        if let Some(mut mode) = self.prev {
            // SAFETY: as in `enter`; puts the thread's own mode back.
            let _ =
                unsafe { cudars_bindings::driver::cuThreadExchangeStreamCaptureMode(&mut mode) };
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    /// The queue is process-wide: the tests that use it take turns.
    pub(crate) static SERIAL: Mutex<()> = Mutex::new(());

    pub(crate) fn serial() -> std::sync::MutexGuard<'static, ()> {
        SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn failing(n: usize, done: Arc<AtomicUsize>) -> impl FnMut() -> Result<()> + Send {
        let mut left = n;
        move || {
            if left > 0 {
                left -= 1;
                return Err(crate::error::Error::invalid("freeing", "not yet"));
            }
            done.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    /// Drains until the queue is empty (the reaper drains too, concurrently).
    pub(crate) fn settle() {
        for _ in 0..10_000 {
            if deferred_frees() == 0 {
                return;
            }
            let _ = drain_deferred_frees();
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("the deferred queue never emptied: {}", report(0));
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "the queue starts its reaper thread, which never ends and which Miri runs too slowly for the retry loops"
    )]
    fn a_release_that_fails_is_retried_until_it_succeeds() {
        let _s = serial();
        settle();
        let done = Arc::new(AtomicUsize::new(0));
        defer(
            "freeing 64 bytes",
            64,
            Some("refused".into()),
            failing(3, done.clone()),
        );
        assert!(deferred_frees() <= 1);
        settle();
        assert_eq!(done.load(Ordering::SeqCst), 1, "released exactly once");
        assert_eq!(deferred_frees(), 0);
        assert_eq!(STATE.load(Ordering::Relaxed) & PENDING, 0);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "the queue starts its reaper thread, which never ends and which Miri runs too slowly for the retry loops"
    )]
    fn a_drain_reports_what_waits_and_never_drops_it() {
        let _s = serial();
        settle();
        let stop = Arc::new(AtomicBool::new(false));
        let tries = Arc::new(AtomicUsize::new(0));
        let (s, t) = (stop.clone(), tries.clone());
        defer("freeing 10 bytes", 10, None, move || {
            t.fetch_add(1, Ordering::SeqCst);
            if s.load(Ordering::SeqCst) {
                Ok(())
            } else {
                Err(crate::error::Error::invalid("freeing", "not yet"))
            }
        });
        // Whoever drains (this thread or the reaper), the item stays: it fails
        // every time. A drain that finds the reaper holding it does not try it,
        // so the test drains until five tries were made (by either), however
        // loaded the host.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let mut drains = 0;
        while drains < 5 || tries.load(Ordering::SeqCst) < 5 {
            let r = drain_deferred_frees();
            assert_eq!(r.released, 0);
            assert_eq!(r.pending, 1, "{r}");
            assert_eq!(deferred_frees(), 1);
            drains += 1;
            assert!(
                std::time::Instant::now() < deadline,
                "{} tries in {drains} drains",
                tries.load(Ordering::SeqCst)
            );
        }
        let r = report(0);
        // The reaper may hold it out of the queue for a moment.
        if r.pending_bytes > 0 {
            assert_eq!(r.pending_bytes, 10, "{r}");
            assert!(
                r.first_error
                    .as_deref()
                    .is_some_and(|e| e.contains("not yet") || e.contains("not tried")),
                "{r}"
            );
        }
        stop.store(true, Ordering::SeqCst);
        settle();
        assert_eq!(deferred_frees(), 0);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "the queue starts its reaper thread, which never ends and which Miri runs too slowly for the retry loops"
    )]
    fn a_panicking_release_is_kept_and_nothing_unwinds() {
        let _s = serial();
        settle();
        let tries = Arc::new(AtomicUsize::new(0));
        let t = tries.clone();
        defer("freeing 1 byte", 1, None, move || {
            if t.fetch_add(1, Ordering::SeqCst) == 0 {
                panic!("the first try panics");
            }
            Ok(())
        });
        settle();
        assert_eq!(tries.load(Ordering::SeqCst), 2);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "the queue starts its reaper thread, which never ends and which Miri runs too slowly for the retry loops"
    )]
    fn callback_threads_defer_and_do_not_drain() {
        let _s = serial();
        settle();
        assert!(!must_defer());
        {
            let _cb = CallbackScope::enter();
            assert!(must_defer());
            {
                // Nested trampolines (a destructor run inside a callback).
                let _inner = CallbackScope::enter();
                assert!(must_defer());
            }
            assert!(must_defer());
            // Another thread is not a callback thread, though one runs here.
            assert!(!std::thread::spawn(must_defer).join().unwrap());
            let done = Arc::new(AtomicUsize::new(0));
            defer("freeing 8 bytes", 8, None, failing(0, done.clone()));
            // No drain on a callback thread.
            let r = drain_deferred_frees();
            assert_eq!(r.released, 0);
            poll();
            drop(_cb);
            settle();
            assert_eq!(done.load(Ordering::SeqCst), 1);
        }
        assert!(!must_defer());
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "the queue starts its reaper thread, which never ends and which Miri runs too slowly for the retry loops"
    )]
    fn deferred_drops_run_on_an_ordinary_thread() {
        let _s = serial();
        settle();
        struct Probe(Arc<AtomicUsize>);
        impl Drop for Probe {
            fn drop(&mut self) {
                assert!(!must_defer(), "dropped on a callback thread");
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(AtomicUsize::new(0));
        {
            let _cb = CallbackScope::enter();
            defer_drop("a probe", Probe(dropped.clone()));
        }
        settle();
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "the queue starts its reaper thread, which never ends and which Miri runs too slowly for the retry loops"
    )]
    fn only_refusals_for_now_hold_a_free_back() {
        use crate::error::Check as _;
        use cudars_bindings::driver as sys;
        for code in [
            sys::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
            sys::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
            sys::CUDA_ERROR_NOT_PERMITTED,
        ] {
            let e = code.check(|| "waiting").unwrap_err();
            assert!(refused_for_now(&e), "{e:?}");
        }
        // The work's own failure: the free goes ahead (nothing runs any more).
        for code in [
            sys::CUDA_ERROR_ILLEGAL_ADDRESS,
            sys::CUDA_ERROR_LAUNCH_FAILED,
        ] {
            let e = code.check(|| "waiting").unwrap_err();
            assert!(!refused_for_now(&e), "{e:?}");
        }
        assert!(!refused_for_now(&crate::error::Error::invalid("x", "y")));
    }
}
