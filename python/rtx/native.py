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
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Protocol, Tuple, Union

from .batch import Batch, InputSpec, check_batch, save_arrays
from .config import ConfigError, ElasticConfig, ParallelConfig, ProcessGroup, ShardingConfig
from .results import (TrainResult, losses_of, params_of, read_evaluations, read_metrics, read_state,
                      steps_of_run)
from .tools import ToolError, call, find_tool

DEVICES = ("cpu", "cuda")

# The inputs a token file feeds, by their names (the programs' own rule,
# runtime/lib/program/TokenData.h): rtx's builder, nanoGPT's GPT imported
# from PyTorch, Hugging Face.
TOKEN_INPUTS = (("tokens", "labels"), ("idx", "targets"), ("input_ids", "labels"))


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
        # Steps done by the calls this run is made of (ElasticConfig: the
        # programs count to --until-step).
        self._steps_done = 0

    @property
    def ranks(self) -> int:
        return self.program.parallel.ranks

    def train(self, batch: Optional[Batch] = None, steps: int = 1, *,
              data: Union[str, os.PathLike, None] = None, data_inputs: Optional[Tuple[str, str]] = None,
              eval_data: Union[str, os.PathLike, None] = None, eval_every: Optional[int] = None,
              eval_batches: Optional[int] = None, timeout: Union[float, str, None] = None,
              seed: int = 0,
              progress: bool = False, trace: Union[str, os.PathLike, None] = None,
              trace_steps: Optional[str] = None) -> TrainResult:
        """Runs `steps` steps in `ranks` local processes and returns each
        step's loss and the parameters after the last step. The data is
        `batch` (every step, as in Program.train) or a token file `data`
        (nanoGPT's uint16 tokens or llm.c's .bin: each step reads the next
        windows into the inputs 'tokens' and 'labels', or 'idx' and
        'targets', or 'input_ids' and 'labels'; data_inputs=(TOKENS, LABELS)
        names others). eval_data=FILE, a held-out token file, evaluates the
        loss of its first eval_batches batches after the last step and every
        eval_every steps: TrainResult.eval_losses holds (step, loss); each
        batch costs a training step whose results are dropped, and the
        training is the same as without it. Parameters carry over
        to the next call (of this object and of the Program), and so does
        the optimizer state (below). `timeout` bounds each collective
        (seconds, or "auto": 10x the p99 step time; default: the program's
        ElasticConfig.timeout when it has one, else 60); progress=True echoes the program's output (rank 0's
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
        parameters.

        The program's ElasticConfig (rtx.compile(..., elastic=...)) makes the
        call survive failures (docs/checkpoint.md): checkpoints every
        checkpoint_interval steps into checkpoint_dir, rtx-launch restarts
        after a failed rank (max_restarts, shrinking to min_ranks), and with
        preempt_policy="save" a SIGTERM to this process is a pre-emption:
        the ranks commit a checkpoint and the call returns the steps done
        with TrainResult.preempted set; the next call continues from there."""
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ConfigError(f"steps must be a positive integer, got {steps!r}")
        elastic = getattr(self.program, "elastic", None)
        elastic = elastic if elastic is not None and elastic.active else None
        if timeout is None:
            timeout = elastic.timeout if elastic is not None else 60.0
        if timeout != "auto" and not (isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
                                      and timeout > 0):
            raise ConfigError(f"timeout must be a positive number of seconds or 'auto', got {timeout!r}")
        if (batch is None) == (data is None):
            raise ConfigError("train needs a batch or a token file (data=...), not both")
        if data is not None:
            self._check_token_inputs(data_inputs)
            if not Path(data).is_file():
                raise ConfigError(f"no such token file: {data}")
        elif data_inputs is not None:
            raise ConfigError("data_inputs names the inputs of a token file: it needs data=")
        eval_argv = self._eval_argv(data, eval_data, eval_every, eval_batches)
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
            resume = self._state_params is not None and self.program.params is self._state_params
            if not resume:
                self._steps_done = 0
            store = (elastic.store() if elastic is not None else None) or f"file:{work_dir / 'store'}"
            launch, program_args = self._elastic_argv(elastic, resume, steps)
            argv = [find_tool("rtx-launch"), "-n", str(self.ranks), "--store", store, *devices, *tracing,
                    *launch, "--", *program_args, "--seed", str(seed), "--timeout", str(timeout)]
            if arrays is not None:
                argv += ["--inputs", str(save_arrays(work_dir / "inputs", arrays))]
            else:
                argv += ["--data", str(Path(data).resolve())]
                if data_inputs is not None:
                    argv += ["--data-inputs", ",".join(data_inputs)]
            argv += eval_argv
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
            forward = (signal.SIGTERM, signal.SIGINT) if elastic is not None and elastic.preempt_policy == "save" \
                else ()
            call(argv, name=self.path.name, echo=progress, tail=20, forward=forward)
            metrics = read_metrics(metrics_file)
            evaluations = read_evaluations(metrics_file) if eval_data is not None else []
        if elastic is None:
            losses, preempted = losses_of(metrics, steps, self.path.name), False
        else:
            # Restart rounds append to the metrics file: the last line of
            # each global step counts. Fewer steps than asked: pre-empted.
            metrics, preempted = steps_of_run(metrics, self._steps_done, steps, self.path.name)
            losses = [m.loss for m in metrics]
            self._steps_done += len(metrics)
        # The parameters are in the saved state (param:NAME.npy): no --out,
        # which would write them a second time.
        params = params_of(read_state(saved))
        shutil.rmtree(self._state, ignore_errors=True)
        saved.rename(self._state)
        self.program.params = params      # checked (and parts assembled) by Program.params
        self._state_params = self.program.params
        return TrainResult(losses, self.program.params, metrics, preempted, evaluations)

    def _check_token_inputs(self, data_inputs: Optional[Tuple[str, str]]) -> None:
        """A token file feeds exactly the program's inputs: one pair of
        TOKEN_INPUTS, or `data_inputs`."""
        names = {s.name for s in self.program.inputs}
        if data_inputs is not None:
            if not (isinstance(data_inputs, (tuple, list)) and len(data_inputs) == 2
                    and all(isinstance(n, str) and n and "," not in n for n in data_inputs)
                    and data_inputs[0] != data_inputs[1]):
                raise ConfigError(f"data_inputs must be two different input names (TOKENS, LABELS), "
                                  f"got {data_inputs!r}")
            pairs = [tuple(data_inputs)]
        else:
            pairs = list(TOKEN_INPUTS)
        if not any(names == set(pair) for pair in pairs):
            named = [f"'{a}' and '{b}'" for a, b in pairs]
            feeds = named[0] if len(named) == 1 else ", ".join(named[:-1]) + ", or " + named[-1]
            raise ConfigError(f"data= feeds the inputs {feeds}; this program takes {', '.join(sorted(names))}"
                              + ("" if data_inputs is not None else " (name its own with data_inputs=(TOKENS, "
                                                                    "LABELS))"))

    @staticmethod
    def _eval_argv(data: Any, eval_data: Any, eval_every: Optional[int],
                   eval_batches: Optional[int]) -> List[str]:
        """The program's --eval-* flags for train()'s eval_* arguments."""
        def count(name: str, value: Any) -> int:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
            return value
        if eval_data is None:
            for name, value in (("eval_every", eval_every), ("eval_batches", eval_batches)):
                if value is not None:
                    raise ConfigError(f"{name} needs eval_data=FILE (a held-out token file)")
            return []
        if data is None:
            raise ConfigError("eval_data evaluates held-out batches of a token file: it needs data= too")
        if not Path(eval_data).is_file():
            raise ConfigError(f"no such token file: {eval_data}")
        argv = ["--eval-data", str(Path(eval_data).resolve()),
                "--eval-batches", str(count("eval_batches", 4 if eval_batches is None else eval_batches))]
        if eval_every is not None:
            argv += ["--eval-every", str(count("eval_every", eval_every))]
        return argv

    def _elastic_argv(self, elastic: Any, resume: bool, steps: int) -> Tuple[List[str], List[str]]:
        """rtx-launch's options and the program's command line (up to the
        common flags) for the program's ElasticConfig (None: none)."""
        if elastic is None:
            return [], [str(self.path), "--steps", str(steps)]
        launch: List[str] = []
        program = str(self.path)
        if elastic.max_restarts > 0:
            launch += ["--max-restarts", str(elastic.max_restarts), "--restart-window",
                       str(elastic.restart_window)]
        if elastic.recover == "in-job":
            if self.ranks < 2:
                raise ConfigError("elastic.recover='in-job' needs survivors: a program of 2 or more ranks "
                                  f"(this one has {self.ranks})")
            launch += ["--recover", "in-job"]
        if elastic.run_id is not None:
            launch += ["--run-id", elastic.run_id]
        shrinks = elastic.min_ranks is not None and elastic.min_ranks < self.ranks
        grows = elastic.max_ranks is not None and elastic.max_ranks > self.ranks
        if shrinks or grows:
            # A program per world size, '{world}' choosing (rtx-launch).
            low = elastic.min_ranks if shrinks else self.ranks
            high = elastic.max_ranks if grows else self.ranks
            for ranks in range(low, high + 1):
                if ranks != self.ranks:
                    self._world_program(ranks)
            (self.path.parent / f"world-{self.ranks}").mkdir(exist_ok=True)
            link = self.path.parent / f"world-{self.ranks}" / "program"
            if not link.exists():
                link.symlink_to(self.path.resolve())
            if shrinks:
                launch += ["--min-ranks", str(elastic.min_ranks)]
            if grows:
                launch += ["--max-ranks", str(elastic.max_ranks)]
            program = str(self.path.parent / "world-{world}" / "program")
        args = [program, "--until-step", str(self._steps_done + steps)]
        if elastic.checkpoints:
            directory = Path(elastic.checkpoint_dir or self.path.parent / "checkpoints").resolve()
            if not resume:
                # A fresh start: a restart must not resume an older run's.
                shutil.rmtree(directory, ignore_errors=True)
            args += ["--checkpoint", str(directory), "--preempt", elastic.preempt_policy]
            if elastic.checkpoint_interval is not None:
                args += ["--checkpoint-every", str(elastic.checkpoint_interval)]
            if elastic.deterministic:
                args += ["--deterministic"]
        return launch, args

    def _world_program(self, ranks: int) -> Path:
        """The program for `ranks` ranks, fewer or more than this one's
        (built once, beside it)."""
        directory = self.path.parent / f"world-{ranks}"
        executable = directory / "program"
        if not executable.exists():
            step = _Step(self.program, self.program.train_ir_for(ranks))
            build(step, directory, device=self.device)
        return executable


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


class _Step:
    """A CompiledStep with another training step (a shrunk world's)."""

    def __init__(self, program: CompiledStep, train_ir: str) -> None:
        self.train_ir, self.params, self.parallel = train_ir, program.params, program.parallel
        self.sharding, self.group, self._inputs = program.sharding, program.group, program.inputs

    @property
    def inputs(self) -> List[InputSpec]:
        return self._inputs


def offer_ranks(elastic: ElasticConfig, ranks: int = 1) -> int:
    """Offers `ranks` more ranks to the running job that `elastic` names
    (its rendezvous and run_id): rtx-launch --join. The job grows at its
    next step boundary, up to its own max_ranks; each offer is taken once.
    Returns the offer's number (join.N in the store)."""
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
        raise ConfigError(f"ranks must be a positive integer, got {ranks!r}")
    store = elastic.store() if elastic is not None else None
    if store is None or elastic.run_id is None:
        raise ConfigError("offer_ranks makes the offer through the job's rendezvous store under its run id: "
                          "the ElasticConfig needs rendezvous and run_id")
    argv = [find_tool("rtx-launch"), "--join", str(ranks), "--store", store, "--run-id", elastic.run_id]
    # Not call(): its success message is the answer, not a warning.
    done = subprocess.run(argv, capture_output=True, text=True)
    match = re.search(r"\(join\.(\d+)\)", done.stderr)
    if done.returncode != 0 or not match:
        raise ToolError(f"rtx-launch --join failed (exit {done.returncode}): "
                        f"{done.stderr.strip() or 'no message'}")
    return int(match.group(1))


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
