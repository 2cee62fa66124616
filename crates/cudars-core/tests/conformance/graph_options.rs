//! `cuda_core/tests/graph/test_options.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`): `GraphDebugPrintOptions`,
//! `GraphCompleteOptions` and the capture modes. Names map as in
//! `graph_graph_builder.rs`; `GraphDebugPrintOptions(**{every field: True})` is
//! `GraphDebugPrintOptions::all()`, `GraphCompleteOptions(upload_stream=s)` is
//! `exec.upload(&s)` after instantiating (Rust's options have no stream), `mode=`
//! `"global"`, `"thread_local"`, `"relaxed"` are `CaptureMode::Global`,
//! `ThreadLocal`, `Relaxed`. The capture in global mode runs in a process of its
//! own (`in_own_process`): it would make other tests' CUDA calls fail meanwhile.

use cudars_core::{CaptureMode, GraphBuilder, GraphCompleteOptions, GraphDebugPrintOptions};
use cudars_tests::{require_gpu, require_libs};

use crate::graph_graph_builder::{
    common_kernels, conditional_kernels, in_own_process, launch1, setup,
};

#[test]
fn test_graph_dot_print_options() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, _s) = setup();
    let code = conditional_kernels(&d, "bool");
    let set_handle = code.get_kernel("set_handle").unwrap();
    let empty_kernel = code.get_kernel("empty_kernel").unwrap();
    // Begin capture
    let mut gb = d.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    // Add Node A (sets condition)
    let condition = gb.create_conditional_handle(None).unwrap();
    launch1(&gb, &set_handle, &[&condition, &0u8]);
    // Add Node B (if condition)
    let mut gb_if = gb.if_cond(condition).unwrap();
    gb_if.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb_if, &empty_kernel, &[]);
    let gb_if_1 = gb_if.split(2).unwrap().pop().unwrap();
    launch1(&gb_if, &empty_kernel, &[]);
    launch1(&gb_if_1, &empty_kernel, &[]);
    gb_if.join([gb_if_1]).unwrap();
    launch1(&gb_if, &empty_kernel, &[]);
    gb_if.end_building().unwrap();
    // Add Node C: the original builder continues past the conditional node.
    launch1(&gb, &empty_kernel, &[]);
    gb.end_building().unwrap();
    // Print using all options
    let dir = std::env::temp_dir().join(format!("cudars-conformance-dot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("vlad.dot");
    gb.debug_dot_print_with(&path, GraphDebugPrintOptions::all())
        .unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() > 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn test_graph_complete_options() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, launch_stream) = setup();
    let (empty_kernel, _) = common_kernels(&d);
    // Simple linear topology
    let mut gb = d.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    for _ in 0..3 {
        launch1(&gb, &empty_kernel, &[]);
    }
    gb.end_building().unwrap();
    drop(
        gb.complete(GraphCompleteOptions {
            auto_free_on_launch: true,
            ..Default::default()
        })
        .unwrap(),
    );
    // upload_stream=launch_stream
    let exec = gb.complete(GraphCompleteOptions::default()).unwrap();
    exec.upload(&launch_stream).unwrap();
    drop(exec);
    drop(
        gb.complete(GraphCompleteOptions {
            device_launch: true,
            ..Default::default()
        })
        .unwrap(),
    );
    drop(
        gb.complete(GraphCompleteOptions {
            use_node_priority: true,
            ..Default::default()
        })
        .unwrap(),
    );
}

/// Python's `begin_building(mode=None)` (`ValueError`) has no form here: the
/// mode is a `CaptureMode`.
#[test]
fn test_graph_build_mode() {
    require_gpu!();
    require_libs!("nvrtc");
    if in_own_process("graph_options::test_graph_build_mode") {
        return;
    }
    let (d, _s) = setup();
    let (empty_kernel, _) = common_kernels(&d);
    for mode in [
        CaptureMode::Global,
        CaptureMode::ThreadLocal,
        CaptureMode::Relaxed,
    ] {
        let mut gb: GraphBuilder = d.create_graph_builder().unwrap();
        gb.begin_building(mode).unwrap();
        for _ in 0..3 {
            launch1(&gb, &empty_kernel, &[]);
        }
        gb.end_building().unwrap();
    }
}
