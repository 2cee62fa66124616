//! DLPack: importing tensors made by another library (here: hand-built host
//! tensors, as a framework would hand them over), and exporting buffers (GPU).

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::cell::Cell;
use std::sync::Arc;

use proptest::prelude::*;

use cudars_core::dlpack::{DLDataType, DLDevice, DLDeviceType, DLManagedTensor, DLTensor};
use cudars_core::{Error, StridedMemoryView};

thread_local! {
    /// Deleter calls on this thread: the views are dropped on the test's own
    /// thread, so tests running in parallel do not count each other's releases.
    static DELETED: Cell<usize> = const { Cell::new(0) };
}

fn deleted() -> usize {
    DELETED.with(Cell::get)
}

/// A producer's tensor: owns its data, shape and strides.
struct Producer {
    tensor: DLManagedTensor,
    _data: Vec<f32>,
    _shape: Vec<i64>,
    _strides: Option<Vec<i64>>,
}

unsafe extern "C" fn producer_deleter(t: *mut DLManagedTensor) {
    DELETED.with(|d| d.set(d.get() + 1));
    // SAFETY: `manager_ctx` is the leaked `Box<Producer>`.
    drop(unsafe { Box::from_raw((*t).manager_ctx.cast::<Producer>()) });
}

fn produce(
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
    ndim: i32,
    dtype: DLDataType,
) -> *mut DLManagedTensor {
    let mut p = Box::new(Producer {
        tensor: DLManagedTensor {
            dl_tensor: DLTensor {
                data: std::ptr::null_mut(),
                device: DLDevice {
                    device_type: DLDeviceType::CPU,
                    device_id: 0,
                },
                ndim,
                dtype,
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 8,
            },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(producer_deleter),
        },
        _data: (0..64).map(|i| i as f32).collect(),
        _shape: shape,
        _strides: strides,
    });
    p.tensor.dl_tensor.data = p._data.as_mut_ptr().cast();
    p.tensor.dl_tensor.shape = p._shape.as_mut_ptr();
    if let Some(s) = &mut p._strides {
        p.tensor.dl_tensor.strides = s.as_mut_ptr();
    }
    let raw = Box::into_raw(p);
    // SAFETY: `raw` is live; the deleter reclaims it.
    unsafe {
        (*raw).tensor.manager_ctx = raw.cast();
        &raw mut (*raw).tensor
    }
}

#[test]
fn imported_tensors_describe_themselves_and_are_released_once() {
    let before = deleted();
    let t = produce(vec![4, 8], None, 2, DLDataType::F32);
    // SAFETY: a fresh tensor, handed over.
    let v = unsafe { StridedMemoryView::from_dlpack(t) }.unwrap();
    assert_eq!(v.shape(), &[4, 8]);
    assert_eq!(v.strides(), &[8, 1]);
    assert!(v.is_c_contiguous());
    assert_eq!((v.len(), v.extent_bytes()), (32, 128));
    assert_eq!(v.dtype(), DLDataType::F32);
    assert_eq!(v.device().device_type, DLDeviceType::CPU);
    // SAFETY: the producer's data holds 64 floats; the view starts 8 bytes in.
    let first = unsafe { *(v.ptr() as usize as *const f32) };
    assert_eq!(first, 2.0);
    drop(v);
    assert_eq!(deleted(), before + 1);

    // A transposed (column-major) view.
    let t = produce(vec![4, 8], Some(vec![1, 4]), 2, DLDataType::F32);
    // SAFETY: as above.
    let v = unsafe { StridedMemoryView::from_dlpack(t) }.unwrap();
    assert!(!v.is_c_contiguous());
    assert_eq!(v.extent_bytes(), 128);
}

#[test]
fn malformed_tensors_are_refused_and_still_released() {
    // SAFETY: null is refused before anything is read.
    let null = unsafe { StridedMemoryView::from_dlpack(std::ptr::null_mut()) };
    assert!(matches!(null, Err(Error::InvalidArgument { .. })));
    let before = deleted();
    let bad = [
        produce(vec![4], None, -1, DLDataType::F32),
        produce(vec![-4], None, 1, DLDataType::F32),
        produce(vec![4], Some(vec![-1]), 1, DLDataType::F32),
        produce(
            vec![4],
            None,
            1,
            DLDataType {
                code: 2,
                bits: 4,
                lanes: 1,
            },
        ),
    ];
    for t in bad {
        // SAFETY: fresh tensors, handed over.
        let r = unsafe { StridedMemoryView::from_dlpack(t) };
        assert!(matches!(r, Err(Error::InvalidArgument { .. })));
    }
    assert_eq!(deleted(), before + 4);
}

/// A tensor of 2^62 x 2^62 elements with zero strides spans 4 bytes, but its
/// element count does not fit in 64 bits; one with huge strides spans more bytes
/// than 64 bits count. Both were an arithmetic overflow (a panic in debug builds).
#[test]
fn overflowing_tensors_are_refused_not_wrapped() {
    let before = deleted();
    let big = 1i64 << 62;
    for (shape, strides) in [
        (vec![big, big], vec![0, 0]),
        (vec![i64::MAX, 2], vec![i64::MAX, i64::MAX]),
        (vec![2, 2, 2, 2], vec![i64::MAX; 4]),
        (vec![i64::MAX], vec![1]),
    ] {
        let t = produce(
            shape.clone(),
            Some(strides),
            shape.len() as i32,
            DLDataType::F64,
        );
        // SAFETY: a fresh tensor, handed over; shape and strides hold ndim entries.
        let r = unsafe { StridedMemoryView::from_dlpack(t) };
        match r {
            Err(Error::InvalidArgument { message, .. }) => {
                assert!(message.contains("64 bits"), "{shape:?}: {message}");
            }
            other => panic!("{shape:?}: expected a refusal, got {other:?}"),
        }
    }
    assert_eq!(deleted(), before + 4);
}

/// A null `shape` with dimensions, or a null `strides` (compact row-major), as
/// the producer hands them.
#[test]
fn null_pointers_in_a_tensor() {
    let before = deleted();
    let t = produce(vec![4, 8], None, 2, DLDataType::F32);
    // SAFETY: `t` is live and ours until handed over; null is what is tested.
    unsafe { (*t).dl_tensor.shape = std::ptr::null_mut() };
    // SAFETY: handed over; a null shape is refused before it is read.
    let r = unsafe { StridedMemoryView::from_dlpack(t) };
    match r {
        Err(Error::InvalidArgument { message, .. }) => {
            assert!(message.contains("shape pointer is null"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(deleted(), before + 1);
    // A null data pointer is an address like any other (a tensor of no elements).
    let t = produce(vec![0], None, 1, DLDataType::F32);
    // SAFETY: as above; nothing reads through `data`.
    unsafe {
        (*t).dl_tensor.data = std::ptr::null_mut();
        (*t).dl_tensor.byte_offset = 0;
    }
    // SAFETY: a fresh tensor, handed over.
    let v = unsafe { StridedMemoryView::from_dlpack(t) }.unwrap();
    assert_eq!((v.ptr(), v.len(), v.extent_bytes()), (0, 0, 0));
    drop(v);
    // A tensor without a deleter is released by nobody, and that is fine.
    let t = produce(vec![2], None, 1, DLDataType::F32);
    // SAFETY: as above; the producer's memory is reclaimed by hand below.
    let ctx = unsafe {
        (*t).deleter = None;
        (*t).manager_ctx
    };
    // SAFETY: handed over.
    drop(unsafe { StridedMemoryView::from_dlpack(t) }.unwrap());
    // SAFETY: the leaked producer, reclaimed once (no deleter ran).
    drop(unsafe { Box::from_raw(ctx.cast::<Producer>()) });
    assert_eq!(deleted(), before + 2);
}

/// What a tensor of `shape` and `strides` spans, in bytes, computed wide: `None`
/// for a negative extent or stride, `Some(None)` when it does not fit in 64 bits.
fn reference_extent(shape: &[i64], strides: &[i64], elem: u64) -> Option<Option<u64>> {
    if shape.iter().any(|&n| n < 0) {
        return None;
    }
    if shape.contains(&0) {
        return Some(Some(0));
    }
    let mut last: u128 = 0;
    for (&n, &st) in shape.iter().zip(strides) {
        let st = u128::try_from(st).ok()?;
        last = match (n as u128 - 1)
            .checked_mul(st)
            .and_then(|s| last.checked_add(s))
        {
            Some(l) => l,
            None => return Some(None),
        };
    }
    Some(
        (last + 1)
            .checked_mul(u128::from(elem))
            .and_then(|b| u64::try_from(b).ok()),
    )
}

fn extent() -> impl Strategy<Value = i64> {
    prop_oneof![
        -2i64..=4,
        0i64..1_000_000,
        Just(i64::MAX),
        Just(i64::MIN),
        Just(1 << 32),
        Just(1 << 62),
        any::<i64>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cudars_tests::proptest_cases(512)))]

    /// Any shape, strides, ndim and dtype: a view or a typed refusal, the
    /// producer's deleter called exactly once either way, and a view's figures
    /// agree with a wide computation.
    #[test]
    fn hostile_tensors_give_a_view_or_a_typed_error(
        dims in proptest::collection::vec((extent(), extent()), 0..6),
        with_strides in any::<bool>(),
        ndim_override in prop_oneof![Just(None), Just(Some(-1)), Just(Some(i32::MIN))],
        (code, bits, lanes) in (any::<u8>(), any::<u8>(), prop_oneof![Just(1u16), any::<u16>()]),
    ) {
        let shape: Vec<i64> = dims.iter().map(|d| d.0).collect();
        let strides: Vec<i64> = dims.iter().map(|d| d.1).collect();
        // The ndim given never claims more entries than the arrays hold.
        let ndim = ndim_override.unwrap_or(shape.len() as i32);
        let dtype = DLDataType { code, bits, lanes };
        let before = deleted();
        let t = produce(shape.clone(), with_strides.then(|| strides.clone()), ndim, dtype);
        // SAFETY: a fresh tensor, handed over; shape and strides hold ndim entries.
        let r = unsafe { StridedMemoryView::from_dlpack(t) };
        match r {
            Ok(v) => {
                prop_assert!(ndim >= 0);
                prop_assert_eq!(v.shape(), &shape[..]);
                let elem = dtype.size_bytes().unwrap() as u64;
                let expected = reference_extent(v.shape(), v.strides(), elem);
                prop_assert_eq!(expected, Some(Some(v.extent_bytes())));
                let count = shape.iter().try_fold(1u128, |c, &n| c.checked_mul(n as u128));
                prop_assert_eq!(count.and_then(|c| u64::try_from(c).ok()), Some(v.len()));
                prop_assert_eq!(deleted(), before);
                drop(v);
            }
            Err(Error::InvalidArgument { .. }) => {}
            Err(other) => prop_assert!(false, "an untyped refusal: {other:?}"),
        }
        prop_assert_eq!(deleted(), before + 1);
    }
}

#[test]
fn buffers_export_and_round_trip() {
    cudars_tests::require_gpu!();
    let d = cudars_core::Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d
        .create_stream(cudars_core::StreamOptions::default())
        .unwrap();
    let mut b = d.allocate(6 * 4, &s).unwrap();
    b.copy_from_host(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &s)
        .unwrap();
    let b = Arc::new(b);
    assert!(b.to_dlpack(&[7], DLDataType::F32).is_err());
    // Hostile shapes: negative, overflowing, a dtype of no whole bytes; each a
    // typed refusal that keeps no reference to the buffer.
    for (shape, dtype) in [
        (&[-1i64, 3][..], DLDataType::F32),
        (&[i64::MAX, 2], DLDataType::F32),
        (&[1 << 62, 1 << 62], DLDataType::F64),
        (&[i64::MAX; 8], DLDataType::U8),
        (
            &[2, 3],
            DLDataType {
                code: 2,
                bits: 4,
                lanes: 1,
            },
        ),
    ] {
        match b.to_dlpack(shape, dtype) {
            Err(Error::InvalidArgument { .. }) => {}
            other => panic!("{shape:?}: expected a refusal, got {other:?}"),
        }
    }
    assert_eq!(Arc::strong_count(&b), 1);
    // A zero extent exports an empty tensor.
    let t = b.to_dlpack(&[0, 5], DLDataType::F32).unwrap();
    // SAFETY: a fresh export, handed over.
    let v = unsafe { StridedMemoryView::from_dlpack(t) }.unwrap();
    assert!(v.is_empty());
    drop(v);
    let t = b.to_dlpack(&[2, 3], DLDataType::F32).unwrap();
    assert_eq!(Arc::strong_count(&b), 2);
    // SAFETY: a fresh export, handed over.
    let v = unsafe { StridedMemoryView::from_dlpack(t) }.unwrap();
    assert_eq!(
        (v.shape(), v.strides(), v.ptr()),
        (&[2i64, 3][..], &[3i64, 1][..], b.ptr())
    );
    assert_eq!(
        v.device(),
        DLDevice {
            device_type: DLDeviceType::CUDA,
            device_id: 0
        }
    );
    drop(v);
    assert_eq!(Arc::strong_count(&b), 1, "the deleter released the buffer");
}
