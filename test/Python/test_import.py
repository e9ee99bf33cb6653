"""The PyTorch importer: every example imports, and rtx-run computes
PyTorch's loss (fp32 relative error <= 1e-5) and, after rtx-autodiff,
autograd's gradient of every parameter (<= 1e-4), from PyTorch's weights
(--params) and inputs (--inputs).

The file runs under PyTorch 1.13 (Debian's /usr/bin/python3: the
TorchFunctionMode tracer) and PyTorch 2 (.venv/bin/python: torch.export);
where the two name an op differently (torch.cumsum, aten.cumsum.default),
`named` picks the capture path's name."""
import inspect

import pytest

from util import TORCH_SKIP_REASON, rel_err, run_text

torch = pytest.importorskip("torch", reason=TORCH_SKIP_REASON)

import numpy as np  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torch_models  # noqa: E402
from rtx import driver, models  # noqa: E402
from rtx.importer import import_module  # noqa: E402
from rtx.torch_export import uses_export  # noqa: E402

EXPORT = uses_export()          # PyTorch 2: import_module captures with torch.export


def named(traced: str, exported: str) -> str:
    """The op's name as the capture path in use records it."""
    return exported if EXPORT else traced

LOSS_TOL, GRAD_TOL = 1e-5, 1e-4

# name -> (factory, keyword arguments); small, with odd sizes where they are allowed.
EXAMPLES = {
    "gpt2": (torch_models.gpt2, {}),
    "gpt2-3-layers-odd": (torch_models.gpt2, dict(layers=3, heads=3, width=24, vocab=53, seq=7, batch=3)),
    "llama": (torch_models.llama, {}),
    "llama-2-layers-mqa": (torch_models.llama, dict(layers=2, heads=4, kv_heads=1, width=32, hidden=48, seq=6)),
    "vit": (torch_models.vit, {}),
    "vit-2-layers": (torch_models.vit, dict(layers=2, image=6, patch=3, heads=4, classes=7, batch=3)),
    "mlp": (torch_models.mlp, {}),
}


def torch_loss(model, inputs):
    out = model(*inputs)
    return out[1] if isinstance(out, tuple) else out


def import_and_check(model, inputs, tmp_path, **import_kwargs):
    """Imports, runs forward and backward in rtx, and returns
    (loss error, {param: gradient error}, imported)."""
    imported = import_module(model, inputs, **import_kwargs)
    params, data = imported.save_params(tmp_path / "params"), imported.save_inputs(tmp_path / "inputs")
    forward = run_text(imported.text(), tmp_path, params=params, inputs=data)
    backward = run_text(imported.text(), tmp_path, ["-rtx-autodiff"], params=params, inputs=data)
    model.zero_grad()
    with torch.enable_grad():
        loss = import_kwargs["loss"](model(*inputs)) if "loss" in import_kwargs else torch_loss(model, inputs)
        loss.backward()
    loss_error = rel_err(forward.results[0].value, loss.detach().numpy())
    grads = backward.grads()
    assert set(grads) == set(imported.params)
    grad_errors = {n: rel_err(grads[n], p.grad.numpy()) for n, p in imported.params.items()}
    return loss_error, grad_errors, imported


@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "op-by-op"])
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_matches_pytorch(name, fuse, tmp_path):
    factory, kwargs = EXAMPLES[name]
    model, inputs = factory(**kwargs)
    loss_error, grad_errors, imported = import_and_check(model, inputs, tmp_path, fuse=fuse)
    assert loss_error <= LOSS_TOL, loss_error
    worst = max(grad_errors, key=grad_errors.get)
    assert grad_errors[worst] <= GRAD_TOL, (worst, grad_errors[worst])
    # Every trainable parameter, named by its module path, tied weights once.
    assert set(imported.params) == {n for n, _ in model.named_parameters()}
    assert imported.returns_loss


def test_gpt2_names_inputs_and_parameters_like_nanogpt():
    model, inputs = torch_models.gpt2()
    imported = import_module(model, inputs)
    assert list(imported.inputs) == ["idx", "targets"]
    assert "transformer.h.0.attn.c_attn.weight" in imported.params
    assert "lm_head.weight" not in imported.params          # tied to transformer.wte.weight
    text = imported.text()
    assert 'rtx.param "transformer.wte.weight"' in text and "rtx.cross_entropy" in text
    assert "causal" in text                                             # the mask buffer, recognised
    text = import_module(model, inputs, fuse=False).text()
    assert "rtx.masked_fill" in text and "0xFFF0000000000000" in text   # the mask, as a constant


@pytest.mark.parametrize("name, expected", [
    ("gpt2", "rtx.attention %v{} causal scale 0.25 : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>"),
    ("llama", "causal scale 0.35355339059327373 : tensor<2x4x8x8xf32>, tensor<2x2x8x8xf32>"),  # shared kv heads
    ("vit", "rtx.attention %v{} scale 0.25 : tensor<2x2x5x16xf32>"),                            # bidirectional
])
def test_attention_is_recognised(name, expected):
    model, inputs = torch_models.EXAMPLES[name]()
    text = import_module(model, inputs).text()
    lines = [line for line in text.splitlines() if "= rtx.attention" in line]
    assert len(lines) == (2 if name == "gpt2" else 1)
    head, _, tail = expected.partition("{}")
    assert any(head in line and tail in line for line in lines), lines
    assert "rtx.softmax" not in text and "rtx.batch_matmul" not in text


def test_swiglu_is_recognised_in_the_llama_block():
    model, inputs = torch_models.EXAMPLES["llama"]()
    text = import_module(model, inputs).text()
    # w2(silu(w1(x)) * w3(x)): one fused op, no silu and product left.
    assert len([line for line in text.splitlines() if "= rtx.swiglu" in line]) == 1
    assert "rtx.silu" not in text
    unfused = import_module(model, inputs, fuse=False).text()
    assert "rtx.swiglu" not in unfused and "rtx.silu" in unfused


class SiluTwice(torch.nn.Module):
    """silu(g) * u where the silu is also returned: it must stay op by op."""

    def forward(self, g, u):
        s = torch.nn.functional.silu(g)
        return s * u, s


def test_swiglu_is_not_fused_when_the_silu_is_read_elsewhere():
    g, u = torch.randn(3, 4), torch.randn(3, 4)
    text = import_module(SiluTwice(), (g, u)).text()
    assert "rtx.swiglu" not in text and "rtx.silu" in text


class Probe(torch.nn.Module):
    """Attention that must stay op by op: a mask that is not causal, or
    probabilities that are also returned."""

    def __init__(self, mask, expose):
        super().__init__()
        self.qkv = torch.nn.Linear(8, 24)
        self.register_buffer("mask", mask)
        self.expose = expose

    def forward(self, x):
        q, k, v = self.qkv(x).view(2, 4, 3, 2, 4).permute(2, 0, 3, 1, 4).unbind(0)
        att = (q @ k.transpose(-2, -1)).masked_fill(self.mask, float("-inf")).softmax(dim=-1)
        y = att @ v
        return (y * y).mean() + (att.sum() if self.expose else 0)


@pytest.mark.parametrize("mask, expose", [
    (torch.ones(4, 4).triu(2).bool(), False),      # not exactly causal
    (torch.ones(4, 4).triu(1).bool(), True),       # causal, but the probabilities are used too
])
def test_attention_that_does_not_match_stays_op_by_op(mask, expose, tmp_path):
    loss_error, grad_errors, imported = import_and_check(Probe(mask, expose), (torch.randn(2, 4, 8),), tmp_path)
    assert "rtx.attention" not in imported.text() and "rtx.softmax" in imported.text()
    assert loss_error <= LOSS_TOL and max(grad_errors.values()) <= GRAD_TOL


# --- the builder twins compute the same functions --------------------------------------------

def _builder_twin(name, model, inputs):
    if name == "gpt2":
        idx, targets = inputs
        return models.gpt2(model.config.builder(batch=idx.shape[0])), {"tokens": idx, "labels": targets}
    if name == "llama":
        (x,) = inputs
        return models.llama_block(torch_models.LlamaConfig().builder(batch=x.shape[0], seq=x.shape[1])), {"x": x}
    if name == "vit":
        images, labels = inputs
        return models.vit(torch_models.ViTConfig().builder(batch=images.shape[0])), \
            {"images": images, "labels": labels}
    x, labels = inputs
    return models.mlp(batch=x.shape[0]), {"x": x, "labels": labels}


@pytest.mark.parametrize("name", ["gpt2", "llama", "vit", "mlp"])
def test_builder_twin_computes_pytorchs_loss(name, tmp_path):
    model, inputs = torch_models.EXAMPLES[name]()
    twin, named_inputs = _builder_twin(name, model, inputs)
    imported = import_module(model, inputs)
    params = imported.save_params(tmp_path / "params")
    arrays = {k: (v.numpy().astype(np.int32) if v.dtype == torch.int64 else v.numpy())
              for k, v in named_inputs.items()}
    data = tmp_path / "inputs"
    data.mkdir()
    for k, v in arrays.items():
        np.save(data / f"{k}.npy", v)
    declared = {line.split('"')[1] for line in twin.text().splitlines() if "rtx.param" in line}
    assert declared == set(imported.params)
    result = run_text(twin.text(), tmp_path, params=params, inputs=data)
    assert rel_err(result.results[0].value, torch_loss(model, inputs).detach().numpy()) <= LOSS_TOL


# --- training equals PyTorch's training ----------------------------------------------------------

def torch_steps(model, batches, steps, optimizer):
    """Losses of `steps` optimizer steps; each step averages over `batches`
    (gradient accumulation)."""
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        total = 0.0
        for batch in batches:
            loss = torch_loss(model, batch) / len(batches)
            loss.backward()
            total += loss.item()
        optimizer.step()
        losses.append(total)
    return losses


# GPT-2 with biases is trained with SGD here: the gradient of the key bias is
# zero up to rounding (softmax ignores a per-row constant), and AdamW scales
# that rounding noise to full-size steps, so no two implementations agree on it.
@pytest.mark.parametrize("name, kwargs, micro_batch, kind", [
    ("mlp", {}, 1, "adamw"),
    ("gpt2", dict(bias=False), 1, "adamw"),
    ("gpt2", dict(bias=False), 2, "adamw"),
    ("gpt2", {}, 2, "sgd"),
    ("llama", {}, 2, "adamw"),
    ("vit", {}, 1, "sgd"),
])
def test_training_matches_pytorch(name, kwargs, micro_batch, kind):
    import rtx
    factory = torch_models.EXAMPLES[name]
    model, micro = factory(**kwargs)
    micro_batches = [micro] + [factory(**kwargs, seed=s)[1] for s in range(1, micro_batch)]
    if kind == "adamw":
        ours, theirs = rtx.AdamW(lr=1e-2, weight_decay=0.1), torch.optim.AdamW(model.parameters(), lr=1e-2,
                                                                               weight_decay=0.1)
    else:
        ours, theirs = rtx.SGD(lr=0.5, weight_decay=0.01), torch.optim.SGD(model.parameters(), lr=0.5,
                                                                           weight_decay=0.01)
    program = rtx.compile(model, micro, parallel=rtx.ParallelConfig(micro_batch=micro_batch), optimizer=ours)
    names = [s.name for s in program.model_inputs]
    batch = {n: torch.cat([b[i] for b in micro_batches]) for i, n in enumerate(names)}
    result = program.train(batch, steps=4)
    expected = torch_steps(model, micro_batches, 4, theirs)
    assert rel_err(result.losses, expected) <= GRAD_TOL, (result.losses, expected)
    for n, p in model.named_parameters():
        assert rel_err(result.params[n], p.detach().numpy()) <= GRAD_TOL, n


# --- what cannot be imported says so ----------------------------------------------------------------

class Inner(torch.nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=1)


class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)
        self.body = torch.nn.ModuleDict({"inner": Inner()})

    def forward(self, x):
        return self.body["inner"](self.proj(x)).mean()


def test_unsupported_op_names_the_op_and_the_module_path():
    with pytest.raises(Exception) as info:
        import_module(Outer(), (torch.randn(2, 4),))
    assert type(info.value).__name__ == "UnsupportedOpError"
    cumsum = named("torch.cumsum", "aten.cumsum.default")
    assert str(info.value).startswith(f"unsupported op {cumsum} in module 'body.inner' (Inner)")
    assert info.value.op == cumsum and info.value.module_path == "body.inner"


class Lambda(torch.nn.Module):
    def __init__(self, fn, *params):
        super().__init__()
        self.fn = fn
        self.weight = torch.nn.Parameter(torch.randn(*params) if params else torch.randn(4))

    def forward(self, x):
        return self.fn(self, x)


@pytest.mark.parametrize("fn, op, detail", [
    (lambda m, x: (x * m.weight)[:, torch.tensor([0, 2])].sum(), "torch.Tensor.__getitem__", "advanced indexing"),
    (lambda m, x: (x * m.weight).sum() if (x * m.weight).sum() > 0 else x.sum(),
     named("torch.Tensor.__bool__", "aten.item.default"), "data-dependent control flow"),
    (lambda m, x: (x * m.weight).pow(2.5).sum(), named("torch.Tensor.pow", "torch.pow"), "exponent 2.5"),
    (lambda m, x: F.cross_entropy(x * m.weight, torch.tensor([1, 2]), reduction="sum"),
     "torch.nn.functional.cross_entropy", "reduction='sum'"),
    (lambda m, x: F.embedding(torch.tensor([0, 1]), m.weight.view(2, 2), padding_idx=0).sum(),
     "torch.nn.functional.embedding", "padding_idx=0"),
    (lambda m, x: F.layer_norm(x * m.weight, (2, 4)).sum(), "torch.nn.functional.layer_norm", "normalized_shape"),
    (lambda m, x: (x * m.weight).detach().sum(), named("torch.Tensor.detach", "aten.detach.default"),
     "rtx has no mapping"),
])
def test_unsupported_forms_are_named(fn, op, detail):
    with pytest.raises(Exception) as info:
        import_module(Lambda(fn), (torch.randn(2, 4),))
    assert type(info.value).__name__ == "UnsupportedOpError", info.value
    assert info.value.op == op and detail in str(info.value), str(info.value)
    # The user's line that made the call: here, the lambda's line above.
    assert info.value.source.startswith(f"{__file__}:") and f" at {__file__}:" in str(info.value), str(info.value)


class Cumsum(torch.nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=1).sum()


class CallsCumsum(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)
        self.inner = Cumsum()

    def forward(self, x):
        return self.inner(self.proj(x))


def _line_of(function, text):
    """The line number of the first line of `function` that contains `text`."""
    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_unsupported_op_names_the_source_line():
    """The file and line of the module code that made the call (the
    innermost frame outside PyTorch and rtx), from lowering and from
    tracing alike."""
    with pytest.raises(Exception) as info:
        import_module(CallsCumsum(), (torch.randn(2, 4),))
    line = _line_of(Cumsum.forward, "torch.cumsum")
    cumsum = named("torch.cumsum", "aten.cumsum.default")
    assert str(info.value) == (f"unsupported op {cumsum} in module 'inner' (Cumsum) at {__file__}:{line}: "
                               "rtx has no mapping for it")
    assert info.value.source == f"{__file__}:{line}"

    def branches(m, x):
        y = x * m.weight
        if y.sum() > 0:          # data-dependent control flow: refused while tracing
            return y.sum()
        return -y.sum()
    with pytest.raises(Exception, match="data-dependent control flow") as info:
        import_module(Lambda(branches), (torch.randn(2, 4),))
    assert f" at {__file__}:{_line_of(branches, 'if y.sum()')}:" in str(info.value), str(info.value)


# --- strided slicing (RoPE's interleaved pairs) ------------------------------------------------------

class InterleavedRope(torch.nn.Module):
    """Rotary embedding on interleaved pairs, as GPT-J, Meta's original
    Llama and many others write it: features (2i, 2i+1) are rotated by the
    angle of position t and pair i, read with x[..., 0::2] and x[..., 1::2]."""

    def __init__(self, width=12, seq=5):
        super().__init__()
        self.q = torch.nn.Linear(width, width)
        angles = torch.arange(seq)[:, None] * 10000.0 ** (-torch.arange(0, width, 2) / width)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def forward(self, x, target):
        q = self.q(x)                                    # [batch, seq, width]
        even, odd = q[..., 0::2], q[..., 1::2]
        rotated = torch.stack((even * self.cos - odd * self.sin, even * self.sin + odd * self.cos), dim=-1)
        rotated = rotated.flatten(-2)
        # Strides that do not divide the dimension, on another dimension
        # too: rows 1, 4 of 5 and features 2, 5, 8, 11 of 12.
        extra = q[:, 1::3, 2::3].pow(2).mean()
        return F.mse_loss(rotated, target) + extra


def test_strided_slicing_imports_and_matches_pytorch(tmp_path):
    torch.manual_seed(0)
    model = InterleavedRope()
    inputs = (torch.randn(3, 5, 12), torch.randn(3, 5, 12))
    loss_error, grad_errors, imported = import_and_check(model, inputs, tmp_path)
    assert loss_error <= LOSS_TOL, loss_error
    assert max(grad_errors.values()) <= GRAD_TOL, grad_errors
    text = imported.text()
    # x[..., 1::2] of 12 features: [.., 6, 2], index 1, no padding; [1::3] of 5 rows pads one.
    assert "tensor<3x5x12xf32> -> tensor<3x5x6x2xf32>" in text
    assert "[0:3, 0:5, 0:6, 1:2]" in text


def test_inplace_update_of_a_view_is_refused():
    def fn(m, x):
        y = x * m.weight
        y[:, :2].mul_(2.0)
        return y.sum()
    with pytest.raises(Exception, match="in-place update of a view"):
        import_module(Lambda(fn), (torch.randn(2, 4),))


def test_unsupported_op_off_the_loss_path_is_not_an_error(tmp_path):
    def fn(m, x):
        torch.cumsum(x * m.weight, 1)                 # computed, never used
        return (x * m.weight).sum()
    loss_error, grad_errors, imported = import_and_check(Lambda(fn), (torch.randn(2, 4),), tmp_path)
    assert loss_error <= LOSS_TOL and "cumsum" not in imported.text()


# --- options of import_module -------------------------------------------------------------------------

def test_loss_function_and_frozen_parameters(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    model[0].bias.requires_grad_(False)                   # frozen: becomes a constant
    loss_error, grad_errors, imported = import_and_check(
        model, (torch.randn(5, 4),), tmp_path, loss=lambda out: (out ** 2).mean())
    assert loss_error <= LOSS_TOL and max(grad_errors.values()) <= GRAD_TOL
    assert list(imported.params) == ["0.weight", "2.weight", "2.bias"]


def test_model_without_a_scalar_returns_its_tensors():
    model = torch.nn.Linear(4, 3)
    imported = import_module(model, (torch.randn(2, 4),))
    assert not imported.returns_loss and "-> tensor<2x3xf32>" in imported.text()


def test_dropout_follows_the_training_mode():
    model, inputs = torch_models.gpt2(layers=1)
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.1
    assert "rtx.dropout" in import_module(model, inputs).text()
    assert "rtx.dropout" not in import_module(model.eval(), inputs).text()


def test_keyword_inputs():
    model, (idx, targets) = torch_models.gpt2(layers=1)
    imported = import_module(model, {"idx": idx, "targets": targets})
    assert list(imported.inputs) == ["idx", "targets"] and imported.returns_loss
    with pytest.raises(Exception, match="do not match GPT.forward"):
        import_module(model, {"tokens": idx})


# --- many ops, each checked against autograd ------------------------------------------------------------


class Elementwise(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 6)
        self.scale = torch.nn.Parameter(torch.rand(6) + 0.5)
        self.register_buffer("offsets", torch.linspace(-1.0, 1.0, 6))

    def forward(self, x, target):
        h = self.lin(x) + self.offsets                             # [2, 3, 6]
        h = torch.tanh(h) * torch.sigmoid(h) - 0.5 * F.relu(h) + torch.exp(-h.pow(2))
        g = 1.0 / (1.0 + h * h)                                     # __rtruediv__
        h = h * g + (1 - g) * self.scale                            # __rsub__
        h = torch.sqrt(h * h + 1.0) + torch.rsqrt(h * h + 2.0) + torch.log(g + 1.0) - h.square() / 4
        h = torch.where(h > 0.5, h, h.reciprocal().neg() * 0.1)
        h = h.masked_fill(~(h < 1.5), 1.5) + F.silu(h) + F.gelu(h) + F.gelu(h, approximate="tanh")
        h = torch.maximum(h, g) - torch.minimum(h, self.scale)
        m = h.amax(dim=-1, keepdim=True) + h.max(dim=1).values.unsqueeze(1) + torch.max(h, -1, True)[0]
        h = torch.softmax(h - m, dim=-1) + F.log_softmax(h, dim=1).sum(dim=(0, 2), keepdim=True) / 10
        return h.mean() + F.mse_loss(h, target) + h.sum(dtype=torch.float32) / 100


class Shapes(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8, 5) * 0.3)
        self.v = torch.nn.Parameter(torch.randn(5) * 0.3)

    def forward(self, x):                                            # [2, 3, 4]
        s = torch.stack([x, x * self.v[:4]], dim=1)                  # [2, 2, 3, 4]
        a, b = s.chunk(2, dim=1)
        m = torch.cat((a, -b), dim=3).squeeze(1)                     # [2, 3, 8]
        m = m[..., None, 1:5].expand(2, 3, 2, 4).reshape(2, 3, 8)    # getitem with Ellipsis, None
        m = m.permute(2, 0, 1).transpose(0, 2).contiguous()          # [3, 2, 8]
        r = m.repeat(1, 2, 1) * m.repeat_interleave(2, dim=1)        # [3, 4, 8]
        r = F.pad(r, (1, 2)).narrow(2, 1, 8).select(0, 1)            # [4, 8]
        y = r @ self.w                                               # [4, 5]
        y = y + (self.v @ self.w.t()).sum() + (self.w.T @ r.t()).mT.sum(-1, keepdim=True)
        parts = y.split([2, 3], dim=1)
        u0, u1, u2, u3 = y.unbind(0)
        z = parts[0].flatten().view(2, 4) * parts[1][:2, 1:].unflatten(1, (1, 2)).reshape(2, 2).repeat(1, 2)
        return z.sum() + (u0 * u1 - u2 / (u3 * u3 + 1)).mean() + torch.ones_like(z).sum()


class Contractions(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.randn(3, 4, 5) * 0.3)
        self.b = torch.nn.Parameter(torch.randn(5, 6) * 0.3)
        self.c = torch.nn.Parameter(torch.randn(2, 1, 6, 4) * 0.3)
        self.d = torch.nn.Parameter(torch.randn(4) * 0.3)

    def forward(self, x):                                            # [2, 3, 4, 5]
        y = x @ self.b                                               # [..., K] x [K, N]
        z = torch.matmul(y, self.c)                                  # batch broadcast [2, 3, 4, 4]
        w = torch.bmm(self.a, self.a.transpose(1, 2))                # [3, 4, 4]
        v = z + w                                                    # broadcast over the leading batch
        u = v @ self.d                                               # [2, 3, 4] (matrix x vector)
        t = self.d @ v                                               # [2, 3, 4] (vector x matrix)
        s = F.linear(self.d, self.c[0, 0])                           # 1-D input
        return (u * t).mean() + s.sum() + (self.d @ self.d)


class LossForms(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 5)
        self.norm = torch.nn.LayerNorm(5, elementwise_affine=False)

    def forward(self, x, labels):                                    # [2, 3, 4], [2, 3]
        logits = self.norm(self.lin(x))                              # [2, 3, 5]
        l1 = F.cross_entropy(logits.transpose(1, 2), labels)         # class dimension 1: [N, C, d]
        l2 = F.cross_entropy(logits[0, 0], labels[0, 0])             # one sample: [C], []
        l3 = F.cross_entropy(logits.reshape(6, 5), labels.reshape(6), ignore_index=2)
        return l1 + l2 + l3


ZOO = {
    "elementwise": (Elementwise, lambda: (torch.randn(2, 3, 4), torch.randn(2, 3, 6))),
    "shapes": (Shapes, lambda: (torch.randn(2, 3, 4),)),
    "contractions": (Contractions, lambda: (torch.randn(2, 3, 4, 5),)),
    "losses": (LossForms, lambda: (torch.randn(2, 3, 4), torch.tensor([[0, 2, 4], [1, 2, 3]]))),
}


@pytest.mark.parametrize("name", sorted(ZOO))
def test_op_coverage_matches_autograd(name, tmp_path):
    torch.manual_seed(1)
    make, inputs = ZOO[name]
    loss_error, grad_errors, _ = import_and_check(make(), inputs(), tmp_path)
    assert loss_error <= LOSS_TOL, loss_error
    assert max(grad_errors.values()) <= GRAD_TOL, grad_errors


@pytest.mark.skipif(EXPORT, reason="the names of the TorchFunctionMode tracer, the capture path of PyTorch 1.13")
def test_every_mapped_name_is_what_the_tracer_records():
    """Each name in supported_ops() is a real torch callable, and the name the
    tracer gives it (aliases such as __rtruediv__ -> __rdiv__) is mapped."""
    from rtx.torch_graph import op_name as _op_name
    from rtx.torch_ops import CONVERTERS, supported_ops
    for name in supported_ops():
        obj = torch
        for part in name.split(".")[1:]:
            obj = getattr(obj, part)
        func = obj.__get__ if type(obj).__name__ == "getset_descriptor" else obj
        assert _op_name(func) in CONVERTERS, (name, _op_name(func))


# --- the command line with a PyTorch model ---------------------------------------------------------------

def test_cli_imports_a_torch_example(tmp_path):
    from rtx.__main__ import main
    spec = f"{torch_models.__file__}:gpt2"
    assert main(["import", spec, "--set", "layers=1", "-o", str(tmp_path / "g.mlir"),
                 "--params-out", str(tmp_path / "p"), "--inputs-out", str(tmp_path / "i")]) == 0
    result = driver.run(tmp_path / "g.mlir", params=tmp_path / "p", inputs=tmp_path / "i")
    model, inputs = torch_models.gpt2(layers=1)
    assert rel_err(result.results[0].value, torch_loss(model, inputs).detach().numpy()) <= LOSS_TOL


def test_cli_train_native_dp2_equals_rtx_run(tmp_path, capsys):
    """`train --dp 2 --native cpu` builds the step as a C++ program and runs
    it in 2 processes; its losses are rtx-run's."""
    from rtx.__main__ import main
    model = f"{torch_models.__file__}:mlp"
    assert main(["train", model, "--steps", "4", "--lr", "0.01", "--dp", "2"]) == 0
    reference = capsys.readouterr().out.splitlines()
    assert main(["train", model, "--steps", "4", "--lr", "0.01", "--dp", "2", "--native", "cpu",
                 "--build-dir", str(tmp_path)]) == 0
    native = capsys.readouterr()
    assert (tmp_path / "program").exists() and "2 rank(s)" in native.err
    losses = [[float(line.split("loss=")[1]) for line in out] for out in (reference, native.out.splitlines())]
    assert len(losses[1]) == 4 and rel_err(losses[1], losses[0]) < 1e-5
    assert main(["train", model, "--emulate"]) == 1
    assert "--emulate emulates the GPU runtime; it needs --native cuda" in capsys.readouterr().err


def test_cli_train_prints_each_step(tmp_path, capsys):
    from rtx.__main__ import main
    assert main(["train", f"{torch_models.__file__}:mlp", "--steps", "3", "--lr", "0.01", "--micro-batches", "2",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out] == ["step 1/3", "step 2/3", "step 3/3"]
    assert (tmp_path / "params" / "fc1.weight.npy").exists()
