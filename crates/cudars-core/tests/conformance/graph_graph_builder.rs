//! `cuda_core/tests/graph/test_graph_builder.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`): stream capture into a `GraphBuilder`.
//! Every test needs a GPU (and NVRTC for its kernels), but
//! `the_graph_kernels_compile_without_a_gpu` compiles their sources for `sm_90` here.
//!
//! How `cuda.core`'s names map: `gb.begin_building(mode)` is
//! `gb.begin_building(CaptureMode::…)`, `launch(gb, config, kernel, *args)` is
//! `unsafe { gb.launch(&config, &kernel, &[…]) }`, `gb.end_building().complete()` is
//! `gb.end_building()` then `gb.complete(GraphCompleteOptions::default())`,
//! `left, right = gb.split(2)` is `right = gb.split(2)?.pop()` (`left` is `gb`
//! itself), `GraphBuilder.join(a, b)` is `a.join([b])`, `gb.embed(child)` is
//! `gb.add_child(child.graph()?)`, `gb.graph_definition` is `gb.graph()?` (borrowed)
//! or `gb.into_graph()?` (taken, to change it with the explicit API), `gb.close()`
//! is dropping the builder, `if_then` is `if_cond`, `create_condition(v)` is
//! `create_conditional_handle(v)`. A Python `RuntimeError`/`ValueError` for bad
//! use is `Error::InvalidArgument`.
//!
//! The Python tests put their counters in pinned host memory
//! (`LegacyPinnedMemoryResource`) that the kernels reach by address; here they are
//! device buffers (`Arc<DeviceBuffer<i32>>`) the graph keeps alive, read back
//! after the launch: the kernels and the values checked are the same.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use cudars_core::{
    CaptureArg, CaptureMode, CompileTarget, Device, DeviceBuffer, Error, Graph,
    GraphCompleteOptions, GraphNodeKind, Kernel, LaunchConfig, ObjectCode, Program, ProgramOptions,
    SourceCode, Stream, StreamOptions,
};
use cudars_tests::{require_gpu, require_libs};

/// `helpers/graph_kernels.py`'s `compile_common_kernels`.
pub(crate) const COMMON_KERNELS: &str = r#"
    __global__ void empty_kernel() {}
    __global__ void add_one(int *a) { *a += 1; }
    "#;

/// `helpers/graph_kernels.py`'s `compile_conditional_kernels(cond_type)`, with
/// `$cond_type_str` replaced by `bool` or `unsigned int`.
pub(crate) fn conditional_kernels_source(cond_type: &str) -> String {
    r#"
    extern "C" __device__ __cudart_builtin__ void CUDARTAPI cudaGraphSetConditional(cudaGraphConditionalHandle handle,
                                                                                    unsigned int value);
    __global__ void empty_kernel() {}
    __global__ void add_one(int *a) { *a += 1; }
    __global__ void set_handle(cudaGraphConditionalHandle handle, $cond_type_str value) {
        cudaGraphSetConditional(handle, value);
    }
    __global__ void loop_kernel(cudaGraphConditionalHandle handle)
    {
        static int count = 10;
        cudaGraphSetConditional(handle, --count ? 1 : 0);
    }
    "#
    .replace("$cond_type_str", cond_type)
}

pub(crate) const CONDITIONAL_NAMES: &[&str] =
    &["empty_kernel", "add_one", "set_handle", "loop_kernel"];

/// `Program(code, "c++", ProgramOptions(std="c++17", arch=arch)).compile("cubin",
/// name_expressions=names)`.
pub(crate) fn compile_for(arch: &str, src: &str, names: &[&str]) -> ObjectCode {
    let options = ProgramOptions {
        std: Some("c++17".into()),
        arch: Some(arch.into()),
        ..Default::default()
    };
    Program::new(SourceCode::Cxx(src), options)
        .unwrap()
        .compile(CompileTarget::Cubin, names)
        .unwrap()
}

/// Device 0, current on this thread (`init_cuda`), and a stream on it.
pub(crate) fn setup() -> (Device, Stream) {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    (d, s)
}

/// `compile_common_kernels()`: `(empty_kernel, add_one)`.
pub(crate) fn common_kernels(d: &Device) -> (Kernel, Kernel) {
    let code = compile_for(
        &d.arch().unwrap(),
        COMMON_KERNELS,
        &["empty_kernel", "add_one"],
    );
    (
        code.get_kernel("empty_kernel").unwrap(),
        code.get_kernel("add_one").unwrap(),
    )
}

/// `compile_conditional_kernels(cond_type)` for the current device.
pub(crate) fn conditional_kernels(d: &Device, cond_type: &str) -> ObjectCode {
    compile_for(
        &d.arch().unwrap(),
        &conditional_kernels_source(cond_type),
        CONDITIONAL_NAMES,
    )
}

/// `LaunchConfig(grid=1, block=1)`.
pub(crate) fn one() -> LaunchConfig {
    LaunchConfig::new(1, 1)
}

/// `launch(gb, LaunchConfig(grid=1, block=1), kernel, *args)`.
pub(crate) fn launch1(b: &cudars_core::GraphBuilder, kernel: &Kernel, args: &[&dyn CaptureArg]) {
    // SAFETY: the test kernels touch one `int` at the address they are given,
    // and each test passes a view of at least one element (or nothing).
    unsafe { b.launch(&one(), kernel, args) }.unwrap();
}

/// `n` zeroed `int`s (the Python tests' `arr[i] = 0`).
pub(crate) fn zeros(d: &Device, s: &Stream, n: usize) -> Arc<DeviceBuffer<i32>> {
    let b = Arc::new(DeviceBuffer::<i32>::zeroed(d, n, s).unwrap());
    s.sync().unwrap();
    b
}

/// `pytest.raises(RuntimeError | ValueError)` for bad use of a builder.
#[track_caller]
pub(crate) fn invalid<T>(r: cudars_core::Result<T>) {
    match r {
        Err(Error::InvalidArgument { .. }) => {}
        Err(e) => panic!("expected Error::InvalidArgument, got {}", e.report()),
        Ok(_) => panic!("expected Error::InvalidArgument, got Ok"),
    }
}

/// The graph's conditional node (there is one).
pub(crate) fn conditional_node(g: &Graph) -> cudars_core::GraphNode {
    g.nodes()
        .unwrap()
        .into_iter()
        .find(|n| n.kind(g).unwrap() == GraphNodeKind::Conditional)
        .expect("a conditional node")
}

/// Not a Python test: the kernel sources of the graph tests compile for an H100
/// (`sm_90`) with the NVRTC found here, so a mistake shows before the GPU run.
#[test]
fn the_graph_kernels_compile_without_a_gpu() {
    require_libs!("nvrtc");
    let code = compile_for("sm_90", COMMON_KERNELS, &["empty_kernel", "add_one"]);
    assert!(!code.code().is_empty());
    for ty in ["bool", "unsigned int"] {
        let code = compile_for("sm_90", &conditional_kernels_source(ty), CONDITIONAL_NAMES);
        assert!(!code.code().is_empty());
    }
    let code = compile_for(
        "sm_90",
        crate::graph_graph_memory_resource::ALLOC_KERNELS,
        &["set_zero", "add_one"],
    );
    assert!(!code.code().is_empty());
}

#[test]
fn test_graph_is_building() {
    require_gpu!();
    let (d, _s) = setup();
    let mut gb = d.create_graph_builder().unwrap();
    assert!(!gb.is_building().unwrap());
    gb.begin_building(CaptureMode::default()).unwrap();
    assert!(gb.is_building().unwrap());
    gb.end_building().unwrap();
    assert!(!gb.is_building().unwrap());
}

#[test]
fn test_graph_straight() {
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
    let graph = gb.complete(GraphCompleteOptions::default()).unwrap();
    // Sanity upload and launch
    graph.upload(&launch_stream).unwrap();
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
}

/// Python's `GraphBuilder.join(left)` (a single builder, `ValueError`) has no
/// form here: the builder that joins is `self`, the others an iterator.
#[test]
fn test_graph_fork_join() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, launch_stream) = setup();
    let (empty_kernel, _) = common_kernels(&d);
    // Simple diamond topology
    let mut gb = d.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb, &empty_kernel, &[]);
    // "Invalid split count: expecting >= 2, got 1"
    invalid(gb.split(1));
    let right = gb.split(2).unwrap().pop().unwrap();
    let left = &gb;
    launch1(left, &empty_kernel, &[]);
    launch1(left, &empty_kernel, &[]);
    launch1(&right, &empty_kernel, &[]);
    launch1(&right, &empty_kernel, &[]);
    gb.join([right]).unwrap();
    launch1(&gb, &empty_kernel, &[]);
    gb.end_building().unwrap();
    let graph = gb.complete(GraphCompleteOptions::default()).unwrap();
    // Sanity upload and launch
    graph.upload(&launch_stream).unwrap();
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
}

#[test]
fn test_graph_is_join_required() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, _s) = setup();
    let (empty_kernel, _) = common_kernels(&d);
    // Starting builder is always primary
    let mut gb = d.create_graph_builder().unwrap();
    assert!(!gb.is_join_required());
    gb.begin_building(CaptureMode::default()).unwrap();
    // Create root node
    launch1(&gb, &empty_kernel, &[]);
    // The first of Python's split builders is the original: `gb` here.
    let mut first = gb.split(3).unwrap();
    assert_eq!(first.len(), 2);
    // Only the original builder need not join
    assert!(!gb.is_join_required());
    for b in &first {
        assert!(b.is_join_required());
    }
    // Launch kernel on each split
    launch1(&gb, &empty_kernel, &[]);
    for b in &first {
        launch1(b, &empty_kernel, &[]);
    }
    // Splitting on new builder will all require joining
    let last = first.pop().unwrap();
    let second = last.split(3).unwrap();
    assert!(last.is_join_required());
    for b in &second {
        assert!(b.is_join_required());
    }
    // Launch kernel on each second split
    launch1(&last, &empty_kernel, &[]);
    for b in &second {
        launch1(b, &empty_kernel, &[]);
    }
    // Joined builder requires joining if all builder need to join
    last.join(second).unwrap();
    assert!(last.is_join_required());
    first.insert(0, last);
    gb.join(first).unwrap();
    assert!(!gb.is_join_required());
    // Create final node
    launch1(&gb, &empty_kernel, &[]);
    gb.end_building().unwrap();
    gb.complete(GraphCompleteOptions::default()).unwrap();
}

#[test]
fn test_graph_repeat_capture() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, launch_stream) = setup();
    let (_, add_one) = common_kernels(&d);
    let arr = zeros(&d, &launch_stream, 1);
    // Launch the graph once
    let mut gb = launch_stream.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb, &add_one, &[&arr.shared_view()]);
    gb.end_building().unwrap();
    let graph = gb.complete(GraphCompleteOptions::default()).unwrap();
    // Run the graph once
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), [1]);
    // "Cannot resume building after building has ended."
    invalid(gb.begin_building(CaptureMode::default()).map(|_| ()));
    // Graph can be re-launched
    for _ in 0..3 {
        graph.launch(&launch_stream).unwrap();
    }
    launch_stream.sync().unwrap();
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), [4]);
}

#[test]
fn test_graph_capture_errors() {
    require_gpu!();
    let (d, _s) = setup();
    let mut gb = d.create_graph_builder().unwrap();
    // "Graph has not finished building."
    invalid(gb.complete(GraphCompleteOptions::default()));
    gb.begin_building(CaptureMode::default()).unwrap();
    invalid(gb.complete(GraphCompleteOptions::default()));
    gb.end_building().unwrap();
    gb.complete(GraphCompleteOptions::default()).unwrap();
}

#[test]
fn test_graph_begin_building_twice() {
    require_gpu!();
    let (d, _s) = setup();
    let mut gb = d.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    // "Graph builder is already building."
    invalid(gb.begin_building(CaptureMode::default()).map(|_| ()));
    gb.end_building().unwrap();
}

#[test]
fn test_graph_split_requires_building() {
    require_gpu!();
    let (d, _s) = setup();
    let gb = d.create_graph_builder().unwrap();
    // "Graph builder must be building before it can be split."
    invalid(gb.split(2));
}

/// Dropping a builder mid-capture ends its capture; the stream it was made
/// from keeps working (here it never captured: the builder has a stream of its own).
#[test]
fn test_graph_gc_mid_capture() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, stream) = setup();
    let (empty_kernel, _) = common_kernels(&d);
    let mut gb = stream.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb, &empty_kernel, &[]);
    // Drop the builder without end_building().
    drop(gb);
    // If the capture were left active, the stream would be poisoned for new work.
    // SAFETY: `empty_kernel` takes no arguments and touches nothing.
    unsafe { cudars_core::launch(&stream, &one(), &empty_kernel, &[]) }.unwrap();
    stream.sync().unwrap();
}

/// Python's `callback(fn, user_data=…)` for a Python callable (`ValueError`) has
/// no form here: the closure captures what it needs.
#[test]
fn test_graph_capture_callback_python() {
    require_gpu!();
    let (_d, launch_stream) = setup();
    let results = Arc::new(Mutex::new(Vec::new()));
    let r = results.clone();
    let my_callback = move || r.lock().unwrap().push(42);
    let mut gb = launch_stream.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    gb.callback(my_callback).unwrap();
    gb.end_building().unwrap();
    let graph = gb.complete(GraphCompleteOptions::default()).unwrap();
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    assert_eq!(*results.lock().unwrap(), [42]);
}

/// A C callback with a copied `user_data` byte: a closure that owns the bytes.
#[test]
fn test_graph_capture_callback_ctypes() {
    require_gpu!();
    let (_d, launch_stream) = setup();
    let result = Arc::new(AtomicU8::new(0));
    let r = result.clone();
    let data = [0xABu8];
    let read_byte = move || r.store(data[0], Ordering::SeqCst);
    let mut gb = launch_stream.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    gb.callback(read_byte).unwrap();
    gb.end_building().unwrap();
    let graph = gb.complete(GraphCompleteOptions::default()).unwrap();
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    assert_eq!(result.load(Ordering::SeqCst), 0xAB);
}

#[test]
fn test_graph_capture_callback_python_survives_del() {
    require_gpu!();
    let (_d, launch_stream) = setup();
    let called = Arc::new(AtomicBool::new(false));
    let c = called.clone();
    let my_callback = move || c.store(true, Ordering::SeqCst);
    let mut gb = launch_stream.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    gb.callback(my_callback).unwrap();
    gb.end_building().unwrap();
    let graph = gb.complete(GraphCompleteOptions::default()).unwrap();
    // `del my_callback`: moved into the graph, and the builder goes too.
    drop(gb);
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    assert!(called.load(Ordering::SeqCst));
}

#[test]
fn test_graph_capture_callback_ctypes_user_data_survives_del() {
    require_gpu!();
    let (_d, launch_stream) = setup();
    let result = Arc::new(AtomicU8::new(0));
    let r = result.clone();
    let payload = [0xABu8];
    let mut gb = launch_stream.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    // `del read_byte, payload`: both moved into the graph.
    gb.callback(move || r.store(payload[0], Ordering::SeqCst))
        .unwrap();
    gb.end_building().unwrap();
    let graph = gb.complete(GraphCompleteOptions::default()).unwrap();
    drop(gb);
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    assert_eq!(result.load(Ordering::SeqCst), 0xAB);
}

#[test]
fn test_graph_child_graph() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, launch_stream) = setup();
    let (_, add_one) = common_kernels(&d);
    let arr = zeros(&d, &launch_stream, 2);
    let second = arr.shared_slice(1..).unwrap();
    // Capture the child graph
    let mut gb_child = d.create_graph_builder().unwrap();
    gb_child.begin_building(CaptureMode::default()).unwrap();
    for _ in 0..3 {
        launch1(&gb_child, &add_one, &[&second]);
    }
    gb_child.end_building().unwrap();
    // Capture the parent graph
    let mut gb_parent = d.create_graph_builder().unwrap();
    gb_parent.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb_parent, &add_one, &[&arr.shared_view()]);
    // Add child
    gb_parent.add_child(gb_child.graph().unwrap()).unwrap();
    launch1(&gb_parent, &add_one, &[&arr.shared_view()]);
    gb_parent.end_building().unwrap();
    let graph = gb_parent.complete(GraphCompleteOptions::default()).unwrap();
    // Parent updates first value, child updates second value
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), [0, 0]);
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), [2, 3]);
}

#[test]
fn test_graph_stream_lifetime() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, _s) = setup();
    let (empty_kernel, _) = common_kernels(&d);
    // Create simple graph from device
    let mut gb = d.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb, &empty_kernel, &[]);
    gb.end_building().unwrap();
    let graph = gb.complete(GraphCompleteOptions::default()).unwrap();
    // Destroy simple graph and builder
    drop(gb);
    drop(graph);
    // Create simple graph from stream
    let stream = d.create_stream(StreamOptions::default()).unwrap();
    let mut gb = stream.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb, &empty_kernel, &[]);
    gb.end_building().unwrap();
    let graph = gb.complete(GraphCompleteOptions::default()).unwrap();
    // Destroy simple graph and builder
    drop(gb);
    drop(graph);
    // Verify the stream can still launch work
    // SAFETY: `empty_kernel` takes no arguments and touches nothing.
    unsafe { cudars_core::launch(&stream, &one(), &empty_kernel, &[]) }.unwrap();
    stream.sync().unwrap();
}

#[test]
fn test_graph_definition_returns_graph_definition_after_end_building() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, _s) = setup();
    let (empty_kernel, _) = common_kernels(&d);
    let mut gb = d.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb, &empty_kernel, &[]);
    launch1(&gb, &empty_kernel, &[]);
    gb.end_building().unwrap();
    let gd = gb.graph().unwrap();
    // The captured graph must contain the launched kernels.
    assert_eq!(gd.nodes().unwrap().len(), 2);
}

#[test]
fn test_graph_definition_raises_before_begin_building() {
    require_gpu!();
    let (d, _s) = setup();
    let gb = d.create_graph_builder().unwrap();
    invalid(gb.graph());
}

#[test]
fn test_graph_definition_raises_during_capture() {
    require_gpu!();
    let (d, _s) = setup();
    let mut gb = d.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    invalid(gb.graph());
    gb.end_building().unwrap();
}

#[test]
fn test_graph_definition_raises_for_forked() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, _s) = setup();
    let (empty_kernel, _) = common_kernels(&d);
    let mut gb = d.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb, &empty_kernel, &[]);
    let sibling = gb.split(2).unwrap().pop().unwrap();
    invalid(sibling.graph());
    gb.join([sibling]).unwrap();
    gb.end_building().unwrap();
}

/// Closing the builder (`into_graph` consumes it) leaves the graph whole.
#[test]
fn test_graph_definition_shares_ownership() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, _s) = setup();
    let (empty_kernel, _) = common_kernels(&d);
    let mut gb = d.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb, &empty_kernel, &[]);
    gb.end_building().unwrap();
    let gd = gb.into_graph().unwrap();
    assert_eq!(gd.nodes().unwrap().len(), 1);
}

/// Python changes the builder's graph and then `gb.complete()`s it; here the
/// graph is taken from the builder (`into_graph`), changed and instantiated.
#[test]
fn test_graph_definition_round_trips_through_explicit_api() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, launch_stream) = setup();
    let (_, add_one) = common_kernels(&d);
    let arr = zeros(&d, &launch_stream, 1);
    let mut gb = launch_stream.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb, &add_one, &[&arr.shared_view()]);
    gb.end_building().unwrap();
    // Add a second add_one through the explicit API.
    let mut gd = gb.into_graph().unwrap();
    let captured_node = gd.nodes().unwrap()[0];
    // SAFETY: `add_one` increments the one `int` of `arr`, alive past the launch.
    unsafe { gd.add_kernel(&[captured_node], &one(), &add_one, &[&arr.shared_view()]) }.unwrap();
    assert_eq!(gd.nodes().unwrap().len(), 2);
    let graph = gd.instantiate(GraphCompleteOptions::default()).unwrap();
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), [2]);
}

/// A body builder has no graph of its own here (`body_gb.graph()` is an error):
/// the body graph is reached through its conditional node once the top builder
/// has ended (`node.bodies(&graph)`), and filled through the explicit API there.
#[test]
fn test_graph_definition_hybrid_conditional_body() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, launch_stream) = setup();
    let code = conditional_kernels(&d, "unsigned int");
    let add_one = code.get_kernel("add_one").unwrap();
    let set_handle = code.get_kernel("set_handle").unwrap();
    let arr = zeros(&d, &launch_stream, 1);
    let mut gb = d.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    let condition = gb.create_conditional_handle(Some(1)).unwrap();
    launch1(&gb, &set_handle, &[&condition, &1u32]);
    let body_gb = gb.if_cond(condition).unwrap();
    // Skip body_gb.begin_building() entirely.
    invalid(body_gb.graph());
    drop(body_gb);
    gb.end_building().unwrap();
    let g = gb.into_graph().unwrap();
    let mut bodies = conditional_node(&g).bodies(&g).unwrap();
    assert_eq!(bodies.len(), 1);
    let body_def = &mut bodies[0];
    assert_eq!(body_def.nodes().unwrap().len(), 0);
    // SAFETY: `add_one` increments the one `int` of `arr`, alive past the launch.
    unsafe { body_def.add_kernel(&[], &one(), &add_one, &[&arr.shared_view()]) }.unwrap();
    let graph = g.instantiate(GraphCompleteOptions::default()).unwrap();
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), [1]);
}

/// As `test_graph_definition_hybrid_conditional_body`: the body graph through
/// its conditional node once the top builder has ended.
#[test]
fn test_graph_definition_conditional_body_after_capture() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, launch_stream) = setup();
    let code = conditional_kernels(&d, "unsigned int");
    let add_one = code.get_kernel("add_one").unwrap();
    let set_handle = code.get_kernel("set_handle").unwrap();
    let arr = zeros(&d, &launch_stream, 1);
    let mut gb = d.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    let condition = gb.create_conditional_handle(Some(1)).unwrap();
    launch1(&gb, &set_handle, &[&condition, &1u32]);
    let mut body_gb = gb.if_cond(condition).unwrap();
    body_gb.begin_building(CaptureMode::default()).unwrap();
    // Capture one increment into the body.
    launch1(&body_gb, &add_one, &[&arr.shared_view()]);
    body_gb.end_building().unwrap();
    gb.end_building().unwrap();
    // Add a second increment via the explicit API on the same body graph.
    let g = gb.into_graph().unwrap();
    let mut bodies = conditional_node(&g).bodies(&g).unwrap();
    let body_def = &mut bodies[0];
    let captured_node = body_def.nodes().unwrap()[0];
    // SAFETY: as above.
    unsafe { body_def.add_kernel(&[captured_node], &one(), &add_one, &[&arr.shared_view()]) }
        .unwrap();
    assert_eq!(body_def.nodes().unwrap().len(), 2);
    let graph = g.instantiate(GraphCompleteOptions::default()).unwrap();
    graph.launch(&launch_stream).unwrap();
    launch_stream.sync().unwrap();
    assert_eq!(arr.to_vec(&launch_stream).unwrap(), [2]);
}

#[test]
fn test_graph_definition_conditional_body_during_capture_raises() {
    require_gpu!();
    let (d, _s) = setup();
    let mut gb = d.create_graph_builder().unwrap();
    gb.begin_building(CaptureMode::default()).unwrap();
    let condition = gb.create_conditional_handle(Some(1)).unwrap();
    let mut body_gb = gb.if_cond(condition).unwrap();
    body_gb.begin_building(CaptureMode::default()).unwrap();
    invalid(body_gb.graph());
    body_gb.end_building().unwrap();
    gb.end_building().unwrap();
}

/// The environment variable that marks the process [`in_own_process`] starts.
const ALONE_VAR: &str = "CUDARS_CONFORMANCE_ALONE";

/// For a test that captures in `CaptureMode::Global`: while such a capture is
/// active, a potentially unsafe CUDA call from any other thread of the process
/// fails (and invalidates the capture), and the tests of this binary run in
/// parallel. So the test runs again in a process of its own, alone
/// (`<binary> <path> --exact --test-threads=1`): returns `true` in the parent,
/// after checking the child passed (the caller then returns), `false` in the
/// child (the caller runs the test's body).
pub(crate) fn in_own_process(test: &str) -> bool {
    if std::env::var_os(ALONE_VAR).is_some() {
        return false;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            test,
            "--exact",
            "--include-ignored",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(ALONE_VAR, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{test} alone: {}\n{stdout}\n{stderr}",
        out.status
    );
    println!("{test} passed in a process of its own");
    true
}
