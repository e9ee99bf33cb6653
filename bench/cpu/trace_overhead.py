#!/usr/bin/env python3
"""What tracing costs: the dp=2 GPT-2 program with --trace against itself without.

The model, batch and program of gpt2_dp2_vs_ddp.py (2 ranks x 1 thread,
Gloo), run alternately without and with `rtx-launch --trace DIR` (in turn first) (every
step traced: a span per op, collective, wait and step, and the merge at the
end, which is not in the step times). Prints each round's tokens/s and the
median ratio traced / untraced step time (goal: <= 1.03, issue 14).

    python3 bench/cpu/trace_overhead.py [--build build] [--steps 10] [--rounds 8]
"""
import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile

from common import add_model_args, blas_kernels, build_rtx_program, limit_blas_threads, rtx_tokens_per_second


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(p)
    p.add_argument("--rounds", type=int, default=8,
                   help="alternate untraced and traced runs this many times; the median ratio is reported")
    a = p.parse_args()
    limit_blas_threads(1)
    import numpy as np

    data = np.random.default_rng(0).integers(0, a.vocab, (a.batch, a.seq + 1)).astype(np.int32)
    launch = os.path.join(a.build, "bin", "rtx-launch")
    rows = []
    with tempfile.TemporaryDirectory() as work:
        program = build_rtx_program(a, work, data, ["-rtx-distribute=mesh=dp:2 lr=0.001 weight-decay=0.01"])
        env = dict(os.environ, OMP_NUM_THREADS="1")

        def tokens_per_second(round_, traced):
            trace = ["--trace", f"{work}/trace{round_}"] if traced else []
            out = subprocess.run([launch, "-n", "2", "--store", f"file:{work}/store{round_}{traced}",
                                  *trace, "--", program, "--inputs", work,
                                  "--steps", str(a.steps + a.warmup)],
                                 check=True, capture_output=True, text=True, env=env).stdout
            return rtx_tokens_per_second(a, out)

        # The order alternates (untraced first, then traced first): a machine
        # whose speed drifts during the run would otherwise favour one side.
        for round_ in range(a.rounds):
            if round_ % 2 == 0:
                plain = tokens_per_second(round_, False)
                traced = tokens_per_second(round_, True)
            else:
                traced = tokens_per_second(round_, True)
                plain = tokens_per_second(round_, False)
            rows.append((plain, traced))
        events = sum(1 for _ in open(f"{work}/trace0/rank-0.trace.json"))

    print(f"GPT-2 style: {a.layers} layers, width {a.width}, {a.heads} heads, seq {a.seq}, global batch "
          f"{a.batch} on 2 ranks x 1 thread; AdamW; {a.steps} timed steps; OPENBLAS_CORETYPE "
          f"{blas_kernels()}; rank 0's trace has {events} lines (one event each)")
    for i, (plain, traced) in enumerate(rows, 1):
        print(f"round {i}: untraced {plain:8.0f} tokens/s, traced {traced:8.0f} tokens/s, "
              f"step time ratio {plain / traced:.3f}")
    ratios = [plain / traced for plain, traced in rows]
    geometric = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"step time traced / untraced: median of {len(rows)} rounds {statistics.median(ratios):.3f}, "
          f"geometric mean {geometric:.3f}, rounds from {min(ratios):.3f} to {max(ratios):.3f} "
          f"(goal <= 1.03)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
