#!/usr/bin/env bash
# The main job: compile the 2-layer GPT-2 example into C++ training programs
# (one rank; dp=2; tp=2), run them as local CPU processes with rtx-launch
# (Gloo), and show the losses side by side.
#   scripts/main-job.sh [STEPS]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${RTX_BUILD_DIR:-$ROOT/build}"
BIN="$BUILD_DIR/bin"
STEPS="${1:-30}"
MODEL="$ROOT/examples/gpt2-tiny.mlir"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

echo "== 1. training data: a fixed next-token batch (batch 2, sequence 8, vocabulary 37)"
/usr/bin/python3 "$ROOT/examples/make_lm_batch.py" "$WORK" 2 8 37

echo "== 2. compile $MODEL (AdamW, lr 0.01) for 1 rank, dp=2 and tp=2"
"$BIN/rtx-opt" "$MODEL" -rtx-autodiff '-rtx-optimizer=kind=adamw lr=0.01' -o "$WORK/single.mlir"
"$BIN/rtx-opt" "$MODEL" '-rtx-distribute=mesh=dp:2 lr=0.01' -o "$WORK/dp2.mlir"
"$BIN/rtx-opt" "$MODEL" '-rtx-distribute=mesh=tp:2 lr=0.01' -o "$WORK/tp2.mlir"
for plan in single dp2 tp2; do
  "$BIN/rtx-translate" "$WORK/$plan.mlir" -o "$WORK/$plan.cpp" --build-script "$WORK/build.sh"
  sh "$WORK/build.sh" "$WORK/$plan.cpp" "$WORK/$plan"
  echo "   $plan: $(grep -c 'rtx\.' "$WORK/$plan.mlir") ops, $(grep -c -E 'rtx\.(all_reduce|all_gather|reduce_scatter|all_to_all)' "$WORK/$plan.mlir") collectives -> $plan (C++, librtxrt)"
done

echo "== 3. train $STEPS steps"
"$WORK/single" --inputs "$WORK" --steps "$STEPS" > "$WORK/single.log"
echo "   dp=2 on 2 local processes (progress of rank 0):"
"$BIN/rtx-launch" -n 2 --store "file:$WORK/store-dp2" -- \
  "$WORK/dp2" --inputs "$WORK" --steps "$STEPS" | tee "$WORK/dp2.log" \
  | awk '/step/ && (NR == 1 || NR % 10 == 0) {print "   " $0}'
"$BIN/rtx-launch" -n 2 --store "file:$WORK/store-tp2" -- \
  "$WORK/tp2" --inputs "$WORK" --steps "$STEPS" > "$WORK/tp2.log"

echo "== 4. losses side by side (they agree: the same computation, partitioned)"
/usr/bin/python3 - "$WORK" <<'PY'
import re, sys
work = sys.argv[1]
def losses(name):
    return [float(m.group(1)) for m in re.finditer(r"step \d+/\d+: loss=(\S+)", open(f"{work}/{name}.log").read())]
single, dp2, tp2 = losses("single"), losses("dp2"), losses("tp2")
print(f"   {'step':>5} {'1 rank':>12} {'dp=2':>12} {'tp=2':>12}")
for i, (a, b, c) in enumerate(zip(single, dp2, tp2), 1):
    if i == 1 or i % 5 == 0 or i == len(single):
        print(f"   {i:>5} {a:>12.6f} {b:>12.6f} {c:>12.6f}")
worst = max(max(abs(b - a), abs(c - a)) / abs(a) for a, b, c in zip(single, dp2, tp2))
print(f"   largest relative difference from the single rank: {worst:.1e}")
PY
