#!/usr/bin/env bash
# The GPU session's one device call: runs every check and benchmark that
# bench/gpu/*.py prepared here (build-gpu-speed, build-gpu-nccl,
# build-gpu-bench, build-gpu-small; carry the ones that exist), each under
# its own time limit
# so that one hang leaves the others' results, and copies the results and
# logs to RESULTS (default $OUT, the device tool's folder):
#
#   bash bench/gpu/run_prepared.sh [RESULTS]
#
# Exits non-zero when any check failed.
set -u
cd "$(dirname "$0")/../.."
results="${1:-${OUT:?name a results folder}}"
mkdir -p "$results"
export PYTHONUNBUFFERED=1
nvidia-smi -L 2>&1 | tee "$results/gpu.txt"
status=0
# Issue 37's measurement first: the fast kernels against their references,
# then rtx against PyTorch eager and torch.compile (docs/gpu.md).
if [ -d build-gpu-speed ]; then
  timeout "${RTX_GPU_SPEED_LIMIT:-330}" python3 bench/gpu/gpt2_speed.py run --out build-gpu-speed \
    > "$results/speed.log" 2>&1 || status=1
  cp build-gpu-speed/result.txt "$results/speed-result.txt" 2>/dev/null
  cp build-gpu-speed/result.json "$results/speed-result.json" 2>/dev/null
  cp build-gpu-speed/report-*.txt "$results/" 2>/dev/null
fi
if [ -d build-gpu-nccl ]; then
  timeout "${RTX_GPU_NCCL_LIMIT:-150}" python3 bench/gpu/nccl_in_job.py run --out build-gpu-nccl --repeat "${RTX_GPU_REPEAT:-1}" > "$results/nccl.log" 2>&1 || status=1
  cp build-gpu-nccl/result.txt "$results/nccl-result.txt" 2>/dev/null
  (cd build-gpu-nccl/run 2>/dev/null && tar czf "$results/nccl-logs.tar.gz" \
    nccl ./*.metrics.jsonl ./*/launch.out ./*/launch.err ./*/metrics.jsonl 2>/dev/null)
fi
for out in build-gpu-bench build-gpu-small; do
  [ -d "$out" ] || continue
  limit=100; [ "$out" = build-gpu-small ] && limit=150
  timeout $limit python3 bench/gpu/gpt2_cuda_vs_cpu.py run --out "$out" > "$results/$out.log" 2>&1 || status=1
  cp "$out/result.txt" "$results/$out-result.txt" 2>/dev/null
done
cat "$results"/*result*.txt
exit $status
