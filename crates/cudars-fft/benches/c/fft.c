/* The FFT figures of cudars-fft's benches/fft.rs, in C against cuFFT: one 1-D
 * complex-to-complex forward transform of 2^24 points, out of place, single
 * (cufftExecC2C) and double (cufftExecZ2Z) precision. 5 warm-up transforms, then
 * the median of 7 timings of 20 transforms between two events. JSON lines,
 * microseconds per transform.
 * Build: nvcc -O2 -o fft fft.c -lcufft */
#include <cufft.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 24)
#define CK(x) do { int rc_ = (int)(x); if (rc_) { fprintf(stderr, "%s: %d\n", #x, rc_); exit(1); } } while (0)

static int cmp(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static double micros(cudaStream_t s, int dbl) {
  size_t esize = dbl ? sizeof(cufftDoubleComplex) : sizeof(cufftComplex);
  void *a, *b;
  CK(cudaMalloc(&a, (size_t)N * esize));
  CK(cudaMalloc(&b, (size_t)N * esize));
  CK(cudaMemsetAsync(a, 0, (size_t)N * esize, s));
  CK(cudaMemsetAsync(b, 0, (size_t)N * esize, s));
  cufftHandle p;
  CK(cufftPlan1d(&p, N, dbl ? CUFFT_Z2Z : CUFFT_C2C, 1));
  CK(cufftSetStream(p, s));
#define RUN() (dbl ? cufftExecZ2Z(p, (cufftDoubleComplex *)a, (cufftDoubleComplex *)b, CUFFT_FORWARD) \
                   : cufftExecC2C(p, (cufftComplex *)a, (cufftComplex *)b, CUFFT_FORWARD))
  for (int i = 0; i < 5; i++) CK(RUN());
  CK(cudaStreamSynchronize(s));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float ms[7];
  for (int r = 0; r < 7; r++) {
    CK(cudaEventRecord(e0, s));
    for (int i = 0; i < 20; i++) CK(RUN());
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms[r], e0, e1));
    ms[r] /= 20.0f;
  }
  qsort(ms, 7, sizeof(float), cmp);
  cufftDestroy(p);
  cudaFree(a); cudaFree(b);
  cudaEventDestroy(e0); cudaEventDestroy(e1);
  return ms[3] * 1e3;
}

int main(void) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  printf("{\"peer\":\"c-driver\",\"metric\":\"fft_c2c_2p24_f32_us\",\"value\":%.4f}\n", micros(s, 0));
  printf("{\"peer\":\"c-driver\",\"metric\":\"fft_c2c_2p24_f64_us\",\"value\":%.4f}\n", micros(s, 1));
  return 0;
}
