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

RUN="$BUILD_DIR/bin/rtx-run"
TRAIN="$(mktemp -d)"
trap 'rm -rf "$TRAIN"' EXIT
echo "== 4. a training step: rtx-autodiff + rtx-optimizer (AdamW) on the 2-layer GPT-2 example"
"$OPT" "$ROOT/examples/gpt2-tiny.mlir" -rtx-autodiff '-rtx-optimizer=kind=adamw lr=0.01' -o "$TRAIN/train.mlir"
echo "   $(grep -c 'rtx\.' "$TRAIN/train.mlir") ops in the train step (forward, backward, update)"
echo "== 5. 50 steps on one fixed next-token batch in rtx-run (the loss falls to near zero)"
/usr/bin/python3 "$ROOT/examples/make_lm_batch.py" "$TRAIN" 2 8 37
"$RUN" "$TRAIN/train.mlir" --inputs "$TRAIN" --steps 50 | grep '^step' | awk 'NR==1 || NR%10==0'
