/* The all-reduce figures of cudars-nccl's benches/allreduce.rs, in C against NCCL:
 * one process drives every GPU (ncclCommInitAll), an out-of-place float sum of
 * 8 KiB to 1 GiB per rank, the ranks' calls between ncclGroupStart and
 * ncclGroupEnd, on stream-ordered pool memory (cudaMallocAsync) as cudars-core
 * allocates. For each size: 5 warm-up all-reduces, then the median of 7 timings
 * of k all-reduces (k = 1 GiB / size, from 20 to 2000; wall clock, to every
 * stream's end). JSON lines,
 * GB/s: allreduce_algbw_<size>_gbps and, with two or more GPUs,
 * allreduce_busbw_<size>_gbps (algbw * 2(n-1)/n).
 * Build: nvcc -O2 -I$NCCL/include -o allreduce allreduce.c -L$NCCL/lib -l:libnccl.so.2 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(x) do { int rc_ = (int)(x); if (rc_) { fprintf(stderr, "%s: %d\n", #x, rc_); exit(1); } } while (0)
#define MAXDEV 16

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) return 0;
  if (n > MAXDEV) n = MAXDEV;
  ncclComm_t comms[MAXDEV];
  cudaStream_t s[MAXDEV];
  CK(ncclCommInitAll(comms, n, NULL));
  for (int r = 0; r < n; r++) {
    CK(cudaSetDevice(r));
    CK(cudaStreamCreate(&s[r]));
  }
  size_t sizes[] = {8 << 10, 64 << 10, 512 << 10, 4 << 20, 32 << 20, 256 << 20, (size_t)1 << 30};
  const char *labels[] = {"8k", "64k", "512k", "4m", "32m", "256m", "1g"};
  for (int z = 0; z < 7; z++) {
    size_t bytes = sizes[z], len = bytes / 4;
    size_t k_ = ((size_t)1 << 30) / bytes;
    int iters = k_ < 20 ? 20 : k_ > 2000 ? 2000 : (int)k_;
    float *send[MAXDEV], *recv[MAXDEV];
    for (int r = 0; r < n; r++) {
      CK(cudaSetDevice(r));
      CK(cudaMallocAsync((void **)&send[r], bytes, s[r]));
      CK(cudaMallocAsync((void **)&recv[r], bytes, s[r]));
      CK(cudaMemsetAsync(send[r], 0, bytes, s[r]));
      CK(cudaMemsetAsync(recv[r], 0, bytes, s[r]));
    }
#define RUN() do { \
    CK(ncclGroupStart()); \
    for (int r = 0; r < n; r++) \
      CK(ncclAllReduce(send[r], recv[r], len, ncclFloat, ncclSum, comms[r], s[r])); \
    CK(ncclGroupEnd()); } while (0)
    for (int i = 0; i < 5; i++) RUN();
    for (int r = 0; r < n; r++) CK(cudaStreamSynchronize(s[r]));
    double secs[7];
    for (int k = 0; k < 7; k++) {
      double t = now();
      for (int i = 0; i < iters; i++) RUN();
      for (int r = 0; r < n; r++) CK(cudaStreamSynchronize(s[r]));
      secs[k] = (now() - t) / iters;
    }
    qsort(secs, 7, sizeof(double), cmp);
    double algbw = bytes / secs[3] / 1e9;
    printf("{\"peer\":\"c-driver\",\"metric\":\"allreduce_algbw_%s_gbps\",\"value\":%.4f}\n", labels[z], algbw);
    if (n >= 2)
      printf("{\"peer\":\"c-driver\",\"metric\":\"allreduce_busbw_%s_gbps\",\"value\":%.4f}\n", labels[z],
             algbw * 2.0 * (n - 1) / n);
    for (int r = 0; r < n; r++) {
      CK(cudaSetDevice(r));
      CK(cudaFreeAsync(send[r], s[r]));
      CK(cudaFreeAsync(recv[r], s[r]));
      CK(cudaStreamSynchronize(s[r]));
    }
  }
  for (int r = 0; r < n; r++) ncclCommDestroy(comms[r]);
  return 0;
}
