//! `cuda_core/tests/test_object_protocols.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says: the tests of
//! `__eq__` and `__hash__` for the types that have `PartialEq`, `Eq` and `Hash`
//! here: `Device`, `Stream`, `Event`, `Context` (each compares its handle or
//! ordinal, as `cuda.core`'s does) and `LaunchConfig` (compared by value, as
//! `cuda.core`'s). Python's fixtures are the functions `sample_*`; `x == "string"`,
//! `x == x.handle` and comparisons across types do not compile here, so
//! `test_equality_basic` keeps only its reflexive check. Weak references, pickling
//! and `repr` have no Rust counterpart for these types (the manifest says so). The
//! `Device` and `Context` pairs need two GPUs, as in Python; the `LaunchConfig` cases
//! need none, the others one.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use cudars_core::{Context, Device, Event, EventOptions, LaunchConfig, Stream, StreamOptions};

fn hash<T: Hash>(x: &T) -> u64 {
    let mut h = DefaultHasher::new();
    x.hash(&mut h);
    h.finish()
}

fn sample_device() -> Device {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    d
}

/// `Device(1)`: the caller has checked for two GPUs.
fn sample_device_alt() -> Device {
    let alt = Device::new(1).unwrap();
    alt.set_current().unwrap();
    sample_device();
    alt
}

fn sample_stream() -> Stream {
    sample_device()
        .create_stream(StreamOptions::default())
        .unwrap()
}

fn sample_event() -> Event {
    sample_device()
        .create_event(EventOptions::default())
        .unwrap()
}

fn sample_context() -> Context {
    sample_device().context().unwrap()
}

fn sample_context_alt() -> Context {
    sample_device_alt().context().unwrap()
}

fn sample_launch_config() -> LaunchConfig {
    LaunchConfig::new(1u32, 1u32)
}

fn sample_launch_config_alt() -> LaunchConfig {
    LaunchConfig::new(2u32, 2u32)
}

#[allow(clippy::eq_op)]
fn equality_basic<T: PartialEq>(obj: &T) {
    assert!(obj == obj);
}

fn distinct<T: PartialEq + Hash>(a: &T, b: &T) {
    assert!(a != b);
    assert_ne!(hash(a), hash(b));
}

#[test]
fn test_equality_basic__sample_device() {
    cudars_tests::require_gpu!();
    equality_basic(&sample_device());
}

#[test]
fn test_equality_basic__sample_stream() {
    cudars_tests::require_gpu!();
    equality_basic(&sample_stream());
}

#[test]
fn test_equality_basic__sample_event() {
    cudars_tests::require_gpu!();
    equality_basic(&sample_event());
}

#[test]
fn test_equality_basic__sample_context() {
    cudars_tests::require_gpu!();
    equality_basic(&sample_context());
}

#[test]
fn test_equality_basic__sample_launch_config() {
    equality_basic(&sample_launch_config());
}

#[test]
fn test_hash_consistency__sample_device() {
    cudars_tests::require_gpu!();
    let obj = sample_device();
    assert_eq!(hash(&obj), hash(&obj));
}

#[test]
fn test_hash_consistency__sample_stream() {
    cudars_tests::require_gpu!();
    let obj = sample_stream();
    assert_eq!(hash(&obj), hash(&obj));
}

#[test]
fn test_hash_consistency__sample_event() {
    cudars_tests::require_gpu!();
    let obj = sample_event();
    assert_eq!(hash(&obj), hash(&obj));
}

#[test]
fn test_hash_consistency__sample_context() {
    cudars_tests::require_gpu!();
    let obj = sample_context();
    assert_eq!(hash(&obj), hash(&obj));
}

#[test]
fn test_hash_consistency__sample_launch_config() {
    let obj = sample_launch_config();
    assert_eq!(hash(&obj), hash(&obj));
}

#[test]
fn test_hash_distinct_same_type__sample_device_sample_device_alt() {
    cudars_tests::require_gpus!(2);
    assert_ne!(hash(&sample_device()), hash(&sample_device_alt()));
}

#[test]
fn test_hash_distinct_same_type__sample_stream_sample_stream_alt() {
    cudars_tests::require_gpu!();
    let (a, b) = (sample_stream(), sample_stream());
    assert_ne!(hash(&a), hash(&b));
}

#[test]
fn test_hash_distinct_same_type__sample_event_sample_event_alt() {
    cudars_tests::require_gpu!();
    let (a, b) = (sample_event(), sample_event());
    assert_ne!(hash(&a), hash(&b));
}

#[test]
fn test_hash_distinct_same_type__sample_context_sample_context_alt() {
    cudars_tests::require_gpus!(2);
    assert_ne!(hash(&sample_context()), hash(&sample_context_alt()));
}

#[test]
fn test_hash_distinct_same_type__sample_launch_config_sample_launch_config_alt() {
    assert_ne!(
        hash(&sample_launch_config()),
        hash(&sample_launch_config_alt())
    );
}

#[test]
fn test_same_type_inequality__sample_device_sample_device_alt() {
    cudars_tests::require_gpus!(2);
    assert!(sample_device() != sample_device_alt());
}

#[test]
fn test_same_type_inequality__sample_stream_sample_stream_alt() {
    cudars_tests::require_gpu!();
    let (a, b) = (sample_stream(), sample_stream());
    distinct(&a, &b);
}

#[test]
fn test_same_type_inequality__sample_event_sample_event_alt() {
    cudars_tests::require_gpu!();
    let (a, b) = (sample_event(), sample_event());
    distinct(&a, &b);
}

#[test]
fn test_same_type_inequality__sample_context_sample_context_alt() {
    cudars_tests::require_gpus!(2);
    assert!(sample_context() != sample_context_alt());
}

#[test]
fn test_same_type_inequality__sample_launch_config_sample_launch_config_alt() {
    assert!(sample_launch_config() != sample_launch_config_alt());
}

/// `Stream.from_handle(int(s.handle))`: equal, and hashing equal.
#[test]
fn test_equality_same_handle__sample_stream__lambda_() {
    cudars_tests::require_gpu!();
    let obj = sample_stream();
    // SAFETY: `obj` outlives the adopted stream (declared after it).
    let obj2 = unsafe { Stream::from_handle(obj.handle()) }.unwrap();
    assert!(obj == obj2);
    assert_eq!(hash(&obj), hash(&obj2));
}

// ---------------------------------------------------------------------------
// Graph definitions and their nodes. Python's node classes (`AllocNode`,
// `KernelNode`, …) are one type here, `GraphNode` (a handle and its graph's id,
// `PartialEq`, `Eq`, `Hash`), made by the `Graph::add_*` of each kind; a condition
// is a `GraphCondition`, a graph definition a `Graph` (compared by handle).
// Python's memset and memcpy fixtures work on graph allocations; here on device
// buffers (the node's identity is what is tested). Python's `_entry` node (a
// virtual node of a null handle) has no counterpart.
// ---------------------------------------------------------------------------

use std::sync::Arc;

use cudars_core::{CompileTarget, Kernel, Program, ProgramOptions, SourceCode};
use cudars_core::{ConditionalKind, Graph, GraphNode};

/// What the tests read of a sample and its `_alt` (both made in one graph, as
/// Python's fixtures).
struct Facts {
    reflexive: bool,
    equal_to_alt: bool,
    hash: u64,
    hash_again: u64,
    hash_alt: u64,
}

fn facts_of<T: PartialEq + Hash>(a: &T, b: &T) -> Facts {
    #[allow(clippy::eq_op)]
    let reflexive = a == a;
    Facts {
        reflexive,
        equal_to_alt: a == b,
        hash: hash(a),
        hash_again: hash(a),
        hash_alt: hash(b),
    }
}

/// `compile_common_kernels().get_kernel("empty_kernel")`.
fn empty_kernel(d: &Device) -> Kernel {
    Program::new(
        SourceCode::Cxx(r#"extern "C" __global__ void empty_kernel() {}"#),
        ProgramOptions::for_device(d).unwrap(),
    )
    .unwrap()
    .compile(CompileTarget::Cubin, &[])
    .unwrap()
    .get_kernel("empty_kernel")
    .unwrap()
}

const ALLOC_SIZE: usize = 1024;

/// One node of `kind` in `g`.
fn node(kind: &str, g: &mut Graph, d: &Device) -> GraphNode {
    let s = d.default_stream().unwrap();
    let buffer = || {
        Arc::new(
            d.memory_resource()
                .unwrap()
                .allocate(ALLOC_SIZE, &s)
                .unwrap(),
        )
    };
    match kind {
        "alloc_node" => g.add_mem_alloc(&[], ALLOC_SIZE).unwrap().node,
        "empty_node" => {
            let a = g.add_mem_alloc(&[], ALLOC_SIZE).unwrap();
            let b = g.add_mem_alloc(&[], ALLOC_SIZE).unwrap();
            g.add_empty(&[a.node, b.node]).unwrap()
        }
        "free_node" => {
            let a = g.add_mem_alloc(&[], ALLOC_SIZE).unwrap();
            g.add_mem_free(&[a.node], &a).unwrap()
        }
        "memset_node" => g.add_memset(&[], &buffer(), 0, 1).unwrap(),
        "memcpy_node" => {
            let (src, dst) = (buffer(), buffer());
            g.add_memcpy(&[], &dst, &src, ALLOC_SIZE).unwrap()
        }
        "kernel_node" => {
            let k = empty_kernel(d);
            // SAFETY: the kernel takes no parameters and touches no memory.
            unsafe { g.add_kernel(&[], &LaunchConfig::new(1u32, 1u32), &k, &[]) }.unwrap()
        }
        "child_graph_node" => {
            let mut child = Graph::new(&d.context().unwrap()).unwrap();
            let k = empty_kernel(d);
            // SAFETY: as above.
            unsafe { child.add_kernel(&[], &LaunchConfig::new(1u32, 1u32), &k, &[]) }.unwrap();
            g.add_child(&[], &child).unwrap()
        }
        "event_record_node" => {
            let e = Arc::new(d.create_event(EventOptions::default()).unwrap());
            g.add_event_record(&[], &e).unwrap()
        }
        "event_wait_node" => {
            let e = Arc::new(d.create_event(EventOptions::default()).unwrap());
            g.add_event_wait(&[], &e).unwrap()
        }
        "host_callback_node" => g.add_host_callback(&[], || {}).unwrap(),
        "if_node" | "if_else_node" | "while_node" | "switch_node" => {
            let kind = match kind {
                "if_node" => ConditionalKind::If,
                "if_else_node" => ConditionalKind::IfElse,
                "while_node" => ConditionalKind::While,
                _ => ConditionalKind::Switch(3),
            };
            let c = g.create_condition(None).unwrap();
            g.add_conditional(&[], c, kind).unwrap().0
        }
        other => unreachable!("{other}"),
    }
}

/// The sample of `kind` and its `_alt`.
fn graph_facts(kind: &str) -> Facts {
    let d = sample_device();
    let ctx = d.context().unwrap();
    match kind {
        "graphdef" => {
            let (a, b) = (Graph::new(&ctx).unwrap(), Graph::new(&ctx).unwrap());
            facts_of(&a, &b)
        }
        "condition" => {
            let mut g = Graph::new(&ctx).unwrap();
            let a = g.create_condition(None).unwrap();
            let b = g.create_condition(None).unwrap();
            facts_of(&a, &b)
        }
        _ => {
            let mut g = Graph::new(&ctx).unwrap();
            let a = node(kind, &mut g, &d);
            let b = node(kind, &mut g, &d);
            facts_of(&a, &b)
        }
    }
}

#[test]
fn test_equality_basic__sample_alloc_node() {
    cudars_tests::require_gpu!();
    assert!(graph_facts("alloc_node").reflexive);
}

#[test]
fn test_hash_consistency__sample_alloc_node() {
    cudars_tests::require_gpu!();
    let f = graph_facts("alloc_node");
    assert_eq!(f.hash, f.hash_again);
}

#[test]
fn test_hash_distinct_same_type__sample_alloc_node_sample_alloc_node_alt() {
    cudars_tests::require_gpu!();
    let f = graph_facts("alloc_node");
    assert_ne!(f.hash, f.hash_alt);
}

#[test]
fn test_same_type_inequality__sample_alloc_node_sample_alloc_node_alt() {
    cudars_tests::require_gpu!();
    assert!(!graph_facts("alloc_node").equal_to_alt);
}

#[test]
fn test_equality_basic__sample_child_graph_node() {
    cudars_tests::require_gpu!();
    cudars_tests::require_libs!("nvrtc");
    assert!(graph_facts("child_graph_node").reflexive);
}

#[test]
fn test_hash_consistency__sample_child_graph_node() {
    cudars_tests::require_gpu!();
    cudars_tests::require_libs!("nvrtc");
    let f = graph_facts("child_graph_node");
    assert_eq!(f.hash, f.hash_again);
}

#[test]
fn test_hash_distinct_same_type__sample_child_graph_node_sample_child_graph_node_alt() {
    cudars_tests::require_gpu!();
    cudars_tests::require_libs!("nvrtc");
    let f = graph_facts("child_graph_node");
    assert_ne!(f.hash, f.hash_alt);
}

#[test]
fn test_same_type_inequality__sample_child_graph_node_sample_child_graph_node_alt() {
    cudars_tests::require_gpu!();
    cudars_tests::require_libs!("nvrtc");
    assert!(!graph_facts("child_graph_node").equal_to_alt);
}

#[test]
fn test_equality_basic__sample_condition() {
    cudars_tests::require_gpu!();
    assert!(graph_facts("condition").reflexive);
}

#[test]
fn test_hash_consistency__sample_condition() {
    cudars_tests::require_gpu!();
    let f = graph_facts("condition");
    assert_eq!(f.hash, f.hash_again);
}

#[test]
fn test_hash_distinct_same_type__sample_condition_sample_condition_alt() {
    cudars_tests::require_gpu!();
    let f = graph_facts("condition");
    assert_ne!(f.hash, f.hash_alt);
}

#[test]
fn test_same_type_inequality__sample_condition_sample_condition_alt() {
    cudars_tests::require_gpu!();
    assert!(!graph_facts("condition").equal_to_alt);
}

#[test]
fn test_equality_basic__sample_empty_node() {
    cudars_tests::require_gpu!();
    assert!(graph_facts("empty_node").reflexive);
}

#[test]
fn test_hash_consistency__sample_empty_node() {
    cudars_tests::require_gpu!();
    let f = graph_facts("empty_node");
    assert_eq!(f.hash, f.hash_again);
}

#[test]
fn test_hash_distinct_same_type__sample_empty_node_sample_empty_node_alt() {
    cudars_tests::require_gpu!();
    let f = graph_facts("empty_node");
    assert_ne!(f.hash, f.hash_alt);
}

#[test]
fn test_same_type_inequality__sample_empty_node_sample_empty_node_alt() {
    cudars_tests::require_gpu!();
    assert!(!graph_facts("empty_node").equal_to_alt);
}

#[test]
fn test_equality_basic__sample_event_record_node() {
    cudars_tests::require_gpu!();
    assert!(graph_facts("event_record_node").reflexive);
}

#[test]
fn test_hash_consistency__sample_event_record_node() {
    cudars_tests::require_gpu!();
    let f = graph_facts("event_record_node");
    assert_eq!(f.hash, f.hash_again);
}

#[test]
fn test_hash_distinct_same_type__sample_event_record_node_sample_event_record_node_alt() {
    cudars_tests::require_gpu!();
    let f = graph_facts("event_record_node");
    assert_ne!(f.hash, f.hash_alt);
}

#[test]
fn test_same_type_inequality__sample_event_record_node_sample_event_record_node_alt() {
    cudars_tests::require_gpu!();
    assert!(!graph_facts("event_record_node").equal_to_alt);
}

#[test]
fn test_equality_basic__sample_event_wait_node() {
    cudars_tests::require_gpu!();
    assert!(graph_facts("event_wait_node").reflexive);
}

#[test]
fn test_hash_consistency__sample_event_wait_node() {
    cudars_tests::require_gpu!();
    let f = graph_facts("event_wait_node");
    assert_eq!(f.hash, f.hash_again);
}

#[test]
fn test_hash_distinct_same_type__sample_event_wait_node_sample_event_wait_node_alt() {
    cudars_tests::require_gpu!();
    let f = graph_facts("event_wait_node");
    assert_ne!(f.hash, f.hash_alt);
}

#[test]
fn test_same_type_inequality__sample_event_wait_node_sample_event_wait_node_alt() {
    cudars_tests::require_gpu!();
    assert!(!graph_facts("event_wait_node").equal_to_alt);
}

#[test]
fn test_equality_basic__sample_free_node() {
    cudars_tests::require_gpu!();
    assert!(graph_facts("free_node").reflexive);
}

#[test]
fn test_hash_consistency__sample_free_node() {
    cudars_tests::require_gpu!();
    let f = graph_facts("free_node");
    assert_eq!(f.hash, f.hash_again);
}

#[test]
fn test_hash_distinct_same_type__sample_free_node_sample_free_node_alt() {
    cudars_tests::require_gpu!();
    let f = graph_facts("free_node");
    assert_ne!(f.hash, f.hash_alt);
}

#[test]
fn test_same_type_inequality__sample_free_node_sample_free_node_alt() {
    cudars_tests::require_gpu!();
    assert!(!graph_facts("free_node").equal_to_alt);
}

#[test]
fn test_equality_basic__sample_host_callback_node() {
    cudars_tests::require_gpu!();
    assert!(graph_facts("host_callback_node").reflexive);
}

#[test]
fn test_hash_consistency__sample_host_callback_node() {
    cudars_tests::require_gpu!();
    let f = graph_facts("host_callback_node");
    assert_eq!(f.hash, f.hash_again);
}

#[test]
fn test_hash_distinct_same_type__sample_host_callback_node_sample_host_callback_node_alt() {
    cudars_tests::require_gpu!();
    let f = graph_facts("host_callback_node");
    assert_ne!(f.hash, f.hash_alt);
}

#[test]
fn test_same_type_inequality__sample_host_callback_node_sample_host_callback_node_alt() {
    cudars_tests::require_gpu!();
    assert!(!graph_facts("host_callback_node").equal_to_alt);
}

#[test]
fn test_equality_basic__sample_if_else_node() {
    cudars_tests::require_gpu!();
    assert!(graph_facts("if_else_node").reflexive);
}

#[test]
fn test_hash_consistency__sample_if_else_node() {
    cudars_tests::require_gpu!();
    let f = graph_facts("if_else_node");
    assert_eq!(f.hash, f.hash_again);
}

#[test]
fn test_hash_distinct_same_type__sample_if_else_node_sample_if_else_node_alt() {
    cudars_tests::require_gpu!();
    let f = graph_facts("if_else_node");
    assert_ne!(f.hash, f.hash_alt);
}

#[test]
fn test_same_type_inequality__sample_if_else_node_sample_if_else_node_alt() {
    cudars_tests::require_gpu!();
    assert!(!graph_facts("if_else_node").equal_to_alt);
}

#[test]
fn test_equality_basic__sample_if_node() {
    cudars_tests::require_gpu!();
    assert!(graph_facts("if_node").reflexive);
}

#[test]
fn test_hash_consistency__sample_if_node() {
    cudars_tests::require_gpu!();
    let f = graph_facts("if_node");
    assert_eq!(f.hash, f.hash_again);
}

#[test]
fn test_hash_distinct_same_type__sample_if_node_sample_if_node_alt() {
    cudars_tests::require_gpu!();
    let f = graph_facts("if_node");
    assert_ne!(f.hash, f.hash_alt);
}

#[test]
fn test_same_type_inequality__sample_if_node_sample_if_node_alt() {
    cudars_tests::require_gpu!();
    assert!(!graph_facts("if_node").equal_to_alt);
}

#[test]
fn test_equality_basic__sample_kernel_node() {
    cudars_tests::require_gpu!();
    cudars_tests::require_libs!("nvrtc");
    assert!(graph_facts("kernel_node").reflexive);
}

#[test]
fn test_hash_consistency__sample_kernel_node() {
    cudars_tests::require_gpu!();
    cudars_tests::require_libs!("nvrtc");
    let f = graph_facts("kernel_node");
    assert_eq!(f.hash, f.hash_again);
}

#[test]
fn test_hash_distinct_same_type__sample_kernel_node_sample_kernel_node_alt() {
    cudars_tests::require_gpu!();
    cudars_tests::require_libs!("nvrtc");
    let f = graph_facts("kernel_node");
    assert_ne!(f.hash, f.hash_alt);
}

#[test]
fn test_same_type_inequality__sample_kernel_node_sample_kernel_node_alt() {
    cudars_tests::require_gpu!();
    cudars_tests::require_libs!("nvrtc");
    assert!(!graph_facts("kernel_node").equal_to_alt);
}

#[test]
fn test_equality_basic__sample_memcpy_node() {
    cudars_tests::require_gpu!();
    assert!(graph_facts("memcpy_node").reflexive);
}

#[test]
fn test_hash_consistency__sample_memcpy_node() {
    cudars_tests::require_gpu!();
    let f = graph_facts("memcpy_node");
    assert_eq!(f.hash, f.hash_again);
}

#[test]
fn test_hash_distinct_same_type__sample_memcpy_node_sample_memcpy_node_alt() {
    cudars_tests::require_gpu!();
    let f = graph_facts("memcpy_node");
    assert_ne!(f.hash, f.hash_alt);
}

#[test]
fn test_same_type_inequality__sample_memcpy_node_sample_memcpy_node_alt() {
    cudars_tests::require_gpu!();
    assert!(!graph_facts("memcpy_node").equal_to_alt);
}

#[test]
fn test_equality_basic__sample_memset_node() {
    cudars_tests::require_gpu!();
    assert!(graph_facts("memset_node").reflexive);
}

#[test]
fn test_hash_consistency__sample_memset_node() {
    cudars_tests::require_gpu!();
    let f = graph_facts("memset_node");
    assert_eq!(f.hash, f.hash_again);
}

#[test]
fn test_hash_distinct_same_type__sample_memset_node_sample_memset_node_alt() {
    cudars_tests::require_gpu!();
    let f = graph_facts("memset_node");
    assert_ne!(f.hash, f.hash_alt);
}

#[test]
fn test_same_type_inequality__sample_memset_node_sample_memset_node_alt() {
    cudars_tests::require_gpu!();
    assert!(!graph_facts("memset_node").equal_to_alt);
}

#[test]
fn test_equality_basic__sample_switch_node() {
    cudars_tests::require_gpu!();
    assert!(graph_facts("switch_node").reflexive);
}

#[test]
fn test_hash_consistency__sample_switch_node() {
    cudars_tests::require_gpu!();
    let f = graph_facts("switch_node");
    assert_eq!(f.hash, f.hash_again);
}

#[test]
fn test_hash_distinct_same_type__sample_switch_node_sample_switch_node_alt() {
    cudars_tests::require_gpu!();
    let f = graph_facts("switch_node");
    assert_ne!(f.hash, f.hash_alt);
}

#[test]
fn test_same_type_inequality__sample_switch_node_sample_switch_node_alt() {
    cudars_tests::require_gpu!();
    assert!(!graph_facts("switch_node").equal_to_alt);
}

#[test]
fn test_equality_basic__sample_while_node() {
    cudars_tests::require_gpu!();
    assert!(graph_facts("while_node").reflexive);
}

#[test]
fn test_hash_consistency__sample_while_node() {
    cudars_tests::require_gpu!();
    let f = graph_facts("while_node");
    assert_eq!(f.hash, f.hash_again);
}

#[test]
fn test_hash_distinct_same_type__sample_while_node_sample_while_node_alt() {
    cudars_tests::require_gpu!();
    let f = graph_facts("while_node");
    assert_ne!(f.hash, f.hash_alt);
}

#[test]
fn test_same_type_inequality__sample_while_node_sample_while_node_alt() {
    cudars_tests::require_gpu!();
    assert!(!graph_facts("while_node").equal_to_alt);
}

#[test]
fn test_equality_basic__sample_graphdef() {
    cudars_tests::require_gpu!();
    assert!(graph_facts("graphdef").reflexive);
}

#[test]
fn test_hash_consistency__sample_graphdef() {
    cudars_tests::require_gpu!();
    let f = graph_facts("graphdef");
    assert_eq!(f.hash, f.hash_again);
}

#[test]
fn test_hash_distinct_same_type__sample_graphdef_sample_graphdef_alt() {
    cudars_tests::require_gpu!();
    let f = graph_facts("graphdef");
    assert_ne!(f.hash, f.hash_alt);
}

#[test]
fn test_same_type_inequality__sample_graphdef_sample_graphdef_alt() {
    cudars_tests::require_gpu!();
    assert!(!graph_facts("graphdef").equal_to_alt);
}

// ---------------------------------------------------------------------------
// Kernels (compared by handle) and buffers (by address and size), as Python's.
// ---------------------------------------------------------------------------

/// `Program('extern "C" __global__ void <name>() {}', "c++").compile("cubin")
/// .get_kernel(<name>)`.
fn sample_kernel_named(d: &Device, name: &str) -> Kernel {
    Program::new(
        SourceCode::Cxx(&format!(r#"extern "C" __global__ void {name}() {{}}"#)),
        ProgramOptions::for_device(d).unwrap(),
    )
    .unwrap()
    .compile(CompileTarget::Cubin, &[])
    .unwrap()
    .get_kernel(name)
    .unwrap()
}

fn kernel_facts() -> Facts {
    let d = sample_device();
    let a = sample_kernel_named(&d, "test_kernel");
    let b = sample_kernel_named(&d, "test_kernel_alt");
    facts_of(&a, &b)
}

/// `sample_buffer` (64 bytes) and `sample_buffer_alt` (1024), from the device's
/// memory resource on its default stream.
fn buffer_facts() -> Facts {
    let d = sample_device();
    let s = d.default_stream().unwrap();
    let mr = d.memory_resource().unwrap();
    let a = mr.allocate(64, &s).unwrap();
    let b = mr.allocate(1024, &s).unwrap();
    facts_of(&a, &b)
}

#[test]
fn test_equality_basic__sample_kernel() {
    cudars_tests::require_gpu!();
    cudars_tests::require_libs!("nvrtc");
    assert!(kernel_facts().reflexive);
}

#[test]
fn test_hash_consistency__sample_kernel() {
    cudars_tests::require_gpu!();
    cudars_tests::require_libs!("nvrtc");
    let f = kernel_facts();
    assert_eq!(f.hash, f.hash_again);
}

#[test]
fn test_hash_distinct_same_type__sample_kernel_sample_kernel_alt() {
    cudars_tests::require_gpu!();
    cudars_tests::require_libs!("nvrtc");
    let f = kernel_facts();
    assert_ne!(f.hash, f.hash_alt);
}

#[test]
fn test_same_type_inequality__sample_kernel_sample_kernel_alt() {
    cudars_tests::require_gpu!();
    cudars_tests::require_libs!("nvrtc");
    assert!(!kernel_facts().equal_to_alt);
}

/// `Kernel.from_handle(int(k.handle))`.
#[test]
fn test_equality_same_handle__sample_kernel__lambda_() {
    cudars_tests::require_gpu!();
    cudars_tests::require_libs!("nvrtc");
    let d = sample_device();
    let obj = sample_kernel_named(&d, "test_kernel");
    // SAFETY: `obj` keeps the kernel's library loaded and outlives `obj2`.
    let obj2 = unsafe { Kernel::from_handle(obj.kernel_handle().unwrap(), None) }.unwrap();
    assert!(obj == obj2);
    assert_eq!(hash(&obj), hash(&obj2));
}

#[test]
fn test_equality_basic__sample_buffer() {
    cudars_tests::require_gpu!();
    assert!(buffer_facts().reflexive);
}

#[test]
fn test_hash_consistency__sample_buffer() {
    cudars_tests::require_gpu!();
    let f = buffer_facts();
    assert_eq!(f.hash, f.hash_again);
}

#[test]
fn test_hash_distinct_same_type__sample_buffer_sample_buffer_alt() {
    cudars_tests::require_gpu!();
    let f = buffer_facts();
    assert_ne!(f.hash, f.hash_alt);
}

#[test]
fn test_same_type_inequality__sample_buffer_sample_buffer_alt() {
    cudars_tests::require_gpu!();
    assert!(!buffer_facts().equal_to_alt);
}

/// `Buffer.from_handle(b.handle, b.size)`: `Buffer::from_raw` over the same memory.
#[test]
fn test_equality_same_handle__sample_buffer__lambda_() {
    cudars_tests::require_gpu!();
    let d = sample_device();
    let s = d.default_stream().unwrap();
    let obj = d.memory_resource().unwrap().allocate(64, &s).unwrap();
    // SAFETY: `obj` owns the memory and outlives `obj2`, which owns nothing and is
    // never used to touch it.
    let obj2 = unsafe { cudars_core::Buffer::from_raw(obj.ptr(), obj.size(), obj.kind(), &d) };
    assert!(obj == obj2);
    assert_eq!(hash(&obj), hash(&obj2));
    drop(obj2);
}
