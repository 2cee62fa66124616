//! Fault injection on a GPU, under the driver shim (`run-shim.sh`): a small
//! workload (allocate, copy, fill, load a library and a module, launch, copy
//! back, pinned memory, events, a pool of its own, a second stream and a free
//! ordered on it) runs once per call site, with that one driver call failing;
//! every failure must come back as a typed error that names the injected
//! `CUresult` (or be absorbed with correct results), never a panic, and leave no
//! handle behind by the shim's counts. Then seeded random schedules.
//!
//! Without the shim this test skips (it fails under `CUDA_RS_REQUIRE_SHIM=1`,
//! which `run-shim.sh` sets); without a GPU it skips as every GPU test does.
//! The tests of this binary take turns (`SERIAL`): the shim's counts and rules
//! are the whole process's.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use cudars_core::{
    CompileTarget, ConstPtr, Device, DeviceBuffer, DeviceMemoryPoolOptions, DeviceMemoryResource,
    Event, EventOptions, JitOptions, LaunchConfig, Library, LibraryOptions, Module, MutPtr,
    ObjectCode, PinnedBuffer, Program, ProgramOptions, SourceCode, StreamOptions, TypedKernel,
};
use cudars_tests::{DriverShim, require_gpu, require_libs, require_shim};

const SRC: &str = r#"
extern "C" __global__ void scale(const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 3.0f * x[i] + 1.0f;
}
"#;

const N: usize = 1024;

/// `CUDA_ERROR_OUT_OF_MEMORY`: what allocations and random schedules fail with.
const OUT_OF_MEMORY: (u32, &str) = (2, "CUDA_ERROR_OUT_OF_MEMORY");
/// What every other call fails with.
const UNKNOWN: &str = "CUDA_ERROR_UNKNOWN";

/// The functions whose success releases a handle, and the kind it is counted
/// under: failing one leaks that handle, but for the frees of memory, which the
/// deferred-free queue retries until they succeed ([`RETRIED`]).
const RELEASES: &[(&str, &str)] = &[
    ("cuMemFree", "memory"),
    ("cuMemFreeAsync", "memory"),
    ("cuMemFreeHost", "memory"),
    ("cuStreamDestroy", "streams"),
    ("cuEventDestroy", "events"),
    ("cuModuleUnload", "modules"),
    ("cuLibraryUnload", "libraries"),
    ("cuLinkDestroy", "linkers"),
    ("cuMemPoolDestroy", "pools"),
];

/// The workload: every object it makes is dropped before it returns. The
/// results of both launches, or the first error.
/// The releases a failure of which is retried (`cudars_core::deferred_frees`):
/// the memory comes back.
const RETRIED: &[&str] = &["cuMemFree", "cuMemFreeAsync", "cuMemFreeHost"];

/// Waits until the deferred-free queue is empty (retrying it here too), or
/// panics after 10 s.
fn settle(what: &str) {
    let t0 = std::time::Instant::now();
    while cudars_core::deferred_frees() > 0 {
        let r = cudars_core::drain_deferred_frees();
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(10),
            "{what}: deferred frees never came back: {r}"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn workload(d: &Device, cubin: &[u8]) -> cudars_core::Result<(Vec<f32>, Vec<f32>)> {
    let s = d.create_stream(StreamOptions::default())?;
    let host: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let x = DeviceBuffer::from_host(d, &host, &s)?;
    let mut y = DeviceBuffer::<f32>::zeroed(d, N, &s)?;
    y.fill(-1.0, &s)?;
    let cfg = LaunchConfig::for_elements(N as u64, 128);

    // A context-independent library.
    let lib = Library::load(
        &ObjectCode::from_cubin(cubin.to_vec())?,
        &LibraryOptions::default(),
    )?;
    let k = TypedKernel::<(ConstPtr<f32>, MutPtr<f32>, u32)>::new(lib.get_kernel("scale")?)?;
    // SAFETY: `scale` touches x[0..N] and y[0..N], which both hold N floats.
    unsafe { k.launch(&s, &cfg, (x.view(), y.view_mut(), N as u32)) }?;
    let done = Event::new(d, EventOptions::default())?;
    s.record(&done)?;
    done.sync()?;
    let mut pinned = PinnedBuffer::<f32>::zeroed(d, N)?;
    y.view().copy_to_pinned(&mut pinned, &s)?;
    s.sync()?;
    let from_library = pinned.as_slice()?.to_vec();

    // A module in the device's context.
    let module = Module::load(
        &d.context()?,
        &ObjectCode::from_cubin(cubin.to_vec())?,
        &JitOptions::default(),
    )?;
    let k = TypedKernel::<(ConstPtr<f32>, MutPtr<f32>, u32)>::new(module.get_function("scale")?)?;
    y.fill(-1.0, &s)?;
    // SAFETY: as above.
    unsafe { k.launch(&s, &cfg, (x.view(), y.view_mut(), N as u32)) }?;
    let from_module = y.to_vec(&s)?;
    // From a pool of its own: a copy on a second stream, then a free there,
    // ordered after both streams.
    let s2 = d.create_stream(StreamOptions::default())?;
    let pool = DeviceMemoryResource::new_pool(d, DeviceMemoryPoolOptions::default())?;
    let mut z = DeviceBuffer::<f32>::allocate_from(Arc::new(pool), N, &s)?;
    z.copy_from(y.view(), &s2)?;
    z.into_buffer().close(Some(&s2))?;
    s2.sync()?;
    s.sync()?;
    Ok((from_library, from_module))
}

fn expected() -> Vec<f32> {
    (0..N).map(|i| 3.0 * i as f32 + 1.0).collect()
}

/// Runs one round under `plan` (already installed): the workload's outcome,
/// checked, then the device drained with the plan cleared. Returns what the
/// round injected, by function.
fn round(
    shim: &DriverShim,
    d: &Device,
    cubin: &[u8],
    what: &str,
    error: &str,
) -> BTreeMap<String, i64> {
    let outcome = catch_unwind(AssertUnwindSafe(|| workload(d, cubin)));
    let injected = shim.counts("injected");
    shim.set_faults("");
    d.sync().unwrap_or_else(|e| {
        panic!(
            "{what}: the device does not drain afterwards: {}",
            e.report()
        )
    });
    settle(what);
    match outcome {
        Err(_) => panic!("{what}: the workload panicked"),
        Ok(Ok((a, b))) => {
            assert_eq!(
                a,
                expected(),
                "{what}: wrong results from the library after an absorbed failure"
            );
            assert_eq!(
                b,
                expected(),
                "{what}: wrong results from the module after an absorbed failure"
            );
        }
        Ok(Err(e)) => {
            let report = e.report().to_string();
            assert!(
                !injected.is_empty(),
                "{what}: an error with nothing injected: {report}"
            );
            assert!(
                report.contains(error),
                "{what}: the error does not name the injected {error}: {report}"
            );
        }
    }
    injected
}

/// Held by each test for its whole run, so that no test's driver calls shift
/// another's call numbers or counts.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The handles live now, by kind.
fn live(shim: &DriverShim) -> BTreeMap<String, i64> {
    shim.counts("live")
}

/// `before` plus one handle of each kind a failed release kept.
fn with_leaks(
    before: &BTreeMap<String, i64>,
    injected: &BTreeMap<String, i64>,
) -> BTreeMap<String, i64> {
    let mut want = before.clone();
    for (f, n) in injected {
        if RETRIED.contains(&f.as_str()) {
            continue;
        }
        if let Some((_, kind)) = RELEASES.iter().find(|(r, _)| r == f) {
            *want.get_mut(*kind).expect("a counted kind") += n;
        }
    }
    want
}

#[test]
fn fault_sweep_every_failing_driver_call_is_a_typed_error_and_leaks_nothing() {
    let _serial = serial();
    require_gpu!();
    require_libs!("nvrtc");
    let Some(shim) =
        require_shim("fault_sweep_every_failing_driver_call_is_a_typed_error_and_leaks_nothing")
    else {
        return;
    };
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let cubin = Program::new(
        SourceCode::Cxx(SRC),
        ProgramOptions::for_device(&d).unwrap(),
    )
    .unwrap()
    .compile(CompileTarget::Cubin, &[])
    .unwrap()
    .code()
    .to_vec();

    // A clean run: it works, and says which wrapped functions it calls how often.
    // Under an emulated driver too old for the workload (`run-shim.sh 11080`)
    // there is nothing to sweep: said as a skip.
    shim.set_faults("");
    let (a, b) = match workload(&d, &cubin) {
        Ok(results) => results,
        Err(e) if e.required_driver().is_some() || e.is_unavailable() => {
            println!(
                "SKIPPED fault_sweep_every_failing_driver_call_is_a_typed_error_and_leaks_nothing: \
                 needs a driver that runs the workload: {}",
                e.report()
            );
            return;
        }
        Err(e) => panic!("the clean run failed: {}", e.report()),
    };
    assert_eq!((a, b), (expected(), expected()));
    d.sync().unwrap();
    let calls = shim.counts("calls");
    println!("the workload calls: {calls:?}");
    assert!(calls.contains_key("cuMemAllocFromPoolAsync") || calls.contains_key("cuMemAllocAsync"));
    assert!(calls.contains_key("cuLibraryLoadData") && calls.contains_key("cuModuleLoadDataEx"));

    // Each call site in turn: the first, second, third and last call of each function.
    let mut sites = 0;
    for (function, &count) in &calls {
        let mut nths: Vec<i64> = (1..=count.min(3)).collect();
        if count > 3 {
            nths.push(count);
        }
        let releases = RELEASES.iter().any(|(r, _)| r == function);
        let name = if function.starts_with("cuMemAlloc") || function == "cuMemHostAlloc" {
            OUT_OF_MEMORY.1
        } else {
            UNKNOWN
        };
        for nth in nths {
            let before = live(&shim);
            let what = format!("{function} failing on call {nth} of {count}");
            shim.set_faults(&format!("{function}:{nth}:{name}"));
            let injected = round(&shim, &d, &cubin, &what, name);
            let after = live(&shim);
            assert_eq!(
                after,
                with_leaks(&before, &injected),
                "{what}: handles leaked (injected {injected:?})"
            );
            if RETRIED.contains(&function.as_str()) {
                println!("{what}: as expected, the free was retried and the memory came back");
            } else if releases {
                println!("{what}: as expected, the handle it would have released is kept");
            }
            sites += 1;
        }
    }
    println!("{sites} call sites failed in turn, each a typed error or absorbed, no leaks");

    // Seeded random schedules: several calls may fail per run; releases never do.
    for seed in 1..=24u64 {
        let before = live(&shim);
        shim.set_random_faults(seed, 50_000_000, OUT_OF_MEMORY.0);
        let what = format!("random schedule with seed {seed}");
        let injected = round(&shim, &d, &cubin, &what, OUT_OF_MEMORY.1);
        assert_eq!(
            live(&shim),
            before,
            "{what}: handles leaked (injected {injected:?})"
        );
    }
}

/// The rule a child of [`fault_sweep_failures_while_starting_are_typed_errors`] runs under.
const CHILD_RULE: &str = "CUDA_RS_FAULTS_CHILD_RULE";

/// Failures of the calls made once per process, before any work (initialising
/// the driver, retaining the primary context, making it current): each in a
/// child process started under the shim with `CUDA_RS_SHIM_FAIL` naming its
/// first call. The first use of the device must be a typed error naming the
/// injected `CUresult`, never a panic.
#[test]
fn fault_sweep_failures_while_starting_are_typed_errors() {
    if cudars_tests::in_child() {
        let rule = std::env::var(CHILD_RULE).expect("the child's rule");
        let error = rule.rsplit(':').next().expect("an error name");
        let outcome = catch_unwind(|| {
            let d = Device::new(0)?;
            d.set_current()?;
            let s = d.create_stream(StreamOptions::default())?;
            DeviceBuffer::<u32>::zeroed(&d, 16, &s)?.to_vec(&s)
        });
        let shim = DriverShim::find().expect("the child runs under the shim");
        let injected = shim.counts("injected");
        match outcome {
            Err(_) => panic!("{rule}: the first use of the device panicked"),
            Ok(Err(e)) => {
                let report = e.report().to_string();
                assert!(
                    !injected.is_empty(),
                    "{rule}: an error with nothing injected: {report}"
                );
                assert!(
                    report.contains(error),
                    "{rule}: the error does not name {error}: {report}"
                );
                println!("{rule}: {report}");
            }
            Ok(Ok(v)) => {
                assert_eq!(
                    v, [0; 16],
                    "{rule}: wrong results after an absorbed failure"
                );
                println!("{rule}: absorbed or not reached (injected: {injected:?})");
            }
        }
        return;
    }
    let _serial = serial();
    require_gpu!();
    if require_shim("fault_sweep_failures_while_starting_are_typed_errors").is_none() {
        return;
    }
    // The child loads the driver as this process does: through the shim.
    let inherited: Vec<(&str, std::ffi::OsString)> = [
        "LD_LIBRARY_PATH",
        "CUDA_RS_SHIM_REAL_DRIVER",
        "CUDA_RS_SHIM_DRIVER_VERSION",
        "PATH",
        "HOME",
    ]
    .into_iter()
    .filter_map(|k| std::env::var_os(k).map(|v| (k, v)))
    .collect();
    for rule in [
        "cuInit:1:CUDA_ERROR_UNKNOWN",
        "cuDeviceGet:1:CUDA_ERROR_UNKNOWN",
        "cuDevicePrimaryCtxRetain:1:CUDA_ERROR_OUT_OF_MEMORY",
        "cuCtxSetCurrent:1:CUDA_ERROR_UNKNOWN",
        "cuStreamCreateWithPriority:1:CUDA_ERROR_OUT_OF_MEMORY",
        "cuMemAllocFromPoolAsync:1:CUDA_ERROR_OUT_OF_MEMORY",
    ] {
        let mut envs: Vec<(&str, &std::ffi::OsStr)> =
            inherited.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
        envs.push(("CUDA_RS_SHIM_FAIL", std::ffi::OsStr::new(rule)));
        envs.push((CHILD_RULE, std::ffi::OsStr::new(rule)));
        cudars_tests::run_test_in_child(
            "fault_sweep_failures_while_starting_are_typed_errors",
            &envs,
        );
    }
}

/// The virtual memory handles live now: physical allocations, mappings and
/// reserved ranges.
#[cfg(all(unix, feature = "vmm"))]
fn vmm_live(shim: &DriverShim) -> BTreeMap<String, i64> {
    let mut l = live(shim);
    l.retain(|k, _| matches!(k.as_str(), "physical" | "mappings" | "reservations"));
    l
}

/// `VirtualMemoryIpcDescriptor::import` of a three-chunk buffer, with each of
/// its driver calls failing in turn (each chunk's import and mapping, the
/// reservation, the access): a typed error naming the injected `CUresult`, and
/// every step done before it undone (the shim's counts of physical
/// allocations, mappings and ranges come back). Then the undo failing too:
/// what it could not undo is retried by the deferred-free queue until it is.
#[cfg(all(unix, feature = "vmm"))]
#[test]
fn fault_sweep_a_virtual_memory_import_failing_partway_undoes_every_step() {
    use cudars_core::{VirtualMemoryHandleType, VirtualMemoryOptions, VirtualMemoryResource};
    let _serial = serial();
    require_gpu!();
    let Some(shim) =
        require_shim("fault_sweep_a_virtual_memory_import_failing_partway_undoes_every_step")
    else {
        return;
    };
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let vmm = Arc::new(
        VirtualMemoryResource::new(
            &d,
            VirtualMemoryOptions {
                handle_type: VirtualMemoryHandleType::PosixFd,
                ..Default::default()
            },
        )
        .unwrap(),
    );
    let g = vmm.granularity();
    let mut buf = vmm.allocate(g, &s).unwrap();
    vmm.grow(&mut buf, 2 * g).unwrap();
    vmm.grow(&mut buf, 3 * g).unwrap();
    buf.fill_u32(0x600d_cafe, &s).unwrap();
    s.sync().unwrap();
    let desc = vmm.ipc_descriptor(&buf).unwrap();

    // A clean import: which calls it makes, and that its drop undoes them.
    shim.set_faults("");
    let before = vmm_live(&shim);
    let imported = desc.import(&d, &s).unwrap();
    let calls = shim.counts("calls");
    for (f, n) in [
        ("cuMemImportFromShareableHandle", 3),
        ("cuMemAddressReserve", 1),
        ("cuMemMap", 3),
        ("cuMemSetAccess", 1),
    ] {
        assert_eq!(calls.get(f), Some(&n), "{f}: {calls:?}");
    }
    let mut seen = vec![0u32; 3 * g / 4];
    imported.copy_to_host(&mut seen, &s).unwrap();
    assert!(seen.iter().all(|&x| x == 0x600d_cafe));
    drop(imported);
    settle("a clean import");
    assert_eq!(vmm_live(&shim), before, "the import's drop left handles");

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
    for (f, nth) in sites {
        for undo_fails in [false, true] {
            let what = format!("{f} failing on call {nth} (undo failing: {undo_fails})");
            let mut rules = format!("{f}:{nth}:{}", OUT_OF_MEMORY.1);
            if undo_fails {
                // The undo's first unmap (or, with nothing mapped, its first
                // release) fails once: deferred and retried.
                let first = if f == "cuMemMap" && nth > 1 || f == "cuMemSetAccess" {
                    "cuMemUnmap"
                } else {
                    "cuMemRelease"
                };
                if f == "cuMemImportFromShareableHandle" && nth == 1 {
                    continue; // nothing to undo
                }
                rules.push_str(&format!(",{first}:1:{UNKNOWN}"));
            }
            shim.set_faults(&rules);
            let outcome = catch_unwind(AssertUnwindSafe(|| desc.import(&d, &s)));
            let injected = shim.counts("injected");
            shim.set_faults("");
            match outcome {
                Err(_) => panic!("{what}: the import panicked"),
                Ok(Ok(_)) => panic!("{what}: the import succeeded (injected {injected:?})"),
                Ok(Err(e)) => {
                    let report = e.report().to_string();
                    assert!(
                        report.contains(OUT_OF_MEMORY.1),
                        "{what}: the error does not name the injected error: {report}"
                    );
                    assert_eq!(
                        injected.len(),
                        1 + usize::from(undo_fails),
                        "{what}: {injected:?}"
                    );
                }
            }
            settle(&what);
            assert_eq!(vmm_live(&shim), before, "{what}: handles leaked");
        }
    }
    drop(desc);
    drop(buf);
    s.sync().unwrap();
    settle("freeing the exported buffer");
}
