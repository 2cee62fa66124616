//! CUDA graphs: capture two kernels from a stream and replay them, then a graph
//! defined node by node with a conditional `while` loop whose kernel decides, on
//! the device, whether to run again.
//!
//! `cargo run -p cuda-core --example graphs`

use std::process::ExitCode;
use std::time::Instant;

use cuda_core::{
    CaptureMode, CompileTarget, ConditionalKind, Device, Graph, GraphCompleteOptions, LaunchConfig,
    Program, ProgramOptions, SourceCode, StreamOptions, launch,
};

const SRC: &str = r#"
typedef unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned int value);
extern "C" __global__ void add(int *x, int v) { x[threadIdx.x] += v; }
extern "C" __global__ void mul(int *x, int v) { x[threadIdx.x] *= v; }
extern "C" __global__ void countdown(int *counter, int *iterations, cudaGraphConditionalHandle h) {
    if (threadIdx.x == 0) {
        *iterations += 1;
        int left = --*counter;
        cudaGraphSetConditional(h, left > 0 ? 1u : 0u);
    }
}
"#;

mod common;
use common::{ExampleError, Result};

/// The error for a result that is not what it should be.
fn wrong(what: &str) -> ExampleError {
    common::wrong("checking the graphs example", what.to_owned())
}

fn run() -> Result<()> {
    let dev = Device::new(0)?;
    dev.set_current()?;
    let stream = dev.create_stream(StreamOptions {
        non_blocking: true,
        priority: None,
    })?;
    let options = ProgramOptions {
        arch: Some(dev.arch()?),
        ..Default::default()
    };
    let code = Program::new(SourceCode::Cxx(SRC), options)?.compile(CompileTarget::Cubin, &[])?;
    let (add, mul) = (code.get_kernel("add")?, code.get_kernel("mul")?);

    // 1. Capture: x = (x + 1) * 2, recorded once, replayed 10 times.
    let mut x = dev.allocate(32 * 4, &stream)?;
    x.fill_u32(0, &stream)?;
    // SAFETY: `x` and the kernels outlive the captured graph and its instantiation.
    unsafe { stream.begin_capture(CaptureMode::ThreadLocal)? };
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    unsafe { launch(&stream, &LaunchConfig::new(1, 32), &add, &[&x, &1i32]) }?;
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    unsafe { launch(&stream, &LaunchConfig::new(1, 32), &mul, &[&x, &2i32]) }?;
    let captured = stream.end_capture()?;
    let exec = captured.instantiate(GraphCompleteOptions::default())?;
    exec.upload(&stream)?;
    let t = Instant::now();
    for _ in 0..10 {
        exec.launch(&stream)?;
    }
    let mut out = [0i32; 32];
    x.copy_to_host(&mut out, &stream)?;
    if out.iter().any(|&v| v != 2046) {
        return Err(wrong("the captured graph computed the wrong value"));
    }
    println!(
        "captured graph of {} nodes replayed 10 times in {:.1} µs: x = {}",
        captured.node_count()?,
        t.elapsed().as_secs_f64() * 1e6,
        out[0]
    );

    // 2. A conditional while loop: the body runs until the kernel clears the condition.
    let countdown = code.get_kernel("countdown")?;
    let mut counter = dev.allocate(4, &stream)?;
    let mut iterations = dev.allocate(4, &stream)?;
    counter.copy_from_host(&[5i32], &stream)?;
    iterations.copy_from_host(&[0i32], &stream)?;
    let mut graph = Graph::new(&dev.context()?)?;
    let cond = graph.create_condition(Some(1))?;
    let (_, mut bodies) = graph.add_conditional(&[], cond, ConditionalKind::While)?;
    let body = bodies
        .first_mut()
        .ok_or_else(|| wrong("a while node has one body"))?;
    // SAFETY: the kernel only touches the buffers passed, within their sizes.
    unsafe {
        body.add_kernel(
            &[],
            &LaunchConfig::new(1, 1),
            &countdown,
            &[&counter, &iterations, &cond],
        )
    }?;
    let looped = graph.instantiate(GraphCompleteOptions::default())?;
    looped.launch(&stream)?;
    let mut n = [0i32];
    iterations.copy_to_host(&mut n, &stream)?;
    if n[0] != 5 {
        return Err(wrong("the while loop did not run 5 times"));
    }
    println!("conditional while node looped {} times", n[0]);
    let dot = std::env::temp_dir().join("cuda-rs-graph.dot");
    graph.debug_dot_print(&dot)?;
    println!("graph written to {}", dot.display());
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("graphs: {}", cuda_core::Report::new(&e));
            ExitCode::FAILURE
        }
    }
}
