"""What a training run gives back, read from the files the tools write.

An emitted program writes one JSON object per step to --metrics FILE (step,
loss, step_time_ms, tokens_per_s, collective_ms, collective_pct,
allreduce_pct, overlap_pct, net_bw_gbps, peak_bytes; rank 0)
and its parameters and optimizer state to --save-state DIR (KEY.npy:
"param:NAME", "exp_avg:NAME", ...; steps_done last). rtx-run writes
resultN.npy to --out DIR and the same --metrics lines, without the
collective figures it cannot measure. With --eval-data the file also holds
a line per held-out evaluation (eval_step, eval_loss, eval_batches,
eval_tokens), which read_evaluations reads and read_metrics skips. These readers turn those files into TrainResult;
nothing here reads a tool's stdout. numpy is imported on first use.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Tuple

from .tools import ToolError

PARAM_PREFIX = "param:"


@dataclass(frozen=True)
class StepMetrics:
    """One line of a program's (or rtx-run's) --metrics file. A number the
    program could not give (no loss, a non-finite value: JSON null; a figure
    it does not measure: left out, as rtx-run's collective_*) is NaN."""
    step: int
    loss: float
    step_time_ms: float
    tokens_per_s: float
    collective_ms: float
    collective_pct: float
    # docs/observability.md: NaN where the run does not measure them.
    allreduce_pct: float = float("nan")
    overlap_pct: float = float("nan")
    net_bw_gbps: float = float("nan")
    peak_bytes: float = float("nan")
    # The steps done in all after it (a resumed run's earlier steps
    # included); 0 when the file does not say.
    global_step: int = 0
    # The optimizer's learning rate of the step (its schedule's, where the
    # program has one; docs/training.md); NaN when the file does not say.
    lr: float = float("nan")


@dataclass
class TrainResult:
    losses: List[float]                    # the loss of every step, in order
    params: Dict[str, Any]                 # parameter values after the last step (numpy arrays)
    metrics: List[StepMetrics] = field(default_factory=list)   # per step, from native programs
    # ElasticConfig(preempt_policy="save"): a pre-emption stopped the call
    # after len(losses) steps, with its checkpoint committed.
    preempted: bool = False
    # train(eval_data=...): (step, held-out loss) of each evaluation, the
    # step counting the steps of earlier calls of the same run.
    eval_losses: List[Tuple[int, float]] = field(default_factory=list)


def _number(value: Any) -> float:
    return float("nan") if value is None else float(value)


def read_metrics(path: Path) -> List[StepMetrics]:
    """The steps of a --metrics file (JSON lines), in order."""
    rows = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as error:
        raise ToolError(f"cannot read the metrics file {path}: {error}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if "eval_step" in row:
                continue  # read_evaluations
            rows.append(StepMetrics(int(row["step"]), _number(row["loss"]), _number(row["step_time_ms"]),
                                    _number(row["tokens_per_s"]), _number(row.get("collective_ms")),
                                    _number(row.get("collective_pct")),
                                    _number(row.get("allreduce_pct")), _number(row.get("overlap_pct")),
                                    _number(row.get("net_bw_gbps")), _number(row.get("peak_bytes")),
                                    int(row.get("global_step", 0)), _number(row.get("lr"))))
        except (ValueError, KeyError, TypeError) as error:
            raise ToolError(f"{path}:{number}: not a metrics line ({error}): {line[:200]}") from None
    return rows


def read_evaluations(path: Path) -> List[Tuple[int, float]]:
    """(step, held-out loss) of each evaluation line of a --metrics file, by
    step. Restart rounds append their lines and may evaluate a step again:
    the last line of each step counts."""
    last: Dict[int, float] = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if '"eval_step"' not in line:
            continue
        try:
            row = json.loads(line)
            last[int(row["eval_step"])] = _number(row["eval_loss"])
        except (ValueError, KeyError, TypeError) as error:
            raise ToolError(f"{path}:{number}: not an evaluation line ({error}): {line[:200]}") from None
    return sorted(last.items())


def losses_of(metrics: List[StepMetrics], steps: int, program: str) -> List[float]:
    """The loss of each of `steps` steps; a ToolError unless the metrics
    hold exactly steps 1..steps."""
    numbers = [m.step for m in metrics]
    if numbers != list(range(1, steps + 1)):
        raise ToolError(f"{program} wrote metrics for steps {numbers} of {steps}")
    return [m.loss for m in metrics]


def steps_of_run(metrics: List[StepMetrics], before: int, steps: int,
                 program: str) -> Tuple[List[StepMetrics], bool]:
    """The metrics of global steps before+1.. of a call that asked for
    `steps`, and whether it stopped short (a pre-emption). Restart rounds
    append their lines, redoing steps after their checkpoint: the last line
    of each global step counts. A ToolError when steps are missing."""
    last: Dict[int, StepMetrics] = {}
    for m in metrics:
        last[m.global_step] = m
    done = sorted(g for g in last if g > before)
    if not done or done != list(range(before + 1, done[-1] + 1)) or done[-1] > before + steps:
        raise ToolError(f"{program} wrote metrics for global steps {sorted(last)}; expected "
                        f"{before + 1}..{before + steps}")
    return [last[g] for g in done], done[-1] < before + steps


def read_state(directory: Path) -> Dict[str, Any]:
    """The arrays of a --save-state (or rtx-run --state) directory by key."""
    import numpy as np
    return {path.stem: np.load(path) for path in sorted(Path(directory).glob("*.npy"))}


def params_of(states: Mapping[str, Any]) -> Dict[str, Any]:
    """The parameters among state arrays by key: "param:NAME" -> NAME."""
    return {key[len(PARAM_PREFIX):]: value for key, value in states.items() if key.startswith(PARAM_PREFIX)}
