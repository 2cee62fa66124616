//! Host functions queued on a stream (`cuLaunchHostFunc`): Rust closures that run
//! on a driver thread, in stream order, with their panics caught and recorded.

use std::ffi::c_void;
use std::sync::Arc;

use cudars_bindings::driver as sys;

use crate::error::{CallbackPanic, Check as _, Error, Result};
use crate::panics::{PanicSlot, drop_caught, run_caught};
use crate::stream::Stream;
use crate::stream_capture::CaptureStatus;

/// A host function that runs once: the driver calls [`once_trampoline`] once with
/// the box, which frees it.
struct Once {
    f: Box<dyn FnOnce() + Send>,
    panics: Arc<PanicSlot>,
}

// Trampoline rule (every `extern "C"` callback of the crate): the thread is
// marked as a driver callback thread (`CallbackScope`) for the whole call, so
// that a release reached from it is deferred instead of calling CUDA; the
// closure runs under `catch_unwind`, and everything dropped here (the closure,
// its captures, a panic's payload) is dropped through `drop_caught`, so no
// panic unwinds into the driver and none aborts.
unsafe extern "C" fn once_trampoline(data: *mut c_void) {
    let _scope = crate::deferred::CallbackScope::enter();
    // SAFETY: `data` is the `Box<Once>` that `enqueue_once` leaked for this one
    // call (a host function outside a capture runs once), so it is taken back
    // exactly once, here.
    let call = unsafe { Box::from_raw(data.cast::<Once>()) };
    let Once { f, panics } = *call;
    // Calling `f` consumes it: its captures drop inside the guarded call.
    run_caught(f, &panics);
    drop_caught(panics);
}

/// A host function captured into a graph, which may run any number of times: it
/// belongs to a user object that the graph owns.
struct Repeat {
    f: Box<dyn Fn() + Send + Sync>,
    panics: Arc<PanicSlot>,
}

// The trampoline rule (see `once_trampoline`).
unsafe extern "C" fn repeat_trampoline(data: *mut c_void) {
    let _scope = crate::deferred::CallbackScope::enter();
    // SAFETY: `data` is a `Box<Repeat>` owned by a user object that the graph
    // holds, so it lives as long as the graph and its instantiations can run it.
    let call = unsafe { &*data.cast::<Repeat>() };
    run_caught(|| (call.f)(), &call.panics);
}

// The trampoline rule (see `once_trampoline`): a user object's destructor runs
// on a driver thread too.
unsafe extern "C" fn repeat_destroy(data: *mut c_void) {
    let _scope = crate::deferred::CallbackScope::enter();
    // SAFETY: the user object's destructor, called once when its last reference
    // goes; `data` is the `Box<Repeat>` it was made with.
    let call = unsafe { Box::from_raw(data.cast::<Repeat>()) };
    drop_caught(call);
}

impl Stream {
    /// Queues `f` to run on a driver thread once the work queued before it on this
    /// stream has completed (`cuLaunchHostFunc`); work queued after it waits for
    /// it to return.
    ///
    /// ```no_run
    /// # fn f(stream: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// let done = Arc::new(AtomicBool::new(false));
    /// let flag = done.clone();
    /// stream.launch_host_func(move || flag.store(true, Ordering::Release))?;
    /// stream.sync()?;
    /// assert!(done.load(Ordering::Acquire));
    /// # Ok(()) }
    /// ```
    ///
    /// **`f` cannot call CUDA** (CUDA's rule for host functions: a call may
    /// return `CUDA_ERROR_NOT_PERMITTED` or deadlock; a `sync` of this very
    /// stream would wait for itself). Every operation of this crate and of the
    /// library crates called from `f` (a stream's or event's `sync`, a copy, a
    /// launch, a cuBLAS call, …) returns [`Error::Driver`] of code
    /// `CUDA_ERROR_NOT_PERMITTED` at once, without calling the driver, and any
    /// other driver or runtime call made on the thread while `f` runs (a raw
    /// binding's included) returns that code too; send what needs doing out of
    /// `f` (a channel) and do it on an ordinary thread. Dropping this crate's
    /// objects there is fine: `f` and its captures are dropped on the driver's
    /// thread, and when one of them is the last owner of a [`Buffer`](crate::Buffer),
    /// [`Stream`], [`Event`](crate::Event), graph, module or pool, its free or
    /// destroy is not made there but queued and made later on an ordinary thread
    /// (see [`deferred_frees`](crate::deferred_frees)). Keep long waits out of it
    /// too: the stream's later work waits for it.
    ///
    /// **Panics** are caught (nothing unwinds into the driver) and recorded in
    /// this stream: the next [`sync`](Self::sync) returns
    /// [`Error::HostCallbackPanicked`], or [`take_callback_panic`](Self::take_callback_panic)
    /// hands the record over. The stream stays usable. A build with
    /// `panic = "abort"` aborts instead, as for any panic.
    ///
    /// The box holding `f` is freed by the call, or at once if queuing fails. If
    /// the context fails (a sticky error such as a faulting kernel) before `f`
    /// runs, the driver never calls it and the box is leaked: the driver gives no
    /// chance to free it.
    ///
    /// A capturing stream is refused: a captured host function runs each time the
    /// graph is launched (or never), which a `FnOnce` cannot; use
    /// [`launch_host_func_repeatable`](Self::launch_host_func_repeatable) there.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a stream that is capturing; the driver's error
    /// (the box is freed).
    pub fn launch_host_func(&self, f: impl FnOnce() + Send + 'static) -> Result<()> {
        const WHAT: &str = "queuing a host function on a stream";
        let _current = self.context().ensure_current()?;
        // Capture-gate rule: the status read here is the status at queuing. No
        // capture of this stream begins (`begin_capture`), ends (`end_capture`)
        // or takes the stream in (`wait_event` on an event recorded in one)
        // while the gate is held, so a function found not capturing is queued
        // outside any capture, runs once and frees its box.
        let gate = self.capture_gate_shared();
        match plan(self.capture_status()?, false) {
            Plan::Once => self.enqueue_once(Box::new(f), WHAT, gate),
            Plan::Captured | Plan::Refuse => Err(Error::unsupported(
                WHAT,
                "the stream is capturing, and a captured host function may run any number \
                 of times: use `launch_host_func_repeatable`",
            )),
        }
    }

    /// As [`launch_host_func`](Self::launch_host_func), with `before` and
    /// `after` run under the same capture gate: `before` (work that orders the
    /// function, such as waits for events recorded outside any capture) after
    /// the stream was found not capturing, `after` (the function's tracking,
    /// such as event records) once it is queued. A capturing stream is refused
    /// with [`Error::InvalidArgument`] (`what`, `why`). Neither may take this
    /// stream's gate again (see [`while_not_capturing`](Self::while_not_capturing)).
    /// `f` is dropped after the gate is released when it is not queued.
    pub(crate) fn launch_host_func_ordered(
        &self,
        (what, why): (&'static str, &'static str),
        before: impl FnOnce() -> Result<()>,
        f: impl FnOnce() + Send + 'static,
        after: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let _current = self.context().ensure_current()?;
        // Capture-gate rule (see `launch_host_func`), over `before` and `after`
        // too: what they queue or record is outside any capture.
        let gate = self.capture_gate_shared();
        if self.capture_status()? != CaptureStatus::None {
            return Err(Error::invalid(what, why));
        }
        crate::stream_capture::hooks::after_capture_check(self);
        before()?;
        self.enqueue_once_then(Box::new(f), what, gate, after)
    }

    /// As [`launch_host_func`](Self::launch_host_func) for a function that may run
    /// more than once, which also works on a capturing stream: the function
    /// becomes a host node of the graph being captured and runs each time the
    /// graph is launched. The graph owns it (through a CUDA user object,
    /// `cuUserObjectCreate` and `cuGraphRetainUserObject`), and it is dropped,
    /// on a driver thread, when the graph and every instantiation of it are gone.
    ///
    /// On a stream that is not capturing it runs once, as with
    /// `launch_host_func`. Panics are recorded in this stream, also those of
    /// launches of the captured graph on other streams. The same rules hold:
    /// `f` must not call CUDA (dropping the crate's objects there is deferred, as above).
    ///
    /// # Errors
    /// The driver's error (`f` is freed; once captured, the graph owns it even if
    /// queuing fails, and frees it with the graph).
    pub fn launch_host_func_repeatable(&self, f: impl Fn() + Send + Sync + 'static) -> Result<()> {
        self.launch_host_func_repeatable_into(f, self.panic_slot().clone())
    }

    /// [`launch_host_func_repeatable`](Self::launch_host_func_repeatable), a
    /// captured function recording its panics in `panics` (a graph builder's
    /// graph's slot).
    pub(crate) fn launch_host_func_repeatable_into(
        &self,
        f: impl Fn() + Send + Sync + 'static,
        panics: Arc<PanicSlot>,
    ) -> Result<()> {
        const WHAT: &str = "queuing a host function on a stream";
        let _current = self.context().ensure_current()?;
        // Capture-gate rule (see `launch_host_func`): the capture read here, or
        // its absence, holds until the function is queued, so the box goes to the
        // one owner that matches (the graph's user object, or the one call).
        let gate = self.capture_gate_shared();
        let info = self.capture_info()?;
        let graph = match plan(info.status, true) {
            Plan::Captured if !info.graph.is_null() => info.graph,
            _ => return self.enqueue_once(Box::new(f), WHAT, gate),
        };
        let data = Box::into_raw(Box::new(Repeat {
            f: Box::new(f),
            panics,
        }))
        .cast::<c_void>();
        let mut object: sys::CUuserObject = std::ptr::null_mut();
        // SAFETY: `data` is a live `Box<Repeat>`; `repeat_destroy` frees it once,
        // when the object's last reference goes; it does not call CUDA, so the
        // driver need not synchronise the destructor.
        let rc = unsafe {
            sys::cuUserObjectCreate(
                &mut object,
                data,
                Some(repeat_destroy),
                1,
                sys::CU_USER_OBJECT_NO_DESTRUCTOR_SYNC.0,
            )
        };
        if let Err(e) = rc.check(|| "creating a user object for a captured host function") {
            drop(gate);
            // SAFETY: the object was not made, so the box is still ours.
            drop_caught(unsafe { Box::from_raw(data.cast::<Repeat>()) });
            return Err(e);
        }
        // SAFETY: a live graph being captured and a live user object whose one
        // reference moves to the graph.
        let rc = unsafe {
            sys::cuGraphRetainUserObject(graph, object, 1, sys::CU_GRAPH_USER_OBJECT_MOVE.0)
        };
        if let Err(e) = rc.check(|| "handing a captured host function to its graph") {
            drop(gate);
            // SAFETY: our one reference was not moved; releasing it runs the
            // destructor, which frees the box.
            let rc = unsafe { sys::cuUserObjectRelease(object, 1) };
            crate::cleanup::driver(rc, "releasing a user object (cuUserObjectRelease)");
            return Err(e);
        }
        // SAFETY: the graph owns `data` (above) for as long as it can run the node.
        unsafe { sys::cuLaunchHostFunc(self.handle(), Some(repeat_trampoline), data) }
            .check(|| WHAT)
    }

    /// Takes the record of the host functions of this stream that panicked since
    /// the last report (`None` if none did), without waiting for anything.
    /// [`sync`](Self::sync) reports the same record as an error.
    pub fn take_callback_panic(&self) -> Option<CallbackPanic> {
        self.panic_slot().take()
    }

    /// Queues `f` to run once. `gate` (the capture gate, held shared) is let go
    /// before a refused box is dropped: dropping it may reach this stream's
    /// `wait_event` (a buffer's free), which takes the gate exclusively.
    fn enqueue_once(
        &self,
        f: Box<dyn FnOnce() + Send>,
        what: &'static str,
        gate: crate::stream::SharedGate<'_>,
    ) -> Result<()> {
        self.enqueue_once_then(f, what, gate, || Ok(()))
    }

    /// [`enqueue_once`](Self::enqueue_once), running `after` with the gate still
    /// held once the function is queued.
    fn enqueue_once_then(
        &self,
        f: Box<dyn FnOnce() + Send>,
        what: &'static str,
        gate: crate::stream::SharedGate<'_>,
        after: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let data = Box::into_raw(Box::new(Once {
            f,
            panics: self.panic_slot().clone(),
        }))
        .cast::<c_void>();
        // SAFETY: a live stream, its context current (the caller holds the guard);
        // outside a capture the driver calls `once_trampoline` once with `data`,
        // which frees it.
        let rc = unsafe { sys::cuLaunchHostFunc(self.handle(), Some(once_trampoline), data) };
        let tracked = if rc == sys::CUDA_SUCCESS {
            after()
        } else {
            Ok(())
        };
        drop(gate);
        if rc != sys::CUDA_SUCCESS {
            // SAFETY: the driver refused the call, so it will never run it: the
            // box is still ours.
            drop_caught(unsafe { Box::from_raw(data.cast::<Once>()) });
        }
        rc.check(|| what)?;
        tracked
    }
}

/// Who owns a host function's box, from the stream's capture status read under
/// the capture gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// Not capturing: the driver calls the function once, and that call frees it.
    Once,
    /// Capturing, and the function may run many times: a user object that the
    /// graph owns holds it, and frees it with the graph.
    Captured,
    /// The function cannot be queued: a run-once function on a capturing stream.
    Refuse,
}

fn plan(status: CaptureStatus, repeatable: bool) -> Plan {
    match (status, repeatable) {
        (CaptureStatus::None, _) => Plan::Once,
        (CaptureStatus::Active, true) => Plan::Captured,
        (CaptureStatus::Active, false) => Plan::Refuse,
        // The driver refuses to queue into an invalidated capture (its error is
        // reported, and the box, never queued, freed at once).
        (CaptureStatus::Invalidated, _) => Plan::Once,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Counter = Arc<std::sync::atomic::AtomicUsize>;

    /// A panic slot, a call counter and a clone of it for the closure.
    fn slot_and_counter() -> (Arc<PanicSlot>, Counter, Counter) {
        let hit = Counter::default();
        (Arc::default(), hit.clone(), hit)
    }

    #[test]
    fn the_once_trampoline_runs_frees_and_records() {
        let (slot, hit, h) = slot_and_counter();
        let data = Box::into_raw(Box::new(Once {
            f: Box::new(move || {
                h.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                panic!("inside the driver's thread");
            }),
            panics: slot.clone(),
        }));
        // SAFETY: a leaked `Box<Once>`, handed over once, as the driver would.
        unsafe { once_trampoline(data.cast()) };
        assert_eq!(hit.load(std::sync::atomic::Ordering::SeqCst), 1);
        // The closure (and its clone of `hit`) was dropped by the call.
        assert_eq!(Arc::strong_count(&hit), 1);
        assert_eq!(Arc::strong_count(&slot), 1);
        assert_eq!(
            slot.take().map(|p| p.message),
            Some("inside the driver's thread".to_owned())
        );
    }

    #[test]
    fn the_repeat_trampoline_runs_until_destroyed() {
        let (slot, hit, h) = slot_and_counter();
        let data = Box::into_raw(Box::new(Repeat {
            f: Box::new(move || {
                if h.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 1 {
                    panic!("second run");
                }
            }),
            panics: slot.clone(),
        }))
        .cast::<c_void>();
        for _ in 0..3 {
            // SAFETY: a live `Box<Repeat>`, as a graph's user object holds it.
            unsafe { repeat_trampoline(data) };
        }
        assert_eq!(hit.load(std::sync::atomic::Ordering::SeqCst), 3);
        assert_eq!(slot.take().map(|p| p.count), Some(1));
        // SAFETY: the destructor, once.
        unsafe { repeat_destroy(data) };
        assert_eq!(Arc::strong_count(&hit), 1);
        assert_eq!(Arc::strong_count(&slot), 1);
    }

    /// A panic payload whose own `Drop` panics.
    struct Bomb;

    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("the payload's drop panics too");
        }
    }

    /// A closure capture whose `Drop` panics.
    struct DropBomb;

    impl Drop for DropBomb {
        fn drop(&mut self) {
            panic!("the closure's capture panics when dropped");
        }
    }

    #[test]
    fn no_trampoline_unwinds_or_aborts_whatever_panics() {
        let slot = Arc::new(PanicSlot::default());
        // A once host function: a payload whose drop panics, then a capture whose
        // drop panics.
        let data = Box::into_raw(Box::new(Once {
            f: Box::new(|| std::panic::panic_any(Bomb)),
            panics: slot.clone(),
        }));
        // SAFETY: a leaked `Box<Once>`, handed over once, as the driver would.
        unsafe { once_trampoline(data.cast()) };
        let bomb = DropBomb;
        let data = Box::into_raw(Box::new(Once {
            f: Box::new(move || {
                let _keep = &bomb;
            }),
            panics: slot.clone(),
        }));
        // SAFETY: as above.
        unsafe { once_trampoline(data.cast()) };
        assert_eq!(slot.take().map(|p| p.count), Some(2));
        // A repeatable one: the payload, then the user object's destructor
        // dropping a closure whose capture panics.
        let bomb = DropBomb;
        let data = Box::into_raw(Box::new(Repeat {
            f: Box::new(move || {
                let _keep = &bomb;
                std::panic::panic_any(Bomb);
            }),
            panics: slot.clone(),
        }))
        .cast::<c_void>();
        // SAFETY: a live `Box<Repeat>`, then its destructor, once.
        unsafe {
            repeat_trampoline(data);
            repeat_destroy(data);
        }
        assert_eq!(slot.take().map(|p| p.count), Some(1));
        assert_eq!(Arc::strong_count(&slot), 1);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "forgets the payload of the second panic by design (dropping it could panic again), which Miri reports as a leak"
    )]
    fn drop_caught_survives_a_payload_whose_drop_panics() {
        struct Outer;
        impl Drop for Outer {
            fn drop(&mut self) {
                std::panic::panic_any(Bomb);
            }
        }
        drop_caught(Outer);
    }

    #[test]
    fn the_box_has_one_owner_for_each_capture_status() {
        use CaptureStatus::{Active, Invalidated, None};
        // Not capturing: one call, which frees it, whatever the kind.
        assert_eq!(plan(None, false), Plan::Once);
        assert_eq!(plan(None, true), Plan::Once);
        // Capturing: the graph owns a repeatable function; a run-once one is
        // refused (the graph could call it any number of times).
        assert_eq!(plan(Active, true), Plan::Captured);
        assert_eq!(plan(Active, false), Plan::Refuse);
        // An invalidated capture takes nothing: the driver refuses the call, and
        // the box, never queued, is freed by the caller.
        assert_eq!(plan(Invalidated, true), Plan::Once);
        assert_eq!(plan(Invalidated, false), Plan::Once);
    }
}
