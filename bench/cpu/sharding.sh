#!/usr/bin/env bash
# Sharded training on CPU processes: step time and measured peak memory per
# rank of ZeRO-1, ZeRO-2, ZeRO-3 / FSDP FULL_SHARD and stage 3 without
# resharding after the forward (FSDP's SHARD_GRAD_OP) against plain data
# parallelism (the peer), dp=2 under rtx-launch, one thread per rank, the
# memory gate's model-state-heavy GPT, 12 steps (the median of steps 2-12).
# docs/benchmarks.md records a run.
#   bench/cpu/sharding.sh [--ranks 2] [--steps 12] [--json FILE]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/../../scripts/memory-gate.py" --no-gate --ranks 2 --steps 12 \
  --strategies dp,zero1,zero2,zero3,stage3-keep --work /tmp/rtx-bench-sharding "$@"
