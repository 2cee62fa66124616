//! Data-parallel training of a small MLP, one process per GPU, started the way
//! torchrun, `srun` or `mpirun` start a job: each rank reads its place from the
//! launcher's variables ([`World::from_env`]), meets the others through NCCL's
//! own bootstrap (`NCCL_COMM_ID`, from `MASTER_ADDR`/`MASTER_PORT`), trains on
//! its shard of every global batch with cuBLAS GEMMs and NVRTC kernels, and
//! sums the gradients with one all-reduce per step.
//!
//! The model is `in → hidden (ReLU) → out`, trained by plain SGD on a mean
//! squared error against a fixed teacher function. Every sample is made on the
//! GPU from its global index, so a sample is the same whichever rank makes it.
//! After training, every rank checks that its weights equal rank 0's
//! (bit for bit), and rank 0 trains the same model again as one rank on the
//! whole global batch and checks that the two sets of weights agree within
//! `TOLERANCE` (relative to the largest weight): only the order of the
//! floating-point sums differs. Each rank prints its samples per second.
//!
//! ```sh
//! # as a launcher would (any of the conventions World reads):
//! RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 data_parallel_mlp &
//! RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 data_parallel_mlp
//! # or with no launcher variables: it starts one rank per GPU itself
//! cargo run --release -p cudars-nccl --example data_parallel_mlp -- [STEPS]
//! ```

use std::error::Error;
use std::process::Command;
use std::time::{Duration, Instant};

use cudars_blas::{Blas, MatMut, MatRef, Op};
use cudars_core::{
    CompileTarget, ConstPtr, Device, DeviceBuffer, LaunchConfig, MutPtr, Program, ProgramOptions,
    SourceCode, Stream, StreamOptions, TypedKernel,
};
use cudars_nccl::{Communicator, Launcher, ReduceOp, World};

type Res<T> = Result<T, Box<dyn Error>>;

const D_IN: usize = 256;
const HIDDEN: usize = 1024;
const D_OUT: usize = 32;
/// Samples per step, over all ranks.
const GLOBAL_BATCH: usize = 8192;
const LEARNING_RATE: f32 = 0.05;
/// The largest difference allowed between the N-rank and one-rank weights,
/// relative to the largest weight: f32 sums taken in another order.
const TOLERANCE: f32 = 1e-4;
const JOIN_TIMEOUT: Duration = Duration::from_secs(120);

const KERNELS: &str = r#"
__device__ float uhash(unsigned long long i) {
    unsigned long long z = i + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}
// Rows `first ..` of the data set: inputs in [-1, 1), targets a fixed teacher.
extern "C" __global__ void make_batch(float *x, float *y, unsigned long long first,
                                      unsigned int rows, unsigned int din, unsigned int dout) {
    unsigned int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    unsigned long long s = first + r;
    for (unsigned int j = 0; j < din; j++) x[(size_t)r * din + j] = uhash(s * din + j);
    for (unsigned int k = 0; k < dout; k++) {
        float acc = 0.0f;
        for (unsigned int j = 0; j < din; j++)
            acc += x[(size_t)r * din + j] * uhash(0xC0FFEEull * 1000003ull + k * din + j);
        y[(size_t)r * dout + k] = tanhf(0.2f * acc);
    }
}
extern "C" __global__ void bias_relu(float *z, const float *b, unsigned int rows, unsigned int cols) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < (size_t)rows * cols) z[i] = fmaxf(z[i] + b[i % cols], 0.0f);
}
extern "C" __global__ void add_bias(float *z, const float *b, unsigned int rows, unsigned int cols) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < (size_t)rows * cols) z[i] += b[i % cols];
}
// dy = d(loss)/dy for loss = scale * sum (y - t)^2; the loss is added to *loss.
extern "C" __global__ void mse_grad(const float *y, const float *t, float *dy, unsigned int n,
                                    float scale, float *loss) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float d = y[i] - t[i];
    dy[i] = 2.0f * scale * d;
    atomicAdd(loss, scale * d * d);
}
extern "C" __global__ void relu_back(float *da, const float *a, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && a[i] <= 0.0f) da[i] = 0.0f;
}
extern "C" __global__ void sgd(float *p, const float *g, unsigned int n, float lr) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] -= lr * g[i];
}
"#;

type Fill = TypedKernel<(MutPtr<f32>, MutPtr<f32>, u64, u32, u32, u32)>;
type Bias = TypedKernel<(MutPtr<f32>, ConstPtr<f32>, u32, u32)>;
type Mse = TypedKernel<(
    ConstPtr<f32>,
    ConstPtr<f32>,
    MutPtr<f32>,
    u32,
    f32,
    MutPtr<f32>,
)>;
type ReluBack = TypedKernel<(MutPtr<f32>, ConstPtr<f32>, u32)>;
type Sgd = TypedKernel<(MutPtr<f32>, ConstPtr<f32>, u32, f32)>;

struct Kernels {
    make_batch: Fill,
    bias_relu: Bias,
    add_bias: Bias,
    mse_grad: Mse,
    relu_back: ReluBack,
    sgd: Sgd,
}

impl Kernels {
    fn compile(dev: &Device) -> Res<Self> {
        let code = Program::new(SourceCode::Cxx(KERNELS), ProgramOptions::for_device(dev)?)?
            .compile(CompileTarget::Cubin, &[])?;
        Ok(Self {
            make_batch: TypedKernel::new(code.get_kernel("make_batch")?)?,
            bias_relu: TypedKernel::new(code.get_kernel("bias_relu")?)?,
            add_bias: TypedKernel::new(code.get_kernel("add_bias")?)?,
            mse_grad: TypedKernel::new(code.get_kernel("mse_grad")?)?,
            relu_back: TypedKernel::new(code.get_kernel("relu_back")?)?,
            sgd: TypedKernel::new(code.get_kernel("sgd")?)?,
        })
    }
}

/// Where each parameter lies in the one flat buffer of parameters (and of
/// gradients, laid out alike, so one all-reduce sums them all).
const W1: usize = 0;
const B1: usize = W1 + D_IN * HIDDEN;
const W2: usize = B1 + HIDDEN;
const B2: usize = W2 + HIDDEN * D_OUT;
const N_PARAMS: usize = B2 + D_OUT;

/// The same starting weights on every rank.
fn initial_params() -> Vec<f32> {
    let mut p = vec![0.0f32; N_PARAMS];
    let mut state = 0x5eed_u64;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    };
    let s1 = (1.0 / D_IN as f32).sqrt();
    let s2 = (1.0 / HIDDEN as f32).sqrt();
    p[W1..B1].iter_mut().for_each(|w| *w = next() * s1);
    p[W2..B2].iter_mut().for_each(|w| *w = next() * s2);
    p
}

/// One replica: its parameters, gradients and the activations of `rows` samples.
struct Replica<'k> {
    k: &'k Kernels,
    stream: Stream,
    blas: Blas,
    rows: usize,
    params: DeviceBuffer<f32>,
    grads: DeviceBuffer<f32>,
    x: DeviceBuffer<f32>,
    target: DeviceBuffer<f32>,
    a1: DeviceBuffer<f32>,
    y: DeviceBuffer<f32>,
    dy: DeviceBuffer<f32>,
    da1: DeviceBuffer<f32>,
    ones: DeviceBuffer<f32>,
    loss: DeviceBuffer<f32>,
}

fn launch_cfg(n: usize) -> LaunchConfig {
    LaunchConfig::for_elements(n as u64, 256)
}

impl<'k> Replica<'k> {
    fn new(dev: &Device, k: &'k Kernels, rows: usize) -> Res<Self> {
        let stream = dev.create_stream(StreamOptions::default())?;
        let blas = Blas::new(&stream)?;
        let z = |n: usize| DeviceBuffer::<f32>::zeroed(dev, n, &stream);
        Ok(Self {
            params: DeviceBuffer::from_host(dev, &initial_params(), &stream)?,
            grads: z(N_PARAMS)?,
            x: z(rows * D_IN)?,
            target: z(rows * D_OUT)?,
            a1: z(rows * HIDDEN)?,
            y: z(rows * D_OUT)?,
            dy: z(rows * D_OUT)?,
            da1: z(rows * HIDDEN)?,
            ones: DeviceBuffer::from_host(dev, &vec![1.0f32; rows], &stream)?,
            loss: z(1)?,
            k,
            stream,
            blas,
            rows,
        })
    }

    /// One step on samples `first .. first + rows` of the global batch; with a
    /// communicator the gradients are summed over the ranks first.
    fn step(&mut self, first: u64, comm: Option<&Communicator>) -> Res<()> {
        let (b, s) = (self.rows, &self.stream);
        let (r32, din, h, dout) = (b as u32, D_IN as u32, HIDDEN as u32, D_OUT as u32);
        // SAFETY: x holds rows·D_IN and target rows·D_OUT floats, as the kernel
        // writes for `rows` rows.
        unsafe {
            self.k.make_batch.launch(
                s,
                &launch_cfg(b),
                (
                    self.x.view_mut(),
                    self.target.view_mut(),
                    first,
                    r32,
                    din,
                    dout,
                ),
            )
        }?;
        let p = &self.params;
        let mat = |v, r, c| MatRef::row_major(v, r, c);
        // Forward: a1 = relu(x·W1 + b1), y = a1·W2 + b2.
        self.blas.gemm(
            1.0,
            mat(self.x.view(), b, D_IN)?,
            Op::N,
            mat(p.slice(W1..B1)?, D_IN, HIDDEN)?,
            Op::N,
            0.0,
            &mut MatMut::row_major(self.a1.view_mut(), b, HIDDEN)?,
        )?;
        // SAFETY: a1 holds rows·HIDDEN floats, b1 HIDDEN.
        unsafe {
            self.k.bias_relu.launch(
                s,
                &launch_cfg(b * HIDDEN),
                (self.a1.view_mut(), p.slice(B1..W2)?, r32, h),
            )
        }?;
        self.blas.gemm(
            1.0,
            mat(self.a1.view(), b, HIDDEN)?,
            Op::N,
            mat(p.slice(W2..B2)?, HIDDEN, D_OUT)?,
            Op::N,
            0.0,
            &mut MatMut::row_major(self.y.view_mut(), b, D_OUT)?,
        )?;
        // SAFETY: y holds rows·D_OUT floats, b2 D_OUT.
        unsafe {
            self.k.add_bias.launch(
                s,
                &launch_cfg(b * D_OUT),
                (self.y.view_mut(), p.slice(B2..N_PARAMS)?, r32, dout),
            )
        }?;
        // The loss is the mean over the global batch: each rank's share sums to it.
        let scale = 1.0 / (GLOBAL_BATCH * D_OUT) as f32;
        let n_out = (b * D_OUT) as u32;
        // SAFETY: y, target and dy hold rows·D_OUT floats; loss one.
        unsafe {
            self.k.mse_grad.launch(
                s,
                &launch_cfg(b * D_OUT),
                (
                    self.y.view(),
                    self.target.view(),
                    self.dy.view_mut(),
                    n_out,
                    scale,
                    self.loss.view_mut(),
                ),
            )
        }?;
        // Backward.
        let g = &mut self.grads;
        self.blas.gemm(
            1.0,
            mat(self.a1.view(), b, HIDDEN)?,
            Op::T,
            mat(self.dy.view(), b, D_OUT)?,
            Op::N,
            0.0,
            &mut MatMut::row_major(g.slice_mut(W2..B2)?, HIDDEN, D_OUT)?,
        )?;
        self.blas.gemm(
            1.0,
            mat(self.ones.view(), b, 1)?,
            Op::T,
            mat(self.dy.view(), b, D_OUT)?,
            Op::N,
            0.0,
            &mut MatMut::row_major(g.slice_mut(B2..N_PARAMS)?, 1, D_OUT)?,
        )?;
        self.blas.gemm(
            1.0,
            mat(self.dy.view(), b, D_OUT)?,
            Op::N,
            mat(p.slice(W2..B2)?, HIDDEN, D_OUT)?,
            Op::T,
            0.0,
            &mut MatMut::row_major(self.da1.view_mut(), b, HIDDEN)?,
        )?;
        // SAFETY: da1 and a1 hold rows·HIDDEN floats.
        unsafe {
            self.k.relu_back.launch(
                s,
                &launch_cfg(b * HIDDEN),
                (self.da1.view_mut(), self.a1.view(), (b * HIDDEN) as u32),
            )
        }?;
        self.blas.gemm(
            1.0,
            mat(self.x.view(), b, D_IN)?,
            Op::T,
            mat(self.da1.view(), b, HIDDEN)?,
            Op::N,
            0.0,
            &mut MatMut::row_major(g.slice_mut(W1..B1)?, D_IN, HIDDEN)?,
        )?;
        self.blas.gemm(
            1.0,
            mat(self.ones.view(), b, 1)?,
            Op::T,
            mat(self.da1.view(), b, HIDDEN)?,
            Op::N,
            0.0,
            &mut MatMut::row_major(g.slice_mut(B1..W2)?, 1, HIDDEN)?,
        )?;
        // The global batch's gradient: the sum of every rank's share.
        if let Some(comm) = comm {
            comm.all_reduce_in_place(g.view_mut(), ReduceOp::Sum, s)?;
        }
        // SAFETY: params and grads hold N_PARAMS floats.
        unsafe {
            self.k.sgd.launch(
                s,
                &launch_cfg(N_PARAMS),
                (
                    self.params.view_mut(),
                    g.view(),
                    N_PARAMS as u32,
                    LEARNING_RATE,
                ),
            )
        }?;
        Ok(())
    }

    /// The loss summed since the last call (this rank's share), then reset.
    fn take_loss(&mut self) -> Res<f32> {
        let l = self.loss.to_vec(&self.stream)?[0];
        self.loss.fill(0.0, &self.stream)?;
        Ok(l)
    }
}

fn main() -> Res<()> {
    let world = World::from_env()?;
    // SAFETY: the start of main: no other thread exists yet, and neither CUDA
    // nor NCCL has started any.
    unsafe { world.export_nccl_comm_id() };
    let steps: usize = match std::env::args().nth(1) {
        Some(s) => s.parse()?,
        None => 100,
    };
    if world.launcher() == Launcher::None {
        return launch_ranks(steps);
    }
    rank(&world, steps)
}

/// With no launcher: start one rank per GPU, as torchrun would.
fn launch_ranks(steps: usize) -> Res<()> {
    let n = Device::count()?;
    if n == 0 {
        return Err("no CUDA device".into());
    }
    // A driver older than cuBLAS's CUDA major: say which driver it needs.
    {
        let dev = Device::new(0)?;
        let stream = dev.create_stream(StreamOptions::default())?;
        match Blas::new(&stream) {
            Ok(_) => {}
            Err(e) if e.required_driver().is_some() => {
                println!("data_parallel_mlp: not on this driver: {}", e.report());
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        }
    }
    // A port free now on the loopback interface, for NCCL's bootstrap root.
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    println!("data_parallel_mlp: starting {n} rank(s), torchrun's variables, 127.0.0.1:{port}");
    let exe = std::env::current_exe()?;
    let children = (0..n)
        .map(|r| {
            Command::new(&exe)
                .arg(steps.to_string())
                .env("RANK", r.to_string())
                .env("WORLD_SIZE", n.to_string())
                .env("LOCAL_RANK", r.to_string())
                .env("LOCAL_WORLD_SIZE", n.to_string())
                .env("MASTER_ADDR", "127.0.0.1")
                .env("MASTER_PORT", port.to_string())
                .env_remove("NCCL_COMM_ID")
                .spawn()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut failed = Vec::new();
    for (r, mut c) in children.into_iter().enumerate() {
        if !c.wait()?.success() {
            failed.push(r);
        }
    }
    if !failed.is_empty() {
        return Err(format!("ranks {failed:?} failed").into());
    }
    println!("data_parallel_mlp: correct");
    Ok(())
}

fn rank(world: &World, steps: usize) -> Res<()> {
    let (r, n) = (world.rank(), world.size());
    if GLOBAL_BATCH % n != 0 {
        return Err(
            format!("the global batch of {GLOBAL_BATCH} does not split over {n} ranks").into(),
        );
    }
    let comm = match world.join(JOIN_TIMEOUT) {
        Ok(comm) => comm,
        // A driver older than NCCL's CUDA major (every rank finds it): say
        // which driver it needs.
        Err(e) if e.required_driver().is_some() => {
            println!(
                "data_parallel_mlp: rank {r}: not on this driver: {}",
                e.report()
            );
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let dev = *comm.device();
    dev.set_current()?;
    let kernels = Kernels::compile(&dev)?;
    let shard = GLOBAL_BATCH / n;
    let mut model = Replica::new(&dev, &kernels, shard)?;
    let tag = format!("rank {r}/{n} ({}, GPU {})", world.launcher(), dev.ordinal());

    // One warm-up step outside the timing (it connects NCCL's channels and
    // loads cuBLAS's kernels), on the data of step 0, then start again.
    model.step((r * shard) as u64, Some(&comm))?;
    model.params = DeviceBuffer::from_host(&dev, &initial_params(), &model.stream)?;
    model.take_loss()?;

    let mut losses = Vec::new();
    model.stream.sync()?;
    let t = Instant::now();
    for step in 0..steps {
        let first = (step * GLOBAL_BATCH + r * shard) as u64;
        if step + 1 == steps && steps > 1 {
            // Only the last step's loss counts from here.
            model.take_loss()?;
        }
        model.step(first, Some(&comm))?;
        if step == 0 || step + 1 == steps {
            losses.push(model.take_loss()?);
        }
    }
    model.stream.sync()?;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{tag}: {steps} steps of {shard} samples in {secs:.3} s: {:.0} samples/s on this rank \
         ({:.0} over {n} ranks); its share of the loss {:.5} at the first step, {:.5} at the last",
        (steps * shard) as f64 / secs,
        (steps * GLOBAL_BATCH) as f64 / secs,
        losses.first().copied().unwrap_or(0.0),
        losses.last().copied().unwrap_or(0.0),
    );

    // Every rank holds rank 0's weights, bit for bit.
    let mine = model.params.to_vec(&model.stream)?;
    let mut root = DeviceBuffer::from_host(&dev, &mine, &model.stream)?;
    comm.broadcast_in_place(root.view_mut(), 0, &model.stream)?;
    let root = root.to_vec(&model.stream)?;
    if let Some(i) = (0..N_PARAMS).find(|&i| mine[i].to_bits() != root[i].to_bits()) {
        return Err(format!("{tag}: weight {i} is {}, rank 0 has {}", mine[i], root[i]).into());
    }
    if r == 0 {
        // The same training as one rank on the whole global batch.
        let mut single = Replica::new(&dev, &kernels, GLOBAL_BATCH)?;
        for step in 0..steps {
            single.step((step * GLOBAL_BATCH) as u64, None)?;
        }
        let one = single.params.to_vec(&single.stream)?;
        let scale = one.iter().fold(0.0f32, |m, w| m.max(w.abs()));
        let (worst, at) = mine
            .iter()
            .zip(&one)
            .enumerate()
            .map(|(i, (a, b))| ((a - b).abs(), i))
            .fold((0.0f32, 0), |m, x| if x.0 > m.0 { x } else { m });
        let rel = worst / scale.max(f32::MIN_POSITIVE);
        println!(
            "{tag}: weights after {steps} steps on {n} rank(s) vs one rank on the same global \
             batch: largest difference {worst:.3e} at weight {at} ({rel:.2e} of the largest \
             weight {scale:.3}; tolerance {TOLERANCE:.0e})"
        );
        if rel.is_nan() || rel > TOLERANCE {
            return Err(
                format!("{tag}: the N-rank weights differ from one rank's by {rel:.2e}").into(),
            );
        }
    }
    comm.destroy()?;
    Ok(())
}
