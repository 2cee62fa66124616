#!/usr/bin/env bash
# run-launchers.sh [--bench] [--no-netns]: cudars-nccl's multi-process runs, as the GPU
# package ships them (`cargo xtask package-tests` copies this script beside bin/).
#
# Every run starts N processes (N = NRANKS, default: every GPU, at least 2 wanted)
# with the variables a launcher would set; no launcher is needed or used:
#   torchrun   RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT
#   slurm      SLURM_PROCID SLURM_NTASKS SLURM_LOCALID SLURM_JOB_ID SLURM_STEP_NODELIST
#              (the port is derived from the job id: 20000 + SLURM_JOB_ID % 10000)
#   ompi       OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK/_LOCAL_SIZE MASTER_ADDR MASTER_PORT
#   pmi        PMI_RANK PMI_SIZE MPI_LOCALRANKID MPI_LOCALNRANKS MASTER_ADDR MASTER_PORT
# and, for each style,
#   - the `world` test (cudars-nccl--test-world: join, every collective checked), with
#     NCCL_COMM_ID set as a launch script would (a test cannot set it safely);
#   - the `data_parallel_mlp` example, which derives NCCL_COMM_ID from the variables.
# First over the machine's own links (NVLink/P2P where the GPUs have them), then with
# NCCL on its socket transport (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1),
# each rank in a network namespace of its own joined by a veth pair (10.77.0.x/24):
# the stand-in for N machines. Without root or `ip netns`, the socket runs go over
# loopback in one namespace, and the script says so. Then the join-failure tests
# (cudars-nccl--test-join_failures: a rank that never joins, a wrong address, sizes
# that disagree). NCCL_DEBUG=INFO runs print the transport NCCL chose ("via ...").
#
# --bench: all-reduce bus bandwidth (8 KiB, 1 MiB, 256 MiB per rank) over both
# transports, cuda-rs (cudars-nccl--allreduce_ranks) beside the same calls in C
# (c/allreduce_ranks.c, built here with nvcc against the NCCL wheel's headers),
# two rounds each, interleaved.
# NVLINK_STYLES, SOCKET_STYLES, MLP_STYLES (launcher styles), BENCH_MODES, BENCH_ROUNDS
# narrow a run. `ip` comes from the system or, where it has none (the lent GPU machines),
# from iproute/ beside this script (Debian's iproute2 and its libraries, which
# `cargo xtask package-tests` puts there beside cudars-nccl's tests).
# The last line is "N passed, N failed"; the exit code is non-zero when anything failed.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$here/bin"
export CUDA_TEST_REQUIRE_GPU=1
# NVLink multicast (NVLS) stays off: on shared multi-GPU hosts it can take the GPUs down.
export NCCL_NVLS_ENABLE=0
bench=0; netns=1
for a in "$@"; do
  case "$a" in
    --bench) bench=1 ;;
    --no-netns) netns=0 ;;
    *) echo "usage: run-launchers.sh [--bench] [--no-netns]" >&2; exit 2 ;;
  esac
done
# What runs (space-separated; the defaults run everything).
nvlink_styles=${NVLINK_STYLES:-torchrun slurm ompi pmi}
socket_styles=${SOCKET_STYLES:-torchrun slurm ompi pmi}
mlp_styles=${MLP_STYLES:-torchrun slurm ompi pmi}
bench_modes=${BENCH_MODES:-nvlink socket}
bench_rounds=${BENCH_ROUNDS:-2}
# `ip` from the system, else from the package's iproute/ (Debian's iproute2 and
# the libraries it needs, for machines without it), only for `ip` itself.
orig_ldp="${LD_LIBRARY_PATH-}"
if ! command -v ip >/dev/null 2>&1 && [ -x "$here/iproute/ip" ]; then
  ip() { LD_LIBRARY_PATH="$here/iproute/lib" "$here/iproute/ip" "$@"; }
  echo "run-launchers.sh: using $here/iproute/ip"
fi
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
n=${NRANKS:-$gpus}
[ "$n" -ge 1 ] || { echo "run-launchers.sh: no GPU"; exit 1; }
logdir="${CUDA_RS_TEST_LOGS:-$(mktemp -d)}"
mkdir -p "$logdir"
pass=0; fail=0
port=$((21000 + RANDOM % 8000))
echo "run-launchers.sh: $n rank(s) on $gpus GPU(s); logs in $logdir"

# The variables of launcher STYLE for rank R of N meeting at ADDR:PORT.
style_env() {
  local style=$1 r=$2 n=$3 addr=$4 p=$5
  case "$style" in
    torchrun) echo "RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n MASTER_ADDR=$addr MASTER_PORT=$p" ;;
    slurm) echo "SLURM_PROCID=$r SLURM_NTASKS=$n SLURM_LOCALID=$r SLURM_JOB_ID=$((p - 20000)) SLURM_STEP_NODELIST=$addr" ;;
    ompi) echo "OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=$n OMPI_COMM_WORLD_LOCAL_RANK=$r OMPI_COMM_WORLD_LOCAL_SIZE=$n MASTER_ADDR=$addr MASTER_PORT=$p" ;;
    pmi) echo "PMI_RANK=$r PMI_SIZE=$n MPI_LOCALRANKID=$r MPI_LOCALNRANKS=$n MASTER_ADDR=$addr MASTER_PORT=$p" ;;
  esac
}

# Network namespaces crN with 10.77.0.(N+1): two ranks are joined by one veth
# pair, more by veth pairs on a bridge in the root namespace.
ns_ok=0
setup_netns() {
  [ "$netns" -eq 1 ] || return 1
  command -v ip >/dev/null 2>&1 || { echo "note: no 'ip' command (nor iproute/ip in the package)"; return 1; }
  [ "$(id -u)" -eq 0 ] || { echo "note: not root"; return 1; }
  local i
  for i in $(seq 0 $((n - 1))); do ip netns del "cr$i" 2>/dev/null; done
  ip link del cr-br 2>/dev/null
  # Each step says what failed, for the note.
  try() { "$@" 2>"$logdir/netns.err" || { echo "note: '$*' failed: $(cat "$logdir/netns.err")"; return 1; }; }
  if [ "$n" -eq 2 ]; then
    try ip netns add cr0 && try ip netns add cr1 &&
    try ip link add cr-v0 type veth peer name cr-v1 &&
    try ip link set cr-v0 netns cr0 && try ip link set cr-v1 netns cr1 &&
    try ip -n cr0 addr add 10.77.0.1/24 dev cr-v0 && try ip -n cr1 addr add 10.77.0.2/24 dev cr-v1 &&
    try ip -n cr0 link set cr-v0 up && try ip -n cr1 link set cr-v1 up &&
    try ip -n cr0 link set lo up && try ip -n cr1 link set lo up || return 1
  else
    try ip link add cr-br type bridge && try ip link set cr-br up || return 1
    for i in $(seq 0 $((n - 1))); do
      try ip netns add "cr$i" && try ip link add "cr-v$i" type veth peer name "cr-b$i" &&
      try ip link set "cr-v$i" netns "cr$i" && try ip link set "cr-b$i" master cr-br && try ip link set "cr-b$i" up &&
      try ip -n "cr$i" addr add "10.77.0.$((i + 1))/24" dev "cr-v$i" &&
      try ip -n "cr$i" link set "cr-v$i" up && try ip -n "cr$i" link set lo up || return 1
    done
  fi
  if command -v ping >/dev/null 2>&1; then
    ip netns exec cr1 ping -c 1 -W 2 10.77.0.1 >/dev/null 2>&1 || { echo "note: the namespaces cannot reach each other"; return 1; }
  fi
  return 0
}
teardown_netns() {
  local i
  for i in $(seq 0 $((n - 1))); do ip netns del "cr$i" 2>/dev/null; done
  ip link del cr-br 2>/dev/null
  return 0
}

# run_ranks NAME STYLE MODE(nvlink|socket) COMM_ID(yes|no) PROGRAM [ARGS...]
# Starts N ranks, waits (120 s at most), counts one pass when every rank exits 0.
run_ranks() {
  local name=$1 style=$2 mode=$3 with_id=$4; shift 4
  local addr=127.0.0.1 pids=() r rc ok=1 t0 t1
  port=$((port + 1))
  if [ "$mode" = socket ] && [ "$ns_ok" -eq 1 ]; then addr=10.77.0.1; fi
  t0=$(date +%s%N)
  for r in $(seq 0 $((n - 1))); do
    local envs prefix=()
    envs="$(style_env "$style" "$r" "$n" "$addr" "$port")"
    [ "$with_id" = yes ] && envs="$envs NCCL_COMM_ID=$addr:$port"
    if [ "$mode" = socket ]; then
      envs="$envs NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_NET=Socket"
      [ "$ns_ok" -eq 1 ] && prefix=(ip netns exec "cr$r" env "LD_LIBRARY_PATH=$orig_ldp")
    fi
    # shellcheck disable=SC2086
    "${prefix[@]}" env -u NCCL_COMM_ID $envs ${EXTRA_ENV:-} timeout 120 "$@" \
      >"$logdir/$name.rank$r.log" 2>&1 &
    pids+=($!)
  done
  for r in "${!pids[@]}"; do
    wait "${pids[$r]}"; rc=$?
    [ $rc -eq 0 ] || { ok=0; echo "---- $name rank $r (exit $rc) ----"; tail -n 25 "$logdir/$name.rank$r.log"; }
  done
  t1=$(date +%s%N)
  if [ $ok -eq 1 ]; then pass=$((pass + 1)); st=ok; else fail=$((fail + 1)); st=FAIL; fi
  printf '%-44s %-4s %6d ms\n' "$name" "$st" "$(( (t1 - t0) / 1000000 ))"
}

matrix() {
  local mode=$1 styles=$2 style
  for style in $styles; do
    run_ranks "world-$mode-$style" "$style" "$mode" yes "$bin/cudars-nccl--test-world" --nocapture --test-threads=1
  done
  for style in $mlp_styles; do
    run_ranks "mlp-$mode-$style" "$style" "$mode" no "$bin/cudars-nccl--example-data_parallel_mlp" 50
  done
  grep -h "samples/s\|largest difference" "$logdir"/mlp-"$mode"-*.rank*.log
  # Which transport NCCL chose, in its own words.
  EXTRA_ENV="NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,P2P" run_ranks "world-$mode-debug" torchrun "$mode" yes \
    "$bin/cudars-nccl--test-world" --nocapture --test-threads=1
  grep -hoE "Channel 00/0 : [0-9]+\[[0-9]+\] -> [0-9]+\[[0-9]+\].*" "$logdir/world-$mode-debug.rank0.log" | sort -u | head -2
  grep -hoE "NET/Socket : Using .*|Using network Socket" "$logdir/world-$mode-debug.rank0.log" | head -1
}

echo "== over the machine's links (NVLink/P2P) =="
matrix nvlink "$nvlink_styles"
echo "== NCCL's socket transport =="
if setup_netns; then
  ns_ok=1
  echo "each rank in its own network namespace (cr0..cr$((n - 1)), 10.77.0.1..$n over veth)"
else
  echo "note: no network namespaces here: the socket runs go over loopback in one namespace"
fi
matrix socket "$socket_styles"

echo "== join failures (typed errors within the timeout) =="
t0=$(date +%s)
# NCCL's own share first: c/join_abort.c makes the same timed-out joins and aborts
# in C. What it leaks per timed-out join is what the Rust ranks may leak
# (CUDARS_NCCL_C_ABORT_LEAK; without it the test allows the 1 MiB measured).
nccl_root=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)
if [ -n "$nccl_root" ] && command -v nvcc >/dev/null && nvcc -O2 -I"$nccl_root/include" -o "$logdir/join_abort" \
     "$here/c/join_abort.c" -L"$nccl_root/lib" -l:libnccl.so.2 -Xlinker -rpath="$nccl_root/lib" 2>"$logdir/nvcc-join.log"; then
  port=$((port + 1))
  cline=$(NCCL_COMM_ID="127.0.0.1:$port" "$logdir/join_abort" 2>"$logdir/join_abort.err" | grep '^C_JOIN_ABORT')
  echo "${cline:-note: the C reference printed nothing ($(tail -n 1 "$logdir/join_abort.err"))}"
  ct=$(sed -n 's/.* timeouts=\([0-9]*\).*/\1/p' <<<"$cline")
  cl=$(sed -n 's/.* leaked=\(-\{0,1\}[0-9]*\).*/\1/p' <<<"$cline")
  if [ -n "$ct" ] && [ "$ct" -gt 0 ] && [ -n "$cl" ]; then
    export CUDARS_NCCL_C_ABORT_LEAK=$(( (cl > 0 ? cl : 0) / ct ))
    echo "C leaks $CUDARS_NCCL_C_ABORT_LEAK bytes per timed-out join: the Rust ranks may leak no more"
  fi
else
  echo "note: the C reference (c/join_abort.c) did not build; the test allows the 1 MiB measured"
fi
if "$bin/cudars-nccl--test-join_failures" --nocapture --test-threads=1 >"$logdir/join_failures.log" 2>&1; then
  pass=$((pass + 1)); st=ok
else
  fail=$((fail + 1)); st=FAIL; tail -n 40 "$logdir/join_failures.log"
fi
grep -h "^RANK_OUTCOME\|^test " "$logdir/join_failures.log"
echo "join_failures $st $(( $(date +%s) - t0 )) s"

if [ "$bench" -eq 1 ]; then
  echo "== all-reduce bus bandwidth, $n ranks, one process per GPU =="
  cbin="$logdir/allreduce_ranks"
  if [ -n "$nccl_root" ] && nvcc -O2 -I"$nccl_root/include" -o "$cbin" "$here/c/allreduce_ranks.c" \
       -L"$nccl_root/lib" -l:libnccl.so.2 -Xlinker -rpath="$nccl_root/lib" 2>"$logdir/nvcc.log"; then
    :
  else
    echo "note: the C peer did not build ($nccl_root)"; cat "$logdir/nvcc.log"; cbin=""
  fi
  for mode in $bench_modes; do
    for round in $(seq 1 "$bench_rounds"); do
      run_ranks "bench-rs-$mode-$round" torchrun "$mode" yes "$bin/cudars-nccl--allreduce_ranks"
      grep -h '"metric"' "$logdir/bench-rs-$mode-$round.rank0.log" | sed "s/^/$mode /"
      if [ -n "$cbin" ]; then
        run_ranks "bench-c-$mode-$round" torchrun "$mode" yes "$cbin"
        grep -h '"metric"' "$logdir/bench-c-$mode-$round.rank0.log" | sed "s/^/$mode /"
      fi
    done
  done
fi
[ "$ns_ok" -eq 1 ] && teardown_netns
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
