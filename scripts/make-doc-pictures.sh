#!/usr/bin/env bash
# Regenerates the pictures of docs/observability.md from real runs:
#   scripts/make-doc-pictures.sh [BUILD_DIR]
# - a traced dp=2 run of the tiny GPT-2 with bucketed, overlapped
#   all-reduces -> rtx report's timeline and step-time plots;
# - bench/cpu/scaling.py -> the scaling curve.
# They show this machine's timings; regenerate them rather than edit.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
BIN="$BUILD/bin"
OUT="$ROOT/docs/images"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"

"$BIN/rtx-opt" "$ROOT/examples/gpt2-tiny.mlir" \
  '-rtx-distribute=mesh=dp:2 lr=0.01 bucket-bytes=40000 overlap=true' -o "$WORK/dp2.mlir"
"$BIN/rtx-translate" "$WORK/dp2.mlir" -o "$WORK/dp2.cpp" --build-script "$WORK/build.sh"
sh "$WORK/build.sh" "$WORK/dp2.cpp" "$WORK/dp2"
"$BIN/rtx-launch" -n 2 --store "file:$WORK/store" --trace "$WORK/run" -- \
  "$WORK/dp2" --steps 30 > /dev/null
/usr/bin/python3 "$ROOT/bench/cpu/scaling.py" --build "$BUILD" --json "$WORK/scaling.json"
"$BIN/rtx" report "$WORK/run" --out "$WORK/plots" --scaling "$WORK/scaling.json"
cp "$WORK/plots/timeline.png" "$OUT/observability-timeline.png"
cp "$WORK/plots/step_times.png" "$OUT/observability-step-times.png"
cp "$WORK/plots/scaling.png" "$OUT/observability-scaling.png"
echo "make-doc-pictures: wrote $OUT/observability-*.png"

# docs/pipeline.md: the schedules as the simulator runs them (4 ranks, 8
# micro-batches; F 1, B 2, W 1).
for spec in "1f1b::" "gpipe::" "interleaved:2:" "zb-h1::"; do
  IFS=: read -r kind virtual _ <<< "$spec"
  "$BIN/rtx-schedule" --schedule "$kind" --ranks 4 --micro-batches 8 \
    ${virtual:+--virtual $virtual} --quiet --timeline "$WORK/$kind.json" > "$WORK/$kind.txt"
  PYTHONPATH="$ROOT/python" /usr/bin/python3 -m rtx.schedule_plot "$WORK/$kind.json" \
    "$OUT/pipeline-$kind.png" --title "$(head -1 "$WORK/$kind.txt")"
done
echo "make-doc-pictures: wrote $OUT/pipeline-*.png"
