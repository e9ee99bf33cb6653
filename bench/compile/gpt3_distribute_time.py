#!/usr/bin/env python3
"""Compile time of rtx-distribute on GPT-3-175B-shaped models.

Width 12288, 96 heads, vocabulary 50257, sequence 2048, batch 8, with 24, 48
and 96 layers, distributed for dp=8 x tp=8 (64 ranks): autodiff, AdamW,
seeding, propagation, partitioning and the static verifier, timed end to end
(rtx-opt wall time, median of --repeat runs). Goal (issue 6): 96 layers in at
most 10 s on the 2-core development machine, growing linearly with depth:
the script prints time per layer and the 96/24 ratio (4.0 is linear).

    python3 bench/compile/gpt3_distribute_time.py [--build build] [--repeat 3]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from rtx import models  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--layers", type=int, nargs="*", default=[24, 48, 96])
    args = parser.parse_args()
    opt = os.path.join(args.build, "bin", "rtx-opt")
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        for layers in args.layers:
            config = models.GPTConfig(vocab=50257, seq=2048, batch=8, layers=layers,
                                      heads=96, width=12288)
            path = os.path.join(tmp, f"gpt3-{layers}.mlir")
            with open(path, "w") as f:
                f.write(models.gpt2(config).text())
            runs = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                subprocess.run([opt, path, "-rtx-distribute=mesh=dp:8,tp:8 optimizer=adamw",
                                "-o", os.path.join(tmp, "out.mlir")],
                               check=True, stderr=subprocess.DEVNULL)
                runs.append(time.perf_counter() - start)
            with open(os.path.join(tmp, "out.mlir")) as f:
                ops = sum(1 for line in f if " = rtx." in line or "rtx." in line.strip()[:10])
            times[layers] = statistics.median(runs)
            print(f"layers={layers:3d}  rtx-distribute {times[layers]:6.2f} s  "
                  f"({times[layers] / layers * 1000:6.1f} ms/layer, {ops} ops out)", flush=True)
    if 24 in times and 96 in times:
        print(f"growth 96/24 layers: {times[96] / times[24]:.2f}x (linear = 4.00x); "
              f"96 layers {'within' if times[96] <= 10 else 'OVER'} the 10 s goal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
