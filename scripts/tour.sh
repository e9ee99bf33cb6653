#!/usr/bin/env bash
# A short tour of rtx on an example model (default: the GPT-2 block).
#   scripts/tour.sh [examples/FILE.mlir]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${RTX_BUILD_DIR:-$ROOT/build}"
OPT="$BUILD_DIR/bin/rtx-opt"
EXAMPLE="${1:-$ROOT/examples/gpt2-block.mlir}"

echo "== 1. parse and verify $EXAMPLE"
"$OPT" "$EXAMPLE" > /dev/null && echo "   ok: $(grep -c 'rtx\.' "$EXAMPLE") rtx ops verified"

echo "== 2. sharding rule and cost of every op (rtx-opt -rtx-test-op-interfaces)"
"$OPT" "$EXAMPLE" -rtx-test-op-interfaces -o /dev/null 2>&1 \
  | grep 'remark:' | sed -E 's/^[^:]+:([0-9]+):[0-9]+: remark: /   line \1: /'

echo "== 3. totals"
"$OPT" "$EXAMPLE" -rtx-test-op-interfaces -o /dev/null 2>&1 | grep 'remark:' \
  | sed -E 's/.*flops: ([0-9]+); bytes: ([0-9]+).*/\1 \2/' \
  | awk '{f+=$1; b+=$2} END {printf "   %.3f MFLOP, %.3f MB moved (one forward pass)\n", f/1e6, b/1e6}'
