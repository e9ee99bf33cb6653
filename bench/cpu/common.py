"""Pieces both CPU benchmarks share: the model flags and compiling the rtx side.

Each benchmark differs only in how it distributes the step (which rtx-opt
pipeline, which launcher) and in its PyTorch peer; everything else lives here
so the two measure the same model built the same way.
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples"))


def limit_blas_threads(threads):
    """PyTorch 1.13's torch.set_num_threads does not reach OpenBLAS, whose
    pthreads build (Debian's, which torch links) starts one thread per core:
    a "1-thread" PyTorch then ran its GEMMs on 2 threads, and a 2-thread one
    ran 4 threads on 2 cores. OpenBLAS reads OPENBLAS_NUM_THREADS when it is
    loaded, so this must run before numpy or torch is imported; spawned
    workers inherit it. (rtx keeps OpenBLAS on one thread itself and
    parallelises with OpenMP: OMP_NUM_THREADS.)"""
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)


def openblas_threads():
    """The thread count of the OpenBLAS loaded in this process (PyTorch's)."""
    import ctypes
    try:
        return ctypes.CDLL("libopenblas.so.0").openblas_get_num_threads()
    except (OSError, AttributeError):
        return "?"


def blas_kernels():
    """OpenBLAS's kernel choice in force for both sides (they share this
    process's environment): OPENBLAS_CORETYPE when set (this workplace's
    machines set it to Haswell), else OpenBLAS's own detection."""
    return os.environ.get("OPENBLAS_CORETYPE", "unset (OpenBLAS detects the CPU)")


def add_model_args(parser):
    """Flags for the GPT-2-style model, the batch and the number of timed steps."""
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--opt-level", type=int, choices=range(4),
                        help="rtx-translate --opt-level of the program (default: rtx-translate's)")


def build_rtx_program(a, work, data, train_pass):
    """Writes the builder model and its batch to `work`, turns it into a train
    step with the rtx-opt flag `train_pass`, emits and compiles it; returns the
    program's path."""
    import numpy as np
    from rtx import models

    bin_dir = os.path.join(a.build, "bin")
    config = models.GPTConfig(vocab=a.vocab, seq=a.seq, batch=a.batch, layers=a.layers,
                              heads=a.heads, width=a.width)
    with open(f"{work}/model.mlir", "w") as f:
        f.write(models.gpt2(config).text())
    np.save(f"{work}/tokens.npy", data[:, :-1])
    np.save(f"{work}/labels.npy", data[:, 1:])
    subprocess.run([f"{bin_dir}/rtx-opt", f"{work}/model.mlir", *train_pass, "-o",
                    f"{work}/train.mlir"], check=True)
    level = [] if a.opt_level is None else [f"--opt-level={a.opt_level}"]
    subprocess.run([f"{bin_dir}/rtx-translate", f"{work}/train.mlir", "-o", f"{work}/p.cpp",
                    "--build-script", f"{work}/build.sh", *level], check=True)
    subprocess.run(["sh", f"{work}/build.sh", f"{work}/p.cpp", f"{work}/p"], check=True)
    return f"{work}/p"


def rtx_tokens_per_second(a, program_output):
    """Tokens/s from the `time=...ms` lines the emitted program prints per step,
    skipping the warm-up steps."""
    times = [float(m.group(1)) for m in re.finditer(r"time=([\d.]+)ms", program_output)]
    times = times[a.warmup:]
    return a.batch * a.seq / (sum(times) / len(times) / 1000)


def print_rounds(rows, rtx_label, peer_label):
    """Prints each round's tokens/s of rtx and its peer, measured one after
    the other, and the median ratio (machines here are shared and noisy)."""
    for i, (rtx_tps, peer_tps) in enumerate(rows, 1):
        print(f"round {i}: {rtx_label} {rtx_tps:8.0f} tokens/s, {peer_label} {peer_tps:8.0f} "
              f"tokens/s, ratio {rtx_tps / peer_tps:.2f}")
    ratios = sorted(r / p for r, p in rows)
    print(f"ratio rtx / {peer_label} (median of {len(rows)} rounds): "
          f"{ratios[len(ratios) // 2]:.2f} (goal >= 1.0)")
