//! Futures for GPU work: [`Completion`] (from [`Stream::completion`] and
//! [`Stream::completion_with`], and the asynchronous copies that return one),
//! [`EventWait`](event_wait::EventWait) (from [`Event::wait_async`], or `.await` on an `&Event`) and
//! [`ToVec`](copies::ToVec) ([`DeviceView::to_vec_async`](crate::DeviceView::to_vec_async)).
//!
//! They work on any executor: they need nothing but `std::task`. No thread waits
//! for each future: one process-wide reactor thread (`reactor.rs`) watches every
//! pending one and sleeps when none is pending.
//!
//! Work is eager and the futures only wait: a launch or copy is queued when it is
//! called, and [`Stream::completion`] resolves once everything queued on the stream
//! before it has run. (NVIDIA's `cuda-async` is lazy: its `DeviceOp`s queue nothing
//! until awaited. An op chain `a.and_then(b)` ports as `a` and `b` queued on one
//! stream, then `stream.completion_with(keep).await`; `docs/architecture.md`,
//! "Awaiting GPU work", has the rest of the mapping.)
//!
//! Architecture Invariant (rule 12 of the soundness contract,
//! `docs/architecture.md`): what the GPU may still touch when a future is
//! dropped or forgotten is never owned by the future's frame alone. It lives in
//! a slot shared with the reactor, which releases it after the work has
//! completed (through the deferred queue, never by a blocking drop on the
//! executor's thread); `mem::forget` of the future leaks the slot, never frees
//! it early.

pub(crate) mod copies;
mod event_pool;
pub(crate) mod event_wait;
pub(crate) mod reactor;
pub(crate) mod staging;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context as TaskContext, Poll, Waker};

use cudars_bindings::driver as sys;

use crate::context::Context;
use crate::error::{Check as _, Error, Result};
use crate::event::Event;
use crate::panics::PanicSlot;
use crate::stream::Stream;
use reactor::{Finish, Source};

const AWAITING: &str = "awaiting the work queued on a stream";

/// Where a future's outcome and what it keeps meet: shared by the future and
/// the reactor, so that neither dropping nor forgetting the future frees what
/// the work may still touch.
struct Slot<T> {
    state: Mutex<SlotState<T>>,
    /// Waited for (each try of a `cuCtxSynchronize`, rule 4) before `keep` is
    /// released after a failure, when it is known.
    ctx: Option<Context>,
}

struct SlotState<T> {
    outcome: Option<Result<()>>,
    /// What the work uses, handed back when it completes.
    keep: Option<T>,
    waker: Option<Waker>,
    /// The future was dropped: the reactor releases `keep`.
    abandoned: bool,
}

impl<T: Send + 'static> Slot<T> {
    fn new(keep: Option<T>, ctx: Option<Context>) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(SlotState {
                outcome: None,
                keep,
                waker: None,
                abandoned: false,
            }),
            ctx,
        })
    }

    fn lock(&self) -> MutexGuard<'_, SlotState<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Releases `keep` after the work failed: off this thread, after waiting for
    /// the context (rule 4: the failure may not be the context's, and nothing
    /// queued may still touch `keep` when it goes).
    ///
    /// The wait is made with the thread in relaxed capture mode, and tried up
    /// to three times; an error that persists is sticky (the context runs none
    /// of its queued work any more) and `keep` goes. A wait refused for now
    /// (another thread's capture forbids it: [`refused_for_now`]) is not
    /// final: `keep` stays, and the deferred queue tries again later, as
    /// `PinnedBuffer`'s drop does.
    ///
    /// [`refused_for_now`]: crate::deferred::refused_for_now
    fn release_after_failure(&self, keep: T) {
        let ctx = self.ctx.clone();
        let mut keep = Some(keep);
        crate::deferred::defer(
            "releasing what a failed GPU future held",
            0,
            None,
            move || {
                if let Some(ctx) = &ctx {
                    wait_context_or_keep(ctx)?;
                }
                drop(keep.take());
                Ok(())
            },
        );
    }
}

/// Waits for `ctx` before what a failed future held is released: `Ok` once the
/// context has been waited for, or its error persisted through three tries
/// (sticky: nothing queued runs any more); the error when the last try was
/// refused for now (another thread's capture), so the release waits.
fn wait_context_or_keep(ctx: &Context) -> Result<()> {
    let _relaxed = crate::deferred::RelaxedCapture::enter();
    let mut last = Ok(());
    for _ in 0..3 {
        last = ctx.sync();
        if last.is_ok() {
            return Ok(());
        }
    }
    match last {
        Err(e) if crate::deferred::refused_for_now(&e) => Err(e),
        _ => Ok(()),
    }
}

impl<T: Send + 'static> Finish for Slot<T> {
    fn finish(&self, outcome: Result<()>) {
        let mut g = self.lock();
        if outcome.is_err() {
            if let Some(keep) = g.keep.take() {
                self.release_after_failure(keep);
            }
        }
        if g.abandoned {
            // Nobody will take it: the work is done; release it through the
            // deferred queue, not on the reactor's thread (a drop may block).
            if let Some(keep) = g.keep.take() {
                crate::deferred::defer_drop("releasing what a dropped GPU future held", keep);
            }
            return;
        }
        g.outcome = Some(outcome);
        let waker = g.waker.take();
        drop(g);
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// An event recorded on a stream, as the reactor queries it. Once a query has
/// seen its work complete, it goes back to the event pool when dropped
/// (`event_pool.rs`); otherwise it is destroyed (destroying an event whose work
/// is pending is allowed: its resources go when the work is done).
struct EventSource {
    event: Option<Event>,
    complete: bool,
}

impl EventSource {
    fn new(event: Event) -> Self {
        Self {
            event: Some(event),
            complete: false,
        }
    }
}

impl Source for EventSource {
    fn query(&mut self) -> Option<Result<()>> {
        let outcome = query_event(self.event.as_ref()?, AWAITING);
        self.complete = matches!(outcome, Some(Ok(())));
        outcome
    }
}

// Rule 13 of the soundness contract: the event goes back to the pool only once
// the reactor saw its work complete; an event dropped while pending is destroyed
// (rule 12: the drop never waits), so no later owner records over pending work.
impl Drop for EventSource {
    fn drop(&mut self) {
        if let Some(e) = self.event.take() {
            if self.complete {
                event_pool::put(e);
            }
        }
    }
}

/// How long the first poll of a future asks the driver, back to back, before
/// handing the wait to the reactor, unless [`Completion::spin_first`] says
/// otherwise: short work (a launch and its completion take a few microseconds)
/// resolves in the first poll, with no thread woken, as fast as a blocking
/// `Stream::sync`. Skipped when the reactor already watches an earlier point of
/// the same queue (which must complete first), so a thousand futures of one
/// stream polled at once spin once, not a thousand times. The figures behind
/// the choice are in `docs/architecture.md` ("Awaiting GPU work").
pub(crate) const DEFAULT_SPIN: std::time::Duration = std::time::Duration::from_micros(20);

/// `cuEventQuery`: `None` while the work before the event's last record runs.
fn query_event(event: &Event, what: &'static str) -> Option<Result<()>> {
    // Green rule: every call on a green context's event holds its lock.
    let _green = match event.ctx.green_guard() {
        Ok(g) => g,
        Err(e) => return Some(Err(e)),
    };
    // SAFETY: a live event (borrowed or owned by the caller).
    let rc = unsafe { sys::cuEventQuery(event.handle) };
    if rc == sys::CUDA_ERROR_NOT_READY {
        return None;
    }
    Some(rc.check(|| what))
}

/// Asks `source` once, then again back to back until `spin` has passed.
fn query_spinning(source: &mut dyn Source, spin: std::time::Duration) -> Option<Result<()>> {
    let outcome = source.query();
    if outcome.is_some() || spin.is_zero() {
        return outcome;
    }
    let start = std::time::Instant::now();
    while start.elapsed() < spin {
        std::hint::spin_loop();
        if let Some(outcome) = source.query() {
            return Some(outcome);
        }
    }
    None
}

/// A source not yet handed to the reactor.
struct Unregistered {
    source: Box<dyn Source>,
    queue: Option<u64>,
    seq: u64,
}

/// Hands a pending source to the reactor; if its thread cannot start, to the
/// deferred queue, whose reaper retries it with backoff (slower, but nothing
/// hangs and nothing is released early).
fn hand_over(p: Unregistered, finish: Arc<dyn Finish>) {
    match reactor::global() {
        Ok(r) => r.register(p.source, p.queue, p.seq, finish),
        Err(e) => {
            let reason = crate::error::Report::new(&e).to_string();
            let mut p = Some((p.source, finish));
            crate::deferred::defer("watching GPU work for a future", 0, None, move || {
                let Some((source, _)) = &mut p else {
                    return Ok(());
                };
                match source.query() {
                    None => Err(Error::unsupported(
                        "watching GPU work for a future",
                        format!("not complete yet ({reason})"),
                    )),
                    Some(outcome) => {
                        if let Some((source, finish)) = p.take() {
                            drop(source);
                            finish.finish(outcome);
                        }
                        Ok(())
                    }
                }
            });
        }
    }
}

enum State {
    /// Recorded; asked directly at the first poll, then handed to the reactor.
    Unregistered(Unregistered),
    /// The reactor watches it.
    Registered,
    /// Failed before anything was recorded.
    Failed(Error),
    /// Resolved.
    Done,
}

/// A future that resolves when the work queued on a stream before it has
/// completed, with what it keeps ([`Stream::completion_with`]), or with the
/// error of the work (a failed kernel's sticky error, a destroyed or reset
/// context: every wait resolves, none hangs) or of a host function that
/// panicked (as [`Stream::sync`] reports it).
///
/// Made by [`Stream::completion`], [`Stream::completion_with`] and the
/// asynchronous copies ([`DeviceViewMut::copy_from_pinned_async`](crate::DeviceViewMut::copy_from_pinned_async),
/// [`DeviceView::copy_to_pinned_async`](crate::DeviceView::copy_to_pinned_async)). The point in the stream is taken when
/// the future is made (an event is recorded then), not when it is first polled.
/// Any executor can poll it; nothing waits on the polling thread.
///
/// **Cancellation** (rule 12 of the soundness contract,
/// `docs/architecture.md`): dropping the future before it resolves leaves what
/// it keeps with the process-wide reactor, which releases it after the work has
/// completed, through the deferred queue (its reaper thread, or the crate's next
/// call on an ordinary thread), never by waiting on the thread that drops the
/// future. `mem::forget` leaks it. Neither frees
/// anything the GPU may still touch.
#[must_use = "a future does nothing unless awaited; dropping it does not cancel the GPU work"]
pub struct Completion<T: Send + 'static = ()> {
    state: State,
    slot: Arc<Slot<T>>,
    panics: Option<Arc<PanicSlot>>,
    /// How long the first poll keeps asking the driver before handing over to
    /// the reactor ([`spin_first`](Self::spin_first)); `None`: [`DEFAULT_SPIN`]
    /// unless the queue is busy.
    spin: Option<std::time::Duration>,
}

impl<T: Send + 'static> std::fmt::Debug for Completion<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            State::Unregistered(_) => "recorded",
            State::Registered => "watched",
            State::Failed(_) => "failed",
            State::Done => "done",
        };
        f.debug_struct("Completion").field("state", &state).finish()
    }
}

/// Why a future of a capturing stream's work is refused.
const CAPTURING: &str = "the stream is capturing a graph, whose work runs only when the graph \
                         is launched: await the stream the graph is launched on";

/// Records a completion point on `stream`, for a caller that holds its capture
/// gate and found it not capturing ([`Stream::while_not_capturing`]): the event
/// is an ordinary one, which completes once.
fn record_point(stream: &Stream) -> Result<Unregistered> {
    let event = event_pool::take(stream.context())?;
    // A failed record drops the event (not back to the pool).
    event.record(stream)?;
    let queue = {
        use std::hash::{Hash as _, Hasher as _};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        // Rule 5: the queue's identity, never its handle alone.
        stream.queue_id().hash(&mut h);
        h.finish()
    };
    Ok(Unregistered {
        source: Box::new(EventSource::new(event)),
        queue: Some(queue),
        seq: reactor::next_seq(),
    })
}

impl<T: Send + 'static> Completion<T> {
    /// Records the completion point on `stream`, keeping `keep` until it is reached.
    fn record(stream: &Stream, keep: T) -> Self {
        // Capture-gate rule (`callback.rs`): no capture of this stream begins
        // between the check and the record, so the event is an ordinary one,
        // which completes once.
        let recorded = stream.while_not_capturing(AWAITING, CAPTURING, || record_point(stream));
        Self::recorded(stream, keep, recorded)
    }

    /// The future of a point `recorded` on `stream` (by [`record_point`]),
    /// keeping `keep` until it is reached; or, when the record failed, one that
    /// resolves with the error and releases `keep` once the work queued before
    /// cannot touch it any more.
    fn recorded(stream: &Stream, keep: T, recorded: Result<Unregistered>) -> Self {
        let slot = Slot::new(Some(keep), Some(stream.context().clone()));
        let panics = Some(stream.panic_slot().clone());
        match recorded {
            Ok(p) => Self {
                state: State::Unregistered(p),
                slot,
                panics,
                spin: None,
            },
            Err(e) => {
                // The work before may still run: `keep` waits for the context.
                if let Some(keep) = slot.lock().keep.take() {
                    slot.release_after_failure(keep);
                }
                Self {
                    state: State::Failed(e),
                    slot,
                    panics,
                    spin: None,
                }
            }
        }
    }

    /// A future that resolves at once with `e`.
    fn failed(e: Error) -> Self {
        Self {
            state: State::Failed(e),
            slot: Slot::new(None, None),
            panics: None,
            spin: None,
        }
    }

    /// A future over a source of the CPU tests.
    #[cfg(test)]
    fn from_source(source: Box<dyn Source>, keep: T) -> Self {
        Self {
            state: State::Unregistered(Unregistered {
                source,
                queue: None,
                seq: reactor::next_seq(),
            }),
            slot: Slot::new(Some(keep), None),
            panics: None,
            spin: None,
        }
    }

    /// Makes the first poll ask the driver for up to `spin` (back to back,
    /// on the polling thread) before handing the wait to the reactor. By default
    /// it spins for 20 µs unless the reactor already watches
    /// an earlier point of the same stream: short work resolves in the first
    /// poll, where the reactor's wake of the executor's thread would cost more
    /// than the work. The executor's thread is busy meanwhile, so keep `spin` to
    /// microseconds; zero asks once (for a future known to wait long, or an
    /// executor whose thread must not spin). An explicit `spin` is spun whatever
    /// the reactor watches.
    pub fn spin_first(mut self, spin: std::time::Duration) -> Self {
        self.spin = Some(spin);
        self
    }

    /// How long the first poll spins on `p`.
    fn first_spin(&self, p: &Unregistered) -> std::time::Duration {
        match self.spin {
            Some(d) => d,
            None if p.queue.is_some_and(reactor::queue_busy) => std::time::Duration::ZERO,
            None => DEFAULT_SPIN,
        }
    }

    /// The outcome, with `keep` on success.
    fn resolve(&mut self, outcome: Result<()>) -> Result<T> {
        let keep = self.slot.lock().keep.take();
        if let Err(e) = outcome {
            if let Some(keep) = keep {
                self.slot.release_after_failure(keep);
            }
            return Err(e);
        }
        if let Some(panic) = self.panics.as_ref().and_then(|p| p.take()) {
            if let Some(keep) = keep {
                crate::deferred::defer_drop("releasing what a GPU future held", keep);
            }
            return Err(Error::HostCallbackPanicked {
                context: AWAITING.into(),
                panic,
            });
        }
        keep.ok_or_else(|| Error::invalid(AWAITING, "the future's value was already taken"))
    }
}

impl<T: Send + 'static> Future for Completion<T> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<T>> {
        let this = self.get_mut();
        match std::mem::replace(&mut this.state, State::Done) {
            State::Failed(e) => Poll::Ready(Err(e)),
            State::Done => Poll::Ready(Err(Error::invalid(
                AWAITING,
                "the future was polled after it resolved",
            ))),
            State::Unregistered(mut p) => {
                let spin = this.first_spin(&p);
                match query_spinning(&mut *p.source, spin) {
                    Some(outcome) => {
                        drop(p);
                        Poll::Ready(this.resolve(outcome))
                    }
                    None => {
                        // The waker is in place before the reactor can finish.
                        this.slot.lock().waker = Some(cx.waker().clone());
                        hand_over(p, this.slot.clone());
                        this.state = State::Registered;
                        Poll::Pending
                    }
                }
            }
            State::Registered => {
                let mut g = this.slot.lock();
                match g.outcome.take() {
                    Some(outcome) => {
                        drop(g);
                        Poll::Ready(this.resolve(outcome))
                    }
                    None => {
                        match &mut g.waker {
                            Some(w) if w.will_wake(cx.waker()) => {}
                            w => *w = Some(cx.waker().clone()),
                        }
                        drop(g);
                        this.state = State::Registered;
                        Poll::Pending
                    }
                }
            }
        }
    }
}

// Rule 12 of the soundness contract: a dropped future's `keep` goes to whoever
// knows when the work is done (the reactor), never to this thread before then.
impl<T: Send + 'static> Drop for Completion<T> {
    fn drop(&mut self) {
        match std::mem::replace(&mut self.state, State::Done) {
            State::Unregistered(p) => {
                let mut g = self.slot.lock();
                g.abandoned = true;
                let keeps = g.keep.is_some();
                drop(g);
                if keeps {
                    // Watched until done, then released (`Slot::finish`).
                    hand_over(p, self.slot.clone());
                }
                // Otherwise the event alone goes: destroying an event whose work
                // is pending is allowed (its resources go when the work is done).
            }
            State::Registered => {
                let mut g = self.slot.lock();
                g.abandoned = true;
                g.waker = None;
                // Resolved but never polled: the work is done; release off this
                // thread all the same (a pinned free may synchronise).
                if g.outcome.is_some() {
                    if let Some(keep) = g.keep.take() {
                        drop(g);
                        crate::deferred::defer_drop("releasing what a GPU future held", keep);
                    }
                }
            }
            State::Failed(_) | State::Done => {}
        }
    }
}

impl Stream {
    /// A future that resolves when all the work queued on this stream so far has
    /// completed: `stream.completion().await` is the asynchronous
    /// [`sync`](Self::sync), on any executor, with no thread blocked.
    ///
    /// ```no_run
    /// # async fn f(stream: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// // ... queue copies and launches on `stream` ...
    /// stream.completion().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// The point is taken now (an event is recorded); work queued later is not
    /// waited for. Library calls (a GEMM, an FFT, a collective) and graph
    /// launches are stream work like any other: queue them, then await this.
    ///
    /// # Errors
    /// Through the future: [`Error::InvalidArgument`] for a capturing stream
    /// (its work runs when the graph is launched); the driver's error for
    /// failed work; [`Error::HostCallbackPanicked`] as [`sync`](Self::sync).
    pub fn completion(&self) -> Completion {
        Completion::record(self, ())
    }

    /// As [`completion`](Self::completion), keeping `keep` alive until the work
    /// queued so far has completed, then handing it back: the way to keep host
    /// memory, or anything else the queued work uses, owned until it is done
    /// (rule 12 of the soundness contract, `docs/architecture.md`). If the future
    /// is dropped first, `keep` is dropped after the work completes, through the
    /// deferred queue (the drop does not wait); if it is forgotten, `keep` is
    /// leaked.
    ///
    /// # Errors
    /// As [`completion`](Self::completion); after a failure `keep` is dropped
    /// once the context has been waited for (the failed work runs no more).
    pub fn completion_with<T: Send + 'static>(&self, keep: T) -> Completion<T> {
        Completion::record(self, keep)
    }
}

#[cfg(test)]
mod tests {
    use super::reactor::tests::Fake;
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    use std::task::Wake;
    use std::time::{Duration, Instant};

    /// A waker that unparks the thread that polls.
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    /// The smallest executor: polls on this thread, parks between polls.
    fn block_on<F: Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        let mut cx = TaskContext::from_waker(&waker);
        loop {
            if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
            std::thread::park_timeout(Duration::from_secs(10));
        }
    }

    /// Counts its drops; records whether its work was done when it dropped.
    #[derive(Debug)]
    struct Probe {
        dropped: Arc<AtomicUsize>,
        work_done: Arc<AtomicBool>,
        early: Arc<AtomicUsize>,
    }
    impl Drop for Probe {
        fn drop(&mut self) {
            if !self.work_done.load(Ordering::Acquire) {
                self.early.fetch_add(1, Ordering::SeqCst);
            }
            self.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }

    struct Setup {
        future: Completion<Probe>,
        done: Arc<AtomicBool>,
        dropped: Arc<AtomicUsize>,
        early: Arc<AtomicUsize>,
    }

    fn setup(fail: bool) -> Setup {
        let done = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(AtomicUsize::new(0));
        let early = Arc::new(AtomicUsize::new(0));
        let source = Box::new(Fake {
            done: done.clone(),
            fail,
            queries: Arc::new(AtomicU64::new(0)),
        });
        let probe = Probe {
            dropped: dropped.clone(),
            work_done: done.clone(),
            early: early.clone(),
        };
        Setup {
            future: Completion::from_source(source, probe),
            done,
            dropped,
            early,
        }
    }

    /// Polls `f` once on this thread, with a waker that unparks it.
    fn poll_here<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        Pin::new(f).poll(&mut TaskContext::from_waker(&waker))
    }

    fn wait_for(what: &str, f: impl Fn() -> bool) {
        let start = Instant::now();
        while !f() {
            assert!(start.elapsed() < Duration::from_secs(10), "{what}: never");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a reactor thread that never ends, real sleeps and (for forget) a deliberate leak: too slow and leak-checked under Miri"
    )]
    fn a_completion_resolves_with_what_it_keeps_after_the_work() {
        let _s = crate::deferred::tests::serial();
        let s = setup(false);
        let done = s.done.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            done.store(true, Ordering::Release);
        });
        let probe = block_on(s.future).expect("resolves");
        assert!(s.done.load(Ordering::Acquire), "resolved before the work");
        assert_eq!(
            s.dropped.load(Ordering::SeqCst),
            0,
            "handed back, not dropped"
        );
        drop(probe);
        assert_eq!(s.dropped.load(Ordering::SeqCst), 1);
        t.join().unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "a thread and a real sleep: too slow under Miri")]
    fn spin_first_resolves_short_work_in_the_first_poll() {
        let s = setup(false);
        let done = s.done.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1));
            done.store(true, Ordering::Release);
        });
        let mut f = s.future.spin_first(Duration::from_secs(30));
        let r = poll_here(&mut f);
        assert!(matches!(r, Poll::Ready(Ok(_))), "pending after the spin");
        t.join().unwrap();
    }

    #[test]
    fn finished_work_resolves_at_the_first_poll() {
        let s = setup(false);
        s.done.store(true, Ordering::Release);
        let mut f = s.future;
        let r = poll_here(&mut f);
        assert!(matches!(r, Poll::Ready(Ok(_))));
        // Polled again: an error, never a panic.
        let again = poll_here(&mut f);
        assert!(matches!(
            again,
            Poll::Ready(Err(Error::InvalidArgument { .. }))
        ));
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a reactor thread that never ends, real sleeps and (for forget) a deliberate leak: too slow and leak-checked under Miri"
    )]
    fn failed_work_resolves_with_its_error_and_releases_after() {
        let _s = crate::deferred::tests::serial();
        let s = setup(true);
        s.done.store(true, Ordering::Release);
        let r = block_on(s.future);
        assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
        wait_for("the release after a failure", || {
            s.dropped.load(Ordering::SeqCst) == 1
        });
        assert_eq!(s.early.load(Ordering::SeqCst), 0);
    }

    /// Polls once (so that the reactor watches it), then returns it.
    fn poll_once(mut f: Completion<Probe>) -> Completion<Probe> {
        assert!(poll_here(&mut f).is_pending());
        f
    }

    /// A [`setup`] of work not yet done, its future polled once or never.
    fn setup_polled(polled: bool) -> Setup {
        let s = setup(false);
        if polled {
            Setup {
                future: poll_once(s.future),
                ..s
            }
        } else {
            s
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a reactor thread that never ends, real sleeps and (for forget) a deliberate leak: too slow and leak-checked under Miri"
    )]
    fn dropping_a_pending_future_releases_only_after_the_work() {
        let _s = crate::deferred::tests::serial();
        for polled in [false, true] {
            let s = setup_polled(polled);
            let f = s.future;
            drop(f);
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(
                s.dropped.load(Ordering::SeqCst),
                0,
                "released under the work"
            );
            s.done.store(true, Ordering::Release);
            wait_for("the release after the work", || {
                s.dropped.load(Ordering::SeqCst) == 1
            });
            assert_eq!(s.early.load(Ordering::SeqCst), 0);
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a reactor thread that never ends, real sleeps and (for forget) a deliberate leak: too slow and leak-checked under Miri"
    )]
    fn a_forgotten_future_leaks_and_releases_nothing() {
        let _s = crate::deferred::tests::serial();
        for polled in [false, true] {
            let s = setup_polled(polled);
            let f = s.future;
            std::mem::forget(f);
            s.done.store(true, Ordering::Release);
            std::thread::sleep(Duration::from_millis(30));
            assert_eq!(s.dropped.load(Ordering::SeqCst), 0);
            assert_eq!(s.early.load(Ordering::SeqCst), 0);
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a reactor thread that never ends, real sleeps and (for forget) a deliberate leak: too slow and leak-checked under Miri"
    )]
    fn a_resolved_future_never_polled_releases_when_dropped() {
        let _s = crate::deferred::tests::serial();
        let s = setup(false);
        let f = poll_once(s.future);
        s.done.store(true, Ordering::Release);
        // Let the reactor finish it, then drop it unpolled.
        std::thread::sleep(Duration::from_millis(30));
        drop(f);
        wait_for("the release", || s.dropped.load(Ordering::SeqCst) == 1);
        assert_eq!(s.early.load(Ordering::SeqCst), 0);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a reactor thread that never ends, real sleeps and (for forget) a deliberate leak: too slow and leak-checked under Miri"
    )]
    fn many_futures_resolve_under_one_reactor() {
        let _s = crate::deferred::tests::serial();
        let all: Vec<Setup> = (0..200).map(|_| setup(false)).collect();
        let flags: Vec<Arc<AtomicBool>> = all.iter().map(|s| s.done.clone()).collect();
        let t = std::thread::spawn(move || {
            for f in flags {
                f.store(true, Ordering::Release);
                std::thread::yield_now();
            }
        });
        for s in all {
            let probe = block_on(s.future).expect("resolves");
            drop(probe);
            assert_eq!(s.early.load(Ordering::SeqCst), 0);
        }
        t.join().unwrap();
    }
}
