"""Device lists are honoured or refused, never ignored: rank r of a node
runs on the r-th listed device (rtx-launch --devices / RTX_DEVICES, read by
the program); a list of n "cpu" is n local ranks; a GPU list given to a CPU
program is an error. The CUDA program runs on the host emulation here."""
import re
import subprocess

import numpy as np
import pytest

import rtx
from rtx import models
from rtx.config import ConfigError, ParallelConfig, init
from rtx.tools import find_tool
from util import random_batch


def _compile(group):
    return rtx.compile(models.mlp(), group=group, parallel=ParallelConfig(dp=2), optimizer=rtx.AdamW(lr=1e-2))


def test_cpu_list_is_local_ranks(tmp_path):
    program = _compile(init("cpu", devices=["cpu", "cpu"], env={}))
    assert program.group.size == 2
    batch = random_batch(program)
    native = program.build(tmp_path / "cpu").train(batch, steps=2)
    reference = _compile(init("cpu", 2, env={})).train(batch, steps=2)
    np.testing.assert_allclose(native.losses, reference.losses, rtol=1e-5)


def test_cuda_list_places_each_local_rank(tmp_path, capfd):
    program = _compile(init("cuda", devices=["cuda:3", "cuda:5"], env={}))
    native = program.build(tmp_path / "cuda", emulate=True)
    native.train(random_batch(program), steps=1, progress=True)
    assert "device: emulated GPU 3" in capfd.readouterr().err
    # Rank 1 takes the second: the program's own view, through rtx-launch.
    launch = find_tool("rtx-launch")
    for devices, first in (("cuda:3,cuda:5", "GPU 3"), ("5,3", "GPU 5")):
        done = subprocess.run([launch, "-n", "2", "--devices", devices, "--store", f"file:{tmp_path / devices}",
                               "--", str(native.path), "--steps", "1"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert f"[rank 0] device: emulated {first}" in done.stdout


def test_device_lists_a_program_cannot_honour_are_refused(tmp_path):
    gpus = _compile(init("cuda", devices=["cuda:3", "cuda:5"], env={}))
    cpu_build = gpus.build(tmp_path / "cpu", device="cpu")
    with pytest.raises(ConfigError, match=r"places its ranks on cuda:3, cuda:5, but this native program was built "
                                          r"for the CPU"):
        cpu_build.train(random_batch(gpus), steps=1)
    launch = find_tool("rtx-launch")
    done = subprocess.run([launch, "-n", "2", "--devices", "cuda:3,cuda:5", "--store", f"file:{tmp_path / 's'}",
                           "--", str(cpu_build.path), "--steps", "1"], capture_output=True, text=True)
    assert done.returncode != 0
    # Both ranks refuse; whichever does first, rtx-launch stops the other
    # (which may not have printed yet).
    assert re.search(r"RTX_DEVICES names (cuda:3 for local rank 0|cuda:5 for local rank 1), but this is a CPU "
                     r"program \(build a GPU one with rtx-translate --emit=cuda\)", done.stderr), done.stderr
    emulated = gpus.build(tmp_path / "gpu", emulate=True)
    done = subprocess.run([launch, "-n", "2", "--devices", "cpu,cpu", "--store", f"file:{tmp_path / 't'}",
                           "--", str(emulated.path), "--steps", "1"], capture_output=True, text=True)
    assert done.returncode != 0 and "names cpu for local rank" in done.stderr
    assert "this program runs on GPUs: name cuda:N" in done.stderr
