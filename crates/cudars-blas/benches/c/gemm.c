/* The GEMM figures of cudars-blas's benches/gemm.rs, in C against cuBLAS:
 * cublasGemmEx at 4096^3, column-major, no transposes, alpha 1, beta 0;
 * f32 (FP32 compute), f16 and bf16 (FP32 accumulation). 5 warm-up calls, then
 * the median of 7 timings of 20 calls between two events. JSON lines, TFLOP/s.
 * Build: nvcc -O2 -o gemm gemm.c -lcublas */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define N 4096
#define CK(x) do { int rc_ = (int)(x); if (rc_) { fprintf(stderr, "%s: %d\n", #x, rc_); exit(1); } } while (0)

static int cmp(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static double tflops(cublasHandle_t h, cudaStream_t s, cudaDataType t, size_t esize) {
  void *a, *b, *c;
  CK(cudaMalloc(&a, (size_t)N * N * esize));
  CK(cudaMalloc(&b, (size_t)N * N * esize));
  CK(cudaMalloc(&c, (size_t)N * N * esize));
  CK(cudaMemsetAsync(a, 0, (size_t)N * N * esize, s));
  CK(cudaMemsetAsync(b, 0, (size_t)N * N * esize, s));
  float one = 1.0f, zero = 0.0f;
  for (int i = 0; i < 5; i++)
    CK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, a, t, N, b, t, N, &zero, c, t, N,
                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  CK(cudaStreamSynchronize(s));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float ms[7];
  for (int r = 0; r < 7; r++) {
    CK(cudaEventRecord(e0, s));
    for (int i = 0; i < 20; i++)
      CK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, a, t, N, b, t, N, &zero, c, t, N,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms[r], e0, e1));
    ms[r] /= 20.0f;
  }
  qsort(ms, 7, sizeof(float), cmp);
  cudaFree(a); cudaFree(b); cudaFree(c);
  cudaEventDestroy(e0); cudaEventDestroy(e1);
  return 2.0 * N * (double)N * N / (ms[3] * 1e-3) / 1e12;
}

int main(void) {
  cudaStream_t s;
  cublasHandle_t h;
  CK(cudaStreamCreate(&s));
  CK(cublasCreate(&h));
  CK(cublasSetStream(h, s));
  printf("{\"peer\":\"c-driver\",\"metric\":\"sgemm_4096_tflops\",\"value\":%.4f}\n", tflops(h, s, CUDA_R_32F, 4));
  printf("{\"peer\":\"c-driver\",\"metric\":\"hgemm_4096_tflops\",\"value\":%.4f}\n", tflops(h, s, CUDA_R_16F, 2));
  printf("{\"peer\":\"c-driver\",\"metric\":\"bf16gemm_4096_tflops\",\"value\":%.4f}\n", tflops(h, s, CUDA_R_16BF, 2));
  cublasDestroy(h);
  return 0;
}
