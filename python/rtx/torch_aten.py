"""ATen ops as the torch calls the importer's converters know (rtx.torch_ops).

torch.export (rtx.torch_export) records ATen ops, by overload
(`aten.linear.default`, `aten.slice.Tensor`); the converters take the
torch-level calls the PyTorch 1.13 tracer records (`F.linear`, `x[a:b]`). An
ATen op's overload packet (`linear`, `slice`) finds here the torch call it
becomes and a function from the ATen op's arguments to that call's, and the
classes of ops the translation treats specially (views, copies, checks,
ops whose values depend on a shape only).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

_REDUCTION = {0: "none", 1: "mean", 2: "sum"}
Arguments = Tuple[tuple, dict]


def _reduction(value: Any) -> Any:
    return _REDUCTION.get(value, value)


def _same(*args: Any, **kwargs: Any) -> Arguments:
    return args, kwargs


def _first(x: Any, *args: Any, **kwargs: Any) -> Arguments:
    """The operand only: the result's dtype or layout is known from the graph."""
    return (x,), {}


def _slice(x, dim=0, start=None, end=None, step=1) -> Arguments:
    return (x, (slice(None),) * dim + (slice(start, end, step),)), {}


def _index(x, indices) -> Arguments:
    """x[i, j] with tensors: the converter refuses it (advanced indexing)."""
    return (x, tuple(slice(None) if i is None else i for i in indices)), {}


def _embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False) -> Arguments:
    return (indices, weight), dict(padding_idx=None if padding_idx == -1 else padding_idx,
                                   scale_grad_by_freq=scale_grad_by_freq)


def _layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True) -> Arguments:
    return (x, normalized_shape, weight, bias, eps), {}


def _cross_entropy(x, target, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0) -> Arguments:
    return (x, target), dict(weight=weight, reduction=_reduction(reduction), ignore_index=ignore_index,
                             label_smoothing=label_smoothing)


def _mse_loss(x, target, reduction=1) -> Arguments:
    return (x, target), dict(reduction=_reduction(reduction))


def _softmax(x, dim, dtype=None) -> Arguments:
    return (x, dim), ({"dtype": dtype} if dtype is not None else {})


def _internal_softmax(x, dim, half_to_float=False) -> Arguments:
    return (x, dim), {}


def _sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False) -> Arguments:
    return (q, k, v), dict(attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                           enable_gqa=enable_gqa)


def _pad(x, pad, mode="constant", value=None) -> Arguments:
    return (x, pad), dict(mode=mode, value=value)


def _constant_pad(x, pad, value=0) -> Arguments:
    return (x, pad), dict(value=value)


def _expand(x, size, implicit=False) -> Arguments:
    return (x, size), {}


def _repeat_interleave(x, repeats, dim=None, output_size=None) -> Arguments:
    return (x, repeats, dim), {}


_F = "torch.nn.functional."
# aten op (overload packet) -> (the torch call, its arguments from the ATen op's)
CALLS: Dict[str, Tuple[str, Callable[..., Arguments]]] = {
    "linear": (_F + "linear", _same),
    "addmm": ("torch.addmm", _same),
    "conv2d": ("torch.conv2d", _same),
    "im2col": (_F + "unfold", _same),
    "embedding": (_F + "embedding", _embedding),
    "layer_norm": (_F + "layer_norm", _layer_norm),
    "cross_entropy_loss": (_F + "cross_entropy", _cross_entropy),
    "mse_loss": (_F + "mse_loss", _mse_loss),
    "softmax": (_F + "softmax", _softmax),
    "log_softmax": (_F + "log_softmax", _softmax),
    "_softmax": (_F + "softmax", _internal_softmax),
    "_log_softmax": (_F + "log_softmax", _internal_softmax),
    "gelu": (_F + "gelu", _same),
    "silu": (_F + "silu", _same),
    "relu": ("torch.relu", _same),
    "dropout": (_F + "dropout", _same),                     # (x, p, train)
    "scaled_dot_product_attention": (_F + "scaled_dot_product_attention", _sdpa),
    "pad": (_F + "pad", _pad),
    "constant_pad_nd": (_F + "pad", _constant_pad),
    "matmul": ("torch.matmul", _same),
    "mm": ("torch.mm", _same),
    "bmm": ("torch.bmm", _same),
    "view": ("torch.Tensor.view", _same),
    "_unsafe_view": ("torch.Tensor.view", _same),
    "reshape": ("torch.reshape", _same),
    "flatten": ("torch.flatten", _same),
    "unflatten": ("torch.Tensor.unflatten", _same),
    "squeeze": ("torch.squeeze", _same),
    "unsqueeze": ("torch.unsqueeze", _same),
    "transpose": ("torch.transpose", _same),
    "permute": ("torch.permute", _same),
    "t": ("torch.t", _same),
    "mT": ("torch.Tensor.mT", _same),
    "numpy_T": ("torch.Tensor.T", _same),
    "expand": ("torch.Tensor.expand", _expand),
    "broadcast_to": ("torch.broadcast_to", _same),
    "broadcast_tensors": ("torch.broadcast_tensors", _same),
    "repeat": ("torch.Tensor.repeat", _same),
    "repeat_interleave": ("torch.repeat_interleave", _repeat_interleave),
    "split": ("torch.split", _same),
    "split_with_sizes": ("torch.split", _same),
    "chunk": ("torch.chunk", _same),
    "unbind": ("torch.unbind", _same),
    "cat": ("torch.cat", _same),
    "concat": ("torch.cat", _same),
    "stack": ("torch.stack", _same),
    "slice": ("torch.Tensor.__getitem__", _slice),
    "index": ("torch.Tensor.__getitem__", _index),
    "select": ("torch.select", _same),
    "narrow": ("torch.narrow", _same),
    "to": ("torch.Tensor.to", _first),
    "_to_copy": ("torch.Tensor.to", _first),
    "type_as": ("torch.Tensor.to", _first),
    "contiguous": ("torch.Tensor.contiguous", _first),
    "alias": ("torch.Tensor.contiguous", _first),
    "clone": ("torch.clone", _first),
    "add": ("torch.add", _same),
    "sub": ("torch.sub", _same),
    "rsub": ("torch.rsub", _same),
    "mul": ("torch.mul", _same),
    "div": ("torch.div", _same),
    "pow": ("torch.pow", _same),
    "square": ("torch.square", _same),
    "reciprocal": ("torch.reciprocal", _same),
    "maximum": ("torch.maximum", _same),
    "minimum": ("torch.minimum", _same),
    "neg": ("torch.neg", _same),
    "exp": ("torch.exp", _same),
    "log": ("torch.log", _same),
    "sqrt": ("torch.sqrt", _same),
    "rsqrt": ("torch.rsqrt", _same),
    "tanh": ("torch.tanh", _same),
    "sigmoid": ("torch.sigmoid", _same),
    "eq": ("torch.eq", _same),
    "ne": ("torch.ne", _same),
    "lt": ("torch.lt", _same),
    "le": ("torch.le", _same),
    "gt": ("torch.gt", _same),
    "ge": ("torch.ge", _same),
    "logical_not": ("torch.logical_not", _same),
    "bitwise_not": ("torch.Tensor.bitwise_not", _same),
    "where": ("torch.where", _same),
    "masked_fill": ("torch.masked_fill", _same),
    "sum": ("torch.sum", _same),
    "mean": ("torch.mean", _same),
    "amax": ("torch.amax", _same),
    "amin": ("torch.amin", _same),
    "max": ("torch.max", _same),
    "min": ("torch.min", _same),
}

# Ops whose result, of the same shape and dtype, is their operand or a copy
# of it: no node. (A view, aten.alias, is recorded: an update through it
# changes its base.)
ALIASES = {"contiguous", "clone", "lift_fresh_copy", "to", "_to_copy", "type_as"}
# Ops whose values depend on the operand's shape and dtype only: constants.
SHAPE_ONLY = {"ones_like", "zeros_like", "full_like", "empty_like", "new_ones", "new_zeros", "new_full",
              "new_empty", "zeros", "ones", "full", "empty", "scalar_tensor"}
# Ops that check metadata and return nothing.
CHECKS = {"_assert_tensor_metadata", "_assert_scalar", "sym_constrain_range", "sym_constrain_range_for_size",
          "_assert_async"}
# Ops that may return a view of their first operand, another tensor sharing
# its memory: an in-place update of one changes the other. (contiguous, to
# and friends return the operand itself or a copy, never another view.)
VIEWS = {"view", "_unsafe_view", "reshape", "flatten", "unflatten", "squeeze", "unsqueeze", "transpose",
         "permute", "t", "mT", "numpy_T", "expand", "broadcast_to", "split", "split_with_sizes", "chunk", "unbind",
         "slice", "select", "narrow", "alias", "as_strided", "diagonal", "detach", "view_as", "unfold", "real",
         "imag", "lift_fresh", "getitem"}


def packet(target: Any) -> str:
    """An FX node's op by overload packet: aten.add.Tensor -> "add",
    aten.relu_.default -> "relu_", operator.getitem -> "getitem"."""
    overloads = getattr(target, "overloadpacket", None)
    return getattr(overloads, "__name__", None) or getattr(target, "__name__", str(target))


def inplace(name: str) -> bool:
    """Whether the op (by packet) updates its first operand: relu_, add_."""
    return name.endswith("_") and not name.endswith("__") and not name.startswith("_")
