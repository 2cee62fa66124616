// Kernels for crates/cudars-core/tests/kernels_macro.rs: `cudars_core::kernels!` reads
// their signatures at build time; NVRTC compiles this file at run time.

#define BLOCK 256  // preprocessor lines are skipped by the reader

struct Affine {
    float scale;
    float shift;
    unsigned n;
};

/* y[i] = a * x[i] + y[i] for i < n */
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// A struct by value, in constant parameter space.
extern "C" __global__ void affine(const __grid_constant__ Affine p, float* __restrict__ y) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) y[i] = p.scale * y[i] + p.shift;
}

extern "C" {

// Integers of three widths, a size_t count and an attribute.
__global__ void __launch_bounds__(BLOCK)
add_scaled(
    const unsigned long long* __restrict__ a,
    unsigned long long* b,
    unsigned int k,
    size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) b[i] += (unsigned long long)k * a[i];
}

// A bool and a signed 64-bit value.
__global__ void fill_if(long long* out, bool on, long long value, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (on && i < n) out[i] = value;
}

}  // extern "C"

// Not extern "C": left out of the generated struct (no name to load it by).
template <typename T> __global__ void twice(T* x) { x[threadIdx.x] *= 2; }
template __global__ void twice<float>(float*);
