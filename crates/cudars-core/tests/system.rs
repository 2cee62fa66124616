//! `cudars_core::system` (NVML): the no-driver path on any machine, and on a GPU the
//! figures NVML reports checked against CUDA's (and printed, to compare with
//! `nvidia-smi`). Without a GPU the GPU tests print `SKIPPED`; with
//! `CUDA_TEST_REQUIRE_GPU=1` they fail.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Debug;

use cudars_core::cudars_bindings::nvml::{
    NVML_FI_DEV_ECC_CURRENT, NVML_FI_DEV_MEMORY_TEMP, NVML_FI_DEV_NVLINK_LINK_COUNT,
};
use cudars_core::cudars_bindings::{ApiKind, Unavailable};
use cudars_core::system::{
    self, AffinityScope, Brand, ClockId, ClockType, DeviceArch, EventSet, EventTypes, FieldId,
    InforomObject, P2pCapability, SystemDevice,
};
use cudars_core::{Device, Error, NvmlErrorKind, Result};
use cudars_tests::require_gpu;

#[test]
fn system_types_are_send_and_sync() {
    fn send_sync<T: Send + Sync + 'static>() {}
    send_sync::<SystemDevice>();
}

#[test]
fn a_nul_byte_is_rejected_before_nvml_is_called() {
    for r in [
        SystemDevice::from_uuid("GPU-\0"),
        SystemDevice::from_pci_bus_id("0000:\0"),
    ] {
        let e = r.unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
        assert_eq!(e.nvml_code(), None);
        assert!(!e.is_unavailable() && !e.is_nvml_not_supported());
        assert!(e.to_string().contains("NUL"), "{e}");
    }
}

#[test]
fn nvml_codes_read_as_python_s_exception_classes() {
    use cudars_core::cudars_bindings::nvml::{self as nvml, NvmlError, nvmlReturn_t};
    // Every kind, one per exception class of cuda.core.system.
    for (code, kind) in [
        (nvml::NVML_ERROR_UNINITIALIZED, NvmlErrorKind::Uninitialized),
        (
            nvml::NVML_ERROR_INVALID_ARGUMENT,
            NvmlErrorKind::InvalidArgument,
        ),
        (nvml::NVML_ERROR_NOT_SUPPORTED, NvmlErrorKind::NotSupported),
        (nvml::NVML_ERROR_NO_PERMISSION, NvmlErrorKind::NoPermission),
        (
            nvml::NVML_ERROR_ALREADY_INITIALIZED,
            NvmlErrorKind::AlreadyInitialized,
        ),
        (nvml::NVML_ERROR_NOT_FOUND, NvmlErrorKind::NotFound),
        (
            nvml::NVML_ERROR_INSUFFICIENT_SIZE,
            NvmlErrorKind::InsufficientSize,
        ),
        (
            nvml::NVML_ERROR_INSUFFICIENT_POWER,
            NvmlErrorKind::InsufficientPower,
        ),
        (
            nvml::NVML_ERROR_DRIVER_NOT_LOADED,
            NvmlErrorKind::DriverNotLoaded,
        ),
        (nvml::NVML_ERROR_TIMEOUT, NvmlErrorKind::Timeout),
        (nvml::NVML_ERROR_IRQ_ISSUE, NvmlErrorKind::IrqIssue),
        (
            nvml::NVML_ERROR_LIBRARY_NOT_FOUND,
            NvmlErrorKind::LibraryNotFound,
        ),
        (
            nvml::NVML_ERROR_FUNCTION_NOT_FOUND,
            NvmlErrorKind::FunctionNotFound,
        ),
        (
            nvml::NVML_ERROR_CORRUPTED_INFOROM,
            NvmlErrorKind::CorruptedInforom,
        ),
        (nvml::NVML_ERROR_GPU_IS_LOST, NvmlErrorKind::GpuIsLost),
        (
            nvml::NVML_ERROR_RESET_REQUIRED,
            NvmlErrorKind::ResetRequired,
        ),
        (
            nvml::NVML_ERROR_OPERATING_SYSTEM,
            NvmlErrorKind::OperatingSystem,
        ),
        (
            nvml::NVML_ERROR_LIB_RM_VERSION_MISMATCH,
            NvmlErrorKind::LibRmVersionMismatch,
        ),
        (nvml::NVML_ERROR_IN_USE, NvmlErrorKind::InUse),
        (nvml::NVML_ERROR_MEMORY, NvmlErrorKind::Memory),
        (nvml::NVML_ERROR_NO_DATA, NvmlErrorKind::NoData),
        (
            nvml::NVML_ERROR_VGPU_ECC_NOT_SUPPORTED,
            NvmlErrorKind::VgpuEccNotSupported,
        ),
        (
            nvml::NVML_ERROR_INSUFFICIENT_RESOURCES,
            NvmlErrorKind::InsufficientResources,
        ),
        (
            nvml::NVML_ERROR_FREQ_NOT_SUPPORTED,
            NvmlErrorKind::FreqNotSupported,
        ),
        (
            nvml::NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
            NvmlErrorKind::ArgumentVersionMismatch,
        ),
        (nvml::NVML_ERROR_DEPRECATED, NvmlErrorKind::Deprecated),
        (nvml::NVML_ERROR_NOT_READY, NvmlErrorKind::NotReady),
        (nvml::NVML_ERROR_GPU_NOT_FOUND, NvmlErrorKind::GpuNotFound),
        (nvml::NVML_ERROR_INVALID_STATE, NvmlErrorKind::InvalidState),
        (
            nvml::NVML_ERROR_RESET_TYPE_NOT_SUPPORTED,
            NvmlErrorKind::ResetTypeNotSupported,
        ),
        (nvml::NVML_ERROR_UNKNOWN, NvmlErrorKind::Unknown(999)),
        (nvmlReturn_t(9999), NvmlErrorKind::Unknown(9999)),
    ] {
        assert_eq!(NvmlErrorKind::from_code(code), kind);
        // What a failed system call returns: `FreqNotSupportedError` in Python
        // is an `Error::Nvml` whose kind is `FreqNotSupported`.
        let e = Error::Nvml {
            context: "setting a clock".into(),
            source: NvmlError::new(code),
        };
        assert_eq!(e.nvml_kind(), Some(kind));
        assert_eq!(e.nvml_code(), Some(code));
        assert_eq!(
            e.is_nvml_not_supported(),
            kind == NvmlErrorKind::NotSupported,
            "{kind:?}"
        );
    }
}

/// Checks that `r` failed because NVML is missing, and that the error says so:
/// unavailable (not an NVML failure code), the search list in its chain.
fn assert_library_not_found<T: Debug>(what: &str, r: Result<T>) {
    let e = match r {
        Ok(v) => panic!("{what}: succeeded without NVML: {v:?}"),
        Err(e) => e,
    };
    let msg = e.report().to_string();
    assert!(e.is_unavailable(), "{what}: {e:?}");
    assert!(
        matches!(
            e.unavailable(),
            Some(Unavailable::Library {
                api: ApiKind::Nvml,
                ..
            })
        ),
        "{what}: {e:?}"
    );
    assert!(!e.is_nvml_not_supported(), "{what}: {msg}");
    // Matchable as Python's `LibraryNotFoundError`.
    assert_eq!(
        e.nvml_kind(),
        Some(NvmlErrorKind::LibraryNotFound),
        "{what}: {msg}"
    );
    assert!(!msg.contains("NVML_ERROR"), "{what}: {msg}");
    #[cfg(target_os = "linux")]
    assert!(msg.contains("libnvidia-ml.so.1"), "{what}: {msg}");
    // The pathfinder's error is reachable through `source()`.
    let pf = e.unavailable().and_then(Unavailable::library_error);
    assert!(
        pf.is_some_and(|pf| !pf.searched().is_empty()),
        "{what}: {msg}"
    );
}

#[test]
fn without_nvml_every_function_says_where_it_looked() {
    if let Ok(lib) = cudars_pathfinder::load_nvidia_dynamic_lib("nvml") {
        println!(
            "NVML is here ({}): the no-driver path is not exercised",
            lib.abs_path().display()
        );
        return;
    }
    println!("{}", system::driver_version().unwrap_err().report());
    assert_library_not_found("driver_version", system::driver_version());
    assert_library_not_found(
        "kernel_mode_driver_version",
        system::kernel_mode_driver_version(),
    );
    assert_library_not_found("nvml_version", system::nvml_version());
    assert_library_not_found("driver_branch", system::driver_branch());
    assert_library_not_found("cuda_driver_version", system::cuda_driver_version());
    assert_library_not_found("device_count", system::device_count());
    assert_library_not_found("process_name", system::process_name(std::process::id()));
    assert_library_not_found("SystemDevice::new", SystemDevice::new(0));
    assert_library_not_found("SystemDevice::all", SystemDevice::all());
    assert_library_not_found(
        "SystemDevice::all_with_cpu_affinity",
        SystemDevice::all_with_cpu_affinity(0),
    );
    assert_library_not_found(
        "SystemDevice::from_uuid",
        SystemDevice::from_uuid("GPU-00000000-0000-0000-0000-000000000000"),
    );
    assert_library_not_found(
        "SystemDevice::from_pci_bus_id",
        SystemDevice::from_pci_bus_id("0000:01:00.0"),
    );
    // Twice: the remembered initialisation failure keeps its explanation.
    assert_library_not_found("device_count (again)", system::device_count());
    let on_another_thread = std::thread::spawn(system::driver_version).join().unwrap();
    assert_library_not_found("driver_version (another thread)", on_another_thread);
}

/// `Ok(v)`, or `None` (printed) when NVML says the device does not support it.
fn optional<T: Debug>(what: &str, r: Result<T>) -> Option<T> {
    match r {
        Ok(v) => {
            println!("{what}: {v:?}");
            Some(v)
        }
        Err(e) if e.is_nvml_not_supported() => {
            println!("{what}: not supported ({})", e.report());
            None
        }
        Err(e) => panic!("{what}: {}", e.report()),
    }
}

/// A PCI bus id in one form: lower case, the domain as 4 hex digits
/// (NVML writes `00000000:3B:00.0`, CUDA `0000:3b:00.0`).
fn normalise_bus_id(id: &str) -> String {
    let id = id.trim().to_ascii_lowercase();
    let (domain, rest) = id.split_once(':').unwrap();
    let domain = u32::from_str_radix(domain, 16).unwrap();
    format!("{domain:04x}:{rest}")
}

#[test]
fn system_versions() {
    require_gpu!();
    let driver = system::driver_version().unwrap();
    let nvml = system::nvml_version().unwrap();
    let cuda = system::cuda_driver_version().unwrap();
    // The loaded libcuda's CUDA version: the shim's when it emulates an older
    // driver, else the same as NVML's.
    let user_mode = system::user_mode_driver_version().unwrap();
    assert_eq!(
        user_mode.major * 1000 + user_mode.minor * 10,
        cudars_tests::driver_version()
    );
    if std::env::var_os("CUDA_RS_SHIM_DRIVER_VERSION").is_none() {
        assert_eq!(user_mode, cuda);
    }
    let (major, minor) = (cuda.major, cuda.minor);
    println!("driver version {driver}, NVML {nvml}, CUDA {major}.{minor}");
    assert!(!driver.is_empty());
    assert!(!nvml.is_empty());
    assert!(major >= 12, "CUDA {major}.{minor}");
    // NVML's version is the CUDA major version and the driver version.
    assert!(nvml.ends_with(&driver), "NVML {nvml}, driver {driver}");
    // The same version as numbers (Python's get_kernel_mode_driver_version).
    let numbers = system::kernel_mode_driver_version().unwrap();
    let joined: Vec<u32> = driver.split('.').map(|p| p.parse().unwrap()).collect();
    assert_eq!(numbers, joined, "{driver}");
    assert!(numbers[0] >= 525, "{numbers:?}");
    let cuda = cudars_core::cudars_bindings::driver::version().unwrap();
    assert_eq!((major, minor), (cuda.major, cuda.minor));
    match system::driver_branch() {
        Ok(b) => println!("driver branch {b}"),
        Err(e) => println!("driver branch unavailable: {}", e.report()),
    }
    let count = system::device_count().unwrap();
    println!(
        "NVML devices: {count}, CUDA devices: {}",
        Device::count().unwrap()
    );
    assert!(count >= 1);
    let me = system::process_name(std::process::id()).unwrap();
    println!("this process: {me}");
    assert!(!me.is_empty());
}

#[test]
fn device0_matches_cuda() {
    require_gpu!();
    let dev = Device::new(0).unwrap();
    let sd = dev.to_system_device().unwrap();
    println!("CUDA device 0 is NVML device {}", sd.index());

    // Identity, both ways.
    let name = sd.name().unwrap();
    println!("name: {name}");
    assert_eq!(name, dev.name().unwrap());
    let uuid = sd.uuid().unwrap();
    println!("uuid: {uuid}");
    assert_eq!(uuid, dev.uuid_string().unwrap());
    assert_eq!(sd.to_device().unwrap(), dev);
    assert_eq!(SystemDevice::new(sd.index()).unwrap().uuid().unwrap(), uuid);
    assert_eq!(SystemDevice::from_uuid(&uuid).unwrap().index(), sd.index());
    let cuda_bus_id = dev.pci_bus_id().unwrap();
    assert_eq!(
        SystemDevice::from_pci_bus_id(&cuda_bus_id).unwrap().index(),
        sd.index()
    );
    optional("serial", sd.serial());

    // Memory.
    let m = sd.memory_info().unwrap();
    let cuda_total = dev.total_memory().unwrap() as u64;
    let mib = |b: u64| b / (1 << 20);
    println!(
        "memory: total {} MiB, reserved {} MiB, used {} MiB, free {} MiB; CUDA total {} MiB \
         (NVML total - reserved {} CUDA's total)",
        mib(m.total),
        mib(m.reserved),
        mib(m.used),
        mib(m.free),
        mib(cuda_total),
        if m.total - m.reserved == cuda_total {
            "equals"
        } else {
            "differs from"
        }
    );
    // CUDA's total leaves out what the driver reserves, so it is at most NVML's.
    assert!(cuda_total <= m.total, "{m:?}, CUDA total {cuda_total}");
    assert!(
        m.total - cuda_total <= m.total / 50,
        "{m:?}, CUDA total {cuda_total}"
    );
    let accounted = m.used + m.free + m.reserved;
    assert!(accounted.abs_diff(m.total) <= m.total / 100, "{m:?}");

    // Load, temperature, power, clocks.
    let u = sd.utilization().unwrap();
    println!(
        "utilization: gpu {}%, memory {}%",
        u.gpu_percent, u.memory_percent
    );
    assert!(u.gpu_percent <= 100 && u.memory_percent <= 100, "{u:?}");
    let t = sd.temperature_celsius().unwrap();
    println!("temperature: {t} C");
    assert!((10..=110).contains(&t), "{t} C");
    if let Some(p) = optional("power usage (mW)", sd.power_usage_milliwatts()) {
        assert!(p > 0);
    }
    if let Some(p) = optional("power limit (mW)", sd.power_limit_milliwatts()) {
        assert!(p > 0);
    }
    let c = sd.clocks().unwrap();
    let max = sd.max_clocks().unwrap();
    println!("clocks (MHz): current {c:?}, max {max:?}");
    assert!(
        c.graphics_mhz > 0 && c.sm_mhz > 0 && c.memory_mhz > 0,
        "{c:?}"
    );
    assert!(
        max.graphics_mhz > 0 && max.sm_mhz > 0 && max.memory_mhz > 0,
        "{max:?}"
    );
    optional("performance state", sd.performance_state());
    optional("fan speed (%)", sd.fan_speed_percent());

    // PCI and compute capability.
    let pci = sd.pci_info().unwrap();
    println!("pci: {pci:?}; CUDA bus id {cuda_bus_id}");
    assert_eq!(
        normalise_bus_id(&pci.bus_id),
        normalise_bus_id(&cuda_bus_id)
    );
    let (domain, rest) = pci.bus_id.split_once(':').unwrap();
    assert_eq!(u32::from_str_radix(domain, 16).unwrap(), pci.domain);
    assert_eq!(
        u32::from_str_radix(&rest[..2], 16).unwrap(),
        pci.bus,
        "{pci:?}"
    );
    assert_eq!(
        pci.pci_device_id & 0xffff,
        0x10de,
        "NVIDIA's vendor id: {pci:?}"
    );
    let cc = sd.compute_capability().unwrap();
    println!("compute capability: {}.{}", cc.0, cc.1);
    let (major, minor) = dev.compute_capability().unwrap();
    assert_eq!(cc, (major as i32, minor as i32));
}

#[test]
fn every_device_round_trips() {
    require_gpu!();
    let all = SystemDevice::all().unwrap();
    assert_eq!(all.len() as u32, system::device_count().unwrap());
    for (i, sd) in all.iter().enumerate() {
        assert_eq!(sd.index() as usize, i);
        let uuid = sd.uuid().unwrap();
        println!("NVML device {i}: {} {uuid}", sd.name().unwrap());
        match sd.to_device() {
            Ok(dev) => assert_eq!(dev.to_system_device().unwrap().index(), sd.index()),
            // Hidden from CUDA by CUDA_VISIBLE_DEVICES.
            Err(Error::Unsupported { .. }) => {
                println!("  not visible to CUDA")
            }
            Err(e) => panic!("{}", e.report()),
        }
    }
    if let [a, b, ..] = all.as_slice() {
        optional("topology common ancestor", a.topology_common_ancestor(b));
        for cap in [
            P2pCapability::Read,
            P2pCapability::Write,
            P2pCapability::Nvlink,
        ] {
            optional(&format!("p2p {cap:?} 0-1"), a.p2p_status(b, cap));
        }
    }
}

/// `nvidia-smi`'s answer to `--query-gpu=<fields>`, one row of fields per GPU.
fn nvidia_smi(fields: &str) -> Result<Vec<Vec<String>>, String> {
    let out = std::process::Command::new("nvidia-smi")
        .args([
            &format!("--query-gpu={fields}"),
            "--format=csv,noheader,nounits",
        ])
        .output()
        .map_err(|e| format!("cannot run nvidia-smi: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "nvidia-smi failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split(',').map(|f| f.trim().to_string()).collect())
        .collect())
}

#[test]
fn nvml_agrees_with_nvidia_smi() {
    require_gpu!();
    let rows = nvidia_smi(
        "index,name,uuid,pci.bus_id,memory.total,driver_version,power.limit,temperature.gpu,clocks.max.sm,power.draw",
    );
    if !cudars_tests::require_or_skip(
        &cudars_tests::current_test_name(),
        "nvidia-smi",
        cudars_tests::REQUIRE_GPU_VAR,
        rows.as_ref().map(|_| ()).map_err(Clone::clone),
    ) {
        return;
    }
    let rows = rows.unwrap();
    assert_eq!(rows.len() as u32, system::device_count().unwrap());
    assert_eq!(rows[0][5], system::driver_version().unwrap());
    for r in &rows {
        let num = |i: usize| -> f64 { r[i].parse().unwrap_or_else(|_| panic!("{r:?}")) };
        let d = SystemDevice::new(r[0].parse().unwrap()).unwrap();
        assert_eq!(d.name().unwrap(), r[1]);
        assert_eq!(d.uuid().unwrap(), r[2]);
        assert!(d.pci_info().unwrap().bus_id.eq_ignore_ascii_case(&r[3]));
        let m = d.memory_info().unwrap();
        let smi_total = num(4) as u64;
        assert!(
            [m.total >> 20, (m.total - m.reserved) >> 20].contains(&smi_total),
            "nvidia-smi says {smi_total} MiB, NVML {m:?}"
        );
        let limit_w = d.power_limit_milliwatts().unwrap() as f64 / 1000.0;
        assert!((limit_w - num(6)).abs() <= 1.0, "{limit_w} W vs {}", r[6]);
        let t = d.temperature_celsius().unwrap() as f64;
        assert!((t - num(7)).abs() <= 5.0, "{t} °C vs {}", r[7]);
        assert_eq!(d.max_clocks().unwrap().sm_mhz as f64, num(8));
        let draw_w = d.power_usage_milliwatts().unwrap() as f64 / 1000.0;
        assert!(draw_w > 0.0 && draw_w <= limit_w * 1.1, "{draw_w} W");
        // nvidia-smi writes `[N/A]` where the board does not report it.
        if let Ok(smi_w) = r[9].parse::<f64>() {
            assert!(smi_w > 0.0, "{smi_w} W");
        }
        println!(
            "GPU {}: {} {} | {} MiB | {limit_w} W limit | {t} °C (smi {}) | {draw_w:.0} W (smi {}) | max SM {} MHz",
            r[0], r[1], r[2], smi_total, r[7], r[9], r[8]
        );
    }
}

#[test]
fn events_are_registered_and_waited_for() {
    require_gpu!();
    let d = SystemDevice::new(0).unwrap();
    let supported = d.supported_event_types().unwrap();
    println!("supported event types: {:#x}", supported.0);
    assert!(EventTypes::ALL.contains(supported));
    let set = EventSet::new().unwrap();
    if !supported.is_empty() {
        set.register(&d, supported).unwrap();
    }
    let t = std::time::Instant::now();
    match set.wait(std::time::Duration::from_millis(50)).unwrap() {
        // Something happened (a clock change, say): it is a registered kind.
        Some(e) => {
            assert!(supported.contains(e.event_type), "{e:?}");
            assert_eq!(e.device_index, 0);
        }
        None => assert!(t.elapsed() >= std::time::Duration::from_millis(40)),
    }
    // Kinds the device does not report are refused.
    let unsupported = EventTypes(EventTypes::ALL.0 & !supported.0);
    if !unsupported.is_empty() {
        let e = set.register(&d, unsupported).unwrap_err();
        assert!(e.nvml_code().is_some(), "{e}");
    }
}

#[test]
fn nvlinks_are_listed() {
    require_gpu!();
    for d in SystemDevice::all().unwrap() {
        let links: Vec<system::NvlinkInfo> = d.nvlinks().unwrap();
        println!(
            "NVML device {}: {} NVLink(s): {links:?}",
            d.index(),
            links.len()
        );
        for l in &links {
            assert!(l.link < 18);
            if l.active {
                assert!(l.version.is_some_and(|v| v >= 1), "{l:?}");
            }
        }
    }
}

/// `Ok(v)`, or `None` (printed) when NVML fails with one of `kinds`: what a GPU
/// may lack. Any other error fails the test; so does an entry point missing
/// from the driver, unless `new_in_driver` (a function newer drivers added).
fn allowed<T: Debug>(
    what: &str,
    r: Result<T>,
    kinds: &[NvmlErrorKind],
    new_in_driver: bool,
) -> Option<T> {
    match r {
        Ok(v) => {
            println!("{what}: {v:?}");
            Some(v)
        }
        Err(e) if e.nvml_kind().is_some_and(|k| kinds.contains(&k)) => {
            println!("{what}: {:?} ({})", e.nvml_kind(), e.report());
            None
        }
        Err(e) if new_in_driver && e.is_unavailable() => {
            println!("{what}: not in this driver ({})", e.report());
            None
        }
        Err(e) => panic!("{what}: {}", e.report()),
    }
}

const NOT_SUPPORTED: &[NvmlErrorKind] = &[NvmlErrorKind::NotSupported];

/// The architecture NVML should report for a compute capability.
fn arch_of(major: u32, minor: u32) -> Option<DeviceArch> {
    Some(match (major, minor) {
        (7, 0 | 2) => DeviceArch::Volta,
        (7, 5) => DeviceArch::Turing,
        (8, 9) => DeviceArch::Ada,
        (8, _) => DeviceArch::Ampere,
        (9, _) => DeviceArch::Hopper,
        (10..=12, _) => DeviceArch::Blackwell,
        _ => return None,
    })
}

#[test]
fn hardware_queries_give_plausible_values_or_typed_not_supported() {
    require_gpu!();
    let dev = Device::new(0).unwrap();
    let sd = dev.to_system_device().unwrap();
    let name = sd.name().unwrap();

    // Architecture and brand, checked against CUDA.
    let arch = sd.arch().unwrap();
    let (major, minor) = dev.compute_capability().unwrap();
    println!("{name}: arch {arch:?} (sm_{major}{minor})");
    if let Some(expected) = arch_of(major, minor) {
        assert_eq!(arch, expected);
    }
    let brand = sd.brand().unwrap();
    println!("brand: {brand} ({brand:?})");
    assert!(
        !matches!(brand, Brand::Unknown | Brand::Other(_)),
        "{brand:?}"
    );
    if name.contains("H100") || name.contains("H200") || name.contains("A100") {
        assert!(matches!(brand, Brand::Tesla | Brand::Nvidia), "{brand:?}");
    }

    // BAR1.
    let bar1 = sd.bar1_memory_info().unwrap();
    println!("BAR1: {bar1:?}");
    assert!(bar1.total > 0, "{bar1:?}");
    assert!(
        bar1.used <= bar1.total && bar1.free <= bar1.total,
        "{bar1:?}"
    );
    assert!(
        (bar1.used + bar1.free).abs_diff(bar1.total) <= bar1.total / 100,
        "{bar1:?}"
    );

    // NUMA, persistence, display, device node, module.
    allowed("NUMA node", sd.numa_node_id(), NOT_SUPPORTED, false);
    allowed(
        "persistence mode",
        sd.is_persistence_mode_enabled(),
        NOT_SUPPORTED,
        false,
    );
    allowed(
        "display connected",
        sd.is_display_connected(),
        NOT_SUPPORTED,
        false,
    );
    allowed(
        "display active",
        sd.is_display_active(),
        NOT_SUPPORTED,
        false,
    );
    allowed("module id", sd.module_id(), NOT_SUPPORTED, false);
    #[cfg(target_os = "linux")]
    {
        // GPUs have minors 0 to 254 (255 is /dev/nvidiactl).
        let minor = sd.minor_number().unwrap();
        let node = format!("/dev/nvidia{minor}");
        println!(
            "device node: {node} (here: {})",
            std::path::Path::new(&node).exists()
        );
        assert!(minor < 255, "{minor}");
    }

    // CPU and memory affinity; the GPUs near one of its CPUs include it.
    if let Some(cpus) = allowed(
        "CPU affinity (NUMA nodes)",
        sd.cpu_affinity(AffinityScope::Node),
        NOT_SUPPORTED,
        false,
    ) {
        assert!(!cpus.is_empty());
        assert!(cpus.windows(2).all(|w| w[0] < w[1]), "{cpus:?}");
        // A virtual machine may have no CPU–GPU topology for NVML to read: it
        // then answers "invalid argument" (seen on the H100 VM), typed.
        let near = allowed(
            &format!("GPUs near CPU {}", cpus[0]),
            SystemDevice::all_with_cpu_affinity(cpus[0] as u32),
            &[NvmlErrorKind::NotSupported, NvmlErrorKind::InvalidArgument],
            false,
        );
        if let Some(near) = near {
            assert!(near.iter().any(|d| d.index() == sd.index()), "{near:?}");
        }
    }
    allowed(
        "CPU affinity (sockets)",
        sd.cpu_affinity(AffinityScope::Socket),
        NOT_SUPPORTED,
        false,
    );
    if let Some(nodes) = allowed(
        "memory affinity (NUMA nodes)",
        sd.memory_affinity(AffinityScope::Node),
        NOT_SUPPORTED,
        false,
    ) {
        assert!(!nodes.is_empty());
    }

    // InfoROM.
    if let Some(v) = allowed(
        "InfoROM image",
        sd.inforom_image_version(),
        NOT_SUPPORTED,
        false,
    ) {
        assert!(!v.is_empty());
    }
    for object in [InforomObject::Oem, InforomObject::Ecc, InforomObject::Power] {
        allowed(
            &format!("InfoROM {object:?} version"),
            sd.inforom_version(object),
            NOT_SUPPORTED,
            false,
        );
    }
    allowed(
        "InfoROM checksum",
        sd.inforom_configuration_checksum(),
        NOT_SUPPORTED,
        false,
    );
    allowed(
        "InfoROM validation",
        sd.validate_inforom(),
        &[NvmlErrorKind::NotSupported, NvmlErrorKind::NoPermission],
        false,
    );
    allowed(
        "board part number",
        sd.board_part_number(),
        NOT_SUPPORTED,
        false,
    );

    // Fans and coolers: most data-centre boards have none NVML can see.
    let fans = allowed("fan count", sd.fan_count(), NOT_SUPPORTED, false);
    if let Some(n) = fans {
        for f in 0..n {
            let fan = sd.fan(f);
            if let Some(speed) = allowed("fan speed", fan.speed(), NOT_SUPPORTED, false) {
                assert!(speed <= 200, "{speed}%");
            }
            allowed("fan RPM", fan.speed_rpm(), NOT_SUPPORTED, true);
            allowed("fan target", fan.target_speed(), NOT_SUPPORTED, false);
            allowed("fan policy", fan.control_policy(), NOT_SUPPORTED, false);
        }
        // A fan past the last is NVML's typed argument error.
        let e = sd.fan(n + 7).speed().unwrap_err();
        assert!(
            matches!(
                e.nvml_kind(),
                Some(NvmlErrorKind::InvalidArgument | NvmlErrorKind::NotSupported)
            ),
            "{}",
            e.report()
        );
    }
    // Without fans, NVML calls asking for their speed range an invalid argument
    // (the H100's board): typed, like "not supported".
    let range_kinds: &[NvmlErrorKind] = if fans == Some(0) {
        &[NvmlErrorKind::NotSupported, NvmlErrorKind::InvalidArgument]
    } else {
        NOT_SUPPORTED
    };
    allowed(
        "fan speed range",
        sd.fan_min_max_speed(),
        range_kinds,
        false,
    );
    allowed(
        "cooler 0",
        sd.cooler_info(0),
        &[NvmlErrorKind::NotSupported, NvmlErrorKind::InvalidArgument],
        true,
    );

    // Clocks: why they are held down is among the reasons the device reports.
    let current = sd.current_clock_event_reasons().unwrap();
    println!("clock event reasons now: {:?}", current.names());
    if let Some(supported) = allowed(
        "supported clock event reasons",
        sd.supported_clock_event_reasons(),
        NOT_SUPPORTED,
        false,
    ) {
        println!("supported: {:?}", supported.names());
        assert!(
            supported.contains(current),
            "{current:?} not in {supported:?}"
        );
        assert!(!supported.is_empty());
    }
    let now = sd.clock(ClockType::Sm, ClockId::Current).unwrap();
    assert!(now > 0);
    allowed(
        "SM customer boost max",
        sd.clock(ClockType::Sm, ClockId::CustomerBoostMax),
        NOT_SUPPORTED,
        false,
    );
    allowed(
        "max customer boost (graphics)",
        sd.max_customer_boost_clock(ClockType::Graphics),
        NOT_SUPPORTED,
        false,
    );
    allowed(
        "auto boost",
        sd.auto_boosted_clocks_enabled(),
        NOT_SUPPORTED,
        false,
    );
    let app_mem = allowed(
        "application memory clock",
        sd.applications_clock(ClockType::Memory),
        NOT_SUPPORTED,
        false,
    );
    allowed(
        "default application graphics clock",
        sd.default_applications_clock(ClockType::Graphics),
        NOT_SUPPORTED,
        false,
    );
    if let Some(mems) = allowed(
        "supported memory clocks",
        sd.supported_memory_clocks(),
        NOT_SUPPORTED,
        false,
    ) {
        assert!(!mems.is_empty());
        if let Some(m) = app_mem {
            assert!(mems.contains(&m), "{m} MHz not in {mems:?}");
        }
        let graphics = sd.supported_graphics_clocks(mems[0]).unwrap();
        println!(
            "graphics clocks with memory at {} MHz: {graphics:?}",
            mems[0]
        );
        assert!(!graphics.is_empty() && graphics.iter().all(|&g| g > 0));
    }
}

#[test]
fn field_values_are_typed_with_errors_per_field() {
    require_gpu!();
    let sd = Device::new(0).unwrap().to_system_device().unwrap();
    let fields = [
        FieldId::new(NVML_FI_DEV_ECC_CURRENT),
        FieldId::new(NVML_FI_DEV_MEMORY_TEMP),
        NVML_FI_DEV_NVLINK_LINK_COUNT.into(),
    ];
    let samples = sd.field_values(&fields).unwrap();
    assert_eq!(samples.len(), fields.len());
    for (s, f) in samples.iter().zip(&fields) {
        println!("{s:?}");
        assert_eq!(s.field, *f);
        match &s.value {
            Ok(v) => {
                assert!(s.timestamp_us > 0, "{s:?}");
                assert!(v.as_integer().is_some() || v.as_f64().is_finite(), "{v:?}");
            }
            Err(e) => assert!(e.nvml_kind().is_some(), "{}", e.report()),
        }
    }
    assert!(sd.field_values(&[]).unwrap().is_empty());
    // A field NVML does not know fails alone, or the whole call fails, typed.
    match sd.field_values(&[FieldId::new(0xfff0)]) {
        Ok(s) => {
            let e = s[0].value.as_ref().unwrap_err();
            assert!(e.nvml_kind().is_some(), "{}", e.report());
        }
        Err(e) => assert!(e.nvml_kind().is_some(), "{}", e.report()),
    }
}

#[test]
fn mig_is_reported_or_typed_not_supported() {
    require_gpu!();
    let sd = Device::new(0).unwrap().to_system_device().unwrap();
    let is_mig = allowed("is a MIG device", sd.is_mig_device(), NOT_SUPPORTED, false);
    assert_ne!(is_mig, Some(true), "a whole GPU");
    let Some(mode) = allowed("MIG mode", sd.mig_mode(), NOT_SUPPORTED, false) else {
        return;
    };
    let count = sd.mig_device_count().unwrap();
    println!("MIG devices possible: {count}");
    if mode.current {
        for m in sd.mig_devices().unwrap() {
            println!("{m:?}: {}", m.uuid().unwrap());
            assert!(m.is_mig_device().unwrap());
            assert_eq!(m.index(), sd.index());
            assert_eq!(m.mig_parent().unwrap().uuid().unwrap(), sd.uuid().unwrap());
            // A MIG UUID finds the same MIG device.
            assert_eq!(SystemDevice::from_uuid(&m.uuid().unwrap()).unwrap(), m);
        }
    } else {
        // A whole GPU is no MIG device's child: NVML says so, typed.
        let e = sd.mig_parent().unwrap_err();
        assert!(e.nvml_kind().is_some(), "{}", e.report());
    }
}

#[test]
fn performance_states_and_their_clock_ranges() {
    require_gpu!();
    let sd = Device::new(0).unwrap().to_system_device().unwrap();
    let max = sd.max_clocks().unwrap();

    let states = allowed(
        "supported performance states",
        sd.supported_performance_states(),
        NOT_SUPPORTED,
        false,
    );
    if let Some(states) = &states {
        assert!(!states.is_empty());
        assert!(states.windows(2).all(|w| w[0] < w[1]), "{states:?}");
        assert!(
            states.iter().all(|&p| p <= system::MAX_PSTATE),
            "{states:?}"
        );
        if let Some(now) = sd.performance_state().unwrap() {
            assert!(states.contains(&now), "P{now} not in {states:?}");
        }
        for &p in states {
            let range = allowed(
                &format!("graphics clock range of P{p}"),
                sd.min_max_clock_of_pstate(ClockType::Graphics, p),
                &[NvmlErrorKind::NotSupported, NvmlErrorKind::InvalidArgument],
                false,
            );
            if let Some((lo, hi)) = range {
                println!("P{p}: graphics {lo}..={hi} MHz (maximum clock {max:?})");
                assert!(0 < hi && lo <= hi, "P{p}: {lo}..{hi}");
            }
        }
    }

    // A state past P15 is refused before NVML is called.
    for e in [
        sd.min_max_clock_of_pstate(ClockType::Sm, 16).unwrap_err(),
        sd.clock_offsets(ClockType::Graphics, 99).unwrap_err(),
        sd.set_clock_offset(ClockType::Graphics, 16, 0).unwrap_err(),
    ] {
        assert_eq!(
            e.invalid_kind(),
            Some(cudars_core::InvalidKind::OutOfRange),
            "{e:?}"
        );
        assert_eq!(e.nvml_code(), None);
    }

    if let Some(info) = allowed(
        "dynamic performance-state information",
        sd.dynamic_pstates_info(),
        NOT_SUPPORTED,
        false,
    ) {
        for d in info.domains.iter().filter(|d| d.is_present) {
            assert!(d.percentage <= 100, "{d:?}");
        }
    }

    // InfoROM black box: flushed at some point, or not yet.
    allowed(
        "InfoROM BBX flush time",
        sd.inforom_bbx_flush_time(),
        &[NvmlErrorKind::NotSupported, NvmlErrorKind::NotReady],
        false,
    );
}

/// What a setter did: applied, or refused with one of the typed kinds a test
/// machine may give (no permission: not root, or a container without the
/// capability; not supported; for a function newer than the driver, not
/// found; or one of `extra`). Returns whether it was applied.
fn setter(what: &str, r: Result<()>, extra: &[NvmlErrorKind]) -> bool {
    match r {
        Ok(()) => {
            println!("{what}: applied");
            true
        }
        Err(e) => {
            let kind = e.nvml_kind();
            println!("{what}: {kind:?} ({})", e.report());
            match kind {
                Some(
                    NvmlErrorKind::NoPermission
                    | NvmlErrorKind::NotSupported
                    | NvmlErrorKind::FunctionNotFound,
                ) => {}
                Some(k) if extra.contains(&k) => {}
                _ => panic!("{what}: {}", e.report()),
            }
            false
        }
    }
}

#[test]
fn setters_apply_or_fail_typed_and_leave_the_device_as_it_was() {
    require_gpu!();
    let sd = Device::new(0).unwrap().to_system_device().unwrap();

    // Persistence mode: set to what it is (a change of nothing).
    if let Some(on) = allowed(
        "persistence mode",
        sd.is_persistence_mode_enabled(),
        NOT_SUPPORTED,
        false,
    ) {
        setter(
            "persistence mode (unchanged)",
            sd.set_persistence_mode(on),
            &[],
        );
        assert_eq!(sd.is_persistence_mode_enabled().unwrap(), on);
    }

    // MIG mode: set to the pending mode (what it already is to be).
    if let Some(mig) = allowed("MIG mode", sd.mig_mode(), NOT_SUPPORTED, false) {
        setter(
            "MIG mode (unchanged)",
            sd.set_mig_mode(mig.pending),
            &[NvmlErrorKind::InUse, NvmlErrorKind::ResetRequired],
        );
        assert_eq!(sd.mig_mode().unwrap().pending, mig.pending);
    }

    // Power limit: set to the limit in force.
    if let Some(limit) = allowed(
        "power management limit",
        sd.power_management_limit_milliwatts(),
        NOT_SUPPORTED,
        false,
    ) {
        let (lo, hi) = sd.power_management_limit_constraints().unwrap();
        let default = sd.default_power_management_limit_milliwatts().unwrap();
        println!("power limit {limit} mW (default {default}, range {lo}..={hi})");
        assert!(
            lo <= hi && (lo..=hi).contains(&default),
            "{lo}..={hi}: {default}"
        );
        setter(
            "power limit (unchanged)",
            sd.set_power_management_limit(limit),
            &[],
        );
        assert_eq!(sd.power_management_limit_milliwatts().unwrap(), limit);
    }

    // Application clocks: set to the ones in force; reset only when those are
    // the defaults (so the reset changes nothing either).
    let mem = allowed(
        "application memory clock",
        sd.applications_clock(ClockType::Memory),
        NOT_SUPPORTED,
        false,
    );
    let gfx = allowed(
        "application graphics clock",
        sd.applications_clock(ClockType::Graphics),
        NOT_SUPPORTED,
        false,
    );
    if let (Some(mem), Some(gfx)) = (mem, gfx) {
        // Non-root users may set them where an administrator unrestricted them.
        setter(
            "application clocks (unchanged)",
            sd.set_applications_clocks(mem, gfx),
            &[],
        );
        assert_eq!(sd.applications_clock(ClockType::Memory).unwrap(), mem);
        assert_eq!(sd.applications_clock(ClockType::Graphics).unwrap(), gfx);
        let defaults = (
            sd.default_applications_clock(ClockType::Memory).unwrap(),
            sd.default_applications_clock(ClockType::Graphics).unwrap(),
        );
        if defaults == (mem, gfx) {
            setter(
                "application clocks reset",
                sd.reset_applications_clocks(),
                &[],
            );
            assert_eq!(sd.applications_clock(ClockType::Graphics).unwrap(), gfx);
        }
        // A clock pair no device supports is NVML's typed refusal (or, first,
        // the missing permission).
        let e = sd.set_applications_clocks(1, 1).unwrap_err();
        assert!(
            matches!(
                e.nvml_kind(),
                Some(
                    NvmlErrorKind::InvalidArgument
                        | NvmlErrorKind::NoPermission
                        | NvmlErrorKind::NotSupported
                )
            ),
            "{}",
            e.report()
        );
        assert_eq!(sd.applications_clock(ClockType::Graphics).unwrap(), gfx);
    }

    // Locked clocks: the range is checked first; a lock that is applied is
    // undone at once (NVML cannot say whether one was set before).
    let e = sd.set_gpu_locked_clocks(2000, 1000).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    assert!(e.to_string().contains("exceeds"), "{e}");
    let max = sd.max_clocks().unwrap();
    if setter(
        "graphics clock locked to its whole range",
        sd.set_gpu_locked_clocks(0, max.graphics_mhz),
        &[NvmlErrorKind::InvalidArgument],
    ) {
        // The lock was applied, so undoing it must work.
        sd.reset_gpu_locked_clocks().unwrap();
    }
    if setter(
        "memory clock locked to its whole range",
        sd.set_memory_locked_clocks(0, max.memory_mhz),
        &[NvmlErrorKind::InvalidArgument],
    ) {
        // The lock was applied, so undoing it must work.
        sd.reset_memory_locked_clocks().unwrap();
    }

    // Clock offsets at P0: set to the one in force.
    for clock in [ClockType::Graphics, ClockType::Memory] {
        let offsets = allowed(
            &format!("{clock:?} clock offsets at P0"),
            sd.clock_offsets(clock, 0),
            &[
                NvmlErrorKind::NotSupported,
                NvmlErrorKind::InvalidArgument,
                NvmlErrorKind::FunctionNotFound,
            ],
            true,
        );
        if let Some(o) = offsets {
            assert!(
                o.min_mhz <= o.current_mhz && o.current_mhz <= o.max_mhz,
                "{o:?}"
            );
            setter(
                &format!("{clock:?} clock offset (unchanged)"),
                sd.set_clock_offset(clock, 0, o.current_mhz),
                &[],
            );
            assert_eq!(sd.clock_offsets(clock, 0).unwrap(), o);
        }
    }

    // Fans: where the board has them, set each to the speed it is aimed at and
    // give it back to the driver if the driver had it. Passively cooled boards
    // refuse (no fan 0 is an invalid argument to NVML).
    match sd.fan_count() {
        Ok(n) if n > 0 => {
            for f in 0..n {
                let fan = sd.fan(f);
                let policy = fan.control_policy();
                let Some(target) = allowed("fan target", fan.target_speed(), NOT_SUPPORTED, false)
                else {
                    continue;
                };
                if setter(
                    &format!("fan {f} speed (unchanged)"),
                    fan.set_speed(target),
                    &[],
                ) {
                    match policy {
                        Ok(system::FanControlPolicy::Manual) => {}
                        _ => {
                            fan.set_default_speed().unwrap();
                        }
                    }
                }
            }
        }
        _ => {
            for (what, r) in [
                ("fan 0 speed", sd.fan(0).set_speed(50)),
                ("fan 0 default speed", sd.fan(0).set_default_speed()),
            ] {
                assert!(
                    !setter(what, r, &[NvmlErrorKind::InvalidArgument]),
                    "{what}: applied on a board without fans"
                );
            }
        }
    }
}

#[test]
fn processes_pcie_temperatures_and_topology() {
    require_gpu!();
    let dev = Device::new(0).unwrap();
    let sd = dev.to_system_device().unwrap();

    // This process has a context on the device, so NVML lists it (unless the
    // test runs in a container whose PID namespace NVML cannot see into).
    let ctx = dev.context().unwrap();
    ctx.set_current().unwrap();
    if let Some(procs) = allowed(
        "compute processes",
        sd.compute_running_processes(),
        &[NvmlErrorKind::NoPermission, NvmlErrorKind::NotSupported],
        false,
    ) {
        let me = std::process::id();
        match procs.iter().find(|p| p.pid == me) {
            Some(p) => assert!(p.used_gpu_memory.is_none_or(|m| m > 0), "{p:?}"),
            None => println!("this process ({me}) is not listed: another PID namespace?"),
        }
    }

    // Thresholds: the GPU slows down before it shuts down.
    let slowdown = allowed(
        "slowdown threshold",
        sd.temperature_threshold(system::TemperatureThreshold::Slowdown),
        NOT_SUPPORTED,
        false,
    );
    let shutdown = allowed(
        "shutdown threshold",
        sd.temperature_threshold(system::TemperatureThreshold::Shutdown),
        NOT_SUPPORTED,
        false,
    );
    if let (Some(slow), Some(shut)) = (slowdown, shutdown) {
        assert!(slow <= shut && shut < 150, "{slow} / {shut}");
    }
    allowed(
        "acoustic threshold",
        sd.temperature_threshold(system::TemperatureThreshold::AcousticCurrent),
        &[NvmlErrorKind::NotSupported, NvmlErrorKind::InvalidArgument],
        false,
    );
    if let Some(margin) = allowed(
        "temperature margin",
        sd.temperature_margin(),
        NOT_SUPPORTED,
        true,
    ) {
        assert!((-50..150).contains(&margin), "{margin}");
    }

    // PCIe: the link now is no faster nor wider than the most it can be.
    let gen_max = allowed(
        "PCIe max generation",
        sd.max_pcie_link_generation(),
        NOT_SUPPORTED,
        false,
    );
    let gen_now = allowed(
        "PCIe generation",
        sd.current_pcie_link_generation(),
        NOT_SUPPORTED,
        false,
    );
    if let (Some(max), Some(now)) = (gen_max, gen_now) {
        assert!((1..=max).contains(&now), "{now} of {max}");
        let gpu_max = sd.gpu_max_pcie_link_generation().unwrap();
        assert!(max <= gpu_max, "{max} > {gpu_max}");
    }
    let width_max = allowed(
        "PCIe max width",
        sd.max_pcie_link_width(),
        NOT_SUPPORTED,
        false,
    );
    let width_now = allowed(
        "PCIe width",
        sd.current_pcie_link_width(),
        NOT_SUPPORTED,
        false,
    );
    if let (Some(max), Some(now)) = (width_max, width_now) {
        assert!(now <= max && max <= 32, "{now} of {max}");
    }
    allowed(
        "PCIe throughput (rx, tx) KB/s",
        sd.pcie_throughput_kbps(),
        NOT_SUPPORTED,
        false,
    );
    allowed(
        "PCIe replays",
        sd.pcie_replay_counter(),
        NOT_SUPPORTED,
        false,
    );

    // Every thermal sensor: the GPU's reading within its range.
    if let Some(sensors) = allowed(
        "thermal sensors",
        sd.thermal_settings(system::ThermalTarget::All),
        &[NvmlErrorKind::NotSupported, NvmlErrorKind::InvalidArgument],
        false,
    ) {
        assert!(sensors.len() <= 3, "{sensors:?}");
        for s in &sensors {
            assert!((-50..150).contains(&s.current_temp), "{s:?}");
        }
    }

    // PCI ids: NVIDIA's vendor id; a GPU's class is display controller (0x03).
    let pci = sd.pci_info().unwrap();
    println!(
        "PCI: {pci:?}, vendor {:#x}, device {:#x}",
        pci.vendor_id(),
        pci.device_id()
    );
    assert_eq!(pci.vendor_id(), 0x10DE);
    if let Some(class) = pci.base_class {
        assert_eq!(class, 0x03, "{pci:?}");
    }
    let uuid = sd.uuid_without_prefix().unwrap();
    assert_eq!(uuid.len(), 36, "{uuid}");
    let cuda_uuid = dev.uuid_string().unwrap();
    assert!(
        cuda_uuid
            .to_ascii_lowercase()
            .ends_with(&uuid.to_ascii_lowercase()),
        "{cuda_uuid} / {uuid}"
    );

    // C2C, addressing, attributes, repairs.
    allowed("C2C enabled", sd.is_c2c_enabled(), NOT_SUPPORTED, true);
    allowed("addressing mode", sd.addressing_mode(), NOT_SUPPORTED, true);
    if let Some(a) = allowed("attributes", sd.attributes(), NOT_SUPPORTED, false) {
        let sms = dev.properties().multiprocessor_count().unwrap();
        // A whole GPU's count, or a MIG slice's: never more than CUDA sees.
        assert!(i64::from(a.multiprocessor_count) <= i64::from(sms), "{a:?}");
        let total_mib = sd.memory_info().unwrap().total >> 20;
        assert!(a.memory_size_mib <= total_mib + 1024, "{a:?}");
    }
    allowed("repair status", sd.repair_status(), NOT_SUPPORTED, true);

    // The GPUs at the widest level are other GPUs NVML sees, never this one.
    if let Some(near) = allowed(
        "GPUs across the system",
        sd.topology_nearest_gpus(system::TopologyLevel::System),
        NOT_SUPPORTED,
        false,
    ) {
        let others = system::device_count().unwrap() - 1;
        assert!(near.len() as u32 <= others, "{near:?}");
        assert!(near.iter().all(|d| d.index() != sd.index()), "{near:?}");
    }
}
