//! The CUDA 13.1 resources and green-context ids of cudars-core, and the cleanup
//! hook, without a GPU: a child process loads the shim as `libcuda.so.1` in its
//! fake-driver mode at an emulated driver version (12.4, 13.0 and 13.5) and
//! checks that each API works where that driver has it and is the typed
//! `Error::Unsupported` naming the version it needs where it does not; then a
//! destroy the shim fails reaches the cleanup hook.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cudars_core::{
    Device, Error, EventOptions, SmGroup, StreamOptions, WorkqueueResourceOptions,
    WorkqueueSharingScope,
};
use cudars_tests::DriverShim;

/// Set in the child: the emulated version.
const CHILD: &str = "CUDA_RS_NEW_APIS_CHILD";

fn needs(e: Error, major: i32, minor: i32, have: i32) {
    let r = e
        .required_driver()
        .unwrap_or_else(|| panic!("no driver requirement: {e:?}"));
    assert_eq!((r.needs.major, r.needs.minor), (major, minor), "{e}");
    assert_eq!(r.driver.major * 1000 + r.driver.minor * 10, have, "{e}");
}

fn child(version: i32) {
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let all = dev.resources().unwrap().sm;
    assert_eq!(all.sm_count(), 132);
    let groups = [
        SmGroup {
            count: Some(16),
            coscheduled_sm_count: Some(8),
            preferred_coscheduled_sm_count: Some(16),
            ..Default::default()
        },
        SmGroup {
            count: Some(20),
            backfill: true,
            ..Default::default()
        },
    ];
    let stream = dev.create_stream(StreamOptions::default()).unwrap();
    assert_eq!(stream.resources().unwrap().sm.sm_count(), 132);
    if version < 13010 {
        assert_eq!(all.flags(), None);
        needs(dev.workqueue_resource().unwrap_err(), 13, 1, version);
        needs(all.split_groups(&groups).unwrap_err(), 13, 1, version);
    } else {
        assert_eq!(all.flags().map(|f| f.backfill()), Some(false));
        let split = all.split_groups(&groups).unwrap();
        let counts: Vec<u32> = split.groups.iter().map(|g| g.sm_count()).collect();
        assert_eq!(counts, [16, 20]);
        assert!(split.groups[1].flags().unwrap().backfill());
        assert_eq!(split.remaining.unwrap().sm_count(), 132 - 36);
        let mut wq = dev.workqueue_resource().unwrap();
        assert_eq!(wq.concurrency_limit(), 8);
        assert_eq!(wq.device(), &dev);
        {
            use cudars_core::cudars_bindings::driver as sys;
            assert_eq!(
                wq.raw_config().type_,
                sys::CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG
            );
            assert_eq!(
                wq.raw_workqueue().type_,
                sys::CU_DEV_RESOURCE_TYPE_WORKQUEUE
            );
        }
        assert_eq!(wq.sharing_scope(), WorkqueueSharingScope::DeviceContext);
        wq.configure(WorkqueueResourceOptions {
            sharing_scope: Some(WorkqueueSharingScope::GreenContextBalanced),
            concurrency_limit: Some(2),
        })
        .unwrap();
        assert_eq!(wq.concurrency_limit(), 2);
        assert_eq!(
            wq.sharing_scope(),
            WorkqueueSharingScope::GreenContextBalanced
        );
        assert!(matches!(
            wq.configure(WorkqueueResourceOptions {
                concurrency_limit: Some(0),
                ..Default::default()
            }),
            Err(Error::InvalidArgument { .. })
        ));
        let ctx_wq = cudars_core::Context::primary(&dev)
            .unwrap()
            .workqueue_resource()
            .unwrap();
        assert_eq!(ctx_wq.concurrency_limit(), 8);
    }

    // The cleanup hook: an event whose destroy fails reports it.
    let shim = DriverShim::find().expect("the shim is the loaded driver");
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    cudars_core::set_cleanup_hook(move |e| {
        assert!(e.to_string().contains("cuEventDestroy"), "{e}");
        s.fetch_add(1, Ordering::Relaxed);
    });
    let before = cudars_core::cleanup_failures().count;
    let event = dev.create_event(EventOptions::default()).unwrap();
    shim.set_faults("cuEventDestroy:1:CUDA_ERROR_INVALID_HANDLE");
    drop(event);
    shim.set_faults("");
    let after = cudars_core::cleanup_failures();
    assert_eq!(after.count, before + 1, "{after:?}");
    assert!(
        // The fake names every error CUDA_ERROR_FAKE; 400 is CUDA_ERROR_INVALID_HANDLE.
        after
            .last
            .as_deref()
            .is_some_and(|l| l.contains("cuEventDestroy") && l.contains("(400)")),
        "{after:?}"
    );
    assert_eq!(seen.load(Ordering::Relaxed), 1);
    cudars_core::clear_cleanup_hook();
    println!("new APIs checked at {version}");
}

#[test]
fn new_resources_and_the_cleanup_hook_on_the_fake_driver() {
    if let Ok(v) = std::env::var(CHILD) {
        child(v.parse().unwrap());
        return;
    }
    for version in ["12040", "13000", "13050"] {
        common::run_fake_driver_child_with(
            "new_resources_and_the_cleanup_hook_on_the_fake_driver",
            &[(CHILD, version), ("CUDA_RS_SHIM_DRIVER_VERSION", version)],
            &[],
            &format!("new APIs checked at {version}"),
        );
    }
}
