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
