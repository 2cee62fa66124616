//! [`release_or_defer`]: the library kit's one way for a handle's `Drop` to
//! destroy it (soundness contract, rule 6).

use crate::error::Report;
#[cfg(doc)]
use crate::stream::Stream;

/// The destroy of a library handle, from its `Drop`: run now on an ordinary
/// thread, handed to the deferred queue on a driver callback thread
/// (soundness contract, rule 6). Every `Drop` of the library crates that calls
/// the library or CUDA goes through it (a tidy test checks).
///
/// A library handle is `Send + 'static`, so a safe closure given to
/// [`Stream::launch_host_func`] (or a graph host node) may own it and drop it
/// on the driver's callback thread, where CUDA forbids CUDA calls (a stream
/// synchronisation there hangs, or fails and leaks). There, nothing is called:
/// `destroy` joins the queue of [`deferred_frees`](crate::deferred_frees) and
/// runs later on an ordinary thread (the crate's next allocation, free or
/// synchronisation, [`drain_deferred_frees`](crate::drain_deferred_frees), or
/// the queue's background thread). On an ordinary thread it runs at once.
///
/// `destroy` gets `handle` and returns:
/// - `Ok(())` when the handle is gone;
/// - a cudars-core error that is a refusal for now (a wait or call refused
///   while a stream capture is under way: `CUDA_ERROR_STREAM_CAPTURE_*`,
///   `CUDA_ERROR_NOT_PERMITTED`) when it released nothing and must be tried
///   again: it is deferred, and retried until it is not refused;
/// - any other error when it gave up for good (it leaked what queued work may
///   still use, say): nothing more is tried.
///
/// What must go after the handle (a workspace its calls used, the file a
/// registration names) moves into `destroy` and is dropped there, after the
/// destroy, so that the order holds when the destroy is deferred too.
///
/// ```
/// # use cudars_core::{ContextScope, Stream};
/// # unsafe fn library_destroy(_: *mut std::ffi::c_void) {}
/// struct Handle {
///     raw: *mut std::ffi::c_void,
///     stream: Stream,
/// }
///
/// impl Drop for Handle {
///     fn drop(&mut self) {
///         let stream = self.stream.clone();
///         // SAFETY: `raw` is the library's handle, owned by `self` and
///         // destroyed only here; the library lets any thread destroy it.
///         unsafe {
///             cudars_core::release_or_defer("destroying a handle", self.raw, move |raw| {
///                 stream.sync()?; // refused during a capture: tried again later
///                 let _scope = ContextScope::for_stream(&stream);
///                 // SAFETY: a live handle, not used after this.
///                 unsafe { library_destroy(raw) };
///                 Ok(())
///             })
///         }
///     }
/// }
/// ```
///
/// # Safety
/// `handle` is owned by the caller, which gives up its release to `destroy`
/// (and does not release it, or use it, afterwards); any thread may release
/// it (`H` need not be `Send`: the handle is moved to the thread that runs
/// `destroy`, which releases it).
pub unsafe fn release_or_defer<H: Copy + 'static>(
    what: &'static str,
    handle: H,
    mut destroy: impl FnMut(H) -> crate::error::Result<()> + Send + 'static,
) {
    if crate::deferred::release_gate() {
        // SAFETY: the caller's contract, handed over whole.
        unsafe { crate::deferred::defer_destroy(what, handle, None, destroy) };
        return;
    }
    match destroy(handle) {
        Err(e) if crate::deferred::refused_for_now(&e) => {
            let first = Report::new(&e).to_string();
            // SAFETY: as above; the refused call released nothing.
            unsafe { crate::deferred::defer_destroy(what, handle, Some(first), destroy) };
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::release_or_defer;
    use crate::deferred::tests::{serial, settle};
    use crate::deferred::{CallbackScope, deferred_frees, must_defer};
    use crate::error::Check as _;
    use cudars_bindings::driver as sys;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A destroy that counts its tries, checks it runs on an ordinary
    /// thread, and answers `answers` in turn (then `Ok`).
    fn destroy(
        tries: Arc<AtomicUsize>,
        answers: Vec<sys::CUresult>,
    ) -> impl FnMut(u32) -> crate::error::Result<()> + Send + 'static {
        let mut answers = answers.into_iter();
        move |h| {
            assert_eq!(h, 7, "the handle given");
            assert!(!must_defer(), "a destroy ran on a callback thread");
            tries.fetch_add(1, Ordering::SeqCst);
            match answers.next() {
                Some(code) => code.check(|| "destroying a test handle"),
                None => Ok(()),
            }
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "the queue starts its reaper thread, which never ends and which Miri runs too slowly for the retry loops"
    )]
    fn an_ordinary_thread_destroys_at_once() {
        let _s = serial();
        settle();
        let tries = Arc::new(AtomicUsize::new(0));
        // SAFETY: a test handle (a number): nothing to release.
        unsafe { release_or_defer("a test handle", 7u32, destroy(tries.clone(), vec![])) };
        assert_eq!(tries.load(Ordering::SeqCst), 1);
        assert_eq!(deferred_frees(), 0);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "the queue starts its reaper thread, which never ends and which Miri runs too slowly for the retry loops"
    )]
    fn a_callback_thread_defers_to_an_ordinary_thread() {
        let _s = serial();
        settle();
        let tries = Arc::new(AtomicUsize::new(0));
        {
            let _cb = CallbackScope::enter();
            // SAFETY: as above.
            // Not run here: the destroy asserts that it runs where
            // `must_defer` is false, which it is not on this thread now.
            unsafe { release_or_defer("a test handle", 7u32, destroy(tries.clone(), vec![])) };
            // Queued; the queue's reaper thread, an ordinary thread, may
            // already have run it, and at most once.
            assert!(tries.load(Ordering::SeqCst) <= 1);
            assert!(deferred_frees() <= 1);
        }
        settle();
        assert_eq!(tries.load(Ordering::SeqCst), 1, "destroyed once");
        assert_eq!(deferred_frees(), 0);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "the queue starts its reaper thread, which never ends and which Miri runs too slowly for the retry loops"
    )]
    fn a_destroy_refused_for_now_is_retried_and_another_failure_is_final() {
        let _s = serial();
        settle();
        // Refused twice during a capture, then done: three tries.
        let tries = Arc::new(AtomicUsize::new(0));
        let refused = vec![
            sys::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
            sys::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
        ];
        // SAFETY: as above.
        unsafe { release_or_defer("a test handle", 7u32, destroy(tries.clone(), refused)) };
        assert!(tries.load(Ordering::SeqCst) >= 1);
        settle();
        assert_eq!(tries.load(Ordering::SeqCst), 3);
        // A failure of the destroy itself: given up, not retried.
        let tries = Arc::new(AtomicUsize::new(0));
        let failed = vec![sys::CUDA_ERROR_ILLEGAL_ADDRESS];
        // SAFETY: as above.
        unsafe { release_or_defer("a test handle", 7u32, destroy(tries.clone(), failed)) };
        assert_eq!(tries.load(Ordering::SeqCst), 1);
        assert_eq!(deferred_frees(), 0);
        // The same on the queue: a deferred destroy that fails for good
        // leaves it.
        let tries = Arc::new(AtomicUsize::new(0));
        {
            let _cb = CallbackScope::enter();
            let failed = vec![sys::CUDA_ERROR_ILLEGAL_ADDRESS];
            // SAFETY: as above.
            unsafe { release_or_defer("a test handle", 7u32, destroy(tries.clone(), failed)) };
        }
        settle();
        assert_eq!(tries.load(Ordering::SeqCst), 1);
        assert_eq!(deferred_frees(), 0);
    }
}
