//! `cuda_core/tests/system/test_system_device.py` of `cuda.core` (the pinned commit
//! of `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says.
//!
//! `system.Device` is `cudars_core::system::SystemDevice` (`get_all_devices()` is
//! `all()`, `Device(pci_bus_id=…)` is `from_pci_bus_id`), each property a method
//! (`bar1_memory_info()`, `get_cpu_affinity(scope)` is `cpu_affinity(scope)`,
//! `inforom.image_version` is `inforom_image_version()`, `get_clock(t).get_current_mhz()`
//! is `clock(t, ClockId::Current)`, `get_clock(t).get_max_mhz()` the `max_clocks()`
//! entry of `t`, `temperature.get_sensor()` is `temperature_celsius()`, …). Python's
//! `with unsupported_before(device, …)` skips the test when NVML answers
//! `NotSupportedError`: here [`or_skip!`] prints `SKIPPED` and returns on
//! `NvmlErrorKind::NotSupported`; `pytest.xfail` on `NoPermissionError` (a setter
//! refused to an unprivileged user) is the same. Python's `TimeoutError` from an
//! event wait is `Ok(None)` here. NVML comes with the driver: every test needs a GPU.

use cudars_core::cudars_bindings::nvml::{
    NVML_FI_DEV_PCIE_COUNT_TX_BYTES, NVML_FI_DEV_PCIE_REPLAY_COUNTER,
    NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION,
};
use cudars_core::system::{
    AffinityScope, ClockId, ClockType, EventSet, EventTypes, FieldId, InforomObject, NvmlErrorKind,
    P2pCapability, SystemDevice, TemperatureThreshold, ThermalTarget, TopologyLevel,
};
use cudars_core::{Device, Result};

/// Python's `unsupported_before(device, …)`: the value, or the test skips when NVML
/// says the query is not supported on this device.
macro_rules! or_skip {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) if e.nvml_kind() == Some(NvmlErrorKind::NotSupported) => {
                println!("SKIPPED {}: {e}", cudars_tests::current_test_name());
                return;
            }
            Err(e) => panic!("{e}"),
        }
    };
}

/// `pytest.xfail` on `NoPermissionError`.
macro_rules! or_xfail {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) if e.nvml_kind() == Some(NvmlErrorKind::NoPermission) => {
                println!("SKIPPED (xfail) {}: {e}", cudars_tests::current_test_name());
                return;
            }
            Err(e) => panic!("{e}"),
        }
    };
}

/// The module's fixture: every test needs NVML and a GPU.
fn devices() -> Vec<SystemDevice> {
    let all = SystemDevice::all().unwrap();
    assert!(!all.is_empty(), "No GPUs available to run device tests");
    all
}

#[test]
fn test_devices_are_the_same_architecture() {
    cudars_tests::require_gpu!();
    let mut arches: Vec<String> = devices()
        .iter()
        .map(|d| format!("{:?}", d.arch().unwrap()))
        .collect();
    arches.sort();
    arches.dedup();
    if arches.len() > 1 {
        println!(
            "warning: System has devices of multiple architectures ({}). Some tests may be skipped unexpectedly",
            arches.join(", ")
        );
    }
}

#[test]
fn test_device_count() {
    cudars_tests::require_gpu!();
    assert_eq!(
        devices().len(),
        cudars_core::system::device_count().unwrap() as usize
    );
}

#[test]
fn test_to_cuda_device() {
    cudars_tests::require_gpu!();
    for device in devices() {
        // Not every NVML device has a CUDA device (MIG).
        let Ok(cuda_device) = device.to_device() else {
            continue;
        };
        let uuid = cuda_device.uuid_string().unwrap();
        assert_eq!(
            uuid.strip_prefix("GPU-").unwrap(),
            device.uuid_without_prefix().unwrap()
        );
        // CUDA's bus id has a 2-byte domain, NVML's a 4-byte one.
        assert_eq!(
            cuda_device.pci_bus_id().unwrap(),
            device.pci_info().unwrap().bus_id[4..]
        );
    }
}

#[test]
fn test_device_architecture() {
    cudars_tests::require_gpu!();
    for device in devices() {
        device.arch().unwrap();
    }
}

#[test]
fn test_device_bar1_memory() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let info = or_skip!(device.bar1_memory_info());
        assert_eq!(info.free + info.used, info.total, "{info:?}");
    }
}

/// The calling thread's CPU affinity (`os.sched_getaffinity(0)`).
#[cfg(target_os = "linux")]
fn thread_affinity() -> libc::cpu_set_t {
    // SAFETY: an all-zero `cpu_set_t` is the empty set; `set` is valid for writes.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
            0
        );
        set
    }
}

#[cfg(target_os = "linux")]
fn set_thread_affinity(set: &libc::cpu_set_t) {
    // SAFETY: `set` is a valid `cpu_set_t` of the size passed.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
}

#[cfg(target_os = "linux")]
fn cpus_of(set: &libc::cpu_set_t) -> Vec<usize> {
    // SAFETY: reading bits of a valid set.
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, set) })
        .collect()
}

#[test]
#[cfg(target_os = "linux")]
fn test_device_cpu_affinity() {
    cudars_tests::require_gpu!();
    let before = thread_affinity();
    for device in devices() {
        let affinity = or_skip!(device.cpu_affinity(AffinityScope::Node));
        // SAFETY: an all-zero `cpu_set_t` is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in &affinity {
            // SAFETY: `c` is below CPU_SETSIZE (NVML's CPU numbers); `set` is valid.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        set_thread_affinity(&set);
        let got = cpus_of(&thread_affinity());
        set_thread_affinity(&before);
        // The CPUs of the device's node that this process may run on: all of them
        // on a whole machine, as Python's test assumes; a container's CPU set
        // (a slice of the node) keeps its own.
        let allowed = cpus_of(&before);
        let mut want: Vec<usize> = affinity
            .iter()
            .copied()
            .filter(|c| allowed.contains(c))
            .collect();
        want.sort_unstable();
        want.dedup();
        if want.len() < affinity.len() {
            println!(
                "note: this process may run on {allowed:?} only; NVML's node CPUs are {affinity:?}"
            );
        }
        assert_eq!(got, want);
    }
}

#[test]
fn test_affinity() {
    cudars_tests::require_gpu!();
    for device in devices() {
        for scope in [AffinityScope::Node, AffinityScope::Socket] {
            let _cpus: Vec<usize> = or_skip!(device.cpu_affinity(scope));
            let _nodes: Vec<usize> = device.memory_affinity(scope).unwrap();
        }
    }
}

/// Python's `numa_node_id` is -1 without a node; here the method's `u32`.
#[test]
fn test_numa_node_id() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let _id: u32 = or_skip!(device.numa_node_id());
    }
}

#[test]
fn test_device_cuda_compute_capability() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let (major, minor) = device.compute_capability().unwrap();
        assert!((3..=99).contains(&major));
        assert!((0..=9).contains(&minor));
    }
}

#[test]
fn test_device_memory() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let m = or_skip!(device.memory_info());
        assert_eq!(m.free + m.used + m.reserved, m.total, "{m:?}");
    }
}

#[test]
fn test_device_name() {
    cudars_tests::require_gpu!();
    for device in devices() {
        assert!(!device.name().unwrap().is_empty());
    }
}

fn is_hex(s: &str, n: usize) -> bool {
    s.len() == n && s.chars().all(|c| c.is_ascii_hexdigit())
}

#[test]
fn test_device_pci_info() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let pci = device.pci_info().unwrap();
        let id = pci.bus_id.to_lowercase();
        let parts: Vec<&str> = id.split(':').collect();
        assert_eq!(parts.len(), 3, "{id}");
        assert!(is_hex(parts[0], 8) && is_hex(parts[1], 2), "{id}");
        assert!(
            is_hex(&parts[2][..2], 2) && is_hex(&parts[2][3..4], 1),
            "{id}"
        );
        assert_eq!(pci.domain, u32::from_str_radix(parts[0], 16).unwrap());
        assert!(pci.bus <= 0xFF);
        assert_eq!(pci.bus, u32::from_str_radix(parts[1], 16).unwrap());
        assert!(pci.device <= 0xFF);
        assert_eq!(pci.device, u32::from_str_radix(&parts[2][..2], 16).unwrap());
        // 16-bit ids (the type says so).
        let (_vendor, _device): (u16, u16) = (pci.vendor_id(), pci.device_id());
        let _subsystem: u32 = pci.pci_subsystem_id;
        assert!(pci.base_class.unwrap() <= 0xFF);
        assert!(pci.sub_class.unwrap() <= 0xFF);
        assert!(device.gpu_max_pcie_link_generation().unwrap() <= 0xFF);
        assert!(device.max_pcie_link_generation().unwrap() <= 0xFF);
        assert!(device.max_pcie_link_width().unwrap() <= 0xFF);
        assert!(device.current_pcie_link_generation().unwrap() <= 0xFF);
        assert!(device.current_pcie_link_width().unwrap() <= 0xFF);
        let _tx_rx: (u32, u32) = or_skip!(device.pcie_throughput_kbps());
        let _replay: u32 = device.pcie_replay_counter().unwrap();
    }
}

#[test]
fn test_device_serial() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let serial = or_skip!(device.serial());
        assert!(!serial.is_empty());
    }
}

#[test]
fn test_device_uuid_without_prefix() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let _uuid: String = device.uuid_without_prefix().unwrap();
    }
}

#[test]
fn test_register_events() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let _supported: EventTypes = device.supported_event_types().unwrap();
    }
    for types in [EventTypes::XID_CRITICAL_ERROR, EventTypes::default()] {
        for device in devices() {
            let events = EventSet::new().unwrap();
            events.register(&device, types).unwrap();
            // Python's `TimeoutError`: no event came.
            let got = events.wait(std::time::Duration::from_millis(500)).unwrap();
            assert!(got.is_none(), "{got:?}");
        }
    }
}

#[test]
fn test_device_brand() {
    cudars_tests::require_gpu!();
    for device in devices() {
        device.brand().unwrap();
    }
}

#[test]
fn test_device_pci_bus_id() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let bus_id = device.pci_info().unwrap().bus_id;
        let new_device = SystemDevice::from_pci_bus_id(&bus_id).unwrap();
        assert_eq!(new_device.index(), device.index());
    }
}

#[test]
fn test_device_attributes() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let a = or_skip!(device.attributes());
        assert!(a.multiprocessor_count > 0, "{a:?}");
        assert!(a.memory_size_mib > 0, "{a:?}");
    }
}

#[test]
fn test_c2c_mode_enabled() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let _enabled: bool = or_skip!(device.is_c2c_enabled());
    }
}

#[test]
fn test_persistence_mode_enabled() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let is_enabled = device.is_persistence_mode_enabled().unwrap();
        or_xfail!(device.set_persistence_mode(false));
        let now = device.is_persistence_mode_enabled();
        device.set_persistence_mode(is_enabled).unwrap();
        assert!(!now.unwrap());
    }
}

#[test]
fn test_field_values() {
    cudars_tests::require_gpu!();
    for device in devices() {
        assert!(device.field_values(&[]).unwrap().is_empty());

        let field_ids = [
            FieldId::new(NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION),
            FieldId::new(NVML_FI_DEV_PCIE_COUNT_TX_BYTES),
        ];
        let field_values = device.field_values(&field_ids).unwrap();
        // `validate()`: every field read (a field NVML does not support skips).
        for v in &field_values {
            match &v.value {
                Ok(_) => {}
                Err(e) if e.nvml_kind() == Some(NvmlErrorKind::NotSupported) => {
                    println!("SKIPPED {}: {e}", cudars_tests::current_test_name());
                    return;
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(field_values.len(), field_ids.len());
        for (id, v) in field_ids.iter().zip(&field_values) {
            assert_eq!(v.field, *id);
            assert!(v.value.as_ref().unwrap().as_integer().is_some(), "{v:?}");
            assert!(v.latency_us >= 0);
            assert!(v.timestamp_us >= 0);
        }
        let orig_timestamp = field_values[0].timestamp_us;
        let field_values = device.field_values(&field_ids).unwrap();
        assert!(field_values[0].timestamp_us >= orig_timestamp);

        // One element, a special case.
        let field_ids = [FieldId::new(NVML_FI_DEV_PCIE_REPLAY_COUNTER)];
        let field_values = device.field_values(&field_ids).unwrap();
        assert_eq!(field_values.len(), 1);
        let old_value = field_values[0]
            .value
            .as_ref()
            .unwrap()
            .as_integer()
            .unwrap();

        device.clear_field_values(&field_ids).unwrap();
        let field_values = device.field_values(&field_ids).unwrap();
        assert_eq!(field_values.len(), 1);
        let new_value = field_values[0]
            .value
            .as_ref()
            .unwrap()
            .as_integer()
            .unwrap();
        assert!(new_value <= old_value);
    }
}

#[test]
fn test_get_all_devices_with_cpu_affinity() {
    cudars_tests::require_gpu!();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    for i in 0..cpus {
        for device in SystemDevice::all_with_cpu_affinity(i as u32).unwrap() {
            let affinity = or_skip!(device.cpu_affinity(AffinityScope::Node));
            assert!(affinity.contains(&i), "{i} not in {affinity:?}");
        }
    }
}

#[test]
fn test_index() {
    cudars_tests::require_gpu!();
    for (i, device) in devices().iter().enumerate() {
        assert_eq!(device.index() as usize, i);
    }
}

#[test]
fn test_module_id() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let _id: u32 = or_skip!(device.module_id());
    }
}

#[test]
fn test_addressing_mode() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let _mode = or_skip!(device.addressing_mode());
    }
}

#[test]
fn test_display_mode() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let _connected: bool = device.is_display_connected().unwrap();
        let _active: bool = device.is_display_active().unwrap();
    }
}

#[test]
fn test_repair_status() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let _status = or_skip!(device.repair_status());
    }
}

#[test]
fn test_get_topology_common_ancestor() {
    cudars_tests::require_gpus!(2);
    let devices = devices();
    let _level: TopologyLevel = devices[0].topology_common_ancestor(&devices[1]).unwrap();
}

#[test]
fn test_get_p2p_status() {
    cudars_tests::require_gpus!(2);
    let devices = devices();
    devices[0]
        .p2p_status(&devices[1], P2pCapability::Read)
        .unwrap();
}

#[test]
fn test_get_nearest_gpus() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let _near: Vec<SystemDevice> = device.topology_nearest_gpus(TopologyLevel::Single).unwrap();
    }
}

#[test]
fn test_get_minor_number() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let _minor: u32 = device.minor_number().unwrap();
    }
}

#[test]
fn test_get_inforom_version() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let image = or_skip!(device.inforom_image_version());
        assert!(!image.is_empty());
        let version = device.inforom_version(InforomObject::Oem).unwrap();
        assert!(!version.is_empty());
        let _checksum: u32 = device.inforom_configuration_checksum().unwrap();
        match device.inforom_bbx_flush_time() {
            Ok(t) => {
                assert!(t.timestamp > 0);
                assert!(t.duration_us > 0);
            }
            Err(e)
                if matches!(
                    e.nvml_kind(),
                    Some(NvmlErrorKind::NotSupported | NvmlErrorKind::NotReady)
                ) => {}
            Err(e) => panic!("{e}"),
        }
        let part = or_skip!(device.board_part_number());
        assert!(part.is_empty() || part.trim() == part);
        device.validate_inforom().unwrap();
    }
}

#[test]
fn test_auto_boosted_clocks_enabled() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let (_current, _default): (bool, bool) = or_skip!(device.auto_boosted_clocks_enabled());
    }
}

const CLOCK_TYPES: [ClockType; 4] = [
    ClockType::Graphics,
    ClockType::Sm,
    ClockType::Memory,
    ClockType::Video,
];

fn max_mhz(device: &SystemDevice, t: ClockType) -> Result<u32> {
    let c = device.max_clocks()?;
    Ok(match t {
        ClockType::Graphics => c.graphics_mhz,
        ClockType::Sm => c.sm_mhz,
        ClockType::Memory => c.memory_mhz,
        _ => c.video_mhz,
    })
}

#[test]
fn test_clock() {
    cudars_tests::require_gpu!();
    for device in devices() {
        for clock_type in CLOCK_TYPES {
            let pstate = or_skip!(device.performance_state()).expect("a known performance state");
            let (_min, _max) = device.min_max_clock_of_pstate(clock_type, pstate).unwrap();
            let _max_mhz = or_skip!(max_mhz(&device, clock_type));
            let _current = or_skip!(device.clock(clock_type, ClockId::Current));
            match device.clock_offsets(clock_type, pstate) {
                Ok(_offsets) => {}
                Err(e)
                    if matches!(
                        e.nvml_kind(),
                        Some(
                            NvmlErrorKind::InvalidArgument
                                | NvmlErrorKind::NotFound
                                | NvmlErrorKind::NotSupported
                        )
                    ) => {}
                Err(e) => panic!("{e}"),
            }
            let _boost = or_skip!(device.max_customer_boost_clock(clock_type));
        }
    }
}

#[test]
fn test_clock_event_reasons() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let _current = or_skip!(device.current_clock_event_reasons());
        let _supported = or_skip!(device.supported_clock_event_reasons());
    }
}

#[test]
fn test_fan() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let n = device.fan_count().unwrap_or(0);
        if n == 0 {
            println!("SKIPPED: Device has no fans to test");
            return;
        }
        for i in 0..n {
            let fan = device.fan(i);
            let speed = fan.speed().unwrap();
            assert!(speed <= 200);
            or_xfail!(fan.set_speed(50));
            let check = || {
                fan.set_speed(speed)?;
                let _rpm = fan.speed_rpm()?;
                let target = fan.target_speed()?;
                assert!(speed <= target * 2);
                let (min, max) = device.fan_min_max_speed()?;
                assert!(min <= max);
                fan.control_policy()?;
                Ok::<(), cudars_core::Error>(())
            };
            let r = check();
            fan.set_default_speed().unwrap();
            r.unwrap();
        }
    }
}

#[test]
fn test_cooler() {
    cudars_tests::require_gpu!();
    for device in devices() {
        if device.fan_count().unwrap_or(0) == 0 {
            println!("SKIPPED: Device has no coolers to test");
            return;
        }
        let _cooler = or_skip!(device.cooler_info(0));
    }
}

#[test]
fn test_temperature() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let _sensor = device.temperature_celsius().unwrap();
        for threshold in [
            TemperatureThreshold::Shutdown,
            TemperatureThreshold::Slowdown,
            TemperatureThreshold::MemoryMax,
            TemperatureThreshold::GpuMax,
            TemperatureThreshold::AcousticMin,
            TemperatureThreshold::AcousticCurrent,
            TemperatureThreshold::AcousticMax,
            TemperatureThreshold::GpsCurrent,
        ] {
            let _t: u32 = or_skip!(device.temperature_threshold(threshold));
        }
        let margin = or_skip!(device.temperature_margin());
        assert!(margin >= 0);
        let thermals = or_skip!(device.thermal_settings(ThermalTarget::All));
        for sensor in thermals {
            assert!(sensor.default_min_temp >= 0, "{sensor:?}");
            assert!(
                sensor.default_max_temp >= sensor.default_min_temp,
                "{sensor:?}"
            );
            assert!(
                sensor.default_min_temp <= sensor.current_temp
                    && sensor.current_temp <= sensor.default_max_temp,
                "{sensor:?}"
            );
        }
    }
}

#[test]
fn test_pstates() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let _pstate = or_skip!(device.performance_state());
        let _pstates: Vec<u32> = device.supported_performance_states().unwrap();
        let info = device.dynamic_pstates_info().unwrap();
        assert_eq!(
            info.domains.len(),
            cudars_core::cudars_bindings::nvml::NVML_MAX_GPU_UTILIZATIONS as usize
        );
    }
}

#[test]
fn test_compute_running_processes() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let processes = or_skip!(device.compute_running_processes());
        let mig = device.is_mig_device().unwrap_or(false);
        for p in processes {
            // Python's `NotSupportedError` outside MIG is `None` here.
            assert_eq!(p.gpu_instance_id.is_some(), mig, "{p:?}");
            assert_eq!(p.compute_instance_id.is_some(), mig, "{p:?}");
        }
    }
}

#[test]
fn test_nvlink() {
    cudars_tests::require_gpu!();
    for device in devices() {
        for link in or_skip!(device.nvlinks()) {
            if !link.active {
                continue;
            }
            let _version = link.version;
        }
    }
}

#[test]
fn test_utilization() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let u = or_skip!(device.utilization());
        assert!(u.gpu_percent <= 100);
        assert!(u.memory_percent <= 100);
    }
}

#[test]
fn test_mig() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let _is_mig: bool = or_skip!(device.is_mig_device());
        let _mode = or_skip!(device.mig_mode());
        let _count: u32 = or_skip!(device.mig_device_count());
        for _mig_device in or_skip!(device.mig_devices()) {}
    }
}

#[test]
fn test_uuid() {
    cudars_tests::require_gpu!();
    for device in devices() {
        let uuid = device.uuid().unwrap();
        assert!(uuid.starts_with("GPU-") || uuid.starts_with("MIG-"));
        assert_eq!(uuid, device.uuid().unwrap());
    }
    let _ = Device::count();
}
