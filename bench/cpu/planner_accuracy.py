#!/usr/bin/env python3
"""Planner accuracy on this machine: the auto-partitioner's predicted step
times of the 2-process CPU plans of the GPT-2 benchmark against the measured
step times of the programs it builds.

Issue 17's acceptance check "against this machine". In one command:

1. the profile: rtx-topology --cpu-ranks 2, then rtx-calibrate under
   rtx-launch -n 2 with one OpenMP thread per rank, as the programs run
   (or --profile FILE, reused as is);
2. for each plan (dp=2 with ZeRO 0 to 3, tp=2, pp=2 1F1B; each with the
   recompute policies of --recompute): rtx-opt runs
   -rtx-auto-partition with the plan fixed (report-file gives the
   prediction, plan.predicted.step_time_s) and -rtx-distribute=from-plan=true
   with the benchmark's optimizer options, then rtx-translate and the build
   script compile the program (cached in --work by the program's text);
3. each program runs on 2 local processes under rtx-launch with
   OMP_NUM_THREADS=1, as bench/cpu/sharding.sh (scripts/memory-gate.py)
   does; the measured step time is the median of rank 0's step_time_ms
   (--metrics) over the steps after --warmup, pooled over --rounds rounds
   (each round runs every plan once, so slow spells of a shared machine
   spread over all plans);
4. it prints predicted ms, measured ms, the ratio predicted / measured, each
   plan's rank by predicted and by measured time, Spearman's rank
   correlation, how many plans are within 25%, and how many pairs of
   plans measured more than --order-margin apart (5%) are predicted in the
   other order; --json FILE writes it all.

Every plan trains the same global batch per step (--global-batch, default
the benchmark's batch of 8 sequences): dp and tp plans take it as one
micro-batch (the model is written for the global batch, as
bench/cpu/gpt2_dp2_vs_ddp.py writes it); the pipeline's model is written
for global / --pp-micro-batches sequences, so that 1F1B has micro-batches
and the step does the same work as the others.

    /usr/bin/python3 bench/cpu/planner_accuracy.py [--profile FILE]
        [--recompute none,selective,full] [--plans dp2-z0,...] [--steps 10]
        [--warmup 4] [--rounds 2] [--trace] [--json FILE] [--work DIR]

Progress goes to stderr, the table to stdout. It exits 1 only on errors (a
tool or program that fails): it is a benchmark, not a test. The first run
compiles 18 programs (1-3 minutes each on 2 cores); later runs reuse them
and take about 3 minutes. The machine is shared: before each run (and the
calibration) it waits for other work to stop, and repeats a run during
which other work used more than --max-background cores (recorded per run).

--trace also traces two steps of every plan in the last round and prints,
per plan, rank 0's measured split (kernels, communication on the compute
lane, the rest) beside the prediction's terms, and per kind of op and
collective the measured time beside the cost model's own price of the same
ops (its roofline and alpha-beta formulas on each span's FLOPs, bytes and
GEMM shape, with the same profile): that separates a wrong figure in the
profile from a wrong assumption of the model.
"""
import argparse
import functools
import hashlib
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import ROOT, add_model_args, blas_kernels  # noqa: E402

# name -> (the plan's fixed rtx-auto-partition options, pipelined?)
PLANS = {
    "dp2-z0": ("dp=2 tp=1 pp=1 zero=0", False),
    "dp2-z1": ("dp=2 tp=1 pp=1 zero=1", False),
    "dp2-z2": ("dp=2 tp=1 pp=1 zero=2", False),
    "dp2-z3": ("dp=2 tp=1 pp=1 zero=3", False),
    "tp2": ("dp=1 tp=2 pp=1 zero=0", False),
    "pp2-1f1b": ("dp=1 tp=1 pp=2 zero=0 schedule=1f1b", True),
}
RECOMPUTE = ("none", "selective", "full")
# What gpt2_dp2_vs_ddp.py gives rtx-distribute besides the mesh.
OPTIMIZER = "lr=0.001 weight-decay=0.01"


def say(message):
    print(f"planner-accuracy: {message}", file=sys.stderr, flush=True)


class Failure(Exception):
    pass


def run(cmd, env=None, cwd=None):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    if result.returncode != 0:
        raise Failure(f"{' '.join(cmd)} failed ({result.returncode}):\n"
                      f"{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return result


def single_thread_env():
    # One thread per rank: the ranks share this machine's cores (as in
    # scripts/memory-gate.py, which bench/cpu/sharding.sh runs).
    return dict(os.environ, OMP_NUM_THREADS="1")


def make_profile(a, bin_dir, work):
    a.calibration_background = None
    if a.profile:
        say(f"profile: {a.profile} (given)")
        return a.profile
    topology = os.path.join(work, "topology.json")
    profile = os.path.join(work, "profile.json")
    say("profile: rtx-topology --cpu-ranks 2")
    run([f"{bin_dir}/rtx-topology", "--cpu-ranks", "2", "-o", topology])
    # Calibrated while other work used the cores, the figures would be
    # that work's share: repeat as for the measured runs.
    for attempt in range(a.attempts):
        wait_for_quiet(a)
        say("profile: rtx-calibrate under rtx-launch -n 2, 1 thread per rank (~30-90 s)")
        store = os.path.join(work, "calibrate-store")
        shutil.rmtree(store, ignore_errors=True)
        started = time.time()
        a.calibration_background = run_alone(
            [f"{bin_dir}/rtx-launch", "-n", "2", "--store", f"file:{store}", "--",
             f"{bin_dir}/rtx-calibrate", "--profile", topology, "-o", profile])
        if a.calibration_background <= a.max_background:
            break
        say(f"profile: other work used {a.calibration_background:.2f} cores during the "
            "calibration" + ("; calibrating again" if attempt + 1 < a.attempts else "; kept"))
    say(f"profile: calibrated in {time.time() - started:.0f} s: {profile}")
    return profile


def write_model(a, path, batch):
    from rtx import models
    config = models.GPTConfig(vocab=a.vocab, seq=a.seq, batch=batch, layers=a.layers,
                              heads=a.heads, width=a.width)
    with open(path, "w") as f:
        f.write(models.gpt2(config).text())


def build_plan(a, bin_dir, work, profile, name, recompute):
    """Plans, builds and compiles one plan; returns its row (without the
    measurement) and the program's path, or a row marked infeasible."""
    fixed, pipelined = PLANS[name]
    label = f"{name} rc={recompute}"
    d = os.path.join(work, f"{name}-{recompute}")
    os.makedirs(d, exist_ok=True)
    model = os.path.join(work, "model-pp.mlir" if pipelined else "model.mlir")
    report = os.path.join(d, "report.json")
    options = (f"profile={profile} devices=2 {fixed} recompute={recompute} "
               f"sequence-parallel=false global-batch={a.global_batch} "
               f"balance-threshold={a.balance_threshold} "
               f"report-file={report} remarks=false")
    row = {"plan": label, "name": name, "recompute": recompute,
           "auto_partition": options.replace(f"report-file={report} ", "")}
    say(f"{label}: rtx-auto-partition + rtx-distribute=from-plan=true")
    result = subprocess.run(
        [f"{bin_dir}/rtx-opt", model, f"-rtx-auto-partition={options}",
         f"-rtx-distribute=from-plan=true {OPTIMIZER}", "-o", f"{d}/train.mlir"],
        capture_output=True, text=True)
    if result.returncode != 0:
        message = result.stderr.strip()
        if "rtx-auto-partition" in message and not os.path.exists(report):
            # The planner found no feasible plan with these settings.
            row["infeasible"] = message.splitlines()[0][-400:]
            say(f"{label}: infeasible: {row['infeasible']}")
            return row, None
        raise Failure(f"rtx-opt for {label} failed:\n{message[-3000:]}")
    plan = json.load(open(report))["plan"]
    row["distribute"] = plan["distribute"]
    row["predicted_ms"] = 1e3 * plan["predicted"]["step_time_s"]
    row["predicted_terms_ms"] = {k: 1e3 * v for k, v in plan["predicted"]["time_s"].items()}
    row["predicted_bubble"] = plan["predicted"]["bubble_fraction"]
    run([f"{bin_dir}/rtx-translate", "--emit=cpp", f"{d}/train.mlir", "-o",
         f"{d}/program.cpp", "--build-script", f"{d}/build.sh"])
    # The compile takes minutes: reuse the program when its text, the build
    # script and the runtime library are those it was built from.
    digest = hashlib.sha256()
    for path in (f"{d}/program.cpp", f"{d}/build.sh"):
        digest.update(open(path, "rb").read())
    runtime = os.path.join(a.build, "runtime", "librtxrt.a")
    if os.path.exists(runtime):
        st = os.stat(runtime)
        digest.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
    key = digest.hexdigest()
    stamp = f"{d}/program.key"
    if (not a.rebuild and os.path.exists(f"{d}/program") and os.path.exists(stamp)
            and open(stamp).read() == key):
        say(f"{label}: program unchanged, not recompiled")
    else:
        say(f"{label}: compiling the program (about 2 minutes on 2 cores) ...")
        started = time.time()
        run(["sh", f"{d}/build.sh", f"{d}/program.cpp", f"{d}/program"])
        with open(stamp, "w") as f:
            f.write(key)
        say(f"{label}: compiled in {time.time() - started:.0f} s")
    return row, f"{d}/program"


def cpu_busy():
    """(busy, total) jiffies of the whole machine so far (/proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def children_cpu():
    t = os.times()
    return t.children_user + t.children_system


def background_cores(seconds=1.0):
    """Cores busy with other work while this script sleeps."""
    b0, t0 = cpu_busy()
    time.sleep(seconds)
    b1, t1 = cpu_busy()
    return (b1 - b0) / max(1, t1 - t0) * os.cpu_count()


def wait_for_quiet(a):
    """Waits (up to --quiet-timeout s) until other work uses at most
    --max-background cores; returns what it last saw."""
    deadline = time.time() + a.quiet_timeout
    seen = background_cores()
    while seen > a.max_background and time.time() < deadline:
        say(f"the machine is busy ({seen:.2f} cores used by other work): waiting")
        time.sleep(10)
        seen = background_cores()
    return seen


def run_alone(cmd):
    """Runs `cmd` with one OpenMP thread per rank; returns the cores that
    other work used meanwhile (the machine's busy time less this run's)."""
    busy0, total0 = cpu_busy()
    ours0, wall0 = children_cpu(), time.time()
    run(cmd, env=single_thread_env())
    busy1, total1 = cpu_busy()
    wall = max(time.time() - wall0, 1e-3)
    machine = (busy1 - busy0) / max(1, total1 - total0) * os.cpu_count() * wall
    return max(0.0, machine - (children_cpu() - ours0)) / wall


def measure(a, bin_dir, work, row, program, data, round_, trace):
    """One run of the program on 2 processes: the step times (ms) of rank 0
    after the warm-up, the time it waited in collectives, and the cores
    other work used meanwhile (the machine's busy time less this run's).
    A run during which other work used more than --max-background cores
    is repeated (at most --attempts times in all), after waiting for quiet."""
    for attempt in range(a.attempts):
        wait_for_quiet(a)
        result = measure_once(a, bin_dir, row, program, data, round_, trace)
        if result[2] <= a.max_background:
            break
        say(f"{row['plan']}: other work used {result[2]:.2f} cores during the run"
            + ("; running it again" if attempt + 1 < a.attempts else "; kept"))
    return result


def measure_once(a, bin_dir, row, program, data, round_, trace):
    d = os.path.dirname(program)
    store = os.path.join(d, f"store{round_}")
    metrics = os.path.join(d, f"metrics{round_}.jsonl")
    shutil.rmtree(store, ignore_errors=True)
    steps = a.warmup + a.steps
    cmd = [f"{bin_dir}/rtx-launch", "-n", "2", "--store", f"file:{store}"]
    if trace:
        shutil.rmtree(f"{d}/trace", ignore_errors=True)
        cmd += ["--trace", f"{d}/trace", "--trace-steps",
                f"{a.warmup + 1}:{a.warmup + 2}"]
    background = run_alone(cmd + ["--", program, "--inputs", data, "--steps", str(steps),
                                  "--metrics", metrics])
    lines = [json.loads(line) for line in open(metrics)]
    kept = lines[a.warmup:]
    if not kept:
        raise Failure(f"{row['plan']}: no step after the {a.warmup} warm-up steps")
    return ([line["step_time_ms"] for line in kept],
            [line.get("collective_ms") or 0.0 for line in kept], background)


def tensor_shapes(text):
    return [[int(d) for d in m.group(1).split("x")]
            for m in re.finditer(r"tensor<((?:\d+x)*\d+)x[a-z]+\d*>", text)]


def contraction_shape(name, line):
    """{M, N, K} of a GEMM-like op as CostOpInterface::getContractionShape
    gives it (lib/Dialect/RTX/IR/RTXCost.cpp), from its line of MLIR, and
    whether its left operand is read transposed (a weight gradient)."""
    head, _, types = line.rpartition(" : ")
    operands, _, results = types.partition("->")
    ins, outs = tensor_shapes(operands), tensor_shapes(results)
    # rtx.attention_grad's results take q's type: its line lists only the
    # operands' types, no "->".
    if not ins or (not outs and name != "rtx.attention_grad"):
        return None
    numel = lambda shape: functools.reduce(lambda x, y: x * y, shape, 1)  # noqa: E731
    if name in ("rtx.matmul", "rtx.batch_matmul"):
        a, c = ins[0], outs[0]
        transposed = "transpose_lhs" in head
        k = a[-2] if transposed else a[-1]
        return numel(c) // max(1, c[-1]), c[-1], k, transposed
    if name == "rtx.linear" and len(ins) >= 2:
        out, inner = ins[1][0], ins[1][1]
        return numel(outs[0]) // max(1, out), out, inner
    if name in ("rtx.attention", "rtx.attention_grad") and len(ins) >= 2:
        q, k = ins[0], ins[1]
        return q[2], k[2], q[3]  # one batch element and head
    return None


class Roofline:
    """The cost model's price of one op or collective (CostModel::opTime and
    collectiveTime in lib/Analysis/PlanCost.cpp) on a calibrated profile:
    max(FLOPs / rate, bytes / bandwidth) + the per-op overhead, the rate of a
    GEMM being the calibrated sample nearest its shape (HardwareProfile::
    matmulRate) and that of other FLOPs the profile's vector_flops_per_s
    (else peak x matmul_efficiency); a
    collective alpha + bytes / beta of its calibrated fit."""

    def __init__(self, profile):
        p = json.load(open(profile))
        cal = p.get("calibration", {})
        device = p["device"]
        self.gemms = [(g["m"], g["n"], g["k"], g.get("transpose_lhs", False), g["flops_per_s"])
                      for g in cal.get("matmul", [])]
        self.peak = device["peak_flops"]["f32"] * device.get("matmul_efficiency", 1)
        self.vector = device.get("vector_flops_per_s") or self.peak
        self.bandwidth = cal.get("elementwise_bandwidth") or device["memory_bandwidth"]
        self.overhead = device.get("op_overhead_s", 0)
        self.fits = {kind: {f["ranks"]: (f["alpha_s"], f["beta_bytes_per_s"]) for f in fits}
                     for kind, fits in cal.get("collectives", {}).items()}

    def gemm_rate(self, m, n, k, transposed_lhs=False):
        best = None
        layout_measured = any(t == transposed_lhs for _, _, _, t, _ in self.gemms)
        for gm, gn, gk, t, rate in self.gemms:
            if layout_measured and t != transposed_lhs:
                continue
            d = (abs(math.log(max(m, 1) / gm)) + abs(math.log(max(n, 1) / gn))
                 + abs(math.log(max(k, 1) / gk)))
            if best is None or d < best[0]:
                best = (d, rate)
        return best[1] if best else self.peak

    def op(self, flops, nbytes, mnk):
        compute = 0.0
        if flops > 0:
            compute = flops / (self.gemm_rate(*mnk) if mnk else self.vector)
        return max(compute, nbytes / self.bandwidth) + self.overhead

    def collective(self, kind, nbytes, ranks=2):
        fit = self.fits.get(kind, {}).get(ranks)
        return fit[0] + nbytes / fit[1] if fit else None


# Ops that are views of their operand (ViewLikeOpInterface): priced at the
# per-op overhead only.
VIEWS = ("rtx.reshape",)

COLLECTIVE_KINDS = {"all_reduce": "all_reduce", "all_gather": "all_gather",
                    "reduce_scatter": "reduce_scatter", "send": "send_recv",
                    "recv": "send_recv"}


def trace_split(trace_dir, program_dir, roofline):
    """Rank 0's mean per traced step: the step, its kernels (op spans),
    the communication on the compute lane (synchronous collectives and
    waits) and the rest; and per kind of op and collective, the measured
    time beside the cost model's price of the same ops (Roofline), from
    each span's FLOPs, bytes and (via its line in train.mlir) GEMM shape."""
    events = json.load(open(os.path.join(trace_dir, "rank-0.trace.json")))
    events = events["traceEvents"] if isinstance(events, dict) else events
    lines = open(os.path.join(program_dir, "train.mlir")).read().split("\n")
    ops = comm = step = 0.0
    steps = set()
    kinds = {}

    def add(kind, measured, modelled, flops=0, nbytes=0):
        k = kinds.setdefault(kind, {"count": 0, "measured_ms": 0.0, "modelled_ms": 0.0,
                                    "flops": 0, "bytes": 0})
        k["count"] += 1
        k["measured_ms"] += measured
        k["modelled_ms"] += modelled
        k["flops"] += flops
        k["bytes"] += nbytes

    for e in events:
        if e.get("ph") != "X":
            continue
        cat, dur, args = e.get("cat"), e.get("dur", 0.0) / 1e3, e.get("args", {})
        if cat == "collective" or (cat == "wait" and e.get("tid") == 1):
            # The collective itself, on either lane: its price.
            name = e.get("name", "")
            kind = next((v for k, v in COLLECTIVE_KINDS.items() if k in name), None)
            modelled = roofline.collective(kind, args.get("bytes", 0)) if kind else None
            add(f"[{name}]", dur, 1e3 * modelled if modelled is not None else 0.0,
                0, args.get("bytes", 0))
        if e.get("tid") != 0:
            continue
        if cat == "step":
            step += dur
            steps.add(args.get("step"))
        elif cat == "op":
            ops += dur
            name = e.get("name", "?")
            mnk = None
            m = re.search(r':(\d+):\d+\)$', args.get("location", ""))
            if m and int(m.group(1)) <= len(lines):
                mnk = contraction_shape(name, lines[int(m.group(1)) - 1])
            flops, nbytes = args.get("flops", 0) or 0, args.get("bytes", 0) or 0
            if name in VIEWS:  # ProbeCosts.cpp: a view moves nothing
                nbytes = 0
            add(name, dur, 1e3 * roofline.op(flops, nbytes, mnk), flops, nbytes)
        elif cat in ("collective", "wait"):
            comm += dur
    n = max(1, len(steps))
    for k in kinds.values():
        for key in ("count", "measured_ms", "modelled_ms", "flops", "bytes"):
            k[key] /= n
    return {"steps": n, "step_ms": step / n, "kernels_ms": ops / n,
            "kernels_modelled_ms": sum(v["modelled_ms"] for k, v in kinds.items()
                                       if not k.startswith("[")),
            "communication_ms": comm / n, "other_ms": (step - ops - comm) / n,
            "by_kind": dict(sorted(kinds.items()))}


def calibration_summary(profile):
    cal = json.load(open(profile)).get("calibration")
    if not cal:
        return "none (datasheet figures)"
    rates = [g["flops_per_s"] / 1e9 for g in cal.get("matmul", [])]
    text = (f"GEMM {min(rates):.0f}-{max(rates):.0f} GFLOP/s, elementwise "
            f"{cal['elementwise_bandwidth'] / 1e9:.1f} GB/s, vector "
            f"{cal.get('vector_flops_per_s', 0) / 1e9:.1f} GFLOP/s, op overhead "
            f"{cal['op_overhead_s'] * 1e6:.2f} us, {cal.get('threads')} thread(s) per rank")
    for kind, fits in sorted(cal.get("collectives", {}).items()):
        for f in fits:
            if f["ranks"] == 2:
                text += (f"; {kind} alpha {f['alpha_s'] * 1e6:.0f} us, beta "
                         f"{f['beta_bytes_per_s'] / 1e9:.2f} GB/s")
    return text


def ranks(values):
    """1 = smallest; ties share their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            result[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return result


def spearman(x, y):
    rx, ry = ranks(x), ranks(y)
    n = len(x)
    if n < 2:
        return float("nan")
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx) ** 0.5
    vy = sum((b - my) ** 2 for b in ry) ** 0.5
    return cov / (vx * vy) if vx and vy else float("nan")


def main():
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="The plans: " + ", ".join(f"{k} ({v[0]})" for k, v in PLANS.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_args(p)
    p.set_defaults(steps=10, warmup=4)
    p.add_argument("--global-batch", type=int, default=0,
                   help="sequences per step for every plan (default: --batch)")
    p.add_argument("--pp-micro-batches", type=int, default=2,
                   help="micro-batches of the pipeline plans (default 2)")
    p.add_argument("--profile", help="a calibrated profile to reuse (default: write one)")
    p.add_argument("--plans", default=",".join(PLANS),
                   help=f"comma-separated, of {', '.join(PLANS)}")
    p.add_argument("--recompute", default="none,selective,full",
                   help="comma-separated, of none, selective, full (default: all three)")
    p.add_argument("--rounds", type=int, default=2,
                   help="runs of every plan; the step times are pooled (default 2)")
    p.add_argument("--balance-threshold", type=float, default=1.2,
                   help="rtx-auto-partition's balance-threshold (pp plans)")
    p.add_argument("--tolerance", type=float, default=0.25,
                   help="the band counted as accurate, |predicted/measured - 1| (0.25)")
    p.add_argument("--order-margin", type=float, default=0.05,
                   help="pairs of plans measured further apart than this share have an "
                        "order the prediction must keep (0.05: the spread of one plan's "
                        "measured step between runs here)")
    p.add_argument("--trace", action="store_true",
                   help="trace 2 steps of each plan in the last round and print the "
                        "measured split beside the predicted terms")
    p.add_argument("--max-background", type=float, default=0.15,
                   help="cores other work may use during a run before it is repeated "
                        "(default 0.15; this machine is shared)")
    p.add_argument("--attempts", type=int, default=3,
                   help="runs of a plan per round at most, when the machine is busy")
    p.add_argument("--quiet-timeout", type=float, default=600,
                   help="seconds to wait for a quiet machine before each run (600)")
    p.add_argument("--rebuild", action="store_true", help="recompile every program")
    p.add_argument("--work", default="/tmp/rtx-bench-planner-accuracy",
                   help="working directory; programs are cached here across runs")
    p.add_argument("--json", help="also write the table as JSON here")
    a = p.parse_args()
    a.global_batch = a.global_batch or a.batch
    names = a.plans.split(",")
    for name in names:
        if name not in PLANS:
            p.error(f"unknown plan {name!r}; expected one of {', '.join(PLANS)}")
    policies = a.recompute.split(",")
    for policy in policies:
        if policy not in RECOMPUTE:
            p.error(f"unknown recompute {policy!r}; expected one of {', '.join(RECOMPUTE)}")
    if a.global_batch % a.pp_micro_batches:
        p.error(f"--pp-micro-batches {a.pp_micro_batches} must divide the global batch "
                f"{a.global_batch}")
    if a.rounds < 1 or a.steps < 1 or a.warmup < 0:
        p.error("--rounds and --steps must be at least 1, --warmup at least 0")

    bin_dir = os.path.join(a.build, "bin")
    for tool in ("rtx-opt", "rtx-translate", "rtx-launch", "rtx-topology", "rtx-calibrate"):
        if not os.path.exists(os.path.join(bin_dir, tool)):
            sys.exit(f"planner-accuracy: {bin_dir}/{tool} is missing (build rtx first)")
    started = time.time()
    work = a.work
    os.makedirs(work, exist_ok=True)
    try:
        profile = make_profile(a, bin_dir, work)
        roofline = Roofline(profile)
        write_model(a, os.path.join(work, "model.mlir"), a.global_batch)
        write_model(a, os.path.join(work, "model-pp.mlir"),
                    a.global_batch // a.pp_micro_batches)
        data = os.path.join(work, "data")
        os.makedirs(data, exist_ok=True)
        run([sys.executable, os.path.join(ROOT, "examples", "make_lm_batch.py"), data,
             str(a.global_batch), str(a.seq), str(a.vocab)])

        rows, programs = [], []
        for name in names:
            for policy in policies:
                row, program = build_plan(a, bin_dir, work, profile, name, policy)
                rows.append(row)
                programs.append(program)
        live = [(row, program) for row, program in zip(rows, programs) if program]
        for row, _ in live:
            row["step_ms"], row["collective_ms"], row["background_cores"] = [], [], []
        for round_ in range(a.rounds):
            last = round_ + 1 == a.rounds
            for row, program in live:
                say(f"round {round_ + 1}/{a.rounds}: {row['plan']}: running 2 processes, "
                    f"{a.warmup} + {a.steps} steps")
                times, waits, background = measure(a, bin_dir, work, row, program, data,
                                                   round_, a.trace and last)
                row["step_ms"] += times
                row["collective_ms"] += waits
                row["background_cores"].append(round(background, 3))
                if a.trace and last:
                    row["trace"] = trace_split(os.path.join(os.path.dirname(program), "trace"),
                                               os.path.dirname(program), roofline)
    except Failure as e:
        say(f"error: {e}")
        return 1

    for row, _ in live:
        row["measured_ms"] = statistics.median(row["step_ms"])
        row["measured_collective_ms"] = statistics.median(row["collective_ms"])
        row["ratio"] = row["predicted_ms"] / row["measured_ms"]
        row["within"] = abs(row["ratio"] - 1) <= a.tolerance
    measured_rows = [row for row, _ in live]
    predicted = [row["predicted_ms"] for row in measured_rows]
    measured = [row["measured_ms"] for row in measured_rows]
    for row, rp, rm in zip(measured_rows, ranks(predicted), ranks(measured)):
        row["rank_predicted"], row["rank_measured"] = rp, rm
    rho = spearman(predicted, measured)
    within = sum(row["within"] for row in measured_rows)
    # The order: pairs of plans measured apart by more than --order-margin
    # (the measurement's own spread between runs) that the model predicts
    # in the other order. Closer pairs have no measured order to keep.
    apart = discordant = 0
    for i, x in enumerate(measured_rows):
        for y in measured_rows[i + 1:]:
            slow, fast = (x, y) if x["measured_ms"] > y["measured_ms"] else (y, x)
            if slow["measured_ms"] > fast["measured_ms"] * (1 + a.order_margin):
                apart += 1
                discordant += slow["predicted_ms"] < fast["predicted_ms"]
    wall = time.time() - started

    print(f"GPT-2 benchmark model: {a.layers} layers, width {a.width}, {a.heads} heads, "
          f"sequence {a.seq}, vocabulary {a.vocab}; global batch {a.global_batch} "
          f"(pp: {a.pp_micro_batches} micro-batches of {a.global_batch // a.pp_micro_batches}); "
          f"2 processes x 1 thread under rtx-launch; AdamW")
    print(f"profile {profile}; measured: median of rank 0's step_time_ms over "
          f"{a.rounds} x {a.steps} steps after {a.warmup} warm-up steps; "
          f"OPENBLAS_CORETYPE {blas_kernels()}")
    print(f"calibration: {calibration_summary(profile)}"
          + (f" (other work used {a.calibration_background:.2f} cores meanwhile)"
             if a.calibration_background is not None else ""))
    print()
    header = (f"{'plan':<22} {'predicted ms':>12} {'measured ms':>12} {'pred/meas':>9} "
              f"{'rank pred':>9} {'rank meas':>9}  within {100 * a.tolerance:.0f}%")
    print(header)
    print("-" * len(header))
    for row in rows:
        if "infeasible" in row:
            print(f"{row['plan']:<22} infeasible: {row['infeasible'][:80]}")
            continue
        print(f"{row['plan']:<22} {row['predicted_ms']:12.1f} {row['measured_ms']:12.1f} "
              f"{row['ratio']:9.2f} {row['rank_predicted']:9.1f} {row['rank_measured']:9.1f}  "
              f"{'yes' if row['within'] else 'no'}")
    print()
    print(f"Spearman's rank correlation (predicted vs measured): {rho:.3f}")
    print(f"within {100 * a.tolerance:.0f}% of measured: {within} of {len(measured_rows)} plans")
    print(f"pairs measured more than {100 * a.order_margin:.0f}% apart and predicted in the other "
          f"order: {discordant} of {apart}")
    busiest = max((max(row["background_cores"]) for row in measured_rows), default=0.0)
    print(f"other work on the machine during the kept runs: at most {busiest:.2f} cores")
    print(f"wall time: {wall:.0f} s")
    print()
    print("Where the time goes (ms per step): the prediction's terms; measured: rank 0's "
          "median wait in collectives" + (" and the traced split" if a.trace else ""))
    print(f"{'plan':<22} {'compute':>8} {'recomp':>7} {'tp comm':>7} {'pp send':>7} "
          f"{'dp comm':>7} {'dp exp':>7} {'optim':>6} | {'meas wait':>9}"
          + (f" {'kernels':>8} {'comm':>7} {'other':>7}" if a.trace else ""))
    for row in measured_rows:
        t = row["predicted_terms_ms"]
        line = (f"{row['plan']:<22} {t['compute']:8.1f} {t['recompute']:7.1f} "
                f"{t['tensor_parallel_comm']:7.1f} {t['pipeline_sends']:7.1f} "
                f"{t['data_parallel_comm']:7.1f} {t['data_parallel_comm_exposed']:7.1f} "
                f"{t['optimizer']:6.1f} | {row['measured_collective_ms']:9.1f}")
        if "trace" in row:
            s = row["trace"]
            line += (f" {s['kernels_ms']:8.1f} {s['communication_ms']:7.1f} "
                     f"{s['other_ms']:7.1f}")
        print(line)
    for row in measured_rows:
        print(f"  {row['plan']}: {row['distribute']}")
    if a.trace:
        print()
        print("Per op, rank 0, traced steps: measured ms beside the cost model's price of the "
              "same ops (roofline on each span's FLOPs, bytes and GEMM shape; a collective: "
              "alpha + bytes / beta); the largest gaps")
        for row in measured_rows:
            if "trace" not in row:
                continue
            t = row["trace"]
            gaps = sorted(t["by_kind"].items(),
                          key=lambda kv: -abs(kv[1]["measured_ms"] - kv[1]["modelled_ms"]))
            text = ", ".join(f"{k.replace('rtx.', '')} {v['measured_ms']:.1f} vs "
                             f"{v['modelled_ms']:.1f}" for k, v in gaps[:5])
            print(f"  {row['plan']:<22} kernels {t['kernels_ms']:.1f} vs "
                  f"{t['kernels_modelled_ms']:.1f}: {text}")

    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": {"layers": a.layers, "width": a.width, "heads": a.heads,
                                 "seq": a.seq, "vocab": a.vocab,
                                 "global_batch": a.global_batch,
                                 "pp_micro_batches": a.pp_micro_batches},
                       "profile": profile, "rounds": a.rounds, "steps": a.steps,
                       "warmup": a.warmup, "tolerance": a.tolerance,
                       "calibration": json.load(open(profile)).get("calibration"),
                       "calibration_background_cores": a.calibration_background,
                       "spearman": rho, "within": within, "plans": rows,
                       "order_margin": a.order_margin, "pairs_apart": apart,
                       "pairs_discordant": discordant,
                       "wall_s": wall}, f, indent=2)
        say(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
