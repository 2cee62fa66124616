//! `cuda_core/tests/test_launcher.py` of `cuda.core` (the pinned commit of
//! `docs/reference/cuda-core-tests.txt`), ported as `program.rs` says. The
//! tests of `LaunchConfig` alone need no GPU here (`cuda.core` asks the device
//! whether it has thread-block clusters or cooperative launches when a
//! configuration names them; `cudars-core` leaves that to the launch); the
//! launches need one.
//!
//! `LaunchConfig(grid=g, block=b)` is `LaunchConfig::new(g, b)`, and with a cluster
//! `LaunchConfig(grid=g, cluster=c, block=b)` (`g` counted in clusters) is
//! `LaunchConfig::with_clusters(Grid::clusters(g), c, b)`; Python's `config.grid`
//! (clusters when there is a cluster, else blocks) is `grid_clusters()` or
//! `grid_blocks()`, and the native configuration's `gridDim` is `grid_blocks()`,
//! its `blockDim` `block()`, its `sharedMemBytes` `shmem_size`, its cluster
//! attribute `cluster()` and its cooperative attribute `cooperative`.
//! `launch(stream, config, kernel, *args)` is the `unsafe`
//! `launch(&stream, &config, &kernel, &[&arg, …])`; a Python `bool` argument is a
//! `u8` (C++'s one-byte `bool`), `numpy.float16` is `half::f16`, and
//! `cuda::std::complex<T>` is `[T; 2]`.

use std::sync::Arc;

use cudars_core::{
    CompileTarget, Device, DeviceMemoryResource, Dim3, Error, Grid, LaunchConfig,
    LegacyPinnedMemoryResource, Program, ProgramOptions, SourceCode, StreamOptions, launch,
};
use cudars_tests::{require_gpu, require_libs};

/// `dev = Device(); dev.set_current()`.
fn device() -> Device {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    d
}

/// Whether the CUDA runtime and CCCL headers are found (Python's
/// `helpers.CCCL_INCLUDE_PATHS is not None`); without them a GPU run
/// (`CUDA_TEST_REQUIRE_GPU=1`) fails.
fn have_headers() -> bool {
    let found = cudars_core::toolkit_include_dirs()
        .map(|_| ())
        .map_err(|e| e.to_string());
    cudars_tests::require_or_skip(
        &cudars_tests::current_test_name(),
        "the CUDA runtime and CCCL headers",
        cudars_tests::REQUIRE_GPU_VAR,
        found,
    )
}

/// `ProgramOptions(std="c++17", arch=f"sm_{arch}")`, with the headers when `headers`.
fn cxx17(d: &Device, headers: bool) -> ProgramOptions {
    let options = ProgramOptions {
        std: Some("c++17".into()),
        ..ProgramOptions::for_device(d).unwrap()
    };
    if headers {
        options.with_toolkit_headers().unwrap()
    } else {
        options
    }
}

fn dim(x: u32, y: u32, z: u32) -> Dim3 {
    Dim3::from((x, y, z))
}

/// `LaunchConfig(grid=…, cluster=…, block=…)`.
fn clustered(
    grid: impl Into<Dim3>,
    cluster: impl Into<Dim3>,
    block: impl Into<Dim3>,
) -> LaunchConfig {
    LaunchConfig::with_clusters(Grid::clusters(grid), cluster, block).unwrap()
}

#[test]
fn test_launch_config_init() {
    let mut config = LaunchConfig::new((1, 1, 1), (1, 1, 1));
    config.shmem_size = 0;
    assert_eq!(config.grid_blocks(), dim(1, 1, 1));
    assert_eq!(config.block(), dim(1, 1, 1));
    assert_eq!(config.shmem_size, 0);

    let mut config = LaunchConfig::new((2, 2, 2), (2, 2, 2));
    config.shmem_size = 1024;
    assert_eq!(config.grid_blocks(), dim(2, 2, 2));
    assert_eq!(config.block(), dim(2, 2, 2));
    assert_eq!(config.shmem_size, 1024);
}

/// Python's four configurations each raise `ValueError`: the fallible
/// constructors refuse them (`try_new` for the one-dimensional counts,
/// `try_from_dims` for the tuple forms). `LaunchConfig::new` cannot fail; the
/// launch refuses a zero dimension instead.
#[test]
fn test_launch_config_invalid_values() {
    let zero = |r: cudars_core::Result<LaunchConfig>| {
        assert!(
            matches!(r, Err(cudars_core::Error::InvalidArgument { .. })),
            "{r:?}"
        );
    };
    zero(LaunchConfig::try_new(0, 1));
    zero(LaunchConfig::try_from_dims((0, 1), 1));
    zero(LaunchConfig::try_from_dims((1, 1, 1), 0));
    zero(LaunchConfig::try_from_dims((1, 1, 1), (0, 1)));
    // The one-dimensional forms, each way round.
    zero(LaunchConfig::try_new(1, 0));
}

#[test]
fn test_launch_config_shmem_size() {
    let mut config = LaunchConfig::new((1, 1, 1), (1, 1, 1));
    config.shmem_size = 2048;
    assert_eq!(config.shmem_size, 2048);

    let config = LaunchConfig::new((1, 1, 1), (1, 1, 1));
    assert_eq!(config.shmem_size, 0);
}

#[test]
fn test_launch_config_cluster_grid_conversion() {
    // Test case 1: 1D
    let config = clustered(4, 2, 32);
    assert_eq!(config.grid_clusters(), Some(dim(4, 1, 1)));
    assert_eq!(config.cluster(), Some(dim(2, 1, 1)));
    assert_eq!(config.block(), dim(32, 1, 1));

    // Test case 2: 2D grid and cluster
    let config = clustered((2, 3), (2, 2), 32);
    assert_eq!(config.grid_clusters(), Some(dim(2, 3, 1)));
    assert_eq!(config.cluster(), Some(dim(2, 2, 1)));

    // Test case 3: 3D full specification
    let config = clustered((2, 2, 2), (3, 3, 3), (8, 8, 8));
    assert_eq!(config.grid_clusters(), Some(dim(2, 2, 2)));
    assert_eq!(config.cluster(), Some(dim(3, 3, 3)));

    // Test case 4: Identity case
    let config = clustered(1, 1, 32);
    assert_eq!(config.grid_clusters(), Some(dim(1, 1, 1)));

    // Test case 5: No cluster (should not convert grid)
    let config = LaunchConfig::new(4, 32);
    assert_eq!(config.grid_blocks(), dim(4, 1, 1));
    assert_eq!(config.cluster(), None);
}

#[test]
fn test_launch_config_native_conversion() {
    // Test case 1: 1D
    assert_eq!(clustered(4, 2, 32).grid_blocks(), dim(8, 1, 1));
    // Test case 2: 2D grid and cluster
    assert_eq!(clustered((2, 3), (2, 2), 32).grid_blocks(), dim(4, 6, 1));
    // Test case 3: No cluster (should not convert grid)
    assert_eq!(LaunchConfig::new(4, 32).grid_blocks(), dim(4, 1, 1));
}

/// Rust's `LaunchConfig` never asks the device: a cluster is accepted (and the
/// launch is where a device without clusters refuses it).
#[test]
fn test_launch_config_cluster_accepts_hopper_cc() {
    let config = clustered((2, 3), (2, 2), 32);
    assert_eq!(config.cluster(), Some(dim(2, 2, 1)));
    assert_eq!(config.grid_clusters(), Some(dim(2, 3, 1)));
}

#[test]
fn test_to_native_launch_config_no_cluster() {
    let mut config = LaunchConfig::new((4, 5, 6), (7, 8, 9));
    config.shmem_size = 128;
    assert_eq!(config.grid_blocks(), dim(4, 5, 6));
    assert_eq!(config.block(), dim(7, 8, 9));
    assert_eq!(config.shmem_size, 128);
    // No launch attributes.
    assert_eq!(config.cluster(), None);
    assert!(!config.cooperative);
    assert!(!config.programmatic_stream_serialization);
    assert_eq!(config.priority, None);
}

#[test]
fn test_to_native_launch_config_cooperative() {
    let mut config = LaunchConfig::new(2, 4);
    config.cooperative = true;
    assert_eq!(config.grid_blocks(), dim(2, 1, 1));
    assert_eq!(config.block(), dim(4, 1, 1));
    // The one attribute: cooperative.
    assert!(config.cooperative);
    assert_eq!(config.cluster(), None);
    assert!(!config.programmatic_stream_serialization);
    assert_eq!(config.priority, None);
}

/// Python sets `cluster` on a cluster-free configuration; here the grid is
/// named in clusters.
#[test]
fn test_to_native_launch_config_cluster_branch() {
    let config = clustered((2, 3, 4), (2, 2, 2), (5, 6, 7));
    // grid (in cluster units) * cluster -> block units
    assert_eq!(config.grid_blocks(), dim(4, 6, 8));
    assert_eq!(config.block(), dim(5, 6, 7));
    // The one attribute: the cluster's dimensions.
    assert_eq!(config.cluster(), Some(dim(2, 2, 2)));
    assert!(!config.cooperative);
}

/// Python's `TypeError`s (`None` for the stream, kernel or configuration) and
/// the foreign-stream `DeprecationWarning` do not compile here; the valid
/// launch is ported.
#[test]
fn test_launch_invalid_values() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = device();
    let code = r#"extern "C" __global__ void my_kernel() {}"#;
    let module = Program::new(
        SourceCode::Cxx(code),
        ProgramOptions::for_device(&d).unwrap(),
    )
    .unwrap()
    .compile(CompileTarget::Cubin, &[])
    .unwrap();
    let stream = d.create_stream(StreamOptions::default()).unwrap();
    let ker = module.get_kernel("my_kernel").unwrap();
    let config = LaunchConfig::new((1, 1, 1), (1, 1, 1));
    // SAFETY: the kernel takes no arguments and touches no memory.
    unsafe { launch(&stream, &config, &ker, &[]) }.unwrap();
    stream.sync().unwrap();
}

/// One case of `test_launch_scalar_argument`: `write_scalar<cpp_type>(arr, val)`
/// writes `value` into a pinned buffer, which then holds it.
fn launch_scalar<T>(d: &Device, headers: bool, cpp_type: &str, value: T)
where
    T: bytemuck::Pod + PartialEq + std::fmt::Debug,
{
    let size = std::mem::size_of::<T>();
    let stream = d.default_stream().unwrap();
    let mut b = Arc::new(LegacyPinnedMemoryResource::new(d))
        .allocate(size, &stream)
        .unwrap();
    b.copy_from_host(&vec![0u8; size], &stream).unwrap();
    let mut code = String::from(
        r"
    template <typename T>
    __global__ void write_scalar(T* arr, T val) {
        arr[0] = val;
    }
    ",
    );
    if headers {
        code = format!(
            r"
        #include <cuda_fp16.h>
        #include <cuda/std/complex>
        {code}"
        );
    }
    let ker_name = format!("write_scalar<{cpp_type}>");
    let ker = Program::new(SourceCode::Cxx(&code), cxx17(d, headers))
        .unwrap()
        .compile(CompileTarget::Cubin, &[&ker_name])
        .unwrap_or_else(|e| panic!("{ker_name}: {e}"))
        .get_kernel(&ker_name)
        .unwrap();
    let config = LaunchConfig::new(1, 1);
    // SAFETY: the kernel writes one `T` through the pointer, which `b` holds.
    unsafe { launch(&stream, &config, &ker, &[&b, &value]) }
        .unwrap_or_else(|e| panic!("{ker_name}: {e}"));
    stream.sync().unwrap();
    let mut back = vec![value; 1];
    b.copy_to_host(&mut back, &stream).unwrap();
    assert_eq!(
        back[0], value,
        "Expected {value:?}, got {:?} ({cpp_type})",
        back[0]
    );
}

/// Every parameter set of `test_launch_scalar_argument` (Python's, NumPy's and
/// ctypes' spellings of each C type are the same Rust value); the half and
/// complex ones where the CUDA headers are found, as in Python.
// Python's values, not the constants they are near.
#[allow(clippy::approx_constant)]
#[test]
fn test_launch_scalar_argument() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = device();
    // Python's bool, float, then NumPy's and ctypes' types.
    launch_scalar(&d, false, "bool", 1u8);
    launch_scalar(&d, false, "double", 2.718f64);
    for _ in ["numpy", "ctypes"] {
        launch_scalar(&d, false, "bool", 1u8);
        launch_scalar(&d, false, "signed char", -42i8);
        launch_scalar(&d, false, "signed short", -1234i16);
        launch_scalar(&d, false, "signed int", -123_456i32);
        launch_scalar(&d, false, "signed long long", -123_456_789i64);
        launch_scalar(&d, false, "unsigned char", 42u8);
        launch_scalar(&d, false, "unsigned short", 1234u16);
        launch_scalar(&d, false, "unsigned int", 123_456u32);
        launch_scalar(&d, false, "unsigned long long", 123_456_789u64);
        launch_scalar(&d, false, "float", 3.14f32);
        launch_scalar(&d, false, "double", 2.718f64);
    }
    if have_headers() {
        launch_scalar(&d, true, "half", half::f16::from_f32(0.78));
        launch_scalar(&d, true, "cuda::std::complex<float>", [1.0f32, 2.0]);
        launch_scalar(&d, true, "cuda::std::complex<double>", [-3.0f64, -4.0]);
        launch_scalar(&d, true, "cuda::std::complex<double>", [5.0f64, -7.0]);
    }
}

/// Python's `ValueError` for a cooperative grid too large to be resident is,
/// here, the launch's `Error::Driver` with `CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE`
/// (nothing runs).
#[test]
fn test_cooperative_launch() {
    require_gpu!();
    require_libs!("nvrtc");
    if !have_headers() {
        return;
    }
    let dev = device();
    let s = dev
        .create_stream(StreamOptions {
            non_blocking: true,
            ..StreamOptions::default()
        })
        .unwrap();
    let code = r#"
    #include <cooperative_groups.h>

    extern "C" __global__ void test_grid_sync() {
        namespace cg = cooperative_groups;
        auto grid = cg::this_grid();
        grid.sync();
    }
    "#;
    let ker = Program::new(SourceCode::Cxx(code), cxx17(&dev, true))
        .unwrap()
        .compile(CompileTarget::Cubin, &[])
        .unwrap_or_else(|e| panic!("{e}"))
        .get_kernel("test_grid_sync")
        .unwrap();

    // Crazy grid sizes would not work
    let block = 128;
    let max_grid_dim_x = dev.properties().max_grid_dim_x().unwrap();
    let mut config = LaunchConfig::new(max_grid_dim_x / block + 1, block);
    config.cooperative = true;
    // SAFETY: the kernel takes no arguments and touches no memory.
    match unsafe { launch(&s, &config, &ker, &[]) } {
        Err(e @ Error::Driver { .. }) => assert_eq!(
            e.driver_code(),
            Some(cudars_core::cudars_bindings::driver::CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE),
            "{e}"
        ),
        other => panic!("expected the cooperative launch to be refused, got {other:?}"),
    }

    // This works just fine
    let mut config = LaunchConfig::new(1, 1);
    config.cooperative = true;
    // SAFETY: as above.
    unsafe { launch(&s, &config, &ker, &[]) }.unwrap();
    s.sync().unwrap();
}

/// `memory_ops` triples 1024 floats in a buffer of `mr`, launched on a stream.
fn launch_with_buffers(d: &Device, mr: Arc<dyn cudars_core::MemoryResource>) {
    let stream = d.create_stream(StreamOptions::default()).unwrap();
    let code = r#"
    extern "C"
    __global__ void memory_ops(float* data, size_t N) {
        const unsigned int tid = threadIdx.x + blockIdx.x * blockDim.x;
        if (tid < N) {
            // Access memory (device or pinned)
            data[tid] = data[tid] * 3.0f;
        }
    }
    "#;
    let kernel = Program::new(SourceCode::Cxx(code), cxx17(d, false))
        .unwrap()
        .compile(CompileTarget::Cubin, &[])
        .unwrap()
        .get_kernel("memory_ops")
        .unwrap();
    let size = 1024usize;
    let mut buffer = cudars_core::Buffer::allocate(mr, size * 4, &stream).unwrap();
    // Random values in [0, 1).
    let original: Vec<f32> = cudars_tests::xorshift64(0x5eed)
        .take(size)
        .map(|x| (x >> 40) as f32 / (1u64 << 24) as f32)
        .collect();
    buffer.copy_from_host(&original, &stream).unwrap();
    stream.sync().unwrap();
    let block = 256u32;
    let grid = (size as u32).div_ceil(block);
    let config = LaunchConfig::new(grid, block);
    // SAFETY: the kernel touches `size` floats of `buffer`, which holds them.
    unsafe { launch(&stream, &config, &kernel, &[&buffer, &(size as u64)]) }.unwrap();
    stream.sync().unwrap();
    let mut array = vec![0f32; size];
    buffer.copy_to_host(&mut array, &stream).unwrap();
    for (i, (a, o)) in array.iter().zip(&original).enumerate() {
        assert!(
            (a - o * 3.0).abs() <= 1e-5 + 1e-8 * (o * 3.0).abs(),
            "element {i}: {a} != 3 * {o}"
        );
    }
    drop(buffer);
}

#[test]
fn test_launch_with_buffers_allocated_by_memory_resource__device_memory_resource() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = device();
    launch_with_buffers(&d, DeviceMemoryResource::default_pool(&d).unwrap());
}

#[test]
fn test_launch_with_buffers_allocated_by_memory_resource__LegacyPinnedMemoryResource() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = device();
    launch_with_buffers(&d, Arc::new(LegacyPinnedMemoryResource::new(&d)));
}
