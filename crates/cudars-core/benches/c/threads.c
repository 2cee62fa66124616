/* The thread-scaling figures of cudars-core's benches/threads.rs, in C with
 * pthreads over the driver API: 1, 2, 4, 8 and 16 threads, each with its own
 * stream in the primary context, launch an empty kernel (one block of 32, a
 * pointer and an int) 10000 times, then wait for their stream; the time runs
 * from releasing the threads together to the last one done. Median of 5 rounds.
 * JSON lines: launch_mt_<n>_mlaunch_per_s (millions of launches per second).
 * THREADS_LIBRARY=1 loads the kernel as cudars-core does, through the library API
 * (cuLibraryLoadData, cuLibraryGetKernel, cuKernelGetFunction), instead of
 * cuModuleLoadData/cuModuleGetFunction, and prints its lines as peer c-library.
 * Build: nvcc -O2 -o threads threads.c -lcuda -lnvrtc -lpthread */
#include <cuda.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(x) do { CUresult r_ = (x); if (r_) { fprintf(stderr, "%s: %d\n", #x, (int)r_); exit(1); } } while (0)
#define NK(x) do { nvrtcResult r_ = (x); if (r_) { fprintf(stderr, "%s: %d\n", #x, (int)r_); exit(1); } } while (0)
#define PER_THREAD 10000

static CUcontext ctx;
static CUfunction empty;
static pthread_barrier_t start;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void *worker(void *arg) {
  (void)arg;
  CK(cuCtxSetCurrent(ctx));
  CUstream s;
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr p;
  CK(cuMemAllocAsync(&p, 1024, s));
  CK(cuStreamSynchronize(s));
  int zero = 0;
  void *args[] = {&p, &zero};
  pthread_barrier_wait(&start);
  for (int i = 0; i < PER_THREAD; i++) CK(cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
  CK(cuStreamSynchronize(s));
  CK(cuMemFreeAsync(p, s));
  CK(cuStreamSynchronize(s));
  CK(cuStreamDestroy(s));
  return NULL;
}

int main(void) {
  CK(cuInit(0));
  CUdevice dev;
  CK(cuDeviceGet(&dev, 0));
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
  const char *peer = "c-driver";
  if (getenv("THREADS_LIBRARY")) {
    CUlibrary lib;
    CUkernel k;
    CK(cuLibraryLoadData(&lib, cubin, NULL, NULL, 0, NULL, NULL, 0));
    CK(cuLibraryGetKernel(&k, lib, "empty"));
    CK(cuKernelGetFunction(&empty, k));
    peer = "c-library";
  } else {
    CUmodule mod;
    CK(cuModuleLoadData(&mod, cubin));
    CK(cuModuleGetFunction(&empty, mod, "empty"));
  }
  int counts[] = {1, 2, 4, 8, 16};
  for (int c = 0; c < 5; c++) {
    int t = counts[c];
    double rounds[5];
    for (int r = 0; r < 5; r++) {
      pthread_t th[16];
      pthread_barrier_init(&start, NULL, t + 1);
      for (int i = 0; i < t; i++) pthread_create(&th[i], NULL, worker, NULL);
      pthread_barrier_wait(&start);
      double t0 = now();
      for (int i = 0; i < t; i++) pthread_join(th[i], NULL);
      rounds[r] = (double)t * PER_THREAD / (now() - t0) / 1e6;
      pthread_barrier_destroy(&start);
    }
    qsort(rounds, 5, sizeof(double), cmp);
    printf("{\"peer\":\"%s\",\"metric\":\"launch_mt_%d_mlaunch_per_s\",\"value\":%.4f}\n", peer, t, rounds[2]);
  }
  return 0;
}
