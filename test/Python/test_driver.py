"""The tool wrappers (rtx.tools, rtx.driver) and the command line (python3 -m rtx)."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import rtx
from rtx import driver, models, tools
from rtx.__main__ import main
from rtx.config import ParallelConfig, init
from util import ROOT


def test_tools_are_found():
    for tool in ("rtx-opt", "rtx-run"):
        assert os.access(driver.find_tool(tool), os.X_OK)


def test_missing_tools_give_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(tools, "SOURCE_ROOT", tmp_path)
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


# --- what the tools say: errors raise, warnings are warnings ---------------------------------

def test_a_tools_stderr_splits_into_its_diagnostics():
    stderr = ("<stdin>:3:5: warning: first\n  %0 = rtx.add %a, %b : tensor<2xf32>\n    ^\n"
              "<stdin>:1:1: note: see the function\n\n"
              "<stdin>:9:1: remark: second\n")
    assert tools.split_messages(stderr) == [
        "<stdin>:3:5: warning: first\n  %0 = rtx.add %a, %b : tensor<2xf32>\n    ^\n<stdin>:1:1: note: see the function",
        "<stdin>:9:1: remark: second"]
    assert tools.split_messages("a notice\nover two lines\n") == ["a notice\nover two lines"]
    assert tools.split_messages("") == [] and tools.split_messages("\n\n") == []


def test_a_tool_that_succeeds_has_its_stderr_reissued_as_warnings():
    script = "echo out; echo 'x.mlir:1:2: warning: one' >&2; echo 'x.mlir:3:4: warning: two' >&2"
    with pytest.warns(rtx.RtxToolWarning) as caught:
        done = tools.call(["sh", "-c", script], name="fake-tool")
    assert done.stdout == "out\n"
    got = [(w.message.tool, w.message.message) for w in caught if issubclass(w.category, rtx.RtxToolWarning)]
    assert got == [("fake-tool", "x.mlir:1:2: warning: one"), ("fake-tool", "x.mlir:3:4: warning: two")]
    assert str(caught[0].message) == "fake-tool: x.mlir:1:2: warning: one"
    # Attributed to the caller outside the rtx package: this file.
    assert all(w.filename == __file__ for w in caught), [w.filename for w in caught]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tools.call(["sh", "-c", "echo quiet"])       # nothing on stderr: no warning


def test_a_tool_that_fails_raises_with_its_diagnostic_and_warns_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(rtx.ToolError, match=r"fake-tool failed \(exit 3\): x.mlir:1:1: error: broken"):
            tools.call(["sh", "-c", "echo 'x.mlir:1:1: error: broken' >&2; exit 3"], name="fake-tool")


def _odd_batch_mlp():
    return models.mlp(batch=3)      # dimension 0 of size 3 does not divide over dp=2


def test_rtx_opt_warnings_reach_python(tmp_path):
    passes = driver.training_passes("kind=sgd lr=0.1", 1, "dp:2")
    with pytest.warns(rtx.RtxToolWarning) as caught:
        text = driver.opt(_odd_batch_mlp().text(), passes)
    assert "func.func" in text
    messages = [str(w.message) for w in caught if issubclass(w.category, rtx.RtxToolWarning)]
    # One warning per diagnostic (x and labels), each with its source line and notes.
    assert len(messages) == 2, messages
    for name, message in zip(("x", "labels"), messages):
        assert message.startswith("rtx-opt: <stdin>:"), message
        assert f'"{name}"' in message and "stays replicated" in message, message
        assert 'dimension 0 of size 3 is not divisible by axis "dp" of size 2' in message, message


def test_compile_surfaces_the_warnings_of_rtx_distribute():
    with pytest.warns(rtx.RtxToolWarning) as caught:
        program = rtx.compile(_odd_batch_mlp(), group=init("cpu", 2, env={}), parallel=ParallelConfig(dp=2),
                              optimizer=rtx.SGD(lr=0.1))
    messages = [w.message for w in caught if issubclass(w.category, rtx.RtxToolWarning)]
    assert {m.tool for m in messages} == {"rtx-opt"} and all("stays replicated" in m.message for m in messages)
    assert all(w.filename == __file__ for w in caught)
    # A user who wants them as errors gets the tool's message in the exception.
    with warnings.catch_warnings():
        warnings.simplefilter("error", rtx.RtxToolWarning)
        with pytest.raises(rtx.RtxToolWarning, match="stays replicated"):
            rtx.compile(_odd_batch_mlp(), group=init("cpu", 2, env={}), parallel=ParallelConfig(dp=2))
    assert program.train_ir


def test_a_model_that_tp_cannot_split_warns_loudly():
    """tp=3 on the Llama block: no dimension divides by 3, so every rank
    would compute everything; rtx-distribute says so and Python shows it."""
    with pytest.warns(rtx.RtxToolWarning) as caught:
        rtx.compile(models.llama_block(), group=init("cpu", 3, env={}), parallel=ParallelConfig(tp=3))
    messages = [w.message.message for w in caught if issubclass(w.category, rtx.RtxToolWarning)]
    assert any('axis "tp" of size 3' in m for m in messages), messages


def test_a_clean_compile_warns_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rtx.compile(models.mlp(), group=init("cpu", 2, env={}), parallel=ParallelConfig(dp=2))


def test_run_reads_results_losses_and_gradient_names(tmp_path):
    program = tmp_path / "grad.mlir"
    driver.opt(models.mlp().text(), ["-rtx-autodiff"], output=program)
    result = driver.run(program, random=True)
    assert [r.grad_of for r in result.results] == [None, "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert [r.type for r in result.results[:2]] == ["tensor<f32>", "tensor<64x32xf32>"]
    assert result.grads()["fc1.weight"].shape == (64, 32)

    train = tmp_path / "train.mlir"
    driver.opt(models.mlp().text(), driver.training_passes("kind=sgd lr=0.1", 1), output=train)
    result = driver.run(train, random=True, steps=3)
    assert len(result.losses) == 3 and result.losses[0] > result.losses[2]
    states = result.states()
    assert {"param:fc1.weight", "param:fc2.bias"} <= set(states)
    assert np.isclose(float(result.results[0].value), result.losses[-1], rtol=1e-6)


def test_describe_reads_the_step_the_compiler_decoded(tmp_path):
    # The description rtx-translate writes, not a parse of the printed IR:
    # roles and state keys of the arguments, the step's results in rtx-run's
    # order.
    train = tmp_path / "train.mlir"
    driver.opt(models.mlp().text(), driver.training_passes("kind=sgd lr=0.1", 1), output=train)
    description = driver.describe(train)
    (stage,) = description["stages"]
    roles = {a["name"]: a["role"] for a in stage["arguments"]}
    assert roles["fc1.weight"] == "parameter" and "data" in roles.values()
    assert stage["loss_result"] == 0
    results = description["results"]
    assert [r["index"] for r in results] == list(range(len(results)))
    assert results[0]["state"] is None and results[0]["type"] == "tensor<f32>"
    assert {r["state"] for r in results[1:]} >= {"param:fc1.weight", "param:fc2.bias"}
    with pytest.raises(tools.ToolError, match="no function @nope"):
        driver.describe(train, entry="nope")


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


def test_cli_shows_each_tool_warning(tmp_path):
    (tmp_path / "odd.mlir").write_text(models.mlp(batch=3).text())
    done = rtx_cli("opt", "odd.mlir", "--pass=-rtx-distribute=mesh=dp:2", "-o", "out.mlir", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    shown = [line for line in done.stderr.splitlines() if line.startswith("rtx: warning: ")]
    assert len(shown) == 2 and all(line.startswith("rtx: warning: rtx-opt: odd.mlir:") for line in shown), done.stderr
    assert "stays replicated" in done.stderr and (tmp_path / "out.mlir").is_file()


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
    (["train", "rtx.models:mlp", "--tp-hint", "fc1"], "--tp-hint 'fc1': expected NAME:column or NAME:row"),
    (["train", "rtx.models:mlp", "--tp-hint", "fc1:col"], "sharding.tp_hints['fc1'] must be 'column' or 'row'"),
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
