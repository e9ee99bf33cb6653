"""Checks an rtx-run --metrics file (JSON lines) and prints what FileCheck
matches: the keys of the first line and the losses.

  check_metrics.py METRICS --steps N [--log LOG] [--like OTHER.jsonl]

--steps: the file holds steps 1..N, each with a positive step_time_ms.
--log: its losses equal the progress lines ("step k/N: loss=X") of LOG.
--like: its losses equal those of OTHER (relative 1e-5, design.md's
tolerance for a forward pass).
"""
import argparse
import json
import math
import re

parser = argparse.ArgumentParser()
parser.add_argument("metrics")
parser.add_argument("--steps", type=int, required=True)
parser.add_argument("--log")
parser.add_argument("--like")
args = parser.parse_args()


def rows_of(path):
    return [json.loads(line) for line in open(path) if line.strip()]


rows = rows_of(args.metrics)
assert [r["step"] for r in rows] == list(range(1, args.steps + 1)), rows
assert all(r["step_time_ms"] > 0 for r in rows), rows
losses = [r["loss"] for r in rows]
if args.log:
    logged = [float(m) for m in re.findall(r"step \d+/\d+: loss=(\S+)", open(args.log).read())]
    assert len(logged) == len(losses), (logged, losses)
    assert all(abs(a - b) <= 1e-6 * abs(b) for a, b in zip(losses, logged)), (losses, logged)
if args.like:
    other = [r["loss"] for r in rows_of(args.like)]
    assert len(other) == len(losses), (losses, other)
    assert all(math.isfinite(a) and abs(a - b) <= 1e-5 * abs(b) for a, b in zip(losses, other)), (losses, other)
print("keys", sorted(rows[0]))
print("losses", " ".join("null" if l is None else f"{l:.6g}" for l in losses))
