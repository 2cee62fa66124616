//! CUDA graphs: capture two kernels from a stream and replay them, then a graph
//! defined node by node: fill nodes that set two sub-ranges of one typed array,
//! and a conditional `while` loop whose kernel decides, on the device, whether to
//! run again.
//!
//! `cargo run -p cudars-core --example graphs`

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use cudars_core::{
    CaptureMode, CompileTarget, ConditionalKind, Device, DeviceBuffer, Graph, GraphCompleteOptions,
    GraphCondition, LaunchConfig, MutPtr, Program, ProgramOptions, SourceCode, StreamOptions,
    TypedKernel,
};

/// The kernels; `GraphCondition::DEVICE_DECLARATIONS` goes before them.
const SRC: &str = r#"
extern "C" __global__ void add(int *x, int v) { x[threadIdx.x] += v; }
extern "C" __global__ void mul(int *x, int v) { x[threadIdx.x] *= v; }
// state[0] counts down, state[1] counts the iterations.
extern "C" __global__ void countdown(int *state, cudaGraphConditionalHandle h) {
    if (threadIdx.x == 0) {
        state[1] += 1;
        int left = --state[0];
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
    let src = format!("{}{SRC}", GraphCondition::DEVICE_DECLARATIONS);
    let code = Program::new(SourceCode::Cxx(&src), options)?.compile(CompileTarget::Cubin, &[])?;
    // The kernels' parameter lists, checked once.
    let add = TypedKernel::<(MutPtr<i32>, i32)>::new(code.get_kernel("add")?)?;
    let mul = TypedKernel::<(MutPtr<i32>, i32)>::new(code.get_kernel("mul")?)?;

    // 1. Capture: x = (x + 1) * 2, recorded once, replayed 10 times.
    let mut x = DeviceBuffer::<i32>::zeroed(&dev, 32, &stream)?;
    // SAFETY: `x` and the kernels outlive the captured graph and its instantiation.
    unsafe { stream.begin_capture(CaptureMode::ThreadLocal)? };
    // SAFETY: each kernel touches x[threadIdx.x] for 32 threads; `x` holds 32.
    unsafe { add.launch(&stream, &LaunchConfig::new(1, 32), (x.view_mut(), 1)) }?;
    // SAFETY: as above.
    unsafe { mul.launch(&stream, &LaunchConfig::new(1, 32), (x.view_mut(), 2)) }?;
    let captured = stream.end_capture()?;
    let exec = captured.instantiate(GraphCompleteOptions::default())?;
    exec.upload(&stream)?;
    let t = Instant::now();
    for _ in 0..10 {
        exec.launch(&stream)?;
    }
    let out = x.to_vec(&stream)?;
    if out.iter().any(|&v| v != 2046) {
        return Err(wrong("the captured graph computed the wrong value"));
    }
    println!(
        "captured graph of {} nodes replayed 10 times in {:.1} µs: x = {}",
        captured.node_count()?,
        t.elapsed().as_secs_f64() * 1e6,
        out[0]
    );

    // 2. Fill nodes set the two halves of `state` (the counter to 5, the
    // iteration count to 0) on every launch; then a conditional while loop runs
    // its body until the kernel clears the condition. The fill nodes hold `state`
    // (an `Arc`), so the graph keeps it alive.
    let countdown = code.get_kernel("countdown")?;
    let state = Arc::new(DeviceBuffer::<i32>::allocate(&dev, 2, &stream)?);
    let mut graph = Graph::new(&dev.context()?)?;
    let start = graph.add_fill(&[], state.shared_slice(..1)?, 5)?;
    let zero = graph.add_fill(&[], state.shared_slice(1..)?, 0)?;
    let cond = graph.create_condition(Some(1))?;
    let (_, mut bodies) = graph.add_conditional(&[start, zero], cond, ConditionalKind::While)?;
    let body = bodies
        .first_mut()
        .ok_or_else(|| wrong("a while node has one body"))?;
    // SAFETY: countdown writes state[0] and state[1], which `state` holds (passed
    // as its byte buffer: the graph, not a borrow, orders the writes); the graph
    // keeps `state` alive (its fill nodes hold it).
    unsafe {
        body.add_kernel(
            &[],
            &LaunchConfig::new(1, 1),
            &countdown,
            &[state.as_buffer(), &cond],
        )
    }?;
    let looped = graph.instantiate(GraphCompleteOptions::default())?;
    looped.launch(&stream)?;
    let n = state.to_vec(&stream)?;
    if n != [0, 5] {
        return Err(wrong("the while loop did not run 5 times"));
    }
    println!("conditional while node looped {} times", n[1]);
    let dot = std::env::temp_dir().join("cuda-rs-graph.dot");
    graph.debug_dot_print(&dot)?;
    println!("graph written to {}", dot.display());
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("graphs: {}", cudars_core::Report::new(&e));
            ExitCode::FAILURE
        }
    }
}
