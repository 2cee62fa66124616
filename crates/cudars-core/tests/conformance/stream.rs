//! `cuda_core/tests/test_stream.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says.
//!
//! `Device().create_stream(options=StreamOptions(nonblocking=…, priority=…))` is
//! `dev.create_stream(StreamOptions { non_blocking, priority })`; `stream.record()`
//! is `record_new_event(EventOptions::default())`, `stream.wait(event)` is
//! `wait_event(&event)`; `Stream.from_handle(h)` is the `unsafe`
//! `Stream::from_handle(h)` (a foreign stream object, Python's `__cuda_stream__`
//! wrapper, is adopted by its handle here); `LEGACY_DEFAULT_STREAM` and
//! `PER_THREAD_DEFAULT_STREAM` are `Stream::legacy_default(&dev)` and
//! `Stream::per_thread_default(&dev)`. `Stream` compares and hashes its handle, as
//! `cuda.core`'s does. Every test needs a GPU.

// Keys hash the driver handle, which never changes (the interior mutability
// clippy sees is elsewhere).
#![allow(clippy::mutable_key_type)]

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use cudars_core::{Device, Error, EventOptions, InvalidKind, Stream, StreamOptions};

fn hash(s: &Stream) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

fn dev() -> Device {
    let d = Device::current().unwrap();
    d.set_current().unwrap();
    d
}

fn new_stream(d: &Device) -> Stream {
    d.create_stream(StreamOptions::default()).unwrap()
}

/// `Stream.from_handle(int(s.handle))`: the same stream, borrowed.
fn adopt(s: &Stream) -> Stream {
    // SAFETY: `s` is alive for the whole test and outlives the adopted stream
    // (each test drops the adopted one first: declared after it).
    unsafe { Stream::from_handle(s.handle()) }.unwrap()
}

#[test]
fn test_stream_init_with_options() {
    cudars_tests::require_gpu!();
    let stream = dev()
        .create_stream(StreamOptions {
            non_blocking: true,
            priority: Some(0),
        })
        .unwrap();
    assert!(stream.is_non_blocking().unwrap());
    assert_eq!(stream.priority().unwrap(), 0);
}

#[test]
fn test_stream_handle() {
    cudars_tests::require_gpu!();
    let stream = new_stream(&dev());
    assert!(!stream.handle().is_null());
}

#[test]
fn test_stream_is_nonblocking() {
    cudars_tests::require_gpu!();
    let stream = dev()
        .create_stream(StreamOptions {
            non_blocking: true,
            priority: None,
        })
        .unwrap();
    assert!(stream.is_non_blocking().unwrap());
}

#[test]
fn test_stream_priority() {
    cudars_tests::require_gpu!();
    let d = dev();
    let with = |p| {
        d.create_stream(StreamOptions {
            non_blocking: false,
            priority: Some(p),
        })
    };
    assert_eq!(with(0).unwrap().priority().unwrap(), 0);
    assert_eq!(with(-1).unwrap().priority().unwrap(), -1);
    // Python's `ValueError`: outside the device's range (0 is the least priority).
    let r = with(1);
    assert!(
        matches!(
            r,
            Err(Error::InvalidArgument {
                kind: InvalidKind::OutOfRange,
                ..
            })
        ),
        "{r:?}"
    );
}

#[test]
fn test_stream_sync() {
    cudars_tests::require_gpu!();
    new_stream(&dev()).sync().unwrap();
}

#[test]
fn test_stream_record() {
    cudars_tests::require_gpu!();
    let stream = new_stream(&dev());
    let event = stream.record_new_event(EventOptions::default()).unwrap();
    assert!(!event.handle().is_null());
}

#[test]
fn test_stream_wait_event() {
    cudars_tests::require_gpu!();
    let d = dev();
    let s1 = new_stream(&d);
    let s2 = new_stream(&d);
    let e1 = s1.record_new_event(EventOptions::default()).unwrap();
    s2.wait_event(&e1).unwrap();
    s2.sync().unwrap();
}

#[test]
fn test_stream_device() {
    cudars_tests::require_gpu!();
    let d = dev();
    let stream = new_stream(&d);
    assert_eq!(*stream.device(), d);
}

#[test]
fn test_stream_context() {
    cudars_tests::require_gpu!();
    let stream = new_stream(&dev());
    assert!(!stream.context().handle().is_null());
}

#[test]
fn test_stream_from_foreign_stream() {
    cudars_tests::require_gpu!();
    let d = dev();
    let other_stream = new_stream(&d);
    let stream = adopt(&other_stream);
    assert!(other_stream == stream);
    assert_eq!(hash(&other_stream), hash(&stream));
    assert_eq!(*stream.device(), d);
    assert!(!stream.context().handle().is_null());
}

/// `Stream.from_handle(0)`: the null handle, the current context's default stream.
#[test]
fn test_stream_from_handle() {
    cudars_tests::require_gpu!();
    let d = dev();
    // SAFETY: the null handle is the default stream of the current context (the
    // device's primary context, retained for the life of the process).
    let stream = unsafe { Stream::from_handle(std::ptr::null_mut()) }.unwrap();
    assert_eq!(*stream.device(), d);
}

#[test]
fn test_legacy_default_stream() {
    cudars_tests::require_gpu!();
    let s = Stream::legacy_default(&dev()).unwrap();
    assert!(!s.is_owned());
}

#[test]
fn test_per_thread_default_stream() {
    cudars_tests::require_gpu!();
    let s = Stream::per_thread_default(&dev()).unwrap();
    assert!(!s.is_owned());
}

#[test]
fn test_stream_equality_same_handle() {
    cudars_tests::require_gpu!();
    let s1 = new_stream(&dev());
    let s2 = adopt(&s1);
    assert!(s1 == s2, "Equal streams should be equal");
}

#[test]
fn test_stream_inequality_different_handles() {
    cudars_tests::require_gpu!();
    let d = dev();
    let s1 = new_stream(&d);
    let s2 = new_stream(&d);
    assert!(s1 != s2, "Different streams should not be equal");
}

#[test]
#[allow(clippy::eq_op)]
fn test_stream_equality_reflexive() {
    cudars_tests::require_gpu!();
    let stream = new_stream(&dev());
    assert!(stream == stream, "Stream should equal itself");
}

#[test]
fn test_stream_equality_symmetric() {
    cudars_tests::require_gpu!();
    let s1 = new_stream(&dev());
    let s2 = adopt(&s1);
    assert!(s1 == s2, "Equality should be symmetric");
    assert!(s2 == s1, "Equality should be symmetric");
}

#[test]
fn test_stream_not_equal_operator() {
    cudars_tests::require_gpu!();
    let d = dev();
    let s1 = new_stream(&d);
    let s2 = new_stream(&d);
    let s3 = adopt(&s1);
    assert!(s1 != s2, "Different streams should be not-equal");
    assert!(s1 == s3, "Same handle streams should be equal");
}

#[test]
fn test_stream_hash_consistency() {
    cudars_tests::require_gpu!();
    let stream = new_stream(&dev());
    assert_eq!(hash(&stream), hash(&stream));
}

#[test]
fn test_stream_hash_equality_same_handle() {
    cudars_tests::require_gpu!();
    let s1 = new_stream(&dev());
    let s2 = adopt(&s1);
    assert_eq!(hash(&s1), hash(&s2), "Same handle should produce same hash");
    assert!(s1 == s2, "Streams with same handle should be equal");
}

#[test]
fn test_stream_hash_inequality_different_handles() {
    cudars_tests::require_gpu!();
    let d = dev();
    let s1 = new_stream(&d);
    let s2 = new_stream(&d);
    assert!(s1 != s2, "Different streams should not be equal");
    assert_ne!(hash(&s1), hash(&s2));
}

#[test]
fn test_stream_dict_key() {
    cudars_tests::require_gpu!();
    let s1 = new_stream(&dev());
    let s2 = adopt(&s1);
    let mut cache = HashMap::from([(s1.clone(), "value1")]);
    assert!(
        cache.contains_key(&s2),
        "Stream with same handle should be in dict"
    );
    assert_eq!(cache[&s2], "value1");
    cache.insert(s2.clone(), "value2");
    assert_eq!(
        cache.len(),
        1,
        "Should update existing entry, not add new one"
    );
    assert_eq!(cache[&s1], "value2");
    drop(cache);
}

#[test]
fn test_stream_set_membership() {
    cudars_tests::require_gpu!();
    let d = dev();
    let s1 = new_stream(&d);
    let s3 = new_stream(&d);
    let s2 = adopt(&s1);
    let mut stream_set = HashSet::from([s1.clone()]);
    assert!(
        stream_set.contains(&s2),
        "Equivalent stream should be in set"
    );
    stream_set.insert(s2.clone());
    assert_eq!(stream_set.len(), 1, "Should not add duplicate");
    stream_set.insert(s3.clone());
    assert_eq!(stream_set.len(), 2, "Should add different stream");
    drop(stream_set);
}

#[test]
fn test_builtin_stream_hash() {
    cudars_tests::require_gpu!();
    let d = dev();
    let legacy = Stream::legacy_default(&d).unwrap();
    let per_thread = Stream::per_thread_default(&d).unwrap();
    assert_ne!(hash(&legacy), hash(&per_thread));
    let cache = HashMap::from([
        (legacy.clone(), "legacy_data"),
        (per_thread.clone(), "per_thread_data"),
    ]);
    assert_eq!(cache.len(), 2);
    assert_eq!(cache[&legacy], "legacy_data");
    assert_eq!(cache[&per_thread], "per_thread_data");
}

#[test]
fn test_default_stream_consistency() {
    cudars_tests::require_gpu!();
    let device = dev();
    let default1 = device.default_stream().unwrap();
    let default2 = device.default_stream().unwrap();
    assert!(default1 == default2);
    assert_eq!(hash(&default1), hash(&default2));
}
