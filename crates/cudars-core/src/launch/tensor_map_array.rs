//! Tiled tensor maps made from arrays: the data type, shape and strides taken
//! from a typed view ([`TensorMapDescriptor::from_tiled`], Python's
//! `TensorMapDescriptor.from_tiled(a, box_dim=…)`) or a strided view
//! ([`TensorMapDescriptor::from_strided`], [`StridedMemoryView::as_tensor_map`];
//! with the `dlpack` feature),
//! with [`TiledOptions`] (every option defaulted). They translate the array's
//! layout (outermost first, strides in elements) into the driver's
//! (innermost first, strides in bytes) with one pure function and encode it
//! through [`TensorMapDescriptor::tiled`]'s body.

use crate::error::{Error, Result};
#[cfg(feature = "dlpack")]
use crate::interop::dlpack::{DLDataType, DLDeviceType};
use crate::launch::tensor_map_options::{
    TensorMapDataType, TensorMapDescriptorOptions, TensorMapInterleave, TensorMapL2Promotion,
    TensorMapOobFill, TensorMapSwizzle,
};
#[cfg(feature = "dlpack")]
use crate::{device::Device, interop::strided::StridedMemoryView};
use crate::{launch::tensor_map::TensorMapDescriptor, memory::view::DeviceView};

/// An element type a tensor map can describe: what
/// [`TensorMapDescriptor::from_tiled`] takes the map's data type from (Python's
/// `from_tiled` reads it from the array's dtype).
pub trait TensorMapElement: bytemuck::Pod {
    /// The tensor map's data type for this element.
    const DATA_TYPE: TensorMapDataType;
}

macro_rules! tensor_map_elements {
    ($($t:ty => $d:ident),* $(,)?) => {
        $(impl TensorMapElement for $t {
            const DATA_TYPE: TensorMapDataType = TensorMapDataType::$d;
        })*
    };
}

tensor_map_elements!(
    u8 => U8, u16 => U16, u32 => U32, i32 => I32, u64 => U64, i64 => I64,
    f32 => F32, f64 => F64,
);

#[cfg(feature = "half")]
tensor_map_elements!(half::f16 => F16, half::bf16 => BF16);

#[cfg(feature = "dlpack")]
impl TensorMapDataType {
    /// The data type of a DLPack dtype, if a tensor map has one.
    fn of_dtype(dtype: DLDataType) -> Option<Self> {
        if dtype.lanes != 1 {
            return None;
        }
        Some(match (dtype.code, dtype.bits) {
            (0, 32) => Self::I32,
            (0, 64) => Self::I64,
            (1, 8) => Self::U8,
            (1, 16) => Self::U16,
            (1, 32) => Self::U32,
            (1, 64) => Self::U64,
            (2, 16) => Self::F16,
            (2, 32) => Self::F32,
            (2, 64) => Self::F64,
            (4, 16) => Self::BF16,
            _ => return None,
        })
    }
}

/// What a tiled map made from an array ([`TensorMapDescriptor::from_tiled`],
/// `TensorMapDescriptor::from_strided`) takes besides the array and the box:
/// Python's `TensorMapDescriptorOptions`, every field with a default
/// (`TiledOptions::default()`, or `TiledOptions { swizzle, ..Default::default() }`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TiledOptions {
    /// The element type, when it is not the array's own (`TF32` or `F32Ftz`
    /// over `f32` data, of the same size); `None` (the default) takes the
    /// array's.
    pub data_type: Option<TensorMapDataType>,
    /// Traversal stride per dimension (1–8), in the array's order (outermost
    /// first, as the shape); empty (the default): all 1.
    pub element_strides: Vec<u32>,
    /// Interleave.
    pub interleave: TensorMapInterleave,
    /// Swizzle.
    pub swizzle: TensorMapSwizzle,
    /// L2 promotion.
    pub l2_promotion: TensorMapL2Promotion,
    /// Out-of-bounds fill.
    pub oob_fill: TensorMapOobFill,
}

/// The options of a tiled map over an array of `elem`-byte `dtype` elements
/// with `shape` and `strides` (in elements) and a box, all outermost first (the
/// array's order), turned into the driver's order (innermost first, strides in
/// bytes).
fn tiled_from_array(
    what: &'static str,
    dtype: Option<TensorMapDataType>,
    shape: &[u64],
    strides: Option<&[i64]>,
    box_dims: &[u32],
    options: &TiledOptions,
) -> Result<TensorMapDescriptorOptions> {
    let data_type = options.data_type.or(dtype).ok_or_else(|| {
        Error::invalid(
            what,
            "the array's dtype has no tensor map data type (set `TiledOptions::data_type`)",
        )
    })?;
    if let (Some(given), Some(own)) = (options.data_type, dtype) {
        if given.raw().1 != own.raw().1 {
            return Err(Error::invalid(
                what,
                format!(
                    "`data_type` {given:?} has {} bytes, the array's elements {}",
                    given.raw().1,
                    own.raw().1
                ),
            ));
        }
    }
    let elem = data_type.raw().1;
    let rank = shape.len();
    if box_dims.len() != rank {
        return Err(Error::invalid(
            what,
            format!(
                "`box_dims` has {} entries, one per dimension ({rank})",
                box_dims.len()
            ),
        ));
    }
    if !options.element_strides.is_empty() && options.element_strides.len() != rank {
        return Err(Error::invalid(
            what,
            format!(
                "`element_strides` has {} entries, one per dimension ({rank}) or none",
                options.element_strides.len()
            ),
        ));
    }
    let global_strides = match strides {
        None => Vec::new(),
        Some(st) => {
            // The innermost dimension must be contiguous (a size-1 one reaches
            // one element whatever its stride).
            if let (Some(&inner), Some(&n)) = (st.last(), shape.last()) {
                if inner != 1 && n != 1 {
                    return Err(Error::invalid(
                        what,
                        format!(
                            "the innermost stride is {inner} elements: a tensor map's                              innermost dimension is contiguous"
                        ),
                    ));
                }
            }
            let mut bytes = Vec::with_capacity(rank.saturating_sub(1));
            for &s in st.iter().rev().skip(1) {
                let s = u64::try_from(s)
                    .ok()
                    .and_then(|s| s.checked_mul(elem))
                    .ok_or_else(|| Error::invalid(what, format!("a stride of {s} elements")))?;
                bytes.push(s);
            }
            bytes
        }
    };
    Ok(TensorMapDescriptorOptions {
        data_type,
        global_dims: shape.iter().rev().copied().collect(),
        global_strides,
        box_dims: box_dims.iter().rev().copied().collect(),
        element_strides: options.element_strides.iter().rev().copied().collect(),
        interleave: options.interleave,
        swizzle: options.swizzle,
        l2_promotion: options.l2_promotion,
        oob_fill: options.oob_fill,
    })
}

impl<'a> TensorMapDescriptor<'a> {
    /// A tiled map over a typed view, the element type taken from `T`: Python's
    /// `TensorMapDescriptor.from_tiled(a, box_dim=…)`. `shape` and `box_dims` are
    /// in the array's order (outermost first, as Python and NumPy write them;
    /// the map stores them innermost first), and the view holds the packed
    /// row-major array: the product of `shape` is the view's length.
    ///
    /// ```no_run
    /// # fn f(dev: &cudars_core::Device, s: &cudars_core::Stream) -> cudars_core::Result<()> {
    /// use cudars_core::{DeviceBuffer, TensorMapDescriptor, TiledOptions};
    /// let a = DeviceBuffer::<f32>::zeroed(dev, 64 * 128, s)?; // 64 rows of 128
    /// let map = TensorMapDescriptor::from_tiled(&a.view(), &[64, 128], &[16, 32], &TiledOptions::default())?;
    /// # Ok(()) }
    /// ```
    ///
    /// As for [`tiled`](Self::tiled), the map borrows the view's buffer.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the shape's product is not the view's
    /// length, for a box or element strides of another rank, and as
    /// [`tiled`](Self::tiled).
    pub fn from_tiled<T: TensorMapElement>(
        view: &DeviceView<'a, T>,
        shape: &[u64],
        box_dims: &[u32],
        options: &TiledOptions,
    ) -> Result<Self> {
        let what = "encoding a tiled tensor map over a typed view";
        let count = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
        if count != Some(view.len() as u64) {
            return Err(Error::invalid(
                what,
                format!(
                    "the shape {shape:?} is not the view's {} elements",
                    view.len()
                ),
            ));
        }
        let options = tiled_from_array(what, Some(T::DATA_TYPE), shape, None, box_dims, options)?;
        Self::encode_tiled(
            what,
            (view.ptr(), view.byte_len() as u64, *view.buffer().device()),
            Some(view.buf),
            &options,
        )
    }

    #[cfg(feature = "dlpack")]
    #[cfg_attr(docsrs, doc(cfg(feature = "dlpack")))]
    /// A tiled map over a strided view of device or managed memory, its data
    /// type, shape and strides taken from the view (Python's `from_tiled(a,
    /// box_dim=…)` of an array with strides; also
    /// [`StridedMemoryView::as_tensor_map`]). `box_dims` and
    /// `options.element_strides` are in the view's order (outermost first).
    /// The innermost dimension must be contiguous and the other strides
    /// multiples of 16 bytes.
    ///
    /// The map borrows the view, which keeps what it views alive.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a view of host memory, a dtype with no
    /// tensor map data type (and no `options.data_type`), a non-contiguous
    /// innermost dimension, a box or element strides of another rank, and as
    /// [`tiled`](Self::tiled).
    pub fn from_strided(
        view: &'a StridedMemoryView,
        box_dims: &[u32],
        options: &TiledOptions,
    ) -> Result<Self> {
        let what = "encoding a tiled tensor map over a strided view";
        let device = view.device();
        if device.device_type != DLDeviceType::CUDA
            && device.device_type != DLDeviceType::CUDA_MANAGED
        {
            let kind = match device.device_type {
                DLDeviceType::CPU => "host".to_owned(),
                DLDeviceType::CUDA_HOST => "pinned host".to_owned(),
                other => format!("{other:?}"),
            };
            return Err(Error::invalid(
                what,
                format!(
                    "the view is of {kind} memory; a tensor map describes device or managed memory"
                ),
            ));
        }
        let ordinal = usize::try_from(device.device_id)
            .map_err(|_| Error::invalid(what, format!("device {}", device.device_id)))?;
        let shape: Vec<u64> = view.shape().iter().map(|&d| d.unsigned_abs()).collect();
        let options = tiled_from_array(
            what,
            TensorMapDataType::of_dtype(view.dtype()),
            &shape,
            Some(view.strides()),
            box_dims,
            options,
        )?;
        Self::encode_tiled(
            what,
            (view.ptr(), view.extent_bytes(), Device::new(ordinal)?),
            None,
            &options,
        )
    }
}

#[cfg(feature = "dlpack")]
impl StridedMemoryView {
    /// A tiled tensor map over this view (Python's
    /// `TensorMapDescriptor.from_tiled(view, box_dim=…)`): the data type, shape
    /// and strides are the view's; `box_dims` is in the view's order (outermost
    /// first). See [`TensorMapDescriptor::from_strided`].
    ///
    /// # Errors
    /// As [`TensorMapDescriptor::from_strided`].
    pub fn as_tensor_map(
        &self,
        box_dims: &[u32],
        options: &TiledOptions,
    ) -> Result<TensorMapDescriptor<'_>> {
        TensorMapDescriptor::from_strided(self, box_dims, options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::InvalidKind;

    fn kind<T: std::fmt::Debug>(r: Result<T>, needle: &str) -> InvalidKind {
        let e = r.unwrap_err();
        assert!(e.to_string().contains(needle), "{e} lacks {needle:?}");
        e.invalid_kind().unwrap()
    }

    #[test]
    fn an_array_layout_becomes_the_drivers_order() {
        // A 64x128 f32 array, rows padded to 160 elements, a 16x32 box.
        let o = tiled_from_array(
            "t",
            Some(TensorMapDataType::F32),
            &[64, 128],
            Some(&[160, 1]),
            &[16, 32],
            &TiledOptions {
                element_strides: vec![1, 2],
                swizzle: TensorMapSwizzle::B128,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(o.global_dims, [128, 64]);
        assert_eq!(o.global_strides, [160 * 4]);
        assert_eq!(o.box_dims, [32, 16]);
        assert_eq!(o.element_strides, [2, 1]);
        assert_eq!(
            (o.data_type, o.swizzle),
            (TensorMapDataType::F32, TensorMapSwizzle::B128)
        );
        // Packed (no strides): the driver's packed default; everything else default.
        let o = tiled_from_array(
            "t",
            Some(TensorMapDataType::U8),
            &[4, 5, 64],
            None,
            &[1, 1, 16],
            &TiledOptions::default(),
        )
        .unwrap();
        assert_eq!(
            o,
            TensorMapDescriptorOptions::new(TensorMapDataType::U8, &[64, 5, 4], &[16, 1, 1])
        );
        // A data type of the same size may replace the array's.
        let tf32 = TiledOptions {
            data_type: Some(TensorMapDataType::TF32),
            ..Default::default()
        };
        let o =
            tiled_from_array("t", Some(TensorMapDataType::F32), &[16], None, &[16], &tf32).unwrap();
        assert_eq!(o.data_type, TensorMapDataType::TF32);
        let e = tiled_from_array("t", Some(TensorMapDataType::F64), &[16], None, &[16], &tf32);
        assert_eq!(kind(e, "bytes"), InvalidKind::Other);
        // No data type at all, a strided innermost dimension, a box of another
        // rank: refused, naming what.
        let e = tiled_from_array("t", None, &[16], None, &[16], &TiledOptions::default());
        assert_eq!(kind(e, "data_type"), InvalidKind::Other);
        let e = tiled_from_array(
            "t",
            Some(TensorMapDataType::F32),
            &[4, 16],
            Some(&[32, 2]),
            &[4, 16],
            &TiledOptions::default(),
        );
        assert_eq!(kind(e, "innermost stride"), InvalidKind::Other);
        let e = tiled_from_array(
            "t",
            Some(TensorMapDataType::F32),
            &[4, 16],
            None,
            &[16],
            &TiledOptions::default(),
        );
        assert_eq!(kind(e, "`box_dims`"), InvalidKind::Other);
        // A size-1 innermost dimension may have any stride.
        tiled_from_array(
            "t",
            Some(TensorMapDataType::F32),
            &[4, 1],
            Some(&[4, 7]),
            &[4, 1],
            &TiledOptions::default(),
        )
        .unwrap();
        // The dtypes a tensor map has, from DLPack's.
        #[cfg(feature = "dlpack")]
        {
            assert_eq!(
                TensorMapDataType::of_dtype(DLDataType::BF16),
                Some(TensorMapDataType::BF16)
            );
            assert_eq!(
                TensorMapDataType::of_dtype(DLDataType::I64),
                Some(TensorMapDataType::I64)
            );
            assert_eq!(TensorMapDataType::of_dtype(DLDataType::I8), None);
        }
        #[cfg(feature = "half")]
        assert_eq!(
            <half::f16 as TensorMapElement>::DATA_TYPE,
            TensorMapDataType::F16
        );
    }
}
