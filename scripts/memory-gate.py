#!/usr/bin/env python3
"""The memory gate of sharded training (docs/fsdp.md).

On 4 local CPU processes, at equal global batch, for a model-state-heavy
GPT (2 layers, width 256, vocabulary 512: 7 MB of parameters against 0.1 MB
of activations per layer and rank), it builds plain data parallelism and
ZeRO-1, 2 and 3 (rtx-distribute's shard-state), plans each with
rtx-plan-memory, runs each emitted program for 3 steps and reads the
measured peak of each step from the allocator's counters
(step_peak_bytes in the metrics; deterministic, not a timing). It checks:

- ZeRO-3's measured peak per rank is at most 0.6x plain dp's;
- ZeRO-1 and ZeRO-2 fall between dp and ZeRO-3, in order;
- for every strategy, the planner's estimate is within 10% of the measured
  peak.

    scripts/memory-gate.py [--work DIR] [--ranks 4] [--json FILE]

Tools come from $RTX_BUILD_DIR/bin (default ./build/bin) or PATH. Exits 1
when a check fails, naming it."""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

STRATEGIES = [("dp", 0), ("zero1", 1), ("zero2", 2), ("zero3", 3)]


def tool(name):
    build = os.environ.get("RTX_BUILD_DIR", os.path.join(ROOT, "build"))
    path = os.path.join(build, "bin", name)
    if os.path.exists(path):
        return path
    found = shutil.which(name)
    if not found:
        sys.exit(f"memory-gate: {name} not found in {build}/bin or PATH (build rtx first)")
    return found


def run(cmd, **kw):
    result = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if result.returncode != 0:
        sys.exit(f"memory-gate: {' '.join(cmd)} failed ({result.returncode}):\n"
                 f"{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", default="/tmp/rtx-memory-gate")
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--json", help="also write the table as JSON here")
    args = parser.parse_args()
    from rtx import models

    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "data"))
    config = models.GPTConfig(layers=2, width=256, heads=4, vocab=512, seq=16, batch=8)
    with open(os.path.join(work, "gpt.mlir"), "w") as f:
        f.write(models.gpt2(config).text())
    run([sys.executable, os.path.join(ROOT, "examples", "make_lm_batch.py"),
         os.path.join(work, "data"), str(config.batch), str(config.seq), str(config.vocab)])

    rows = []
    for name, stage in STRATEGIES:
        d = os.path.join(work, name)
        os.makedirs(d)
        options = f"mesh=dp:{args.ranks} lr=0.01 eps=1e-5"
        if stage:
            options += f" shard-state={stage}"
        print(f"memory-gate: {name}: compiling", flush=True)
        run([tool("rtx-opt"), os.path.join(work, "gpt.mlir"), f"-rtx-distribute={options}",
             f"-rtx-plan-memory=report-file={d}/plan.json", "-o", f"{d}/train.mlir"])
        planned = json.load(open(f"{d}/plan.json"))["functions"][0]
        run([tool("rtx-translate"), "--emit=cpp", f"{d}/train.mlir", "-o", f"{d}/program.cpp",
             "--build-script", f"{d}/build.sh"])
        run(["sh", f"{d}/build.sh", f"{d}/program.cpp", f"{d}/program"])
        print(f"memory-gate: {name}: running {args.ranks} processes", flush=True)
        run([tool("rtx-launch"), "-n", str(args.ranks), "--store", f"file:{d}/store", "--",
             f"{d}/program", "--inputs", os.path.join(work, "data"), "--steps",
             str(args.steps), "--metrics", f"{d}/metrics.jsonl"])
        lines = [json.loads(line) for line in open(f"{d}/metrics.jsonl")]
        measured = max(line["step_peak_bytes"] for line in lines)
        rows.append({"strategy": name, "measured_peak_bytes": measured,
                     "planned_peak_bytes": planned["peak_bytes"],
                     "planned_by_kind": planned["by_kind"]})

    dp = rows[0]["measured_peak_bytes"]
    print(f"\n{'strategy':<9} {'measured MiB':>13} {'planned MiB':>12} {'vs dp':>7} {'plan err':>9}")
    failures = []
    for row in rows:
        m, p = row["measured_peak_bytes"], row["planned_peak_bytes"]
        row["ratio_to_dp"] = m / dp
        row["plan_error"] = (p - m) / m
        print(f"{row['strategy']:<9} {m / 2**20:13.2f} {p / 2**20:12.2f} "
              f"{m / dp:7.2f} {100 * row['plan_error']:8.1f}%")
        if abs(row["plan_error"]) > 0.10:
            failures.append(f"{row['strategy']}: the planner's {p} bytes are "
                            f"{100 * row['plan_error']:+.1f}% off the measured {m} (limit 10%)")
    z1, z2, z3 = (row["measured_peak_bytes"] for row in rows[1:])
    if z3 > 0.6 * dp:
        failures.append(f"zero3: measured peak {z3} bytes is {z3 / dp:.2f}x dp's {dp} (limit 0.6x)")
    if not dp >= z1 >= z2 >= z3:
        failures.append(f"not in order dp >= zero1 >= zero2 >= zero3: {dp}, {z1}, {z2}, {z3}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    for failure in failures:
        print(f"memory-gate: FAIL: {failure}")
    if failures:
        return 1
    print(f"memory-gate: pass: zero3 {z3 / dp:.2f}x dp, zero2 {z2 / dp:.2f}x, "
          f"zero1 {z1 / dp:.2f}x; every plan within 10% of its measured peak")
    return 0


if __name__ == "__main__":
    sys.exit(main())
