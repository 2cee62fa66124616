//! Idle events for completion points, so that awaiting work does not create and
//! destroy an event each time (`cuEventCreate` and `cuEventDestroy` cost about
//! as much as the record and the query together).
//!
//! Architecture Invariant: an event enters the pool only after a query said the
//! work before its last record completed (`EventSource` in `mod.rs`), so a
//! record on a pooled event never overtakes work that still waits for it. Only
//! events of primary contexts are pooled (a primary context is retained once for
//! the process): a pooled event would otherwise keep a context the user created,
//! and all its memory, alive. The pool holds at most [`MAX_IDLE`] events; more
//! are destroyed.

use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::context::Context;
use crate::error::Result;
use crate::event::{Event, EventOptions};

/// The most idle events kept.
const MAX_IDLE: usize = 1024;

static IDLE: Mutex<Vec<Event>> = Mutex::new(Vec::new());

fn lock() -> MutexGuard<'static, Vec<Event>> {
    IDLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether events of `ctx` are pooled.
fn pooled(ctx: &Context) -> bool {
    ctx.is_primary() && !ctx.is_green()
}

/// An event of `ctx` (timing off) for a completion point: an idle one, or a new one.
///
/// # Errors
/// As [`Event::in_context`].
pub(crate) fn take(ctx: &Context) -> Result<Event> {
    if pooled(ctx) {
        let mut g = lock();
        if let Some(i) = g.iter().rposition(|e| e.ctx == *ctx) {
            return Ok(g.swap_remove(i));
        }
    }
    Event::in_context(ctx, EventOptions::default())
}

/// Gives back `event`, whose work has completed: kept for reuse, or destroyed.
pub(crate) fn put(event: Event) {
    if !pooled(&event.ctx) {
        return;
    }
    let mut g = lock();
    if g.len() < MAX_IDLE {
        g.push(event);
    }
}

/// Destroys every idle event; returns how many.
pub(crate) fn trim() -> usize {
    let idle = std::mem::take(&mut *lock());
    idle.len()
}
