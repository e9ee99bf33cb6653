#!/usr/bin/env bash
# Sets up and builds rtx (scripts/setup.sh), then runs the main job. Until the
# training job lands (issue: codegen and runtime), the main job is a tour: it
# takes the GPT-2 block example through rtx-opt and shows what the compiler
# knows about it: verified IR, each op's sharding rule and cost.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${RTX_BUILD_DIR:-$ROOT/build}"

"$ROOT/scripts/setup.sh"
exec "$ROOT/scripts/tour.sh" "$@"
