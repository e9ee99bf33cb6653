#!/usr/bin/env python3
"""Two-rank data-parallel CPU training: rtx's emitted program vs torch DDP.

The same GPT-2-style model and global batch as gpt2_vs_torch.py, split over
2 processes: rtx's dp=2 program (rtx-distribute, rtx-translate, rtx-launch,
Gloo) against torch.nn.parallel.DistributedDataParallel with the Gloo
backend, 1 thread per process for both. Prints tokens/s of each (global
batch) and the ratio rtx / DDP (goal: >= 1.0).

    python3 bench/cpu/gpt2_dp2_vs_ddp.py [--build build] [--steps 10]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

from common import (add_model_args, build_rtx_program, rtx_tokens_per_second,
                    print_rounds, blas_kernels,
                    limit_blas_threads)


def ddp_worker(rank, args, data, port, result):
    import numpy as np
    import torch
    import torch.distributed as dist
    from torch_models import GPT, GPTConfig
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(
        GPT(GPTConfig(n_layer=args.layers, n_head=args.heads, n_embd=args.width,
                      vocab_size=args.vocab, block_size=args.seq)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    local = args.batch // 2
    idx = torch.from_numpy(data[rank * local:(rank + 1) * local, :-1].astype(np.int64))
    targets = torch.from_numpy(data[rank * local:(rank + 1) * local, 1:].astype(np.int64))
    times = []
    for _ in range(args.steps + args.warmup):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        _, loss = model(idx, targets)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - start)
    if rank == 0:
        result.put(sum(times[args.warmup:]) / args.steps)
    dist.destroy_process_group()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(p)
    p.add_argument("--rounds", type=int, default=3,
                   help="alternate rtx and DDP this many times; the median ratio is reported")
    a = p.parse_args()
    blas = blas_kernels()
    limit_blas_threads(1)  # before numpy/torch load OpenBLAS

    import numpy as np
    import torch.multiprocessing as mp

    tokens_per_step = a.batch * a.seq
    data = np.random.default_rng(0).integers(0, a.vocab, (a.batch, a.seq + 1)).astype(np.int32)
    bin_dir = os.path.join(a.build, "bin")
    ctx = mp.get_context("spawn")

    def ddp_tokens_per_second():
        result = ctx.Queue()
        port = 29500 + os.getpid() % 1000
        procs = [ctx.Process(target=ddp_worker, args=(r, a, data, port, result)) for r in range(2)]
        for proc in procs:
            proc.start()
        step_time = result.get()
        for proc in procs:
            proc.join()
        return tokens_per_step / step_time

    rows = []
    with tempfile.TemporaryDirectory() as work:
        program = build_rtx_program(
            a, work, data, ["-rtx-distribute=mesh=dp:2 lr=0.001 weight-decay=0.01"])
        env = dict(os.environ, OMP_NUM_THREADS="1")
        for round_ in range(a.rounds):
            out = subprocess.run([f"{bin_dir}/rtx-launch", "-n", "2", "--store",
                                  f"file:{work}/store{round_}", "--", program, "--inputs", work,
                                  "--steps", str(a.steps + a.warmup)],
                                 check=True, capture_output=True, text=True, env=env).stdout
            rows.append((rtx_tokens_per_second(a, out), ddp_tokens_per_second()))

    print(f"GPT-2 style: {a.layers} layers, width {a.width}, {a.heads} heads, seq {a.seq}, global batch "
          f"{a.batch} on 2 ranks x 1 thread; AdamW; {a.steps} timed steps; "
          f"OPENBLAS_CORETYPE {blas}, the same for both")
    print_rounds(rows, "rtx dp=2 (emitted C++, Gloo)", "torch DDP (Gloo)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
