#!/usr/bin/env bash
# Runs the cuda-rs benchmarks beside the C driver API (and, when given, the
# Python cuda.core peer), interleaved for several rounds, then prints a table of
# medians and ratios to C. Runs in the folder `cargo xtask package-tests` made.
#
# usage: bench-rounds.sh [ROUNDS] [PEERS_DIR]
#   PEERS_DIR may hold bench.c and bench_cuda_core.py (the peer benchmarks);
#   c/graph.c, c/hot.c, c/peer.c, c/gemm.c, c/fft.c, c/cholesky.c, c/allreduce.c and c/threads.c (cuda-rs's own C graph,
#   hot-path (typed launch, typed allocation, event, 4 KiB copy), peer-copy, cuBLAS GEMM, cuFFT, cuSOLVER Cholesky, NCCL all-reduce and thread-scaling benchmarks),
#   c/threads_cuda_core.py (Python cuda.core with threads) and c/gemm_cupy.py (CuPy's matmul) are in the package.
# BENCH_PIN pins the single-threaded programs (the thread-scaling ones stay free):
#   BENCH_PIN=1     on GPU 0's NUMA-local CPUs (taskset), for hosts of several sockets;
#   BENCH_PIN=LIST  on the CPUs of LIST (taskset -c LIST), for example 3: one core,
#                   so that neither side migrates between cores mid-timing.
# The rounds alternate which side runs first (C, then cuda-rs in odd rounds).
# Measured on an H100 (issue 33, 9 rounds each, one machine): pinned to one core, the
# per-round ratios of launch_host_us spread 0.88-1.10, unpinned 0.84-1.16. The single
# 100,000-allocation timing (alloc_free_async_us) stays bimodal either way: the raw
# bindings, making exactly C's calls, gave 0.54-1.83 pinned and 0.55-1.91 unpinned.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rounds="${1:-3}"
peers="${2:-}"
out="${BENCH_OUT:-$(mktemp -d)}"
mkdir -p "$out"
tmp="$(mktemp -d)"
cbench=""; cgraph=""; chot=""; cpeer=""; cgemm=""; cfft=""; ccholesky=""; callreduce=""; cthreads=""
# NVLink multicast (NVLS) stays off: on shared multi-GPU hosts it can take the GPUs down.
export NCCL_NVLS_ENABLE=0
if command -v nvcc >/dev/null; then
  if [ -n "$peers" ] && [ -f "$peers/bench.c" ]; then
    nvcc -O2 -o "$tmp/cbench" "$peers/bench.c" -lcuda -lnvrtc && cbench="$tmp/cbench"
  fi
  nvcc -O2 -o "$tmp/cgraph" "$here/c/graph.c" -lcuda -lnvrtc && cgraph="$tmp/cgraph"
  nvcc -O2 -o "$tmp/chot" "$here/c/hot.c" -lcuda -lnvrtc && chot="$tmp/chot"
  nvcc -O2 -o "$tmp/cpeer" "$here/c/peer.c" -lcuda && cpeer="$tmp/cpeer"
  nvcc -O2 -o "$tmp/cgemm" "$here/c/gemm.c" -lcublas && cgemm="$tmp/cgemm"
  nvcc -O2 -o "$tmp/cfft" "$here/c/fft.c" -lcufft && cfft="$tmp/cfft"
  nvcc -O2 -o "$tmp/ccholesky" "$here/c/cholesky.c" -lcusolver && ccholesky="$tmp/ccholesky"
  nvcc -O2 -o "$tmp/cthreads" "$here/c/threads.c" -lcuda -lnvrtc -lpthread && cthreads="$tmp/cthreads"
  # NCCL from the Python environment's nvidia-nccl wheel, when it has one.
  nccl_dir=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)
  if [ -n "$nccl_dir" ] && [ -f "$nccl_dir/include/nccl.h" ]; then
    nvcc -O2 -I"$nccl_dir/include" -o "$tmp/callreduce" "$here/c/allreduce.c" -L"$nccl_dir/lib" \
      -l:libnccl.so.2 -Xlinker -rpath="$nccl_dir/lib" && callreduce="$tmp/callreduce"
  fi
else
  echo "bench-rounds: nvcc not found: no C figures" >&2
fi
py=""
if [ -n "$peers" ] && [ -f "$peers/bench_cuda_core.py" ] && python3 -c "import cuda.core" 2>/dev/null; then
  py="$peers/bench_cuda_core.py"
fi
pin=""
if [ "${BENCH_PIN:-0}" = 1 ] && command -v taskset >/dev/null && command -v nvidia-smi >/dev/null; then
  bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader -i 0 | tr 'A-Z' 'a-z' | sed 's/^0000//')
  cpus=$(cat "/sys/bus/pci/devices/$bus/local_cpulist" 2>/dev/null)
  [ -n "$cpus" ] && pin="taskset -c $cpus" && echo "bench-rounds: pinned to CPUs $cpus" >&2
elif [ -n "${BENCH_PIN:-}" ] && [ "${BENCH_PIN}" != 0 ] && command -v taskset >/dev/null; then
  pin="taskset -c $BENCH_PIN" && echo "bench-rounds: pinned to CPUs $BENCH_PIN" >&2
fi
c_side() {
  [ -n "$cbench" ] && $pin "$cbench"
  [ -n "$cgraph" ] && $pin "$cgraph"
  [ -n "$chot" ] && $pin "$chot"
  # Peer copies: with fewer than two GPUs both sides print nothing.
  [ -n "$cpeer" ] && $pin "$cpeer"
  [ -n "$cgemm" ] && $pin "$cgemm"
  [ -n "$cfft" ] && $pin "$cfft"
  [ -n "$ccholesky" ] && $pin "$ccholesky"
  [ -n "$callreduce" ] && "$callreduce"
  [ -n "$cthreads" ] && "$cthreads"
}
rs_side() {
  for b in "$here"/bin/*--driver "$here"/bin/*--core "$here"/bin/*--peer "$here"/bin/*--gemm "$here"/bin/*--fft "$here"/bin/*--cholesky "$here"/bin/*--await "$here"/bin/*--nvtx; do [ -x "$b" ] && $pin "$b" --bench; done
  for b in "$here"/bin/*--allreduce "$here"/bin/*--threads; do [ -x "$b" ] && "$b" --bench; done
}
for r in $(seq "$rounds"); do
  echo "round $r" >&2
  if [ $((r % 2)) = 1 ]; then c_side; rs_side; else rs_side; c_side; fi
  python3 -c "import cupy" 2>/dev/null && python3 "$here/c/gemm_cupy.py"
  python3 -c "import cuda.core" 2>/dev/null && python3 "$here/c/threads_cuda_core.py"
  [ -n "$py" ] && $pin python3 "$py"
done > "$out/bench.jsonl" 2>"$out/bench.err"
"$here"/bin/*--pathfinder --bench > "$out/pathfinder.jsonl" 2>>"$out/bench.err"
python3 "$here/bench_table.py" --per-round "$out/bench.jsonl"
echo
python3 "$here/bench_table.py" "$out/pathfinder.jsonl"
echo "raw figures: $out" >&2
