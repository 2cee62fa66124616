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
