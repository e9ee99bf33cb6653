"""rtx-opt and rtx-run as Python functions.

Both run through rtx.tools.call: a failure is a ToolError carrying the
tool's diagnostic, and every warning a tool prints on success reaches the
caller as an RtxToolWarning. rtx-run's results are read from the resultN.npy
files it writes to --out, and marked with their type, rtx.grad_of and
rtx.state from the step's description, which the compiler decodes and
rtx-translate --emit=description writes as JSON; the loss and time of each
step from the JSON lines it writes to --metrics. Nothing here reads its
stdout or parses printed IR.
"""
from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

from .results import StepMetrics, losses_of, read_metrics
from .tools import PathLike, RtxToolWarning, ToolError, call, find_tool

__all__ = ["Result", "RunResult", "RtxToolWarning", "ToolError", "find_tool", "opt", "run",
           "describe", "training_passes"]


# --- rtx-opt ---------------------------------------------------------------------------

def opt(source: Union[str, PathLike], passes: Sequence[str] = (), *, output: Optional[PathLike] = None,
        build_dir: Optional[PathLike] = None) -> str:
    """Runs rtx-opt over `source` (MLIR text, or a path to a .mlir file) with
    the given pass arguments (e.g. "-rtx-autodiff") and returns the result's
    text (also written to `output` when given)."""
    argv = [find_tool("rtx-opt", build_dir)]
    stdin = None
    if isinstance(source, str) and ("\n" in source or "func.func" in source):
        argv.append("-")
        stdin = source
    else:
        if not Path(source).is_file():
            raise ToolError(f"rtx-opt: no such file: {source}")
        argv.append(str(source))
    argv.extend(passes)
    text = call(argv, stdin).stdout
    if output is not None:
        Path(output).write_text(text)
    return text


def training_passes(optimizer_options: str, micro_batches: int = 1,
                    mesh: Optional[str] = None, distribute_options: str = "") -> List[str]:
    """The rtx-opt arguments that turn a forward model into a training step:
    autodiff, gradient accumulation over `micro_batches`, the optimizer; with
    a `mesh` ("dp:2,tp:2"), rtx-distribute, which also partitions it (with
    `distribute_options` added, e.g. "bucket-bytes=1048576")."""
    if mesh is not None:
        options = optimizer_options.replace("kind=", "optimizer=", 1)
        extra = f" {distribute_options}" if distribute_options else ""
        return [f"-rtx-distribute=mesh={mesh} micro-batches={micro_batches} {options}{extra}"]
    passes = ["-rtx-autodiff"]
    recompute = re.search(r"(?:^| )recompute=(\S+)", distribute_options)
    if recompute:
        passes.append(f"-rtx-recompute=policy={recompute.group(1)}")
    if micro_batches > 1:
        passes.append(f"-rtx-accumulate-gradients=micro-batches={micro_batches}")
    passes.append(f"-rtx-optimizer={optimizer_options}")
    return passes


# --- rtx-run ------------------------------------------------------------------------------

@dataclass
class Result:
    """One result of a run: its index, MLIR type, the attribute
    rtx.grad_of / rtx.state when it has one, and the values when read
    (the type is the step function's, per rank in a distributed program)."""
    index: int
    type: str
    value: object = None          # numpy array, when the run wrote files
    grad_of: Optional[str] = None
    state: Optional[str] = None


@dataclass
class RunResult:
    results: List[Result]
    losses: List[float] = field(default_factory=list)   # per step (NaN: no loss, or not finite)
    stdout: str = ""
    metrics: List[StepMetrics] = field(default_factory=list)  # per step, from --metrics

    def grads(self) -> Dict[str, object]:
        """Gradients by parameter name (results marked rtx.grad_of)."""
        return {r.grad_of: r.value for r in self.results if r.grad_of is not None}

    def states(self) -> Dict[str, object]:
        """State after the run by key ("param:NAME", "exp_avg:NAME", "step")."""
        return {r.state: r.value for r in self.results if r.state is not None}


def run(program: PathLike, *, inputs: Optional[PathLike] = None, params: Optional[PathLike] = None,
        state: Optional[PathLike] = None, params_partial: bool = False,
        out: Optional[PathLike] = None, steps: int = 1, random: bool = False, seed: Optional[int] = None,
        entry: Optional[str] = None, read_results: bool = True,
        build_dir: Optional[PathLike] = None, ranks: int = 1,
        extra_args: Sequence[str] = ()) -> RunResult:
    """Runs rtx-run on a .mlir file. Inputs are read from `inputs`/NAME.npy,
    parameters from `params`/NAME.npy (every one, unless `params_partial`
    draws the missing ones from their initializers), or parameters and
    optimizer state from `state`/KEY.npy (to continue a run); results are written to `out` (with
    read_results and no `out`, a temporary directory) and, with
    read_results, loaded as numpy arrays. Returns the results (their types
    and attributes from the step's description: describe()) and each step's
    loss and time, read from rtx-run's --metrics file. `extra_args` go to
    rtx-run as they are (e.g. --offload-dir DIR)."""
    argv = [find_tool("rtx-run", build_dir), str(program)]
    if not Path(program).is_file():
        raise ToolError(f"rtx-run: no such file: {program}")
    for flag, value in (("--inputs", inputs), ("--params", params), ("--state", state)):
        if value is not None:
            argv.append(f"{flag}={value}")
    if params_partial:
        argv.append("--params-partial")
    if random:
        argv.append("--random")
    if seed is not None:
        argv.append(f"--seed={seed}")
    if entry is not None:
        argv.append(f"--entry={entry}")
    if steps != 1:
        argv.append(f"--steps={steps}")
    if ranks != 1:
        argv.append(f"--ranks={ranks}")
    argv += list(extra_args)
    with tempfile.TemporaryDirectory(prefix="rtx-run-") as scratch:
        out_dir = Path(out) if out is not None else Path(scratch) if read_results else None
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
            argv.append(f"--out={out_dir}")
        metrics_file = Path(scratch) / "metrics.jsonl"
        argv.append(f"--metrics={metrics_file}")
        stdout = call(argv).stdout
        metrics = read_metrics(metrics_file)
        results = _step_results(describe(program, entry=entry, build_dir=build_dir))
        if read_results:
            results = _read_results(out_dir, results)
    return RunResult(results, losses_of(metrics, steps, "rtx-run"), stdout, metrics)


def describe(program: PathLike, *, entry: Optional[str] = None,
             build_dir: Optional[PathLike] = None) -> Dict[str, object]:
    """The description of the step that `program` (a .mlir file) runs, as
    rtx-translate --emit=description writes it: its mesh, each pipeline
    stage's arguments and results, and under "results" the step's results
    in the order rtx-run writes them (index, type, sharding, state, grad_of).
    The step begins at `entry` (default: the module's first function)."""
    argv = [find_tool("rtx-translate", build_dir), "--emit=description", str(program)]
    if entry is not None:
        argv.append(f"--entry={entry}")
    text = call(argv).stdout
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ToolError(f"rtx-translate --emit=description wrote no JSON: {error}") from None


def _step_results(description: Dict[str, object]) -> List[Result]:
    """A Result per result of the step, marked from its description."""
    return [Result(r["index"], r["type"], grad_of=r.get("grad_of"), state=r.get("state"))
            for r in description.get("results", [])]


def _read_results(out_dir: Path, results: List[Result]) -> List[Result]:
    """Loads resultN.npy for each result."""
    import numpy as np
    for r in results:
        path = out_dir / f"result{r.index}.npy"
        if not path.is_file():
            raise ToolError(f"rtx-run wrote no {path.name} in {out_dir}")
        r.value = np.load(path)
    return results
