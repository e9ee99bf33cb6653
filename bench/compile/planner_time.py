#!/usr/bin/env python3
"""Time of rtx-auto-partition planning GPT-3 175B for 1024 A100s.

GPT-3 175B's shape (96 layers, width 12288, 96 heads, sequence 2048,
vocabulary 51200, bf16 with f32 masters), global batch 1536, on the
dgx-a100 profile: the whole search (probes of the real program, then every
dp x tp x pp, sequence parallelism, ZeRO stage, micro-batch size and count,
virtual stages, schedule, recompute, overlap and axis order) timed end to
end as rtx-opt's wall time (median of --repeat runs). Goal (issue 17): at
most 10 s on the 2-core development machine. The peer, in the same run, is
the same search without pruning (exhaustive=true): the ratio says what the
proven-safe pruning buys, and both must choose the same plan.

    python3 bench/compile/planner_time.py [--build build] [--repeat 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from rtx import models  # noqa: E402


def plan(opt: str, model: str, report: str, exhaustive: bool) -> float:
    options = ("profile=dgx-a100 devices=1024 global-batch=1536 vary-micro-batch=true "
               f"mixed-precision=true remarks=false report-file={report}"
               + (" exhaustive=true" if exhaustive else ""))
    start = time.perf_counter()
    subprocess.run([opt, model, f"-rtx-auto-partition={options}", "-o", os.devnull], check=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    opt = os.path.join(args.build, "bin", "rtx-opt")
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "gpt3-175b.mlir")
        config = models.GPTConfig(vocab=51200, seq=2048, batch=2, layers=96, heads=96, width=12288,
                                  qkv_layout="heads", dtype="bf16")
        with open(model, "w") as f:
            f.write(models.gpt2(config).text())
        results = {}
        for exhaustive in (False, True):
            report = os.path.join(tmp, f"report-{exhaustive}.json")
            runs = [plan(opt, model, report, exhaustive) for _ in range(args.repeat)]
            with open(report) as f:
                results[exhaustive] = (statistics.median(runs), json.load(f))
            print(f"{'exhaustive' if exhaustive else 'rtx-auto-partition'}: "
                  f"{results[exhaustive][0]:.2f} s (median of {args.repeat})", file=sys.stderr, flush=True)
    (fast, report), (full, reference) = results[False], results[True]
    search = report["search"]
    same = report["plan"]["distribute"] == reference["plan"]["distribute"]
    print(f"GPT-3 175B on 1024 A100s (dgx-a100), global batch 1536")
    print(f"  rtx-auto-partition: {fast:.2f} s end to end (probes {search['probe_seconds']:.2f} s, search "
          f"{search['search_seconds']:.2f} s; {search['priced']} of {search['enumerated']} plans priced)")
    print(f"  peer, exhaustive search: {full:.2f} s ({reference['search']['priced']} plans priced); "
          f"pruned/exhaustive = {fast / full:.2f}")
    print(f"  same plan chosen: {'yes' if same else 'NO'}: {report['plan']['distribute']}")
    print(f"  goal: at most 10 s: {'met' if fast <= 10 else 'MISSED'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
