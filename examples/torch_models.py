"""The example models as PyTorch modules, written the way their communities
write them: GPT-2 as in nanoGPT, a Llama-style block as in Meta's and
Hugging Face's code (RMSNorm, rotate-half rotary embedding, grouped
key/value heads, SiLU-gated MLP, no biases), a ViT as in timm, and an MLP.

Each computes the same function as its builder twin in python/rtx/models.py,
with the same parameter names, so PyTorch's weights load into either.
`EXAMPLES` maps a name to a factory returning (module, example inputs);
`python3 -m rtx import examples/torch_models.py:gpt2` imports one.
"""
from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from rtx import models  # noqa: E402  (the builder twins)

Example = Tuple[nn.Module, Tuple[torch.Tensor, ...]]


# --- GPT-2, nanoGPT style -------------------------------------------------------------

@dataclass
class GPTConfig:
    block_size: int = 8           # sequence length
    vocab_size: int = 37
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32
    dropout: float = 0.0
    bias: bool = True

    def builder(self, batch: int) -> models.GPTConfig:
        return models.GPTConfig(vocab=self.vocab_size, seq=self.block_size, batch=batch, layers=self.n_layer,
                                heads=self.n_head, width=self.n_embd, bias=self.bias)


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (PyTorch's has no bias=False)."""

    def __init__(self, ndim: int, bias: bool) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        # The causal mask, a buffer: the importer makes it an rtx.constant.
        self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                             .view(1, 1, config.block_size, config.block_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class GPTMLP(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU(approximate="tanh")    # GPT-2's GELU
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = GPTMLP(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight   # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx: torch.Tensor, targets: Optional[torch.Tensor] = None):
        device = idx.device
        b, t = idx.size()
        assert t <= self.config.block_size
        pos = torch.arange(0, t, dtype=torch.long, device=device)
        tok_emb = self.transformer.wte(idx)
        pos_emb = self.transformer.wpe(pos)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            logits = self.lm_head(x[:, [-1], :])
            loss = None
        return logits, loss


def lm_batch(batch: int, seq: int, vocab: int, seed: int = 0) -> Tuple[torch.Tensor, torch.Tensor]:
    """Next-token tokens and targets, as nanoGPT's get_batch makes them."""
    g = torch.Generator().manual_seed(seed)
    data = torch.randint(0, vocab, (batch, seq + 1), generator=g)
    return data[:, :-1].contiguous(), data[:, 1:].contiguous()


# --- a Llama-style block ------------------------------------------------------------------

@dataclass
class LlamaConfig:
    dim: int = 32
    n_layers: int = 1
    n_heads: int = 4
    n_kv_heads: int = 2
    hidden_dim: int = 64
    norm_eps: float = 1e-6
    rope_theta: float = 10000.0

    def builder(self, batch: int, seq: int) -> models.LlamaConfig:
        if self.n_layers != 1:
            raise ValueError("the builder twin (models.llama_block) has one layer")
        return models.LlamaConfig(batch=batch, seq=seq, width=self.dim, heads=self.n_heads,
                                  kv_heads=self.n_kv_heads, hidden=self.hidden_dim)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        norm = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return norm.type_as(x) * self.weight


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotary_tables(seq: int, head_dim: int, theta: float) -> Tuple[torch.Tensor, torch.Tensor]:
    """cos and sin [seq, head_dim] of position * theta^(-2i/head_dim), as
    Hugging Face's LlamaRotaryEmbedding computes them."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
    freqs = torch.outer(torch.arange(seq).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """[B, Hkv, S, D] -> [B, Hkv * n_rep, S, D], each key/value head repeated."""
    b, h, s, d = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)


class Attention(nn.Module):
    def __init__(self, c: LlamaConfig) -> None:
        super().__init__()
        self.n_heads, self.n_kv_heads = c.n_heads, c.n_kv_heads
        self.head_dim = c.dim // c.n_heads
        self.theta = c.rope_theta
        self.wq = nn.Linear(c.dim, c.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(c.dim, c.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(c.dim, c.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(c.n_heads * self.head_dim, c.dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = rotary_tables(T, self.head_dim, self.theta)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = repeat_kv(k, self.n_heads // self.n_kv_heads)
        v = repeat_kv(v, self.n_heads // self.n_kv_heads)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        mask = torch.full((T, T), float("-inf")).triu(1)
        scores = F.softmax((scores + mask).float(), dim=-1).type_as(q)
        out = torch.matmul(scores, v).transpose(1, 2).contiguous().view(B, T, -1)
        return self.wo(out)


class FeedForward(nn.Module):
    def __init__(self, dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, c: LlamaConfig) -> None:
        super().__init__()
        self.attention_norm = RMSNorm(c.dim, c.norm_eps)
        self.attention = Attention(c)
        self.ffn_norm = RMSNorm(c.dim, c.norm_eps)
        self.feed_forward = FeedForward(c.dim, c.hidden_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.attention(self.attention_norm(x))
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    """Llama-style blocks with a stand-in objective, the mean square of the
    output (as models.llama_block), which exercises every gradient."""

    def __init__(self, c: LlamaConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList([TransformerBlock(c) for _ in range(c.n_layers)])
        for name, p in self.named_parameters():
            if not name.endswith("norm.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return (x * x).mean()


# --- ViT, timm style ----------------------------------------------------------------------------

@dataclass
class ViTConfig:
    image: int = 8
    patch: int = 4
    channels: int = 3
    width: int = 32
    heads: int = 2
    layers: int = 1
    hidden: int = 64
    classes: int = 10
    eps: float = 1e-6

    def builder(self, batch: int) -> models.ViTConfig:
        return models.ViTConfig(batch=batch, image=self.image, patch=self.patch, channels=self.channels,
                                width=self.width, heads=self.heads, layers=self.layers, hidden=self.hidden,
                                classes=self.classes, eps=self.eps)


class PatchEmbed(nn.Module):
    """Cuts [B, C, H, W] images into P x P patches and embeds each with a
    linear layer (a convolution with stride P, written as a matrix product)."""

    def __init__(self, c: ViTConfig) -> None:
        super().__init__()
        self.patch = c.patch
        self.proj = nn.Linear(c.patch * c.patch * c.channels, c.width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, C, H, W = x.shape
        p = self.patch
        x = x.reshape(B, C, H // p, p, W // p, p).permute(0, 2, 4, 3, 5, 1)
        return self.proj(x.reshape(B, (H // p) * (W // p), p * p * C))


class ViTAttention(nn.Module):
    def __init__(self, c: ViTConfig) -> None:
        super().__init__()
        self.num_heads = c.heads
        self.scale = (c.width // c.heads) ** -0.5
        self.qkv = nn.Linear(c.width, 3 * c.width)
        self.proj = nn.Linear(c.width, c.width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class ViTMLP(nn.Module):
    def __init__(self, c: ViTConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(c.width, c.hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(c.hidden, c.width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class ViTBlock(nn.Module):
    def __init__(self, c: ViTConfig) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(c.width, eps=c.eps)
        self.attn = ViTAttention(c)
        self.norm2 = nn.LayerNorm(c.width, eps=c.eps)
        self.mlp = ViTMLP(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    def __init__(self, c: ViTConfig) -> None:
        super().__init__()
        n = (c.image // c.patch) ** 2
        self.patch_embed = PatchEmbed(c)
        self.cls_token = nn.Parameter(torch.randn(1, 1, c.width) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, n + 1, c.width) * 0.02)
        self.blocks = nn.ModuleList([ViTBlock(c) for _ in range(c.layers)])
        self.norm = nn.LayerNorm(c.width, eps=c.eps)
        self.head = nn.Linear(c.width, c.classes)

    def forward(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(images)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x)[:, 0])
        return F.cross_entropy(logits, labels)


# --- an MLP -----------------------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self, inputs: int = 32, hidden: int = 64, classes: int = 10) -> None:
        super().__init__()
        self.fc1 = nn.Linear(inputs, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(self.fc2(self.act(self.fc1(x))), labels)


# --- factories: (module, example inputs) -------------------------------------------------------------

def gpt2(layers: int = 2, heads: int = 2, width: int = 32, vocab: int = 37, seq: int = 8, batch: int = 2,
         bias: bool = True, seed: int = 0) -> Example:
    torch.manual_seed(seed)
    model = GPT(GPTConfig(block_size=seq, vocab_size=vocab, n_layer=layers, n_head=heads, n_embd=width, bias=bias))
    return model, lm_batch(batch, seq, vocab, seed)


def llama(layers: int = 1, width: int = 32, heads: int = 4, kv_heads: int = 2, hidden: int = 64, seq: int = 8,
          batch: int = 2, seed: int = 0) -> Example:
    torch.manual_seed(seed)
    model = Llama(LlamaConfig(dim=width, n_layers=layers, n_heads=heads, n_kv_heads=kv_heads, hidden_dim=hidden))
    return model, (torch.randn(batch, seq, width),)


def vit(layers: int = 1, image: int = 8, patch: int = 4, channels: int = 3, width: int = 32, heads: int = 2,
        hidden: int = 64, classes: int = 10, batch: int = 2, seed: int = 0) -> Example:
    torch.manual_seed(seed)
    model = ViT(ViTConfig(image=image, patch=patch, channels=channels, width=width, heads=heads, layers=layers,
                          hidden=hidden, classes=classes))
    return model, (torch.randn(batch, channels, image, image), torch.randint(0, classes, (batch,)))


def mlp(inputs: int = 32, hidden: int = 64, classes: int = 10, batch: int = 16, seed: int = 0) -> Example:
    torch.manual_seed(seed)
    model = MLP(inputs, hidden, classes)
    return model, (torch.randn(batch, inputs), torch.randint(0, classes, (batch,)))


EXAMPLES: Dict[str, Callable[..., Example]] = {"gpt2": gpt2, "llama": llama, "vit": vit, "mlp": mlp}
