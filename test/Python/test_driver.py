"""The tool wrappers (rtx.driver) and the command line (python3 -m rtx)."""
import os
import subprocess
import sys


import numpy as np
import pytest

from rtx import driver, models
from rtx.__main__ import main
from util import ROOT


def test_tools_are_found():
    for tool in ("rtx-opt", "rtx-run"):
        assert os.access(driver.find_tool(tool), os.X_OK)


def test_missing_tools_give_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(driver, "SOURCE_ROOT", tmp_path)
    monkeypatch.setenv("RTX_BUILD_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(driver.ToolError, match=r"rtx-opt not found .*scripts/setup.sh.*RTX_BUILD_DIR"):
        driver.opt(models.mlp().text())


def test_rtx_build_dir_is_honoured(monkeypatch, tmp_path):
    (tmp_path / "bin").mkdir()
    fake = tmp_path / "bin" / "rtx-opt"
    fake.write_text("#!/bin/sh\necho fake\n")
    fake.chmod(0o755)
    monkeypatch.setenv("RTX_BUILD_DIR", str(tmp_path))
    assert driver.find_tool("rtx-opt") == str(fake)


def test_opt_failure_carries_the_tools_message():
    with pytest.raises(driver.ToolError, match=r"rtx-opt failed \(exit 1\).*error"):
        driver.opt("func.func @f() {\n  %x = rtx.bogus\n}\n")


def test_run_reads_results_losses_and_gradient_names(tmp_path):
    program = tmp_path / "grad.mlir"
    driver.opt(models.mlp().text(), ["-rtx-autodiff"], output=program)
    result = driver.run(program, random=True)
    assert [r.grad_of for r in result.results] == [None, "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert result.grads()["fc1.weight"].shape == (64, 32)

    train = tmp_path / "train.mlir"
    driver.opt(models.mlp().text(), driver.training_passes("kind=sgd lr=0.1", 1), output=train)
    result = driver.run(train, random=True, steps=3)
    assert len(result.losses) == 3 and result.losses[0] > result.losses[2]
    states = result.states()
    assert {"param:fc1.weight", "param:fc2.bias"} <= set(states)
    assert np.isclose(float(result.results[0].value), result.losses[-1], rtol=1e-6)


# --- the command line -----------------------------------------------------------------------------

def rtx_cli(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([sys.executable, "-m", "rtx", *args], capture_output=True, text=True, env=env, cwd=cwd)


def test_cli_help_and_usage_errors(tmp_path):
    done = rtx_cli("--help", cwd=tmp_path)
    assert done.returncode == 0 and "import" in done.stdout and "train" in done.stdout
    done = rtx_cli("frobnicate", cwd=tmp_path)
    assert done.returncode == 2 and "invalid choice" in done.stderr
    done = rtx_cli("run", str(tmp_path / "missing.mlir"), cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.startswith("rtx: error:") and "no such file" in done.stderr


@pytest.mark.parametrize("args, message", [
    (["import", "no_colon"], "is not FILE.py:NAME or module:NAME"),
    (["import", "missing.py:f"], "no such file: missing.py"),
    (["import", "rtx.nonexistent:f"], "cannot import module 'rtx.nonexistent'"),
    (["import", "rtx.models:nothing"], "'nothing' is not a function"),
    (["import", "rtx.models:mlp", "--set", "batch"], "--set expects KEY=VALUE"),
    (["import", "rtx.models:mlp", "--set", "depth=3"], "unexpected keyword argument 'depth'"),
    (["import", "rtx.models:mlp", "--params-out", "p"], "a builder model has no weights"),
    (["opt", "model.mlir"], "no passes"),
    (["train", "rtx.models:mlp"], "a builder model has no example inputs"),
])
def test_cli_bad_input_exits_1_with_a_message(args, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.mlir").write_text(models.mlp().text())
    assert main(args) == 1
    assert message in capsys.readouterr().err


def test_cli_import_opt_run_builder_model(tmp_path, capsys):
    assert main(["import", "rtx.models:mlp", "--set", "batch=4", "--set", "classes=3",
                 "-o", str(tmp_path / "mlp.mlir")]) == 0
    assert "tensor<4x32xf32>" in (tmp_path / "mlp.mlir").read_text()
    assert main(["opt", str(tmp_path / "mlp.mlir"), "--train", "--optimizer", "sgd", "--lr", "0.5",
                 "--micro-batches", "2", "-o", str(tmp_path / "train.mlir")]) == 0
    text = (tmp_path / "train.mlir").read_text()
    assert "rtx.sgd_update" in text and "tensor<8x32xf32>" in text
    assert main(["run", str(tmp_path / "train.mlir"), "--random", "--steps", "4"]) == 0
    out = capsys.readouterr().out
    assert "step 4/4: loss=" in out and "result 0: tensor<f32>" in out


def test_cli_opt_passes_through_arguments(tmp_path):
    (tmp_path / "mlp.mlir").write_text(models.mlp().text())
    assert main(["opt", str(tmp_path / "mlp.mlir"), "--pass=-rtx-autodiff", "-o", str(tmp_path / "g.mlir")]) == 0
    assert 'rtx.grad_of = "fc2.bias"' in (tmp_path / "g.mlir").read_text()
