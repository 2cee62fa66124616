//! [`StridedMemoryView`]: the metadata of a strided array in memory CUDA can
//! reach (address, shape, strides in elements, dtype, device), made from this
//! crate's memory ([`StridedMemoryView::from_buffer`],
//! [`StridedMemoryView::from_view`]), from a DLPack tensor
//! ([`StridedMemoryView::from_dlpack`]) or from a CUDA Array
//! Interface description ([`CudaArrayInterface`]); and
//! [`IntoStridedMemoryView`], what a function takes to accept any of them.
//!
//! Architecture Invariant: every way in checks its layout with the same pure
//! function ([`Layout::check`]): extents and strides not negative, a dtype of
//! whole bytes, the span in bytes and the element count within 64 bits, and,
//! where the memory's size is known, the span inside it. The view holds what
//! keeps the memory alive (the producer's tensor, or an `Arc` of the
//! allocation); only the CUDA Array Interface, which has no owner to hold, is
//! `unsafe`.

use std::any::Any;
use std::sync::Arc;

use bytemuck::Pod;
use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::interop::cai::CudaArrayInterface;
use crate::interop::dlpack::{DLDataType, DLDevice, DLDeviceType, DLManagedTensor, DLPackDType};
use crate::interop::dlpack_export::device_of;
use crate::interop::layout::{Layout, one_dim, row_major};
use crate::memory::arc_view::HoldsBuffer;
use crate::{
    memory::arc_view::ArcView, memory::buffer::Buffer, memory::device_buffer::DeviceBuffer,
    stream::Stream,
};

/// What keeps a view's memory alive.
enum Keep {
    /// A DLPack producer's tensor, released through its deleter on drop.
    Tensor(*mut DLManagedTensor),
    /// An allocation of this crate (which lends its `Buffer` to typed views).
    Shared {
        /// The allocation.
        owner: Arc<dyn HoldsBuffer>,
    },
    /// Nothing: memory described by a CUDA Array Interface, kept alive by
    /// its producer (the caller of the `unsafe` constructor vouched for it).
    Foreign,
    /// Nothing: a host slice, borrowed by the [`StridedHostView`](crate::StridedHostView) that holds
    /// this view for as long as the view lives.
    Borrowed,
}

/// A view of a strided array: address, shape, strides (in elements), dtype,
/// device and whether it may be written. The counterpart of `cuda.core`'s
/// `StridedMemoryView`, made:
///
/// - from this crate's memory: [`from_buffer`](Self::from_buffer) (an
///   `Arc<Buffer>`, a dtype you name), [`from_view`](Self::from_view) (an
///   [`ArcView<T>`], the dtype of `T`); the layout is checked to lie inside
///   the memory, and the view holds the allocation;
/// - from another library's DLPack tensor:
///   [`from_dlpack`](Self::from_dlpack) (the view owns the tensor and calls
///   its deleter on drop);
/// - from a CUDA Array Interface description:
///   [`from_cuda_array_interface`](Self::from_cuda_array_interface).
///
/// A function that accepts any of these takes an
/// `impl` [`IntoStridedMemoryView`].
///
/// ```no_run
/// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
/// use std::sync::Arc;
/// use cudars_core::{DeviceBuffer, StridedMemoryView};
/// let m = Arc::new(DeviceBuffer::from_host(dev, &[0f32; 4 * 6], s)?);
/// // The 3x4 tile of a 4x6 row-major matrix from row 1, column 2 on.
/// let v = StridedMemoryView::from_view(&m.shared_slice(8..)?, &[3, 4], Some(&[6, 1]))?;
/// assert_eq!((v.ptr(), v.len()), (m.as_buffer().ptr() + 32, 12));
/// # Ok(()) }
/// ```
pub struct StridedMemoryView {
    pub(crate) ptr: u64,
    pub(crate) layout: Layout,
    pub(crate) dtype: DLDataType,
    pub(crate) device: DLDevice,
    pub(crate) readonly: bool,
    /// Where index `(0, …, 0)` lies from the memory's start (the `ptr` of
    /// the view first made), in elements: a layout's offset
    /// ([`StridedMemoryView::view`]).
    pub(crate) slice_offset: i64,
    /// The bytes from the memory's start that views through other layouts
    /// may reach ([`StridedMemoryView::view`]): the span of the view first
    /// made where every byte of it is the view's to give (an allocation of
    /// this crate, a borrowed slice, a producer's packed tensor); 0 for a
    /// producer's tensor with gaps between its elements, which nobody vouched
    /// for (such a view is seen only through its own layout).
    pub(crate) reach: u64,
    keep: Keep,
}

// SAFETY: the view owns its keep-alive: a DLPack tensor (DLPack lets the
// consumer release it from any thread), an `Arc` of `Send + Sync` memory, or
// nothing.
// Soundness contract: rule 11.
unsafe impl Send for StridedMemoryView {}
// SAFETY: the view's methods only read its own copies of the metadata.
// Soundness contract: rule 11.
unsafe impl Sync for StridedMemoryView {}

impl std::fmt::Debug for StridedMemoryView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keep = match self.keep {
            Keep::Tensor(_) => "DLPack tensor",
            Keep::Shared { .. } => "allocation",
            Keep::Foreign => "none (CUDA Array Interface)",
            Keep::Borrowed => "a borrowed host slice",
        };
        f.debug_struct("StridedMemoryView")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("shape", &self.layout.shape)
            .field("strides", &self.layout.strides)
            .field("dtype", &self.dtype)
            .field("device", &self.device)
            .field("readonly", &self.readonly)
            .field("keeps", &keep)
            .finish()
    }
}

impl StridedMemoryView {
    /// A view of host memory that nothing here keeps alive: described by an
    /// array interface (`borrowed: false`, the `unsafe` constructor's caller
    /// vouches for it) or a slice a [`StridedHostView`](crate::StridedHostView) borrows (`borrowed:
    /// true`). The layout was checked.
    pub(crate) fn of_host(
        ptr: u64,
        layout: Layout,
        dtype: DLDataType,
        readonly: bool,
        borrowed: bool,
    ) -> Self {
        Self {
            ptr,
            slice_offset: 0,
            reach: if borrowed {
                layout.span
            } else {
                packed_reach(&layout)
            },
            layout,
            dtype,
            device: DLDevice {
                device_type: DLDeviceType::CPU,
                device_id: 0,
            },
            readonly,
            keep: if borrowed {
                Keep::Borrowed
            } else {
                Keep::Foreign
            },
        }
    }

    /// The size of one element, in bytes.
    pub(crate) fn layout_elem(&self) -> usize {
        self.layout.elem
    }

    /// Orders work queued on `consumer` from now on after the work queued so
    /// far on the allocation the view lies in (its free stream, which every
    /// use of the allocation is ordered before); nothing for a view of other
    /// memory, or when `consumer` is that stream's queue.
    pub(crate) fn order_after_producer(&self, consumer: &Stream) -> Result<()> {
        match self.shared_buffer().and_then(Buffer::free_stream) {
            Some(producer) if !producer.is_same_queue(consumer) => consumer.wait_stream(producer),
            _ => Ok(()),
        }
    }

    /// The buffer of this crate the view lies in, when it was made from one.
    pub(crate) fn shared_buffer(&self) -> Option<&Buffer> {
        match &self.keep {
            Keep::Shared { owner } => Some(owner.buffer()),
            _ => None,
        }
    }

    /// The buffer of this crate the view lies in, when the view holds the
    /// only handle to its allocation (no other `Arc` or `Weak` of it): what
    /// may be written through the view while it is borrowed mutably.
    pub(crate) fn exclusive_buffer(&mut self) -> Option<&Buffer> {
        match &mut self.keep {
            Keep::Shared { owner } => Arc::get_mut(owner).map(|o| o.buffer()),
            _ => None,
        }
    }

    /// What keeps the view's memory alive, to share with an export, when it
    /// can be shared (an allocation of this crate).
    pub(crate) fn shared_owner(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        match &self.keep {
            Keep::Shared { owner } => Some(owner.clone().keep_alive()),
            _ => None,
        }
    }

    /// Whether the view's memory is described by an array interface, kept
    /// alive by its producer for the view and whatever is made from it (the
    /// `unsafe` constructor's contract).
    pub(crate) fn is_foreign(&self) -> bool {
        matches!(self.keep, Keep::Foreign)
    }

    /// Whether the view's memory is kept alive by the view itself (an
    /// allocation or a DLPack tensor), so that moving the view into an export
    /// keeps it alive too.
    pub(crate) fn owns_its_memory(&self) -> bool {
        matches!(self.keep, Keep::Shared { .. } | Keep::Tensor(_))
    }

    /// A view of a DLPack tensor whose layout was checked (for `from_dlpack`).
    pub(crate) fn of_tensor(
        ptr: u64,
        layout: Layout,
        dtype: DLDataType,
        device: DLDevice,
        tensor: *mut DLManagedTensor,
    ) -> Self {
        Self {
            ptr,
            slice_offset: 0,
            reach: packed_reach(&layout),
            layout,
            dtype,
            device,
            readonly: false,
            keep: Keep::Tensor(tensor),
        }
    }

    /// Views `buffer` as `dtype` elements of `shape` and `strides` (in
    /// elements; `None` for compact row-major) from its first byte, as
    /// `cuda.core`'s `StridedMemoryView.from_buffer`. The view holds the
    /// buffer.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a dtype with no whole byte size, as many
    /// strides as extents, negative extents or strides, or a layout that
    /// reaches past the buffer
    /// ([`InvalidKind::OutOfRange`](crate::InvalidKind::OutOfRange)).
    pub fn from_buffer(
        buffer: &Arc<Buffer>,
        shape: &[i64],
        strides: Option<&[i64]>,
        dtype: DLDataType,
    ) -> Result<Self> {
        let layout = Layout::check(
            shape,
            strides,
            dtype,
            Some(buffer.size() as u64),
            "viewing a buffer as strided memory",
        )?;
        Ok(Self {
            ptr: buffer.ptr(),
            slice_offset: 0,
            reach: layout.span,
            layout,
            dtype,
            device: device_of(buffer),
            readonly: false,
            keep: Keep::Shared {
                owner: buffer.clone(),
            },
        })
    }

    /// Views the elements of `view` with `shape` and `strides` (in elements;
    /// `None` for compact row-major) from its first element, with `T`'s dtype.
    /// The view holds the allocation.
    ///
    /// # Errors
    /// As [`from_buffer`](Self::from_buffer); the layout must lie inside
    /// `view`.
    pub fn from_view<T: DLPackDType>(
        view: &ArcView<T>,
        shape: &[i64],
        strides: Option<&[i64]>,
    ) -> Result<Self> {
        let layout = Layout::check(
            shape,
            strides,
            T::DTYPE,
            Some(view.byte_len() as u64),
            "viewing typed memory as strided memory",
        )?;
        Ok(Self {
            ptr: view.ptr(),
            slice_offset: 0,
            reach: layout.span,
            layout,
            dtype: T::DTYPE,
            device: device_of(view.buffer()),
            readonly: false,
            keep: Keep::Shared {
                owner: view.holder(),
            },
        })
    }

    /// Views the memory a CUDA Array Interface (v3) description names, as
    /// `cuda.core`'s `StridedMemoryView` does for an object with
    /// `__cuda_array_interface__`. The device and the kind of memory are asked
    /// of the driver (`cuPointerGetAttribute`; for a null `data`, which only an
    /// empty array may have, the consumer's device, else device 0). When
    /// `consumer` is given and the description names a producer `stream`,
    /// later work on `consumer` waits for the work queued on the producer's
    /// stream so far (an event, as `cudaStreamWaitEvent`); `None` opts out of
    /// that ordering (`cuda.core`'s `stream_ptr=-1`).
    ///
    /// # Safety
    /// `data` must be the address of memory CUDA can reach that holds the
    /// whole layout and stays valid, and unchanged in kind, for as long as the
    /// view and whatever it is handed to use it, a DLPack tensor exported from
    /// it ([`to_dlpack`](Self::to_dlpack)) included (the view holds nothing of
    /// the producer's); the producer's `stream`, when `consumer` is given,
    /// must be a live stream handle (or 1 or 2, the legacy and per-thread
    /// default streams).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a version below 3, stream 0, a type
    /// string [`DLDataType::from_typestr`] refuses, as many strides as
    /// extents, byte strides that are not whole elements, negative extents or
    /// strides, a null address of a non-empty array, or a span past 64 bits or
    /// past the end of the address space; the driver's error when the pointer
    /// is not one CUDA knows or the streams cannot be ordered.
    pub unsafe fn from_cuda_array_interface(
        cai: &CudaArrayInterface,
        consumer: Option<&Stream>,
    ) -> Result<Self> {
        const WHAT: &str = "viewing memory described by the CUDA Array Interface";
        let (dtype, layout) = cai.check()?;
        let device = if cai.data == 0 {
            DLDevice {
                device_type: DLDeviceType::CUDA,
                device_id: consumer.map_or(0, |s| s.device().ordinal() as i32),
            }
        } else {
            pointer_device(cai.data, WHAT)?
        };
        if let (Some(producer), Some(consumer)) = (cai.stream, consumer) {
            let handle = producer as usize as sys::CUstream;
            if handle != consumer.handle() {
                let producer =
                    if handle == sys::CU_STREAM_LEGACY || handle == sys::CU_STREAM_PER_THREAD {
                        // SAFETY: a special handle, valid in the consumer's context.
                        unsafe { Stream::from_raw(handle, consumer.context()) }
                    } else {
                        // SAFETY: the caller vouches for the producer's stream;
                        // the adopted handle is used only in this call.
                        unsafe { Stream::from_handle(handle) }?
                    };
                consumer.wait_stream(&producer)?;
            }
        }
        Ok(Self {
            ptr: cai.data,
            slice_offset: 0,
            reach: packed_reach(&layout),
            layout,
            dtype,
            device,
            readonly: cai.readonly,
            keep: Keep::Foreign,
        })
    }

    /// The view as a CUDA Array Interface (v3) description: byte strides
    /// (always given), no producer stream (the memory is ready for whatever
    /// stream orders after the work that wrote it).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a dtype the interface has no type string
    /// for (`bfloat16`, vectors of several lanes).
    pub fn cuda_array_interface(&self) -> Result<CudaArrayInterface> {
        let typestr = self.dtype.typestr().ok_or_else(|| {
            Error::invalid(
                "describing a view with the CUDA Array Interface",
                format!("the dtype {:?} has no type string", self.dtype),
            )
        })?;
        // `elem` times a stride fits: the layout's span did.
        let elem = self.layout.elem as i64;
        Ok(CudaArrayInterface {
            shape: self.layout.shape.clone(),
            typestr,
            data: self.ptr,
            readonly: self.readonly,
            strides: Some(
                self.layout
                    .strides
                    .iter()
                    .map(|&s| s.saturating_mul(elem))
                    .collect(),
            ),
            stream: None,
            version: 3,
        })
    }

    /// The address of the first element (a device address for CUDA memory).
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// The extents.
    pub fn shape(&self) -> &[i64] {
        &self.layout.shape
    }

    /// The strides, in elements.
    pub fn strides(&self) -> &[i64] {
        &self.layout.strides
    }

    /// The element type.
    pub fn dtype(&self) -> DLDataType {
        self.dtype
    }

    /// Where the memory lives.
    pub fn device(&self) -> DLDevice {
        self.device
    }

    /// Whether the producer allows only reads (a CUDA Array Interface's
    /// `data[1]`; views of this crate's memory and DLPack tensors are
    /// writable).
    pub fn readonly(&self) -> bool {
        self.readonly
    }

    /// The same view, read only (`cuda.core`'s `from_buffer(…,
    /// is_readonly=True)`): what writes through views refuse
    /// ([`copy_from_host`](Self::copy_from_host)). A view cannot be made
    /// writable again.
    #[must_use]
    pub fn into_readonly(mut self) -> Self {
        self.readonly = true;
        self
    }

    /// The number of elements.
    pub fn len(&self) -> u64 {
        self.layout.len
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the elements are compact and row-major.
    pub fn is_c_contiguous(&self) -> bool {
        self.layout.strides == row_major(&self.layout.shape)
    }

    /// Bytes from the first to one past the last element.
    pub fn extent_bytes(&self) -> u64 {
        self.layout.span
    }
}

// Deferred-release rule: the producer's deleter may free memory through CUDA,
// so on a driver callback thread it is handed to the deferred queue and called
// later, once, on an ordinary thread.
impl Drop for StridedMemoryView {
    fn drop(&mut self) {
        if let Keep::Tensor(t) = self.keep {
            let delete = |t: *mut DLManagedTensor| {
                // SAFETY: the view owns the tensor; its deleter runs once, here.
                if let Some(d) = unsafe { (*t).deleter } {
                    // SAFETY: as above.
                    unsafe { d(t) };
                }
            };
            if crate::deferred::must_defer() {
                // SAFETY: the owned tensor (the view is `Send`: its producer's
                // deleter may run on any thread); its one deletion moves to the
                // queue.
                unsafe { crate::deferred::defer_handle("releasing a DLPack tensor", t, delete) };
                return;
            }
            delete(t);
        }
    }
}

/// The bytes a producer's view vouches for beyond its elements: its span
/// when its elements fill it (packed, no gaps, no repeats), else none.
fn packed_reach(layout: &Layout) -> u64 {
    if layout.len.checked_mul(layout.elem as u64) == Some(layout.span) {
        layout.span
    } else {
        0
    }
}

/// The device and kind of memory of a pointer, asked of the driver.
fn pointer_device(ptr: u64, what: &'static str) -> Result<DLDevice> {
    crate::device::init()?;
    let mut ordinal: i32 = 0;
    let mut memory_type: u32 = 0;
    let mut managed: u32 = 0;
    for (attribute, out) in [
        (
            sys::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            (&raw mut ordinal).cast::<std::ffi::c_void>(),
        ),
        (
            sys::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            (&raw mut memory_type).cast(),
        ),
        (
            sys::CU_POINTER_ATTRIBUTE_IS_MANAGED,
            (&raw mut managed).cast(),
        ),
    ] {
        // SAFETY: each output is a live local of the size the attribute
        // writes (an int, a CUmemorytype, a bool as unsigned int).
        unsafe { sys::cuPointerGetAttribute(out, attribute, ptr) }
            .check(|| format!("{what}: asking the driver about address {ptr:#x}"))?;
    }
    let device_type = if managed != 0 {
        DLDeviceType::CUDA_MANAGED
    } else if memory_type == sys::CU_MEMORYTYPE_HOST.0 {
        DLDeviceType::CUDA_HOST
    } else {
        DLDeviceType::CUDA
    };
    Ok(DLDevice {
        device_type,
        device_id: ordinal,
    })
}

/// What a function can take to see its argument as a [`StridedMemoryView`]:
/// the Rust shape of `cuda.core`'s `args_viewable_as_strided_memory`.
/// Implemented for a view itself (one made from DLPack or the CUDA Array
/// Interface), `Arc<Buffer>` (bytes, `uint8`), `Arc<DeviceBuffer<T>>` and
/// [`ArcView<T>`] (one dimension of `T`'s dtype), and references to the
/// shared handles.
///
/// ```no_run
/// use cudars_core::{IntoStridedMemoryView, Result};
/// fn describe(x: impl IntoStridedMemoryView) -> Result<String> {
///     let v = x.into_strided_memory_view()?;
///     Ok(format!("{:?} of {:?} at {:#x}", v.shape(), v.dtype(), v.ptr()))
/// }
/// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> Result<()> {
/// let a = std::sync::Arc::new(cudars_core::DeviceBuffer::from_host(dev, &[1u32, 2, 3], s)?);
/// describe(&a)?;
/// describe(a.shared_slice(1..)?)?;
/// # Ok(()) }
/// ```
pub trait IntoStridedMemoryView {
    /// The view, with no stream ordering (`cuda.core`'s `view(-1)`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the memory cannot be described (a
    /// length past `i64::MAX`); the producer's error.
    fn into_strided_memory_view(self) -> Result<StridedMemoryView>;

    /// The view, with work queued on `consumer` after this call ordered after
    /// the producer's work on the memory (`cuda.core`'s `view(stream_ptr)`;
    /// the stream-taking rule, 2 of the soundness contract, from the
    /// consumer's side).
    ///
    /// What the producer's work is depends on the argument: for this crate's
    /// memory (a [`Buffer`], [`DeviceBuffer`] or [`ArcView`], and a view of
    /// one), everything queued on the allocation so far, on any stream (each
    /// use is ordered before the allocation's free stream, so `consumer` waits
    /// for that stream); for a CUDA Array Interface
    /// ([`ForeignCudaArray`](crate::ForeignCudaArray)), the description's
    /// producer `stream`; for a DLPack producer
    /// ([`ViaDLPack`](crate::ViaDLPack)), whatever the producer orders when it
    /// is asked for a tensor for `consumer`. A view already made from a DLPack
    /// tensor or a description has nothing left to order (it was ordered, or
    /// not, when it was made). The default converts, then orders `consumer`
    /// after the view's allocation as above; a type with a producer stream of
    /// its own overrides it.
    ///
    /// # Errors
    /// As [`into_strided_memory_view`](Self::into_strided_memory_view); the
    /// driver's error when the streams cannot be ordered.
    fn into_strided_memory_view_on(self, consumer: &Stream) -> Result<StridedMemoryView>
    where
        Self: Sized,
    {
        let view = self.into_strided_memory_view()?;
        view.order_after_producer(consumer)?;
        Ok(view)
    }
}

impl IntoStridedMemoryView for StridedMemoryView {
    fn into_strided_memory_view(self) -> Result<StridedMemoryView> {
        Ok(self)
    }
}

impl IntoStridedMemoryView for &Arc<Buffer> {
    fn into_strided_memory_view(self) -> Result<StridedMemoryView> {
        let shape = one_dim(self.size(), "viewing a buffer as strided memory")?;
        StridedMemoryView::from_buffer(self, &shape, None, DLDataType::U8)
    }
}

impl IntoStridedMemoryView for Arc<Buffer> {
    fn into_strided_memory_view(self) -> Result<StridedMemoryView> {
        (&self).into_strided_memory_view()
    }
}

impl<T: DLPackDType> IntoStridedMemoryView for &ArcView<T> {
    fn into_strided_memory_view(self) -> Result<StridedMemoryView> {
        let shape = one_dim(self.len(), "viewing typed memory as strided memory")?;
        StridedMemoryView::from_view(self, &shape, None)
    }
}

impl<T: DLPackDType> IntoStridedMemoryView for ArcView<T> {
    fn into_strided_memory_view(self) -> Result<StridedMemoryView> {
        (&self).into_strided_memory_view()
    }
}

impl<T: DLPackDType + Pod + Send + Sync> IntoStridedMemoryView for &Arc<DeviceBuffer<T>> {
    fn into_strided_memory_view(self) -> Result<StridedMemoryView> {
        self.shared_view().into_strided_memory_view()
    }
}

impl<T: DLPackDType + Pod + Send + Sync> IntoStridedMemoryView for Arc<DeviceBuffer<T>> {
    fn into_strided_memory_view(self) -> Result<StridedMemoryView> {
        self.shared_view().into_strided_memory_view()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::InvalidKind;
    use crate::error::kind_of as kind;
    use crate::memory::arc_view::host_backed;

    #[test]
    fn type_strings_map_to_dtypes_and_back() {
        let cases = [
            ("<f4", DLDataType::F32),
            ("<f8", DLDataType::F64),
            ("<f2", DLDataType::F16),
            ("|b1", DLDataType::BOOL),
            ("|i1", DLDataType::I8),
            ("<i2", DLDataType::I16),
            ("<i4", DLDataType::I32),
            ("<i8", DLDataType::I64),
            ("|u1", DLDataType::U8),
            ("<u2", DLDataType::U16),
            ("<u4", DLDataType::U32),
            ("<u8", DLDataType::U64),
            ("<c8", DLDataType::C64),
            ("<c16", DLDataType::C128),
        ];
        for (s, d) in cases {
            assert_eq!(DLDataType::from_typestr(s).unwrap(), d, "{s}");
            assert_eq!(d.typestr().as_deref(), Some(s));
        }
        // Other spellings of the same types.
        assert_eq!(DLDataType::from_typestr("<u1").unwrap(), DLDataType::U8);
        assert_eq!(DLDataType::from_typestr(">i1").unwrap(), DLDataType::I8);
        assert_eq!(DLDataType::from_typestr("=f4").unwrap(), DLDataType::F32);
        assert_eq!(DLDataType::BF16.typestr(), None);
        let vector = DLDataType {
            lanes: 4,
            ..DLDataType::F32
        };
        assert_eq!(vector.typestr(), None);
    }

    #[test]
    fn bad_type_strings_are_refused_with_the_reason() {
        for (s, why) in [
            ("", "too short"),
            ("<", "too short"),
            ("<f", "not a number"),
            ("<f4x", "not a number"),
            ("<f-4", "not a number"),
            ("<f99999999999", "32 bits"),
            (">f4", "big-endian"),
            ("|f4", "multi-byte"),
            ("!f4", "byte order"),
            ("<V8", "kind"),
            ("<M8", "kind"),
            ("<f1", "no DLPack dtype"),
            ("<c4", "no DLPack dtype"),
            ("<b2", "no DLPack dtype"),
            ("<i16", "no DLPack dtype"),
            ("<é4", "kind"),
            ("|b01", "leading zero"),
            ("<f0", "leading zero"),
        ] {
            let e = DLDataType::from_typestr(s).unwrap_err();
            assert_eq!(e.invalid_kind(), Some(InvalidKind::Other), "{s}");
            let text = e.to_string();
            assert!(text.contains(why), "{s}: {text}");
            assert!(text.contains(&format!("`{s}`")), "{s}: {text}");
        }
    }

    #[test]
    fn descriptions_are_checked_before_any_driver_call() {
        let ok = CudaArrayInterface::new(0x1000, &[4, 6], "<f4");
        let (dtype, layout) = ok.check().unwrap();
        assert_eq!(dtype, DLDataType::F32);
        assert_eq!(
            (layout.strides.as_slice(), layout.len),
            (&[6i64, 1][..], 24)
        );
        assert_eq!(layout.span, 96);

        // Byte strides become element strides: a transposed 4x6 matrix.
        let t = CudaArrayInterface {
            shape: vec![6, 4],
            strides: Some(vec![4, 24]),
            ..ok.clone()
        };
        let (_, layout) = t.check().unwrap();
        assert_eq!(
            (layout.strides.as_slice(), layout.span),
            (&[1i64, 6][..], 96)
        );

        let refused = |cai: CudaArrayInterface, k: InvalidKind, why: &str| {
            let e = cai.check().unwrap_err();
            assert_eq!(e.invalid_kind(), Some(k), "{cai:?}");
            assert!(e.to_string().contains(why), "{cai:?}: {e}");
        };
        let with = |f: &dyn Fn(&mut CudaArrayInterface)| {
            let mut c = ok.clone();
            f(&mut c);
            c
        };
        refused(with(&|c| c.version = 2), InvalidKind::Other, "version 2");
        refused(
            with(&|c| c.stream = Some(0)),
            InvalidKind::Other,
            "stream 0",
        );
        refused(
            with(&|c| c.typestr = "<V4".into()),
            InvalidKind::Other,
            "kind",
        );
        refused(
            with(&|c| c.strides = Some(vec![24, 2])),
            InvalidKind::Other,
            "a stride of 2 bytes",
        );
        refused(
            with(&|c| c.strides = Some(vec![24])),
            InvalidKind::Other,
            "2 extents and 1 strides",
        );
        refused(
            with(&|c| c.strides = Some(vec![-24, 4])),
            InvalidKind::Other,
            "negative strides",
        );
        refused(
            with(&|c| c.shape = vec![-1, 6]),
            InvalidKind::Other,
            "negative extent",
        );
        refused(with(&|c| c.data = 0), InvalidKind::Other, "null");
        refused(
            with(&|c| c.data = u64::MAX - 10),
            InvalidKind::OutOfRange,
            "end of the address space",
        );
        refused(
            with(&|c| {
                c.shape = vec![1 << 62, 8];
                c.strides = Some(vec![32, 4]);
            }),
            InvalidKind::Other,
            "64 bits",
        );
        // An empty array may have a null address; a zero stride is allowed.
        assert!(
            with(&|c| {
                c.data = 0;
                c.shape = vec![0, 6];
            })
            .check()
            .is_ok()
        );
        let (_, broadcast) = with(&|c| c.strides = Some(vec![0, 4])).check().unwrap();
        assert_eq!((broadcast.len, broadcast.span), (24, 24));
    }

    #[test]
    fn views_of_this_crates_memory_check_their_layout_and_hold_it() {
        // `f32`s, so that the bytes are aligned for them (a `Vec<u8>` need not be).
        let mut mem: Vec<f32> = (0..24).map(|i| i as f32).collect();
        let buf = host_backed(bytemuck::cast_slice_mut(&mut mem));

        let v = StridedMemoryView::from_buffer(&buf, &[4, 6], None, DLDataType::F32).unwrap();
        assert_eq!(
            (v.ptr(), v.shape(), v.strides()),
            (buf.ptr(), &[4i64, 6][..], &[6i64, 1][..])
        );
        assert!(v.is_c_contiguous() && !v.readonly());
        assert_eq!((v.len(), v.extent_bytes()), (24, 96));
        assert_eq!(v.device().device_type, DLDeviceType::CUDA_HOST);
        assert_eq!(Arc::strong_count(&buf), 2, "the view holds the buffer");
        drop(v);
        assert_eq!(Arc::strong_count(&buf), 1);

        // A column of the matrix, by strides.
        let col = StridedMemoryView::from_buffer(&buf, &[4], Some(&[6]), DLDataType::F32).unwrap();
        assert_eq!((col.len(), col.extent_bytes()), (4, 76));
        drop(col);
        for (shape, strides, dtype, k) in [
            (&[25i64][..], None, DLDataType::F32, InvalidKind::OutOfRange),
            (
                &[4, 7][..],
                Some(&[6i64, 1][..]),
                DLDataType::F32,
                InvalidKind::OutOfRange,
            ),
            (&[13][..], None, DLDataType::F64, InvalidKind::OutOfRange),
            (
                &[4, 6][..],
                Some(&[6i64][..]),
                DLDataType::F32,
                InvalidKind::Other,
            ),
            (&[-4][..], None, DLDataType::F32, InvalidKind::Other),
            (
                &[2][..],
                None,
                DLDataType {
                    bits: 4,
                    ..DLDataType::U8
                },
                InvalidKind::Other,
            ),
        ] {
            assert_eq!(
                kind(StridedMemoryView::from_buffer(&buf, shape, strides, dtype)),
                k,
                "{shape:?} {strides:?}"
            );
        }

        // A typed view: the tile from element 7 on, inside the view only.
        let all = ArcView::<f32>::of_buffer(&buf).unwrap();
        let tail = all.slice(7..).unwrap();
        let tile = StridedMemoryView::from_view(&tail, &[3, 4], Some(&[6, 1])).unwrap();
        assert_eq!(
            (tile.ptr(), tile.dtype()),
            (buf.ptr() + 28, DLDataType::F32)
        );
        assert_eq!(
            kind(StridedMemoryView::from_view(&tail, &[3, 6], Some(&[6, 1]))),
            InvalidKind::OutOfRange,
        );
        let cai = tile.cuda_array_interface().unwrap();
        assert_eq!(cai.typestr, "<f4");
        assert_eq!(cai.strides.as_deref(), Some(&[24i64, 4][..]));
        assert_eq!(
            (cai.data, cai.version, cai.stream),
            (buf.ptr() + 28, 3, None)
        );
        let (_, back) = cai.check().unwrap();
        assert_eq!(back, tile.layout);
        drop((all, tail));
        assert_eq!(Arc::strong_count(&buf), 2, "the tile holds the buffer");
        drop(tile);

        // The trait, for each of the crate's kinds of memory.
        let bytes = (&buf).into_strided_memory_view().unwrap();
        assert_eq!(
            (bytes.shape(), bytes.dtype()),
            (&[96i64][..], DLDataType::U8)
        );
        let typed = ArcView::<u32>::of_buffer(&buf)
            .unwrap()
            .slice(2..5)
            .unwrap()
            .into_strided_memory_view()
            .unwrap();
        assert_eq!(
            (typed.shape(), typed.dtype(), typed.ptr()),
            (&[3i64][..], DLDataType::U32, buf.ptr() + 8)
        );
        let again = typed.into_strided_memory_view().unwrap();
        assert_eq!(again.len(), 3);
        drop((bytes, again));
        assert_eq!(Arc::strong_count(&buf), 1);
    }

    mod hostile {
        use super::*;
        use proptest::prelude::*;

        fn extent() -> impl Strategy<Value = i64> {
            prop_oneof![-2i64..=5, Just(i64::MAX), Just(1 << 40), any::<i64>()]
        }

        fn typestr() -> impl Strategy<Value = String> {
            prop_oneof![
                "[<>|=][biufcVM][0-9]{1,3}",
                ".{0,6}",
                Just("<f4".to_owned()),
                Just("|u1".to_owned()),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(cudars_tests::proptest_cases(512)))]

            /// Any type string: a dtype that prints back to a spelling of it,
            /// or a typed refusal.
            #[test]
            fn type_strings_parse_or_are_refused(s in typestr()) {
                match DLDataType::from_typestr(&s) {
                    Ok(d) => {
                        let back = d.typestr().unwrap();
                        prop_assert_eq!(&back[1..], &s[1..]);
                        prop_assert_eq!(d.size_bytes(), Some(s[2..].parse::<usize>().unwrap()));
                    }
                    Err(e) => prop_assert_eq!(e.invalid_kind(), Some(InvalidKind::Other)),
                }
            }

            /// Any description: a layout whose figures agree with a wide
            /// brute-force computation, or a typed refusal.
            #[test]
            fn descriptions_check_or_are_refused(
                shape in proptest::collection::vec(extent(), 0..4),
                strides in proptest::option::of(proptest::collection::vec(extent(), 0..4)),
                data in prop_oneof![Just(0u64), Just(0x1000u64), any::<u64>()],
                s in typestr(),
                version in 0u32..5,
                stream in proptest::option::of(0u64..4),
            ) {
                let cai = CudaArrayInterface {
                    shape: shape.clone(),
                    typestr: s,
                    data,
                    readonly: false,
                    strides: strides.clone(),
                    stream,
                    version,
                };
                match cai.check() {
                    Ok((dtype, layout)) => {
                        let elem = dtype.size_bytes().unwrap() as i128;
                        prop_assert!(version >= 3 && stream != Some(0));
                        let count = shape.iter().map(|&n| n as i128).product::<i128>();
                        prop_assert_eq!(count, i128::from(layout.len));
                        let span = if count == 0 {
                            0
                        } else {
                            let bytes = strides.unwrap_or_else(|| {
                                row_major(&shape).iter().map(|&st| st * elem as i64).collect()
                            });
                            let last: i128 = shape
                                .iter()
                                .zip(&bytes)
                                .map(|(&n, &b)| (n as i128 - 1) * b as i128)
                                .sum();
                            last + elem
                        };
                        prop_assert_eq!(span, i128::from(layout.span));
                        prop_assert!(data != 0 || count == 0);
                        prop_assert!(u128::from(data) + layout.span as u128 <= u128::from(u64::MAX));
                    }
                    Err(e) => prop_assert!(e.invalid_kind().is_some(), "{e:?}"),
                }
            }
        }
    }
}
