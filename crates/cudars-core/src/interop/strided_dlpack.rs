//! DLPack and the strided view: [`StridedMemoryView::from_dlpack`] (a view that
//! owns a producer's tensor) and the view's export. Apart from both, so that
//! neither the view nor the export code imports the other.
//!
//! [`StridedMemoryView::from_dlpack`]: crate::StridedMemoryView::from_dlpack

use crate::error::{Error, Result};
use crate::interop::dlpack::{DLDeviceType, DLManagedTensor};
use crate::interop::dlpack_export::{ExportSpec, export};
use crate::interop::layout::Layout;
use crate::interop::strided::StridedMemoryView;
use std::any::Any;
use std::sync::Arc;

impl StridedMemoryView {
    /// Exports the view as a DLPack tensor of its shape, strides and dtype
    /// (Python's `view.__dlpack__()`, `np.from_dlpack(view)`): for a view of
    /// this crate's memory ([`from_buffer`](Self::from_buffer),
    /// [`from_view`](Self::from_view)), whose allocation the tensor keeps alive
    /// until the consumer calls its deleter (rule 8 of the soundness contract);
    /// for a view of memory described by an array interface
    /// ([`from_cuda_array_interface`](Self::from_cuda_array_interface),
    /// [`from_array_interface`](Self::from_array_interface)), which its
    /// producer keeps alive for the view and what is made from it (as the
    /// `unsafe` constructor's caller vouched), and the tensor holds nothing.
    /// A view that holds a DLPack tensor is exported by moving it:
    /// [`into_dlpack`](Self::into_dlpack).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a view that holds a DLPack tensor (use
    /// `into_dlpack`) and for a view of a borrowed host slice
    /// ([`from_slice`](Self::from_slice)), whose borrow no tensor could keep.
    pub fn to_dlpack(&self) -> Result<*mut DLManagedTensor> {
        const WHAT: &str = "exporting a strided view as a DLPack tensor";
        if self.is_foreign() {
            // The producer keeps the memory alive (the constructor's contract).
            return self.export_with(Arc::new(()), WHAT);
        }
        let Some(owner) = self.shared_owner() else {
            return Err(Error::unsupported(
                WHAT,
                if self.owns_its_memory() {
                    "the view holds a DLPack tensor, which it cannot share: move it out with                      `into_dlpack`"
                } else {
                    "nothing keeps the view's memory alive (an array interface or a borrowed                      host slice), so no tensor can outlive the call"
                },
            ));
        };
        self.export_with(owner, WHAT)
    }

    /// Exports the view as a DLPack tensor, moving it into the tensor: the
    /// tensor then holds what the view held (an allocation of this crate, or the
    /// producer's DLPack tensor, released when the consumer calls the deleter;
    /// rule 8 of the soundness contract).
    ///
    /// A view of memory described by an array interface is exported as
    /// [`to_dlpack`](Self::to_dlpack) exports it.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a view of a borrowed host slice (which no
    /// tensor could keep); the view is dropped.
    pub fn into_dlpack(self) -> Result<*mut DLManagedTensor> {
        const WHAT: &str = "exporting a strided view as a DLPack tensor";
        if self.is_foreign() {
            return self.to_dlpack();
        }
        if !self.owns_its_memory() {
            return Err(Error::unsupported(
                WHAT,
                "nothing keeps the view's memory alive (an array interface), so no tensor can                  hold it",
            ));
        }
        let view = Arc::new(self);
        view.export_with(view.clone(), WHAT)
    }

    fn export_with(
        &self,
        owner: Arc<dyn Any + Send + Sync>,
        what: &'static str,
    ) -> Result<*mut DLManagedTensor> {
        export(
            ExportSpec {
                device: self.device(),
                data: self.ptr(),
                avail: usize::try_from(self.extent_bytes()).map_err(|_| {
                    Error::invalid(what, "the view spans more than the host counts")
                })?,
                shape: self.shape().to_vec(),
                strides: self.strides().to_vec(),
                dtype: self.dtype(),
                owner,
            },
            what,
        )
    }

    /// Takes ownership of a DLPack tensor.
    ///
    /// # Safety
    /// `tensor` must be a valid `DLManagedTensor` whose deleter has not been called,
    /// not used by anyone else afterwards; its `shape` (and `strides` if not null)
    /// must hold `ndim` entries; and its deleter must be safe to call once from
    /// any thread (the view is `Send` and `Sync`, and calls it where it is
    /// dropped: a `manager_ctx` behind an `Rc`, say, does not qualify).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a tensor of another device type than CPU,
    /// CUDA, CUDA host or CUDA managed memory; [`Error::InvalidArgument`] for a
    /// null tensor, a negative `ndim`, a null
    /// `shape` with `ndim > 0`, negative extents or strides, a dtype with no whole
    /// byte size, or a tensor whose span in bytes or number of elements does not
    /// fit in 64 bits; the tensor is
    /// released (its deleter called) in every error case but the null one.
    pub unsafe fn from_dlpack(tensor: *mut DLManagedTensor) -> Result<Self> {
        let what = "importing a DLPack tensor";
        if tensor.is_null() {
            return Err(Error::invalid(what, "the tensor pointer is null"));
        }
        let release = |t: *mut DLManagedTensor| {
            // SAFETY: per the contract, `t` is live and its deleter not yet called.
            if let Some(d) = unsafe { (*t).deleter } {
                // SAFETY: as above; called once.
                unsafe { d(t) };
            }
        };
        // SAFETY: per the contract.
        let t = unsafe { &(*tensor).dl_tensor };
        // Memory of another device kind (ROCm, Vulkan, ...) is refused before
        // anything else, as `cuda.core`'s "device not supported".
        if !matches!(
            t.device.device_type,
            DLDeviceType::CPU
                | DLDeviceType::CUDA
                | DLDeviceType::CUDA_HOST
                | DLDeviceType::CUDA_MANAGED
        ) {
            let device_type = t.device.device_type.0;
            release(tensor);
            return Err(Error::unsupported(
                what,
                format!(
                    "DLPack device type {device_type} is not supported (CPU, CUDA, CUDA host \
                     or CUDA managed memory only)"
                ),
            ));
        }
        let Ok(ndim) = usize::try_from(t.ndim) else {
            release(tensor);
            return Err(Error::invalid(what, "a negative ndim"));
        };
        let shape: &[i64] = if ndim == 0 {
            &[]
        } else if t.shape.is_null() {
            release(tensor);
            return Err(Error::invalid(what, "the shape pointer is null"));
        } else {
            // SAFETY: per the contract, `shape` holds `ndim` entries.
            unsafe { std::slice::from_raw_parts(t.shape, ndim) }
        };
        let strides = if t.strides.is_null() || ndim == 0 {
            None
        } else {
            // SAFETY: per the contract, `strides` holds `ndim` entries.
            Some(unsafe { std::slice::from_raw_parts(t.strides.cast_const(), ndim) })
        };
        let layout = match Layout::check(shape, strides, t.dtype, None, what) {
            Ok(layout) => layout,
            Err(e) => {
                release(tensor);
                return Err(e);
            }
        };
        Ok(Self::of_tensor(
            (t.data as u64).wrapping_add(t.byte_offset),
            layout,
            t.dtype,
            t.device,
            tensor,
        ))
    }
}
