//! `cuda_core/tests/graph/test_device_launch.py` of `cuda.core` (the pinned commit
//! of `docs/reference/cuda-core-tests.txt`): a kernel launches an instantiated
//! graph from the device (`cudaGraphLaunch`, linked with `cudadevrt`).
//! `GraphCompleteOptions(device_launch=True, upload_stream=s)` is
//! `GraphCompleteOptions { device_launch: true, .. }` then `exec.upload(&s)`;
//! `int(inner_graph.handle)` is `exec.handle() as usize as u64`;
//! `pathfinder.find_static_lib("cudadevrt")` is `cudars_pathfinder`'s; without it
//! the test skips, as Python's does (it fails with `CUDA_RS_REQUIRE_WHEELS=1`).
//! The counter is a device buffer, as in `graph_graph_builder.rs`.

use cudars_core::{
    CaptureMode, CompileTarget, GraphCompleteOptions, Kernel, Linker, LinkerOptions, ObjectCode,
    Program, ProgramOptions, SourceCode,
};
use cudars_tests::{require_gpu, require_libs};

use crate::graph_graph_builder::{launch1, setup, zeros};

const WORK: &str = r#"
    extern "C" __global__ void increment(int* value) {
        if (threadIdx.x == 0 && blockIdx.x == 0) {
            atomicAdd(value, 1);
        }
    }
    "#;

const LAUNCHER: &str = r#"
    extern "C" __global__ void launch_graph_from_device(cudaGraphExec_t graph) {
        if (threadIdx.x == 0 && blockIdx.x == 0) {
            cudaGraphLaunch(graph, cudaStreamGraphTailLaunch);
        }
    }
    "#;

fn compile_work_kernel(arch: &str) -> Kernel {
    let opts = ProgramOptions {
        std: Some("c++17".into()),
        arch: Some(arch.into()),
        ..Default::default()
    };
    Program::new(SourceCode::Cxx(WORK), opts)
        .unwrap()
        .compile(CompileTarget::Cubin, &[])
        .unwrap()
        .get_kernel("increment")
        .unwrap()
}

/// The launcher, linked with `cudadevrt`; `None` (the test skips) without it.
fn compile_device_launcher_kernel(arch: &str) -> Option<Kernel> {
    let cudadevrt_path = match cudars_pathfinder::find_static_lib("cudadevrt") {
        Ok(found) => found.abs_path,
        Err(e) => {
            assert!(
                std::env::var("CUDA_RS_REQUIRE_WHEELS").as_deref() != Ok("1"),
                "cudadevrt library not found: {e}"
            );
            println!("SKIPPED: cudadevrt library not found: {e}");
            return None;
        }
    };
    let opts = ProgramOptions {
        std: Some("c++17".into()),
        arch: Some(arch.into()),
        relocatable_device_code: true,
        ..Default::default()
    };
    let ptx = Program::new(SourceCode::Cxx(LAUNCHER), opts)
        .unwrap()
        .compile(CompileTarget::Ptx, &[])
        .unwrap();
    // Link with device runtime library
    let cudadevrt = ObjectCode::from_library(std::fs::read(cudadevrt_path).unwrap()).unwrap();
    let linker = Linker::new(&[&ptx, &cudadevrt], LinkerOptions::new(arch)).unwrap();
    Some(
        linker
            .link()
            .unwrap()
            .get_kernel("launch_graph_from_device")
            .unwrap(),
    )
}

/// Not a Python test: both kernels compile, and the launcher links with
/// `cudadevrt`, for an H100 (`sm_90`) here, without a GPU.
#[test]
fn the_device_launch_kernels_compile_and_link_without_a_gpu() {
    require_libs!("nvrtc", "nvJitLink");
    // `get_kernel` on a cubin needs no GPU only up to loading: compile and link.
    let opts = ProgramOptions {
        std: Some("c++17".into()),
        arch: Some("sm_90".into()),
        ..Default::default()
    };
    let work = Program::new(SourceCode::Cxx(WORK), opts)
        .unwrap()
        .compile(CompileTarget::Cubin, &[])
        .unwrap();
    assert!(!work.code().is_empty());
    let Ok(found) = cudars_pathfinder::find_static_lib("cudadevrt") else {
        assert!(std::env::var("CUDA_RS_REQUIRE_WHEELS").as_deref() != Ok("1"));
        println!("SKIPPED: no cudadevrt");
        return;
    };
    let opts = ProgramOptions {
        std: Some("c++17".into()),
        arch: Some("sm_90".into()),
        relocatable_device_code: true,
        ..Default::default()
    };
    let ptx = Program::new(SourceCode::Cxx(LAUNCHER), opts)
        .unwrap()
        .compile(CompileTarget::Ptx, &[])
        .unwrap();
    let cudadevrt = ObjectCode::from_library(std::fs::read(found.abs_path).unwrap()).unwrap();
    let linked = Linker::new(&[&ptx, &cudadevrt], LinkerOptions::new("sm_90"))
        .unwrap()
        .link()
        .unwrap();
    assert!(!linked.code().is_empty());
}

fn device_launch(num_launches: usize) {
    let (dev, stream) = setup();
    let major = dev.compute_capability().unwrap().0;
    if major < 9 {
        // "Device-side graph launch requires Hopper (sm_90+) architecture"
        println!("SKIPPED: compute capability {major}.x");
        return;
    }
    let arch = dev.arch().unwrap();
    // Compile kernels
    let work_kernel = compile_work_kernel(&arch);
    let Some(launcher_kernel) = compile_device_launcher_kernel(&arch) else {
        return;
    };
    // Allocate and initialize memory
    let arr = zeros(&dev, &stream, 1);
    // Create the inner graph (the graph to be launched from device)
    let mut gb_inner = dev.create_graph_builder().unwrap();
    gb_inner.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb_inner, &work_kernel, &[&arr.shared_view()]);
    gb_inner.end_building().unwrap();
    let inner_graph = gb_inner
        .complete(GraphCompleteOptions {
            device_launch: true,
            ..Default::default()
        })
        .unwrap();
    inner_graph.upload(&stream).unwrap();
    stream.sync().unwrap();
    // Create the outer graph (launches inner graph from device)
    let inner_graph_handle = inner_graph.handle() as usize as u64;
    let mut gb_outer = dev.create_graph_builder().unwrap();
    gb_outer.begin_building(CaptureMode::default()).unwrap();
    launch1(&gb_outer, &launcher_kernel, &[&inner_graph_handle]);
    gb_outer.end_building().unwrap();
    let outer_graph = gb_outer.complete(GraphCompleteOptions::default()).unwrap();
    // Launch outer graph (which triggers device-side launch of inner graph)
    for _ in 0..num_launches {
        outer_graph.launch(&stream).unwrap();
    }
    stream.sync().unwrap();
    let got = arr.to_vec(&stream).unwrap();
    assert_eq!(
        got,
        [num_launches as i32],
        "Expected {num_launches}, got {got:?}"
    );
    drop(outer_graph);
    drop(inner_graph);
}

#[test]
fn test_device_launch_basic() {
    require_gpu!();
    require_libs!("nvrtc", "nvJitLink");
    device_launch(1);
}

#[test]
fn test_device_launch_multiple() {
    require_gpu!();
    require_libs!("nvrtc", "nvJitLink");
    // Launch multiple times
    device_launch(5);
}
