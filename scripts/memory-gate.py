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

    scripts/memory-gate.py [--work DIR] [--ranks 4] [--steps 3] [--json FILE]
                           [--strategies dp,zero1,...] [--no-gate]

With --no-gate it only measures (bench/cpu/sharding.sh: step times and
peaks on 2 processes, every strategy); the step time is the median of
step_time_ms over the steps after the first.

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

# name -> rtx-distribute options. zero3 is ShardingConfig's zero3 and fsdp
# (FSDP's FULL_SHARD: parameters resharded after the forward pass);
# stage3-keep keeps them gathered until the backward (FSDP's SHARD_GRAD_OP).
STRATEGIES = {"dp": "", "zero1": "shard-state=1", "zero2": "shard-state=2",
              "zero3": "shard-state=3",
              "stage3-keep": "shard-state=3 reshard-after-forward=false",
              # ZeRO-Offload: the state (and stage 3's shards) in host
              # memory or in files (docs/fsdp.md).
              "zero3-cpu": "shard-state=3 offload=cpu",
              "zero3-nvme": "shard-state=3 offload=nvme"}
GATED = ["dp", "zero1", "zero2", "zero3"]


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
    parser.add_argument("--strategies", default=",".join(GATED),
                        help=f"comma-separated, of {', '.join(STRATEGIES)}")
    parser.add_argument("--no-gate", action="store_true", help="measure only")
    args = parser.parse_args()
    names = args.strategies.split(",")
    for name in names:
        if name not in STRATEGIES:
            parser.error(f"unknown strategy {name!r}; expected one of {', '.join(STRATEGIES)}")
    if names[0] != "dp":
        parser.error("--strategies: the ratios are against plain dp; list dp first")
    if not args.no_gate and names[:4] != GATED:
        parser.error(f"the gate needs --strategies {','.join(GATED)} (or --no-gate)")
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
    for name in names:
        d = os.path.join(work, name)
        os.makedirs(d)
        options = f"mesh=dp:{args.ranks} lr=0.01 eps=1e-5 {STRATEGIES[name]}".strip()
        print(f"memory-gate: {name}: compiling", flush=True)
        run([tool("rtx-opt"), os.path.join(work, "gpt.mlir"), f"-rtx-distribute={options}",
             f"-rtx-plan-memory=report-file={d}/plan.json", "-o", f"{d}/train.mlir"])
        planned = json.load(open(f"{d}/plan.json"))["functions"][0]
        run([tool("rtx-translate"), "--emit=cpp", f"{d}/train.mlir", "-o", f"{d}/program.cpp",
             "--build-script", f"{d}/build.sh"])
        run(["sh", f"{d}/build.sh", f"{d}/program.cpp", f"{d}/program"])
        print(f"memory-gate: {name}: running {args.ranks} processes", flush=True)
        # One thread per rank: the ranks share this machine's cores, and the
        # step times compare strategies, not thread contention.
        run([tool("rtx-launch"), "-n", str(args.ranks), "--store", f"file:{d}/store", "--",
             f"{d}/program", "--inputs", os.path.join(work, "data"), "--steps",
             str(args.steps), "--metrics", f"{d}/metrics.jsonl",
             *(["--offload-dir", f"{d}/offload"] if "offload=nvme" in options else [])],
            env=dict(os.environ, OMP_NUM_THREADS="1"))
        lines = [json.loads(line) for line in open(f"{d}/metrics.jsonl")]
        measured = max(line["step_peak_bytes"] for line in lines)
        times = sorted(line["step_time_ms"] for line in lines[1:] or lines)
        rows.append({"strategy": name, "options": STRATEGIES[name],
                     "measured_peak_bytes": measured,
                     "median_step_ms": times[len(times) // 2],
                     "planned_peak_bytes": planned["peak_bytes"],
                     "planned_by_kind": planned["by_kind"]})

    dp = rows[0]["measured_peak_bytes"]
    dp_ms = rows[0]["median_step_ms"]
    print(f"\n{'strategy':<12} {'measured MiB':>13} {'planned MiB':>12} {'vs dp':>7} {'plan err':>9}"
          f" {'step ms':>8} {'vs dp':>6}")
    failures = []
    for row in rows:
        m, p = row["measured_peak_bytes"], row["planned_peak_bytes"]
        row["ratio_to_dp"] = m / dp
        row["plan_error"] = (p - m) / m
        row["step_time_ratio_to_dp"] = row["median_step_ms"] / dp_ms
        print(f"{row['strategy']:<12} {m / 2**20:13.2f} {p / 2**20:12.2f} "
              f"{m / dp:7.2f} {100 * row['plan_error']:8.1f}% {row['median_step_ms']:8.1f} "
              f"{row['step_time_ratio_to_dp']:6.2f}")
        if abs(row["plan_error"]) > 0.10:
            failures.append(f"{row['strategy']}: the planner's {p} bytes are "
                            f"{100 * row['plan_error']:+.1f}% off the measured {m} (limit 10%)")
    if not args.no_gate:
        z1, z2, z3 = (row["measured_peak_bytes"] for row in rows[1:4])
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
    if args.no_gate:
        return 0
    z1, z2, z3 = (row["measured_peak_bytes"] for row in rows[1:4])
    print(f"memory-gate: pass: zero3 {z3 / dp:.2f}x dp, zero2 {z2 / dp:.2f}x, "
          f"zero1 {z1 / dp:.2f}x; every plan within 10% of its measured peak")
    return 0


if __name__ == "__main__":
    sys.exit(main())
