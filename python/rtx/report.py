"""The bottleneck verdict of a traced run: ``rtx report RUN_DIR``.

RUN_DIR is the directory a run traced into (``rtx-launch --trace RUN_DIR``
or a program's ``--trace RUN_DIR``): ``trace.json`` (the ranks on one
timeline) or ``rank-R.trace.json`` (merged here the same way), and
``rank-R.metrics.jsonl``. The report reads, per rank and traced step, the
step's time, the time its thread waited for communication, the data loads
and the ops, and says with numbers which of these bounds the run:

  straggler  one rank computes at least ``balance`` (1.2) times longer than
             the median of the others, and the others wait for it
  input      the data loads take at least 20% of the step
  network    the step waits at least 30% of its time for communication
  compute    none of these: the ops' own time dominates

(in that order: a straggler makes every other rank wait, which would
otherwise read as a network problem). Each verdict comes with hints. Then
speed in view (rtx/speed.py): each op's and each kind's achieved TFLOP/s
and GB/s against the device's roofline, and the step's MFU. With
matplotlib (Debian's python3-matplotlib) it writes PNG plots: the per-rank
timeline of one step, the step-time distribution, the roofline (given the
device's peaks), and, given benchmark results (``--scaling FILE``, from
bench/cpu/scaling.py --json), a scaling curve. docs/observability.md shows
them.
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from . import speed as speed_view

# The verdict's thresholds (docs/observability.md).
BALANCE_THRESHOLD = 1.2     # as the auto-partitioner's stage balance
INPUT_SHARE = 0.20
NETWORK_SHARE = 0.30
# A gradient bucket below this is small (PyTorch DDP's default is 25 MiB).
SMALL_BUCKET_BYTES = 4 << 20
DDP_BUCKET_BYTES = 25 << 20

LANE_COMPUTE, LANE_COMMUNICATION, LANE_DATA, LANE_CHECKPOINT, LANE_DEVICE = 0, 1, 2, 3, 4


class ReportError(Exception):
    """A run directory the report cannot read."""


# --- reading ---------------------------------------------------------------------------------

def load_trace(run_dir: Path) -> dict:
    """The run's merged trace: trace.json, else the rank traces merged here
    (each rank's timestamps minus its clock offset)."""
    merged = run_dir / "trace.json"
    if merged.is_file():
        return _read_json(merged)
    ranks = sorted(run_dir.glob("rank-*.trace.json"))
    if not ranks:
        raise ReportError(f"{run_dir} has no trace.json and no rank-R.trace.json "
                          "(trace a run with rtx-launch --trace DIR)")
    events: List[dict] = []
    offsets: Dict[str, float] = {}
    other: dict = {}
    for path in ranks:
        trace = _read_json(path)
        data = trace.get("otherData", {})
        offset = float(data.get("clock_offset_us", 0.0))
        offsets[str(data.get("rank", path.name))] = offset
        other = other or data
        for event in trace["traceEvents"]:
            if "ts" in event:
                event = dict(event, ts=event["ts"] - offset)
            events.append(event)
    return {"traceEvents": events, "otherData": dict(other, clock_offsets_us=offsets)}


def _read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ReportError(f"cannot read {path}: {error}") from None
    if not isinstance(value, dict) or not isinstance(value.get("traceEvents"), list):
        raise ReportError(f"{path} is not a trace (no traceEvents list)")
    return value


def load_metrics(run_dir: Path) -> Dict[int, List[dict]]:
    """rank -> its JSON lines (rank-R.metrics.jsonl), where present."""
    metrics: Dict[int, List[dict]] = {}
    for path in sorted(run_dir.glob("rank-*.metrics.jsonl")):
        try:
            rank = int(path.name[len("rank-"):-len(".metrics.jsonl")])
        except ValueError:
            continue
        rows = []
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as error:
                    raise ReportError(f"{path}:{number}: not JSON: {error}") from None
        metrics[rank] = rows
    return metrics


# --- analysis --------------------------------------------------------------------------------

@dataclass
class StepFigures:
    """One rank's traced step, in milliseconds."""
    step: int
    start_us: float
    total: float
    wait: float = 0.0          # its thread waited for communication
    data: float = 0.0
    compute: float = 0.0       # total - wait - data
    comm_busy: float = 0.0     # collectives ran (either thread)
    collectives: int = 0


@dataclass
class RankFigures:
    rank: int
    steps: List[StepFigures] = field(default_factory=list)

    def median(self, what: str) -> float:
        values = [getattr(s, what) for s in self.steps]
        return statistics.median(values) if values else 0.0


@dataclass
class Analysis:
    ranks: Dict[int, RankFigures]
    mesh: str
    ops: Dict[str, List[float]]          # op name -> [time ms, flops, count]
    all_reduce_bytes: List[int]          # per all-reduce of one rank's step
    async_collectives: int
    collectives_by_group: Dict[str, float]   # "0,1" -> ms busy


def analyze(trace: dict) -> Analysis:
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    ranks: Dict[int, RankFigures] = {}
    by_rank_step: Dict[tuple, StepFigures] = {}
    for e in events:
        if e.get("cat") == "step":
            rank = int(e["pid"])
            step = int(e["args"]["step"])
            figures = StepFigures(step=step, start_us=float(e["ts"]), total=float(e["dur"]) / 1000)
            ranks.setdefault(rank, RankFigures(rank)).steps.append(figures)
            by_rank_step[(rank, step)] = figures
    if not ranks:
        raise ReportError("the trace has no step spans: were any steps traced (--trace-steps)?")
    ops: Dict[str, List[float]] = {}
    all_reduce_bytes: List[int] = []
    async_collectives = 0
    groups: Dict[str, float] = {}
    first_rank = min(ranks)
    first_step = min(s.step for s in ranks[first_rank].steps)
    for e in events:
        args = e.get("args", {})
        figures = by_rank_step.get((int(e["pid"]), int(args.get("step", 0))))
        if figures is None:
            continue
        ms = float(e["dur"]) / 1000
        cat, tid = e.get("cat"), int(e.get("tid", 0))
        if tid == LANE_COMPUTE and cat in ("wait", "collective"):
            figures.wait += ms
        if tid == LANE_DATA:
            figures.data += ms
        if cat == "collective":
            figures.comm_busy += ms
            figures.collectives += 1
            if tid == LANE_COMMUNICATION:
                async_collectives += 1
            key = ",".join(str(r) for r in args.get("group", []))
            groups[key] = groups.get(key, 0.0) + ms
            if (e["name"] == "all_reduce" and int(e["pid"]) == first_rank
                    and int(args["step"]) == first_step):
                all_reduce_bytes.append(int(args.get("bytes", 0)))
        if cat == "op":
            entry = ops.setdefault(e["name"], [0.0, 0.0, 0])
            entry[0] += ms
            entry[1] += float(args.get("flops", 0))
            entry[2] += 1
    for rank in ranks.values():
        for s in rank.steps:
            s.compute = max(0.0, s.total - s.wait - s.data)
    mesh = trace.get("otherData", {}).get("mesh", "")
    return Analysis(ranks, mesh, ops, all_reduce_bytes, async_collectives, groups)


def traced_steps(analysis: Analysis) -> Dict[tuple, float]:
    """(rank, step) -> the step's ms, for every traced step."""
    return {(r.rank, s.step): s.total for r in analysis.ranks.values() for s in r.steps}


@dataclass
class Verdict:
    bound: str                 # compute | network | straggler | input
    summary: str
    figures: Dict[str, float]
    hints: List[str]
    straggler: Optional[int] = None

    def to_json(self) -> dict:
        return {"bound": self.bound, "summary": self.summary, "figures": self.figures,
                "hints": self.hints, "straggler": self.straggler}


def _size(n: float) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n / 1024:.1f} KiB"


def verdict(analysis: Analysis, balance: float = BALANCE_THRESHOLD) -> Verdict:
    ranks = analysis.ranks
    step = statistics.median(r.median("total") for r in ranks.values())
    wait = statistics.median(r.median("wait") for r in ranks.values())
    data = statistics.median(r.median("data") for r in ranks.values())
    compute = {r.rank: r.median("compute") for r in ranks.values()}
    figures = {"step_ms": round(step, 3), "wait_ms": round(wait, 3), "data_ms": round(data, 3),
               "wait_pct": round(100 * wait / step, 1) if step else 0.0,
               "ranks": len(ranks)}

    if len(ranks) > 1:
        slowest = max(compute, key=lambda r: compute[r])
        others = [c for r, c in compute.items() if r != slowest]
        typical = statistics.median(others)
        others_wait = statistics.median(ranks[r].median("wait") for r in ranks if r != slowest)
        ratio = compute[slowest] / typical if typical > 0 else math.inf
        figures.update(straggler_compute_ms=round(compute[slowest], 3),
                       others_compute_ms=round(typical, 3),
                       straggler_ratio=round(ratio, 2) if math.isfinite(ratio) else -1)
        if ratio >= balance and compute[slowest] - typical >= 0.1 * step:
            return Verdict(
                "straggler",
                f"bound by a straggler: rank {slowest} computes {compute[slowest]:.1f} ms per step, "
                f"{ratio:.1f}x the {typical:.1f} ms of the other ranks, which wait "
                f"{others_wait:.1f} ms of their {step:.1f} ms step for it",
                figures,
                [f"look at rank {slowest}'s machine: another job on its cores or GPU, thermal "
                 "throttling, a slower device, or a slower disk for its data",
                 "a rank that is slower by design (an uneven split) needs a balanced plan: "
                 "rtx-distribute splits evenly; pipeline stages are balanced by the cost model"],
                straggler=slowest)

    if step > 0 and data / step >= INPUT_SHARE:
        return Verdict(
            "input",
            f"bound by input: the data loads take {data:.1f} ms of the {step:.1f} ms step "
            f"({100 * data / step:.0f}%)",
            figures,
            ["put the token file on local, faster storage (or in the page cache)",
             "load the next batch while the step computes (prefetch)"])

    if step > 0 and wait / step >= NETWORK_SHARE:
        hints: List[str] = []
        if analysis.async_collectives == 0:
            hints.append("enable overlap (rtx-distribute overlap=true, ParallelConfig(overlap=True)): "
                         "the gradient all-reduces then run under the backward pass")
        sizes = analysis.all_reduce_bytes
        if len(sizes) > 1 and statistics.mean(sizes) < SMALL_BUCKET_BYTES:
            # One bucket for all the gradients when they are small; else
            # DDP's 25 MiB.
            target = min(sum(sizes), DDP_BUCKET_BYTES)
            hints.append(f"{len(sizes)} all-reduces of {_size(statistics.mean(sizes))} on average per "
                         f"step: raise bucket_bytes to {target} (rtx-distribute bucket-bytes={target}, "
                         f"ParallelConfig(bucket_bytes={target})): fewer, larger all-reduces pay "
                         f"the latency once")
        busy = sum(analysis.collectives_by_group.values())
        if busy > 0 and "tp" in analysis.mesh:
            biggest = max(analysis.collectives_by_group, key=analysis.collectives_by_group.get)
            hints.append(f"the group of ranks {biggest} takes "
                         f"{100 * analysis.collectives_by_group[biggest] / busy:.0f}% of the "
                         "communication time: if tp crosses a slow link (between nodes), keep tp "
                         "inside a node and put dp across nodes")
        hints.append("check the achieved bus bandwidth (net_bw_gbps) against the link's: far below "
                     "it, the link is shared or the messages are too small")
        return Verdict(
            "network",
            f"network-bound: the step waits {wait:.1f} ms of {step:.1f} ms "
            f"({100 * wait / step:.0f}%) for communication",
            figures, hints)

    top = sorted(analysis.ops.items(), key=lambda kv: -kv[1][0])[:3]
    steps = sum(len(r.steps) for r in ranks.values()) or 1
    hints = []
    for name, (ms, flops, count) in top:
        rate = flops / (ms / 1000) / 1e9 if ms > 0 else 0.0
        hints.append(f"{name}: {ms / steps:.2f} ms per step and rank over {count // steps} call(s), "
                     f"{rate:.1f} GFLOP/s")
    if not top:
        hints.append("the trace has no op spans (trace a step with --trace-steps)")
    hints.append("more ranks (dp) or faster kernels cut compute time; on GPUs, larger batches "
                 "raise the kernels' efficiency")
    return Verdict(
        "compute",
        f"compute-bound: {100 * (step - wait - data) / step if step else 0:.0f}% of the "
        f"{step:.1f} ms step computes; communication waits {wait:.1f} ms",
        figures, hints)


# --- plots -----------------------------------------------------------------------------------

_COLORS = {"op": "#4c72b0", "collective": "#dd8452", "wait": "#c44e52", "data": "#55a868",
           "checkpoint": "#8172b3", "fault": "#937860", "step": "#dddddd"}


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


def plot_timeline(trace: dict, analysis: Analysis, path: Path, step: Optional[int] = None) -> int:
    """The per-rank timeline of one step (the last one every rank traced)."""
    plt = _pyplot()
    common = set.intersection(*(set(s.step for s in r.steps) for r in analysis.ranks.values()))
    step = step if step is not None else max(common)
    events = [e for e in trace["traceEvents"]
              if e.get("ph") == "X" and int(e.get("args", {}).get("step", -1)) == step]
    origin = min(e["ts"] for e in events)
    lanes = sorted({(int(e["pid"]), int(e["tid"])) for e in events})
    names = {LANE_COMPUTE: "compute", LANE_COMMUNICATION: "comm", LANE_DATA: "data",
             LANE_CHECKPOINT: "checkpoint", LANE_DEVICE: "device"}
    fig, ax = plt.subplots(figsize=(11, 0.6 * len(lanes) + 1.5))
    for row, (pid, tid) in enumerate(lanes):
        for e in events:
            if (int(e["pid"]), int(e["tid"])) != (pid, tid) or e.get("cat") == "step":
                continue
            ax.broken_barh([((e["ts"] - origin) / 1000, max(e["dur"] / 1000, 1e-3))], (row - 0.4, 0.8),
                           facecolors=_COLORS.get(e.get("cat"), "#999999"))
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels([f"rank {p} {names.get(t, t)}" for p, t in lanes])
    ax.invert_yaxis()
    ax.set_xlabel("ms since the step began")
    ax.set_title(f"step {step}: ops (blue), collectives (orange), waits (red), data (green)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return step


def plot_step_times(analysis: Analysis, metrics: Dict[int, List[dict]], path: Path) -> None:
    """The step-time distribution per rank (the metrics lines, else the trace)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for rank in sorted(analysis.ranks):
        rows = metrics.get(rank)
        times = ([r["step_time_ms"] for r in rows if r.get("step_time_ms") is not None] if rows
                 else [s.total for s in analysis.ranks[rank].steps])
        ax.hist(times, bins=min(30, max(5, len(times))), alpha=0.6, label=f"rank {rank}")
    _save(plt, fig, ax, path, "step time (ms)", "steps", "step-time distribution")


def plot_scaling(results: Path, path: Path) -> None:
    """A scaling curve from benchmark results: a JSON list of
    {"label", "ranks", "tokens_per_s"}, as bench/cpu/scaling.py --json writes."""
    plt = _pyplot()
    try:
        rows = json.loads(results.read_text())
    except (OSError, ValueError) as error:
        raise ReportError(f"cannot read the benchmark results {results}: {error}") from None
    if not isinstance(rows, list) or not all(
            isinstance(r, dict) and {"label", "ranks", "tokens_per_s"} <= set(r) for r in rows):
        raise ReportError(f"{results}: expected a list of {{label, ranks, tokens_per_s}}")
    fig, ax = plt.subplots(figsize=(6, 4))
    for label in sorted({r["label"] for r in rows}):
        points = sorted((r["ranks"], r["tokens_per_s"]) for r in rows if r["label"] == label)
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    ax.set_xticks(sorted({r["ranks"] for r in rows}))
    _save(plt, fig, ax, path, "ranks", "tokens/s", "scaling")


def _save(plt, fig, ax, path: Path, xlabel: str, ylabel: str, title: str) -> None:  # type: ignore[no-untyped-def]
    """Labels a plot with a legend and writes it as a PNG."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --- the command -----------------------------------------------------------------------------

def format_report(v: Verdict, analysis: Analysis) -> str:
    lines = [f"verdict: {v.summary}"]
    lines.append("per rank (median over the traced steps, ms):")
    lines.append("  rank     step  compute     wait     data  collectives")
    for rank in sorted(analysis.ranks):
        r = analysis.ranks[rank]
        lines.append(f"  {rank:4d} {r.median('total'):8.2f} {r.median('compute'):8.2f} "
                     f"{r.median('wait'):8.2f} {r.median('data'):8.2f} {int(r.median('collectives')):12d}")
    lines.append("hints:")
    lines.extend(f"  - {h}" for h in v.hints)
    return "\n".join(lines) + "\n"


def run(run_dir: str, out: Optional[str] = None, scaling: Optional[str] = None,
        plots: bool = True, as_json: bool = False, balance: float = BALANCE_THRESHOLD,
        peak_tflops: Optional[float] = None, peak_gbps: Optional[float] = None,
        profile: Optional[str] = None, peak_dtype: Optional[str] = None,
        model_flops: Optional[float] = None) -> str:
    """The report of RUN_DIR as text (or JSON), plots written into `out`
    (default RUN_DIR). The peaks and `model_flops` (per step, all ranks)
    feed the roofline and MFU (rtx/speed.py)."""
    directory = Path(run_dir)
    if not directory.is_dir():
        raise ReportError(f"no such run directory: {run_dir}")
    trace = load_trace(directory)
    metrics = load_metrics(directory)
    analysis = analyze(trace)
    v = verdict(analysis, balance)
    try:
        peaks = speed_view.choose_peaks(trace, peak_tflops, peak_gbps, profile, peak_dtype)
        speed = speed_view.analyze(trace, traced_steps(analysis), peaks, model_flops)
    except speed_view.SpeedError as error:
        raise ReportError(str(error)) from None
    written: List[str] = []
    if plots or scaling:
        if _pyplot() is None:
            raise ReportError("plots need matplotlib (apt-get install python3-matplotlib); "
                              "--no-plots skips them")
        target = Path(out) if out else directory
        target.mkdir(parents=True, exist_ok=True)
        if plots:
            plot_timeline(trace, analysis, target / "timeline.png")
            plot_step_times(analysis, metrics, target / "step_times.png")
            written += [str(target / "timeline.png"), str(target / "step_times.png")]
            if peaks.flops > 0 and peaks.bytes_per_s > 0:
                speed_view.plot_roofline(speed, target / "roofline.png", _pyplot())
                written.append(str(target / "roofline.png"))
        if scaling:
            plot_scaling(Path(scaling), target / "scaling.png")
            written.append(str(target / "scaling.png"))
    if as_json:
        return json.dumps(dict(v.to_json(), speed=speed.to_json(), plots=written), indent=2) + "\n"
    text = format_report(v, analysis) + speed_view.format_speed(speed)
    if written:
        text += "plots: " + ", ".join(written) + "\n"
    return text


def main(argv: Optional[Sequence[str]] = None) -> int:
    import argparse
    import sys
    parser = argparse.ArgumentParser(prog="rtx report", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        sys.stdout.write(run_from_args(args))
    except ReportError as error:
        print(f"rtx report: error: {error}", file=sys.stderr)
        return 1
    return 0


def add_arguments(parser) -> None:  # type: ignore[no-untyped-def]
    parser.add_argument("run_dir", metavar="RUN_DIR",
                        help="the directory a run traced into (rtx-launch --trace RUN_DIR)")
    parser.add_argument("--out", metavar="DIR", help="write the plots here (default RUN_DIR)")
    parser.add_argument("--scaling", metavar="RESULTS.json",
                        help="also plot a scaling curve from benchmark results")
    parser.add_argument("--no-plots", action="store_true", help="the verdict only, no PNGs")
    parser.add_argument("--json", action="store_true", help="print the verdict as JSON")
    parser.add_argument("--balance", type=float, default=BALANCE_THRESHOLD,
                        help=f"a rank computing this many times the others' median is a "
                             f"straggler (default {BALANCE_THRESHOLD})")
    parser.add_argument("--peak-tflops", type=float, metavar="X",
                        help="the device's peak TFLOP/s (roofline, MFU); default: --profile's, "
                             "else the program's --peak-tflops in the trace")
    parser.add_argument("--peak-gbps", type=float, metavar="Y",
                        help="the device's peak memory GB/s (roofline)")
    parser.add_argument("--profile", metavar="NAME|FILE",
                        help="take the peaks from a hardware profile (hgx-h200, dgx-h100, ...: "
                             "lib/Analysis/profiles)")
    parser.add_argument("--peak-dtype", metavar="TYPE",
                        help="the profile's peak of this element type (default bf16 on a GPU, "
                             "else f32)")
    parser.add_argument("--model-flops", type=float, metavar="F",
                        help="the model's FLOPs per step, all ranks (6 x params x tokens + "
                             "attention): MFU from these instead of the ops' FLOPs")


def run_from_args(args) -> str:  # type: ignore[no-untyped-def]
    if not args.balance > 1.0:
        raise ReportError(f"--balance must be above 1, got {args.balance}")
    for flag in ("peak_tflops", "peak_gbps", "model_flops"):
        value = getattr(args, flag)
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise ReportError(f"--{flag.replace('_', '-')} must be a positive number, got {value}")
    return run(args.run_dir, out=args.out, scaling=args.scaling, plots=not args.no_plots,
               as_json=args.json, balance=args.balance, peak_tflops=args.peak_tflops,
               peak_gbps=args.peak_gbps, profile=args.profile, peak_dtype=args.peak_dtype,
               model_flops=args.model_flops)


if __name__ == "__main__":
    raise SystemExit(main())
