#!/usr/bin/env python3
"""Pipeline bubbles on CPU processes: each schedule's measured idle share,
side by side with the simulator's prediction and the textbook formula, and
the throughput of pp=2 against dp=2 on the same global batch.

The model is a stack of residual blocks h + tanh(h W) (width --width) with
a mean-square loss: its stages cost the same, so the bubble is the
schedule's, not an imbalance. For each schedule the pipelined step
(rtx-distribute mesh=pp:P) is emitted, compiled and run under rtx-launch
with one thread per rank and --trace; a rank's busy time is the sum of its
kernel ("op") spans in a step, its bubble 1 - busy / step time, averaged
over ranks and the traced steps. The prediction is rtx-schedule's for
forward 1, backward 2 (1 + 1 with W). The dp=2 run is the peer for
throughput (PyTorch 1.13, the one Debian ships, has no
torch.distributed.pipelining: it came in 2.4, so no PyTorch pipeline runs
here).

    python3 bench/cpu/pipeline_bubble.py [--build build] [--micro-batches 4]
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from common import limit_blas_threads  # noqa: E402


def model_text(layers, width, batch):
    from rtx.builder import Module
    from rtx.builder import normal, ones
    m = Module()
    f = m.function("stack")
    h = f.input("x", [batch, width], "f32")
    h = f.mul(h, f.param("scale", [batch, width], ones()))
    for i in range(layers):
        h = f.add(h, f.tanh(f.matmul(h, f.param(f"w{i}", [width, width], normal(0.0, 0.02), seed=i))))
    f.ret(f.reduce("mean", f.mul(h, h), [0, 1]))
    return m.text()


def run(a, work, mesh, options, ranks, trace):
    bin_dir = os.path.join(a.build, "bin")
    subprocess.run([f"{bin_dir}/rtx-opt", f"{work}/model.mlir",
                    f"-rtx-distribute=mesh={mesh} optimizer=sgd {options}", "-o", f"{work}/train.mlir"],
                   check=True)
    subprocess.run([f"{bin_dir}/rtx-translate", f"{work}/train.mlir", "-o", f"{work}/p.cpp",
                    "--build-script", f"{work}/build.sh"], check=True)
    subprocess.run(["sh", f"{work}/build.sh", f"{work}/p.cpp", f"{work}/p"], check=True)
    argv = [f"{bin_dir}/rtx-launch", "-n", str(ranks), "--store", f"file:{work}/store"]
    if trace:
        argv += ["--trace", f"{work}/trace", "--trace-steps", f"{a.warmup + 1}:{a.steps}"]
    out = subprocess.run(argv + ["--", f"{work}/p", "--steps", str(a.steps)],
                         check=True, capture_output=True, text=True,
                         env=dict(os.environ, OMP_NUM_THREADS="1")).stdout
    times = [float(t) for t in re.findall(r"time=([\d.]+)ms", out)][a.warmup:]
    return sum(times) / len(times), f"{work}/trace"


def measured_bubble(trace_dir):
    """1 - busy / step time, per rank and traced step, averaged."""
    fractions = []
    for path in glob.glob(f"{trace_dir}/rank-*.trace.json"):
        events = json.load(open(path))["traceEvents"]
        steps = [e for e in events if e.get("cat") == "step" and e.get("ph") == "X"]
        ops = [e for e in events if e.get("cat") == "op" and e.get("ph") == "X"]
        for s in steps:
            begin, end = s["ts"], s["ts"] + s["dur"]
            busy = sum(o["dur"] for o in ops if begin <= o["ts"] < end)
            fractions.append(1 - busy / s["dur"])
    return sum(fractions) / len(fractions)


def predicted(a, schedule, virtual):
    out = subprocess.run([os.path.join(a.build, "bin", "rtx-schedule"), "--schedule", schedule,
                          "--ranks", str(a.pp), "--micro-batches", str(a.micro_batches),
                          "--virtual", str(virtual), "--quiet"], check=True, capture_output=True,
                         text=True).stdout
    bubble = float(re.search(r"bubble fraction ([\d.]+)", out).group(1))
    formula = re.search(r"formula [^:]*: ([\d.]+)", out)
    return bubble, float(formula.group(1)) if formula else None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--pp", type=int, default=2)
    p.add_argument("--micro-batches", type=int, default=4)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--batch", type=int, default=64, help="rows per micro-batch")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--warmup", type=int, default=2)
    a = p.parse_args()
    limit_blas_threads(1)
    schedules = [("gpipe", 1), ("1f1b", 1), ("interleaved", 2), ("zb-h1", 1)]
    rows = []
    with tempfile.TemporaryDirectory() as root:
        for schedule, virtual in schedules:
            work = f"{root}/{schedule}"
            os.makedirs(work)
            with open(f"{work}/model.mlir", "w") as f:
                f.write(model_text(a.layers, a.width, a.batch))
            options = (f"pipeline-schedule={schedule} pipeline-micro-batches={a.micro_batches} "
                       f"virtual-stages={virtual}")
            ms, trace = run(a, work, f"pp:{a.pp}", options, a.pp, trace=True)
            sim, formula = predicted(a, schedule, virtual)
            rows.append((schedule, virtual, measured_bubble(trace), sim, formula, ms))
        # The peer: dp over the same global batch (micro-batches x batch rows).
        work = f"{root}/dp"
        os.makedirs(work)
        with open(f"{work}/model.mlir", "w") as f:
            f.write(model_text(a.layers, a.width, a.batch * a.micro_batches))
        dp_ms, _ = run(a, work, f"dp:{a.pp}", "", a.pp, trace=False)
    print(f"{a.layers} blocks of width {a.width}, pp={a.pp}, {a.micro_batches} micro-batches of "
          f"{a.batch} rows; {a.steps - a.warmup} measured steps")
    print(f"{'schedule':14} {'measured':>9} {'simulated':>9} {'formula':>8} {'step ms':>8} {'vs dp':>6}")
    for schedule, virtual, bubble, sim, formula, ms in rows:
        name = f"{schedule} v={virtual}" if virtual > 1 else schedule
        print(f"{name:14} {bubble:9.3f} {sim:9.3f} {formula if formula is not None else float('nan'):8.3f} "
              f"{ms:8.1f} {dp_ms / ms:6.2f}")
    one_f, zb = rows[1][2], rows[3][2]
    print(f"dp={a.pp} step: {dp_ms:.1f} ms; ZB-H1 / 1F1B measured bubble: {zb / one_f:.2f} (goal <= 0.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
