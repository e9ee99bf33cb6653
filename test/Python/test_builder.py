"""The builder and the reference models, without PyTorch: the IR it writes
parses, runs, trains, and computes what NumPy computes."""
import math
import subprocess
import sys

import numpy as np
import pytest

from rtx import driver, models
from rtx.builder import BuildError, Module, normal, zeros
from util import ROOT, rel_err, run_text, save_arrays

MODELS = {
    "gpt2": lambda: models.gpt2(models.GPTConfig(layers=2)),
    "llama": lambda: models.llama_block(),
    "vit": lambda: models.vit(),
    "vit-2-layers-no-square": lambda: models.vit(models.ViTConfig(image=6, patch=3, layers=2, heads=4, classes=7)),
    "mlp": lambda: models.mlp(),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_verifies_and_runs(name, tmp_path):
    text = MODELS[name]().text()
    assert driver.opt(text, []).count("func.func") == 1
    result = run_text(text, tmp_path, random=True)
    loss = float(result.results[0].value)
    assert result.results[0].type == "tensor<f32>" and math.isfinite(loss) and loss > 0


@pytest.mark.parametrize("name", ["vit", "mlp"])
def test_model_trains(name, tmp_path):
    passes = driver.training_passes("kind=adamw lr=0.01", 1)
    result = run_text(MODELS[name]().text(), tmp_path, passes, random=True, steps=15)
    assert len(result.losses) == 15
    assert result.losses[-1] < 0.5 * result.losses[0], result.losses


def test_examples_are_up_to_date():
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "generate.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_vit_parameter_names_follow_timm():
    text = models.vit().text()
    for name in ("patch_embed.proj.weight", "cls_token", "pos_embed", "blocks.0.norm1.weight",
                 "blocks.0.attn.qkv.weight", "blocks.0.attn.proj.bias", "blocks.0.mlp.fc1.weight",
                 "blocks.0.mlp.fc2.bias", "norm.bias", "head.weight"):
        assert f'rtx.param "{name}"' in text


def test_vit_rejects_partial_patches():
    with pytest.raises(ValueError, match="not a multiple of the patch size"):
        models.vit(models.ViTConfig(image=7, patch=4))


def test_dense_constants_and_masks_compute_like_numpy(tmp_path):
    m = Module()
    f = m.function("f")
    x = f.input("x", [2, 3], "f32")
    table = [1.5, -2.0, 0.25, 3.0, float("-inf"), 7.0]
    c = f.dense(table, [2, 3])
    mask = f.dense([True, False, True], [1, 3], "i1")
    filled = f.masked_fill(x, f.broadcast(mask, [2, 3], [0, 1]), float("-inf"))
    y = f.add(f.softmax(filled, dim=1), f.maximum(c, f.constant(0.0, [2, 3])))
    f.ret(y)
    xv = np.arange(6, dtype=np.float32).reshape(2, 3) / 5
    result = run_text(m.text(), tmp_path, inputs=save_arrays(tmp_path / "in", {"x": xv}))
    expected = np.maximum(np.array(table, dtype=np.float32).reshape(2, 3), 0) + np.array([[0, 1, 0], [0, 1, 0]])
    assert rel_err(result.results[0].value, expected) < 1e-6


def test_dense_splat_is_one_literal():
    f = Module().function("f")
    f.dense([2.0] * 6, [2, 3])
    assert "dense<2.0>" in f.text()


def test_batch_matmul_and_pad_compute_like_numpy(tmp_path):
    m = Module()
    f = m.function("f")
    a = f.input("a", [2, 3, 4, 5], "f32")
    b = f.input("b", [2, 3, 6, 5], "f32")
    p = f.pad(f.batch_matmul(a, b, transpose_b=True), [0, 0, 1, 0], [0, 0, 0, 2])
    f.ret(p)
    rng = np.random.default_rng(0)
    av, bv = rng.standard_normal((2, 3, 4, 5), np.float32), rng.standard_normal((2, 3, 6, 5), np.float32)
    result = run_text(m.text(), tmp_path, inputs=save_arrays(tmp_path / "in", {"a": av, "b": bv}))
    expected = np.pad(av @ bv.transpose(0, 1, 3, 2), [(0, 0), (0, 0), (1, 0), (0, 2)])
    assert result.results[0].value.shape == (2, 3, 5, 8)
    assert rel_err(result.results[0].value, expected) < 1e-6


@pytest.mark.parametrize("build, message", [
    (lambda f: f.add(f.input("a", [2, 3], "f32"), f.input("b", [3, 2], "f32")), "rtx.add: operands differ"),
    (lambda f: f.broadcast(f.input("a", [2, 3], "f32"), [4, 3], [0, 1]), "rtx.broadcast: cannot broadcast"),
    (lambda f: f.reduce("mean", f.input("a", [2, 3], "f32"), [2]), "rtx.reduce: dims"),
    (lambda f: f.reduce("prod", f.input("a", [2, 3], "f32"), [0]), "rtx.reduce: unknown kind"),
    (lambda f: f.slice(f.input("a", [2, 3], "f32"), [0, 0], [2, 4]), "rtx.slice: bad ranges"),
    (lambda f: f.batch_matmul(f.input("a", [2, 3, 4], "f32"), f.input("b", [3, 4, 5], "f32")),
     "rtx.batch_matmul: needs equal batch"),
    (lambda f: f.masked_fill(f.input("a", [2, 3], "f32"), f.input("m", [1, 3], "i1"), 0.0),
     "rtx.masked_fill: mask"),
    (lambda f: f.compare("lte", f.input("a", [2], "f32"), f.input("b", [2], "f32")), "unknown predicate"),
    (lambda f: f.dense([1.0, 2.0], [3]), "2 values do not fill shape"),
    (lambda f: [f.input("x", [2], "f32"), f.input("x", [2], "f32")], 'input "x" is declared twice'),
    (lambda f: [f.param("w", [2], zeros()), f.param("w", [2], zeros())], 'parameter "w" is declared twice'),
    (lambda f: f.linear(f.input("x", [2, 3], "f32"), f.param("w", [4, 5], normal(0.0, 1.0))),
     "rtx.linear: weight"),
])
def test_shape_errors_name_the_op(build, message):
    with pytest.raises(BuildError, match=message):
        build(Module().function("f"))


def test_gpt2_qkv_layouts_are_the_same_model_up_to_c_attn_row_order(tmp_path):
    # Megatron's per-head layout of c_attn's features ("heads") is GPT-2's
    # (q | k | v) with the rows of c_attn.weight and c_attn.bias permuted:
    # with permuted parameters both compute the same loss.
    config = dict(layers=2, heads=4, width=32, vocab=37, batch=2)
    rng = np.random.default_rng(0)
    d, heads = config["width"], config["heads"]
    hd = d // heads
    # Row h * 3 * hd + p * hd + i of the per-head layout is row p * d + h * hd + i.
    order = [p * d + h * hd + i for h in range(heads) for p in range(3) for i in range(hd)]
    qkv, per_head = {}, {}
    for layer in range(config["layers"]):
        for kind, shape in (("weight", [3 * d, d]), ("bias", [3 * d])):
            name = f"transformer.h.{layer}.attn.c_attn.{kind}"
            qkv[name] = rng.normal(0.0, 0.2, shape).astype(np.float32)
            per_head[name] = qkv[name][order]
    inputs = save_arrays(tmp_path / "in", {
        "tokens": rng.integers(0, 37, [2, 8]).astype(np.int32),
        "labels": rng.integers(0, 37, [2, 8]).astype(np.int32)})
    losses = []
    for layout, params in (("qkv", qkv), ("heads", per_head)):
        text = models.gpt2(models.GPTConfig(**config, qkv_layout=layout)).text()
        (tmp_path / layout).mkdir()
        # Only c_attn is given; the rest is drawn the same for both layouts.
        result = run_text(text, tmp_path / layout, inputs=inputs, params_partial=True,
                          params=save_arrays(tmp_path / layout / "params", params))
        losses.append(float(result.results[0].value))
    assert losses[0] > 0 and abs(losses[0] - losses[1]) <= 1e-5 * losses[0], losses
    # A wrong order is a different model: the test can fail.
    text = models.gpt2(models.GPTConfig(**config, qkv_layout="heads")).text()
    (tmp_path / "wrong").mkdir()
    result = run_text(text, tmp_path / "wrong", inputs=inputs, params_partial=True,
                      params=save_arrays(tmp_path / "wrong" / "params", qkv))
    assert abs(float(result.results[0].value) - losses[0]) > 1e-4 * losses[0]
