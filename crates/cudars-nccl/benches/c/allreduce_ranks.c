/* The figures of cudars-nccl's benches/allreduce_ranks.rs, in C against NCCL: one
 * process per GPU, started with torchrun's variables (RANK, WORLD_SIZE,
 * LOCAL_RANK) and NCCL_COMM_ID=host:port, from which every rank's ncclGetUniqueId
 * gives the same id (rank 0's ncclCommInitRank opens the bootstrap root there);
 * a blocking ncclCommInitRank. An out-of-place float sum of 8 KiB, 1 MiB and
 * 256 MiB per rank on stream-ordered pool memory (cudaMallocAsync), as
 * cudars-core allocates. For each size: 3 warm-ups, then the median of 5
 * timings of k all-reduces (k = 1 GiB / size, from 10 to 1000), each timing
 * started after a one-float all-reduce that lines the ranks up. Rank 0 prints
 * JSON lines (peer c-ranks): allreduce_ranks_busbw_<size>_gbps.
 * Build: nvcc -O2 -I$NCCL/include -o allreduce_ranks allreduce_ranks.c -L$NCCL/lib -l:libnccl.so.2 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(x) do { int rc_ = (int)(x); if (rc_) { fprintf(stderr, "%s: %d\n", #x, rc_); exit(1); } } while (0)

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int env_int(const char *name) {
  const char *v = getenv(name);
  if (!v) { fprintf(stderr, "allreduce_ranks: %s is not set\n", name); exit(2); }
  return atoi(v);
}

int main(void) {
  int rank = env_int("RANK"), n = env_int("WORLD_SIZE"), local = env_int("LOCAL_RANK");
  if (!getenv("NCCL_COMM_ID")) { fprintf(stderr, "allreduce_ranks: NCCL_COMM_ID is not set\n"); return 2; }
  int devices = 0;
  CK(cudaGetDeviceCount(&devices));
  CK(cudaSetDevice(devices == 1 ? 0 : local));
  ncclUniqueId id;
  CK(ncclGetUniqueId(&id));
  ncclComm_t comm;
  CK(ncclCommInitRank(&comm, n, id, rank));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  float *flag;
  CK(cudaMallocAsync((void **)&flag, 4, s));
  CK(cudaMemsetAsync(flag, 0, 4, s));
  size_t sizes[] = {8 << 10, 1 << 20, 256 << 20};
  const char *labels[] = {"8k", "1m", "256m"};
  for (int z = 0; z < 3; z++) {
    size_t bytes = sizes[z], len = bytes / 4;
    size_t k_ = ((size_t)1 << 30) / bytes;
    int iters = k_ < 10 ? 10 : k_ > 1000 ? 1000 : (int)k_;
    float *send, *recv;
    CK(cudaMallocAsync((void **)&send, bytes, s));
    CK(cudaMallocAsync((void **)&recv, bytes, s));
    CK(cudaMemsetAsync(send, 0, bytes, s));
    CK(cudaMemsetAsync(recv, 0, bytes, s));
    for (int i = 0; i < 3; i++) CK(ncclAllReduce(send, recv, len, ncclFloat, ncclSum, comm, s));
    double secs[5];
    for (int k = 0; k < 5; k++) {
      CK(ncclAllReduce(flag, flag, 1, ncclFloat, ncclSum, comm, s));
      CK(cudaStreamSynchronize(s));
      double t = now();
      for (int i = 0; i < iters; i++) CK(ncclAllReduce(send, recv, len, ncclFloat, ncclSum, comm, s));
      CK(cudaStreamSynchronize(s));
      secs[k] = (now() - t) / iters;
    }
    qsort(secs, 5, sizeof(double), cmp);
    double algbw = bytes / secs[2] / 1e9;
    if (rank == 0)
      printf("{\"peer\":\"c-ranks\",\"metric\":\"allreduce_ranks_busbw_%s_gbps\",\"value\":%.4f,\"ranks\":%d,\"us\":%.2f}\n",
             labels[z], algbw * 2.0 * (n - 1) / n, n, secs[2] * 1e6);
    CK(cudaFreeAsync(send, s));
    CK(cudaFreeAsync(recv, s));
    CK(cudaStreamSynchronize(s));
  }
  ncclCommDestroy(comm);
  return 0;
}
