#!/usr/bin/env bash
# Sets up everything rtx needs on Debian 12 and builds it. Idempotent: packages
# already present are not touched, and an up-to-date build does no work.
#
#   scripts/setup.sh            install what is missing, configure, build
#   RTX_BUILD_DIR=dir           build somewhere other than ./build
#   RTX_JOBS=N                  parallel build jobs (default: number of cores)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${RTX_BUILD_DIR:-$ROOT/build}"
JOBS="${RTX_JOBS:-$(nproc)}"

# Debian packages, by purpose (design.md §7).
PACKAGES=(
  # toolchain
  cmake ninja-build clang-14 g++ python3
  # MLIR/LLVM 22 (mlir-tools provides mlir-tblgen, which MLIR's CMake needs)
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  # libraries rtx builds on (Gloo and its Redis client: process groups)
  libopenblas-dev nlohmann-json3-dev libgloo-dev libhiredis-dev
  # a rendezvous store across machines (and for the tests)
  redis-server
  # the multi-node test (two network namespaces) and the mpirun launch test
  iproute2 openmpi-bin
  # tests and benchmarks
  googletest libgtest-dev libbenchmark-dev python3-numpy python3-pytest
  # the PyTorch importer (Debian's PyTorch 1.13, for /usr/bin/python3)
  python3-torch
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "rtx setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# clang builds the libFuzzer target; any C++17 compiler builds the rest.
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  echo "rtx setup: configuring $BUILD_DIR"
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_DIR=/usr/lib/llvm-22/lib/cmake/llvm
fi

echo "rtx setup: building ($JOBS jobs)"
cmake --build "$BUILD_DIR" -- -j "$JOBS"
