//! Two GPUs: peer access, copies between devices, a memory pool and a virtual
//! allocation shared with the other device, each checked by a kernel on the other
//! device. Skips on machines with fewer than two GPUs (printing why), unless
//! `CUDA_TEST_REQUIRE_MULTI_GPU=1`, which makes that a failure.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use cuda_core::{
    Buffer, CompileTarget, Device, DeviceMemoryPoolOptions, DeviceMemoryResource, Error,
    Granularity, Kernel, LaunchConfig, Program, ProgramOptions, SourceCode, Stream, StreamOptions,
    VirtualMemoryOptions, VirtualMemoryResource, launch,
};
use cuda_rs_tests::{require_gpus, require_libs};

const SRC: &str = r#"
extern "C" __global__ void add_one(unsigned *x, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1;
}
"#;

fn kernel(d: &Device) -> Kernel {
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
    .get_kernel("add_one")
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
    assert!(matches!(
        pool.set_peer_accessible_by(&[d0]),
        Err(Error::InvalidArgument { .. })
    ));
    pool.set_peer_accessible_by(&[d1]).unwrap();
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

#[test]
fn a_virtual_allocation_is_mapped_for_the_other_device() {
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
