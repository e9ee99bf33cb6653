"""ParallelConfig(pp=...): pipelined training steps (rtx-pipeline) equal the
single-device step on the whole batch, in rtx-run and as native programs in
real processes; bad pipeline options are ConfigErrors."""
import numpy as np
import pytest

import rtx
from rtx import models
from rtx.config import ConfigError, ParallelConfig, ShardingConfig, init
from util import random_batch, rel_err


def _assert_same(got, expected, tolerance=1e-5):
    np.testing.assert_allclose(got.losses, expected.losses, rtol=tolerance)
    assert set(got.params) == set(expected.params)
    for name, value in expected.params.items():
        assert rel_err(got.params[name], value) <= tolerance, name


def _gpt2():
    return models.gpt2(models.GPTConfig(layers=2, batch=2))


@pytest.mark.parametrize("schedule, virtual", [("gpipe", 1), ("1f1b", 1), ("zb-h1", 1), ("interleaved", 2)])
def test_pipeline_equals_single_device(schedule, virtual):
    """GPT-2 (wte tied between the first and the last stage) on pp=2 with 2
    micro-batches: 3 AdamW steps equal one device's steps on the same 2
    micro-batches (gradient accumulation, itself equal to the whole batch)."""
    optimizer = rtx.AdamW(lr=1e-2, eps=1e-5)
    reference = rtx.compile(_gpt2(), parallel=ParallelConfig(micro_batch=2), optimizer=optimizer)
    parallel = ParallelConfig(pp=2, micro_batch=2, schedule=schedule, virtual_stages=virtual)
    program = rtx.compile(_gpt2(), group=init("cpu", 2, env={}), parallel=parallel, optimizer=optimizer)
    # Really pipelined: one function per pipeline rank, sending to the other.
    assert program.train_ir.count("rtx.pipeline_rank = ") == 2
    assert "rtx.send_start" in program.train_ir
    batch = random_batch(program)
    _assert_same(program.train(batch, steps=3), reference.train(batch, steps=3), tolerance=1e-4)


def test_pipeline_with_data_parallelism():
    optimizer = rtx.AdamW(lr=1e-2, eps=1e-5)
    reference = rtx.compile(_gpt2(), parallel=ParallelConfig(micro_batch=2), optimizer=optimizer)
    program = rtx.compile(_gpt2(), group=init("cpu", 4, env={}), parallel=ParallelConfig(dp=2, pp=2, micro_batch=2),
                          optimizer=optimizer)
    assert "rtx.mesh @mesh_dp2_pp2" in program.train_ir
    batch = random_batch(program)
    _assert_same(program.train(batch, steps=3), reference.train(batch, steps=3), tolerance=1e-4)


def test_pipeline_with_sharded_state():
    """ZeRO-3 on dp=2 x pp=2: each stage's state is flat and sharded (wte,
    tied between the stages, on both); the results read back by member."""
    optimizer = rtx.AdamW(lr=1e-2, eps=1e-5)
    reference = rtx.compile(_gpt2(), parallel=ParallelConfig(micro_batch=2), optimizer=optimizer)
    program = rtx.compile(_gpt2(), group=init("cpu", 4, env={}), parallel=ParallelConfig(dp=2, pp=2, micro_batch=2),
                          sharding=ShardingConfig("zero3"), optimizer=optimizer)
    assert program.train_ir.count("rtx.pipeline_rank = ") == 2
    assert program.train_ir.count("rtx.reduce_scatter") >= 2
    batch = random_batch(program)
    _assert_same(program.train(batch, steps=3), reference.train(batch, steps=3), tolerance=1e-4)


@pytest.mark.parametrize("recompute", ["full", "selective"])
def test_recompute_gives_the_same_training(recompute):
    """Activation recompute, alone and with a pipeline: the losses and
    parameters are those without it."""
    optimizer = rtx.AdamW(lr=1e-2, eps=1e-5)
    reference = rtx.compile(_gpt2(), parallel=ParallelConfig(micro_batch=2), optimizer=optimizer)
    alone = rtx.compile(_gpt2(), parallel=ParallelConfig(micro_batch=2, recompute=recompute), optimizer=optimizer)
    # The recomputed ops are there (reshapes and transposes for both).
    assert alone.train_ir.count("rtx.reshape") > reference.train_ir.count("rtx.reshape")
    piped = rtx.compile(_gpt2(), group=init("cpu", 2, env={}),
                        parallel=ParallelConfig(pp=2, micro_batch=2, recompute=recompute), optimizer=optimizer)
    batch = random_batch(reference)
    expected = reference.train(batch, steps=3)
    _assert_same(alone.train(batch, steps=3), expected)
    _assert_same(piped.train(batch, steps=3), expected, tolerance=1e-4)


@pytest.mark.parametrize("device, emulate", [("cpu", False), ("cuda", True)])
def test_native_pipelined_program_trains_as_rtx_run(tmp_path, device, emulate):
    """pp=2 as two processes under rtx-launch, CPU and CUDA (built against the
    host emulation of the GPU runtime here): rtx-run's losses and
    parameters."""
    parallel, optimizer = ParallelConfig(pp=2, micro_batch=2), rtx.AdamW(lr=1e-2)
    reference = rtx.compile(models.mlp(), group=init("cpu", 2, env={}), parallel=parallel, optimizer=optimizer)
    program = rtx.compile(models.mlp(), group=init(device, 2, env={}), parallel=parallel, optimizer=optimizer)
    native = program.build(tmp_path, emulate=emulate)
    batch = random_batch(program)
    _assert_same(native.train(batch, steps=3), reference.train(batch, steps=3))


@pytest.mark.parametrize("kwargs, message", [
    (dict(schedule="zigzag", pp=2), "parallel.schedule must be one of gpipe, 1f1b, interleaved, zb-h1"),
    (dict(schedule="zb-h1"), "apply to pipelines: set pp > 1"),
    (dict(virtual_stages=2), "apply to pipelines: set pp > 1"),
    (dict(pp=2, micro_batch=3, schedule="interleaved", virtual_stages=2), "needs micro_batch (3) divisible by pp (2)"),
    (dict(recompute="some"), "parallel.recompute must be one of none, full, selective"),
    (dict(pp=2, virtual_stages=0), "parallel.virtual_stages"),
])
def test_bad_pipeline_options(kwargs, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace(">", ">")):
        ParallelConfig(**kwargs)


def test_too_few_micro_batches_for_1f1b():
    """The pass's own message reaches the user."""
    with pytest.raises(Exception, match="1f1b needs at least as many micro-batches as pipeline ranks"):
        rtx.compile(models.mlp(), group=init("cpu", 2, env={}), parallel=ParallelConfig(pp=2, micro_batch=1))
