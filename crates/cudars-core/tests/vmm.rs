//! Virtual memory: an allocation grows and shrinks in place and keeps its data,
//! is re-protected, exported, and made with each option. Without a GPU it prints
//! `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use cudars_core::cudars_bindings::driver as sys;
use cudars_core::{
    Buffer, Device, Error, Granularity, Stream, StreamOptions, VirtualMemoryAccess,
    VirtualMemoryLocation, VirtualMemoryOptions, VirtualMemoryResource,
};

fn setup() -> (Device, Stream) {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    (d, s)
}

fn resource(d: &Device, options: VirtualMemoryOptions) -> Arc<VirtualMemoryResource> {
    Arc::new(VirtualMemoryResource::new(d, options).unwrap())
}

fn read_u32(buf: &Buffer, s: &Stream) -> Vec<u32> {
    let mut v = vec![0u32; buf.size() / 4];
    buf.copy_to_host(&mut v, s).unwrap();
    v
}

/// Whether the driver says `ptr` is mapped (`CU_POINTER_ATTRIBUTE_MAPPED`; an
/// address in a reservation with nothing mapped is an error or 0).
fn is_mapped(ptr: u64) -> bool {
    let mut v: std::ffi::c_int = 0;
    // SAFETY: the attribute writes an `int`; `v` is a local.
    let rc = unsafe {
        sys::cuPointerGetAttribute((&raw mut v).cast(), sys::CU_POINTER_ATTRIBUTE_MAPPED, ptr)
    };
    rc == sys::CUDA_SUCCESS && v != 0
}

#[test]
fn a_virtual_allocation_grows_in_place_and_keeps_its_data() {
    cudars_tests::require_gpu!();
    let (d, s) = setup();
    let vmm = resource(
        &d,
        VirtualMemoryOptions {
            reserve: 0,
            granularity: Granularity::Recommended,
            peer_access: vec![d],
            ..Default::default()
        },
    );
    let g = vmm.granularity();
    assert!(g.is_power_of_two() && g >= 64 * 1024, "{g}");
    let mut buf = vmm.allocate(g, &s).unwrap();
    let addr = buf.ptr();
    let first: Vec<u32> = (0..(g / 4) as u32).collect();
    buf.copy_from_host(&first, &s).unwrap();
    // Grow to three granules: same address, old data kept, new part usable.
    vmm.grow(&mut buf, 3 * g).unwrap();
    assert_eq!((buf.ptr(), buf.size()), (addr, 3 * g));
    let all = read_u32(&buf, &s);
    assert_eq!(&all[..g / 4], &first[..], "growing lost the data");
    buf.fill_u32(7, &s).unwrap();
    assert!(
        read_u32(&buf, &s).iter().all(|&x| x == 7),
        "the grown part is not writable"
    );
    // The reservation is 4 granules: growing past it is refused.
    assert!(matches!(
        vmm.grow(&mut buf, 5 * g),
        Err(Error::InvalidArgument { .. })
    ));
    vmm.grow(&mut buf, 4 * g).unwrap();
    assert_eq!(buf.size(), 4 * g);
    drop(buf);
    s.sync().unwrap();
}

#[test]
fn a_virtual_allocation_shrinks_in_place_releases_its_tail_and_grows_again() {
    cudars_tests::require_gpu!();
    let (d, s) = setup();
    let vmm = resource(&d, VirtualMemoryOptions::default());
    let g = vmm.granularity();
    let mut buf = vmm.allocate(g, &s).unwrap();
    let addr = buf.ptr();
    // Three chunks of one granule each: the allocation and two grows.
    vmm.grow(&mut buf, 2 * g).unwrap();
    vmm.modify_allocation(&mut buf, 3 * g).unwrap();
    assert_eq!(vmm.mapped_size(&buf).unwrap(), 3 * g);
    let data: Vec<u32> = (0..(3 * g / 4) as u32).map(|i| i ^ 0x5a5a_5a5a).collect();
    buf.copy_from_host(&data, &s).unwrap();
    assert!(is_mapped(addr + 2 * g as u64));
    // Shrinking to a bit more than one granule keeps two chunks (the size is
    // rounded up to the granularity) and releases the third.
    vmm.shrink(&mut buf, g + 1).unwrap();
    assert_eq!((buf.ptr(), buf.size()), (addr, 2 * g));
    assert_eq!(vmm.mapped_size(&buf).unwrap(), 2 * g);
    assert!(
        !is_mapped(addr + 2 * g as u64),
        "the released tail is still mapped"
    );
    assert!(is_mapped(addr + g as u64));
    assert_eq!(
        read_u32(&buf, &s),
        &data[..2 * g / 4],
        "shrinking lost data"
    );
    vmm.shrink(&mut buf, g).unwrap();
    assert_eq!((buf.size(), vmm.mapped_size(&buf).unwrap()), (g, g));
    assert!(!is_mapped(addr + g as u64));
    assert_eq!(read_u32(&buf, &s), &data[..g / 4]);
    // Shrinking is not growing, and nothing is shrunk to zero.
    assert!(matches!(
        vmm.shrink(&mut buf, 2 * g),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        vmm.shrink(&mut buf, 0),
        Err(Error::InvalidArgument { .. })
    ));
    // Growing to a size the buffer has changes nothing.
    vmm.grow(&mut buf, 1).unwrap();
    assert_eq!(buf.size(), g);
    // The released range is free again: growing maps new memory there.
    vmm.grow(&mut buf, 3 * g).unwrap();
    assert_eq!((buf.ptr(), vmm.mapped_size(&buf).unwrap()), (addr, 3 * g));
    buf.fill_u32(0x0bad_cafe, &s).unwrap();
    assert!(read_u32(&buf, &s).iter().all(|&x| x == 0x0bad_cafe));
    // A buffer of another resource is refused.
    let other = resource(&d, VirtualMemoryOptions::default());
    let mut foreign = other.allocate(g, &s).unwrap();
    assert!(matches!(
        vmm.shrink(&mut foreign, g),
        Err(Error::InvalidArgument { .. })
    ));
    drop((buf, foreign));
    s.sync().unwrap();
}

/// The child's side of the read-only test: a write to read-only memory is a
/// driver error (the fault leaves this process's context unusable, so it runs
/// here, not in the test process).
fn read_only_write_faults_in_child() {
    let (d, s) = setup();
    let vmm = resource(&d, VirtualMemoryOptions::default());
    let mut buf = vmm.allocate(vmm.granularity(), &s).unwrap();
    buf.fill_u32(1, &s).unwrap();
    s.sync().unwrap();
    vmm.set_access(&buf, &[(d, VirtualMemoryAccess::Read)])
        .unwrap();
    let r = buf.fill_u32(2, &s).and_then(|()| s.sync());
    match r {
        Err(e @ Error::Driver { .. }) => {
            println!("writing read-only memory: {}", cudars_tests::report(&e));
            assert!(e.driver_code().is_some());
        }
        other => panic!("writing read-only virtual memory did not fail: {other:?}"),
    }
    // The buffer and the resource are leaked: the context is unusable now.
    std::mem::forget(buf);
    std::mem::forget(vmm);
}

const RO_CHILD: &str = "CUDA_RS_VMM_READ_ONLY_CHILD";

#[test]
fn set_access_re_protects_an_allocation_and_a_write_to_read_only_memory_fails() {
    if std::env::var_os(RO_CHILD).is_some() {
        read_only_write_faults_in_child();
        return;
    }
    cudars_tests::require_gpu!();
    let (d, s) = setup();
    let vmm = resource(&d, VirtualMemoryOptions::default());
    let g = vmm.granularity();
    let mut buf = vmm.allocate(g, &s).unwrap();
    assert_eq!(
        vmm.access(&buf, &d).unwrap(),
        VirtualMemoryAccess::ReadWrite
    );
    buf.fill_u32(0x1357_9bdf, &s).unwrap();
    s.sync().unwrap();
    // Read-only: reading still works.
    vmm.set_access(&buf, &[(d, VirtualMemoryAccess::Read)])
        .unwrap();
    assert_eq!(vmm.access(&buf, &d).unwrap(), VirtualMemoryAccess::Read);
    assert!(read_u32(&buf, &s).iter().all(|&x| x == 0x1357_9bdf));
    // Growth gets the allocation's access now: read-only too.
    vmm.grow(&mut buf, 2 * g).unwrap();
    let mut flags: u64 = 0;
    let loc = sys::CUmemLocation {
        type_: sys::CU_MEM_LOCATION_TYPE_DEVICE,
        __bindgen_anon_1: sys::CUmemLocation_st__bindgen_ty_1 { id: 0 },
    };
    // SAFETY: `flags` is a local; the grown part is mapped.
    let rc = unsafe { sys::cuMemGetAccess(&mut flags, &loc, buf.ptr() + g as u64) };
    assert_eq!(rc, sys::CUDA_SUCCESS);
    assert_eq!(flags, u64::from(sys::CU_MEM_ACCESS_FLAGS_PROT_READ.0));
    // Read-write again: writable.
    vmm.set_access(&buf, &[(d, VirtualMemoryAccess::ReadWrite)])
        .unwrap();
    buf.fill_u32(5, &s).unwrap();
    assert!(read_u32(&buf, &s).iter().all(|&x| x == 5));
    // A device listed twice is refused before the driver.
    assert!(matches!(
        vmm.set_access(
            &buf,
            &[
                (d, VirtualMemoryAccess::Read),
                (d, VirtualMemoryAccess::ReadWrite)
            ]
        ),
        Err(Error::InvalidArgument { .. })
    ));
    drop(buf);
    s.sync().unwrap();
    // The write itself, in a child process.
    let inherited: Vec<(&str, std::ffi::OsString)> = ["LD_LIBRARY_PATH", "PATH", "HOME"]
        .into_iter()
        .filter_map(|k| std::env::var_os(k).map(|v| (k, v)))
        .collect();
    let mut envs: Vec<(&str, &std::ffi::OsStr)> =
        inherited.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
    envs.push((RO_CHILD, std::ffi::OsStr::new("1")));
    cudars_tests::run_test_in_child(
        "set_access_re_protects_an_allocation_and_a_write_to_read_only_memory_fails",
        &envs,
    );
}

#[test]
fn options_alignment_self_access_rdma_and_location() {
    cudars_tests::require_gpu!();
    let (d, s) = setup();
    let g = resource(&d, VirtualMemoryOptions::default()).granularity();
    // Alignment: checked, then honoured by each reservation.
    let bad = VirtualMemoryResource::new(
        &d,
        VirtualMemoryOptions {
            addr_align: 3 * g,
            ..Default::default()
        },
    );
    assert!(matches!(bad, Err(Error::InvalidArgument { .. })), "{bad:?}");
    let aligned = resource(
        &d,
        VirtualMemoryOptions {
            addr_align: 16 * g,
            ..Default::default()
        },
    );
    for _ in 0..3 {
        let b = aligned.allocate(g, &s).unwrap();
        assert_eq!(b.ptr() % (16 * g) as u64, 0, "{:#x}", b.ptr());
    }
    // A hint is a hint: allocating with one works.
    let hinted = resource(
        &d,
        VirtualMemoryOptions {
            addr_hint: 0x7e00_0000_0000,
            ..Default::default()
        },
    );
    drop(hinted.allocate(g, &s).unwrap());
    // No access for the device itself (and no peers): the memory is reserved
    // and mapped, but nobody may touch it.
    let hidden = resource(
        &d,
        VirtualMemoryOptions {
            self_access: VirtualMemoryAccess::None,
            ..Default::default()
        },
    );
    let b = hidden.allocate(g, &s).unwrap();
    assert_eq!(hidden.access(&b, &d).unwrap(), VirtualMemoryAccess::None);
    drop(b);
    // GPUDirect RDMA: exactly where the device says so.
    let rdma = d
        .attribute(sys::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED)
        .unwrap();
    let r = VirtualMemoryResource::new(
        &d,
        VirtualMemoryOptions {
            gpu_direct_rdma: true,
            ..Default::default()
        },
    );
    match (rdma, r) {
        (0, Err(Error::Unsupported { .. })) => {}
        (0, other) => panic!("RDMA without device support: {other:?}"),
        (_, r) => {
            let mut b = Arc::new(r.unwrap()).allocate(g, &s).unwrap();
            b.fill_u32(3, &s).unwrap();
            assert!(read_u32(&b, &s).iter().all(|&x| x == 3));
        }
    }
    // Host NUMA memory, where the device supports it: data round-trips.
    let host = d
        .attribute(sys::CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)
        .unwrap();
    let r = VirtualMemoryResource::new(
        &d,
        VirtualMemoryOptions {
            location: VirtualMemoryLocation::HostNuma(0),
            ..Default::default()
        },
    );
    match (host, r) {
        (0, Err(Error::Unsupported { .. })) => println!("no host NUMA virtual memory here"),
        (0, other) => panic!("host virtual memory without device support: {other:?}"),
        (_, r) => {
            let vmm = Arc::new(r.unwrap());
            let mut b = vmm.allocate(vmm.granularity(), &s).unwrap();
            assert!(!b.is_host_accessible());
            let data: Vec<u32> = (0..(b.size() / 4) as u32).collect();
            b.copy_from_host(&data, &s).unwrap();
            assert_eq!(read_u32(&b, &s), data);
            vmm.grow(&mut b, 2 * vmm.granularity()).unwrap();
            assert_eq!(&read_u32(&b, &s)[..data.len()], &data[..]);
        }
    }
    s.sync().unwrap();
}

#[test]
fn an_exported_allocation_maps_again_with_its_data() {
    cudars_tests::require_gpu!();
    let (d, s) = setup();
    // Not exportable without a handle type.
    let plain = resource(&d, VirtualMemoryOptions::default());
    let b = plain.allocate(plain.granularity(), &s).unwrap();
    assert!(matches!(
        plain.export_handles(&b),
        Err(Error::Unsupported { .. })
    ));
    drop(b);
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd as _;
        let posix = d
            .attribute(sys::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)
            .unwrap();
        if posix == 0 {
            println!("no POSIX descriptor export on this device");
            return;
        }
        let vmm = resource(
            &d,
            VirtualMemoryOptions {
                handle_type: cudars_core::VirtualMemoryHandleType::PosixFd,
                ..Default::default()
            },
        );
        let g = vmm.granularity();
        let mut buf = vmm.allocate(g, &s).unwrap();
        vmm.grow(&mut buf, 2 * g).unwrap();
        let data: Vec<u32> = (0..(2 * g / 4) as u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        buf.copy_from_host(&data, &s).unwrap();
        s.sync().unwrap();
        let chunks = vmm.export_handles(&buf).unwrap();
        assert_eq!(
            chunks
                .iter()
                .map(|c| (c.offset, c.size))
                .collect::<Vec<_>>(),
            [(0, g), (g, g)]
        );
        // Import each chunk's descriptor and map it at a new address: the same
        // physical memory, so the same data.
        let mut base: sys::CUdeviceptr = 0;
        // SAFETY: `base` is a local; a fresh reservation of 2 granules.
        let rc = unsafe { sys::cuMemAddressReserve(&mut base, 2 * g, 0, 0, 0) };
        assert_eq!(rc, sys::CUDA_SUCCESS);
        let mut handles = Vec::new();
        for c in &chunks {
            let cudars_core::ShareableHandle::Fd(fd) = &c.handle else {
                panic!("a POSIX resource exported {:?}", c.handle)
            };
            let mut h: sys::CUmemGenericAllocationHandle = 0;
            // SAFETY: the descriptor is passed by value in the pointer slot.
            let rc = unsafe {
                sys::cuMemImportFromShareableHandle(
                    &mut h,
                    fd.as_raw_fd() as usize as *mut std::ffi::c_void,
                    sys::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                )
            };
            assert_eq!(rc, sys::CUDA_SUCCESS);
            // SAFETY: the reserved range, one chunk at its offset.
            let rc = unsafe { sys::cuMemMap(base + c.offset as u64, c.size, 0, h, 0) };
            assert_eq!(rc, sys::CUDA_SUCCESS);
            handles.push(h);
        }
        let access = sys::CUmemAccessDesc {
            location: sys::CUmemLocation {
                type_: sys::CU_MEM_LOCATION_TYPE_DEVICE,
                __bindgen_anon_1: sys::CUmemLocation_st__bindgen_ty_1 { id: 0 },
            },
            flags: sys::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: the range is mapped; one descriptor.
        let rc = unsafe { sys::cuMemSetAccess(base, 2 * g, &access, 1) };
        assert_eq!(rc, sys::CUDA_SUCCESS);
        let mut seen = vec![0u32; data.len()];
        // SAFETY: `seen` holds 2 granules; the source is mapped and readable.
        let rc = unsafe { sys::cuMemcpyDtoH(seen.as_mut_ptr().cast(), base, 2 * g) };
        assert_eq!(rc, sys::CUDA_SUCCESS);
        assert_eq!(seen, data, "the imported mapping shows other data");
        // SAFETY: undoes the mapping and imports above, once.
        unsafe {
            assert_eq!(sys::cuMemUnmap(base, 2 * g), sys::CUDA_SUCCESS);
            for h in handles {
                assert_eq!(sys::cuMemRelease(h), sys::CUDA_SUCCESS);
            }
            assert_eq!(sys::cuMemAddressFree(base, 2 * g), sys::CUDA_SUCCESS);
        }
        drop(buf);
        s.sync().unwrap();
    }
}

/// The child's side of [`a_virtual_memory_buffer_is_shared_with_a_child_process`]:
/// rebuild the descriptor from its bytes and the inherited descriptors, map it,
/// check the parent's data, write back.
#[cfg(unix)]
fn vmm_ipc_child(bytes: &str) {
    use std::os::fd::{FromRawFd as _, OwnedFd};
    let fds: Vec<OwnedFd> = std::env::var("VMM_IPC_FDS")
        .unwrap()
        .split(',')
        .map(|n| {
            // SAFETY: the parent left these descriptors open (no close-on-exec)
            // for this process, which takes them over once each.
            unsafe { OwnedFd::from_raw_fd(n.parse().unwrap()) }
        })
        .collect();
    let desc =
        cudars_core::VirtualMemoryIpcDescriptor::from_bytes(&cudars_tests::unhex(bytes), fds)
            .unwrap();
    let (d, s) = setup();
    let g = desc.granularity();
    assert_eq!((desc.size(), desc.chunks().len()), (3 * g, 3));
    let mut buf = desc.import(&d, &s).unwrap();
    assert!(buf.is_mapped() && buf.is_device_accessible());
    assert_eq!(buf.size(), 3 * g);
    let want: Vec<u32> = (0..(3 * g / 4) as u32).map(|i| i ^ 0x5a5a_5a5a).collect();
    assert_eq!(read_u32(&buf, &s), want, "the child sees other data");
    // A second import is a second mapping of the same memory, at its own address.
    let again = desc.import(&d, &s).unwrap();
    assert_ne!(again.ptr(), buf.ptr());
    assert_eq!(read_u32(&again, &s), want);
    drop(again);
    s.sync().unwrap();
    // Still mapped here after the other import is gone.
    buf.fill_u32(0x0bad_f00d, &s).unwrap();
    s.sync().unwrap();
    drop(buf);
    s.sync().unwrap();
    assert_eq!(
        cudars_core::deferred_frees(),
        0,
        "every step of the free ran"
    );
}

/// `VirtualMemoryResource::ipc_descriptor` and `VirtualMemoryIpcDescriptor::import`
/// between two processes: the parent exports a three-chunk buffer, the child
/// (this test re-run) receives the bytes and the inherited descriptors, maps
/// the memory into one buffer, reads the parent's data and writes its answer,
/// which the parent sees in its own buffer.
#[cfg(unix)]
#[test]
fn a_virtual_memory_buffer_is_shared_with_a_child_process() {
    if let Ok(bytes) = std::env::var("VMM_IPC_BYTES") {
        vmm_ipc_child(&bytes);
        return;
    }
    cudars_tests::require_gpu!();
    let (d, s) = setup();
    let posix = d
        .attribute(sys::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)
        .unwrap();
    assert_ne!(posix, 0, "the test machines export POSIX descriptors");
    // Not exportable without a handle type.
    let plain = resource(&d, VirtualMemoryOptions::default());
    let b = plain.allocate(plain.granularity(), &s).unwrap();
    assert!(matches!(
        plain.ipc_descriptor(&b),
        Err(Error::Unsupported { .. })
    ));
    // Nor a buffer of another resource.
    let vmm = resource(
        &d,
        VirtualMemoryOptions {
            handle_type: cudars_core::VirtualMemoryHandleType::PosixFd,
            ..Default::default()
        },
    );
    assert!(matches!(
        vmm.ipc_descriptor(&b),
        Err(Error::InvalidArgument { .. })
    ));
    drop(b);
    let g = vmm.granularity();
    let mut buf = vmm.allocate(g, &s).unwrap();
    vmm.grow(&mut buf, 2 * g).unwrap();
    vmm.grow(&mut buf, 3 * g).unwrap();
    let data: Vec<u32> = (0..(3 * g / 4) as u32).map(|i| i ^ 0x5a5a_5a5a).collect();
    buf.copy_from_host(&data, &s).unwrap();
    s.sync().unwrap();
    let desc = vmm.ipc_descriptor(&buf).unwrap();
    assert_eq!(
        desc.chunks()
            .iter()
            .map(|c| (c.offset, c.size))
            .collect::<Vec<_>>(),
        [(0, g), (g, g), (2 * g, g)]
    );
    // In this process too: the import maps the same memory.
    let here = desc.import(&d, &s).unwrap();
    assert_eq!(read_u32(&here, &s), data);
    drop(here);
    let fds = desc.fds();
    use std::os::fd::AsRawFd as _;
    let numbers: Vec<String> = fds.iter().map(|f| f.as_raw_fd().to_string()).collect();
    cudars_tests::run_test_with_fds(
        "a_virtual_memory_buffer_is_shared_with_a_child_process",
        &fds,
        &[
            ("VMM_IPC_BYTES", cudars_tests::hex(&desc.to_bytes())),
            ("VMM_IPC_FDS", numbers.join(",")),
        ],
    );
    assert!(
        read_u32(&buf, &s).iter().all(|&x| x == 0x0bad_f00d),
        "the child's write is not seen here"
    );
    drop(desc);
    drop(buf);
    s.sync().unwrap();
}
