//! Tensor maps for Hopper's tensor memory accelerator (TMA): a 128-byte descriptor
//! of a view of global memory, tiled (`cuTensorMapEncodeTiled`) or im2col
//! (`cuTensorMapEncodeIm2col`, `cuTensorMapEncodeIm2colWide`), passed to kernels
//! by value (`const __grid_constant__ CUtensorMap`).
//!
//! Every argument the driver would refuse for its shape (ranks, extents, strides,
//! box sizes, pixel-box corners, alignment, the buffer's size) is checked first,
//! with an [`Error::InvalidArgument`] naming the field.

use std::ffi::{c_int, c_void};

use cudars_bindings::driver as sys;

use crate::error::{Check as _, Error, Result};
use crate::launch::tensor_map_layout::{
    Layout, check_pixel_box, check_replacement, check_wide_box, im2col_layout,
};
use crate::launch::tensor_map_options::{
    TensorMapDescriptorOptions, TensorMapIm2colOptions, TensorMapIm2colWideOptions,
};
use crate::{device::Device, launch::KernelArg, memory::buffer::Buffer};

/// [`im2col_layout`] of an im2col or im2col-wide options struct: the two name
/// the fields it reads alike.
macro_rules! im2col_layout_of {
    ($what:expr, $buffer:expr, $options:expr) => {
        im2col_layout(
            $what,
            $buffer,
            $options.data_type,
            &$options.global_dims,
            &$options.global_strides,
            &$options.element_strides,
            $options.interleave,
            $options.swizzle,
            ($options.channels_per_pixel, $options.pixels_per_column),
        )
    };
}

/// A `CUtensorMap` (128 bytes, 64-byte aligned, passed to kernels by value), with
/// the device its memory is on and what its layout needs of that memory, so
/// that [`replace_address`](Self::replace_address) can check a new buffer.
///
/// The map borrows what it describes (`'a`): it cannot outlive the buffer,
/// view or tensor it was encoded over (or, after
/// [`replace_address`](Self::replace_address), the buffer it points at), so a
/// kernel cannot read memory freed under it (`cuda.core`'s descriptor keeps
/// its tensor alive). A typed launch checks the buffer's device against the
/// stream's and orders the buffer's free after the kernel, as for a buffer
/// argument.
///
/// ```compile_fail,E0597
/// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
/// use cudars_core::{TensorMapDataType, TensorMapDescriptor, TensorMapDescriptorOptions};
/// let options = TensorMapDescriptorOptions::new(TensorMapDataType::F32, &[1024], &[64]);
/// let map = {
///     let buffer = dev.allocate(4096, s)?;
///     TensorMapDescriptor::tiled(&buffer, &options)?
/// }; // error: `buffer` does not live long enough
/// # drop(map); Ok(()) }
/// ```
#[derive(Clone, Copy)]
pub struct TensorMapDescriptor<'a> {
    pub(crate) map: sys::CUtensorMap,
    /// The buffer the map's address is in, where it was made from one (a
    /// launch checks and orders it); `None` for a strided view's memory.
    pub(crate) memory: Option<&'a Buffer>,
    /// What the map's address is in: borrowed for as long as the map lives.
    pub(crate) source: std::marker::PhantomData<&'a ()>,
    pub(crate) device: Device,
    /// The bytes the layout spans from its address.
    pub(crate) span: u64,
    /// The alignment the layout needs of its address.
    pub(crate) align: u64,
}

impl std::fmt::Debug for TensorMapDescriptor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorMapDescriptor")
            .field("device", &self.device.ordinal())
            .field("span", &self.span)
            .finish_non_exhaustive()
    }
}

impl<'a> TensorMapDescriptor<'a> {
    pub(crate) fn encoded(map: sys::CUtensorMap, buffer: &'a Buffer, layout: &Layout) -> Self {
        Self::encoded_on(map, *buffer.device(), Some(buffer), layout)
    }

    pub(crate) fn encoded_on(
        map: sys::CUtensorMap,
        device: Device,
        memory: Option<&'a Buffer>,
        layout: &Layout,
    ) -> Self {
        Self {
            map,
            memory,
            source: std::marker::PhantomData,
            device,
            span: layout.span,
            align: layout.align,
        }
    }

    /// Encodes a tiled tensor map over `buffer` (`cuTensorMapEncodeTiled`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the field when the shape does not fit
    /// the buffer or breaks the TMA rules (rank 1–5, 3–5 interleaved; extents 1
    /// to 2^32; strides multiples of 16 (32 with 32-byte interleave); box
    /// extents 1–256, the inner one a multiple of 16 bytes and within the
    /// swizzle; element strides 1–8; the address aligned like the strides); the
    /// driver's error for what it rejects.
    pub fn tiled(buffer: &'a Buffer, options: &TensorMapDescriptorOptions) -> Result<Self> {
        Self::encode_tiled(
            "encoding a tiled tensor map",
            (buffer.ptr(), buffer.size() as u64, *buffer.device()),
            Some(buffer),
            options,
        )
    }

    /// The one body of the tiled encodings: over `size` bytes at `ptr` on
    /// `device`.
    pub(super) fn encode_tiled(
        what: &'static str,
        (ptr, size, device): (u64, u64, Device),
        memory: Option<&'a Buffer>,
        options: &TensorMapDescriptorOptions,
    ) -> Result<Self> {
        let layout = Layout::new(
            what,
            options.data_type,
            &options.global_dims,
            &options.global_strides,
            &options.element_strides,
            1..=5,
            options.interleave,
        )?;
        check_box(what, &layout, options)?;
        layout.check_memory(what, ptr, size)?;
        let mut map = sys::CUtensorMap::default();
        // SAFETY: every array holds the counts the driver reads for the rank
        // (checked above); the address is of memory holding the layout's span.
        unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map,
                layout.dtype,
                layout.dims.len() as u32,
                ptr as usize as *mut c_void,
                layout.dims.as_ptr(),
                layout.strides.as_ptr(),
                options.box_dims.as_ptr(),
                layout.element_strides.as_ptr(),
                options.interleave.raw(),
                options.swizzle.raw(),
                options.l2_promotion.raw(),
                options.oob_fill.raw(),
            )
        }
        .check(|| what)?;
        Ok(Self::encoded_on(map, device, memory, &layout))
    }

    /// Encodes an im2col tensor map over `buffer` (`cuTensorMapEncodeIm2col`),
    /// for convolutions: each request loads a column of pixels, each pixel's
    /// channels, from the bounding box around an output pixel.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the field: rank 3–5; extents, strides,
    /// element strides and the address as for [`tiled`](Self::tiled);
    /// `rank - 2` corner offsets each in the rank's range; 1–256 channels per
    /// pixel (within the swizzle, without interleave); 1–1024 pixels per
    /// column. The driver's error for what it rejects.
    pub fn im2col(buffer: &'a Buffer, options: &TensorMapIm2colOptions) -> Result<Self> {
        let what = "encoding an im2col tensor map";
        let layout = im2col_layout_of!(what, buffer, options)?;
        check_pixel_box(
            what,
            layout.dims.len(),
            &options.pixel_box_lower_corner,
            &options.pixel_box_upper_corner,
        )?;
        let mut map = sys::CUtensorMap::default();
        // SAFETY: every array holds the counts the driver reads for the rank, and
        // each corner `rank - 2` offsets (checked above); the address is the
        // buffer's.
        unsafe {
            sys::cuTensorMapEncodeIm2col(
                &mut map,
                layout.dtype,
                layout.dims.len() as u32,
                buffer.ptr() as usize as *mut c_void,
                layout.dims.as_ptr(),
                layout.strides.as_ptr(),
                options.pixel_box_lower_corner.as_ptr(),
                options.pixel_box_upper_corner.as_ptr(),
                options.channels_per_pixel,
                options.pixels_per_column,
                layout.element_strides.as_ptr(),
                options.interleave.raw(),
                options.swizzle.raw(),
                options.l2_promotion.raw(),
                options.oob_fill.raw(),
            )
        }
        .check(|| what)?;
        Ok(Self::encoded(map, buffer, &layout))
    }

    /// Encodes an im2col-wide tensor map over `buffer`
    /// (`cuTensorMapEncodeIm2colWide`): pixels along W only. Needs a CUDA 12.8
    /// driver and a GPU of compute capability 10.0 or newer (Blackwell).
    ///
    /// # Errors
    /// [`Error::Unsupported`] with [`required_driver`](Error::required_driver)
    /// on a driver older than CUDA 12.8, and without it on a GPU older than
    /// compute capability 10.0; [`Error::InvalidArgument`] as for
    /// [`im2col`](Self::im2col) (the W offsets within −2^15 to 2^15 − 1); the
    /// driver's error for what it rejects.
    pub fn im2col_wide(buffer: &'a Buffer, options: &TensorMapIm2colWideOptions) -> Result<Self> {
        let what = "encoding an im2col-wide tensor map";
        let layout = im2col_layout_of!(what, buffer, options)?;
        check_wide_box(
            what,
            options.pixel_box_lower_corner_width,
            options.pixel_box_upper_corner_width,
        )?;
        crate::versions::require_driver(12080, "an im2col-wide tensor map", || what)?;
        let device = buffer.device();
        let (major, minor) = device.compute_capability()?;
        if major < 10 {
            return Err(Error::unsupported(
                what,
                format!(
                    "im2col-wide tensor maps need compute capability 10.0 or newer; device {} \
                     is {major}.{minor}",
                    device.ordinal()
                ),
            ));
        }
        let mut map = sys::CUtensorMap::default();
        // SAFETY: every array holds the counts the driver reads for the rank
        // (checked above); the address is the buffer's.
        unsafe {
            sys::cuTensorMapEncodeIm2colWide(
                &mut map,
                layout.dtype,
                layout.dims.len() as u32,
                buffer.ptr() as usize as *mut c_void,
                layout.dims.as_ptr(),
                layout.strides.as_ptr(),
                options.pixel_box_lower_corner_width as c_int,
                options.pixel_box_upper_corner_width as c_int,
                options.channels_per_pixel,
                options.pixels_per_column,
                layout.element_strides.as_ptr(),
                options.interleave.raw(),
                options.mode.raw(),
                options.swizzle.raw(),
                options.l2_promotion.raw(),
                options.oob_fill.raw(),
            )
        }
        .check(|| what)?;
        Ok(Self::encoded(map, buffer, &layout))
    }

    /// Points the map at `buffer`, keeping everything else
    /// (`cuTensorMapReplaceAddress`; `replace_address` in Python): for a tensor
    /// of the same layout that was reallocated. The map borrows the new
    /// buffer as it did what it was encoded over; kernels already queued keep
    /// the copy of the map they were launched with.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: [`InvalidKind::OtherDevice`](crate::InvalidKind)
    /// for a buffer of another device than the map's, `OutOfRange` for one
    /// smaller than the layout spans, `Other` for an address not aligned to 16
    /// bytes (32 with 32-byte interleave); the driver's error. On an error the
    /// map is unchanged.
    pub fn replace_address(&mut self, buffer: &'a Buffer) -> Result<()> {
        let what = "replacing a tensor map's address";
        if *buffer.device() != self.device {
            return Err(Error::other_device(
                what,
                format!(
                    "the buffer is on device {}, the tensor map's memory on device {}",
                    buffer.device().ordinal(),
                    self.device.ordinal()
                ),
            ));
        }
        check_replacement(
            what,
            self.span,
            self.align,
            buffer.ptr(),
            buffer.size() as u64,
        )?;
        let mut map = self.map;
        // SAFETY: `map` is an encoded tensor map; the address is the buffer's,
        // aligned and large enough for the layout (checked above).
        unsafe { sys::cuTensorMapReplaceAddress(&mut map, buffer.ptr() as usize as *mut c_void) }
            .check(|| what)?;
        self.map = map;
        self.memory = Some(buffer);
        Ok(())
    }

    /// The device whose memory the map describes (`device` in Python).
    pub fn device(&self) -> Device {
        self.device
    }

    /// The bytes the map's layout spans from its address: the smallest buffer
    /// [`replace_address`](Self::replace_address) accepts.
    pub fn span(&self) -> u64 {
        self.span
    }

    /// The raw descriptor.
    pub fn raw(&self) -> &sys::CUtensorMap {
        &self.map
    }
}

/// Checks a tiled map's box: one extent per dimension, each 1–256, the inner
/// one within the 16-byte granule and the swizzle.
pub(crate) fn check_box(
    what: &'static str,
    layout: &Layout,
    options: &TensorMapDescriptorOptions,
) -> Result<()> {
    let rank = layout.dims.len();
    if options.box_dims.len() != rank {
        return Err(Error::invalid(
            what,
            format!(
                "`box_dims` has {} entries, one per dimension ({rank})",
                options.box_dims.len()
            ),
        ));
    }
    if let Some(i) = options.box_dims.iter().position(|b| !(1..=256).contains(b)) {
        return Err(Error::out_of_range(
            what,
            format!(
                "`box_dims[{i}]` is {}: it must be 1 to 256",
                options.box_dims[i]
            ),
        ));
    }
    layout.check_inner_box(
        what,
        "`box_dims[0]`",
        options.box_dims[0],
        true,
        options.interleave,
        options.swizzle,
    )
}

// SAFETY: a `const __grid_constant__ CUtensorMap` parameter takes the 128
// bytes by value; the pointer is to the descriptor the launch borrows. The map
// borrows what it describes; where that is a buffer, it is reported for the
// launch's device check and the ordering of its free after the kernel.
// Soundness contract: rules 2 and 10.
unsafe impl crate::launch::typed_kernel::Param for TensorMapDescriptor<'static> {
    type Arg<'a> = &'a TensorMapDescriptor<'a>;
    const SIZE: usize = std::mem::size_of::<sys::CUtensorMap>();
    fn addr(arg: &&TensorMapDescriptor<'_>) -> *mut c_void {
        (&arg.map as *const sys::CUtensorMap).cast_mut().cast()
    }
    fn memory<'b>(arg: &'b &TensorMapDescriptor<'_>) -> Option<&'b Buffer> {
        arg.memory
    }
}

// SAFETY: the pointer is to the descriptor's own 128 bytes, which is what a
// `CUtensorMap` kernel parameter takes.
// Soundness contract: rule 10.
unsafe impl KernelArg for TensorMapDescriptor<'_> {
    fn arg_ptr(&self) -> *const c_void {
        (&self.map as *const sys::CUtensorMap).cast()
    }
    fn arg_size(&self) -> usize {
        std::mem::size_of::<sys::CUtensorMap>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::InvalidKind;
    #[allow(unused_imports)]
    use crate::launch::tensor_map_layout::*;
    #[allow(unused_imports)]
    use crate::launch::tensor_map_options::*;
    use std::ops::RangeInclusive;

    fn kind<T: std::fmt::Debug>(r: Result<T>, needle: &str) -> InvalidKind {
        let e = r.unwrap_err();
        assert!(e.to_string().contains(needle), "{e} lacks {needle:?}");
        e.invalid_kind().unwrap()
    }

    fn layout(dims: &[u64], strides: &[u64], ranks: RangeInclusive<usize>) -> Result<Layout> {
        Layout::new(
            "t",
            TensorMapDataType::F32,
            dims,
            strides,
            &[],
            ranks,
            TensorMapInterleave::None,
        )
    }

    #[test]
    fn layouts_are_packed_by_default_and_span_their_last_element() {
        let l = layout(&[64, 32, 2], &[], 1..=5).unwrap();
        assert_eq!(l.strides, [256, 256 * 32]);
        assert_eq!(l.element_strides, [1, 1, 1]);
        assert_eq!(l.span, 64 * 32 * 2 * 4);
        // Padded rows: the span ends at the last element, not the last row's end.
        let l = layout(&[10, 3], &[64], 1..=5).unwrap();
        assert_eq!(l.span, 2 * 64 + 10 * 4);
        assert_eq!(layout(&[5], &[], 1..=5).unwrap().span, 20);
    }

    #[test]
    fn bad_layouts_are_refused_naming_the_field() {
        use InvalidKind::*;
        assert_eq!(kind(layout(&[], &[], 1..=5), "rank"), OutOfRange);
        assert_eq!(kind(layout(&[1; 6], &[], 1..=5), "rank"), OutOfRange);
        assert_eq!(kind(layout(&[4, 4], &[], 3..=5), "3 to 5"), OutOfRange);
        assert_eq!(
            kind(layout(&[4, 0], &[], 1..=5), "`global_dims[1]`"),
            OutOfRange
        );
        assert_eq!(
            kind(layout(&[4, 1 << 33], &[], 1..=5), "`global_dims[1]`"),
            OutOfRange
        );
        assert_eq!(
            kind(layout(&[4, 4, 4], &[16], 1..=5), "`global_strides`"),
            Other
        );
        assert_eq!(
            kind(layout(&[4, 4], &[24], 1..=5), "`global_strides[0]`"),
            Other
        );
        assert_eq!(
            kind(layout(&[4, 4], &[1 << 40], 1..=5), "below 2^40"),
            Other
        );
        let strides = |s: &[u32]| {
            Layout::new(
                "t",
                TensorMapDataType::U8,
                &[16, 4],
                &[],
                s,
                1..=5,
                TensorMapInterleave::None,
            )
        };
        assert_eq!(kind(strides(&[1]), "`element_strides`"), Other);
        assert_eq!(kind(strides(&[1, 9]), "`element_strides[1]`"), OutOfRange);
        assert_eq!(kind(strides(&[0, 1]), "`element_strides[0]`"), OutOfRange);
        assert!(strides(&[8, 1]).is_ok());
        // Interleaved maps have rank 3 or more and 32-byte strides for 32B.
        let interleaved = |dims: &[u64], strides: &[u64]| {
            Layout::new(
                "t",
                TensorMapDataType::U8,
                dims,
                strides,
                &[],
                1..=5,
                TensorMapInterleave::B32,
            )
        };
        assert_eq!(kind(interleaved(&[32, 4], &[]), "rank"), OutOfRange);
        assert_eq!(
            kind(interleaved(&[32, 4, 4], &[48, 192]), "multiple of 32"),
            Other
        );
        assert!(interleaved(&[32, 4, 4], &[]).is_ok());
    }

    #[test]
    fn memory_must_be_aligned_and_large_enough() {
        let l = layout(&[8, 8], &[], 1..=5).unwrap();
        assert!(l.check_memory("t", 0x1000, 256).is_ok());
        assert_eq!(
            kind(l.check_memory("t", 0x1008, 256), "16-byte"),
            InvalidKind::Other
        );
        assert_eq!(
            kind(l.check_memory("t", 0x1000, 255), "spans 256 bytes"),
            InvalidKind::OutOfRange
        );
    }

    #[test]
    fn tiled_boxes_are_checked() {
        let l = layout(&[64, 64], &[], 1..=5).unwrap();
        let options = |box_dims: Vec<u32>, swizzle| TensorMapDescriptorOptions {
            data_type: TensorMapDataType::F32,
            global_dims: vec![64, 64],
            global_strides: vec![],
            box_dims,
            element_strides: vec![],
            interleave: TensorMapInterleave::None,
            swizzle,
            l2_promotion: TensorMapL2Promotion::None,
            oob_fill: TensorMapOobFill::Zero,
        };
        let check = |b, s| check_box("t", &l, &options(b, s));
        assert!(check(vec![16, 16], TensorMapSwizzle::None).is_ok());
        assert!(check(vec![32, 8], TensorMapSwizzle::B128).is_ok());
        assert_eq!(
            kind(check(vec![16], TensorMapSwizzle::None), "`box_dims`"),
            InvalidKind::Other
        );
        assert_eq!(
            kind(
                check(vec![16, 512], TensorMapSwizzle::None),
                "`box_dims[1]`"
            ),
            InvalidKind::OutOfRange
        );
        assert_eq!(
            kind(check(vec![0, 1], TensorMapSwizzle::None), "`box_dims[0]`"),
            InvalidKind::OutOfRange
        );
        // 3 floats are 12 bytes: not a whole 16-byte granule.
        assert_eq!(
            kind(check(vec![3, 1], TensorMapSwizzle::None), "multiple of 16"),
            InvalidKind::Other
        );
        // 16 floats are 64 bytes: more than a 32-byte swizzle.
        assert_eq!(
            kind(check(vec![16, 1], TensorMapSwizzle::B32), "32-byte swizzle"),
            InvalidKind::Other
        );
    }

    #[test]
    fn im2col_boxes_and_counts_are_checked() {
        use InvalidKind::*;
        // Rank 4 (N, H, W, C): two spatial offsets per corner, each in -128..=127.
        assert!(check_pixel_box("t", 4, &[-1, -1], &[1, 1]).is_ok());
        assert!(check_pixel_box("t", 4, &[-128, 0], &[127, 0]).is_ok());
        assert_eq!(
            kind(
                check_pixel_box("t", 4, &[-1], &[1, 1]),
                "`pixel_box_lower_corner`"
            ),
            Other
        );
        assert_eq!(
            kind(check_pixel_box("t", 4, &[-1, -1], &[1, 1, 1]), "2 spatial"),
            Other
        );
        assert_eq!(
            kind(check_pixel_box("t", 4, &[-129, 0], &[0, 0]), "-128 to 127"),
            OutOfRange
        );
        assert_eq!(
            kind(
                check_pixel_box("t", 5, &[0, 0, 16], &[0, 0, 0]),
                "-16 to 15"
            ),
            OutOfRange
        );
        assert!(check_pixel_box("t", 3, &[-32768], &[32767]).is_ok());
        assert!(check_wide_box("t", -32768, 32767).is_ok());
        assert_eq!(
            kind(
                check_wide_box("t", 0, 40000),
                "`pixel_box_upper_corner_width`"
            ),
            OutOfRange
        );
        assert!(check_im2col_counts("t", 256, 1024).is_ok());
        assert_eq!(
            kind(check_im2col_counts("t", 0, 1), "`channels_per_pixel`"),
            OutOfRange
        );
        assert_eq!(
            kind(check_im2col_counts("t", 1, 1025), "`pixels_per_column`"),
            OutOfRange
        );
        // 64 f32 channels are 256 bytes: more than a 128-byte swizzle.
        let l = layout(&[64, 8, 8, 1], &[], 3..=5).unwrap();
        assert!(
            l.check_inner_box(
                "t",
                "`channels_per_pixel`",
                32,
                false,
                TensorMapInterleave::None,
                TensorMapSwizzle::B128
            )
            .is_ok()
        );
        assert_eq!(
            kind(
                l.check_inner_box(
                    "t",
                    "`channels_per_pixel`",
                    64,
                    false,
                    TensorMapInterleave::None,
                    TensorMapSwizzle::B128
                ),
                "128-byte swizzle"
            ),
            Other
        );
    }

    #[test]
    fn replacements_keep_the_layouts_needs() {
        assert!(check_replacement("t", 256, 16, 0x2000, 256).is_ok());
        assert_eq!(
            kind(check_replacement("t", 256, 16, 0x2004, 4096), "16-byte"),
            InvalidKind::Other
        );
        assert_eq!(
            kind(check_replacement("t", 256, 32, 0x2010, 4096), "32-byte"),
            InvalidKind::Other
        );
        assert_eq!(
            kind(check_replacement("t", 256, 16, 0x2000, 128), "holds 128"),
            InvalidKind::OutOfRange
        );
    }
}
