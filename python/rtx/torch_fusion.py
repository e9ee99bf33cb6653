"""Recognises attention written op by op in a recorded run and replaces it by
one call that lowers to rtx.attention, the op the sharding and pipeline
passes know (ring attention, head-parallel attention, its cost).

The pattern, in the forms nanoGPT, Hugging Face (GPT-2, Llama), Meta's
Llama and timm's ViT write it:

    scores = (q [* c]) @ (k [* c]).transpose(-2, -1) [* c]     [* c | / c]
    scores = mask(scores)                                            (optional)
    probs  = softmax(scores[.float()], dim=-1[, dtype=torch.float32])[.to(q.dtype) | .type_as(q)]
             [dropout with p = 0 or eval]
    out    = probs @ v

with q, k, v of shape [B, H, S, D]. The causal mask is one of

    scores.masked_fill(future, -inf | finfo.min)        (nanoGPT: a buffer's `== 0`)
    torch.where(visible, scores, -inf | finfo.min)      (HF GPT-2: a boolean buffer)
    scores + bias                                       (HF Llama, Meta: 0 or -inf | finfo.min)

where the mask is a constant (a buffer, `torch.full(...).triu(1)`), also
through casts such as Meta's `mask.type_as(h)`; `finfo.min` of the scores'
type gives the same probabilities as -inf (exp underflows to 0 either way).
Key and value heads repeated for grouped-query attention are traced back to
the shared heads, which rtx.attention takes as they are (query head h reads
key/value head h / (Hq / Hkv)): `x[:, :, None].expand(...).reshape(...)`
or `repeat_interleave(n, dim=1)` on [B, Hkv, S, D] (Hugging Face), and the
same on [B, S, Hkv, D] before the heads are moved forward by
`transpose(1, 2)` (Meta). F.scaled_dot_product_attention (PyTorch 2) with
repeated key/value heads, or with a constant causal attn_mask, is rewritten
the same way.

A match needs every intermediate value to be read by the pattern only, the
attention's element type for q, k, v and the result, conversions in
between that lose nothing (a float32 softmax of bfloat16 scores), and a mask
that is exactly causal; anything else stays op by op, which computes the
same function.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Optional, Set, Tuple

import torch

from .torch_graph import Graph, Node, Ref, users

ATTENTION = "rtx.attention"       # the op names of fused nodes (see torch_ops)
SWIGLU = "rtx.swiglu"
SDPA = "torch.nn.functional.scaled_dot_product_attention"
_SILU = {"torch.nn.functional.silu"}

_MATMUL = {"torch.matmul", "torch.Tensor.matmul", "torch.Tensor.__matmul__"}
_SOFTMAX = {"torch.nn.functional.softmax", "torch.softmax", "torch.Tensor.softmax"}
# Conversions of the element type (and device), which change no value of
# the pattern when they lose nothing; and copies.
_CASTS = {"torch.Tensor.float", "torch.Tensor.double", "torch.Tensor.half", "torch.Tensor.bfloat16",
          "torch.Tensor.to", "torch.Tensor.type", "torch.Tensor.type_as"}
_COPIES = {"torch.Tensor.contiguous"}
_DROPOUT = {"torch.nn.functional.dropout"}
_TRANSPOSE = {"torch.Tensor.transpose", "torch.transpose", "torch.Tensor.swapaxes", "torch.swapaxes",
              "torch.Tensor.swapdims", "torch.swapdims"}
_PERMUTE = {"torch.Tensor.permute", "torch.permute"}
_MUL = {"torch.Tensor.mul", "torch.mul", "torch.Tensor.__mul__", "torch.Tensor.__rmul__"}
_DIV = {"torch.Tensor.div", "torch.div", "torch.Tensor.__truediv__", "torch.true_divide"}
_ADD = {"torch.Tensor.add", "torch.add", "torch.Tensor.__add__", "torch.Tensor.__radd__"}
_MASKED_FILL = {"torch.Tensor.masked_fill", "torch.masked_fill"}
_WHERE = {"torch.where", "torch.Tensor.where"}
_RESHAPE = {"torch.Tensor.view", "torch.Tensor.reshape", "torch.reshape"}
_EXPAND = {"torch.Tensor.expand", "torch.Tensor.broadcast_to", "torch.broadcast_to"}
_INSERT_DIM = {"torch.Tensor.unsqueeze", "torch.unsqueeze", "torch.Tensor.__getitem__"} | _RESHAPE
_REPEAT_INTERLEAVE = {"torch.Tensor.repeat_interleave", "torch.repeat_interleave"}

_IDENTITY = (0, 1, 2, 3)
_SWAP_HEADS = (0, 2, 1, 3)        # [B, S, H, D] <-> [B, H, S, D]


def fuse_attention(graph: Graph, results: Tuple[int, ...]) -> int:
    """Rewrites every matching `probs @ v` call, and every
    F.scaled_dot_product_attention that reads repeated key/value heads or a
    constant causal mask, into an ATTENTION call (q, k, v, causal=,
    scale=, key_perm=, value_perm=: k and v as rtx.attention takes them
    after that permutation, None for none); the calls it subsumes become
    dead. `results` are the value ids the function returns. Returns the
    number fused."""
    matcher = _Matcher(graph, set(results))
    fused = 0
    for index, node in enumerate(graph.nodes):
        match = matcher.sdpa(node) if node.op == SDPA else matcher.attention(node)
        if match is not None:
            q, (k, key_perm), (v, value_perm), causal, scale = match
            kwargs = {"causal": causal, "scale": scale, "key_perm": key_perm, "value_perm": value_perm}
            graph.nodes[index] = Node(ATTENTION, (q, k, v), kwargs, node.outputs, node.tensors, node.where,
                                      node.source)
            fused += 1
    return fused


def fuse_swiglu(graph: Graph, results: Tuple[int, ...]) -> int:
    """Rewrites every `silu(gate) * up` (Llama's MLP activation, both
    factors of one shape and dtype, the silu read by the product only) into
    a SWIGLU call (gate, up); the silu becomes dead. Returns the number
    fused."""
    matcher = _Matcher(graph, set(results))
    fused = 0
    for index, node in enumerate(graph.nodes):
        if node.op not in _MUL or len(node.args) != 2 or node.kwargs:
            continue
        for silu_side, up in ((0, 1), (1, 0)):
            silu, other = node.args[silu_side], node.args[up]
            producer = matcher.producer(silu)
            if producer is None or producer.op not in _SILU or not matcher.private(silu) or \
                    not isinstance(other, Ref) or _arg(producer, 1, "inplace", False):
                continue
            gate = _arg(producer, 0, "input")
            if not isinstance(gate, Ref) or \
                    not matcher.shape(gate) == matcher.shape(other) == matcher.shape(silu) or \
                    not matcher.dtype(gate) == matcher.dtype(other) == matcher.dtype(silu):
                continue
            graph.nodes[index] = Node(SWIGLU, (gate, other), {}, node.outputs, node.tensors, node.where,
                                      node.source)
            fused += 1
            break
    return fused


def _arg(node: Node, index: int, name: str, default: Any = None) -> Any:
    """Argument `name` of a call, given by position or keyword."""
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


# A key or value operand: the value and the permutation that makes it [B, Hkv, S, D] (None: none).
Heads = Tuple[Ref, Optional[Tuple[int, ...]]]
Match = Tuple[Ref, Heads, Heads, bool, Optional[float]]


class _Matcher:
    def __init__(self, graph: Graph, results: set) -> None:
        self.graph = graph
        self.users = users(graph)
        self.results = results
        self.widened: Set[torch.dtype] = set()     # the types the current match computes in
        # Every layer reads the same mask: its value and verdicts are found once.
        self.consts: Dict[int, Optional[torch.Tensor]] = {}
        self.verdicts: Dict[Tuple[Any, ...], bool] = {}

    # -- queries on values ------------------------------------------------------------------
    def producer(self, ref: Any) -> Optional[Node]:
        if not isinstance(ref, Ref):
            return None
        index = self.graph.metas[ref.id].node
        return self.graph.nodes[index] if index is not None else None

    def shape(self, ref: Ref) -> Tuple[int, ...]:
        return self.graph.metas[ref.id].shape

    def dtype(self, ref: Ref) -> torch.dtype:
        return self.graph.metas[ref.id].dtype

    def private(self, ref: Ref) -> bool:
        """Read by exactly one call, and not returned."""
        return len(self.users.get(ref.id, [])) == 1 and ref.id not in self.results

    def const(self, ref: Any) -> Optional[torch.Tensor]:
        """The value of a constant: a constant leaf, or a conversion of one
        (Meta's `mask.type_as(h)` is a recorded call, since h is traced,
        but its value is the mask's)."""
        if not isinstance(ref, Ref):
            return None
        if ref.id not in self.consts:
            self.consts[ref.id] = self._const(ref)
        return self.consts[ref.id]

    def _const(self, ref: Ref) -> Optional[torch.Tensor]:
        meta = self.graph.metas[ref.id]
        if meta.leaf is not None:
            return meta.leaf.tensor if meta.leaf.kind == "const" else None
        node = self.producer(ref)
        if node.op in _CASTS | _COPIES and meta.dtype.is_floating_point:
            inner = self.const(_arg(node, 0, "input"))
            if inner is not None and inner.is_floating_point() and tuple(inner.shape) == meta.shape:
                return inner.to(meta.dtype)
        return None

    def is_future(self, t: torch.Tensor, scores: Tuple[int, ...], negated: bool = False) -> bool:
        """_is_future(~t if negated else t, scores), once per mask and shape."""
        key = ("future", id(t), scores, negated)
        if key not in self.verdicts:
            self.verdicts[key] = t.dtype == torch.bool and _is_future(~t if negated else t, scores)
        return self.verdicts[key]

    def is_causal_bias(self, t: torch.Tensor, scores: Tuple[int, ...], dtypes: Tuple[torch.dtype, ...]) -> bool:
        """_is_causal_bias, once per mask, shape and types."""
        key = ("bias", id(t), scores, dtypes)
        if key not in self.verdicts:
            self.verdicts[key] = _is_causal_bias(t, scores, dtypes)
        return self.verdicts[key]

    def number(self, x: Any) -> Optional[float]:
        """x as a Python number: a number, or a constant with one element."""
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return float(x)
        t = self.const(x)
        if t is not None and t.numel() == 1 and t.is_floating_point():
            return float(t.reshape(-1)[0])
        return None

    def peel(self, ref: Ref, casts: bool = True) -> Ref:
        """Steps back over calls that change no value here: conversions to a
        floating-point type (with `casts`; their types are checked with the
        match's), contiguous, dropout that is off."""
        while True:
            node = self.producer(ref)
            if node is None or not self.private(ref):
                return ref
            inner = _arg(node, 0, "input")
            if not isinstance(inner, Ref) or self.shape(inner) != self.shape(ref):
                return ref
            same = self.dtype(inner) == self.dtype(ref)
            if node.op in _CASTS and (same or casts) and self.dtype(inner).is_floating_point and \
                    self.dtype(ref).is_floating_point:
                self.widened.update((self.dtype(inner), self.dtype(ref)))
                ref = inner
            elif node.op in _COPIES and same:
                ref = inner
            elif node.op in _DROPOUT and same and \
                    (_arg(node, 1, "p", 0.5) == 0 or not _arg(node, 2, "training", True)):
                ref = inner
            else:
                return ref

    # -- the pattern ------------------------------------------------------------------------------
    def attention(self, node: Node) -> Optional[Match]:
        if node.op not in _MATMUL or len(node.outputs) != 1:
            return None
        probs, v = _arg(node, 0, "input"), _arg(node, 1, "other")
        if not isinstance(probs, Ref) or not isinstance(v, Ref) or len(self.shape(v)) != 4:
            return None
        self.widened = set()
        probs = self.peel(probs)
        softmax = self.producer(probs)
        if softmax is None or softmax.op not in _SOFTMAX or not self.private(probs) or \
                not self.last_dim_softmax(softmax):
            return None
        scores = self.peel(_arg(softmax, 0, "input"))
        causal, scores = self.causal_mask(scores)
        if scores is None:
            return None
        scale, scores = self.scaled(scores, casts=True)
        product = self.producer(scores)
        if product is None or product.op not in _MATMUL or not self.private(scores):
            return None
        q, kt = _arg(product, 0, "input"), _arg(product, 1, "other")
        if not isinstance(q, Ref) or not isinstance(kt, Ref):
            return None
        q_scale, q = self.scaled(q)
        kt_scale, kt = self.scaled(kt)
        k = self.transposed_key(kt)
        if k is None:
            return None
        k_scale, k = self.scaled(k)
        return self.checked(q, k, v, causal, scale * q_scale * kt_scale * k_scale, node)

    def last_dim_softmax(self, softmax: Node) -> bool:
        """softmax over the last dimension, in the input's type or a wider
        floating-point type (`dtype=torch.float32`)."""
        dim = _arg(softmax, 1, "dim")
        extra = list(softmax.args[2:]) + [v for k, v in softmax.kwargs.items() if k not in ("input", "dim")]
        dtypes = [x for x in extra if isinstance(x, torch.dtype)]
        others = [x for x in extra if x is not None and not isinstance(x, (torch.dtype, int))]
        if dim not in (-1, 3) or others or len(dtypes) > 1:
            return False
        if dtypes:
            if not dtypes[0].is_floating_point:
                return False
            self.widened.add(dtypes[0])
        return True

    def causal_mask(self, ref: Ref) -> Tuple[bool, Optional[Ref]]:
        """(True, scores) when `ref` is scores with a causal mask applied,
        (False, ref) when no mask is applied, (False, None) for other masks."""
        node = self.producer(ref)
        if node is None or not self.private(ref):
            return False, ref
        shape, dtype = self.shape(ref), self.dtype(ref)
        if node.op in _MASKED_FILL:
            x, mask, value = _arg(node, 0, "input"), _arg(node, 1, "mask"), _arg(node, 2, "value")
            t = self.const(mask)
            if isinstance(x, Ref) and _hides(self.number(value), dtype, self.dtype(x)) and t is not None and \
                    self.is_future(t, shape):
                return True, self.peel(x)
            return False, None
        if node.op in _WHERE:
            cond, a, b = _arg(node, 0, "condition"), _arg(node, 1, "input"), _arg(node, 2, "other")
            t = self.const(cond)
            for x, fill, keeps_visible in ((a, b, True), (b, a, False)):
                if isinstance(x, Ref) and self.const(x) is None and t is not None and \
                        _hides(self.number(fill), dtype, self.dtype(x)) and \
                        self.is_future(t, shape, negated=keeps_visible):
                    return True, self.peel(x)
            return False, None
        if node.op in _ADD and node.kwargs.get("alpha", 1) == 1:
            a, b = _arg(node, 0, "input"), _arg(node, 1, "other")
            for x, m in ((a, b), (b, a)):
                t = self.const(m)
                if isinstance(x, Ref) and self.const(x) is None and t is not None:
                    causal = self.is_causal_bias(t, shape, (dtype, self.dtype(x)))
                    return (True, self.peel(x)) if causal else (False, None)
        return False, ref

    def scaled(self, ref: Ref, casts: bool = False) -> Tuple[float, Ref]:
        """(c, x) when `ref` is x times or divided by constants whose
        product is c, each read once; else (1.0, ref). With `casts`, also
        through conversions (of scores; those of q and k would change the
        attention's type)."""
        total = 1.0
        while True:
            ref = self.peel(ref, casts)
            node = self.producer(ref)
            if node is None or not self.private(ref):
                return total, ref
            a, b = _arg(node, 0, "input"), _arg(node, 1, "other")
            factor = None
            if node.op in _MUL:
                for x, c in ((a, b), (b, a)):
                    if isinstance(x, Ref) and self.const(x) is None and self.number(c) is not None:
                        factor, ref = self.number(c), x
                        break
            elif node.op in _DIV and isinstance(a, Ref) and self.const(a) is None and self.number(b) and \
                    node.kwargs.get("rounding_mode") is None:
                factor, ref = 1.0 / self.number(b), a
            if factor is None:
                return total, ref
            total *= factor

    def transposed_key(self, kt: Ref) -> Optional[Ref]:
        """k when `kt` is k [B, H, S, D] with its last two dimensions swapped."""
        node = self.producer(kt)
        if node is None or not self.private(kt):
            return None
        k = _arg(node, 0, "input")
        if not isinstance(k, Ref) or len(self.shape(k)) != 4 or _permutation(node, 4) != (0, 1, 3, 2):
            return None
        return k

    def shared_heads(self, ref: Ref) -> Optional[Tuple[Ref, int, Tuple[int, ...]]]:
        """(x, n, perm) when `ref` [B, H, S, D] is x permuted by perm (which
        gives [B, Hkv, S, D]) with each head repeated n times: repeated on
        [B, Hkv, S, D] (perm: identity), or on [B, S, Hkv, D] before
        `transpose(1, 2)` moves the heads forward (perm swaps 1 and 2)."""
        perm, head = _IDENTITY, 1
        node = self.producer(ref)
        if node is not None and self.private(ref) and node.op in _TRANSPOSE | _PERMUTE and \
                _permutation(node, 4) == _SWAP_HEADS:
            ref, perm, head = _arg(node, 0, "input"), _SWAP_HEADS, 2
        repeated = self.repeated(ref, head)
        return (repeated[0], repeated[1], perm) if repeated else None

    def repeated(self, ref: Any, d: int) -> Optional[Tuple[Ref, int]]:
        """(x, n) when `ref` is the 4-D x with each index of dimension d
        repeated n times in a row: `repeat_interleave(n, dim=d)`, or an
        inserted dimension after d expanded to n and merged into d."""
        node = self.producer(ref)
        if node is None or not self.private(ref):
            return None
        if node.op in _REPEAT_INTERLEAVE:
            x, repeats, dim = _arg(node, 0, "input"), _arg(node, 1, "repeats"), _arg(node, 2, "dim")
            if isinstance(x, Ref) and len(self.shape(x)) == 4 and isinstance(repeats, int) and \
                    isinstance(dim, int) and dim % 4 == d:
                return x, repeats
            return None
        if node.op not in _RESHAPE:
            return None
        expanded = _arg(node, 0, "input")
        expand = self.producer(expanded)
        if expand is None or expand.op not in _EXPAND or not self.private(expanded):
            return None
        inserted = _arg(expand, 0, "input")
        insert = self.producer(inserted)
        if insert is None or insert.op not in _INSERT_DIM or not self.private(inserted):
            return None
        x = _arg(insert, 0, "input")
        if not isinstance(x, Ref) or len(self.shape(x)) != 4:
            return None
        s = self.shape(x)
        n = self.shape(ref)[d] // s[d]
        if self.shape(inserted) != s[:d + 1] + (1,) + s[d + 1:] or \
                self.shape(expanded) != s[:d + 1] + (n,) + s[d + 1:] or \
                self.shape(ref) != s[:d] + (s[d] * n,) + s[d + 1:]:
            return None
        return x, n

    def sdpa(self, node: Node) -> Optional[Match]:
        """F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p,
        is_causal, scale, enable_gqa) when it reads repeated key/value heads
        or a constant causal mask (else its own converter takes it)."""
        q, k, v = (_arg(node, i, name) for i, name in enumerate(("query", "key", "value")))
        mask, dropout = _arg(node, 3, "attn_mask"), _arg(node, 4, "dropout_p", 0.0)
        causal, scale = bool(_arg(node, 5, "is_causal", False)), _arg(node, 6, "scale")
        if not all(isinstance(t, Ref) and len(self.shape(t)) == 4 for t in (q, k, v)) or dropout or \
                len(node.outputs) != 1:
            return None
        self.widened = set()
        if mask is not None:
            t = self.const(mask)
            s = self.shape(q)[:3] + (self.shape(k)[2],)
            bool_mask = t is not None and t.dtype == torch.bool
            if causal or t is None or not (self.is_future(t, s, negated=True) if bool_mask else
                                           self.is_causal_bias(t, s, (self.dtype(q),))):
                return None
            causal = True
        heads_k, heads_v = self.shared_heads(k), self.shared_heads(v)
        if mask is None and not (heads_k and heads_v):
            return None
        return self.checked(q, k, v, causal, scale, node)

    def checked(self, q: Ref, k: Ref, v: Ref, causal: bool, scale: Optional[float],
                node: Node) -> Optional[Match]:
        """The match, with shared key/value heads, if rtx.attention can take it."""
        key, value = (k, None), (v, None)
        heads_k, heads_v = self.shared_heads(k), self.shared_heads(v)
        if heads_k and heads_v and heads_k[1] == heads_v[1] and \
                _permuted(self.shape(heads_k[0]), heads_k[2]) == _permuted(self.shape(heads_v[0]), heads_v[2]):
            key, value = [(x, None if perm == _IDENTITY else perm) for x, _, perm in (heads_k, heads_v)]
        qs = self.shape(q)
        ks, vs = (_permuted(self.shape(x), perm or _IDENTITY) for x, perm in (key, value))
        out = self.graph.metas[node.outputs[0]]
        dtypes = {self.dtype(q), self.dtype(key[0]), self.dtype(value[0]), out.dtype}
        if len(qs) != 4 or ks != vs or len(dtypes) != 1 or not out.dtype.is_floating_point:
            return None
        if any(d != out.dtype and _bits(d) <= _bits(out.dtype) for d in self.widened):
            return None                         # a conversion in between that loses precision
        if qs[0] != ks[0] or qs[3] != ks[3] or qs[1] % ks[1] or out.shape != qs:
            return None
        if causal and qs[2] != ks[2]:
            return None
        return q, key, value, causal, scale


def _bits(dtype: torch.dtype) -> int:
    return torch.finfo(dtype).bits if dtype.is_floating_point else 0


def _permutation(node: Node, rank: int) -> Optional[Tuple[int, ...]]:
    """The permutation a transpose, permute or .mT call makes of a rank-`rank` tensor."""
    if node.op == "torch.Tensor.mT":
        return tuple(range(rank - 2)) + (rank - 1, rank - 2)
    if node.op in _TRANSPOSE:
        a, b = _arg(node, 1, "dim0"), _arg(node, 2, "dim1")
        if not isinstance(a, int) or not isinstance(b, int):
            return None
        perm = list(range(rank))
        perm[a % rank], perm[b % rank] = perm[b % rank], perm[a % rank]
        return tuple(perm)
    if node.op in _PERMUTE:
        dims = node.args[1:] if len(node.args) > 1 else node.kwargs.get("dims", ())
        if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
            dims = dims[0]
        if len(dims) != rank or not all(isinstance(d, int) for d in dims):
            return None
        return tuple(d % rank for d in dims)
    return None


def _permuted(shape: Tuple[int, ...], perm: Tuple[int, ...]) -> Tuple[int, ...]:
    return tuple(shape[p] for p in perm) if len(shape) == len(perm) else shape


def _hides(value: Optional[float], *dtypes: torch.dtype) -> bool:
    """Whether a score set to `value` (or with it added) gets probability 0
    exactly, as with -inf: -inf, or finfo.min (Hugging Face's) of the
    scores' type (before or after promotion), which any score in range
    leaves at least as low, and whose exp underflows."""
    return value is not None and \
        (value == -math.inf or any(d.is_floating_point and value <= torch.finfo(d).min for d in dtypes))


def _broadcast_square(t: torch.Tensor, scores: Tuple[int, ...]) -> Optional[torch.Tensor]:
    """t as [N, S, S] when it broadcasts to `scores` [..., S, S], else None."""
    s = scores[-1]
    if t.is_meta or t.dim() < 2 or tuple(t.shape[-2:]) != (s, s) or scores[-2] != s or t.dim() > len(scores):
        return None
    if any(a not in (1, b) for a, b in zip(reversed(t.shape[:-2]), reversed(scores[:-2]))):
        return None
    return t.reshape(-1, s, s)


def _future(s: int) -> torch.Tensor:
    return torch.ones(s, s, dtype=torch.bool).triu(1)


def _is_future(t: torch.Tensor, scores: Tuple[int, ...]) -> bool:
    """Whether boolean constant t, broadcast to `scores` [..., S, S], is True
    exactly above the diagonal (the positions a causal mask hides)."""
    flat = _broadcast_square(t, scores) if t.dtype == torch.bool else None
    return flat is not None and bool((flat == _future(scores[-1])).all())


def _is_causal_bias(t: torch.Tensor, scores: Tuple[int, ...], dtypes: Tuple[torch.dtype, ...]) -> bool:
    """Whether constant t, added to `scores` [..., S, S] of these types
    (before and after promotion), hides exactly the future: -inf or
    finfo.min above the diagonal, 0 on and below it."""
    flat = _broadcast_square(t, scores) if t.is_floating_point() else None
    if flat is None:
        return False
    future = _future(scores[-1]).expand_as(flat)
    low = max(torch.finfo(d).min for d in dtypes if d.is_floating_point)
    hidden = (flat == -math.inf) | (flat <= low)
    return bool((hidden == future).all()) and bool((flat.masked_select(~future) == 0).all())
