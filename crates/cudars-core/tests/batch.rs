//! Batched copies, prefetches and discards on the GPU: data checked through every
//! kind of buffer, and every bad batch refused before the driver is called. Without
//! a GPU each test prints `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails.
// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use cudars_core::{
    BatchCopy, BatchViewCopy, Buffer, CopyOptions, Device, DeviceBuffer, Error, Location,
    ManagedMemoryResource, MemcpyOverlapMode, MemcpySrcAccessOrder, PinnedMemoryResource,
    PinnedMemoryResourceOptions, Stream, StreamOptions, copy_batch, copy_batch_with, discard_batch,
    discard_prefetch_batch, prefetch_batch,
};
use cudars_tests::require_gpu;

fn setup() -> (Device, Stream) {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    (d, s)
}

fn filled(b: &mut Buffer, v: u32, s: &Stream) {
    b.fill_u32(v, s).unwrap();
}

fn read(b: &Buffer, s: &Stream) -> Vec<u32> {
    let mut h = vec![0u32; b.size() / 4];
    b.copy_to_host(&mut h, s).unwrap();
    h
}

#[test]
fn a_batch_copies_between_every_kind_of_buffer() {
    require_gpu!();
    let (d, s) = setup();
    let pinned =
        Arc::new(PinnedMemoryResource::new(&d, PinnedMemoryResourceOptions::default()).unwrap());
    let managed = Arc::new(ManagedMemoryResource::new(&d).unwrap());
    let mut src_dev = d.allocate(1 << 20, &s).unwrap();
    let mut src_pin = Buffer::allocate(pinned.clone(), 64 << 10, &s).unwrap();
    let mut src_man = Buffer::allocate(managed.clone(), 4096, &s).unwrap();
    filled(&mut src_dev, 1, &s);
    filled(&mut src_pin, 2, &s);
    filled(&mut src_man, 3, &s);
    let mut dst_pin = Buffer::allocate(pinned, 1 << 20, &s).unwrap();
    let mut dst_man = Buffer::allocate(managed, 64 << 10, &s).unwrap();
    let mut dst_dev = d.allocate(8192, &s).unwrap();
    filled(&mut dst_dev, 0, &s);
    for options in [
        CopyOptions::default(),
        CopyOptions {
            src_access_order: MemcpySrcAccessOrder::Any,
            overlap: MemcpyOverlapMode::PreferOverlapWithCompute,
            src_location_hint: Some(Location::Device(d)),
            dst_location_hint: None,
        },
        CopyOptions {
            src_access_order: MemcpySrcAccessOrder::DuringApiCall,
            ..Default::default()
        },
    ] {
        let done = cudars_tests::needs_driver!(
            12080,
            copy_batch(
                &mut [
                    BatchCopy {
                        dst: &mut dst_pin,
                        src: &src_dev,
                        bytes: 1 << 20,
                    },
                    BatchCopy {
                        dst: &mut dst_man,
                        src: &src_pin,
                        bytes: 64 << 10,
                    },
                    // Part of a buffer: the first 4096 bytes of 8192.
                    BatchCopy {
                        dst: &mut dst_dev,
                        src: &src_man,
                        bytes: 4096,
                    },
                ],
                &options,
                &s,
            )
        );
        if done.is_none() {
            return;
        }
        assert!(read(&dst_pin, &s).iter().all(|&x| x == 1));
        assert!(read(&dst_man, &s).iter().all(|&x| x == 2));
        let h = read(&dst_dev, &s);
        assert!(h[..1024].iter().all(|&x| x == 3) && h[1024..].iter().all(|&x| x == 0));
    }
}

/// Issue 28, point 3: Python's heterogeneous batch (options per copy) is one
/// `cuMemcpyBatchAsync` call, and two `Vec`s of buffers pair up without a helper.
#[test]
fn a_heterogeneous_batch_takes_options_per_copy_in_one_call() {
    require_gpu!();
    let (d, s) = setup();
    let pinned =
        Arc::new(PinnedMemoryResource::new(&d, PinnedMemoryResourceOptions::default()).unwrap());
    let srcs: Vec<Buffer> = (0..4u32)
        .map(|i| {
            let mut b = if i == 2 {
                Buffer::allocate(pinned.clone(), 4096, &s).unwrap()
            } else {
                d.allocate(4096 * (i as usize + 1), &s).unwrap()
            };
            filled(&mut b, i + 1, &s);
            b
        })
        .collect();
    let mut dsts: Vec<Buffer> = srcs
        .iter()
        .map(|b| {
            let mut x = d.allocate(b.size(), &s).unwrap();
            filled(&mut x, 0, &s);
            x
        })
        .collect();
    let any = CopyOptions {
        src_access_order: MemcpySrcAccessOrder::Any,
        overlap: MemcpyOverlapMode::PreferOverlapWithCompute,
        ..Default::default()
    };
    let during = CopyOptions {
        src_access_order: MemcpySrcAccessOrder::DuringApiCall,
        ..Default::default()
    };
    let options = [CopyOptions::default(), any, during, CopyOptions::default()];
    let done = cudars_tests::needs_driver!(
        12080,
        copy_batch_with(&mut BatchCopy::zip(&mut dsts, &srcs).unwrap(), &options, &s)
    );
    if done.is_none() {
        return;
    }
    for (i, b) in dsts.iter().enumerate() {
        let h = read(b, &s);
        assert!(
            h.iter().all(|&x| x == i as u32 + 1),
            "copy {i}: {:?}",
            &h[..4]
        );
    }
    // One set of options per copy, checked before the driver.
    let e = copy_batch_with(
        &mut BatchCopy::zip(&mut dsts, &srcs).unwrap(),
        &options[..3],
        &s,
    );
    assert!(matches!(e, Err(Error::InvalidArgument { .. })), "{e:?}");
    assert!(BatchCopy::zip(&mut dsts, &srcs[..3]).is_err());
    // Typed buffers: two `Vec<DeviceBuffer<T>>`s through their views.
    let xs: Vec<DeviceBuffer<f32>> = (1..=3)
        .map(|i| DeviceBuffer::from_host(&d, &vec![i as f32; 100 * i], &s).unwrap())
        .collect();
    let mut ys: Vec<DeviceBuffer<f32>> = (1..=3)
        .map(|i| DeviceBuffer::zeroed(&d, 100 * i, &s).unwrap())
        .collect();
    let mut copies = BatchViewCopy::zip(
        ys.iter_mut().map(|b| b.view_mut()),
        xs.iter().map(|b| b.view()),
    )
    .unwrap();
    copy_batch_with(&mut copies, &[any, any, CopyOptions::default()], &s).unwrap();
    drop(copies);
    for (i, y) in ys.iter().enumerate() {
        assert_eq!(y.to_vec(&s).unwrap(), vec![i as f32 + 1.0; 100 * (i + 1)]);
    }
}

#[test]
fn bad_batches_are_refused() {
    require_gpu!();
    let (d, s) = setup();
    let a = d.allocate(4096, &s).unwrap();
    let mut b = d.allocate(1024, &s).unwrap();
    let invalid = |r: cudars_core::Result<()>| match r {
        Err(Error::InvalidArgument { .. }) => {}
        other => panic!("{other:?}"),
    };
    invalid(copy_batch::<BatchCopy<'_>>(
        &mut [],
        &CopyOptions::default(),
        &s,
    ));
    invalid(copy_batch(
        &mut [BatchCopy {
            dst: &mut b,
            src: &a,
            bytes: 4096,
        }],
        &CopyOptions::default(),
        &s,
    ));
    invalid(copy_batch(
        &mut [BatchCopy {
            dst: &mut b,
            src: &a,
            bytes: 0,
        }],
        &CopyOptions::default(),
        &s,
    ));
    invalid(prefetch_batch::<&Buffer>(&[], &s));
    // Device memory cannot be prefetched or discarded.
    assert!(matches!(
        prefetch_batch(&[(&a, Location::Host)], &s),
        Err(Error::Unsupported { .. })
    ));
    assert!(matches!(
        discard_batch(&mut [&mut b], &s),
        Err(Error::Unsupported { .. })
    ));
}

#[test]
fn managed_buffers_are_prefetched_and_discarded_in_batches() {
    require_gpu!();
    let (d, s) = setup();
    if d.attribute(
        cudars_core::cudars_bindings::driver::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
    )
    .unwrap()
        == 0
    {
        panic!("this test needs concurrent managed access (every Linux data-centre GPU has it)");
    }
    let managed = Arc::new(ManagedMemoryResource::new(&d).unwrap());
    let mut bufs: Vec<Buffer> = (0..4)
        .map(|i| {
            let mut b = Buffer::allocate(managed.clone(), (i + 1) << 20, &s).unwrap();
            b.fill_u32(0xa0 + i as u32, &s).unwrap();
            b
        })
        .collect();
    // To the host and back to the device, data intact.
    for loc in [Location::Host, Location::Device(d)] {
        let items: Vec<(&Buffer, Location)> = bufs.iter().map(|b| (b, loc)).collect();
        if cudars_tests::needs_driver!(13000, prefetch_batch(&items, &s)).is_none() {
            // Discards are CUDA 13.0 features too.
            let mut refs: Vec<&mut Buffer> = bufs.iter_mut().collect();
            cudars_tests::needs_driver!(13000, discard_batch(&mut refs, &s));
            return;
        }
    }
    for (i, b) in bufs.iter().enumerate() {
        assert!(read(b, &s).iter().all(|&x| x == 0xa0 + i as u32));
    }
    // Discarded, then written again: the new data is what is read.
    {
        let mut refs: Vec<&mut Buffer> = bufs.iter_mut().collect();
        discard_batch(&mut refs, &s).unwrap();
    }
    for b in bufs.iter_mut() {
        b.fill_u32(7, &s).unwrap();
    }
    {
        let mut items: Vec<(&mut Buffer, Location)> =
            bufs.iter_mut().map(|b| (b, Location::Device(d))).collect();
        discard_prefetch_batch(&mut items, &s).unwrap();
    }
    for b in bufs.iter_mut() {
        b.fill_u32(9, &s).unwrap();
        assert!(read(b, &s).iter().all(|&x| x == 9));
    }
}
