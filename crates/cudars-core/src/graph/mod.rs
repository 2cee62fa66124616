//! CUDA graphs: captured from streams or defined node by node, instantiated,
//! uploaded, launched and updated; conditional nodes with their condition handles.
//!
//! Available with the CUDA 13 bindings (the default `cuda-13` feature).
//!
//! One module per part: the graph and its nodes in `define`, memory nodes (allocations,
//! memsets, copies) in `memory_nodes`, reading nodes and edges back in `node`,
//! instantiation and launch in `exec`, in-place updates of an instantiation's
//! nodes in `exec_update` and of the graph's own nodes in `def_update`, DOT
//! output in `debug`, stream capture in `capture`.

pub(crate) mod builder;
pub(crate) mod builder_rules;
pub(crate) mod builder_work;
pub(crate) mod capture;
pub(crate) mod debug;
pub(crate) mod def_update;
pub(crate) mod define;
pub(crate) mod exec;
pub(crate) mod exec_update;
pub(crate) mod graph_memory;
pub(crate) mod memory_nodes;
pub(crate) mod node;
pub(crate) mod view;

pub use builder::GraphBuilder;
pub use capture::{CaptureMode, CaptureStatus, GraphCapture};
pub use debug::GraphDebugPrintOptions;
pub use define::{ConditionalKind, ConditionalNodeInfo, Graph, GraphCondition, GraphNode};
pub use exec::{GraphCompleteOptions, GraphExec};
pub use graph_memory::GraphMemoryResource;
pub use memory_nodes::{GraphAllocOptions, GraphAllocation, GraphMemUsage, GraphMemoryType};
pub use node::{
    GraphEdge, GraphEdgeKind, GraphNodeKind, GraphNodeParams, HostNodeInfo, KernelNodeInfo,
    MemAllocNodeInfo, MemcpyNodeInfo, MemsetNodeInfo, NodeEvent,
};
pub use view::{CaptureArg, GraphView};
