"""How each torch call becomes rtx ops: the importer's converters.

A converter receives the lowering context `ctx` and the call's arguments,
tensors replaced by Operand values (shape, dtype, and the value of
constants), and returns the builder Value of each result. It finds the
results' shapes and dtypes in `ctx.out` (PyTorch computed them), so view,
expand and friends need not re-derive them from their arguments. It raises
Unsupported for forms rtx cannot express; the importer adds the op's name and
module path. `supported_ops()` lists every call mapped.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch


class Unsupported(Exception):
    """Raised by a converter; the importer turns it into UnsupportedOpError with the op's location."""


DTYPES = {torch.float32: "f32", torch.float64: "f64", torch.bfloat16: "bf16", torch.float16: "f16",
          torch.int32: "i32", torch.int64: "i64", torch.bool: "i1"}
FLOATS = ("f32", "f64", "bf16", "f16")


def rtx_dtype(dtype: torch.dtype) -> str:
    if dtype not in DTYPES:
        raise Unsupported(f"element type {dtype} has no rtx equivalent")
    return DTYPES[dtype]


@dataclass
class Operand:
    """A tensor operand as converters see it."""
    ref: int
    shape: Tuple[int, ...]
    torch_dtype: torch.dtype
    const: Optional[torch.Tensor] = None   # the value, for constants

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def dtype(self) -> str:
        return rtx_dtype(self.torch_dtype)


# --- the registry ----------------------------------------------------------------------------

Converter = Callable[..., Any]
CONVERTERS: Dict[str, Converter] = {}


def _converts(*names: str) -> Callable[[Converter], Converter]:
    def register(fn: Converter) -> Converter:
        for name in names:
            CONVERTERS[name] = fn
        return fn
    return register


def supported_ops() -> List[str]:
    """The torch calls the importer maps, by name."""
    return sorted(name for name in CONVERTERS if name.startswith("torch."))


def _dim(d: int, rank: int) -> int:
    if not -max(rank, 1) <= d < max(rank, 1):
        raise Unsupported(f"dimension {d} is out of range for rank {rank}")
    return d % rank if rank else 0


def _float_result(ctx: Any, what: str) -> str:
    dtype = ctx.out_dtype
    if dtype not in FLOATS:
        raise Unsupported(f"{what} on {dtype} values (rtx computes on floating-point tensors)")
    return dtype


# shape and layout

@_converts("torch.Tensor.view", "torch.Tensor.reshape", "torch.reshape", "torch.Tensor.view_as",
           "torch.Tensor.reshape_as", "torch.Tensor.flatten", "torch.flatten", "torch.Tensor.unflatten",
           "torch.Tensor.squeeze", "torch.squeeze", "torch.Tensor.unsqueeze", "torch.unsqueeze")
def _reshape(ctx, input, *args, **kwargs):
    if any(isinstance(a, torch.dtype) for a in args) or isinstance(kwargs.get("dtype"), torch.dtype):
        raise Unsupported("reinterpreting the bits as another dtype")
    return ctx.reshape(ctx.v(input), ctx.out_shape)


@_converts("torch.Tensor.contiguous", "torch.Tensor.clone", "torch.clone", "torch.Tensor.to",
           "torch.Tensor.float", "torch.Tensor.double", "torch.Tensor.half", "torch.Tensor.bfloat16",
           "torch.Tensor.long", "torch.Tensor.int", "torch.Tensor.bool", "torch.Tensor.type_as",
           "torch.Tensor.type", "torch.Tensor.cpu", "torch.Tensor.cuda")
def _identity_or_convert(ctx, input, *args, **kwargs):
    return ctx.convert(ctx.v(input), ctx.out_dtype)


def _permute(ctx, input, perm):
    value = ctx.v(input)
    perm = [_dim(p, input.rank) for p in perm]
    return value if perm == sorted(perm) else ctx.f.transpose(value, perm)


@_converts("torch.Tensor.transpose", "torch.transpose", "torch.Tensor.swapaxes", "torch.swapaxes",
           "torch.Tensor.swapdims", "torch.swapdims")
def _transpose(ctx, input, dim0, dim1):
    perm = list(range(input.rank))
    a, b = _dim(dim0, input.rank), _dim(dim1, input.rank)
    perm[a], perm[b] = perm[b], perm[a]
    return _permute(ctx, input, perm)


@_converts("torch.Tensor.t", "torch.t", "torch.Tensor.T")
def _t(ctx, input):
    return _permute(ctx, input, list(reversed(range(input.rank))))


@_converts("torch.Tensor.mT")
def _mt(ctx, input):
    return _transpose(ctx, input, -2, -1)


@_converts("torch.Tensor.permute", "torch.permute")
def _permute_call(ctx, input, *dims):
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = tuple(dims[0])
    return _permute(ctx, input, dims)


@_converts("torch.Tensor.expand", "torch.Tensor.expand_as", "torch.broadcast_to", "torch.Tensor.broadcast_to")
def _expand(ctx, input, *args, **kwargs):
    return ctx.broadcast(ctx.v(input), ctx.out_shape)


@_converts("torch.broadcast_tensors")
def _broadcast_tensors(ctx, *tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    return [ctx.broadcast(ctx.v(t), m.shape) for t, m in zip(tensors, ctx.out)]


@_converts("torch.Tensor.repeat_interleave", "torch.repeat_interleave")
def _repeat_interleave(ctx, input, repeats, dim=None, *, output_size=None):
    if not isinstance(repeats, int) or dim is None:
        raise Unsupported("only an integer number of repeats along a given dimension is supported")
    d = _dim(dim, input.rank)
    value = ctx.v(input)
    shape = list(input.shape)
    expanded = shape[:d + 1] + [repeats] + shape[d + 1:]
    value = ctx.f.reshape(value, shape[:d + 1] + [1] + shape[d + 1:])
    return ctx.f.reshape(ctx.f.broadcast(value, expanded, list(range(len(expanded)))), ctx.out_shape)


@_converts("torch.Tensor.repeat")
def _repeat(ctx, input, *sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)):
        sizes = tuple(sizes[0])
    shape = [1] * (len(sizes) - input.rank) + list(input.shape)
    value = ctx.reshape(ctx.v(input), shape)
    inner = [x for s in shape for x in (1, s)]
    outer = [x for r, s in zip(sizes, shape) for x in (r, s)]
    value = ctx.f.broadcast(ctx.f.reshape(value, inner), outer, list(range(len(outer))))
    return ctx.f.reshape(value, ctx.out_shape)


def _split_outputs(ctx, input, dim):
    d = _dim(dim, input.rank)
    sizes = [m.shape[d] for m in ctx.out]
    value = ctx.v(input)
    return [value] if len(sizes) == 1 else ctx.f.split(value, d, sizes)


@_converts("torch.Tensor.split", "torch.split", "torch.Tensor.split_with_sizes")
def _split(ctx, tensor, split_size_or_sections=None, dim=0, split_size=None, split_sizes=None):
    return _split_outputs(ctx, tensor, dim)


@_converts("torch.Tensor.chunk", "torch.chunk")
def _chunk(ctx, input, chunks, dim=0):
    return _split_outputs(ctx, input, dim)


@_converts("torch.Tensor.unbind", "torch.unbind")
def _unbind(ctx, input, dim=0):
    d = _dim(dim, input.rank)
    value = ctx.v(input)
    parts = [value] if input.shape[d] == 1 else ctx.f.split(value, d, [1] * input.shape[d])
    return [ctx.reshape(p, m.shape) for p, m in zip(parts, ctx.out)]


@_converts("torch.cat", "torch.concat", "torch.concatenate")
def _cat(ctx, tensors, dim=0, **kwargs):
    tensors = [t for t in tensors if not (t.rank == 1 and t.shape[0] == 0)]   # torch skips empty 1-D tensors
    values = [ctx.convert(ctx.v(t), ctx.out_dtype) for t in tensors]
    if len(values) == 1:
        return values[0]
    return ctx.f.concat(values, _dim(dim, len(ctx.out_shape)))


@_converts("torch.stack")
def _stack(ctx, tensors, dim=0, **kwargs):
    d = _dim(dim, len(ctx.out_shape))
    values = []
    for t in tensors:
        shape = list(t.shape)
        values.append(ctx.f.reshape(ctx.convert(ctx.v(t), ctx.out_dtype), shape[:d] + [1] + shape[d:]))
    return values[0] if len(values) == 1 else ctx.f.concat(values, d)


@_converts("torch.Tensor.__getitem__")
def _getitem(ctx, input, index):
    index = index if isinstance(index, tuple) else (index,)
    if any(isinstance(i, (Operand, list, torch.Tensor)) or (isinstance(i, bool)) for i in index):
        raise Unsupported("indexing with tensors, lists or booleans (advanced indexing)")
    explicit = sum(1 for i in index if i is not None and i is not Ellipsis)
    if explicit > input.rank or sum(1 for i in index if i is Ellipsis) > 1:
        raise Unsupported(f"too many indices for a tensor of rank {input.rank}")
    expanded: List[Any] = []
    for i in index:
        if i is Ellipsis:
            expanded.extend([slice(None)] * (input.rank - explicit))
        else:
            expanded.append(i)
    starts, limits, strided, dim = [], [], [], 0
    for i in expanded:
        if i is None:
            continue
        size = input.shape[dim]
        if isinstance(i, int):
            j = i + size if i < 0 else i
            starts.append(j)
            limits.append(j + 1)
        elif isinstance(i, slice):
            start, stop, step = i.indices(size)
            if step < 1:
                raise Unsupported(f"slicing with step {step}")
            count = len(range(start, stop, step))
            starts.append(start)
            if step == 1 or count <= 1:
                limits.append(start + count)
            else:
                # Rows start, start+step, ...: a window of count*step rows
                # in which they are at offset `offset` of each step. It
                # begins at start, or up to step-1 rows before, so as to end
                # within the dimension (x[..., 1::2] of 2k: all 2k rows,
                # offset 1); else it is cut short and padded.
                missing = max(0, start + count * step - size)
                offset = missing if missing <= start else 0
                starts[-1] = start - offset
                limits.append(min(size, start - offset + count * step))
                strided.append((dim, count, step, offset))
        else:
            raise Unsupported(f"index {i!r}")
        dim += 1
    starts += [0] * (input.rank - dim)
    limits += list(input.shape[dim:])
    value = ctx.v(input)
    if starts != [0] * input.rank or limits != list(input.shape):
        value = ctx.f.slice(value, starts, limits)
    for d, count, step, offset in strided:
        value = _take_every(ctx, value, d, count, step, offset)
    return ctx.reshape(value, ctx.out_shape)


def _take_every(ctx, value, d: int, count: int, step: int, offset: int):
    """Rows offset, offset+step, ... (count of them) of dimension d of
    `value`, as reshape + slice: [..., count*step, ...] viewed as [...,
    count, step, ...] keeps index `offset` of the new step dimension
    (x[..., 0::2] on 2k features: [..., k, 2][..., 0]). A window shorter
    than count*step rows is first padded with zeros, which the slice drops.
    Every op here is differentiable, so the gradient is the scatter back
    into every step-th row, as PyTorch's."""
    shape = list(value.shape)
    missing = count * step - shape[d]
    if missing:
        pad = shape[:d] + [missing] + shape[d + 1:]
        zero = 0.0 if value.dtype in FLOATS else 0
        value = ctx.f.concat([value, ctx.f.constant(zero, pad, value.dtype)], d)
    grouped = shape[:d] + [count, step] + shape[d + 1:]
    value = ctx.f.reshape(value, grouped)
    starts, limits = [0] * len(grouped), list(grouped)
    starts[d + 1], limits[d + 1] = offset, offset + 1
    value = ctx.f.slice(value, starts, limits)
    return ctx.f.reshape(value, shape[:d] + [count] + shape[d + 1:])


@_converts("torch.Tensor.narrow", "torch.narrow")
def _narrow(ctx, input, dim, start, length):
    d = _dim(dim, input.rank)
    start = start + input.shape[d] if start < 0 else start
    starts = [0] * input.rank
    limits = list(input.shape)
    starts[d], limits[d] = start, start + length
    return ctx.f.slice(ctx.v(input), starts, limits)


@_converts("torch.Tensor.select", "torch.select")
def _select(ctx, input, dim, index):
    d = _dim(dim, input.rank)
    index = index + input.shape[d] if index < 0 else index
    starts = [0] * input.rank
    limits = list(input.shape)
    starts[d], limits[d] = index, index + 1
    return ctx.reshape(ctx.f.slice(ctx.v(input), starts, limits), ctx.out_shape)


@_converts("torch.nn.functional.pad")
def _pad(ctx, input, pad, mode="constant", value=None):
    if mode != "constant" or value not in (None, 0, 0.0):
        raise Unsupported("only zero padding (mode='constant', value=0) is supported")
    if any(p < 0 for p in pad):
        raise Unsupported("negative padding")
    # Zeros concatenated on each side (rtx.concat is differentiable; rtx.pad,
    # the gradient of rtx.slice, is not).
    value = ctx.v(input)
    for k in range(len(pad) // 2):          # pad lists the last dimension first
        d = input.rank - 1 - k
        parts = []
        for size, before in ((pad[2 * k], True), (pad[2 * k + 1], False)):
            if size:
                shape = list(value.shape)
                shape[d] = size
                parts.append((before, ctx.f.constant(0.0, shape, value.dtype)))
        if parts:
            value = ctx.f.concat([v for b, v in parts if b] + [value] + [v for b, v in parts if not b], d)
    return value


# elementwise

def _binary(ctx, op: str, a, b):
    dtype = _float_result(ctx, f"'{op}'")
    return getattr(ctx.f, op)(ctx.operand(a, ctx.out_shape, dtype), ctx.operand(b, ctx.out_shape, dtype))


def _scaled(ctx, x, alpha):
    if alpha == 1:
        return x
    if isinstance(x, (int, float)):
        return x * alpha
    return ctx.f.mul(ctx.operand(x, ctx.out_shape, ctx.out_dtype), ctx.f.constant(alpha, ctx.out_shape, ctx.out_dtype))


@_converts("torch.Tensor.add", "torch.add", "torch.Tensor.__add__", "torch.Tensor.__radd__",
           "torch.Tensor.__iadd__", "torch.Tensor.add_")
def _add(ctx, input, other, *, alpha=1):
    _float_result(ctx, "'add'")
    return ctx.f.add(ctx.operand(input, ctx.out_shape, ctx.out_dtype),
                     ctx.operand(_scaled(ctx, other, alpha), ctx.out_shape, ctx.out_dtype))


@_converts("torch.Tensor.sub", "torch.sub", "torch.Tensor.__sub__", "torch.Tensor.__isub__", "torch.Tensor.sub_",
           "torch.subtract", "torch.Tensor.subtract")
def _sub(ctx, input, other, *, alpha=1):
    _float_result(ctx, "'sub'")
    return ctx.f.sub(ctx.operand(input, ctx.out_shape, ctx.out_dtype),
                     ctx.operand(_scaled(ctx, other, alpha), ctx.out_shape, ctx.out_dtype))


@_converts("torch.Tensor.__rsub__", "torch.rsub")
def _rsub(ctx, input, other, *, alpha=1):
    return _sub(ctx, other, input) if alpha == 1 else _sub(ctx, other, _scaled(ctx, input, alpha))


@_converts("torch.Tensor.mul", "torch.mul", "torch.Tensor.__mul__", "torch.Tensor.__rmul__",
           "torch.Tensor.__imul__", "torch.Tensor.mul_", "torch.multiply", "torch.Tensor.multiply")
def _mul(ctx, input, other):
    return _binary(ctx, "mul", input, other)


@_converts("torch.Tensor.div", "torch.div", "torch.Tensor.__truediv__", "torch.Tensor.__itruediv__",
           "torch.Tensor.__idiv__",
           "torch.Tensor.div_", "torch.true_divide", "torch.Tensor.true_divide", "torch.divide",
           "torch.Tensor.divide")
def _div(ctx, input, other, *, rounding_mode=None):
    if rounding_mode is not None:
        raise Unsupported(f"division with rounding_mode={rounding_mode!r}")
    return _binary(ctx, "div", input, other)


@_converts("torch.Tensor.__rdiv__", "torch.Tensor.__rtruediv__")
def _rdiv(ctx, input, other):
    return _binary(ctx, "div", other, input)


@_converts("torch.Tensor.reciprocal", "torch.reciprocal")
def _reciprocal(ctx, input):
    return _binary(ctx, "div", 1.0, input)


@_converts("torch.maximum", "torch.Tensor.maximum", "torch.fmax")
def _maximum(ctx, input, other):
    return _binary(ctx, "maximum", input, other)


@_converts("torch.minimum", "torch.Tensor.minimum", "torch.fmin")
def _minimum(ctx, input, other):
    return _binary(ctx, "minimum", input, other)


@_converts("torch.Tensor.pow", "torch.pow", "torch.Tensor.__pow__", "torch.Tensor.__ipow__", "torch.Tensor.pow_")
def _pow(ctx, input, exponent):
    dtype = _float_result(ctx, "'pow'")
    if not isinstance(input, Operand):             # torch.pow(number, tensor)
        return _rpow(ctx, exponent, input)
    if isinstance(exponent, Operand):
        e = ctx.splat(exponent)
        if e is None:
            raise Unsupported("a tensor exponent (only constant exponents are supported)")
        exponent = e
    x = ctx.operand(input, ctx.out_shape, dtype)
    f = ctx.f
    if exponent == 1:
        return x
    if exponent == 2:
        return f.mul(x, x)
    if exponent == 3:
        return f.mul(f.mul(x, x), x)
    if exponent == 4:
        sq = f.mul(x, x)
        return f.mul(sq, sq)
    if exponent == 0.5:
        return f.sqrt(x)
    if exponent == -0.5:
        return f.rsqrt(x)
    if exponent == -1:
        return f.div(f.constant(1.0, ctx.out_shape, dtype), x)
    if exponent == -2:
        return f.div(f.constant(1.0, ctx.out_shape, dtype), f.mul(x, x))
    raise Unsupported(f"exponent {exponent!r} (supported: -2, -1, -0.5, 0.5, 1, 2, 3, 4)")


@_converts("torch.Tensor.__rpow__")
def _rpow(ctx, input, other):
    dtype = _float_result(ctx, "'pow'")
    if not isinstance(other, (int, float)) or other <= 0:
        raise Unsupported("a power with a tensor exponent needs a positive constant base")
    x = ctx.operand(input, ctx.out_shape, dtype)
    return ctx.f.exp(ctx.f.mul(x, ctx.f.constant(math.log(other), ctx.out_shape, dtype)))


def _unary(op: str):
    def convert(ctx, input, *args, inplace=False, **kwargs):
        dtype = _float_result(ctx, f"'{op}'")
        return getattr(ctx.f, op)(ctx.operand(input, ctx.out_shape, dtype))
    return convert


for _op, _names in {
    "neg": ("torch.Tensor.neg", "torch.neg", "torch.Tensor.__neg__", "torch.negative", "torch.Tensor.negative"),
    "exp": ("torch.Tensor.exp", "torch.exp"),
    "log": ("torch.Tensor.log", "torch.log"),
    "sqrt": ("torch.Tensor.sqrt", "torch.sqrt"),
    "rsqrt": ("torch.Tensor.rsqrt", "torch.rsqrt"),
    "tanh": ("torch.Tensor.tanh", "torch.tanh", "torch.nn.functional.tanh"),
    "sigmoid": ("torch.Tensor.sigmoid", "torch.sigmoid", "torch.nn.functional.sigmoid"),
    "relu": ("torch.Tensor.relu", "torch.relu", "torch.nn.functional.relu", "torch.Tensor.relu_", "torch.relu_"),
    "silu": ("torch.nn.functional.silu",),
}.items():
    _converts(*_names)(_unary(_op))


@_converts("torch.Tensor.square", "torch.square")
def _square(ctx, input):
    return _pow(ctx, input, 2)


@_converts("torch.nn.functional.gelu")
def _gelu(ctx, input, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise Unsupported(f"approximate={approximate!r}")
    dtype = _float_result(ctx, "'gelu'")
    return ctx.f.gelu(ctx.operand(input, ctx.out_shape, dtype), approximate=approximate == "tanh")


@_converts("torch.nn.functional.dropout", "torch.dropout")
def _dropout(ctx, input, p=0.5, training=True, inplace=False, train=None):
    training = training if train is None else train
    value = ctx.v(input)
    if not training or p == 0:
        return value
    # Masks come from rtx's counter-based generator, not PyTorch's.
    ctx.dropout_seed += 1
    return ctx.f.dropout(value, float(p), ctx.dropout_seed)


# comparisons and selection

_PREDICATES = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
               "less": "lt", "greater": "gt", "less_equal": "le", "greater_equal": "ge", "not_equal": "ne"}


def _promoted(a, b) -> str:
    def probe(x):
        if isinstance(x, Operand):
            return torch.empty([1] * x.rank if x.rank else [], dtype=x.torch_dtype)
        return x
    return rtx_dtype(torch.result_type(probe(a), probe(b)))


def _compare(predicate: str):
    def convert(ctx, input, other):
        dtype = _promoted(input, other)
        return ctx.f.compare(predicate, ctx.operand(input, ctx.out_shape, dtype),
                             ctx.operand(other, ctx.out_shape, dtype))
    return convert


for _name, _pred in _PREDICATES.items():
    _names = [f"torch.Tensor.{_name}", f"torch.{_name}"]
    if _name in ("eq", "ne", "lt", "le", "gt", "ge"):
        _names.append(f"torch.Tensor.__{_name}__")
    _converts(*_names)(_compare(_pred))


@_converts("torch.Tensor.logical_not", "torch.logical_not", "torch.Tensor.__invert__", "torch.Tensor.bitwise_not")
def _logical_not(ctx, input):
    if input.dtype != "i1":
        raise Unsupported(f"logical not of {input.dtype} values")
    return ctx.f.compare("eq", ctx.v(input), ctx.f.constant(False, input.shape, "i1"))


@_converts("torch.where", "torch.Tensor.where")
def _where(ctx, condition, input=None, other=None):
    if input is None or other is None:
        raise Unsupported("torch.where(condition) with one argument (data-dependent shape)")
    if isinstance(condition, Operand) and condition.dtype != "i1":
        raise Unsupported("a condition that is not boolean")
    dtype = ctx.out_dtype
    return ctx.f.where(ctx.operand(condition, ctx.out_shape, "i1"), ctx.operand(input, ctx.out_shape, dtype),
                       ctx.operand(other, ctx.out_shape, dtype))


@_converts("torch.Tensor.masked_fill", "torch.masked_fill", "torch.Tensor.masked_fill_")
def _masked_fill(ctx, input, mask, value):
    dtype = _float_result(ctx, "'masked_fill'")
    if mask.dtype != "i1":
        raise Unsupported("a mask that is not boolean")
    x = ctx.operand(input, ctx.out_shape, dtype)
    m = ctx.operand(mask, ctx.out_shape, "i1")
    if isinstance(value, Operand):
        s = ctx.splat(value) if value.rank == 0 else None
        if s is None:
            return ctx.f.where(m, ctx.operand(value, ctx.out_shape, dtype), x)
        value = s
    return ctx.f.masked_fill(x, m, float(value))


# reductions

def _reduce_dims(input, dim) -> List[int]:
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(input.rank))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted({_dim(d, input.rank) for d in dims})


def _reduce(kind: str):
    def convert(ctx, input, dim=None, keepdim=False, *, dtype=None, out=None):
        result = _float_result(ctx, f"a {kind} reduction")
        if isinstance(dim, torch.dtype):          # Tensor.sum(dtype) spelled positionally
            dim = None
        x = ctx.convert(ctx.v(input), result)
        if input.rank == 0:
            return x
        return ctx.f.reduce(kind, x, _reduce_dims(input, dim), keepdim=bool(keepdim))
    return convert


_converts("torch.Tensor.sum", "torch.sum")(_reduce("sum"))
_converts("torch.Tensor.mean", "torch.mean")(_reduce("mean"))
_converts("torch.Tensor.amax", "torch.amax")(_reduce("max"))
_converts("torch.Tensor.amin", "torch.amin")(_reduce("min"))


def _max_min(kind: str, binary: str):
    def convert(ctx, input, dim=None, keepdim=False):
        if isinstance(dim, Operand):                    # torch.max(a, b)
            return _binary(ctx, binary, input, dim)
        if dim is None:
            return _reduce(kind)(ctx, input)
        _float_result(ctx, f"a {kind} reduction")
        values = ctx.f.reduce(kind, ctx.convert(ctx.v(input), ctx.out_dtype), [_dim(dim, input.rank)],
                              keepdim=bool(keepdim))
        return [values, None]                      # the indices cannot be computed
    return convert


_converts("torch.Tensor.max", "torch.max")(_max_min("max", "maximum"))
_converts("torch.Tensor.min", "torch.min")(_max_min("min", "minimum"))


@_converts("torch.nn.functional.softmax", "torch.softmax", "torch.Tensor.softmax")
def _softmax(ctx, input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        raise Unsupported("softmax without an explicit dim")
    x = ctx.convert(ctx.v(input), _float_result(ctx, "softmax"))
    return ctx.f.softmax(x, _dim(dim, input.rank))


@_converts("torch.nn.functional.log_softmax", "torch.log_softmax", "torch.Tensor.log_softmax")
def _log_softmax(ctx, input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        raise Unsupported("log_softmax without an explicit dim")
    f = ctx.f
    x = ctx.convert(ctx.v(input), _float_result(ctx, "log_softmax"))
    d = _dim(dim, input.rank)
    shifted = f.sub(x, ctx.broadcast(f.reduce("max", x, [d], keepdim=True), x.shape))
    total = f.reduce("sum", f.exp(shifted), [d], keepdim=True)
    return f.sub(shifted, ctx.broadcast(f.log(total), x.shape))


# contractions

@_converts("torch.matmul", "torch.Tensor.matmul", "torch.Tensor.__matmul__", "torch.mm", "torch.Tensor.mm",
           "torch.bmm", "torch.Tensor.bmm")
def _matmul(ctx, input, other):
    return _matmul_values(ctx, input, other)


@_converts("torch.Tensor.__rmatmul__")
def _rmatmul(ctx, input, other):
    return _matmul_values(ctx, other, input)


def _matmul_values(ctx, a, b):
    dtype = _float_result(ctx, "matmul")
    f = ctx.f
    if not isinstance(a, Operand) or not isinstance(b, Operand):
        raise Unsupported("matmul with a non-tensor operand")
    x, y = ctx.convert(ctx.v(a), dtype), ctx.convert(ctx.v(b), dtype)
    if x.rank == 1:
        x = f.reshape(x, [1, x.shape[0]])
    if y.rank == 1:
        y = f.reshape(y, [y.shape[0], 1])
    if x.rank == 2 and y.rank == 2:
        result = f.matmul(x, y)
    elif y.rank == 2:                              # [..., M, K] x [K, N]: one big matrix product
        m, k = x.shape[-2:]
        result = f.reshape(f.matmul(f.reshape(x, [math.prod(x.shape[:-1]), k]), y),
                           list(x.shape[:-1]) + [y.shape[1]])
    else:
        batch = list(torch.broadcast_shapes(tuple(x.shape[:-2]), tuple(y.shape[:-2])))
        x = ctx.broadcast(x, batch + list(x.shape[-2:]))
        y = ctx.broadcast(y, batch + list(y.shape[-2:]))
        result = f.batch_matmul(x, y)
    return ctx.reshape(result, ctx.out_shape)


@_converts("torch.nn.functional.linear")
def _linear(ctx, input, weight, bias=None):
    dtype = _float_result(ctx, "linear")
    x = ctx.convert(ctx.v(input), dtype)
    if x.rank == 1:
        x = ctx.f.reshape(x, [1, x.shape[0]])
    w = ctx.convert(ctx.v(weight), dtype)
    b = ctx.convert(ctx.v(bias), dtype) if bias is not None else None
    return ctx.reshape(ctx.f.linear(x, w, b), ctx.out_shape)


# normalisation, embedding, attention, losses

@_converts("torch.nn.functional.layer_norm")
def _layer_norm(ctx, input, normalized_shape, weight=None, bias=None, eps=1e-5):
    if len(normalized_shape) != 1 or normalized_shape[0] != input.shape[-1]:
        raise Unsupported(f"normalized_shape {list(normalized_shape)} (rtx normalises the last dimension only)")
    dtype = _float_result(ctx, "layer_norm")
    d = input.shape[-1]
    scale = ctx.operand(weight, [d], dtype) if weight is not None else ctx.f.constant(1.0, [d], dtype)
    shift = ctx.operand(bias, [d], dtype) if bias is not None else None
    return ctx.f.layernorm(ctx.convert(ctx.v(input), dtype), scale, shift, eps=float(eps))


@_converts("torch.nn.functional.embedding")
def _embedding(ctx, input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
               sparse=False):
    for option, value, default in (("padding_idx", padding_idx, None), ("max_norm", max_norm, None),
                                   ("scale_grad_by_freq", scale_grad_by_freq, False)):
        if value != default:
            raise Unsupported(f"{option}={value!r} (rtx.embedding has no such option)")
    if input.dtype not in ("i32", "i64"):
        raise Unsupported(f"indices of type {input.dtype}")
    return ctx.f.embedding(ctx.v(weight), ctx.v(input))


@_converts("torch.nn.functional.cross_entropy")
def _cross_entropy(ctx, input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                   reduction="mean", label_smoothing=0.0):
    if weight is not None or size_average is not None or reduce is not None:
        raise Unsupported("class weights and the legacy size_average/reduce arguments")
    if reduction != "mean":
        raise Unsupported(f"reduction={reduction!r} (rtx.cross_entropy takes the mean)")
    if label_smoothing:
        raise Unsupported(f"label_smoothing={label_smoothing}")
    if not isinstance(target, Operand) or target.dtype not in ("i32", "i64"):
        raise Unsupported("targets that are class probabilities (rtx takes class indices)")
    logits = ctx.v(input)
    if logits.dtype not in FLOATS:
        raise Unsupported(f"logits of type {logits.dtype}")
    if input.rank == 1:
        logits = ctx.f.reshape(logits, [1, input.shape[0]])
    elif input.rank > 2:                           # [N, C, d...] -> [N, d..., C]
        logits = ctx.f.transpose(logits, [0] + list(range(2, input.rank)) + [1])
    labels = ctx.reshape(ctx.v(target), logits.shape[:-1])
    loss = ctx.f.cross_entropy(logits, labels, ignore_index=int(ignore_index))
    return ctx.convert(loss, ctx.out_dtype)


@_converts("torch.nn.functional.mse_loss")
def _mse_loss(ctx, input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if size_average is not None or reduce is not None or reduction not in ("mean", "sum"):
        raise Unsupported(f"reduction={reduction!r} and the legacy size_average/reduce arguments")
    if weight is not None:                                      # PyTorch >= 2.6
        raise Unsupported("a weight per element")
    dtype = _float_result(ctx, "mse_loss")
    shape = tuple(torch.broadcast_shapes(tuple(input.shape), tuple(target.shape)))
    diff = ctx.f.sub(ctx.operand(input, shape, dtype), ctx.operand(target, shape, dtype))
    return ctx.f.reduce(reduction, ctx.f.mul(diff, diff), list(range(len(shape))))


def _sdpa(ctx, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """rtx.attention: softmax(q k^T * scale [+ causal mask]) v. Fewer key/value
    heads (enable_gqa=True) follow PyTorch's convention, which is rtx's:
    query head h reads key/value head h / (Hq / Hkv)."""
    if attn_mask is not None:
        raise Unsupported("attn_mask: rtx.attention takes no mask (a causal one is is_causal=True)")
    if dropout_p:
        raise Unsupported(f"dropout_p={dropout_p}: rtx.attention has no dropout; pass dropout_p=0.0 "
                          "(nanoGPT: `self.dropout if self.training else 0` with the model in eval mode)")
    if not isinstance(key, Operand) or query.rank != 4 or key.rank != 4 or key.shape != value.shape:
        raise Unsupported("inputs that are not [batch, heads, sequence, head_dim] (key and value alike)")
    if query.shape[1] % key.shape[1]:
        raise Unsupported(f"{query.shape[1]} query heads over {key.shape[1]} key/value heads")
    if is_causal and query.shape[2] != key.shape[2]:
        raise Unsupported(f"is_causal with {query.shape[2]} queries and {key.shape[2]} keys "
                          "(rtx.attention's causal mask is square)")
    dtype = _float_result(ctx, "attention")
    q, k, v = (ctx.convert(ctx.v(t), dtype) for t in (query, key, value))
    return ctx.f.attention(q, k, v, causal=bool(is_causal), scale=scale)


if hasattr(torch.nn.functional, "scaled_dot_product_attention"):          # PyTorch >= 2.0
    _converts("torch.nn.functional.scaled_dot_product_attention")(_sdpa)


@_converts("rtx.attention")
def _fused_attention(ctx, query, key, value, causal=False, scale=None, key_perm=None, value_perm=None):
    """Attention recognised by rtx.torch_fusion; key and value permuted by
    key_perm and value_perm first (shared heads taken from [B, S, Hkv, D])."""
    dtype = _float_result(ctx, "attention")
    q, k, v = (ctx.convert(ctx.v(t), dtype) for t in (query, key, value))
    k, v = (ctx.f.transpose(x, list(perm)) if perm else x for x, perm in ((k, key_perm), (v, value_perm)))
    return ctx.f.attention(q, k, v, causal=bool(causal), scale=scale)


@_converts("rtx.swiglu")
def _fused_swiglu(ctx, gate, up):
    """silu(gate) * up recognised by rtx.torch_fusion."""
    dtype = _float_result(ctx, "swiglu")
    return ctx.f.swiglu(ctx.operand(gate, ctx.out_shape, dtype), ctx.operand(up, ctx.out_shape, dtype))


@_converts("torch.ones_like", "torch.zeros_like", "torch.full_like", "torch.empty_like", "torch.Tensor.new_ones",
           "torch.Tensor.new_zeros", "torch.Tensor.new_full", "torch.Tensor.new_empty", "torch.Tensor.new_tensor")
def _constant_like(ctx, input, *args, **kwargs):
    # The values do not depend on the operand's, only its shape (and the
    # call's arguments): a constant. The traced result is a meta tensor, so
    # the value comes from the call: ones, zeros (empty: zeros), the fill
    # value, or new_tensor's data.
    op = ctx.node.op.rsplit(".", 1)[1]
    dtype = ctx.out_dtype
    if op == "new_tensor":
        data = args[0] if args else kwargs.get("data")
        if isinstance(data, Operand) and data.const is None:
            raise Unsupported("new_tensor of a traced tensor (a copy of its values at import time)")
        value = data.const if isinstance(data, Operand) else torch.tensor(data)
        return ctx.f.dense(value.reshape(-1).tolist(), ctx.out_shape, dtype)
    if op in ("full_like", "new_full"):
        fill = args[-1] if (op == "full_like" and args) or len(args) >= 2 else kwargs.get("fill_value")
        if isinstance(fill, Operand):
            fill = ctx.splat(fill)
        if not isinstance(fill, (bool, int, float)):
            raise Unsupported("a fill value that is not a constant number")
    else:
        fill = 1 if "ones" in op else 0
    return ctx.f.constant(fill if dtype in FLOATS else int(fill) if dtype != "i1" else bool(fill),
                          ctx.out_shape, dtype)


# --- issue 36: the ops of the zoo's families (HF GPT-2's Conv1D, timm's PatchEmbed) -----------------

@_converts("torch.addmm", "torch.Tensor.addmm")
def _addmm(ctx, input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2): Hugging Face's Conv1D (GPT-2),
    `torch.addmm(bias, x2d, W)` with W [in, out]. Lowered as rtx.matmul(x, W)
    + bias, so W keeps the user's layout and the sharding seeder sees a layer
    over a parameter (a matmul whose rhs is a param; the bias follows)."""
    dtype = _float_result(ctx, "addmm")
    if not isinstance(mat1, Operand) or not isinstance(mat2, Operand) or mat1.rank != 2 or mat2.rank != 2:
        raise Unsupported("mat1 and mat2 must be matrices")
    f = ctx.f
    product = f.matmul(ctx.convert(ctx.v(mat1), dtype), ctx.convert(ctx.v(mat2), dtype))
    if alpha != 1:
        product = f.mul(product, f.constant(alpha, ctx.out_shape, dtype))
    if beta == 0:                                   # torch ignores input then (even NaN in it)
        return product
    bias = ctx.operand(input, ctx.out_shape, dtype)
    if beta != 1:
        bias = f.mul(bias, f.constant(beta, ctx.out_shape, dtype))
    return f.add(product, bias)


def _pair(x: Any, what: str) -> Tuple[int, int]:
    if isinstance(x, int):
        return x, x
    if isinstance(x, (list, tuple)) and len(x) == 2 and all(isinstance(i, int) for i in x):
        return tuple(x)
    raise Unsupported(f"{what}={x!r}")


def _patch_grid(ctx, input, kernel, stride, padding, dilation, what: str) -> Tuple[int, int, int, int]:
    """(ph, pw, rows, cols) of a patch extraction that rtx expresses as
    reshape + transpose: non-overlapping patches (stride == kernel), no
    padding, no dilation, an [N, C, H, W] input. Rows and columns past the
    last whole patch are dropped, as PyTorch does."""
    kernel, stride = _pair(kernel, "kernel_size"), _pair(stride, "stride")
    if isinstance(padding, str):
        padding = (0, 0) if padding == "valid" or kernel == (1, 1) else None
    if padding is None or _pair(padding, "padding") != (0, 0) or _pair(dilation, "dilation") != (1, 1) or \
            stride != kernel or input.rank != 4:
        raise Unsupported(f"{what} with kernel {list(kernel)}, stride {list(stride)}, padding {padding!r}, "
                          f"dilation {dilation!r} on a rank-{input.rank} input: rtx imports {what} over "
                          "non-overlapping patches only (stride == kernel_size, padding 0, dilation 1, "
                          "[N, C, H, W]), the patch embedding of a ViT")
    ph, pw = kernel
    return ph, pw, input.shape[2] // ph, input.shape[3] // pw


def _patches(ctx, input, ph: int, pw: int, rows: int, cols: int):
    """input [N, C, H, W] as [N, C, rows, ph, cols, pw] (whole patches only)."""
    n, c, h, w = input.shape
    value = ctx.v(input)
    if (h, w) != (rows * ph, cols * pw):
        value = ctx.f.slice(value, [0, 0, 0, 0], [n, c, rows * ph, cols * pw])
    return ctx.f.reshape(value, [n, c, rows, ph, cols, pw])


@_converts("torch.conv2d", "torch.nn.functional.conv2d")
def _conv2d(ctx, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """A convolution over non-overlapping patches (timm's PatchEmbed:
    kernel == stride) is a matrix product: patches [N*L, C*kh*kw] times the
    weight [O, C, kh, kw] viewed as [O, C*kh*kw]."""
    if groups != 1:
        raise Unsupported(f"groups={groups}")
    dtype = _float_result(ctx, "conv2d")
    ph, pw, rows, cols = _patch_grid(ctx, input, weight.shape[2:], stride, padding, dilation, "conv2d")
    n, c = input.shape[:2]
    f = ctx.f
    patches = f.transpose(_patches(ctx, input, ph, pw, rows, cols), [0, 2, 4, 1, 3, 5])
    patches = ctx.convert(f.reshape(patches, [n * rows * cols, c * ph * pw]), dtype)
    w = f.reshape(ctx.convert(ctx.v(weight), dtype), [weight.shape[0], c * ph * pw])
    b = ctx.convert(ctx.v(bias), dtype) if bias is not None else None
    out = f.reshape(f.linear(patches, w, b), [n, rows, cols, weight.shape[0]])
    return f.transpose(out, [0, 3, 1, 2])


@_converts("torch.nn.functional.unfold")
def _unfold(ctx, input, kernel_size, dilation=1, padding=0, stride=1):
    """F.unfold over non-overlapping patches: [N, C*kh*kw, L], features
    ordered (channel, row in the patch, column), patches row by row."""
    ph, pw, rows, cols = _patch_grid(ctx, input, kernel_size, stride, padding, dilation, "unfold")
    n, c = input.shape[:2]
    patches = ctx.f.transpose(_patches(ctx, input, ph, pw, rows, cols), [0, 1, 3, 5, 2, 4])
    return ctx.f.reshape(patches, [n, c * ph * pw, rows * cols])
