//! `cuda_core/tests/graph/test_graph_update.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`): updating an instantiated graph from
//! another graph of the same topology. `graph.update(source)` is
//! `exec.update(&graph)?`, the source graph being a builder's (`gb.graph()?`) or one
//! defined node by node (`GraphDefinition()` is `Graph::new(&ctx)?`,
//! `g.launch(config, kernel, *args)` is `unsafe g.add_kernel(&deps, …)`,
//! `g.callback(fn)` is `g.add_host_callback(&deps, fn)`, `g.empty()` is
//! `g.add_empty(&deps)`). Python's `weakref` to a callback is a `Weak` to an `Arc`
//! the closure owns. Counters as in `graph_graph_builder.rs`.

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use cudars_core::{
    ArcView, CaptureMode, Error, Graph, GraphCompleteOptions, GraphExec, Kernel, Stream,
};
use cudars_tests::{require_gpu, require_libs};

use crate::graph_graph_builder::{
    common_kernels, conditional_kernels, invalid, launch1, one, setup, zeros,
};

/// Python's `_wait_until(lambda: weak() is None)`: the owner is released within 5 s.
#[track_caller]
fn wait_until_gone<T>(weak: &Weak<T>) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while weak.strong_count() > 0 {
        assert!(
            Instant::now() < deadline,
            "condition not satisfied within 5s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `pytest.raises(CUDAError)`: a driver error.
#[track_caller]
fn driver_error<T>(r: cudars_core::Result<T>) -> Error {
    match r {
        Err(e @ Error::Driver { .. }) => e,
        Err(e) => panic!("expected Error::Driver, got {}", e.report()),
        Ok(_) => panic!("expected Error::Driver, got Ok"),
    }
}

/// The GraphBuilder form of `build(ptr)`: the instantiation and the graph.
fn build_captured(add_one: &Kernel, ptr: &ArcView<i32>) -> (GraphExec, Graph) {
    let d = *ptr.device();
    let mut gb = d.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb, add_one, &[ptr]);
    launch1(&gb, add_one, &[ptr]);
    gb.end_building().unwrap();
    let finished = gb.into_graph().unwrap();
    (
        finished
            .instantiate(GraphCompleteOptions::default())
            .unwrap(),
        finished,
    )
}

/// The GraphDefinition form of `build(ptr)`.
fn build_defined(s: &Stream, add_one: &Kernel, ptr: &ArcView<i32>) -> (GraphExec, Graph) {
    let mut g = Graph::new(s.context()).unwrap();
    // SAFETY: `add_one` increments the `int` `ptr` views, alive past the launches.
    let n = unsafe { g.add_kernel(&[], &one(), add_one, &[ptr]) }.unwrap();
    // SAFETY: as above.
    unsafe { g.add_kernel(&[n], &one(), add_one, &[ptr]) }.unwrap();
    (g.instantiate(GraphCompleteOptions::default()).unwrap(), g)
}

fn update_kernel_args(builder: &str) {
    let (d, launch_stream) = setup();
    let (_, add_one) = common_kernels(&d);
    let arr = zeros(&d, &launch_stream, 2);
    let (a0, a1) = (arr.shared_view(), arr.shared_slice(1..).unwrap());
    let build = |ptr: &ArcView<i32>| match builder {
        "GraphBuilder" => build_captured(&add_one, ptr),
        _ => build_defined(&launch_stream, &add_one, ptr),
    };
    let (mut graph, _source0) = build(&a0);
    let (_exec1, source1) = build(&a1);
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), [2, 0]);
    graph.update(&source1).unwrap();
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), [2, 2]);
}

#[test]
fn test_graph_update_kernel_args__GraphBuilder() {
    require_gpu!();
    require_libs!("nvrtc");
    update_kernel_args("GraphBuilder");
}

#[test]
fn test_graph_update_kernel_args__GraphDefinition() {
    require_gpu!();
    require_libs!("nvrtc");
    update_kernel_args("GraphDefinition");
}

#[test]
fn test_graph_update_conditional() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, launch_stream) = setup();
    let code = conditional_kernels(&d, "unsigned int");
    let add_one = code.get_kernel("add_one").unwrap();
    let arr = zeros(&d, &launch_stream, 3);
    let a = [
        arr.shared_view(),
        arr.shared_slice(1..).unwrap(),
        arr.shared_slice(2..).unwrap(),
    ];
    let build_graph = |condition_value: u32| {
        let mut gb = d.create_graph_builder().unwrap();
        gb.begin_building(CaptureMode::default()).unwrap();
        let condition = gb.create_conditional_handle(Some(condition_value)).unwrap();
        let mut gb_case = gb.switch(condition, 3).unwrap();
        for (case, view) in gb_case.iter_mut().zip(&a) {
            case.begin_building(CaptureMode::default()).unwrap();
            for _ in 0..3 {
                launch1(case, &add_one, &[view]);
            }
            case.end_building().unwrap();
        }
        gb.end_building().unwrap();
        gb
    };
    let graph_variants = [build_graph(0), build_graph(1), build_graph(2)];
    // Launch the first graph
    let mut graph = graph_variants[0]
        .complete(GraphCompleteOptions::default())
        .unwrap();
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), [3, 0, 0]);
    // Update with second variant and launch again
    graph.update(graph_variants[1].graph().unwrap()).unwrap();
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), [3, 3, 0]);
    // Update with third variant and launch again
    graph.update(graph_variants[2].graph().unwrap()).unwrap();
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), [3, 3, 3]);
}

/// A callback that appends `name` to `called`, owning an `Arc` whose `Weak` is
/// returned (Python's `weakref.ref(callback)`).
fn callback(
    called: &Arc<Mutex<Vec<&'static str>>>,
    name: &'static str,
) -> (impl Fn() + Send + Sync + 'static, Weak<()>) {
    let owner = Arc::new(());
    let weak = Arc::downgrade(&owner);
    let called = called.clone();
    (
        move || {
            let _owner = &owner;
            called.lock().unwrap().push(name);
        },
        weak,
    )
}

#[test]
#[ignore = "differs: GraphExec::update adds the new graph's keep list to the instantiation's and releases nothing, so the replaced callback lives as long as the instantiation"]
fn test_graph_update_replaces_attachment_user_objects() {
    require_gpu!();
    let (_d, stream) = setup();
    let called = Arc::new(Mutex::new(Vec::new()));
    let (old_callback, old_weak) = callback(&called, "old");
    let (new_callback, new_weak) = callback(&called, "new");
    let mut old_def = Graph::new(stream.context()).unwrap();
    old_def.add_host_callback(&[], old_callback).unwrap();
    let mut graph = old_def
        .instantiate(GraphCompleteOptions::default())
        .unwrap();
    let mut new_def = Graph::new(stream.context()).unwrap();
    new_def.add_host_callback(&[], new_callback).unwrap();
    graph.update(&new_def).unwrap();
    drop(old_def);
    drop(new_def);
    wait_until_gone(&old_weak);
    assert!(new_weak.strong_count() > 0);
    graph.launch(&stream).unwrap();
    stream.sync().unwrap();
    assert_eq!(*called.lock().unwrap(), ["new"]);
}

#[test]
fn test_failed_graph_update_does_not_adopt_attachments() {
    require_gpu!();
    let (_d, stream) = setup();
    let called = Arc::new(Mutex::new(Vec::new()));
    let (active_callback, _active_weak) = callback(&called, "active");
    let (rejected_callback, rejected_weak) = callback(&called, "rejected");
    let mut active_def = Graph::new(stream.context()).unwrap();
    active_def.add_host_callback(&[], active_callback).unwrap();
    let mut graph = active_def
        .instantiate(GraphCompleteOptions::default())
        .unwrap();
    let mut rejected_def = Graph::new(stream.context()).unwrap();
    rejected_def
        .add_host_callback(&[], rejected_callback)
        .unwrap();
    rejected_def.add_empty(&[]).unwrap(); // Force a topology mismatch.
    driver_error(graph.update(&rejected_def));
    drop(rejected_def);
    wait_until_gone(&rejected_weak);
    graph.launch(&stream).unwrap();
    stream.sync().unwrap();
    assert_eq!(*called.lock().unwrap(), ["active"]);
}

#[test]
fn test_failed_graph_update_preserves_active_attachment_ownership() {
    require_gpu!();
    let (_d, stream) = setup();
    let called = Arc::new(Mutex::new(Vec::new()));
    let (active_callback, active_weak) = callback(&called, "active");
    let (rejected_callback, _rejected_weak) = callback(&called, "rejected");
    let mut active_def = Graph::new(stream.context()).unwrap();
    active_def.add_host_callback(&[], active_callback).unwrap();
    let mut graph = active_def
        .instantiate(GraphCompleteOptions::default())
        .unwrap();
    let mut rejected_def = Graph::new(stream.context()).unwrap();
    rejected_def
        .add_host_callback(&[], rejected_callback)
        .unwrap();
    rejected_def.add_empty(&[]).unwrap(); // Force a topology mismatch.
    driver_error(graph.update(&rejected_def));
    drop(active_def);
    drop(rejected_def);
    assert!(active_weak.strong_count() > 0);
    graph.launch(&stream).unwrap();
    stream.sync().unwrap();
    assert_eq!(*called.lock().unwrap(), ["active"]);
    drop(graph);
    wait_until_gone(&active_weak);
}

/// Python passes the unfinished builder to `update` (`ValueError`); here the
/// source is a `Graph`, which an unfinished builder does not give.
#[test]
fn test_graph_update_unfinished_builder() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, _s) = setup();
    let (empty_kernel, _) = common_kernels(&d);
    let mut gb_finished = d.create_graph_builder().unwrap();
    gb_finished.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb_finished, &empty_kernel, &[]);
    gb_finished.end_building().unwrap();
    let _graph = gb_finished
        .complete(GraphCompleteOptions::default())
        .unwrap();
    let mut gb_unfinished = d.create_graph_builder().unwrap();
    gb_unfinished
        .begin_building(CaptureMode::default())
        .unwrap();
    launch1(&gb_unfinished, &empty_kernel, &[]);
    // "Graph has not finished building"
    invalid(gb_unfinished.graph());
    gb_unfinished.end_building().unwrap();
}

#[test]
fn test_graph_update_topology_mismatch() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, _s) = setup();
    let (empty_kernel, _) = common_kernels(&d);
    // Two-node graph
    let mut gb1 = d.create_graph_builder().unwrap();
    gb1.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb1, &empty_kernel, &[]);
    launch1(&gb1, &empty_kernel, &[]);
    gb1.end_building().unwrap();
    let mut graph = gb1.complete(GraphCompleteOptions::default()).unwrap();
    // Three-node graph (different topology)
    let mut gb2 = d.create_graph_builder().unwrap();
    gb2.begin_building(CaptureMode::default()).unwrap();
    for _ in 0..3 {
        launch1(&gb2, &empty_kernel, &[]);
    }
    gb2.end_building().unwrap();
    let e = driver_error(graph.update(gb2.graph().unwrap()));
    let msg = e.report().to_string();
    assert!(
        msg.contains("CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED"),
        "{msg}"
    );
}
