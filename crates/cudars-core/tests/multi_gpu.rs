//! Two GPUs: peer access, copies between devices, a memory pool and a virtual
//! allocation shared with the other device, each checked by a kernel on the other
//! device. Skips on machines with fewer than two GPUs (printing why), unless
//! `CUDA_TEST_REQUIRE_MULTI_GPU=1`, which makes that a failure.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use cudars_core::{
    Buffer, CompileTarget, Device, DeviceMemoryPoolOptions, DeviceMemoryResource, Error, Graph,
    GraphAllocOptions, GraphCompleteOptions, GraphNodeParams, Kernel, LaunchConfig, Location,
    Program, ProgramOptions, SourceCode, Stream, StreamOptions, launch,
};
use cudars_tests::{require_gpus, require_libs};

const SRC: &str = r#"
extern "C" __global__ void add_one(unsigned *x, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1;
}
extern "C" __global__ void set_to(unsigned *x, unsigned v, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = v;
}
extern "C" __global__ void copy_from(unsigned *dst, const unsigned *src, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}
"#;

fn kernel(d: &Device) -> Kernel {
    kernel_named(d, "add_one")
}

fn kernel_named(d: &Device, name: &str) -> Kernel {
    Program::new(
        SourceCode::Cxx(SRC),
        ProgramOptions {
            arch: Some(d.arch().unwrap()),
            ..Default::default()
        },
    )
    .unwrap()
    .compile(CompileTarget::Cubin, &[])
    .unwrap()
    .get_kernel(name)
    .unwrap()
}

fn two() -> (Device, Device, Stream, Stream) {
    let (d0, d1) = (Device::new(0).unwrap(), Device::new(1).unwrap());
    let s0 = d0.create_stream(StreamOptions::default()).unwrap();
    let s1 = d1.create_stream(StreamOptions::default()).unwrap();
    (d0, d1, s0, s1)
}

/// Adds one to each of the `n` u32s of `buf` with a kernel on `s`'s device.
fn add_one_on(k: &Kernel, buf: &Buffer, s: &Stream) {
    let n = (buf.size() / 4) as u32;
    // SAFETY: the kernel touches x[0..n], which `buf` holds, and the caller made it
    // accessible to the stream's device.
    unsafe { launch(s, &LaunchConfig::for_elements(n.into(), 256), k, &[buf, &n]) }.unwrap();
    s.sync().unwrap();
}

/// cuda.core #2311: a device's methods act on that device while another is
/// current, and a stream waits for a stream of a device that is not current
/// (the ordering event is made in the waited-on stream's context).
#[test]
fn device_methods_and_waits_reach_a_device_that_is_not_current() {
    require_gpus!(2);
    let (d0, d1) = (Device::new(0).unwrap(), Device::new(1).unwrap());
    d0.set_current().unwrap();
    let s1 = d1.create_stream(StreamOptions::default()).unwrap();
    assert_eq!(s1.device(), &d1);
    let e1 = d1.create_event(Default::default()).unwrap();
    assert_eq!(e1.device(), &d1);
    let mut b1 = d1.allocate(1 << 20, &s1).unwrap();
    assert_eq!(b1.device(), &d1);
    d1.sync().unwrap();
    let (free, total) = d1.memory_info().unwrap();
    assert!(free <= total && total == d1.total_memory().unwrap());
    // Device 0 current; the stream waited for is device 1's, and the other way.
    d0.set_current().unwrap();
    let s0 = d0.create_stream(StreamOptions::default()).unwrap();
    let k1 = kernel(&d1);
    let n = (b1.size() / 4) as u32;
    b1.fill_u32(41, &s1).unwrap();
    // SAFETY: the kernel touches x[0..n], which `b1` (device 1's) holds.
    unsafe {
        launch(
            &s1,
            &LaunchConfig::for_elements(n.into(), 256),
            &k1,
            &[&b1, &n],
        )
    }
    .unwrap();
    d0.set_current().unwrap();
    s0.wait_stream(&s1).unwrap();
    let mut a0 = d0.allocate(b1.size(), &s0).unwrap();
    a0.copy_from(&b1, &s0).unwrap();
    let mut h = vec![0u32; n as usize];
    a0.copy_to_host(&mut h, &s0).unwrap();
    assert!(h.iter().all(|&x| x == 42), "{:?}", &h[..4]);
    d1.set_current().unwrap();
    s1.wait_stream(&s0).unwrap();
    s1.sync().unwrap();
}

/// cuda.core's `GraphAllocOptions(device=1, peer_access=[0])`: a graph of
/// device 0 allocates on device 1 and its device-0 kernels use that memory.
#[test]
fn a_graph_allocates_on_the_other_device_for_its_own() {
    require_gpus!(2);
    let (d0, d1, s0, _s1) = two();
    d0.enable_peer_access(&d1).unwrap();
    let (set_to, add_one, copy_from) = (
        kernel_named(&d0, "set_to"),
        kernel_named(&d0, "add_one"),
        kernel_named(&d0, "copy_from"),
    );
    let n = 1024u32;
    let out = d0.allocate(n as usize * 4, &s0).unwrap();
    let ctx = d0.context().unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let a = g
        .add_mem_alloc_with(
            &[],
            n as usize * 4,
            &GraphAllocOptions::new()
                .location(Location::Device(d1))
                .peer_access([d0]),
        )
        .unwrap();
    match a.node.params(&g).unwrap() {
        GraphNodeParams::MemAlloc(info) => assert_eq!(info.device, Some(1)),
        p => panic!("an alloc node read back as {p:?}"),
    }
    let cfg = LaunchConfig::for_elements(n.into(), 256);
    // SAFETY: each kernel touches n u32s of `a` (device 1's memory, which device
    // 0 may use, alive from its alloc node to its free node) and of `out`.
    let last = unsafe {
        let k1 = g
            .add_kernel(&[a.node], &cfg, &set_to, &[&a.ptr, &41u32, &n])
            .unwrap();
        let k2 = g.add_kernel(&[k1], &cfg, &add_one, &[&a.ptr, &n]).unwrap();
        g.add_kernel(&[k2], &cfg, &copy_from, &[&out, &a.ptr, &n])
            .unwrap()
    };
    g.add_mem_free(&[last], &a).unwrap();
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    exec.launch(&s0).unwrap();
    let mut h = vec![0u32; n as usize];
    out.copy_to_host(&mut h, &s0).unwrap();
    assert!(h.iter().all(|&x| x == 42), "{:?}", &h[..4]);
}

#[test]
fn copies_between_devices_and_peer_access() {
    require_gpus!(2);
    let (d0, d1, s0, s1) = two();
    assert!(d0.can_access_peer(&d1).unwrap() && d1.can_access_peer(&d0).unwrap());
    d0.enable_peer_access(&d1).unwrap();
    d1.enable_peer_access(&d0).unwrap();
    // Enabling twice is not an error.
    d0.enable_peer_access(&d1).unwrap();
    let mut a = d0.allocate(8 << 20, &s0).unwrap();
    a.fill_u32(0x0d0d_0d0d, &s0).unwrap();
    s0.sync().unwrap();
    let mut b = d1.allocate(8 << 20, &s1).unwrap();
    b.copy_from(&a, &s1).unwrap();
    let mut h = vec![0u32; 2 << 20];
    b.copy_to_host(&mut h, &s1).unwrap();
    assert!(h.iter().all(|&x| x == 0x0d0d_0d0d));
}

#[test]
fn a_pool_is_shared_with_the_other_device_and_revoked() {
    require_gpus!(2);
    require_libs!("nvrtc");
    let (d0, d1, s0, s1) = two();
    let k = kernel(&d1);
    let pool =
        Arc::new(DeviceMemoryResource::new_pool(&d0, DeviceMemoryPoolOptions::default()).unwrap());
    assert_eq!(pool.peer_accessible_by().unwrap(), vec![]);
    // As cuda.core: the pool's own device is left out, a repeat counts once.
    pool.set_peer_accessible_by(&[d0]).unwrap();
    assert_eq!(pool.peer_accessible_by().unwrap(), vec![]);
    pool.set_peer_accessible_by(&[d1, d0, d1]).unwrap();
    assert_eq!(pool.peer_accessible_by().unwrap(), vec![d1]);
    let mut buf = pool.allocate(1 << 20, &s0).unwrap();
    buf.fill_u32(41, &s0).unwrap();
    s0.sync().unwrap();
    // A kernel on device 1 writes device 0's pool memory.
    add_one_on(&k, &buf, &s1);
    let mut h = vec![0u32; 1 << 18];
    buf.copy_to_host(&mut h, &s0).unwrap();
    assert!(h.iter().all(|&x| x == 42));
    pool.set_peer_accessible_by(&[]).unwrap();
    assert_eq!(pool.peer_accessible_by().unwrap(), vec![]);
}

#[cfg(feature = "vmm")]
#[test]
fn a_virtual_allocation_is_mapped_for_the_other_device() {
    use cudars_core::{Granularity, VirtualMemoryOptions, VirtualMemoryResource};

    require_gpus!(2);
    require_libs!("nvrtc");
    let (d0, d1, s0, s1) = two();
    let k = kernel(&d1);
    let vmm = Arc::new(
        VirtualMemoryResource::new(
            &d0,
            VirtualMemoryOptions {
                reserve: 0,
                granularity: Granularity::Recommended,
                peer_access: vec![d1],
                ..Default::default()
            },
        )
        .unwrap(),
    );
    let g = vmm.granularity();
    let mut buf = vmm.allocate(g, &s0).unwrap();
    buf.fill_u32(9, &s0).unwrap();
    s0.sync().unwrap();
    add_one_on(&k, &buf, &s1);
    // Grown in place: the new part is mapped for device 1 too.
    vmm.grow(&mut buf, 2 * g).unwrap();
    buf.fill_u32(99, &s0).unwrap();
    s0.sync().unwrap();
    add_one_on(&k, &buf, &s1);
    let mut h = vec![0u32; 2 * g / 4];
    buf.copy_to_host(&mut h, &s0).unwrap();
    assert!(h.iter().all(|&x| x == 100));
}

/// The child's side of [`a_pool_of_device_0_is_imported_and_written_by_device_1_in_another_process`].
/// `IPC_MODE=wrong` imports naming device 1 and expects the typed error; otherwise
/// it imports device 0's pool, grants device 1 access, and adds one with a kernel on
/// device 1 after the exporter's event. Each mode imports once per process.
#[cfg(all(unix, feature = "ipc"))]
fn ipc_child() {
    use cudars_tests::unhex;
    use std::os::fd::BorrowedFd;
    let step = |s: &str| eprintln!("ipc child: {s}");
    let fd: i32 = std::env::var("IPC_FD").unwrap().parse().unwrap();
    let (d0, d1, s0, s1) = two();
    // SAFETY: the parent left this descriptor open (no close-on-exec) for us.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    if std::env::var("IPC_MODE").as_deref() == Ok("wrong") {
        step("importing, naming device 1");
        let r = DeviceMemoryResource::import(&d1, fd);
        assert!(matches!(r, Err(Error::InvalidArgument { .. })), "{r:?}");
        step("refused as expected");
        return;
    }
    let desc =
        cudars_core::IpcBufferDescriptor::from_bytes(&unhex(&std::env::var("IPC_DESC").unwrap()))
            .unwrap();
    let ev: [u8; 64] = unhex(&std::env::var("IPC_EVENT").unwrap())
        .try_into()
        .unwrap();
    let k = kernel(&d1);
    step("importing on device 0");
    let pool = Arc::new(DeviceMemoryResource::import(&d0, fd).unwrap());
    // The exporter's grants do not carry over to this process.
    step("reading access");
    assert_eq!(pool.peer_accessible_by().unwrap(), vec![]);
    step("granting device 1");
    pool.set_peer_accessible_by(&[d1]).unwrap();
    step("importing the buffer");
    let buf = Buffer::from_ipc_descriptor(&pool, &desc, &s0).unwrap();
    step("opening the event");
    let done = cudars_core::Event::from_ipc_handle(&d0.context().unwrap(), &ev).unwrap();
    // The exporter's event, waited for on its own device's stream (another
    // device's stream is refused: the driver crashed there); device 1's stream
    // then waits for that stream.
    assert!(matches!(
        s1.wait_event(&done),
        Err(Error::Unsupported { .. })
    ));
    s0.wait_event(&done).unwrap();
    step("waiting for the exporter's work");
    s1.wait_stream(&s0).unwrap();
    step("launching on device 1");
    add_one_on(&k, &buf, &s1);
    drop(buf);
    s0.sync().unwrap();
    step("done");
}

/// IPC between two processes on different GPUs: this process exports a pool of
/// device 0; a child process imports it and writes it with a kernel on device 1
/// (and another child shows that naming the wrong device is a typed error).
#[cfg(all(unix, feature = "ipc"))]
#[test]
fn a_pool_of_device_0_is_imported_and_written_by_device_1_in_another_process() {
    use cudars_tests::hex;
    use std::os::fd::{AsFd as _, AsRawFd as _};
    const NAME: &str = "a_pool_of_device_0_is_imported_and_written_by_device_1_in_another_process";
    if std::env::var_os("IPC_FD").is_some() {
        ipc_child();
        return;
    }
    require_gpus!(2);
    require_libs!("nvrtc");
    let (d0, d1, s0, _s1) = two();
    let pool = Arc::new(
        DeviceMemoryResource::new_pool(
            &d0,
            DeviceMemoryPoolOptions {
                ipc_enabled: true,
                ..Default::default()
            },
        )
        .unwrap(),
    );
    // A grant here, to show that the child must make its own.
    pool.set_peer_accessible_by(&[d1]).unwrap();
    let mut buf = pool.allocate(4 << 20, &s0).unwrap();
    buf.fill_u32(7, &s0).unwrap();
    let ev = cudars_core::Event::new(
        &d0,
        cudars_core::EventOptions {
            ipc: true,
            ..Default::default()
        },
    )
    .unwrap();
    ev.record(&s0).unwrap();
    s0.sync().unwrap();
    let fd = pool.export_handle().unwrap();
    for mode in ["wrong", "right"] {
        cudars_tests::run_test_with_fd(
            NAME,
            fd.as_fd(),
            &[
                ("IPC_MODE", mode.to_owned()),
                ("IPC_FD", fd.as_raw_fd().to_string()),
                ("IPC_DESC", hex(&buf.ipc_descriptor().unwrap().to_bytes())),
                ("IPC_EVENT", hex(&ev.ipc_handle().unwrap())),
            ],
        );
    }
    let mut h = vec![0u32; 1 << 20];
    buf.copy_to_host(&mut h, &s0).unwrap();
    assert!(
        h.iter().all(|&x| x == 8),
        "device 1's kernel in the child wrote {}",
        h[0]
    );
}

/// Peer copies of pool memory in both directions, with the stream on either
/// device, and without any access granted (`cuMemcpyPeerAsync` needs none).
#[test]
fn pool_buffers_copy_across_devices_without_access_either_stream() {
    require_gpus!(2);
    let (d0, d1, s0, s1) = two();
    let mut a = d0.allocate(1 << 20, &s0).unwrap();
    a.fill_u32(0xa0a0_a0a0, &s0).unwrap();
    s0.sync().unwrap();
    let mut b = d1.allocate(1 << 20, &s1).unwrap();
    // Stream of the source's device.
    b.copy_from(&a, &s0).unwrap();
    s0.sync().unwrap();
    let mut h = vec![0u32; 1 << 18];
    b.copy_to_host(&mut h, &s1).unwrap();
    assert!(h.iter().all(|&x| x == 0xa0a0_a0a0));
    b.fill_u32(0x0b0b_0b0b, &s1).unwrap();
    s1.sync().unwrap();
    // Stream of the destination's device, the other way.
    a.copy_from(&b, &s0).unwrap();
    a.copy_to_host(&mut h, &s0).unwrap();
    assert!(h.iter().all(|&x| x == 0x0b0b_0b0b));
    // A stream of neither device is refused (only with a third device to offer);
    // a source larger than the destination is refused.
    let small = d1.allocate(1 << 10, &s1).unwrap();
    let mut smaller = d0.allocate(1 << 9, &s0).unwrap();
    assert!(matches!(
        smaller.copy_from(&small, &s0),
        Err(Error::InvalidArgument { .. })
    ));
}
