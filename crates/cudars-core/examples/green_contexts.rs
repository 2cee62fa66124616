//! Two green contexts share one GPU without sharing SMs: the device's SMs are split
//! into two groups, each group gets a green context and a stream, and a kernel whose
//! blocks record the SM they ran on is launched in both at once. Each context's
//! blocks stay on its own SMs.
//!
//! `cargo run -p cudars-core --example green_contexts`

use std::collections::BTreeSet;
use std::process::ExitCode;

use cudars_core::{
    CompileTarget, Context, Device, DeviceBuffer, LaunchConfig, MutPtr, Program, ProgramOptions,
    SmResourceOptions, SourceCode, StreamOptions, TypedKernel,
};

const SRC: &str = r#"
extern "C" __global__ void where_am_i(unsigned *out, long long spin) {
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    long long t0 = clock64();
    while (clock64() - t0 < spin) {}
    if (threadIdx.x == 0) out[blockIdx.x] = id;
}
"#;

mod common;
use common::{ExampleError, Result, wrong};

fn run() -> Result<()> {
    let dev = Device::new(0)?;
    dev.set_current()?;
    let all = dev.resources()?.sm;
    // The minimum group and its alignment are reported by CUDA 13 drivers.
    let or_unknown = |v: Option<u32>| v.map_or_else(|| "?".to_owned(), |v| v.to_string());
    println!(
        "device 0: {} ({}): {} SMs, groups of at least {} SMs, aligned to {}",
        dev.name()?,
        dev.arch()?,
        all.sm_count(),
        or_unknown(all.min_partition_size()),
        or_unknown(all.coscheduled_alignment())
    );
    // Two groups of a quarter of the SMs each (rounded by the driver); the rest is
    // left over.
    let split = all.split(SmResourceOptions {
        count: (all.sm_count() / 4).max(1),
        groups: Some(2),
        ..Default::default()
    })?;
    let left = split.remaining.map_or(0, |r| r.sm_count());
    println!(
        "split: groups of {:?} SMs, {left} left over",
        split
            .groups
            .iter()
            .map(|g| g.sm_count())
            .collect::<Vec<_>>()
    );
    if split.groups.len() < 2 {
        return Err(wrong(
            "splitting the SMs in two",
            format!("the driver made {} group(s)", split.groups.len()),
        ));
    }

    let kernel = Program::new(
        SourceCode::Cxx(SRC),
        ProgramOptions {
            arch: Some(dev.arch()?),
            ..Default::default()
        },
    )?
    .compile(CompileTarget::Cubin, &[])?
    .get_kernel("where_am_i")?;
    // The parameter list, checked once against the kernel.
    let where_am_i = TypedKernel::<(MutPtr<u32>, i64)>::new(kernel)?;

    let blocks = all.sm_count() * 4;
    let spin: i64 = 1_000_000;
    let mut runs = Vec::new();
    for group in &split.groups[..2] {
        let ctx = Context::create_green(&dev, std::slice::from_ref(group))?;
        let stream = ctx.create_stream(StreamOptions::default())?;
        let mut out = DeviceBuffer::<u32>::allocate(&dev, blocks as usize, &stream)?;
        out.fill(u32::MAX, &stream)?;
        // SAFETY: `where_am_i` writes out[blockIdx.x] for `blocks` blocks, and `out`
        // holds `blocks` u32s.
        unsafe {
            where_am_i.launch(
                &stream,
                &LaunchConfig::new(blocks, 64),
                (out.view_mut(), spin),
            )?
        };
        runs.push((ctx, stream, out, group.sm_count()));
    }
    // Both launches are in flight together; read each back.
    let mut used = Vec::new();
    for (ctx, stream, out, sms) in &runs {
        let ids = out.to_vec(stream)?;
        let set: BTreeSet<u32> = ids.iter().copied().collect();
        println!(
            "green context ({} SMs, {:?}): {blocks} blocks ran on {} SMs: {:?}",
            sms,
            ctx.green_handle(),
            set.len(),
            set
        );
        if set.contains(&u32::MAX) || set.len() as u32 > *sms {
            return Err(wrong(
                "checking a green context",
                format!("its blocks used {} SMs of {sms}", set.len()),
            ));
        }
        used.push(set);
    }
    let shared: Vec<_> = used[0].intersection(&used[1]).collect();
    println!("SMs used by both contexts: {shared:?}");
    if !shared.is_empty() {
        return Err(wrong(
            "checking two green contexts",
            "they shared SMs".to_owned(),
        ));
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        // An older driver lacks the feature: say which driver it needs.
        Err(ExampleError::Cuda(e)) if e.required_driver().is_some() => {
            println!("green_contexts: not on this driver: {}", e.report());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("green_contexts: {}", cudars_core::Report::new(&e));
            ExitCode::FAILURE
        }
    }
}
