"""Reads `step k/N: loss=X` lines (rtx-run --steps) from stdin and checks
that training converged: the final loss is below --below and below
--fraction of the first loss. Prints the first and final loss."""
import argparse
import math
import re
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--below", type=float, required=True)
parser.add_argument("--fraction", type=float, default=1.0)
args = parser.parse_args()
losses = [float(m.group(1)) for m in re.finditer(r"step \d+/\d+: loss=(\S+)", sys.stdin.read())]
if not losses:
    sys.exit("no 'step k/N: loss=' lines in the input")
first, last = losses[0], losses[-1]
ok = math.isfinite(last) and last < args.below and last < args.fraction * first
print(f"steps={len(losses)} first_loss={first:.4g} final_loss={last:.4g} {'CONVERGED' if ok else 'NOT CONVERGED'}")
sys.exit(0 if ok else 1)
