#!/usr/bin/env bash
# Builds TRAIN.mlir into a program with rtx-translate, runs it on RANKS local
# processes (rtx-launch, Gloo over a FileStore) and rtx-run on the same
# module with RANKS simulated ranks, and compares them step by step.
#   run-both.sh TRAIN.mlir RANKS STEPS WORKDIR INPUTS_DIR
set -euo pipefail
train=$1 ranks=$2 steps=$3 work=$4 inputs=$5
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
rtx-translate "$train" -o "$work/program.cpp" --build-script "$work/build.sh"
sh "$work/build.sh" "$work/program.cpp" "$work/program"
rtx-run "$train" --ranks "$ranks" --inputs "$inputs" --steps "$steps" \
  --out "$work/run-out" > "$work/run.log"
rtx-launch -n "$ranks" --store "file:$work/store" -- \
  "$work/program" --inputs "$inputs" --steps "$steps" --out "$work/program-out" \
  > "$work/program.log"
/usr/bin/python3 "$here/compare_program.py" "$work/run.log" "$work/program.log" \
  "$work/run-out" "$work/program-out"
