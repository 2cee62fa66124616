//! Virtual memory: an allocation grows in place and keeps its data. Without a GPU
//! it prints `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use cuda_core::{
    Device, Error, Granularity, StreamOptions, VirtualMemoryOptions, VirtualMemoryResource,
};

#[test]
fn a_virtual_allocation_grows_in_place_and_keeps_its_data() {
    cuda_rs_tests::require_gpu!();
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let vmm = Arc::new(
        VirtualMemoryResource::new(
            &d,
            VirtualMemoryOptions {
                reserve: 0,
                granularity: Granularity::Recommended,
                peer_access: vec![d],
            },
        )
        .unwrap(),
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
    let mut all = vec![0u32; 3 * g / 4];
    buf.copy_to_host(&mut all, &s).unwrap();
    assert_eq!(&all[..g / 4], &first[..], "growing lost the data");
    buf.fill_u32(7, &s).unwrap();
    buf.copy_to_host(&mut all, &s).unwrap();
    assert!(
        all.iter().all(|&x| x == 7),
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
