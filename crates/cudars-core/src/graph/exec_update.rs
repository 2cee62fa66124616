//! In-place updates of an instantiated graph's memcpy, memset, child graph, event
//! and host callback nodes (Python's `Executable*Node` classes); kernel nodes and
//! enabling are in `exec`.
//!
//! Each update names a node of the graph the [`GraphExec`] was instantiated from,
//! checks it (the graph, the node's graph, its kind, sizes and devices) before the
//! driver is called, and adds what the new parameters name (buffers, events,
//! closures, a child graph's own keep list) to what the instantiation keeps alive,
//! for as long as it can run them.

use std::sync::Arc;

use bytemuck::Pod;
use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::{event::Event, memory::arc_view::ArcView, memory::buffer::Buffer};

use super::define::{Graph, GraphNode, keep, keep_all};
use super::memory_nodes::{check_node_devices, copy_params, memset_params, memset_pattern};
use super::node::node_kind_raw;
use crate::{graph::exec::GraphExec, graph::node::GraphNodeKind, graph::node::GraphNodeParams};

/// Checks that a node of kind `have` may be given parameters for a node of kind `want`.
fn check_kind(have: GraphNodeKind, want: GraphNodeKind, what: &'static str) -> Result<()> {
    if have == want {
        return Ok(());
    }
    Err(Error::invalid(
        what,
        format!(
            "the node is a {} node, not a {} node",
            have.name(),
            want.name()
        ),
    ))
}

/// Checks that a memset node of `element_size`-byte elements in `height` rows can
/// take a one-row memset of `new_size`-byte elements in place.
fn check_memset_shape(
    element_size: u32,
    height: usize,
    new_size: u32,
    what: &'static str,
) -> Result<()> {
    if height != 1 {
        return Err(Error::invalid(
            what,
            format!(
                "the node sets {height} rows (a 2-D memset, such as half of an 8-byte fill); \
                 only one-row memset nodes are updated in place"
            ),
        ));
    }
    if element_size != new_size {
        return Err(Error::invalid(
            what,
            format!(
                "the node sets {element_size}-byte elements; an update cannot change that to {new_size}"
            ),
        ));
    }
    Ok(())
}

/// Checks that a copy node of `height` rows and `depth` layers is one-dimensional,
/// as the driver requires of copies updated in place.
fn check_copy_shape(height: usize, depth: usize, what: &'static str) -> Result<()> {
    if height == 1 && depth == 1 {
        return Ok(());
    }
    Err(Error::invalid(
        what,
        format!(
            "the node copies {height} rows and {depth} layers; only one-dimensional copies are updated in place"
        ),
    ))
}

impl GraphExec {
    /// Checks `graph` and `node` as [`check_node`](Self::check_node) does, and
    /// that the node is a `want` node.
    fn check_node_of_kind(
        &self,
        graph: &Graph,
        node: GraphNode,
        want: GraphNodeKind,
        what: &'static str,
    ) -> Result<()> {
        self.check_node(graph, node, what)?;
        check_kind(node_kind_raw(node.handle)?, want, what)
    }

    /// Makes memcpy node `node` of `graph` (the graph this was instantiated from)
    /// copy `bytes` from `src` to `dst` in this instantiation
    /// (`cuGraphExecMemcpyNodeSetParams`). The instantiation keeps both buffers
    /// alive. [`set_copy_node`](Self::set_copy_node) is the typed form.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another graph than the source, a node of
    /// another graph or of another kind, a node that is not a one-dimensional
    /// copy, a size of 0 or larger than either buffer, or when neither buffer is
    /// memory of the graph's device; the driver's error (for example, memory of
    /// another context than the node's original operands).
    pub fn set_memcpy_node(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        dst: &Arc<Buffer>,
        src: &Arc<Buffer>,
        bytes: usize,
    ) -> Result<()> {
        self.update_copy(
            graph,
            node,
            [
                (&**dst, dst.ptr(), dst.size()),
                (&**src, src.ptr(), src.size()),
            ],
            bytes,
            [dst.clone(), src.clone()],
        )
    }

    /// Makes memcpy node `node` of `graph` copy `src` into `dst`, views of equal
    /// length (as [`Graph::add_copy`] takes them), in this instantiation. The
    /// instantiation keeps both allocations alive.
    ///
    /// # Errors
    /// As [`set_memcpy_node`](Self::set_memcpy_node), and
    /// [`InvalidKind::OutOfRange`](crate::InvalidKind::OutOfRange) for views of
    /// other lengths.
    pub fn set_copy_node<T: Pod>(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        dst: impl Into<ArcView<T>>,
        src: impl Into<ArcView<T>>,
    ) -> Result<()> {
        let (dst, src) = (dst.into(), src.into());
        if dst.len() != src.len() {
            return Err(Error::out_of_range(
                "changing a memcpy node of an instantiated graph",
                format!(
                    "the lengths differ: {} and {} elements",
                    src.len(),
                    dst.len()
                ),
            ));
        }
        self.update_copy(
            graph,
            node,
            [
                (dst.buffer(), dst.ptr(), dst.byte_len()),
                (src.buffer(), src.ptr(), src.byte_len()),
            ],
            dst.byte_len(),
            [dst.keep_alive(), src.keep_alive()],
        )
    }

    fn update_copy(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        spans: [(&Buffer, sys::CUdeviceptr, usize); 2],
        bytes: usize,
        keep_alive: [Arc<dyn std::any::Any + Send + Sync>; 2],
    ) -> Result<()> {
        const WHAT: &str = "changing a memcpy node of an instantiated graph";
        self.check_node(graph, node, WHAT)?;
        match node.params(graph)? {
            GraphNodeParams::Memcpy(old) => check_copy_shape(old.height, old.depth, WHAT)?,
            _ => check_kind(node_kind_raw(node.handle)?, GraphNodeKind::Memcpy, WHAT)?,
        }
        let p = copy_params(self.ctx.device(), spans, bytes, WHAT)?;
        let _current = self.ctx.ensure_current()?;
        // Kept first: the instantiation must never run a copy whose memory is gone.
        for k in keep_alive {
            keep(&self.keep, k);
        }
        // SAFETY: a memcpy node of the source graph (checked; kept alive by
        // `source`); both spans hold at least `bytes` in live buffers, kept alive
        // by the keep list; `p` is valid for the call (the driver copies it).
        unsafe {
            sys::cuGraphExecMemcpyNodeSetParams(self.handle, node.handle, &p, self.ctx.handle())
        }
        .check(|| format!("changing a memcpy node of an instantiated graph to {bytes} bytes"))
    }

    /// Makes memset node `node` of `graph` (the source) set every
    /// `element_size`-byte element of `buffer` to the low bytes of `value` in this
    /// instantiation (`cuGraphExecMemsetNodeSetParams`). The element size cannot
    /// change. The instantiation keeps the buffer alive.
    /// [`set_fill_node`](Self::set_fill_node) is the typed form.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another graph than the source, a node of
    /// another graph or kind, another element size than the node's, a buffer size
    /// that is not a multiple of it, a 2-D memset node (such as either half of an
    /// 8-byte [`Graph::add_fill`]), or a buffer of another device; the driver's
    /// error (for example, memory of another context than the node's).
    pub fn set_memset_node(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        buffer: &Arc<Buffer>,
        value: u32,
        element_size: u32,
    ) -> Result<()> {
        let pattern = memset_pattern(
            value,
            element_size,
            buffer.size(),
            "changing a memset node of an instantiated graph",
        )?;
        let span = (&**buffer, buffer.ptr(), buffer.size() / pattern.len());
        self.update_memset(graph, node, span, &pattern, buffer.clone())
    }

    /// Makes memset node `node` of `graph` set every element of `dst` (as
    /// [`Graph::add_fill`] takes it) to `value` in this instantiation. Elements of
    /// 1, 2 and 4 bytes (an 8-byte fill is two 2-D nodes, which the driver does
    /// not update in place; other sizes do not build).
    ///
    /// # Errors
    /// As [`set_memset_node`](Self::set_memset_node); an empty view or an address
    /// not aligned to the element size.
    pub fn set_fill_node<T: Pod>(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        dst: impl Into<ArcView<T>>,
        value: T,
    ) -> Result<()> {
        const {
            assert!(
                matches!(std::mem::size_of::<T>(), 1 | 2 | 4),
                "set_fill_node takes elements of 1, 2 or 4 bytes"
            );
        }
        let dst = dst.into();
        let span = (dst.buffer(), dst.ptr(), dst.len());
        self.update_memset(
            graph,
            node,
            span,
            bytemuck::bytes_of(&value),
            dst.keep_alive(),
        )
    }

    fn update_memset(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        (buf, ptr, n): (&Buffer, sys::CUdeviceptr, usize),
        pattern: &[u8],
        keep_alive: Arc<dyn std::any::Any + Send + Sync>,
    ) -> Result<()> {
        const WHAT: &str = "changing a memset node of an instantiated graph";
        self.check_node(graph, node, WHAT)?;
        match node.params(graph)? {
            GraphNodeParams::Memset(old) => {
                check_memset_shape(old.element_size, old.height, pattern.len() as u32, WHAT)?;
            }
            _ => check_kind(node_kind_raw(node.handle)?, GraphNodeKind::Memset, WHAT)?,
        }
        check_node_devices(self.ctx.device(), &[buf.device()], WHAT)?;
        let params = memset_params(ptr, n, pattern, WHAT)?;
        let [p] = params.as_slice() else {
            return Err(Error::invalid(
                WHAT,
                "the new value needs more than one memset node",
            ));
        };
        let _current = self.ctx.ensure_current()?;
        keep(&self.keep, keep_alive);
        // SAFETY: a memset node of the source graph (checked); `p` names elements
        // inside a live buffer, kept alive by the keep list; valid for the call.
        unsafe {
            sys::cuGraphExecMemsetNodeSetParams(self.handle, node.handle, p, self.ctx.handle())
        }
        .check(|| {
            format!(
                "changing a memset node of an instantiated graph to {n} elements of {} bytes",
                pattern.len()
            )
        })
    }

    /// Makes child graph node `node` of `graph` (the source) run with the
    /// parameters of `child`'s nodes in this instantiation
    /// (`cuGraphExecChildGraphNodeSetParams`). `child` must have the topology of
    /// the node's graph, nodes added in the same order; only parameters may
    /// differ. The instantiation keeps alive what `child`'s nodes use.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another graph than the source, a node of
    /// another graph or kind, or `child` being `graph`; the driver's error (for
    /// example, another topology).
    pub fn set_child_graph_node(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        child: &Graph,
    ) -> Result<()> {
        const WHAT: &str = "changing a child graph node of an instantiated graph";
        self.check_node_of_kind(graph, node, GraphNodeKind::ChildGraph, WHAT)?;
        if child.handle == graph.handle {
            return Err(Error::invalid(WHAT, "the child is the graph itself"));
        }
        let _current = self.ctx.ensure_current()?;
        // Kept first: what the child's nodes use must outlive every later launch.
        keep_all(&self.keep, &child.keep);
        // SAFETY: a child graph node of the source graph (checked) and a live
        // graph (read during the call, not retained).
        unsafe { sys::cuGraphExecChildGraphNodeSetParams(self.handle, node.handle, child.handle) }
            .check(|| WHAT)
    }

    /// Makes event record node `node` of `graph` (the source) record `event` in
    /// this instantiation (`cuGraphExecEventRecordNodeSetEvent`). The
    /// instantiation keeps the event alive.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another graph than the source or a node of
    /// another graph or kind; the driver's error.
    pub fn set_event_record_node(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        event: &Arc<Event>,
    ) -> Result<()> {
        self.update_event(
            graph,
            node,
            event,
            GraphNodeKind::EventRecord,
            sys::cuGraphExecEventRecordNodeSetEvent,
        )
    }

    /// Makes event wait node `node` of `graph` (the source) wait for `event` in
    /// this instantiation (`cuGraphExecEventWaitNodeSetEvent`). The instantiation
    /// keeps the event alive.
    ///
    /// # Errors
    /// As [`set_event_record_node`](Self::set_event_record_node).
    pub fn set_event_wait_node(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        event: &Arc<Event>,
    ) -> Result<()> {
        self.update_event(
            graph,
            node,
            event,
            GraphNodeKind::EventWait,
            sys::cuGraphExecEventWaitNodeSetEvent,
        )
    }

    /// Gives event node `node` (of kind `kind`) `event`, through `set` (the
    /// driver's setter for that kind).
    fn update_event(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        event: &Arc<Event>,
        kind: GraphNodeKind,
        set: unsafe fn(sys::CUgraphExec, sys::CUgraphNode, sys::CUevent) -> sys::CUresult,
    ) -> Result<()> {
        let what = if kind == GraphNodeKind::EventRecord {
            "changing an event record node of an instantiated graph"
        } else {
            "changing an event wait node of an instantiated graph"
        };
        self.check_node_of_kind(graph, node, kind, what)?;
        let _current = self.ctx.ensure_current()?;
        keep(&self.keep, event.clone());
        // SAFETY: an event node of the source graph, of the kind `set` takes
        // (checked); a live event, kept alive by the keep list.
        unsafe { set(self.handle, node.handle, event.handle()) }.check(|| what)
    }

    /// Makes host callback node `node` of `graph` (the source) call `f` in this
    /// instantiation (`cuGraphExecHostNodeSetParams`), as
    /// [`Graph::add_host_callback`] does: on a driver thread, `f` must not call
    /// CUDA, and a panic in `f` is caught and discarded. The instantiation keeps
    /// `f` alive.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another graph than the source or a node of
    /// another graph or kind; the driver's error.
    pub fn set_host_callback_node(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        f: impl Fn() + Send + Sync + 'static,
    ) -> Result<()> {
        const WHAT: &str = "changing a host callback node of an instantiated graph";
        self.check_node_of_kind(graph, node, GraphNodeKind::HostCallback, WHAT)?;
        let (boxed, p) = super::define::host_node_params(f, &self.keep);
        let _current = self.ctx.ensure_current()?;
        keep(&self.keep, boxed);
        // SAFETY: a host node of the source graph (checked); the box `p` points
        // to stays alive in the keep list as long as this instantiation.
        unsafe { sys::cuGraphExecHostNodeSetParams(self.handle, node.handle, &p) }.check(|| WHAT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::InvalidKind;
    use crate::error::kind_of as kind;

    #[test]
    fn updates_check_the_node_kind_and_shape_first() {
        assert!(check_kind(GraphNodeKind::Memset, GraphNodeKind::Memset, "t").is_ok());
        let e = check_kind(GraphNodeKind::Kernel, GraphNodeKind::Memcpy, "t").unwrap_err();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::Other));
        assert!(
            e.to_string().contains("a kernel node, not a memcpy node"),
            "{e}"
        );
        assert!(check_memset_shape(4, 1, 4, "t").is_ok());
        assert_eq!(kind(check_memset_shape(4, 1, 2, "t")), InvalidKind::Other);
        let e = check_memset_shape(4, 7, 4, "t").unwrap_err();
        assert!(e.to_string().contains("7 rows"), "{e}");
        assert!(check_copy_shape(1, 1, "t").is_ok());
        assert_eq!(kind(check_copy_shape(2, 1, "t")), InvalidKind::Other);
        assert_eq!(kind(check_copy_shape(1, 3, "t")), InvalidKind::Other);
    }
}
