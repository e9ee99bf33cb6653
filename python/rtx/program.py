"""compile(): from a model to a training program, and Program.train().

    group = rtx.init("cpu", devices=1)
    program = rtx.compile(model, example_inputs, group=group,
                          parallel=rtx.ParallelConfig(micro_batch=2), optimizer=rtx.AdamW(lr=1e-3))
    result = program.train(batch, steps=10)      # result.losses: one per step

The model is a torch.nn.Module (imported with its example inputs), a
builder Module (rtx.builder), or MLIR text. Its shapes are those of one
micro-batch; a step takes `micro_batch` of them concatenated along
dimension 0. The training step is built by rtx-opt (-rtx-autodiff,
-rtx-accumulate-gradients, -rtx-optimizer) and run by rtx-run.
"""
from __future__ import annotations

import dataclasses
import re
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import driver, native
from .batch import Batch, InputSpec, check_batch, save_arrays
from .builder import Module
from .config import (AdamW, ConfigError, ElasticConfig, NotYetSupportedError, Optimizer, ParallelConfig,
                     ProcessGroup, SGD, ShardingConfig, check_supported, init)
from .native import NativeProgram
from .params import UnknownParameterError, assemble_parts, check_params, param_specs, parts_of
from .results import TrainResult, params_of
from .weights import NameMap, Weights, distinct

__all__ = ["CompiledAttributeError", "InputSpec", "Program", "TrainResult", "UnknownParameterError", "compile"]


class CompiledAttributeError(ConfigError, AttributeError):
    """An attribute of a Program that rtx.compile fixed was set."""


class _Compiled:
    """A Program attribute fixed by rtx.compile: the training step was built
    from it, so a later assignment (program.optimizer = rtx.SGD()) would
    change nothing; it raises CompiledAttributeError instead."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name, self.slot = name, "_" + name

    def __get__(self, obj: Any, owner: Optional[type] = None) -> Any:
        return self if obj is None else obj.__dict__[self.slot]

    def __set__(self, obj: Any, value: Any) -> None:
        if self.slot in obj.__dict__:
            raise CompiledAttributeError(
                f"Program.{self.name} was fixed by rtx.compile (the training step is built for it); "
                f"compile again with the new {self.name}")
        obj.__dict__[self.slot] = value


class Program:
    """A model compiled into a training step. Create it with rtx.compile."""

    model_ir = _Compiled()
    train_ir = _Compiled()
    model_inputs = _Compiled()
    micro_batch = _Compiled()
    group = _Compiled()
    parallel = _Compiled()
    sharding = _Compiled()
    elastic = _Compiled()
    optimizer = _Compiled()

    def __init__(self, model_ir: str, train_ir: str, inputs: List[InputSpec], micro_batch: int,
                 params: Optional[Dict[str, Any]], group: ProcessGroup, parallel: ParallelConfig,
                 sharding: ShardingConfig, elastic: ElasticConfig, optimizer: Optimizer,
                 weights: Optional[Weights] = None) -> None:
        self.model_ir = model_ir             # the forward model (one micro-batch)
        self.train_ir = train_ir             # the training step rtx-run executes
        self.model_inputs = inputs           # the model's inputs (one micro-batch)
        self.micro_batch = micro_batch
        self.param_specs = param_specs(model_ir)   # the model's parameters: names, shapes, dtypes
        # Parameters that are parts of a user's tensor (rtx.part_of): the
        # step's results give them by part, Program.params by tensor.
        self._parts = {**parts_of(model_ir), **parts_of(train_ir)}
        # The module's tied names, buffers, dtypes and the name map of its
        # weights (state_dict, save_safetensors).
        self.weights = weights if weights is not None else Weights()
        self.params = params                 # current parameter values; None: the IR's initializers
        self.group, self.parallel, self.sharding = group, parallel, sharding
        self.elastic, self.optimizer = elastic, optimizer
        # With parallel="auto": the planner's choice and report (rtx.planner.Plan).
        self.plan = None
        # parallel="auto": how the planner was asked (hardware, objective,
        # global batch, optimizer, rtx-distribute's options), so that a
        # shrunk world is planned the same way (train_ir_for).
        self.auto_request: Optional[Dict[str, Any]] = None
        # The state after the last train call (KEY.npy, rtx-run --state) and
        # the parameters it returned: the next call continues from it while
        # self.params is still those parameters.
        self._state_dir: Optional[tempfile.TemporaryDirectory] = None
        self._state_params: Optional[Dict[str, Any]] = None
        # The steps that state holds (its steps_done, as --save-state writes).
        self._state_steps = 0
        # Several processes (torchrun, srun, mpirun): this one's rank of the
        # native program, built on the first train call.
        self._rank_run: Optional[Any] = None

    @property
    def splits(self) -> "SplitTable":
        """What each mesh axis does to each parameter, in the user's names
        (rtx.splits.SplitTable; print it for the table). Read from the
        partitioned step's description."""
        if getattr(self, "_splits", None) is None:
            from .splits import split_table
            self._splits = split_table(self.train_ir)
        return self._splits

    @property
    def params(self) -> Optional[Dict[str, Any]]:
        """The current parameter values by name (numpy arrays), or None for
        the IR's initializers. Setting it checks the names and shapes: a
        missing or unknown name raises UnknownParameterError (a KeyError
        and a ConfigError) naming it and the closest names."""
        return self._params

    @params.setter
    def params(self, value: Optional[Mapping[str, Any]]) -> None:
        if value is not None and isinstance(value, Mapping):
            value = assemble_parts(value, self._parts)
        self._params = None if value is None else check_params(value, self.param_specs)

    def state_dict(self, *, file_layout: bool = False) -> Dict[str, Any]:
        """The current parameters as torch tensors by the module's names
        and layouts, tied names included: model.load_state_dict(...) takes
        it (strict=True where the module has no buffers; else merge it into
        model.state_dict(), which holds them). The parts of a user's tensor
        (rtx.part_of) come back as that tensor. file_layout=True gives the
        names and layouts of the name map's file instead (rtx.compile's
        name_map=; docs/python.md, "Weights in and out")."""
        if self.params is None:
            raise ConfigError("the program's parameters are its IR's initializers, which only a run draws; "
                              "train first, or compile with params=")
        return self.weights.state_dict(self.params, file_layout=file_layout)

    def save_safetensors(self, path: Union[str, Path]) -> Path:
        """Writes the current parameters as a safetensors file in the
        layout they were loaded from: the name map's file names and layouts
        (Hugging Face's, with name_map=rtx.weights.HF_GPT2), else the
        module's names. Tied names are written as copies (the format holds
        no shared storage)."""
        from . import safetensors
        return safetensors.save(path, distinct(self.state_dict(file_layout=True)), metadata={"format": "pt"})

    @property
    def inputs(self) -> List[InputSpec]:
        """The inputs of one training step: micro_batch micro-batches."""
        return [InputSpec(s.name, (s.shape[0] * self.micro_batch,) + s.shape[1:], s.dtype)
                if s.shape else s for s in self.model_inputs]

    def train(self, batch: Batch, steps: int = 1) -> TrainResult:
        """Runs `steps` training steps on `batch` (arrays or tensors by input
        name, or in input order) and returns each step's loss. Consecutive
        calls continue one run: the parameters and the optimizer state (AdamW
        moments, step count) carry over, so two calls of N steps equal one
        of 2N. Setting `params` starts afresh from those parameters.

        In a group of several processes (started by torchrun, srun or
        mpirun; rtx.init reads their variables), each process trains its
        rank of the native program instead (rtx.distributed: built once per
        machine), and every process gets the same losses and parameters."""
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ConfigError(f"steps must be a positive integer, got {steps!r}")
        if self.elastic.active:
            raise NotYetSupportedError(
                "Program.train with an ElasticConfig is not supported: checkpoints, restarts and pre-emption "
                "belong to real processes; build the native program (Program.build(directory)) and call its "
                ".train(batch, steps) (docs/checkpoint.md)")
        if self.group.world_size > 1:
            return self._train_rank(batch, steps)
        if self.group.backend != "cpu":
            raise NotYetSupportedError(
                f"Program.train with backend={self.group.backend!r} is not yet supported: it runs the step in "
                "rtx-run on CPU ranks. Build the CUDA program with Program.build(directory) and train it with "
                "its .train(batch, steps)")
        arrays = check_batch(batch, self.inputs)
        with tempfile.TemporaryDirectory(prefix="rtx-train-") as work:
            work_dir = Path(work)
            program = work_dir / "train.mlir"
            program.write_text(self.train_ir)
            save_arrays(work_dir / "inputs", arrays)
            resume = self._state_params is not None and self.params is self._state_params
            params_dir = (save_arrays(work_dir / "params", self.params)
                          if self.params is not None and not resume else None)
            run = driver.run(program, inputs=work_dir / "inputs", params=params_dir,
                             state=Path(self._state_dir.name) if resume else None, steps=steps,
                             ranks=self.parallel.ranks,
                             extra_args=self.sharding.offload_argv(work_dir))
        states = run.states()
        params = params_of(states)
        losses = run.losses   # one per step, from rtx-run's --metrics file
        self._state_steps = (self._state_steps if resume else 0) + steps
        self._keep_state(states)
        self.params = params              # the parts of a user's tensor assembled
        self._state_params = self.params
        return TrainResult(losses, self.params)

    def _train_rank(self, batch: Batch, steps: int, timeout: float = 60.0) -> TrainResult:
        from .distributed import RankRun
        arrays = check_batch(batch, self.inputs)
        if self._rank_run is None:
            self._rank_run = RankRun(self, self.group)
        resume = self._state_params is not None and self.params is self._state_params
        result = self._rank_run.train(arrays, self.params, resume, steps, timeout)
        self.params = result.params       # checked by Program.params (a copy)
        self._state_params = self.params  # so that the next call resumes
        return dataclasses.replace(result, params=self.params)

    def _keep_state(self, states: Dict[str, Any]) -> None:
        """Writes the state after a call as KEY.npy, for the next call."""
        if self._state_dir is None:
            self._state_dir = tempfile.TemporaryDirectory(prefix="rtx-state-")
        directory = Path(self._state_dir.name)
        for old in directory.glob("*.npy"):
            old.unlink()
        save_arrays(directory, states)
        # Last, as --save-state does: rtx-run refuses a state without it.
        (directory / "steps_done").write_text(f"{self._state_steps}\n")

    def gradients(self, batch: Batch) -> Tuple[float, Dict[str, Any]]:
        """The loss and every parameter's gradient on one micro-batch, at
        the current parameters (no update); the parts of a user's tensor
        (rtx.part_of) give its gradient whole."""
        arrays = check_batch(batch, self.model_inputs)
        with tempfile.TemporaryDirectory(prefix="rtx-grad-") as work:
            work_dir = Path(work)
            program = work_dir / "grad.mlir"
            driver.opt(self.model_ir, ["-rtx-autodiff"], output=program)
            save_arrays(work_dir / "inputs", arrays)
            params_dir = save_arrays(work_dir / "params", self.params) if self.params is not None else None
            run = driver.run(program, inputs=work_dir / "inputs", params=params_dir)
        return float(run.results[0].value), assemble_parts(run.grads(), self._parts)

    def build(self, directory: Union[str, Path, None] = None, *, device: Optional[str] = None,
              emulate: bool = False) -> NativeProgram:
        """Emits the training step as a native program for `device` ("cpu" or
        "cuda"; default: the group's backend), compiles it into `directory`
        and returns it; its .train(batch, steps) runs one process per rank
        (docs/python.md)."""
        return native.build(self, directory, device=device, emulate=emulate)

    def train_ir_for(self, ranks: int) -> str:
        """The training step on `ranks` ranks, with the same global batch:
        what a native program's restarts run when ElasticConfig.min_ranks
        shrinks the job or max_ranks grows it. A program compiled with parallel="auto" is planned
        again by the planner for `ranks` devices (the same hardware,
        objective and global batch); otherwise the rule "keep tp/pp, shrink
        dp" applies, to pure data parallelism only for now (a world of
        dp*tp*pp*sp ranks loses one rank per restart, which another tp or pp
        does not divide)."""
        if self.auto_request is not None:
            from . import planner
            request = self.auto_request
            planned, _ = planner.plan(self.model_ir, ranks, request["hardware"], objective=request["objective"],
                                      global_batch=request["global_batch"], optimizer=request["optimizer"])
            return driver.opt(planned, [f"-rtx-distribute=from-plan=true {request['distribute']}"])
        p = self.parallel
        if p.tp * p.pp * p.sp != 1:
            raise NotYetSupportedError(
                f"elastic.min_ranks or max_ranks with tp={p.tp} pp={p.pp} sp={p.sp} is not yet supported: a "
                "restart changes the ranks one by one, and changing only dp keeps a multiple of tp*pp*sp ranks; "
                "use pure data parallelism, or "
                "rtx-launch --min-ranks with a program per world size ('{world}', docs/checkpoint.md)")
        if self.sharding.auto_wrap is not None:
            raise NotYetSupportedError("elastic.min_ranks with sharding.auto_wrap is not yet supported")
        parallel = dataclasses.replace(p, dp=ranks)
        accumulate = parallel.micro_batch if parallel.pp == 1 else 1
        options = " ".join(o for o in (parallel.distribute_options(), self.sharding.distribute_options()) if o)
        return driver.opt(self.model_ir, driver.training_passes(self.optimizer.pass_options(), accumulate,
                                                                self.sharding.mesh(parallel), options))

    def save(self, directory: Union[str, Path]) -> Path:
        """Writes model.mlir, train.mlir and params/NAME.npy (when known)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "model.mlir").write_text(self.model_ir)
        (directory / "train.mlir").write_text(self.train_ir)
        if self.params is not None:
            save_arrays(directory / "params", self.params)
        return directory


def compile(model: Any, example_inputs: Union[Sequence[Any], Mapping[str, Any], None] = None, *,
            group: Optional[ProcessGroup] = None, parallel: Union[ParallelConfig, str, None] = None,
            sharding: Optional[ShardingConfig] = None, elastic: Optional[ElasticConfig] = None,
            optimizer: Optional[Optimizer] = None, loss: Any = None, name: Optional[str] = None,
            hardware: Optional[str] = None, objective: str = "throughput",
            global_batch: Optional[int] = None, params: Any = None,
            name_map: Optional[NameMap] = None) -> Program:
    """Compiles a model into a training program.

    model: a torch.nn.Module (needs example_inputs: one micro-batch), a
        builder Module, or MLIR text / a path to a .mlir file.
    group: from rtx.init (default: one CPU device).
    parallel: a ParallelConfig, or "auto": rtx-auto-partition chooses dp,
        tp, pp, sequence parallelism, the ZeRO stage, micro-batches,
        schedule, recompute and overlap for the group's devices on
        `hardware` (a built-in profile such as "dgx-a100", or a profile
        file; default on CPUs: this machine, profiled by rtx-topology) under
        `objective` ("throughput", "memory", "compute-balanced",
        "communication", "hybrid", "tp-first", "pp-first"), with
        `global_batch` sequences per step (default: the model's batch).
        The plan and its report are Program.plan (docs/planner.md).
    loss: for a torch module, a function of its output giving the loss.
    params: the initial parameters (default: the module's own values, or
        the IR's initializers): a safetensors file or a directory of shards,
        a state dict (its buffers are skipped) or a dict of arrays, by the
        module's parameter names, or by a checkpoint's names that
        `name_map` (an rtx.weights.NameMap such as rtx.weights.HF_GPT2)
        renames and transposes (docs/python.md, "Weights in and out").
    Options that this version cannot honour yet raise NotYetSupportedError
    naming them; inconsistent options raise ConfigError.
    """
    group = group if group is not None else init("cpu", 1, env={})
    if name_map is not None and not isinstance(name_map, NameMap):
        raise ConfigError(f"name_map must be an rtx.weights.NameMap, got {type(name_map).__name__}")
    if parallel == "auto":
        program = _compile_auto(model, example_inputs, group, sharding, elastic, optimizer, loss, name, hardware,
                                objective, global_batch)
        return _with_weights(program, model, params, name_map)
    if isinstance(parallel, str):
        raise ConfigError(f"parallel must be a ParallelConfig or 'auto', got {parallel!r}")
    if hardware is not None or objective != "throughput" or global_batch is not None:
        raise ConfigError("hardware, objective and global_batch choose a plan: pass them with parallel='auto'")
    parallel = parallel if parallel is not None else ParallelConfig()
    sharding = sharding if sharding is not None else ShardingConfig()
    elastic = elastic if elastic is not None else ElasticConfig()
    optimizer = optimizer if optimizer is not None else AdamW()
    for value, kind, option in ((group, ProcessGroup, "group"), (parallel, ParallelConfig, "parallel"),
                                (sharding, ShardingConfig, "sharding"), (elastic, ElasticConfig, "elastic"),
                                (optimizer, (AdamW, SGD), "optimizer")):
        if not isinstance(value, kind):
            raise ConfigError(f"{option} must be a {getattr(kind, '__name__', 'AdamW or SGD')}, "
                              f"got {type(value).__name__}")
    if parallel.ranks != group.size:
        raise ConfigError(f"parallel dp*tp*pp*sp = {parallel.ranks} ranks, but the group has {group.size} "
                          f"({group.world_size} process(es) x {len(group.devices)} device(s))")
    check_supported(group, parallel, sharding, elastic)

    model_ir, module_params = _model_ir(model, example_inputs, loss, name)
    inputs = _inputs_of(model_ir)
    if parallel.micro_batch > 1:
        for spec in inputs:
            if not spec.shape:
                raise ConfigError(f"micro_batch={parallel.micro_batch}: input '{spec.name}' is a scalar and "
                                  "cannot be split into micro-batches along dimension 0")
    # More than one rank: rtx-distribute partitions the step for the mesh,
    # and rtx-run executes it as that many simulated ranks.
    # With pp > 1 the micro-batches are the pipeline's (rtx-pipeline), not
    # gradient accumulation's.
    mesh = sharding.mesh(parallel)
    accumulate = parallel.micro_batch if parallel.pp == 1 else 1
    options = " ".join(o for o in (parallel.distribute_options(), sharding.distribute_options(),
                                   _auto_wrap_options(model, sharding)) if o)
    train_ir = driver.opt(model_ir, driver.training_passes(optimizer.pass_options(), accumulate, mesh,
                                                           options))
    program = Program(model_ir, train_ir, inputs, parallel.micro_batch, module_params, group, parallel, sharding,
                      elastic, optimizer)
    return _with_weights(program, model, params, name_map)


def _with_weights(program: Program, model: Any, params: Any, name_map: Optional[NameMap]) -> Program:
    """`program` with what it knows of `model`'s weights, and its
    parameters from `params` (compile's) when given."""
    program.weights = Weights.of_module(model, name_map) if hasattr(model, "named_modules") \
        else Weights(name_map=name_map)
    if params is not None:
        program.params = program.weights.params_in(params)
    return program


def _compile_auto(model: Any, example_inputs: Any, group: ProcessGroup, sharding: Optional[ShardingConfig],
                  elastic: Optional[ElasticConfig], optimizer: Optional[Optimizer], loss: Any, name: Optional[str],
                  hardware: Optional[str], objective: str, global_batch: Optional[int]) -> Program:
    """compile(parallel="auto"): rtx-auto-partition writes the plan into the
    model, rtx-distribute=from-plan=true builds the step from it."""
    from . import planner
    sharding = sharding if sharding is not None else ShardingConfig()
    elastic = elastic if elastic is not None else ElasticConfig()
    optimizer = optimizer if optimizer is not None else AdamW()
    if not isinstance(group, ProcessGroup):
        raise ConfigError(f"group must be a ProcessGroup, got {type(group).__name__}")
    if sharding != ShardingConfig():
        raise ConfigError("parallel='auto' chooses the ZeRO stage itself; leave sharding at its default "
                          "(or fix the plan with an explicit ParallelConfig and ShardingConfig)")
    if hardware is None and group.backend != "cpu":
        raise ConfigError("parallel='auto' on GPUs needs hardware=: a built-in profile (dgx-a100, dgx-h100, "
                          "hgx-h200, pcie-l40s-8) or a file written by rtx-topology and rtx-calibrate")
    check_supported(group, sharding, elastic)
    model_ir, params = _model_ir(model, example_inputs, loss, name)
    inputs = _inputs_of(model_ir)
    kind = optimizer.pass_options().split()[0].split("=", 1)[1]
    planned, chosen = planner.plan(model_ir, group.size, hardware, objective=objective,
                                   global_batch=global_batch, optimizer=kind)
    parallel = ParallelConfig(dp=chosen.dp, tp=chosen.tp, pp=chosen.pp, micro_batch=chosen.micro_batches,
                              schedule=chosen.schedule if chosen.pp > 1 else "1f1b",
                              virtual_stages=chosen.virtual_stages, recompute=chosen.recompute,
                              overlap=chosen.overlap)
    zero = {0: "none", 1: "zero1", 2: "zero2", 3: "zero3"}[chosen.zero]
    sharding = ShardingConfig(shard_strategy=zero)
    options = optimizer.pass_options().replace("kind=", "optimizer=", 1)
    train_ir = driver.opt(planned, [f"-rtx-distribute=from-plan=true {options}"])
    program = Program(model_ir, train_ir, inputs, parallel.micro_batch, params, group, parallel, sharding,
                      elastic, optimizer)
    program.plan = chosen
    program.auto_request = {"hardware": hardware, "objective": objective, "global_batch": global_batch,
                            "optimizer": kind, "distribute": options}
    return program


def _auto_wrap_options(model: Any, sharding: ShardingConfig) -> str:
    """rtx-distribute's units of FSDP for sharding.auto_wrap: a minimum
    parameter count is FSDP's size-based policy (rtx-shard-state unit=size);
    module class names become the name prefixes of those modules' instances
    (its transformer policy, unit=prefix), which needs the nn.Module."""
    wrap = sharding.auto_wrap
    if wrap is None:
        return ""
    if isinstance(wrap, int):
        return f"shard-unit=size shard-min-unit-params={wrap}"
    if not hasattr(model, "named_modules"):
        raise ConfigError(f"sharding.auto_wrap={sorted(wrap)} names module classes, which only a PyTorch "
                          f"nn.Module has (this model is a {type(model).__name__}); give auto_wrap a "
                          "minimum parameter count instead")
    prefixes = [name for name, module in model.named_modules() if name and type(module).__name__ in wrap]
    if not prefixes:
        classes = sorted({type(module).__name__ for _, module in model.named_modules()})
        raise ConfigError(f"sharding.auto_wrap={sorted(wrap)}: {type(model).__name__} has no module of those "
                          f"classes; its classes are {', '.join(classes)}")
    return "shard-unit=prefix shard-unit-prefixes=" + ",".join(prefixes)


def _model_ir(model: Any, example_inputs: Any, loss: Any, name: Optional[str]) -> Tuple[str, Optional[Dict]]:
    if isinstance(model, Module):
        return model.text(), None
    if isinstance(model, Path) or (isinstance(model, str) and model.endswith(".mlir") and "\n" not in model):
        return Path(model).read_text(), None
    if isinstance(model, str):
        return model, None
    if type(model).__module__.startswith("torch") or hasattr(model, "named_parameters"):
        if example_inputs is None:
            raise ConfigError("a torch module needs example_inputs (one micro-batch) to be imported")
        from .importer import import_module
        imported = import_module(model, example_inputs, loss=loss, name=name)
        if not imported.returns_loss:
            raise ConfigError(f"{type(model).__name__} does not return a scalar loss; pass loss=fn(output)")
        return imported.text(), imported.param_arrays()
    raise ConfigError(f"cannot compile a {type(model).__name__}: expected a torch.nn.Module, "
                      "an rtx.builder.Module or MLIR text")


_INPUT = re.compile(r'rtx\.input "([^"]+)"(?: \{[^}]*\})? : tensor<((?:\d+x)*)(\w+)>')


def _inputs_of(text: str) -> List[InputSpec]:
    if re.search(r"func\.func @[\w$.]+\(\s*%", text):
        raise ConfigError("the model takes function arguments; Program feeds named rtx.input values only")
    return [InputSpec(m.group(1), tuple(int(d) for d in m.group(2).split("x") if d), m.group(3))
            for m in _INPUT.finditer(text)]
