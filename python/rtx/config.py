"""Validated configuration: the process group, parallelism, sharding,
elasticity and the optimizer.

Every option that the design names is accepted and checked here (types,
ranges, combinations that cannot work). Options that a later version
implements are valid values but not yet supported: `unsupported()` lists
them, and `rtx.compile` refuses them with `NotYetSupportedError`, naming the
option, instead of ignoring them.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, FrozenSet, Iterator, List, Mapping, Optional, Sequence, Tuple, Union


class ConfigError(ValueError):
    """An option has a wrong type or value, or options contradict each other."""


class NotYetSupportedError(NotImplementedError):
    """A valid option that this version of rtx cannot honour yet."""


@dataclass(frozen=True)
class Unsupported:
    """One option that is valid but not yet supported, and why."""
    option: str
    value: object
    reason: str

    def __str__(self) -> str:
        return f"{self.option}={self.value!r} is not yet supported: {self.reason}"


def check_supported(*configs: object) -> None:
    """Raises NotYetSupportedError listing every option of `configs` that is
    valid but not yet supported."""
    problems: List[Unsupported] = []
    for config in configs:
        if config is not None:
            problems.extend(config.unsupported())  # type: ignore[attr-defined]
    if problems:
        raise NotYetSupportedError("; ".join(str(p) for p in problems))


def _positive_int(option: str, value: object, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{option} must be a positive integer, got {value!r}")


def _choice(option: str, value: object, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ConfigError(f"{option} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}")


def _number(option: str, value: object, low: float = 0.0, low_inclusive: bool = True) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (
        value >= low if low_inclusive else value > low)
    if not ok:
        bound = f">= {low}" if low_inclusive else f"> {low}"
        raise ConfigError(f"{option} must be a number {bound}, got {value!r}")


# --- process group -------------------------------------------------------------

BACKENDS = {"cpu": "cpu", "gloo": "cpu", "cuda": "cuda", "nccl": "cuda"}
LAUNCHERS = ("single", "torchrun", "slurm", "mpirun")

# Where each launcher puts (rank, world size, local rank), in the order the
# runtime reads them (rtxrt/elastic/LaunchEnvironment.h): RANK/WORLD_SIZE first, as
# torchrun and rtx-launch set them for processes that an outer srun or
# mpirun may have started.
_LAUNCH_VARIABLES = {
    "torchrun": ("RANK", "WORLD_SIZE", "LOCAL_RANK"),
    "mpirun": ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    "slurm": ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
}


@dataclass(frozen=True)
class ProcessGroup:
    """The processes and devices a program runs on (returned by `init`).

    `size` is the number of ranks: processes times devices per process."""
    backend: str                    # "cpu" (Gloo) or "cuda" (NCCL)
    devices: Tuple[str, ...]        # this process's devices, e.g. ("cpu",) or ("cuda:0", "cuda:1")
    rank: int = 0                   # this process among all processes
    world_size: int = 1             # number of processes
    local_rank: int = 0             # this process among those on its machine
    launcher: str = "single"        # who started the processes: single, torchrun, slurm, mpirun

    @property
    def size(self) -> int:
        return self.world_size * len(self.devices)

    def unsupported(self) -> List[Unsupported]:
        problems = []
        if self.world_size > 1 and len(self.devices) > 1:
            problems.append(Unsupported("devices", list(self.devices),
                                        f"under {self.launcher} each process drives one device; start one "
                                        "process per device"))
        return problems


def init(backend: str = "cpu", devices: Union[int, Sequence[str]] = 1,
         env: Optional[Mapping[str, str]] = None) -> ProcessGroup:
    """Describes where this process runs and returns its process group.

    backend: "cpu" (alias "gloo") or "cuda" (alias "nccl").
    devices: how many devices this process drives, or their names
             ("cpu", "cuda:0", ...). Names are honoured: local rank r runs
             on the r-th (rtx-launch --devices, RTX_DEVICES); n "cpu" are
             n local ranks. Under torchrun/srun/mpirun a process drives
             one device (RTX_DEVICE).
    env:     the environment to read the launcher's variables from (torchrun's
             RANK/WORLD_SIZE/LOCAL_RANK, Slurm's SLURM_*, Open MPI's
             OMPI_COMM_WORLD_*); defaults to os.environ. Pass {} for a
             single process whatever the environment says.
    """
    if not isinstance(backend, str) or backend.lower() not in BACKENDS:
        raise ConfigError(f"backend must be one of {', '.join(repr(b) for b in BACKENDS)}; got {backend!r}")
    kind = BACKENDS[backend.lower()]
    names = _device_names(kind, devices)
    variables = dict(os.environ if env is None else env)
    launcher, rank, world, local = "single", 0, 1, 0
    for name, (rank_var, world_var, local_var) in _LAUNCH_VARIABLES.items():
        if world_var in variables:
            launcher = name
            rank = _env_int(variables, rank_var, 0)
            world = _env_int(variables, world_var, 1)
            local = _env_int(variables, local_var, 0)
            break
    if world < 1 or not 0 <= rank < world:
        raise ConfigError(f"env: rank {rank} is not within a world of {world} processes ({launcher})")
    return ProcessGroup(kind, names, rank, world, local, launcher)


def _device_names(kind: str, devices: Union[int, Sequence[str]]) -> Tuple[str, ...]:
    if isinstance(devices, int) and not isinstance(devices, bool):
        _positive_int("devices", devices)
        return ("cpu",) * devices if kind == "cpu" else tuple(f"cuda:{i}" for i in range(devices))
    if isinstance(devices, str) or not isinstance(devices, Sequence) or not devices:
        raise ConfigError(f"devices must be a positive count or a list of device names, got {devices!r}")
    for d in devices:
        if not isinstance(d, str):
            raise ConfigError(f"devices: {d!r} is not a device name")
        base, _, index = d.partition(":")
        if base != kind or (index and not index.isdigit()):
            raise ConfigError(f"devices: '{d}' is not a {kind} device (expected '{kind}' or '{kind}:N')")
    if kind == "cuda" and len(set(devices)) != len(devices):
        raise ConfigError(f"devices: {list(devices)} names a device twice")
    return tuple(devices)


def _env_int(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"env: {name}={text!r} is not an integer") from None


# --- parallelism -----------------------------------------------------------------

SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1")
RECOMPUTE_POLICIES = ("none", "full", "selective")

@dataclass(frozen=True)
class ParallelConfig:
    """How one step is spread over ranks.

    dp, tp, pp, sp: data, tensor, pipeline and sequence parallel degrees; their
        product is the number of ranks.
    micro_batch: the number of micro-batches each step is split into. The
        model is written (or traced) for one micro-batch; a step takes
        micro_batch of them, concatenated along dimension 0, and averages
        their loss and gradients (gradient accumulation). With pp > 1 these
        are the pipeline's micro-batches (rtx-pipeline), at least pp of them
        for 1F1B-like schedules.
    schedule: with pp > 1, the pipeline schedule: "gpipe", "1f1b",
        "interleaved" (with virtual_stages > 1) or "zb-h1" (zero-bubble,
        the backward split into input and weight gradients).
    virtual_stages: with pp > 1, stages per pipeline rank (interleaved
        1F1B: rank r holds stages r, r + pp, ...).
    recompute: activation recompute (rtx-recompute): "none", "full" (keep
        only layer inputs, recompute each layer in its backward) or
        "selective" (recompute elementwise ops, softmax and layout ops,
        Megatron's policy). The results are the same; the activation
        memory falls.
    bucket_bytes: with dp > 1, the largest bucket gradients are all-reduced
        in (rtx-bucket-collectives); None: 25 MiB, PyTorch DDP's default.
    overlap: with dp > 1, run the all-reduces on a communication thread
        while the compute after them goes on (rtx-schedule-overlap). Pays
        off when a core or the network would otherwise idle.
    strict: with tp > 1, refuse (an error naming the parameter and why)
        a program in which a linear or matmul over a parameter stays whole
        on tp, instead of keeping it replicated with a warning
        (rtx-distribute's strict-tp; Program.splits shows what was split).
    """
    dp: int = 1
    tp: int = 1
    pp: int = 1
    sp: int = 1
    micro_batch: int = 1
    bucket_bytes: Optional[int] = None
    overlap: bool = False
    schedule: str = "1f1b"
    virtual_stages: int = 1
    recompute: str = "none"
    strict: bool = False

    def __post_init__(self) -> None:
        for name in ("dp", "tp", "pp", "sp", "micro_batch", "virtual_stages"):
            _positive_int(f"parallel.{name}", getattr(self, name))
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"parallel.schedule must be one of {', '.join(SCHEDULES)}, "
                              f"got {self.schedule!r}")
        if self.recompute not in RECOMPUTE_POLICIES:
            raise ConfigError(f"parallel.recompute must be one of {', '.join(RECOMPUTE_POLICIES)}, "
                              f"got {self.recompute!r}")
        if self.pp == 1 and (self.schedule != "1f1b" or self.virtual_stages != 1):
            raise ConfigError("parallel.schedule and parallel.virtual_stages apply to pipelines: "
                              "set pp > 1 (or leave them at 1f1b and 1)")
        if self.schedule == "interleaved" and self.micro_batch % self.pp:
            raise ConfigError(f"parallel.schedule='interleaved' needs micro_batch ({self.micro_batch}) "
                              f"divisible by pp ({self.pp})")
        _positive_int("parallel.bucket_bytes", self.bucket_bytes, allow_none=True)
        if not isinstance(self.overlap, bool):
            raise ConfigError(f"parallel.overlap must be True or False, got {self.overlap!r}")
        if not isinstance(self.strict, bool):
            raise ConfigError(f"parallel.strict must be True or False, got {self.strict!r}")
        if self.strict and self.tp == 1:
            raise ConfigError("parallel.strict checks what tp splits: set tp > 1 (or leave strict False)")

    @property
    def ranks(self) -> int:
        return self.dp * self.tp * self.pp * self.sp

    def unsupported(self) -> List[Unsupported]:
        return []

    def mesh(self) -> Optional[str]:
        """The mesh rtx-distribute splits over ("dp:2,pp:2,tp:2"): tp
        innermost, as Megatron places it; None on one rank."""
        axes = [f"{name}:{getattr(self, name)}" for name in ("dp", "pp", "tp", "sp")
                if getattr(self, name) > 1]
        return ",".join(axes) if axes else None

    def distribute_options(self) -> str:
        """The rtx-distribute options for the pipeline, the buckets and the
        overlap."""
        options = []
        if self.recompute != "none":
            options.append(f"recompute={self.recompute}")
        if self.pp > 1:
            options += [f"pipeline-micro-batches={self.micro_batch}",
                        f"pipeline-schedule={self.schedule}"]
            if self.virtual_stages > 1:
                options.append(f"virtual-stages={self.virtual_stages}")
        if self.bucket_bytes is not None:
            options.append(f"bucket-bytes={self.bucket_bytes}")
        if self.overlap:
            options.append("overlap=true")
        if self.strict:
            options.append("strict-tp=true")
        return " ".join(options)


# --- sharding ------------------------------------------------------------------------

SHARD_STRATEGIES = ("none", "zero1", "zero2", "zero3", "fsdp", "hsdp")
OFFLOADS = ("none", "cpu", "nvme")
TP_SPLITS = ("column", "row")
# Characters a tp_hints name cannot hold: they separate rtx-distribute's options.
_HINT_SEPARATORS = frozenset(",:= \t\n\"'{}")


class FrozenMapping(Mapping[str, str]):
    """A read-only mapping that hashes, as a frozen config's field must."""
    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, str]) -> None:
        self._items = dict(items)

    def __getitem__(self, key: str) -> str:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(frozenset(self._items.items()))

    def __repr__(self) -> str:
        return repr(self._items)


def _tp_hints(value: Any) -> FrozenMapping:
    if value is None:
        return FrozenMapping({})
    if not isinstance(value, Mapping):
        raise ConfigError("sharding.tp_hints must map parameter-name suffixes to 'column' or 'row' "
                          f"(e.g. {{'q_proj': 'column', 'o_proj': 'row'}}), got {value!r}")
    for name, split in value.items():
        if not isinstance(name, str) or not name or any(c in _HINT_SEPARATORS for c in name):
            raise ConfigError(f"sharding.tp_hints: {name!r} is not a parameter-name suffix (a non-empty name "
                              "without spaces, quotes, braces, ',', ':' or '='; e.g. 'q_proj')")
        if not isinstance(split, str) or split not in TP_SPLITS:
            raise ConfigError(f"sharding.tp_hints[{name!r}] must be 'column' or 'row', got {split!r}")
    return FrozenMapping(value)


@dataclass(frozen=True)
class ShardingConfig:
    """How state is sharded: ZeRO / FSDP sharding of optimizer state,
    gradients and parameters, and hints for tensor-parallel seeding.

    shard_strategy: "none"; "zero1" (optimizer state), "zero2" (+ gradients),
        "zero3" (+ parameters), "fsdp" (zero3 in units chosen by auto_wrap),
        or "hsdp" (fsdp within groups of shard_group data ranks, replicated
        across the groups: the mesh dp_replicate x dp).
    shard_group: with "hsdp", how many data ranks share one copy of the
        state (PyTorch's shard dimension, e.g. the GPUs of a node); it must
        divide parallel.dp and be smaller than it.
    offload: where sharded optimizer state (and, at stage 3, the parameter
        shards) lives between steps: "none", "cpu" (host memory) or "nvme"
        (files on an SSD, read and written with io_uring; ZeRO-Offload /
        ZeRO-Infinity). The update of offloaded state runs on the host.
    offload_dir: with "nvme", the folder for the files (each rank uses
        offload_dir/rank-R); None: a temporary folder per training call.
    auto_wrap: how FSDP groups parameters into units: None (one per
        transformer block, found from parameter names), a minimum number of
        parameters per unit (FSDP's size-based policy), or module class
        names (e.g. {"Block"}) whose instances become units (a PyTorch
        nn.Module's; FSDP's transformer policy).
    tp_hints: with tp > 1, Megatron splits by parameter name: a name suffix
        (e.g. "q_proj") -> "column" (split the output features) or "row"
        (split the input features; the partial sums are all-reduced).
        rtx-distribute finds the Megatron patterns from the graph's
        structure; hints settle what it cannot (its seed-hints option).
    """
    shard_strategy: str = "none"
    offload: str = "none"
    auto_wrap: Union[None, int, FrozenSet[str]] = None
    tp_hints: Mapping[str, str] = field(default_factory=dict)
    shard_group: Optional[int] = None
    offload_dir: Optional[str] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "tp_hints", _tp_hints(self.tp_hints))
        _choice("sharding.shard_strategy", self.shard_strategy, SHARD_STRATEGIES)
        _choice("sharding.offload", self.offload, OFFLOADS)
        wrap = self.auto_wrap
        if isinstance(wrap, (set, list, tuple, frozenset)):
            if not wrap or not all(isinstance(n, str) and n for n in wrap):
                raise ConfigError(f"sharding.auto_wrap must name module classes, got {wrap!r}")
            object.__setattr__(self, "auto_wrap", frozenset(wrap))
        elif wrap is not None:
            _positive_int("sharding.auto_wrap", wrap)
        _positive_int("sharding.shard_group", self.shard_group, allow_none=True)
        if self.shard_strategy == "hsdp" and self.shard_group is None:
            raise ConfigError("sharding.shard_strategy='hsdp' needs shard_group: how many data "
                              "ranks share one copy of the state (e.g. the devices of a node)")
        if self.shard_group is not None and self.shard_strategy != "hsdp":
            raise ConfigError("sharding.shard_group sizes HSDP's shard groups; it needs "
                              f"shard_strategy 'hsdp', not {self.shard_strategy!r}")
        if self.offload_dir is not None:
            if not isinstance(self.offload_dir, (str, os.PathLike)) or not str(self.offload_dir):
                raise ConfigError(f"sharding.offload_dir must be a folder path, got {self.offload_dir!r}")
            object.__setattr__(self, "offload_dir", str(self.offload_dir))
            if self.offload != "nvme":
                raise ConfigError("sharding.offload_dir is where offload='nvme' keeps its files; "
                                  f"it needs offload 'nvme', not {self.offload!r}")
        if self.offload != "none" and self.shard_strategy == "none":
            raise ConfigError(f"sharding.offload={self.offload!r} offloads sharded state; "
                              "it needs a shard_strategy other than 'none'")
        if self.auto_wrap is not None and self.shard_strategy not in ("zero3", "fsdp", "hsdp"):
            raise ConfigError("sharding.auto_wrap groups sharded parameters; it needs "
                              f"shard_strategy 'zero3', 'fsdp' or 'hsdp', not {self.shard_strategy!r}")

    def unsupported(self) -> List[Unsupported]:
        return []

    def offload_argv(self, scratch: Union[str, os.PathLike]) -> List[str]:
        """The programs' (and rtx-run's) flags for the offload tier:
        --offload-dir for "nvme" (offload_dir, else `scratch`/offload), none
        otherwise."""
        if self.offload != "nvme":
            return []
        return ["--offload-dir", str(self.offload_dir or Path(scratch) / "offload")]

    def mesh(self, parallel: "ParallelConfig") -> Optional[str]:
        """`parallel`'s mesh, with HSDP's dp axis split into dp_replicate
        (the groups, major) x dp (shard_group ranks that shard the state)."""
        mesh = parallel.mesh()
        if self.shard_strategy != "hsdp":
            return mesh
        group = self.shard_group
        if parallel.dp % group != 0 or group >= parallel.dp:
            raise ConfigError(f"sharding.shard_group={group} must divide parallel.dp={parallel.dp} and be "
                              "smaller than it (shard_group == dp is 'fsdp')")
        axes = [a for a in (mesh or "").split(",") if a and not a.startswith("dp:")]
        return ",".join([f"dp_replicate:{parallel.dp // group}", f"dp:{group}"] + axes)

    def distribute_options(self) -> str:
        """The rtx-distribute options: the ZeRO stage (shard-state=N; fsdp is stage 3 in
        transformer-block units) and the hints ("seed-hints=q_proj:column,o_proj:row"), in
        the order given."""
        options = []
        stage = {"zero1": 1, "zero2": 2, "zero3": 3, "fsdp": 3, "hsdp": 3}.get(self.shard_strategy)
        if stage:
            options.append(f"shard-state={stage}")
        if self.offload != "none":
            options.append(f"offload={self.offload}")
        if self.tp_hints:
            options.append("seed-hints=" + ",".join(f"{name}:{split}"
                                                    for name, split in self.tp_hints.items()))
        return " ".join(options)


# --- elasticity ------------------------------------------------------------------------

RENDEZVOUS_SCHEMES = ("file", "redis")
PREEMPT_POLICIES = ("fail", "save")


@dataclass(frozen=True)
class ElasticConfig:
    """Failure handling of a native program's training (NativeProgram.train;
    docs/checkpoint.md). The default handles nothing: a failure fails the
    call, as without it.

    rendezvous: where the ranks meet: None (a store in a temporary folder),
        "file:///shared/dir" or "redis://host:port".
    preempt_policy: what SIGTERM or SIGINT (a pre-emption notice) does:
        "save" commits a checkpoint after the step every rank agrees on and
        train returns the steps done (TrainResult.preempted); "fail" ends the
        ranks, and train raises.
    checkpoint_interval: steps between checkpoints (None: only at the end
        of each train call, when checkpoints are on).
    max_restarts: failures of a rank (a crash, a kill, a hang found by the
        collective timeout) that rtx-launch recovers from within
        restart_window seconds, each by restarting every rank from the newest
        checkpoint; one more stops with the reason.
    min_ranks: each restart runs one rank fewer, down to min_ranks, with the
        same global batch: a program compiled with parallel="auto" is planned
        again by the planner for each smaller world; others follow the rule
        "keep tp/pp, shrink dp" (pure data parallelism only). None: the same
        number of ranks.
    checkpoint_dir: where the checkpoints go (default: "checkpoints" beside
        the built program). Checkpoints are on when any of preempt_policy
        "save", checkpoint_interval or max_restarts asks for them.
    deterministic: log a hash of the state after every step; a restart
        replays the logged steps and must reproduce them bit for bit.
    timeout: the collectives' timeout: "auto" (10x the p99 step time, at
        least 2 s: a hung rank is found in seconds) or seconds.
    recover: how a failed rank is recovered from: "restart" restarts every
        rank from the newest checkpoint; "in-job" replaces only the failed
        rank while the others keep their processes and state, and the
        replacement takes the state from a survivor (rtx-launch --recover
        in-job). "in-job" needs max_restarts (each replacement counts) and
        2 or more ranks. With min_ranks the job shrinks instead while above
        min_ranks: the survivors save the newest step they hold as a
        checkpoint, and the smaller world resumes from it (no step redone).
    max_ranks: the job may grow up to max_ranks when a node offers ranks
        (rtx.offer_ranks, or rtx-launch --join): at its next step boundary
        the ranks commit a checkpoint and start again, more of them, in the
        program built for the larger world (the same global batch). Needs
        rendezvous (where the offer is made), run_id (whom it is made to)
        and preempt_policy="save" (the growth is a pre-emption). None: the
        job does not grow beyond its ranks.
    run_id: the job's name in the rendezvous store (rtx-launch --run-id);
        an offer names it. None: a name of rtx-launch's choosing.
    """
    rendezvous: Optional[str] = None
    preempt_policy: str = "fail"
    checkpoint_interval: Optional[int] = None
    max_restarts: int = 0
    min_ranks: Optional[int] = None
    restart_window: float = 600.0
    checkpoint_dir: Optional[str] = None
    deterministic: bool = False
    timeout: Union[str, float] = "auto"
    recover: str = "restart"
    max_ranks: Optional[int] = None
    run_id: Optional[str] = None

    def __post_init__(self) -> None:
        if self.rendezvous is not None:
            scheme, sep, rest = (self.rendezvous.partition("://") if isinstance(self.rendezvous, str)
                                 else ("", "", ""))
            if not sep or scheme not in RENDEZVOUS_SCHEMES or not rest:
                raise ConfigError("elastic.rendezvous must be 'file:///PATH' or 'redis://HOST:PORT', "
                                  f"got {self.rendezvous!r}")
            if scheme == "redis":
                host, _, port = rest.rpartition(":")
                if not host or not port.isdigit():
                    raise ConfigError(f"elastic.rendezvous: {self.rendezvous!r} needs redis://HOST:PORT")
        _choice("elastic.preempt_policy", self.preempt_policy, PREEMPT_POLICIES)
        _positive_int("elastic.checkpoint_interval", self.checkpoint_interval, allow_none=True)
        if isinstance(self.max_restarts, bool) or not isinstance(self.max_restarts, int) or self.max_restarts < 0:
            raise ConfigError(f"elastic.max_restarts must be a whole number >= 0, got {self.max_restarts!r}")
        _positive_int("elastic.min_ranks", self.min_ranks, allow_none=True)
        if self.min_ranks is not None and self.max_restarts == 0:
            raise ConfigError("elastic.min_ranks shrinks the job at a restart: it needs max_restarts >= 1")
        _number("elastic.restart_window", self.restart_window, 0.0, low_inclusive=False)
        if self.checkpoint_dir is not None and not (isinstance(self.checkpoint_dir, (str, os.PathLike))
                                                    and str(self.checkpoint_dir)):
            raise ConfigError(f"elastic.checkpoint_dir must be a path, got {self.checkpoint_dir!r}")
        if not isinstance(self.deterministic, bool):
            raise ConfigError(f"elastic.deterministic must be True or False, got {self.deterministic!r}")
        if self.deterministic and not self.checkpoints:
            raise ConfigError("elastic.deterministic checks resumes from checkpoints: it needs "
                              "checkpoint_interval, max_restarts or preempt_policy='save'")
        if self.timeout != "auto":
            _number("elastic.timeout", self.timeout, 0.0, low_inclusive=False)
        _choice("elastic.recover", self.recover, ("restart", "in-job"))
        if self.recover == "in-job" and self.max_restarts == 0:
            raise ConfigError("elastic.recover='in-job' replaces failed ranks within the restart budget: "
                              "it needs max_restarts >= 1")
        if self.run_id is not None and not (isinstance(self.run_id, str)
                                            and re.fullmatch(r"[A-Za-z0-9._-]+", self.run_id)):
            raise ConfigError(f"elastic.run_id must be letters, digits, '.', '_' or '-', got {self.run_id!r}")
        _positive_int("elastic.max_ranks", self.max_ranks, allow_none=True)
        if self.max_ranks is not None:
            if self.rendezvous is None or self.run_id is None:
                raise ConfigError("elastic.max_ranks grows the job when a node offers ranks through the "
                                  "rendezvous store: it needs rendezvous='file:///PATH' or 'redis://HOST:PORT' "
                                  "and run_id")
            if self.preempt_policy != "save":
                raise ConfigError("elastic.max_ranks grows the job by pre-empting its ranks at a step "
                                  "boundary: it needs preempt_policy='save'")
            if self.min_ranks is not None and self.min_ranks > self.max_ranks:
                raise ConfigError(f"elastic.min_ranks={self.min_ranks} is more than max_ranks={self.max_ranks}")

    @property
    def checkpoints(self) -> bool:
        """Whether the native program writes checkpoints (--checkpoint)."""
        return (self.preempt_policy == "save" or self.checkpoint_interval is not None
                or self.max_restarts > 0)

    @property
    def active(self) -> bool:
        """Whether this asks for anything beyond the defaults."""
        return self != ElasticConfig()

    def store(self) -> Optional[str]:
        """rtx-launch's --store for the rendezvous (None: a temporary one)."""
        if self.rendezvous is None:
            return None
        scheme, _, rest = self.rendezvous.partition("://")
        return f"file:{rest}" if scheme == "file" else self.rendezvous

    def unsupported(self) -> List[Unsupported]:
        # Every option works for native programs; Program.train (rtx-run's
        # simulated ranks) refuses an active ElasticConfig itself.
        return []


# --- optimizer -----------------------------------------------------------------------------

@dataclass(frozen=True)
class AdamW:
    """torch.optim.AdamW, with its defaults; clip_norm clips the global
    gradient norm first (0: no clipping). warmup_steps, decay_steps and
    min_lr schedule the learning rate as nanoGPT does (a linear warm-up to
    lr, then a cosine decay to min_lr at step decay_steps; 0: none),
    computed inside the compiled step (docs/training.md, "Learning-rate
    schedules")."""
    lr: float = 1e-3
    betas: Tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 1e-2
    clip_norm: float = 0.0
    warmup_steps: int = 0
    decay_steps: int = 0
    min_lr: float = 0.0

    def __post_init__(self) -> None:
        _number("optimizer.lr", self.lr, 0.0, low_inclusive=False)
        if (not isinstance(self.betas, (tuple, list)) or len(self.betas) != 2 or
                not all(isinstance(b, (int, float)) and 0.0 <= b < 1.0 for b in self.betas)):
            raise ConfigError(f"optimizer.betas must be two numbers in [0, 1), got {self.betas!r}")
        _number("optimizer.eps", self.eps, 0.0, low_inclusive=False)
        _number("optimizer.weight_decay", self.weight_decay)
        _number("optimizer.clip_norm", self.clip_norm)
        self._check_schedule()

    def _check_schedule(self) -> None:
        for name in ("warmup_steps", "decay_steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"optimizer.{name} must be an integer >= 0, got {value!r}")
        if self.decay_steps and self.decay_steps <= self.warmup_steps:
            raise ConfigError(f"optimizer.decay_steps={self.decay_steps} must be 0 (no decay) or greater "
                              f"than warmup_steps={self.warmup_steps}")
        _number("optimizer.min_lr", self.min_lr)
        if self.min_lr > self.lr:
            raise ConfigError(f"optimizer.min_lr={self.min_lr!r} must not exceed lr={self.lr!r}")
        if self.min_lr and not self.decay_steps:
            raise ConfigError(f"optimizer.min_lr={self.min_lr!r} needs decay_steps (the step it is reached at)")

    def pass_options(self) -> str:
        schedule = ""
        if self.warmup_steps or self.decay_steps:
            schedule = (f" warmup-steps={self.warmup_steps} decay-steps={self.decay_steps} "
                        f"min-lr={self.min_lr!r}")
        return (f"kind=adamw lr={self.lr!r} beta1={self.betas[0]!r} beta2={self.betas[1]!r} "
                f"eps={self.eps!r} weight-decay={self.weight_decay!r} clip-norm={self.clip_norm!r}"
                f"{schedule}")


@dataclass(frozen=True)
class SGD:
    """Plain SGD: p -= lr * (g + weight_decay * p) (no momentum)."""
    lr: float = 1e-2
    weight_decay: float = 0.0
    clip_norm: float = 0.0

    def __post_init__(self) -> None:
        _number("optimizer.lr", self.lr, 0.0, low_inclusive=False)
        _number("optimizer.weight_decay", self.weight_decay)
        _number("optimizer.clip_norm", self.clip_norm)

    def pass_options(self) -> str:
        return f"kind=sgd lr={self.lr!r} weight-decay={self.weight_decay!r} clip-norm={self.clip_norm!r}"


Optimizer = Union[AdamW, SGD]
