//! CUDA's `asyncAPI` sample, ported: queue an upload, a kernel and a download on one
//! stream, all from and to one page-locked buffer, then let the CPU work until the
//! GPU is done, and check the result.
//!
//! The copies are the non-owning ones ([`DeviceViewMut::copy_from_pinned`],
//! [`DeviceView::copy_to_pinned`]): each returns once queued and borrows the
//! [`PinnedBuffer`] only for the call, because the buffer itself keeps an event per
//! copy in flight, and host access ([`PinnedBuffer::as_slice`]) waits for the ones
//! that conflict. So the upload, the kernel and the download can all be queued
//! before anything is waited for, as in C. (The `_async` forms, which take the
//! buffer by value and hand it back from a future, are for one copy awaited on an
//! executor.)
//!
//! `cargo run -p cudars-core --example async_api`
//!
//! [`DeviceViewMut::copy_from_pinned`]: cudars_core::DeviceViewMut::copy_from_pinned
//! [`DeviceView::copy_to_pinned`]: cudars_core::DeviceView::copy_to_pinned
//! [`PinnedBuffer`]: cudars_core::PinnedBuffer
//! [`PinnedBuffer::as_slice`]: cudars_core::PinnedBuffer::as_slice

use std::process::ExitCode;

use cudars_core::{
    CompileTarget, DeviceBuffer, EventOptions, LaunchConfig, MutPtr, PinnedBuffer, Program,
    ProgramOptions, SourceCode, StreamOptions, TypedKernel,
};

mod common;
use common::{Result, wrong};

/// The sample's kernel, as it has it.
const SRC: &str = r#"
extern "C" __global__ void increment_kernel(int *g_data, int inc_value) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    g_data[idx] = g_data[idx] + inc_value;
}
"#;

fn run() -> Result<()> {
    let dev = cudars_core::Device::new(0)?;
    dev.set_current()?;
    println!("CUDA device [{}]", dev.name()?);
    let stream = dev.create_stream(StreamOptions::default())?;

    let n: usize = 16 * 1024 * 1024;
    let value = 26;
    let code = Program::new(SourceCode::Cxx(SRC), ProgramOptions::for_device(&dev)?)?
        .compile(CompileTarget::Cubin, &[])?;
    let increment = TypedKernel::<(MutPtr<i32>, i32)>::new(code.get_kernel("increment_kernel")?)?;

    // Page-locked host memory (the sample's cudaMallocHost), zeroed, and its device twin.
    let mut a = PinnedBuffer::<i32>::zeroed(&dev, n)?;
    let mut d_a = DeviceBuffer::<i32>::allocate(&dev, n, &stream)?;
    let stop = dev.create_event(EventOptions::default())?;

    // Everything is queued before anything is waited for.
    d_a.view_mut().copy_from_pinned(&a, &stream)?;
    let config = LaunchConfig::new((n / 512) as u32, 512u32);
    // SAFETY: n / 512 blocks of 512 threads touch g_data[0..n], all of `d_a`.
    unsafe { increment.launch(&stream, &config, (d_a.view_mut(), value)) }?;
    d_a.view().copy_to_pinned(&mut a, &stream)?;
    stream.record(&stop)?;

    // The CPU is free meanwhile: count until the GPU is done.
    let mut counter: u64 = 0;
    while !stop.is_done()? {
        counter += 1;
    }
    println!("CPU executed {counter} iterations while waiting for the GPU to finish");

    // Reading the buffer waits for the download (done already, by the event).
    if let Some(i) = a.as_slice()?.iter().position(|&x| x != value) {
        return Err(wrong(
            "checking the asyncAPI example",
            format!("a[{i}] = {}, expected {value}", a.as_slice()?[i]),
        ));
    }
    println!("all {n} elements are {value}");
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("async_api: {}", cudars_core::Report::new(&e));
            ExitCode::FAILURE
        }
    }
}
