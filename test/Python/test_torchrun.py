"""world_size > 1: a script started by torchrun (PyTorch 1.13's
torch.distributed.run, offline with --standalone) compiles the native
program once per machine, trains one rank per process, and every process
gets the losses and parameters that rtx-launch's run of the same program
gives."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rtx
from rtx import models
from rtx.config import ParallelConfig, init
from util import random_batch, rel_err

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

torch = pytest.importorskip("torch")

# PyTorch 1.13's torchrun on Python 3.11 cannot parse its own defaults
# "--redirects 0 --tee 0" (Std is an IntFlag, whose iteration skips 0 there),
# and fails with "'NoneType' object has no attribute 'get'". Redirecting and
# teeing stderr (2) is a value it parses; stdout is untouched.
TORCHRUN_STD = ["--redirects", "2", "--tee", "2"]


def _torchrun(tmp_path, nproc, env_extra=None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "python"), str(HERE)]),
               RTX_CACHE_DIR=str(tmp_path / "cache"), OMP_NUM_THREADS="1", **(env_extra or {}))
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "RTX_STORE", "RTX_RUN_ID"):
        env.pop(name, None)
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", *TORCHRUN_STD,
                           "--nproc_per_node", str(nproc), str(HERE / "Inputs" / "torchrun_train.py"), str(out)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(nproc)]


def test_torchrun_trains_as_rtx_launch(tmp_path):
    ranks = _torchrun(tmp_path, 2)
    # The same program under rtx-launch: one process, two local ranks.
    reference = rtx.compile(models.mlp(), group=init("cpu", 2, env={}), parallel=ParallelConfig(dp=2),
                            optimizer=rtx.AdamW(lr=1e-2))
    native = reference.build(tmp_path / "reference")
    batch = random_batch(reference)
    first, second = native.train(batch, steps=3), native.train(batch, steps=2)
    expected = first.losses + second.losses
    for got in ranks:
        assert (got["launcher"], got["world_size"]) == ("torchrun", 2)
        np.testing.assert_allclose(got["losses"], expected, rtol=1e-5)
        assert set(got["params"]) == set(second.params)
        for name, value in second.params.items():
            assert rel_err(np.asarray(got["params"][name], dtype=np.float32), value) <= 1e-4, name
    # Compiled once: one build in the cache, none left half-done.
    entries = list((tmp_path / "cache").iterdir())
    assert len(entries) == 1
    assert sorted(p.name for p in entries[0].iterdir()) == ["build", "built"]
