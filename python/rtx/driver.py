"""rtx-opt and rtx-run as Python functions.

Both run through rtx.tools.call: a failure is a ToolError carrying the
tool's diagnostic, and every warning a tool prints on success reaches the
caller as an RtxToolWarning. rtx-run's results are read from the resultN.npy
files it writes to --out, and marked with the rtx.grad_of / rtx.state
attributes of the entry function's signature; the loss and time of each step
from the JSON lines it writes to --metrics. Nothing here reads its stdout.
"""
from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

from .results import StepMetrics, losses_of, read_metrics
from .tools import PathLike, RtxToolWarning, ToolError, call, find_tool

__all__ = ["Result", "RunResult", "RtxToolWarning", "ToolError", "find_tool", "opt", "run",
           "training_passes"]


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
    rtx.grad_of / rtx.state when it has one, and the values when read."""
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
    and attributes from the entry function's signature) and each step's
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
    signature = _result_signature(Path(program).read_text(), entry)
    with tempfile.TemporaryDirectory(prefix="rtx-run-") as scratch:
        out_dir = Path(out) if out is not None else Path(scratch) if read_results else None
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
            argv.append(f"--out={out_dir}")
        metrics_file = Path(scratch) / "metrics.jsonl"
        argv.append(f"--metrics={metrics_file}")
        stdout = call(argv).stdout
        metrics = read_metrics(metrics_file)
        results = [Result(i, _type_of(attrs)) for i, attrs in enumerate(signature)]
        if read_results:
            results = _read_results(out_dir, results)
    _annotate(results, signature)
    return RunResult(results, losses_of(metrics, steps, "rtx-run"), stdout, metrics)


def _read_results(out_dir: Path, results: List[Result]) -> List[Result]:
    """Loads resultN.npy for each result (all of those in `out_dir` when the
    signature could not be read)."""
    import numpy as np
    if not results:
        indexes = sorted(int(p.stem[len("result"):]) for p in out_dir.glob("result*.npy")
                         if p.stem[len("result"):].isdigit())
        results = [Result(i, "") for i in indexes]
    for r in results:
        path = out_dir / f"result{r.index}.npy"
        if not path.is_file():
            raise ToolError(f"rtx-run wrote no {path.name} in {out_dir}")
        r.value = np.load(path)
        if not r.type:
            r.type = _tensor_type(r.value)
    return results


_ELEMENT_TYPES = {"float32": "f32", "float64": "f64", "float16": "f16", "int32": "i32", "int64": "i64",
                  "bool": "i1"}


def _tensor_type(value: object) -> str:
    shape = "".join(f"{d}x" for d in getattr(value, "shape", ()))
    return f"tensor<{shape}{_ELEMENT_TYPES.get(str(getattr(value, 'dtype', '')), '?')}>"


def _type_of(attrs: str) -> str:
    """The type in one result's signature text ("tensor<4xf32> {rtx.state = ...}")."""
    text = attrs.strip()
    if text.startswith("tensor<"):
        return text[:_matching(text, len("tensor")) + 1]
    return text.split(" {", 1)[0].strip()


def _annotate(results: List[Result], signature: List[str]) -> None:
    """Marks results with their rtx.grad_of / rtx.state attributes, read from
    the entry function's signature."""
    for r, attrs in zip(results, signature):
        grad = re.search(r'rtx\.grad_of = "([^"]*)"', attrs)
        state = re.search(r'rtx\.state = "([^"]*)"', attrs)
        r.grad_of = grad.group(1) if grad else None
        r.state = state.group(1) if state else None


def _result_signature(text: str, entry: Optional[str]) -> List[str]:
    """The attribute text of each result of the entry function (the first
    function, or `entry`), in order. A pipelined module's step is all its
    stage functions' results, by their rtx.step_result index."""
    pipelined: Dict[int, str] = {}
    for m in re.finditer(r"func\.func @([\w$.]+)\(", text):
        if entry is not None and m.group(1) != entry:
            continue
        i = _matching(text, m.end() - 1)           # end of the argument list
        rest = text[i + 1:]
        arrow = re.match(r"\s*->\s*", rest)
        if not arrow:
            return []
        rest = rest[arrow.end():]
        if not rest.startswith("("):
            return [rest[:rest.find("{")] if "{" in rest else rest]
        close = _matching(rest, 0)
        results = _split_top(rest[1:close])
        flat = any("rtx.flat" in r for r in results)
        by_index = _by_step_index(results)
        if not results or by_index is None or (entry is not None and not flat):
            return results
        if entry is not None:
            return [by_index[i] for i in sorted(by_index)]
        for index, attrs in by_index.items():
            pipelined.setdefault(index, attrs)
    return [pipelined[i] for i in sorted(pipelined)]


def _by_step_index(results: List[str]) -> Optional[Dict[int, str]]:
    """Each result by its rtx.step_result, and each flat buffer's members
    (rtx-shard-state: with their own index and state key) in place of the
    buffer, as rtx-run writes them; None when a result carries neither."""
    by_index: Dict[int, str] = {}
    for attrs in results:
        if "rtx.flat" in attrs:
            members = r'result = (\d+) : i64,[^{}]*?state = "([^"]*)", type = (tensor<[^>]*>)'
            for index, state, type_ in re.findall(members, attrs):
                by_index[int(index)] = f'{type_} {{rtx.state = "{state}"}}'
        elif (index := re.search(r"rtx\.step_result = (\d+)", attrs)):
            by_index[int(index.group(1))] = attrs
        else:
            return None
    return by_index


def _matching(text: str, open_index: int) -> int:
    """Index of the bracket that closes text[open_index], skipping strings."""
    pairs = {"(": ")", "[": "]", "{": "}", "<": ">"}
    stack, i, in_string = [], open_index, False
    while i < len(text):
        c = text[i]
        if in_string:
            if c == "\\":
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in pairs:
            stack.append(pairs[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return i
        elif c == ">" and text[i - 1] == "-":   # an arrow, not a bracket
            pass
        i += 1
    raise ToolError("cannot parse the function signature")


def _split_top(text: str) -> List[str]:
    """Splits at commas outside brackets and strings."""
    parts, depth, start, in_string = [], 0, 0, False
    for i, c in enumerate(text):
        if in_string:
            if c == '"' and text[i - 1] != "\\":
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:])
    return parts
