#!/usr/bin/env bash
# Sets up everything rtx needs on Debian 12 and builds it. Idempotent: packages
# already present are not touched, and an up-to-date build does no work.
#
#   scripts/setup.sh            install what is missing, configure, build
#   scripts/setup.sh --print-packages   list PACKAGES (scripts/update-lock.sh)
#   RTX_BUILD_DIR=dir           build somewhere other than ./build
#   RTX_JOBS=N                  parallel build jobs (default: number of cores)
#   RTX_STRICT_LOCK=1           fail when a package is not at its locked version
#   RTX_VENV=0                  skip the PyTorch 2 environment (.venv)
#
# Packages are installed at the versions in scripts/debian-packages.lock, and
# the installed ones are compared with it on every run (one dpkg-query; no
# apt-get when nothing is missing): docs/supply-chain.md.
#
# The PyTorch 2 environment is <repo>/.venv: Debian's python3 with the pinned
# packages of scripts/python-requirements.txt (pip runs only when a version
# differs; docs/python.md). /usr/bin/python3 keeps Debian's PyTorch 1.13.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${RTX_BUILD_DIR:-$ROOT/build}"
JOBS="${RTX_JOBS:-$(nproc)}"

# Debian packages, by purpose (design.md §7).
PACKAGES=(
  # toolchain (ccache: a clone in another folder, and the sanitizer build,
  # reuse what was compiled before; see docs/testing.md)
  cmake ninja-build clang-14 g++ python3 ccache
  # MLIR/LLVM 22 (mlir-tools provides mlir-tblgen, which MLIR's CMake needs)
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  # libraries rtx builds on (Gloo and its Redis client: process groups)
  libopenblas-dev nlohmann-json3-dev libgloo-dev libhiredis-dev
  # the Prometheus endpoint of programs, and the report's plots
  libcpp-httplib-dev python3-matplotlib
  # io_uring for the offload store's file transfers (ZeRO-Offload to NVMe)
  liburing-dev
  # ISA-L: CRC32C of checkpoint chunks and write-ahead log records
  libisal-dev
  # topology discovery for the planner's hardware profile (rtx-topology)
  libhwloc-dev hwloc
  # a rendezvous store across machines (and for the tests); a real
  # Prometheus server for the metrics test
  redis-server prometheus
  # the multi-node test (two network namespaces) and the mpirun launch test
  iproute2 openmpi-bin
  # tests and benchmarks
  googletest libgtest-dev libbenchmark-dev python3-numpy python3-pytest
  # pytest's tests on every core (-n auto): half of them wait on programs
  python3-pytest-xdist
  # the trace test's JSON Schema check
  python3-jsonschema
  # the main job's text (scripts/run.sh: the fortune-cookie collections)
  fortunes
  # the PyTorch importer (Debian's PyTorch 1.13, for /usr/bin/python3), and
  # the virtual environment of its PyTorch 2 path (.venv)
  python3-torch python3-venv
)

if [ "${1:-}" = "--print-packages" ]; then
  printf '%s\n' "${PACKAGES[@]}"
  exit 0
fi

# shellcheck source=lib/debian-lock.sh
source "$ROOT/scripts/lib/debian-lock.sh"
rtx_lock_read "${RTX_LOCK_FILE:-$ROOT/scripts/debian-packages.lock}"
rtx_lock_compare "${PACKAGES[@]}"
if [ ${#RTX_MISSING[@]} -gt 0 ]; then
  rtx_lock_install "${RTX_MISSING[@]}"
  # What was installed is checked like the rest.
  rtx_lock_compare "${PACKAGES[@]}"
fi

if [ "${RTX_VENV:-1}" != 0 ]; then
  # shellcheck source=lib/python-venv.sh
  source "$ROOT/scripts/lib/python-venv.sh"
  rtx_python_venv "$ROOT/.venv" "$ROOT/scripts/python-requirements.txt"
fi

# clang builds the libFuzzer target; any C++17 compiler builds the rest.
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  echo "rtx setup: configuring $BUILD_DIR"
  # shellcheck source=lib/ccache.sh
  source "$ROOT/scripts/lib/ccache.sh"
  rtx_ccache_args "$ROOT"
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja "${RTX_CCACHE_ARGS[@]}" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_DIR=/usr/lib/llvm-22/lib/cmake/llvm
fi

echo "rtx setup: building ($JOBS jobs)"
cmake --build "$BUILD_DIR" -- -j "$JOBS"
