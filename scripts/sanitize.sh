#!/usr/bin/env bash
# The sanitizer stage: builds rtx's CPU code with AddressSanitizer and
# UndefinedBehaviorSanitizer in a second build folder, runs the unit tests and
# a bounded fuzzing pass of rtx-parse-fuzzer under both sanitizers, and the
# lit suites that reach distinct code: the compiler's (rtx-opt), the
# reference executor's (rtx-run) and, through emitted programs built against
# the instrumented librtxrt, the runtime's communication, sharding, offload,
# checkpoint, data and metrics code. Any sanitizer report stops the program
# that hit it and fails this script (docs/testing.md says which suites, and
# why those).
#
#   scripts/sanitize.sh [REPORT_DIR]   (lit's JUnit report goes there, as
#                                     sanitize-lit.xml)
#   RTX_ASAN_BUILD_DIR=dir   build somewhere other than ./build-asan
#   RTX_JOBS=N               parallel build jobs (default: number of cores)
#   RTX_FUZZ_SECONDS=S       fuzzing time (default 60)
#   RTX_SANITIZE_LIT="A B"   lit folders or files under test/ to run
#                            (default: the selection below); empty: none
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${RTX_ASAN_BUILD_DIR:-$ROOT/build-asan}"
JOBS="${RTX_JOBS:-$(nproc)}"
FUZZ_SECONDS="${RTX_FUZZ_SECONDS:-60}"
REPORTS="${1:-$BUILD_DIR/test-reports}"
# The compiler's suites whole; of test/Analysis, all but the two planner
# tests that repeat the search on 145B-1T models and exhaustively (about 110 s
# each under ASan; auto-partition*.mlir and planner-recompute.test reach the
# same search and pricing code); of test/Target, the programs that reach
# runtime code nothing else here runs (docs/testing.md).
DEFAULT_LIT="Dialect Transforms Pipelines Pipeline Executor Distributed Training Examples
  Analysis/cost-model.mlir Analysis/calibrate.test Analysis/topology.test
  Analysis/planner-recompute.test
  Target/emit-every-collective.test Target/emit-sharded.test Target/emit-offload.test
  Target/emit-pipeline.test Target/resume.test Target/token-file.test Target/metrics.test"
LIT_TESTS="${RTX_SANITIZE_LIT-$DEFAULT_LIT}"

# Only what the stage runs: not the CUDA parts (RTX_SANITIZE turns them off),
# not the benchmarks. The planner's tools are sanitized too (test/Analysis
# runs them; rtx-calibrate under rtx-launch), and rtx-translate, whose build
# scripts compile programs with the sanitizers against this build's librtxrt.
TARGETS=(rtx-opt rtx-run rtx-schedule rtx-topology rtx-calibrate rtx-launch rtx-translate
         rtxrt-unit-tests rtxrt-gpu-emulation-tests
         rtx-dialect-unit-tests rtx-executor-unit-tests
         rtx-transforms-unit-tests rtx-analysis-unit-tests rtx-parse-fuzzer)

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  echo "rtx sanitize: configuring $BUILD_DIR (address,undefined)"
  # ccache with this clone's root as base directory (scripts/lib/ccache.sh):
  # a second run, or a clone in another folder, compiles nothing again.
  # shellcheck source=lib/ccache.sh
  source "$ROOT/scripts/lib/ccache.sh"
  rtx_ccache_args "$ROOT"
  # -O0: the instrumented tree compiles in about half the time of -O1 (the
  # generated op code in 22 s instead of 52). What runs long stays
  # optimised: librtxrt's kernels at -O3 (runtime/CMakeLists.txt) and the
  # fuzzed dialect at -O1, for the fuzzer's executions per second
  # (test/Fuzz/CMakeLists.txt).
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja "${RTX_CCACHE_ARGS[@]}" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O0 -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELEASE="-O0 -DNDEBUG" \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_DIR=/usr/lib/llvm-22/lib/cmake/llvm \
    -DRTX_SANITIZE=address,undefined >/dev/null || exit 1
fi

echo "rtx sanitize: building ${TARGETS[*]} ($JOBS jobs)"
cmake --build "$BUILD_DIR" --target "${TARGETS[@]}" -- -j "$JOBS" || exit 1

# halt_on_error: the first report fails the test. Leaks are checked at exit;
# the suppressions file lists the ones that are not rtx's (with reasons).
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:strict_init_order=1:check_initialization_order=1"
export LSAN_OPTIONS="suppressions=$ROOT/test/Sanitize/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$ROOT/test/Sanitize/ubsan.supp"
# hwloc's PCI plugin (hwloc_pci.so, over libpciaccess) leaks its own
# allocations, and after hwloc dlcloses it LSan can only name the frames
# "<unknown module>", which no suppression matches: rtx-topology runs here
# without it (the CPU, NUMA and network parts are what this machine has).
export HWLOC_COMPONENTS="-pci"

status=0
# First, that a report does fail a program under these options (a check that
# cannot fail is no check): a planted heap overflow and a planted signed
# overflow, built with the flags of cmake/RTXSanitize.cmake.
canary="$(mktemp -d)"
cat >"$canary/c.cpp" <<'CPP'
#include <climits>
#include <cstdlib>
int main(int argc, char **) {
  int *p = new int[4]();
  int r = getenv("RTX_CANARY_UB") ? INT_MAX + argc : p[argc + 3];
  delete[] p;
  return r == 42;
}
CPP
if ! clang++-14 -fsanitize=address,undefined -fno-sanitize-recover=undefined \
     -fno-omit-frame-pointer -g "$canary/c.cpp" -o "$canary/c" 2>"$canary/log"; then
  echo "rtx sanitize: cannot build a sanitized program:"; cat "$canary/log"; exit 1
fi
if "$canary/c" 2>"$canary/asan.log" || ! grep -q "heap-buffer-overflow" "$canary/asan.log" ||
   RTX_CANARY_UB=1 "$canary/c" 2>"$canary/ubsan.log" || ! grep -q "signed integer overflow" "$canary/ubsan.log"; then
  echo "rtx sanitize: a planted heap overflow or signed overflow was not reported:"
  cat "$canary"/*.log; exit 1
fi
rm -rf "$canary"

echo "=== sanitize: unit tests ==="
for t in test/Unit/Runtime/rtxrt-unit-tests test/Unit/Runtime/rtxrt-gpu-emulation-tests \
         test/Unit/Dialect/rtx-dialect-unit-tests test/Unit/Executor/rtx-executor-unit-tests \
         test/Unit/Transforms/rtx-transforms-unit-tests \
         test/Unit/Analysis/rtx-analysis-unit-tests; do
  bin="$BUILD_DIR/$t"
  [ -x "$bin" ] || bin="$BUILD_DIR/bin/$(basename "$t")"
  log="$(mktemp)"
  if "$bin" --gtest_brief=1 >"$log" 2>&1; then
    echo "  ok   $(basename "$t"): $(grep -E '^\[  PASSED  \]' "$log" | head -1)"
  else
    echo "  FAIL $(basename "$t"):"; tail -n 60 "$log" | sed 's/^/    /'
    status=1
  fi
  rm -f "$log"
done

echo "=== sanitize: fuzzing rtx-parse-fuzzer for ${FUZZ_SECONDS}s ==="
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/crashes"
# The seed corpus of test/Fuzz/fuzz-parse.mlir: the dialect's tests and examples.
cp "$ROOT"/test/Dialect/RTX/*.mlir "$ROOT"/examples/*.mlir "$work/corpus/"
if "$BUILD_DIR/bin/rtx-parse-fuzzer" "$work/corpus" -max_total_time="$FUZZ_SECONDS" \
    -timeout=10 -rss_limit_mb=4096 -seed=1 -print_final_stats=1 \
    -artifact_prefix="$work/crashes/" >"$work/fuzz.log" 2>&1; then
  echo "  ok   $(grep -E '^Done [0-9]+ runs' "$work/fuzz.log" | head -1)"
else
  echo "  FAIL rtx-parse-fuzzer (input that reproduces it, as base64, below):"
  tail -n 60 "$work/fuzz.log" | sed 's/^/    /'
  for f in "$work"/crashes/*; do [ -f "$f" ] && { echo "    $f:"; base64 "$f" | sed 's/^/      /'; }; done
  status=1
fi

if [ -n "$LIT_TESTS" ]; then
  echo "=== sanitize: lit ($(echo $LIT_TESTS)) with the instrumented tools and programs ==="
  tests=()
  for t in $LIT_TESTS; do tests+=("$BUILD_DIR/test/$t"); done
  mkdir -p "$REPORTS"
  /usr/lib/llvm-22/bin/lit -q --xunit-xml-output "$REPORTS/sanitize-lit.xml" "${tests[@]}" ||
    status=1
fi

if [ $status -eq 0 ]; then
  echo "rtx sanitize: no sanitizer reports, all passed"
else
  echo "rtx sanitize: FAILED (see above)"
fi
exit $status
