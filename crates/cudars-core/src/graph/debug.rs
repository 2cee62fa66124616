//! A graph's Graphviz DOT output ([`Graph::debug_dot_print_with`]) and what it
//! shows ([`GraphDebugPrintOptions`]).

use std::ffi::CString;
use std::path::Path;

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};

use super::Graph;

/// What [`Graph::debug_dot_print_with`] writes of each node, one field per
/// `CU_GRAPH_DEBUG_DOT_FLAGS_*` flag (Python's `GraphDebugPrintOptions`). All
/// off (the default) writes the nodes and edges only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct GraphDebugPrintOptions {
    /// Everything below (`VERBOSE`).
    pub verbose: bool,
    /// The runtime's names of the node types (`RUNTIME_TYPES`).
    pub runtime_types: bool,
    /// Kernel node parameters (`KERNEL_NODE_PARAMS`).
    pub kernel_node_params: bool,
    /// Memcpy node parameters (`MEMCPY_NODE_PARAMS`).
    pub memcpy_node_params: bool,
    /// Memset node parameters (`MEMSET_NODE_PARAMS`).
    pub memset_node_params: bool,
    /// Host node parameters (`HOST_NODE_PARAMS`).
    pub host_node_params: bool,
    /// Event record and wait node parameters (`EVENT_NODE_PARAMS`).
    pub event_node_params: bool,
    /// External semaphore signal node parameters (`EXT_SEMAS_SIGNAL_NODE_PARAMS`).
    pub ext_semas_signal_node_params: bool,
    /// External semaphore wait node parameters (`EXT_SEMAS_WAIT_NODE_PARAMS`).
    pub ext_semas_wait_node_params: bool,
    /// Kernel node attributes (`KERNEL_NODE_ATTRIBUTES`).
    pub kernel_node_attributes: bool,
    /// Node handles (`HANDLES`).
    pub handles: bool,
    /// Memory allocation node parameters (`MEM_ALLOC_NODE_PARAMS`).
    pub mem_alloc_node_params: bool,
    /// Memory free node parameters (`MEM_FREE_NODE_PARAMS`).
    pub mem_free_node_params: bool,
    /// Batch memory operation node parameters (`BATCH_MEM_OP_NODE_PARAMS`).
    pub batch_mem_op_node_params: bool,
    /// More topology: node and edge ids (`EXTRA_TOPO_INFO`).
    pub extra_topo_info: bool,
    /// Conditional node parameters (`CONDITIONAL_NODE_PARAMS`; a CUDA 12.3 driver).
    pub conditional_node_params: bool,
}

impl GraphDebugPrintOptions {
    /// Every flag on except `verbose` (which is their union on the driver's side).
    pub fn all() -> Self {
        Self {
            verbose: false,
            runtime_types: true,
            kernel_node_params: true,
            memcpy_node_params: true,
            memset_node_params: true,
            host_node_params: true,
            event_node_params: true,
            ext_semas_signal_node_params: true,
            ext_semas_wait_node_params: true,
            kernel_node_attributes: true,
            handles: true,
            mem_alloc_node_params: true,
            mem_free_node_params: true,
            batch_mem_op_node_params: true,
            extra_topo_info: true,
            conditional_node_params: true,
        }
    }

    /// The driver's flags (`CUgraphDebugDot_flags`, or-ed).
    pub fn flags(&self) -> u32 {
        let table = [
            (self.verbose, sys::CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE),
            (
                self.runtime_types,
                sys::CU_GRAPH_DEBUG_DOT_FLAGS_RUNTIME_TYPES,
            ),
            (
                self.kernel_node_params,
                sys::CU_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_PARAMS,
            ),
            (
                self.memcpy_node_params,
                sys::CU_GRAPH_DEBUG_DOT_FLAGS_MEMCPY_NODE_PARAMS,
            ),
            (
                self.memset_node_params,
                sys::CU_GRAPH_DEBUG_DOT_FLAGS_MEMSET_NODE_PARAMS,
            ),
            (
                self.host_node_params,
                sys::CU_GRAPH_DEBUG_DOT_FLAGS_HOST_NODE_PARAMS,
            ),
            (
                self.event_node_params,
                sys::CU_GRAPH_DEBUG_DOT_FLAGS_EVENT_NODE_PARAMS,
            ),
            (
                self.ext_semas_signal_node_params,
                sys::CU_GRAPH_DEBUG_DOT_FLAGS_EXT_SEMAS_SIGNAL_NODE_PARAMS,
            ),
            (
                self.ext_semas_wait_node_params,
                sys::CU_GRAPH_DEBUG_DOT_FLAGS_EXT_SEMAS_WAIT_NODE_PARAMS,
            ),
            (
                self.kernel_node_attributes,
                sys::CU_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_ATTRIBUTES,
            ),
            (self.handles, sys::CU_GRAPH_DEBUG_DOT_FLAGS_HANDLES),
            (
                self.mem_alloc_node_params,
                sys::CU_GRAPH_DEBUG_DOT_FLAGS_MEM_ALLOC_NODE_PARAMS,
            ),
            (
                self.mem_free_node_params,
                sys::CU_GRAPH_DEBUG_DOT_FLAGS_MEM_FREE_NODE_PARAMS,
            ),
            (
                self.batch_mem_op_node_params,
                sys::CU_GRAPH_DEBUG_DOT_FLAGS_BATCH_MEM_OP_NODE_PARAMS,
            ),
            (
                self.extra_topo_info,
                sys::CU_GRAPH_DEBUG_DOT_FLAGS_EXTRA_TOPO_INFO,
            ),
            (
                self.conditional_node_params,
                sys::CU_GRAPH_DEBUG_DOT_FLAGS_CONDITIONAL_NODE_PARAMS,
            ),
        ];
        table
            .iter()
            .filter(|(on, _)| *on)
            .fold(0, |acc, (_, f)| acc | f.0)
    }
}

impl Graph {
    /// Writes the graph as a Graphviz DOT file (`cuGraphDebugDotPrint`, verbose):
    /// [`debug_dot_print_with`](Self::debug_dot_print_with) with only
    /// [`GraphDebugPrintOptions::verbose`].
    ///
    /// # Errors
    /// As [`debug_dot_print_with`](Self::debug_dot_print_with).
    pub fn debug_dot_print(&self, path: impl AsRef<Path>) -> Result<()> {
        self.debug_dot_print_with(
            path,
            GraphDebugPrintOptions {
                verbose: true,
                ..Default::default()
            },
        )
    }

    /// Writes the graph as a Graphviz DOT file (`cuGraphDebugDotPrint`), showing
    /// what `options` asks for.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a path that is not UTF-8 or holds NUL;
    /// [`Error::Unsupported`] for `conditional_node_params` with a driver older
    /// than CUDA 12.3; the driver's error.
    pub fn debug_dot_print_with(
        &self,
        path: impl AsRef<Path>,
        options: GraphDebugPrintOptions,
    ) -> Result<()> {
        const WHAT: &str = "writing a graph's DOT file";
        let path = path.as_ref();
        if options.conditional_node_params {
            crate::versions::require_driver(12030, "printing conditional node parameters", || {
                WHAT
            })?;
        }
        let c = path
            .to_str()
            .and_then(|s| CString::new(s).ok())
            .ok_or_else(|| Error::invalid(WHAT, format!("unusable path {}", path.display())))?;
        // SAFETY: a live graph and a NUL-terminated path.
        unsafe { sys::cuGraphDebugDotPrint(self.handle, c.as_ptr(), options.flags()) }
            .check(|| format!("writing {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_option_is_its_own_driver_flag() {
        assert_eq!(GraphDebugPrintOptions::default().flags(), 0);
        let verbose = GraphDebugPrintOptions {
            verbose: true,
            ..Default::default()
        };
        assert_eq!(verbose.flags(), sys::CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE.0);
        let two = GraphDebugPrintOptions {
            handles: true,
            conditional_node_params: true,
            ..Default::default()
        };
        assert_eq!(
            two.flags(),
            sys::CU_GRAPH_DEBUG_DOT_FLAGS_HANDLES.0
                | sys::CU_GRAPH_DEBUG_DOT_FLAGS_CONDITIONAL_NODE_PARAMS.0
        );
        // `all` sets 15 distinct single-bit flags, none of them `VERBOSE`.
        let all = GraphDebugPrintOptions::all().flags();
        assert_eq!(all.count_ones(), 15);
        assert_eq!(all & sys::CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE.0, 0);
        assert_eq!(
            all | sys::CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE.0,
            (1 << 16) - 1,
            "the flags are bits 0 to 15"
        );
    }
}
