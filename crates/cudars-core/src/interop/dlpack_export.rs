//! DLPack export: [`Buffer::to_dlpack`], [`ArcView::to_dlpack`] and
//! [`DeviceBuffer::to_dlpack`] hand memory to another library as a
//! `DLManagedTensor` that keeps it alive until the consumer's deleter runs.

use std::any::Any;
use std::ffi::c_void;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::interop::dlpack::{
    DLDataType, DLDevice, DLDeviceType, DLManagedTensor, DLPackDType, DLTensor,
};
use crate::interop::layout::{Layout, row_major};
use crate::{
    memory::arc_view::ArcView, memory::buffer::Buffer, memory::device_buffer::DeviceBuffer,
    memory::resource::MemoryKind,
};

/// What an exported tensor owns: the allocation and the shape/stride arrays.
struct Export {
    tensor: DLManagedTensor,
    _shape: Vec<i64>,
    _strides: Vec<i64>,
    _owner: Arc<dyn Any + Send + Sync>,
}

// The trampoline rule (see `callback::once_trampoline`), for a callback a
// foreign consumer makes: what it drops (the owner may be the caller's, with a
// `Drop` that panics) is dropped through `drop_caught`, so no panic unwinds out
// of the `extern "C"` function or aborts.
unsafe extern "C" fn export_deleter(t: *mut DLManagedTensor) {
    if t.is_null() {
        return;
    }
    // SAFETY: `t` came from `export`, so it lives inside a leaked
    // `Export` whose address is in `manager_ctx`; DLPack calls the deleter once.
    let ctx = unsafe { (*t).manager_ctx };
    // SAFETY: `manager_ctx` is the `Box<Export>` leaked by `export`.
    crate::panics::drop_caught(unsafe { Box::from_raw(ctx.cast::<Export>()) });
}

pub(crate) fn device_of(b: &Buffer) -> DLDevice {
    let device_type = match b.kind() {
        MemoryKind::Pinned => DLDeviceType::CUDA_HOST,
        MemoryKind::Managed => DLDeviceType::CUDA_MANAGED,
        _ => DLDeviceType::CUDA,
    };
    DLDevice {
        device_type,
        device_id: b.device().ordinal() as i32,
    }
}

/// What a tensor export describes: the memory (in `buffer`, at `data`, with
/// `avail` bytes from there, on `device`), its layout and dtype, and what keeps it alive.
pub(crate) struct ExportSpec {
    pub(crate) device: DLDevice,
    pub(crate) data: u64,
    pub(crate) avail: usize,
    pub(crate) shape: Vec<i64>,
    pub(crate) strides: Vec<i64>,
    pub(crate) dtype: DLDataType,
    pub(crate) owner: Arc<dyn Any + Send + Sync>,
}

/// Checks `spec` and hands it out as a `DLManagedTensor` whose deleter releases
/// the owner. The data pointer is the first element's address and
/// `byte_offset` is 0, as `cuda.core`, CuPy and PyTorch export (consumers are
/// told by `dlpack.h` not to rely on the pointer's alignment).
pub(crate) fn export(spec: ExportSpec, what: &'static str) -> Result<*mut DLManagedTensor> {
    let ndim =
        i32::try_from(spec.shape.len()).map_err(|_| Error::invalid(what, "too many dimensions"))?;
    Layout::check(
        &spec.shape,
        Some(&spec.strides),
        spec.dtype,
        Some(spec.avail as u64),
        what,
    )?;
    let mut export = Box::new(Export {
        tensor: DLManagedTensor {
            dl_tensor: DLTensor {
                data: spec.data as usize as *mut c_void,
                device: spec.device,
                ndim,
                dtype: spec.dtype,
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(export_deleter),
        },
        _shape: spec.shape,
        _strides: spec.strides,
        _owner: spec.owner,
    });
    export.tensor.dl_tensor.shape = export._shape.as_mut_ptr();
    export.tensor.dl_tensor.strides = export._strides.as_mut_ptr();
    let raw = Box::into_raw(export);
    // SAFETY: `raw` is a live, leaked `Export`; the deleter reclaims it.
    unsafe {
        (*raw).tensor.manager_ctx = raw.cast();
        Ok(&raw mut (*raw).tensor)
    }
}

impl Buffer {
    /// Exports the buffer as a DLPack tensor of `shape` (row-major) and `dtype`.
    /// The tensor keeps the buffer alive until the consumer calls its deleter.
    /// [`ArcView::to_dlpack`] exports a typed array, or part of one, with the
    /// dtype of its elements.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the tensor does not fit in the buffer or the
    /// dtype has no whole byte size.
    pub fn to_dlpack(
        self: &Arc<Self>,
        shape: &[i64],
        dtype: DLDataType,
    ) -> Result<*mut DLManagedTensor> {
        export(
            ExportSpec {
                device: device_of(self),
                data: self.ptr(),
                avail: self.size(),
                shape: shape.to_vec(),
                strides: row_major(shape),
                dtype,
                owner: self.clone(),
            },
            "exporting a buffer as a DLPack tensor",
        )
    }
}

impl<T: DLPackDType> ArcView<T> {
    /// Exports the view as a one-dimensional DLPack tensor of its `len()`
    /// elements, with `T`'s dtype (`f32` → `float32`, `half::bf16` →
    /// `bfloat16`, …). The data pointer is the view's first element (its
    /// offset in the allocation included) and `byte_offset` is 0, as
    /// `cuda.core`, CuPy and PyTorch export. The tensor keeps the allocation
    /// alive until the consumer calls its deleter.
    ///
    /// ```no_run
    /// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// use std::sync::Arc;
    /// use cudars_core::{DeviceBuffer, StridedMemoryView};
    /// let x = Arc::new(DeviceBuffer::from_host(dev, &[0.5f32; 100], s)?);
    /// let t = x.shared_slice(10..40)?.to_dlpack()?;
    /// // SAFETY: a fresh tensor, handed over once.
    /// let seen = unsafe { StridedMemoryView::from_dlpack(t) }?;
    /// assert_eq!((seen.shape(), seen.ptr()), (&[30][..], x.as_buffer().ptr() + 40));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the length does not fit in DLPack's
    /// 64-bit extent.
    pub fn to_dlpack(&self) -> Result<*mut DLManagedTensor> {
        let what = "exporting a view as a DLPack tensor";
        let [len] = crate::interop::layout::one_dim(self.len(), what)?;
        self.export_as(vec![len], vec![1], what)
    }

    /// Exports the view as a DLPack tensor of `shape` and `strides` (in
    /// elements, as DLPack counts them) starting at the view's first element:
    /// a 2-D tile of a row-major matrix, for example, is `[rows, cols]` with
    /// strides `[ld, 1]`. Every element the layout reaches must lie in the
    /// view.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for as many strides as extents, negative
    /// extents or strides, or a layout that reaches past the view
    /// ([`InvalidKind::OutOfRange`](crate::InvalidKind::OutOfRange)).
    pub fn to_dlpack_strided(
        &self,
        shape: &[i64],
        strides: &[i64],
    ) -> Result<*mut DLManagedTensor> {
        self.export_as(
            shape.to_vec(),
            strides.to_vec(),
            "exporting a view as a strided DLPack tensor",
        )
    }

    fn export_as(
        &self,
        shape: Vec<i64>,
        strides: Vec<i64>,
        what: &'static str,
    ) -> Result<*mut DLManagedTensor> {
        export(
            ExportSpec {
                device: device_of(self.buffer()),
                data: self.ptr(),
                avail: self.byte_len(),
                shape,
                strides,
                dtype: T::DTYPE,
                owner: self.keep_alive(),
            },
            what,
        )
    }
}

impl<T: DLPackDType + Send + Sync> DeviceBuffer<T> {
    /// Exports the whole array as a one-dimensional DLPack tensor with `T`'s
    /// dtype ([`ArcView::to_dlpack`]); the tensor keeps the array alive.
    ///
    /// # Errors
    /// As [`ArcView::to_dlpack`].
    pub fn to_dlpack(self: &Arc<Self>) -> Result<*mut DLManagedTensor> {
        self.shared_view().to_dlpack()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::InvalidKind;
    use crate::error::kind_of as kind;
    use crate::interop::strided::StridedMemoryView;
    use crate::memory::arc_view::host_backed;

    /// The deleter survives an owner whose `Drop` panics (it would abort, the
    /// panic leaving an `extern "C"` function).
    #[test]
    fn the_export_deleter_survives_an_owner_whose_drop_panics() {
        struct Bomb;
        impl Drop for Bomb {
            fn drop(&mut self) {
                panic!("the owner's drop panics");
            }
        }
        let export = Box::new(Export {
            tensor: DLManagedTensor {
                dl_tensor: DLTensor {
                    data: std::ptr::null_mut(),
                    device: DLDevice {
                        device_type: DLDeviceType::CPU,
                        device_id: 0,
                    },
                    ndim: 0,
                    dtype: <u8 as DLPackDType>::DTYPE,
                    shape: std::ptr::null_mut(),
                    strides: std::ptr::null_mut(),
                    byte_offset: 0,
                },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(export_deleter),
            },
            _shape: Vec::new(),
            _strides: Vec::new(),
            _owner: Arc::new(Bomb),
        });
        let raw = Box::into_raw(export);
        // SAFETY: `raw` is live; its context is itself, as `export` makes it.
        unsafe { (*raw).tensor.manager_ctx = raw.cast() };
        // SAFETY: the tensor of a leaked `Export`, deleted once.
        unsafe { export_deleter(&raw mut (*raw).tensor) };
    }

    /// Issue 28, point 5: a strided view leads somewhere. Its export round-trips
    /// shape, strides, dtype and address, and keeps the allocation alive past
    /// the view and every other owner (rule 8: the tensor's, not a guard's); a
    /// view of a tensor moves into its export; what nothing keeps alive is
    /// refused; a contiguous view lends a typed view of its buffer.
    #[test]
    fn a_strided_view_exports_moves_and_lends_a_typed_view() {
        let mut mem: Vec<f32> = (0..24).map(|i| i as f32).collect();
        let base = mem.as_ptr() as u64;
        let buf = host_backed(bytemuck::cast_slice_mut(&mut mem));
        // The 3x4 tile from row 1, column 2 of a 4x6 matrix.
        let tile =
            StridedMemoryView::from_buffer(&buf, &[3, 4], Some(&[6, 1]), DLDataType::F32).unwrap();
        let t = tile.to_dlpack().unwrap();
        drop(tile);
        let alive = Arc::downgrade(&buf);
        drop(buf);
        assert!(alive.upgrade().is_some(), "the tensor keeps the allocation");
        // SAFETY: a fresh tensor, handed over once.
        let back = unsafe { StridedMemoryView::from_dlpack(t) }.unwrap();
        assert_eq!(
            (back.ptr(), back.shape(), back.strides()),
            (base, &[3i64, 4][..], &[6i64, 1][..])
        );
        assert_eq!(back.dtype(), DLDataType::F32);
        // A view holding a tensor cannot share it, but moves into a new one.
        assert!(matches!(back.to_dlpack(), Err(Error::Unsupported { .. })));
        let moved = back.into_dlpack().unwrap();
        assert!(alive.upgrade().is_some());
        // SAFETY: as above.
        let again = unsafe { StridedMemoryView::from_dlpack(moved) }.unwrap();
        assert_eq!(again.shape(), [3, 4]);
        drop(again);
        assert!(
            alive.upgrade().is_none(),
            "the last release frees the allocation"
        );
        // A borrowed host slice is never exported (no tensor could keep the
        // borrow); an array interface is, its producer keeping the memory
        // alive as the constructor's caller vouched.
        let data = [1u8; 16];
        let host = StridedMemoryView::from_slice(&data, &[16], None).unwrap();
        assert!(matches!(host.to_dlpack(), Err(Error::Unsupported { .. })));
        let ai =
            crate::interop::host_strided::ArrayInterface::new(data.as_ptr() as u64, &[16], "|u1");
        // SAFETY: `data` outlives the view and the tensors exported from it.
        let foreign = unsafe { StridedMemoryView::from_array_interface(&ai) }.unwrap();
        let t = foreign.to_dlpack().unwrap();
        // SAFETY: a fresh tensor, handed over once.
        let back = unsafe { StridedMemoryView::from_dlpack(t) }.unwrap();
        assert_eq!(
            (back.ptr(), back.shape()),
            (data.as_ptr() as u64, &[16i64][..])
        );
        drop(back);
        let t = foreign.into_dlpack().unwrap();
        // SAFETY: as above.
        drop(unsafe { StridedMemoryView::from_dlpack(t) }.unwrap());
        // A typed view where the layout is contiguous, over the same buffer.
        let mut mem2 = [0u32; 12];
        let b2 = host_backed(bytemuck::cast_slice_mut(&mut mem2));
        let rows = ArcView::<u32>::of_buffer(&b2).unwrap().slice(4..).unwrap();
        let v = StridedMemoryView::from_view(&rows, &[2, 4], None).unwrap();
        let typed = v.as_device_view::<u32>().unwrap();
        assert_eq!((typed.ptr(), typed.len()), (b2.ptr() + 16, 8));
        assert_eq!(
            kind(v.as_device_view::<f32>().map(drop)),
            InvalidKind::Other
        );
        let strided = StridedMemoryView::from_view(&rows, &[2, 2], Some(&[4, 2])).unwrap();
        assert_eq!(
            kind(strided.as_device_view::<u32>().map(drop)),
            InvalidKind::Other
        );
        assert!(matches!(
            host.as_device_view::<u8>(),
            Err(Error::Unsupported { .. })
        ));
    }

    #[test]
    fn element_types_map_to_their_dtypes() {
        let cases = [
            (<f32 as DLPackDType>::DTYPE, (2, 32)),
            (<f64 as DLPackDType>::DTYPE, (2, 64)),
            (<i8 as DLPackDType>::DTYPE, (0, 8)),
            (<i16 as DLPackDType>::DTYPE, (0, 16)),
            (<i32 as DLPackDType>::DTYPE, (0, 32)),
            (<i64 as DLPackDType>::DTYPE, (0, 64)),
            (<u8 as DLPackDType>::DTYPE, (1, 8)),
            (<u16 as DLPackDType>::DTYPE, (1, 16)),
            (<u32 as DLPackDType>::DTYPE, (1, 32)),
            (<u64 as DLPackDType>::DTYPE, (1, 64)),
        ];
        for (d, (code, bits)) in cases {
            assert_eq!((d.code, d.bits, d.lanes), (code, bits, 1));
        }
        assert_eq!(<f64 as DLPackDType>::DTYPE.size_bytes(), Some(8));
    }

    #[test]
    #[cfg(feature = "half")]
    fn half_types_map_to_their_dtypes() {
        let cases = [
            (<half::f16 as DLPackDType>::DTYPE, (2, 16)),
            (<half::bf16 as DLPackDType>::DTYPE, (4, 16)),
        ];
        for (d, (code, bits)) in cases {
            assert_eq!((d.code, d.bits, d.lanes), (code, bits, 1));
        }
    }

    /// Export then import through this crate's own reader, on host memory: the
    /// pointer, layout, dtype and values of a sub-range come back, and the
    /// allocation lives exactly as long as the tensor.
    #[test]
    fn a_typed_sub_range_round_trips_and_is_kept_alive() {
        let values: Vec<f32> = (0..24).map(|i| i as f32).collect();
        // A copy of `values` as `f32`s, so that its bytes are aligned for them.
        let mut mem = values.clone();
        let buf = host_backed(bytemuck::cast_slice_mut(&mut mem));
        let all = ArcView::<f32>::of_buffer(&buf).unwrap();
        let part = all.slice(6..18).unwrap();
        drop(all);
        let t = part.to_dlpack().unwrap();
        drop(part);
        assert_eq!(Arc::strong_count(&buf), 2, "the tensor holds the buffer");
        // SAFETY: a fresh tensor from `to_dlpack`, handed over once.
        let seen = unsafe { StridedMemoryView::from_dlpack(t) }.unwrap();
        assert_eq!(seen.ptr(), buf.ptr() + 24);
        assert_eq!((seen.shape(), seen.strides()), (&[12i64][..], &[1i64][..]));
        assert_eq!(seen.dtype(), DLDataType::F32);
        assert_eq!(seen.device().device_type, DLDeviceType::CUDA_HOST);
        assert_eq!(seen.extent_bytes(), 48);
        // SAFETY: the memory is the host vector `mem`, alive and unchanged.
        let back = unsafe { std::slice::from_raw_parts(seen.ptr() as usize as *const f32, 12) };
        assert_eq!(back, &values[6..18]);
        drop(seen);
        assert_eq!(Arc::strong_count(&buf), 1, "the deleter let the buffer go");

        // A 3x4 tile of a 4x6 row-major matrix, from element 1 on.
        let tile = ArcView::<f32>::of_buffer(&buf).unwrap().slice(1..).unwrap();
        let t = tile.to_dlpack_strided(&[3, 4], &[6, 1]).unwrap();
        // SAFETY: as above.
        let seen = unsafe { StridedMemoryView::from_dlpack(t) }.unwrap();
        assert_eq!(
            (seen.shape(), seen.strides()),
            (&[3i64, 4][..], &[6i64, 1][..])
        );
        assert!(!seen.is_c_contiguous());
        let at = |r: usize, c: usize| {
            // SAFETY: inside the tile, checked by the export.
            unsafe { *(seen.ptr() as usize as *const f32).add(r * 6 + c) }
        };
        assert_eq!((at(0, 0), at(2, 3)), (1.0, 16.0));
        drop(seen);

        // Layouts that reach past the view, or do not describe one, are refused.
        let short = tile.slice(..15).unwrap(); // the tile reaches 16 elements
        assert_eq!(
            kind(short.to_dlpack_strided(&[3, 4], &[6, 1])),
            InvalidKind::OutOfRange
        );
        assert_eq!(
            kind(tile.to_dlpack_strided(&[3, 4], &[6])),
            InvalidKind::Other
        );
        assert_eq!(
            kind(tile.to_dlpack_strided(&[-1], &[1])),
            InvalidKind::Other
        );
        assert_eq!(
            kind(tile.to_dlpack_strided(&[2], &[-1])),
            InvalidKind::Other
        );
        drop((tile, short));
        assert_eq!(Arc::strong_count(&buf), 1, "refused exports keep nothing");

        // The byte export keeps its checks.
        assert_eq!(
            kind(buf.to_dlpack(&[25], DLDataType::F32)),
            InvalidKind::OutOfRange
        );
        let t = buf.to_dlpack(&[4, 6], DLDataType::F32).unwrap();
        // SAFETY: as above.
        let seen = unsafe { StridedMemoryView::from_dlpack(t) }.unwrap();
        assert_eq!((seen.ptr(), seen.strides()), (buf.ptr(), &[6i64, 1][..]));
    }
}
