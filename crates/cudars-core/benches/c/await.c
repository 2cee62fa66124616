/* The C floor of cudars-core's benches/await.rs (peer c-driver), over the
 * driver API, with the same workload (an empty kernel, 1 block of 1 thread, on a
 * non-blocking stream):
 *   sync_latency_us        cuLaunchKernel + cuStreamSynchronize
 *   event_spin_latency_us  cuLaunchKernel + cuEventRecord + cuEventQuery until
 *                          done (what an await that resolves in its first poll does)
 * 2000 round trips per round, 8 rounds, the best after the first (as await.rs).
 * Build: nvcc -O2 -o await_c await.c -lcuda -lnvrtc */
#include <cuda.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(x) do { CUresult r_ = (x); if (r_) { fprintf(stderr, "%s: %d\n", #x, (int)r_); exit(1); } } while (0)
#define NK(x) do { nvrtcResult r_ = (x); if (r_) { fprintf(stderr, "%s: %d\n", #x, (int)r_); exit(1); } } while (0)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
  CK(cuInit(0));
  CUdevice dev; CK(cuDeviceGet(&dev, 0));
  CUcontext ctx; CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
  int major, minor;
  CK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  char arch[64]; snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", major, minor);
  const char *opts[] = {arch};
  nvrtcProgram p;
  NK(nvrtcCreateProgram(&p, "extern \"C\" __global__ void empty() {}\n", "await.cu", 0, NULL, NULL));
  NK(nvrtcCompileProgram(p, 1, opts));
  size_t len; NK(nvrtcGetCUBINSize(p, &len));
  char *cubin = malloc(len); NK(nvrtcGetCUBIN(p, cubin));
  CUmodule mod; CK(cuModuleLoadData(&mod, cubin));
  CUfunction empty; CK(cuModuleGetFunction(&empty, mod, "empty"));
  CUstream s; CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUevent e; CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  enum { N = 2000 };
  double best_sync = 1e9, best_spin = 1e9;
  for (int round = 0; round < 8; round++) {
    double t0 = now();
    for (int i = 0; i < N; i++) {
      CK(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
      CK(cuStreamSynchronize(s));
    }
    double sync_us = (now() - t0) / N * 1e6;
    t0 = now();
    for (int i = 0; i < N; i++) {
      CK(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
      CK(cuEventRecord(e, s));
      CUresult r;
      while ((r = cuEventQuery(e)) == CUDA_ERROR_NOT_READY) {}
      CK(r);
    }
    double spin_us = (now() - t0) / N * 1e6;
    if (round > 0) {
      if (sync_us < best_sync) best_sync = sync_us;
      if (spin_us < best_spin) best_spin = spin_us;
    }
  }
  printf("{\"peer\":\"c-driver\",\"metric\":\"sync_latency_us\",\"value\":%.4f}\n", best_sync);
  printf("{\"peer\":\"c-driver\",\"metric\":\"event_spin_latency_us\",\"value\":%.4f}\n", best_spin);
  return 0;
}
