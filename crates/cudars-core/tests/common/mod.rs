//! What several GPU test files share: kernels that hold a stream by spinning on
//! the SM clock. Work queued after them waits; no host thread blocks (a host
//! function that waits for the test would stall the driver's callback thread
//! for every test of the process).

// Each test file uses some of these.
#![allow(dead_code)]

use cudars_core::{
    CompileTarget, Device, Kernel, LaunchConfig, MutPtr, Program, ProgramOptions, SourceCode,
    Stream, TypedKernel,
};

/// `spin(cycles)`, and `spin_then_fill(y, n, v, cycles)`: spins, then writes
/// `v` to `y[0..n]` (a grid-stride loop).
pub(crate) const SRC: &str = r#"
extern "C" __global__ void spin(unsigned long long cycles) {
    unsigned long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
}
extern "C" __global__ void spin_then_fill(float* y, unsigned long long n, float v,
                                          unsigned long long cycles) {
    unsigned long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < n; i += (unsigned long long)gridDim.x * blockDim.x) {
        y[i] = v;
    }
}
"#;

/// SM clock cycles in a millisecond on an H100 (about 2 GHz).
pub(crate) const CYCLES_PER_MS: u64 = 2_000_000;

/// The signature of `spin_then_fill`.
pub(crate) type SpinFill = (MutPtr<f32>, u64, f32, u64);

/// Kernel `name` of [`SRC`], compiled for `d`.
pub(crate) fn kernel(d: &Device, name: &str) -> Kernel {
    Program::new(SourceCode::Cxx(SRC), ProgramOptions::for_device(d).unwrap())
        .unwrap()
        .compile(CompileTarget::Cubin, &[])
        .unwrap()
        .get_kernel(name)
        .unwrap()
}

/// `spin_then_fill`, typed.
pub(crate) fn spin_fill(d: &Device) -> TypedKernel<SpinFill> {
    TypedKernel::new(kernel(d, "spin_then_fill")).unwrap()
}

/// Queues `cycles` of spinning on `s`: what follows on `s` stays pending.
pub(crate) fn spin(d: &Device, s: &Stream, cycles: u64) {
    let k = TypedKernel::<(u64,)>::new(kernel(d, "spin")).unwrap();
    // SAFETY: the kernel touches no memory.
    unsafe { k.launch(s, &LaunchConfig::new(1u32, 1u32), (cycles,)) }.unwrap();
}
