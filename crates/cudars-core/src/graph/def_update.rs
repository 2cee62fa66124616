//! Changing the nodes of a graph definition (`cuda.core`'s `update()` on a
//! `KernelNode`'s siblings: memset, memcpy, host callback and event nodes):
//! instantiations made afterwards use the new parameters, those made before
//! keep theirs ([`GraphExec`](super::GraphExec)'s `set_*_node` changes one of
//! them in place).

use std::sync::Arc;

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::event::Event;
use crate::memory::buffer::Buffer;

use super::define::{Graph, GraphNode, keep, keep_all, keep_args, kernel_node_params};
use super::memory_nodes::{check_node_devices, copy_params, memset_params, memset_pattern};
use super::node::GraphNodeKind;
use super::node::node_kind_raw;
use crate::{code::kernel::Kernel, launch::KernelArg, launch::LaunchConfig};

impl Graph {
    /// Checks that `node` is a `kind` node of this graph.
    fn check_own_node(
        &self,
        node: GraphNode,
        kind: GraphNodeKind,
        what: &'static str,
    ) -> Result<()> {
        if node.graph != self.id {
            return Err(Error::invalid(what, "the node is a node of another graph"));
        }
        let have = node_kind_raw(node.handle)?;
        if have != kind {
            return Err(Error::invalid(
                what,
                format!(
                    "the node is a {} node, not a {} node",
                    have.name(),
                    kind.name()
                ),
            ));
        }
        Ok(())
    }

    /// Makes kernel node `node` of this graph launch `kernel` with `config`
    /// and `args` from now on (`cuGraphNodeSetParams`; CUDA 12.2 drivers and
    /// newer): `KernelNode.update` in `cuda.core`. The arguments are checked as
    /// [`add_kernel`](Self::add_kernel) checks them; the driver copies their
    /// values now. The graph keeps `kernel` alive.
    ///
    /// # Safety
    /// As [`add_kernel`](Self::add_kernel), for every launch of every
    /// instantiation made afterwards.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a node of another graph or kind, or wrong
    /// arguments; the driver's error.
    pub unsafe fn set_kernel_node(
        &mut self,
        node: GraphNode,
        config: &LaunchConfig,
        kernel: &Kernel,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        const WHAT: &str = "changing a kernel node of a graph";
        self.check_own_node(node, GraphNodeKind::Kernel, WHAT)?;
        let mut ptrs = Vec::new();
        let mut p = kernel_node_params(&self.ctx, config, kernel, args, &mut ptrs)?;
        let _current = self.ctx.ensure_current()?;
        keep(&self.keep, Arc::new(kernel.clone()));
        keep_args(&self.keep, args);
        // SAFETY: a kernel node of this graph (checked); `p` is a kernel node
        // description whose argument pointers are valid for the call (the
        // driver copies the values); what the arguments point to is the
        // caller's promise; `&mut self`: no other call changes the graph.
        unsafe { sys::cuGraphNodeSetParams(node.handle, &mut p) }.check(|| {
            format!(
                "changing a kernel node of a graph to kernel `{}`",
                kernel.name()
            )
        })
    }

    /// Makes memset node `node` of this graph set every `element_size`-byte
    /// element (1, 2 or 4) of `buffer` to the low bytes of `value` from now on
    /// (`cuGraphMemsetNodeSetParams`): `MemsetNode.update` in `cuda.core`. The
    /// graph keeps the buffer alive.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a node of another graph or kind, another
    /// element size, a size that is not a multiple of it, or a buffer of
    /// another device than the graph's; the driver's error.
    pub fn set_memset_node(
        &mut self,
        node: GraphNode,
        buffer: &Arc<Buffer>,
        value: u32,
        element_size: u32,
    ) -> Result<()> {
        const WHAT: &str = "changing a memset node of a graph";
        self.check_own_node(node, GraphNodeKind::Memset, WHAT)?;
        let pattern = memset_pattern(value, element_size, buffer.size(), WHAT)?;
        check_node_devices(self.ctx.device(), &[buffer.device()], WHAT)?;
        let params = memset_params(buffer.ptr(), buffer.size() / pattern.len(), &pattern, WHAT)?;
        let [p] = params.as_slice() else {
            return Err(Error::invalid(
                WHAT,
                "the value needs more than one memset node",
            ));
        };
        let _current = self.ctx.ensure_current()?;
        // Kept first: every later instantiation may use it.
        keep(&self.keep, buffer.clone());
        // SAFETY: a memset node of this graph (checked); `p` names elements
        // inside a live buffer, kept alive by the keep list; valid for the call
        // (the driver copies it); `&mut self`: no other call changes the graph.
        unsafe { sys::cuGraphMemsetNodeSetParams(node.handle, p) }.check(|| WHAT)
    }

    /// Makes memcpy node `node` of this graph copy `bytes` from `src` to `dst`
    /// from now on (`cuGraphMemcpyNodeSetParams`): `MemcpyNode.update` in
    /// `cuda.core`. The graph keeps both buffers alive.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a node of another graph or kind, a size of
    /// 0 or larger than either buffer, or when neither buffer is memory of the
    /// graph's device; the driver's error.
    pub fn set_memcpy_node(
        &mut self,
        node: GraphNode,
        dst: &Arc<Buffer>,
        src: &Arc<Buffer>,
        bytes: usize,
    ) -> Result<()> {
        const WHAT: &str = "changing a memcpy node of a graph";
        self.check_own_node(node, GraphNodeKind::Memcpy, WHAT)?;
        let p = copy_params(
            self.ctx.device(),
            [
                (&**dst, dst.ptr(), dst.size()),
                (&**src, src.ptr(), src.size()),
            ],
            bytes,
            WHAT,
        )?;
        let _current = self.ctx.ensure_current()?;
        keep(&self.keep, dst.clone());
        keep(&self.keep, src.clone());
        // SAFETY: a memcpy node of this graph (checked); both spans hold at
        // least `bytes` (checked) in live buffers, kept alive by the keep list;
        // `p` is valid for the call; `&mut self`: no other call changes the graph.
        unsafe { sys::cuGraphMemcpyNodeSetParams(node.handle, &p) }.check(|| WHAT)
    }

    /// Makes host callback node `node` of this graph call `f` from now on
    /// (`cuGraphHostNodeSetParams`), as [`add_host_callback`](Self::add_host_callback)
    /// does: on a driver thread, `f` must not call CUDA, and a panic in `f` is
    /// caught and recorded. The graph keeps `f` alive.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a node of another graph or kind; the
    /// driver's error.
    pub fn set_host_callback_node(
        &mut self,
        node: GraphNode,
        f: impl Fn() + Send + Sync + 'static,
    ) -> Result<()> {
        const WHAT: &str = "changing a host callback node of a graph";
        self.check_own_node(node, GraphNodeKind::HostCallback, WHAT)?;
        let (boxed, p) = super::define::host_node_params(f, &self.keep);
        let _current = self.ctx.ensure_current()?;
        keep(&self.keep, boxed);
        // SAFETY: a host node of this graph (checked); the box `p` points to
        // stays alive in the keep list as long as the graph and its
        // instantiations; `&mut self`: no other call changes the graph.
        unsafe { sys::cuGraphHostNodeSetParams(node.handle, &p) }.check(|| WHAT)
    }

    /// Makes event record node `node` of this graph record `event` from now on
    /// (`cuGraphEventRecordNodeSetEvent`): `EventRecordNode.update` in
    /// `cuda.core`. The graph keeps `event` alive.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a node of another graph or another kind;
    /// the driver's error.
    pub fn set_event_record_node(&mut self, node: GraphNode, event: &Arc<Event>) -> Result<()> {
        const WHAT: &str = "changing an event record node of a graph";
        self.check_own_node(node, GraphNodeKind::EventRecord, WHAT)?;
        let _current = self.ctx.ensure_current()?;
        keep(&self.keep, event.clone());
        // SAFETY: an event record node of this graph (checked); a live event,
        // kept alive by the keep list; `&mut self`: no other call changes the graph.
        unsafe { sys::cuGraphEventRecordNodeSetEvent(node.handle, event.handle()) }.check(|| WHAT)
    }

    /// Makes child graph node `node` of this graph run a copy of `child` from
    /// now on (`cuGraphNodeSetParams` with the node's graph, the driver's
    /// clone ownership; CUDA 12.2 drivers and newer): the definition-time
    /// `update()` of a `ChildGraphNode`, replacing the node's graph wholesale
    /// (any topology; [`GraphExec::set_child_graph_node`](super::GraphExec::set_child_graph_node)
    /// changes an instantiation's node, same topology only). Instantiations made
    /// before keep the old graph. The graph keeps alive what `child`'s nodes use.
    ///
    /// # Safety
    /// The node's previous graph may be destroyed by the driver: a [`Graph`]
    /// read from the node before ([`GraphNode::params`]'s
    /// [`GraphNodeParams::ChildGraph`](super::GraphNodeParams::ChildGraph)),
    /// the [`GraphNode`]s of that graph, the bodies of its conditional nodes
    /// and, recursively, every graph read from a node inside it (its own child
    /// graphs and theirs) must not be used after this call (as after
    /// [`destroy_node`](Self::destroy_node)), nor passed as `child`. Read the
    /// node's new graph with [`GraphNode::params`] again.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a node of another graph or kind, or
    /// `child` being this graph; [`Error::Unsupported`] on a driver without
    /// `cuGraphNodeSetParams`; the driver's error (a child with memory
    /// allocation, free or conditional nodes, which the driver cannot clone
    /// into a node).
    pub unsafe fn set_child_graph_node(&mut self, node: GraphNode, child: &Graph) -> Result<()> {
        const WHAT: &str = "changing a child graph node of a graph";
        self.check_own_node(node, GraphNodeKind::ChildGraph, WHAT)?;
        if child.handle == self.handle {
            return Err(Error::invalid(WHAT, "the child is the graph itself"));
        }
        let mut p = sys::CUgraphNodeParams {
            type_: sys::CU_GRAPH_NODE_TYPE_GRAPH,
            ..Default::default()
        };
        p.__bindgen_anon_1.graph = sys::CUDA_CHILD_GRAPH_NODE_PARAMS {
            graph: child.handle,
            ownership: sys::CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE,
        };
        let _current = self.ctx.ensure_current()?;
        // Kept first: what the child's nodes use must outlive every later launch.
        keep_all(&self.keep, &child.keep);
        // SAFETY: a child graph node of this graph (checked); `p` is a zeroed
        // child graph description naming a live graph, which the driver clones
        // (not retained); the node's old graph is not used again (the caller's
        // promise); `&mut self`: no other call changes the graph.
        unsafe { sys::cuGraphNodeSetParams(node.handle, &mut p) }.check(|| WHAT)
    }

    /// Makes event wait node `node` of this graph wait for `event` from now on
    /// (`cuGraphEventWaitNodeSetEvent`): `EventWaitNode.update` in `cuda.core`.
    /// The graph keeps `event` alive.
    ///
    /// # Errors
    /// As [`set_event_record_node`](Self::set_event_record_node).
    pub fn set_event_wait_node(&mut self, node: GraphNode, event: &Arc<Event>) -> Result<()> {
        const WHAT: &str = "changing an event wait node of a graph";
        self.check_own_node(node, GraphNodeKind::EventWait, WHAT)?;
        let _current = self.ctx.ensure_current()?;
        keep(&self.keep, event.clone());
        // SAFETY: an event wait node of this graph (checked); a live event,
        // kept alive by the keep list; `&mut self`: no other call changes the graph.
        unsafe { sys::cuGraphEventWaitNodeSetEvent(node.handle, event.handle()) }.check(|| WHAT)
    }
}
