#!/usr/bin/env bash
# Windows without Windows: builds cudars-pathfinder, cudars-bindings and cudars-core for
# x86_64-pc-windows-gnu and runs their CPU-only tests (the pathfinder's, and the
# NVRTC / nvJitLink / NVVM compile tests) under Wine against NVIDIA's real win_amd64
# wheels, then `cargo check`s every library crate, all features and all targets, for
# x86_64-pc-windows-msvc and -gnu (the bindings' Windows layouts are their own files,
# generated per OS: docs/architecture.md). No GPU and no Windows needed; the driver
# path cannot be exercised here (no nvcuda.dll under Wine).
#
# Usage: scripts/windows-tests.sh        (CI: .ci/run; needs root for apt-get on a
#                                          first run, Debian 12 x86_64, the network)
# Toolchain: the shared tools/windows-cross.sh (Debian's Rust 1.85 + std sources,
# std built with -Zbuild-std, mingw-w64, Wine), found as ../shared/tools beside the
# checkout or named by WINDOWS_CROSS; it is run only when its prefix ($W, default
# ~/.cache/cuda-rs-windows-cross) is not set up yet.
# Wheels: the win_amd64 builds of the versions in tests/wheels.txt, installed with pip
# into target/cuda-venv-win (a venv-shaped directory: Lib/site-packages, Scripts,
# pyvenv.cfg), reused while tests/wheels.txt is unchanged.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

W=${W:-$HOME/.cache/cuda-rs-windows-cross}
CROSS=${WINDOWS_CROSS:-../shared/tools/windows-cross.sh}
GNU=x86_64-pc-windows-gnu
MSVC=x86_64-pc-windows-msvc
T0=$SECONDS
step() { printf '\n== [+%ss] %s\n' "$((SECONDS - T0))" "$*"; }

step "toolchain ($W)"
if [ -x "$W/bin/cargo" ] && [ -f "$W/env.sh" ] && compgen -G "$W/root/usr/lib/rustlib/$GNU/lib/rsbegin.o" >/dev/null; then
  echo "set up already"
else
  [ -x "$CROSS" ] || { echo "windows-tests: $CROSS not found (set WINDOWS_CROSS)" >&2; exit 1; }
  W="$W" "$CROSS" | tail -n 3
fi
# shellcheck disable=SC1091
. "$W/env.sh"
export CARGO_TARGET_DIR=${WINDOWS_TARGET_DIR:-$PWD/target/windows}

step "win_amd64 wheels (tests/wheels.txt) into target/cuda-venv-win"
VENV=$PWD/target/cuda-venv-win
pins=$(grep -E '^(nvidia-cuda-runtime|nvidia-cuda-nvrtc|nvidia-nvjitlink|nvidia-nvvm|nvidia-nvfatbin|nvidia-cuda-cccl)==' tests/wheels.txt)
if [ "$(cat "$VENV/.pins" 2>/dev/null)" != "$pins" ]; then
  rm -rf "$VENV"
  # shellcheck disable=SC2086
  python3 -m pip install --quiet --disable-pip-version-check --platform win_amd64 \
    --only-binary=:all: --no-deps --target "$VENV/Lib/site-packages" $pins
  # A venv's shape, so that the pathfinder's "python on PATH" discovery finds it.
  mkdir -p "$VENV/Scripts"
  : > "$VENV/Scripts/python.exe"
  printf 'home = C:\\Python313\nversion_info = 3.13.0\ninclude-system-site-packages = false\n' > "$VENV/pyvenv.cfg"
  echo "$pins" > "$VENV/.pins"
fi

step "cudars-pathfinder tests for $GNU under Wine (layouts from the win_amd64 wheels)"
CUDA_RS_TEST_VENV=$VENV CUDA_RS_REQUIRE_WHEELS=1 \
  cargo test --locked -Zbuild-std --target $GNU -p cudars-pathfinder

step "cudars-bindings NVRTC / nvJitLink / NVVM compile tests for $GNU under Wine"
VIRTUAL_ENV=$VENV CUDA_RS_REQUIRE_WHEELS=1 \
  cargo test --locked -Zbuild-std --target $GNU -p cudars-bindings \
  --no-default-features --features nvrtc,nvjitlink,nvvm,driver --test compile

step "cudars-core NVRTC / nvJitLink / NVVM compile tests for $GNU under Wine"
# Skipped: versions_report_each_library_and_its_major, because cudart64_13.dll answers
# `versions()`' runtime version query with cudaErrorNotSupported (801) under Wine.
VIRTUAL_ENV=$VENV CUDA_RS_REQUIRE_WHEELS=1 \
  cargo test --locked -Zbuild-std --target $GNU -p cudars-core --test compile \
  -- --skip versions_report_each_library_and_its_major

step "cargo check for $MSVC and $GNU (std built from source; nothing linked)"
for t in $MSVC $GNU; do
  cargo check --locked -Zbuild-std --target "$t" -p cudars -p cudars-pathfinder -p cudars-bindings \
    -p cudars-core -p cudars-core-macros -p cudars-blas -p cudars-rand -p cudars-solver -p cudars-fft -p cudars-nccl \
    -p cudars-nvtx --all-features --all-targets
done

step "done"
