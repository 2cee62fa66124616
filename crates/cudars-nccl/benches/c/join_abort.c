/* The C reference for cudars-nccl's tests/join_failures.rs: what NCCL itself keeps
 * of the GPU's memory when a join times out and is aborted. Rank 0 of 2, alone
 * (NCCL_COMM_ID=host:port must be set: its bootstrap root opens there and waits for
 * rank 1, who never comes), joins a non-blocking communicator
 * (ncclCommInitRankConfig, blocking = 0), polls ncclCommGetAsyncError for 3 s,
 * then ncclCommAbort: five times, as each rank process of the Rust test does. The
 * first attempt pays NCCL's once-per-process set-up; the device's free memory
 * (cudaMemGetInfo) is counted before the other four and after each, 3 s allowed
 * for it to come back. Prints one line:
 *   C_JOIN_ABORT timeouts=T leaked=BYTES steps=B1,B2,B3,B4 nccl=MAJOR.MINOR.PATCH
 * Measured on an H100 and on four H200s with NCCL 2.28.9 (CUDA 13.0, driver 580):
 * 2 MiB (one driver granule) after every second attempt, with or without
 * NCCL_CUMEM_ENABLE, and still after 6 s: about 1 MiB per aborted join.
 * Build: nvcc -O2 -I$NCCL/include -o join_abort join_abort.c -L$NCCL/lib -l:libnccl.so.2 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CK(x) do { int rc_ = (int)(x); if (rc_) { fprintf(stderr, "%s: %d\n", #x, rc_); exit(1); } } while (0)
enum { MEASURED = 4 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static long long free_bytes(void) {
  size_t f, t;
  CK(cudaMemGetInfo(&f, &t));
  return (long long)f;
}

/* One join that times out after 3 s and is aborted; 1 when it timed out. */
static int join_and_abort(void) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclUniqueId id;
  CK(ncclGetUniqueId(&id));
  ncclComm_t comm = NULL;
  ncclResult_t st = ncclCommInitRankConfig(&comm, 2, id, 0, &config);
  double t0 = now();
  while (st == ncclInProgress && now() - t0 < 3.0) {
    usleep(1000);
    if (ncclCommGetAsyncError(comm, &st) != ncclSuccess) break;
  }
  if (comm) ncclCommAbort(comm);
  return st == ncclInProgress;
}

int main(void) {
  if (!getenv("NCCL_COMM_ID")) {
    fprintf(stderr, "join_abort: set NCCL_COMM_ID=host:port (a port nobody listens on)\n");
    return 2;
  }
  CK(cudaSetDevice(0));
  CK(cudaFree(0));
  join_and_abort();
  long long base = free_bytes(), before = base;
  int timeouts = 0;
  char steps[256] = "";
  for (int i = 0; i < MEASURED; i++) {
    timeouts += join_and_abort();
    long long after = free_bytes();
    for (double t0 = now(); after < before && now() - t0 < 3.0; after = free_bytes()) usleep(20000);
    snprintf(steps + strlen(steps), sizeof steps - strlen(steps), "%s%lld", i ? "," : "", before - after);
    before = after;
  }
  int v;
  CK(ncclGetVersion(&v));
  printf("C_JOIN_ABORT timeouts=%d leaked=%lld steps=%s nccl=%d.%d.%d\n", timeouts, base - before, steps,
         v / 10000, v / 100 % 100, v % 100);
  return 0;
}
