"""Import without running the model: the importer traces on meta tensors
(no activation is allocated), computes constants for real on the CPU, imports
models built on the meta device, and names a meta buffer whose value it
needs. Numerical checks compare rtx-run with PyTorch (design.md tolerances)."""
import re
import subprocess
import sys

import pytest

from util import ROOT, TORCH_SKIP_REASON, run_text

torch = pytest.importorskip("torch", reason=TORCH_SKIP_REASON)

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torch_models  # noqa: E402
from rtx.errors import TorchImportError, UnsupportedOpError  # noqa: E402
from rtx.importer import _bind, import_module, trace  # noqa: E402
from test_import import GRAD_TOL, LOSS_TOL, ZOO, import_and_check  # noqa: E402


# --- nothing traced has storage ------------------------------------------------------------------

@pytest.mark.parametrize("name", ["gpt2", "llama", "vit", "mlp"])
def test_every_traced_value_is_a_meta_tensor(name):
    model, inputs = torch_models.EXAMPLES[name]()
    originals = {n: p for n, p in model.named_parameters()}
    graph, out = trace(model, _bind(model, inputs))
    assert graph.nodes and all(t.is_meta for node in graph.nodes for t in node.tensors)
    assert all(t.is_meta for t in torch_models_flatten(out))
    assert graph.on_zeros == []                   # every op of the examples has a meta kernel
    # Leaves: inputs hold the example values, parameters the module's own, constants real values.
    for meta in graph.metas:
        leaf = meta.leaf
        if leaf is None:
            continue
        if leaf.kind == "param":
            assert leaf.tensor is originals[leaf.name] and not leaf.tensor.is_meta
        else:
            assert not leaf.tensor.is_meta, leaf
    # The module has its own parameters back, and still runs.
    assert all(p is originals[n] and not p.is_meta for n, p in model.named_parameters())
    example = [m.leaf.tensor for m in graph.metas if m.leaf is not None and m.leaf.kind == "input"]
    assert example and all(v is x for v, x in zip(example, inputs))
    model(*inputs)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_every_op_of_the_zoo_has_a_meta_form(name):
    """No call of test_import's op zoo needs to run on zeros: each has a
    meta kernel in PyTorch, or a form the tracer gives it (cross_entropy over
    [N, C, d], repeat_interleave)."""
    make, inputs = ZOO[name]
    model, example = make(), inputs()
    graph, _ = trace(model, _bind(model, example))
    assert graph.on_zeros == [] and all(t.is_meta for node in graph.nodes for t in node.tensors)


def torch_models_flatten(out):
    from rtx.torch_graph import flatten
    return flatten(out)


MEMORY_PROBE = r"""
import resource, sys
sys.path[:0] = [{python!r}, {examples!r}]
import torch, torch_models
from rtx.importer import import_module
def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
for batch in (1, 512):
    model, inputs = torch_models.gpt2(layers=2, heads=2, width=64, vocab=512, seq=128, batch=batch)
    import_module(model, inputs).text()
    print(peak())
"""


def test_peak_memory_does_not_grow_with_the_batch():
    """GPT at batch 512 x 128: run for real, its forward pass would hold
    about 1 GB of activations (logits alone 134 MB); traced on meta tensors,
    the peak memory of the process grows by the example inputs (1 MB) only."""
    code = MEMORY_PROBE.format(python=str(ROOT / "python"), examples=str(ROOT / "examples"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    small, large = (int(x) for x in out.split())
    assert large - small < 64 * 2 ** 20, f"peak RSS grew by {(large - small) / 2 ** 20:.0f} MiB"


# --- constants are computed for real on the CPU ---------------------------------------------------

class DeviceAware(nn.Module):
    """Code that follows its inputs' device, as most models do: positions,
    masks and tables made with device=x.device or moved with .to(x.device),
    a constant moved to the device of a traced tensor, and a traced tensor
    moved to the CPU."""

    def __init__(self, width=8, seq=40):
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.register_buffer("scale", torch.linspace(0.5, 1.5, width))
        # A table of more than 1024 elements (written as raw bytes) and a
        # boolean mask of 1600 (bit-packed).
        self.register_buffer("table", torch.randn(seq, width * 8))
        self.register_buffer("mask", torch.rand(seq, seq) > 0.7)

    def forward(self, x):
        B, T, C = x.shape
        pos = torch.arange(T, device=x.device).float()                    # untraced: runs on the CPU
        causal = torch.ones(T, T, device=x.device).tril().to(x.device)  # .to(meta) of a constant: stays
        h = self.proj(x).cpu() * self.scale.to(x.device) + pos[None, :, None] / T
        scores = h @ h.transpose(1, 2)
        scores = scores.masked_fill(causal == 0, -1e4).masked_fill(self.mask[:T, :T], -1e3)
        mixed = scores.softmax(-1) @ h
        table = self.table[:T].to(x)                                      # .to(traced): the traced's device
        wide = (x.repeat(1, 1, 8) * table).mean()
        return mixed.pow(2).mean() + wide + x.new_ones(()).sum() * 0.5 + torch.zeros_like(h).sum()


def test_constants_follow_the_cpu_while_traced_values_are_meta(tmp_path):
    torch.manual_seed(3)
    model = DeviceAware()
    loss_error, grad_errors, imported = import_and_check(model, (torch.randn(2, 40, 8),), tmp_path)
    assert loss_error <= LOSS_TOL, loss_error
    assert max(grad_errors.values()) <= GRAD_TOL, grad_errors
    text = imported.text()
    assert re.search(r'dense<"0x[0-9A-F]+"> : tensor<40x64xf32>', text)     # the table, as raw bytes
    assert re.search(r'dense<"0x[0-9A-F]+"> : tensor<40x40xi1>', text)      # the mask, bit-packed


def test_equal_constants_are_one_rtx_constant():
    """The Llama example rebuilds its rotary tables and mask in every layer:
    they enter the IR once."""
    model, inputs = torch_models.llama(layers=3)
    text = import_module(model, inputs).text()
    constants = [line for line in text.splitlines() if "rtx.constant dense<[" in line]
    assert len([c for c in constants if c.endswith("tensor<8x8xf32>")]) == 2, constants   # cos, sin


def test_an_in_place_update_of_a_constant_by_a_traced_value_is_refused():
    class Accumulate(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(4))

        def forward(self, x):
            total = torch.zeros(4)
            total.add_(x * self.w)
            return total.sum()
    with pytest.raises(UnsupportedOpError, match="in-place update of a constant"):
        import_module(Accumulate(), (torch.randn(4),))


def test_reading_a_traced_value_is_refused_before_it_runs():
    class Item(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(4))

        def forward(self, x):
            return x * self.w * (x * self.w).sum().item()
    with pytest.raises(UnsupportedOpError, match="data-dependent control flow") as info:
        import_module(Item(), (torch.randn(4),))
    # The tracer names the torch call, torch.export (PyTorch 2) the ATen op.
    assert info.value.op in ("torch.Tensor.item", "aten.item.default")


# --- a model built on the meta device -----------------------------------------------------------

class TinyLlama(nn.Module):
    """A Llama-style model whose weights are made on `device` (the way
    Hugging Face and torchtitan build big models: factory device= arguments),
    with a norm, a bias and an embedding; its rotary table is computed in
    forward, on the device of its input."""

    def __init__(self, device=None, vocab=11, width=8, heads=2):
        super().__init__()
        self.heads = heads
        self.embed = nn.Embedding(vocab, width, device=device)
        self.norm = torch_models.RMSNorm(width, 1e-6).to(device)
        self.qkv = nn.Linear(width, 3 * width, bias=True, device=device)
        self.out = nn.LayerNorm(width, device=device)
        self.head = nn.Linear(width, vocab, bias=False, device=device)
        self.gain = nn.Parameter(torch.full((width,), 2.0, device=device))

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.embed(idx)
        q, k, v = self.qkv(self.norm(x)).split(x.shape[-1], dim=-1)
        cos, sin = torch_models.rotary_tables(T, x.shape[-1], 10000.0)
        q = q * cos.to(idx.device) + torch_models.rotate_half(q) * sin.to(idx.device)
        att = (q @ k.transpose(-2, -1)).masked_fill(torch.ones(T, T, device=idx.device).triu(1).bool(), float("-inf"))
        y = self.out(att.softmax(-1) @ v) * self.gain
        return F.cross_entropy(self.head(y).view(-1, self.head.out_features), targets.view(-1))


def _without_initializers(text):
    return re.sub(r'(rtx\.param "[^"]+") [^:]*:', r"\1 :", text)


def test_a_model_on_the_meta_device_imports_with_initializers_by_module_type(tmp_path):
    torch.manual_seed(0)
    inputs = torch_models.lm_batch(2, 6, 11)
    meta = import_module(TinyLlama(device="meta"), inputs)
    real = import_module(TinyLlama(), inputs)
    text = meta.text()
    # The same program as the model on the CPU, but for the parameters' initializers.
    assert _without_initializers(text) == _without_initializers(real.text())
    inits = dict(re.findall(r'rtx\.param "([^"]+)" ([^:]*?) :', text))
    assert inits == {"embed.weight": "normal(0.0, 0.02)", "norm.weight": "ones", "qkv.weight": "normal(0.0, 0.02)",
                     "qkv.bias": "zeros", "out.weight": "ones", "out.bias": "zeros", "head.weight": "normal(0.0, 0.02)",
                     "gain": "ones"}
    # No values to give: programs start from the initializers, and they run.
    assert meta.param_arrays() is None and all(p.is_meta for p in meta.params.values())
    with pytest.raises(TorchImportError, match="parameter 'embed.weight' is on the meta device"):
        meta.save_params(tmp_path / "params")
    result = run_text(text, tmp_path, inputs=meta.save_inputs(tmp_path / "inputs"))
    loss = float(result.results[0].value)
    assert abs(loss - 2.4) < 0.5, loss                               # about log(11): a uniform guess


def test_param_arrays_are_read_one_at_a_time():
    model, inputs = torch_models.gpt2()
    arrays = import_module(model, inputs).param_arrays()
    assert set(arrays) == {n for n, _ in model.named_parameters()}
    assert (arrays["transformer.wte.weight"] == model.transformer.wte.weight.detach().numpy()).all()


class MetaBuffers(nn.Module):
    """A model built on the meta device: a buffer read for its shape only,
    and one whose values (a causal mask) enter the computation."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4, device="meta")
        self.register_buffer("positions", torch.empty(5, 4, device="meta"))
        self.register_buffer("mask", torch.empty(5, 5, dtype=torch.bool, device="meta"))

    def forward(self, x):
        T = self.positions.shape[0]                       # the shape of a meta buffer: known
        scores = self.proj(x) @ x.transpose(1, 2)
        return scores.masked_fill(self.mask[:T, :T], 0.0).sum()


def test_a_meta_buffer_whose_value_is_needed_is_named():
    model = MetaBuffers()
    with pytest.raises(TorchImportError) as info:
        import_module(model, (torch.randn(2, 5, 4),))
    message = str(info.value)
    assert "buffer 'mask'" in message and "meta device" in message and "Materialise" in message
    assert "positions" not in message
    # Materialised on the CPU, it imports (the weights may stay on the meta device).
    model.mask = torch.ones(5, 5, dtype=torch.bool).triu(1)
    text = import_module(model, (torch.randn(2, 5, 4),)).text()
    assert "rtx.masked_fill" in text


def test_a_meta_example_input_imports_but_has_no_value_to_save(tmp_path):
    model, (idx, targets) = torch_models.gpt2()
    imported = import_module(model, (idx.to("meta"), targets))
    assert imported.returns_loss
    with pytest.raises(TorchImportError, match="input 'idx' is on the meta device"):
        imported.save_inputs(tmp_path)


# --- initializers from a sample ------------------------------------------------------------------

def test_initializers_of_large_parameters_come_from_a_sample():
    class Big(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(1500, 1000) * 0.5 + 0.25)    # 1.5M values: sampled
            self.c = nn.Parameter(torch.full((1500, 1000), 3.0))

        def forward(self, x):
            return (x @ self.w).sum() + (x @ self.c).sum()
    text = import_module(Big(), (torch.randn(2, 1500),)).text()
    mean, std = (float(v) for v in re.search(r'"w" normal\(([^,]+), ([^)]+)\)', text).groups())
    assert abs(mean - 0.25) < 0.01 and abs(std - 0.5) < 0.01, (mean, std)
    assert '"c" constant(3.0)' in text


def test_the_meta_device_example_of_the_docs_runs():
    """docs/python.md's example of a model built on the meta device (not among
    test_docs.py's runnable blocks, which start with `import rtx`)."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "python.md").read_text(), re.S)
    (code,) = [b for b in blocks if 'device="meta"' in b]
    env = {"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "None", done.stderr


def test_a_model_on_the_meta_device_trains_from_its_initializers():
    """rtx.compile of a meta-device model: no values (Program.params is None
    until it trains), and training from the initializers lowers the loss."""
    import rtx
    idx, targets = torch_models.lm_batch(2, 6, 11)
    program = rtx.compile(TinyLlama(device="meta"), (idx, targets), optimizer=rtx.AdamW(lr=3e-2))
    assert program.params is None
    result = program.train({"idx": idx, "targets": targets}, steps=6)
    assert result.losses[-1] < 0.8 * result.losses[0], result.losses
    assert result.params["head.weight"].shape == (11, 8)


@pytest.mark.parametrize("fn", [lambda h: h[h > 0].sum(), lambda h: torch.nonzero(h).float().sum(),
                                lambda h: h.masked_select(h > 0).sum(), lambda h: torch.unique(h).sum()],
                         ids=["boolean-index", "nonzero", "masked_select", "unique"])
def test_data_dependent_shapes_are_refused(fn):
    """Zeros would give these calls a shape, but not the one the values give."""
    class Shape(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(4))

        def forward(self, x):
            return fn(x * self.w)
    with pytest.raises(UnsupportedOpError, match="data-dependent shapes cannot be imported"):
        import_module(Shape(), (torch.randn(3, 4),))
