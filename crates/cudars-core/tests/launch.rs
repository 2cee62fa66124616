//! GPU tests of compile → load → launch: saxpy, templates, globals, managed
//! variables, relocatable linking, cooperative and cluster launches, occupancy and
//! kernel attributes. Without a GPU each test prints `SKIPPED`; with
//! `CUDA_TEST_REQUIRE_GPU=1` it fails.

// Test code: a failed step is a failed test, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cudars_core::{
    Buffer, CodeType, CompileTarget, Device, DeviceBuffer, DevicePtr, Error, Grid, JitOptions,
    LaunchConfig, Library, LibraryOptions, Linker, LinkerOptions, Module, MutPtr, ObjectCode,
    Program, ProgramOptions, SourceCode, Stream, StreamOptions, TypedKernel, launch,
};
use cudars_tests::{require_gpu, require_libs};

fn setup() -> (Device, Stream) {
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let s = d.create_stream(StreamOptions::default()).unwrap();
    (d, s)
}

fn compile(d: &Device, src: &str, target: CompileTarget, names: &[&str], rdc: bool) -> ObjectCode {
    let options = ProgramOptions {
        arch: Some(d.arch().unwrap()),
        relocatable_device_code: rdc,
        std: Some("c++17".into()),
        ..Default::default()
    };
    Program::new(SourceCode::Cxx(src), options)
        .unwrap()
        .compile(target, names)
        .unwrap_or_else(|e| panic!("{e}"))
}

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

#[test]
fn saxpy_compiles_loads_launches_and_checks_arguments() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s) = setup();
    let code = compile(&d, SAXPY, CompileTarget::Cubin, &[], false);
    assert_eq!(code.code_type(), CodeType::Cubin);
    let k = code.get_kernel("saxpy").unwrap();
    assert_eq!(k.num_arguments().unwrap(), 4);
    let n: u64 = 1 << 20;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut bx = d.allocate(n as usize * 4, &s).unwrap();
    let mut by = d.allocate(n as usize * 4, &s).unwrap();
    bx.copy_from_host(&x, &s).unwrap();
    by.copy_from_host(&vec![1.0f32; n as usize], &s).unwrap();
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    unsafe {
        launch(
            &s,
            &LaunchConfig::for_elements(n, 256),
            &k,
            &[&2.0f32, &bx, &by, &n],
        )
    }
    .unwrap();
    let mut y = vec![0f32; n as usize];
    by.copy_to_host(&mut y, &s).unwrap();
    for (i, v) in y.iter().enumerate() {
        assert_eq!(*v, 2.0 * i as f32 + 1.0, "saxpy wrong at {i}");
    }
    // Wrong argument count and sizes are refused before the driver is called.
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    let e = unsafe { launch(&s, &LaunchConfig::new(1, 1), &k, &[&2.0f32, &bx, &by]) }.unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    let e =
        unsafe { launch(&s, &LaunchConfig::new(1, 1), &k, &[&2.0f64, &bx, &by, &n]) }.unwrap_err();
    assert!(
        e.to_string()
            .contains("argument 0 is 8 bytes, the parameter 4"),
        "{e}"
    );
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    let e =
        unsafe { launch(&s, &LaunchConfig::new(0, 1), &k, &[&2.0f32, &bx, &by, &n]) }.unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    // A raw device pointer works as an argument too.
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    unsafe {
        launch(
            &s,
            &LaunchConfig::for_elements(n, 256),
            &k,
            &[&1.0f32, &DevicePtr(bx.ptr()), &by, &n],
        )
    }
    .unwrap();
    by.copy_to_host(&mut y, &s).unwrap();
    assert_eq!(y[10], 2.0 * 10.0 + 1.0 + 10.0);
    // PTX works as well, JIT-compiled by the driver.
    let ptx = compile(&d, SAXPY, CompileTarget::Ptx, &[], false);
    assert_eq!(ptx.code_type(), CodeType::Ptx);
    let lib = Library::load(&ptx, &LibraryOptions::default()).unwrap();
    assert_eq!(lib.kernel_count().unwrap(), 1);
    assert_eq!(lib.kernels().unwrap()[0].name(), "saxpy");
}

#[test]
fn templates_by_name_expression() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s) = setup();
    let src = "template <typename T> __global__ void add(T *x, T v) { x[threadIdx.x] += v; }";
    let code = compile(
        &d,
        src,
        CompileTarget::Cubin,
        &["add<float>", "add<int>"],
        false,
    );
    assert!(code.symbol_mapping()["add<float>"].starts_with("_Z"));
    let kf = code.get_kernel("add<float>").unwrap();
    let ki = code.get_kernel("add<int>").unwrap();
    let mut bf = d.allocate(32 * 4, &s).unwrap();
    let mut bi = d.allocate(32 * 4, &s).unwrap();
    bf.fill_u32(0, &s).unwrap();
    bi.fill_u32(0, &s).unwrap();
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    unsafe { launch(&s, &LaunchConfig::new(1, 32), &kf, &[&bf, &1.5f32]) }.unwrap();
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    unsafe { launch(&s, &LaunchConfig::new(1, 32), &ki, &[&bi, &7i32]) }.unwrap();
    let (mut f, mut i) = (vec![0f32; 32], vec![0i32; 32]);
    bf.copy_to_host(&mut f, &s).unwrap();
    bi.copy_to_host(&mut i, &s).unwrap();
    assert!(f.iter().all(|&v| v == 1.5) && i.iter().all(|&v| v == 7));
    assert!(code.get_kernel("add<double>").is_err());
    // Prebuilt code (the cubin's bytes, as if read from a file) finds the
    // kernel by its name expression once given the mapping, as cuda.core's
    // ObjectCode.from_cubin(..., symbol_mapping=...) does.
    let bare = ObjectCode::from_cubin(code.code().to_vec()).unwrap();
    assert!(bare.get_kernel("add<float>").is_err());
    let prebuilt = bare
        .with_name("add.cubin")
        .with_symbol_mapping(code.symbol_mapping().clone());
    let k = prebuilt.get_kernel("add<float>").unwrap();
    // SAFETY: the kernel only touches the buffer passed, within its size.
    unsafe { launch(&s, &LaunchConfig::new(1, 32), &k, &[&bf, &1.0f32]) }.unwrap();
    bf.copy_to_host(&mut f, &s).unwrap();
    assert!(f.iter().all(|&v| v == 2.5), "{f:?}");
}

/// Issue 43 point 1: cudarc's `04-streams`, ported literally (the buffer made
/// on `stream`, the kernel launched on `stream2`, the result read with
/// `to_vec(&stream)`), reads what the kernel wrote: a typed launch joins its
/// operands' free stream (here `stream`) after the kernel. A read on a third
/// stream is ordered with `order_after_uses`; a byte-API launch is joined with
/// `order_free_after`. The kernel spins first, so that an unordered read would
/// see the zeros.
#[test]
fn cudarc_04_streams_port_reads_what_the_kernel_on_another_stream_wrote() {
    require_gpu!();
    require_libs!("nvrtc");
    let d = Device::new(0).unwrap();
    d.set_current().unwrap();
    let non_blocking = || {
        d.create_stream(StreamOptions {
            non_blocking: true,
            ..StreamOptions::default()
        })
        .unwrap()
    };
    let (stream, stream2, stream3) = (non_blocking(), non_blocking(), non_blocking());
    let src = r#"
extern "C" __global__ void slow_fill(float *out, int n, long long spin) {
    long long start = clock64();
    while (clock64() - start < spin) {}
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * i + 1.0f;
}
"#;
    let code = compile(&d, src, CompileTarget::Cubin, &[], false);
    let kernel = code.get_kernel("slow_fill").unwrap();
    let typed = TypedKernel::<(MutPtr<f32>, i32, i64)>::new(kernel.clone()).unwrap();
    let n = 4096usize;
    let want: Vec<f32> = (0..n).map(|i| 2.0 * i as f32 + 1.0).collect();
    let cfg = LaunchConfig::for_elements(n as u64, 256);
    // About 0.1 s of spinning at 2 GHz: far longer than the copy's queueing.
    let spin: i64 = 200_000_000;

    // Typed launch on stream2, read on the buffer's own stream: nothing to add.
    let mut a = DeviceBuffer::<f32>::from_host(&d, &vec![0.0; n], &stream).unwrap();
    stream.sync().unwrap();
    // SAFETY: the kernel writes `n` floats of `a`, which holds `n`.
    unsafe { typed.launch(&stream2, &cfg, (a.view_mut(), n as i32, spin)) }.unwrap();
    assert_eq!(a.to_vec(&stream).unwrap(), want, "read on the free stream");

    // A third stream: `order_after_uses` orders the read.
    let mut b = DeviceBuffer::<f32>::from_host(&d, &vec![0.0; n], &stream).unwrap();
    stream.sync().unwrap();
    // SAFETY: as above.
    unsafe { typed.launch(&stream2, &cfg, (b.view_mut(), n as i32, spin)) }.unwrap();
    b.order_after_uses(&stream3).unwrap();
    assert_eq!(b.to_vec(&stream3).unwrap(), want, "read on a third stream");

    // The byte API joins nothing itself: `order_free_after` is the mark.
    let c = d.allocate(n * 4, &stream).unwrap();
    stream.sync().unwrap();
    let n32 = n as i32;
    // SAFETY: the kernel writes `n` floats of `c`, which holds `4 n` bytes.
    unsafe { launch(&stream2, &cfg, &kernel, &[&c, &n32, &spin]) }.unwrap();
    c.order_free_after(&stream2).unwrap();
    let mut back = vec![0f32; n];
    c.copy_to_host(&mut back, &stream).unwrap();
    assert_eq!(back, want, "byte-API launch joined with order_free_after");
}

/// Issue 43 point 2: `to_library` is the library the code's kernels come from
/// (one module per `ObjectCode`), so a `__constant__` written through it is what
/// a kernel from `code.get_kernel` reads; before, `to_library` loaded a second
/// copy and the kernel read zeros.
#[test]
fn to_library_is_the_library_the_codes_kernels_come_from() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s) = setup();
    let src = r#"
__constant__ int scale;
extern "C" __global__ void read_scale(int *out) { out[threadIdx.x] = scale * (int)(threadIdx.x + 1); }
"#;
    let code = compile(&d, src, CompileTarget::Cubin, &[], false);
    // The kernel first (loads the code), the library second: the same one.
    let k = code.get_kernel("read_scale").unwrap();
    let lib = code.to_library(&LibraryOptions::default()).unwrap();
    assert_eq!(lib.handle(), code.library().unwrap().handle());
    let ctx = d.context().unwrap();
    lib.get_global(&ctx, "scale")
        .unwrap()
        .write(&[7i32], &s)
        .unwrap();
    let out = d.allocate(4 * 4, &s).unwrap();
    // SAFETY: the kernel writes 4 `int`s (one per thread) into `out`, 16 bytes.
    unsafe { launch(&s, &LaunchConfig::new(1, 4), &k, &[&out]) }.unwrap();
    let mut back = [0i32; 4];
    out.copy_to_host(&mut back, &s).unwrap();
    assert_eq!(
        back,
        [7, 14, 21, 28],
        "the kernel read another copy of `scale`"
    );
    // Other options once loaded: refused (a second copy), not silently loaded.
    let e = code
        .to_library(&LibraryOptions {
            binary_is_preserved: true,
            jit: JitOptions::default(),
        })
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    // `to_library` first, with its options: `get_kernel` then uses that library.
    let code2 = compile(&d, src, CompileTarget::Cubin, &[], false);
    let opts = LibraryOptions {
        binary_is_preserved: true,
        jit: JitOptions::default(),
    };
    let lib2 = code2.to_library(&opts).unwrap();
    let k2 = code2.get_kernel("read_scale").unwrap();
    assert_eq!(code2.library().unwrap().handle(), lib2.handle());
    assert_eq!(code2.to_library(&opts).unwrap().handle(), lib2.handle());
    lib2.get_global(&ctx, "scale")
        .unwrap()
        .write(&[-2i32], &s)
        .unwrap();
    // SAFETY: as above.
    unsafe { launch(&s, &LaunchConfig::new(1, 4), &k2, &[&out]) }.unwrap();
    out.copy_to_host(&mut back, &s).unwrap();
    assert_eq!(back, [-2, -4, -6, -8]);
}

#[test]
fn device_and_managed_globals_through_the_library() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s) = setup();
    let src = r#"
__device__ int counter[4];
__managed__ int shared_value;
extern "C" __global__ void bump(int by) {
    counter[threadIdx.x] += by;
    if (threadIdx.x == 0) shared_value += by;
}
"#;
    let code = compile(&d, src, CompileTarget::Cubin, &[], false);
    let lib = code
        .to_library(&LibraryOptions {
            binary_is_preserved: true,
            jit: JitOptions::default(),
        })
        .unwrap();
    let ctx = d.context().unwrap();
    let g = lib.get_global(&ctx, "counter").unwrap();
    assert_eq!(g.size(), 16);
    g.write(&[1i32, 2, 3, 4], &s).unwrap();
    let m = lib.get_managed("shared_value").unwrap();
    assert_eq!(m.size(), 4);
    m.write(&[100i32], &s).unwrap();
    let k = lib.get_kernel("bump").unwrap();
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    unsafe { launch(&s, &LaunchConfig::new(1, 4), &k, &[&10i32]) }.unwrap();
    let mut back = [0i32; 4];
    g.read(&mut back, &s).unwrap();
    assert_eq!(back, [11, 12, 13, 14]);
    // The managed variable is readable from the host directly.
    s.sync().unwrap();
    // SAFETY: a managed `int`, the stream is idle.
    assert_eq!(unsafe { *(m.ptr() as usize as *const i32) }, 110);
    // Size mismatches are refused.
    assert!(matches!(
        g.write(&[1i32], &s),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(lib.get_global(&ctx, "nope").is_err());
    let module = lib.get_module(&ctx).unwrap();
    assert_eq!(module.get_global("counter").unwrap().1, 16);
}

#[test]
fn relocatable_two_file_program_linked_and_launched() {
    require_gpu!();
    require_libs!("nvrtc", "nvJitLink");
    let (d, s) = setup();
    let caller = compile(
        &d,
        "extern __device__ float scale(float x);\n\
         extern \"C\" __global__ void apply(float *p) { p[threadIdx.x] = scale(p[threadIdx.x]); }",
        CompileTarget::Cubin,
        &[],
        true,
    );
    let callee = compile(
        &d,
        "__device__ float scale(float x) { return 3.0f * x; }",
        CompileTarget::Cubin,
        &[],
        true,
    );
    let linker = Linker::new(
        &[&caller, &callee],
        LinkerOptions {
            arch: d.arch().unwrap(),
            ..Default::default()
        },
    )
    .unwrap();
    let linked = linker.link().unwrap();
    let k = linked.get_kernel("apply").unwrap();
    let mut b = d.allocate(64 * 4, &s).unwrap();
    b.copy_from_host(&(0..64).map(|i| i as f32).collect::<Vec<_>>(), &s)
        .unwrap();
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    unsafe { launch(&s, &LaunchConfig::new(1, 64), &k, &[&b]) }.unwrap();
    let mut out = vec![0f32; 64];
    b.copy_to_host(&mut out, &s).unwrap();
    assert!(out.iter().enumerate().all(|(i, &v)| v == 3.0 * i as f32));
}

#[test]
fn cooperative_and_cluster_launches() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s) = setup();
    let src = r#"
extern "C" __global__ void ranks(unsigned *out) {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    if (threadIdx.x == 0) out[blockIdx.x] = r;
}
extern "C" __global__ void touch(unsigned *out) { if (threadIdx.x == 0) out[blockIdx.x] = blockIdx.x + 1; }
"#;
    let code = compile(&d, src, CompileTarget::Cubin, &[], false);
    let mut out = d.allocate(8 * 4, &s).unwrap();
    // Cooperative: every block resident; a grid larger than can be resident fails.
    let touch = code.get_kernel("touch").unwrap();
    let mut cfg = LaunchConfig::new(8, 32);
    cfg.cooperative = true;
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    unsafe { launch(&s, &cfg, &touch, &[&out]) }.unwrap();
    let mut host = [0u32; 8];
    out.copy_to_host(&mut host, &s).unwrap();
    assert_eq!(host, [1, 2, 3, 4, 5, 6, 7, 8]);
    let sms = d.properties().multiprocessor_count().unwrap();
    let per_sm = touch
        .occupancy(&d)
        .max_active_blocks_per_multiprocessor(32, 0)
        .unwrap();
    let mut too_big = LaunchConfig::new(sms * per_sm + 1, 32);
    too_big.cooperative = true;
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    let e = unsafe { launch(&s, &too_big, &touch, &[&out]) }.unwrap_err();
    // The launch's context is the error's own text; CUDA's code is its cause.
    assert!(
        e.report()
            .to_string()
            .contains("COOPERATIVE_LAUNCH_TOO_LARGE"),
        "{}",
        e.report()
    );
    assert_eq!(
        e.driver_code(),
        Some(cudars_core::cudars_bindings::driver::CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)
    );
    // Clusters of 2 blocks: each block learns its rank in its cluster.
    if d.compute_capability().unwrap().0 >= 9 {
        let ranks = code.get_kernel("ranks").unwrap();
        let cfg = LaunchConfig::new(8, 32)
            .group_blocks_into_clusters(2)
            .unwrap();
        // SAFETY: the kernel only touches the buffers passed, within their sizes.
        unsafe { launch(&s, &cfg, &ranks, &[&out]) }.unwrap();
        out.copy_to_host(&mut host, &s).unwrap();
        assert_eq!(host, [0, 1, 0, 1, 0, 1, 0, 1]);
        assert!(
            ranks
                .occupancy(&d)
                .max_potential_cluster_size(&cfg, &s)
                .unwrap()
                >= 2
        );
        assert!(ranks.occupancy(&d).max_active_clusters(&cfg, &s).unwrap() >= 1);
        // 7 blocks cannot be grouped in twos: refused before anything is launched.
        assert!(matches!(
            LaunchConfig::new(7, 32).group_blocks_into_clusters(2),
            Err(Error::InvalidArgument { .. })
        ));
    }
    out.fill_u8(0, &s).unwrap();
}

/// Python's `LaunchConfig(grid=4, cluster=2, block=32)` launches 8 blocks: the grid
/// counts clusters. Both ways of writing it here (the grid in clusters, or in
/// blocks) must launch those 8 blocks, in 4 clusters of 2, as the kernel sees them.
#[test]
fn python_grid_of_4_clusters_of_2_launches_8_blocks_both_ways() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s) = setup();
    if d.compute_capability().unwrap().0 < 9 {
        println!(
            "SKIPPED {}: thread-block clusters need sm_90 or later",
            cudars_tests::current_test_name()
        );
        return;
    }
    // out[0]: blocks that ran; out[1..4]: gridDim; out[4..7]: %nclusterid (clusters
    // in the grid); out[7]: %cluster_nctarank (blocks in a cluster); out[8 + b]:
    // b + 1 for each block b that ran.
    let src = r#"
extern "C" __global__ void census(unsigned *out) {
    if (threadIdx.x != 0) return;
    atomicAdd(&out[0], 1u);
    out[8 + blockIdx.x] = blockIdx.x + 1;
    if (blockIdx.x == 0) {
        unsigned cx, cy, cz, ranks;
        asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(cx));
        asm volatile("mov.u32 %0, %%nclusterid.y;" : "=r"(cy));
        asm volatile("mov.u32 %0, %%nclusterid.z;" : "=r"(cz));
        asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(ranks));
        out[1] = gridDim.x; out[2] = gridDim.y; out[3] = gridDim.z;
        out[4] = cx; out[5] = cy; out[6] = cz; out[7] = ranks;
    }
}
"#;
    let census = compile(&d, src, CompileTarget::Cubin, &[], false)
        .get_kernel("census")
        .unwrap();
    // 8 slots past the 8 blocks expected, so a larger grid would show too.
    const WORDS: usize = 8 + 16;
    let mut out = d.allocate(WORDS * 4, &s).unwrap();
    let ways = [
        (
            "Grid::clusters(4)",
            LaunchConfig::with_clusters(Grid::clusters(4), 2, 32).unwrap(),
        ),
        (
            "Grid::blocks(8)",
            LaunchConfig::with_clusters(Grid::blocks(8), 2, 32).unwrap(),
        ),
        (
            "new(8).group_blocks_into_clusters(2)",
            LaunchConfig::new(8, 32)
                .group_blocks_into_clusters(2)
                .unwrap(),
        ),
    ];
    for (how, cfg) in ways {
        assert_eq!(cfg.total_blocks(), 8, "{how}");
        out.fill_u32(0, &s).unwrap();
        // SAFETY: block b writes out[0..8] and out[8 + b], b < 8: within 24 words.
        unsafe { launch(&s, &cfg, &census, &[&out]) }.unwrap();
        let mut h = [0u32; WORDS];
        out.copy_to_host(&mut h, &s).unwrap();
        assert_eq!(h[0], 8, "{how}: blocks that ran");
        assert_eq!(h[1..4], [8, 1, 1], "{how}: gridDim");
        assert_eq!(h[4..7], [4, 1, 1], "{how}: %nclusterid");
        assert_eq!(h[7], 2, "{how}: %cluster_nctarank");
        let ids: Vec<u32> = (1..=8).chain(std::iter::repeat_n(0, 8)).collect();
        assert_eq!(h[8..], ids[..], "{how}: block ids");
    }
}

#[test]
fn occupancy_follows_the_calculator_and_attributes_round_trip() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, _s) = setup();
    let src = r#"
extern "C" __global__ void light(float *p) { p[blockIdx.x * blockDim.x + threadIdx.x] *= 2.0f; }
extern "C" __global__ void dyn_smem(float *p) {
    extern __shared__ float buf[];
    buf[threadIdx.x] = p[threadIdx.x];
    __syncthreads();
    p[threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
}
"#;
    let code = compile(&d, src, CompileTarget::Cubin, &[], false);
    let props = d.properties();
    let max_threads_sm = props.max_threads_per_multiprocessor().unwrap();
    let max_blocks_sm = props.max_blocks_per_multiprocessor().unwrap();
    let regs_sm = props.max_registers_per_multiprocessor().unwrap();
    let smem_sm = props.max_shared_memory_per_multiprocessor().unwrap() as usize;
    let light = code.get_kernel("light").unwrap();
    let attrs = light.attributes(&d);
    let regs = attrs.num_regs().unwrap() as u32;
    assert!(regs > 0 && attrs.max_threads_per_block().unwrap() >= 1024);
    assert_eq!(attrs.binary_version().unwrap() as u32, {
        let (a, b) = d.compute_capability().unwrap();
        a * 10 + b
    });
    // The calculator: blocks per SM are limited by threads, blocks and registers
    // (registers allocated per warp in units of 256).
    for block in [128u32, 256, 512, 1024] {
        let warps = block.div_ceil(32);
        let regs_per_warp = (regs * 32).div_ceil(256) * 256;
        let by_regs = regs_sm / (regs_per_warp * warps);
        let expect = (max_threads_sm / block).min(max_blocks_sm).min(by_regs);
        let got = light
            .occupancy(&d)
            .max_active_blocks_per_multiprocessor(block, 0)
            .unwrap();
        assert_eq!(got, expect, "block {block}: regs {regs}");
    }
    let (grid, block) = light.occupancy(&d).max_potential_block_size(0, 0).unwrap();
    assert!(grid >= 1 && (32..=1024).contains(&block));
    // Dynamic shared memory: raise the kernel's limit, read it back, and the
    // occupancy drops as blocks ask for more.
    let k = code.get_kernel("dyn_smem").unwrap();
    let avail = k
        .occupancy(&d)
        .available_dynamic_shared_memory_per_block(1, 256)
        .unwrap();
    // Without opting in, a kernel gets the portable 48 KiB of dynamic shared memory.
    assert_eq!(avail, 48 * 1024);
    k.attributes(&d)
        .set_max_dynamic_shared_size_bytes(100 * 1024)
        .unwrap();
    assert_eq!(
        k.attributes(&d).max_dynamic_shared_size_bytes().unwrap(),
        100 * 1024
    );
    let avail = k
        .occupancy(&d)
        .available_dynamic_shared_memory_per_block(1, 256)
        .unwrap();
    assert!(avail >= 100 * 1024 && avail <= smem_sm, "{avail}");
    let two = k
        .occupancy(&d)
        .max_active_blocks_per_multiprocessor(256, 100 * 1024)
        .unwrap();
    assert!((1..=2).contains(&two), "{two}");
    k.attributes(&d)
        .set_preferred_shared_memory_carveout(50)
        .unwrap();
    assert_eq!(
        k.attributes(&d).preferred_shared_memory_carveout().unwrap(),
        50
    );
    assert!(
        k.attributes(&d)
            .set_max_dynamic_shared_size_bytes(i32::MAX)
            .is_err()
    );
}

#[test]
fn modules_with_jit_options_and_logs() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s) = setup();
    let ptx = compile(&d, SAXPY, CompileTarget::Ptx, &[], false);
    let ctx = d.context().unwrap();
    let opts = JitOptions {
        optimization_level: Some(3),
        max_registers: Some(32),
        log_verbose: true,
        ..Default::default()
    };
    let m = Module::load(&ctx, &ptx, &opts).unwrap();
    assert!(m.info_log().contains("saxpy") || m.info_log().is_empty());
    let k = m.get_function("saxpy").unwrap();
    assert!(k.attributes(&d).num_regs().unwrap() <= 32);
    let mut b = d.allocate(4, &s).unwrap();
    b.copy_from_host(&[1.0f32], &s).unwrap();
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    unsafe { launch(&s, &LaunchConfig::new(1, 1), &k, &[&1.0f32, &b, &b, &1u64]) }.unwrap();
    let mut out = [0f32];
    b.copy_to_host(&mut out, &s).unwrap();
    assert_eq!(out[0], 2.0);
    let _ = Module::loading_mode().unwrap();
    // Broken PTX: the JIT's error log comes back in the error.
    let bad = ObjectCode::from_ptx(
        b".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus; }\n".to_vec(),
    )
    .unwrap();
    let e = Module::load(&ctx, &bad, &JitOptions::default()).unwrap_err();
    assert!(e.log().is_some_and(|l| !l.is_empty()), "{e}");
    // LTO-IR cannot be loaded directly.
    let lto = ObjectCode::from_ltoir(vec![1u8, 2, 3]).unwrap();
    assert!(matches!(
        Library::load(&lto, &LibraryOptions::default()),
        Err(Error::InvalidArgument { .. })
    ));
    drop(Buffer::allocate(d.memory_resource().unwrap(), 1, &s).unwrap());
}

/// A kernel is launched through its function in the primary context after the first
/// launch; attributes set later (here, more dynamic shared memory) must still reach
/// what is launched.
#[test]
fn attributes_set_after_a_launch_apply_to_later_launches() {
    require_gpu!();
    require_libs!("nvrtc");
    let (d, s) = setup();
    let src = r#"
extern "C" __global__ void sum_shared(unsigned *out, unsigned n) {
    extern __shared__ unsigned sh[];
    for (unsigned i = threadIdx.x; i < n; i += blockDim.x) sh[i] = i;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long t = 0;
        for (unsigned i = 0; i < n; i++) t += sh[i];
        out[0] = (unsigned)t;
    }
}
"#;
    let k = compile(&d, src, CompileTarget::Cubin, &[], false)
        .get_kernel("sum_shared")
        .unwrap();
    let out = d.allocate(4, &s).unwrap();
    let run = |n: u32| {
        let mut cfg = LaunchConfig::new(1, 256);
        cfg.shmem_size = n * 4;
        // SAFETY: the kernel writes out[0] and `n` u32s of dynamic shared memory,
        // which the launch provides.
        unsafe { launch(&s, &cfg, &k, &[&out, &n]) }
    };
    let check = |n: u32| {
        let mut h = [0u32];
        out.copy_to_host(&mut h, &s).unwrap();
        assert_eq!(h[0], (0..n).sum::<u32>());
    };
    run(1024).unwrap();
    check(1024);
    // 100 KiB is over the default 48 KiB limit until the attribute is raised.
    let big = 25 * 1024;
    assert!(run(big).is_err());
    s.sync().unwrap_or(());
    k.attributes(&d)
        .set_max_dynamic_shared_size_bytes((big * 4) as i32)
        .unwrap();
    run(big).unwrap();
    check(big);
}

/// Cooperative groups and CUB's block reduction, from the toolkit's headers.
const BLOCK_SUM: &str = r#"
#include <cooperative_groups.h>
#include <cub/block/block_reduce.cuh>
namespace cg = cooperative_groups;
extern "C" __global__ void block_sum(const int *in, int *out) {
    using Reduce = cub::BlockReduce<int, 128>;
    __shared__ typename Reduce::TempStorage tmp;
    cg::thread_block block = cg::this_thread_block();
    int sum = Reduce(tmp).Sum(in[block.thread_rank()]);
    if (block.thread_rank() == 0) *out = sum;
}
"#;

#[test]
fn kernels_with_toolkit_headers_run_for_the_current_device() {
    require_gpu!();
    require_libs!("nvrtc");
    let found = cudars_core::toolkit_include_dirs()
        .map(|_| ())
        .map_err(|e| e.to_string());
    if !cudars_tests::require_or_skip(
        &cudars_tests::current_test_name(),
        "the CUDA runtime and CCCL headers",
        cudars_tests::REQUIRE_GPU_VAR,
        found,
    ) {
        return;
    }
    let (d, s) = setup();
    // `cuda.core`'s `ProgramOptions()`: the current device's architecture.
    let options = ProgramOptions::for_current_device()
        .unwrap()
        .with_toolkit_headers()
        .unwrap();
    assert_eq!(options.arch, Some(d.arch().unwrap()));
    let kernel = Program::new(SourceCode::Cxx(BLOCK_SUM), options)
        .unwrap()
        .compile(CompileTarget::Cubin, &[])
        .unwrap_or_else(|e| panic!("{e}"))
        .get_kernel("block_sum")
        .unwrap();
    let input: Vec<i32> = (1..=128).collect();
    let mut inp = d.allocate(128 * 4, &s).unwrap();
    inp.copy_from_host(&input, &s).unwrap();
    let out = d.allocate(4, &s).unwrap();
    // SAFETY: one block of 128 threads reads `inp[0..128]` and writes `out[0]`.
    unsafe { launch(&s, &LaunchConfig::new(1, 128), &kernel, &[&inp, &out]) }.unwrap();
    let mut sum = [0i32];
    out.copy_to_host(&mut sum, &s).unwrap();
    assert_eq!(sum[0], 128 * 129 / 2);
}
