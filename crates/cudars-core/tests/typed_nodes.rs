//! GPU tests of typed views where memory outlives the call that names it:
//! graph memset and memcpy nodes on sub-ranges ([`ArcView`]), batched copies
//! and prefetches of views, and a DLPack round trip of a sub-range. Without a
//! GPU each test prints `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails.
// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use cudars_core::{
    ArcView, BatchCopy, BatchViewCopy, Buffer, CopyOptions, Device, DeviceBuffer, Error, Graph,
    GraphCompleteOptions, InvalidKind, Location, ManagedMemoryResource, Stream, StreamOptions,
    copy_batch, discard_prefetch_batch, prefetch_batch,
};
use cudars_tests::require_gpu;
use half::bf16;

fn setup() -> (Device, Stream) {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    (d, s)
}

fn kind<T: std::fmt::Debug>(r: cudars_core::Result<T>) -> InvalidKind {
    match r {
        Err(Error::InvalidArgument { kind, .. }) => kind,
        other => panic!("expected an invalid argument, got {other:?}"),
    }
}

#[test]
fn graph_fill_and_copy_nodes_on_sub_ranges() {
    require_gpu!();
    let (d, s) = setup();
    let n = 1000;
    let src: Vec<u32> = (0..n as u32).collect();
    let x = Arc::new(DeviceBuffer::from_host(&d, &src, &s).unwrap());
    let y = Arc::new(DeviceBuffer::<u32>::zeroed(&d, n, &s).unwrap());
    let w = Arc::new(DeviceBuffer::<f64>::zeroed(&d, 101, &s).unwrap());
    let h = Arc::new(DeviceBuffer::<bf16>::zeroed(&d, 33, &s).unwrap());
    s.sync().unwrap();
    let mut g = Graph::new(&d.context().unwrap()).unwrap();
    // y[100..200] = 7; then y[150..250] = x[10..110] (overwrites half the fill).
    let fill = g
        .add_fill(&[], y.shared_slice(100..200).unwrap(), 7u32)
        .unwrap();
    let copy = g
        .add_copy(
            &[fill],
            y.shared_slice(150..250).unwrap(),
            x.shared_slice(10..110).unwrap(),
        )
        .unwrap();
    // 8-byte elements: two strided memset nodes, the returned one last.
    let wide = g
        .add_fill(&[copy], w.shared_slice(1..100).unwrap(), -2.5f64)
        .unwrap();
    // 2-byte elements over a whole array (`&Arc<DeviceBuffer<T>>`).
    g.add_fill(&[wide], &h, bf16::from_f32(1.5)).unwrap();
    assert_eq!(g.node_count().unwrap(), 5);
    let exec = g.instantiate(GraphCompleteOptions::default()).unwrap();
    // The graph keeps every allocation alive: drop the test's handles first.
    let xw = Arc::downgrade(&x);
    drop(x);
    let (w, h) = (w.shared_view(), h.shared_view());
    exec.launch(&s).unwrap();
    s.sync().unwrap();
    assert!(xw.upgrade().is_some(), "the graph holds x");
    let v = y.to_vec(&s).unwrap();
    for (i, &e) in v.iter().enumerate() {
        let want = match i {
            100..150 => 7,
            150..250 => i as u32 - 140,
            _ => 0,
        };
        assert_eq!(e, want, "y[{i}]");
    }
    let wv = w.view().to_vec(&s).unwrap();
    assert_eq!((wv[0], wv[100]), (0.0, 0.0));
    assert!(wv[1..100].iter().all(|&e| e == -2.5), "{wv:?}");
    assert!(
        h.view()
            .to_vec(&s)
            .unwrap()
            .iter()
            .all(|&e| e == bf16::from_f32(1.5))
    );

    // Bad nodes are refused before the driver, with typed errors.
    assert_eq!(
        kind(g.add_copy(
            &[],
            y.shared_slice(..10).unwrap(),
            y.shared_slice(10..30).unwrap()
        )),
        InvalidKind::OutOfRange
    );
    assert_eq!(
        kind(g.add_fill(&[], y.shared_slice(5..5).unwrap(), 1u32)),
        InvalidKind::ZeroSize
    );
    assert_eq!(
        kind(g.add_copy(
            &[],
            y.shared_slice(..0).unwrap(),
            y.shared_slice(1..1).unwrap()
        )),
        InvalidKind::ZeroSize
    );
    assert_eq!(kind(y.shared_slice(990..1001)), InvalidKind::OutOfRange);
    // A byte buffer as `u8`s, at an odd offset: 1-byte fills need no alignment.
    let bytes = Arc::new(d.allocate(64, &s).unwrap());
    let odd = ArcView::<u8>::of_buffer(&bytes)
        .unwrap()
        .slice(1..)
        .unwrap();
    assert_eq!(odd.ptr() % 4, 1);
    // The whole-buffer byte API is unchanged.
    g.add_memset(&[], &bytes, 0xab, 1).unwrap();
    g.add_fill(&[], odd, 0xcdu8).unwrap();
    // Memory of another device than the graph's (when there are two GPUs).
    if let Ok(d1) = Device::new(1) {
        let s1 = d1.create_stream(StreamOptions::default()).unwrap();
        let far = Arc::new(DeviceBuffer::<u32>::zeroed(&d1, 4, &s1).unwrap());
        assert_eq!(kind(g.add_fill(&[], &far, 1u32)), InvalidKind::OtherDevice);
    }
}

#[test]
fn batched_copies_and_prefetches_of_views() {
    require_gpu!();
    let (d, s) = setup();
    let x = DeviceBuffer::from_host(&d, &(0..1000).collect::<Vec<i32>>(), &s).unwrap();
    let z = DeviceBuffer::from_host(&d, &[9.0f64; 8], &s).unwrap();
    let mut y = DeviceBuffer::<i32>::zeroed(&d, 1000, &s).unwrap();
    let mut u = DeviceBuffer::<f64>::zeroed(&d, 16, &s).unwrap();
    let mut bytes = d.allocate(64, &s).unwrap();
    let raw = d.allocate(64, &s).unwrap();
    let done = {
        let (mut lo, mut hi) = y.split_at_mut(500).unwrap();
        cudars_tests::needs_driver!(
            12080,
            copy_batch(
                &mut [
                    BatchViewCopy {
                        dst: lo.slice_mut(..100).unwrap(),
                        src: x.slice(900..).unwrap(),
                    },
                    BatchViewCopy {
                        dst: hi.slice_mut(400..).unwrap(),
                        src: x.slice(..100).unwrap(),
                    },
                ],
                &CopyOptions::default(),
                &s,
            )
        )
    };
    if done.is_none() {
        return;
    }
    let v = y.to_vec(&s).unwrap();
    for (i, &e) in v.iter().enumerate() {
        let want = match i {
            0..100 => i as i32 + 900,
            900..1000 => i as i32 - 900,
            _ => 0,
        };
        assert_eq!(e, want, "y[{i}]");
    }
    // Another element type, then the byte entries, still one call each.
    copy_batch(
        &mut [BatchViewCopy {
            dst: u.slice_mut(8..).unwrap(),
            src: z.view(),
        }],
        &CopyOptions::default(),
        &s,
    )
    .unwrap();
    assert_eq!(u.to_vec(&s).unwrap()[7..9], [0.0, 9.0]);
    copy_batch(
        &mut [BatchCopy {
            dst: &mut bytes,
            src: &raw,
            bytes: 64,
        }],
        &CopyOptions::default(),
        &s,
    )
    .unwrap();
    // Lengths that differ are refused before the driver; nothing is copied.
    let r = copy_batch(
        &mut [BatchViewCopy {
            dst: u.slice_mut(..2).unwrap(),
            src: z.slice(..3).unwrap(),
        }],
        &CopyOptions::default(),
        &s,
    );
    assert_eq!(kind(r), InvalidKind::OutOfRange);
    assert_eq!(u.to_vec(&s).unwrap()[..2], [0.0, 0.0]);

    // Prefetch and discard-and-prefetch of managed views (CUDA 13 drivers).
    let managed = Arc::new(ManagedMemoryResource::new(&d).unwrap());
    let buf = Buffer::allocate(managed, 4 << 20, &s).unwrap();
    let mut m = DeviceBuffer::<u32>::from_buffer(buf).unwrap();
    m.fill(3, &s).unwrap();
    let items = [
        (m.slice(..1 << 19).unwrap(), Location::Host),
        (m.slice(1 << 19..).unwrap(), Location::Device(d)),
    ];
    if cudars_tests::needs_driver!(13000, prefetch_batch(&items, &s)).is_none() {
        return;
    }
    assert!(m.to_vec(&s).unwrap().iter().all(|&e| e == 3));
    {
        let (_, back) = m.split_at_mut(1 << 19).unwrap();
        discard_prefetch_batch(&mut [(back, Location::Device(d))], &s).unwrap();
    }
    m.slice_mut(1 << 19..).unwrap().fill(4, &s).unwrap();
    let v = m.to_vec(&s).unwrap();
    assert!(v[..1 << 19].iter().all(|&e| e == 3) && v[1 << 19..].iter().all(|&e| e == 4));
    // Device memory is not managed: refused.
    assert!(matches!(
        prefetch_batch(&[(x.view(), Location::Host)], &s),
        Err(Error::Unsupported { .. })
    ));
}

#[cfg(feature = "dlpack")]
#[test]
fn dlpack_round_trip_of_a_device_sub_range() {
    use cudars_core::{MemoryKind, StridedMemoryView};
    require_gpu!();
    let (d, s) = setup();
    let host: Vec<f32> = (0..256).map(|i| i as f32 * 0.5).collect();
    let x = Arc::new(DeviceBuffer::from_host(&d, &host, &s).unwrap());
    let t = x.shared_slice(32..96).unwrap().to_dlpack().unwrap();
    let weak = Arc::downgrade(&x);
    drop(x);
    // SAFETY: a fresh tensor from `to_dlpack`, handed over once.
    let seen = unsafe { StridedMemoryView::from_dlpack(t) }.unwrap();
    let x = weak.upgrade().expect("the tensor keeps the array alive");
    assert_eq!(seen.ptr(), x.as_buffer().ptr() + 32 * 4);
    assert_eq!((seen.shape(), seen.strides()), (&[64i64][..], &[1i64][..]));
    assert_eq!(seen.dtype(), cudars_core::dlpack::DLDataType::F32);
    assert_eq!(
        (seen.device().device_type, seen.device().device_id),
        (cudars_core::dlpack::DLDeviceType::CUDA, d.ordinal() as i32)
    );
    // Read the imported tensor's memory back through a borrowed buffer.
    // SAFETY: the tensor names 64 floats of device memory that `seen` keeps
    // alive while the borrowed buffer is used.
    let borrowed = unsafe {
        Buffer::from_raw(
            seen.ptr(),
            seen.extent_bytes() as usize,
            MemoryKind::Device,
            &d,
        )
    };
    assert_eq!(
        borrowed.view::<f32>().unwrap().to_vec(&s).unwrap(),
        &host[32..96]
    );
    drop(borrowed);
    drop(x);
    drop(seen);
    assert!(weak.upgrade().is_none(), "the deleter let the array go");

    // A 2-D tile (4 rows of 8, leading dimension 16) of a 16x16 matrix.
    let m = Arc::new(DeviceBuffer::from_host(&d, &host, &s).unwrap());
    let tile = m.shared_slice(16 * 2 + 4..).unwrap();
    let t = tile.to_dlpack_strided(&[4, 8], &[16, 1]).unwrap();
    // SAFETY: as above.
    let seen = unsafe { StridedMemoryView::from_dlpack(t) }.unwrap();
    assert_eq!(seen.extent_bytes(), (3 * 16 + 8) * 4);
    // SAFETY: as above.
    let rows = unsafe {
        Buffer::from_raw(
            seen.ptr(),
            seen.extent_bytes() as usize,
            MemoryKind::Device,
            &d,
        )
    };
    let v = rows.view::<f32>().unwrap().to_vec(&s).unwrap();
    assert_eq!((v[0], v[3 * 16 + 7]), (host[36], host[36 + 3 * 16 + 7]));
    // The tile reaches 56 elements; 55 are too few.
    assert_eq!(
        kind(
            m.shared_slice(201..)
                .unwrap()
                .to_dlpack_strided(&[4, 8], &[16, 1])
        ),
        InvalidKind::OutOfRange
    );
}
