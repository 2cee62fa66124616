//! The host-side cost of cudars-core's hot operations, without a GPU: run with
//! the shim loaded as `libcuda.so.1` in its fake-driver mode, it repeats one
//! operation `N` times against the fake driver, which does almost nothing, so
//! what remains is the crate's own work around each driver call.
//!
//! `scripts/host-cost.sh` runs it under callgrind at two counts and prints the
//! instructions per operation, beside the same driver calls made raw (modes
//! `raw-launch` and `raw-alloc-free`): a deterministic figure where timing a
//! 2 µs launch cannot see 50 ns. Usage: `host_cost MODE N`, modes `raw-launch`,
//! `launch`, `typed-launch`, `raw-alloc-free`, `alloc-free`, `typed-alloc-free`,
//! `raw-wait` (an event made, recorded on one stream, waited for by another and
//! destroyed) and `order-after-uses` (`DeviceBuffer::order_after_uses` on a
//! stream that is not the buffer's free stream: the same calls).

// A measuring tool: a failed step ends the run, reported by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ffi::c_void;

use cudars_bindings::driver as sys;
use cudars_core::{
    Device, DeviceBuffer, LaunchConfig, Library, LibraryOptions, MutPtr, ObjectCode, StreamOptions,
    TypedKernel, launch,
};

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(mode), Some(n)) = (args.next(), args.next()) else {
        panic!("usage: host_cost MODE N (see the example's docs)");
    };
    let n: usize = n.parse().expect("N is a count");
    let dev = Device::new(0).unwrap();
    dev.set_current().unwrap();
    let s = dev
        .create_stream(StreamOptions {
            non_blocking: true,
            ..StreamOptions::default()
        })
        .unwrap();
    // The fake loads any image whose ELF header the crate accepts; every kernel
    // it hands out is `(float*, int)`.
    let mut elf = vec![0u8; 64];
    elf[..6].copy_from_slice(b"\x7fELF\x02\x01");
    let library = Library::load(
        &ObjectCode::from_cubin(elf).unwrap(),
        &LibraryOptions::default(),
    )
    .unwrap();
    let kernel = library.get_kernel("empty").unwrap();
    let typed = TypedKernel::<(MutPtr<f32>, i32)>::new(kernel.clone()).unwrap();
    let cfg = LaunchConfig::new(1, 32);
    let pool = dev.default_memory_resource().unwrap();
    let buf = pool.allocate(4096, &s).unwrap();
    let mut tbuf = DeviceBuffer::<f32>::allocate(&dev, 1024, &s).unwrap();
    let s2 = dev
        .create_stream(StreamOptions {
            non_blocking: true,
            ..StreamOptions::default()
        })
        .unwrap();
    let elsewhere = DeviceBuffer::<f32>::allocate(&dev, 1024, &s2).unwrap();
    let zero = 0i32;
    let (mut raw_ptr, mut raw_n) = (buf.ptr(), 0i32);
    let mut raw_args = [
        (&raw mut raw_ptr).cast::<c_void>(),
        (&raw mut raw_n).cast::<c_void>(),
    ];
    let mut op = |mode: &str| match mode {
        "raw-launch" => {
            // SAFETY: the fake runs no kernel; the arguments match `(float*, int)`.
            let rc = unsafe {
                sys::cuLaunchKernel(
                    kernel.handle(),
                    1,
                    1,
                    1,
                    32,
                    1,
                    1,
                    0,
                    s.handle(),
                    raw_args.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(rc, sys::CUDA_SUCCESS);
        }
        // SAFETY: the fake runs no kernel.
        "launch" => unsafe { launch(&s, &cfg, &kernel, &[&buf, &zero]) }.unwrap(),
        // SAFETY: as above.
        "typed-launch" => unsafe { typed.launch(&s, &cfg, (tbuf.view_mut(), 0)) }.unwrap(),
        "raw-alloc-free" => {
            let mut p = 0;
            // SAFETY: a live pool and stream; `p` is valid for writes.
            let rc =
                unsafe { sys::cuMemAllocFromPoolAsync(&mut p, 1 << 20, pool.handle(), s.handle()) };
            assert_eq!(rc, sys::CUDA_SUCCESS);
            // SAFETY: `p` was just allocated and nothing uses it.
            let rc = unsafe { sys::cuMemFreeAsync(p, s.handle()) };
            assert_eq!(rc, sys::CUDA_SUCCESS);
        }
        "alloc-free" => drop(pool.allocate(1 << 20, &s).unwrap()),
        "typed-alloc-free" => drop(DeviceBuffer::<f32>::allocate(&dev, 1 << 18, &s).unwrap()),
        "raw-wait" => {
            let mut e: sys::CUevent = std::ptr::null_mut();
            // SAFETY: `e` is valid for writes; live streams; the event is
            // destroyed once, after the wait is queued.
            unsafe {
                assert_eq!(sys::cuEventCreate(&mut e, 0), sys::CUDA_SUCCESS);
                assert_eq!(sys::cuEventRecord(e, s2.handle()), sys::CUDA_SUCCESS);
                assert_eq!(sys::cuStreamWaitEvent(s.handle(), e, 0), sys::CUDA_SUCCESS);
                assert_eq!(sys::cuEventDestroy(e), sys::CUDA_SUCCESS);
            }
        }
        "order-after-uses" => elsewhere.order_after_uses(&s).unwrap(),
        other => panic!("unknown mode {other:?}"),
    };
    // Warm: first launches resolve and cache what later ones reuse.
    for _ in 0..3 {
        op(&mode);
    }
    let t = std::time::Instant::now();
    for _ in 0..n {
        op(&mode);
    }
    println!(
        "{mode}: {n} in {:.1} ns each (fake driver)",
        t.elapsed().as_nanos() as f64 / n.max(1) as f64
    );
}
