//! [`ForeignCudaArray`]: a CUDA Array Interface description as a strided
//! argument, converted per call with the consumer's stream (`cuda.core`'s
//! `view(stream_ptr)` for an object with `__cuda_array_interface__`).

use crate::error::Result;
use crate::interop::cai::CudaArrayInterface;
use crate::interop::strided::{IntoStridedMemoryView, StridedMemoryView};
use crate::stream::Stream;

/// A CUDA Array Interface description vouched for, as an
/// [`IntoStridedMemoryView`] argument: converted per call by
/// [`StridedMemoryView::from_cuda_array_interface`], with the consumer's
/// stream when there is one (which then waits for the description's producer
/// `stream`).
#[derive(Debug, Clone)]
pub struct ForeignCudaArray {
    cai: CudaArrayInterface,
}

impl ForeignCudaArray {
    /// Wraps `cai`.
    ///
    /// # Safety
    /// As [`StridedMemoryView::from_cuda_array_interface`], for as long as this
    /// value, its clones, every view made from any of them and every DLPack
    /// tensor exported from those views live: `data` addresses memory CUDA
    /// can reach that holds the whole layout and stays valid, and the
    /// producer's `stream` (when set) is a live stream handle, or 1 or 2 (the
    /// legacy and per-thread default streams).
    pub unsafe fn new(cai: CudaArrayInterface) -> Self {
        Self { cai }
    }

    /// The description.
    pub fn description(&self) -> &CudaArrayInterface {
        &self.cai
    }
}

impl IntoStridedMemoryView for &ForeignCudaArray {
    /// The view, no ordering (`cuda.core`'s `stream_ptr=-1`).
    fn into_strided_memory_view(self) -> Result<StridedMemoryView> {
        // SAFETY: `new`'s caller vouched for the memory and the stream.
        unsafe { StridedMemoryView::from_cuda_array_interface(&self.cai, None) }
    }

    /// The view, with `consumer` waiting for the producer's `stream`.
    fn into_strided_memory_view_on(self, consumer: &Stream) -> Result<StridedMemoryView> {
        // SAFETY: as above.
        unsafe { StridedMemoryView::from_cuda_array_interface(&self.cai, Some(consumer)) }
    }
}

impl IntoStridedMemoryView for ForeignCudaArray {
    fn into_strided_memory_view(self) -> Result<StridedMemoryView> {
        (&self).into_strided_memory_view()
    }

    fn into_strided_memory_view_on(self, consumer: &Stream) -> Result<StridedMemoryView> {
        (&self).into_strided_memory_view_on(consumer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interop::dlpack::{DLDataType, DLDeviceType};

    fn takes(x: impl IntoStridedMemoryView) -> Result<StridedMemoryView> {
        x.into_strided_memory_view()
    }

    #[test]
    fn a_foreign_array_is_checked_per_call() {
        // An empty array at address 0 needs no driver to describe.
        let empty = CudaArrayInterface {
            stream: Some(1),
            ..CudaArrayInterface::new(0, &[0, 4], "<i4")
        };
        // SAFETY: an empty array: no memory is reached.
        let a = unsafe { ForeignCudaArray::new(empty.clone()) };
        assert_eq!(a.description(), &empty);
        let v = takes(&a).unwrap();
        assert_eq!(
            (v.shape(), v.dtype(), v.len()),
            (&[0i64, 4][..], DLDataType::I32, 0)
        );
        assert_eq!(v.device().device_type, DLDeviceType::CUDA);
        // Stream 0 is ambiguous: refused at each conversion.
        let zero = CudaArrayInterface {
            stream: Some(0),
            ..empty
        };
        // SAFETY: as above.
        let z = unsafe { ForeignCudaArray::new(zero) };
        let e = takes(z).unwrap_err();
        assert!(e.to_string().contains("stream 0"), "{e}");
    }
}
