//! A tensor map's layout, checked against the driver's rules before it is
//! encoded (pure functions: testable without a GPU).

use crate::error::{Error, Result};
use crate::launch::tensor_map_options::{TensorMapDataType, TensorMapInterleave, TensorMapSwizzle};
use crate::memory::buffer::Buffer;
use cudars_bindings::driver as sys;
use std::ops::RangeInclusive;

/// The global-memory part of a tensor map, checked: what every encoding and
/// [`TensorMapDescriptor::replace_address`] share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) dtype: sys::CUtensorMapDataType,
    pub(crate) elem: u64,
    pub(crate) dims: Vec<u64>,
    pub(crate) strides: Vec<u64>,
    pub(crate) element_strides: Vec<u32>,
    /// The bytes from the first element to one past the last.
    pub(crate) span: u64,
    /// The alignment the address and strides need.
    pub(crate) align: u64,
}

/// The most a global dimension may be (2^32) and a global stride (under 2^40).
pub(crate) const MAX_DIM: u64 = 1 << 32;
pub(crate) const MAX_STRIDE: u64 = 1 << 40;

impl Layout {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        what: &'static str,
        data_type: TensorMapDataType,
        dims: &[u64],
        strides: &[u64],
        element_strides: &[u32],
        ranks: RangeInclusive<usize>,
        interleave: TensorMapInterleave,
    ) -> Result<Self> {
        let rank = dims.len();
        let ranks = if interleave == TensorMapInterleave::None {
            ranks
        } else {
            // Interleaved layouts have at least 3 dimensions.
            (*ranks.start()).max(3)..=*ranks.end()
        };
        if !ranks.contains(&rank) {
            return Err(Error::out_of_range(
                what,
                format!(
                    "the rank (the number of `global_dims`) is {rank}; this kind of tensor map \
                     takes {} to {}",
                    ranks.start(),
                    ranks.end()
                ),
            ));
        }
        if let Some(i) = dims.iter().position(|&d| d == 0 || d > MAX_DIM) {
            return Err(Error::out_of_range(
                what,
                format!("`global_dims[{i}]` is {}: it must be 1 to 2^32", dims[i]),
            ));
        }
        let (dtype, elem) = data_type.raw();
        let align = interleave.alignment();
        let strides = if strides.is_empty() {
            let mut s = elem;
            let mut packed = Vec::with_capacity(rank - 1);
            for d in &dims[..rank - 1] {
                s = s
                    .checked_mul(*d)
                    .ok_or_else(|| Error::out_of_range(what, "the tensor is too large"))?;
                packed.push(s);
            }
            packed
        } else {
            strides.to_vec()
        };
        if strides.len() != rank - 1 {
            return Err(Error::invalid(
                what,
                format!(
                    "`global_strides` has {} entries; a rank-{rank} tensor needs {} (every \
                     dimension but the innermost), or none for a packed tensor",
                    strides.len(),
                    rank - 1
                ),
            ));
        }
        if let Some(i) = strides
            .iter()
            .position(|&s| s % align != 0 || s >= MAX_STRIDE)
        {
            return Err(Error::invalid(
                what,
                format!(
                    "`global_strides[{i}]` is {} bytes: it must be a multiple of {align} below 2^40",
                    strides[i]
                ),
            ));
        }
        let element_strides = if element_strides.is_empty() {
            vec![1; rank]
        } else {
            element_strides.to_vec()
        };
        if element_strides.len() != rank {
            return Err(Error::invalid(
                what,
                format!(
                    "`element_strides` has {} entries, one per dimension ({rank}) or none",
                    element_strides.len()
                ),
            ));
        }
        if let Some(i) = element_strides.iter().position(|s| !(1..=8).contains(s)) {
            return Err(Error::out_of_range(
                what,
                format!(
                    "`element_strides[{i}]` is {}: it must be 1 to 8",
                    element_strides[i]
                ),
            ));
        }
        // The last element's offset: the innermost stride is the element size.
        let mut last = 0u64;
        for (d, s) in dims.iter().zip(std::iter::once(&elem).chain(&strides)) {
            last = (d - 1)
                .checked_mul(*s)
                .and_then(|o| last.checked_add(o))
                .ok_or_else(|| Error::out_of_range(what, "the tensor is too large"))?;
        }
        let span = last
            .checked_add(elem)
            .ok_or_else(|| Error::out_of_range(what, "the tensor is too large"))?;
        Ok(Self {
            dtype,
            elem,
            dims: dims.to_vec(),
            strides,
            element_strides,
            span,
            align,
        })
    }

    /// Checks that memory at `ptr` of `size` bytes can hold the tensor.
    pub(crate) fn check_memory(&self, what: &'static str, ptr: u64, size: u64) -> Result<()> {
        check_replacement(what, self.span, self.align, ptr, size)
    }

    /// Checks the inner box dimension (`inner` elements), without interleave:
    /// within the swizzle span and, for a tiled box (`granule`), a multiple of
    /// 16 bytes.
    pub(crate) fn check_inner_box(
        &self,
        what: &'static str,
        field: &str,
        inner: u32,
        granule: bool,
        interleave: TensorMapInterleave,
        swizzle: TensorMapSwizzle,
    ) -> Result<()> {
        let bytes = u64::from(inner) * self.elem;
        if interleave == TensorMapInterleave::None {
            if granule && bytes % 16 != 0 {
                return Err(Error::invalid(
                    what,
                    format!(
                        "{field} is {bytes} bytes: without interleave it must be a multiple of 16"
                    ),
                ));
            }
            if let Some(span) = swizzle.span() {
                if bytes > span {
                    return Err(Error::invalid(
                        what,
                        format!("{field} is {bytes} bytes, more than the {span}-byte swizzle"),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The checked layout of an im2col or im2col-wide map over `buffer`: rank 3 to
/// 5, `channels_per_pixel` and `pixels_per_column` (`counts`) in range, the
/// channels within the swizzle, the buffer aligned and large enough.
#[allow(clippy::too_many_arguments)]
pub(crate) fn im2col_layout(
    what: &'static str,
    buffer: &Buffer,
    data_type: TensorMapDataType,
    dims: &[u64],
    strides: &[u64],
    element_strides: &[u32],
    interleave: TensorMapInterleave,
    swizzle: TensorMapSwizzle,
    (channels, pixels): (u32, u32),
) -> Result<Layout> {
    let layout = Layout::new(
        what,
        data_type,
        dims,
        strides,
        element_strides,
        3..=5,
        interleave,
    )?;
    check_im2col_counts(what, channels, pixels)?;
    layout.check_inner_box(
        what,
        "`channels_per_pixel`",
        channels,
        false,
        interleave,
        swizzle,
    )?;
    layout.check_memory(what, buffer.ptr(), buffer.size() as u64)?;
    Ok(layout)
}

/// Checks `channels_per_pixel` and `pixels_per_column` of an im2col map.
pub(crate) fn check_im2col_counts(what: &'static str, channels: u32, pixels: u32) -> Result<()> {
    if !(1..=256).contains(&channels) {
        return Err(Error::out_of_range(
            what,
            format!("`channels_per_pixel` is {channels}: it must be 1 to 256"),
        ));
    }
    if !(1..=1024).contains(&pixels) {
        return Err(Error::out_of_range(
            what,
            format!("`pixels_per_column` is {pixels}: it must be 1 to 1024"),
        ));
    }
    Ok(())
}

/// Checks an im2col bounding box: `rank - 2` offsets per corner, each within the
/// range the rank allows.
pub(crate) fn check_pixel_box(
    what: &'static str,
    rank: usize,
    lower: &[i32],
    upper: &[i32],
) -> Result<()> {
    let spatial = rank - 2;
    let bits = match rank {
        3 => 15,
        4 => 7,
        _ => 4,
    };
    let range = -(1i32 << bits)..=(1i32 << bits) - 1;
    for (field, corner) in [
        ("pixel_box_lower_corner", lower),
        ("pixel_box_upper_corner", upper),
    ] {
        if corner.len() != spatial {
            return Err(Error::invalid(
                what,
                format!(
                    "`{field}` has {} entries; a rank-{rank} tensor has {spatial} spatial \
                     dimensions",
                    corner.len()
                ),
            ));
        }
        if let Some(i) = corner.iter().position(|c| !range.contains(c)) {
            return Err(Error::out_of_range(
                what,
                format!(
                    "`{field}[{i}]` is {}: for rank {rank} it must be {} to {}",
                    corner[i],
                    range.start(),
                    range.end()
                ),
            ));
        }
    }
    Ok(())
}

/// Checks an im2col-wide map's W offsets: each within −2^15 to 2^15 − 1.
pub(crate) fn check_wide_box(what: &'static str, lower: i32, upper: i32) -> Result<()> {
    let range = -(1i32 << 15)..=(1i32 << 15) - 1;
    for (field, w) in [
        ("pixel_box_lower_corner_width", lower),
        ("pixel_box_upper_corner_width", upper),
    ] {
        if !range.contains(&w) {
            return Err(Error::out_of_range(
                what,
                format!("`{field}` is {w}: it must be -32768 to 32767"),
            ));
        }
    }
    Ok(())
}

/// Checks a replacement address: aligned as the layout needs, and the memory at
/// it at least `span` bytes.
pub(crate) fn check_replacement(
    what: &'static str,
    span: u64,
    align: u64,
    ptr: u64,
    size: u64,
) -> Result<()> {
    if ptr % align != 0 {
        return Err(Error::invalid(
            what,
            format!("the address {ptr:#x} is not {align}-byte aligned"),
        ));
    }
    if span > size {
        return Err(Error::out_of_range(
            what,
            format!("the tensor spans {span} bytes, the buffer holds {size}"),
        ));
    }
    Ok(())
}
