#!/usr/bin/env python3
"""The GPT-style example on one GPU against the CPU program, side by side.

    python3 bench/gpu/gpt2_cuda_vs_cpu.py [--steps 20] [--layers 4 --width 256 ...]

On a machine with a GPU, nvcc and this repository built (`./scripts/test.sh`
or just the build; the script builds it when bin/rtx-translate is missing):

1. builds the GPT-2-style train step (rtx-autodiff, AdamW) with rtx-opt;
2. emits it twice with rtx-translate: --emit=cpp (CPU kernels) and
   --emit=cuda (cuBLAS, CUDA kernels), and compiles both;
3. runs both for --steps steps on the same seeded synthetic tokens (each
   program draws them itself, keyed by the seed: no files, no numpy);
4. checks that every step's loss agrees (relative 1e-4: the GPU sums in other
   orders than the CPU) and prints tokens/s of each and their ratio.

Exits non-zero when the losses disagree or a program fails. Nothing here needs
anything but python3, cmake/ninja (to build) and the CUDA toolkit.
"""
import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench", "cpu"))

from common import add_model_args  # noqa: E402


def run(cmd, **kwargs):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kwargs)


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_model_args(parser)
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--work", default="/tmp/rtx-bench-gpu")
    parser.add_argument("--emulate", action="store_true",
                        help="build the CUDA program for the host emulation of the GPU "
                             "runtime (checks this script without a GPU; its speed "
                             "means nothing)")
    a = parser.parse_args()
    a.build = os.path.abspath(a.build)
    ensure_built(a.build)
    from rtx import models

    os.makedirs(a.work, exist_ok=True)
    bin_dir = os.path.join(a.build, "bin")
    config = models.GPTConfig(vocab=a.vocab, seq=a.seq, batch=a.batch, layers=a.layers,
                              heads=a.heads, width=a.width)
    with open(f"{a.work}/model.mlir", "w") as f:
        f.write(models.gpt2(config).text())
    run([f"{bin_dir}/rtx-opt", f"{a.work}/model.mlir", "-rtx-autodiff",
         "-rtx-optimizer=kind=adamw lr=0.001", "-o", f"{a.work}/train.mlir"])
    programs = {}
    for emit, ext in (("cpp", "cpp"), ("cuda", "cu")):
        source = f"{a.work}/program.{ext}"
        run([f"{bin_dir}/rtx-translate", f"--emit={emit}", f"{a.work}/train.mlir",
             "-o", source, "--build-script", f"{a.work}/build-{emit}.sh"])
        started = time.time()
        env = dict(os.environ, RTX_GPU_EMULATION="1" if a.emulate else "0")
        run(["sh", f"{a.work}/build-{emit}.sh", source, f"{a.work}/program-{emit}"], env=env)
        print(f"built the {emit} program in {time.time() - started:.1f} s")
        programs[emit] = f"{a.work}/program-{emit}"

    tokens = a.batch * a.seq
    results = {}
    for emit in ("cuda", "cpp"):
        out = subprocess.run([programs[emit], "--steps", str(a.steps), "--seed", "0"],
                             capture_output=True, text=True)
        print(out.stdout[-2000:], out.stderr[-2000:], sep="")
        if out.returncode != 0:
            sys.exit(f"the {emit} program failed (exit {out.returncode})")
        results[emit] = losses_and_rate(out.stdout, tokens, a.warmup)

    (gpu_losses, gpu_rate), (cpu_losses, cpu_rate) = results["cuda"], results["cpp"]
    if len(gpu_losses) != a.steps or len(cpu_losses) != a.steps:
        sys.exit(f"expected {a.steps} losses, got GPU {len(gpu_losses)}, CPU {len(cpu_losses)}")
    worst = max(abs(g - c) / abs(c) for g, c in zip(gpu_losses, cpu_losses))
    print(f"model: GPT-2 layers={a.layers} width={a.width} heads={a.heads} seq={a.seq} "
          f"batch={a.batch} vocab={a.vocab}, AdamW, {a.steps} steps")
    print(f"losses: step 1 GPU {gpu_losses[0]:.6e} CPU {cpu_losses[0]:.6e}; "
          f"step {a.steps} GPU {gpu_losses[-1]:.6e} CPU {cpu_losses[-1]:.6e}; "
          f"largest relative difference {worst:.2e} (tolerance {a.tolerance:g})")
    print(f"tokens/s: GPU {gpu_rate:.0f}, CPU {cpu_rate:.0f}, ratio GPU/CPU {gpu_rate / cpu_rate:.1f}")
    if not worst <= a.tolerance:
        sys.exit("FAIL: the GPU losses differ from the CPU run")
    print("PASS: the CUDA program trains as the CPU program does")


if __name__ == "__main__":
    main()
