//! Hopper TMA: a tiled tensor map encoded over a buffer, passed to kernels by
//! value, and used by a bulk tensor copy, then pointed at another buffer; im2col
//! maps encoded; im2col-wide refused before Blackwell. Needs sm_90 or later.
//! Without a GPU it prints `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use cudars_core::{
    Buffer, CompileTarget, Device, DeviceBuffer, Error, InvalidKind, LaunchConfig, MemoryKind,
    ObjectCode, Program, ProgramOptions, SourceCode, Stream, StreamOptions, StridedMemoryView,
    TensorMapDataType, TensorMapDescriptor, TensorMapDescriptorOptions, TensorMapIm2colOptions,
    TensorMapIm2colWideOptions, TensorMapSwizzle, TiledOptions, launch,
};
use cudars_tests::{require_gpu, require_libs};

const SRC: &str = r#"
struct __align__(64) TmaDesc { unsigned long long b[16]; };
extern "C" __global__ void echo(const __grid_constant__ TmaDesc map, unsigned long long *out) {
    if (threadIdx.x < 16) out[threadIdx.x] = map.b[threadIdx.x];
}
extern "C" __global__ void tma_tile(const __grid_constant__ TmaDesc map, float *out, int x0, int y0) {
    __shared__ __align__(128) float tile[16 * 16];
    __shared__ __align__(8) unsigned long long bar;
    unsigned smem = (unsigned)__cvta_generic_to_shared(tile);
    unsigned mbar = (unsigned)__cvta_generic_to_shared(&bar);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(mbar));
        asm volatile("fence.proxy.async.shared::cta;");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(mbar), "r"(16 * 16 * 4));
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(smem), "l"(&map), "r"(x0), "r"(y0), "r"(mbar) : "memory");
    }
    __syncthreads();
    asm volatile("{\n .reg .pred p;\n WAIT_TMA:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n @!p bra WAIT_TMA;\n}" :: "r"(mbar));
    for (int i = threadIdx.x; i < 256; i += blockDim.x) out[i] = tile[i];
}
"#;

/// A packed 64×64 `f32` matrix read in 16×16 tiles.
fn tiles_of_64x64() -> TensorMapDescriptorOptions {
    TensorMapDescriptorOptions {
        data_type: TensorMapDataType::F32,
        global_dims: vec![64, 64],
        global_strides: vec![],
        box_dims: vec![16, 16],
        element_strides: vec![],
        interleave: Default::default(),
        swizzle: Default::default(),
        l2_promotion: Default::default(),
        oob_fill: Default::default(),
    }
}

#[test]
fn tiled_tensor_map_feeds_a_bulk_tensor_copy() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    if d.compute_capability().unwrap().0 < 9 {
        println!("TMA needs sm_90; this device is {}", d.arch().unwrap());
        return;
    }
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let n = 64usize;
    let mut src = d.allocate(n * n * 4, &s).unwrap();
    src.copy_from_host(&(0..n * n).map(|i| i as f32).collect::<Vec<_>>(), &s)
        .unwrap();
    let options = tiles_of_64x64();
    let map = TensorMapDescriptor::tiled(&src, &options).unwrap();
    // Bad shapes are refused before the driver.
    let too_big = TensorMapDescriptorOptions {
        global_dims: vec![n as u64, 2 * n as u64],
        ..options.clone()
    };
    assert!(matches!(
        TensorMapDescriptor::tiled(&src, &too_big),
        Err(Error::InvalidArgument { .. })
    ));
    let bad_box = TensorMapDescriptorOptions {
        box_dims: vec![512, 1],
        ..options.clone()
    };
    assert!(matches!(
        TensorMapDescriptor::tiled(&src, &bad_box),
        Err(Error::InvalidArgument { .. })
    ));

    let code = tma_code(&d);
    // The descriptor arrives intact, by value.
    let echo = code.get_kernel("echo").unwrap();
    let mut out = d.allocate(128, &s).unwrap();
    // SAFETY: `echo` writes 16 u64 to `out`, which holds 128 bytes.
    unsafe { launch(&s, &LaunchConfig::new(1, 32), &echo, &[&map, &out]) }.unwrap();
    let mut words = [0u64; 16];
    out.copy_to_host(&mut words, &s).unwrap();
    // SAFETY: a `CUtensorMap` is 128 bytes of plain data.
    let raw: [u64; 16] = unsafe { std::mem::transmute_copy(map.raw()) };
    assert_eq!(words, raw);
    // A 16×16 tile at (x = 16, y = 32), copied by the tensor memory accelerator.
    let tma = code.get_kernel("tma_tile").unwrap();
    let mut tile = d.allocate(256 * 4, &s).unwrap();
    tile.fill_u32(0, &s).unwrap();
    // SAFETY: `tma_tile` reads the 64×64 tensor through the map and writes 256 floats.
    unsafe {
        launch(
            &s,
            &LaunchConfig::new(1, 128),
            &tma,
            &[&map, &tile, &16i32, &32i32],
        )
    }
    .unwrap();
    let mut got = vec![0f32; 256];
    tile.copy_to_host(&mut got, &s).unwrap();
    for r in 0..16 {
        for c in 0..16 {
            assert_eq!(
                got[r * 16 + c],
                ((32 + r) * n + 16 + c) as f32,
                "tile ({r}, {c})"
            );
        }
    }
    out.fill_u8(0, &s).unwrap();
}

/// `SRC` compiled for `d`.
fn tma_code(d: &Device) -> ObjectCode {
    Program::new(
        SourceCode::Cxx(SRC),
        ProgramOptions {
            arch: Some(d.arch().unwrap()),
            ..Default::default()
        },
    )
    .unwrap()
    .compile(CompileTarget::Cubin, &[])
    .unwrap()
}

/// Device 0 and a stream on it, when it has the TMA (sm_90 or later).
fn hopper() -> Option<(Device, Stream)> {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    if d.compute_capability().unwrap().0 < 9 {
        println!("TMA needs sm_90; this device is {}", d.arch().unwrap());
        return None;
    }
    let s = d.create_stream(StreamOptions::default()).unwrap();
    Some((d, s))
}

/// A 64×64 `f32` matrix on the device whose element `i` is `i + offset`.
fn matrix(d: &Device, s: &Stream, offset: f32) -> Buffer {
    let n = 64usize;
    let mut b = d.allocate(n * n * 4, s).unwrap();
    b.copy_from_host(
        &(0..n * n).map(|i| i as f32 + offset).collect::<Vec<_>>(),
        s,
    )
    .unwrap();
    b
}

/// The 16×16 tile at (x = 16, y = 32) read through `map` by the TMA.
fn tile_through(
    code: &ObjectCode,
    map: &TensorMapDescriptor<'_>,
    d: &Device,
    s: &Stream,
) -> Vec<f32> {
    let tma = code.get_kernel("tma_tile").unwrap();
    let mut tile = d.allocate(256 * 4, s).unwrap();
    tile.fill_u32(0, s).unwrap();
    // SAFETY: `tma_tile` reads a 64×64 tensor through the map and writes 256 floats.
    unsafe {
        launch(
            s,
            &LaunchConfig::new(1, 128),
            &tma,
            &[map, &tile, &16i32, &32i32],
        )
    }
    .unwrap();
    let mut got = vec![0f32; 256];
    tile.copy_to_host(&mut got, s).unwrap();
    got
}

#[test]
fn replace_address_points_a_map_at_another_buffer() {
    require_gpu!();
    require_libs!("nvrtc");
    let Some((d, s)) = hopper() else { return };
    let a = matrix(&d, &s, 0.0);
    let b = matrix(&d, &s, 100_000.0);
    let options = tiles_of_64x64();
    let map = TensorMapDescriptor::tiled(&a, &options).unwrap();
    assert_eq!(map.device(), d);
    assert_eq!(map.span(), 64 * 64 * 4);
    let mut moved = map;
    moved.replace_address(&b).unwrap();
    let words = |m: &TensorMapDescriptor<'_>| -> [u64; 16] {
        // SAFETY: a `CUtensorMap` is 128 bytes of plain data.
        unsafe { std::mem::transmute_copy(m.raw()) }
    };
    assert_ne!(words(&map), words(&moved));

    let code = tma_code(&d);
    let expect = |offset: f32| {
        (0..256)
            .map(|i| ((32 + i / 16) * 64 + 16 + i % 16) as f32 + offset)
            .collect::<Vec<_>>()
    };
    assert_eq!(tile_through(&code, &map, &d, &s), expect(0.0));
    assert_eq!(tile_through(&code, &moved, &d, &s), expect(100_000.0));

    // A buffer too small for the layout, or misaligned, is refused and the map
    // keeps its address.
    let small = d.allocate(64 * 63 * 4, &s).unwrap();
    let e = moved.replace_address(&small).unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::OutOfRange), "{e}");
    // SAFETY: 8 bytes into `b`, within it; used only to be refused.
    let skewed = unsafe { Buffer::from_raw(b.ptr() + 8, b.size() - 8, MemoryKind::Device, &d) };
    let e = moved.replace_address(&skewed).unwrap_err();
    assert_eq!(e.invalid_kind(), Some(InvalidKind::Other), "{e}");
    assert!(e.to_string().contains("16-byte"), "{e}");
    assert_eq!(tile_through(&code, &moved, &d, &s), expect(100_000.0));

    // A buffer of another device is refused.
    if Device::count().unwrap() > 1 {
        let d1 = Device::new(1).unwrap();
        let s1 = d1.create_stream(StreamOptions::default()).unwrap();
        let other = d1.allocate(64 * 64 * 4, &s1).unwrap();
        let e = moved.replace_address(&other).unwrap_err();
        assert_eq!(e.invalid_kind(), Some(InvalidKind::OtherDevice), "{e}");
    }
}

/// An NHWC tensor, 2 images of 8×8 pixels of 16 `f32` channels, innermost first.
fn im2col_options() -> TensorMapIm2colOptions {
    TensorMapIm2colOptions {
        data_type: TensorMapDataType::F32,
        global_dims: vec![16, 8, 8, 2],
        global_strides: vec![],
        pixel_box_lower_corner: vec![-1, -1],
        pixel_box_upper_corner: vec![-1, -1],
        channels_per_pixel: 16,
        pixels_per_column: 64,
        element_strides: vec![],
        interleave: Default::default(),
        swizzle: Default::default(),
        l2_promotion: Default::default(),
        oob_fill: Default::default(),
    }
}

#[test]
fn im2col_maps_encode_and_check_their_arguments() {
    require_gpu!();
    let Some((d, s)) = hopper() else { return };
    let bytes = 16 * 8 * 8 * 2 * 4;
    let mut buf = d.allocate(bytes, &s).unwrap();
    let map = TensorMapDescriptor::im2col(&buf, &im2col_options()).unwrap();
    assert_eq!(map.device(), d);
    assert_eq!(map.span(), bytes as u64);
    // SAFETY: a `CUtensorMap` is 128 bytes of plain data.
    let raw: [u64; 16] = unsafe { std::mem::transmute_copy(map.raw()) };
    assert!(raw.iter().any(|&w| w != 0));
    let swizzled = TensorMapDescriptor::im2col(
        &buf,
        &TensorMapIm2colOptions {
            swizzle: TensorMapSwizzle::B64,
            ..im2col_options()
        },
    )
    .unwrap();
    // SAFETY: as above.
    let raw_swizzled: [u64; 16] = unsafe { std::mem::transmute_copy(swizzled.raw()) };
    assert_ne!(raw, raw_swizzled);
    // The map can be pointed elsewhere like a tiled one.
    let other = d.allocate(bytes, &s).unwrap();
    let mut moved = map;
    moved.replace_address(&other).unwrap();

    // Refused before the driver, naming the field.
    for (options, needle) in [
        (
            TensorMapIm2colOptions {
                global_dims: vec![16, 8],
                ..im2col_options()
            },
            "rank",
        ),
        (
            TensorMapIm2colOptions {
                pixel_box_lower_corner: vec![-1],
                ..im2col_options()
            },
            "`pixel_box_lower_corner`",
        ),
        (
            TensorMapIm2colOptions {
                pixel_box_upper_corner: vec![0, 200],
                ..im2col_options()
            },
            "`pixel_box_upper_corner[1]`",
        ),
        (
            TensorMapIm2colOptions {
                channels_per_pixel: 0,
                ..im2col_options()
            },
            "`channels_per_pixel`",
        ),
        (
            TensorMapIm2colOptions {
                pixels_per_column: 2048,
                ..im2col_options()
            },
            "`pixels_per_column`",
        ),
        (
            TensorMapIm2colOptions {
                global_dims: vec![16, 8, 8, 4],
                ..im2col_options()
            },
            "the buffer holds",
        ),
    ] {
        let e = TensorMapDescriptor::im2col(&buf, &options).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
        assert!(e.to_string().contains(needle), "{e} lacks {needle}");
    }
    buf.fill_u8(0, &s).unwrap();
}

#[test]
fn im2col_wide_maps_need_blackwell_and_a_cuda_12_8_driver() {
    require_gpu!();
    let Some((d, s)) = hopper() else { return };
    let buf = d.allocate(64 * 16 * 16 * 2 * 2, &s).unwrap();
    let options = TensorMapIm2colWideOptions {
        data_type: TensorMapDataType::F16,
        global_dims: vec![64, 16, 16, 2],
        global_strides: vec![],
        pixel_box_lower_corner_width: -1,
        pixel_box_upper_corner_width: 1,
        channels_per_pixel: 64,
        pixels_per_column: 32,
        element_strides: vec![],
        interleave: Default::default(),
        mode: Default::default(),
        swizzle: TensorMapSwizzle::B128,
        l2_promotion: Default::default(),
        oob_fill: Default::default(),
    };
    let r = TensorMapDescriptor::im2col_wide(&buf, &options);
    match r {
        Ok(map) => {
            assert!(d.compute_capability().unwrap().0 >= 10);
            assert_eq!(map.device(), d);
        }
        Err(e) => {
            println!("{}", e.report());
            assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
            match e.required_driver() {
                // A driver before CUDA 12.8.
                Some(req) => assert!(req.driver < req.needs, "{req}"),
                // A GPU before Blackwell.
                None => {
                    assert!(d.compute_capability().unwrap().0 < 10);
                    assert!(e.to_string().contains("compute capability 10.0"), "{e}");
                }
            }
        }
    }
    // Arguments are checked first, whatever the driver and GPU.
    let e = TensorMapDescriptor::im2col_wide(
        &buf,
        &TensorMapIm2colWideOptions {
            pixel_box_upper_corner_width: 1 << 16,
            ..options
        },
    )
    .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
}

/// The 128 bytes of a map.
fn map_words(m: &TensorMapDescriptor<'_>) -> [u64; 16] {
    // SAFETY: a `CUtensorMap` is 128 bytes of plain data.
    unsafe { std::mem::transmute_copy(m.raw()) }
}

/// Issue 28, point 8 (and 5): Python's `from_tiled(a, box_dim=…)`. A typed view
/// and a strided view give the map that every field spelt out gives, and it
/// feeds the bulk tensor copy.
#[test]
fn from_tiled_takes_the_element_type_and_shape_from_the_view() {
    require_gpu!();
    require_libs!("nvrtc");
    let Some((d, s)) = hopper() else { return };
    let n = 64usize;
    let a = Arc::new(
        DeviceBuffer::from_host(&d, &(0..n * n).map(|i| i as f32).collect::<Vec<_>>(), &s).unwrap(),
    );
    let spelt = TensorMapDescriptor::tiled(a.as_buffer(), &tiles_of_64x64()).unwrap();
    let typed =
        TensorMapDescriptor::from_tiled(&a.view(), &[64, 64], &[16, 16], &TiledOptions::default())
            .unwrap();
    assert_eq!(map_words(&typed), map_words(&spelt));
    let strided = StridedMemoryView::from_view(&a.shared_view(), &[64, 64], None).unwrap();
    let from_view = strided
        .as_tensor_map(&[16, 16], &TiledOptions::default())
        .unwrap();
    assert_eq!(map_words(&from_view), map_words(&spelt));
    assert_eq!(from_view.device(), d);
    let code = tma_code(&d);
    let got = tile_through(&code, &typed, &d, &s);
    for r in 0..16 {
        for c in 0..16 {
            assert_eq!(got[r * 16 + c], ((32 + r) * n + 16 + c) as f32);
        }
    }
    // Point 7: the map is a typed kernel parameter, taken by reference.
    let tma = cudars_core::TypedKernel::<(
        TensorMapDescriptor<'static>,
        cudars_core::MutPtr<f32>,
        i32,
        i32,
    )>::new(code.get_kernel("tma_tile").unwrap())
    .unwrap();
    let mut tile = DeviceBuffer::<f32>::zeroed(&d, 256, &s).unwrap();
    // SAFETY: `tma_tile` reads the 64×64 tensor through the map and writes 256
    // floats; `a` outlives the kernel (it is read back below).
    unsafe {
        tma.launch(
            &s,
            &LaunchConfig::new(1, 128),
            (&from_view, tile.view_mut(), 0, 16),
        )
    }
    .unwrap();
    let got = tile.to_vec(&s).unwrap();
    assert_eq!(got[17], (17 * n + 1) as f32);
    // A shape that is not the view's length, a box of another rank: refused.
    for bad in [
        TensorMapDescriptor::from_tiled(&a.view(), &[64, 32], &[16, 16], &TiledOptions::default()),
        TensorMapDescriptor::from_tiled(&a.view(), &[64, 64], &[16], &TiledOptions::default()),
    ] {
        assert!(matches!(bad, Err(Error::InvalidArgument { .. })), "{bad:?}");
    }
}

/// A strided view of host memory has no tensor map (checked before the driver).
#[test]
fn a_host_view_has_no_tensor_map() {
    let data = vec![0f32; 64];
    let v = StridedMemoryView::from_slice(&data, &[4, 16], None).unwrap();
    let e = TensorMapDescriptor::from_strided(&v, &[4, 16], &TiledOptions::default());
    assert!(
        matches!(&e, Err(Error::InvalidArgument { .. })) && format!("{e:?}").contains("host"),
        "{e:?}"
    );
}
