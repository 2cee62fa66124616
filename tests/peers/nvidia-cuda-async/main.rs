//! NVIDIA's `cuda-async` 0.5 on the workload of cudars-core's `benches/await.rs`
//! (peer `cuda-async`): an empty kernel (hand-written PTX, loaded with the
//! driver API) queued by a `DeviceOp` on the crate's default policy, then
//! - `sync_latency_us`: `DeviceOp::sync` (execute, then synchronise the stream);
//! - `await_latency_us`: the op awaited (`futures::executor::block_on`; the
//!   crate's default 20 µs inline spin; run with `CUDA_ASYNC_SPIN_BUDGET_US=0`
//!   for the reactor's path, printed as `await_nospin_latency_us`);
//! - `await_1000_per_s`: 1,000 ops scheduled, then all awaited.
//! 2000 round trips per round, 8 rounds, the best after the first.
//!
//! Not a member of the workspace: built on its own (see `Cargo.toml` beside it),
//! with `CUDA_HOME` at a CUDA 13 `include/` (the `nvidia-cuda-runtime` wheel's
//! `nvidia/cu13/include` plus `crt/` of `nvidia-cuda-crt`) for its bindgen.

use std::future::IntoFuture;
use std::time::Instant;

use cuda_async::device_context::{global_policy, init_device_contexts_default, with_device};
use cuda_async::device_future::DeviceFuture;
use cuda_async::device_operation::{DeviceOp, ExecutionContext};
use cuda_async::error::DeviceError;

const PTX: &str = "
.version 8.0
.target sm_90
.address_size 64
.visible .entry empty() { ret; }
\0";

/// The loaded kernel (a `CUfunction`, usable from every thread of the context).
static mut FUNC: cuda_bindings::CUfunction = std::ptr::null_mut();

struct Empty;

impl DeviceOp for Empty {
    type Output = ();
    unsafe fn execute(self, context: &ExecutionContext) -> Result<(), DeviceError> {
        let stream = context.get_cuda_stream().cu_stream();
        // SAFETY: a loaded kernel of no parameters on the op's stream.
        let rc = unsafe {
            cuda_bindings::cuLaunchKernel(
                FUNC,
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                stream,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        if rc != cuda_bindings::cudaError_enum_CUDA_SUCCESS {
            return Err(DeviceError::Internal(format!("cuLaunchKernel: {rc}")));
        }
        Ok(())
    }
}

impl IntoFuture for Empty {
    type Output = Result<(), DeviceError>;
    type IntoFuture = DeviceFuture<(), Empty>;
    fn into_future(self) -> Self::IntoFuture {
        let policy = global_policy(0).expect("the default policy");
        match self.schedule(&policy) {
            Ok(f) => f,
            Err(e) => DeviceFuture::failed(e),
        }
    }
}

fn line(metric: &str, value: f64) {
    println!("{{\"peer\":\"cuda-async\",\"metric\":\"{metric}\",\"value\":{value:.4}}}");
}

fn main() {
    init_device_contexts_default().expect("device contexts");
    with_device(0, |d| d.bind_to_thread())
        .expect("device 0")
        .expect("bind_to_thread");
    let mut module: cuda_bindings::CUmodule = std::ptr::null_mut();
    // SAFETY: a NUL-terminated PTX image; out-pointers valid for writes.
    unsafe {
        assert_eq!(cuda_bindings::cuModuleLoadData(&mut module, PTX.as_ptr().cast()), 0);
        let mut f = std::ptr::null_mut();
        assert_eq!(cuda_bindings::cuModuleGetFunction(&mut f, module, c"empty".as_ptr()), 0);
        FUNC = f;
    }
    let spin = std::env::var("CUDA_ASYNC_SPIN_BUDGET_US").is_ok_and(|v| v == "0");
    const N: u32 = 2000;
    let (mut best_sync, mut best_await) = (f64::INFINITY, f64::INFINITY);
    for round in 0..8 {
        let t = Instant::now();
        for _ in 0..N {
            Empty.sync().expect("sync");
        }
        let sync_us = t.elapsed().as_secs_f64() * 1e6 / f64::from(N);
        let t = Instant::now();
        futures::executor::block_on(async {
            for _ in 0..N {
                Empty.await.expect("await");
            }
        });
        let await_us = t.elapsed().as_secs_f64() * 1e6 / f64::from(N);
        if round > 0 {
            best_sync = best_sync.min(sync_us);
            best_await = best_await.min(await_us);
        }
    }
    line("sync_latency_us", best_sync);
    line(if spin { "await_nospin_latency_us" } else { "await_latency_us" }, best_await);
    let mut best = 0f64;
    for _ in 0..5 {
        let t = Instant::now();
        futures::executor::block_on(async {
            let pending: Vec<_> = (0..1000).map(|_| Empty.into_future()).collect();
            for f in pending {
                f.await.expect("await");
            }
        });
        best = best.max(1000.0 / t.elapsed().as_secs_f64());
    }
    line("await_1000_per_s", best);
}
