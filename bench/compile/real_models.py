"""Models at their real size, written the way their communities write them,
for the import and planning benchmark (bench/compile/import_scale.py) and
`python3 -m rtx plan FILE.py:NAME`.

- gpt2_small: nanoGPT's GPT (examples/torch_models.py) at GPT-2 small's
  shape: 12 layers, width 768, 12 heads, vocabulary 50304, sequence 1024.
  Built for real (its weights are the ones save_params writes).
- llama3_8b: a Hugging Face-style Llama (LlamaForCausalLM's module names:
  embed_tokens, q_proj/k_proj/v_proj/o_proj, gate_proj/up_proj/down_proj,
  input_layernorm, RMSNorm, rotate_half rotary embeddings, grouped-query
  attention, SwiGLU, untied lm_head) at Llama-3-8B's shape: 32 layers,
  width 4096, 32 heads, 8 key/value heads, feed-forward 14336,
  vocabulary 128256. Built on the meta device: its 8B weights would not fit
  this machine's memory, and the planner needs their shapes only.

Each factory returns (module, example inputs), as `python3 -m rtx` expects.
"""
from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from typing import Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))

import torch_models  # noqa: E402  (nanoGPT's GPT)


def gpt2_small(batch: int = 8, seq: int = 1024, layers: int = 12, seed: int = 0):
    """GPT-2 small (124M parameters), nanoGPT style, at batch x seq tokens."""
    return torch_models.gpt2(layers=layers, heads=12, width=768, vocab=50304, seq=seq, batch=batch, seed=seed)


# --- Llama, Hugging Face style ---------------------------------------------------------------

@dataclass
class LlamaConfig:
    vocab_size: int = 128256
    hidden_size: int = 4096
    intermediate_size: int = 14336
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int = 8
    rms_norm_eps: float = 1e-5
    rope_theta: float = 500000.0


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size: int, eps: float, device=None, dtype=None) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size, device=device, dtype=dtype))
        self.variance_epsilon = eps

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaRotaryEmbedding(nn.Module):
    """cos and sin of position * theta^(-2i/d), as Hugging Face computes them.
    inv_freq is made on the CPU whatever the weights' device: its values
    enter the model (rtx imports them as constants), and a buffer on the
    meta device has none."""

    def __init__(self, head_dim: int, theta: float) -> None:
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype=x.dtype), emb.sin().to(dtype=x.dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class LlamaAttention(nn.Module):
    def __init__(self, c: LlamaConfig, device=None, dtype=None) -> None:
        super().__init__()
        kw = dict(bias=False, device=device, dtype=dtype)
        self.head_dim = c.hidden_size // c.num_attention_heads
        self.num_heads, self.num_key_value_heads = c.num_attention_heads, c.num_key_value_heads
        self.q_proj = nn.Linear(c.hidden_size, c.num_attention_heads * self.head_dim, **kw)
        self.k_proj = nn.Linear(c.hidden_size, c.num_key_value_heads * self.head_dim, **kw)
        self.v_proj = nn.Linear(c.hidden_size, c.num_key_value_heads * self.head_dim, **kw)
        self.o_proj = nn.Linear(c.num_attention_heads * self.head_dim, c.hidden_size, **kw)

    def forward(self, hidden_states, position_embeddings, causal_mask):
        bsz, q_len, _ = hidden_states.size()
        q = self.q_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        cos, sin = position_embeddings
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        k = repeat_kv(k, self.num_heads // self.num_key_value_heads)
        v = repeat_kv(v, self.num_heads // self.num_key_value_heads)
        attn_weights = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        attn_weights = attn_weights + causal_mask
        attn_weights = F.softmax(attn_weights.float(), dim=-1).type_as(q)
        attn_output = torch.matmul(attn_weights, v).transpose(1, 2).contiguous()
        return self.o_proj(attn_output.reshape(bsz, q_len, -1))


class LlamaMLP(nn.Module):
    def __init__(self, c: LlamaConfig, device=None, dtype=None) -> None:
        super().__init__()
        kw = dict(bias=False, device=device, dtype=dtype)
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, **kw)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, **kw)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, **kw)
        self.act_fn = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, c: LlamaConfig, device=None, dtype=None) -> None:
        super().__init__()
        self.self_attn = LlamaAttention(c, device, dtype)
        self.mlp = LlamaMLP(c, device, dtype)
        self.input_layernorm = LlamaRMSNorm(c.hidden_size, c.rms_norm_eps, device, dtype)
        self.post_attention_layernorm = LlamaRMSNorm(c.hidden_size, c.rms_norm_eps, device, dtype)

    def forward(self, hidden_states, position_embeddings, causal_mask):
        residual = hidden_states
        hidden_states = self.self_attn(self.input_layernorm(hidden_states), position_embeddings, causal_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        return residual + self.mlp(self.post_attention_layernorm(hidden_states))


class LlamaModel(nn.Module):
    def __init__(self, c: LlamaConfig, device=None, dtype=None) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size, device=device, dtype=dtype)
        self.layers = nn.ModuleList([LlamaDecoderLayer(c, device, dtype) for _ in range(c.num_hidden_layers)])
        self.norm = LlamaRMSNorm(c.hidden_size, c.rms_norm_eps, device, dtype)
        self.rotary_emb = LlamaRotaryEmbedding(c.hidden_size // c.num_attention_heads, c.rope_theta)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        hidden_states = self.embed_tokens(input_ids)
        seq = input_ids.shape[1]
        position_ids = torch.arange(seq, device=input_ids.device).unsqueeze(0)
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        causal_mask = torch.full((seq, seq), float("-inf"), device=input_ids.device,
                                 dtype=hidden_states.dtype).triu(1)
        for layer in self.layers:
            hidden_states = layer(hidden_states, position_embeddings, causal_mask)
        return self.norm(hidden_states)


class LlamaForCausalLM(nn.Module):
    def __init__(self, c: LlamaConfig, device=None, dtype=None) -> None:
        super().__init__()
        self.model = LlamaModel(c, device, dtype)
        self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False, device=device, dtype=dtype)

    def forward(self, input_ids: torch.Tensor, labels: Optional[torch.Tensor] = None):
        logits = self.lm_head(self.model(input_ids))
        if labels is None:
            return logits
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), labels.view(-1))


def llama3_8b(batch: int = 16, seq: int = 8192, layers: int = 32, device: str = "meta",
              dtype: str = "float32", seed: int = 0):
    """Llama-3-8B's shape at batch x seq tokens, its weights on `device`
    (meta: shapes only) in `dtype`; inputs are next-token ids and labels."""
    config = LlamaConfig(num_hidden_layers=layers)
    model = LlamaForCausalLM(config, device=torch.device(device), dtype=getattr(torch, dtype))
    g = torch.Generator().manual_seed(seed)
    data = torch.randint(0, config.vocab_size, (batch, seq + 1), generator=g)
    return model, (data[:, :-1].contiguous(), data[:, 1:].contiguous())
