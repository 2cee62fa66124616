//! Events: points in a stream to wait for, query and time.

use std::time::Duration;

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{context::Context, device::Device};

/// How to create an [`Event`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventOptions {
    /// Record timestamps, so that [`Event::elapsed_since`] works. Off makes
    /// recording cheaper.
    pub timing: bool,
    /// `sync` blocks the thread on a kernel wait instead of spinning.
    pub blocking_sync: bool,
    /// Usable from another process (needs `timing: false`).
    pub ipc: bool,
}

impl Default for EventOptions {
    /// Timing off, spinning sync, not IPC: the cheapest event.
    fn default() -> Self {
        Self {
            timing: false,
            blocking_sync: false,
            ipc: false,
        }
    }
}

/// An event. Destroyed on drop. `Send + Sync`: the driver's event functions may be
/// called from any thread.
#[derive(Debug)]
pub struct Event {
    pub(crate) handle: sys::CUevent,
    pub(crate) ctx: Context,
    pub(crate) options: EventOptions,
}

/// Events are equal when they are the same driver event (`cuda.core`'s
/// `Event.__eq__` compares the handles).
impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.handle == other.handle
    }
}

impl Eq for Event {}

/// Hashes the handle, as equality compares it (`cuda.core`'s `Event.__hash__`).
impl std::hash::Hash for Event {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.handle as usize).hash(state);
    }
}

// SAFETY: a CUevent is a handle any thread may use.
// Soundness contract: rule 11.
unsafe impl Send for Event {}
// SAFETY: as above; methods take `&self` and the driver serialises.
// Soundness contract: rule 11.
unsafe impl Sync for Event {}

impl Event {
    /// Creates an event in `device`'s primary context.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `ipc` with `timing`; the driver's error.
    pub fn new(device: &Device, options: EventOptions) -> Result<Self> {
        Self::in_context(&Context::primary(device)?, options)
    }

    /// Creates an event in `ctx`.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn in_context(ctx: &Context, options: EventOptions) -> Result<Self> {
        let device = ctx.device();
        if options.ipc && options.timing {
            return Err(Error::invalid(
                "creating an event",
                "an IPC event cannot record timing (set `timing: false`)",
            ));
        }
        let _current = ctx.ensure_current()?;
        let mut flags = 0;
        if !options.timing {
            flags |= sys::CU_EVENT_DISABLE_TIMING.0;
        }
        if options.blocking_sync {
            flags |= sys::CU_EVENT_BLOCKING_SYNC.0;
        }
        if options.ipc {
            flags |= sys::CU_EVENT_INTERPROCESS.0;
        }
        let mut handle: sys::CUevent = std::ptr::null_mut();
        // SAFETY: `handle` is valid for writes; the device's context is current.
        unsafe { sys::cuEventCreate(&mut handle, flags) }
            .check(|| format!("creating an event on device {}", device.ordinal()))?;
        Ok(Self {
            handle,
            ctx: ctx.clone(),
            options,
        })
    }

    /// The driver's handle.
    pub fn handle(&self) -> sys::CUevent {
        self.handle
    }

    /// The context it belongs to.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The device it belongs to.
    pub fn device(&self) -> &Device {
        self.ctx.device()
    }

    /// The options it was made with.
    pub fn options(&self) -> EventOptions {
        self.options
    }

    /// Waits until the work before the event's last record has completed.
    ///
    /// # Errors
    /// The driver's error.
    pub fn sync(&self) -> Result<()> {
        // Green rule: every call on a green context's event holds its lock.
        let _green = self.ctx.green_guard()?;
        // SAFETY: a live event.
        unsafe { sys::cuEventSynchronize(self.handle) }.check(|| "waiting for an event")
    }

    /// Whether the work before the event's last record has completed.
    ///
    /// # Errors
    /// The driver's error.
    pub fn is_done(&self) -> Result<bool> {
        // Green rule: every call on a green context's event holds its lock.
        let _green = self.ctx.green_guard()?;
        // SAFETY: a live event.
        let rc = unsafe { sys::cuEventQuery(self.handle) };
        if rc == sys::CUDA_ERROR_NOT_READY {
            return Ok(false);
        }
        rc.check(|| "querying an event")?;
        Ok(true)
    }

    /// The GPU time from `start` to this event (both recorded and completed).
    ///
    /// # Errors
    /// [`Error::Unsupported`] when either event was made without timing; the
    /// driver's error (`CUDA_ERROR_NOT_READY` when one has not completed).
    pub fn elapsed_since(&self, start: &Event) -> Result<Duration> {
        if !self.options.timing || !start.options.timing {
            return Err(Error::unsupported(
                "measuring time between events",
                "both events must be created with `timing: true`",
            ));
        }
        if start.ctx != self.ctx {
            // Two contexts' guards could be taken in either order by two threads.
            return Err(Error::invalid(
                "measuring time between events",
                "the events belong to different contexts",
            ));
        }
        // Green rule: every call on a green context's event holds its lock.
        let _green = self.ctx.green_guard()?;
        let mut ms = 0f32;
        // SAFETY: live events; `ms` is valid for writes.
        unsafe { sys::cuEventElapsedTime(&mut ms, start.handle, self.handle) }
            .check(|| "measuring time between events")?;
        Ok(Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
    }
}

// Deferred-release rule: on a driver callback thread the destroy (a CUDA call)
// is handed to the deferred queue instead of made there. Green rule: the
// destroy holds the context's guard (`ensure_current`), as every call on a
// green context does.
impl Drop for Event {
    fn drop(&mut self) {
        /// Destroys `e`, a live event of `ctx` owned by the caller, once.
        fn destroy(ctx: &Context, e: sys::CUevent) {
            let _green = ctx.green_guard();
            // SAFETY: an owned, live event, destroyed once (pending records complete).
            let rc = unsafe { sys::cuEventDestroy(e) };
            crate::cleanup::driver(rc, "destroying an event (cuEventDestroy)");
        }
        if crate::deferred::must_defer() {
            let ctx = self.ctx.clone();
            // SAFETY: the owned event; its one destroy moves to the queue.
            unsafe {
                crate::deferred::defer_handle("destroying an event", self.handle, move |e| {
                    destroy(&ctx, e);
                });
            }
            return;
        }
        destroy(&self.ctx, self.handle);
    }
}

// Events in the device's primary context.
impl Device {
    /// A new event in the primary context (see [`Event::new`](crate::Event::new)).
    ///
    /// # Errors
    /// As [`Event::new`](crate::Event::new).
    pub fn create_event(&self, options: crate::event::EventOptions) -> Result<crate::event::Event> {
        crate::event::Event::new(self, options)
    }
}
