// The kernels of examples/generated_kernels.rs. `cudars_core::kernels!` reads these
// signatures when the example is built; NVRTC compiles the file when it runs.

struct Affine {
    float scale;
    float shift;
    unsigned int n;
};

// y[i] = p.scale * x[i] + p.shift, with the parameters in constant memory.
extern "C" __global__ void scale_shift(const __grid_constant__ Affine p,
                                       const float* __restrict__ x,
                                       float* __restrict__ y) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) y[i] = p.scale * x[i] + p.shift;
}

// bins[v] += how many of data[0..n] are v.
extern "C" __global__ void histogram(const unsigned char* data, unsigned int* bins, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) atomicAdd(&bins[data[i]], 1u);
}
