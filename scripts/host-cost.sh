#!/usr/bin/env bash
# The host-side instructions cudars-core spends per hot operation, counted by
# callgrind against the driver shim's fake driver (no GPU needed), beside the
# same driver calls made raw. Deterministic: a change that adds work to a hot
# path shows here as instructions, where a GPU timing drowns it in noise.
# Needs valgrind. Usage: scripts/host-cost.sh [--check] (from the workspace root).
# --check (CI): fails when an operation's instructions beyond the raw calls pass
# its budget below (the figures of docs/performance.md plus headroom for
# compiler and library versions).
set -euo pipefail
check=0
[ "${1:-}" = --check ] && check=1
budget() { # MODE -> the most instructions beyond raw it may cost
  case $1 in
    launch) echo 300 ;;
    typed-launch) echo 230 ;;
    alloc-free) echo 310 ;;
    typed-alloc-free) echo 330 ;;
    order-after-uses) echo 500 ;;
    *) echo "" ;;
  esac
}
# The shim's library (the fake driver the example loads as libcuda.so.1) and the example.
cargo build --release -q -p cudars-driver-shim --lib --example host_cost
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
ln -s "$PWD/target/release/libcudars_driver_shim.so" "$dir/libcuda.so.1"
count() { # MODE N -> instructions of the whole run
  LD_LIBRARY_PATH="$dir" CUDA_RS_SHIM_FAKE_DRIVER=1 valgrind --tool=callgrind \
    --callgrind-out-file="$dir/cg" target/release/examples/host_cost "$1" "$2" 2>&1 >/dev/null |
    sed -n 's/.*Collected : *//p' | tr -d ,
}
per_op() { echo $(( ($(count "$1" 11000) - $(count "$1" 1000)) / 10000 )); }
over=0
printf '%-18s %8s %10s %8s\n' operation instr/op "beyond raw" budget
for m in raw-launch launch typed-launch raw-alloc-free alloc-free typed-alloc-free raw-wait order-after-uses; do
  n=$(per_op "$m")
  case $m in
    raw-launch) raw_launch=$n base=$n ;;
    raw-alloc-free) raw_alloc=$n base=$n ;;
    raw-wait) raw_wait=$n base=$n ;;
    order-after-uses) base=$raw_wait ;;
    *launch) base=$raw_launch ;;
    *) base=$raw_alloc ;;
  esac
  if [ "$n" -le 0 ]; then
    # A count of nothing measures nothing: the check must not pass on it.
    echo "host-cost: $m counted no instructions (the shim's library or valgrind missing?)" >&2
    over=1
  fi
  b=$(budget "$m")
  printf '%-18s %8d %10d %8s\n' "$m" "$n" $(( n - base )) "${b:--}"
  if [ -n "$b" ] && [ $(( n - base )) -gt "$b" ]; then
    echo "host-cost: $m costs $(( n - base )) instructions beyond the raw driver calls, over its budget of $b" >&2
    over=1
  fi
done
[ $check = 0 ] || [ $over = 0 ]
