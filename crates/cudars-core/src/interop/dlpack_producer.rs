//! DLPack producers as strided arguments: [`DLPackProducer`] (Python's
//! `__dlpack__`), asked per call for a tensor ready for the consumer's stream,
//! and [`ViaDLPack`], which makes one an [`IntoStridedMemoryView`]
//! (`cuda.core`'s `view(stream_ptr)` for an object with `__dlpack__`).

use crate::error::Result;
use crate::interop::dlpack::DLManagedTensor;
use crate::interop::strided::{IntoStridedMemoryView, StridedMemoryView};
use crate::stream::Stream;

/// A DLPack producer (Python's `__dlpack__`): hands out a tensor of its memory,
/// made ready for a consumer's stream. Passed to a function that takes an
/// [`IntoStridedMemoryView`] as [`ViaDLPack`].
///
/// # Safety
/// [`to_dlpack_for`](Self::to_dlpack_for) must return a tensor that
/// [`StridedMemoryView::from_dlpack`]'s contract accepts (valid, its deleter
/// not called, given over to the caller, `shape`/`strides` holding `ndim`
/// entries, its deleter safe to call once from any thread), whose memory stays
/// valid until its deleter is called; and, given
/// `Some(consumer)`, work queued on `consumer` after the call must be ordered
/// after the producer's work on that memory (as DLPack's `stream` argument
/// asks: for example the consumer waits for an event the producer recorded).
pub unsafe trait DLPackProducer {
    /// A tensor of the memory for a consumer on `consumer` (`None`: no
    /// ordering asked for, `cuda.core`'s `stream_ptr=-1`).
    ///
    /// # Errors
    /// The producer's.
    fn to_dlpack_for(&self, consumer: Option<&Stream>) -> Result<*mut DLManagedTensor>;
}

/// A [`DLPackProducer`] as an [`IntoStridedMemoryView`] argument: the view
/// owns the tensor the producer hands out, which
/// [`into_strided_memory_view_on`](IntoStridedMemoryView::into_strided_memory_view_on)
/// asks for with the consumer's stream.
#[derive(Debug, Clone, Copy)]
pub struct ViaDLPack<'a, P: ?Sized>(pub &'a P);

impl<P: DLPackProducer + ?Sized> ViaDLPack<'_, P> {
    fn view(self, consumer: Option<&Stream>) -> Result<StridedMemoryView> {
        let tensor = self.0.to_dlpack_for(consumer)?;
        // SAFETY: `DLPackProducer`'s contract: a tensor `from_dlpack` accepts,
        // handed over to the view.
        unsafe { StridedMemoryView::from_dlpack(tensor) }
    }
}

impl<P: DLPackProducer + ?Sized> IntoStridedMemoryView for ViaDLPack<'_, P> {
    /// The producer's tensor, no ordering asked for.
    fn into_strided_memory_view(self) -> Result<StridedMemoryView> {
        self.view(None)
    }

    /// The producer's tensor, asked for `consumer`'s stream (the producer
    /// orders it: see [`DLPackProducer`]).
    fn into_strided_memory_view_on(self, consumer: &Stream) -> Result<StridedMemoryView> {
        self.view(Some(consumer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interop::dlpack::{DLDataType, DLDevice, DLDeviceType, DLTensor};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A producer of a 2x3 host tensor over its own memory, which records how
    /// it was asked and whether the tensor's deleter ran.
    struct Producer {
        data: Box<[f32; 6]>,
        shape: Box<[i64; 2]>,
        asked: Mutex<Vec<bool>>,
        deleted: AtomicUsize,
    }

    impl Producer {
        fn new(shape: [i64; 2]) -> Self {
            Self {
                data: Box::new([0.0; 6]),
                shape: Box::new(shape),
                asked: Mutex::new(Vec::new()),
                deleted: AtomicUsize::new(0),
            }
        }

        fn deleted(&self) -> usize {
            self.deleted.load(Ordering::SeqCst)
        }
    }

    unsafe extern "C" fn deleter(t: *mut DLManagedTensor) {
        // SAFETY: the tensor `to_dlpack_for` boxed, deleted once; its context
        // is the producer's counter, which outlives it.
        let t = unsafe { Box::from_raw(t) };
        // SAFETY: as above.
        unsafe { &*t.manager_ctx.cast::<AtomicUsize>() }.fetch_add(1, Ordering::SeqCst);
    }

    // SAFETY: a valid tensor over memory the test keeps alive, handed over
    // boxed with a deleter that frees it; no consumer stream is ever given
    // (the CPU tests have none).
    unsafe impl DLPackProducer for Producer {
        fn to_dlpack_for(&self, consumer: Option<&Stream>) -> Result<*mut DLManagedTensor> {
            self.asked
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(consumer.is_some());
            Ok(Box::into_raw(Box::new(DLManagedTensor {
                dl_tensor: DLTensor {
                    data: self.data.as_ptr() as *mut std::ffi::c_void,
                    device: DLDevice {
                        device_type: DLDeviceType::CPU,
                        device_id: 0,
                    },
                    ndim: 2,
                    dtype: DLDataType::F32,
                    shape: self.shape.as_ptr() as *mut i64,
                    strides: std::ptr::null_mut(),
                    byte_offset: 0,
                },
                manager_ctx: (&raw const self.deleted).cast_mut().cast(),
                deleter: Some(deleter),
            })))
        }
    }

    fn takes(x: impl IntoStridedMemoryView) -> Result<StridedMemoryView> {
        x.into_strided_memory_view()
    }

    #[test]
    fn a_dlpack_producer_is_asked_per_call_and_its_tensor_released() {
        let p = Producer::new([2, 3]);
        let v = takes(ViaDLPack(&p)).unwrap();
        assert_eq!((v.shape(), v.dtype()), (&[2i64, 3][..], DLDataType::F32));
        assert_eq!(v.ptr(), p.data.as_ptr() as u64);
        assert!(v.is_c_contiguous());
        assert_eq!(p.deleted(), 0);
        drop(v);
        assert_eq!(p.deleted(), 1);
        // Asked again for each view, and without a consumer stream.
        let again = ViaDLPack(&p).into_strided_memory_view().unwrap();
        assert_eq!(*p.asked.lock().unwrap(), [false, false]);
        // What the argument does by hand: ask, then view.
        let t = p.to_dlpack_for(None).unwrap();
        // SAFETY: the producer's contract.
        let v = unsafe { StridedMemoryView::from_dlpack(t) }.unwrap();
        assert_eq!(v.len(), 6);
        drop(v);
        assert_eq!(p.deleted(), 2, "the first view's tensor and this one's");
        drop(again);
        assert_eq!(p.deleted(), 3);
    }

    #[test]
    fn a_dlpack_producer_error_comes_back_and_a_bad_tensor_is_released() {
        struct Failing;
        // SAFETY: never hands out a tensor.
        unsafe impl DLPackProducer for Failing {
            fn to_dlpack_for(&self, _: Option<&Stream>) -> Result<*mut DLManagedTensor> {
                Err(crate::error::Error::unsupported(
                    "exporting",
                    "no tensor today",
                ))
            }
        }
        let e = takes(ViaDLPack(&Failing)).unwrap_err();
        assert!(e.to_string().contains("no tensor today"), "{e}");
        // A negative extent: refused, and the tensor's deleter still runs.
        let p = Producer::new([2, -3]);
        assert!(matches!(
            takes(ViaDLPack(&p)),
            Err(crate::error::Error::InvalidArgument { .. })
        ));
        assert_eq!(p.deleted(), 1);
    }
}
