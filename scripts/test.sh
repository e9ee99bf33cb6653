#!/usr/bin/env bash
# Sets up and builds rtx (scripts/setup.sh), then runs every test suite:
# the secret scan of the tracked tree, lit (dialect, passes, executor,
# training, distribution, fuzzing, supply chain), pytest (the Python
# frontend, with Debian's PyTorch 1.13), the importer's tests again under
# PyTorch 2 (.venv, made by setup.sh; RTX_VENV=0 skips it), the reliability
# gate (scripts/reliability-gate.sh: the chaos suite), ctest (unit tests, doc
# checks) and the sanitizer stage (scripts/sanitize.sh).
# Each runner prints its own summary; the run ends with each stage's duration
# and the ten slowest tests (scripts/test-durations.py; the suite's budget is
# in docs/testing.md). The exit code is non-zero if any stage failed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${RTX_BUILD_DIR:-$ROOT/build}"

status=0
# One line per stage: name, seconds, result (scripts/test-durations.py).
STAGES="$(mktemp)"
trap 'rm -f "$STAGES"' EXIT
# stage NAME COMMAND...: runs COMMAND, records its duration and result.
stage() {
  local name=$1 start ms result=ok
  shift
  start=$(date +%s%N)
  "$@" || { result=FAILED; status=1; }
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  printf '%s\t%d.%03d\t%s\n' "$name" $((ms / 1000)) $((ms % 1000)) "$result" >>"$STAGES"
  [ "$result" = ok ]
}

stage "setup and build" "$ROOT/scripts/setup.sh" || {
  echo "rtx: setup or build FAILED"; exit 1; }

# JUnit reports of each runner, for the failure digest and the durations.
REPORTS="$BUILD_DIR/test-reports"
rm -rf "$REPORTS" && mkdir -p "$REPORTS"
echo "=== secrets ==="
# Keys and tokens in tracked files (docs/supply-chain.md).
stage secrets /usr/bin/python3 "$ROOT/scripts/scan-secrets.py"
echo "=== lit ==="
# test/Reliability runs in the reliability gate below.
stage lit /usr/lib/llvm-22/bin/lit -sv --filter-out 'Reliability/' \
  --xunit-xml-output "$REPORTS/lit.xml" "$BUILD_DIR/test"
echo "=== pytest ==="
# Debian's python3 has numpy, pytest and torch (a pyenv python may not).
# -n auto (pytest-xdist): a worker per core; the tests use half a core each
# on average, waiting on the programs they start.
stage pytest env RTX_BUILD_DIR="$BUILD_DIR" /usr/bin/python3 -m pytest -q -n auto \
  --durations=10 --junitxml "$REPORTS/pytest.xml" \
  --ignore "$ROOT/test/Python/test_elastic.py" "$ROOT/test/Python"
echo "=== pytest (PyTorch 2) ==="
# The importer's tests under PyTorch 2, where torch.export captures
# (docs/python.md); tests of the other path skip themselves on each side.
# "not native": the C++ program a CLI test builds does not depend on PyTorch.
if [ "${RTX_VENV:-1}" = 0 ]; then
  echo "skipped (RTX_VENV=0: no PyTorch 2 environment)"
else
  stage "pytest torch2" env RTX_BUILD_DIR="$BUILD_DIR" "$ROOT/.venv/bin/python" -m pytest -q -n auto \
    -p no:cacheprovider --durations=5 --junitxml "$REPORTS/pytest-torch2.xml" -k "not native" \
    "$ROOT/test/Python/test_import.py" "$ROOT/test/Python/test_import_torch2.py" \
    "$ROOT/test/Python/test_import_meta.py" "$ROOT/test/Python/test_fusion.py" \
    "$ROOT/test/Python/test_zoo.py" "$ROOT/test/Python/test_splits.py" \
    "$ROOT/test/Python/test_weights.py" "$ROOT/test/Python/test_modules.py" \
    "$ROOT/test/Python/test_gpu_speed.py" "$ROOT/test/Python/test_main_job.py"
fi
echo "=== reliability gate ==="
# The chaos suite (docs/checkpoint.md): test/Reliability and test_elastic.py.
stage "reliability gate" "$ROOT/scripts/reliability-gate.sh" "$REPORTS"
echo "=== ctest ==="
# lit already ran above; ctest runs everything else.
stage ctest ctest --test-dir "$BUILD_DIR" -E '^lit$' --output-on-failure \
  --output-junit "$REPORTS/ctest.xml"
echo "=== sanitize ==="
# ASan + UBSan build (build-asan/): unit tests, bounded fuzzing, lit suites
# (docs/testing.md). RTX_SKIP_SANITIZE=1 skips it for a quick local run; CI
# always runs it.
if [ "${RTX_SKIP_SANITIZE:-0}" = 1 ]; then
  echo "skipped (RTX_SKIP_SANITIZE=1)"
else
  stage sanitize "$ROOT/scripts/sanitize.sh" "$REPORTS"
fi

/usr/bin/python3 "$ROOT/scripts/test-durations.py" "$STAGES" "$REPORTS"/*.xml
if [ $status -eq 0 ]; then
  echo "rtx: all test suites passed"
else
  # The reasons again at the end: a CI log cut in the middle keeps them.
  /usr/bin/python3 "$ROOT/scripts/failure-digest.py" "$REPORTS/lit.xml" "$REPORTS/pytest.xml" \
    "$REPORTS/pytest-torch2.xml" "$REPORTS/reliability-lit.xml" "$REPORTS/reliability-pytest.xml" \
    "$REPORTS/ctest.xml" "$REPORTS/sanitize-lit.xml"
  echo "rtx: some tests FAILED (see the summaries above and the digest)"
fi
exit $status
