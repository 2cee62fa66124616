//! The completion reactor: one thread for the process that watches the pending
//! completions of every future the crate hands out, and wakes their tasks.
//!
//! Architecture Invariant: the reactor thread is parked on a condition variable
//! (no timeout, no CPU) whenever nothing is pending. While something is, it
//! queries each pending source (`cuEventQuery` for the real ones: non-blocking,
//! and it reports a failed context or a destroyed handle as an error, so that no
//! wait can hang) in a sweep; after anything changes (a new registration, a
//! completion) it sweeps back to back, yielding between sweeps, for [`SPIN`], then
//! sleeps between sweeps for an eighth of the time since the change, at least
//! [`SLEEP_MIN`] and at most [`SLEEP_MAX`] (so a completion is noticed at most
//! about 12% late, or 1 ms), on Linux with the thread's timer slack at 1 µs (the
//! default 50 µs would stretch every short sleep past the completion it waits
//! for). Sources of one queue complete in order, so a sweep queries only the
//! oldest pending one of each queue, and the futures ask [`queue_busy`] before
//! spinning on a source of a queue the reactor already watches. Nothing the reactor runs blocks: what a future owned is released
//! through the deferred queue (`deferred.rs`), not on this thread, and no drop
//! of a future waits. The choice of mechanism, and its numbers, are in
//! `docs/architecture.md` ("Awaiting GPU work").

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::Waker;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// How long the reactor sweeps back to back after something changed: long
/// enough to catch short GPU work (a launch and its completion take a few
/// microseconds) without sleeping, short enough to cost little per event.
pub(crate) const SPIN: Duration = Duration::from_micros(50);
/// The shortest sleep between sweeps after the spin.
pub(crate) const SLEEP_MIN: Duration = Duration::from_micros(10);
/// Each sleep between sweeps is the time since the last change divided by this:
/// work that completes during a sleep is noticed at most `1 / SLEEP_FRACTION`
/// of its duration late.
pub(crate) const SLEEP_FRACTION: u32 = 8;
/// The longest sleep between sweeps: the most a completion of long work is
/// noticed late.
pub(crate) const SLEEP_MAX: Duration = Duration::from_millis(1);

/// Something the reactor can ask whether it has completed: a recorded event, or
/// in the CPU tests a fake. Queried only on the reactor thread (or by the future
/// that owns it before it is handed over).
pub(crate) trait Source: Send + 'static {
    /// `None` while pending; the outcome once complete (an error: the work failed,
    /// or the source can no longer be asked, which also means nothing of it runs).
    fn query(&mut self) -> Option<Result<()>>;
}

/// The outcome of a source, delivered to whoever waits for it.
pub(crate) trait Finish: Send + Sync + 'static {
    /// Called once, on the reactor thread, with the source's outcome.
    fn finish(&self, outcome: Result<()>);
}

/// A one-shot timer: the reactor wakes `waker` once `at` has passed.
pub(crate) struct Tick {
    pub(crate) at: Instant,
    pub(crate) waker: Waker,
}

/// A registered source and who waits for it.
struct Entry {
    source: Box<dyn Source>,
    /// The queue the source was recorded on (sources of one queue complete in
    /// order), or `None`.
    queue: Option<u64>,
    /// Taken when the source was recorded: the order within a queue.
    seq: u64,
    finish: Arc<dyn Finish>,
}

/// Registered sources not yet finished, by queue (hashed into a few slots: a
/// collision only makes a future skip its first-poll spin).
static BUSY: [AtomicU32; 64] = [const { AtomicU32::new(0) }; 64];

fn busy_slot(queue: u64) -> &'static AtomicU32 {
    &BUSY[(queue % BUSY.len() as u64) as usize]
}

/// Whether the reactor watches a source of `queue` (or of a queue that shares
/// its slot): a newer source of the queue cannot complete before it, so
/// spinning on one is wasted (the reactor finishes both in one sweep).
pub(crate) fn queue_busy(queue: u64) -> bool {
    busy_slot(queue).load(Ordering::Relaxed) > 0
}

/// The order sources were recorded in, process-wide.
static SEQ: AtomicU64 = AtomicU64::new(0);

/// A sequence number to take right after recording a source on a queue.
pub(crate) fn next_seq() -> u64 {
    SEQ.fetch_add(1, Ordering::Relaxed)
}

#[derive(Default)]
struct Inbox {
    new: Vec<Entry>,
    ticks: Vec<Tick>,
    shutdown: bool,
}

struct Shared {
    inbox: Mutex<Inbox>,
    wake: Condvar,
}

/// A reactor: its thread runs while the `Reactor` (or, for the process-wide
/// one, the process) lives.
pub(crate) struct Reactor {
    shared: Arc<Shared>,
}

impl Reactor {
    /// Starts a reactor thread.
    ///
    /// # Errors
    /// The OS refused the thread.
    pub(crate) fn start(name: &str) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            inbox: Mutex::new(Inbox::default()),
            wake: Condvar::new(),
        });
        let s = shared.clone();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || run(&s))?;
        Ok(Self { shared })
    }

    fn lock(&self) -> MutexGuard<'_, Inbox> {
        self.shared
            .inbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands `source` over: `finish` is called with its outcome once it completes.
    pub(crate) fn register(
        &self,
        source: Box<dyn Source>,
        queue: Option<u64>,
        seq: u64,
        finish: Arc<dyn Finish>,
    ) {
        if let Some(q) = queue {
            busy_slot(q).fetch_add(1, Ordering::Relaxed);
        }
        self.lock().new.push(Entry {
            source,
            queue,
            seq,
            finish,
        });
        self.shared.wake.notify_one();
    }

    /// Wakes `tick.waker` once, at `tick.at` or soon after.
    pub(crate) fn tick(&self, tick: Tick) {
        self.lock().ticks.push(tick);
        self.shared.wake.notify_one();
    }
}

impl Drop for Reactor {
    /// Stops the thread after its pending sources complete (the process-wide
    /// reactor is never dropped; test reactors are).
    fn drop(&mut self) {
        self.lock().shutdown = true;
        self.shared.wake.notify_one();
    }
}

/// The process-wide reactor, started on first use.
///
/// # Errors
/// [`Error::Unsupported`] when the OS refused the thread (tried again next time).
pub(crate) fn global() -> Result<&'static Reactor> {
    static GLOBAL: Mutex<Option<&'static Reactor>> = Mutex::new(None);
    let mut g = GLOBAL.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(r) = *g {
        return Ok(r);
    }
    match Reactor::start("cudars-completion") {
        Ok(r) => {
            let r: &'static Reactor = Box::leak(Box::new(r));
            *g = Some(r);
            Ok(r)
        }
        Err(e) => Err(Error::unsupported(
            "starting the thread that watches GPU work for futures",
            format!("the OS refused the thread: {e}"),
        )),
    }
}

/// Makes the calling thread's timed sleeps end within a microsecond of their
/// deadline (Linux's default timer slack, 50 µs, would add that much to every
/// sleep of the reactor, whose sleeps are tens of microseconds after a change).
fn tighten_timer_slack() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: PR_SET_TIMERSLACK takes one unsigned long (nanoseconds) and
        // changes only the calling thread's timer slack; it reads no memory.
        let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong) };
    }
}

/// How long to sleep between sweeps, `since` the last change.
fn backoff(since: Duration) -> Duration {
    (since / SLEEP_FRACTION).clamp(SLEEP_MIN, SLEEP_MAX)
}

/// The reactor thread.
fn run(shared: &Shared) {
    // The reactor never makes a call a capture forbids, but its queries must not
    // invalidate another thread's global-mode capture either: relaxed for good.
    let relaxed = crate::deferred::RelaxedCapture::enter();
    std::mem::forget(relaxed);
    tighten_timer_slack();
    let mut entries: Vec<Entry> = Vec::new();
    let mut ticks: Vec<Tick> = Vec::new();
    let mut changed = Instant::now();
    loop {
        // Take what arrived; park while nothing at all is pending.
        {
            let mut g = shared.inbox.lock().unwrap_or_else(PoisonError::into_inner);
            while g.new.is_empty() && g.ticks.is_empty() && entries.is_empty() && ticks.is_empty() {
                if g.shutdown {
                    return;
                }
                g = shared.wake.wait(g).unwrap_or_else(PoisonError::into_inner);
            }
            if !g.new.is_empty() {
                for e in g.new.drain(..) {
                    // Kept in recording order (new ones are mostly the newest).
                    let at = entries.partition_point(|x| x.seq <= e.seq);
                    entries.insert(at, e);
                }
                changed = Instant::now();
            }
            ticks.append(&mut g.ticks);
        }
        if sweep(&mut entries) {
            changed = Instant::now();
        }
        let now = Instant::now();
        // Wake the timers that are due (outside the lock: a waker runs
        // the executor's code).
        let mut i = 0;
        while i < ticks.len() {
            if ticks[i].at <= now {
                ticks.swap_remove(i).waker.wake();
            } else {
                i += 1;
            }
        }
        if entries.is_empty() && ticks.is_empty() {
            continue;
        }
        let next_tick = ticks.iter().map(|t| t.at).min();
        let since = now.saturating_duration_since(changed);
        let timeout = if entries.is_empty() {
            // Only timers: sleep until the first is due.
            next_tick.map_or(SLEEP_MAX, |t| t.saturating_duration_since(now))
        } else if since < SPIN {
            std::thread::yield_now();
            continue;
        } else {
            let d = backoff(since);
            next_tick.map_or(d, |t| d.min(t.saturating_duration_since(now)))
        };
        let g = shared.inbox.lock().unwrap_or_else(PoisonError::into_inner);
        if g.new.is_empty() && g.ticks.is_empty() && !timeout.is_zero() {
            let _ = shared.wake.wait_timeout(g, timeout);
        }
    }
}

/// Queries the pending entries (the oldest of each queue only: the rest of a
/// queue cannot have completed before it), finishes those that completed, and
/// says whether any did.
fn sweep(entries: &mut Vec<Entry>) -> bool {
    let mut blocked: Vec<u64> = Vec::new();
    let mut done = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        let e = &mut entries[i];
        if e.queue.is_some_and(|q| blocked.contains(&q)) {
            i += 1;
            continue;
        }
        match e.source.query() {
            Some(outcome) => done.push((entries.remove(i), outcome)),
            None => {
                if let Some(q) = e.queue {
                    blocked.push(q);
                }
                i += 1;
            }
        }
    }
    let any = !done.is_empty();
    for (e, outcome) in done {
        let Entry {
            source,
            finish,
            queue,
            ..
        } = e;
        if let Some(q) = queue {
            busy_slot(q).fetch_sub(1, Ordering::Relaxed);
        }
        // The source (an event) goes first: what `finish` releases may be the
        // last owner of its context.
        drop(source);
        finish.finish(outcome);
    }
    any
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::mpsc;

    /// A source that completes when its flag is set, with the outcome given.
    pub(crate) struct Fake {
        pub(crate) done: Arc<AtomicBool>,
        pub(crate) fail: bool,
        pub(crate) queries: Arc<AtomicU64>,
    }

    impl Source for Fake {
        fn query(&mut self) -> Option<Result<()>> {
            self.queries.fetch_add(1, Ordering::SeqCst);
            if !self.done.load(Ordering::Acquire) {
                return None;
            }
            Some(if self.fail {
                Err(Error::invalid("the fake work", "failed"))
            } else {
                Ok(())
            })
        }
    }

    struct Report(Mutex<mpsc::Sender<(usize, bool, Instant)>>, usize);

    impl Finish for Report {
        fn finish(&self, outcome: Result<()>) {
            let tx = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            let _ = tx.send((self.1, outcome.is_ok(), Instant::now()));
        }
    }

    fn fake(fail: bool) -> (Box<Fake>, Arc<AtomicBool>, Arc<AtomicU64>) {
        let done = Arc::new(AtomicBool::new(false));
        let queries = Arc::new(AtomicU64::new(0));
        (
            Box::new(Fake {
                done: done.clone(),
                fail,
                queries: queries.clone(),
            }),
            done,
            queries,
        )
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a reactor thread that never ends, real sleeps and (for forget) a deliberate leak: too slow and leak-checked under Miri"
    )]
    fn each_source_finishes_once_with_its_outcome() {
        let r = Reactor::start("test-reactor").unwrap();
        let (tx, rx) = mpsc::channel();
        let mut flags = Vec::new();
        for i in 0..8 {
            let (src, done, _) = fake(i % 3 == 0);
            flags.push(done);
            r.register(
                src,
                None,
                next_seq(),
                Arc::new(Report(Mutex::new(tx.clone()), i)),
            );
        }
        // Nothing finishes before its work does.
        assert!(rx.recv_timeout(Duration::from_millis(20)).is_err());
        for f in flags.iter().rev() {
            f.store(true, Ordering::Release);
        }
        let mut got: Vec<(usize, bool)> = (0..8)
            .map(|_| {
                let (i, ok, _) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
                (i, ok)
            })
            .collect();
        got.sort_unstable();
        let want: Vec<(usize, bool)> = (0..8).map(|i| (i, i % 3 != 0)).collect();
        assert_eq!(got, want);
        // Exactly once each.
        assert!(rx.recv_timeout(Duration::from_millis(20)).is_err());
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a reactor thread that never ends, real sleeps and (for forget) a deliberate leak: too slow and leak-checked under Miri"
    )]
    fn only_the_oldest_source_of_a_queue_is_queried() {
        let r = Reactor::start("test-reactor").unwrap();
        let (tx, rx) = mpsc::channel();
        let (first, first_done, first_q) = fake(false);
        let (second, second_done, second_q) = fake(false);
        let (s1, s2) = (next_seq(), next_seq());
        // Registered out of order: the reactor orders them by recording.
        r.register(
            second,
            Some(7),
            s2,
            Arc::new(Report(Mutex::new(tx.clone()), 2)),
        );
        r.register(
            first,
            Some(7),
            s1,
            Arc::new(Report(Mutex::new(tx.clone()), 1)),
        );
        // The reactor may have taken the second alone, before the first came
        // (and asked it then); once both are in, only the first is asked. The
        // test follows the reactor's own progress (the first's queries), not
        // the clock, so a slow or loaded host cannot make it fail.
        let queried_at_least = |n: u64| {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while first_q.load(Ordering::SeqCst) < n {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the first source was not asked {n} times"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        queried_at_least(1);
        let before = second_q.load(Ordering::SeqCst);
        // Two more rounds of the reactor after the first was seen.
        let seen = first_q.load(Ordering::SeqCst);
        queried_at_least(seen + 2);
        assert_eq!(
            second_q.load(Ordering::SeqCst),
            before,
            "queried behind a pending source"
        );
        first_done.store(true, Ordering::Release);
        second_done.store(true, Ordering::Release);
        let a = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let b = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!((a.0, b.0), (1, 2));
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a reactor thread that never ends, real sleeps and (for forget) a deliberate leak: too slow and leak-checked under Miri"
    )]
    fn an_idle_reactor_parks_and_queries_nothing() {
        let r = Reactor::start("test-reactor").unwrap();
        let (tx, rx) = mpsc::channel();
        let (src, done, queries) = fake(false);
        r.register(src, None, next_seq(), Arc::new(Report(Mutex::new(tx), 0)));
        done.store(true, Ordering::Release);
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let after = queries.load(Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(30));
        // Finished sources are never asked again; with nothing pending the
        // thread sleeps on its condition variable.
        assert_eq!(queries.load(Ordering::SeqCst), after);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a reactor thread that never ends, real sleeps and (for forget) a deliberate leak: too slow and leak-checked under Miri"
    )]
    fn a_pending_source_is_asked_less_often_as_it_waits() {
        let r = Reactor::start("test-reactor").unwrap();
        let (tx, rx) = mpsc::channel();
        let (src, done, queries) = fake(false);
        r.register(src, None, next_seq(), Arc::new(Report(Mutex::new(tx), 0)));
        std::thread::sleep(Duration::from_millis(100));
        let early = queries.load(Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(100));
        let late = queries.load(Ordering::SeqCst) - early;
        // After the spin, about one query per SLEEP_MAX: 100 ms of waiting costs
        // about 100 queries (137 seen on a 16-core host, where sleeps end early),
        // where a spinning reactor would ask tens of thousands of times.
        assert!(late <= 400, "{late} queries in 100 ms");
        done.store(true, Ordering::Release);
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
    }

    #[test]
    fn sleeps_are_an_eighth_of_the_wait_within_bounds() {
        assert_eq!(backoff(Duration::ZERO), SLEEP_MIN);
        assert_eq!(
            backoff(Duration::from_micros(800)),
            Duration::from_micros(100)
        );
        assert_eq!(backoff(Duration::from_secs(1)), SLEEP_MAX);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a reactor thread that never ends, real sleeps and (for forget) a deliberate leak: too slow and leak-checked under Miri"
    )]
    fn a_queue_is_busy_while_the_reactor_watches_one_of_its_sources() {
        let r = Reactor::start("test-reactor").unwrap();
        let (tx, rx) = mpsc::channel();
        let queue = 0x5eed_0000_0000_0031;
        let (src, done, _) = fake(false);
        r.register(
            src,
            Some(queue),
            next_seq(),
            Arc::new(Report(Mutex::new(tx), 0)),
        );
        assert!(queue_busy(queue));
        done.store(true, Ordering::Release);
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let start = Instant::now();
        // Counted down just after `finish` returns.
        while queue_busy(queue) {
            assert!(start.elapsed() < Duration::from_secs(10), "busy for good");
            std::thread::yield_now();
        }
    }

    /// A waker that counts its wakes.
    struct CountWake(AtomicU64);
    impl std::task::Wake for CountWake {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a reactor thread that never ends, real sleeps and (for forget) a deliberate leak: too slow and leak-checked under Miri"
    )]
    fn ticks_wake_once_when_due() {
        let r = Reactor::start("test-reactor").unwrap();
        let w = Arc::new(CountWake(AtomicU64::new(0)));
        let start = Instant::now();
        r.tick(Tick {
            at: start + Duration::from_millis(30),
            waker: Waker::from(w.clone()),
        });
        while w.0.load(Ordering::SeqCst) == 0 {
            assert!(start.elapsed() < Duration::from_secs(10), "never woken");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(start.elapsed() >= Duration::from_millis(30), "woken early");
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(w.0.load(Ordering::SeqCst), 1);
    }

    /// Measures the wake latency of the mechanism on the CPU: a fake source
    /// completes at a known instant after waiting `wait`; the time until its
    /// `finish` runs is what the reactor adds. Run by hand:
    /// `cargo test -p cudars-core --lib --release reactor_wake_latency -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement, printed; run by hand"]
    fn reactor_wake_latency() {
        let r = Reactor::start("test-reactor").unwrap();
        for wait in [0u64, 10, 100, 1_000, 10_000, 100_000] {
            let mut lat = Vec::new();
            for _ in 0..200 {
                let (tx, rx) = mpsc::channel();
                let (src, done, _) = fake(false);
                r.register(src, None, next_seq(), Arc::new(Report(Mutex::new(tx), 0)));
                let t = Instant::now() + Duration::from_micros(wait);
                while Instant::now() < t {
                    std::hint::spin_loop();
                }
                let set = Instant::now();
                done.store(true, Ordering::Release);
                let (_, _, at) = rx.recv().unwrap();
                lat.push(at.saturating_duration_since(set).as_secs_f64() * 1e6);
            }
            lat.sort_by(f64::total_cmp);
            println!(
                "wait {wait:>6} us: wake latency p50 {:.1} us, p90 {:.1} us, max {:.1} us",
                lat[lat.len() / 2],
                lat[lat.len() * 9 / 10],
                lat[lat.len() - 1]
            );
        }
    }
}
