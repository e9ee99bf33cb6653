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
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples"))


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
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    a = p.parse_args()

    import numpy as np
    import torch.multiprocessing as mp
    from rtx import models

    tokens_per_step = a.batch * a.seq
    data = np.random.default_rng(0).integers(0, a.vocab, (a.batch, a.seq + 1)).astype(np.int32)
    bin_dir = os.path.join(a.build, "bin")
    with tempfile.TemporaryDirectory() as work:
        config = models.GPTConfig(vocab=a.vocab, seq=a.seq, batch=a.batch, layers=a.layers,
                                  heads=a.heads, width=a.width)
        with open(f"{work}/model.mlir", "w") as f:
            f.write(models.gpt2(config).text())
        np.save(f"{work}/tokens.npy", data[:, :-1])
        np.save(f"{work}/labels.npy", data[:, 1:])
        subprocess.run([f"{bin_dir}/rtx-opt", f"{work}/model.mlir",
                        "-rtx-distribute=mesh=dp:2 lr=0.001 weight-decay=0.01", "-o",
                        f"{work}/train.mlir"], check=True)
        subprocess.run([f"{bin_dir}/rtx-translate", f"{work}/train.mlir", "-o", f"{work}/p.cpp",
                        "--build-script", f"{work}/build.sh"], check=True)
        subprocess.run(["sh", f"{work}/build.sh", f"{work}/p.cpp", f"{work}/p"], check=True)
        env = dict(os.environ, OMP_NUM_THREADS="1")
        out = subprocess.run([f"{bin_dir}/rtx-launch", "-n", "2", "--store", f"file:{work}/store", "--",
                              f"{work}/p", "--inputs", work, "--steps", str(a.steps + a.warmup)],
                             check=True, capture_output=True, text=True, env=env).stdout
        times = [float(m.group(1)) for m in re.finditer(r"time=([\d.]+)ms", out)][a.warmup:]
        rtx_tps = tokens_per_step / (sum(times) / len(times) / 1000)

    ctx = mp.get_context("spawn")
    result = ctx.Queue()
    port = 29500 + os.getpid() % 1000
    procs = [ctx.Process(target=ddp_worker, args=(r, a, data, port, result)) for r in range(2)]
    for proc in procs:
        proc.start()
    step_time = result.get()
    for proc in procs:
        proc.join()
    ddp_tps = tokens_per_step / step_time

    print(f"GPT-2 style: {a.layers} layers, width {a.width}, {a.heads} heads, seq {a.seq}, global batch "
          f"{a.batch} on 2 ranks x 1 thread; AdamW; {a.steps} timed steps")
    print(f"rtx dp=2 (emitted C++, Gloo): {rtx_tps:10.0f} tokens/s")
    print(f"torch DDP (Gloo):            {ddp_tps:10.0f} tokens/s")
    print(f"ratio rtx / DDP: {rtx_tps / ddp_tps:.2f} (goal >= 1.0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
