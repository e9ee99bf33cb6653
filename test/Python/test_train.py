"""Single-device training through rtx.compile / Program.train, with builder
models (no PyTorch)."""
import numpy as np
import pytest

import rtx
from rtx import models
from util import rel_err


def mlp_batch(rows: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((rows, 32)).astype(np.float32),
            "labels": rng.integers(0, 10, rows).astype(np.int32)}


def test_training_lowers_the_loss_and_carries_parameters_over():
    program = rtx.compile(models.mlp(), group=rtx.init("cpu", 1, env={}), optimizer=rtx.AdamW(lr=1e-2))
    assert program.params is None                # the IR's initializers
    batch = mlp_batch(16)
    first = program.train(batch, steps=10)
    assert len(first.losses) == 10 and first.losses[-1] < 0.5 * first.losses[0]
    assert set(first.params) == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
    second = program.train(batch, steps=1)
    assert second.losses[0] < first.losses[-1]   # continues from the trained parameters


def test_micro_batches_equal_one_large_batch():
    """micro_batch=2 on a model of 8 rows is the same step as one batch of 16."""
    batch = mlp_batch(16)
    optimizer = rtx.AdamW(lr=1e-2, weight_decay=0.0)
    accumulated = rtx.compile(models.mlp(batch=8), parallel=rtx.ParallelConfig(micro_batch=2), optimizer=optimizer)
    assert [s.shape for s in accumulated.inputs] == [(16, 32), (16,)]
    assert [s.shape for s in accumulated.model_inputs] == [(8, 32), (8,)]
    large = rtx.compile(models.mlp(batch=16), optimizer=optimizer)
    a, b = accumulated.train(batch, steps=5), large.train(batch, steps=5)
    assert rel_err(a.losses, b.losses) < 1e-5
    for name in b.params:
        assert rel_err(a.params[name], b.params[name]) < 1e-4, name


def test_gradients_at_the_current_parameters():
    program = rtx.compile(models.mlp(), optimizer=rtx.SGD(lr=0.1))
    loss, grads = program.gradients(mlp_batch(16))
    assert loss > 0 and grads["fc2.weight"].shape == (10, 64)


def test_batch_is_checked():
    program = rtx.compile(models.mlp(), optimizer=rtx.SGD())
    with pytest.raises(rtx.ConfigError, match=r"input 'x' has shape \[8, 32\]; the program expects \[16, 32\]"):
        program.train(mlp_batch(8))
    with pytest.raises(rtx.ConfigError, match="the batch lacks input 'labels'"):
        program.train({"x": mlp_batch(16)["x"]})
    with pytest.raises(rtx.ConfigError, match="no input.* tokens"):
        program.train({**mlp_batch(16), "tokens": np.zeros(3)})
    with pytest.raises(rtx.ConfigError, match="input 'labels' has dtype float64"):
        program.train({"x": mlp_batch(16)["x"], "labels": np.zeros(16)})
    with pytest.raises(rtx.ConfigError, match="steps must be a positive integer"):
        program.train(mlp_batch(16), steps=0)


def test_integer_inputs_are_converted_and_positional_batches_work():
    program = rtx.compile(models.mlp(), optimizer=rtx.SGD())
    batch = mlp_batch(16)
    result = program.train([batch["x"], batch["labels"].astype(np.int64)], steps=2)
    assert len(result.losses) == 2


def test_program_saves_its_ir(tmp_path):
    program = rtx.compile(models.gpt2(), optimizer=rtx.AdamW())
    program.save(tmp_path)
    assert "rtx.adamw_update" in (tmp_path / "train.mlir").read_text()
    assert (tmp_path / "model.mlir").read_text() == models.gpt2().text()


def test_calls_continue_one_run():
    """Two train calls of 3 AdamW steps equal one of 6 (rtx-run --state
    carries the moments and the step count); setting params starts afresh."""
    batch = mlp_batch(16)
    program = rtx.compile(models.mlp(), optimizer=rtx.AdamW(lr=1e-2))
    whole = rtx.compile(models.mlp(), optimizer=rtx.AdamW(lr=1e-2))
    first, second = program.train(batch, steps=3), program.train(batch, steps=3)
    six = whole.train(batch, steps=6)
    np.testing.assert_allclose(first.losses + second.losses, six.losses, rtol=1e-6)
    for name, value in six.params.items():
        assert rel_err(second.params[name], value) <= 1e-6, name
    fresh = rtx.compile(models.mlp(), optimizer=rtx.AdamW(lr=1e-2))
    fresh.params = {name: value.copy() for name, value in second.params.items()}
    program.params = {name: value.copy() for name, value in second.params.items()}
    np.testing.assert_allclose(program.train(batch, steps=2).losses, fresh.train(batch, steps=2).losses,
                               rtol=1e-6)
