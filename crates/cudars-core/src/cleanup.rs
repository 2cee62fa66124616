//! Failures that cannot be returned: a `Drop` whose CUDA call fails (a destroy,
//! unload or release), `cuda.core`'s `CUDAWarning` counterpart.
//!
//! A destructor has no caller to return an error to, so each failure goes to the
//! cleanup hook: by default it is counted and the latest kept
//! ([`cleanup_failures`]); [`set_cleanup_hook`] installs a handler of your own
//! (to log it, with the `log` or `tracing` crate, or to fail a test). The crate
//! writes nothing to stdout or stderr. Failures are never dropped silently: every
//! one is counted, whether or not a hook is installed.
//!
//! Not reported here: a free of device memory that fails. It is not lost but
//! retried (soundness contract, rule 6), and [`deferred_frees`](crate::deferred_frees)
//! counts what waits. Nor is ending an abandoned graph capture, whose "failure"
//! (already ended, invalidated) is the expected outcome.
//!
//! A hook runs on the thread of the `Drop`, which may hold crate locks: it must
//! not call back into cudars-core. A hook that panics has its panic caught and
//! counted as that failure's only report.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use crate::error::Error;

type Hook = Arc<dyn Fn(&Error) + Send + Sync + 'static>;

static HOOK: RwLock<Option<Hook>> = RwLock::new(None);
static COUNT: AtomicU64 = AtomicU64::new(0);
static LAST: Mutex<Option<String>> = Mutex::new(None);

/// What [`cleanup_failures`] reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CleanupFailures {
    /// How many cleanup calls have failed in this process.
    pub count: u64,
    /// The latest failure: what was being released, then each cause (the CUDA
    /// error's name and description), joined by `": "`.
    pub last: Option<String>,
}

/// Installs `hook` to receive every failure of a cleanup call from now on (in
/// place of any hook before it); each failure is still counted.
///
/// ```
/// cudars_core::set_cleanup_hook(|e| eprintln!("cuda-rs cleanup failed: {e}"));
/// ```
pub fn set_cleanup_hook(hook: impl Fn(&Error) + Send + Sync + 'static) {
    *HOOK.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(hook));
}

/// Removes the hook [`set_cleanup_hook`] installed; failures are then only
/// counted.
pub fn clear_cleanup_hook() {
    *HOOK.write().unwrap_or_else(PoisonError::into_inner) = None;
}

/// How many cleanup calls have failed so far, and the latest.
pub fn cleanup_failures() -> CleanupFailures {
    CleanupFailures {
        count: COUNT.load(Ordering::Relaxed),
        last: LAST.lock().unwrap_or_else(PoisonError::into_inner).clone(),
    }
}

/// Reports `result` of a cleanup call when it failed.
pub(crate) fn report(result: crate::error::Result<()>) {
    let Err(e) = result else { return };
    COUNT.fetch_add(1, Ordering::Relaxed);
    *LAST.lock().unwrap_or_else(PoisonError::into_inner) = Some(chain(&e));
    let hook = HOOK.read().unwrap_or_else(PoisonError::into_inner).clone();
    if let Some(hook) = hook {
        // Nothing unwinds out of a `Drop` (soundness contract, rule 7).
        let _caught = catch_unwind(AssertUnwindSafe(|| hook(&e)));
    }
}

/// `e` and its causes, joined by `": "`.
fn chain(e: &Error) -> String {
    let mut out = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

/// Reports a failed driver call made by a `Drop`.
pub(crate) fn driver(rc: cudars_bindings::driver::CUresult, what: &'static str) {
    use crate::error::Check as _;
    report(rc.check(|| what));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_counted_and_reach_the_hook() {
        let seen = Arc::new(AtomicU64::new(0));
        let s = seen.clone();
        set_cleanup_hook(move |e| {
            assert!(chain(e).contains("CUDA_ERROR_INVALID_HANDLE"), "{e}");
            s.fetch_add(1, Ordering::Relaxed);
        });
        let before = cleanup_failures().count;
        driver(
            cudars_bindings::driver::CUDA_ERROR_INVALID_HANDLE,
            "destroying an event (cuEventDestroy)",
        );
        driver(cudars_bindings::driver::CUDA_SUCCESS, "not a failure");
        let after = cleanup_failures();
        assert!(after.count > before);
        let last = after.last.unwrap();
        assert!(last.contains("cuEventDestroy"), "{last}");
        assert!(last.contains("CUDA_ERROR_INVALID_HANDLE"), "{last}");
        assert_eq!(seen.load(Ordering::Relaxed), 1);
        // A panicking hook is caught.
        set_cleanup_hook(|_| panic!("a hook that panics"));
        driver(
            cudars_bindings::driver::CUDA_ERROR_INVALID_HANDLE,
            "destroying an event (cuEventDestroy)",
        );
        clear_cleanup_hook();
    }
}
