"""Attention as people write it becomes one rtx.attention (rtx.torch_fusion),
with the causal flag, the scale and the shared key/value heads of the code
it replaces, and the imported loss and gradients stay PyTorch's; forms
that are not attention stay op by op. Also the calls of the zoo's families
that are lowered onto matrix products: torch.addmm (Hugging Face's Conv1D)
and convolutions and F.unfold over non-overlapping patches (timm's
PatchEmbed).

Each form is a small module (4 query heads of 4 features, sequence 5);
import_and_check runs the imported loss and its gradients in rtx-run against
autograd (design.md: 1e-5 and 1e-4)."""
import math
import re

import pytest

from util import TORCH_SKIP_REASON, rel_err, run_text

torch = pytest.importorskip("torch", reason=TORCH_SKIP_REASON)

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from rtx import driver  # noqa: E402
from rtx.errors import UnsupportedOpError  # noqa: E402
from rtx.importer import import_module  # noqa: E402
from test_import import GRAD_TOL, LOSS_TOL, import_and_check  # noqa: E402

HAS_SDPA = hasattr(F, "scaled_dot_product_attention")
B, S, W, H, D = 2, 5, 12, 4, 4


def _repeat_heads(x, n, form):
    """Key/value heads repeated n times, as the families write it."""
    if form == "repeat_kv":                      # HF Llama, on [B, Hkv, S, D]
        b, kv, s, d = x.shape
        return x[:, :, None, :, :].expand(b, kv, n, s, d).reshape(b, kv * n, s, d)
    if form == "repeat_interleave":
        return x.repeat_interleave(n, dim=1)
    if form == "meta":                           # Meta's Llama, on [B, S, Hkv, D], before the transposes
        b, s, kv, d = x.shape
        return x[:, :, :, None, :].expand(b, s, kv, n, d).reshape(b, s, kv * n, d)
    if form == "meta_interleave":
        return torch.repeat_interleave(x, dim=2, repeats=n)
    return x


class Attention(nn.Module):
    """One attention layer, written in the form the arguments name."""

    def __init__(self, mask="none", softmax="plain", scale="scores_mul", gqa="none", kv_heads=H):
        super().__init__()
        self.form = dict(mask=mask, softmax=softmax, scale=scale, gqa=gqa)
        self.kv = kv_heads
        self.wq = nn.Linear(W, H * D, bias=False)
        self.wk = nn.Linear(W, kv_heads * D, bias=False)
        self.wv = nn.Linear(W, kv_heads * D, bias=False)
        self.wo = nn.Linear(H * D, W)
        self.register_buffer("future", torch.ones(S, S).triu(1).bool())
        self.register_buffer("visible", torch.tril(torch.ones(S, S, dtype=torch.bool)).view(1, 1, S, S))

    def scores(self, q, k):
        c, form = D ** -0.5, self.form["scale"]
        if form == "scores_mul":
            return q @ k.transpose(-2, -1) * c
        if form == "scores_div":
            return torch.matmul(q, k.transpose(2, 3)) / math.sqrt(D)
        if form == "scores_full_div":                                    # HF GPT-2
            return torch.matmul(q, k.transpose(-1, -2)) / torch.full([], D ** 0.5, dtype=q.dtype)
        if form == "q_mul":                                              # timm
            return (q * c) @ k.transpose(-2, -1)
        if form == "k_mul":
            return q @ (k * c).transpose(-2, -1)
        if form == "kt_mul":
            return torch.matmul(q, k.transpose(-2, -1) * c)
        assert form == "split"                                           # both, by sqrt(c)
        return (q * c ** 0.5) @ (k * c ** 0.5).mT

    def masked(self, scores, x):
        form = self.form["mask"]
        low = torch.finfo(scores.dtype).min
        if form == "masked_fill_inf":                                    # nanoGPT
            return scores.masked_fill(self.future, float("-inf"))
        if form == "masked_fill_min":
            return scores.masked_fill(self.future[None, None], low)
        if form == "where_min":                                          # HF GPT-2
            return torch.where(self.visible, scores.to(scores.dtype), torch.full([], low, dtype=scores.dtype))
        if form == "where_swapped":
            return torch.where(self.future, torch.tensor(float("-inf")), scores)
        if form == "add_triu":
            return scores + torch.full((S, S), float("-inf")).triu(1)
        if form == "add_hf":                                             # HF Llama's _update_causal_mask
            # (in float32 here, where HF makes it in the scores' type: bf16 scores are promoted by the sum)
            mask = torch.triu(torch.full((S, S), low), diagonal=1)
            mask = mask * (torch.arange(S) > torch.arange(S).reshape(-1, 1))
            return scores + mask[None, None, :, :].expand(B, 1, -1, -1)
        if form == "add_type_as":                                        # Meta: a traced call on a constant
            return scores + torch.triu(torch.full((S, S), float("-inf")), diagonal=1).type_as(x)
        if form == "add_soft":                                           # not a hard mask: stays op by op
            return scores + torch.full((S, S), -1e4).triu(1)
        if form == "not_causal":
            return scores.masked_fill(torch.ones(S, S).triu(2).bool(), float("-inf"))
        if form == "per_batch":                                          # the batches differ: not one mask
            mask = torch.ones(B, 1, S, S).triu(1).bool()
            mask[1, :, :, 0] = True
            mask[1, :, 0, 0] = False
            return scores.masked_fill(mask, float("-inf"))
        assert form == "none"
        return scores

    def probs(self, scores, q, v):
        form = self.form["softmax"]
        if form == "plain":
            return F.softmax(scores, dim=-1)
        if form == "f32":                                                # HF Llama
            return F.dropout(F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype), p=0.0, training=True)
        if form == "float":                                              # Meta
            return F.softmax(scores.float(), dim=-1).type_as(q)
        if form == "type":                                               # HF GPT-2
            return scores.softmax(dim=-1).type(v.dtype)
        assert form == "narrow"                                          # a softmax in less precision
        return scores.bfloat16().softmax(dim=-1).float()

    def forward(self, x):
        gqa = self.form["gqa"]
        q = self.wq(x).view(B, S, H, D)
        k, v = (w(x).view(B, S, self.kv, D) for w in (self.wk, self.wv))
        if gqa.startswith("meta"):
            k, v = (_repeat_heads(t, H // self.kv, gqa) for t in (k, v))
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        if not gqa.startswith("meta"):
            k, v = (_repeat_heads(t, H // self.kv, gqa) for t in (k, v))
        y = self.probs(self.masked(self.scores(q, k), x), q, v) @ v
        y = self.wo(y.transpose(1, 2).contiguous().view(B, S, H * D))
        return (y * y).mean()


def _attention_lines(text):
    return [line for line in text.splitlines() if re.search(r"= rtx\.attention ", line)]


def _check_fused(text, causal, scale, kv_heads):
    """One rtx.attention with these flags and types, and no softmax left."""
    lines = _attention_lines(text)
    assert len(lines) == 1, lines
    line = lines[0]
    assert (" causal" in line) == causal, line
    assert math.isclose(float(re.search(r" scale (\S+) :", line).group(1)), scale, rel_tol=1e-12), line
    q, k, v = (f"tensor<{B}x{heads}x{S}x{D}xf32>" for heads in (H, kv_heads, kv_heads))
    assert f": {q}, {k}, {v} -> {q}" in line, line
    assert "rtx.softmax" not in text


CAUSAL = D ** -0.5
FORMS = {
    # id: (module arguments, causal); the scale is 1/sqrt(D) in every form.
    "nanogpt": (dict(mask="masked_fill_inf"), True),
    "hf-gpt2": (dict(mask="where_min", softmax="type", scale="scores_full_div"), True),
    "hf-llama": (dict(mask="add_hf", softmax="f32", gqa="repeat_kv", kv_heads=2), True),
    "meta-llama": (dict(mask="add_type_as", softmax="float", scale="scores_div", gqa="meta", kv_heads=2), True),
    "meta-repeat-interleave": (dict(mask="add_triu", scale="q_mul", gqa="meta_interleave", kv_heads=2), True),
    "repeat-interleave-finfo-min": (dict(mask="masked_fill_min", scale="k_mul", gqa="repeat_interleave",
                                         kv_heads=1), True),
    "where-swapped-scaled-key": (dict(mask="where_swapped", scale="kt_mul"), True),
    "bidirectional-mqa": (dict(scale="split", gqa="repeat_kv", kv_heads=1), False),
}


@pytest.mark.parametrize("form", list(FORMS))
def test_attention_form_is_one_rtx_attention(form, tmp_path):
    kwargs, causal = FORMS[form]
    torch.manual_seed(0)
    model = Attention(**kwargs)
    loss_error, grad_errors, imported = import_and_check(model, (torch.randn(B, S, W),), tmp_path)
    _check_fused(imported.text(), causal, CAUSAL, kwargs.get("kv_heads", H))
    assert loss_error <= LOSS_TOL, loss_error
    assert max(grad_errors.values()) <= GRAD_TOL, grad_errors


@pytest.mark.filterwarnings("ignore:.*converted to bf16")
@pytest.mark.parametrize("form", ["hf-llama", "meta-llama"])
def test_bfloat16_attention_with_a_float32_softmax_is_one_rtx_attention(form, tmp_path):
    """In bfloat16, Hugging Face's softmax(dtype=float32).to(q.dtype) and
    Meta's softmax(scores.float()).type_as(q) widen only: one bf16
    rtx.attention, whose loss is PyTorch's (bf16 tolerance, 1e-2)."""
    kwargs, causal = FORMS[form]
    torch.manual_seed(0)
    model, x = Attention(**kwargs).to(torch.bfloat16), torch.randn(B, S, W).to(torch.bfloat16)
    imported = import_module(model, (x,))
    lines = _attention_lines(imported.text())
    assert len(lines) == 1 and " causal" in lines[0] and f"tensor<{B}x{H}x{S}x{D}xbf16>" in lines[0], lines
    result = run_text(imported.text(), tmp_path, params=imported.save_params(tmp_path / "params"),
                      inputs=imported.save_inputs(tmp_path / "inputs"))
    assert rel_err(result.results[0].value, model(x).float().detach().numpy()) <= 1e-2


@pytest.mark.parametrize("kwargs", [
    dict(mask="add_soft"),                  # -1e4 is not -inf: a large score would still see the future
    dict(mask="not_causal"),
    dict(mask="per_batch"),
], ids=["soft-bias", "not-causal", "per-batch-mask"])
def test_masks_that_are_not_causal_stay_op_by_op(kwargs, tmp_path):
    torch.manual_seed(0)
    loss_error, grad_errors, imported = import_and_check(Attention(**kwargs), (torch.randn(B, S, W),), tmp_path)
    assert not _attention_lines(imported.text()) and "rtx.softmax" in imported.text()
    assert loss_error <= LOSS_TOL and max(grad_errors.values()) <= GRAD_TOL


def test_softmax_in_less_precision_stays_op_by_op():
    """A bfloat16 softmax of float32 scores rounds the probabilities;
    rtx.attention would not."""
    text = import_module(Attention(mask="masked_fill_inf", softmax="narrow"), (torch.randn(B, S, W),)).text()
    assert not _attention_lines(text) and "rtx.softmax" in text


def test_repeated_heads_read_elsewhere_stay_repeated():
    """When the repeated keys are also used outside attention, rtx.attention
    takes them as they are (all heads), and the repeat stays."""
    class Leaky(Attention):
        def forward(self, x):
            k = self.wk(x).view(B, S, self.kv, D).transpose(1, 2)
            k = _repeat_heads(k, H // self.kv, "repeat_kv")
            q = self.wq(x).view(B, S, H, D).transpose(1, 2)
            v = self.wv(x).view(B, S, self.kv, D).transpose(1, 2).repeat_interleave(H // self.kv, dim=1)
            y = F.softmax(q @ k.transpose(-2, -1) * D ** -0.5, dim=-1) @ v
            return (y * y).mean() + k.mean()

    text = import_module(Leaky(kv_heads=2), (torch.randn(B, S, W),)).text()
    _check_fused(text, False, CAUSAL, H)


# --- F.scaled_dot_product_attention (PyTorch 2) -------------------------------------------------------

class Sdpa(Attention):
    def __init__(self, gqa, mask, kv_heads):
        super().__init__(gqa=gqa, kv_heads=kv_heads)
        self.mask = mask

    def forward(self, x):
        q = self.wq(x).view(B, S, H, D).transpose(1, 2)
        k, v = (_repeat_heads(w(x).view(B, S, self.kv, D).transpose(1, 2), H // self.kv, self.form["gqa"])
                for w in (self.wk, self.wv))
        if self.mask == "bool":
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=self.visible)
        elif self.mask == "additive":
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.full((S, S), float("-inf")).triu(1))
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = self.wo(y.transpose(1, 2).reshape(B, S, H * D))
        return (y * y).mean()


@pytest.mark.skipif(not HAS_SDPA, reason="needs F.scaled_dot_product_attention (PyTorch >= 2.0)")
@pytest.mark.parametrize("gqa, mask, kv_heads", [("repeat_kv", None, 2), ("repeat_interleave", "bool", 1),
                                                  ("none", "additive", H)])
def test_sdpa_takes_shared_heads_and_constant_causal_masks(gqa, mask, kv_heads, tmp_path):
    torch.manual_seed(0)
    model = Sdpa(gqa, mask, kv_heads)
    loss_error, grad_errors, imported = import_and_check(model, (torch.randn(B, S, W),), tmp_path)
    lines = _attention_lines(imported.text())
    assert len(lines) == 1 and " causal" in lines[0] and f"tensor<{B}x{model.kv}x{S}x{D}xf32>" in lines[0], lines
    assert loss_error <= LOSS_TOL and max(grad_errors.values()) <= GRAD_TOL


# --- torch.addmm: Hugging Face's Conv1D ------------------------------------------------------------------

class Conv1D(nn.Module):
    """GPT-2's linear layer: weight [in, out], torch.addmm."""

    def __init__(self, nf, nx, beta=1, alpha=1):
        super().__init__()
        self.nf, self.beta, self.alpha = nf, beta, alpha
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.2)
        self.bias = nn.Parameter(torch.randn(nf) * 0.2)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        if self.beta == 1 and self.alpha == 1:
            x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        else:
            x = self.bias.addmm(x.view(-1, x.size(-1)), self.weight, beta=self.beta, alpha=self.alpha)
        return x.view(size_out)


class Conv1DMLP(nn.Module):
    def __init__(self, width=12, hidden=24, **kwargs):
        super().__init__()
        self.c_fc, self.c_proj = Conv1D(hidden, width, **kwargs), Conv1D(width, hidden)

    def forward(self, x):
        y = self.c_proj(torch.tanh(self.c_fc(x)))
        return (y * y).mean()


@pytest.mark.parametrize("kwargs", [{}, dict(beta=0.5, alpha=2.0)], ids=["addmm", "beta-alpha"])
def test_addmm_is_a_matmul_over_the_parameter_as_laid_out(kwargs, tmp_path):
    torch.manual_seed(0)
    loss_error, grad_errors, imported = import_and_check(Conv1DMLP(**kwargs), (torch.randn(2, 3, 12),), tmp_path)
    assert loss_error <= LOSS_TOL and max(grad_errors.values()) <= GRAD_TOL, (loss_error, grad_errors)
    text = imported.text()
    # The user's [in, out] weight, the rhs of an rtx.matmul: --params from the state dict loads as it is.
    weight = re.search(r'(%v\d+) = rtx\.param "c_fc\.weight" .* : tensor<12x24xf32>', text)
    assert weight and re.search(rf"= rtx\.matmul %v\d+, {weight.group(1)} : tensor<6x12xf32>, tensor<12x24xf32>",
                                text), text


def test_conv1d_mlp_is_split_on_tp(tmp_path):
    """Megatron's pair over Conv1D: c_fc split along its output features
    (dimension 1 of [in, out]) with its bias, c_proj along its input ones."""
    text = import_module(Conv1DMLP(), (torch.randn(2, 3, 12),)).text()
    out = driver.opt(text, ["-rtx-distribute=mesh=tp:2 optimizer=adamw lr=0.01"])
    for name, shape in (("c_fc.weight", "12x12"), ("c_fc.bias", "12"), ("c_proj.weight", "12x12")):
        assert re.search(rf'tensor<{shape}xf32> {{[^}}]*rtx\.param = "{name}"', out), name
    assert "rtx.all_reduce" in out


# --- convolutions over patches: timm's PatchEmbed --------------------------------------------------------

class Patches(nn.Module):
    def __init__(self, strategy, patch=4, stride=None, padding=0):
        super().__init__()
        self.strategy, self.patch = strategy, patch
        self.proj = nn.Conv2d(3, 6, kernel_size=patch, stride=stride or patch, padding=padding)

    def forward(self, x):
        if self.strategy == "conv":
            y = self.proj(x).flatten(2).transpose(1, 2)
        else:
            y = F.linear(F.unfold(x, kernel_size=self.patch, stride=self.patch).transpose(1, 2),
                         self.proj.weight.flatten(1), self.proj.bias)
        return (y * y).mean()


@pytest.mark.parametrize("strategy", ["conv", "unfold"])
@pytest.mark.parametrize("size", [12, 13], ids=["whole-patches", "ragged-edge"])
def test_patch_embedding_over_non_overlapping_patches(strategy, size, tmp_path):
    torch.manual_seed(0)
    loss_error, grad_errors, imported = import_and_check(Patches(strategy), (torch.randn(2, 3, size, size),),
                                                         tmp_path)
    assert loss_error <= LOSS_TOL and max(grad_errors.values()) <= GRAD_TOL, (loss_error, grad_errors)
    assert "rtx.linear" in imported.text()


@pytest.mark.parametrize("kwargs", [dict(stride=2), dict(padding=1)], ids=["overlapping", "padded"])
def test_other_convolutions_are_refused_by_name(kwargs):
    with pytest.raises(UnsupportedOpError, match=r"torch\.conv2d .*'proj'.*non-overlapping patches only"):
        import_module(Patches("conv", **kwargs), (torch.randn(2, 3, 12, 12),))
