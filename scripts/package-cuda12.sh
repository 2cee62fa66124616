#!/usr/bin/env bash
# Makes a lean GPU package that compiles, links and launches kernels with NVIDIA's
# CUDA 12.9 NVRTC, nvJitLink and runtime (from the CUDA 12 test wheels), using the
# same test binaries as the main package. The 12.9 libraries are too large to travel
# uncompressed, so they go xz-compressed; run-cu12.sh unpacks them into a
# wheel-shaped folder and points VIRTUAL_ENV at it.
#
# usage: scripts/package-cuda12.sh PKG OUT [VENV]
#   PKG   the folder `cargo xtask package-tests` made (its bin/ is reused)
#   OUT   the lean package to write
#   VENV  the CUDA 12.9 venv (default target/cuda12-venv, made by `cargo xtask test`)
set -euo pipefail
pkg="$1"; out="$2"
venv="${3:-target/cuda12-venv}"
site=$(echo "$venv"/lib/python3*/site-packages)
[ -d "$site/nvidia/cuda_nvrtc" ] || { echo "no CUDA 12 wheels under $site (run cargo xtask test --cuda 12)" >&2; exit 1; }
rm -rf "$out"; mkdir -p "$out"
stage=$(mktemp -d)
mkdir -p "$stage/site/nvidia/cuda_nvrtc/lib" "$stage/site/nvidia/nvjitlink/lib" \
  "$stage/site/nvidia/cuda_runtime/lib" "$stage/bin"
cp "$site"/nvidia/cuda_nvrtc/lib/libnvrtc.so.12 "$site"/nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.12.* \
  "$stage/site/nvidia/cuda_nvrtc/lib/"
cp "$site"/nvidia/nvjitlink/lib/libnvJitLink.so.12 "$stage/site/nvidia/nvjitlink/lib/"
cp "$site"/nvidia/cuda_runtime/lib/libcudart.so.12 "$stage/site/nvidia/cuda_runtime/lib/"
bins=(cudars-core--test-launch cudars-core--test-compile cudars-core--example-quickstart
  cudars-core--example-linking_rdc cudars-pathfinder)
for b in "${bins[@]}"; do cp "$pkg/bin/$b" "$stage/bin/"; done
tar -C "$stage" -cf - site bin | xz -9e -T0 > "$out/cu12.tar.xz"
rm -rf "$stage"
cat > "$out/run-cu12.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the compile-and-launch tests with CUDA 12.9's NVRTC, nvJitLink and runtime.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work=$(mktemp -d)
xz -dc "$here/cu12.tar.xz" | tar -C "$work" -xf -
mkdir -p "$work/venv/lib/python3.12"
mv "$work/site" "$work/venv/lib/python3.12/site-packages"
export VIRTUAL_ENV="$work/venv" CUDA_RS_EXPECT_MAJOR=12 CUDA_TEST_REQUIRE_GPU=1
export CUDA_PATHFINDER_BIN="$work/bin/cudars-pathfinder"
"$CUDA_PATHFINDER_BIN" doctor 2>&1 | head -40
rc=0
# NVVM is not carried (CUDA 12.9's is 62 MB): its tests are left to the main package.
for t in cudars-core--test-launch cudars-core--test-compile; do
  echo "== $t"; "$work/bin/$t" --skip nvvm --skip libdevice --nocapture >"$work/$t.log" 2>&1; r=$?
  grep -E "^test |test result|SKIPPED|nvrtc|nvjitlink|runtime" "$work/$t.log"
  [ $r -eq 0 ] || { tail -n 60 "$work/$t.log"; echo "FAILED: $t (exit $r)"; rc=1; }
done
for e in cudars-core--example-quickstart cudars-core--example-linking_rdc; do
  echo "== $e"; "$work/bin/$e" || { echo "FAILED: $e"; rc=1; }
done
exit $rc
RUN
chmod +x "$out/run-cu12.sh"
du -b "$out"/* >&2
