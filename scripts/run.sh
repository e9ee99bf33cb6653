#!/usr/bin/env bash
# The main job: sets up and builds rtx (scripts/setup.sh, idempotent and fast
# when everything is there), then trains a GPT on the text of Debian's
# fortunes package with local CPU processes: planned by parallel="auto",
# warm-up and cosine learning rate, held-out loss, sharded checkpoints,
# Prometheus metrics, a trace, one rank killed and replaced in the job, the
# final state compared with an uninterrupted run; ends with the loss plot,
# rtx report's verdict, the checkpoints and text sampled with PyTorch
# (examples/main_job/job.py; docs/quickstart.md).
#   scripts/run.sh [--help] [--device cuda] [--nodes N --node-rank I --store URL] ...
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOB="$ROOT/examples/main_job/job.py"

for arg in "$@"; do
  if [ "$arg" = "--help" ] || [ "$arg" = "-h" ]; then
    exec /usr/bin/python3 "$JOB" --help
  fi
done

start=$(date +%s)
echo "== setup: scripts/setup.sh (Debian packages, the Python environment, the build)"
"$ROOT/scripts/setup.sh"
echo "   (setup: $(($(date +%s) - start)) s)"
if [ ! -x "$ROOT/.venv/bin/python" ]; then
  echo "scripts/run.sh: the job runs in the Python environment $ROOT/.venv (PyTorch 2," \
    "tokenizers), which scripts/setup.sh makes unless RTX_VENV=0" >&2
  exit 1
fi
exec "$ROOT/.venv/bin/python" "$JOB" "$@"
