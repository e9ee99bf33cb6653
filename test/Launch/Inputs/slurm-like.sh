#!/usr/bin/env bash
# Starts PROGRAM as srun would on one node: N processes with SLURM_PROCID,
# SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID, SLURM_NNODES,
# SLURM_TASKS_PER_NODE, SLURM_JOB_NODELIST and SLURM_JOB_ID set, and nothing
# else of a launcher's (no RANK, no RTX_STORE: the program derives a store in
# /tmp from the job id, removed afterwards). Prints rank 0's output, then
# the others'; exits with the first failure.
#   slurm-like.sh WORKDIR N PROGRAM ARGS...
set -euo pipefail
work=$1 n=$2
shift 2
mkdir -p "$work"
job="lit$$"
trap 'rm -rf "/tmp/rtx-store-slurm-$job.0"' EXIT
pids=()
for ((r = 0; r < n; ++r)); do
  env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u RTX_STORE -u RTX_RUN_ID \
    SLURM_PROCID=$r SLURM_NTASKS=$n SLURM_LOCALID=$r SLURM_NODEID=0 \
    SLURM_NNODES=1 SLURM_TASKS_PER_NODE=$n SLURM_JOB_NODELIST="$(hostname)" \
    SLURM_JOB_ID=$job SLURM_STEP_ID=0 "$@" > "$work/rank$r.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || { [ $status = 0 ] && status=$?; }; done
for ((r = 0; r < n; ++r)); do cat "$work/rank$r.log"; done
exit $status
