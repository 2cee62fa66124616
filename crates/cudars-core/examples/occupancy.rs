//! Kernel attributes and occupancy for a block-wise reduction that uses dynamic
//! shared memory: its registers and memory, resident blocks per multiprocessor for
//! block sizes 64 to 1024, the block size the driver suggests, the dynamic shared
//! memory left per block, and, on sm_90 and later, cluster occupancy (portable and
//! non-portable sizes) for a cluster launch. The kernel is then launched (with
//! clusters where the GPU has them) and its result checked.
//!
//! `cargo run -p cudars-core --example occupancy`

use std::process::ExitCode;

use cudars_core::{
    CompileTarget, ConstPtr, Device, DeviceBuffer, Kernel, LaunchConfig, MutPtr, Program,
    ProgramOptions, SourceCode, Stream, StreamOptions, TypedKernel,
};

/// Sums each block's elements into `partial[blockIdx.x]`; needs a power-of-two
/// block and `blockDim.x` floats of dynamic shared memory.
const BLOCK_SUM: &str = r#"
extern "C" __global__ void block_sum(const float *x, float *partial, unsigned n) {
    extern __shared__ float s[];
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}
"#;

mod common;
use common::{Result, wrong};

/// Dynamic shared memory a block of `block` threads needs.
fn smem(block: u32) -> usize {
    block as usize * 4
}

/// Sums `n` ones with blocks of `config.block().x` threads and checks every partial sum.
fn sum_ones(
    dev: &Device,
    stream: &Stream,
    kernel: &Kernel,
    config: &LaunchConfig,
    n: u32,
) -> Result<()> {
    let block = config.block().x;
    let blocks = config.grid_blocks().x as usize;
    // The parameter list, checked once against the kernel.
    let block_sum = TypedKernel::<(ConstPtr<f32>, MutPtr<f32>, u32)>::new(kernel.clone())?;
    let x = DeviceBuffer::from_host(dev, &vec![1.0f32; n as usize], stream)?;
    let mut partial = DeviceBuffer::<f32>::allocate(dev, blocks, stream)?;
    // SAFETY: block_sum reads x[0..n] and writes partial[0..blocks], one element
    // per block of the grid; both arrays hold that many.
    unsafe { block_sum.launch(stream, config, (x.view(), partial.view_mut(), n)) }?;
    let sums = partial.to_vec(stream)?;
    for (b, &got) in sums.iter().enumerate() {
        let start = b as u64 * u64::from(block);
        let expect = u64::from(n).saturating_sub(start).min(u64::from(block)) as f32;
        if got != expect {
            return Err(wrong(
                "checking block_sum",
                format!("block {b} summed {got}, not {expect}"),
            ));
        }
    }
    Ok(())
}

fn run() -> Result<()> {
    let dev = Device::new(0)?;
    dev.set_current()?;
    let props = dev.properties();
    let (major, minor) = dev.compute_capability()?;
    println!(
        "device 0: {} (sm_{major}{minor}), {} SMs, {} threads, {} blocks and {} KiB shared \
         memory per SM",
        dev.name()?,
        props.multiprocessor_count()?,
        props.max_threads_per_multiprocessor()?,
        props.max_blocks_per_multiprocessor()?,
        props.max_shared_memory_per_multiprocessor()? / 1024
    );

    let options = ProgramOptions {
        arch: Some(dev.arch()?),
        ..Default::default()
    };
    let code =
        Program::new(SourceCode::Cxx(BLOCK_SUM), options)?.compile(CompileTarget::Cubin, &[])?;
    let kernel = code.get_kernel("block_sum")?;

    let a = kernel.attributes(&dev);
    println!("\nblock_sum attributes:");
    println!("  registers per thread          {}", a.num_regs()?);
    println!(
        "  max threads per block         {}",
        a.max_threads_per_block()?
    );
    println!(
        "  static shared memory          {} bytes",
        a.shared_size_bytes()?
    );
    println!(
        "  local memory per thread       {} bytes",
        a.local_size_bytes()?
    );
    println!(
        "  constant memory               {} bytes",
        a.const_size_bytes()?
    );
    println!(
        "  max dynamic shared memory     {} bytes",
        a.max_dynamic_shared_size_bytes()?
    );
    println!(
        "  PTX / binary version          {} / {}",
        a.ptx_version()?,
        a.binary_version()?
    );

    let occ = kernel.occupancy(&dev);
    let threads_per_sm = props.max_threads_per_multiprocessor()?;
    println!("\nresident blocks per SM (with blockDim.x floats of dynamic shared memory):");
    println!("  block  blocks/SM  threads/SM  occupancy");
    for shift in 6..=10 {
        let block = 1u32 << shift;
        let blocks = occ.max_active_blocks_per_multiprocessor(block, smem(block))?;
        let threads = blocks * block;
        println!(
            "  {block:>5}  {blocks:>9}  {threads:>10}  {:>8.0}%",
            100.0 * f64::from(threads) / f64::from(threads_per_sm.max(1))
        );
        if blocks == 0 {
            return Err(wrong(
                "asking the occupancy",
                format!("no block of {block} threads fits on a multiprocessor"),
            ));
        }
    }

    let (min_grid, best) = occ.max_potential_block_size(smem(1024), 0)?;
    println!(
        "\nsuggested block size (with {} bytes of dynamic shared memory): {best} threads, \
         at least {min_grid} blocks to fill the GPU",
        smem(1024)
    );
    for (blocks, block) in [(1, 256), (2, 256), (4, 256), (8, 128)] {
        println!(
            "dynamic shared memory left per block with {blocks} block(s) of {block} on an SM: \
             {} bytes",
            occ.available_dynamic_shared_memory_per_block(blocks, block)?
        );
    }

    // The reduction needs a power of two: the largest one within the suggestion.
    if best == 0 {
        return Err(wrong(
            "asking the best block size",
            "the driver suggested 0 threads".into(),
        ));
    }
    let block = 1u32 << (31 - best.leading_zeros());
    let n: u32 = 1 << 20;
    let stream = dev.create_stream(StreamOptions::default())?;
    let mut config = LaunchConfig::for_elements(n.into(), block);
    config.shmem_size = smem(block) as u32;
    sum_ones(&dev, &stream, &kernel, &config, n)?;
    println!(
        "\nblock_sum over {n} ones with {} blocks of {block} is correct",
        config.grid_blocks().x
    );

    if major < 9 {
        println!("thread-block clusters need sm_90 or later: skipped");
        return Ok(());
    }
    // Clusters: the grid must be a multiple of the cluster size (16 divides the
    // 2^20 / block blocks of any power-of-two block up to 1024).
    println!("\nclusters of blocks of {block} threads:");
    for size in [2u32, 4, 8] {
        // The same grid of blocks, in clusters of `size` blocks.
        let cfg = config.group_blocks_into_clusters(size)?;
        println!(
            "  cluster of {size}: at most {} clusters resident; largest cluster possible {}",
            occ.max_active_clusters(&cfg, &stream)?,
            occ.max_potential_cluster_size(&cfg, &stream)?
        );
    }
    let cfg = config.group_blocks_into_clusters(2)?;
    let portable = occ.max_potential_cluster_size(&cfg, &stream)?;
    a.set_non_portable_cluster_size_allowed(true)?;
    let non_portable = occ.max_potential_cluster_size(&cfg, &stream)?;
    println!(
        "  largest cluster: {portable} portable, {non_portable} with non-portable sizes allowed"
    );
    if portable < 2 || non_portable < portable {
        return Err(wrong(
            "asking the cluster sizes",
            format!("{portable} portable, {non_portable} non-portable"),
        ));
    }
    sum_ones(&dev, &stream, &kernel, &cfg, n)?;
    println!("  block_sum launched in clusters of 2 is correct");
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("occupancy: {}", cudars_core::Report::new(&e));
            ExitCode::FAILURE
        }
    }
}
