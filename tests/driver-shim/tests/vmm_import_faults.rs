//! `VirtualMemoryIpcDescriptor::import` when its driver calls fail, without a
//! GPU: a child process loads the shim as `libcuda.so.1` in its fake-driver mode
//! and fails each call of an import of a three-chunk descriptor in turn (each
//! chunk's `cuMemImportFromShareableHandle` and `cuMemMap`, the
//! `cuMemAddressReserve`, the `cuMemSetAccess`), alone and with the undo's
//! first unmap or release failing too. Each import must fail with the injected
//! `CUresult`, and the shim's live counts of physical allocations, mappings and
//! reserved ranges must come back once the deferred-free queue (whose reaper
//! retries a failed undo step) has drained; a free that fails when the buffer
//! is dropped is retried likewise. The GPU
//! counterpart (`cudars-core`'s `faults.rs`) runs the same sweep on the real
//! driver.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use cudars_bindings::driver::{CUDA_ERROR_OUT_OF_MEMORY, CUresult};
use cudars_core::{Device, StreamOptions, VirtualMemoryIpcDescriptor};
use cudars_tests::DriverShim;

/// Set in the child: run the sweep.
const CHILD: &str = "CUDA_RS_VMM_IMPORT_FAULTS_CHILD";

/// The granularity the descriptor claims.
const G: usize = 2 << 20;

/// A descriptor of `n` chunks of [`G`] bytes with POSIX descriptors (of
/// `/dev/null`: the fake driver imports anything), written as
/// `VirtualMemoryIpcDescriptor::to_bytes` documents its bytes.
fn descriptor(n: usize) -> VirtualMemoryIpcDescriptor {
    let mut b = b"CRSVMM01".to_vec();
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&(n as u32).to_le_bytes());
    b.extend_from_slice(&((n * G) as u64).to_le_bytes());
    b.extend_from_slice(&(G as u64).to_le_bytes());
    for i in 0..n {
        b.extend_from_slice(&((i * G) as u64).to_le_bytes());
        b.extend_from_slice(&(G as u64).to_le_bytes());
    }
    let fds = (0..n)
        .map(|_| OwnedFd::from(std::fs::File::open("/dev/null").unwrap()))
        .collect();
    let d = VirtualMemoryIpcDescriptor::from_bytes(&b, fds).unwrap();
    assert_eq!(d.to_bytes(), b, "the documented bytes");
    d
}

/// The virtual memory handles live now.
fn vmm_live(shim: &DriverShim) -> BTreeMap<String, i64> {
    let mut l = shim.counts("live");
    l.retain(|k, _| matches!(k.as_str(), "physical" | "mappings" | "reservations"));
    l
}

/// Drains the deferred-free queue; panics if it does not empty in 10 s.
fn settle(what: &str) {
    let start = Instant::now();
    while cudars_core::deferred_frees() > 0 {
        let r = cudars_core::drain_deferred_frees();
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{what}: deferred frees never came back: {r}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn assert_code(e: &cudars_core::Error, code: CUresult, what: &str) {
    assert_eq!(
        e.driver_code(),
        Some(code),
        "{what}: not the injected error: {}",
        cudars_tests::report(e)
    );
}

fn child() {
    let shim = DriverShim::find().expect("the shim is the loaded driver");
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = dev.create_stream(StreamOptions::default()).unwrap();
    let desc = descriptor(3);

    // A clean import: its calls, its handles, and its drop undoing them.
    shim.set_faults("");
    let before = vmm_live(&shim);
    let b = desc.import(&dev, &s).unwrap();
    assert_eq!((b.size(), b.is_mapped()), (3 * G, true));
    let calls = shim.counts("calls");
    for (f, n) in [
        ("cuMemImportFromShareableHandle", 3),
        ("cuMemAddressReserve", 1),
        ("cuMemMap", 3),
        ("cuMemSetAccess", 1),
    ] {
        assert_eq!(calls.get(f), Some(&n), "{f}: {calls:?}");
    }
    let held = vmm_live(&shim);
    for (k, n) in [("physical", 3), ("mappings", 3), ("reservations", 1)] {
        assert_eq!(held[k] - before[k], n, "{k}: {held:?}");
    }
    drop(b);
    assert_eq!(cudars_core::deferred_frees(), 0);
    assert_eq!(vmm_live(&shim), before, "the drop left handles");

    let sites = [
        ("cuMemImportFromShareableHandle", 1),
        ("cuMemImportFromShareableHandle", 2),
        ("cuMemImportFromShareableHandle", 3),
        ("cuMemAddressReserve", 1),
        ("cuMemMap", 1),
        ("cuMemMap", 2),
        ("cuMemMap", 3),
        ("cuMemSetAccess", 1),
    ];
    let mut runs = 0;
    for (f, nth) in sites {
        for undo_fails in [false, true] {
            let nothing_to_undo = f == "cuMemImportFromShareableHandle" && nth == 1;
            if undo_fails && nothing_to_undo {
                continue;
            }
            let what = format!("{f} failing on call {nth} (undo failing: {undo_fails})");
            let mut rules = format!("{f}:{nth}:CUDA_ERROR_OUT_OF_MEMORY");
            if undo_fails {
                // The undo's first step: an unmap once a chunk is mapped, else
                // a release.
                let first = if (f == "cuMemMap" && nth > 1) || f == "cuMemSetAccess" {
                    "cuMemUnmap"
                } else {
                    "cuMemRelease"
                };
                rules.push_str(&format!(",{first}:1:CUDA_ERROR_UNKNOWN"));
            }
            shim.set_faults(&rules);
            let r = desc.import(&dev, &s);
            let injected = shim.counts("injected");
            shim.set_faults("");
            let e = r.expect_err(&what);
            assert_code(&e, CUDA_ERROR_OUT_OF_MEMORY, &what);
            assert_eq!(
                injected.len(),
                1 + usize::from(undo_fails),
                "{what}: {injected:?}"
            );
            settle(&what);
            assert_eq!(vmm_live(&shim), before, "{what}: handles leaked");
            runs += 1;
        }
    }
    assert_eq!(runs, 15);

    // The free failing when the buffer is dropped: retried, nothing kept.
    let b = desc.import(&dev, &s).unwrap();
    shim.set_faults("cuMemUnmap:2:CUDA_ERROR_UNKNOWN,cuMemAddressFree:1:CUDA_ERROR_UNKNOWN");
    drop(b);
    let injected = shim.counts("injected");
    shim.set_faults("");
    assert_eq!(injected.get("cuMemUnmap"), Some(&1), "{injected:?}");
    settle("a failed free");
    assert_eq!(vmm_live(&shim), before, "the failed free leaked");
    println!("vmm import faults: ok");
}

#[test]
fn a_virtual_memory_import_failing_partway_undoes_every_step() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    common::run_fake_driver_child(
        "a_virtual_memory_import_failing_partway_undoes_every_step",
        CHILD,
        "vmm import faults: ok",
    );
}
