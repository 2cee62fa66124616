//! `cuda_core/tests/test_tensor_map.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says.
//!
//! Names: `StridedMemoryView.as_tensor_map(box_dim=…, data_type=…, …)` is
//! [`StridedMemoryView::as_tensor_map`]`(box_dims, &TiledOptions { … })` (the
//! keyword arguments are [`TiledOptions`]' fields, `data_type` an `Option`);
//! `TensorMapDescriptor._from_im2col(view, …)` and `_from_im2col_wide` are
//! [`TensorMapDescriptor::im2col`] and [`TensorMapDescriptor::im2col_wide`] over
//! the buffer, with the layout spelt in the driver's order (innermost first: a
//! `(1, 32, 64)` tensor is `global_dims: [64, 32, 1]`, spatial corners W
//! first). `TensorMapDataType.FLOAT32` is `TensorMapDataType::F32`,
//! `TensorMapSwizzle.SWIZZLE_128B` `TensorMapSwizzle::B128` and so on; the
//! enums' integers are their `to_raw()`.
//!
//! The test's `_DeviceArray(buf, shape)` (a CUDA Array Interface over a buffer)
//! is the same here: [`StridedMemoryView::from_cuda_array_interface`] over the
//! buffer's address. Its `_as_view(buf)` of a plain buffer is a view of the
//! buffer's bytes (`uint8`, as Python's DLPack export); where the test then
//! passes `data_type=FLOAT32`, the port views the buffer as the `float32`
//! elements the test's comment says it holds: `cudars-core` refuses a data type
//! of another size than the view's elements, where `cuda.core` would encode a
//! map of as many `float32` as the buffer has bytes (four times the buffer).
//!
//! Needs a GPU with the tensor memory accelerator (sm_90 or later; the H100);
//! on an older GPU the tests print why and return, as Python's
//! `skip_if_no_tma` skips. The enum, dtype and host-view tests need no GPU.

use std::sync::Arc;

use cudars_core::dlpack::DLDataType;
use cudars_core::{
    Buffer, CudaArrayInterface, Device, Error, InvalidKind, Location, ManagedMemoryResource,
    Stream, StridedMemoryView, TensorMapDataType, TensorMapDescriptor, TensorMapElement,
    TensorMapIm2colOptions, TensorMapIm2colWideMode, TensorMapIm2colWideOptions,
    TensorMapInterleave, TensorMapL2Promotion, TensorMapOobFill, TensorMapSwizzle, TiledOptions,
};
use cudars_tests::{require_gpu, require_gpus};

/// Python's `dev` and `skip_if_no_tma` fixtures: device 0, current, and its
/// default stream; `None` (printed) where the device has no TMA.
fn tma_device() -> Option<(Device, Stream)> {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    if !d.properties().tensor_map_access_supported().unwrap() {
        println!("Device does not support TMA (requires compute capability 9.0+)");
        return None;
    }
    let s = d.default_stream().unwrap();
    Some((d, s))
}

/// `dev.allocate(n, stream=dev.default_stream)`, shared as a view holds it.
fn allocate(d: &Device, s: &Stream, n: usize) -> Arc<Buffer> {
    Arc::new(d.allocate(n, s).unwrap())
}

/// The buffer's `float32` elements, one dimension.
fn f32_view(buf: &Arc<Buffer>) -> StridedMemoryView {
    StridedMemoryView::from_buffer(buf, &[(buf.size() / 4) as i64], None, DLDataType::F32).unwrap()
}

/// `_as_view(_DeviceArray(buf, shape))`: a CUDA Array Interface (v3, no
/// strides, no stream) of `float32` elements of `shape` at the buffer's address,
/// viewed with `stream_ptr=-1` (no ordering).
fn device_array(buf: &Arc<Buffer>, shape: &[i64]) -> StridedMemoryView {
    let cai = CudaArrayInterface::new(buf.ptr(), shape, "<f4");
    // SAFETY: the address is the buffer's, which holds the whole layout and
    // outlives the view (the tests keep it to their end); no producer stream.
    unsafe { StridedMemoryView::from_cuda_array_interface(&cai, None) }.unwrap()
}

/// `data_type=TensorMapDataType.FLOAT32`.
fn f32_options() -> TiledOptions {
    TiledOptions {
        data_type: Some(TensorMapDataType::F32),
        ..Default::default()
    }
}

/// An `InvalidArgument` whose message names `needle`.
fn invalid<T: std::fmt::Debug>(r: cudars_core::Result<T>, needle: &str) -> InvalidKind {
    let e = r.unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { .. }),
        "{e:?} is not InvalidArgument"
    );
    assert!(e.to_string().contains(needle), "{e} lacks {needle:?}");
    e.invalid_kind().unwrap()
}

// ---- TestTensorMapEnums ----

#[test]
fn TestTensorMapEnums__test_data_type_values() {
    assert_eq!(TensorMapDataType::U8.to_raw(), 0);
    assert_eq!(TensorMapDataType::F32.to_raw(), 7);
    assert_eq!(TensorMapDataType::F64.to_raw(), 8);
    assert_eq!(TensorMapDataType::BF16.to_raw(), 9);
}

#[test]
fn TestTensorMapEnums__test_interleave_values() {
    assert_eq!(TensorMapInterleave::None.to_raw(), 0);
    assert_eq!(TensorMapInterleave::B16.to_raw(), 1);
    assert_eq!(TensorMapInterleave::B32.to_raw(), 2);
}

#[test]
fn TestTensorMapEnums__test_swizzle_values() {
    assert_eq!(TensorMapSwizzle::None.to_raw(), 0);
    assert_eq!(TensorMapSwizzle::B32.to_raw(), 1);
    assert_eq!(TensorMapSwizzle::B64.to_raw(), 2);
    assert_eq!(TensorMapSwizzle::B128.to_raw(), 3);
}

#[test]
fn TestTensorMapEnums__test_l2_promotion_values() {
    assert_eq!(TensorMapL2Promotion::None.to_raw(), 0);
    assert_eq!(TensorMapL2Promotion::B64.to_raw(), 1);
    assert_eq!(TensorMapL2Promotion::B128.to_raw(), 2);
    assert_eq!(TensorMapL2Promotion::B256.to_raw(), 3);
}

/// `TensorMapOOBFill.NONE` is `TensorMapOobFill::Zero` (the driver's `NONE`
/// fills with zeros).
#[test]
fn TestTensorMapEnums__test_oob_fill_values() {
    assert_eq!(TensorMapOobFill::Zero.to_raw(), 0);
    assert_eq!(TensorMapOobFill::NanRequestZeroFma.to_raw(), 1);
}

#[test]
fn TestTensorMapEnums__test_im2col_wide_mode_values() {
    assert_eq!(TensorMapIm2colWideMode::W.to_raw(), 0);
    assert_eq!(TensorMapIm2colWideMode::W128.to_raw(), 1);
}

// ---- TestTensorMapDescriptorCreation ----

/// Python also asserts the descriptor's `repr`; the Rust `Debug` names the
/// device and span instead (the object model: not carried over).
#[test]
fn TestTensorMapDescriptorCreation__test_from_tiled_1d() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 1024 * 4); // 1024 float32 elements
    let view = f32_view(&buf);
    let desc = view.as_tensor_map(&[64], &f32_options()).unwrap();
    assert_eq!(desc.span(), 1024 * 4);
    assert!(format!("{desc:?}").starts_with("TensorMapDescriptor"));
}

#[test]
fn TestTensorMapDescriptorCreation__test_device_property() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 1024 * 4);
    let view = f32_view(&buf);
    let desc = view.as_tensor_map(&[64], &f32_options()).unwrap();
    assert_eq!(desc.device().ordinal(), d.ordinal());
}

#[test]
fn TestTensorMapDescriptorCreation__test_from_tiled_2d() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 64 * 64 * 4); // 64x64 float32
    let view = device_array(&buf, &[64, 64]);
    view.as_tensor_map(&[32, 32], &f32_options()).unwrap();
}

#[test]
fn TestTensorMapDescriptorCreation__test_strided_memory_view_as_tensor_map() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 64 * 64 * 4);
    let view = device_array(&buf, &[64, 64]);
    let desc = view.as_tensor_map(&[32, 32], &f32_options()).unwrap();
    assert_eq!(desc.span(), 64 * 64 * 4);
}

/// `options=TensorMapDescriptorOptions(box_dim=(32, 32), data_type=np.float32,
/// swizzle=SWIZZLE_128B)`: the box and a [`TiledOptions`].
#[test]
fn TestTensorMapDescriptorCreation__test_strided_memory_view_as_tensor_map_options() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 64 * 64 * 4);
    let view = device_array(&buf, &[64, 64]);
    let options = TiledOptions {
        data_type: Some(TensorMapDataType::F32),
        swizzle: TensorMapSwizzle::B128,
        ..Default::default()
    };
    view.as_tensor_map(&[32, 32], &options).unwrap();
}

/// `options={"box_dim": (64,), "data_type": np.float32, "element_strides":
/// (1,)}`: a mapping is the same options struct here.
#[test]
fn TestTensorMapDescriptorCreation__test_strided_memory_view_as_tensor_map_options_dict() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 1024 * 4);
    let view = f32_view(&buf);
    let options = TiledOptions {
        data_type: Some(TensorMapDataType::F32),
        element_strides: vec![1],
        ..Default::default()
    };
    view.as_tensor_map(&[64], &options).unwrap();
}

#[test]
fn TestTensorMapDescriptorCreation__test_from_tiled_3d() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 16 * 16 * 16 * 4); // 16x16x16 float32
    let view = device_array(&buf, &[16, 16, 16]);
    view.as_tensor_map(&[8, 8, 8], &f32_options()).unwrap();
}

/// 5D: every dimension and stride slot; the data type from the array's dtype.
#[test]
fn TestTensorMapDescriptorCreation__test_from_tiled_5d() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 2 * 4 * 4 * 4 * 8 * 4);
    let view = device_array(&buf, &[2, 4, 4, 4, 8]);
    let desc = view
        .as_tensor_map(&[1, 2, 2, 2, 8], &TiledOptions::default())
        .unwrap();
    assert_eq!(desc.span(), 2 * 4 * 4 * 4 * 8 * 4);
}

#[test]
fn TestTensorMapDescriptorCreation__test_from_tiled_with_element_strides_buffer() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 1024 * 4);
    let view = f32_view(&buf);
    let options = TiledOptions {
        element_strides: vec![2],
        ..f32_options()
    };
    view.as_tensor_map(&[64], &options).unwrap();
}

#[test]
fn TestTensorMapDescriptorCreation__test_from_tiled_with_element_strides_cai() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 64 * 64 * 4);
    let view = device_array(&buf, &[64, 64]);
    let options = TiledOptions {
        element_strides: vec![2, 1],
        ..f32_options()
    };
    view.as_tensor_map(&[32, 32], &options).unwrap();
}

#[test]
fn TestTensorMapDescriptorCreation__test_from_tiled_with_swizzle() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 64 * 64 * 4);
    let view = device_array(&buf, &[64, 64]);
    let options = TiledOptions {
        swizzle: TensorMapSwizzle::B128,
        ..f32_options()
    };
    view.as_tensor_map(&[32, 32], &options).unwrap();
}

#[test]
fn TestTensorMapDescriptorCreation__test_from_tiled_with_l2_promotion() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 64 * 64 * 4);
    let view = device_array(&buf, &[64, 64]);
    let options = TiledOptions {
        l2_promotion: TensorMapL2Promotion::B128,
        ..f32_options()
    };
    view.as_tensor_map(&[32, 32], &options).unwrap();
}

#[test]
fn TestTensorMapDescriptorCreation__test_from_tiled_with_oob_fill() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 64 * 64 * 4);
    let view = device_array(&buf, &[64, 64]);
    let options = TiledOptions {
        oob_fill: TensorMapOobFill::NanRequestZeroFma,
        ..f32_options()
    };
    view.as_tensor_map(&[32, 32], &options).unwrap();
}

// ---- TestTensorMapDescriptorValidation ----

/// Python: `ValueError("Tensor rank must be between 1 and 5")`.
#[test]
fn TestTensorMapDescriptorValidation__test_invalid_rank_zero() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 64);
    let view = device_array(&buf, &[]); // 0-dim tensor
    invalid(view.as_tensor_map(&[], &f32_options()), "rank");
}

#[test]
fn TestTensorMapDescriptorValidation__test_invalid_rank_six() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 64 * 4);
    let view = device_array(&buf, &[2, 2, 2, 2, 2, 2]);
    invalid(
        view.as_tensor_map(&[2; 6], &TiledOptions::default()),
        "rank",
    );
}

/// Python: `ValueError("box_dim must have 1 elements")`.
#[test]
fn TestTensorMapDescriptorValidation__test_box_dim_rank_mismatch() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 1024 * 4);
    let view = f32_view(&buf);
    invalid(view.as_tensor_map(&[32, 32], &f32_options()), "`box_dims`");
}

/// Python: `ValueError("box_dim[0] must be in [1, 256]")`.
#[test]
fn TestTensorMapDescriptorValidation__test_box_dim_out_of_range() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 1024 * 4);
    let view = f32_view(&buf);
    let kind = invalid(view.as_tensor_map(&[512], &f32_options()), "1 to 256");
    assert_eq!(kind, InvalidKind::OutOfRange);
}

/// Python: `ValueError("element_strides must have 1 elements")`.
#[test]
fn TestTensorMapDescriptorValidation__test_element_strides_rank_mismatch() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 1024 * 4);
    let view = f32_view(&buf);
    let options = TiledOptions {
        element_strides: vec![1, 1],
        ..f32_options()
    };
    invalid(view.as_tensor_map(&[64], &options), "`element_strides`");
}

/// A view of host memory is refused before anything reaches the driver: no
/// GPU needed, as in Python. Python: `ValueError("… device-accessible …")`.
#[test]
fn TestTensorMapDescriptorValidation__test_as_tensor_map_host_view_rejected_without_tma() {
    let host = vec![0f32; 64 * 64];
    let view = StridedMemoryView::from_slice(&host, &[64, 64], None).unwrap();
    let options = TiledOptions {
        data_type: Some(TensorMapDataType::F32),
        element_strides: vec![1, 1],
        swizzle: TensorMapSwizzle::B128,
        l2_promotion: TensorMapL2Promotion::B128,
        oob_fill: TensorMapOobFill::NanRequestZeroFma,
        ..Default::default()
    };
    invalid(view.as_tensor_map(&[32, 32], &options), "host memory");
}

// ---- TestTensorMapDtypeMapping ----

/// Every case of `test_dtype_mapping[*]`: NumPy's dtype is the element type
/// here, and its data type [`TensorMapElement::DATA_TYPE`].
#[test]
fn TestTensorMapDtypeMapping__test_dtype_mapping() {
    fn of<T: TensorMapElement>() -> TensorMapDataType {
        T::DATA_TYPE
    }
    assert_eq!(of::<u8>(), TensorMapDataType::U8);
    assert_eq!(of::<u16>(), TensorMapDataType::U16);
    assert_eq!(of::<u32>(), TensorMapDataType::U32);
    assert_eq!(of::<i32>(), TensorMapDataType::I32);
    assert_eq!(of::<u64>(), TensorMapDataType::U64);
    assert_eq!(of::<i64>(), TensorMapDataType::I64);
    assert_eq!(of::<half::f16>(), TensorMapDataType::F16);
    assert_eq!(of::<f32>(), TensorMapDataType::F32);
    assert_eq!(of::<f64>(), TensorMapDataType::F64);
}

/// `ml_dtypes.bfloat16` is `half::bf16`.
#[test]
fn TestTensorMapDtypeMapping__test_bfloat16_mapping() {
    assert_eq!(
        <half::bf16 as TensorMapElement>::DATA_TYPE,
        TensorMapDataType::BF16
    );
}

// ---- TestTensorMapReplaceAddress ----

#[test]
fn TestTensorMapReplaceAddress__test_replace_address() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf1 = allocate(&d, &s, 1024 * 4);
    let view = f32_view(&buf1);
    let mut desc = view.as_tensor_map(&[64], &f32_options()).unwrap();
    let buf2 = allocate(&d, &s, 1024 * 4);
    desc.replace_address(&buf2).unwrap();
}

/// Python: `ValueError("replace_address expects tensor on device 0, got 1")`.
#[test]
fn TestTensorMapReplaceAddress__test_replace_address_rejects_tensor_from_other_device() {
    require_gpus!(2);
    let Some((d0, s0)) = tma_device() else { return };
    let buf0 = allocate(&d0, &s0, 1024 * 4);
    let view = f32_view(&buf0);
    let mut desc = view.as_tensor_map(&[64], &f32_options()).unwrap();
    let d1 = Device::new(1).unwrap();
    let s1 = d1.default_stream().unwrap();
    let buf1 = allocate(&d1, &s1, 1024 * 4);
    d0.set_current().unwrap();
    let kind = invalid(desc.replace_address(&buf1), "device 1");
    assert_eq!(kind, InvalidKind::OtherDevice);
}

/// Managed memory whose pool prefers device 1, on a map made on device 1.
#[test]
fn TestTensorMapReplaceAddress__test_replace_address_accepts_managed_buffer_on_nonzero_device() {
    require_gpus!(2);
    let d1 = Device::new(1).unwrap();
    if !d1.properties().tensor_map_access_supported().unwrap() {
        println!("Device does not support TMA (requires compute capability 9.0+)");
        return;
    }
    if !d1.properties().managed_memory().unwrap() {
        println!("device 1 has no managed memory");
        return;
    }
    d1.set_current().unwrap();
    let s1 = d1.default_stream().unwrap();
    let buf = allocate(&d1, &s1, 1024 * 4);
    let view = f32_view(&buf);
    let mut desc = view.as_tensor_map(&[64], &f32_options()).unwrap();
    let mr = Arc::new(
        ManagedMemoryResource::with_preferred_location(&d1, Location::Device(d1)).unwrap(),
    );
    let managed = mr.allocate(1024 * 4, &s1).unwrap();
    desc.replace_address(&managed).unwrap();
}

// ---- TestTensorMapMultiDeviceValidation ----

#[test]
fn TestTensorMapMultiDeviceValidation__test_from_tiled_accepts_managed_buffer_on_nonzero_device() {
    require_gpus!(2);
    let d1 = Device::new(1).unwrap();
    if !d1.properties().tensor_map_access_supported().unwrap() {
        println!("Device does not support TMA (requires compute capability 9.0+)");
        return;
    }
    if !d1.properties().managed_memory().unwrap() {
        println!("device 1 has no managed memory");
        return;
    }
    d1.set_current().unwrap();
    let s1 = d1.default_stream().unwrap();
    let mr = Arc::new(
        ManagedMemoryResource::with_preferred_location(&d1, Location::Device(d1)).unwrap(),
    );
    let managed = Arc::new(mr.allocate(1024 * 4, &s1).unwrap().into_buffer());
    let view = f32_view(&managed);
    view.as_tensor_map(&[64], &f32_options()).unwrap();
}

// ---- TestTensorMapIm2col ----

/// `_from_im2col(_DeviceArray(buf, shape), …)` over the buffer, `shape`
/// outermost first as Python's (turned innermost first here).
fn im2col(
    shape: &[u64],
    lower: &[i32],
    upper: &[i32],
    pixels_per_column: u32,
) -> TensorMapIm2colOptions {
    TensorMapIm2colOptions {
        data_type: TensorMapDataType::F32,
        global_dims: shape.iter().rev().copied().collect(),
        global_strides: vec![],
        pixel_box_lower_corner: lower.to_vec(),
        pixel_box_upper_corner: upper.to_vec(),
        channels_per_pixel: 64,
        pixels_per_column,
        element_strides: vec![],
        interleave: TensorMapInterleave::None,
        swizzle: TensorMapSwizzle::None,
        l2_promotion: TensorMapL2Promotion::None,
        oob_fill: TensorMapOobFill::Zero,
    }
}

/// 3D: batch 1, height 32, 64 channels.
#[test]
fn TestTensorMapIm2col__test_from_im2col_3d() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 32 * 64 * 4);
    TensorMapDescriptor::im2col(&buf, &im2col(&[1, 32, 64], &[0], &[4], 4)).unwrap();
}

/// Python: `ValueError("Im2col tensor rank must be between 3 and 5")`.
#[test]
fn TestTensorMapIm2col__test_from_im2col_rank_validation() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 1024 * 4);
    invalid(
        TensorMapDescriptor::im2col(&buf, &im2col(&[1024], &[], &[], 4)),
        "rank",
    );
}

/// Python: `ValueError("pixel_box_lower_corner must have 1 elements")`.
#[test]
fn TestTensorMapIm2col__test_from_im2col_corner_rank_mismatch() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 32 * 64 * 4);
    invalid(
        TensorMapDescriptor::im2col(&buf, &im2col(&[1, 32, 64], &[0, 0], &[4], 4)),
        "`pixel_box_lower_corner`",
    );
}

/// NHWC, N=1, H=8, W=8, C=64: two spatial dimensions (W first here).
#[test]
fn TestTensorMapIm2col__test_from_im2col_4d() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 8 * 8 * 64 * 4);
    TensorMapDescriptor::im2col(&buf, &im2col(&[1, 8, 8, 64], &[0, 0], &[4, 4], 16)).unwrap();
}

/// NDHWC, N=1, D=4, H=8, W=8, C=64: Python's corners `(0, 0, 0)` to `(2, 4, 4)`
/// (D, H, W) are `[0, 0, 0]` to `[4, 4, 2]` (W, H, D).
#[test]
fn TestTensorMapIm2col__test_from_im2col_5d() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 4 * 8 * 8 * 64 * 4);
    TensorMapDescriptor::im2col(&buf, &im2col(&[1, 4, 8, 8, 64], &[0, 0, 0], &[4, 4, 2], 32))
        .unwrap();
}

// ---- TestTensorMapIm2colWide ----
//
// Python skips these below compute capability 10.0, and where the driver
// refuses its inputs with `CUDA_ERROR_INVALID_VALUE` (`skip_if_no_im2col_wide`
// probes the 3D case). Its inputs take the 128-byte swizzle default with 64
// `float32` channels per pixel (256 bytes): `cudars-core` checks the driver's
// rule that the channels fit the swizzle before the device, and refuses them
// with `Error::InvalidArgument` naming `channels_per_pixel`, where Python
// skips. Each test asserts that refusal, or `Error::Unsupported` below 10.0,
// or the encoding.

/// `_from_im2col_wide(_DeviceArray(buf, shape), pixel_box_lower_corner_width=0,
/// pixel_box_upper_corner_width=4, channels_per_pixel=64, …)` with Python's
/// defaults (128-byte swizzle, mode W).
fn im2col_wide(shape: &[u64], pixels_per_column: u32) -> TensorMapIm2colWideOptions {
    TensorMapIm2colWideOptions {
        data_type: TensorMapDataType::F32,
        global_dims: shape.iter().rev().copied().collect(),
        global_strides: vec![],
        pixel_box_lower_corner_width: 0,
        pixel_box_upper_corner_width: 4,
        channels_per_pixel: 64,
        pixels_per_column,
        element_strides: vec![],
        interleave: TensorMapInterleave::None,
        mode: TensorMapIm2colWideMode::W,
        swizzle: TensorMapSwizzle::B128,
        l2_promotion: TensorMapL2Promotion::None,
        oob_fill: TensorMapOobFill::Zero,
    }
}

/// Encodes, or is refused as the comment above says.
fn wide_encodes(shape: &[u64], pixels_per_column: u32) {
    let Some((d, s)) = tma_device() else { return };
    let n: u64 = shape.iter().product();
    let buf = allocate(&d, &s, (n * 4) as usize);
    let r = TensorMapDescriptor::im2col_wide(&buf, &im2col_wide(shape, pixels_per_column));
    let cc10 = d.compute_capability().unwrap().0 >= 10;
    match r {
        Ok(_) => assert!(cc10, "encoded on a GPU older than compute capability 10.0"),
        Err(Error::Unsupported { .. }) if !cc10 => {}
        Err(e) => {
            assert!(
                matches!(e, Error::InvalidArgument { .. })
                    && e.to_string().contains("`channels_per_pixel`")
                    && e.to_string().contains("swizzle"),
                "{e:?}"
            );
        }
    }
}

#[test]
fn TestTensorMapIm2colWide__test_from_im2col_wide_3d() {
    require_gpu!();
    wide_encodes(&[1, 32, 64], 4);
}

#[test]
fn TestTensorMapIm2colWide__test_from_im2col_wide_4d() {
    require_gpu!();
    wide_encodes(&[1, 8, 8, 64], 16);
}

#[test]
fn TestTensorMapIm2colWide__test_from_im2col_wide_5d() {
    require_gpu!();
    wide_encodes(&[1, 4, 8, 8, 64], 32);
}

/// Python: `ValueError("Im2col-wide tensor rank must be between 3 and 5")`;
/// the rank is checked before the device, so on every GPU.
#[test]
fn TestTensorMapIm2colWide__test_from_im2col_wide_rank_validation() {
    require_gpu!();
    let Some((d, s)) = tma_device() else { return };
    let buf = allocate(&d, &s, 1024 * 4);
    invalid(
        TensorMapDescriptor::im2col_wide(&buf, &im2col_wide(&[1024], 4)),
        "rank",
    );
}
