"""parallel="auto": the auto-partitioner (rtx-auto-partition) chooses the plan.

The pass prices every plan of the search space (data, tensor and pipeline
degrees, sequence parallelism, ZeRO stage, micro-batches, schedule,
recompute, overlap, placement) with a cost model built from the compiled
program itself and a hardware profile, writes its choice into the IR
(`rtx.plan`), and `rtx-distribute=from-plan=true` builds the training step
from it. docs/planner.md explains the model, the objectives and the report.
"""
from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional

from . import driver
from .config import ConfigError
from .tools import call, find_tool

OBJECTIVES = ("throughput", "memory", "compute-balanced", "communication", "hybrid", "tp-first", "pp-first")


@dataclass(frozen=True)
class Plan:
    """The chosen plan and the planner's report (JSON, as rtx-auto-partition
    writes it with report-file=; `text` is the report a person reads)."""
    dp: int
    tp: int
    pp: int
    sequence_parallel: bool
    zero: int
    micro_batches: int
    micro_batch_size: float
    virtual_stages: int
    schedule: str
    recompute: str
    overlap: bool
    order: str
    distribute: str               # the rtx-distribute options that realise it
    report: Dict[str, Any] = field(repr=False)

    @property
    def text(self) -> str:
        return self.report["text"]

    @property
    def predicted_step_s(self) -> float:
        return self.report["plan"]["predicted"]["step_time_s"]


def machine_profile(devices: int, directory: Path, build_dir: Optional[Path] = None) -> Path:
    """This machine's profile for `devices` CPU ranks, written by rtx-topology."""
    path = directory / "machine-profile.json"
    call([find_tool("rtx-topology", build_dir), "--cpu-ranks", str(devices), "-o", str(path)],
         name="rtx-topology")
    return path


def plan(model_ir: str, devices: int, hardware: Optional[str] = None, *, objective: str = "throughput",
         global_batch: Optional[int] = None, memory_margin: float = 0.1, balance_threshold: float = 1.2,
         optimizer: str = "adamw", mixed_precision: bool = False, vary_micro_batch: bool = False,
         fixed: Optional[Dict[str, Any]] = None) -> tuple:
    """Runs rtx-auto-partition on a forward model and returns (the model with
    the plan written into it, Plan). `hardware`: a built-in profile
    (cpu-host, dgx-a100, dgx-h100, hgx-h200, pcie-l40s-8) or a profile file;
    None profiles this machine with rtx-topology (CPU ranks). `fixed` pins
    choices: {"tp": 2, "zero": 1, "recompute": "full", ...} (the pass'
    options)."""
    if objective not in OBJECTIVES:
        raise ConfigError(f"objective must be one of {', '.join(OBJECTIVES)}; got {objective!r}")
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise ConfigError(f"devices must be a positive integer, got {devices!r}")
    with tempfile.TemporaryDirectory(prefix="rtx-plan-") as work:
        work_dir = Path(work)
        profile = str(hardware) if hardware is not None else str(machine_profile(devices, work_dir))
        report_path = work_dir / "plan.json"
        options = {"profile": profile, "devices": devices, "objective": objective,
                   "memory-margin": memory_margin, "balance-threshold": balance_threshold,
                   "optimizer": optimizer, "mixed-precision": str(mixed_precision).lower(),
                   "vary-micro-batch": str(vary_micro_batch).lower(), "remarks": "false",
                   "report-file": str(report_path)}
        if global_batch is not None:
            options["global-batch"] = global_batch
        for key, value in (fixed or {}).items():
            options[key.replace("_", "-")] = str(value).lower() if isinstance(value, bool) else value
        text = " ".join(f"{k}={v}" for k, v in options.items())
        planned = driver.opt(model_ir, [f"-rtx-auto-partition={text}"])
        report = json.loads(report_path.read_text())
    chosen = report["plan"]
    return planned, Plan(dp=chosen["dp"], tp=chosen["tp"], pp=chosen["pp"],
                         sequence_parallel=chosen["sequence_parallel"], zero=chosen["zero"],
                         micro_batches=chosen["micro_batches"], micro_batch_size=chosen["micro_batch_size"],
                         virtual_stages=chosen["virtual_stages"], schedule=chosen["schedule"],
                         recompute=chosen["recompute"], overlap=chosen["overlap"], order=chosen["order"],
                         distribute=chosen["distribute"], report=report)


# The parts of a plan's step time, in the report's names, as plot() stacks them.
TIME_PARTS = (("compute", "compute"), ("recompute", "recompute"),
              ("tensor_parallel_comm", "tp communication"), ("pipeline_sends", "pipeline sends"),
              ("data_parallel_comm_exposed", "dp communication (exposed)"), ("optimizer", "optimizer"))


def _bytes(n: float) -> str:
    """A memory figure in the unit that shows it (33.5 MiB, not 0.0 GiB)."""
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def plot(report: Dict[str, Any], path: Path) -> Path:
    """Draws the chosen plan and its runners-up as stacked bars of their
    predicted step time (compute, recompute, communication, optimizer; the
    rest of the step is pipeline bubble), labelled with memory per rank, and
    writes a PNG (needs matplotlib: Debian's python3-matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("plots need matplotlib (apt-get install python3-matplotlib)") from None
    plans = [report["plan"]] + list(report["runners_up"])
    labels = [p["distribute"].replace("vocab-parallel=true ", "").replace(" ", "\n", 2) for p in plans]
    fig, ax = plt.subplots(figsize=(10, 2.0 + 0.9 * len(plans)))
    for row, p in enumerate(plans):
        times = p["predicted"]["time_s"]
        left = 0.0
        for i, (key, name) in enumerate(TIME_PARTS):
            width = times[key]
            ax.barh(row, width, left=left, color=f"C{i}", label=name if row == 0 else None)
            left += width
        bubble = max(0.0, p["predicted"]["step_time_s"] - left)
        ax.barh(row, bubble, left=left, color="lightgrey", label="bubble and waits" if row == 0 else None)
        ax.text(p["predicted"]["step_time_s"], row, f"  {_bytes(p['predicted']['memory_bytes']['peak'])}/rank",
                va="center", fontsize=8)
    ax.set_yticks(range(len(plans)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("predicted step time (s)")
    ax.set_title(f"{report['devices']} devices of {report['profile']}, objective {report['objective']}: "
                 "the choice (top) and the runners-up", fontsize=9)
    ax.set_xlim(0, 1.18 * max(p["predicted"]["step_time_s"] for p in plans))
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.5 / len(plans) - 0.1), ncol=4)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
