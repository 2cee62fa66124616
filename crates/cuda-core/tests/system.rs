//! `cuda_core::system` (NVML): the no-driver path on any machine, and on a GPU the
//! figures NVML reports checked against CUDA's (and printed, to compare with
//! `nvidia-smi`). Without a GPU the GPU tests print `SKIPPED`; with
//! `CUDA_TEST_REQUIRE_GPU=1` they fail.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Debug;

use cuda_core::cuda_bindings::{ApiKind, Unavailable};
use cuda_core::system::{self, EventSet, EventTypes, P2pCapability, SystemDevice};
use cuda_core::{Device, Error, Result};
use cuda_rs_tests::require_gpu;

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
    assert_eq!(e.nvml_code(), None, "{what}: {msg}");
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
    if let Ok(lib) = cuda_pathfinder::load_nvidia_dynamic_lib("nvml") {
        println!(
            "NVML is here ({}): the no-driver path is not exercised",
            lib.abs_path().display()
        );
        return;
    }
    println!("{}", system::driver_version().unwrap_err().report());
    assert_library_not_found("driver_version", system::driver_version());
    assert_library_not_found("nvml_version", system::nvml_version());
    assert_library_not_found("driver_branch", system::driver_branch());
    assert_library_not_found("cuda_driver_version", system::cuda_driver_version());
    assert_library_not_found("device_count", system::device_count());
    assert_library_not_found("process_name", system::process_name(std::process::id()));
    assert_library_not_found("SystemDevice::new", SystemDevice::new(0));
    assert_library_not_found("SystemDevice::all", SystemDevice::all());
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
    let (major, minor) = system::cuda_driver_version().unwrap();
    println!("driver version {driver}, NVML {nvml}, CUDA {major}.{minor}");
    assert!(!driver.is_empty());
    assert!(!nvml.is_empty());
    assert!(major >= 12, "CUDA {major}.{minor}");
    // NVML's version is the CUDA major version and the driver version.
    assert!(nvml.ends_with(&driver), "NVML {nvml}, driver {driver}");
    let cuda = cuda_core::cuda_bindings::driver::version().unwrap();
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
    if !cuda_rs_tests::require_or_skip(
        &cuda_rs_tests::current_test_name(),
        "nvidia-smi",
        cuda_rs_tests::REQUIRE_GPU_VAR,
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
        let links = d.nvlinks().unwrap();
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
