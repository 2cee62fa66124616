//! Green contexts on the GPU: the device's SMs split into groups, a green context
//! on one group, and a kernel whose blocks report the SM they ran on, which must
//! all lie within the group. Without a GPU each test prints `SKIPPED`; with
//! `CUDA_TEST_REQUIRE_GPU=1` it fails.
// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;

use cudars_core::{
    CompileTarget, Context, Device, DeviceResources, Error, Kernel, LaunchConfig, Program,
    ProgramOptions, SmResourceOptions, SourceCode, Stream, StreamOptions, launch,
};
use cudars_tests::{require_gpu, require_libs};

const WHERE: &str = r#"
extern "C" __global__ void where_am_i(unsigned *out, long long spin) {
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    long long t0 = clock64();
    while (clock64() - t0 < spin) {}
    if (threadIdx.x == 0) out[blockIdx.x] = id;
}
"#;

fn kernel(d: &Device) -> Kernel {
    let options = ProgramOptions {
        arch: Some(d.arch().unwrap()),
        ..Default::default()
    };
    Program::new(SourceCode::Cxx(WHERE), options)
        .unwrap()
        .compile(CompileTarget::Cubin, &[])
        .unwrap()
        .get_kernel("where_am_i")
        .unwrap()
}

/// One group of (at least) 8 of `d`'s SMs.
fn one_group_of_8(d: &Device) -> cudars_core::SmResource {
    d.resources()
        .unwrap()
        .sm
        .split(SmResourceOptions {
            count: 8,
            groups: Some(1),
            ..Default::default()
        })
        .unwrap()
        .groups[0]
}

/// The distinct SMs that `blocks` blocks of `k` ran on, launched on `s`.
fn sms_used(d: &Device, k: &Kernel, s: &Stream, blocks: u32) -> BTreeSet<u32> {
    let mut out = d.allocate(blocks as usize * 4, s).unwrap();
    out.fill_u32(u32::MAX, s).unwrap();
    let spin: i64 = 200_000;
    // SAFETY: `where_am_i` writes out[blockIdx.x] for `blocks` blocks; `out` holds
    // `blocks` u32s.
    unsafe { launch(s, &LaunchConfig::new(blocks, 64), k, &[&out, &spin]).unwrap() };
    let mut ids = vec![0u32; blocks as usize];
    out.copy_to_host(&mut ids, s).unwrap();
    assert!(ids.iter().all(|&i| i != u32::MAX), "a block did not run");
    ids.into_iter().collect()
}

#[test]
fn a_green_context_runs_only_on_its_sms() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let resources: DeviceResources = d.resources().unwrap();
    let all = resources.sm;
    let sms = d
        .attribute(cudars_core::cudars_bindings::driver::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .unwrap() as u32;
    assert_eq!(all.sm_count(), sms);
    // Reported by CUDA 13 drivers only.
    let v13 = cudars_core::cudars_bindings::driver::version()
        .unwrap()
        .major
        >= 13;
    assert_eq!(all.min_partition_size().is_some_and(|n| n >= 1), v13);
    assert_eq!(all.coscheduled_alignment().is_some_and(|n| n >= 1), v13);
    println!("{all:?}");

    let split = all
        .split(SmResourceOptions {
            count: 16,
            ..Default::default()
        })
        .unwrap();
    assert!(!split.groups.is_empty());
    let grouped: u32 = split.groups.iter().map(|g| g.sm_count()).sum();
    let left = split.remaining.map_or(0, |r| r.sm_count());
    assert_eq!(grouped + left, sms, "{split:?}");
    assert!(split.groups.iter().all(|g| g.sm_count() >= 16));
    // At most two groups.
    let two = all
        .split(SmResourceOptions {
            count: 16,
            groups: Some(2),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(two.groups.len(), 2);
    assert_eq!(
        two.remaining.unwrap().sm_count(),
        sms - two.groups[0].sm_count() - two.groups[1].sm_count()
    );

    let group = split.groups[0];
    let green = Context::create_green(&d, &[group]).unwrap();
    assert!(green.is_green());
    assert!(!d.context().unwrap().is_green());
    assert_eq!(green.resources().unwrap().sm.sm_count(), group.sm_count());
    assert_eq!(d.context().unwrap().resources().unwrap().sm.sm_count(), sms);

    let k = kernel(&d);
    let blocks = sms * 4;
    // On the whole device, the blocks spread over more SMs than the group has, so
    // the check below can fail.
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let wide = sms_used(&d, &k, &s, blocks);
    assert!(
        wide.len() as u32 > group.sm_count(),
        "{} SMs used on the whole device",
        wide.len()
    );
    // In the green context, at most the group's SMs.
    let Some(gs) =
        cudars_tests::needs_driver!(12050, green.create_stream(StreamOptions::default()))
    else {
        return;
    };
    assert!(gs.is_non_blocking().unwrap());
    assert_eq!(gs.resources().unwrap().sm.sm_count(), group.sm_count());
    let narrow = sms_used(&d, &k, &gs, blocks);
    println!(
        "whole device: {} SMs; green context of {}: {} SMs",
        wide.len(),
        group.sm_count(),
        narrow.len()
    );
    assert!(!narrow.is_empty());
    assert!(
        narrow.len() as u32 <= group.sm_count(),
        "{} SMs used by a green context of {}",
        narrow.len(),
        group.sm_count()
    );
    gs.sync().unwrap();
    drop(gs);
    drop(green);
    // The primary context is unaffected.
    d.set_current().unwrap();
    d.sync().unwrap();
}

#[test]
fn bad_splits_and_green_contexts_are_refused() {
    require_gpu!();
    let d = Device::new(0).unwrap();
    let all = d.resources().unwrap().sm;
    let bad = |o: SmResourceOptions| match all.split(o) {
        Err(Error::InvalidArgument { .. }) => {}
        other => panic!("{other:?}"),
    };
    bad(SmResourceOptions::default());
    bad(SmResourceOptions {
        count: all.sm_count() + 1,
        ..Default::default()
    });
    bad(SmResourceOptions {
        count: 8,
        groups: Some(0),
        ..Default::default()
    });
    assert!(matches!(
        Context::create_green(&d, &[]),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn a_green_context_is_current_only_during_each_operation() {
    require_gpu!();
    use cudars_core::cudars_bindings::driver as sys;
    let d = Device::new(0).unwrap();
    let primary = d.context().unwrap();
    let group = one_group_of_8(&d);
    // The device's shorthand for Context::create_green.
    let green = d.create_green_context(&[group]).unwrap();
    assert!(green.is_green());
    // It cannot be left current on a thread.
    assert!(matches!(
        green.set_current(),
        Err(Error::Unsupported { .. })
    ));
    // Nor through the device, where Python's `set_current(ctx)` would take it.
    assert!(matches!(
        green.device().set_current_context(&green),
        Err(Error::Unsupported { .. })
    ));
    let Some(s) = cudars_tests::needs_driver!(12050, green.create_stream(StreamOptions::default()))
    else {
        return;
    };
    // Eight threads share one green stream; each operation holds the context for
    // itself, and afterwards each thread's own current context is back.
    std::thread::scope(|sc| {
        for t in 0..8u32 {
            let (d, s, primary) = (&d, &s, &primary);
            sc.spawn(move || {
                d.set_current().unwrap();
                for i in 0..50u32 {
                    let mut b = d.allocate(4096, s).unwrap();
                    b.fill_u32(t << 16 | i, s).unwrap();
                    let mut h = [0u32; 1024];
                    b.copy_to_host(&mut h, s).unwrap();
                    assert!(h.iter().all(|&x| x == t << 16 | i));
                    let mut cur: sys::CUcontext = std::ptr::null_mut();
                    // SAFETY: `cur` is valid for writes.
                    unsafe { sys::cuCtxGetCurrent(&mut cur) };
                    assert_eq!(cur, primary.handle(), "the green context was left current");
                }
            });
        }
    });
    s.sync().unwrap();
}

/// Work on a green stream with buffers freed on a primary-context stream: each
/// operation orders those frees (events, waits in the primary context) while it
/// holds the green context, and must leave the thread's context as it found it.
#[test]
fn green_and_primary_streams_mix_in_one_operation() {
    require_gpu!();
    use cudars_core::cudars_bindings::driver as sys;
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let group = one_group_of_8(&d);
    let green = Context::create_green(&d, &[group]).unwrap();
    let Some(gs) =
        cudars_tests::needs_driver!(12050, green.create_stream(StreamOptions::default()))
    else {
        return;
    };
    let ps = d.create_stream(StreamOptions::default()).unwrap();
    let mut a = d.allocate(4096, &ps).unwrap();
    let mut b = d.allocate(4096, &ps).unwrap();
    let mut c = d.allocate(4096, &gs).unwrap();
    let mut e = d.allocate(4096, &gs).unwrap();
    a.fill_u32(1, &gs).unwrap();
    b.fill_u32(2, &gs).unwrap();
    cudars_core::copy_batch(
        &mut [
            cudars_core::BatchCopy {
                dst: &mut c,
                src: &a,
                bytes: 4096,
            },
            cudars_core::BatchCopy {
                dst: &mut e,
                src: &b,
                bytes: 4096,
            },
        ],
        &cudars_core::CopyOptions::default(),
        &gs,
    )
    .unwrap();
    c.copy_from(&b, &gs).unwrap();
    let mut h = [0u32; 1024];
    c.copy_to_host(&mut h, &gs).unwrap();
    assert!(h.iter().all(|&x| x == 2));
    e.copy_to_host(&mut h, &gs).unwrap();
    assert!(h.iter().all(|&x| x == 2));
    let mut cur: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: `cur` is valid for writes.
    unsafe { sys::cuCtxGetCurrent(&mut cur) };
    assert_eq!(cur, d.context().unwrap().handle());
    drop((a, b, c, e));
    gs.sync().unwrap();
    ps.sync().unwrap();
}

/// Every call on a green context's stream or event holds the context's lock
/// (the driver does not synchronise threads on one green context): while one
/// thread waits for a long kernel on a green stream (holding the lock), a
/// query on another thread returns only after that wait has.
#[test]
fn green_stream_and_event_queries_hold_the_green_lock() {
    require_gpu!();
    use std::time::{Duration, Instant};
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let k = kernel(&d);
    let green = Context::create_green(&d, &[one_group_of_8(&d)]).unwrap();
    let Some(s) = cudars_tests::needs_driver!(12050, green.create_stream(StreamOptions::default()))
    else {
        return;
    };
    let e = cudars_core::Event::in_context(&green, Default::default()).unwrap();
    type Query<'a> = (&'static str, Box<dyn Fn() + Sync + 'a>);
    let queries: Vec<Query<'_>> = vec![
        (
            "Stream::priority",
            Box::new(|| {
                let _ = s.priority().unwrap();
            }),
        ),
        (
            "Stream::is_non_blocking",
            Box::new(|| {
                let _ = s.is_non_blocking().unwrap();
            }),
        ),
        (
            "Stream::capture_status",
            Box::new(|| {
                let _ = s.capture_status().unwrap();
            }),
        ),
        (
            "Event::is_done",
            Box::new(|| {
                let _ = e.is_done().unwrap();
            }),
        ),
        ("Event::sync", Box::new(|| e.sync().unwrap())),
    ];
    let out = d.allocate(4, &s).unwrap();
    for (name, query) in &queries {
        e.record(&s).unwrap();
        let spin: i64 = 400_000_000;
        // SAFETY: `where_am_i` writes out[0] for one block; `out` holds one u32.
        unsafe { launch(&s, &LaunchConfig::new(1u32, 64u32), &k, &[&out, &spin]).unwrap() };
        let (synced, queried) = std::thread::scope(|sc| {
            let waiter = sc.spawn(|| {
                d.set_current().unwrap();
                s.sync().unwrap();
                Instant::now()
            });
            // The waiter holds the green lock for the kernel's length by now.
            std::thread::sleep(Duration::from_millis(50));
            query();
            let queried = Instant::now();
            (waiter.join().unwrap(), queried)
        });
        assert!(
            queried >= synced,
            "{name} ran on the green context while another thread held it"
        );
    }
}

/// The CUDA 13.1 resources (workqueues, the structured split, SM flags, a
/// stream's own resources) and green-context ids (12.9): each works where the
/// driver has it and is the typed `Unsupported` naming the version it needs where
/// it does not (the 580 driver is CUDA 13.0; `run-shim.sh 12040` is 12.4).
#[test]
fn cuda_13_1_resources_work_or_name_the_driver_they_need() {
    use cudars_core::{SmGroup, WorkqueueResourceOptions, WorkqueueSharingScope};
    require_gpu!();
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let v = cudars_core::cudars_bindings::driver::version().unwrap();
    let have = (v.major, v.minor);
    let needs = |e: Error, major: i32, minor: i32| {
        let r = e
            .required_driver()
            .unwrap_or_else(|| panic!("no requirement: {e:?}"));
        assert_eq!((r.needs.major, r.needs.minor), (major, minor), "{e}");
        assert_eq!((r.driver.major, r.driver.minor), have, "{e}");
    };
    let all = d.resources().unwrap().sm;
    let green = Context::create_green(&d, &[one_group_of_8(&d)]).unwrap();
    let green2 = Context::create_green(&d, &[one_group_of_8(&d)]).unwrap();
    let primary = Context::primary(&d).unwrap();

    // Green-context ids: CUDA 12.9.
    assert_eq!(primary.green_id().unwrap(), None);
    if have < (12, 9) {
        needs(green.green_id().unwrap_err(), 12, 9);
    } else {
        let (a, b) = (green.green_id().unwrap(), green2.green_id().unwrap());
        assert!(a.is_some() && b.is_some() && a != b, "{a:?} {b:?}");
        assert_eq!(green.clone().green_id().unwrap(), a);
    }

    // A stream's resources: its own from 13.1, its context's before. A green
    // context's streams need 12.5 (`cuGreenCtxStreamCreate`).
    if have < (12, 5) {
        needs(
            green.create_stream(StreamOptions::default()).unwrap_err(),
            12,
            5,
        );
    } else {
        let s = green.create_stream(StreamOptions::default()).unwrap();
        assert_eq!(
            s.resources().unwrap().sm.sm_count(),
            green.resources().unwrap().sm.sm_count()
        );
    }

    let groups = [
        SmGroup {
            count: Some(8),
            coscheduled_sm_count: Some(2),
            preferred_coscheduled_sm_count: Some(4),
            ..Default::default()
        },
        SmGroup {
            count: None,
            coscheduled_sm_count: Some(2),
            backfill: true,
            ..Default::default()
        },
    ];
    if have < (13, 1) {
        assert_eq!(all.flags(), None);
        needs(d.workqueue_resource().unwrap_err(), 13, 1);
        needs(primary.workqueue_resource().unwrap_err(), 13, 1);
        needs(green.workqueue_resource().unwrap_err(), 13, 1);
        needs(all.split_groups(&groups).unwrap_err(), 13, 1);
    } else {
        assert!(all.flags().is_some());
        let split = all.split_groups(&groups).unwrap();
        assert_eq!(split.groups.len(), 2, "{split:?}");
        assert!(split.groups[0].sm_count() >= 8, "{split:?}");
        assert!(split.groups[1].flags().unwrap().backfill(), "{split:?}");
        let mut wq = d.workqueue_resource().unwrap();
        assert!(wq.concurrency_limit() >= 1, "{wq:?}");
        assert_eq!(wq.device(), &d);
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
            concurrency_limit: Some(1),
        })
        .unwrap();
        assert_eq!(wq.concurrency_limit(), 1);
        let balanced = Context::create_green_with_workqueue(&d, &[split.groups[0]], &wq).unwrap();
        let got = balanced.workqueue_resource().unwrap();
        println!("{got:?}");
        assert_eq!(
            got.sharing_scope(),
            WorkqueueSharingScope::GreenContextBalanced
        );
    }
    // Refused before the driver, whatever its version.
    assert!(matches!(
        all.split_groups(&[]),
        Err(Error::InvalidArgument { .. })
    ));
}
