//! Stream capture into a [`Graph`]: [`Stream::begin_capture`] and its modes.

use cuda_bindings::driver as sys;

use crate::error::{Check as _, Result};
use crate::{Event, Stream};

use super::{Graph, GraphAllocation};

/// Which calls that are unsafe during a stream capture (a synchronous
/// allocation, a synchronisation, a query of another stream, …) CUDA refuses while
/// the capture runs (`CUstreamCaptureMode`).
///
/// **The default is [`Relaxed`](Self::Relaxed), as for `cuda.core`'s
/// `GraphBuilder.begin_building()`**, so that a port behaves as its Python
/// original. CUDA's C examples usually capture with `Global`, which also catches
/// mistakes: a capture in `Global` mode fails (and is invalidated) when any thread
/// makes such a call, one in `Relaxed` mode lets them through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CaptureMode {
    /// Such calls from any thread are errors while capturing
    /// (`CU_STREAM_CAPTURE_MODE_GLOBAL`).
    Global,
    /// Only this thread's such calls are errors
    /// (`CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`).
    ThreadLocal,
    /// No calls are restricted (`CU_STREAM_CAPTURE_MODE_RELAXED`); the default,
    /// as in `cuda.core`.
    #[default]
    Relaxed,
}

/// Whether a stream is capturing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureStatus {
    /// Not capturing.
    None,
    /// Capturing.
    Active,
    /// Capturing, but an error invalidated the capture.
    Invalidated,
}

impl Stream {
    /// Starts capturing the work issued to this stream into a graph.
    ///
    /// `cuda.core`'s `begin_building()` is `begin_capture(CaptureMode::default())`,
    /// that is [`CaptureMode::Relaxed`]; pass [`CaptureMode::Global`] to have CUDA
    /// refuse calls that are unsafe during a capture.
    ///
    /// # Safety
    /// The captured work (copies, fills, launches) refers to memory by address:
    /// every buffer, kernel and other object it uses must stay alive as long as the
    /// graph made from it, and its instantiations, can run. No other thread may be
    /// queuing a run-once host function on this stream
    /// ([`launch_host_func`](Self::launch_host_func)) as the capture begins: one
    /// captured that way would be freed after the graph's first run.
    ///
    /// # Errors
    /// The driver's error (a legacy default stream cannot capture).
    pub unsafe fn begin_capture(&self, mode: CaptureMode) -> Result<()> {
        let _current = self.context().ensure_current()?;
        let m = match mode {
            CaptureMode::Global => sys::CU_STREAM_CAPTURE_MODE_GLOBAL,
            CaptureMode::ThreadLocal => sys::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            CaptureMode::Relaxed => sys::CU_STREAM_CAPTURE_MODE_RELAXED,
        };
        // SAFETY: a live stream.
        unsafe { sys::cuStreamBeginCapture(self.handle(), m) }
            .check(|| "beginning a stream capture")
    }

    /// Frees graph-allocated memory that its graph left unfreed, ordered on this
    /// stream (`cuMemFreeAsync`), so that the graph can be launched again.
    ///
    /// # Safety
    /// `allocation` must be unfreed memory of a graph that has run (its launch is
    /// ordered before this call on this stream), freed once, and no later work may
    /// use it.
    ///
    /// # Errors
    /// The driver's error.
    pub unsafe fn free_graph_allocation(&self, allocation: &GraphAllocation) -> Result<()> {
        let _current = self.context().ensure_current()?;
        // SAFETY: per the contract, an allocated graph allocation on a live stream.
        unsafe { sys::cuMemFreeAsync(allocation.ptr.0, self.handle()) }
            .check(|| format!("freeing {} bytes a graph allocated", allocation.size))
    }

    /// Ends the capture and returns the captured graph.
    ///
    /// # Errors
    /// The driver's error (an invalidated capture is `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`).
    pub fn end_capture(&self) -> Result<Graph> {
        let _current = self.context().ensure_current()?;
        let mut g: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: `g` is valid for writes; a live stream.
        unsafe { sys::cuStreamEndCapture(self.handle(), &mut g) }
            .check(|| "ending a stream capture")?;
        Ok(Graph::owned(g, self.context().clone()))
    }

    /// Whether the stream is capturing.
    ///
    /// # Errors
    /// The driver's error.
    pub fn capture_status(&self) -> Result<CaptureStatus> {
        let mut s = sys::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: `s` is valid for writes; a live stream.
        unsafe { sys::cuStreamIsCapturing(self.handle(), &mut s) }
            .check(|| "asking a stream's capture status")?;
        Ok(if s == sys::CU_STREAM_CAPTURE_STATUS_ACTIVE {
            CaptureStatus::Active
        } else if s == sys::CU_STREAM_CAPTURE_STATUS_INVALIDATED {
            CaptureStatus::Invalidated
        } else {
            CaptureStatus::None
        })
    }

    /// Forks `n` streams off this capturing stream: each waits for the work
    /// captured so far, and work issued to them joins the same capture.
    /// [`join`](Self::join) brings them back.
    ///
    /// # Errors
    /// The driver's error.
    pub fn fork(&self, n: usize) -> Result<Vec<Stream>> {
        let e = Event::in_context(self.context(), crate::EventOptions::default())?;
        e.record(self)?;
        (0..n)
            .map(|_| {
                let s = self.context().create_stream(crate::StreamOptions {
                    non_blocking: true,
                    priority: None,
                })?;
                s.wait_event(&e)?;
                Ok(s)
            })
            .collect()
    }

    /// Makes this stream wait for all work issued so far to `others` (ends a
    /// [`fork`](Self::fork) inside a capture; works outside one too).
    ///
    /// # Errors
    /// The driver's error.
    pub fn join(&self, others: &[Stream]) -> Result<()> {
        for o in others {
            self.wait_stream(o)?;
        }
        Ok(())
    }
}
