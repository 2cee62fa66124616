#!/usr/bin/env bash
# What a dependent pays on its first build: a new project whose only dependency is
# cudars-core (default features), beside the same project on cudarc with the driver
# and NVRTC (its counterpart: `default-features = false`, features std, driver, nvrtc,
# dynamic-loading and one CUDA version, so that nothing is needed at build time, as
# with cudars-core). Each is built from a clean target directory of its own, the two
# interleaved, ROUNDS times per profile; the script prints each build's seconds, the
# median per project and profile, the median of the per-round ratios and the slowest
# units of cudars-core's last build (from `cargo build --timings`).
#
# Usage: scripts/dep-build-time.sh [ROUNDS]   (default 3; 1 in CI)
#   DEP_BUILD_PROFILES="debug release" (default both), DEP_BUILD_DIR (default
#   target/dep-build-time), DEP_BUILD_JOBS (cargo -j; default: cargo's, the core count),
#   CUDARC_VERSION (default 0.19.10; any published version with these features).
# The dependency on cudars-core is a path dependency on this checkout. Cargo builds
# path dependencies incrementally in the dev profile and registry ones not, so the
# builds run with CARGO_INCREMENTAL=0, as a published cudars-core would build. The
# registry is needed once (cargo fetch, not timed); later runs work offline.
# Timing only: the script fails on a build error, never on the figures.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
rounds=${1:-3}
profiles=${DEP_BUILD_PROFILES:-debug release}
work=${DEP_BUILD_DIR:-$root/target/dep-build-time}
cudarc_version=${CUDARC_VERSION:-0.19.10}
jobs=()
[ -n "${DEP_BUILD_JOBS:-}" ] && jobs=(-j "$DEP_BUILD_JOBS")
export CARGO_INCREMENTAL=0
unset RUSTC_WRAPPER CARGO_BUILD_RUSTC_WRAPPER CARGO_TARGET_DIR CARGO_BUILD_TARGET_DIR

mkdir -p "$work/dep-core/src" "$work/dep-cudarc/src"
# Each project is a workspace of its own (an empty [workspace]), so that no enclosing
# Cargo.toml claims it.
cat > "$work/dep-core/Cargo.toml" <<EOF
[package]
name = "dep-core"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
cudars-core = { path = "$root/crates/cudars-core" }

[workspace]
EOF
cat > "$work/dep-core/src/main.rs" <<'EOF'
fn main() {
    match cudars_core::Device::count() {
        Ok(n) => println!("{n} devices"),
        Err(e) => println!("{e}"),
    }
}
EOF
cat > "$work/dep-cudarc/Cargo.toml" <<EOF
[package]
name = "dep-cudarc"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
cudarc = { version = "=$cudarc_version", default-features = false, features = ["std", "driver", "nvrtc", "dynamic-loading", "cuda-13000"] }

[workspace]
EOF
cat > "$work/dep-cudarc/src/main.rs" <<'EOF'
fn main() {
    match cudarc::driver::CudaContext::device_count() {
        Ok(n) => println!("{n} devices"),
        Err(e) => println!("{e}"),
    }
}
EOF

for p in dep-core dep-cudarc; do
  (cd "$work/$p" && { cargo fetch -q 2>/dev/null || cargo fetch -q --offline; })
done

# Build project $1 with profile $2 from a clean target directory; print the wall-clock
# seconds and the CPU seconds (user + system of cargo and every rustc it ran: less
# disturbed than the wall clock by other work on the machine). Cargo's timing report
# is kept as $work/timings/$1-$2-<round>.html.
build() {
  local dir=$work/$1 flag=()
  [ "$2" = release ] && flag=(--release)
  rm -rf "$dir/target"
  local TIMEFORMAT='%R %U %S'
  { time (cd "$dir" && cargo build -q --offline --timings "${flag[@]}" "${jobs[@]}" >/dev/null 2>"$dir/build.log"); } 2>"$dir/time.txt" \
    || { cat "$dir/build.log" >&2; return 1; }
  mkdir -p "$work/timings"
  cp "$dir/target/cargo-timings/cargo-timing.html" "$work/timings/$1-$2-$3.html" 2>/dev/null || true
  awk '{ printf "%.1f %.1f\n", $1, $2 + $3 }' "$dir/time.txt"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "dep-build-time: $(rustc --version), $(nproc) cores, ${rounds} round(s), cudarc $cudarc_version"
echo "cudars-core: $(git -C "$root" describe --always --dirty 2>/dev/null || echo '?')"
summary=()
for profile in $profiles; do
  core=() cudarc=() ratio=() core_cpu=() cudarc_cpu=() ratio_cpu=()
  for r in $(seq 1 "$rounds"); do
    c= cc= d= dc=
    # Alternate which goes first, so that neither always gets the warmer cache.
    if [ $((r % 2)) = 1 ]; then
      read -r c cc < <(build dep-core "$profile" "$r") || true; read -r d dc < <(build dep-cudarc "$profile" "$r") || true
    else
      read -r d dc < <(build dep-cudarc "$profile" "$r") || true; read -r c cc < <(build dep-core "$profile" "$r") || true
    fi
    [ -n "${c:-}" ] && [ -n "${d:-}" ] || { echo "dep-build-time: a build failed" >&2; exit 1; }
    q=$(awk -v c="$c" -v d="$d" 'BEGIN { printf "%.2f", c / d }')
    qc=$(awk -v c="$cc" -v d="$dc" 'BEGIN { printf "%.2f", c / d }')
    core+=("$c") cudarc+=("$d") ratio+=("$q") core_cpu+=("$cc") cudarc_cpu+=("$dc") ratio_cpu+=("$qc")
    echo "$profile round $r: cudars-core ${c} s (${cc} s CPU), cudarc ${d} s (${dc} s CPU), ratio ${q} (CPU ${qc})"
  done
  mc=$(printf '%s\n' "${core[@]}" | median)
  md=$(printf '%s\n' "${cudarc[@]}" | median)
  mq=$(printf '%s\n' "${ratio[@]}" | median)
  mcc=$(printf '%s\n' "${core_cpu[@]}" | median)
  mdc=$(printf '%s\n' "${cudarc_cpu[@]}" | median)
  mqc=$(printf '%s\n' "${ratio_cpu[@]}" | median)
  summary+=("$profile: cudars-core ${mc} s, cudarc ${md} s, ratio ${mq} (goal <= 2); CPU ${mcc} s and ${mdc} s, ratio ${mqc} (medians of ${rounds})")
  # The slowest units of the last cudars-core build (cargo's timing report).
  report=$work/timings/dep-core-$profile-$rounds.html
  if [ -f "$report" ] && command -v python3 >/dev/null; then
    python3 - "$report" <<'EOF'
import json, re, sys
html = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r"const UNIT_DATA = (\[.*?\]);\n", html, re.S)
if m:
    units = sorted(json.loads(m.group(1)), key=lambda u: -u["duration"])
    top = ", ".join(f'{u["name"]} {u["version"]}{" (build script)" if u.get("target", "").strip() == "build-script" else ""} {u["duration"]:.1f}' for u in units[:8])
    print(f"  slowest units of cudars-core's last build (s): {top}")
EOF
  fi
done
printf '%s\n' "${summary[@]}"
