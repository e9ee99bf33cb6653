"""Write rtx IR from Python, without PyTorch.

A small tracing builder: every method appends one rtx op, infers its result
shape (checking its operands, with errors that name the op), and returns a
Value. `Module.text()` gives the MLIR text that rtx-opt and rtx-run read.

    from rtx.builder import Module, normal, zeros
    m = Module()
    f = m.function("mlp", args={"x": ([8, 16], "f32")})
    w = f.param("fc.weight", [32, 16], normal(0.0, 0.02))
    y = f.gelu(f.linear(f.arg("x"), w))
    f.ret(y)
    print(m.text())
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple


class BuildError(ValueError):
    """A shape or type error while building IR; the message names the op."""


@dataclass(frozen=True)
class Init:
    """A parameter initializer: zeros, ones, constant(v), normal, uniform."""
    kind: str
    args: Tuple[float, ...] = ()

    def text(self) -> str:
        if not self.args:
            return self.kind
        return f"{self.kind}({', '.join(_float(a) for a in self.args)})"


def zeros() -> Init:
    return Init("zeros")


def ones() -> Init:
    return Init("ones")


def constant(value: float) -> Init:
    return Init("constant", (value,))


def normal(mean: float, std: float) -> Init:
    return Init("normal", (mean, std))


def uniform(low: float, high: float) -> Init:
    return Init("uniform", (low, high))


def _float(x: float) -> str:
    """A float literal MLIR parses: it needs a '.' in the mantissa."""
    if math.isinf(x):
        return "0xFFF0000000000000" if x < 0 else "0x7FF0000000000000"
    text = repr(float(x))
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + ("e" + exponent if exponent else "")


def _literal(x: float, dtype: str) -> str:
    """One element of a dense literal. Non-finite floats are written as bit
    patterns of the element type (MLIR has no decimal spelling for them)."""
    if dtype == "i1":
        return "true" if x else "false"
    if dtype in INTS:
        return str(int(x))
    if math.isfinite(x):
        return _float(x)
    bits = {"f32": ("0x7F800000", "0xFF800000", "0x7FC00000"),
            "f64": ("0x7FF0000000000000", "0xFFF0000000000000", "0x7FF8000000000000"),
            "bf16": ("0x7F80", "0xFF80", "0x7FC0"), "f16": ("0x7C00", "0xFC00", "0x7E00")}[dtype]
    return bits[2] if math.isnan(x) else bits[0] if x > 0 else bits[1]


def _nested(literals: List[str], shape: List[int]) -> str:
    """Row-major elements as a nested dense literal: [[a, b], [c, d]]."""
    if not shape:
        return literals[0]
    step = len(literals) // shape[0] if shape[0] else 0
    return "[" + ", ".join(_nested(literals[i * step:(i + 1) * step], shape[1:])
                           for i in range(shape[0])) + "]"


@dataclass(frozen=True)
class Value:
    """An SSA value: its name in the function, shape and element type."""
    name: str
    shape: Tuple[int, ...]
    dtype: str

    @property
    def type(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        return f"tensor<{dims}{self.dtype}>"

    @property
    def rank(self) -> int:
        return len(self.shape)


FLOATS = ("f32", "f64", "bf16", "f16")
INTS = ("i32", "i64")
_BYTES = {"f32": 4, "f64": 8, "bf16": 2, "f16": 2, "i32": 4, "i64": 8}


class Function:
    """Builds one func.func. Create through Module.function."""

    def __init__(self, name: str, args: Dict[str, Tuple[Sequence[int], str]]):
        self.name = name
        self._lines: List[str] = []
        self._counter = 0
        self._args: Dict[str, Value] = {}
        self._results: List[Value] = []
        self._names: set = set()
        self._inputs: set = set()
        for arg_name, (shape, dtype) in args.items():
            self._args[arg_name] = Value(f"%{_ident(arg_name)}", tuple(shape), dtype)

    # --- plumbing ------------------------------------------------------------
    def _new(self, shape: Sequence[int], dtype: str) -> Value:
        self._counter += 1
        return Value(f"%v{self._counter}", tuple(int(d) for d in shape), dtype)

    def _emit(self, line: str) -> None:
        self._lines.append("  " + line)

    def arg(self, name: str) -> Value:
        if name not in self._args:
            raise BuildError(f"function @{self.name} has no argument '{name}'")
        return self._args[name]

    def _check(self, cond: bool, op: str, message: str) -> None:
        if not cond:
            raise BuildError(f"rtx.{op}: {message}")

    def _same(self, op: str, *values: Value) -> None:
        first = values[0]
        for v in values[1:]:
            self._check(v.shape == first.shape and v.dtype == first.dtype, op,
                        f"operands differ: {first.type} vs {v.type} (broadcast first)")

    # --- values that enter the model ---------------------------------------
    def param(self, name: str, shape: Sequence[int], init: Init,
              seed: Optional[int] = None, dtype: str = "f32") -> Value:
        self._check(name not in self._names, "param", f"parameter \"{name}\" is declared twice")
        self._names.add(name)
        v = self._new(shape, dtype)
        seed_text = f" seed {seed}" if seed is not None else ""
        self._emit(f'{v.name} = rtx.param "{name}" {init.text()}{seed_text} : {v.type}')
        return v

    def input(self, name: str, shape: Sequence[int], dtype: str) -> Value:
        self._check(name not in self._inputs, "input", f"input \"{name}\" is declared twice")
        self._inputs.add(name)
        v = self._new(shape, dtype)
        self._emit(f'{v.name} = rtx.input "{name}" : {v.type}')
        return v

    def constant(self, value: float, shape: Sequence[int], dtype: str = "f32") -> Value:
        """A tensor whose elements all equal `value` (a splat)."""
        v = self._new(shape, dtype)
        self._emit(f"{v.name} = rtx.constant dense<{_literal(value, dtype)}> : {v.type}")
        return v

    def dense(self, values: Sequence[float], shape: Sequence[int], dtype: str = "f32") -> Value:
        """A tensor of the given elements, flat in row-major order."""
        values = list(values)
        self._check(len(values) == math.prod(shape), "constant",
                    f"{len(values)} values do not fill shape {list(shape)}")
        if values and all(x == values[0] for x in values):
            return self.constant(values[0], shape, dtype)
        v = self._new(shape, dtype)
        literals = [_literal(x, dtype) for x in values]
        self._emit(f"{v.name} = rtx.constant dense<{_nested(literals, list(shape))}> : {v.type}")
        return v

    def dense_bytes(self, data: bytes, shape: Sequence[int], dtype: str = "f32") -> Value:
        """A tensor given as its raw little-endian buffer, row-major (i1:
        one bit per element, packed from the low bit): MLIR's hex form,
        `dense<"0x...">`, which is 2 characters a byte where decimal
        literals take 20 an element. For large constants (rotary tables)."""
        count = math.prod(shape)
        expected = (count + 7) // 8 if dtype == "i1" else count * _BYTES[dtype]
        self._check(len(data) == expected, "constant",
                    f"{len(data)} bytes do not fill shape {list(shape)} of {dtype} ({expected} bytes)")
        v = self._new(shape, dtype)
        self._emit(f'{v.name} = rtx.constant dense<"0x{data.hex().upper()}"> : {v.type}')
        return v

    # --- contractions ----------------------------------------------------------
    def matmul(self, a: Value, b: Value, transpose_a=False, transpose_b=False) -> Value:
        self._check(a.rank == 2 and b.rank == 2, "matmul", f"needs matrices, got {a.type}, {b.type}")
        m, k = (a.shape[1], a.shape[0]) if transpose_a else a.shape
        k2, n = (b.shape[1], b.shape[0]) if transpose_b else b.shape
        self._check(k == k2, "matmul", f"contracting dimensions differ: {k} vs {k2}")
        v = self._new([m, n], a.dtype)
        flags = (" transpose_lhs" if transpose_a else "") + (" transpose_rhs" if transpose_b else "")
        self._emit(f"{v.name} = rtx.matmul {a.name}, {b.name}{flags} : {a.type}, {b.type} -> {v.type}")
        return v

    def batch_matmul(self, a: Value, b: Value, transpose_a=False, transpose_b=False) -> Value:
        self._check(a.rank >= 3 and a.rank == b.rank and a.shape[:-2] == b.shape[:-2], "batch_matmul",
                    f"needs equal batch dimensions, got {a.type}, {b.type}")
        m, k = (a.shape[-1], a.shape[-2]) if transpose_a else a.shape[-2:]
        k2, n = (b.shape[-1], b.shape[-2]) if transpose_b else b.shape[-2:]
        self._check(k == k2, "batch_matmul", f"contracting dimensions differ: {k} vs {k2}")
        v = self._new(list(a.shape[:-2]) + [m, n], a.dtype)
        flags = (" transpose_lhs" if transpose_a else "") + (" transpose_rhs" if transpose_b else "")
        self._emit(f"{v.name} = rtx.batch_matmul {a.name}, {b.name}{flags} : {a.type}, {b.type} -> {v.type}")
        return v

    def linear(self, x: Value, w: Value, b: Optional[Value] = None) -> Value:
        self._check(w.rank == 2 and w.shape[1] == x.shape[-1], "linear",
                    f"weight {w.type} must be [out, {x.shape[-1]}]")
        v = self._new(list(x.shape[:-1]) + [w.shape[0]], x.dtype)
        if b is None:
            self._emit(f"{v.name} = rtx.linear {x.name}, {w.name} : {x.type}, {w.type} -> {v.type}")
        else:
            self._check(b.shape == (w.shape[0],), "linear", f"bias {b.type} must be [{w.shape[0]}]")
            self._emit(f"{v.name} = rtx.linear {x.name}, {w.name}, {b.name} : "
                       f"{x.type}, {w.type}, {b.type} -> {v.type}")
        return v

    # --- elementwise -------------------------------------------------------------
    def _binary(self, op: str, a: Value, b: Value) -> Value:
        self._same(op, a, b)
        v = self._new(a.shape, a.dtype)
        self._emit(f"{v.name} = rtx.{op} {a.name}, {b.name} : {v.type}")
        return v

    def add(self, a, b): return self._binary("add", a, b)
    def sub(self, a, b): return self._binary("sub", a, b)
    def mul(self, a, b): return self._binary("mul", a, b)
    def div(self, a, b): return self._binary("div", a, b)
    def maximum(self, a, b): return self._binary("maximum", a, b)
    def minimum(self, a, b): return self._binary("minimum", a, b)
    def swiglu(self, gate, up):
        """Llama's silu(gate) * up as one fused op."""
        return self._binary("swiglu", gate, up)

    def _unary(self, op: str, x: Value, suffix: str = "") -> Value:
        v = self._new(x.shape, x.dtype)
        self._emit(f"{v.name} = rtx.{op} {x.name}{suffix} : {v.type}")
        return v

    def neg(self, x): return self._unary("neg", x)
    def exp(self, x): return self._unary("exp", x)
    def log(self, x): return self._unary("log", x)
    def sqrt(self, x): return self._unary("sqrt", x)
    def rsqrt(self, x): return self._unary("rsqrt", x)
    def tanh(self, x): return self._unary("tanh", x)
    def sigmoid(self, x): return self._unary("sigmoid", x)
    def relu(self, x): return self._unary("relu", x)
    def silu(self, x): return self._unary("silu", x)

    def gelu(self, x: Value, approximate: bool = False) -> Value:
        return self._unary("gelu", x, " approximate" if approximate else "")

    def dropout(self, x: Value, rate: float, seed: int) -> Value:
        self._check(0.0 <= rate < 1.0, "dropout", f"rate must be in [0, 1), got {rate}")
        return self._unary("dropout", x, f" rate {_float(rate)} seed {seed}")

    def convert(self, x: Value, dtype: str) -> Value:
        v = self._new(x.shape, dtype)
        self._emit(f"{v.name} = rtx.convert {x.name} : {x.type} -> {v.type}")
        return v

    def compare(self, predicate: str, a: Value, b: Value) -> Value:
        self._check(predicate in ("eq", "ne", "lt", "le", "gt", "ge"), "compare",
                    f"unknown predicate '{predicate}'")
        self._same("compare", a, b)
        v = self._new(a.shape, "i1")
        self._emit(f"{v.name} = rtx.compare {predicate}, {a.name}, {b.name} : {a.type} -> {v.type}")
        return v

    def where(self, cond: Value, a: Value, b: Value) -> Value:
        self._same("where", a, b)
        self._check(cond.shape == a.shape and cond.dtype == "i1", "where",
                    f"condition {cond.type} must be an i1 mask of shape {list(a.shape)}")
        v = self._new(a.shape, a.dtype)
        self._emit(f"{v.name} = rtx.where {cond.name}, {a.name}, {b.name} : {cond.type}, {v.type}")
        return v

    def masked_fill(self, x: Value, mask: Value, value: float) -> Value:
        self._check(mask.shape == x.shape and mask.dtype == "i1", "masked_fill",
                    f"mask {mask.type} must be an i1 mask of shape {list(x.shape)} (broadcast first)")
        v = self._new(x.shape, x.dtype)
        self._emit(f"{v.name} = rtx.masked_fill {x.name}, {mask.name}, {_float(value)} : {x.type}, {mask.type}")
        return v

    # --- normalisation, softmax, attention ---------------------------------------
    def layernorm(self, x: Value, scale: Value, bias: Optional[Value] = None, eps: float = 1e-5) -> Value:
        self._check(scale.shape == (x.shape[-1],), "layernorm", f"scale {scale.type} must be [{x.shape[-1]}]")
        v = self._new(x.shape, x.dtype)
        if bias is None:
            self._emit(f"{v.name} = rtx.layernorm {x.name}, {scale.name} eps {_float(eps)} : {x.type}, {scale.type}")
        else:
            self._emit(f"{v.name} = rtx.layernorm {x.name}, {scale.name}, {bias.name} eps {_float(eps)} : "
                       f"{x.type}, {scale.type}, {bias.type}")
        return v

    def rmsnorm(self, x: Value, scale: Value, eps: float = 1e-6) -> Value:
        self._check(scale.shape == (x.shape[-1],), "rmsnorm", f"scale {scale.type} must be [{x.shape[-1]}]")
        v = self._new(x.shape, x.dtype)
        self._emit(f"{v.name} = rtx.rmsnorm {x.name}, {scale.name} eps {_float(eps)} : {x.type}, {scale.type}")
        return v

    def softmax(self, x: Value, dim: int) -> Value:
        return self._unary("softmax", x, f" dim {dim % x.rank}")

    def rope(self, x: Value, theta: float = 10000.0) -> Value:
        self._check(x.rank == 4 and x.shape[3] % 2 == 0, "rope", f"needs [B, H, S, even D], got {x.type}")
        return self._unary("rope", x, f" theta {_float(theta)}")

    def attention(self, q: Value, k: Value, v: Value, causal: bool = True,
                  scale: Optional[float] = None) -> Value:
        self._check(q.rank == 4 and k.shape == v.shape and q.shape[1] % k.shape[1] == 0,
                    "attention", f"bad shapes {q.type}, {k.type}, {v.type}")
        r = self._new(q.shape, q.dtype)
        flags = (" causal" if causal else "") + (f" scale {_float(scale)}" if scale is not None else "")
        self._emit(f"{r.name} = rtx.attention {q.name}, {k.name}, {v.name}{flags} : "
                   f"{q.type}, {k.type}, {v.type} -> {r.type}")
        return r

    # --- embedding and loss ----------------------------------------------------------
    def embedding(self, table: Value, ids: Value) -> Value:
        self._check(table.rank == 2 and ids.dtype in INTS, "embedding", f"bad operands {table.type}, {ids.type}")
        v = self._new(list(ids.shape) + [table.shape[1]], table.dtype)
        self._emit(f"{v.name} = rtx.embedding {table.name}, {ids.name} : {table.type}, {ids.type} -> {v.type}")
        return v

    def cross_entropy(self, logits: Value, labels: Value, ignore_index: Optional[int] = None) -> Value:
        self._check(labels.shape == logits.shape[:-1], "cross_entropy",
                    f"labels {labels.type} must be the leading shape of {logits.type}")
        v = self._new([], "f32")
        ignore = f" ignore_index {ignore_index}" if ignore_index is not None else ""
        self._emit(f"{v.name} = rtx.cross_entropy {logits.name}, {labels.name}{ignore} : "
                   f"{logits.type}, {labels.type} -> {v.type}")
        return v

    # --- shape manipulation --------------------------------------------------------------
    def reshape(self, x: Value, shape: Sequence[int]) -> Value:
        self._check(math.prod(shape) == math.prod(x.shape), "reshape",
                    f"cannot reshape {x.type} into {list(shape)}")
        v = self._new(shape, x.dtype)
        self._emit(f"{v.name} = rtx.reshape {x.name} : {x.type} -> {v.type}")
        return v

    def transpose(self, x: Value, perm: Sequence[int]) -> Value:
        self._check(sorted(perm) == list(range(x.rank)), "transpose", f"bad permutation {list(perm)}")
        v = self._new([x.shape[p] for p in perm], x.dtype)
        self._emit(f"{v.name} = rtx.transpose {x.name} [{', '.join(map(str, perm))}] : {x.type} -> {v.type}")
        return v

    def slice(self, x: Value, starts: Sequence[int], limits: Sequence[int]) -> Value:
        self._check(len(starts) == x.rank and len(limits) == x.rank and
                    all(0 <= s <= l <= d for s, l, d in zip(starts, limits, x.shape)), "slice",
                    f"bad ranges {list(starts)}:{list(limits)} for {x.type}")
        v = self._new([l - s for s, l in zip(starts, limits)], x.dtype)
        ranges = ", ".join(f"{s}:{l}" for s, l in zip(starts, limits))
        self._emit(f"{v.name} = rtx.slice {x.name} [{ranges}] : {x.type} -> {v.type}")
        return v

    def split(self, x: Value, dim: int, sizes: Sequence[int]) -> List[Value]:
        self._check(sum(sizes) == x.shape[dim], "split", f"sizes {list(sizes)} do not add up to {x.shape[dim]}")
        outs = []
        for s in sizes:
            shape = list(x.shape)
            shape[dim] = s
            outs.append(self._new(shape, x.dtype))
        self._emit(f"{', '.join(o.name for o in outs)} = rtx.split {x.name} dim {dim} : "
                   f"{x.type} -> {', '.join(o.type for o in outs)}")
        return outs

    def pad(self, x: Value, low: Sequence[int], high: Sequence[int]) -> Value:
        """Zeros before (`low`) and after (`high`) every dimension."""
        self._check(len(low) == x.rank and len(high) == x.rank and min(list(low) + list(high) + [0]) >= 0,
                    "pad", f"needs {x.rank} non-negative low and high sizes")
        v = self._new([d + lo + hi for d, lo, hi in zip(x.shape, low, high)], x.dtype)
        self._emit(f"{v.name} = rtx.pad {x.name} low [{', '.join(map(str, low))}] "
                   f"high [{', '.join(map(str, high))}] : {x.type} -> {v.type}")
        return v

    def concat(self, xs: Sequence[Value], dim: int) -> Value:
        shape = list(xs[0].shape)
        shape[dim] = sum(x.shape[dim] for x in xs)
        v = self._new(shape, xs[0].dtype)
        self._emit(f"{v.name} = rtx.concat {', '.join(x.name for x in xs)} dim {dim} : "
                   f"{', '.join(x.type for x in xs)} -> {v.type}")
        return v

    def broadcast(self, x: Value, shape: Sequence[int], dims: Sequence[int]) -> Value:
        self._check(len(dims) == x.rank and all(a < b for a, b in zip(dims, dims[1:])) and
                    all(0 <= d < len(shape) and x.shape[i] in (1, shape[d]) for i, d in enumerate(dims)),
                    "broadcast", f"cannot broadcast {x.type} to {list(shape)} with dims {list(dims)}")
        v = self._new(shape, x.dtype)
        self._emit(f"{v.name} = rtx.broadcast {x.name} dims [{', '.join(map(str, dims))}] : {x.type} -> {v.type}")
        return v

    def reduce(self, kind: str, x: Value, dims: Sequence[int], keepdim: bool = False) -> Value:
        self._check(kind in ("sum", "mean", "max", "min"), "reduce", f"unknown kind '{kind}'")
        self._check(all(0 <= d < x.rank for d in dims) and all(a < b for a, b in zip(dims, dims[1:])),
                    "reduce", f"dims {list(dims)} must be increasing dimensions of {x.type}")
        shape = [1 if d in dims else s for d, s in enumerate(x.shape)] if keepdim else \
            [s for d, s in enumerate(x.shape) if d not in dims]
        v = self._new(shape, x.dtype)
        keep = " keepdim" if keepdim else ""
        self._emit(f"{v.name} = rtx.reduce {kind} {x.name} dims [{', '.join(map(str, dims))}]{keep} : "
                   f"{x.type} -> {v.type}")
        return v

    # --- results --------------------------------------------------------------------------
    def ret(self, *values: Value) -> None:
        self._results = list(values)

    def text(self) -> str:
        args = ", ".join(f"{v.name}: {v.type}" for v in self._args.values())
        results = ", ".join(v.type for v in self._results)
        if len(self._results) != 1:
            results = f"({results})"
        body = "\n".join(self._lines)
        ret = (f"  return {', '.join(v.name for v in self._results)} : "
               f"{', '.join(v.type for v in self._results)}")
        return f"func.func @{self.name}({args}) -> {results} {{\n{body}\n{ret}\n}}\n"


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


class Module:
    """A module of functions (and, later, meshes)."""

    def __init__(self) -> None:
        self._functions: List[Function] = []
        self._header: List[str] = []

    def function(self, name: str, args: Optional[Dict[str, Tuple[Sequence[int], str]]] = None) -> Function:
        f = Function(name, args or {})
        self._functions.append(f)
        return f

    def comment(self, text: str) -> None:
        self._header.extend(f"// {line}".rstrip() for line in text.splitlines())

    def text(self) -> str:
        header = "\n".join(self._header)
        return (header + "\n\n" if header else "") + "\n".join(f.text() for f in self._functions)
