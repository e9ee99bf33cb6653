#!/usr/bin/env bash
# Distributes MODEL with rtx-distribute on each MESH and checks with
# rtx-run --compare that STEPS training steps equal the single-device train
# step (same inputs, same initial parameters). Prints one line per mesh.
#   compare-meshes.sh MODEL.mlir "OPTIONS" STEPS INPUTS|--random MESH...
# OPTIONS: kind=..., lr=..., weight-decay=..., eps=..., clip-norm=... (both programs),
# tolerance=... (rtx-run --compare's, instead of its per-dtype default) and
# any other rtx-distribute option such as sequence-parallel=true.
set -euo pipefail
model=$1 optimizer=$2 steps=$3 inputs=$4
shift 4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ref_opts="" dist_opts="" compare_opts=()
for option in $optimizer; do
  case "$option" in
    kind=*) ref_opts+=" $option"; dist_opts+=" optimizer=${option#kind=}" ;;
    lr=*|weight-decay=*|eps=*|clip-norm=*) ref_opts+=" $option"; dist_opts+=" $option" ;;
    tolerance=*) compare_opts=(--tolerance "${option#tolerance=}") ;;
    *) dist_opts+=" $option" ;;
  esac
done
rtx-opt "$model" -rtx-autodiff "-rtx-optimizer=$ref_opts" -o "$tmp/ref.mlir"
data=(--random)
[ "$inputs" != "--random" ] && data=(--inputs "$inputs")
for mesh in "$@"; do
  ranks=1
  for axis in ${mesh//,/ }; do ranks=$((ranks * ${axis#*:})); done
  rtx-opt "$model" "-rtx-distribute=mesh=$mesh$dist_opts" \
    -o "$tmp/dist.mlir"
  # A step compiled with offload=nvme keeps its state in files.
  offload=()
  grep -q 'rtx.offload = "nvme"' "$tmp/dist.mlir" &&
    offload=(--offload-dir "$tmp/offload")
  out=$(rtx-run --compare "$tmp/ref.mlir" "$tmp/dist.mlir" --ranks "$ranks" \
        "${data[@]}" --steps "$steps" "${compare_opts[@]}" "${offload[@]}" 2>&1) || true
  pass=$(grep -c ' PASS$' <<<"$out" || true)
  fail=$(grep -c -E 'FAIL|error' <<<"$out" || true)
  echo "mesh $mesh ranks $ranks: $pass results pass, $fail fail"
done
