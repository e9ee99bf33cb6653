#!/usr/bin/env python3
"""The GPT-style example on one GPU against the CPU program, side by side.

The GPU machines lent to this project have CUDA, NCCL (pip's nvidia-nccl)
and cuBLAS, but neither LLVM/MLIR (rtx-opt, rtx-translate) nor Gloo or
OpenBLAS, and nothing can be installed there. So the work is split:

    # here, with the repository built (no GPU needed):
    python3 bench/gpu/gpt2_cuda_vs_cpu.py prepare [--out build-gpu-bench] [--steps 10] [model flags]
    # there, in a copy of the repository that carries build-gpu-bench:
    python3 bench/gpu/gpt2_cuda_vs_cpu.py run [--out build-gpu-bench]
    # on one machine that has everything:
    python3 bench/gpu/gpt2_cuda_vs_cpu.py all [...]

prepare: builds the GPT-2-style train step (rtx-autodiff, AdamW) with
rtx-opt, emits it twice with rtx-translate (--emit=cpp: CPU kernels;
--emit=cuda: cuBLAS and CUDA kernels), compiles both (nvcc for the CUDA one),
runs the CPU program for the reference losses, and packs the shared
libraries the programs need beyond libc, libstdc++, CUDA and NCCL into
libs.tar.xz (about 10 MB). Both programs draw the same seeded synthetic
tokens themselves: no data files.

run: unpacks the libraries, finds CUDA's and NCCL's (the CUDA toolkit's
lib64, pip's nvidia-* packages), runs the CUDA program and the CPU program on
that machine, checks that every step's GPU loss agrees with the prepared CPU
losses (relative 1e-4: the GPU sums in other orders), prints tokens/s of
each and their ratio, and writes them to OUT/result.txt. It runs the CUDA
program a second time with --no-step-arena --no-cuda-graph and checks that
its losses are the same as with the arena and the captured graphs (and prints
both rates). Exits non-zero when the losses disagree, a library is missing or
a program fails.

--emulate (prepare) builds the CUDA program for the host emulation of the
GPU runtime: the whole flow can then be checked without a GPU (its speed
means nothing).

--fuse-epilogues (prepare) runs rtx-fuse-epilogues on the CUDA program's
train step (GEMMs with bias + GELU and bias-gradient epilogues, docs/gpu.md);
the CPU program, the reference, stays the unfused step.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "cpu"))
sys.path.insert(0, HERE)

from common import add_model_args  # noqa: E402  (stdlib only)
from carry import add_prepared_args, library_environment, pack_libraries, run  # noqa: E402  (stdlib only)


def ensure_built(build):
    if os.path.exists(os.path.join(build, "bin", "rtx-translate")):
        run(["ninja", "-C", build])
        return
    run(["cmake", "-G", "Ninja", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release"])
    run(["ninja", "-C", build])


def losses_and_rate(output, tokens_per_step, warmup):
    losses = [float(m.group(1)) for m in re.finditer(r"step \d+/\d+: loss=(\S+)", output)]
    times = [float(m.group(1)) for m in re.finditer(r"time=([\d.]+)ms", output)][warmup:]
    rate = tokens_per_step / (sum(times) / len(times) / 1000) if times else float("nan")
    return losses, rate


def run_program(program, steps, env=None, flags=()):
    done = subprocess.run([program, "--steps", str(steps), "--seed", "0", *flags], capture_output=True,
                          text=True, env=env)
    print(done.stdout[-1500:], done.stderr[-1500:], sep="", flush=True)
    if done.returncode != 0:
        sys.exit(f"{os.path.basename(program)} failed (exit {done.returncode})")
    return done.stdout


def prepare(a):
    a.build = os.path.abspath(a.build)
    ensure_built(a.build)
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from rtx import models

    out = a.out
    os.makedirs(out, exist_ok=True)
    bin_dir = os.path.join(a.build, "bin")
    config = models.GPTConfig(vocab=a.vocab, seq=a.seq, batch=a.batch, layers=a.layers,
                              heads=a.heads, width=a.width)
    with open(f"{out}/model.mlir", "w") as f:
        f.write(models.gpt2(config).text())
    run([f"{bin_dir}/rtx-opt", f"{out}/model.mlir", "-rtx-autodiff",
         "-rtx-optimizer=kind=adamw lr=0.001", "-o", f"{out}/train.mlir"])
    steps = {"cpp": f"{out}/train.mlir", "cuda": f"{out}/train.mlir"}
    if a.fuse_epilogues:
        steps["cuda"] = f"{out}/train-fused.mlir"
        run([f"{bin_dir}/rtx-opt", f"{out}/train.mlir", "-rtx-fuse-epilogues",
             "-o", steps["cuda"]])
    for emit, ext in (("cpp", "cpp"), ("cuda", "cu")):
        source = f"{out}/program.{ext}"
        run([f"{bin_dir}/rtx-translate", f"--emit={emit}", steps[emit],
             "-o", source, "--build-script", f"{out}/build-{emit}.sh"])
        started = time.time()
        env = dict(os.environ, RTX_GPU_EMULATION="1" if a.emulate else "0")
        run(["sh", f"{out}/build-{emit}.sh", source, f"{out}/program-{emit}"], env=env)
        print(f"built the {emit} program in {time.time() - started:.1f} s")

    tokens = a.batch * a.seq
    cpu_losses, cpu_rate = losses_and_rate(run_program(f"{out}/program-cpp", a.steps), tokens, a.warmup)
    packed = pack_libraries([f"{out}/program-cpp", f"{out}/program-cuda"], f"{out}/libs.tar.xz")
    with open(f"{out}/bench.json", "w") as f:
        json.dump({"model": {k: getattr(a, k) for k in ("layers", "width", "heads", "seq", "batch", "vocab")},
                   "steps": a.steps, "warmup": a.warmup, "tokens_per_step": tokens, "emulated": a.emulate,
                   "fused_epilogues": a.fuse_epilogues,
                   "cpu_losses_here": cpu_losses, "cpu_tokens_per_s_here": cpu_rate}, f, indent=1)
    size = sum(os.path.getsize(os.path.join(out, n)) for n in ("program-cuda", "program-cpp", "libs.tar.xz"))
    print(f"prepared {out}: the two programs, the CPU losses and {packed} libraries "
          f"({size / 2**20:.1f} MiB to carry); on the GPU machine run:\n"
          f"  python3 bench/gpu/gpt2_cuda_vs_cpu.py run --out {os.path.relpath(out, ROOT)}")


def run_prepared(a):
    out = a.out
    with open(f"{out}/bench.json") as f:
        bench = json.load(f)
    env = library_environment(f"{out}/libs.tar.xz", [f"{out}/program-cuda", f"{out}/program-cpp"])

    steps, tokens, warmup = bench["steps"], bench["tokens_per_step"], bench["warmup"]
    gpu_output = run_program(f"{out}/program-cuda", steps, env)
    gpu_losses, gpu_rate = losses_and_rate(gpu_output, tokens, warmup)
    # The same program with every buffer from the pool and every step from
    # the host (docs/gpu.md "One arena, one graph per step"): the same losses.
    host_losses, host_rate = losses_and_rate(
        run_program(f"{out}/program-cuda", steps, env, ("--no-step-arena", "--no-cuda-graph")), tokens, warmup)
    graphs = re.findall(r"CUDA graphs: step \d+ captured", gpu_output)
    cpu_losses, cpu_rate = losses_and_rate(run_program(f"{out}/program-cpp", steps, env), tokens, warmup)
    reference = bench["cpu_losses_here"]
    if len(gpu_losses) != steps or len(reference) != steps:
        sys.exit(f"expected {steps} losses, got GPU {len(gpu_losses)}, CPU {len(reference)}")
    worst = max(abs(g - c) / abs(c) for g, c in zip(gpu_losses, reference))
    worst_cpu = max(abs(g - c) / abs(c) for g, c in zip(cpu_losses, reference))
    m = bench["model"]
    lines = [
        f"model: GPT-2 layers={m['layers']} width={m['width']} heads={m['heads']} seq={m['seq']} "
        f"batch={m['batch']} vocab={m['vocab']}, AdamW, {steps} steps"
        + (" (CUDA program built for the host emulation)" if bench["emulated"] else "")
        + (", CUDA program with fused GEMM epilogues" if bench.get("fused_epilogues") else ""),
        f"losses: step 1 GPU {gpu_losses[0]:.6e} CPU {reference[0]:.6e}; step {steps} GPU "
        f"{gpu_losses[-1]:.6e} CPU {reference[-1]:.6e}; largest relative difference {worst:.2e} "
        f"(tolerance {a.tolerance:g}); the CPU program here vs where prepared: {worst_cpu:.1e}",
        f"tokens/s on this machine: GPU {gpu_rate:.0f}, CPU {cpu_rate:.0f} "
        f"(OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'all cores')}), ratio GPU/CPU "
        f"{gpu_rate / cpu_rate:.1f}",
        f"step arena and CUDA graphs ({len(graphs)} captured): GPU {gpu_rate:.0f} tokens/s, without them "
        f"(--no-step-arena --no-cuda-graph) {host_rate:.0f}; losses "
        + ("identical" if host_losses == gpu_losses else f"DIFFER: {host_losses} vs {gpu_losses}"),
    ]
    same = host_losses == gpu_losses
    verdict = ("PASS: the CUDA program trains as the CPU program does" if worst <= a.tolerance and same
               else "FAIL: the GPU losses differ from the CPU run" if not worst <= a.tolerance
               else "FAIL: the step arena or the CUDA graphs change the losses")
    print("\n".join(lines + [verdict]))
    with open(f"{out}/result.txt", "w") as f:
        f.write("\n".join(lines + [verdict]) + "\n")
    if not (worst <= a.tolerance and same):
        sys.exit(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("phase", choices=("prepare", "run", "all"),
                        help="prepare here, run on the GPU machine, or both")
    add_model_args(parser)
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--fuse-epilogues", action="store_true",
                        help="rtx-fuse-epilogues on the CUDA program's step (prepare)")
    add_prepared_args(parser, ROOT, "build-gpu-bench")
    a = parser.parse_args()
    a.out = os.path.abspath(a.out)
    if a.phase in ("prepare", "all"):
        prepare(a)
    if a.phase in ("run", "all"):
        run_prepared(a)


if __name__ == "__main__":
    main()
