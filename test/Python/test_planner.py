"""parallel="auto": the auto-partitioner chooses the plan, rtx-distribute
builds it, and the distributed program trains like one device."""
import json
import subprocess
import sys

import pytest

import rtx
from rtx import models
from rtx.planner import Plan
from util import ROOT, random_batch, rel_err


def gpt(batch: int = 4):
    return models.gpt2(models.GPTConfig(batch=batch, layers=2))


def test_auto_plan_trains_like_one_device():
    # SGD: the parameters move with the gradients themselves (Adam divides
    # tiny bias gradients by their own size and amplifies rounding).
    optimizer = rtx.SGD(lr=0.1)
    auto = rtx.compile(gpt(), group=rtx.init("cpu", 4, env={}), parallel="auto", hardware="cpu-host",
                       optimizer=optimizer)
    plan = auto.plan
    assert isinstance(plan, Plan) and plan.dp * plan.tp * plan.pp == 4
    assert auto.parallel.ranks == 4 and "chosen:" in plan.text
    # Distributed for real: a mesh of four ranks and collectives in the step.
    assert "rtx.mesh @mesh_" in auto.train_ir
    assert any(c in auto.train_ir for c in ("rtx.all_reduce", "rtx.reduce_scatter", "rtx.all_gather",
                                            "rtx.send"))
    one = rtx.compile(gpt(), optimizer=optimizer)
    batch = random_batch(one)
    a, b = auto.train(batch, steps=3), one.train(batch, steps=3)
    assert rel_err(a.losses, b.losses) < 1e-4
    for name in b.params:
        assert rel_err(a.params[name], b.params[name]) < 1e-4, name


def test_fixed_choices_and_the_report():
    text = gpt().text()
    planned, plan = rtx.planner.plan(text, 4, "cpu-host", fixed={"pp": 2, "tp": 1, "recompute": "full"},
                                     global_batch=8)
    assert (plan.pp, plan.tp, plan.dp, plan.recompute, plan.micro_batches) == (2, 1, 2, "full", 2)
    assert "rtx.stage = 1" in planned and plan.distribute.startswith("mesh=")
    memory = plan.report["plan"]["predicted"]["memory_bytes"]
    assert memory["peak"] > 0 and memory["activations"] > 0
    assert plan.report["runners_up"] and all(r["why_lost"] for r in plan.report["runners_up"])


def test_this_machine_is_profiled_by_rtx_topology():
    _, plan = rtx.planner.plan(gpt().text(), 2)
    assert plan.report["profile"].endswith("cpu") and plan.dp * plan.tp * plan.pp == 2


def test_bad_requests_are_refused():
    with pytest.raises(rtx.ConfigError, match="chooses the ZeRO stage"):
        rtx.compile(gpt(), group=rtx.init("cpu", 2, env={}), parallel="auto", hardware="cpu-host",
                    sharding=rtx.ShardingConfig(shard_strategy="zero1"))
    with pytest.raises(rtx.ConfigError, match="needs hardware="):
        rtx.compile(gpt(), group=rtx.init("cuda", 2, env={}), parallel="auto")
    with pytest.raises(rtx.ConfigError, match="objective must be one of"):
        rtx.compile(gpt(), group=rtx.init("cpu", 2, env={}), parallel="auto", hardware="cpu-host",
                    objective="fastest")
    with pytest.raises(rtx.ConfigError, match="ParallelConfig or 'auto'"):
        rtx.compile(gpt(), parallel="fast")
    with pytest.raises(rtx.ConfigError, match="with parallel='auto'"):
        rtx.compile(gpt(), hardware="cpu-host")
    with pytest.raises(rtx.ToolError, match="no plan of 2 devices fits in memory"):
        rtx.planner.plan(gpt().text(), 2, str(ROOT / "test/Transforms/Inputs/profile-tiny-memory.json"))


def test_cli_plan_prints_the_report(tmp_path):
    model = tmp_path / "gpt.mlir"
    model.write_text(gpt().text())
    out = tmp_path / "plan.json"
    picture = tmp_path / "plan.png"
    done = subprocess.run([sys.executable, "-m", "rtx", "plan", str(model), "--devices", "4", "--profile",
                           "cpu-host", "--objective", "memory", "--json", str(out), "--plot", str(picture)],
                          capture_output=True, text=True, cwd=ROOT / "python")
    assert done.returncode == 0, done.stderr
    assert "objective memory" in done.stdout and "chosen:" in done.stdout
    assert json.loads(out.read_text())["objective"] == "memory"
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = subprocess.run([sys.executable, "-m", "rtx", "plan", str(model), "--devices", "0"],
                         capture_output=True, text=True, cwd=ROOT / "python")
    assert bad.returncode != 0 and "devices" in bad.stderr
