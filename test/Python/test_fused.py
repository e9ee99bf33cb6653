"""The fusion passes (rtx-fuse-residual-norm, rtx-fuse-cross-entropy,
rtx-fuse-adamw) on GPT-2 train steps: every fusion happens (the fused ops are
in the IR, the ops they replace are gone), and rtx-run's results after a few
steps are bit for bit those of the unfused program, on one device (f32 with
gradient clipping, bf16 mixed precision) and on partitioned per-rank
programs (dp=2; tp=2, whose vocabulary-parallel loss stays unfused; a
pipeline, pp=2; gradient accumulation with overlapped all-reduces)."""
import re
from pathlib import Path

import numpy as np
import pytest

from rtx import driver, models

FUSIONS = ["-rtx-fuse-residual-norm", "-rtx-fuse-cross-entropy", "-rtx-fuse-adamw"]


def _gpt2(**overrides) -> str:
    return models.gpt2(models.GPTConfig(layers=2, batch=2, **overrides)).text()


def _run_both(step: str, tmp_path: Path, ranks: int = 1, rows: int = 2):
    """rtx-run on the unfused step and on the fused one (3 steps, the same
    random inputs and initial parameters); returns both results and the
    fused text."""
    unfused, fused = tmp_path / "unfused.mlir", tmp_path / "fused.mlir"
    unfused.write_text(step)
    fused_text = driver.opt(step, FUSIONS, output=fused)
    # Inputs written once (rtx-run --random draws them per program).
    rng = np.random.default_rng(3)
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for name in ("tokens", "labels"):
        np.save(inputs / f"{name}.npy", rng.integers(0, 37, (rows, 8)).astype(np.int32))
    runs = [driver.run(path, inputs=inputs, steps=3, ranks=ranks) for path in (unfused, fused)]
    return runs[0], runs[1], fused_text


def _assert_bitwise(expected, got):
    assert len(expected.results) == len(got.results)
    for a, b in zip(expected.results, got.results):
        assert a.value.dtype == b.value.dtype
        assert np.array_equal(np.asarray(a.value), np.asarray(b.value), equal_nan=True), a.state
    assert expected.losses == got.losses


def _counts(text: str, ops):
    return {op: len(re.findall(rf"rtx\.{op}\b", text)) for op in ops}


@pytest.mark.parametrize("optimizer", ["kind=adamw", "kind=adamw clip-norm=1.0"])
def test_single_device_step_is_unchanged_bit_for_bit(optimizer, tmp_path):
    step = driver.opt(_gpt2(), ["-rtx-autodiff", f"-rtx-optimizer={optimizer}"])
    unfused, fused, text = _run_both(step, tmp_path)
    # 2 layers x 2 norms + the final one, each after a residual add (the
    # first after the embeddings' sum); one loss; 28 parameters in one update.
    assert _counts(text, ["add_layernorm", "layernorm", "cross_entropy_with_grad", "cross_entropy",
                          "cross_entropy_grad", "multi_adamw_update", "adamw_update"]) == {
        "add_layernorm": 5, "layernorm": 0, "cross_entropy_with_grad": 1, "cross_entropy": 0,
        "cross_entropy_grad": 0, "multi_adamw_update": 1, "adamw_update": 0}
    assert _counts(text, ["sum_squares"])["sum_squares"] == (1 if "clip-norm" in optimizer else 0)
    _assert_bitwise(unfused, fused)
    assert fused.losses[-1] < fused.losses[0]


def test_mixed_precision_step_is_unchanged_bit_for_bit(tmp_path):
    step = driver.opt(_gpt2(dtype="bf16"),
                      ["-rtx-autodiff", "-rtx-optimizer=kind=adamw mixed-precision=true clip-norm=1.0"])
    unfused, fused, text = _run_both(step, tmp_path)
    assert "rtx.add_layernorm" in text and "tensor<2x8x32xbf16>" in text
    assert text.count("rtx.multi_adamw_update") >= 1 and "rtx.adamw_update " not in text
    _assert_bitwise(unfused, fused)


@pytest.mark.parametrize("mesh, fused_loss", [("dp:2", True), ("tp:2", False)])
def test_partitioned_step_is_unchanged_bit_for_bit(mesh, fused_loss, tmp_path):
    step = driver.opt(_gpt2(), [f"-rtx-distribute=mesh={mesh} optimizer=adamw"])
    unfused, fused, text = _run_both(step, tmp_path, ranks=2)
    assert _counts(text, ["add_layernorm"])["add_layernorm"] == 5
    assert text.count("rtx.all_reduce") == step.count("rtx.all_reduce")
    assert ("rtx.cross_entropy_with_grad" in text) == fused_loss
    if not fused_loss:  # the vocabulary-parallel loss stays as it is
        assert "rtx.vocab_cross_entropy_grad" in text
    _assert_bitwise(unfused, fused)


@pytest.mark.parametrize("options", ["mesh=pp:2 optimizer=adamw",
                                     "mesh=dp:2 optimizer=adamw micro-batches=2 overlap"])
def test_pipelined_and_accumulated_steps_are_unchanged_bit_for_bit(options, tmp_path):
    """A pipeline (one function per stage, sends and receives) and gradient
    accumulation with overlapped all-reduces: the local ops fuse (a stage's
    first norm, fed by a receive, stays), the results do not change."""
    step = driver.opt(_gpt2(), [f"-rtx-distribute={options}"])
    unfused, fused, text = _run_both(step, tmp_path, ranks=2, rows=4)
    counts = _counts(text, ["add_layernorm", "cross_entropy_with_grad", "multi_adamw_update"])
    assert all(count >= 1 for count in counts.values()), counts
    assert _counts(text, ["adamw_update"])["adamw_update"] == 0
    _assert_bitwise(unfused, fused)
