//! The locks of the host-side state that threads race on, and the thread identity
//! they compare: std's, or [loom](https://docs.rs/loom)'s in the crate's tests under
//! `cfg(loom)` (loom is a dev-dependency for that cfg), so that the loom tests
//! (`RUSTFLAGS="--cfg loom" cargo test -p cudars-core --lib --release loom`, see
//! docs/architecture.md) explore every interleaving of the modelled types: a host
//! the host functions' `PanicSlot`, the green-context lock (`GreenLock`) and the in-memory
//! program cache's index. Types that use these behave as with std's in every other
//! build.
//!
//! loom's types work only inside `loom::model`: under `cfg(loom)` only the tests
//! named `loom` run.

#[cfg(all(loom, test, feature = "cache"))]
pub(crate) use loom::sync::MutexGuard;
#[cfg(all(loom, test))]
pub(crate) use loom::sync::{Condvar, Mutex};
#[cfg(not(all(loom, test)))]
pub(crate) use std::sync::{Condvar, Mutex};
// The program cache's lock guard (`cache` feature).
#[cfg(all(not(all(loom, test)), feature = "cache"))]
pub(crate) use std::sync::MutexGuard;

/// The calling thread's identity (loom runs its threads on one OS thread, so it
/// has its own).
pub(crate) mod thread {
    #[cfg(all(loom, test))]
    pub(crate) use loom::thread::{ThreadId, current};
    #[cfg(not(all(loom, test)))]
    pub(crate) use std::thread::{ThreadId, current};
}
