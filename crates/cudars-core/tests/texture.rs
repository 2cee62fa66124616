//! Arrays, textures and surfaces: hardware filtering and addressing checked
//! against values worked out by hand, surface writes, mipmap levels, a linear
//! texture over a buffer, and bad shapes refused. The kernels compile without a
//! GPU; the rest prints `SKIPPED` without one, and fails under
//! `CUDA_TEST_REQUIRE_GPU=1`.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use cudars_core::{
    AddressMode, ArrayFormat, ArrayOptions, CompileTarget, Device, Error, FilterMode, Kernel,
    LaunchConfig, ObjectCode, Program, ProgramOptions, SourceCode, Stream, StreamOptions,
    SurfaceObject, TextureOptions, TextureResource, launch,
};
use cudars_tests::{require_gpu, require_libs};

const SRC: &str = r#"
extern "C" __global__ void sample2d(cudaTextureObject_t tex, const float *xs, const float *ys,
                                    float *out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float>(tex, xs[i], ys[i]);
}
extern "C" __global__ void sample_lod(cudaTextureObject_t tex, float lod, float *out) {
    out[0] = tex2DLod<float>(tex, 0.5f, 0.5f, lod);
}
extern "C" __global__ void fetch1d(cudaTextureObject_t tex, float *out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<float>(tex, (int)i) * 2.0f;
}
extern "C" __global__ void write_surface(cudaSurfaceObject_t surf, unsigned w, unsigned h) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < w && y < h) surf2Dwrite(x * 100u + y, surf, (int)(x * sizeof(unsigned)), (int)y);
}
"#;

fn compile(arch: &str) -> ObjectCode {
    Program::new(
        SourceCode::Cxx(SRC),
        ProgramOptions {
            arch: Some(arch.into()),
            ..Default::default()
        },
    )
    .unwrap()
    .compile(CompileTarget::Cubin, &[])
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn texture_and_surface_kernels_compile() {
    require_libs!("nvrtc");
    let code = compile("sm_90");
    // Each kernel is in the cubin's symbol table.
    let bytes = code.code();
    for k in ["sample2d", "sample_lod", "fetch1d", "write_surface"] {
        assert!(
            bytes
                .windows(k.len() + 1)
                .any(|w| w[..k.len()] == *k.as_bytes() && w[k.len()] == 0),
            "{k} is not in the cubin"
        );
    }
}

fn setup() -> (Device, Stream, ObjectCode) {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    let code = compile(&d.arch().unwrap());
    (d, s, code)
}

fn k(code: &ObjectCode, name: &str) -> Kernel {
    code.get_kernel(name).unwrap()
}

/// Samples `tex` at each `(x, y)` with `sample2d`.
fn sample(
    d: &Device,
    s: &Stream,
    code: &ObjectCode,
    tex: &cudars_core::TextureObject,
    at: &[(f32, f32)],
) -> Vec<f32> {
    let n = at.len() as u32;
    let mut xs = d.allocate(at.len() * 4, s).unwrap();
    let mut ys = d.allocate(at.len() * 4, s).unwrap();
    xs.copy_from_host(&at.iter().map(|p| p.0).collect::<Vec<_>>(), s)
        .unwrap();
    ys.copy_from_host(&at.iter().map(|p| p.1).collect::<Vec<_>>(), s)
        .unwrap();
    let out = d.allocate(at.len() * 4, s).unwrap();
    // SAFETY: the kernel reads n coordinates and writes n floats, which the buffers
    // hold; the texture outlives the launch (the copy below waits for it).
    unsafe {
        launch(
            s,
            &LaunchConfig::for_elements(n.into(), 64),
            &k(code, "sample2d"),
            &[tex, &xs, &ys, &out, &n],
        )
    }
    .unwrap();
    let mut h = vec![0f32; at.len()];
    out.copy_to_host(&mut h, s).unwrap();
    h
}

#[test]
fn a_2d_texture_filters_and_clamps_as_the_hardware_should() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    // texel (x, y) = x + 10 y, 4×4.
    let a = d
        .create_opaque_array(&ArrayOptions::new_2d(ArrayFormat::F32, 1, 4, 4))
        .unwrap();
    let texels: Vec<f32> = (0..16)
        .map(|i| (i % 4) as f32 + 10.0 * (i / 4) as f32)
        .collect();
    a.copy_from_host(&texels, &s).unwrap();
    let mut back = vec![0f32; 16];
    a.copy_to_host(&mut back, &s).unwrap();
    assert_eq!(back, texels);
    let a = Arc::new(a);
    let linear = d
        .create_texture_object(
            TextureResource::Array(a.clone()),
            &TextureOptions {
                filter_mode: FilterMode::Linear,
                ..Default::default()
            },
        )
        .unwrap();
    // Texel centres sit at +0.5; halfway between two centres is their mean; past
    // the edge, clamping repeats the edge texel.
    let at = [
        (0.5, 0.5),
        (1.0, 0.5),
        (2.5, 1.5),
        (1.5, 1.0),
        (-5.0, 0.5),
        (9.0, 3.5),
    ];
    let got = sample(&d, &s, &code, &linear, &at);
    assert_eq!(got, vec![0.0, 0.5, 12.0, 6.0, 0.0, 33.0], "{got:?}");
    // Point sampling takes the texel the coordinate falls in; a border address mode
    // reads the border colour outside.
    let point = d
        .create_texture_object(
            TextureResource::Array(a),
            &TextureOptions {
                address_mode: [AddressMode::Border; 3],
                border_color: [-1.0; 4],
                ..Default::default()
            },
        )
        .unwrap();
    let got = sample(
        &d,
        &s,
        &code,
        &point,
        &[(1.9, 0.5), (3.1, 2.9), (-0.5, 0.5)],
    );
    assert_eq!(got, vec![1.0, 23.0, -1.0], "{got:?}");
}

#[test]
fn a_surface_is_written_by_a_kernel() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let (w, h) = (37u32, 5u32);
    let plain = Arc::new(
        d.create_opaque_array(&ArrayOptions::new_2d(
            ArrayFormat::U32,
            1,
            w as usize,
            h as usize,
        ))
        .unwrap(),
    );
    assert!(matches!(
        SurfaceObject::new(plain),
        Err(Error::InvalidArgument { .. })
    ));
    let a = Arc::new(
        d.create_opaque_array(&ArrayOptions {
            surface_load_store: true,
            ..ArrayOptions::new_2d(ArrayFormat::U32, 1, w as usize, h as usize)
        })
        .unwrap(),
    );
    let surf = d.create_surface_object(a.clone()).unwrap();
    // SAFETY: the kernel writes the w×h elements of the surface's array.
    unsafe {
        launch(
            &s,
            &LaunchConfig::new((1, h, 1), (64, 1, 1)),
            &k(&code, "write_surface"),
            &[&surf, &w, &h],
        )
    }
    .unwrap();
    let mut out = vec![0u32; (w * h) as usize];
    a.copy_to_host(&mut out, &s).unwrap();
    for y in 0..h {
        for x in 0..w {
            assert_eq!(out[(y * w + x) as usize], x * 100 + y);
        }
    }
}

#[test]
fn mipmap_levels_and_a_linear_texture() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s, code) = setup();
    let m = Arc::new(
        d.create_mipmapped_array(&ArrayOptions::new_2d(ArrayFormat::F32, 1, 16, 16), 3)
            .unwrap(),
    );
    assert!(matches!(m.level(3), Err(Error::InvalidArgument { .. })));
    for (level, value) in [(0u32, 1.0f32), (1, 2.0), (2, 4.0)] {
        let l = m.level(level).unwrap();
        let side = 16 >> level;
        assert_eq!((l.options().width, l.options().height), (side, side));
        l.copy_from_host(&vec![value; side * side], &s).unwrap();
    }
    let tex = d
        .create_texture_object(
            TextureResource::Mipmapped(m.clone()),
            &TextureOptions {
                normalized_coords: true,
                max_mipmap_level_clamp: 2.0,
                ..Default::default()
            },
        )
        .unwrap();
    let out = d.allocate(4, &s).unwrap();
    for (lod, want) in [(0.0f32, 1.0f32), (1.0, 2.0), (2.0, 4.0)] {
        // SAFETY: the kernel writes out[0].
        unsafe {
            launch(
                &s,
                &LaunchConfig::new(1, 1),
                &k(&code, "sample_lod"),
                &[&tex, &lod, &out],
            )
        }
        .unwrap();
        let mut h = [0f32];
        out.copy_to_host(&mut h, &s).unwrap();
        assert_eq!(h[0], want, "level of detail {lod}");
    }

    // A buffer read as a 1-D texture.
    let n = 1000u32;
    let mut b = d.allocate(n as usize * 4, &s).unwrap();
    b.copy_from_host(&(0..n).map(|i| i as f32).collect::<Vec<_>>(), &s)
        .unwrap();
    let b = Arc::new(b);
    let lin = d
        .create_texture_object(
            TextureResource::Linear {
                buffer: b.clone(),
                format: ArrayFormat::F32,
                channels: 1,
                size: None,
            },
            &TextureOptions::default(),
        )
        .unwrap();
    let out = d.allocate(n as usize * 4, &s).unwrap();
    // SAFETY: the kernel reads n texels and writes n floats.
    unsafe {
        launch(
            &s,
            &LaunchConfig::for_elements(n.into(), 128),
            &k(&code, "fetch1d"),
            &[&lin, &out, &n],
        )
    }
    .unwrap();
    let mut h = vec![0f32; n as usize];
    out.copy_to_host(&mut h, &s).unwrap();
    assert!(h.iter().enumerate().all(|(i, &v)| v == 2.0 * i as f32));
}

#[test]
fn bad_arrays_textures_and_copies_are_refused() {
    require_gpu!();
    let (d, s) = {
        let d = Device::new(0).unwrap();
        let s = d.create_stream(StreamOptions::default()).unwrap();
        (d, s)
    };
    let invalid = |r: cudars_core::Result<()>| match r {
        Err(Error::InvalidArgument { .. }) => {}
        other => panic!("{other:?}"),
    };
    invalid(
        d.create_opaque_array(&ArrayOptions::new_2d(ArrayFormat::F32, 3, 4, 4))
            .map(drop),
    );
    invalid(
        d.create_opaque_array(&ArrayOptions::new_2d(ArrayFormat::F32, 1, 0, 4))
            .map(drop),
    );
    invalid(
        d.create_mipmapped_array(&ArrayOptions::new_2d(ArrayFormat::F32, 1, 4, 4), 0)
            .map(drop),
    );
    let a = d
        .create_opaque_array(&ArrayOptions::new_2d(ArrayFormat::U8, 4, 8, 2))
        .unwrap();
    assert_eq!(a.options().bytes(), 64);
    invalid(a.copy_from_host(&[0u8; 63], &s));
    let buf = Arc::new(d.allocate(100, &s).unwrap());
    invalid(
        d.create_texture_object(
            TextureResource::Pitch2D {
                buffer: buf.clone(),
                format: ArrayFormat::F32,
                channels: 1,
                width: 16,
                height: 4,
                pitch: 64,
            },
            &TextureOptions::default(),
        )
        .map(drop),
    );
    invalid(
        d.create_texture_object(
            TextureResource::Linear {
                buffer: buf,
                format: ArrayFormat::F32,
                channels: 2,
                size: None,
            },
            &TextureOptions::default(),
        )
        .map(drop),
    );
}
