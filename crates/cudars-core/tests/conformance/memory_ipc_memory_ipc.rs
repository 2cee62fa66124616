//! `cuda_core/tests/memory_ipc/test_memory_ipc.py` of `cuda.core` (the pinned commit
//! of `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says, and the
//! helpers the other `memory_ipc_*` modules share.
//!
//! Python sends objects to `multiprocessing` children through queues, pickled: a
//! memory resource travels as its allocation handle (a file descriptor) and its
//! UUID, and is imported once per process and registered; a buffer as its IPC
//! descriptor, imported from the registered resource. Here the child is this test
//! binary re-run for the same test ([`spawn`]) with the pool's descriptor
//! inherited and the rest (the pool's UUID, buffer descriptors) in environment
//! variables: `DeviceMemoryResource::import_registered(&dev, fd, uuid)` and
//! `Buffer::from_registered_ipc_descriptor(uuid, &desc, &stream)` are Python's
//! unpickling; `from_allocation_handle` is `import(&dev, fd)` and
//! `Buffer.from_ipc_descriptor(mr, desc)` is `Buffer::from_ipc_descriptor(&mr, &desc,
//! &stream)`. Two children run at once, as Python's do. The `ipc_memory_resource`
//! fixture's two cases are `DeviceMR` (a device pool) and `PinnedMR` (a pinned host
//! pool), each of 2 MiB and IPC-enabled ([`Mr`]); `PatternGen` is [`pattern`]
//! (bytes `seed + i`), written with `copy_from_host` and read back with
//! `copy_to_host`. Linux; every test needs a GPU.

use std::os::fd::{AsFd as _, AsRawFd as _, BorrowedFd, OwnedFd};
use std::sync::Arc;

use cudars_core::{
    Buffer, Device, DeviceMemoryPoolOptions, DeviceMemoryResource, IpcBufferDescriptor,
    PinnedMemoryResource, PinnedMemoryResourceOptions, PoolUuid, Result, Stream, StreamOptions,
};
use cudars_tests::{hex, unhex};

pub(crate) const NBYTES: usize = 64;
pub(crate) const POOL_SIZE: usize = 2_097_152;

/// The environment variable naming the child's role; unset in the parent.
pub(crate) const ROLE: &str = "CONFORMANCE_IPC_ROLE";

/// The `ipc_memory_resource` fixture's cases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Device,
    Pinned,
}

/// An IPC-enabled pool of either kind.
#[derive(Clone)]
pub(crate) enum Mr {
    Device(Arc<DeviceMemoryResource>),
    Pinned(Arc<PinnedMemoryResource>),
}

impl Mr {
    /// The `ipc_memory_resource` fixture.
    pub(crate) fn new(kind: Kind, dev: &Device) -> Self {
        match kind {
            Kind::Device => Mr::Device(Arc::new(
                DeviceMemoryResource::new_pool(
                    dev,
                    DeviceMemoryPoolOptions {
                        max_size: POOL_SIZE,
                        ipc_enabled: true,
                        ..Default::default()
                    },
                )
                .unwrap(),
            )),
            Kind::Pinned => Mr::Pinned(Arc::new(
                PinnedMemoryResource::new(
                    dev,
                    PinnedMemoryResourceOptions {
                        max_size: POOL_SIZE,
                        ipc_enabled: true,
                        ..Default::default()
                    },
                )
                .unwrap(),
            )),
        }
    }

    pub(crate) fn allocate(&self, n: usize, s: &Stream) -> Result<Buffer> {
        match self {
            Mr::Device(m) => m.allocate(n, s),
            Mr::Pinned(m) => m.allocate(n, s),
        }
    }

    /// `mr.allocation_handle`.
    pub(crate) fn export_handle(&self) -> OwnedFd {
        match self {
            Mr::Device(m) => m.export_handle(),
            Mr::Pinned(m) => m.export_handle(),
        }
        .unwrap()
    }

    pub(crate) fn uuid(&self) -> PoolUuid {
        match self {
            Mr::Device(m) => m.uuid(),
            Mr::Pinned(m) => m.uuid(),
        }
        .unwrap()
    }

    pub(crate) fn is_mapped(&self) -> bool {
        match self {
            Mr::Device(m) => m.is_mapped(),
            Mr::Pinned(m) => m.is_mapped(),
        }
    }

    /// The unpickled resource: imported once per process, registered.
    pub(crate) fn import_registered(
        kind: Kind,
        dev: &Device,
        fd: BorrowedFd<'_>,
        uuid: PoolUuid,
    ) -> Self {
        match kind {
            Kind::Device => {
                Mr::Device(DeviceMemoryResource::import_registered(dev, fd, uuid).unwrap())
            }
            Kind::Pinned => {
                Mr::Pinned(PinnedMemoryResource::import_registered(dev, fd, uuid).unwrap())
            }
        }
    }

    /// `from_allocation_handle(device, handle)`.
    pub(crate) fn import(kind: Kind, dev: &Device, fd: BorrowedFd<'_>) -> Self {
        match kind {
            Kind::Device => Mr::Device(Arc::new(DeviceMemoryResource::import(dev, fd).unwrap())),
            Kind::Pinned => Mr::Pinned(Arc::new(PinnedMemoryResource::import(dev, fd).unwrap())),
        }
    }

    /// `Buffer.from_ipc_descriptor(mr, desc, stream)`.
    pub(crate) fn import_buffer(&self, desc: &IpcBufferDescriptor, s: &Stream) -> Result<Buffer> {
        match self {
            Mr::Device(m) => Buffer::from_ipc_descriptor(m, desc, s),
            Mr::Pinned(m) => Buffer::from_ipc_descriptor(m, desc, s),
        }
    }
}

/// `PatternGen`'s pattern of `seed`: byte `i` is `seed + i`.
pub(crate) fn pattern(seed: u8) -> Vec<u8> {
    (0..NBYTES).map(|i| seed.wrapping_add(i as u8)).collect()
}

/// `pgen.fill_buffer(buffer, seed)`.
pub(crate) fn fill(buffer: &mut Buffer, seed: u8, s: &Stream) {
    assert_eq!(buffer.size(), NBYTES);
    buffer.copy_from_host(&pattern(seed), s).unwrap();
}

/// `pgen.verify_buffer(buffer, seed)`.
pub(crate) fn verify(buffer: &Buffer, seed: u8, s: &Stream) {
    assert_eq!(buffer.size(), NBYTES);
    let mut got = vec![0u8; NBYTES];
    buffer.copy_to_host(&mut got, s).unwrap();
    s.sync().unwrap();
    assert_eq!(
        got,
        pattern(seed),
        "the buffer does not hold pattern {seed}"
    );
}

/// The `ipc_device` fixture (and the child's `device.set_current()`).
pub(crate) fn ipc_device() -> Device {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    d
}

pub(crate) fn new_stream(d: &Device) -> Stream {
    d.create_stream(StreamOptions::default()).unwrap()
}

/// A child process: this test binary re-run for `test`, inheriting `fds`, with
/// `role` and `envs` (hex strings) set (as `cudars_tests::run_test_with_fds`, and
/// with `--include-ignored`). Runs to its end; panics unless its test passed.
pub(crate) fn spawn(test: &str, role: &str, fds: &[BorrowedFd<'_>], envs: &[(&str, String)]) {
    let mut all: Vec<(&str, String)> = vec![(ROLE, role.to_owned())];
    all.extend(envs.iter().cloned());
    let fd_list: Vec<String> = fds.iter().map(|f| f.as_raw_fd().to_string()).collect();
    all.push(("CONFORMANCE_IPC_FDS", fd_list.join(",")));
    for fd in fds {
        // SAFETY: clearing FD_CLOEXEC on a descriptor the caller holds open.
        let rc = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, 0) };
        assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    }
    // `--include-ignored`: the child of a test marked `#[ignore = "differs: …"]`
    // runs when its parent was asked to.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--include-ignored"])
        .envs(all.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child failed: {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The child's role, when this process is a child.
pub(crate) fn role() -> Option<String> {
    std::env::var(ROLE).ok()
}

/// The child's `i`th inherited descriptor.
pub(crate) fn child_fd(i: usize) -> BorrowedFd<'static> {
    let fds = std::env::var("CONFORMANCE_IPC_FDS").unwrap();
    let raw: i32 = fds.split(',').nth(i).unwrap().parse().unwrap();
    // SAFETY: the parent left this descriptor open (no close-on-exec) for the
    // child, which never closes it.
    unsafe { BorrowedFd::borrow_raw(raw) }
}

pub(crate) fn env_hex(name: &str) -> Vec<u8> {
    unhex(&std::env::var(name).unwrap())
}

pub(crate) fn env_uuid() -> PoolUuid {
    PoolUuid(env_hex("CONFORMANCE_IPC_UUID").try_into().unwrap())
}

pub(crate) fn env_desc(name: &str) -> IpcBufferDescriptor {
    IpcBufferDescriptor::from_bytes(&env_hex(name)).unwrap()
}

pub(crate) fn desc_hex(b: &Buffer) -> String {
    hex(&b.ipc_descriptor().unwrap().to_bytes())
}

pub(crate) fn uuid_hex(mr: &Mr) -> String {
    hex(&mr.uuid().0)
}

/// The child of `TestIpcMempool`: verify the parent's pattern, write pattern 1.
fn ipc_mempool_child(kind: Kind) {
    let dev = ipc_device();
    let s = new_stream(&dev);
    let mr = Mr::import_registered(kind, &dev, child_fd(0), env_uuid());
    assert!(mr.is_mapped());
    let mut buffer =
        Buffer::from_registered_ipc_descriptor(env_uuid(), &env_desc("BUF"), &s).unwrap();
    assert!(buffer.is_mapped());
    verify(&buffer, 0, &s);
    fill(&mut buffer, 1, &s);
    drop(buffer);
    s.sync().unwrap();
}

fn ipc_mempool(kind: Kind, test: &str) {
    if role().is_some() {
        return ipc_mempool_child(kind);
    }
    let device = ipc_device();
    let s = new_stream(&device);
    let mr = Mr::new(kind, &device);
    assert!(!mr.is_mapped());
    let mut buffer = mr.allocate(NBYTES, &s).unwrap();
    assert!(!buffer.is_mapped());
    fill(&mut buffer, 0, &s);
    let fd = mr.export_handle();
    spawn(
        test,
        "child",
        &[fd.as_fd()],
        &[
            ("CONFORMANCE_IPC_UUID", uuid_hex(&mr)),
            ("BUF", desc_hex(&buffer)),
        ],
    );
    verify(&buffer, 1, &s);
}

#[test]
fn TestIpcMempool__test_main__DeviceMR() {
    if role().is_none() {
        cudars_tests::require_gpu!();
    }
    ipc_mempool(
        Kind::Device,
        "memory_ipc_memory_ipc::TestIpcMempool__test_main__DeviceMR",
    );
}

#[test]
fn TestIpcMempool__test_main__PinnedMR() {
    if role().is_none() {
        cudars_tests::require_gpu!();
    }
    ipc_mempool(
        Kind::Pinned,
        "memory_ipc_memory_ipc::TestIpcMempool__test_main__PinnedMR",
    );
}

/// The child of `TestIPCMempoolMultiple`: import both buffers, fill the one of
/// its seed.
fn mempool_multiple_child(kind: Kind) {
    let dev = ipc_device();
    let s = new_stream(&dev);
    let _mr = Mr::import_registered(kind, &dev, child_fd(0), env_uuid());
    let seed: u8 = std::env::var("SEED").unwrap().parse().unwrap();
    let mut b1 = Buffer::from_registered_ipc_descriptor(env_uuid(), &env_desc("BUF1"), &s).unwrap();
    let mut b2 = Buffer::from_registered_ipc_descriptor(env_uuid(), &env_desc("BUF2"), &s).unwrap();
    match seed {
        1 => fill(&mut b1, 1, &s),
        _ => fill(&mut b2, 2, &s),
    }
    drop((b1, b2));
    s.sync().unwrap();
}

fn mempool_multiple(kind: Kind, test: &str) {
    if role().is_some() {
        return mempool_multiple_child(kind);
    }
    let device = ipc_device();
    let s = new_stream(&device);
    let mr = Mr::new(kind, &device);
    let buffer1 = mr.allocate(NBYTES, &s).unwrap();
    let buffer2 = mr.allocate(NBYTES, &s).unwrap();
    s.sync().unwrap();
    let fd = mr.export_handle();
    let envs = |seed: &str| {
        vec![
            ("CONFORMANCE_IPC_UUID", uuid_hex(&mr)),
            ("BUF1", desc_hex(&buffer1)),
            ("BUF2", desc_hex(&buffer2)),
            ("SEED", seed.to_owned()),
        ]
    };
    let (e1, e2) = (envs("1"), envs("2"));
    let fd = fd.as_fd();
    std::thread::scope(|sc| {
        let a = sc.spawn(move || spawn(test, "child", &[fd], &e1));
        let b = sc.spawn(move || spawn(test, "child", &[fd], &e2));
        a.join().unwrap();
        b.join().unwrap();
    });
    verify(&buffer1, 1, &s);
    verify(&buffer2, 2, &s);
}

#[test]
fn TestIPCMempoolMultiple__test_main__DeviceMR() {
    if role().is_none() {
        cudars_tests::require_gpu!();
    }
    mempool_multiple(
        Kind::Device,
        "memory_ipc_memory_ipc::TestIPCMempoolMultiple__test_main__DeviceMR",
    );
}

#[test]
fn TestIPCMempoolMultiple__test_main__PinnedMR() {
    if role().is_none() {
        cudars_tests::require_gpu!();
    }
    mempool_multiple(
        Kind::Pinned,
        "memory_ipc_memory_ipc::TestIPCMempoolMultiple__test_main__PinnedMR",
    );
}

/// The child of the `TestIPCSharedAllocationHandle…` tests: import the pool from
/// its handle (registered or not), import its buffer, fill it with its seed.
fn shared_handle_child(kind: Kind, objects: bool) {
    let dev = ipc_device();
    let s = new_stream(&dev);
    let seed: u8 = std::env::var("SEED").unwrap().parse().unwrap();
    let desc = env_desc("BUF");
    let mut buffer = if objects {
        // Registering the resource, then the buffer object.
        let _mr = Mr::import_registered(kind, &dev, child_fd(0), env_uuid());
        Buffer::from_registered_ipc_descriptor(env_uuid(), &desc, &s).unwrap()
    } else {
        let mr = Mr::import(kind, &dev, child_fd(0));
        mr.import_buffer(&desc, &s).unwrap()
    };
    fill(&mut buffer, seed, &s);
    drop(buffer);
    s.sync().unwrap();
}

fn shared_handle(kind: Kind, objects: bool, test: &str) {
    if role().is_some() {
        return shared_handle_child(kind, objects);
    }
    let device = ipc_device();
    let s = new_stream(&device);
    let mr = Mr::new(kind, &device);
    // One handle for both children.
    let alloc_handle = mr.export_handle();
    let buffer1 = mr.allocate(NBYTES, &s).unwrap();
    let buffer2 = mr.allocate(NBYTES, &s).unwrap();
    s.sync().unwrap();
    let e1 = vec![
        ("CONFORMANCE_IPC_UUID", uuid_hex(&mr)),
        ("BUF", desc_hex(&buffer1)),
        ("SEED", "0".to_owned()),
    ];
    let e2 = vec![
        ("CONFORMANCE_IPC_UUID", uuid_hex(&mr)),
        ("BUF", desc_hex(&buffer2)),
        ("SEED", "1".to_owned()),
    ];
    let fd = alloc_handle.as_fd();
    std::thread::scope(|sc| {
        let a = sc.spawn(move || spawn(test, "child", &[fd], &e1));
        let b = sc.spawn(move || spawn(test, "child", &[fd], &e2));
        a.join().unwrap();
        b.join().unwrap();
    });
    verify(&buffer1, 0, &s);
    verify(&buffer2, 1, &s);
}

#[test]
fn TestIPCSharedAllocationHandleAndBufferDescriptors__test_main__DeviceMR() {
    if role().is_none() {
        cudars_tests::require_gpu!();
    }
    shared_handle(
        Kind::Device,
        false,
        "memory_ipc_memory_ipc::TestIPCSharedAllocationHandleAndBufferDescriptors__test_main__DeviceMR",
    );
}

#[test]
fn TestIPCSharedAllocationHandleAndBufferDescriptors__test_main__PinnedMR() {
    if role().is_none() {
        cudars_tests::require_gpu!();
    }
    shared_handle(
        Kind::Pinned,
        false,
        "memory_ipc_memory_ipc::TestIPCSharedAllocationHandleAndBufferDescriptors__test_main__PinnedMR",
    );
}

#[test]
fn TestIPCSharedAllocationHandleAndBufferObjects__test_main__DeviceMR() {
    if role().is_none() {
        cudars_tests::require_gpu!();
    }
    shared_handle(
        Kind::Device,
        true,
        "memory_ipc_memory_ipc::TestIPCSharedAllocationHandleAndBufferObjects__test_main__DeviceMR",
    );
}

#[test]
fn TestIPCSharedAllocationHandleAndBufferObjects__test_main__PinnedMR() {
    if role().is_none() {
        cudars_tests::require_gpu!();
    }
    shared_handle(
        Kind::Pinned,
        true,
        "memory_ipc_memory_ipc::TestIPCSharedAllocationHandleAndBufferObjects__test_main__PinnedMR",
    );
}
