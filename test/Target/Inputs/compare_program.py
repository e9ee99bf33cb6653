"""Compares an emitted program's run with rtx-run's on the same train step.

    compare_program.py RUN_LOG PROGRAM_LOG RUN_OUT PROGRAM_OUT

Both logs hold `step k/N: loss=X` lines (the program's possibly prefixed by
`[rank 0] `); both OUT directories hold resultN.npy. Checks every step's loss
and every final result within fp32 tolerance (relative norm 1e-5)."""
import glob
import os
import re
import sys

import numpy as np

run_log, program_log, run_out, program_out = sys.argv[1:5]
pattern = re.compile(r"step (\d+)/\d+: loss=(\S+)")
run_losses = [float(m.group(2)) for m in pattern.finditer(open(run_log).read())]
program_losses = [float(m.group(2)) for m in pattern.finditer(open(program_log).read())]
# A step without a loss (a program of collectives) prints none: then only
# the results are compared.
if len(run_losses) != len(program_losses):
    sys.exit(f"loss lines differ: rtx-run {len(run_losses)}, program {len(program_losses)}")
for step, (a, b) in enumerate(zip(program_losses, run_losses), 1):
    if not abs(a - b) <= 1e-5 * max(abs(b), 1e-30):
        sys.exit(f"step {step}: program loss {a} != rtx-run loss {b}")
count = 0
worst = max((abs(a - b) / max(abs(b), 1e-30)
             for a, b in zip(program_losses, run_losses)), default=0.0)
for path in sorted(glob.glob(os.path.join(run_out, "result*.npy"))):
    name = os.path.basename(path)
    ref = np.load(path).astype(np.float64)
    got = np.load(os.path.join(program_out, name)).astype(np.float64)
    if ref.shape != got.shape:
        sys.exit(f"{name}: shape {got.shape} != {ref.shape}")
    rel = np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30)
    if not rel <= 1e-5:
        sys.exit(f"{name}: relative error {rel:.3e} exceeds 1e-5")
    worst = max(worst, rel)
    count += 1
if count == 0:
    sys.exit(f"no resultN.npy in {run_out}")
# The largest error, so that a run on another machine shows its margin.
print(f"{len(run_losses)} step losses and {count} final results equal rtx-run's"
      f" (largest relative difference {worst:.1e})")
