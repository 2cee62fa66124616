//! `cuda_core/tests/test_context.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says.
//!
//! `stream.context` is `Stream::context()`; `Context` compares and hashes its handle
//! (`PartialEq`, `Eq`, `Hash`), as `cuda.core`'s does. Comparing a context with a
//! string or a number does not compile here (`test_context_type_safety`). Every test
//! needs a GPU.

// Keys hash the driver handle, which never changes (the interior mutability
// clippy sees is elsewhere).
#![allow(clippy::mutable_key_type)]

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use cudars_core::{Context, Device, StreamOptions};

fn hash(c: &Context) -> u64 {
    let mut h = DefaultHasher::new();
    c.hash(&mut h);
    h.finish()
}

#[test]
fn test_context_equality_same_context() {
    cudars_tests::require_gpu!();
    let device = Device::current().unwrap();
    let s1 = device.create_stream(StreamOptions::default()).unwrap();
    let s2 = device.create_stream(StreamOptions::default()).unwrap();
    assert_eq!(
        s1.context(),
        s2.context(),
        "Streams on same device should share context"
    );
}

#[test]
#[allow(clippy::eq_op)]
fn test_context_equality_reflexive() {
    cudars_tests::require_gpu!();
    let device = Device::current().unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let context = stream.context();
    assert!(context == context, "Context should equal itself");
}

#[test]
fn test_context_hash_consistency() {
    cudars_tests::require_gpu!();
    let device = Device::current().unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let context = stream.context();
    assert_eq!(hash(context), hash(context));
}

#[test]
fn test_context_hash_equality() {
    cudars_tests::require_gpu!();
    let device = Device::current().unwrap();
    let s1 = device.create_stream(StreamOptions::default()).unwrap();
    let s2 = device.create_stream(StreamOptions::default()).unwrap();
    let (ctx1, ctx2) = (s1.context(), s2.context());
    assert_eq!(ctx1, ctx2, "Streams on same device should share context");
    assert_eq!(hash(ctx1), hash(ctx2), "Same context should hash equal");
}

#[test]
fn test_context_dict_key() {
    cudars_tests::require_gpu!();
    let device = Device::current().unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let context = stream.context().clone();
    let ctx_cache = HashMap::from([(context.clone(), "context_data")]);
    assert_eq!(ctx_cache[&context], "context_data");
}
