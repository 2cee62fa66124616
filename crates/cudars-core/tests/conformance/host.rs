//! `cuda_core/tests/test_host.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says.
//! `cuda.core`'s `Host` is `Location::Host`, `Location::HostNuma(id)` and
//! `Location::HostNumaCurrent` here. No GPU needed.


use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use cudars_core::Location;

fn hash(l: Location) -> u64 {
    let mut h = DefaultHasher::new();
    l.hash(&mut h);
    h.finish()
}

#[test]
fn TestHost__test_eq_hash() {
    // Equality is structural.
    assert_eq!(Location::Host, Location::Host);
    assert_eq!(Location::HostNuma(1), Location::HostNuma(1));
    assert_ne!(Location::Host, Location::HostNuma(0));
    assert_ne!(Location::HostNumaCurrent, Location::Host);
    assert_eq!(hash(Location::HostNuma(1)), hash(Location::HostNuma(1)));
}

#[test]
fn TestHost__test_default() {
    let h = Location::Host;
    assert_eq!(h.numa_id(), None);
    assert!(!h.is_numa_current());
}

#[test]
fn TestHost__test_numa() {
    let h = Location::HostNuma(3);
    assert_eq!(h.numa_id(), Some(3));
    assert!(!h.is_numa_current());
}

#[test]
fn TestHost__test_numa_current() {
    let h = Location::HostNumaCurrent;
    assert!(h.is_numa_current());
    assert_eq!(h.numa_id(), None);
}
