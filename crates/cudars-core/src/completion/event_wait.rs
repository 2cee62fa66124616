//! [`EventWait`]: awaiting an [`Event`] by reference.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use super::{DEFAULT_SPIN, query_event, reactor};
use crate::error::Result;
use crate::event::Event;

/// A future that resolves when the work before an [`Event`]'s last record has
/// completed ([`Event::wait_async`], or `.await` on an `&Event`).
///
/// It borrows the event, so the reactor never holds it: the first poll asks the
/// driver (`cuEventQuery`) back to back for up to 20 µs, as a
/// [`Completion`](crate::Completion)'s does by default, each later poll once, and
/// while the work runs the reactor only wakes the
/// task again later, from 10 µs doubling to 1 ms (a one-shot timer, so a
/// forgotten future costs one wake). For waiting on a stream,
/// [`Stream::completion`](crate::Stream::completion) is cheaper: the reactor asks the driver itself.
#[must_use = "a future does nothing unless awaited"]
#[derive(Debug)]
pub struct EventWait<'a> {
    event: &'a Event,
    delay: Duration,
}

/// The first re-poll delay of an [`EventWait`].
const EVENT_FIRST_DELAY: Duration = Duration::from_micros(10);

impl Future for EventWait<'_> {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<()>> {
        let this = self.get_mut();
        let spin = if this.delay == EVENT_FIRST_DELAY {
            DEFAULT_SPIN
        } else {
            Duration::ZERO
        };
        let start = Instant::now();
        loop {
            if let Some(outcome) = query_event(this.event, "awaiting an event") {
                return Poll::Ready(outcome);
            }
            if start.elapsed() >= spin {
                break;
            }
            std::hint::spin_loop();
        }
        let reactor = match reactor::global() {
            Ok(r) => r,
            Err(e) => return Poll::Ready(Err(e)),
        };
        let delay = this.delay;
        this.delay = (delay * 2).min(reactor::SLEEP_MAX);
        reactor.tick(reactor::Tick {
            at: Instant::now() + delay,
            waker: cx.waker().clone(),
        });
        Poll::Pending
    }
}

impl Event {
    /// A future that resolves when the work before the event's last record has
    /// completed, with the driver's error if it failed (the asynchronous
    /// [`sync`](Self::sync)). `(&event).await` does the same.
    ///
    /// An event recorded again meanwhile is waited for at its newest record, as
    /// with `sync`.
    ///
    /// # Errors
    /// Through the future: the driver's error.
    pub fn wait_async(&self) -> EventWait<'_> {
        EventWait {
            event: self,
            delay: EVENT_FIRST_DELAY,
        }
    }
}

impl<'a> IntoFuture for &'a Event {
    type Output = Result<()>;
    type IntoFuture = EventWait<'a>;

    fn into_future(self) -> EventWait<'a> {
        self.wait_async()
    }
}
