//! `cuda_core/tests/test_texture_surface.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says.
//!
//! Names: `OpaqueArrayOptions(shape=(w, h, d), format=…, num_channels=…,
//! is_surface_load_store=…)` is [`ArrayOptions`] (`width`, `height`, `depth`,
//! the absent dimensions 0, as the driver's descriptor; `surface_load_store`);
//! `ArrayFormatType.FLOAT32` is [`ArrayFormat::F32`]; an array's `shape`,
//! `format`, `num_channels`, `element_bytes`, `size_bytes` are its
//! `options()`' fields, `element_size()` and `bytes()`. `MipmappedArrayOptions(…,
//! num_levels=n)` is `create_mipmapped_array(&options, n)`, `get_level(i)`
//! `level(i)`. `ResourceDescriptor.from_opaque_array`, `from_mipmapped_array`,
//! `from_linear` and `from_pitch2d` are the variants of [`TextureResource`]
//! (an enum: its checks run when a texture is made from it, so a descriptor
//! Python refuses is here a texture `create_texture_object` refuses);
//! `TextureObjectOptions` is [`TextureOptions`] (`address_mode` always three
//! modes). `copy_from(buffer)`/`copy_to(buffer)` of an array are
//! `copy_from_buffer`/`copy_to_buffer`, of host memory `copy_from_host`/
//! `copy_to_host`. `close()` is dropping.
//!
//! Every test needs a GPU.

use std::sync::Arc;

use cudars_core::{
    AddressMode, ArrayFormat, ArrayOptions, Buffer, Device, Error, FilterMode, InvalidKind,
    OpaqueArray, ReadMode, Stream, StreamOptions, TextureOptions, TextureResource,
};
use cudars_tests::require_gpu;

/// Python's `init_cuda`: device 0, current.
fn device() -> Device {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    d
}

/// `device.create_stream()`.
fn stream(d: &Device) -> Stream {
    d.create_stream(StreamOptions::default()).unwrap()
}

/// `device.memory_resource.allocate(n, stream=…)`, shared as a texture holds it.
fn buffer(d: &Device, s: &Stream, n: usize) -> Arc<Buffer> {
    Arc::new(d.allocate(n, s).unwrap())
}

fn array(d: &Device, options: ArrayOptions) -> Arc<OpaqueArray> {
    Arc::new(d.create_opaque_array(&options).unwrap())
}

fn surface_options(mut o: ArrayOptions) -> ArrayOptions {
    o.surface_load_store = true;
    o
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

// ---- arrays ----

#[test]
fn test_array_2d_create_and_properties() {
    require_gpu!();
    let d = device();
    let arr = d
        .create_opaque_array(&ArrayOptions::new_2d(ArrayFormat::F32, 1, 32, 16))
        .unwrap();
    let o = arr.options();
    assert_eq!((o.width, o.height, o.depth), (32, 16, 0));
    assert_eq!(o.format, ArrayFormat::F32);
    assert_eq!(o.channels, 1);
    assert_eq!(o.element_size(), 4);
    assert_eq!(o.bytes(), 32 * 16 * 4);
    assert!(!o.surface_load_store);
    assert!(!arr.handle().is_null());
    assert_eq!(*arr.context().device(), d);
}

#[test]
fn test_array_3d_with_surface_flag() {
    require_gpu!();
    let d = device();
    let arr = d
        .create_opaque_array(&surface_options(ArrayOptions::new_3d(
            ArrayFormat::U8,
            4,
            8,
            8,
            4,
        )))
        .unwrap();
    let o = arr.options();
    assert_eq!((o.width, o.height, o.depth), (8, 8, 4));
    assert!(o.surface_load_store);
    assert_eq!(o.element_size(), 4);
}

/// Python: `ValueError("num_channels …")`.
#[test]
fn test_array_rejects_bad_channels() {
    require_gpu!();
    let d = device();
    invalid(
        d.create_opaque_array(&ArrayOptions::new_1d(ArrayFormat::U8, 3, 8)),
        "channels",
    );
}

#[test]
fn test_array_roundtrip_copy() {
    require_gpu!();
    let d = device();
    let s = stream(&d);
    let arr = d
        .create_opaque_array(&ArrayOptions::new_1d(ArrayFormat::U32, 1, 16))
        .unwrap();
    let src: Vec<u32> = (0..16).collect();
    let mut dst = vec![0u32; 16];
    arr.copy_from_host(&src, &s).unwrap();
    arr.copy_to_host(&mut dst, &s).unwrap();
    s.sync().unwrap();
    // The round trip recovers the data; the source is untouched.
    assert_eq!(dst, (0..16).collect::<Vec<u32>>());
    assert_eq!(src, (0..16).collect::<Vec<u32>>());
}

/// Python: `ValueError("… smaller than the array extent …")` both ways.
#[test]
fn test_array_copy_rejects_undersized_host_buffer() {
    require_gpu!();
    let d = device();
    let s = stream(&d);
    let arr = d
        .create_opaque_array(&ArrayOptions::new_1d(ArrayFormat::U32, 1, 16))
        .unwrap();
    // The array is 16 * 4 = 64 bytes; an 8-element (32-byte) host buffer.
    let mut too_small = vec![0u32; 8];
    invalid(arr.copy_from_host(&too_small, &s), "32 bytes");
    invalid(arr.copy_to_host(&mut too_small, &s), "32 bytes");
}

/// Python: `ValueError("Buffer size … is smaller than the array extent")`.
#[test]
fn test_array_copy_rejects_undersized_device_buffer() {
    require_gpu!();
    let d = device();
    let s = stream(&d);
    let arr = d
        .create_opaque_array(&ArrayOptions::new_1d(ArrayFormat::U32, 1, 16))
        .unwrap();
    // The array is 64 bytes; a 32-byte device buffer.
    let mut small = d.allocate(32, &d.default_stream().unwrap()).unwrap();
    let kind = invalid(arr.copy_from_buffer(&small, &s), "smaller than the array");
    assert_eq!(kind, InvalidKind::OutOfRange);
    let kind = invalid(arr.copy_to_buffer(&mut small, &s), "smaller than the array");
    assert_eq!(kind, InvalidKind::OutOfRange);
}

// ---- textures and surfaces over arrays ----

/// Python also asserts `tex.options is tex_desc`; a texture here keeps its
/// resource, not its options.
#[test]
fn test_texture_object_create() {
    require_gpu!();
    let d = device();
    let arr = array(&d, ArrayOptions::new_2d(ArrayFormat::F32, 1, 32, 16));
    let options = TextureOptions {
        address_mode: [AddressMode::Clamp; 3],
        filter_mode: FilterMode::Linear,
        read_mode: ReadMode::ElementType,
        normalized_coords: true,
        ..Default::default()
    };
    let tex = d
        .create_texture_object(TextureResource::Array(arr.clone()), &options)
        .unwrap();
    assert_ne!(tex.handle(), 0);
    match tex.resource() {
        TextureResource::Array(a) => assert!(Arc::ptr_eq(a, &arr)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn test_surface_object_create() {
    require_gpu!();
    let d = device();
    let arr = array(
        &d,
        surface_options(ArrayOptions::new_2d(ArrayFormat::U8, 4, 8, 8)),
    );
    let surf = d.create_surface_object(arr.clone()).unwrap();
    assert_ne!(surf.handle(), 0);
    assert!(Arc::ptr_eq(surf.array(), &arr));
}

/// Python: `ValueError("… is_surface_load_store=True …")`.
#[test]
fn test_surface_requires_ldst_flag() {
    require_gpu!();
    let d = device();
    let arr = array(&d, ArrayOptions::new_2d(ArrayFormat::U8, 4, 8, 8));
    invalid(d.create_surface_object(arr), "surface_load_store");
}

/// Python's private `_normalize_address_modes` pads a scalar or a shorter
/// tuple to three modes; here the three are always spelt (`[m; 3]` for a
/// scalar, the last repeated for a shorter tuple). Then the end-to-end smoke
/// test: a texture with modes `(WRAP, CLAMP)`.
#[test]
fn test_address_mode_normalization() {
    require_gpu!();
    let d = device();
    let arr = array(&d, ArrayOptions::new_3d(ArrayFormat::F32, 1, 8, 8, 4));
    let options = TextureOptions {
        address_mode: [AddressMode::Wrap, AddressMode::Clamp, AddressMode::Clamp],
        ..Default::default()
    };
    let tex = d
        .create_texture_object(TextureResource::Array(arr), &options)
        .unwrap();
    assert_ne!(tex.handle(), 0);
}

// ---- linear and pitch2D resources ----

#[test]
fn test_resource_descriptor_from_linear_defaults_size() {
    require_gpu!();
    let d = device();
    let s = stream(&d);
    let buf = buffer(&d, &s, 4096);
    let res = TextureResource::Linear {
        buffer: buf.clone(),
        format: ArrayFormat::F32,
        channels: 1,
        size: None,
    };
    match &res {
        TextureResource::Linear {
            buffer,
            format,
            channels,
            size,
        } => {
            assert_eq!(*format, ArrayFormat::F32);
            assert_eq!(*channels, 1);
            assert!(Arc::ptr_eq(buffer, &buf));
            // The whole buffer.
            assert_eq!(*size, None);
        }
        other => panic!("{other:?}"),
    }
    // Python's repr names the kind: the Rust `Debug` names the variant.
    assert!(format!("{res:?}").contains("Linear"));
}

/// `from_linear(buf, format=UINT32, num_channels=1, size_bytes=2048)` over
/// 4096 bytes: the texture reads the first 2048.
#[test]
fn test_resource_descriptor_from_linear_size_override() {
    require_gpu!();
    let d = device();
    let s = stream(&d);
    let buf = buffer(&d, &s, 4096);
    let res = linear(&buf, ArrayFormat::U32, 2048);
    match &res {
        TextureResource::Linear { size, .. } => assert_eq!(*size, Some(2048)),
        other => panic!("{other:?}"),
    }
    let tex = d
        .create_texture_object(res, &TextureOptions::default())
        .unwrap();
    assert_ne!(tex.handle(), 0);
}

/// A linear resource of `size` bytes of `buffer`, one channel.
fn linear(buffer: &Arc<Buffer>, format: ArrayFormat, size: usize) -> TextureResource {
    TextureResource::Linear {
        buffer: buffer.clone(),
        format,
        channels: 1,
        size: Some(size),
    }
}

/// Python: `ValueError("size_bytes (2048) exceeds buffer.size (1024)")`.
#[test]
fn test_resource_descriptor_from_linear_rejects_oversize() {
    require_gpu!();
    let d = device();
    let s = stream(&d);
    let buf = buffer(&d, &s, 1024);
    let kind = invalid(
        d.create_texture_object(
            linear(&buf, ArrayFormat::U8, 2048),
            &TextureOptions::default(),
        ),
        "exceeds the buffer's size",
    );
    assert_eq!(kind, InvalidKind::OutOfRange);
}

/// Python: `ValueError("size_bytes (0) must be at least one element …")`.
#[test]
fn test_resource_descriptor_from_linear_rejects_zero_size() {
    require_gpu!();
    let d = device();
    let s = stream(&d);
    let buf = buffer(&d, &s, 1024);
    invalid(
        d.create_texture_object(
            linear(&buf, ArrayFormat::U32, 0),
            &TextureOptions::default(),
        ),
        "at least one element",
    );
}

/// Python: `ValueError("… must be a multiple of element size …")`: 10 bytes of
/// 4-byte elements.
#[test]
fn test_resource_descriptor_from_linear_rejects_non_multiple() {
    require_gpu!();
    let d = device();
    let s = stream(&d);
    let buf = buffer(&d, &s, 1024);
    invalid(
        d.create_texture_object(
            linear(&buf, ArrayFormat::U32, 10),
            &TextureOptions::default(),
        ),
        "multiple of the element size",
    );
}

/// Python: `ValueError("num_channels …")` from `from_linear`; here when the
/// texture is made.
#[test]
fn test_resource_descriptor_from_linear_rejects_bad_channels() {
    require_gpu!();
    let d = device();
    let s = stream(&d);
    let buf = buffer(&d, &s, 1024);
    let res = TextureResource::Linear {
        buffer: buf,
        format: ArrayFormat::U8,
        channels: 3,
        size: None,
    };
    invalid(
        d.create_texture_object(res, &TextureOptions::default()),
        "3 channels",
    );
}

/// A linear texture binds, the sampling fields being ignored by the driver.
#[test]
fn test_texture_object_from_linear() {
    require_gpu!();
    let d = device();
    let s = stream(&d);
    let buf = buffer(&d, &s, 1024 * 4); // 1024 floats
    let tex = d
        .create_texture_object(
            TextureResource::Linear {
                buffer: buf.clone(),
                format: ArrayFormat::F32,
                channels: 1,
                size: None,
            },
            &TextureOptions::default(),
        )
        .unwrap();
    assert_ne!(tex.handle(), 0);
    match tex.resource() {
        TextureResource::Linear { buffer, .. } => assert!(Arc::ptr_eq(buffer, &buf)),
        other => panic!("{other:?}"),
    }
}

fn pitch2d(
    buffer: &Arc<Buffer>,
    format: ArrayFormat,
    channels: u32,
    width: usize,
    height: usize,
    pitch: usize,
) -> TextureResource {
    TextureResource::Pitch2D {
        buffer: buffer.clone(),
        format,
        channels,
        width,
        height,
        pitch,
    }
}

/// Python: `ValueError("pitch_bytes …")`: a pitch of 32 bytes under rows of
/// 16 four-byte elements (64 bytes).
#[test]
fn test_resource_descriptor_from_pitch2d_validates_pitch() {
    require_gpu!();
    let d = device();
    let s = stream(&d);
    let buf = buffer(&d, &s, 64 * 1024);
    invalid(
        d.create_texture_object(
            pitch2d(&buf, ArrayFormat::U32, 1, 16, 8, 32),
            &TextureOptions::default(),
        ),
        "pitch of 32",
    );
}

/// Python: `ValueError("… exceeds buffer.size")`: 128 rows of 512 bytes over
/// 4096 bytes.
#[test]
fn test_resource_descriptor_from_pitch2d_validates_buffer_size() {
    require_gpu!();
    let d = device();
    let s = stream(&d);
    let buf = buffer(&d, &s, 4096);
    invalid(
        d.create_texture_object(
            pitch2d(&buf, ArrayFormat::U8, 4, 64, 128, 512),
            &TextureOptions::default(),
        ),
        "4096 bytes",
    );
}

/// A pitch2D texture binds with the device's texture pitch alignment (at
/// least 256 bytes).
#[test]
fn test_texture_object_from_pitch2d() {
    require_gpu!();
    let d = device();
    let s = stream(&d);
    let align = d.properties().texture_pitch_alignment().unwrap() as usize;
    let pitch = align.max(256);
    let height = 16;
    let buf = buffer(&d, &s, pitch * height);
    let res = pitch2d(&buf, ArrayFormat::U8, 4, 32, height, pitch);
    assert!(format!("{res:?}").contains("Pitch2D"));
    let tex = d
        .create_texture_object(res, &TextureOptions::default())
        .unwrap();
    assert_ne!(tex.handle(), 0);
}

/// Python: `ValueError("num_channels …")`.
#[test]
fn test_resource_descriptor_from_pitch2d_rejects_bad_channels() {
    require_gpu!();
    let d = device();
    let s = stream(&d);
    let buf = buffer(&d, &s, 4096);
    invalid(
        d.create_texture_object(
            pitch2d(&buf, ArrayFormat::U8, 3, 8, 8, 64),
            &TextureOptions::default(),
        ),
        "8×3",
    );
}

/// Python: `ValueError("width …")`, then `ValueError("height …")`.
#[test]
fn test_resource_descriptor_from_pitch2d_rejects_zero_dims() {
    require_gpu!();
    let d = device();
    let s = stream(&d);
    let buf = buffer(&d, &s, 4096);
    invalid(
        d.create_texture_object(
            pitch2d(&buf, ArrayFormat::U8, 1, 0, 8, 64),
            &TextureOptions::default(),
        ),
        "of 0×1",
    );
    invalid(
        d.create_texture_object(
            pitch2d(&buf, ArrayFormat::U8, 1, 8, 0, 64),
            &TextureOptions::default(),
        ),
        "0 rows",
    );
}

// ---- mipmapped arrays ----

#[test]
fn test_mipmapped_array_create_2d() {
    require_gpu!();
    let d = device();
    let mip = d
        .create_mipmapped_array(&ArrayOptions::new_2d(ArrayFormat::F32, 1, 64, 32), 4)
        .unwrap();
    let o = mip.options();
    assert_eq!((o.width, o.height, o.depth), (64, 32, 0));
    assert_eq!(o.format, ArrayFormat::F32);
    assert_eq!(o.channels, 1);
    assert_eq!(mip.levels(), 4);
    assert!(!o.surface_load_store);
    assert!(!mip.handle().is_null());
    assert_eq!(*mip.context().device(), d);
}

#[test]
fn test_mipmapped_array_get_level_zero_matches_shape() {
    require_gpu!();
    let d = device();
    let mip = d
        .create_mipmapped_array(&ArrayOptions::new_2d(ArrayFormat::U8, 4, 64, 32), 4)
        .unwrap();
    let lvl0 = mip.level(0).unwrap();
    let o = lvl0.options();
    // Level 0 matches the base shape and rank.
    assert_eq!((o.width, o.height, o.depth), (64, 32, 0));
    assert_eq!(o.format, ArrayFormat::U8);
    assert_eq!(o.channels, 4);
    assert!(!lvl0.handle().is_null());
}

#[test]
fn test_mipmapped_array_get_level_halves_dims() {
    require_gpu!();
    let d = device();
    let (w, h) = (64usize, 32usize);
    let num_levels = 4;
    let mip = d
        .create_mipmapped_array(&ArrayOptions::new_2d(ArrayFormat::U8, 1, w, h), num_levels)
        .unwrap();
    for level in 0..num_levels {
        let lvl = mip.level(level).unwrap();
        // Each dimension halves per level, at least 1; the rank is kept.
        let expected = ((w >> level).max(1), (h >> level).max(1), 0);
        let o = lvl.options();
        assert_eq!((o.width, o.height, o.depth), expected, "level {level}");
    }
}

/// Python: `get_level(num_levels)` raises `ValueError("… num_levels …")`; its
/// `get_level(-1)` is a `u32` here (the compiler refuses -1).
#[test]
fn test_mipmapped_array_get_level_out_of_range() {
    require_gpu!();
    let d = device();
    let mip = d
        .create_mipmapped_array(&ArrayOptions::new_2d(ArrayFormat::U8, 1, 16, 16), 2)
        .unwrap();
    invalid(mip.level(mip.levels()), "level 2 of 2");
}

#[test]
fn test_mipmapped_array_rejects_zero_levels() {
    require_gpu!();
    let d = device();
    invalid(
        d.create_mipmapped_array(&ArrayOptions::new_2d(ArrayFormat::U8, 1, 8, 8), 0),
        "0 levels",
    );
}

#[test]
fn test_mipmapped_array_rejects_bad_channels() {
    require_gpu!();
    let d = device();
    invalid(
        d.create_mipmapped_array(&ArrayOptions::new_2d(ArrayFormat::U8, 3, 8, 8), 2),
        "channels",
    );
}

/// Python: `ValueError("shape[0] must be >= 1")`.
#[test]
fn test_mipmapped_array_rejects_zero_dim() {
    require_gpu!();
    let d = device();
    invalid(
        d.create_mipmapped_array(&ArrayOptions::new_2d(ArrayFormat::U8, 1, 0, 8), 1),
        "width must be at least 1",
    );
}

#[test]
fn test_resource_descriptor_from_mipmapped_array() {
    require_gpu!();
    let d = device();
    let mip = Arc::new(
        d.create_mipmapped_array(&ArrayOptions::new_2d(ArrayFormat::F32, 1, 32, 16), 3)
            .unwrap(),
    );
    let res = TextureResource::Mipmapped(mip.clone());
    match &res {
        TextureResource::Mipmapped(m) => assert!(Arc::ptr_eq(m, &mip)),
        other => panic!("{other:?}"),
    }
}

/// Non-default mipmap parameters, so the driver takes that path.
#[test]
fn test_texture_object_from_mipmapped_array() {
    require_gpu!();
    let d = device();
    let mip = Arc::new(
        d.create_mipmapped_array(&ArrayOptions::new_2d(ArrayFormat::F32, 1, 32, 32), 3)
            .unwrap(),
    );
    let options = TextureOptions {
        address_mode: [AddressMode::Clamp; 3],
        filter_mode: FilterMode::Linear,
        normalized_coords: true,
        mipmap_filter_mode: FilterMode::Linear,
        mipmap_level_bias: 0.0,
        min_mipmap_level_clamp: 0.0,
        max_mipmap_level_clamp: (mip.levels() - 1) as f32,
        ..Default::default()
    };
    let tex = d
        .create_texture_object(TextureResource::Mipmapped(mip.clone()), &options)
        .unwrap();
    assert_ne!(tex.handle(), 0);
    match tex.resource() {
        TextureResource::Mipmapped(m) => assert!(Arc::ptr_eq(m, &mip)),
        other => panic!("{other:?}"),
    }
}

/// A level keeps its mipmapped array alive: the parent dropped, a round trip
/// through level 1 (8×8) still works.
#[test]
fn test_mipmapped_array_level_outlives_dropped_parent() {
    require_gpu!();
    let d = device();
    let s = stream(&d);
    let mip = d
        .create_mipmapped_array(&ArrayOptions::new_2d(ArrayFormat::U32, 1, 16, 16), 3)
        .unwrap();
    let lvl = mip.level(1).unwrap();
    drop(mip);
    assert!(!lvl.handle().is_null());
    let o = *lvl.options();
    assert_eq!((o.width, o.height), (8, 8));
    let n = o.width * o.height.max(1);
    let src: Vec<u32> = (0..n as u32).collect();
    let mut dst = vec![0u32; n];
    lvl.copy_from_host(&src, &s).unwrap();
    lvl.copy_to_host(&mut dst, &s).unwrap();
    s.sync().unwrap();
    assert_eq!(dst, src);
}

// ---- keep-alive ----

/// The texture holds its resource, which holds the array: dropping the
/// caller's handles leaves the texture's the only ones.
#[test]
fn test_texture_object_keeps_backing_array_alive() {
    require_gpu!();
    let d = device();
    let arr = array(&d, ArrayOptions::new_2d(ArrayFormat::F32, 1, 8, 8));
    let res = TextureResource::Array(arr.clone());
    let tex = d
        .create_texture_object(res.clone(), &TextureOptions::default())
        .unwrap();
    drop(arr);
    drop(res);
    match tex.resource() {
        TextureResource::Array(a) => assert_eq!(Arc::strong_count(a), 1),
        other => panic!("{other:?}"),
    }
    assert_ne!(tex.handle(), 0);
}

#[test]
fn test_surface_object_keeps_backing_array_alive() {
    require_gpu!();
    let d = device();
    let arr = array(
        &d,
        surface_options(ArrayOptions::new_2d(ArrayFormat::U8, 4, 8, 8)),
    );
    let surf = d.create_surface_object(arr.clone()).unwrap();
    drop(arr);
    assert_eq!(Arc::strong_count(surf.array()), 1);
    assert_ne!(surf.handle(), 0);
}

// ---- copies between arrays and buffers ----

/// Not a Python test: the buffer copies `test_array_copy_rejects_undersized_device_buffer`
/// refuses, made with a buffer large enough (Python's `copy_from`/`copy_to`
/// of a `Buffer`), through a second array and back.
#[test]
fn array_buffer_round_trip() {
    require_gpu!();
    let d = device();
    let s = stream(&d);
    let o = ArrayOptions::new_2d(ArrayFormat::U32, 1, 16, 4);
    let arr = d.create_opaque_array(&o).unwrap();
    let src: Vec<u32> = (0..64).collect();
    let mut a = d.allocate(o.bytes() + 16, &s).unwrap();
    a.copy_from_host(&[src.clone(), vec![0; 4]].concat(), &s)
        .unwrap();
    arr.copy_from_buffer(&a, &s).unwrap();
    let mut b = d.allocate(o.bytes(), &s).unwrap();
    arr.copy_to_buffer(&mut b, &s).unwrap();
    let mut got = vec![0u32; 64];
    b.copy_to_host(&mut got, &s).unwrap();
    assert_eq!(got, src);
}
