"""Program.build(): the training step as a native program, for CPUs or GPUs.

    program = rtx.compile(model, example_inputs, group=rtx.init("cuda", devices=2),
                          parallel=rtx.ParallelConfig(dp=2))
    native = program.build("out/")               # rtx-translate --emit=cuda, nvcc
    result = native.train(batch, steps=100)      # rtx-launch -n 2 -- out/program ...

Program.train runs the step in rtx-run, the reference interpreter; a native
program is what rtx-translate emits (docs/codegen.md), compiled by the build
script it writes (the C++ compiler with librtxrt and Gloo, or nvcc with
cuBLAS and NCCL) and launched one process per rank by rtx-launch. Both take
the same inputs and parameters and give the same losses to rounding.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Sequence, Union

from . import driver
from .config import ConfigError

if TYPE_CHECKING:                                   # imports program.py, which imports this
    from .program import Program, TrainResult

DEVICES = ("cpu", "cuda")
_STEP_LINE = re.compile(r"^(?:\[rank 0\] )?step \d+/\d+: loss=(\S+)")


class NativeProgram:
    """A training step compiled to a native program; create it with
    Program.build. `path` is the executable, `source` its C++/CUDA source."""

    def __init__(self, program: "Program", path: Path, source: Path, device: str) -> None:
        self.program, self.path, self.source, self.device = program, path, source, device
        # The last call's --save-state directory, and the parameters it
        # returned: the next call continues from that state while
        # program.params is still those parameters.
        self._state = path.parent / "state"
        self._state_params: Optional[Dict[str, Any]] = None

    @property
    def ranks(self) -> int:
        return self.program.parallel.ranks

    def train(self, batch: Union[Mapping[str, Any], Sequence[Any], None] = None, steps: int = 1, *,
              data: Union[str, os.PathLike, None] = None, timeout: float = 60.0, seed: int = 0,
              progress: bool = False) -> "TrainResult":
        """Runs `steps` steps in `ranks` local processes and returns each
        step's loss and the parameters after the last step. The data is
        `batch` (every step, as in Program.train) or a token file `data`
        (nanoGPT's uint16 tokens or llm.c's .bin: each step reads the next
        windows into the inputs 'tokens' and 'labels'). Parameters carry over
        to the next call (of this object and of the Program), and so does
        the optimizer state (below). `timeout`
        bounds each collective (seconds); progress=True echoes rank 0's
        progress lines to stderr as they come.

        Consecutive calls continue one run: the optimizer state (AdamW's
        moments and step count) and the position in a token file carry
        over, so two calls of N steps equal one of 2N. Setting
        program.params (or calling program.train) starts afresh from those
        parameters."""
        from .program import TrainResult, _check_batch, _save
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ConfigError(f"steps must be a positive integer, got {steps!r}")
        if not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if (batch is None) == (data is None):
            raise ConfigError("train needs a batch or a token file (data=...), not both")
        if data is not None:
            names = {s.name for s in self.program.inputs}
            if names != {"tokens", "labels"}:
                raise ConfigError(f"data= feeds the inputs 'tokens' and 'labels'; this program takes "
                                  f"{', '.join(sorted(names))}")
            if not Path(data).is_file():
                raise ConfigError(f"no such token file: {data}")
        arrays = _check_batch(batch, self.program.inputs) if batch is not None else None
        with tempfile.TemporaryDirectory(prefix="rtx-native-") as work:
            work_dir = Path(work)
            argv = [driver.find_tool("rtx-launch"), "-n", str(self.ranks), "--store",
                    f"file:{work_dir / 'store'}", "--", str(self.path), "--steps", str(steps),
                    "--seed", str(seed), "--timeout", str(timeout)]
            if arrays is not None:
                argv += ["--inputs", str(_save(work_dir / "inputs", arrays))]
            else:
                argv += ["--data", str(Path(data).resolve())]
            resume = self._state_params is not None and self.program.params is self._state_params
            if resume:
                argv += ["--state", str(self._state)]
            elif self.program.params is not None:
                argv += ["--params", str(_save(work_dir / "params", self.program.params))]
            # Saved aside and swapped in on success: a failed call keeps the
            # state of the last good one.
            saved = self._state.with_name("state.next")
            shutil.rmtree(saved, ignore_errors=True)
            argv += ["--save-state", str(saved)]
            done = _run(argv, echo=_STEP_LINE if progress else None)
            if done.returncode != 0:
                raise driver.ToolError(f"{self.path.name} failed (exit {done.returncode}):\n"
                                       f"{_tail(done.stderr or done.stdout)}")
            losses = [float(m.group(1)) for m in map(_STEP_LINE.match, done.stdout.splitlines()) if m]
        if len(losses) != steps:
            raise driver.ToolError(f"{self.path.name} reported {len(losses)} losses for {steps} steps:\n"
                                   f"{_tail(done.stdout)}")
        # The parameters are in the saved state (param:NAME.npy): no --out,
        # which would write them a second time.
        import numpy as np
        params = {path.stem[len("param:"):]: np.load(path) for path in sorted(saved.glob("param:*.npy"))}
        shutil.rmtree(self._state, ignore_errors=True)
        saved.rename(self._state)
        self.program.params = self._state_params = params
        return TrainResult(losses, params)


def build(program: "Program", directory: Union[str, os.PathLike, None] = None, *,
          device: Optional[str] = None, emulate: bool = False) -> NativeProgram:
    """Emits `program`'s training step for `device` ("cpu" or "cuda"; by
    default the group's backend) into `directory` (default: a new temporary
    one) as train.mlir, program.cpp or program.cu, build.sh and the compiled
    `program`. emulate=True builds a CUDA program against the host emulation
    of the GPU runtime (a GPU-free check of the CUDA path)."""
    device = device if device is not None else program.group.backend
    if device not in DEVICES:
        raise ConfigError(f"device must be one of {', '.join(repr(d) for d in DEVICES)}; got {device!r}")
    if emulate and device != "cuda":
        raise ConfigError("emulate=True emulates the GPU runtime; it needs device='cuda'")
    out = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="rtx-build-"))
    out.mkdir(parents=True, exist_ok=True)
    train = out / "train.mlir"
    train.write_text(program.train_ir)
    source = out / ("program.cu" if device == "cuda" else "program.cpp")
    script = out / "build.sh"
    driver._call([driver.find_tool("rtx-translate"), str(train), f"--emit={'cuda' if device == 'cuda' else 'cpp'}",
                  "-o", str(source), "--build-script", str(script)])
    executable = out / "program"
    env = dict(os.environ, RTX_GPU_EMULATION="1" if emulate else "0")
    done = subprocess.run(["sh", str(script), str(source), str(executable)], capture_output=True, text=True,
                          env=env)
    if done.returncode != 0:
        raise driver.ToolError(f"building {source} failed (exit {done.returncode}):\n"
                               f"{_tail(done.stderr or done.stdout)}")
    return NativeProgram(program, executable, source, device)


def _run(argv: Sequence[str], echo: Optional["re.Pattern[str]"] = None) -> subprocess.CompletedProcess:
    """Runs argv to completion, capturing its output; with `echo`, stdout
    lines that match it are also written to stderr as they arrive."""
    if echo is None:
        return subprocess.run(argv, capture_output=True, text=True)
    with tempfile.TemporaryFile(mode="w+") as err:
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1) as process:
            lines = []
            for line in process.stdout:
                lines.append(line)
                if echo.match(line):
                    sys.stderr.write(line)
                    sys.stderr.flush()
        err.seek(0)
        return subprocess.CompletedProcess(argv, process.returncode, "".join(lines), err.read())


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
