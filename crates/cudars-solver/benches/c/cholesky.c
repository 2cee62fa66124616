/* The Cholesky figures of cudars-solver's benches/cholesky.rs, in C against
 * cuSOLVER: cusolverDnDpotrf of an 8192x8192 double matrix, and
 * cusolverDnSpotrfBatched of 65,536 16x16 float matrices, both lower. Each call
 * restores the matrix from a pristine device copy and reads info back (as a
 * careful C caller does); the workspace and the pointer array are made once.
 * 3 warm-up calls, then the median of 7 host timings of 5 calls. JSON lines,
 * milliseconds per call.
 * Build: nvcc -O2 -o cholesky cholesky.c -lcusolver */
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LARGE 8192
#define SMALL 16
#define BATCH 65536
#define CK(x) do { int rc_ = (int)(x); if (rc_) { fprintf(stderr, "%s: %d\n", #x, rc_); exit(1); } } while (0)

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double spd(size_t n, size_t i, size_t j) {
  return i == j ? (double)n : ((double)((i + j) % 7) - 3.0) * 0.01;
}

typedef void (*call_fn)(void *);

static double median_ms(cudaStream_t s, call_fn call, void *ctx) {
  for (int i = 0; i < 3; i++) call(ctx);
  CK(cudaStreamSynchronize(s));
  double ms[7];
  for (int r = 0; r < 7; r++) {
    double t = now_ms();
    for (int i = 0; i < 5; i++) call(ctx);
    ms[r] = (now_ms() - t) / 5.0;
  }
  qsort(ms, 7, sizeof(double), cmp);
  return ms[3];
}

struct large_ctx { cusolverDnHandle_t h; cudaStream_t s; double *a, *pristine, *work; int lwork; int *info; };

static void large_call(void *p) {
  struct large_ctx *c = p;
  int info = 0;
  CK(cudaMemcpyAsync(c->a, c->pristine, (size_t)LARGE * LARGE * sizeof(double), cudaMemcpyDeviceToDevice, c->s));
  CK(cusolverDnDpotrf(c->h, CUBLAS_FILL_MODE_LOWER, LARGE, c->a, LARGE, c->work, c->lwork, c->info));
  CK(cudaMemcpyAsync(&info, c->info, sizeof(int), cudaMemcpyDeviceToHost, c->s));
  CK(cudaStreamSynchronize(c->s));
  if (info != 0) { fprintf(stderr, "potrf info %d\n", info); exit(1); }
}

struct batched_ctx { cusolverDnHandle_t h; cudaStream_t s; float *a, *pristine; float **ptrs; int *info; int *host_info; };

static void batched_call(void *p) {
  struct batched_ctx *c = p;
  CK(cudaMemcpyAsync(c->a, c->pristine, (size_t)SMALL * SMALL * BATCH * sizeof(float), cudaMemcpyDeviceToDevice, c->s));
  CK(cusolverDnSpotrfBatched(c->h, CUBLAS_FILL_MODE_LOWER, SMALL, c->ptrs, SMALL, c->info, BATCH));
  CK(cudaMemcpyAsync(c->host_info, c->info, BATCH * sizeof(int), cudaMemcpyDeviceToHost, c->s));
  CK(cudaStreamSynchronize(c->s));
  for (int i = 0; i < BATCH; i++) if (c->host_info[i]) { fprintf(stderr, "potrfBatched info[%d] %d\n", i, c->host_info[i]); exit(1); }
}

int main(void) {
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cusolverDnHandle_t h;
  CK(cusolverDnCreate(&h));
  CK(cusolverDnSetStream(h, s));

  struct large_ctx l = { h, s };
  size_t big = (size_t)LARGE * LARGE;
  double *host = malloc(big * sizeof(double));
  for (size_t j = 0; j < LARGE; j++) for (size_t i = 0; i < LARGE; i++) host[i + j * LARGE] = spd(LARGE, i, j);
  CK(cudaMalloc((void **)&l.pristine, big * sizeof(double)));
  CK(cudaMalloc((void **)&l.a, big * sizeof(double)));
  CK(cudaMemcpy(l.pristine, host, big * sizeof(double), cudaMemcpyHostToDevice));
  free(host);
  CK(cusolverDnDpotrf_bufferSize(h, CUBLAS_FILL_MODE_LOWER, LARGE, l.a, LARGE, &l.lwork));
  CK(cudaMalloc((void **)&l.work, (size_t)(l.lwork > 0 ? l.lwork : 1) * sizeof(double)));
  CK(cudaMalloc((void **)&l.info, sizeof(int)));
  printf("{\"peer\":\"c-driver\",\"metric\":\"potrf_8192_f64_ms\",\"value\":%.4f}\n", median_ms(s, large_call, &l));
  cudaFree(l.a); cudaFree(l.pristine); cudaFree(l.work); cudaFree(l.info);

  struct batched_ctx b = { h, s };
  size_t elems = (size_t)SMALL * SMALL * BATCH;
  float *hostf = malloc(elems * sizeof(float));
  for (size_t k = 0; k < BATCH; k++)
    for (size_t j = 0; j < SMALL; j++)
      for (size_t i = 0; i < SMALL; i++) hostf[k * SMALL * SMALL + i + j * SMALL] = (float)spd(SMALL, i, j);
  CK(cudaMalloc((void **)&b.pristine, elems * sizeof(float)));
  CK(cudaMalloc((void **)&b.a, elems * sizeof(float)));
  CK(cudaMemcpy(b.pristine, hostf, elems * sizeof(float), cudaMemcpyHostToDevice));
  free(hostf);
  float **hptrs = malloc(BATCH * sizeof(float *));
  for (size_t k = 0; k < BATCH; k++) hptrs[k] = b.a + k * SMALL * SMALL;
  CK(cudaMalloc((void **)&b.ptrs, BATCH * sizeof(float *)));
  CK(cudaMemcpy(b.ptrs, hptrs, BATCH * sizeof(float *), cudaMemcpyHostToDevice));
  free(hptrs);
  CK(cudaMalloc((void **)&b.info, BATCH * sizeof(int)));
  b.host_info = malloc(BATCH * sizeof(int));
  printf("{\"peer\":\"c-driver\",\"metric\":\"potrf_batched_16x16x65536_f32_ms\",\"value\":%.4f}\n", median_ms(s, batched_call, &b));
  cudaFree(b.a); cudaFree(b.pristine); cudaFree(b.ptrs); cudaFree(b.info); free(b.host_info);

  cusolverDnDestroy(h);
  cudaStreamDestroy(s);
  return 0;
}
