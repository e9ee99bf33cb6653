"""The importer on PyTorch 2 (torch.export; .venv/bin/python, made by
scripts/setup.sh): F.scaled_dot_product_attention as rtx.attention (causal,
with a scale, grouped key/value heads by enable_gqa, repeat_interleave or
expand + reshape), its refusals, in-place updates, modules on the meta
device, and what torch.export cannot capture. Losses and gradients are
compared with PyTorch's as in test_import.py (fp32: loss <= 1e-5, gradients
<= 1e-4). On PyTorch 1.13 every test here is skipped: it has neither
torch.export nor F.scaled_dot_product_attention."""
import math

import pytest

from util import TORCH_SKIP_REASON

torch = pytest.importorskip("torch", reason=TORCH_SKIP_REASON)

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rtx.importer import import_module  # noqa: E402
from rtx.torch_export import uses_export  # noqa: E402
from test_import import GRAD_TOL, LOSS_TOL, import_and_check  # noqa: E402

pytestmark = pytest.mark.skipif(not uses_export(), reason=(
    f"PyTorch {torch.__version__} has no torch.export training IR (PyTorch >= 2.6): run "
    ".venv/bin/python -m pytest (scripts/setup.sh makes .venv)"))


# --- models written as their communities write them for PyTorch 2 --------------------------------

class FlashAttention(nn.Module):
    """nanoGPT's CausalSelfAttention with `flash` (PyTorch >= 2): fused
    c_attn, SDPA with is_causal, dropout only in training."""

    def __init__(self, width: int, heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        self.n_head, self.n_embd, self.dropout = heads, width, dropout

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                           dropout_p=self.dropout if self.training else 0, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class FlashBlock(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = FlashAttention(width, heads)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * width, width))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class FlashGPT(nn.Module):
    """A nanoGPT-style GPT on SDPA: tied embeddings, positions from
    torch.arange on the tokens' device, cross-entropy with ignore_index."""

    def __init__(self, vocab=37, seq=8, width=32, heads=2, layers=2) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(seq, width)
        self.h = nn.ModuleList([FlashBlock(width, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx, targets):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)


def gpt_example(seed=0, **kwargs):
    torch.manual_seed(seed)
    model = FlashGPT(**kwargs)
    vocab, seq = model.wte.num_embeddings, model.wpe.num_embeddings
    data = torch.randint(0, vocab, (3, seq + 1))
    return model, (data[:, :-1].contiguous(), data[:, 1:].contiguous())


class GroupedAttention(nn.Module):
    """Llama-style attention with fewer key/value heads, shared in one of
    the ways people write it: SDPA's enable_gqa, repeat_interleave, or
    `x[:, :, None].expand(...).reshape(...)` (Hugging Face's repeat_kv)."""

    def __init__(self, width=24, heads=4, kv_heads=2, share="enable_gqa", scale=None) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, width // heads
        self.share, self.scale = share, scale
        self.wq = nn.Linear(width, width, bias=False)
        self.wk = nn.Linear(width, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(width, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(width, width, bias=False)

    def repeat(self, x):
        n = self.heads // self.kv_heads
        if self.share == "repeat_interleave":
            return x.repeat_interleave(n, dim=1)
        b, h, s, d = x.shape
        return x[:, :, None, :, :].expand(b, h, n, s, d).reshape(b, h * n, s, d)

    def forward(self, x, target):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        if self.share == "enable_gqa":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.scale, enable_gqa=True)
        else:
            y = F.scaled_dot_product_attention(q, self.repeat(k), self.repeat(v), is_causal=True, scale=self.scale)
        return F.mse_loss(self.wo(y.transpose(1, 2).reshape(B, T, -1)), target)


def attention_lines(text):
    return [line for line in text.splitlines() if "= rtx.attention" in line]


# --- SDPA imports as rtx.attention and computes PyTorch's loss and gradients --------------------

@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "op-by-op"])
def test_nanogpt_with_sdpa_matches_pytorch(fuse, tmp_path):
    model, inputs = gpt_example()
    loss_error, grad_errors, imported = import_and_check(model, inputs, tmp_path, fuse=fuse)
    assert loss_error <= LOSS_TOL, loss_error
    worst = max(grad_errors, key=grad_errors.get)
    assert grad_errors[worst] <= GRAD_TOL, (worst, grad_errors[worst])
    # Names from the graph signature; the tied weight once, under its first name.
    assert set(imported.params) == {n for n, _ in model.named_parameters()}
    assert "h.0.attn.c_attn.weight" in imported.params and "lm_head.weight" not in imported.params
    assert list(imported.inputs) == ["idx", "targets"] and imported.returns_loss
    lines = attention_lines(imported.text())
    assert len(lines) == 2 and all(" causal : tensor<3x2x8x16xf32>" in line for line in lines), lines


@pytest.mark.parametrize("share, kv_heads", [
    ("enable_gqa", 2), ("repeat_interleave", 2), ("expand", 2), ("enable_gqa", 1), ("repeat_interleave", 1),
])
def test_grouped_query_sdpa_reads_the_shared_heads(share, kv_heads, tmp_path):
    torch.manual_seed(3)
    model = GroupedAttention(kv_heads=kv_heads, share=share, scale=0.3)
    inputs = (torch.randn(2, 5, 24), torch.randn(2, 5, 24))
    loss_error, grad_errors, imported = import_and_check(model, inputs, tmp_path)
    assert loss_error <= LOSS_TOL and max(grad_errors.values()) <= GRAD_TOL, (loss_error, grad_errors)
    # One rtx.attention on the key/value heads as the module computes them
    # (query head h reads head h / (4 / kv_heads), PyTorch's convention and rtx's).
    (line,) = attention_lines(imported.text())
    assert f"causal scale 0.3 : tensor<2x4x5x6xf32>, tensor<2x{kv_heads}x5x6xf32>" in line, line
    # No repeat is left: nothing but the query's transpose and the attention
    # makes a [2, 4, 5, 6] value.
    makers = [line.split("=")[1].split()[0] for line in imported.text().splitlines()
              if line.endswith("-> tensor<2x4x5x6xf32>")]
    assert sorted(makers) == ["rtx.attention", "rtx.transpose"], makers


def test_grouped_query_sdpa_op_by_op_repeats_the_heads(tmp_path):
    """Without fusion the converter gets the repeated heads; same function."""
    torch.manual_seed(4)
    model = GroupedAttention(share="repeat_interleave")
    inputs = (torch.randn(2, 5, 24), torch.randn(2, 5, 24))
    loss_error, grad_errors, imported = import_and_check(model, inputs, tmp_path, fuse=False)
    assert loss_error <= LOSS_TOL and max(grad_errors.values()) <= GRAD_TOL
    (line,) = attention_lines(imported.text())
    assert "tensor<2x4x5x6xf32>, tensor<2x4x5x6xf32>, tensor<2x4x5x6xf32>" in line and "scale" not in line


# SGD, as test_import.py trains GPT-2 with biases: the key bias's gradient is
# rounding noise, which AdamW would scale to full-size steps.
def test_training_a_flash_gpt_matches_torch_optim():
    import rtx
    model, (idx, targets) = gpt_example(layers=1)
    program = rtx.compile(model, (idx, targets), optimizer=rtx.SGD(lr=0.5, weight_decay=0.01))
    result = program.train({"idx": idx, "targets": targets}, steps=3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, weight_decay=0.01)
    expected = []
    for _ in range(3):
        optimizer.zero_grad()
        loss = model(idx, targets)[1]
        loss.backward()
        optimizer.step()
        expected.append(loss.item())
    from util import rel_err
    assert rel_err(result.losses, expected) <= GRAD_TOL, (result.losses, expected)
    for name, p in model.named_parameters():
        assert rel_err(result.params[name], p.detach().numpy()) <= GRAD_TOL, name


@pytest.mark.parametrize("make", [
    lambda: gpt_example(layers=1),
    lambda: (GroupedAttention(share="repeat_interleave", scale=0.3), (torch.randn(2, 5, 24), torch.randn(2, 5, 24))),
    lambda: (GroupedAttention(share="enable_gqa"), (torch.randn(2, 5, 24), torch.randn(2, 5, 24))),
], ids=["nanogpt", "repeat_interleave", "enable_gqa"])
def test_the_tracer_imports_sdpa_too(make, tmp_path, monkeypatch):
    """PyTorch 2.0 to 2.5 capture with the TorchFunctionMode tracer, as 1.13:
    SDPA imports the same way there (the tracer run here on this PyTorch)."""
    import rtx.importer
    monkeypatch.setattr(rtx.importer, "uses_export", lambda: False)
    torch.manual_seed(7)
    model, inputs = make()
    loss_error, grad_errors, imported = import_and_check(model, inputs, tmp_path)
    assert loss_error <= LOSS_TOL and max(grad_errors.values()) <= GRAD_TOL, (loss_error, grad_errors)
    lines = attention_lines(imported.text())
    assert lines and all(" causal" in line for line in lines), lines
    if isinstance(model, GroupedAttention):
        assert "tensor<2x2x5x6xf32>, tensor<2x2x5x6xf32> -> tensor<2x4x5x6xf32>" in lines[0], lines


# --- what SDPA cannot be, said with the reason ----------------------------------------------------

class Sdpa(nn.Module):
    def __init__(self, **options) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.options = options

    def forward(self, x):
        q = self.proj(x).view(2, 5, 2, 4).transpose(1, 2)
        options = dict(self.options)
        if "attn_mask" in options:              # a sliding window: not causal
            options["attn_mask"] = torch.ones(5, 5, dtype=torch.bool).tril().triu(-1)
        return F.scaled_dot_product_attention(q, q, q, **options).sum()


@pytest.mark.parametrize("options, reason", [
    (dict(attn_mask=True), "attn_mask: rtx.attention takes no mask (a causal one is is_causal=True)"),
    (dict(dropout_p=0.1), "dropout_p=0.1: rtx.attention has no dropout"),
])
def test_sdpa_forms_rtx_cannot_express_are_refused_with_the_reason(options, reason):
    with pytest.raises(Exception) as info:
        import_module(Sdpa(**options), (torch.randn(2, 5, 8),))
    assert type(info.value).__name__ == "UnsupportedOpError", info.value
    assert info.value.op == "torch.nn.functional.scaled_dot_product_attention" and reason in str(info.value)
    assert info.value.source.startswith(f"{__file__}:"), info.value.source


# --- the export path's own cases -------------------------------------------------------------------

def test_every_aten_mapping_names_a_converter():
    from rtx.torch_aten import CALLS
    from rtx.torch_ops import CONVERTERS
    assert {aten: name for aten, (name, _) in CALLS.items() if name not in CONVERTERS} == {}
    assert CALLS["linear"][0] == "torch.nn.functional.linear" and "slice" in CALLS


class Updates(nn.Module):
    """In-place updates of fresh tensors, and of constants: imported as the
    values they leave behind."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x):
        y = self.lin(x)
        y.mul_(2.0).add_(1.0)              # later readers name `y`, not the update
        y = y.view(3, 2, 3)
        y.relu_()                          # a view, but nothing reads its base again
        y = y.view(3, 6)
        mask = torch.ones(6, 6)
        mask.triu_(1)                      # a constant, updated in place
        return (y @ mask).pow(2).mean() + y.sum()


def test_inplace_updates_of_fresh_tensors_import_out_of_place(tmp_path):
    torch.manual_seed(5)
    loss_error, grad_errors, imported = import_and_check(Updates(), (torch.randn(3, 6),), tmp_path)
    assert loss_error <= LOSS_TOL and max(grad_errors.values()) <= GRAD_TOL, (loss_error, grad_errors)
    assert "rtx.relu" in imported.text()


class UpdatesAView(nn.Module):
    """An update through a view changes the tensor it views and its other
    views: refused when one of those is read afterwards."""

    def __init__(self, form) -> None:
        super().__init__()
        self.lin = nn.Linear(6, 6)
        self.form = form

    def forward(self, x):
        y = self.lin(x)
        if self.form == "read the base":
            head = y[:, :2]
            head.mul_(2.0)
            return y.sum()
        if self.form == "read another view":
            head, whole = y[:, :2], y[:]
            head.mul_(2.0)
            return whole.sum()
        if self.form == "update the base, read a view":
            head = y[:, :2]
            y.relu_()
            return head.sum()
        if self.form == "update a whole slice, read the base":
            y[:].relu_()
            return y.sum()
        z = y.clone()                      # "read the view only"
        z.relu_()                          # a copy: y keeps its values
        head = y[:, :2]
        head.mul_(2.0)                     # nothing reads y or another view of it later
        return head.sum() + z.sum()


@pytest.mark.parametrize("form", ["read the base", "read another view", "update the base, read a view",
                                  "update a whole slice, read the base"])
def test_an_inplace_update_of_memory_read_under_another_name_is_refused(form):
    with pytest.raises(Exception, match="in-place update of a view .* whose other names are read later") as info:
        import_module(UpdatesAView(form), (torch.randn(3, 6),))
    assert info.value.op in ("aten.mul_.Tensor", "aten.relu_.default"), info.value.op
    assert info.value.source.startswith(f"{__file__}:")


def test_an_inplace_update_nothing_else_reads_imports(tmp_path):
    torch.manual_seed(6)
    loss_error, grad_errors, _ = import_and_check(UpdatesAView("read the view only"), (torch.randn(3, 6),), tmp_path)
    assert loss_error <= LOSS_TOL and max(grad_errors.values()) <= GRAD_TOL, (loss_error, grad_errors)


def cumsum_loss(out):
    return torch.cumsum(out, 1).mean()


def test_an_unsupported_aten_op_in_the_loss_function_names_it():
    """torch.export keeps the lines of modules' forward methods only: a call
    in `loss` is placed at the loss function's first line."""
    with pytest.raises(Exception) as info:
        import_module(nn.Linear(4, 4), (torch.randn(2, 4),), loss=cumsum_loss)
    assert type(info.value).__name__ == "UnsupportedOpError", info.value
    assert info.value.op == "aten.cumsum.default" and info.value.module_path == "<loss>"
    assert info.value.source == f"{__file__}:{cumsum_loss.__code__.co_firstlineno}", info.value.source


class Branches(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(4, 4)

    def forward(self, x):
        y = self.inner(x)
        return y.sum() if y.sum().item() > 0 else -y.sum()


def test_data_dependent_control_flow_is_refused_with_its_line():
    with pytest.raises(Exception) as info:
        import_module(Branches(), (torch.randn(2, 4),))
    assert type(info.value).__name__ == "UnsupportedOpError", info.value
    message = str(info.value)
    assert "data-dependent control flow cannot be imported" in message and "torch.export" in message
    line = next(i for i, text in enumerate(open(__file__), 1) if "y.sum().item() > 0" in text)
    assert info.value.source == f"{__file__}:{line}", message


class Lambda(nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn
        self.w = nn.Parameter(torch.randn(4))

    def forward(self, x):
        return self.fn(x * self.w)


@pytest.mark.parametrize("fn, op, reason", [
    (lambda h: h * h.sum().item(), "aten.item.default", "data-dependent control flow cannot be imported"),
    (lambda h: h[h > 0].sum(), "aten.index.Tensor", "data-dependent shapes cannot be imported"),
    (lambda h: torch.nonzero(h).float().sum(), "aten.nonzero.default", "data-dependent shapes cannot be imported"),
    (lambda h: h.masked_select(h > 0).sum(), "aten.masked_select.default", "data-dependent shapes"),
], ids=["item", "boolean-index", "nonzero", "masked_select"])
def test_values_that_python_or_shapes_read_are_refused(fn, op, reason):
    """What torch.export lets through with symbols for values: a Python
    number read from a tensor, a shape that depends on the values."""
    with pytest.raises(Exception) as info:
        import_module(Lambda(fn), (torch.randn(3, 4),))
    assert type(info.value).__name__ == "UnsupportedOpError", info.value
    assert info.value.op == op and reason in str(info.value), str(info.value)


def test_equal_constants_enter_the_ir_once():
    """The Llama example rebuilds its rotary tables and mask in every layer."""
    import torch_models
    model, inputs = torch_models.llama(layers=3)
    text = import_module(model, inputs, fuse=False).text()
    tables = [line for line in text.splitlines() if "rtx.constant dense<[" in line and line.endswith("8x8xf32>")]
    assert len(tables) == 3, tables          # cos, sin and the causal mask, once each


class Counts(nn.Module):
    """Updates a buffer in forward, as BatchNorm's running statistics do."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("calls", torch.zeros(1))

    def forward(self, x):
        self.calls.add_(1)
        return self.lin(x).sum() * self.calls.sum()


def test_an_update_of_a_buffer_is_refused_and_leaves_the_buffer_alone():
    model = Counts()
    with pytest.raises(Exception, match="the module updates buffer 'calls' in place in forward") as info:
        import_module(model, (torch.randn(2, 4),))
    assert info.value.op == "aten.add_.Tensor" and info.value.source.startswith(f"{__file__}:")
    assert model.calls.item() == 0


class Regions(nn.Module):
    """`with` blocks that torch.export keeps as calls of subgraphs."""

    def __init__(self, region) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.region = region

    def forward(self, x):
        h = self.lin(x)
        if self.region == "no_grad on constants":
            with torch.no_grad():                       # HF's rotary embedding: @torch.no_grad()
                scale = torch.arange(4.0) * 0.5 + 1.0
            return (h * scale).pow(2).mean()
        if self.region == "autocast off":
            with torch.autocast("cpu", enabled=False):  # HF's float32 rotary tables
                h = h.float().exp()
            return h.mean()
        if self.region == "no_grad on traced values":
            with torch.no_grad():
                h = h * 2.0
            return h.mean()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return self.lin(h).float().mean()


@pytest.mark.parametrize("region", ["no_grad on constants", "autocast off"])
def test_regions_of_forward_are_inlined(region, tmp_path):
    torch.manual_seed(8)
    loss_error, grad_errors, _ = import_and_check(Regions(region), (torch.randn(3, 4),), tmp_path)
    assert loss_error <= LOSS_TOL and max(grad_errors.values()) <= GRAD_TOL, (loss_error, grad_errors)


@pytest.mark.parametrize("region, op, reason", [
    ("no_grad on traced values", "torch.no_grad", "rtx would differentiate through it"),
    ("autocast on", "torch.autocast", "autocast changes the element type"),
])
def test_regions_rtx_cannot_express_are_refused(region, op, reason):
    with pytest.raises(Exception) as info:
        import_module(Regions(region), (torch.randn(3, 4),))
    assert type(info.value).__name__ == "UnsupportedOpError", info.value
    assert info.value.op == op and reason in str(info.value) and info.value.source.startswith(f"{__file__}:")


# --- modules on the meta device ----------------------------------------------------------------------

def test_a_model_on_the_meta_device_imports_without_its_values():
    """The same IR as the real model's, but for the initializers (a meta
    tensor has no values); nothing of the model's size is allocated."""
    with torch.device("meta"):
        meta_model, _ = gpt_example(layers=2)
    model, inputs = gpt_example(layers=2)
    imported = import_module(meta_model, inputs)
    reference = import_module(model, inputs)

    def structure(text):
        return [line.split(" normal(")[0].split(" ones")[0].split(" zeros")[0] for line in text.splitlines()]
    assert structure(imported.text()) == structure(reference.text())
    assert all(p.is_meta for p in imported.params.values()) and len(imported.params) == len(reference.params)
    assert len(attention_lines(imported.text())) == 2


def test_meta_example_inputs_import_with_a_real_model():
    model, (idx, targets) = gpt_example()
    imported = import_module(model, (idx.to("meta"), targets))
    reference = import_module(model, (idx, targets))
    assert imported.text() == reference.text() and imported.inputs["idx"].is_meta


class MaskedAttention(nn.Module):
    """nanoGPT's causal mask as a buffer: on the meta device it has no values."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.register_buffer("bias", torch.tril(torch.ones(5, 5)).view(1, 1, 5, 5))

    def forward(self, x):
        q = self.proj(x).view(2, 5, 2, 4).transpose(1, 2)
        att = (q @ q.transpose(-2, -1)) / math.sqrt(4)
        att = att.masked_fill(self.bias[:, :, :5, :5] == 0, float("-inf")).softmax(dim=-1)
        return (att @ q).sum()


def test_a_meta_buffer_whose_values_are_needed_is_named():
    with torch.device("meta"):
        model = MaskedAttention()
    with pytest.raises(Exception, match=r"the value of buffer 'bias' is needed by aten.masked_fill.Scalar \(in "
                                        r"module '' \(MaskedAttention\) at .*\), but it is on the meta device "
                                        r"and has no value. Materialise it"):
        import_module(model, (torch.randn(2, 5, 8),))
    # With the buffer's values given, the rest may stay on the meta device.
    model.bias = torch.tril(torch.ones(5, 5)).view(1, 1, 5, 5)
    assert "causal" in attention_lines(import_module(model, (torch.randn(2, 5, 8),)).text())[0]
