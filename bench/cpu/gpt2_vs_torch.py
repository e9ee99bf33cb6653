#!/usr/bin/env python3
"""Single-rank CPU training throughput: rtx's emitted program vs PyTorch 1.13.

The same GPT-2-style model (nanoGPT's, examples/torch_models.py, and its
builder twin python/rtx/models.py), the same batch and AdamW, the same number
of threads (OMP_NUM_THREADS and OPENBLAS_NUM_THREADS for both;
torch.set_num_threads). Both train on
one fixed next-token batch; the first steps are warm-up. Prints tokens/s of
each and the ratio rtx / PyTorch (goal: >= 1.0).

    python3 bench/cpu/gpt2_vs_torch.py [--build build] [--layers 4 --width 256
        --heads 4 --seq 128 --batch 8 --vocab 1024 --steps 10 --threads 2]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

from common import (add_model_args, build_rtx_program, rtx_tokens_per_second,
                    print_rounds, blas_kernels,
                    limit_blas_threads, openblas_threads)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(p)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--rounds", type=int, default=3,
                   help="alternate rtx and PyTorch this many times; the median ratio is "
                        "reported (the machines here are shared and noisy)")
    a = p.parse_args()
    blas = blas_kernels()
    limit_blas_threads(a.threads)  # before numpy/torch load OpenBLAS

    import numpy as np
    import torch
    from torch_models import GPT, GPTConfig

    tokens_per_step = a.batch * a.seq
    rng = np.random.default_rng(0)
    data = rng.integers(0, a.vocab, (a.batch, a.seq + 1)).astype(np.int32)

    # PyTorch: the same model and optimizer.
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=a.layers, n_head=a.heads, n_embd=a.width, vocab_size=a.vocab,
                          block_size=a.seq))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    idx = torch.from_numpy(data[:, :-1].astype(np.int64))
    targets = torch.from_numpy(data[:, 1:].astype(np.int64))

    def torch_tokens_per_second():
        step_times = []
        for step in range(a.steps + a.warmup):
            start = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            _, loss = model(idx, targets)
            loss.backward()
            opt.step()
            step_times.append(time.perf_counter() - start)
        return tokens_per_step / (sum(step_times[a.warmup:]) / a.steps)

    rows = []
    with tempfile.TemporaryDirectory() as work:
        # rtx: builder model -> train step -> C++ program.
        program = build_rtx_program(
            a, work, data, ["-rtx-autodiff", "-rtx-optimizer=kind=adamw lr=0.001 weight-decay=0.01"])
        env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
        for _ in range(a.rounds):
            out = subprocess.run([program, "--inputs", work, "--steps", str(a.steps + a.warmup)],
                                 check=True, capture_output=True, text=True, env=env).stdout
            rows.append((rtx_tokens_per_second(a, out), torch_tokens_per_second()))

    print(f"GPT-2 style: {a.layers} layers, width {a.width}, {a.heads} heads, seq {a.seq}, "
          f"batch {a.batch}, vocab {a.vocab}; AdamW; {a.threads} thread(s); {a.steps} timed "
          f"steps; OPENBLAS_CORETYPE {blas}, the same for both; "
          f"PyTorch's OpenBLAS threads: {openblas_threads()}")
    print_rounds(rows, "rtx (emitted C++ + librtxrt)", f"PyTorch {torch.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
