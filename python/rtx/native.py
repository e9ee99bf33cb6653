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
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Protocol, Union

from .batch import Batch, InputSpec, check_batch, save_arrays
from .config import ConfigError, ParallelConfig, ProcessGroup, ShardingConfig
from .results import TrainResult, losses_of, params_of, read_metrics, read_state
from .tools import call, find_tool

DEVICES = ("cpu", "cuda")


class CompiledStep(Protocol):
    """What a native program needs of the Program it was built from
    (rtx.program.Program is one): the step's IR, its inputs and group, and
    the parameters, which NativeProgram.train reads and sets."""
    train_ir: str
    params: Optional[Dict[str, Any]]
    parallel: ParallelConfig
    sharding: ShardingConfig
    group: ProcessGroup

    @property
    def inputs(self) -> List[InputSpec]: ...


class NativeProgram:
    """A training step compiled to a native program; create it with
    Program.build. `path` is the executable, `source` its C++/CUDA source."""

    def __init__(self, program: CompiledStep, path: Path, source: Path, device: str) -> None:
        self.program, self.path, self.source, self.device = program, path, source, device
        # The last call's --save-state directory, and the parameters it
        # returned: the next call continues from that state while
        # program.params is still those parameters.
        self._state = path.parent / "state"
        self._state_params: Optional[Dict[str, Any]] = None

    @property
    def ranks(self) -> int:
        return self.program.parallel.ranks

    def train(self, batch: Optional[Batch] = None, steps: int = 1, *,
              data: Union[str, os.PathLike, None] = None, timeout: float = 60.0, seed: int = 0,
              progress: bool = False, trace: Union[str, os.PathLike, None] = None,
              trace_steps: Optional[str] = None) -> TrainResult:
        """Runs `steps` steps in `ranks` local processes and returns each
        step's loss and the parameters after the last step. The data is
        `batch` (every step, as in Program.train) or a token file `data`
        (nanoGPT's uint16 tokens or llm.c's .bin: each step reads the next
        windows into the inputs 'tokens' and 'labels'). Parameters carry over
        to the next call (of this object and of the Program), and so does
        the optimizer state (below). `timeout` bounds each collective
        (seconds); progress=True echoes the program's output (rank 0's
        progress lines) to stderr as it comes. trace=DIR writes every rank's
        trace and metrics lines into DIR and merges the traces into
        DIR/trace.json (rtx-launch --trace; trace_steps="A:B" limits them to
        steps A to B of this call); rtx.report.run(DIR) then gives the
        bottleneck verdict (docs/observability.md).

        The losses and per-step metrics come from the program's --metrics
        file, the parameters from its --save-state directory; what the
        ranks write to stderr is re-issued as RtxToolWarning.

        Consecutive calls continue one run: the optimizer state (AdamW's
        moments and step count) and the position in a token file carry
        over, so two calls of N steps equal one of 2N. Setting
        program.params (or calling program.train) starts afresh from those
        parameters."""
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
        if trace_steps is not None and trace is None:
            raise ConfigError("trace_steps needs trace=DIR")
        if trace_steps is not None and not (isinstance(trace_steps, str)
                                            and re.fullmatch(r"\d*:?\d*", trace_steps)
                                            and trace_steps.strip(":")):
            raise ConfigError(f"trace_steps must be 'A:B', 'A:', ':B' or 'A', got {trace_steps!r}")
        arrays = check_batch(batch, self.program.inputs) if batch is not None else None
        devices = self._devices()
        with tempfile.TemporaryDirectory(prefix="rtx-native-") as work:
            work_dir = Path(work)
            tracing = ["--trace", str(Path(trace).resolve())] if trace is not None else []
            if trace_steps is not None:
                tracing += ["--trace-steps", trace_steps]
            argv = [find_tool("rtx-launch"), "-n", str(self.ranks), "--store",
                    f"file:{work_dir / 'store'}", *devices, *tracing, "--", str(self.path), "--steps", str(steps),
                    "--seed", str(seed), "--timeout", str(timeout)]
            if arrays is not None:
                argv += ["--inputs", str(save_arrays(work_dir / "inputs", arrays))]
            else:
                argv += ["--data", str(Path(data).resolve())]
            resume = self._state_params is not None and self.program.params is self._state_params
            if resume:
                argv += ["--state", str(self._state)]
            elif self.program.params is not None:
                argv += ["--params", str(save_arrays(work_dir / "params", self.program.params))]
            # Saved aside and swapped in on success: a failed call keeps the
            # state of the last good one.
            saved = self._state.with_name("state.next")
            shutil.rmtree(saved, ignore_errors=True)
            metrics_file = work_dir / "metrics.jsonl"
            argv += ["--save-state", str(saved), "--metrics", str(metrics_file)]
            argv += self.program.sharding.offload_argv(work_dir)
            call(argv, name=self.path.name, echo=progress, tail=20)
            metrics = read_metrics(metrics_file)
        losses = losses_of(metrics, steps, self.path.name)
        # The parameters are in the saved state (param:NAME.npy): no --out,
        # which would write them a second time.
        params = params_of(read_state(saved))
        shutil.rmtree(self._state, ignore_errors=True)
        saved.rename(self._state)
        self.program.params = params      # checked by Program.params
        self._state_params = self.program.params
        return TrainResult(losses, params, metrics)


    def _devices(self) -> List[str]:
        """rtx-launch's --devices for the group's device names: local rank r
        runs on the r-th. Names a CPU program cannot honour are refused."""
        names = list(self.program.group.devices)
        if self.device == "cuda":
            return ["--devices", ",".join(names)] if self.program.group.backend == "cuda" else []
        default = [f"cuda:{i}" for i in range(len(names))]
        if self.program.group.backend == "cuda" and names != default:
            raise ConfigError(f"the group places its ranks on {', '.join(names)}, but this native program was built "
                              "for the CPU: build it with device='cuda'")
        return []


def build(program: CompiledStep, directory: Union[str, os.PathLike, None] = None, *,
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
    call([find_tool("rtx-translate"), str(train), f"--emit={'cuda' if device == 'cuda' else 'cpp'}",
          "-o", str(source), "--build-script", str(script)])
    executable = out / "program"
    env = dict(os.environ, RTX_GPU_EMULATION="1" if emulate else "0")
    call(["sh", str(script), str(source), str(executable)], name=f"building {source}", env=env, tail=20)
    return NativeProgram(program, executable, source, device)
