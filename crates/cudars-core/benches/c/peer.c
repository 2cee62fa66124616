/* The peer-copy figures of cuda-rs's benches/peer.rs, in C against the driver API:
 * cuMemcpyPeerAsync between buffers of GPU 0's and GPU 1's default memory pools,
 * each pool made accessible to the other device, on a stream of the destination's
 * device, synchronised per copy; medians of 21 copies after 3 warm-up copies.
 * Prints nothing (exit 0) with fewer than 2 GPUs.
 * Build: nvcc -O2 -o peer peer.c -lcuda */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { const char *n; cuGetErrorName(r, &n); \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, n); exit(1); } } while (0)

static double now_us(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

static double median_copy_us(CUcontext dc, CUdeviceptr dst, CUcontext sc, CUdeviceptr src, size_t n, CUstream s) {
  double t[21];
  CK(cuCtxSetCurrent(dc));
  for (int i = 0; i < 3; i++) { CK(cuMemcpyPeerAsync(dst, dc, src, sc, n, s)); CK(cuStreamSynchronize(s)); }
  for (int i = 0; i < 21; i++) {
    double t0 = now_us(); CK(cuMemcpyPeerAsync(dst, dc, src, sc, n, s)); CK(cuStreamSynchronize(s)); t[i] = now_us() - t0;
  }
  qsort(t, 21, sizeof t[0], cmp);
  return t[10];
}

int main(void) {
  CK(cuInit(0)); int count; CK(cuDeviceGetCount(&count));
  if (count < 2) { fprintf(stderr, "peer: %d GPU(s), nothing to measure\n", count); return 0; }
  CUdevice d[2]; CUcontext c[2]; CUstream s[2]; CUdeviceptr big[2], small[2];
  const size_t BIG = 256u << 20, SMALL = 64u << 10;
  for (int i = 0; i < 2; i++) {
    CK(cuDeviceGet(&d[i], i)); CK(cuDevicePrimaryCtxRetain(&c[i], d[i])); CK(cuCtxSetCurrent(c[i]));
    CK(cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
    CUmemoryPool pool; CK(cuDeviceGetDefaultMemPool(&pool, d[i]));
    CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, 1 - i}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CK(cuMemPoolSetAccess(pool, &acc, 1));
    CK(cuMemAllocAsync(&big[i], BIG, s[i])); CK(cuMemAllocAsync(&small[i], SMALL, s[i]));
    CK(cuMemsetD8Async(big[i], i + 1, BIG, s[i])); CK(cuStreamSynchronize(s[i]));
  }
  double a = median_copy_us(c[1], big[1], c[0], big[0], BIG, s[1]);
  double b = median_copy_us(c[0], big[0], c[1], big[1], BIG, s[0]);
  double l = median_copy_us(c[1], small[1], c[0], small[0], SMALL, s[1]);
  printf("{\"peer\":\"c-driver\",\"metric\":\"peer_copy_0to1_gbps\",\"value\":%.4f}\n", BIG / a / 1e3);
  printf("{\"peer\":\"c-driver\",\"metric\":\"peer_copy_1to0_gbps\",\"value\":%.4f}\n", BIG / b / 1e3);
  printf("{\"peer\":\"c-driver\",\"metric\":\"peer_copy_64k_us\",\"value\":%.4f}\n", l);
  return 0;
}
