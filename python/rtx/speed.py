"""Speed in view: each op's achieved TFLOP/s and GB/s against the device's
roofline, and the step's MFU, from a traced run (``rtx report``).

Every op span of a trace carries the op's FLOPs and bytes from the
compiler's cost interface (``args.flops``, ``args.bytes``, at the rank's
local shapes) and its kind of work (``args.kind``: matmul, attention, norm,
loss, elementwise, reduction, layout, optimizer, other). Per op name and per
kind, over the traced steps of every rank, the report gives:

  time        ms per step and rank, and its share of the step
  TFLOP/s     FLOPs / time;  GB/s: bytes / time
  FLOP/B      arithmetic intensity: FLOPs / bytes
  bound       the roofline's bound for that intensity,
              min(peak FLOP/s, intensity x peak bytes/s) (Williams,
              Waterman and Patterson, CACM 2009)
  of bound    achieved TFLOP/s / bound; for an op without FLOPs (a copy),
              achieved GB/s / peak GB/s

Collectives are a kind too (time and GB/s of the tensor bytes they move;
the roofline does not apply to them).

MFU (model FLOPs utilisation, PaLM appendix B) = FLOPs per step /
(step time x ranks x peak FLOP/s). The FLOPs are the sum of the ops' FLOPs
in the traced steps, unless ``--model-flops F`` gives the model's own count
per step (6 x parameters x tokens plus the attention term, as PaLM and
nanoGPT's estimate_mfu count it). The ops' sum counts what ran: recomputed
forward ops too (PaLM calls that HFU) and the non-matrix ops.

The peaks come, in this order, from ``--peak-tflops``/``--peak-gbps``, from
a hardware profile (``--profile hgx-h200``: lib/Analysis/profiles, the
planner's figures), or from the trace (the program's own ``--peak-tflops``/
``--peak-gbps``, in otherData); the report names the source of each.
"""
from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

KINDS = ("matmul", "attention", "norm", "loss", "elementwise", "reduction", "layout",
         "optimizer", "collective", "other")
LANE_COMMUNICATION = 1


class SpeedError(Exception):
    """Peaks the report cannot use (a profile that does not exist, say)."""


@dataclass
class Peaks:
    """The device's peak FLOP/s and memory bytes per second (0: unknown),
    and where each came from."""
    flops: float = 0.0
    bytes_per_s: float = 0.0
    flops_source: str = ""
    bytes_source: str = ""

    def describe(self) -> str:
        if not self.flops and not self.bytes_per_s:
            return "peaks: none given (--peak-tflops/--peak-gbps, --profile NAME, or the program's " \
                   "--peak-tflops/--peak-gbps): no roofline, no MFU"
        parts = []
        if self.flops:
            parts.append(f"{self.flops / 1e12:g} TFLOP/s ({self.flops_source})")
        if self.bytes_per_s:
            parts.append(f"{self.bytes_per_s / 1e9:g} GB/s ({self.bytes_source})")
        return "peaks: " + ", ".join(parts)


def profile_peaks(name_or_path: str, dtype: Optional[str] = None) -> Peaks:
    """The peaks of a hardware profile (a built-in's name or a file): its
    peak FLOP/s for `dtype` (default bf16 on a GPU, f32 otherwise; f32's when
    the profile lacks the type, as HardwareProfile::peak) and its memory
    bandwidth."""
    from .tools import SOURCE_ROOT
    path = Path(name_or_path)
    if not path.is_file():
        path = SOURCE_ROOT / "lib" / "Analysis" / "profiles" / f"{name_or_path}.json"
    try:
        profile = json.loads(path.read_text())
        device = profile["device"]
        peaks = device["peak_flops"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise SpeedError(f"cannot read the hardware profile {name_or_path}: {error}") from None
    dtype = dtype or ("bf16" if device.get("kind") == "gpu" else "f32")
    chosen = dtype if dtype in peaks else "f32"
    what = f"hardware profile {profile.get('name', name_or_path)}"
    return Peaks(float(peaks.get(chosen, 0.0)), float(device.get("memory_bandwidth", 0.0)),
                 f"{what}, {chosen}", what)


def choose_peaks(trace: dict, peak_tflops: Optional[float] = None, peak_gbps: Optional[float] = None,
                 profile: Optional[str] = None, dtype: Optional[str] = None) -> Peaks:
    """Each peak from the first source that has it: the report's flags, the
    profile, the trace's otherData (the program's flags)."""
    other = trace.get("otherData", {})
    traced = Peaks(float(other.get("peak_flops", 0.0)), float(other.get("peak_bytes_per_s", 0.0)),
                   str(other.get("peak_source", "the trace")), str(other.get("peak_source", "the trace")))
    sources = [Peaks((peak_tflops or 0.0) * 1e12, (peak_gbps or 0.0) * 1e9,
                     "--peak-tflops", "--peak-gbps")]
    if profile:
        sources.append(profile_peaks(profile, dtype))
    sources.append(traced)
    chosen = Peaks()
    for p in sources:
        if not chosen.flops and p.flops:
            chosen.flops, chosen.flops_source = p.flops, p.flops_source
        if not chosen.bytes_per_s and p.bytes_per_s:
            chosen.bytes_per_s, chosen.bytes_source = p.bytes_per_s, p.bytes_source
    return chosen


@dataclass
class Row:
    """One op name (or kind), per traced step and rank."""
    name: str
    kind: str
    calls: float = 0.0
    ms: float = 0.0
    flops: float = 0.0
    bytes: float = 0.0
    share: float = 0.0             # of the step's time
    tflops: float = 0.0            # achieved
    gbps: float = 0.0
    intensity: Optional[float] = None      # FLOP per byte; None without bytes
    bound_tflops: Optional[float] = None   # the roofline at that intensity
    of_bound: Optional[float] = None       # achieved / bound

    def finish(self, step_ms: float, peaks: Peaks, samples: int) -> None:
        """Averages over `samples` traced (rank, step) pairs, then rates."""
        for name in ("calls", "ms", "flops", "bytes"):
            setattr(self, name, getattr(self, name) / samples)
        seconds = self.ms / 1000
        self.share = self.ms / step_ms if step_ms > 0 else 0.0
        self.tflops = self.flops / seconds / 1e12 if seconds > 0 else 0.0
        self.gbps = self.bytes / seconds / 1e9 if seconds > 0 else 0.0
        self.intensity = self.flops / self.bytes if self.bytes > 0 else None
        if self.kind == "collective":
            return  # moved over links, not computed: no roofline
        if self.flops > 0 and peaks.flops > 0 and (self.intensity is None or peaks.bytes_per_s > 0):
            bound = peaks.flops if self.intensity is None else min(
                peaks.flops, self.intensity * peaks.bytes_per_s)
            self.bound_tflops = bound / 1e12
            self.of_bound = self.tflops / self.bound_tflops if bound > 0 else None
        elif self.flops == 0 and self.bytes > 0 and peaks.bytes_per_s > 0:
            self.of_bound = self.gbps * 1e9 / peaks.bytes_per_s


@dataclass
class Speed:
    peaks: Peaks
    op_clock: str                  # how the op spans were timed
    step_ms: float                 # median over ranks of each rank's median
    ranks: int
    ops: List[Row] = field(default_factory=list)     # by op name, slowest first
    kinds: List[Row] = field(default_factory=list)   # by kind, slowest first
    flops_per_step: float = 0.0    # per rank: the ops' FLOPs, or the model's / ranks
    flops_source: str = "the ops' FLOPs (cost interface)"
    mfu: Optional[float] = None

    def to_json(self) -> dict:
        return asdict(self)


def analyze(trace: dict, steps: Dict[tuple, float], peaks: Peaks,
            model_flops: Optional[float] = None) -> Speed:
    """The per-op table and MFU. `steps`: (rank, step) -> step ms of every
    traced step, whose spans count."""
    if not steps:
        raise SpeedError("the trace has no traced steps")
    by_rank: Dict[int, List[float]] = {}
    for (rank, _), ms in steps.items():
        by_rank.setdefault(rank, []).append(ms)
    step_ms = statistics.median(statistics.median(v) for v in by_rank.values())
    other = trace.get("otherData", {})
    speed = Speed(peaks, str(other.get("op_clock", "host")), step_ms, len(by_rank))
    ops: Dict[str, Row] = {}
    kinds: Dict[str, Row] = {}
    for e in trace["traceEvents"]:
        if e.get("ph") != "X" or e.get("cat") not in ("op", "collective"):
            continue
        args = e.get("args", {})
        if (int(e["pid"]), int(args.get("step", 0))) not in steps:
            continue
        if e["cat"] == "op":
            kind = args.get("kind") or "other"
            flops = float(args.get("flops", 0.0))
        else:
            kind, flops = "collective", 0.0
        ms = float(e["dur"]) / 1000
        size = float(args.get("bytes", 0.0))
        for table, key in ((ops, e["name"]), (kinds, kind)):
            row = table.setdefault(key, Row(key, kind))
            row.calls += 1
            row.ms += ms
            row.flops += flops
            row.bytes += size
    for row in list(ops.values()) + list(kinds.values()):
        row.finish(step_ms, peaks, len(steps))
    speed.ops = sorted(ops.values(), key=lambda r: -r.ms)
    speed.kinds = sorted(kinds.values(), key=lambda r: -r.ms)
    if model_flops is not None:
        speed.flops_per_step = model_flops / speed.ranks
        speed.flops_source = f"--model-flops {model_flops:g} per step over {speed.ranks} rank(s)"
    else:
        speed.flops_per_step = sum(r.flops for r in speed.kinds)
    if peaks.flops > 0 and step_ms > 0:
        speed.mfu = speed.flops_per_step / (step_ms / 1000) / peaks.flops
    return speed


def _g(x: Optional[float], pct: bool = False) -> str:
    if x is None:
        return "-"
    if pct:
        return f"{100 * x:.1f}%"
    return f"{x:.3g}"


def _table(title: str, rows: List[Row], first: str) -> List[str]:
    by_kind = first == "kind"  # the first column is the kind already
    kind_head = "" if by_kind else f"{'kind':11s} "
    lines = [title,
             f"  {first:28s} {kind_head}{'calls':>6s} {'ms':>9s} {'share':>6s} {'TFLOP/s':>9s} "
             f"{'GB/s':>9s} {'FLOP/B':>8s} {'bound':>9s} {'of bound':>8s}"]
    for r in rows:
        kind = "" if by_kind else f"{r.kind:11s} "
        lines.append(f"  {r.name[:28]:28s} {kind}{r.calls:6.3g} {r.ms:9.3f} {_g(r.share, True):>6s} "
                     f"{_g(r.tflops):>9s} {_g(r.gbps):>9s} {_g(r.intensity):>8s} "
                     f"{_g(r.bound_tflops):>9s} {_g(r.of_bound, True):>8s}")
    return lines


def format_speed(speed: Speed, top: int = 15) -> str:
    """The tables and the MFU line, as text."""
    clock = ("device events" if speed.op_clock.startswith("device")
             else "the host's clock around each kernel call")
    lines = [f"speed (per step and rank, {speed.step_ms:.3f} ms steps; op times from {clock}):",
             "  " + speed.peaks.describe()]
    lines += _table("by kind:", speed.kinds, "kind")
    shown = speed.ops[:top]
    lines += _table(f"by op ({len(shown)} of {len(speed.ops)}, slowest first):", shown, "op")
    tflop = speed.flops_per_step / 1e12
    if speed.mfu is None:
        lines.append(f"MFU: needs a peak FLOP/s; {tflop:.4g} TFLOP per step and rank "
                     f"({speed.flops_source})")
    else:
        lines.append(f"MFU: {100 * speed.mfu:.2f}% = {tflop:.4g} TFLOP per step and rank "
                     f"({speed.flops_source}) / {speed.step_ms:.3f} ms / "
                     f"{speed.peaks.flops / 1e12:g} TFLOP/s ({speed.peaks.flops_source})")
    return "\n".join(lines) + "\n"


_KIND_COLORS = {"matmul": "#4c72b0", "attention": "#dd8452", "norm": "#55a868", "loss": "#c44e52",
                "elementwise": "#8172b3", "reduction": "#937860", "layout": "#da8bc3",
                "optimizer": "#8c8c8c", "other": "#ccb974"}


def plot_roofline(speed: Speed, path: Path, plt, label: int = 8) -> None:  # type: ignore[no-untyped-def]
    """Ops as points (intensity, achieved TFLOP/s) under the roof
    min(peak, intensity x bandwidth); the `label` slowest are named."""
    points = [r for r in speed.ops if r.kind != "collective" and r.flops > 0 and r.bytes > 0
              and r.tflops > 0]
    fig, ax = plt.subplots(figsize=(8, 5.5))
    xs = [r.intensity for r in points] or [1.0]
    lo, hi = min(xs + [1.0]) / 4, max(xs + [1e3]) * 4
    if speed.peaks.flops > 0 and speed.peaks.bytes_per_s > 0:
        ridge = speed.peaks.flops / speed.peaks.bytes_per_s
        grid = sorted({lo, hi, min(max(ridge, lo), hi)})
        roof = [min(speed.peaks.flops, x * speed.peaks.bytes_per_s) / 1e12 for x in grid]
        ax.plot(grid, roof, color="black", linewidth=1.5,
                label=f"roof: {speed.peaks.flops / 1e12:g} TFLOP/s, "
                      f"{speed.peaks.bytes_per_s / 1e9:g} GB/s (ridge {ridge:.3g} FLOP/B)")
    for kind in KINDS:
        mine = [r for r in points if r.kind == kind]
        if mine:
            ax.scatter([r.intensity for r in mine], [r.tflops for r in mine],
                       s=[20 + 400 * r.share for r in mine], color=_KIND_COLORS.get(kind, "#999999"),
                       alpha=0.8, label=kind, edgecolors="black", linewidths=0.5)
    for r in points[:label]:
        ax.annotate(r.name.replace("rtx.", ""), (r.intensity, r.tflops), fontsize=7,
                    xytext=(4, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved)")
    ax.set_ylabel("achieved TFLOP/s")
    mfu = "" if speed.mfu is None else f", MFU {100 * speed.mfu:.1f}%"
    ax.set_title(f"roofline: ops of a {speed.step_ms:.2f} ms step (area: time share){mfu}")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

