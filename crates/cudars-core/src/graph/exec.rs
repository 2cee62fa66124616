//! Executable graphs: [`Graph::instantiate`], [`GraphExec`] (upload, launch, update).

use std::fmt;
use std::sync::{Arc, Mutex};

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::stream::QueueId;
use crate::{
    code::kernel::Kernel, context::Context, launch::KernelArg, launch::LaunchConfig, stream::Stream,
};

use super::define::{Graph, GraphNode, Keep, Root, keep, keep_all, keep_args, kernel_node_params};

impl Graph {
    /// Instantiates the graph for launching.
    ///
    /// # Errors
    /// The driver's error.
    pub fn instantiate(&self, options: GraphCompleteOptions) -> Result<GraphExec> {
        let _current = self.ctx.ensure_current()?;
        let mut flags = 0u64;
        if options.auto_free_on_launch {
            flags |= u64::from(sys::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH.0);
        }
        if options.use_node_priority {
            flags |= u64::from(sys::CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY.0);
        }
        if options.device_launch {
            flags |= u64::from(sys::CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH.0);
        }
        let mut exec: sys::CUgraphExec = std::ptr::null_mut();
        // SAFETY: `exec` is valid for writes; a live graph.
        unsafe { sys::cuGraphInstantiate(&mut exec, self.handle, flags) }
            .check(|| "instantiating a graph")?;
        Ok(GraphExec {
            handle: exec,
            ctx: self.ctx.clone(),
            keep: self.keep.clone(),
            source: (self.id, self.root.clone()),
            used_on: Mutex::new(Vec::new()),
            _not_sync: std::marker::PhantomData,
        })
    }
}

/// Options of [`Graph::instantiate`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GraphCompleteOptions {
    /// Free unfreed graph allocations before each relaunch.
    pub auto_free_on_launch: bool,
    /// Use the nodes' priorities.
    pub use_node_priority: bool,
    /// Make the graph launchable from the device.
    pub device_launch: bool,
}

/// An instantiated graph (`CUgraphExec`), ready to launch.
///
/// On drop it waits for the streams it was launched or uploaded on (so no host
/// callback or kernel it keeps alive is freed under a running launch), then is
/// destroyed. `Send` but not `Sync`: launches of one executable graph must be
/// serialised by the caller, which `&self` from one thread at a time guarantees.
pub struct GraphExec {
    pub(super) handle: sys::CUgraphExec,
    pub(super) ctx: Context,
    pub(super) keep: Keep,
    /// The graph it was instantiated from: its id (its nodes address this
    /// instantiation's nodes) and its root, kept so those node handles stay valid.
    source: (u64, Option<Arc<Root>>),
    /// The queues it was launched or uploaded on, each with its stream: what
    /// `Drop` waits for before releasing what the launches use.
    used_on: Mutex<Vec<(QueueId, Stream)>>,
    _not_sync: std::marker::PhantomData<std::cell::Cell<()>>,
}

// SAFETY: executable graph handles may be used from any thread, one at a time
// (`GraphExec` is not `Sync`).
// Soundness contract: rule 11.
unsafe impl Send for GraphExec {}

impl fmt::Debug for GraphExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphExec")
            .field("handle", &self.handle)
            .finish()
    }
}

impl GraphExec {
    /// Takes the record of the host nodes that panicked since the last report
    /// (see [`Graph::take_callback_panic`], whose record this is too).
    pub fn take_callback_panic(&self) -> Option<crate::error::CallbackPanic> {
        self.keep.panics.take()
    }

    /// The driver's handle.
    pub fn handle(&self) -> sys::CUgraphExec {
        self.handle
    }

    fn note_stream(&self, stream: &Stream) {
        let mut v = self.used_on.lock().unwrap_or_else(|e| e.into_inner());
        let q = stream.queue_id();
        if !v.iter().any(|(u, _)| *u == q) {
            v.push((q, stream.clone()));
        }
    }

    /// Uploads the graph's work to the device ahead of the first launch.
    ///
    /// # Errors
    /// The driver's error.
    pub fn upload(&self, stream: &Stream) -> Result<()> {
        let _current = stream.context().ensure_current()?;
        self.note_stream(stream);
        // SAFETY: live graph and stream.
        unsafe { sys::cuGraphUpload(self.handle, stream.handle()) }.check(|| "uploading a graph")
    }

    /// Launches the graph on `stream`.
    ///
    /// # Errors
    /// The driver's error.
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        let _current = stream.context().ensure_current()?;
        self.note_stream(stream);
        // SAFETY: live graph and stream.
        unsafe { sys::cuGraphLaunch(self.handle, stream.handle()) }.check(|| "launching a graph")
    }

    /// Updates this instantiation in place to match `graph`, which must have the
    /// same topology (parameters may differ).
    ///
    /// # Errors
    /// The driver's error, with the reason the update was refused.
    pub fn update(&mut self, graph: &Graph) -> Result<()> {
        let _current = self.ctx.ensure_current()?;
        let mut info = sys::CUgraphExecUpdateResultInfo::default();
        // SAFETY: live graphs; `info` is valid for writes.
        let rc = unsafe { sys::cuGraphExecUpdate(self.handle, graph.handle, &mut info) };
        rc.check(|| {
            format!(
                "updating an instantiated graph ({})",
                update_result_name(info.result)
            )
        })?;
        keep_all(&self.keep, &graph.keep);
        Ok(())
    }
}

/// The name of a `cuGraphExecUpdate` result (`CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED`,
/// …), as `cuda.core`'s message names it; an unknown one by its number.
fn update_result_name(r: sys::CUgraphExecUpdateResult) -> String {
    let name = match r {
        sys::CU_GRAPH_EXEC_UPDATE_SUCCESS => "CU_GRAPH_EXEC_UPDATE_SUCCESS",
        sys::CU_GRAPH_EXEC_UPDATE_ERROR => "CU_GRAPH_EXEC_UPDATE_ERROR",
        sys::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED => {
            "CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED"
        }
        sys::CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED => {
            "CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED"
        }
        sys::CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED => {
            "CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED"
        }
        sys::CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED => {
            "CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED"
        }
        sys::CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED => "CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED",
        sys::CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE => {
            "CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE"
        }
        sys::CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED => {
            "CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED"
        }
        other => return format!("update result {}", other.0),
    };
    name.to_owned()
}

impl GraphExec {
    /// Checks that `graph` is the one this was instantiated from and `node` one of
    /// its nodes. Borrowing the (`!Send`) graph also proves that no other thread is
    /// changing it while the driver reads its node.
    pub(super) fn check_node(
        &self,
        graph: &Graph,
        node: GraphNode,
        what: &'static str,
    ) -> Result<()> {
        if graph.id != self.source.0 {
            return Err(Error::invalid(
                what,
                "the graph is not the one this was instantiated from",
            ));
        }
        graph.own(node, what)
    }

    /// Changes what kernel node `node` of `graph` (the graph this was instantiated
    /// from) launches in this instantiation, without instantiating again
    /// (`cuGraphExecNodeSetParams`): another configuration, other arguments, or
    /// another kernel. Later launches use the new parameters; the graph itself is
    /// unchanged.
    ///
    /// # Safety
    /// As [`Graph::add_kernel`], for every later launch of this instantiation.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another graph than the source, a node of
    /// another graph, or wrong arguments;
    /// the driver's error (for example, a node that is not a kernel node).
    pub unsafe fn set_kernel_node(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        config: &LaunchConfig,
        kernel: &Kernel,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        self.check_node(
            graph,
            node,
            "changing a kernel node of an instantiated graph",
        )?;
        let mut ptrs = Vec::new();
        let mut p = kernel_node_params(&self.ctx, config, kernel, args, &mut ptrs)?;
        let _current = self.ctx.ensure_current()?;
        // SAFETY: a node of the source graph (kept alive by `source`); `p` is a
        // kernel node description valid for the call (the driver copies it).
        unsafe { sys::cuGraphExecNodeSetParams(self.handle, node.handle, &mut p) }.check(|| {
            format!(
                "changing a node of an instantiated graph to kernel `{}`",
                kernel.name()
            )
        })?;
        keep(&self.keep, Arc::new(kernel.clone()));
        keep_args(&self.keep, args);
        Ok(())
    }

    /// Turns node `node` (a kernel, memset or memcpy node of `graph`, the source) off
    /// or back on in this instantiation (`cuGraphNodeSetEnabled`): a disabled node
    /// does nothing when the graph runs, and its dependencies still hold.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another graph than the source or a node of
    /// another graph; the driver's error (for other kinds of node).
    pub fn set_node_enabled(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        enabled: bool,
    ) -> Result<()> {
        self.check_node(graph, node, "enabling a node of an instantiated graph")?;
        let _current = self.ctx.ensure_current()?;
        // SAFETY: a node of the source graph (kept alive by `source`).
        unsafe { sys::cuGraphNodeSetEnabled(self.handle, node.handle, u32::from(enabled)) }
            .check(|| "enabling or disabling a node of an instantiated graph")
    }

    /// Whether node `node` is enabled in this instantiation
    /// (`cuGraphNodeGetEnabled`).
    ///
    /// # Errors
    /// As [`set_node_enabled`](Self::set_node_enabled).
    pub fn is_node_enabled(&self, graph: &Graph, node: GraphNode) -> Result<bool> {
        self.check_node(
            graph,
            node,
            "reading whether a node of an instantiated graph is enabled",
        )?;
        let _current = self.ctx.ensure_current()?;
        let mut on = 0;
        // SAFETY: a node of the source graph (kept alive by `source`); `on` is valid
        // for writes.
        unsafe { sys::cuGraphNodeGetEnabled(self.handle, node.handle, &mut on) }
            .check(|| "reading whether a node of an instantiated graph is enabled")?;
        Ok(on != 0)
    }
}

// Deferred-release rule: on a driver callback thread (where waiting for a stream
// could wait for the callback itself, and CUDA calls are forbidden), or when
// waiting for a stream it ran on is refused for now, the whole instantiation
// moves to the deferred queue and is dropped there (never destroyed, nor its
// host callbacks freed, under a launch that may still run).
impl Drop for GraphExec {
    fn drop(&mut self) {
        if self.handle.is_null() {
            return;
        }
        let streams = std::mem::take(self.used_on.get_mut().unwrap_or_else(|e| e.into_inner()));
        // Launched work may still use what `keep` holds: wait for it first. A
        // wait refused for now (a capture forbids it) keeps its stream for the
        // deferred drop, which waits again. Rule 5 of the soundness contract:
        // another thread's per-thread default stream is reached only by
        // synchronising the context.
        let left: Vec<(QueueId, Stream)> = if crate::deferred::must_defer() {
            streams
        } else {
            streams
                .into_iter()
                .filter(|(q, s)| {
                    let r = if q.reachable_here() {
                        s.drain()
                    } else {
                        s.context().sync()
                    };
                    matches!(r, Err(e) if crate::deferred::refused_for_now(&e))
                })
                .collect()
        };
        if !left.is_empty() || crate::deferred::must_defer() {
            let moved = GraphExec {
                handle: std::mem::replace(&mut self.handle, std::ptr::null_mut()),
                ctx: self.ctx.clone(),
                keep: self.keep.clone(),
                source: self.source.clone(),
                used_on: Mutex::new(left),
                _not_sync: std::marker::PhantomData,
            };
            crate::deferred::defer_drop("destroying an executable graph", moved);
            return;
        }
        let _current = self.ctx.ensure_current();
        // SAFETY: an owned executable graph, destroyed once (launched work completes).
        let rc = unsafe { sys::cuGraphExecDestroy(self.handle) };
        crate::cleanup::driver(rc, "destroying an executable graph (cuGraphExecDestroy)");
    }
}
