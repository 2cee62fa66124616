//! Panics caught where nothing may unwind: the slot a stream's host functions
//! record their panics in, and the drop that lets no destructor's panic out (used
//! by host functions, deferred frees and exported DLPack tensors).

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::PoisonError;

use crate::error::CallbackPanic;
use crate::sync::Mutex;

/// Where a stream's host functions record their panics; shared by the stream's
/// clones and by every host function queued on it.
#[derive(Debug, Default)]
pub(crate) struct PanicSlot(Mutex<Option<CallbackPanic>>);

impl PanicSlot {
    fn record(&self, message: String) {
        let mut g = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match &mut *g {
            Some(p) => p.count += 1,
            None => *g = Some(CallbackPanic { message, count: 1 }),
        }
    }

    pub(crate) fn take(&self) -> Option<CallbackPanic> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// The message of a panic payload.
fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic payload that is not a string)".to_owned()
    }
}

/// Runs `f`, recording a panic in `slot`; nothing unwinds out of it (a payload
/// whose own drop panics is leaked).
pub(crate) fn run_caught(f: impl FnOnce(), slot: &PanicSlot) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        slot.record(panic_message(&*payload));
        drop_caught(payload);
    }
}

/// Drops `value` without letting a panic of its destructor unwind. The panic's
/// payload is dropped under `catch_unwind` too; a payload of *that* panic is
/// forgotten (dropping it could panic again, without end): the one thing leaked,
/// and only when two destructors in a row panic.
pub(crate) fn drop_caught<T>(value: T) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(value))) {
        if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            std::mem::forget(again);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_are_caught_counted_and_taken() {
        let slot = PanicSlot::default();
        run_caught(|| {}, &slot);
        assert_eq!(slot.take(), None);
        run_caught(|| panic!("first"), &slot);
        run_caught(|| panic!("second {}", 2), &slot);
        let p = slot.take().expect("recorded");
        assert_eq!(p.message, "first");
        assert_eq!(p.count, 2);
        assert_eq!(
            p.to_string(),
            "a host callback panicked: first (2 callbacks panicked; this was the first)"
        );
        assert_eq!(slot.take(), None);
        run_caught(|| std::panic::panic_any(7u32), &slot);
        assert_eq!(
            slot.take().map(|p| p.message),
            Some("(a panic payload that is not a string)".to_owned())
        );
    }
}

/// loom model checks (`RUSTFLAGS="--cfg loom" cargo test -p cudars-core --lib
/// --release loom`): the slot as driver threads and `Stream::sync` race on it.
#[cfg(test)]
#[cfg(loom)]
mod loom_tests {
    use super::*;
    use std::sync::Arc;

    /// Two driver threads record panics (one through the trampolines' catching
    /// path) while the stream's thread takes the record: every panic is reported
    /// exactly once, in one record or the next, and a record's message is the
    /// first panic it counts.
    #[test]
    fn loom_panic_slot_reports_every_panic_once() {
        loom::model(|| {
            let slot = Arc::new(PanicSlot::default());
            let a = {
                let slot = slot.clone();
                loom::thread::spawn(move || slot.record("a".to_owned()))
            };
            let b = {
                let slot = slot.clone();
                loom::thread::spawn(move || {
                    run_caught(|| std::panic::resume_unwind(Box::new("b")), &slot);
                })
            };
            let first = slot.take();
            a.join().unwrap();
            b.join().unwrap();
            let rest = slot.take();
            assert_eq!(slot.take(), None);
            let count = |p: &Option<CallbackPanic>| p.as_ref().map_or(0, |p| p.count);
            assert_eq!(count(&first) + count(&rest), 2);
            for p in [first, rest].into_iter().flatten() {
                assert!(p.message == "a" || p.message == "b", "{p:?}");
            }
        });
    }
}
