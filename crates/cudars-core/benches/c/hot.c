/* The C counterparts of the rows of cudars-core's benches/core.rs that the
 * peers' bench.c lacks, over the driver API, with the same workloads and
 * metric names (peer c-driver):
 *   launch_typed_host_us       the launch of launch_host_us (C has no typed
 *                              launch: the same cuLaunchKernel, measured again)
 *   alloc_free_async_typed_us  the 1 MiB cuMemAllocAsync + cuMemFreeAsync of
 *                              alloc_free_async_us (DeviceBuffer<T> in Rust)
 *   event_record_query_us      cuEventRecord + cuEventQuery (timing off) on a non-blocking stream
 *   d2d_copy_4k_us             one 4 KiB cuMemcpyAsync between device buffers
 *                              of a pool of their own (cuMemPoolCreate), as
 *                              the Rust side's; d2d_copy_4k_memalloc_us the
 *                              same between cuMemAlloc buffers (C only)
 *   alloc_free_batch_us        the 1 MiB cuMemAllocAsync + cuMemFreeAsync, timed
 *                              in batches as below (the Rust side's
 *                              alloc_free_batch_us and alloc_free_typed_batch_us)
 *   alloc_free_pool_batch_us   the same through cuMemAllocFromPoolAsync on the
 *                              device's default pool, the call cudars-core makes
 * Host time per call: batches of 256 (synchronised after each), median of 400
 * batches, after 2000 calls to warm up; the allocations as bench.c times them.
 * Build: nvcc -O2 -o hot hot.c -lcuda -lnvrtc */
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

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void out(const char *metric, double v) {
  printf("{\"peer\":\"c-driver\",\"metric\":\"%s\",\"value\":%.4f}\n", metric, v);
}

enum { BATCH = 256, REPS = 400 };
static CUstream s;
static CUfunction empty;
static CUdeviceptr buf, src4k, dst4k, msrc4k, mdst4k;
static CUevent ev;
static int zero;

static void op_launch(void) {
  void *args[] = {&buf, &zero};
  CK(cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
}
static void op_event(void) {
  CK(cuEventRecord(ev, s));
  CUresult r = cuEventQuery(ev);
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY) CK(r);
}
static void op_copy(void) { CK(cuMemcpyAsync(dst4k, src4k, 4096, s)); }
static void op_copy_memalloc(void) { CK(cuMemcpyAsync(mdst4k, msrc4k, 4096, s)); }
static CUmemoryPool default_pool;
static void op_alloc_free_pool(void) {
  CUdeviceptr p;
  CK(cuMemAllocFromPoolAsync(&p, 1 << 20, default_pool, s));
  CK(cuMemFreeAsync(p, s));
}
static void op_alloc_free(void) {
  CUdeviceptr p;
  CK(cuMemAllocAsync(&p, 1 << 20, s));
  CK(cuMemFreeAsync(p, s));
}

static double batches(void (*op)(void)) {
  static double per[REPS];
  for (int i = 0; i < 2000; i++) op();
  CK(cuStreamSynchronize(s));
  for (int r = 0; r < REPS; r++) {
    double t0 = now();
    for (int i = 0; i < BATCH; i++) op();
    per[r] = (now() - t0) / BATCH * 1e6;
    CK(cuStreamSynchronize(s));
  }
  qsort(per, REPS, sizeof(double), cmp);
  return per[REPS / 2];
}

int main(void) {
  CK(cuInit(0));
  CUdevice dev;
  CK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  int major, minor;
  CK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  char arch[32];
  snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", major, minor);
  const char *opts[] = {arch};
  nvrtcProgram prog;
  NK(nvrtcCreateProgram(&prog, "extern \"C\" __global__ void empty(float* p, int n) {}\n", "e.cu", 0, NULL, NULL));
  NK(nvrtcCompileProgram(prog, 1, opts));
  size_t n;
  NK(nvrtcGetCUBINSize(prog, &n));
  char *cubin = malloc(n);
  NK(nvrtcGetCUBIN(prog, cubin));
  CUmodule mod;
  CK(cuModuleLoadData(&mod, cubin));
  CK(cuModuleGetFunction(&empty, mod, "empty"));
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CK(cuMemAlloc(&buf, 1 << 20));
  /* Outside the default pool, as bench.c's buffer: live pool allocations
   * slow the timed alloc + free down. */
  CK(cuMemAlloc(&msrc4k, 4096));
  CK(cuMemAlloc(&mdst4k, 4096));
  /* The copy's buffers as the Rust side allocates them: from a pool of their
   * own, so that the default pool holds nothing while allocations are timed. */
  CUmemPoolProps props = {0};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool side;
  CK(cuMemPoolCreate(&side, &props));
  CK(cuMemAllocFromPoolAsync(&src4k, 4096, side, s));
  CK(cuMemAllocFromPoolAsync(&dst4k, 4096, side, s));
  CK(cuStreamSynchronize(s));
  /* The Rust side records an EventOptions::default() event: timing off. */
  CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));

  out("launch_typed_host_us", batches(op_launch));
  CUdeviceptr p;
  for (int i = 0; i < 1000; i++) { CK(cuMemAllocAsync(&p, 1 << 20, s)); CK(cuMemFreeAsync(p, s)); }
  CK(cuStreamSynchronize(s));
  int A = 100000;
  double t0 = now();
  for (int i = 0; i < A; i++) { CK(cuMemAllocAsync(&p, 1 << 20, s)); CK(cuMemFreeAsync(p, s)); }
  CK(cuStreamSynchronize(s));
  out("alloc_free_async_typed_us", (now() - t0) / A * 1e6);
  out("alloc_free_batch_us", batches(op_alloc_free));
  CK(cuDeviceGetDefaultMemPool(&default_pool, dev));
  out("alloc_free_pool_batch_us", batches(op_alloc_free_pool));
  out("event_record_query_us", batches(op_event));
  out("d2d_copy_4k_us", batches(op_copy));
  out("d2d_copy_4k_memalloc_us", batches(op_copy_memalloc));
  return 0;
}
