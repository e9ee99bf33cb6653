"""One rank of a native program, in a process an outer launcher started.

Under torchrun, srun or mpirun every process runs the same script; each
calls Program.train, which lands here when the group has more than one
process (rtx.init read the launcher's variables). Then:

- the native program is compiled once per machine: local rank 0 builds it
  into a cache directory named by the step's IR (RTX_CACHE_DIR, default
  /tmp/rtx-cache-UID), the other local ranks wait for its `built` marker
  (or its `failed` one, whose message they raise) up to `build_timeout`
  seconds; a later run with the same step reuses it;
- each process runs its own rank of it (the program reads the rank from the
  launcher's variables). The rendezvous store is RTX_STORE; under torchrun on
  one machine, where torchrun's own store is a TCPStore rtx cannot use, a
  directory in /tmp named by torchrun's run id and agent;
- rank 0 writes the losses and the final state into the run directory
  (RTX_RUN_DIR, default /tmp/rtx-run-<run id>), then a `done` marker; the
  other ranks wait for it and read the same losses and parameters. Across
  machines RTX_RUN_DIR must be on a shared file system.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

from .batch import save_arrays
from .config import ConfigError, ProcessGroup
from .results import TrainResult, losses_of, params_of, read_metrics, read_state
from .tools import ToolError, call, find_tool

__all__ = ["RankRun"]


def _wait_for(path: Path, failed: Optional[Path], seconds: float, what: str) -> None:
    """Waits until `path` exists; raises the message in `failed` when that
    appears instead, or a ToolError after `seconds`."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        if failed is not None and failed.exists():
            raise ToolError(f"{what} failed on local rank 0:\n{failed.read_text()}")
        if time.monotonic() > deadline:
            raise ToolError(f"timed out after {seconds:g} s waiting for {what} ({path} does not exist)")
        time.sleep(0.05)


def _run_id(env: Mapping[str, str]) -> str:
    """An id every process of this run shares and no other run has."""
    if env.get("RTX_RUN_ID"):
        return env["RTX_RUN_ID"]
    if "TORCHELASTIC_RUN_ID" in env:
        # torchrun's workers on a machine are children of one agent; its pid
        # tells this run from an earlier one with the same run id ("none"
        # unless --rdzv_id or --standalone gives one).
        return f"torchrun-{env['TORCHELASTIC_RUN_ID']}-{os.getppid()}"
    if "SLURM_JOB_ID" in env:
        return f"slurm-{env['SLURM_JOB_ID']}.{env.get('SLURM_STEP_ID', '0')}"
    if "OMPI_MCA_ess_base_jobid" in env:
        return f"mpirun-{env['OMPI_MCA_ess_base_jobid']}"
    raise ConfigError("cannot tell this run from another: set RTX_RUN_ID to one id, the same in every process "
                      f"(launched by {_launcher(env)})")


def _launcher(env: Mapping[str, str]) -> str:
    return ("torchrun" if "TORCHELASTIC_RUN_ID" in env else "slurm" if "SLURM_JOB_ID" in env
            else "mpirun" if "OMPI_COMM_WORLD_SIZE" in env else "an unknown launcher")


class RankRun:
    """This process's rank of a program's native build, call after call."""

    def __init__(self, program: Any, group: ProcessGroup, build_timeout: float = 600.0) -> None:
        if len(group.devices) != 1:
            raise ConfigError(f"under {group.launcher} each process drives one device; this one names "
                              f"{len(group.devices)} ({', '.join(group.devices)}): start one process per device")
        self.program, self.group = program, group
        self.env = dict(os.environ)
        self.run_id = _run_id(self.env)
        self.env.setdefault("RTX_RUN_ID", self.run_id)
        single_node = self.env.get("LOCAL_WORLD_SIZE") == str(group.world_size)
        if "RTX_STORE" not in self.env and group.launcher == "torchrun":
            if not single_node:
                raise ConfigError("torchrun across machines: set RTX_STORE=redis://HOST:PORT (torchrun's own store "
                                  "is a TCPStore, which rtx cannot use)")
            self.env["RTX_STORE"] = f"file:/tmp/rtx-store-{self.run_id}"
        device = group.devices[0]
        if device != "cpu":
            self.env["RTX_DEVICE"] = device
        self.run_dir = Path(self.env.get("RTX_RUN_DIR") or f"/tmp/rtx-run-{self.run_id}")
        self.build_timeout = build_timeout
        self.calls = 0
        self.path = self._build()

    def _build(self) -> Path:
        """The native program, built by local rank 0 into the shared cache."""
        backend = self.group.backend
        translate = find_tool("rtx-translate")
        key = hashlib.sha256("\0".join([
            self.program.train_ir, backend, translate, str(os.stat(translate).st_mtime_ns)]).encode()).hexdigest()
        cache = Path(self.env.get("RTX_CACHE_DIR") or f"/tmp/rtx-cache-{os.getuid()}") / key[:24]
        built, failed = cache / "built", cache / "failed"
        executable = cache / "build" / "program"
        if self.group.local_rank == 0 and not built.exists():
            cache.mkdir(parents=True, exist_ok=True)
            failed.unlink(missing_ok=True)
            # Built aside and renamed: a waiting rank never sees half a build.
            staging = Path(tempfile.mkdtemp(prefix="build-", dir=cache))
            try:
                from .native import build
                build(self.program, staging, device=backend)
                shutil.rmtree(cache / "build", ignore_errors=True)
                staging.rename(cache / "build")
            except Exception as error:
                failed.write_text(str(error))
                shutil.rmtree(staging, ignore_errors=True)
                raise
            built.write_text(str(executable))
        else:
            _wait_for(built, failed, self.build_timeout, f"the build of the native program in {cache}")
        return executable

    def train(self, arrays: Dict[str, Any], params: Optional[Dict[str, Any]], resume: bool, steps: int,
              timeout: float) -> TrainResult:
        """Runs `steps` steps of this rank; every rank returns the losses and
        the parameters after the last step (rank 0's, read from the run
        directory)."""
        self.calls += 1
        call_dir = self.run_dir / f"call{self.calls}"
        previous = self.run_dir / f"call{self.calls - 1}" / "state"
        rank0 = self.group.rank == 0
        if rank0:
            shutil.rmtree(call_dir, ignore_errors=True)
            call_dir.mkdir(parents=True)
        with tempfile.TemporaryDirectory(prefix=f"rtx-rank{self.group.rank}-") as work:
            work_dir = Path(work)
            argv = [str(self.path), "--steps", str(steps), "--timeout", str(timeout),
                    "--inputs", str(save_arrays(work_dir / "inputs", arrays))]
            if resume:
                argv += ["--state", str(previous)]
            elif params is not None:
                argv += ["--params", str(save_arrays(work_dir / "params", params))]
            # Every rank takes part in gathering the state; rank 0 writes it.
            out_dir = call_dir if rank0 else work_dir
            argv += ["--metrics", str(out_dir / "metrics.jsonl"), "--save-state", str(out_dir / "state")]
            argv += self.program.sharding.offload_argv(work_dir)
            # One run id per call: the store's keys of an earlier call are
            # not this one's.
            env = dict(self.env, RTX_RUN_ID=f"{self.env['RTX_RUN_ID']}-call{self.calls}")
            call(argv, name=f"{self.path.parent.name}/program (rank {self.group.rank})", env=env, tail=20)
        done = call_dir / "done"
        if rank0:
            done.write_text("")
        else:
            _wait_for(done, None, max(60.0, timeout), f"rank 0 to write the results of call {self.calls}")
        losses = losses_of(read_metrics(call_dir / "metrics.jsonl"), steps, self.path.name)
        params = params_of(read_state(call_dir / "state"))
        return TrainResult(losses, params)
