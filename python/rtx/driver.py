"""Runs the compiler tools (rtx-opt, rtx-run) as subprocesses.

Tools are looked up, in order, in an explicit build directory, in
$RTX_BUILD_DIR/bin, in the build/bin of the source tree this package lives
in, and on PATH. Every failure is a ToolError carrying the tool's message.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

PathLike = Union[str, "os.PathLike[str]"]

SOURCE_ROOT = Path(__file__).resolve().parents[2]


class ToolError(RuntimeError):
    """A tool could not be found, or it failed; the message says which and why."""


def find_tool(name: str, build_dir: Optional[PathLike] = None) -> str:
    """The path of tool `name` (e.g. "rtx-opt")."""
    candidates: List[Path] = []
    if build_dir is not None:
        candidates.append(Path(build_dir) / "bin" / name)
    env_dir = os.environ.get("RTX_BUILD_DIR")
    if env_dir:
        candidates.append(Path(env_dir) / "bin" / name)
    candidates.append(SOURCE_ROOT / "build" / "bin" / name)
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    on_path = shutil.which(name)
    if on_path:
        return on_path
    looked = ", ".join(str(p.parent) for p in candidates)
    raise ToolError(f"{name} not found (looked in {looked} and on PATH); build rtx with "
                    f"./scripts/setup.sh or point RTX_BUILD_DIR at a build directory")


def _call(argv: Sequence[str], stdin: Optional[str] = None) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run(list(argv), input=stdin, capture_output=True, text=True)
    except OSError as error:
        raise ToolError(f"cannot run {argv[0]}: {error}") from None
    if done.returncode != 0:
        message = (done.stderr.strip() or done.stdout.strip() or "no message")
        raise ToolError(f"{Path(argv[0]).name} failed (exit {done.returncode}): {message}")
    return done


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
    text = _call(argv, stdin).stdout
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
    losses: List[float] = field(default_factory=list)   # per step, with steps > 1
    stdout: str = ""

    def grads(self) -> Dict[str, object]:
        """Gradients by parameter name (results marked rtx.grad_of)."""
        return {r.grad_of: r.value for r in self.results if r.grad_of is not None}

    def states(self) -> Dict[str, object]:
        """State after the run by key ("param:NAME", "exp_avg:NAME", "step")."""
        return {r.state: r.value for r in self.results if r.state is not None}


_RESULT_LINE = re.compile(r"^result (\d+): (tensor<[^>]*>)")
_STEP_LINE = re.compile(r"^step \d+/\d+: loss=(\S+)")


def run(program: PathLike, *, inputs: Optional[PathLike] = None, params: Optional[PathLike] = None,
        state: Optional[PathLike] = None,
        out: Optional[PathLike] = None, steps: int = 1, random: bool = False, seed: Optional[int] = None,
        entry: Optional[str] = None, read_results: bool = True,
        build_dir: Optional[PathLike] = None, ranks: int = 1) -> RunResult:
    """Runs rtx-run on a .mlir file. Inputs are read from `inputs`/NAME.npy,
    parameters from `params`/NAME.npy, or parameters and optimizer state
    from `state`/KEY.npy (to continue a run); results are written to `out` (with
    read_results and no `out`, a temporary directory) and, with
    read_results, loaded as numpy arrays. Returns the results and, for
    steps > 1, the loss of each step."""
    argv = [find_tool("rtx-run", build_dir), str(program)]
    if not Path(program).is_file():
        raise ToolError(f"rtx-run: no such file: {program}")
    for flag, value in (("--inputs", inputs), ("--params", params), ("--state", state)):
        if value is not None:
            argv.append(f"{flag}={value}")
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
    with tempfile.TemporaryDirectory(prefix="rtx-run-") as scratch:
        out_dir = Path(out) if out is not None else Path(scratch) if read_results else None
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
            argv.append(f"--out={out_dir}")
        stdout = _call(argv).stdout
        results = [Result(int(m.group(1)), m.group(2))
                   for m in map(_RESULT_LINE.match, stdout.splitlines()) if m]
        losses = [float(m.group(1)) for m in map(_STEP_LINE.match, stdout.splitlines()) if m]
        if read_results:
            import numpy as np
            for r in results:
                r.value = np.load(out_dir / f"result{r.index}.npy")
    _annotate(results, Path(program).read_text(), entry)
    return RunResult(results, losses, stdout)


def _annotate(results: List[Result], text: str, entry: Optional[str]) -> None:
    """Marks results with their rtx.grad_of / rtx.state attributes, read from
    the entry function's signature."""
    signature = _result_signature(text, entry)
    for r, attrs in zip(results, signature):
        grad = re.search(r'rtx\.grad_of = "([^"]*)"', attrs)
        state = re.search(r'rtx\.state = "([^"]*)"', attrs)
        r.grad_of = grad.group(1) if grad else None
        r.state = state.group(1) if state else None


def _result_signature(text: str, entry: Optional[str]) -> List[str]:
    """The attribute text of each result of the entry function (the first
    function, or `entry`), in order."""
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
        return _split_top(rest[1:close])
    return []


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
