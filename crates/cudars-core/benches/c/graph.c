/* The graph figure of cuda-rs's benches/core.rs, in C against the driver API:
 * a captured graph of 100 empty kernels launched and synchronised
 * (graph_launch_us), against the same 100 kernels launched one by one
 * (launch_100_us). Build: nvcc -O2 -o graph graph.c -lcuda -lnvrtc */
#include <cuda.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { const char *n; cuGetErrorName(r, &n); \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, n); exit(1); } } while (0)

static double now_us(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

int main(void) {
  const char *src = "extern \"C\" __global__ void empty(float* p, int n) {}";
  CK(cuInit(0)); CUdevice dev; CK(cuDeviceGet(&dev, 0));
  CUcontext ctx; CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
  int maj, min;
  CK(cuDeviceGetAttribute(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CK(cuDeviceGetAttribute(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  char arch[32]; snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", maj, min);
  const char *opts[] = {arch};
  nvrtcProgram p; nvrtcCreateProgram(&p, src, "g.cu", 0, NULL, NULL);
  if (nvrtcCompileProgram(p, 1, opts) != NVRTC_SUCCESS) { fprintf(stderr, "nvrtc failed\n"); return 1; }
  size_t n; nvrtcGetCUBINSize(p, &n); char *cubin = malloc(n); nvrtcGetCUBIN(p, cubin); nvrtcDestroyProgram(&p);
  CUmodule m; CK(cuModuleLoadData(&m, cubin)); CUfunction f; CK(cuModuleGetFunction(&f, m, "empty"));
  CUstream s; CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr buf; CK(cuMemAlloc(&buf, 1 << 20)); int zero = 0; void *args[] = {&buf, &zero};
  CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  for (int i = 0; i < 100; i++) CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
  CUgraph g; CK(cuStreamEndCapture(s, &g));
  CUgraphExec e; CK(cuGraphInstantiate(&e, g, 0)); CK(cuGraphUpload(e, s));
  static double t[200];
  for (int i = 0; i < 20; i++) { CK(cuGraphLaunch(e, s)); CK(cuStreamSynchronize(s)); }
  for (int i = 0; i < 200; i++) { double t0 = now_us(); CK(cuGraphLaunch(e, s)); CK(cuStreamSynchronize(s)); t[i] = now_us() - t0; }
  qsort(t, 200, sizeof t[0], cmp);
  printf("{\"peer\":\"c-driver\",\"metric\":\"graph_launch_us\",\"value\":%.4f}\n", t[100]);
  for (int i = 0; i < 20; i++) { for (int k = 0; k < 100; k++) CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL)); CK(cuStreamSynchronize(s)); }
  for (int i = 0; i < 200; i++) {
    double t0 = now_us();
    for (int k = 0; k < 100; k++) CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
    CK(cuStreamSynchronize(s)); t[i] = now_us() - t0;
  }
  qsort(t, 200, sizeof t[0], cmp);
  printf("{\"peer\":\"c-driver\",\"metric\":\"launch_100_us\",\"value\":%.4f}\n", t[100]);
  return 0;
}
