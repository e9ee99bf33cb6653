#!/usr/bin/env bash
# Pipelines MODEL (written for one micro-batch) with rtx-distribute on each
# CONFIG and checks with rtx-run --compare that STEPS AdamW steps equal the
# single-device train step of REFERENCE (the same model at the whole batch:
# micro-batches x its batch), on the same inputs and initial parameters.
# Prints one line per configuration.
#   compare-pipelines.sh MODEL REFERENCE STEPS INPUTS|--random CONFIG...
# CONFIG: MESH[;OPTION...], e.g. "dp:2,pp:2;pipeline-schedule=zb-h1".
set -euo pipefail
model=$1 reference=$2 steps=$3 inputs=$4
shift 4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
adamw="lr=0.01 eps=1e-5"
rtx-opt "$reference" -rtx-autodiff "-rtx-optimizer=kind=adamw $adamw" \
  -o "$tmp/ref.mlir"
data=(--random)
[ "$inputs" != "--random" ] && data=(--inputs "$inputs")
for config in "$@"; do
  mesh=${config%%;*} extra=""
  [ "$mesh" != "$config" ] && extra=${config#*;} && extra=${extra//;/ }
  ranks=1
  for axis in ${mesh//,/ }; do ranks=$((ranks * ${axis#*:})); done
  rtx-opt "$model" "-rtx-distribute=mesh=$mesh optimizer=adamw $adamw $extra" \
    -o "$tmp/dist.mlir" 2>"$tmp/warnings"
  # A step compiled with offload=nvme keeps its state in files.
  offload=()
  grep -q 'rtx.offload = "nvme"' "$tmp/dist.mlir" &&
    offload=(--offload-dir "$tmp/offload")
  out=$(rtx-run --compare "$tmp/ref.mlir" "$tmp/dist.mlir" --ranks "$ranks" \
        "${data[@]}" --steps "$steps" --tolerance 1e-4 "${offload[@]}" 2>&1) || true
  pass=$(grep -c ' PASS$' <<<"$out" || true)
  fail=$(grep -c -E 'FAIL|error' <<<"$out" || true)
  # Really pipelined: one function per pp coordinate, each sending.
  functions=$(grep -c 'rtx.pipeline_rank = ' "$tmp/dist.mlir" || true)
  sends=$(grep -c 'rtx.send_start' "$tmp/dist.mlir" || true)
  echo "$config: $functions stage functions, $sends sends, $pass results pass, $fail fail"
  grep error <<<"$out" | head -3 || true
done
