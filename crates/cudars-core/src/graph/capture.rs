//! Stream capture into a [`Graph`]: [`Stream::begin_capture`] and its modes.

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Result};
pub use crate::stream_capture::{CaptureMode, CaptureStatus};
use crate::{event::Event, stream::Stream};

use super::Graph;
use crate::graph::memory_nodes::GraphAllocation;

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
    /// graph made from it, and its instantiations, can run. A stream joined to
    /// the capture (one that waits for an event recorded in it) must be joined
    /// back before the capture ends, and the capture must not end (here or
    /// through another handle of this stream) while another thread queues a
    /// host function on such a joined stream: its capture status is read, then
    /// the function queued, and only this stream's own begin and end are kept
    /// out of that window (see [`launch_host_func`](Self::launch_host_func)).
    /// No other thread may queue work on this stream while the capture begins,
    /// nor on a stream while it joins the capture: whether such work is captured
    /// would be a matter of timing, and a use of a buffer is ordered before the
    /// buffer's free only when it is not captured (below).
    ///
    /// While the stream captures, the crate's operations on buffers (copies,
    /// fills, typed launches) do not order the buffers' frees after the captured
    /// work (rule 2 of the soundness contract): that work runs when the graph
    /// does, and the promise above keeps the buffers alive. So a capture forked
    /// to other streams ([`wait_event`](Self::wait_event) on an event recorded
    /// in it) takes in only the streams it forks to, never the streams the
    /// buffers are freed on.
    ///
    /// # Errors
    /// The driver's error (a legacy default stream cannot capture).
    pub unsafe fn begin_capture(&self, mode: CaptureMode) -> Result<()> {
        let _current = self.context().ensure_current()?;
        // Not while a host function is being queued on this stream.
        let _gate = self.capture_gate_exclusive();
        // SAFETY: a live stream.
        unsafe { sys::cuStreamBeginCapture(self.handle(), mode.raw()) }
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
        // Not while a host function is being queued on this stream.
        let _gate = self.capture_gate_exclusive();
        let mut g: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: `g` is valid for writes; a live stream.
        unsafe { sys::cuStreamEndCapture(self.handle(), &mut g) }
            .check(|| "ending a stream capture")?;
        Ok(Graph::owned(g, self.context().clone()))
    }

    /// Makes `node`, a node just added to the graph this stream captures into, the
    /// one dependency of the stream's next captured work
    /// (`cuStreamUpdateCaptureDependencies`, replacing the current set).
    pub(crate) fn set_capture_dependency(&self, node: sys::CUgraphNode) -> Result<()> {
        let _current = self.context().ensure_current()?;
        let mut nodes = [node];
        let flags = sys::CU_STREAM_SET_CAPTURE_DEPENDENCIES.0;
        let rc = if crate::versions::driver_at_least(12030) {
            // SAFETY: one node of the capture's graph; no edge data; a live stream.
            unsafe {
                sys::cuStreamUpdateCaptureDependencies(
                    self.handle(),
                    nodes.as_mut_ptr(),
                    std::ptr::null(),
                    1,
                    flags,
                )
            }
        } else {
            // SAFETY: as above, the shape of drivers before CUDA 12.3.
            unsafe {
                sys::cuda12::cuStreamUpdateCaptureDependencies(
                    self.handle(),
                    nodes.as_mut_ptr(),
                    1,
                    flags,
                )
            }
        };
        rc.check(|| "setting the dependencies of a stream's capture")
    }

    /// Forks `n` new streams off this one: each waits for the work queued here so
    /// far (in a capture: the work captured so far, and work issued to them joins
    /// the same capture). [`join`](Self::join) brings them back. Outside a capture
    /// it is cudarc's `stream.fork()`, `n` times over; [`fork_one`](Self::fork_one)
    /// makes one.
    ///
    /// # Errors
    /// The driver's error.
    pub fn fork(&self, n: usize) -> Result<Vec<Stream>> {
        let e = Event::in_context(self.context(), crate::event::EventOptions::default())?;
        e.record(self)?;
        (0..n)
            .map(|_| {
                let s = self.context().create_stream(crate::stream::StreamOptions {
                    non_blocking: true,
                    priority: None,
                })?;
                s.wait_event(&e)?;
                Ok(s)
            })
            .collect()
    }

    /// One new non-blocking stream that waits for the work queued here so far
    /// ([`fork`](Self::fork) of one; cudarc's `stream.fork()`).
    ///
    /// ```no_run
    /// # fn f(s: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// let side = s.fork_one()?; // starts after what `s` has queued
    /// // ... queue work on `side` ...
    /// s.join(&[side])?; // `s` continues after it
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// The driver's error.
    pub fn fork_one(&self) -> Result<Stream> {
        let e = Event::in_context(self.context(), crate::event::EventOptions::default())?;
        e.record(self)?;
        let s = self.context().create_stream(crate::stream::StreamOptions {
            non_blocking: true,
            priority: None,
        })?;
        s.wait_event(&e)?;
        Ok(s)
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
