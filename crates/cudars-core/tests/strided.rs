//! `StridedMemoryView` from this crate's memory and from the CUDA Array
//! Interface, on a GPU: the device and kind of memory the driver reports, the
//! layout carried through a description and back, the producer's stream
//! ordered before the consumer's, and a pointer CUDA does not know refused.
//! Prints `SKIPPED` without a GPU, and fails under `CUDA_TEST_REQUIRE_GPU=1`.
//! The checks that need no driver are unit tests in `src/interop/strided.rs`.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use cudars_core::dlpack::{DLDataType, DLDeviceType};
use cudars_core::{
    CudaArrayInterface, Device, DeviceBuffer, IntoStridedMemoryView, LegacyPinnedMemoryResource,
    Stream, StreamOptions, StridedMemoryView,
};
use cudars_tests::require_gpu;

mod common;

/// Device 0, current, and a stream on it.
fn setup() -> (Device, Stream) {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    (d, s)
}

#[test]
fn device_memory_round_trips_through_a_description() {
    require_gpu!();
    let (d, s) = setup();
    let values: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let m = Arc::new(DeviceBuffer::from_host(&d, &values, &s).unwrap());
    let base = m.as_buffer().ptr();

    // The 3x4 tile from row 1, column 2 of the 4x6 matrix.
    let tile = StridedMemoryView::from_view(&m.shared_slice(8..).unwrap(), &[3, 4], Some(&[6, 1]))
        .unwrap();
    assert_eq!(tile.device().device_type, DLDeviceType::CUDA);
    let cai = tile.cuda_array_interface().unwrap();
    assert_eq!((cai.data, cai.typestr.as_str()), (base + 32, "<f4"));
    // SAFETY: the tile's memory, alive while `m` is.
    let seen = unsafe { StridedMemoryView::from_cuda_array_interface(&cai, Some(&s)) }.unwrap();
    assert_eq!(
        (seen.ptr(), seen.shape(), seen.strides()),
        (base + 32, &[3i64, 4][..], &[6i64, 1][..])
    );
    assert_eq!(seen.dtype(), DLDataType::F32);
    assert_eq!(
        seen.device(),
        tile.device(),
        "the driver names the same device"
    );
    assert_eq!(seen.device().device_id, 0);
    assert!(!seen.readonly());

    // A read-only description stays read-only.
    let ro = CudaArrayInterface {
        readonly: true,
        ..CudaArrayInterface::new(base, &[24], "<u4")
    };
    // SAFETY: as above.
    let seen = unsafe { StridedMemoryView::from_cuda_array_interface(&ro, None) }.unwrap();
    assert!(seen.readonly());
    assert_eq!(seen.dtype(), DLDataType::U32);

    // The trait sees the crate's memory whole.
    let v = (&m).into_strided_memory_view().unwrap();
    assert_eq!(
        (v.ptr(), v.shape(), v.dtype()),
        (base, &[24i64][..], DLDataType::F32)
    );
}

#[test]
fn pinned_memory_is_reported_as_host_memory() {
    require_gpu!();
    let (d, s) = setup();
    let b = Arc::new(
        Arc::new(LegacyPinnedMemoryResource::new(&d))
            .allocate(64, &s)
            .unwrap(),
    );
    let v = (&b).into_strided_memory_view().unwrap();
    assert_eq!((v.shape(), v.dtype()), (&[64i64][..], DLDataType::U8));
    let cai = CudaArrayInterface::new(b.ptr(), &[8], "<f8");
    // SAFETY: the pinned buffer, alive while `b` is.
    let seen = unsafe { StridedMemoryView::from_cuda_array_interface(&cai, Some(&s)) }.unwrap();
    assert_eq!(seen.device().device_type, DLDeviceType::CUDA_HOST);
    assert_eq!((seen.len(), seen.extent_bytes()), (8, 64));
}

/// The consumer's later work waits for what the producer queued before the
/// view was made: with the producer held in a host function, the consumer is
/// not done until it is released. Opting out (`None`) orders nothing.
#[test]
fn the_producer_stream_is_ordered_before_the_consumer() {
    require_gpu!();
    let (d, producer) = setup();
    let consumer = d.create_stream(StreamOptions::default()).unwrap();
    let mut m = DeviceBuffer::<f32>::zeroed(&d, 16, &producer).unwrap();
    producer.sync().unwrap();
    // The producer writes 1.0 everywhere after spinning on the GPU for a while.
    // SAFETY: the kernel writes `n` = the view's length elements.
    unsafe {
        common::spin_fill(&d).launch(
            &producer,
            &cudars_core::LaunchConfig::new(1u32, 32u32),
            (m.view_mut(), 16, 1.0, 300 * common::CYCLES_PER_MS),
        )
    }
    .unwrap();
    let m = Arc::new(m);
    let cai = CudaArrayInterface {
        stream: Some(producer.handle() as usize as u64),
        ..CudaArrayInterface::new(m.as_buffer().ptr(), &[16], "<f4")
    };
    // SAFETY: `m`'s memory and a live producer stream.
    let ordered = unsafe { StridedMemoryView::from_cuda_array_interface(&cai, Some(&consumer)) };
    // SAFETY: as above; no consumer, so no ordering.
    let free = unsafe { StridedMemoryView::from_cuda_array_interface(&cai, None) };
    assert!(ordered.is_ok() && free.is_ok());
    // A copy the consumer queues after the view reads what the producer wrote.
    let mut out = DeviceBuffer::<f32>::zeroed(&d, 16, &consumer).unwrap();
    out.copy_from(m.view(), &consumer).unwrap();
    assert_eq!(
        out.to_vec(&consumer).unwrap(),
        [1.0; 16],
        "the consumer waits for the held producer"
    );
    producer.sync().unwrap();

    // The default streams by their interface numbers.
    for special in [1u64, 2] {
        let cai = CudaArrayInterface {
            stream: Some(special),
            ..cai.clone()
        };
        // SAFETY: as above; 1 and 2 are the default streams.
        unsafe { StridedMemoryView::from_cuda_array_interface(&cai, Some(&consumer)) }.unwrap();
    }
    consumer.sync().unwrap();
}

#[test]
fn memory_cuda_does_not_know_is_refused_by_the_driver() {
    require_gpu!();
    let (_, s) = setup();
    let host = [0u32; 16];
    let cai = CudaArrayInterface::new(host.as_ptr() as u64, &[16], "<u4");
    // SAFETY: the address is live host memory; the driver is asked about it
    // and refuses it, so nothing reads it.
    let e = unsafe { StridedMemoryView::from_cuda_array_interface(&cai, Some(&s)) }.unwrap_err();
    assert!(e.driver_code().is_some(), "{e:?}");
    assert!(
        e.to_string().contains("asking the driver about address"),
        "{e}"
    );
}
