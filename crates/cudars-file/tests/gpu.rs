//! cuFile on the GPU: random bytes round-trip between a file and device memory,
//! both ways, synchronously and ordered on a stream. Where `nvidia-fs` is absent
//! (the usual cloud GPU), the driver is opened with compatibility mode allowed
//! and that is what runs. Without a GPU each test prints `SKIPPED`; with
//! `CUDA_TEST_REQUIRE_GPU=1` it fails.
#![cfg(target_os = "linux")]
// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::sync::OnceLock;

use cudars_core::{Device, DeviceBuffer, InvalidKind, Stream, StreamOptions};
use cudars_file::{Driver, DriverOptions, FileHandle, RegisteredBuffer};
use cudars_tests::{require_gpu, require_libs};

/// 1 MiB and an odd tail, so the last transfer is not a whole page.
const N: usize = (1 << 20) + 4099;

/// One driver for the whole test binary, opened with compatibility mode allowed;
/// `None` when the CUDA driver is older than cuFile's CUDA major, after
/// asserting that opening it is the typed error saying so.
fn driver() -> Option<Driver> {
    static DRIVER: OnceLock<Option<Driver>> = OnceLock::new();
    DRIVER
        .get_or_init(|| {
            let d = cudars_tests::needs_library_driver!(Driver::open_with(&DriverOptions {
                allow_compat_mode: Some(true),
                force_compat_mode: None,
            }))?;
            let p = d.properties().unwrap();
            println!("cuFile {:?}: {p:?}", cudars_file::version().unwrap());
            Some(d)
        })
        .clone()
}

/// The test binary's driver, or, on a CUDA driver older than cuFile's CUDA
/// major, the typed error asserted again (opening is refused each time, with
/// cuFile untouched) and the test ended.
macro_rules! cufile_driver {
    () => {
        match driver() {
            Some(d) => d,
            None => {
                assert!(cudars_tests::needs_library_driver!(Driver::open()).is_none());
                return;
            }
        }
    };
}

fn setup() -> (Device, Stream) {
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = dev.create_stream(StreamOptions::default()).unwrap();
    (dev, s)
}

fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    cudars_tests::xorshift64(seed)
        .take(n)
        .map(|x| (x >> 24) as u8)
        .collect()
}

/// Where test files go: `CUDA_RS_TEST_TMPDIR`, else the build's target
/// directory when it exists (on disk: GPUDirect Storage refuses tmpfs), else the
/// working directory (a test package copied to a GPU machine runs from its own
/// folder, on disk).
fn test_dir() -> std::path::PathBuf {
    if let Some(d) = std::env::var_os("CUDA_RS_TEST_TMPDIR") {
        return d.into();
    }
    let built = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    if built.is_dir() {
        return built.to_path_buf();
    }
    std::env::current_dir().unwrap()
}

/// A file on disk holding `data`.
fn file_with(data: &[u8]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new_in(test_dir()).unwrap();
    f.write_all(data).unwrap();
    f.as_file().sync_all().unwrap();
    f
}

fn open_rw(path: &std::path::Path) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap()
}

/// The variable that turns "cuFile cannot register files here" from a skip
/// into a failure (set it on a machine known to support cuFile).
const REQUIRE_CUFILE_VAR: &str = "CUDA_TEST_REQUIRE_CUFILE";

/// Whether cuFile can register a file in [`test_dir`]: a test that needs it
/// skips, printing why, when it cannot (or fails, with
/// `CUDA_TEST_REQUIRE_CUFILE=1`). cuFile refuses every file, even in
/// compatibility mode, where it cannot read the file system's volume
/// attributes from udev; the lent Firecracker VMs are such machines
/// (`cufile.log`: "unable to get volume attributes for fd").
fn cufile_registers_files(test: &str, driver: &Driver) -> bool {
    let probe = file_with(b"probe");
    let status = match FileHandle::register(driver, open_rw(probe.path())) {
        Ok(_) => Ok(()),
        Err(e) => Err(format!(
            "cuFile cannot register a file in {}: {}",
            test_dir().display(),
            e.report()
        )),
    };
    cudars_tests::require_or_skip(
        test,
        "a file system cuFile registers files on",
        REQUIRE_CUFILE_VAR,
        status,
    )
}

macro_rules! require_cufile_files {
    ($driver:expr) => {
        if !cufile_registers_files(&cudars_tests::current_test_name(), $driver) {
            return;
        }
    };
}

#[test]
fn driver_reports_its_mode() {
    require_gpu!();
    require_libs!("cufile");
    let driver = cufile_driver!();
    let p = driver.properties().unwrap();
    assert!(p.allow_compat_mode);
    assert_eq!(
        p.uses_compat_mode(),
        p.force_compat_mode || p.nvfs_version.is_none()
    );
}

#[test]
fn file_to_device_and_back() {
    require_gpu!();
    require_libs!("cufile");
    let driver = cufile_driver!();
    require_cufile_files!(&driver);
    let (dev, s) = setup();
    let data = random_bytes(N, 1);
    let f = file_with(&data);
    let h = FileHandle::register(&driver, File::open(f.path()).unwrap()).unwrap();
    let mut buf = DeviceBuffer::<u8>::zeroed(&dev, N, &s).unwrap();
    assert_eq!(h.read(buf.view_mut(), 0).unwrap(), N);
    assert!(buf.to_vec(&s).unwrap() == data, "the bytes read differ");
    // From an offset, into a typed view: the end of the file cuts it short.
    let mut words = DeviceBuffer::<u32>::zeroed(&dev, 1024, &s).unwrap();
    let off = N - 1000;
    assert_eq!(h.read(words.view_mut(), off as u64).unwrap(), 1000);
    let got: Vec<u8> = bytemuck::cast_slice(&words.to_vec(&s).unwrap())[..1000].to_vec();
    assert_eq!(got, data[off..]);
    // Past the end: nothing.
    assert_eq!(h.read(buf.view_mut(), N as u64 + 10).unwrap(), 0);
}

#[test]
fn device_to_file_and_back() {
    require_gpu!();
    require_libs!("cufile");
    let driver = cufile_driver!();
    require_cufile_files!(&driver);
    let (dev, s) = setup();
    let data = random_bytes(N, 2);
    let buf = DeviceBuffer::from_host(&dev, &data, &s).unwrap();
    let f = file_with(&[]);
    let h = FileHandle::register(&driver, open_rw(f.path())).unwrap();
    // The copy into `buf` is still queued: the write waits for it.
    assert_eq!(h.write(buf.view(), 0).unwrap(), N);
    assert!(std::fs::read(f.path()).unwrap() == data, "the file differs");
    // Overwrite the middle.
    let patch = DeviceBuffer::from_host(&dev, &[0xA5u8; 4096], &s).unwrap();
    assert_eq!(h.write(patch.view(), 8192).unwrap(), 4096);
    let back = std::fs::read(f.path()).unwrap();
    assert!(back[8192..12288].iter().all(|&b| b == 0xA5));
    assert_eq!(back[..8192], data[..8192]);
    assert_eq!(back[12288..], data[12288..]);
}

#[test]
fn stream_ordered_reads_and_writes() {
    require_gpu!();
    require_libs!("cufile");
    let driver = cufile_driver!();
    require_cufile_files!(&driver);
    let (dev, s) = setup();
    let data = random_bytes(N, 3);
    let f = file_with(&data);
    let h = FileHandle::register(&driver, open_rw(f.path())).unwrap();
    // Read on the stream, then copy back on the same stream: the copy sees it.
    let mut buf = DeviceBuffer::<u8>::zeroed(&dev, N, &s).unwrap();
    let pending = h.read_async(buf.view_mut(), 0, &s).unwrap();
    assert_eq!(pending.wait().unwrap(), N);
    assert!(
        buf.to_vec(&s).unwrap() == data,
        "the bytes read on the stream differ"
    );

    // Write from device memory on the stream, to a second file.
    let out = file_with(&[]);
    let h2 = FileHandle::register(&driver, open_rw(out.path())).unwrap();
    let src = DeviceBuffer::from_host(&dev, &data, &s).unwrap();
    let pending = h2.write_async(src.view(), 0, &s).unwrap();
    assert_eq!(pending.wait().unwrap(), N);
    assert!(
        std::fs::read(out.path()).unwrap() == data,
        "the file written on the stream differs"
    );

    // Dropped without waiting: the drop waits, and the bytes arrive.
    let mut again = DeviceBuffer::<u8>::zeroed(&dev, 4096, &s).unwrap();
    drop(h.read_async(again.view_mut(), 4096, &s).unwrap());
    assert_eq!(again.to_vec(&s).unwrap(), data[4096..8192]);
}

/// A registered buffer reads and writes like any other, synchronously and on a
/// stream, and is deregistered when its guard goes.
#[test]
fn registered_buffers_round_trip() {
    require_gpu!();
    require_libs!("cufile");
    let driver = cufile_driver!();
    require_cufile_files!(&driver);
    let (dev, s) = setup();
    let data = random_bytes(N, 4);
    let f = file_with(&data);
    let h = FileHandle::register(&driver, open_rw(f.path())).unwrap();
    let buf = DeviceBuffer::<u8>::zeroed(&dev, N, &s).unwrap();
    let mut reg = RegisteredBuffer::new(&driver, buf).unwrap();
    assert_eq!(h.read(reg.view_mut(), 0).unwrap(), N);
    assert_eq!(
        h.read_async(reg.view_mut(), 0, &s).unwrap().wait().unwrap(),
        N
    );
    assert_eq!(h.write(reg.view(), N as u64).unwrap(), N);
    let buf = reg.into_inner().unwrap();
    assert!(buf.to_vec(&s).unwrap() == data);
    let back = std::fs::read(f.path()).unwrap();
    assert_eq!(back.len(), 2 * N);
    assert!(
        back[N..] == data[..],
        "the registered buffer's write differs"
    );
    // Deregistered by `into_inner`: registering again works.
    let mut reg = RegisteredBuffer::new(&driver, buf).unwrap();
    let other = DeviceBuffer::<u8>::zeroed(&dev, 16, &s).unwrap();
    let _second = RegisteredBuffer::new(&driver, other).unwrap();
    assert_eq!(h.read(reg.view_mut(), 0).unwrap(), N);
}

/// Issue 26, hole 8: a leaked `PendingIo` let safe code drop the `FileHandle`
/// (deregistering it and closing its descriptor, which the OS then hands to the
/// next file opened) while the transfer was still queued. The transfer now
/// holds the registration itself: the handle's drop waits for it, and the bytes
/// come from the right file even when a new file takes the descriptor number.
#[test]
fn a_leaked_pending_io_keeps_its_file_registered() {
    require_gpu!();
    require_libs!("cufile");
    let driver = cufile_driver!();
    require_cufile_files!(&driver);
    let (dev, s) = setup();
    let data = random_bytes(N, 5);
    let f = file_with(&data);
    let decoy = file_with(&random_bytes(N, 6));
    let h = FileHandle::register(&driver, open_rw(f.path())).unwrap();
    let mut buf = DeviceBuffer::<u8>::zeroed(&dev, N, &s).unwrap();
    // Hold the stream, so the read is still queued when the handle goes.
    let delay = std::time::Duration::from_millis(300);
    // Timed from before the host function starts sleeping.
    let start = std::time::Instant::now();
    s.launch_host_func(move || std::thread::sleep(delay))
        .unwrap();
    std::mem::forget(h.read_async(buf.view_mut(), 0, &s).unwrap());
    drop(h);
    assert!(
        start.elapsed() >= delay,
        "the handle's drop waits for the transfer queued through it"
    );
    // The descriptor number is free again: another file may take it.
    let _reuse = open_rw(decoy.path());
    assert!(
        buf.to_vec(&s).unwrap() == data,
        "the leaked read came from its own file"
    );
}

/// Issue 26, hole 8: `RegisteredBuffer` owns its array, so leaking it leaks
/// the registration with the memory (it cannot be freed while registered); and
/// its drop deregisters only after the transfers queued on it.
#[test]
fn a_registered_buffer_outlives_its_transfers() {
    require_gpu!();
    require_libs!("cufile");
    let driver = cufile_driver!();
    require_cufile_files!(&driver);
    let (dev, s) = setup();
    let data = random_bytes(N, 7);
    let f = file_with(&data);
    let h = FileHandle::register(&driver, open_rw(f.path())).unwrap();
    let buf = DeviceBuffer::<u8>::zeroed(&dev, N, &s).unwrap();
    let mut reg = RegisteredBuffer::new(&driver, buf).unwrap();
    let delay = std::time::Duration::from_millis(300);
    // Timed from before the host function starts sleeping.
    let start = std::time::Instant::now();
    s.launch_host_func(move || std::thread::sleep(delay))
        .unwrap();
    std::mem::forget(h.read_async(reg.view_mut(), 0, &s).unwrap());
    let buf = reg.into_inner().unwrap();
    assert!(
        start.elapsed() >= delay,
        "deregistration waits for the transfers on the array"
    );
    assert!(buf.to_vec(&s).unwrap() == data);
    // Leaked: the array stays allocated and registered; nothing else happens.
    std::mem::forget(RegisteredBuffer::new(&driver, buf).unwrap());
}

#[test]
fn bad_arguments_are_refused_before_cufile() {
    require_gpu!();
    require_libs!("cufile");
    let driver = cufile_driver!();
    require_cufile_files!(&driver);
    let (dev, s) = setup();
    let f = file_with(&[0u8; 16]);
    let h = FileHandle::register(&driver, File::open(f.path()).unwrap()).unwrap();
    let mut buf = DeviceBuffer::<u8>::zeroed(&dev, 16, &s).unwrap();
    let e = h.read(buf.view_mut(), u64::MAX).unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange), "{e}");
    let e = h.read_async(buf.view_mut(), u64::MAX, &s).unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange), "{e}");
    // A directory is not a file cuFile can register.
    let dir = File::open(test_dir()).unwrap();
    let e = FileHandle::register(&driver, dir).unwrap_err();
    assert!(e.status().is_some(), "{e:?}");
    println!("{}", e.report());
}
