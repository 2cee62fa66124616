//! Hopper TMA: a tiled tensor map encoded over a buffer, passed to kernels by
//! value, and used by a bulk tensor copy. Needs sm_90 or later. Without a GPU it
//! prints `SKIPPED`; with `CUDA_TEST_REQUIRE_GPU=1` it fails.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cuda_core::{
    CompileTarget, Device, Error, LaunchConfig, Program, ProgramOptions, SourceCode, StreamOptions,
    TensorMapDataType, TensorMapDescriptor, TensorMapDescriptorOptions, launch,
};
use cuda_rs_tests::{require_gpu, require_libs};

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
    let options = TensorMapDescriptorOptions {
        data_type: TensorMapDataType::F32,
        global_dims: vec![n as u64, n as u64],
        global_strides: vec![],
        box_dims: vec![16, 16],
        element_strides: vec![],
        interleave: Default::default(),
        swizzle: Default::default(),
        l2_promotion: Default::default(),
        oob_fill: Default::default(),
    };
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

    let code = Program::new(
        SourceCode::Cxx(SRC),
        ProgramOptions {
            arch: Some(d.arch().unwrap()),
            ..Default::default()
        },
    )
    .unwrap()
    .compile(CompileTarget::Cubin, &[])
    .unwrap();
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
