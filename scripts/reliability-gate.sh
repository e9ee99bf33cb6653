#!/usr/bin/env bash
# The reliability gate (issue 18): the chaos suite that CI runs. It passes
# only if every injected failure is recovered from and every resume matches
# an uninterrupted run:
#   - lit test/Reliability: kill -9, SIGSTOP (hang) with a shrink, in-job
#     recovery (a replacement, or a shrink from the survivors' newest step),
#     scaling 4 -> 3 -> 4, growing when a node offers ranks, SIGTERM
#     pre-emption, the restart budget, a crash at every durability point of a
#     save, a corrupt chunk, a full disk, N -> M restore, the write-ahead
#     log's deterministic replay, its torn tail and a mismatch, the Redis
#     store killed and restarted, a dropped link between network namespaces;
#   - pytest test/Python/test_elastic.py: the same through rtx.ElasticConfig.
# Usage: scripts/reliability-gate.sh [REPORT_DIR]  (JUnit reports go there;
# RTX_BUILD_DIR picks the build, default build/). Prints one verdict line.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${RTX_BUILD_DIR:-$ROOT/build}"
REPORTS="${1:-$BUILD_DIR/test-reports}"
mkdir -p "$REPORTS"

status=0
/usr/lib/llvm-22/bin/lit -sv --xunit-xml-output "$REPORTS/reliability-lit.xml" \
  "$BUILD_DIR/test/Reliability" || status=1
RTX_BUILD_DIR="$BUILD_DIR" /usr/bin/python3 -m pytest -q -n auto \
  --junitxml "$REPORTS/reliability-pytest.xml" "$ROOT/test/Python/test_elastic.py" || status=1
if [ $status -eq 0 ]; then
  echo "reliability gate: PASS (every injected failure recovered, every resume matched)"
else
  echo "reliability gate: FAIL (see above)"
fi
exit $status
