//! DLPack: importing tensors made by another library (here: hand-built host
//! tensors, as a framework would hand them over), and exporting buffers (GPU).

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::cell::Cell;
use std::sync::Arc;

use cuda_core::dlpack::{DLDataType, DLDevice, DLDeviceType, DLManagedTensor, DLTensor};
use cuda_core::{Error, StridedMemoryView};

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

#[test]
fn buffers_export_and_round_trip() {
    cuda_rs_tests::require_gpu!();
    let d = cuda_core::Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d
        .create_stream(cuda_core::StreamOptions::default())
        .unwrap();
    let mut b = d.allocate(6 * 4, &s).unwrap();
    b.copy_from_host(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &s)
        .unwrap();
    let b = Arc::new(b);
    assert!(b.to_dlpack(&[7], DLDataType::F32).is_err());
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
