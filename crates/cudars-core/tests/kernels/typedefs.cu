// Kernels for crates/cudars-core/tests/kernels_macro.rs over types the source
// names through `typedef` and `using`: `cudars_core::kernels!` resolves each to
// the Rust type the C type is (`real` is `double`, so `real*` takes a view of
// `f64`), and refuses a mapping that says otherwise.

typedef double real;
typedef real scalar_t;             // a chain
typedef const real creal;          // a const element type
using count_t = unsigned long long;
typedef unsigned int index_t;

// A struct the macro lays out from its fields: 8 + 4 bytes and 4 of padding.
struct Pair {
    real a;
    int n;
};

// out[i] = v for i < n. Had `real*` taken an `f32` view, n = the view's length
// would have written twice its bytes.
extern "C" __global__ void fill_real(real* out, real v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = v;
}

// y[i] = a * x[i] + y[i] for i < n.
extern "C" __global__ void axpy_real(scalar_t a, const creal* __restrict__ x,
                                     scalar_t* __restrict__ y, count_t n) {
    count_t i = blockIdx.x * (count_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// y[i] *= p.a for i < p.n; idx[i] = i.
extern "C" __global__ void pair_scale(const __grid_constant__ Pair p, real* y, index_t* idx) {
    index_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if ((int)i < p.n) {
        y[i] *= p.a;
        idx[i] = i;
    }
}
