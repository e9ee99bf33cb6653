#!/usr/bin/env bash
# Builds TRAIN.mlir into a program with rtx-translate, runs it on RANKS local
# processes (rtx-launch, Gloo over a FileStore) and rtx-run on the same
# module with RANKS simulated ranks, and compares them step by step.
#   run-both.sh TRAIN.mlir RANKS STEPS WORKDIR INPUTS_DIR
# EMIT=cuda emits the CUDA program instead and builds it against the host
# emulation of the GPU runtime (RTX_GPU_EMULATION=1), which needs no GPU.
set -euo pipefail
train=$1 ranks=$2 steps=$3 work=$4 inputs=$5
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
emit=${EMIT:-cpp}
source="$work/program.$([ "$emit" = cuda ] && echo cu || echo cpp)"
rtx-translate --emit="$emit" "$train" -o "$source" --build-script "$work/build.sh"
RTX_GPU_EMULATION=$([ "$emit" = cuda ] && echo 1 || echo 0) \
  sh "$work/build.sh" "$source" "$work/program"
# A step compiled with offload=nvme keeps its state in files: each run its
# own folder.
run_offload=() program_offload=()
if grep -q 'rtx.offload = "nvme"' "$train"; then
  run_offload=(--offload-dir "$work/offload-run")
  program_offload=(--offload-dir "$work/offload-program")
fi
rtx-run "$train" --ranks "$ranks" --inputs "$inputs" --steps "$steps" \
  --out "$work/run-out" "${run_offload[@]}" > "$work/run.log"
rtx-launch -n "$ranks" --store "file:$work/store" -- \
  "$work/program" --inputs "$inputs" --steps "$steps" --out "$work/program-out" \
  "${program_offload[@]}" > "$work/program.log" 2> "$work/program.err" ||
  { cat "$work/program.err" >&2; exit 1; }
/usr/bin/python3 "$here/compare_program.py" "$work/run.log" "$work/program.log" \
  "$work/run-out" "$work/program-out"
