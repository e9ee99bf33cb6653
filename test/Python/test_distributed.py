"""Data, tensor and sequence parallelism through the Python API: rtx.compile
with dp/tp/sp > 1 partitions the training step (rtx-distribute) and
Program.train runs it as that many simulated CPU ranks in rtx-run. The
losses and parameters equal the single-device program's."""
import re
import subprocess

import numpy as np
import pytest

import rtx
from rtx import driver, models
from rtx.builder import Module, normal, zeros
from rtx.config import ConfigError, ParallelConfig, ShardingConfig, init
from util import TORCH_SKIP_REASON, random_batch


def assert_trains_as(single, many, tolerance):
    """3 steps of `many` on one random batch give `single`'s losses (1e-5)
    and parameters (relative norm `tolerance`)."""
    batch = random_batch(single)
    expected = single.train(batch, steps=3)
    got = many.train(batch, steps=3)
    np.testing.assert_allclose(got.losses, expected.losses, rtol=1e-5)
    for name, value in expected.params.items():
        assert np.linalg.norm(got.params[name] - value) <= tolerance * np.linalg.norm(value), name


def _rtx_distribute_takes_seed_hints() -> bool:
    done = subprocess.run([driver.find_tool("rtx-opt"), "--help"], capture_output=True, text=True)
    return "seed-hints" in done.stdout


@pytest.mark.parametrize("parallel", [
    ParallelConfig(dp=2), ParallelConfig(tp=2), ParallelConfig(dp=2, tp=2),
    ParallelConfig(dp=2, micro_batch=2),
])
def test_distributed_training_equals_one_device(parallel):
    single = rtx.compile(models.mlp(), parallel=ParallelConfig(micro_batch=parallel.micro_batch),
                         optimizer=rtx.AdamW(lr=1e-2))
    many = rtx.compile(models.mlp(), group=init("cpu", parallel.ranks, env={}), parallel=parallel,
                       optimizer=rtx.AdamW(lr=1e-2))
    assert "rtx.all_reduce" in many.train_ir
    assert_trains_as(single, many, 1e-5)


def test_sequence_parallel_gpt2_equals_one_device():
    config = models.GPTConfig(layers=1, batch=2, heads=4)
    single = rtx.compile(models.gpt2(config), optimizer=rtx.SGD(lr=0.1))
    many = rtx.compile(models.gpt2(config), group=init("cpu", 2, env={}), parallel=ParallelConfig(sp=2),
                       optimizer=rtx.SGD(lr=0.1))
    assert "rtx.all_to_all" in many.train_ir
    batch = random_batch(single, seed=3)
    np.testing.assert_allclose(many.train(batch, steps=2).losses, single.train(batch, steps=2).losses,
                               rtol=1e-5)


def _mlp_named(up: str, down: str) -> Module:
    """An MLP whose projections have names no seeding rule knows."""
    m = Module()
    f = m.function("mlp")
    x = f.input("x", [8, 12], "f32")
    labels = f.input("labels", [8], "i32")
    h = f.gelu(f.linear(x, f.param(f"{up}.weight", [16, 12], normal(0.0, 0.2)), f.param(f"{up}.bias", [16], zeros())))
    f.ret(f.cross_entropy(f.linear(h, f.param(f"{down}.weight", [5, 16], normal(0.0, 0.2))), labels))
    return m


@pytest.mark.skipif("not _rtx_distribute_takes_seed_hints()",
                    reason="rtx-distribute has no seed-hints option yet (rtx-opt --help lacks it)")
def test_tp_hints_partition_a_model_as_hinted_and_keep_its_losses():
    model = _mlp_named("widen", "narrow")
    single = rtx.compile(model, optimizer=rtx.SGD(lr=0.1))
    hinted = rtx.compile(model, group=init("cpu", 2, env={}), parallel=ParallelConfig(tp=2),
                         sharding=ShardingConfig(tp_hints={"widen": "column", "narrow": "row"}),
                         optimizer=rtx.SGD(lr=0.1))
    assert "rtx.all_reduce" in hinted.train_ir         # the row-parallel projection's partial sums
    batch = random_batch(single, seed=5)
    batch["labels"] %= 5                               # the model's 5 classes
    expected = single.train(batch, steps=3)
    got = hinted.train(batch, steps=3)
    np.testing.assert_allclose(got.losses, expected.losses, rtol=1e-5)
    for name, value in expected.params.items():
        assert np.linalg.norm(got.params[name] - value) <= 1e-5 * np.linalg.norm(value), name


@pytest.mark.parametrize("strategy", ["zero1", "zero2", "zero3", "fsdp"])
def test_sharded_training_equals_one_device(strategy):
    """ShardingConfig's ZeRO stages (rtx-shard-state) train as one device;
    the state really is sharded: flat buffers, and for stage 3 gathered
    parameters."""
    single = rtx.compile(models.mlp(), optimizer=rtx.AdamW(lr=1e-2))
    many = rtx.compile(models.mlp(), group=init("cpu", 2, env={}), parallel=ParallelConfig(dp=2),
                       sharding=ShardingConfig(strategy), optimizer=rtx.AdamW(lr=1e-2))
    assert "rtx.flat" in many.train_ir
    if strategy in ("zero3", "fsdp"):
        assert "rtx.all_gather" in many.train_ir
    assert_trains_as(single, many, 1e-4)


@pytest.mark.parametrize("strategy, offload", [("zero2", "cpu"), ("zero3", "nvme")])
def test_offloaded_training_equals_one_device(strategy, offload, tmp_path):
    """ShardingConfig(offload=...) keeps the optimizer state (and stage 3's
    parameter shards) in host memory or in files between steps; two calls
    continue one run and train as one device. With offload_dir, the files
    live there while a call runs."""
    single = rtx.compile(models.mlp(), optimizer=rtx.AdamW(lr=1e-2))
    directory = tmp_path / "offload" if offload == "nvme" else None
    sharding = ShardingConfig(strategy, offload=offload,
                              offload_dir=str(directory) if directory else None)
    many = rtx.compile(models.mlp(), group=init("cpu", 2, env={}), parallel=ParallelConfig(dp=2),
                       sharding=sharding, optimizer=rtx.AdamW(lr=1e-2))
    assert f'rtx.offload = "{offload}"' in many.train_ir and "rtx.offload_store" in many.train_ir
    batch = random_batch(single)
    expected = single.train(batch, steps=3)
    got = [many.train(batch, steps=1), many.train(batch, steps=2)]
    np.testing.assert_allclose(got[0].losses + got[1].losses, expected.losses, rtol=1e-5)
    for name, value in expected.params.items():
        assert np.linalg.norm(got[1].params[name] - value) <= 1e-4 * np.linalg.norm(value), name


def test_auto_wrap_chooses_fsdp_units():
    """auto_wrap: module classes of a PyTorch model name the units (each
    Block instance one flat buffer, the rest one "root"), a parameter count
    is FSDP's size-based policy; both train as one device."""
    torch = pytest.importorskip("torch", reason=TORCH_SKIP_REASON)
    import torch_models
    model, example = torch_models.gpt2(layers=2)
    # eps=1e-5: the attention key bias's gradient is zero in exact
    # arithmetic, and Adam would amplify its rounding noise.
    adamw = rtx.AdamW(lr=1e-2, eps=1e-5)
    single = rtx.compile(model, example, optimizer=adamw)
    by_class = rtx.compile(model, example, group=init("cpu", 2, env={}), parallel=ParallelConfig(dp=2),
                           sharding=ShardingConfig("fsdp", auto_wrap={"Block"}), optimizer=adamw)
    units = set(re.findall(r'rtx.state = "flat\d+:([^:"]+):param"', by_class.train_ir))
    assert units == {"root", "transformer.h.0", "transformer.h.1"}, units
    assert_trains_as(single, by_class, 1e-4)
    # 12,704 elements per block: 5,000 wraps each block's MLP (8,320) on its
    # own; the rest of each block (4,384) goes up to the blocks' list
    # (transformer.h: 8,768, a unit), and the embeddings and final norm to
    # the root, as FSDP's size-based policy wraps modules bottom up.
    by_size = rtx.compile(model, example, group=init("cpu", 2, env={}), parallel=ParallelConfig(dp=2),
                          sharding=ShardingConfig("fsdp", auto_wrap=5000), optimizer=adamw)
    units = set(re.findall(r'rtx.state = "flat\d+:([^:"]+):param"', by_size.train_ir))
    assert units == {"root", "transformer.h", "transformer.h.0.mlp", "transformer.h.1.mlp"}, units
    # A fresh reference: train() continues a program's run.
    single = rtx.compile(model, example, optimizer=adamw)
    assert_trains_as(single, by_size, 1e-4)
    with pytest.raises(ConfigError, match="has no module of those classes; its classes are .*Block"):
        rtx.compile(model, example, group=init("cpu", 2, env={}), parallel=ParallelConfig(dp=2),
                    sharding=ShardingConfig("fsdp", auto_wrap={"Blok"}))
    with pytest.raises(ConfigError, match="only a PyTorch nn.Module has"):
        rtx.compile(models.mlp(), group=init("cpu", 2, env={}), parallel=ParallelConfig(dp=2),
                    sharding=ShardingConfig("fsdp", auto_wrap={"Block"}))


def test_hsdp_shards_within_groups_and_replicates_across():
    """HSDP: 4 data ranks in 2 groups of 2; the state is sharded over the
    group (dp) and the shards' gradients all-reduced across the groups
    (dp_replicate); it trains as one device."""
    single = rtx.compile(models.mlp(), optimizer=rtx.AdamW(lr=1e-2))
    many = rtx.compile(models.mlp(), group=init("cpu", 4, env={}), parallel=ParallelConfig(dp=4),
                       sharding=ShardingConfig("hsdp", shard_group=2), optimizer=rtx.AdamW(lr=1e-2))
    assert 'rtx.mesh @mesh_dp_replicate2_dp2 ["dp_replicate"=2, "dp"=2]' in many.train_ir
    assert re.search(r'rtx.reduce_scatter .* \["dp"\]', many.train_ir)
    assert re.search(r'rtx.all_reduce .* \["dp_replicate"\]', many.train_ir)
    assert_trains_as(single, many, 1e-4)
