//! Where a [`StridedMemoryView`] leads: copies of its elements to and from a
//! packed host slice ([`StridedMemoryView::copy_to_host`],
//! [`StridedMemoryView::copy_from_host`]), in row-major order, and a typed
//! [`DeviceView`] of a contiguous view ([`StridedMemoryView::as_device_view`]).
//! (The DLPack export is in `dlpack.rs`, the tensor map in `tensor_map.rs`.)
//!
//! Architecture Invariant: a strided copy touches only the view's elements. It
//! is planned by one pure function ([`plan`]): one 2-D copy
//! (`cuMemcpy2DAsync`) per run of rows the layout makes, each row the
//! contiguous innermost extent (or one element, where the innermost stride is
//! not 1), so the gaps between elements are never written; and it waits for
//! its stream before the host slice is handed back (rule 3 of the soundness
//! contract).

use bytemuck::Pod;
use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::interop::dlpack::{DLDeviceType, DLPackDType};
use crate::{interop::strided::StridedMemoryView, memory::view::DeviceView, stream::Stream};

/// One 2-D copy of a strided copy: `height` rows of `width` bytes, the view's
/// rows `pitch` bytes apart from `offset`, the host's packed from `host`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rows {
    /// Bytes from the view's first element to the first row.
    offset: u64,
    /// Bytes from the host slice's start.
    host: usize,
    /// Bytes per row.
    width: usize,
    /// Rows.
    height: usize,
    /// Bytes between the view's rows.
    pitch: usize,
}

/// The 2-D copies that move the elements of a layout (`shape`, `strides` in
/// elements, `elem`-byte elements) to and from a packed row-major host array,
/// in order. A contiguous layout is one copy; rows closer than their width
/// (zero or overlapping strides) are copied one by one.
fn plan(shape: &[i64], strides: &[i64], elem: usize, what: &'static str) -> Result<Vec<Rows>> {
    let too_large = || Error::invalid(what, "the layout does not fit the address space");
    let dims: Vec<usize> = shape
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| too_large()))
        .collect::<Result<_>>()?;
    let steps: Vec<usize> = strides
        .iter()
        .map(|&s| {
            usize::try_from(s)
                .ok()
                .and_then(|s| s.checked_mul(elem))
                .ok_or_else(too_large)
        })
        .collect::<Result<_>>()?;
    if dims.contains(&0) {
        return Ok(Vec::new());
    }
    let len: usize = dims.iter().product();
    let rank = dims.len();
    if strides == crate::interop::layout::row_major(shape).as_slice() || rank == 0 {
        let width = len.checked_mul(elem).ok_or_else(too_large)?;
        return Ok(vec![Rows {
            offset: 0,
            host: 0,
            width,
            height: 1,
            pitch: width,
        }]);
    }
    // The innermost dimension is a row when it is contiguous (or one element);
    // otherwise each of its elements is a row of one element.
    let contiguous = steps[rank - 1] == elem || dims[rank - 1] == 1;
    let (width, height, pitch, outer) = if contiguous {
        let width = dims[rank - 1] * elem;
        if rank >= 2 {
            (width, dims[rank - 2], steps[rank - 2], rank - 2)
        } else {
            (width, 1, width, 0)
        }
    } else {
        (elem, dims[rank - 1], steps[rank - 1], rank - 1)
    };
    let block = width * height;
    let mut out = Vec::new();
    let mut index = vec![0usize; outer];
    let mut host = 0usize;
    loop {
        let offset = index
            .iter()
            .zip(&steps)
            .try_fold(0u64, |o, (&i, &s)| {
                (i as u64)
                    .checked_mul(s as u64)
                    .and_then(|x| o.checked_add(x))
            })
            .ok_or_else(too_large)?;
        if pitch >= width || height == 1 {
            out.push(Rows {
                offset,
                host,
                width,
                height,
                pitch: pitch.max(width),
            });
        } else {
            for r in 0..height {
                out.push(Rows {
                    offset: offset + (r * pitch) as u64,
                    host: host + r * width,
                    width,
                    height: 1,
                    pitch: width,
                });
            }
        }
        host += block;
        // The next outer index, row-major.
        let mut d = outer;
        loop {
            if d == 0 {
                return Ok(out);
            }
            d -= 1;
            index[d] += 1;
            if index[d] < dims[d] {
                break;
            }
            index[d] = 0;
        }
    }
}

/// Which way a strided copy goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    ToHost,
    FromHost,
}

impl StridedMemoryView {
    /// Copies the view's elements into `dst`, packed in row-major (C) order,
    /// and waits for the copy: Python's `np.asarray(view)` of a device array
    /// (`cp.asnumpy`). Only the view's elements are read; a contiguous view is
    /// one copy, a strided one a 2-D copy per run of rows. A view of host
    /// memory (a slice or NumPy array) is copied on the host, without `stream`.
    /// The slice is handed back only after the copies ran (rule 3 of the
    /// soundness contract, `docs/architecture.md`).
    ///
    /// ```no_run
    /// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// use std::sync::Arc;
    /// use cudars_core::{DeviceBuffer, StridedMemoryView};
    /// let m = Arc::new(DeviceBuffer::from_host(dev, &(0..24).map(|i| i as f32).collect::<Vec<_>>(), s)?);
    /// // Column 1 of the 4x6 matrix.
    /// let col = StridedMemoryView::from_view(&m.shared_slice(1..)?, &[4], Some(&[6]))?;
    /// let mut out = [0f32; 4];
    /// col.copy_to_host(&mut out, s)?;
    /// assert_eq!(out, [1.0, 7.0, 13.0, 19.0]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `T` is not the view's dtype, `dst` is not
    /// the view's length, or `stream` is of another device than the view's
    /// memory; the driver's error (the copies already queued are waited for).
    pub fn copy_to_host<T: DLPackDType>(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        self.strided_copy(
            bytemuck::cast_slice_mut::<T, u8>(dst).as_mut_ptr(),
            (T::DTYPE, dst.len()),
            stream,
            Way::ToHost,
        )
    }

    /// Copies `src`, packed in row-major (C) order, into the view's elements,
    /// and waits for the copy (Python's `view[...] = host_array`). Only the
    /// view's elements are written, never the memory between them.
    ///
    /// # Errors
    /// As [`copy_to_host`](Self::copy_to_host); [`Error::InvalidArgument`] for a
    /// read-only view, a view whose elements repeat (a zero stride), or a view
    /// of host memory (write a host array through its slice).
    pub fn copy_from_host<T: DLPackDType>(&self, src: &[T], stream: &Stream) -> Result<()> {
        const WHAT: &str = "copying host memory into a strided view";
        if self.readonly() {
            return Err(Error::invalid(WHAT, "the view is read only"));
        }
        if self
            .shape()
            .iter()
            .zip(self.strides())
            .any(|(&n, &s)| n > 1 && s == 0)
        {
            return Err(Error::invalid(
                WHAT,
                "the view repeats elements (a zero stride): which write would win is undefined",
            ));
        }
        if self.device().device_type == DLDeviceType::CPU {
            // Soundness contract: rule 3. A host view is shared here (`&self`):
            // writing through it could race another reader on the host.
            return Err(Error::invalid(
                WHAT,
                "the view is of host memory: write the host array through its slice",
            ));
        }
        self.strided_copy(
            bytemuck::cast_slice::<T, u8>(src).as_ptr().cast_mut(),
            (T::DTYPE, src.len()),
            stream,
            Way::FromHost,
        )
    }

    /// The body of both copies: `host` holds `len` packed elements of `dtype`.
    fn strided_copy(
        &self,
        host: *mut u8,
        (dtype, len): (crate::interop::dlpack::DLDataType, usize),
        stream: &Stream,
        way: Way,
    ) -> Result<()> {
        let what = match way {
            Way::ToHost => "copying a strided view to the host",
            Way::FromHost => "copying host memory into a strided view",
        };
        if dtype != self.dtype() {
            return Err(Error::invalid(
                what,
                format!(
                    "the host elements are {dtype:?} and the view's {:?}",
                    self.dtype()
                ),
            ));
        }
        if len as u64 != self.len() {
            return Err(Error::out_of_range(
                what,
                format!(
                    "the host slice holds {len} elements and the view {}",
                    self.len()
                ),
            ));
        }
        let elem = self.layout_elem();
        let plan = plan(self.shape(), self.strides(), elem, what)?;
        let device = self.device();
        if device.device_type == DLDeviceType::CPU {
            // Only reads reach here (`copy_from_host` refuses host views).
            for r in &plan {
                for row in 0..r.height {
                    // SAFETY: the view's layout was checked to lie in its
                    // memory (a slice it borrows, or memory its `unsafe`
                    // constructor's caller vouched for); `host` holds `len`
                    // packed elements, of which the plan's rows are disjoint
                    // parts.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            (self.ptr() as usize as *const u8)
                                .add(r.offset as usize + row * r.pitch),
                            host.add(r.host + row * r.width),
                            r.width,
                        );
                    }
                }
            }
            return Ok(());
        }
        if device.device_type != DLDeviceType::CUDA_HOST
            && usize::try_from(device.device_id).ok() != Some(stream.device().ordinal())
        {
            return Err(Error::other_device(
                what,
                format!(
                    "the view is on device {} and the stream on device {}",
                    device.device_id,
                    stream.device().ordinal()
                ),
            ));
        }
        let _current = stream.context().ensure_current()?;
        let mut queued = Ok(());
        for r in &plan {
            let view = self.ptr() + r.offset;
            let mut c = sys::CUDA_MEMCPY2D {
                WidthInBytes: r.width,
                Height: r.height,
                ..Default::default()
            };
            match way {
                Way::ToHost => {
                    c.srcMemoryType = sys::CU_MEMORYTYPE_UNIFIED;
                    c.srcDevice = view;
                    c.srcPitch = r.pitch;
                    c.dstMemoryType = sys::CU_MEMORYTYPE_HOST;
                    // SAFETY: within the `len` packed elements at `host`.
                    c.dstHost = unsafe { host.add(r.host) }.cast();
                    c.dstPitch = r.width;
                }
                Way::FromHost => {
                    c.srcMemoryType = sys::CU_MEMORYTYPE_HOST;
                    // SAFETY: as above.
                    c.srcHost = unsafe { host.add(r.host) }.cast_const().cast();
                    c.srcPitch = r.width;
                    c.dstMemoryType = sys::CU_MEMORYTYPE_UNIFIED;
                    c.dstDevice = view;
                    c.dstPitch = r.pitch;
                }
            }
            // SAFETY: the rows lie in the view's memory (its layout was checked
            // when it was made, and the plan reaches only its elements) and in
            // the host slice; the stream is waited for below before the slice
            // is handed back.
            queued = unsafe { sys::cuMemcpy2DAsync(&c, stream.handle()) }
                .check(|| format!("{what} ({} rows of {} bytes)", r.height, r.width));
            if queued.is_err() {
                break;
            }
        }
        // Soundness contract: rule 3. The host slice is handed back only after
        // the copies queued on it have run, whether or not all were queued.
        let waited = stream.drain();
        queued.and(waited)
    }

    /// A typed view of the elements of a contiguous (row-major) view of this
    /// crate's memory (made by [`from_buffer`](Self::from_buffer) or
    /// [`from_view`](Self::from_view)), to pass to a typed kernel or copy: the
    /// view lends it for as long as it is borrowed, and launches and copies
    /// order the allocation's free after their work as for any view.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `T` is not the view's dtype, the layout
    /// is not row-major contiguous, or the address is not aligned for `T`;
    /// [`Error::Unsupported`] for a view of memory this crate did not allocate
    /// (a DLPack tensor, an array interface, a host slice): use its strided
    /// copies.
    pub fn as_device_view<T: DLPackDType + Pod>(&self) -> Result<DeviceView<'_, T>> {
        const WHAT: &str = "viewing a strided view as a typed device view";
        if T::DTYPE != self.dtype() {
            return Err(Error::invalid(
                WHAT,
                format!(
                    "the view's elements are {:?}, not {:?}",
                    self.dtype(),
                    T::DTYPE
                ),
            ));
        }
        if !self.is_c_contiguous() {
            return Err(Error::invalid(
                WHAT,
                format!(
                    "the layout (shape {:?}, strides {:?}) is not row-major contiguous",
                    self.shape(),
                    self.strides()
                ),
            ));
        }
        let Some(buffer) = self.shared_buffer() else {
            return Err(Error::unsupported(
                WHAT,
                "the view is of memory this crate did not allocate (a DLPack tensor, an array \
                 interface or a host slice): copy it with `copy_to_host` instead",
            ));
        };
        if self.ptr() % std::mem::align_of::<T>() as u64 != 0 {
            return Err(Error::invalid(
                WHAT,
                format!(
                    "the address {:#x} is not aligned for the elements",
                    self.ptr()
                ),
            ));
        }
        let len = usize::try_from(self.len())
            .map_err(|_| Error::invalid(WHAT, "the view has more elements than the host counts"))?;
        // The layout was checked to lie in the buffer when the view was made
        // (`from_buffer`, `from_view`), and a contiguous one covers exactly `len`
        // elements from `ptr`.
        Ok(DeviceView::new_unchecked(buffer, self.ptr(), len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `plan` on host memory: reads the elements of `(shape, strides)` out
    /// of `memory`, packed.
    fn gather(memory: &[u32], shape: &[i64], strides: &[i64]) -> Vec<u32> {
        let plan = plan(shape, strides, 4, "t").unwrap();
        let len: i64 = shape.iter().product();
        // `u32`s, seen as bytes: a `Vec<u8>` need not be aligned for `u32`
        // (Miri places it anywhere).
        let mut out = vec![0u32; len as usize];
        let out_bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
        let bytes: &[u8] = bytemuck::cast_slice(memory);
        for r in &plan {
            for row in 0..r.height {
                let at = r.offset as usize + row * r.pitch;
                out_bytes[r.host + row * r.width..][..r.width]
                    .copy_from_slice(&bytes[at..at + r.width]);
            }
        }
        out
    }

    /// The elements of `(shape, strides)`, one by one, in row-major order.
    fn naive(memory: &[u32], shape: &[i64], strides: &[i64]) -> Vec<u32> {
        let len: i64 = shape.iter().product();
        (0..len)
            .map(|mut flat| {
                let mut at = 0;
                for d in (0..shape.len()).rev() {
                    at += (flat % shape[d]) * strides[d];
                    flat /= shape[d];
                }
                memory[at as usize]
            })
            .collect()
    }

    #[test]
    fn a_strided_copy_moves_exactly_the_views_elements() {
        let memory: Vec<u32> = (0..4 * 6 * 5).collect();
        for (shape, strides) in [
            (&[4, 6][..], &[6, 1][..]), // contiguous: one copy
            (&[3, 4], &[6, 1]),         // a tile: rows of 4
            (&[4], &[6]),               // a column: rows of one element
            (&[2, 3, 2], &[30, 6, 2]),  // every other column of a 3-D block
            (&[4, 3, 2], &[30, 1, 10]), // transposed inner dimensions
            (&[5, 4], &[0, 1]),         // a broadcast row: one copy per row
            (&[2, 1, 3], &[30, 99, 1]), // a size-1 dimension's stride is moot
            (&[], &[]),                 // a scalar
        ] {
            assert_eq!(
                gather(&memory, shape, strides),
                naive(&memory, shape, strides),
                "shape {shape:?}, strides {strides:?}"
            );
        }
        // Contiguous is one copy; an empty shape none.
        assert_eq!(plan(&[4, 6], &[6, 1], 4, "t").unwrap().len(), 1);
        assert_eq!(plan(&[3, 4], &[6, 1], 4, "t").unwrap().len(), 1);
        assert!(plan(&[3, 0], &[6, 1], 4, "t").unwrap().is_empty());
        // No row is wider than its element run: the gaps are never touched.
        for r in plan(&[3, 4], &[6, 1], 4, "t").unwrap() {
            assert_eq!((r.width, r.pitch, r.height), (16, 24, 3));
        }
    }
}
