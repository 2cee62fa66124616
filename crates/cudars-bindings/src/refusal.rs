//! The refusal of driver and runtime calls on a marked thread: what cudars-core
//! sets on its driver callback trampolines, where CUDA forbids CUDA calls
//! ([`driver::refuse_calls_on_this_thread`](crate::driver::refuse_calls_on_this_thread)).
//! The APIs given a `refused_code` (the driver and the runtime) check it in
//! their entry functions, before the library is called.

use std::cell::Cell;

/// How many threads refuse driver and runtime calls
/// ([`set_refusing_calls`]): zero in the common case, so that the check every
/// call makes is one relaxed load that finds nothing.
static REFUSING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

thread_local! {
    /// Whether this thread refuses driver and runtime calls.
    static REFUSES: Cell<bool> = const { Cell::new(false) };
}

/// Sets whether this thread refuses driver and runtime calls (they return the
/// API's "not permitted" code without calling the library); returns what was
/// set before. A thread whose locals are gone refuses nothing.
pub(crate) fn set_refusing_calls(on: bool) -> bool {
    use std::sync::atomic::Ordering;
    // Counted before the thread is marked, uncounted after it is unmarked: a
    // marked thread's own check always sees a count (program order).
    if on {
        REFUSING.fetch_add(1, Ordering::Relaxed);
    }
    let prev = REFUSES.try_with(|c| c.replace(on));
    // The count follows the marks, one per marked thread: a thread marked
    // before gives back its count (marked again: the increment above; unmarked:
    // its mark's), and a mark that could not be set gives back the increment.
    let give_back = match prev {
        Ok(was) => was,
        Err(_) => on,
    };
    if give_back {
        REFUSING.fetch_sub(1, Ordering::Relaxed);
    }
    prev.unwrap_or(false)
}

/// Whether this thread refuses driver and runtime calls: one relaxed load
/// while no thread does.
#[inline(always)]
pub(crate) fn refusing_calls() -> bool {
    REFUSING.load(std::sync::atomic::Ordering::Relaxed) != 0 && refusing_here()
}

#[cold]
#[inline(never)]
fn refusing_here() -> bool {
    REFUSES.try_with(Cell::get).unwrap_or(false)
}
