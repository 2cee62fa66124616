//! `cuda_core/tests/graph/test_graph_definition_errors.py` of `cuda.core` (the
//! pinned commit of `docs/reference/cuda-core-tests.txt`), ported as
//! `graph_definition.rs` says (its module doc maps the names). Every test needs
//! a GPU.
//!
//! The wrong-type tests (`test_conditional_rejects_non_condition`,
//! `test_embed_rejects_non_graphdef`) do not compile here. Python's memset of
//! graph memory (`alloc.memset(alloc.dptr, 0, SIZEOF_INT)`) sets a device buffer
//! of one int here, as in `graph_definition.rs`; the bodies' `add_one` takes it
//! as an `ArcView`, which the graph keeps alive.

use std::sync::Arc;

use cudars_core::{
    ConditionalKind, DeviceBuffer, DevicePtr, Error, Graph, GraphAllocation, GraphCompleteOptions,
    GraphNodeKind, LaunchConfig,
};
use cudars_tests::{require_gpu, require_libs};

use crate::graph_definition::{common_kernels, gpu, stream};

// =============================================================================
// Value validation: invalid parameter values
// =============================================================================

/// `g.deallocate(0)`: a free node of address 0 is the driver's error. (Here a
/// free node takes a `GraphAllocation`; one naming address 0 is made by hand.)
#[test]
fn test_free_null_pointer() {
    require_gpu!();
    let (_d, ctx) = gpu();
    let mut g = Graph::new(&ctx).unwrap();
    let node = g.add_empty(&[]).unwrap();
    let null = GraphAllocation {
        node,
        ptr: DevicePtr(0),
        size: 0,
    };
    let r = g.add_mem_free(&[], &null);
    assert!(matches!(r, Err(Error::Driver { .. })), "{r:?}");
}

/// A 3-byte memset value: Python's `ValueError` is `Error::InvalidArgument`.
#[test]
fn test_memset_invalid_value_size() {
    require_gpu!();
    let (d, ctx) = gpu();
    let s = stream(&d);
    let buf = Arc::new(d.allocate(1024, &s).unwrap());
    let mut g = Graph::new(&ctx).unwrap();
    let r = g.add_memset(&[], &buf, 0x0003_0201, 3);
    assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
}

/// `g.switch(condition, 0)`: Python's `CUDAError` from the driver; refused here
/// before the driver is asked.
#[test]
fn test_switch_zero_branches() {
    require_gpu!();
    let (_d, ctx) = gpu();
    let mut g = Graph::new(&ctx).unwrap();
    let condition = g.create_condition(Some(1)).unwrap();
    let r = g.add_conditional(&[], condition, ConditionalKind::Switch(0));
    assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
}

// =============================================================================
// Cross-graph misuse
// =============================================================================

#[test]
fn test_condition_from_different_graph() {
    require_gpu!();
    let (_d, ctx) = gpu();
    let mut g1 = Graph::new(&ctx).unwrap();
    let mut g2 = Graph::new(&ctx).unwrap();
    let condition = g1.create_condition(Some(1)).unwrap();
    let r = g2.add_conditional(&[], condition, ConditionalKind::If);
    assert!(r.is_err(), "{r:?}");
}

// =============================================================================
// Edge cases: valid but unusual usage patterns
// =============================================================================

#[test]
fn test_empty_node() {
    require_gpu!();
    let (_d, ctx) = gpu();
    let mut g = Graph::new(&ctx).unwrap();
    let joined = g.add_empty(&[]).unwrap();
    assert_eq!(joined.kind(&g).unwrap(), GraphNodeKind::Empty);
    assert_eq!(g.nodes().unwrap().len(), 1);
}

#[test]
fn test_join_single_predecessor() {
    require_gpu!();
    let (_d, ctx) = gpu();
    let mut g = Graph::new(&ctx).unwrap();
    let a = g.add_mem_alloc(&[], 1024).unwrap().node;
    let joined = g.add_empty(&[a]).unwrap();
    assert_eq!(joined.kind(&g).unwrap(), GraphNodeKind::Empty);
    assert_eq!(joined.dependencies(&g).unwrap(), vec![a]);
}

/// Two instantiations of one graph are independent executables.
#[test]
fn test_multiple_instantiation() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, ctx) = gpu();
    let kernel = common_kernels(&d).get_kernel("empty_kernel").unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    // SAFETY: the kernel takes no arguments and touches no memory.
    unsafe { g.add_kernel(&[], &LaunchConfig::new(1, 1), &kernel, &[]) }.unwrap();
    let g1 = g.instantiate(GraphCompleteOptions::default()).unwrap();
    let g2 = g.instantiate(GraphCompleteOptions::default()).unwrap();
    assert_ne!(g1.handle(), g2.handle());
}

/// An allocation without a free: the graph instantiates and runs. (The memory
/// then outlives the launch; the port frees it afterwards, so no graph memory
/// is left behind for the tests that share this process.)
#[test]
fn test_unmatched_alloc_succeeds() {
    require_gpu!();
    let (d, ctx) = gpu();
    let mut g = Graph::new(&ctx).unwrap();
    let a = g.add_mem_alloc(&[], 1024).unwrap();
    let graph = g.instantiate(GraphCompleteOptions::default()).unwrap();
    let s = stream(&d);
    graph.launch(&s).unwrap();
    s.sync().unwrap();
    // SAFETY: the launch allocated it (ordered before, on `s`); freed once and
    // not used again.
    unsafe { s.free_graph_allocation(&a) }.unwrap();
    s.sync().unwrap();
}

#[test]
fn test_create_condition_no_default_value() {
    require_gpu!();
    let (_d, ctx) = gpu();
    let mut g = Graph::new(&ctx).unwrap();
    g.create_condition(None).unwrap();
}

// =============================================================================
// Boundary condition execution: conditional nodes with extreme values
// =============================================================================

/// An int set to 0, then a conditional node of `kind` on a condition whose
/// default is `default`, each body adding one to the int; returns the int
/// after one launch.
fn run_with_default(kind: ConditionalKind, default: u32) -> i32 {
    let (d, ctx) = gpu();
    let s = stream(&d);
    let add_one = common_kernels(&d).get_kernel("add_one").unwrap();
    let cfg = LaunchConfig::new(1, 1);
    let x = Arc::new(DeviceBuffer::<i32>::zeroed(&d, 1, &s).unwrap());
    s.sync().unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let condition = g.create_condition(Some(default)).unwrap();
    let ms = g.add_fill(&[], x.shared_view(), 0i32).unwrap();
    let (_node, mut bodies) = g.add_conditional(&[ms], condition, kind).unwrap();
    for body in &mut bodies {
        // SAFETY: `add_one` increments the one int of `x`, which the graph keeps
        // alive.
        unsafe { body.add_kernel(&[], &cfg, &add_one, &[&x.shared_view()]) }.unwrap();
    }
    let graph = g.instantiate(GraphCompleteOptions::default()).unwrap();
    graph.launch(&s).unwrap();
    s.sync().unwrap();
    x.to_vec(&s).unwrap()[0]
}

#[test]
fn test_while_loop_zero_iterations() {
    require_gpu!();
    require_libs!("nvrtc");
    assert_eq!(
        run_with_default(ConditionalKind::While, 0),
        0,
        "Body should not have executed"
    );
}

#[test]
fn test_if_then_false_skips_body() {
    require_gpu!();
    require_libs!("nvrtc");
    assert_eq!(
        run_with_default(ConditionalKind::If, 0),
        0,
        "Body should not have executed"
    );
}

#[test]
fn test_switch_oob_skips_all_branches() {
    require_gpu!();
    require_libs!("nvrtc");
    assert_eq!(
        run_with_default(ConditionalKind::Switch(3), 99),
        0,
        "No branch should have executed"
    );
}
