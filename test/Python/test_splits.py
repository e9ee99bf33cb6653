"""What tensor parallelism split: Program.splits (rtx.splits.SplitTable)
and ParallelConfig(strict=True), on models written as PyTorch users write
them (test/Python/zoo/)."""
import pytest

from util import TORCH_SKIP_REASON

torch = pytest.importorskip("torch", reason=TORCH_SKIP_REASON)

import rtx  # noqa: E402
from rtx.config import ConfigError  # noqa: E402
from rtx.tools import ToolError  # noqa: E402
from zoo import nanogpt  # noqa: E402


def _nanogpt():
    torch.manual_seed(0)
    model = nanogpt.GPT(nanogpt.GPTConfig(block_size=8, vocab_size=64, n_layer=1, n_head=4, n_embd=32,
                                          bias=True))
    idx = torch.randint(0, 64, (2, 8))
    return model, (idx, torch.randint(0, 64, (2, 8)))


def _compile(model, example, **parallel):
    config = rtx.ParallelConfig(**parallel)
    return rtx.compile(model, example, group=rtx.init("cpu", config.ranks, env={}), parallel=config)


def test_the_table_names_each_user_parameter_and_what_tp_does_to_it():
    model, example = _nanogpt()
    table = _compile(model, example, tp=2).splits
    # In the user's names (the tied head under the name the importer keeps);
    # the parts of the fused c_attn appear as the one tensor.
    assert {p.name for p in table.params} == {n for n, _ in model.named_parameters()}
    c_attn = table["transformer.h.0.attn.c_attn.weight"]
    assert c_attn.shape == (96, 32) and c_attn.parts == 3
    assert c_attn.axes["tp"] == "parts, dim 0 / 2"
    assert table["transformer.h.0.attn.c_proj.weight"].axes["tp"] == "dim 1 / 2"
    assert table["transformer.h.0.mlp.c_fc.weight"].axes["tp"] == "dim 0 / 2"
    # Row-parallel biases and norms are whole: added once after the all-reduce.
    whole = set(table.whole_on("tp"))
    assert "transformer.h.0.attn.c_proj.bias" in whole and "transformer.h.0.ln_1.weight" in whole
    assert not any(name.endswith(("c_attn.weight", "c_fc.weight", "c_proj.weight")) for name in whole)
    text = str(table)
    assert text.startswith("what each mesh axis does to each parameter (tp: ")
    assert "transformer.h.0.attn.c_attn.weight" in text and "(3 parts)" in text


def test_strict_refuses_a_projection_tp_leaves_whole():
    class Lone(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(8, 6)

        def forward(self, x, y):
            return torch.nn.functional.mse_loss(self.proj(x), y)

    example = (torch.randn(4, 8), torch.randn(4, 6))
    assert _compile(Lone(), example, tp=2).splits.whole_on("tp") == ["proj.weight", "proj.bias"]
    with pytest.raises(ToolError, match=r'parameter "proj.weight" of this rtx.linear stays whole on axis "tp" '
                                        r'of size 2: no Megatron pair'):
        _compile(Lone(), example, tp=2, strict=True)


def test_strict_needs_tp():
    with pytest.raises(ConfigError, match="parallel.strict checks what tp splits"):
        rtx.ParallelConfig(strict=True)
    with pytest.raises(ConfigError, match="parallel.strict must be True or False"):
        rtx.ParallelConfig(tp=2, strict="yes")


def test_a_weight_two_pipeline_stages_tie_is_one_row():
    model, example = _nanogpt()
    table = _compile(model, example, tp=2, pp=2, micro_batch=2).splits
    wte = table["transformer.wte.weight"]
    assert wte.parts == 1 and wte.axes["pp"] == "whole" and wte.axes["tp"] == "dim 0 / 2"
    assert table["transformer.h.0.attn.c_attn.weight"].parts == 3
