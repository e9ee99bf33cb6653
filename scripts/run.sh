#!/usr/bin/env bash
# Sets up and builds rtx (scripts/setup.sh), then runs the main job: the
# GPT-2 example compiled to C++ training programs for 1 rank, dp=2 and tp=2,
# trained as local CPU processes, losses side by side (scripts/main-job.sh).
# scripts/tour.sh shows what the compiler knows about a model.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${RTX_BUILD_DIR:-$ROOT/build}"

"$ROOT/scripts/setup.sh"
exec "$ROOT/scripts/main-job.sh" "$@"
