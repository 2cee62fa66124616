//! `StridedMemoryView` from this crate's memory and from the CUDA Array
//! Interface, on a GPU: the device and kind of memory the driver reports, the
//! layout carried through a description and back, the producer's stream
//! ordered before the consumer's, and a pointer CUDA does not know refused;
//! host and device arrays through one generic function, views through
//! another layout, writable typed views (the tests of those that need no GPU
//! run anywhere). The GPU tests print `SKIPPED` without a GPU, and fail under
//! `CUDA_TEST_REQUIRE_GPU=1`.
//! The checks that need no driver are unit tests in `src/interop/strided.rs`.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use cudars_core::dlpack::{DLDataType, DLDeviceType};
use cudars_core::{
    ArrayInterface, AxisSlice, CudaArrayInterface, DLPackProducer, Device, DeviceBuffer,
    ForeignCudaArray, IntoStridedMemoryView, IntoStridedView, InvalidKind,
    LegacyPinnedMemoryResource, Stream, StreamOptions, StrideOrder, StridedLayout,
    StridedMemoryView, ViaDLPack,
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

/// The 4x6 matrix `0, 1, …, 23` as `f32`s on the device.
fn matrix(d: &Device, s: &Stream) -> Arc<DeviceBuffer<f32>> {
    let values: Vec<f32> = (0..24).map(|i| i as f32).collect();
    Arc::new(DeviceBuffer::from_host(d, &values, s).unwrap())
}

/// Issue 28, point 5: a strided view leads somewhere. Strided copies to and
/// from the host move exactly the view's elements (the gaps between them are
/// never written), on device, pinned and managed memory alike.
#[test]
fn strided_copies_move_exactly_the_views_elements() {
    require_gpu!();
    let (d, s) = setup();
    let m = matrix(&d, &s);
    // The 3x4 tile from row 1, column 2; a column; every other column.
    let tile = StridedMemoryView::from_view(&m.shared_slice(8..).unwrap(), &[3, 4], Some(&[6, 1]))
        .unwrap();
    let mut out = [0f32; 12];
    tile.copy_to_host(&mut out, &s).unwrap();
    let expect: Vec<f32> = (1..4)
        .flat_map(|r| (2..6).map(move |c| (r * 6 + c) as f32))
        .collect();
    assert_eq!(out.to_vec(), expect);
    let col =
        StridedMemoryView::from_view(&m.shared_slice(1..).unwrap(), &[4], Some(&[6])).unwrap();
    let mut c = [0f32; 4];
    col.copy_to_host(&mut c, &s).unwrap();
    assert_eq!(c, [1.0, 7.0, 13.0, 19.0]);
    let odd = StridedMemoryView::from_view(&m.shared_view(), &[4, 3], Some(&[6, 2])).unwrap();
    let mut o = [0f32; 12];
    odd.copy_to_host(&mut o, &s).unwrap();
    assert_eq!(o[..4], [0.0, 2.0, 4.0, 6.0]);
    // Writing the tile writes the tile, and nothing between its rows.
    tile.copy_from_host(&[-1.0f32; 12], &s).unwrap();
    let all = m.to_vec(&s).unwrap();
    for (i, &x) in all.iter().enumerate() {
        let (r, c) = (i / 6, i % 6);
        let inside = (1..4).contains(&r) && (2..6).contains(&c);
        assert_eq!(
            x,
            if inside { -1.0 } else { i as f32 },
            "element ({r}, {c})"
        );
    }
    // Writing every other column leaves the others.
    odd.copy_from_host(&[5.0f32; 12], &s).unwrap();
    let all = m.to_vec(&s).unwrap();
    assert!(all.iter().step_by(2).all(|&x| x == 5.0));
    assert_eq!(all[1], 1.0);
    // Wrong dtype, wrong length, another device's stream: refused before the driver.
    assert!(tile.copy_to_host(&mut [0u32; 12], &s).is_err());
    assert!(tile.copy_to_host(&mut [0f32; 11], &s).is_err());
    // Pinned memory takes the same path.
    let pinned = Arc::new(
        Arc::new(LegacyPinnedMemoryResource::new(&d))
            .allocate(24 * 4, &s)
            .unwrap(),
    );
    let pv =
        StridedMemoryView::from_buffer(&pinned, &[4, 3], Some(&[6, 2]), DLDataType::F32).unwrap();
    pv.copy_from_host(&[2.5f32; 12], &s).unwrap();
    let mut back = [0f32; 12];
    pv.copy_to_host(&mut back, &s).unwrap();
    assert_eq!(back, [2.5; 12]);
}

/// Point 5 against rule 3: a strided copy returns only after its copies ran,
/// even when the stream is held by a long kernel, so the host slice is never
/// written after it is handed back; a broadcast view is never written.
#[test]
fn a_strided_copy_waits_for_its_stream_before_handing_the_slice_back() {
    require_gpu!();
    let (d, s) = setup();
    let m = matrix(&d, &s);
    let tile = StridedMemoryView::from_view(&m.shared_slice(8..).unwrap(), &[3, 4], Some(&[6, 1]))
        .unwrap();
    common::spin(&d, &s, 50 * common::CYCLES_PER_MS);
    let mut out = vec![0f32; 12];
    tile.copy_to_host(&mut out, &s).unwrap();
    // Had the call returned before the copy, `out` would still be zeros.
    assert_eq!(out[0], 8.0);
    let broadcast = StridedMemoryView::from_view(&m.shared_view(), &[3, 6], Some(&[0, 1])).unwrap();
    assert!(broadcast.copy_from_host(&[0f32; 18], &s).is_err());
    let mut rows = [0f32; 18];
    broadcast.copy_to_host(&mut rows, &s).unwrap();
    assert_eq!(rows[..6], rows[6..12]);
}

/// Point 5: the export and the typed view. A strided view exports to DLPack
/// with its layout and keeps the allocation alive past every Rust owner; a
/// contiguous view lends a typed `DeviceView` for copies and kernels.
#[test]
fn a_strided_view_exports_and_lends_a_typed_view() {
    require_gpu!();
    let (d, s) = setup();
    let m = matrix(&d, &s);
    let tile = StridedMemoryView::from_view(&m.shared_slice(8..).unwrap(), &[3, 4], Some(&[6, 1]))
        .unwrap();
    let t = tile.to_dlpack().unwrap();
    drop(tile);
    drop(m);
    // SAFETY: a fresh tensor, handed over once.
    let back = unsafe { StridedMemoryView::from_dlpack(t) }.unwrap();
    let mut out = [0f32; 12];
    back.copy_to_host(&mut out, &s).unwrap();
    assert_eq!(out[..4], [8.0, 9.0, 10.0, 11.0]);
    let m = matrix(&d, &s);
    let rows = StridedMemoryView::from_view(&m.shared_slice(6..).unwrap(), &[3, 6], None).unwrap();
    let typed = rows.as_device_view::<f32>().unwrap();
    assert_eq!(typed.to_vec(&s).unwrap()[0], 6.0);
    let mut dst = DeviceBuffer::<f32>::zeroed(&d, 18, &s).unwrap();
    dst.view_mut().copy_from(typed, &s).unwrap();
    assert_eq!(dst.to_vec(&s).unwrap()[17], 23.0);
}

/// A DLPack producer whose memory a kernel on its own stream is writing: asked
/// for a consumer's stream, it makes that stream wait for its own.
struct Producer {
    buf: Arc<DeviceBuffer<f32>>,
    stream: Stream,
}

// SAFETY: `to_dlpack` hands out a valid tensor that keeps the buffer alive;
// given a consumer, the consumer waits for the producer's stream first.
unsafe impl DLPackProducer for Producer {
    fn to_dlpack_for(
        &self,
        consumer: Option<&Stream>,
    ) -> cudars_core::Result<*mut cudars_core::dlpack::DLManagedTensor> {
        if let Some(c) = consumer {
            c.wait_stream(&self.stream)?;
        }
        self.buf.to_dlpack()
    }
}

/// Fills `n` floats of `m` with `value` on `stream` after spinning there for
/// 300 ms.
fn slow_fill(d: &Device, m: &mut DeviceBuffer<f32>, value: f32, stream: &Stream) {
    // SAFETY: the kernel writes `n` = the buffer's length elements.
    unsafe {
        common::spin_fill(d).launch(
            stream,
            &cudars_core::LaunchConfig::new(1u32, 32u32),
            (m.view_mut(), 16, value, 300 * common::CYCLES_PER_MS),
        )
    }
    .unwrap();
}

/// What `consumer` reads from `src` (the memory `view` describes) with a copy
/// queued right after the view was made.
fn read_on(
    d: &Device,
    view: &StridedMemoryView,
    src: &DeviceBuffer<f32>,
    consumer: &Stream,
) -> Vec<f32> {
    assert_eq!((view.ptr(), view.len()), (src.as_buffer().ptr(), 16));
    let mut out = DeviceBuffer::<f32>::zeroed(d, 16, consumer).unwrap();
    out.copy_from(src.view(), consumer).unwrap();
    out.to_vec(consumer).unwrap()
}

/// `into_strided_memory_view_on` orders the consumer's stream after each kind
/// of producer, per call: this crate's memory (the allocation's free stream),
/// a CUDA Array Interface (its `stream`) and a DLPack producer (asked for the
/// consumer's stream). Each producer writes after spinning on the GPU for a
/// while; a copy the consumer queues right after the view reads the producer's
/// data, which it would not without the ordering.
#[test]
fn into_strided_memory_view_on_orders_the_consumer_after_each_producer() {
    require_gpu!();
    let (d, producer) = setup();
    let consumer = d.create_stream(StreamOptions::default()).unwrap();

    // This crate's memory, allocated (and so freed) on the producer's stream.
    let mut m = DeviceBuffer::<f32>::zeroed(&d, 16, &producer).unwrap();
    producer.sync().unwrap();
    slow_fill(&d, &mut m, 1.0, &producer);
    let m = Arc::new(m);
    let v = (&m).into_strided_memory_view_on(&consumer).unwrap();
    assert_eq!(read_on(&d, &v, &m, &consumer), [1.0; 16], "crate memory");
    // Without a consumer: no ordering, the same view.
    let plain = (&m).into_strided_memory_view().unwrap();
    assert_eq!((plain.ptr(), plain.shape()), (v.ptr(), v.shape()));
    producer.sync().unwrap();

    // A CUDA Array Interface naming its producer stream, `side`. The memory's
    // free stream is a third one, `home` (a launch on `side` orders `home`
    // after it, never the consumer).
    let side = d.create_stream(StreamOptions::default()).unwrap();
    let home = d.create_stream(StreamOptions::default()).unwrap();
    let mut c = DeviceBuffer::<f32>::zeroed(&d, 16, &home).unwrap();
    home.sync().unwrap();
    slow_fill(&d, &mut c, 2.0, &side);
    let c = Arc::new(c);
    let cai = CudaArrayInterface {
        stream: Some(side.handle() as usize as u64),
        ..CudaArrayInterface::new(c.as_buffer().ptr(), &[16], "<f4")
    };
    // SAFETY: `c`'s memory and a live producer stream, both outliving the array.
    let foreign = unsafe { ForeignCudaArray::new(cai) };
    let v = (&foreign).into_strided_memory_view_on(&consumer).unwrap();
    assert_eq!(
        read_on(&d, &v, &c, &consumer),
        [2.0; 16],
        "CUDA Array Interface"
    );
    side.sync().unwrap();

    // A DLPack producer, asked for the consumer's stream.
    let mut p = DeviceBuffer::<f32>::zeroed(&d, 16, &home).unwrap();
    home.sync().unwrap();
    slow_fill(&d, &mut p, 3.0, &side);
    let producer = Producer {
        buf: Arc::new(p),
        stream: side.clone(),
    };
    let v = ViaDLPack(&producer)
        .into_strided_memory_view_on(&consumer)
        .unwrap();
    assert_eq!(
        read_on(&d, &v, &producer.buf, &consumer),
        [3.0; 16],
        "DLPack"
    );
    drop(v);
    side.sync().unwrap();
    consumer.sync().unwrap();
    home.sync().unwrap();
}

/// Issue 43, point 9: one generic function takes a host slice's view and
/// (below, on a GPU) a device array, as Python's decorator takes NumPy and
/// CuPy arrays; the view says whether a device can reach the memory.
fn describe<'a>(x: impl IntoStridedView<'a>) -> (Vec<i64>, DLDataType, bool) {
    let v = x.into_strided_view().unwrap();
    (v.shape().to_vec(), v.dtype(), v.is_device_accessible())
}

#[test]
fn host_views_go_where_strided_arguments_go_and_are_not_device_accessible() {
    let m: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let v = StridedMemoryView::from_slice(&m, &[4, 6], None).unwrap();
    assert!(!v.is_device_accessible());
    assert_eq!(describe(v), (vec![4, 6], DLDataType::F32, false));
    // An owned view (an array interface's) takes the same path.
    let ai = ArrayInterface::new(m.as_ptr() as u64, &[24], "<f4");
    // SAFETY: `m` holds the 24 elements and outlives the view.
    let owned = unsafe { StridedMemoryView::from_array_interface(&ai) }.unwrap();
    assert_eq!(describe(owned), (vec![24], DLDataType::F32, false));
    // A writable host view stays writable through the generic path.
    let mut w = vec![0u16; 6];
    let v = StridedMemoryView::from_slice_mut(&mut w, &[2, 3], None)
        .unwrap()
        .into_strided_view()
        .unwrap();
    assert!(!v.readonly());
}

/// `view` reaches only what the first view reached: a layout past its end or
/// below its start, and a dtype of another size, are refused; a view of a
/// view is relative to the first view's start, so the first layout comes back.
#[test]
fn a_view_through_another_layout_stays_inside_the_first_view() {
    let m: Vec<i32> = (0..30).collect();
    let whole = StridedLayout::dense(&[5, 6], 4, &StrideOrder::C).unwrap();
    let v = StridedMemoryView::from_slice(&m[..29], &[29], None).unwrap();
    // 30 elements do not fit in the 29 the view reaches.
    let e = v.view(Some(&whole), None).unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange), "{e}");
    let v = StridedMemoryView::from_slice(&m, &[30], None).unwrap();
    let row = whole
        .sliced(&[AxisSlice::Index(4), AxisSlice::range(Some(1), None, 1)])
        .unwrap(); // m[25..30]
    let v = v.view(Some(&row), None).unwrap();
    assert_eq!(v.ptr(), m[25..].as_ptr() as u64);
    assert_eq!(v.layout().slice_offset(), 25);
    // Back to the whole array: relative to the first view's start.
    let v = v.view(Some(&whole), None).unwrap();
    assert_eq!((v.ptr(), v.shape()), (m.as_ptr() as u64, &[5i64, 6][..]));
    // The last element, and one past the end.
    let shifted = whole
        .reshaped(&[30])
        .unwrap()
        .sliced(&[AxisSlice::range(Some(29), None, 1)])
        .unwrap();
    assert_eq!(shifted.slice_offset(), 29);
    let last = v.view(Some(&shifted), None).unwrap();
    assert_eq!(last.ptr(), m[29..].as_ptr() as u64);
    let beyond = StridedLayout::new(&[2], Some(&[30]), 4).unwrap();
    let e = last.view(Some(&beyond), None).unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange), "{e}");
    // Negative strides reach below the start.
    let v = StridedMemoryView::from_slice(&m, &[30], None).unwrap();
    let rev = StridedLayout::new(&[30], Some(&[1]), 4)
        .unwrap()
        .sliced(&[AxisSlice::range(None, None, -1)])
        .unwrap();
    assert!(v.view(Some(&rev), None).is_err());
    // A dtype of another size than the layout's elements.
    let v = StridedMemoryView::from_slice(&m, &[30], None).unwrap();
    let e = v.view(None, Some(DLDataType::F64)).unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::Other), "{e}");
}

/// A producer's array with gaps between its elements (every other `f32` of
/// a buffer here) vouches only for its elements: a layout over the gaps is
/// refused, the same elements as another dtype of their size are not. A
/// packed one may be seen through any layout inside it.
#[test]
fn a_view_of_a_producers_array_with_gaps_reaches_only_its_elements() {
    let m = [0f32; 16];
    let mut ai = ArrayInterface::new(m.as_ptr() as u64, &[8], "<f4");
    ai.strides = Some(vec![8]);
    // SAFETY: the eight elements lie in `m`, which outlives the views.
    let v = unsafe { StridedMemoryView::from_array_interface(&ai) }.unwrap();
    let dense = StridedLayout::dense(&[15], 4, &StrideOrder::C).unwrap();
    let e = v.view(Some(&dense), None).unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange), "{e}");
    // SAFETY: as above.
    let v = unsafe { StridedMemoryView::from_array_interface(&ai) }.unwrap();
    let half = v
        .layout()
        .sliced(&[AxisSlice::range(None, Some(4), 1)])
        .unwrap();
    assert!(v.view(Some(&half), None).is_err());
    // SAFETY: as above.
    let v = unsafe { StridedMemoryView::from_array_interface(&ai) }.unwrap();
    let ints = v.view(None, Some(DLDataType::I32)).unwrap();
    assert_eq!((ints.shape(), ints.strides()), (&[8i64][..], &[2i64][..]));
    // Packed: any layout inside it.
    let packed = ArrayInterface::new(m.as_ptr() as u64, &[16], "<f4");
    // SAFETY: as above.
    let v = unsafe { StridedMemoryView::from_array_interface(&packed) }.unwrap();
    let tile = StridedLayout::dense(&[4, 4], 4, &StrideOrder::F).unwrap();
    let t = v.view(Some(&tile), None).unwrap();
    assert_eq!(t.strides(), &[1, 4]);
}

/// A writable typed view is lent only by a writable view of this crate's
/// memory that holds the allocation's one handle: a read-only view and a view
/// of foreign memory are refused before any device is asked.
#[test]
fn a_writable_typed_view_needs_a_writable_view_of_this_crates_memory() {
    let m = [0f32; 8];
    let mut ai = ArrayInterface::new(m.as_ptr() as u64, &[8], "<f4");
    // SAFETY: `m` holds the elements and outlives the views.
    let mut foreign = unsafe { StridedMemoryView::from_array_interface(&ai) }.unwrap();
    let e = foreign.as_device_view_mut::<f32>().unwrap_err();
    assert!(matches!(e, cudars_core::Error::Unsupported { .. }), "{e:?}");
    ai.readonly = true;
    // SAFETY: as above.
    let mut ro = unsafe { StridedMemoryView::from_array_interface(&ai) }.unwrap();
    let e = ro.as_device_view_mut::<f32>().unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::Other), "{e}");
    assert!(e.to_string().contains("read-only"), "{e}");
}

/// On a GPU: the generic function takes a device array too; a writable typed
/// view of a view holding its allocation's one handle writes the elements;
/// while another handle lives, or for a read-only view, it is refused.
#[test]
fn a_strided_view_of_its_own_allocation_lends_a_writable_typed_view() {
    require_gpu!();
    let (d, s) = setup();
    let m = matrix(&d, &s);
    assert_eq!(describe(&m), (vec![24], DLDataType::F32, true));
    let host: Vec<f32> = (0..6).map(|i| i as f32).collect();
    let host_view = StridedMemoryView::from_slice(&host, &[2, 3], None).unwrap();
    assert_eq!(describe(host_view), (vec![2, 3], DLDataType::F32, false));
    let mut rows =
        StridedMemoryView::from_view(&m.shared_slice(6..18).unwrap(), &[2, 6], None).unwrap();
    assert!(rows.is_device_accessible());
    // `m` still holds the allocation: refused.
    let e = rows.as_device_view_mut::<f32>().unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::Other), "{e}");
    drop(m);
    let ones = [1f32; 12];
    rows.as_device_view_mut::<f32>()
        .unwrap()
        .copy_from_host(&ones, &s)
        .unwrap();
    let mut out = [0f32; 12];
    rows.copy_to_host(&mut out, &s).unwrap();
    assert_eq!(out, ones);
    // The elements around the rows are untouched: the whole matrix, through
    // the first view's start (element 6) and a layout from there.
    let all = StridedLayout::dense(&[18], 4, &StrideOrder::C).unwrap();
    let all = rows.view(Some(&all), None);
    // 18 elements from element 6 pass the 12 the first view reached.
    assert_eq!(
        all.unwrap_err().invalid_kind(),
        Some(InvalidKind::OutOfRange)
    );
    let m = matrix(&d, &s);
    let mut ro = StridedMemoryView::from_view(&m.shared_view(), &[24], None)
        .unwrap()
        .into_readonly();
    drop(m);
    assert!(ro.as_device_view_mut::<f32>().is_err());
    // Wrong element type, and a layout that is not row-major.
    let m = matrix(&d, &s);
    let mut cols = StridedMemoryView::from_view(&m.shared_view(), &[6, 4], Some(&[1, 6])).unwrap();
    drop(m);
    assert!(cols.as_device_view_mut::<u32>().is_err());
    assert!(cols.as_device_view_mut::<f32>().is_err());
}

/// Layout arithmetic at the edges of `i64` and `usize`: what overflows is an
/// `InvalidArgument`, never a panic or a wrapped value.
#[test]
fn layout_arithmetic_refuses_what_overflows() {
    let range = |r: cudars_core::Result<StridedLayout>| {
        assert_eq!(r.unwrap_err().invalid_kind(), Some(InvalidKind::OutOfRange));
    };
    range(StridedLayout::new(&[i64::MAX, 2], None, 1));
    range(StridedLayout::new(&[3], Some(&[i64::MAX]), 1));
    range(StridedLayout::dense(&[2], usize::MAX, &StrideOrder::C));
    assert!(StridedLayout::new(&[2], None, 0).is_err());
    let l = StridedLayout::new(&[5], None, 1).unwrap();
    // A step of i64::MIN picks the first element only.
    let one = l.sliced(&[AxisSlice::range(None, None, i64::MIN)]).unwrap();
    assert_eq!((one.shape(), one.slice_offset()), (&[1i64][..], 4));
    range(l.sliced(&[AxisSlice::Index(i64::MIN)]));
    range(l.permuted(&[i64::MIN]));
    range(l.unsqueezed(&[i64::MIN]));
    range(l.unsqueezed(&[0; 64]));
    assert!(l.reshaped(&[i64::MAX, 2]).is_err());
    assert!(l.broadcast_to(&[i64::MAX, i64::MAX, 5]).is_err());
    range(l.repacked(usize::MAX, 0));
    assert!(l.repacked(2, 0).is_err()); // 5 is not a multiple of 2
    let big = StridedLayout::new(&[2], Some(&[i64::MAX]), 1).unwrap();
    assert_eq!(big.offset_bounds(), (0, i64::MAX));
    range(big.required_size_in_bytes().map(|_| big.clone()));
    range(big.unsqueezed(&[0]));
}
