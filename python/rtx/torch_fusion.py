"""Recognises attention written op by op in a recorded run and replaces it by
one call that lowers to rtx.attention, the op the sharding and pipeline
passes know (ring attention, head-parallel attention, its cost).

The pattern, as nanoGPT, Llama and timm's ViT write it:

    scores = (q [* c]) @ k.transpose(-2, -1)        [* c | / c]
    scores = scores.masked_fill(causal_mask, -inf)    or  scores + causal_bias   (optional)
    probs  = softmax(scores[.float()], dim=-1)[.type_as(q)]   [dropout with p = 0 or eval]
    out    = probs @ v

with q, k, v of shape [B, H, S, D], and F.scaled_dot_product_attention
without a mask or dropout (PyTorch 2). Key and value heads repeated for
grouped-query attention (`x[:, :, None].expand(...).reshape(...)` or
`repeat_interleave(n, dim=1)`) are traced back to the shared heads. A match
needs every intermediate value to be read by the pattern only, one element
type throughout, and a mask that is exactly causal; anything else stays op
by op, which computes the same function.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import torch

from .torch_graph import Graph, Node, Ref, users

ATTENTION = "rtx.attention"       # the op names of fused nodes (see torch_ops)
SWIGLU = "rtx.swiglu"
_SILU = {"torch.nn.functional.silu"}

_MATMUL = {"torch.matmul", "torch.Tensor.matmul", "torch.Tensor.__matmul__"}
_SOFTMAX = {"torch.nn.functional.softmax", "torch.softmax", "torch.Tensor.softmax"}
_SAME_TYPE = {"torch.Tensor.float", "torch.Tensor.type_as", "torch.Tensor.to", "torch.Tensor.contiguous"}
_DROPOUT = {"torch.nn.functional.dropout"}
_TRANSPOSE = {"torch.Tensor.transpose", "torch.transpose", "torch.Tensor.mT"}
_MUL = {"torch.Tensor.mul", "torch.mul", "torch.Tensor.__mul__", "torch.Tensor.__rmul__"}
_DIV = {"torch.Tensor.div", "torch.div", "torch.Tensor.__truediv__", "torch.true_divide"}
_ADD = {"torch.Tensor.add", "torch.add", "torch.Tensor.__add__", "torch.Tensor.__radd__"}
_MASKED_FILL = {"torch.Tensor.masked_fill", "torch.masked_fill"}
_RESHAPE = {"torch.Tensor.view", "torch.Tensor.reshape", "torch.reshape"}
_EXPAND = {"torch.Tensor.expand"}
_INSERT_DIM = {"torch.Tensor.unsqueeze", "torch.unsqueeze", "torch.Tensor.__getitem__"} | _RESHAPE
_REPEAT_INTERLEAVE = {"torch.Tensor.repeat_interleave", "torch.repeat_interleave"}
_SDPA = {"torch.nn.functional.scaled_dot_product_attention"}


def fuse_attention(graph: Graph, results: Tuple[int, ...]) -> int:
    """Rewrites every matching `probs @ v` call into an ATTENTION call
    (q, k, v, causal=, scale=); the calls it subsumes become dead. `results`
    are the value ids the function returns. Returns the number fused."""
    matcher = _Matcher(graph, set(results))
    fused = 0
    for index, node in enumerate(graph.nodes):
        match = matcher.attention(node) or matcher.sdpa(node)
        if match is not None:
            q, k, v, causal, scale = match
            graph.nodes[index] = Node(ATTENTION, (q, k, v), {"causal": causal, "scale": scale},
                                      node.outputs, node.tensors, node.where, node.source)
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


class _Matcher:
    def __init__(self, graph: Graph, results: set) -> None:
        self.graph = graph
        self.users = users(graph)
        self.results = results

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
        if not isinstance(ref, Ref):
            return None
        leaf = self.graph.metas[ref.id].leaf
        return leaf.tensor if leaf is not None and leaf.kind == "const" else None

    def number(self, x: Any) -> Optional[float]:
        """x as a Python number: a number, or a constant with one element."""
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return float(x)
        t = self.const(x)
        if t is not None and t.numel() == 1 and t.is_floating_point():
            return float(t.reshape(-1)[0])
        return None

    def peel(self, ref: Ref) -> Ref:
        """Steps back over calls that change nothing here: same-type
        conversions, contiguous, dropout that is off."""
        while True:
            node = self.producer(ref)
            if node is None or not self.private(ref):
                return ref
            inner = _arg(node, 0, "input")
            if not isinstance(inner, Ref) or self.dtype(inner) != self.dtype(ref) or \
                    self.shape(inner) != self.shape(ref):
                return ref
            if node.op in _SAME_TYPE:
                ref = inner
            elif node.op in _DROPOUT and (_arg(node, 1, "p", 0.5) == 0 or not _arg(node, 2, "training", True)):
                ref = inner
            else:
                return ref

    # -- the pattern ------------------------------------------------------------------------------
    def attention(self, node: Node) -> Optional[Tuple[Ref, Ref, Ref, bool, float]]:
        if node.op not in _MATMUL or len(node.outputs) != 1:
            return None
        probs, v = _arg(node, 0, "input"), _arg(node, 1, "other")
        if not isinstance(probs, Ref) or not isinstance(v, Ref) or len(self.shape(v)) != 4:
            return None
        probs = self.peel(probs)
        softmax = self.producer(probs)
        if softmax is None or softmax.op not in _SOFTMAX or not self.private(probs):
            return None
        dim = _arg(softmax, 1, "dim")
        if dim not in (-1, 3) or len(softmax.args) > 2 or softmax.kwargs.get("dtype") is not None:
            return None
        scores = self.peel(_arg(softmax, 0, "input"))
        causal, scores = self.causal_mask(scores)
        if scores is None:
            return None
        scale, scores = self.scaled(scores)
        product = self.producer(scores)
        if product is None or product.op not in _MATMUL or not self.private(scores):
            return None
        q, kt = _arg(product, 0, "input"), _arg(product, 1, "other")
        if not isinstance(q, Ref) or not isinstance(kt, Ref):
            return None
        q_scale, q = self.scaled(q)
        scale *= q_scale
        k = self.transposed_key(kt)
        if k is None:
            return None
        return self.checked(q, k, v, causal, scale, node)

    def sdpa(self, node: Node) -> Optional[Tuple[Ref, Ref, Ref, bool, Optional[float]]]:
        """F.scaled_dot_product_attention(q, k, v[, is_causal][, scale]
        [, enable_gqa]) with no mask and no dropout: its key and value heads
        traced back through repeats. Other forms stay as they are (the
        converter refuses what rtx.attention cannot do, with the reason)."""
        if node.op not in _SDPA or len(node.outputs) != 1:
            return None
        q, k, v = _arg(node, 0, "query"), _arg(node, 1, "key"), _arg(node, 2, "value")
        if not all(isinstance(x, Ref) for x in (q, k, v)) or _arg(node, 3, "attn_mask") is not None or \
                _arg(node, 4, "dropout_p", 0.0):
            return None
        return self.checked(q, k, v, bool(_arg(node, 5, "is_causal", False)), _arg(node, 6, "scale"), node)

    def causal_mask(self, ref: Ref) -> Tuple[bool, Optional[Ref]]:
        """(True, scores) when `ref` is scores with a causal mask applied,
        (False, ref) when no mask is applied, (False, None) for other masks."""
        node = self.producer(ref)
        if node is None or not self.private(ref):
            return False, ref
        shape = self.shape(ref)
        if node.op in _MASKED_FILL:
            x, mask, value = _arg(node, 0, "input"), _arg(node, 1, "mask"), _arg(node, 2, "value")
            t = self.const(mask)
            if self.number(value) == -math.inf and t is not None and _is_causal(t, shape, bool_mask=True):
                return True, x
            return False, None
        if node.op in _ADD and node.kwargs.get("alpha", 1) == 1:
            a, b = _arg(node, 0, "input"), _arg(node, 1, "other")
            for x, m in ((a, b), (b, a)):
                t = self.const(m)
                if isinstance(x, Ref) and self.const(x) is None and t is not None:
                    return (True, x) if _is_causal(t, shape, bool_mask=False) else (False, None)
        return False, ref

    def scaled(self, ref: Ref) -> Tuple[float, Ref]:
        """(c, x) when `ref` is x * c or x / c with a constant c and is read
        once; else (1.0, ref)."""
        node = self.producer(ref)
        if node is None or not self.private(ref):
            return 1.0, ref
        a, b = _arg(node, 0, "input"), _arg(node, 1, "other")
        if node.op in _MUL:
            for x, c in ((a, b), (b, a)):
                if isinstance(x, Ref) and self.const(x) is None and self.number(c) is not None:
                    return self.number(c), x
        if node.op in _DIV and isinstance(a, Ref) and self.const(a) is None and self.number(b):
            return 1.0 / self.number(b), a
        return 1.0, ref

    def transposed_key(self, kt: Ref) -> Optional[Ref]:
        node = self.producer(kt)
        if node is None or node.op not in _TRANSPOSE or not self.private(kt):
            return None
        k = _arg(node, 0, "input")
        if not isinstance(k, Ref) or len(self.shape(k)) != 4:
            return None
        if node.op != "torch.Tensor.mT":
            dims = {_arg(node, 1, "dim0") % 4, _arg(node, 2, "dim1") % 4}
            if dims != {2, 3}:
                return None
        return k

    def shared_heads(self, ref: Ref) -> Optional[Tuple[Ref, int]]:
        """(x, n) when `ref` is x [B, Hkv, S, D] with each head repeated n times."""
        node = self.producer(ref)
        if node is None or not self.private(ref):
            return None
        if node.op in _REPEAT_INTERLEAVE:
            x, repeats, dim = _arg(node, 0, "input"), _arg(node, 1, "repeats"), _arg(node, 2, "dim")
            if isinstance(x, Ref) and isinstance(repeats, int) and dim in (1, -3):
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
        if not isinstance(x, Ref):
            return None
        b, hkv, s, d = self.shape(x) if len(self.shape(x)) == 4 else (0, 0, 0, 0)
        e = self.shape(expanded)
        if self.shape(inserted) != (b, hkv, 1, s, d) or len(e) != 5 or e[:2] != (b, hkv) or e[3:] != (s, d):
            return None
        return x, e[2]

    def checked(self, q: Ref, k: Ref, v: Ref, causal: bool, scale: float,
                node: Node) -> Optional[Tuple[Ref, Ref, Ref, bool, float]]:
        """The match, with shared key/value heads, if rtx.attention can take it."""
        heads_k, heads_v = self.shared_heads(k), self.shared_heads(v)
        if heads_k and heads_v and heads_k[1] == heads_v[1] and self.shape(heads_k[0]) == self.shape(heads_v[0]):
            k, v = heads_k[0], heads_v[0]
        qs, ks, vs = self.shape(q), self.shape(k), self.shape(v)
        out = self.graph.metas[node.outputs[0]]
        dtypes = {self.dtype(q), self.dtype(k), self.dtype(v), out.dtype}
        if len(qs) != 4 or ks != vs or len(dtypes) != 1 or not out.dtype.is_floating_point:
            return None
        if qs[0] != ks[0] or qs[3] != ks[3] or qs[1] % ks[1] or out.shape != qs:
            return None
        if causal and qs[2] != ks[2]:
            return None
        return q, k, v, causal, scale


def _is_causal(t: torch.Tensor, scores: Tuple[int, ...], bool_mask: bool) -> bool:
    """Whether constant t, broadcast to `scores` [..., S, S], hides exactly the
    future: True (bool_mask) or -inf (an additive bias, else 0) above the diagonal."""
    s = scores[-1]
    if t.dim() < 2 or tuple(t.shape[-2:]) != (s, s) or scores[-2] != s or t.dim() > len(scores):
        return False
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    flat = t.reshape(-1, s, s)
    if bool_mask:
        return t.dtype == torch.bool and bool((flat == future).all())
    if not t.is_floating_point():
        return False
    visible = flat.masked_select(~future.expand_as(flat))
    return bool(((flat == -math.inf) == future).all()) and bool((visible == 0).all())
