"""Weights in and out (issue 36, item 3): safetensors files read and written
by rtx's own reader and writer (checked against Hugging Face's `safetensors`
library where this Python has it), state dicts, the name map of Hugging
Face's GPT-2 checkpoints, Program.state_dict() and save_safetensors(), and
parameters that are parts of a user's tensor (rtx.part_of)."""
import copy
import math
import re
import struct

import numpy as np
import pytest

from util import TORCH_SKIP_REASON, rel_err

import rtx
from rtx import safetensors as st
from rtx.weights import HF_GPT2, NameMap, NameRule

torch = pytest.importorskip("torch", reason=TORCH_SKIP_REASON)
nn, F = torch.nn, torch.nn.functional

GRAD_TOL = 1e-4   # design.md: fp32 after a few optimizer steps


# --- a GPT-2 in Hugging Face's layout -------------------------------------------------

class Conv1D(nn.Module):
    """Hugging Face's Conv1D: a linear layer whose weight is [in, out]
    (HF computes torch.addmm(bias, x.view(-1, in), weight); the same)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.randn(nf) * 0.02)

    def forward(self, x):
        return x @ self.weight + self.bias


class HFAttention(nn.Module):
    def __init__(self, width, heads, seq):
        super().__init__()
        self.c_attn, self.c_proj = Conv1D(3 * width, width), Conv1D(width, width)
        self.width, self.heads = width, heads
        # A buffer in the checkpoint, as older transformers saved it.
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.width, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = F.softmax(att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf")), dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))


class HFBlock(nn.Module):
    def __init__(self, width, heads, seq):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = HFAttention(width, heads, seq)
        self.mlp = nn.ModuleDict(dict(c_fc=Conv1D(4 * width, width), c_proj=Conv1D(width, 4 * width)))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh"))


class HFGPT2(nn.Module):
    """GPT2LMHeadModel's names and layouts at toy size: Conv1D weights
    [in, out], a fused c_attn, lm_head.weight tied to transformer.wte.weight."""

    def __init__(self, vocab=40, seq=8, width=32, heads=4, layers=2, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, width), wpe=nn.Embedding(seq, width),
            h=nn.ModuleList([HFBlock(width, heads, seq) for _ in range(layers)]), ln_f=nn.LayerNorm(width)))
        for p in self.parameters():
            if p.dim() == 1:      # LayerNorm: not the identity, so that loading them is checked
                nn.init.normal_(p, 1.0 if p.shape[0] == width else 0.0, 0.1)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.lm_head.weight = self.transformer.wte.weight

    def forward(self, idx, targets):
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(idx.size(1)))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def lm_batch(batch=2, seq=8, vocab=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab, (batch, seq + 1), generator=g)
    return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


def hf_checkpoint(model):
    """What save_pretrained writes of GPT2LMHeadModel: parameters and
    buffers, without the tied lm_head.weight."""
    return {n: t.detach().clone() for n, t in model.state_dict().items() if n != "lm_head.weight"}


def torch_sgd(model, batch, steps, lr):
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for _ in range(steps):
        optimizer.zero_grad()
        model(*batch).backward()
        optimizer.step()


# --- the reader and writer ------------------------------------------------------------

def reference_library():
    return pytest.importorskip("safetensors.torch", reason="Hugging Face's safetensors is not installed for this "
                               "Python (the virtual environment of scripts/setup.sh has it)")


def test_reference_library_reads_ours_and_we_read_its():
    library = reference_library()
    import tempfile
    tensors = {"f32": torch.randn(3, 4), "bf16": torch.randn(5).to(torch.bfloat16), "f16": torch.randn(2, 2).half(),
               "f64": torch.randn(2).double(), "i64": torch.arange(6).reshape(2, 3), "i32": torch.arange(3).int(),
               "bool": torch.tensor([True, False]), "empty": torch.zeros(0, 3)}
    with tempfile.TemporaryDirectory() as tmp:
        library.save_file(tensors, f"{tmp}/theirs.safetensors", metadata={"format": "pt"})
        ours = st.load(f"{tmp}/theirs.safetensors")
        for name, t in tensors.items():
            assert np.array_equal(ours[name], t.float().numpy() if name == "bf16" else t.numpy()), name
        st.save(f"{tmp}/ours.safetensors", tensors, metadata={"format": "pt"})
        back = library.load_file(f"{tmp}/ours.safetensors")
        assert set(back) == set(tensors)
        for name, t in tensors.items():
            assert back[name].dtype == t.dtype and torch.equal(back[name], t), name


def test_truncated_files_and_bad_headers_are_errors(tmp_path):
    good = tmp_path / "good.safetensors"
    st.save(good, {"w": np.ones((4, 4), np.float32)})
    data = good.read_bytes()
    (tmp_path / "cut.safetensors").write_bytes(data[:-8])
    with pytest.raises(st.SafetensorsError, match=r"cut.safetensors': tensor 'w' lies at bytes \[0, 64\) of the "
                                                  r"data, which holds 56 bytes: the file is truncated"):
        st.load(tmp_path / "cut.safetensors")
    (tmp_path / "long.safetensors").write_bytes(struct.pack("<Q", 1 << 40) + b"{}")
    with pytest.raises(st.SafetensorsError, match="header length 1099511627776 runs past the end of the file"):
        st.load(tmp_path / "long.safetensors")
    with pytest.raises(st.SafetensorsError, match="has 3 bytes"):
        (tmp_path / "tiny.safetensors").write_bytes(b"abc")
        st.load(tmp_path / "tiny.safetensors")


# --- the name map ---------------------------------------------------------------------

def test_hf_gpt2_map_renames_and_transposes_both_ways():
    assert HF_GPT2.to_module("h.3.attn.c_attn.weight") == ("transformer.h.3.attn.c_attn.weight", True)
    assert HF_GPT2.to_module("transformer.h.0.mlp.c_proj.weight") == ("transformer.h.0.mlp.c_proj.weight", True)
    assert HF_GPT2.to_module("h.0.attn.c_attn.bias") == ("transformer.h.0.attn.c_attn.bias", False)
    assert HF_GPT2.to_module("wte.weight") == ("transformer.wte.weight", False)
    assert HF_GPT2.to_module("lm_head.weight") == ("lm_head.weight", False)
    assert HF_GPT2.to_module("h.1.attn.bias") is None            # a buffer
    assert HF_GPT2.to_file("transformer.h.1.mlp.c_fc.weight") == ("transformer.h.1.mlp.c_fc.weight", True)
    assert HF_GPT2.to_file("transformer.ln_f.bias") == ("transformer.ln_f.bias", False)
    custom = NameMap((NameRule("layers.{n}.w", "blocks.{n}.weight", transpose=True),))
    assert custom.to_module("layers.12.w") == ("blocks.12.weight", True)
    assert custom.to_file("blocks.12.weight") == ("layers.12.w", True)
    assert custom.to_module("other") == ("other", False)


def test_nanogpt_module_loads_a_hugging_face_checkpoint(tmp_path):
    """A module written with nn.Linear (nanoGPT) loads an HF GPT-2 file
    through HF_GPT2: the same loss as the HF-layout module it came from, and
    save_safetensors gives the file's tensors back."""
    import torch_models
    hf = HFGPT2(vocab=40, seq=8, width=32, heads=4, layers=2)
    path = st.save(tmp_path / "model.safetensors",
                   {n.removeprefix("transformer."): t for n, t in hf_checkpoint(hf).items()})
    nano, _ = torch_models.gpt2(layers=2, heads=4, width=32, vocab=40, seq=8, seed=1)
    batch = lm_batch()
    program = rtx.compile(nano, batch, params=str(path), name_map=HF_GPT2)
    loss, _ = program.gradients(dict(zip((s.name for s in program.model_inputs), batch)))
    assert rel_err(loss, hf(*batch).item()) <= 1e-5
    program.save_safetensors(tmp_path / "back.safetensors")
    back, original = st.load(tmp_path / "back.safetensors"), hf.state_dict()
    for name, t in original.items():
        if not name.endswith("attn.bias"):
            assert np.array_equal(back[name], t.numpy()), name


# --- the acceptance test: HF GPT-2 on tp=2, in and out ---------------------------------

def test_hf_gpt2_safetensors_trains_on_tp2_and_saves_back(tmp_path):
    original = HFGPT2(seed=0)
    path = st.save(tmp_path / "model.safetensors", hf_checkpoint(original))
    batch = lm_batch()
    # Another initialisation: only params= can make it train like `original`.
    model = HFGPT2(seed=1)
    # The MLP's Conv1D weights split by hints (seeding by structure finds
    # nn.Linear's), so that each rank reads its block of [in, out] tensors.
    hints = {"mlp.c_fc.weight": "column", "mlp.c_fc.bias": "column", "mlp.c_proj.weight": "row"}
    program = rtx.compile(model, batch, group=rtx.init("cpu", 2, env={}), parallel=rtx.ParallelConfig(tp=2),
                          sharding=rtx.ShardingConfig(tp_hints=hints), optimizer=rtx.SGD(lr=0.5), params=str(path))
    assert re.search(r'rtx\.param = "transformer\.h\.0\.mlp\.c_fc\.weight"[^}]*\[\[\], \["tp"\]\]', program.train_ir)
    result = program.train(dict(zip((s.name for s in program.model_inputs), batch)), steps=3)
    saved = program.save_safetensors(tmp_path / "trained.safetensors")

    reference = copy.deepcopy(original)
    torch_sgd(reference, batch, 3, lr=0.5)
    try:        # Hugging Face's reader where this Python has it, else rtx's
        from safetensors.torch import load_file
        trained = load_file(str(saved))
    except ImportError:
        trained = {n: torch.from_numpy(np.array(a)) for n, a in st.load(saved).items()}
    # The original module loads the file: strict on its parameters, its
    # buffers (the causal masks) from its own state dict.
    buffers = {n: b for n, b in original.named_buffers()}
    original.load_state_dict({**buffers, **trained}, strict=True)
    state = program.state_dict()
    for name, p in original.named_parameters():
        assert torch.equal(p.detach(), state[name]), name
        assert rel_err(p.detach().numpy(), reference.get_parameter(name).detach().numpy()) <= GRAD_TOL, name
    assert torch.equal(state["lm_head.weight"], state["transformer.wte.weight"])
    assert np.isfinite(result.losses).all()


# --- parts of a user's tensor (rtx.part_of) ----------------------------------------------

# w [6, 8] is given whole; the IR holds its column halves as two parameters.
PARTS = """
func.func @parts() -> tensor<f32> {
  %x = rtx.input "x" : tensor<4x6xf32>
  %w0 = rtx.param "w@0" normal(0.0, 0.1) {rtx.part_of = {name = "w", dim = 1 : i64, offset = 0 : i64}} : tensor<6x4xf32>
  %w1 = rtx.param "w@1" normal(0.0, 0.1) {rtx.part_of = {name = "w", dim = 1 : i64, offset = 4 : i64}} : tensor<6x4xf32>
  %y0 = rtx.matmul %x, %w0 : tensor<4x6xf32>, tensor<6x4xf32> -> tensor<4x4xf32>
  %y1 = rtx.matmul %x, %w1 : tensor<4x6xf32>, tensor<6x4xf32> -> tensor<4x4xf32>
  %g = rtx.gelu %y1 : tensor<4x4xf32>
  %p = rtx.mul %y0, %g : tensor<4x4xf32>
  %s = rtx.mul %p, %p : tensor<4x4xf32>
  %l = rtx.reduce mean %s dims [0, 1] : tensor<4x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
"""


def test_parts_load_from_the_users_tensor_and_come_back_whole(tmp_path):
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((6, 8)).astype(np.float32), rng.standard_normal((4, 6)).astype(np.float32)
    path = st.save(tmp_path / "w.safetensors", {"w": w})
    program = rtx.compile(PARTS, optimizer=rtx.SGD(lr=0.1), params=str(path))
    assert [(s.name, s.shape) for s in program.param_specs] == [("w", (6, 8))]
    result = program.train({"x": x}, steps=2)
    state = program.state_dict()
    assert list(state) == ["w"] and list(result.params) == ["w"]
    assert list(program.gradients({"x": x})[1]) == ["w"]

    reference = torch.tensor(w, requires_grad=True)
    for _ in range(2):
        y = torch.tensor(x) @ reference
        loss = ((y[:, :4] * F.gelu(y[:, 4:])) ** 2).mean()
        grad, = torch.autograd.grad(loss, reference)
        reference = (reference - 0.1 * grad).detach().requires_grad_()
    assert rel_err(state["w"].numpy(), reference.detach().numpy()) <= GRAD_TOL


def test_shards_named_by_an_index_load_as_one_checkpoint(tmp_path):
    a, b = np.arange(4, dtype=np.float32), np.ones((2, 3), np.float64)
    st.save(tmp_path / "model-00001-of-00002.safetensors", {"a": a})
    st.save(tmp_path / "model-00002-of-00002.safetensors", {"b": b})
    (tmp_path / st.INDEX_NAME).write_text('{"metadata": {}, "weight_map": {"a": "model-00001-of-00002.safetensors", '
                                          '"b": "model-00002-of-00002.safetensors"}}')
    loaded = st.load(tmp_path)
    assert sorted(loaded) == ["a", "b"] and np.array_equal(loaded["a"], a) and loaded["b"].dtype == np.float64
    assert st.names(tmp_path) == {"a": ("F32", (4,)), "b": ("F64", (2, 3))}


def test_state_dicts_skip_buffers_and_take_a_tied_weight_by_any_name():
    model = HFGPT2(layers=1)
    weights = rtx.weights.Weights.of_module(model, None)
    assert weights.aliases == {"lm_head.weight": "transformer.wte.weight"}
    state = model.state_dict()
    params = weights.params_in(state)
    assert "transformer.h.0.attn.bias" not in params and "lm_head.weight" not in params
    only_head = {n: t for n, t in state.items() if n != "transformer.wte.weight"}
    assert np.array_equal(weights.params_in(only_head)["transformer.wte.weight"], state["lm_head.weight"].numpy())
