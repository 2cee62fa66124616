//! `cuda_core/tests/test_program_cache_multiprocess.py` of `cuda.core` (the
//! pinned commit of `docs/reference/cuda-core-tests.txt`): several writers and
//! readers of one `FileProgramCache` directory at once.
//!
//! cuda.core's workers are processes (`multiprocessing`'s spawn), each with its
//! own `FileStreamProgramCache`; here they are threads, each with its own
//! `FileProgramCache` opened on the directory, which share nothing but the
//! files (a cache's running total is shared only by its clones), so what meets
//! is what processes meet: the file system's renames, reads and removals. Keys
//! and values as `program_cache.rs` spells them (a key's bytes zero-padded, a
//! payload a nameless cubin). No GPU.

use cudars_core::cache::{FileProgramCache, ProgramCache, ProgramCacheKey};
use cudars_core::{CodeType, ObjectCode};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

fn key(k: &[u8]) -> ProgramCacheKey {
    let mut bytes = [0u8; 32];
    bytes[..k.len()].copy_from_slice(k);
    ProgramCacheKey::from_bytes(bytes)
}

fn payload(bytes: &[u8]) -> ObjectCode {
    ObjectCode::new(bytes.to_vec(), CodeType::Cubin, "").unwrap()
}

/// `_worker_write`.
fn write(root: &Path, k: &[u8], value: &[u8]) {
    FileProgramCache::new(root)
        .unwrap()
        .put(&key(k), &payload(value))
        .unwrap();
}

/// `_worker_write_many`.
fn write_many(root: &Path, base: usize, n: usize) {
    let cache = FileProgramCache::new(root).unwrap();
    for i in 0..n {
        let k = format!("proc-{base}-key-{i}");
        let v = format!("payload-{base}-{i}");
        cache
            .put(&key(k.as_bytes()), &payload(v.as_bytes()))
            .unwrap();
    }
}

#[test]
fn test_concurrent_writers_same_key_no_corruption() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("fc");
    std::thread::scope(|s| {
        for i in 0..6 {
            let root = &root;
            s.spawn(move || write(root, b"shared", &format!("v{i}").repeat(64).into_bytes()));
        }
    });
    let got = FileProgramCache::new(&root)
        .unwrap()
        .get(&key(b"shared"))
        .unwrap()
        .expect("no writer succeeded");
    assert!(got.code().starts_with(b"v"));
}

#[test]
fn test_concurrent_writers_distinct_keys_all_survive() {
    let (n_procs, per_proc) = (4, 25);
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("fc");
    std::thread::scope(|s| {
        for base in 0..n_procs {
            let root = &root;
            s.spawn(move || write_many(root, base, per_proc));
        }
    });
    let cache = FileProgramCache::new(&root).unwrap();
    for base in 0..n_procs {
        for i in 0..per_proc {
            let k = format!("proc-{base}-key-{i}");
            assert!(cache.get(&key(k.as_bytes())).unwrap().is_some(), "{k}");
        }
    }
}

#[test]
fn test_concurrent_reader_never_sees_torn_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("fc");
    let seed = b"seed".repeat(256);
    write(&root, b"k", &seed);
    let (hits, mismatches) = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let (mut hits, mut mismatches) = (0, 0);
            for _ in 0..200 {
                let cache = FileProgramCache::new(&root).unwrap();
                let Some(got) = cache.get(&key(b"k")).unwrap() else {
                    continue;
                };
                hits += 1;
                if got.code() != seed.as_slice() {
                    mismatches += 1;
                }
            }
            (hits, mismatches)
        });
        s.spawn(|| write_many(&root, 99, 50));
        reader.join().unwrap()
    });
    assert_eq!(hits, 200);
    assert_eq!(mismatches, 0);
}

/// One writer keeps rewriting `survivor` while another churns through a small
/// capped cache, evicting often: the survivor's entry is there at the end, with
/// the rewriter's value.
#[test]
fn test_concurrent_eviction_does_not_delete_replaced_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("fc");
    let value = vec![b'X'; 2000];
    let cap = 5000;
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let rewriter = s.spawn(|| {
            let cache = FileProgramCache::new(&root)
                .unwrap()
                .with_max_size_bytes(cap);
            let mut i = 0u64;
            while !done.load(Ordering::Acquire) {
                let mut v = value.clone();
                v.extend_from_slice(i.to_string().as_bytes());
                cache.put(&key(b"survivor"), &payload(&v)).unwrap();
                i += 1;
            }
        });
        let churner = s.spawn(|| {
            let cache = FileProgramCache::new(&root)
                .unwrap()
                .with_max_size_bytes(cap);
            for i in 0..80 {
                let k = format!("churn-{i}");
                cache.put(&key(k.as_bytes()), &payload(&value)).unwrap();
            }
        });
        churner.join().unwrap();
        done.store(true, Ordering::Release);
        rewriter.join().unwrap();
    });
    let cache = FileProgramCache::new(&root)
        .unwrap()
        .with_max_size_bytes(cap);
    let got = cache
        .get(&key(b"survivor"))
        .unwrap()
        .expect("rewriter's entry was evicted by racing churner");
    assert!(got.code().starts_with(&value));
}
