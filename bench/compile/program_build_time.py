#!/usr/bin/env python3
"""Build time of emitted programs at each optimisation level.

The emitted C++ only sequences calls into librtxrt, which is built optimised
whatever the program's level; this measures what the level costs to build:
the dp=2 program of examples/gpt2-tiny.mlir and a 12-layer GPT-2 program
(width 768, 12 heads, vocabulary 50304, sequence 1024), each built by the
build script rtx-translate writes (--opt-level=N, no program cache), median
of --repeat builds. Goal (issue 34): at the default level, the dp=2 tiny
program in at most 2 s and the 12-layer one in at most 15 s on the 2-core
development machine. What the level costs at run time is measured by the CPU
benchmarks (bench/cpu/gpt2_vs_torch.py --opt-level N): docs/benchmarks.md.

    python3 bench/compile/program_build_time.py [--build build] [--repeat 3] [--levels 0 1 2]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))

from rtx import models  # noqa: E402


def distribute(opt, source, mesh, out):
    subprocess.run([opt, source, f"-rtx-distribute=mesh={mesh} lr=0.01", "-o", out],
                   check=True, stderr=subprocess.DEVNULL)


def build_seconds(translate, train, level, work, repeat):
    """Median wall time of `sh build.sh` at -O`level`, and the source's lines."""
    source, script = f"{work}/p.cpp", f"{work}/build.sh"
    subprocess.run([translate, train, "-o", source, "--build-script", script,
                    f"--opt-level={level}", "--program-cache="], check=True)
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(["sh", script, source, f"{work}/p"], check=True)
        runs.append(time.perf_counter() - start)
    with open(source) as f:
        lines = sum(1 for _ in f)
    return statistics.median(runs), lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--levels", type=int, nargs="*", default=[0, 1, 2])
    args = parser.parse_args()
    opt = os.path.join(args.build, "bin", "rtx-opt")
    translate = os.path.join(args.build, "bin", "rtx-translate")
    with tempfile.TemporaryDirectory() as work:
        programs = {"gpt2-tiny dp=2": f"{work}/tiny.mlir", "gpt2 12 layers, width 768, dp=2":
                    f"{work}/gpt2-12.mlir"}
        distribute(opt, os.path.join(ROOT, "examples", "gpt2-tiny.mlir"), "dp:2",
                   programs["gpt2-tiny dp=2"])
        config = models.GPTConfig(vocab=50304, seq=1024, batch=1, layers=12, heads=12,
                                  width=768)
        with open(f"{work}/gpt2-12-model.mlir", "w") as f:
            f.write(models.gpt2(config).text())
        distribute(opt, f"{work}/gpt2-12-model.mlir", "dp:2",
                   programs["gpt2 12 layers, width 768, dp=2"])
        for name, train in programs.items():
            for level in args.levels:
                seconds, lines = build_seconds(translate, train, level, work, args.repeat)
                print(f"{name:32s} -O{level}: {seconds:6.2f} s to build ({lines} lines of C++)",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
