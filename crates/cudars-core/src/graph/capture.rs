//! Stream capture into a [`Graph`]: [`Stream::begin_capture`] and its modes.

use cudars_bindings::driver as sys;

use std::sync::atomic::Ordering;

use crate::error::{Check as _, Error, Result};
pub use crate::stream_capture::{CaptureMode, CaptureStatus};
use crate::{event::Event, stream::Stream};

use super::{Graph, GraphNode};
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

    /// Starts capturing the work issued to this stream into `graph`, an
    /// existing graph (one made by [`Graph::new`], or the body of a conditional
    /// node from [`Graph::add_conditional`] or
    /// [`GraphNode::bodies`](crate::GraphNode::bodies)), after the nodes
    /// `dependencies` of it (`cuStreamBeginCaptureToGraph`; CUDA C's
    /// `cudaStreamBeginCaptureToGraph`). The captured work becomes nodes of
    /// `graph`; [`GraphCapture::end`] ends the capture and returns the nodes the
    /// captured work ends with, for later nodes to depend on.
    ///
    /// The returned guard borrows `graph` mutably until the capture ends, so
    /// nothing else can use, modify or drop the graph meanwhile, and it ends
    /// the capture if dropped without [`end`](GraphCapture::end). The graph stays
    /// its owner's: [`end_capture`](Self::end_capture) on this stream (through any
    /// handle of it) is refused while the capture runs, so no second owner of the
    /// graph can be made.
    ///
    /// ```no_run
    /// # fn f(s: &cudars_core::Stream, k: &cudars_core::Kernel, x: cudars_core::DevicePtr) -> cudars_core::Result<()> {
    /// use cudars_core::{CaptureMode, ConditionalKind, Graph, LaunchConfig};
    /// let mut g = Graph::new(s.context())?;
    /// let cond = g.create_condition(Some(1))?;
    /// let (_node, mut bodies) = g.add_conditional(&[], cond, ConditionalKind::While)?;
    /// // SAFETY: `k(x, cond)` touches what `x` points to, which outlives the graph.
    /// let capture = unsafe { s.begin_capture_into(&mut bodies[0], &[], CaptureMode::default())? };
    /// unsafe { cudars_core::launch(s, &LaunchConfig::new(1, 1), k, &[&x, &cond])? };
    /// capture.end()?; // the loop body is the captured launch
    /// # Ok(()) }
    /// ```
    ///
    /// # Safety
    /// As [`begin_capture`](Self::begin_capture): the captured work refers to
    /// memory by address, so everything it uses must stay alive as long as
    /// `graph`, the graphs it belongs to and their instantiations can run
    /// (the graph keeps nothing of it alive), and streams joined to the capture
    /// must be joined back before it ends. In addition: the guard must not be
    /// leaked ([`std::mem::forget`]): the stream would go on capturing into a
    /// graph that is free to be dropped. While the capture runs, no other graph
    /// of `graph`'s hierarchy (its parent graph, its sibling bodies) may be
    /// modified while work is being queued on the capturing streams from
    /// another thread (the driver modifies a hierarchy from one thread at a
    /// time).
    ///
    /// # Errors
    /// [`Error::Unsupported`] on a driver before CUDA 12.3;
    /// [`Error::InvalidArgument`] for a dependency that is not a node of
    /// `graph`, or a graph of another device
    /// ([`InvalidKind::OtherDevice`](crate::InvalidKind::OtherDevice)); the driver's error (a stream that
    /// is capturing already, a legacy default stream).
    pub unsafe fn begin_capture_into<'a>(
        &'a self,
        graph: &'a mut Graph,
        dependencies: &[GraphNode],
        mode: CaptureMode,
    ) -> Result<GraphCapture<'a>> {
        const WHAT: &str = "beginning a stream capture into a graph";
        crate::versions::require_driver(12030, "capturing into an existing graph", || WHAT)?;
        if graph.ctx.device() != self.device() {
            return Err(Error::other_device(
                WHAT,
                format!(
                    "the stream is on device {}, the graph on device {}",
                    self.device().ordinal(),
                    graph.ctx.device().ordinal()
                ),
            ));
        }
        let deps = graph.deps(dependencies)?;
        let _current = self.context().ensure_current()?;
        // Not while a host function is being queued on this stream.
        let _gate = self.capture_gate_exclusive();
        // SAFETY: a live graph, borrowed mutably by the guard for the capture's
        // life; `deps` holds nodes of it (checked); no edge data; a live stream.
        unsafe {
            sys::cuStreamBeginCaptureToGraph(
                self.handle(),
                graph.handle,
                deps.as_ptr(),
                std::ptr::null(),
                deps.len(),
                mode.raw(),
            )
        }
        .check(|| WHAT)?;
        self.captures_into().store(true, Ordering::Relaxed);
        Ok(GraphCapture {
            stream: self,
            graph,
            open: true,
        })
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
    /// [`Error::InvalidArgument`] for a capture into a graph this stream does
    /// not own ([`begin_capture_into`](Self::begin_capture_into)): its
    /// [`GraphCapture`] ends it, and the graph stays its owner's. The driver's
    /// error (an invalidated capture is `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`).
    pub fn end_capture(&self) -> Result<Graph> {
        let _current = self.context().ensure_current()?;
        // Not while a host function is being queued on this stream.
        let _gate = self.capture_gate_exclusive();
        refuse_end_of_borrowed(self.captures_into().load(Ordering::Relaxed))?;
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
        let e = self.fork_point()?;
        (0..n).map(|_| self.forked_after(&e)).collect()
    }

    /// An event recorded here: where forked streams start.
    fn fork_point(&self) -> Result<Event> {
        let e = Event::in_context(self.context(), crate::event::EventOptions::default())?;
        e.record(self)?;
        Ok(e)
    }

    /// A new non-blocking stream of this stream's context that waits for `e`.
    fn forked_after(&self, e: &Event) -> Result<Stream> {
        let s = self.context().create_stream(crate::stream::StreamOptions {
            non_blocking: true,
            priority: None,
        })?;
        s.wait_event(e)?;
        Ok(s)
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
        self.forked_after(&self.fork_point()?)
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

/// Refuses [`Stream::end_capture`] on a stream that captures into a borrowed
/// graph (`borrowed`): wrapping that graph as an owned one would destroy it twice.
fn refuse_end_of_borrowed(borrowed: bool) -> Result<()> {
    if borrowed {
        return Err(Error::invalid(
            "ending a stream capture",
            "the stream captures into a graph it does not own (`begin_capture_into`): \
             end it with its `GraphCapture::end`, which leaves the graph its owner's",
        ));
    }
    Ok(())
}

/// A stream capture into an existing graph, from
/// [`Stream::begin_capture_into`]: it borrows the graph mutably until the
/// capture ends, so the graph is neither used nor dropped meanwhile.
/// [`end`](Self::end) ends the capture and returns the nodes it ended with;
/// dropping the guard ends it too (the nodes are then not returned, and an
/// error is reported through the cleanup hook). The graph is never owned by the
/// guard: it stays its owner's.
///
/// Neither `Send` nor `Sync`, as the [`Graph`] it borrows (in the global and
/// thread-local capture modes, the driver ends a capture only on the thread
/// that began it).
pub struct GraphCapture<'a> {
    stream: &'a Stream,
    graph: &'a mut Graph,
    open: bool,
}

impl std::fmt::Debug for GraphCapture<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphCapture")
            .field("stream", &self.stream)
            .field("graph", &self.graph.handle)
            .field("open", &self.open)
            .finish()
    }
}

impl GraphCapture<'_> {
    /// The stream that captures.
    pub fn stream(&self) -> &Stream {
        self.stream
    }

    /// Ends the capture (`cuStreamEndCapture`) and returns the nodes of the
    /// graph that the captured work ends with (the capture's last dependencies:
    /// the given dependencies if nothing was captured), for later nodes of the
    /// graph to depend on.
    ///
    /// # Errors
    /// The driver's error: an invalidated capture
    /// (`CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`: what was captured before the
    /// error stays in the graph), a fork not joined back
    /// (`CUDA_ERROR_STREAM_CAPTURE_UNJOINED`); the capture has ended (the
    /// driver ends a capture on those errors too).
    pub fn end(mut self) -> Result<Vec<GraphNode>> {
        self.finish()
    }

    fn finish(&mut self) -> Result<Vec<GraphNode>> {
        self.open = false;
        let stream = self.stream;
        // Not while a host function is being queued on this stream.
        let _gate = stream.capture_gate_exclusive();
        // Best effort: the end is made whether or not the context could be
        // made current (the stream names its own context), so the guard never
        // lets the graph go while the stream still captures into it.
        let _current = stream.context().ensure_current();
        // The capture's last nodes, read before it ends.
        let info = stream.capture_info();
        let mut g: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: `g` is valid for writes; a live stream. The driver returns the
        // borrowed graph, which stays its owner's and is not wrapped.
        let rc = unsafe { sys::cuStreamEndCapture(stream.handle(), &mut g) };
        // The mark goes once the stream has stopped capturing into the graph;
        // were it still capturing after a failed end, `end_capture` stays
        // refused on this stream.
        let ended =
            rc == sys::CUDA_SUCCESS || matches!(stream.capture_status(), Ok(CaptureStatus::None));
        if ended {
            stream.captures_into().store(false, Ordering::Relaxed);
        }
        rc.check(|| "ending a stream capture into a graph")?;
        let info = info?;
        Ok(info.deps.into_iter().map(|h| self.graph.node(h)).collect())
    }
}

// Soundness contract: rule 1. The guard owns nothing: its drop ends the
// capture and leaves the graph its owner's.
impl Drop for GraphCapture<'_> {
    fn drop(&mut self) {
        if self.open {
            crate::cleanup::report(self.finish().map(drop));
        }
    }
}
