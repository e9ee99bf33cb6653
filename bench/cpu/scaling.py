#!/usr/bin/env python3
"""Data-parallel scaling of the CPU GPT-2 program: tokens/s on 1 and 2 ranks.

The model of gpt2_dp2_vs_ddp.py at a fixed global batch, compiled for dp=1
and dp=2 (rtx-distribute, rtx-translate) and run under rtx-launch with one
thread per rank. The peer is ideal linear scaling from dp=1: the efficiency
printed is tokens/s(n) / (n x tokens/s(1)). With --json FILE it writes the
points as rtx report --scaling reads them (a list of {label, ranks,
tokens_per_s}), the ideal line included.

    python3 bench/cpu/scaling.py [--build build] [--ranks 1,2] [--json results.json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from common import add_model_args, build_rtx_program, limit_blas_threads, rtx_tokens_per_second


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(p)
    p.add_argument("--ranks", default="1,2", help="data-parallel degrees, comma-separated (default 1,2)")
    p.add_argument("--json", metavar="FILE", help="write the points for rtx report --scaling")
    a = p.parse_args()
    limit_blas_threads(1)
    import numpy as np

    degrees = [int(n) for n in a.ranks.split(",")]
    if any(n < 1 or a.batch % n for n in degrees):
        p.error(f"--ranks {a.ranks}: every degree must divide the batch {a.batch}")
    data = np.random.default_rng(0).integers(0, a.vocab, (a.batch, a.seq + 1)).astype(np.int32)
    launch = os.path.join(a.build, "bin", "rtx-launch")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    points = []
    for n in degrees:
        with tempfile.TemporaryDirectory() as work:
            program = build_rtx_program(a, work, data, [f"-rtx-distribute=mesh=dp:{n} lr=0.001"])
            out = subprocess.run([launch, "-n", str(n), "--store", f"file:{work}/store", "--", program,
                                  "--inputs", work, "--steps", str(a.steps + a.warmup)],
                                 check=True, capture_output=True, text=True, env=env).stdout
            points.append((n, rtx_tokens_per_second(a, out)))
    base = points[0][1] / points[0][0]
    print(f"GPT-2 style: {a.layers} layers, width {a.width}, seq {a.seq}, global batch {a.batch}; "
          f"1 thread per rank; {a.steps} timed steps")
    for n, tps in points:
        print(f"dp={n}: {tps:8.0f} tokens/s, ideal {n * base:8.0f}, efficiency {tps / (n * base):.2f}")
    if a.json:
        rows = [{"label": "rtx dp (CPU, Gloo)", "ranks": n, "tokens_per_s": tps} for n, tps in points]
        rows += [{"label": "ideal (linear from dp=1)", "ranks": n, "tokens_per_s": n * base}
                 for n, _ in points]
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
