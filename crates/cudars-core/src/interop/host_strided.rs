//! Strided views of host memory: [`StridedHostView`], a safe view over a
//! borrowed slice ([`StridedMemoryView::from_slice`],
//! [`StridedMemoryView::from_slice_mut`]), and [`ArrayInterface`], NumPy's
//! `__array_interface__` ([`StridedMemoryView::from_array_interface`], the host
//! mirror of [`StridedMemoryView::from_cuda_array_interface`]).
//!
//! Architecture Invariant: a host view made in safe code borrows its slice for
//! as long as it lives (the [`StridedHostView`] carries the slice's lifetime and
//! lends the view only by reference, so it cannot be moved out and outlive the
//! slice), and its layout is checked by the one layout check ([`Layout::check`])
//! against the slice's size: every element the shape and strides reach lies in
//! the slice.

use std::marker::PhantomData;
use std::ops::Deref;

use crate::error::Result;
use crate::interop::dlpack::DLPackDType;
use crate::interop::layout::Layout;
use crate::interop::strided::IntoStridedMemoryView;
use crate::stream::Stream;
use crate::{interop::cai::CudaArrayInterface, interop::strided::StridedMemoryView};

/// NumPy's array interface (`__array_interface__`, version 3): the description
/// of a strided array in host memory. The fields are those of the Python dict;
/// [`StridedMemoryView::from_array_interface`] reads it.
///
/// ```
/// use cudars_core::{ArrayInterface, StridedMemoryView};
/// let data = vec![0f32; 4 * 6];
/// // `a = np.zeros((4, 6), np.float32); a[:, ::2].__array_interface__`
/// let mut ai = ArrayInterface::new(data.as_ptr() as u64, &[4, 3], "<f4");
/// ai.strides = Some(vec![24, 8]);
/// // SAFETY: `data` outlives the view and is not written while it lives.
/// let v = unsafe { StridedMemoryView::from_array_interface(&ai) }?;
/// assert_eq!((v.shape(), v.strides()), (&[4, 3][..], &[6, 2][..]));
/// # Ok::<(), cudars_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayInterface {
    /// Extents.
    pub shape: Vec<i64>,
    /// The element type, as `"<f4"`.
    pub typestr: String,
    /// The address of the first element (the first of the `data` tuple).
    pub data: u64,
    /// Whether the array is read only (the second of the `data` tuple).
    pub readonly: bool,
    /// Strides in **bytes**, or `None` for row-major.
    pub strides: Option<Vec<i64>>,
    /// The interface version (3).
    pub version: u32,
}

impl ArrayInterface {
    /// A row-major, writable, version-3 description.
    pub fn new(data: u64, shape: &[i64], typestr: &str) -> Self {
        Self {
            shape: shape.to_vec(),
            typestr: typestr.to_owned(),
            data,
            readonly: false,
            strides: None,
            version: 3,
        }
    }
}

/// A [`StridedMemoryView`] of a host slice that it borrows for `'a`: made by
/// [`StridedMemoryView::from_slice`] (read only) and
/// [`StridedMemoryView::from_slice_mut`] (writable), in safe code; or any
/// view an [`IntoStridedView`] argument gives (one that holds its memory is
/// wrapped as it is). It
/// dereferences to the view, which it lends only by reference, so the view
/// cannot outlive the slice:
///
/// ```compile_fail,E0597
/// use cudars_core::StridedMemoryView;
/// let v;
/// {
///     let data = vec![0u8; 16];
///     v = StridedMemoryView::from_slice(&data, &[4, 4], None).unwrap();
/// }
/// let _ = v.shape();
/// ```
///
/// nor be moved out of it:
///
/// ```compile_fail,E0507
/// use cudars_core::StridedMemoryView;
/// let data = vec![0u8; 16];
/// let owned: StridedMemoryView = *StridedMemoryView::from_slice(&data, &[16], None).unwrap();
/// ```
pub struct StridedHostView<'a> {
    view: StridedMemoryView,
    _slice: PhantomData<&'a mut [u8]>,
}

impl std::fmt::Debug for StridedHostView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.view.fmt(f)
    }
}

/// What a function takes to accept host slices and device arrays alike, as
/// `cuda.core`'s `args_viewable_as_strided_memory` takes NumPy and CuPy
/// arrays: a [`StridedHostView`] (a view borrowing a host slice, for `'a`) and
/// everything that is an [`IntoStridedMemoryView`] (buffers, typed views,
/// DLPack and CUDA Array Interface views, which hold their memory). The view
/// comes back as a [`StridedHostView<'a>`], which lends the
/// [`StridedMemoryView`] by reference, so a borrowed slice's view cannot
/// outlive the slice.
///
/// ```
/// use cudars_core::{IntoStridedView, Result, StridedMemoryView};
/// fn describe<'a>(x: impl IntoStridedView<'a>) -> Result<(Vec<i64>, bool)> {
///     let v = x.into_strided_view()?;
///     Ok((v.shape().to_vec(), v.is_device_accessible()))
/// }
/// let host = vec![0f32; 6];
/// let v = StridedMemoryView::from_slice(&host, &[2, 3], None)?;
/// assert_eq!(describe(v)?, (vec![2, 3], false));
/// // A device array (`Arc<DeviceBuffer<f32>>`, an `ArcView`, …) goes through the same function.
/// # Ok::<(), cudars_core::Error>(())
/// ```
///
/// The view of a slice that comes back borrows the slice as the argument did:
///
/// ```compile_fail,E0597
/// use cudars_core::{IntoStridedView, StridedHostView, StridedMemoryView};
/// fn view_of<'a>(x: impl IntoStridedView<'a>) -> StridedHostView<'a> {
///     x.into_strided_view().unwrap()
/// }
/// let v;
/// {
///     let data = vec![0u8; 16];
///     v = view_of(StridedMemoryView::from_slice(&data, &[16], None).unwrap());
/// }
/// let _ = v.shape();
/// ```
pub trait IntoStridedView<'a> {
    /// The view, with no stream ordering (`cuda.core`'s `view(-1)`).
    ///
    /// # Errors
    /// As [`IntoStridedMemoryView::into_strided_memory_view`].
    fn into_strided_view(self) -> Result<StridedHostView<'a>>;

    /// The view, with work queued on `consumer` from now on ordered after the
    /// producer's (as
    /// [`IntoStridedMemoryView::into_strided_memory_view_on`]; nothing for a
    /// host slice, which no stream writes).
    ///
    /// # Errors
    /// As [`IntoStridedMemoryView::into_strided_memory_view_on`].
    fn into_strided_view_on(self, consumer: &Stream) -> Result<StridedHostView<'a>>;
}

impl<'a, X: IntoStridedMemoryView> IntoStridedView<'a> for X {
    fn into_strided_view(self) -> Result<StridedHostView<'a>> {
        Ok(StridedHostView {
            view: self.into_strided_memory_view()?,
            _slice: PhantomData,
        })
    }

    fn into_strided_view_on(self, consumer: &Stream) -> Result<StridedHostView<'a>> {
        Ok(StridedHostView {
            view: self.into_strided_memory_view_on(consumer)?,
            _slice: PhantomData,
        })
    }
}

impl<'a> IntoStridedView<'a> for StridedHostView<'a> {
    fn into_strided_view(self) -> Result<StridedHostView<'a>> {
        Ok(self)
    }

    fn into_strided_view_on(self, _consumer: &Stream) -> Result<StridedHostView<'a>> {
        Ok(self)
    }
}

impl<'a> StridedHostView<'a> {
    /// [`StridedMemoryView::view`] of a host view: the same slice, borrowed
    /// for as long, seen through `layout` and as `dtype`.
    ///
    /// # Errors
    /// As [`StridedMemoryView::view`].
    pub fn view(
        self,
        layout: Option<&crate::interop::strided_layout::StridedLayout>,
        dtype: Option<crate::interop::dlpack::DLDataType>,
    ) -> Result<StridedHostView<'a>> {
        Ok(StridedHostView {
            view: self.view.view(layout, dtype)?,
            _slice: PhantomData,
        })
    }
}

impl Deref for StridedHostView<'_> {
    type Target = StridedMemoryView;

    fn deref(&self) -> &StridedMemoryView {
        &self.view
    }
}

impl StridedMemoryView {
    /// A view of NumPy's array interface (`__array_interface__`), the host
    /// counterpart of
    /// [`from_cuda_array_interface`](Self::from_cuda_array_interface) (Python's
    /// `StridedMemoryView.from_array_interface(a)`): strides in bytes are turned
    /// into elements, and the layout is checked as every way in checks it. The
    /// view's device is the CPU; it keeps nothing alive. Memory in a slice is
    /// better viewed with [`from_slice`](Self::from_slice), which is safe.
    ///
    /// # Safety
    /// `data` must be the address of host memory that holds every element the
    /// shape and strides reach, aligned for the element type, and stays valid
    /// (and, unless `readonly`, not accessed by anything else) for as long as
    /// the view or anything made from it (a DLPack tensor exported from it
    /// included) is used.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a version
    /// before 3, a type string with no DLPack dtype, strides that are not whole
    /// elements or negative, a null address for a non-empty array, or a layout
    /// past the end of the address space.
    pub unsafe fn from_array_interface(ai: &ArrayInterface) -> Result<Self> {
        let description = CudaArrayInterface {
            shape: ai.shape.clone(),
            typestr: ai.typestr.clone(),
            data: ai.data,
            readonly: ai.readonly,
            strides: ai.strides.clone(),
            stream: None,
            version: ai.version,
        };
        let (dtype, layout) =
            description.check_as("reading a NumPy array interface description")?;
        Ok(Self::of_host(ai.data, layout, dtype, ai.readonly, false))
    }

    /// A read-only view of `data` with `shape` and `strides` (in elements;
    /// `None` for row-major), borrowing it: the safe host constructor. Every
    /// element the layout reaches must lie in `data` (checked).
    ///
    /// ```
    /// use cudars_core::StridedMemoryView;
    /// let m: Vec<f32> = (0..24).map(|i| i as f32).collect(); // 4x6, row-major
    /// // The 3x4 tile from row 1, column 2 on.
    /// let tile = StridedMemoryView::from_slice(&m[8..], &[3, 4], Some(&[6, 1]))?;
    /// assert_eq!(tile.ptr(), m[8..].as_ptr() as u64);
    /// assert!(tile.readonly() && !tile.is_c_contiguous());
    /// // One element more would pass the end of the slice.
    /// assert!(StridedMemoryView::from_slice(&m[9..], &[3, 4], Some(&[6, 1])).is_err());
    /// # Ok::<(), cudars_core::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for as many
    /// strides as extents, negative extents or strides, or a layout that reaches
    /// past the slice ([`InvalidKind::OutOfRange`](crate::InvalidKind::OutOfRange)).
    pub fn from_slice<'a, T: DLPackDType>(
        data: &'a [T],
        shape: &[i64],
        strides: Option<&[i64]>,
    ) -> Result<StridedHostView<'a>> {
        host_view(
            data.as_ptr() as u64,
            size_of_val(data),
            shape,
            strides,
            T::DTYPE,
            true,
        )
    }

    /// A writable view of `data`, borrowing it mutably for as long as the view
    /// lives (see [`from_slice`](Self::from_slice)).
    ///
    /// # Errors
    /// As [`from_slice`](Self::from_slice).
    pub fn from_slice_mut<'a, T: DLPackDType>(
        data: &'a mut [T],
        shape: &[i64],
        strides: Option<&[i64]>,
    ) -> Result<StridedHostView<'a>> {
        host_view(
            data.as_mut_ptr() as u64,
            size_of_val(data),
            shape,
            strides,
            T::DTYPE,
            false,
        )
    }
}

/// The one body of the slice constructors: the layout checked against the
/// slice's `bytes`.
fn host_view<'a>(
    ptr: u64,
    bytes: usize,
    shape: &[i64],
    strides: Option<&[i64]>,
    dtype: crate::interop::dlpack::DLDataType,
    readonly: bool,
) -> Result<StridedHostView<'a>> {
    let layout = Layout::check(
        shape,
        strides,
        dtype,
        Some(bytes as u64),
        "viewing a host slice as strided memory",
    )?;
    Ok(StridedHostView {
        view: StridedMemoryView::of_host(ptr, layout, dtype, readonly, true),
        _slice: PhantomData,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::InvalidKind;
    use crate::error::kind_of as kind;
    use crate::{interop::dlpack::DLDataType, interop::dlpack::DLDeviceType};

    #[test]
    fn a_slice_view_reaches_only_elements_of_the_slice() {
        let m: Vec<u16> = (0..24).collect();
        let tile = StridedMemoryView::from_slice(&m[8..], &[3, 4], Some(&[6, 1])).unwrap();
        assert_eq!(tile.ptr(), m[8..].as_ptr() as u64);
        assert_eq!((tile.len(), tile.extent_bytes()), (12, 16 * 2));
        assert_eq!(tile.dtype(), DLDataType::U16);
        assert_eq!(tile.device().device_type, DLDeviceType::CPU);
        assert!(tile.readonly());
        // The last element reached is m[8 + 2*6 + 3] = m[23], the slice's last:
        // one element less of slice and it is out of range.
        let e = StridedMemoryView::from_slice(&m[9..], &[3, 4], Some(&[6, 1]));
        assert_eq!(kind(e.map(drop)), InvalidKind::OutOfRange);
        // Row-major by default; the whole slice and no more.
        let all = StridedMemoryView::from_slice(&m, &[4, 6], None).unwrap();
        assert!(all.is_c_contiguous());
        assert!(StridedMemoryView::from_slice(&m, &[5, 5], None).is_err());
        // Zero strides (a broadcast) reach one element.
        let b = StridedMemoryView::from_slice(&m[23..], &[100, 100], Some(&[0, 0])).unwrap();
        assert_eq!((b.len(), b.extent_bytes()), (10_000, 2));
        // Negative strides, and a stride count that differs, are refused.
        assert!(StridedMemoryView::from_slice(&m, &[2, 2], Some(&[-1, 1])).is_err());
        assert!(StridedMemoryView::from_slice(&m, &[2, 2], Some(&[1])).is_err());
        assert!(StridedMemoryView::from_slice(&m, &[-1], None).is_err());
        // An empty slice takes an empty shape only.
        let none: &[f64] = &[];
        assert_eq!(
            StridedMemoryView::from_slice(none, &[0, 3], None)
                .unwrap()
                .len(),
            0
        );
        assert!(StridedMemoryView::from_slice(none, &[1], None).is_err());
        let mut w = vec![0f32; 6];
        let v = StridedMemoryView::from_slice_mut(&mut w, &[2, 3], None).unwrap();
        assert!(!v.readonly());
        assert!(format!("{v:?}").contains("a borrowed host slice"), "{v:?}");
    }

    #[test]
    fn the_array_interface_is_read_as_numpy_writes_it() {
        let data = [0f32; 24];
        let addr = data.as_ptr() as u64;
        // `a[:, ::2]` of a (4, 6) float32 array: strides in bytes.
        let mut ai = ArrayInterface::new(addr, &[4, 3], "<f4");
        ai.strides = Some(vec![24, 8]);
        ai.readonly = true;
        // SAFETY: the layout lies in `data`, which outlives the view.
        let v = unsafe { StridedMemoryView::from_array_interface(&ai) }.unwrap();
        assert_eq!((v.ptr(), v.strides()), (addr, &[6i64, 2][..]));
        assert_eq!(v.dtype(), DLDataType::F32);
        assert!(v.readonly());
        assert_eq!(v.device().device_type, DLDeviceType::CPU);
        // What the description's rules refuse, with the host interface's name.
        let bad = |f: &dyn Fn(&mut ArrayInterface)| {
            let mut x = ai.clone();
            f(&mut x);
            // SAFETY: refused before any memory is named.
            unsafe { StridedMemoryView::from_array_interface(&x) }.unwrap_err()
        };
        let e = bad(&|x| x.strides = Some(vec![24, 6]));
        assert!(e.to_string().contains("NumPy array interface"), "{e}");
        bad(&|x| x.version = 2);
        bad(&|x| x.typestr = "<f3".into());
        bad(&|x| x.data = 0);
        bad(&|x| x.data = u64::MAX - 8);
        // A null address is fine for an empty array.
        let empty = ArrayInterface::new(0, &[0], "|u1");
        // SAFETY: no element is reached.
        let none = unsafe { StridedMemoryView::from_array_interface(&empty) }.unwrap();
        assert!(none.is_empty());
    }
}
