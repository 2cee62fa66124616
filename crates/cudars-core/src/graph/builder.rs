//! [`GraphBuilder`]: building a [`Graph`] by stream capture, the way `cuda.core`'s
//! `GraphBuilder` does, keeping alive what is queued into it; its checks are
//! pure functions, tested without a GPU.

use std::borrow::Cow;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{device::Device, stream::Stream, stream::StreamOptions};

use super::define::{
    ConditionalKind, Graph, GraphCondition, Keep, Root, add_node, body_handles, conditional_params,
    create_condition_in,
};
use crate::graph::builder_rules::{
    CapturedNode, Family, OpenChild, Phase, Place, Role, RoleKind, active, check_begin,
    check_building, check_end, check_graph_memory, check_join, check_split_count, lock,
    next_builder_id,
};
use crate::stream_capture::CaptureInfo;
use crate::{
    graph::exec::GraphCompleteOptions, graph::exec::GraphExec, stream_capture::CaptureMode,
    stream_capture::CaptureStatus,
};

/// `cuStreamEndCapture`: the status and the graph (null when none came back).
pub(crate) fn end_capture_raw(stream: &Stream) -> (sys::CUresult, sys::CUgraph) {
    let mut g: sys::CUgraph = std::ptr::null_mut();
    let rc = match stream.context().ensure_current() {
        // SAFETY: `g` is valid for writes; a live stream.
        Ok(_current) => unsafe { sys::cuStreamEndCapture(stream.handle(), &mut g) },
        Err(_) => sys::CUDA_ERROR_INVALID_CONTEXT,
    };
    (rc, g)
}

/// A graph under construction by stream capture (`cuda.core`'s `GraphBuilder`).
///
/// Made by [`Device::create_graph_builder`] or [`Stream::create_graph_builder`];
/// [`begin_building`](Self::begin_building) starts the capture,
/// [`end_building`](Self::end_building) ends it, [`complete`](Self::complete)
/// instantiates the graph (or [`into_graph`](Self::into_graph) takes it).
///
/// A builder captures on a stream of its own, which no other code can queue
/// work on (so nothing but what the builder checks gets into the graph): work
/// queued into it (kernel launches, copies, fills, allocations, host callbacks,
/// event records and waits, child graphs) becomes nodes of the graph that
/// [`end_building`](GraphBuilder::end_building) completes. Captured work refers to
/// memory by address, so the builder **keeps every object queued into it alive**
/// (the [`ArcView`](crate::ArcView)s and their allocations, the kernels and their libraries, the
/// events, the child graphs' own keep lists) in the keep list of the graph it
/// builds; the graph hands it to each [`GraphExec`] instantiated from it, which
/// holds it until its launches have finished. That is what makes queuing safe,
/// where [`Stream::begin_capture`] is `unsafe`. Graph memory
/// ([`allocate`](GraphBuilder::allocate)) is a [`GraphView`](crate::GraphView) that only work
/// ordered after its allocation takes, and is freed by a node that ends the
/// graph.
///
/// ```no_run
/// # fn f(dev: &cudars_core::Device, step: &cudars_core::Kernel) -> cudars_core::Result<()> {
/// use std::sync::Arc;
/// use cudars_core::{CaptureMode, DeviceBuffer, GraphCompleteOptions, LaunchConfig};
/// let s = dev.create_stream(Default::default())?;
/// let counter = Arc::new(DeviceBuffer::from_host(dev, &[0u32], &s)?);
/// s.sync()?;
/// let mut b = dev.create_graph_builder()?;
/// b.begin_building(CaptureMode::default())?;
/// // A loop that runs while `step` (which calls `cudaGraphSetConditional`) says so.
/// let cond = b.create_conditional_handle(Some(1))?;
/// let mut body = b.while_loop(cond)?;
/// body.begin_building(CaptureMode::default())?;
/// // SAFETY: `step(counter, cond)` touches `counter[0]` only.
/// unsafe { body.launch(&LaunchConfig::new(1, 1), step, &[&counter.shared_view(), &cond])? };
/// body.end_building()?;
/// b.end_building()?;
/// let exec = b.complete(GraphCompleteOptions::default())?;
/// exec.launch(&s)?;
/// s.sync()?;
/// # Ok(()) }
/// ```
///
/// Conditional bodies ([`if_cond`](GraphBuilder::if_cond),
/// [`if_else`](GraphBuilder::if_else), [`switch`](GraphBuilder::switch),
/// [`while_loop`](GraphBuilder::while_loop)) are builders too: the conditional
/// node is added to the graph being captured (`cuGraphAddNode`, then
/// `cuStreamUpdateCaptureDependencies` so the captured work that follows depends
/// on it), and each body builder captures into its body graph
/// (`cuStreamBeginCaptureToGraph`). [`split`](GraphBuilder::split) forks builders
/// that capture in parallel into the same graph; [`join`](GraphBuilder::join)
/// brings them back.
///
/// Bad use is an error, never a leak: ending a builder that is not building, or
/// while builders split from it are not joined (or, for the top builder, while a
/// body builder is still building), joining a builder of another graph or
/// device, graph memory named where it is not yet allocated, a conditional body
/// on a driver before CUDA 12.3 (if/else and switch: 12.8) are
/// [`Error::InvalidArgument`] or [`Error::Unsupported`]. A builder
/// dropped while building ends its capture (the top builder destroys the
/// partial graph), joining first the split builders of its capture still open
/// (the top builder also ends the bodies' captures); a split builder dropped
/// without a join is joined to the builder whose capture it takes part in (the
/// top builder, or the conditional body it was split off).
///
/// Neither `Send` nor `Sync`, as [`Graph`].
pub struct GraphBuilder {
    pub(crate) id: u64,
    /// The id of the builder whose capture this one takes part in (its own, but
    /// for a split builder; the family's id for the top builder's capture).
    pub(crate) capture: u64,
    /// The graph allocations ordered before this builder's next work.
    pub(crate) visible: Cell<Vec<u64>>,
    pub(crate) stream: Stream,
    pub(crate) role: Role,
    pub(crate) phase: Phase,
    pub(crate) family: Arc<Family>,
    pub(crate) graph: Option<Graph>,
}

impl std::fmt::Debug for GraphBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphBuilder")
            .field("stream", &self.stream)
            .field("role", &self.role.kind())
            .field("phase", &self.phase)
            .finish()
    }
}

impl Stream {
    /// A graph builder for this stream's context and priority
    /// (`Stream.create_graph_builder()`). Unlike Python's, it captures on a new
    /// stream of its own rather than on this one, so that no other holder of
    /// this stream can queue unchecked work into the capture; the graph is
    /// launched on any stream anyway.
    ///
    /// # Errors
    /// The driver's error creating the stream.
    pub fn create_graph_builder(&self) -> Result<GraphBuilder> {
        let s = self.context().create_stream(StreamOptions {
            non_blocking: true,
            priority: Some(self.priority()?),
        })?;
        Ok(GraphBuilder::top(s))
    }
}

impl GraphBuilder {
    /// A graph builder on a new stream of `device`'s primary context
    /// ([`Device::create_graph_builder`]).
    ///
    /// # Errors
    /// The driver's error creating the stream.
    pub fn new(device: &Device) -> Result<Self> {
        let s = device.create_stream(StreamOptions {
            non_blocking: true,
            priority: None,
        })?;
        Ok(Self::top(s))
    }

    pub(crate) fn top(stream: Stream) -> Self {
        let family = Arc::new(Family {
            id: next_builder_id(),
            ctx: stream.context().clone(),
            keep: Keep::default(),
            frees: Mutex::default(),
            conditionals: Mutex::default(),
            children: Mutex::default(),
            ended: AtomicBool::new(false),
        });
        // The private capture stream, named for a reader of the timeline.
        crate::timeline::name_own_stream(&stream, || {
            format!("cuda-rs graph builder {}", family.id)
        });
        let mut b = Self::member(stream, Role::Top, Phase::Idle, family);
        b.capture = b.family.id;
        b
    }

    pub(crate) fn member(stream: Stream, role: Role, phase: Phase, family: Arc<Family>) -> Self {
        let id = next_builder_id();
        Self {
            id,
            capture: id,
            visible: Cell::default(),
            stream,
            role,
            phase,
            family,
            graph: None,
        }
    }

    /// The allocations ordered before this builder's next work.
    pub(crate) fn visible(&self) -> Vec<u64> {
        let v = self.visible.take();
        self.visible.set(v.clone());
        v
    }

    /// Adds `ids` to the allocations ordered before this builder's next work.
    pub(crate) fn see(&self, ids: impl IntoIterator<Item = u64>) {
        let mut v = self.visible.take();
        for id in ids {
            if !v.contains(&id) {
                v.push(id);
            }
        }
        self.visible.set(v);
    }

    /// Checks graph memory named by work queued here.
    pub(crate) fn check_graph_memory(
        &self,
        of: Option<u64>,
        what: impl Into<Cow<'static, str>>,
    ) -> Result<()> {
        match of {
            None => Ok(()),
            Some(_) => check_graph_memory(&self.visible(), of, what),
        }
    }

    pub(crate) fn place(&self) -> Place {
        Place {
            device: *self.device(),
            family: self.family.id,
            capture: self.capture,
        }
    }

    /// The device the builder captures work of.
    pub fn device(&self) -> &Device {
        self.stream.device()
    }

    /// The stream the builder captures on.
    ///
    /// # Safety
    /// Work queued on it directly while the builder is building is captured
    /// unchecked: it must keep to [`Stream::begin_capture`]'s contract (what it
    /// uses must outlive the graph and its instantiations), and no owning
    /// [`Buffer`](crate::Buffer) may be allocated on it (its free would be ordered on this
    /// stream, outside the graph, after the capture).
    pub unsafe fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Whether the builder was made by [`split`](Self::split) and not yet
    /// joined (`is_join_required`).
    pub fn is_join_required(&self) -> bool {
        self.role.kind() == RoleKind::Split && self.phase == Phase::Building
    }

    /// Whether the builder is capturing (`is_building`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when an error invalidated the capture (end the
    /// building to discard it); the driver's error.
    pub fn is_building(&self) -> Result<bool> {
        // Capture-gate rule: a query that queues nothing; no window to guard.
        match self.stream.capture_status()? {
            CaptureStatus::Active => Ok(true),
            CaptureStatus::None => Ok(false),
            CaptureStatus::Invalidated => Err(Error::invalid(
                "asking whether a graph builder is building",
                "an error invalidated the capture; end the building to discard it",
            )),
        }
    }

    /// Starts capturing (`begin_building(mode)`). [`CaptureMode::default()`] is
    /// `Relaxed`, as Python's default `"relaxed"`. A conditional body captures
    /// into its body graph (`cuStreamBeginCaptureToGraph`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a builder that is building or has ended,
    /// or a body whose graph was built already; [`Error::Unsupported`] for a body
    /// on a driver before CUDA 12.3; the driver's error.
    pub fn begin_building(&mut self, mode: CaptureMode) -> Result<&mut Self> {
        check_begin(
            self.role.kind(),
            self.phase,
            self.family.ended.load(Ordering::Acquire),
        )?;
        match self.role {
            Role::Top => {
                // SAFETY: the builder owns its stream (no other code queues on it,
                // run-once host functions included) and keeps alive whatever its
                // methods queue, in the graph's keep list; `stream()` is `unsafe`.
                unsafe { self.stream.begin_capture(mode) }?;
            }
            Role::Body { graph } => {
                const WHAT: &str = "beginning to build a conditional node's body";
                crate::versions::require_driver(12030, "capturing into a graph", || WHAT)?;
                let _current = self.stream.context().ensure_current()?;
                // SAFETY: a live body graph (its node's graph is being captured,
                // the family has not ended); a live stream the builder owns; no
                // dependencies.
                unsafe {
                    sys::cuStreamBeginCaptureToGraph(
                        self.stream.handle(),
                        graph,
                        std::ptr::null(),
                        std::ptr::null(),
                        0,
                        mode.raw(),
                    )
                }
                .check(|| WHAT)?;
                lock(&self.family.children).push(OpenChild {
                    id: self.id,
                    capture: self.capture,
                    stream: self.stream.clone(),
                    kind: RoleKind::Body,
                    origin: None,
                });
            }
            Role::Split { .. } => {}
        }
        self.phase = Phase::Building;
        Ok(self)
    }

    /// How many builders made from this one are still building: for a body,
    /// the split builders of its capture (at any depth); for the top builder,
    /// every builder of the graph.
    pub(crate) fn open_children(&self) -> usize {
        lock(&self.family.children)
            .iter()
            .filter(|c| {
                self.role.kind() == RoleKind::Top
                    || (c.kind == RoleKind::Split && c.capture == self.capture)
            })
            .count()
    }

    pub(crate) fn forget_child(&self) {
        lock(&self.family.children).retain(|c| c.id != self.id);
    }

    /// Ends the capture (`end_building()`). For the top builder, graph
    /// allocations of [`allocate`](Self::allocate) are freed first (captured free
    /// nodes, after all the work), and the graph is kept for
    /// [`complete`](Self::complete), [`graph`](Self::graph) and
    /// [`into_graph`](Self::into_graph). A body's graph belongs to its
    /// conditional node.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a builder that is not building, a split
    /// builder (join it), or one with builders made from it still building;
    /// the driver's error (an invalidated capture is
    /// `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`: the builder has then ended, and
    /// the partial graph is destroyed).
    pub fn end_building(&mut self) -> Result<()> {
        check_end(self.role.kind(), self.phase, self.open_children())?;
        match self.role {
            Role::Top => {
                let frees = std::mem::take(&mut *lock(&self.family.frees));
                let mut freed = Ok(());
                for f in &frees {
                    let _current = self.family.ctx.ensure_current()?;
                    // SAFETY: a graph allocation of this capture, freed once (a
                    // captured free node); every builder of the graph has joined
                    // this stream or ended, so the free follows all the captured work.
                    let r = unsafe { sys::cuMemFreeAsync(f.ptr, self.stream.handle()) }
                        .check(|| format!("freeing {} bytes of graph memory", f.size));
                    if freed.is_ok() {
                        freed = r;
                    }
                }
                self.family.ended.store(true, Ordering::Release);
                self.phase = Phase::Ended;
                let (rc, g) = end_capture_raw(&self.stream);
                if let Err(e) = rc.check(|| "ending a graph builder") {
                    if !g.is_null() {
                        // SAFETY: the partial graph, ours, destroyed once.
                        let rc = unsafe { sys::cuGraphDestroy(g) };
                        crate::cleanup::driver(rc, "destroying a graph (cuGraphDestroy)");
                    }
                    return Err(e);
                }
                let graph = Graph::wrap(
                    g,
                    self.family.ctx.clone(),
                    Some(Arc::new(Root(g))),
                    self.family.keep.clone(),
                );
                // The graph is destroyed with `graph` if freeing failed.
                freed?;
                for (node, condition, kind, bodies) in lock(&self.family.conditionals).drain(..) {
                    let bodies = bodies.into_iter().map(|g| g as sys::CUgraph).collect();
                    graph.record_conditional(graph.node(node.0), condition, kind, bodies);
                }
                self.graph = Some(graph);
                Ok(())
            }
            Role::Body { .. } => {
                self.phase = Phase::Ended;
                self.forget_child();
                if self.family.ended.load(Ordering::Acquire) {
                    // The top builder was dropped and ended this capture.
                    return Err(Error::invalid(
                        "ending a conditional node's body builder",
                        "the graph it belongs to was dropped while building",
                    ));
                }
                // The body graph comes back; its conditional node owns it.
                let (rc, _) = end_capture_raw(&self.stream);
                rc.check(|| "ending a conditional node's body builder")
            }
            Role::Split { .. } => Err(Error::invalid(
                "ending a graph builder",
                "a builder made by `split` is ended by joining it (`join`)",
            )),
        }
    }

    /// The graph built, once the top builder has ended.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] before `end_building`, or for a split or
    /// body builder (their work is part of the top builder's graph).
    pub fn graph(&self) -> Result<&Graph> {
        self.graph.as_ref().ok_or_else(|| {
            Error::invalid(
                "reading a graph builder's graph",
                match self.role.kind() {
                    RoleKind::Top => "the builder has not ended building",
                    RoleKind::Split | RoleKind::Body => {
                        "only the top builder has a graph (split and body builders add to it)"
                    }
                },
            )
        })
    }

    /// Takes the built graph (see [`graph`](Self::graph)).
    ///
    /// # Errors
    /// As [`graph`](Self::graph).
    pub fn into_graph(mut self) -> Result<Graph> {
        self.graph()?;
        self.graph
            .take()
            .ok_or_else(|| Error::invalid("taking a graph builder's graph", "the graph is gone"))
    }

    /// Instantiates the built graph (`complete(options)`).
    ///
    /// # Errors
    /// As [`graph`](Self::graph); the driver's error instantiating.
    pub fn complete(&self, options: GraphCompleteOptions) -> Result<GraphExec> {
        self.graph()?.instantiate(options)
    }

    /// Writes the built graph as a Graphviz DOT file (`debug_dot_print`).
    ///
    /// # Errors
    /// As [`graph`](Self::graph) and [`Graph::debug_dot_print`].
    pub fn debug_dot_print(&self, path: impl AsRef<std::path::Path>) -> Result<()> {
        self.graph()?.debug_dot_print(path)
    }

    /// As [`debug_dot_print`](Self::debug_dot_print) with the flags of
    /// `options` (`debug_dot_print(path, options)`).
    ///
    /// # Errors
    /// As [`graph`](Self::graph) and [`Graph::debug_dot_print_with`].
    pub fn debug_dot_print_with(
        &self,
        path: impl AsRef<std::path::Path>,
        options: crate::graph::debug::GraphDebugPrintOptions,
    ) -> Result<()> {
        self.graph()?.debug_dot_print_with(path, options)
    }

    /// Checks that work may be queued: the builder's phase and graph, then that
    /// its stream really is capturing (work queued on a stream whose capture
    /// ended, for instance by a driver error, would run at once).
    pub(crate) fn check_building(&self, what: impl Into<Cow<'static, str>>) -> Result<()> {
        let what = what.into();
        self.check_phase(what.clone())?;
        // Capture-gate rule: the builder owns its stream, whose capture begins
        // and ends only through the builder's `&mut self` methods (`stream()`
        // is `unsafe` and binds its caller to `begin_capture`'s contract), so
        // no capture begins or ends between this check and the queuing that
        // follows it under the caller's `&self`. An error may invalidate the
        // capture meanwhile; the driver then refuses the queuing.
        active(self.stream.capture_status()?, what)
    }

    /// As [`check_building`](Self::check_building), returning the capture's
    /// graph and current dependencies (one `cuStreamGetCaptureInfo`, which
    /// answers the status too), for work that adds nodes itself.
    pub(crate) fn capturing(&self, what: impl Into<Cow<'static, str>>) -> Result<CaptureInfo> {
        let what = what.into();
        self.check_phase(what.clone())?;
        // Capture-gate rule: as in `check_building`.
        let info = self.stream.capture_info()?;
        active(info.status, what)?;
        Ok(info)
    }

    /// The builder's own state allows work (no driver call).
    pub(crate) fn check_phase(&self, what: Cow<'static, str>) -> Result<()> {
        check_building(
            self.role.kind(),
            self.phase,
            self.family.ended.load(Ordering::Acquire),
            what,
        )
    }

    /// Splits `count - 1` builders off this one (`split(count)`: Python's tuple
    /// starts with the original builder, which is `self` here). Each new builder
    /// starts after the work captured so far and captures into the same graph,
    /// in parallel; [`join`](Self::join) brings them back (one dropped unjoined
    /// is joined to the builder whose capture it takes part in: the top builder,
    /// or the conditional body it was split off).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a count below 2 or a builder that is not
    /// building; the driver's error.
    pub fn split(&self, count: usize) -> Result<Vec<GraphBuilder>> {
        let n = check_split_count(count)?;
        self.check_building("splitting a graph builder")?;
        let streams = self.stream.fork(n)?;
        let origin = match &self.role {
            Role::Split { origin } => origin.clone(),
            Role::Top | Role::Body { .. } => self.stream.clone(),
        };
        let mut children = lock(&self.family.children);
        Ok(streams
            .into_iter()
            .map(|s| {
                let mut b = Self::member(
                    s.clone(),
                    Role::Split {
                        origin: origin.clone(),
                    },
                    Phase::Building,
                    self.family.clone(),
                );
                b.capture = self.capture;
                b.see(self.visible());
                children.push(OpenChild {
                    id: b.id,
                    capture: b.capture,
                    stream: s,
                    kind: RoleKind::Split,
                    origin: Some(origin.clone()),
                });
                b
            })
            .collect())
    }

    /// Joins builders made by [`split`](Self::split) (of this builder's graph)
    /// into this one: later work here waits for all their work (`join`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a builder of another device
    /// ([`InvalidKind::OtherDevice`](crate::InvalidKind::OtherDevice)) or graph,
    /// one that is not a split builder or was split off another capture (a
    /// conditional body's and the top builder's are separate), or when this
    /// builder is not building;
    /// the driver's error. The builders not joined yet are joined as they drop
    /// (see [`split`](Self::split)).
    pub fn join(&self, others: impl IntoIterator<Item = GraphBuilder>) -> Result<()> {
        self.check_building("joining graph builders")?;
        for mut other in others {
            check_join(self.place(), other.place(), other.role.kind())?;
            self.stream.wait_stream(&other.stream)?;
            self.see(other.visible());
            other.phase = Phase::Ended;
            other.forget_child();
        }
        Ok(())
    }

    /// A condition for conditional nodes of the graph being built
    /// (`create_conditional_handle(default_value)`); with `default`, it is reset
    /// to it at the start of each launch. Kernels set it with
    /// `cudaGraphSetConditional` (pass it as a kernel argument; NVRTC needs
    /// [`GraphCondition::DEVICE_DECLARATIONS`](crate::GraphCondition::DEVICE_DECLARATIONS)
    /// before the kernels).
    ///
    /// Give it to a conditional node ([`if_cond`](Self::if_cond), …) before the
    /// graph is completed: the driver refuses to instantiate a graph holding a
    /// condition that no node uses (`CUDA_ERROR_INVALID_VALUE`, seen on the H100).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when not building; [`Error::Unsupported`] on a
    /// driver before CUDA 12.3; the driver's error.
    pub fn create_conditional_handle(&self, default: Option<u32>) -> Result<GraphCondition> {
        const WHAT: &str = "creating a graph condition in a graph builder";
        let info = self.capturing(WHAT)?;
        crate::versions::require_driver(12030, "graph conditions", || WHAT)?;
        create_condition_in(info.graph, &self.family.ctx, default)
    }

    /// Adds a conditional node of `kind` at this point of the capture and
    /// returns a builder for each of its bodies (not yet building).
    pub(crate) fn conditional(
        &self,
        condition: GraphCondition,
        kind: ConditionalKind,
    ) -> Result<Vec<Self>> {
        let what = || format!("adding a {kind:?} node to a graph builder");
        let info = self.capturing(what())?;
        let (mut p, size) = conditional_params(&self.family.ctx, condition, kind)?;
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        let _current = self.family.ctx.ensure_current()?;
        // SAFETY: `p` is a fully initialised conditional node description; the
        // dependencies are the capture's current ones, nodes of its graph.
        unsafe {
            add_node(
                &mut node,
                info.graph,
                info.deps.as_ptr(),
                info.deps.len(),
                &mut p,
            )
        }
        .check(what)?;
        self.stream.set_capture_dependency(node)?;
        let handles = body_handles(&p, size)?;
        if self.capture == self.family.id {
            let addresses = handles.iter().map(|&g| g as usize).collect();
            lock(&self.family.conditionals).push((CapturedNode(node), condition, kind, addresses));
        }
        handles
            .into_iter()
            .map(|graph| {
                let s = self.family.ctx.create_stream(StreamOptions {
                    non_blocking: true,
                    priority: None,
                })?;
                crate::timeline::name_own_stream(&s, || {
                    format!("cuda-rs graph builder {}: conditional body", self.family.id)
                });
                let b = Self::member(s, Role::Body { graph }, Phase::Idle, self.family.clone());
                b.see(self.visible());
                Ok(b)
            })
            .collect()
    }

    pub(crate) fn one_body(mut bodies: Vec<Self>, what: &'static str) -> Result<Self> {
        bodies
            .pop()
            .ok_or_else(|| Error::unsupported(what, "the driver returned no body graph"))
    }

    /// An `if` node on `condition` (`if_cond`): its body, returned, runs when the
    /// condition is non-zero. CUDA 12.3 drivers and later.
    ///
    /// # Errors
    /// As [`while_loop`](Self::while_loop).
    pub fn if_cond(&self, condition: GraphCondition) -> Result<GraphBuilder> {
        let bodies = self.conditional(condition, ConditionalKind::If)?;
        Self::one_body(bodies, "adding an if node to a graph builder")
    }

    /// An `if`/`else` node on `condition` (`if_else`): the first body runs when
    /// the condition is non-zero, the second when it is zero. CUDA 12.8 drivers
    /// and later.
    ///
    /// # Errors
    /// As [`while_loop`](Self::while_loop); [`Error::Unsupported`] before CUDA 12.8.
    pub fn if_else(&self, condition: GraphCondition) -> Result<(GraphBuilder, GraphBuilder)> {
        let mut bodies = self.conditional(condition, ConditionalKind::IfElse)?;
        const WHAT: &str = "adding an if/else node to a graph builder";
        let second = Self::one_body(bodies.split_off(1), WHAT)?;
        let first = Self::one_body(bodies, WHAT)?;
        Ok((first, second))
    }

    /// A `switch` node on `condition` with `count` bodies (`switch`): body `i`
    /// runs when the condition is `i` (none when it is `count` or more). CUDA
    /// 12.8 drivers and later.
    ///
    /// # Errors
    /// As [`while_loop`](Self::while_loop); [`Error::InvalidArgument`] for a
    /// count of 0; [`Error::Unsupported`] before CUDA 12.8.
    pub fn switch(&self, condition: GraphCondition, count: u32) -> Result<Vec<GraphBuilder>> {
        self.conditional(condition, ConditionalKind::Switch(count))
    }

    /// A `while` node on `condition` (`while_loop`): its body, returned, runs
    /// while the condition is non-zero (checked before each run; a kernel in the
    /// body sets it). CUDA 12.3 drivers and later.
    ///
    /// The body builder captures into the node's body graph: call
    /// [`begin_building`](Self::begin_building) on it, queue the body's work,
    /// and [`end_building`](Self::end_building) before this builder's graph
    /// ends.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when not building; [`Error::Unsupported`] on a
    /// driver before CUDA 12.3; the driver's error.
    pub fn while_loop(&self, condition: GraphCondition) -> Result<GraphBuilder> {
        let bodies = self.conditional(condition, ConditionalKind::While)?;
        Self::one_body(bodies, "adding a while node to a graph builder")
    }

    /// Ends the capture of the top builder and everything made from it, and
    /// destroys the partial graph (a dropped builder).
    pub(crate) fn abandon_top(&mut self) {
        self.family.ended.store(true, Ordering::Release);
        let children = std::mem::take(&mut *lock(&self.family.children));
        // Splits first, each joined to the builder whose capture it is part
        // of, then the bodies' captures; their graphs belong to the partial graph.
        for c in children.iter().filter(|c| c.kind == RoleKind::Split) {
            if let Some(origin) = &c.origin {
                crate::cleanup::report(origin.wait_stream(&c.stream));
            }
        }
        // Ending an abandoned capture reports what became of it (invalidated,
        // already ended by its parent): the expected outcomes of abandoning it,
        // not failures to report.
        for c in children.iter().rev().filter(|c| c.kind == RoleKind::Body) {
            let _ = end_capture_raw(&c.stream);
        }
        lock(&self.family.frees).clear();
        let (_, g) = end_capture_raw(&self.stream);
        if !g.is_null() {
            // SAFETY: the partial graph, ours, destroyed once.
            let rc = unsafe { sys::cuGraphDestroy(g) };
            crate::cleanup::driver(rc, "destroying a graph (cuGraphDestroy)");
        }
    }
}

impl Drop for GraphBuilder {
    fn drop(&mut self) {
        if self.phase != Phase::Building {
            return;
        }
        self.phase = Phase::Ended;
        match &self.role {
            Role::Top => self.abandon_top(),
            Role::Split { origin } => {
                let open = lock(&self.family.children).iter().any(|c| c.id == self.id);
                self.forget_child();
                if open {
                    // Joined to the builder whose capture it is part of, so that
                    // builder can end.
                    crate::cleanup::report(origin.wait_stream(&self.stream));
                }
            }
            Role::Body { .. } => {
                let (open, splits): (Vec<_>, Vec<_>) = {
                    let mut children = lock(&self.family.children);
                    let mine = |c: &OpenChild| c.id == self.id || c.capture == self.capture;
                    let (ours, rest): (Vec<_>, Vec<_>) = children.drain(..).partition(mine);
                    *children = rest;
                    ours.into_iter().partition(|c| c.id == self.id)
                };
                // The body graph belongs to its node: ended, not destroyed (the
                // top builder may have ended this capture already), after the
                // splits of its capture are joined back.
                if !open.is_empty() {
                    for c in &splits {
                        crate::cleanup::report(self.stream.wait_stream(&c.stream));
                    }
                    // As in `abandon_top`: not a failure to report.
                    let _ = end_capture_raw(&self.stream);
                }
            }
        }
    }
}

// A graph builder from the device.
impl Device {
    /// A graph builder on a new stream of this device's primary context
    /// (`Device.create_graph_builder()`; see
    /// [`GraphBuilder::new`](crate::GraphBuilder::new)).
    ///
    /// # Errors
    /// As [`GraphBuilder::new`](crate::GraphBuilder::new).
    pub fn create_graph_builder(&self) -> Result<crate::graph::builder::GraphBuilder> {
        crate::graph::builder::GraphBuilder::new(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::InvalidKind;
    use crate::error::kind_of as kind;
    #[allow(unused_imports)]
    use crate::graph::builder_rules::*;
    use crate::graph::view::check_signature_sizes;
    #[allow(unused_imports)]
    use crate::graph::view::*;
    use crate::launch::KernelArg;
    use crate::launch::typed_kernel::CaptureSignature;
    use crate::memory::arc_view::ArcView;

    #[test]
    fn a_builder_begins_once_and_only_before_its_graph_is_built() {
        assert!(check_begin(RoleKind::Top, Phase::Idle, false).is_ok());
        assert!(check_begin(RoleKind::Body, Phase::Idle, false).is_ok());
        for phase in [Phase::Building, Phase::Ended] {
            for role in [RoleKind::Top, RoleKind::Split, RoleKind::Body] {
                assert_eq!(kind(check_begin(role, phase, false)), InvalidKind::Other);
            }
        }
        let e = check_begin(RoleKind::Body, Phase::Idle, true).unwrap_err();
        assert!(e.to_string().contains("built already"), "{e}");
        let e = check_begin(RoleKind::Top, Phase::Ended, false).unwrap_err();
        assert!(e.to_string().contains("cannot resume"), "{e}");
    }

    #[test]
    fn ending_needs_a_building_builder_with_nothing_left_open() {
        assert!(check_end(RoleKind::Top, Phase::Building, 0).is_ok());
        assert!(check_end(RoleKind::Body, Phase::Building, 0).is_ok());
        let e = check_end(RoleKind::Top, Phase::Idle, 0).unwrap_err();
        assert!(e.to_string().contains("not building"), "{e}");
        let e = check_end(RoleKind::Top, Phase::Ended, 0).unwrap_err();
        assert!(e.to_string().contains("already ended"), "{e}");
        let e = check_end(RoleKind::Top, Phase::Building, 2).unwrap_err();
        assert!(e.to_string().contains("2 builders made from it are"), "{e}");
        let e = check_end(RoleKind::Body, Phase::Building, 1).unwrap_err();
        assert!(e.to_string().contains("1 builder made from it is"), "{e}");
        let e = check_end(RoleKind::Split, Phase::Building, 0).unwrap_err();
        assert!(e.to_string().contains("joining it"), "{e}");
    }

    #[test]
    fn work_is_queued_only_while_building() {
        for role in [RoleKind::Top, RoleKind::Split, RoleKind::Body] {
            assert!(check_building(role, Phase::Building, false, "t").is_ok());
            let e = check_building(role, Phase::Idle, false, "launching").unwrap_err();
            assert!(e.to_string().contains("begin_building"), "{e}");
            assert_eq!(
                kind(check_building(role, Phase::Ended, false, "t")),
                InvalidKind::Other
            );
        }
        // The top builder's own phase says it all; the others also follow the
        // graph they add to, whose end stops their streams capturing.
        assert!(check_building(RoleKind::Top, Phase::Building, true, "t").is_ok());
        for role in [RoleKind::Split, RoleKind::Body] {
            let e = check_building(role, Phase::Building, true, "t").unwrap_err();
            assert!(e.to_string().contains("has ended or was dropped"), "{e}");
        }
    }

    #[test]
    fn split_counts_the_original_builder_as_python_does() {
        assert_eq!(check_split_count(2).unwrap(), 1);
        assert_eq!(check_split_count(5).unwrap(), 4);
        for bad in [0, 1] {
            let e = check_split_count(bad).unwrap_err();
            assert!(e.to_string().contains(&format!("{bad} asked")), "{e}");
        }
    }

    #[test]
    fn only_split_builders_of_the_same_capture_and_device_join() {
        let (d0, d1) = (Device::for_tests(0), Device::for_tests(1));
        let at = |device, family, capture| Place {
            device,
            family,
            capture,
        };
        let here = at(d0, 7, 1);
        assert!(check_join(here, here, RoleKind::Split).is_ok());
        assert_eq!(
            kind(check_join(here, at(d1, 7, 1), RoleKind::Split)),
            InvalidKind::OtherDevice
        );
        let e = check_join(here, at(d0, 8, 1), RoleKind::Split).unwrap_err();
        assert!(e.to_string().contains("another graph"), "{e}");
        for role in [RoleKind::Top, RoleKind::Body] {
            let e = check_join(here, here, role).unwrap_err();
            assert!(e.to_string().contains("made by `split`"), "{e}");
        }
        let e = check_join(here, at(d0, 7, 2), RoleKind::Split).unwrap_err();
        assert!(e.to_string().contains("another capture"), "{e}");
        assert!(check_device(&d0, ("memory", &d0), "t").is_ok());
        assert!(check_graph_memory(&[], None, "t").is_ok());
        assert!(check_graph_memory(&[2, 3], Some(3), "t").is_ok());
        let e = check_graph_memory(&[2, 3], Some(4), "t").unwrap_err();
        assert!(e.to_string().contains("not allocated before"), "{e}");
        let e = check_device(&d0, ("event", &d1), "t").unwrap_err();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::OtherDevice));
        assert!(e.to_string().contains("the event on device 1"), "{e}");
    }

    #[test]
    fn capture_args_keep_memory_and_pass_values() {
        // `u64`s, so that the bytes are aligned for the `u32` view.
        let mut words = [0u64; 8];
        let buf = crate::memory::arc_view::host_backed(bytemuck::cast_slice_mut(&mut words));
        let view = ArcView::<u32>::of_buffer(&buf).unwrap();
        let before = Arc::strong_count(&buf);
        let kept = CaptureArg::keep_alive(&view).unwrap();
        assert_eq!(Arc::strong_count(&buf), before + 1);
        drop(kept);
        let arg = view.as_kernel_arg();
        assert_eq!(arg.arg_size(), 8);
        // SAFETY: the view's stored address, 8 readable bytes.
        assert_eq!(unsafe { *arg.arg_ptr().cast::<u64>() }, buf.ptr());
        assert_eq!(view.memory_device(), Some(buf.device()));
        let graph_memory = GraphView {
            view: view.clone(),
            alloc: Some(11),
        };
        assert_eq!(graph_memory.graph_memory_of(), Some(11));
        assert_eq!(GraphView::from(&view).graph_memory_of(), None);
        assert_eq!(view.graph_memory_of(), None);
        let part = graph_memory.slice(4..).unwrap();
        assert_eq!((part.len(), part.is_graph_memory()), (12, true));
        // SAFETY: both point at their stored addresses, 8 readable bytes.
        let (whole, tail) = unsafe {
            (
                *graph_memory.arg_ptr().cast::<u64>(),
                *part.arg_ptr().cast::<u64>(),
            )
        };
        assert_eq!(tail - whole, 16);
        let args: [&dyn CaptureArg; 2] = [&view, &7u32];
        assert!(check_signature_sizes(|| "k".into(), &[8, 4], &args).is_ok());
        let e = check_signature_sizes(|| "k".into(), &[8, 8], &args).unwrap_err();
        assert!(e.to_string().contains("argument 1 is 4 bytes"), "{e}");
        let e = check_signature_sizes(|| "k".into(), &[8, 4, 4], &args).unwrap_err();
        assert!(
            e.to_string().contains("2 arguments for a signature of 3"),
            "{e}"
        );
        // A typed signature's captured tuple: views for pointers, values for
        // values, a `bool` as a `u8`.
        type Sig = (
            crate::launch::typed_kernel::ConstPtr<u32>,
            crate::launch::typed_kernel::MutPtr<u32>,
            u64,
            bool,
        );
        let captured: <Sig as CaptureSignature>::Captured =
            (GraphView::from(&view), GraphView::from(&view), 3, 1);
        Sig::with_captured(&captured, |all| {
            let sizes: Vec<usize> = all.iter().map(|a| a.as_kernel_arg().arg_size()).collect();
            assert_eq!(
                sizes,
                <Sig as crate::launch::typed_kernel::Signature>::SIZES
            );
            assert!(all[0].keep_alive().is_some() && all[2].keep_alive().is_none());
        });
        let n = 5u32;
        assert!(n.keep_alive().is_none() && n.memory_device().is_none());
        assert_eq!(n.as_kernel_arg().arg_size(), 4);
        let c = GraphCondition(9);
        assert!(c.keep_alive().is_none());
        assert_eq!(c.as_kernel_arg().arg_size(), 8);
        assert_eq!(
            CaptureMode::default().raw(),
            sys::CU_STREAM_CAPTURE_MODE_RELAXED
        );
    }
}
