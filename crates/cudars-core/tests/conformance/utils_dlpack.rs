//! `cuda_core/tests/test_utils_dlpack.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says. No GPU
//! needed. `StridedMemoryView.from_dlpack(obj, stream_ptr)` is `unsafe
//! StridedMemoryView::from_dlpack(tensor)` of the `DLManagedTensor` the
//! producer hands over (Python's `obj.__dlpack__()`); Python's capsules, the
//! `__dlpack__` keyword protocol and the `__dlpack_c_exchange_api__` of
//! `PyObject`s are Python's object model.

use std::sync::atomic::{AtomicUsize, Ordering};

use cudars_core::dlpack::{DLDataType, DLDevice, DLDeviceType, DLManagedTensor, DLTensor};
use cudars_core::{Error, StridedMemoryView};

static RELEASED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn count_release(_t: *mut DLManagedTensor) {
    RELEASED.fetch_add(1, Ordering::SeqCst);
}

/// A producer whose device is neither CPU, CUDA, CUDA-pinned nor CUDA-managed
/// (`7`, Vulkan) is refused, and its tensor released, before a view is made.
#[test]
fn test_from_dlpack_unsupported_device_type() {
    let mut data = [0f32; 4];
    let mut shape = [4i64];
    let mut tensor = DLManagedTensor {
        dl_tensor: DLTensor {
            data: data.as_mut_ptr().cast(),
            device: DLDevice {
                device_type: DLDeviceType(7), // e.g. kDLVulkan -- unsupported by cuda.core
                device_id: 0,
            },
            ndim: 1,
            dtype: DLDataType::F32,
            shape: shape.as_mut_ptr(),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        },
        manager_ctx: std::ptr::null_mut(),
        deleter: Some(count_release),
    };
    let before = RELEASED.load(Ordering::SeqCst);
    // SAFETY: a live tensor, handed over once; its deleter only counts.
    let r = unsafe { StridedMemoryView::from_dlpack(&mut tensor) };
    assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
    assert_eq!(RELEASED.load(Ordering::SeqCst), before + 1);
}

/// A producer's tensor of zeros (Python's `np.zeros(shape, dtype)`), which
/// frees itself and counts its release.
#[repr(C)]
struct Producer {
    tensor: DLManagedTensor,
    data: Vec<u8>,
    shape: Vec<i64>,
}

static PRODUCER_RELEASED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn producer_deleter(t: *mut DLManagedTensor) {
    // SAFETY: `manager_ctx` is the leaked `Producer`, reclaimed once.
    drop(unsafe { Box::from_raw((*t).manager_ctx.cast::<Producer>()) });
    PRODUCER_RELEASED.fetch_add(1, Ordering::SeqCst);
}

fn zeros(shape: &[i64], dtype: DLDataType) -> (*mut DLManagedTensor, usize) {
    let elems: i64 = shape.iter().product();
    let nbytes = usize::try_from(elems).unwrap() * usize::from(dtype.bits / 8);
    let mut p = Box::new(Producer {
        tensor: DLManagedTensor {
            dl_tensor: DLTensor {
                data: std::ptr::null_mut(),
                device: DLDevice {
                    device_type: DLDeviceType::CPU,
                    device_id: 0,
                },
                ndim: i32::try_from(shape.len()).unwrap(),
                dtype,
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(producer_deleter),
        },
        // At least one byte, so the data pointer is a real one.
        data: vec![0; nbytes.max(1)],
        shape: shape.to_vec(),
    });
    p.tensor.dl_tensor.data = p.data.as_mut_ptr().cast();
    p.tensor.dl_tensor.shape = p.shape.as_mut_ptr();
    let raw = Box::into_raw(p);
    // SAFETY: `raw` is the live, leaked producer.
    unsafe {
        (*raw).tensor.manager_ctx = raw.cast();
        (&raw mut (*raw).tensor, nbytes)
    }
}

/// `_assert_dlpack_export_roundtrip(np.zeros(shape, dtype))`: the array viewed
/// (`StridedMemoryView::from_dlpack` of its tensor) and exported again
/// (`into_dlpack`, which moves the view, and the producer's tensor, into the
/// export: Python's `np.from_dlpack(view)`), then read back: the same dtype,
/// shape and zeros, at the same address; the producer's tensor is released
/// once, when the consumer releases the export.
fn assert_dlpack_export_roundtrip(shape: &[i64], dtype: DLDataType) {
    let (src, nbytes) = zeros(shape, dtype);
    // SAFETY: a live producer tensor.
    let data = unsafe { (*src).dl_tensor.data };
    // SAFETY: a live tensor, handed over once; its deleter may run on any thread.
    let view = unsafe { StridedMemoryView::from_dlpack(src) }.unwrap();
    assert_eq!(view.dtype(), dtype);
    assert_eq!(view.shape(), shape);
    let out = view.into_dlpack().unwrap();
    // SAFETY: the export is live until its deleter runs below; its shape has
    // `ndim` entries and its data `nbytes` bytes.
    unsafe {
        let t = &(*out).dl_tensor;
        assert_eq!(t.dtype, dtype);
        assert_eq!(t.device.device_type, DLDeviceType::CPU);
        let ndim = usize::try_from(t.ndim).unwrap();
        let got_shape: &[i64] = if ndim == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(t.shape, ndim)
        };
        assert_eq!(got_shape, shape);
        let first = t
            .data
            .cast::<u8>()
            .add(usize::try_from(t.byte_offset).unwrap());
        assert_eq!(first.cast::<std::ffi::c_void>(), data);
        let bytes = std::slice::from_raw_parts(first, nbytes);
        assert!(bytes.iter().all(|&b| b == 0));
        let before = PRODUCER_RELEASED.load(Ordering::SeqCst);
        ((*out).deleter.unwrap())(out);
        assert!(PRODUCER_RELEASED.load(Ordering::SeqCst) > before);
    }
}

/// Every NumPy-native DLPack dtype of `_NUMPY_NATIVE_DLPACK_DTYPES`, each a
/// (2, 3) array of zeros (`ml_dtypes.bfloat16`, optional in Python, as
/// `DLDataType::BF16`).
#[test]
fn test_dlpack_export_roundtrip_dtypes() {
    let c = |code: u8, bits: u8| DLDataType {
        code,
        bits,
        lanes: 1,
    };
    for dtype in [
        DLDataType::U8,
        DLDataType::U16,
        DLDataType::U32,
        DLDataType::U64,
        DLDataType::I8,
        DLDataType::I16,
        DLDataType::I32,
        DLDataType::I64,
        DLDataType::F16,
        DLDataType::F32,
        DLDataType::F64,
        c(5, 64),  // complex64
        c(5, 128), // complex128
        c(6, 8),   // bool
        DLDataType::BF16,
    ] {
        assert_dlpack_export_roundtrip(&[2, 3], dtype);
    }
}

#[test]
fn test_dlpack_export_roundtrip_special_shapes__scalar() {
    assert_dlpack_export_roundtrip(
        &[],
        DLDataType {
            code: 5,
            bits: 128,
            lanes: 1,
        },
    );
}

#[test]
fn test_dlpack_export_roundtrip_special_shapes__empty() {
    assert_dlpack_export_roundtrip(
        &[0, 3],
        DLDataType {
            code: 5,
            bits: 128,
            lanes: 1,
        },
    );
}
