"""The importer's record of a PyTorch run: values (inputs, parameters,
constants, call results) and the torch calls that made them.

Tracer, a TorchFunctionMode, fills a Graph while the module runs on its
example inputs. A call is recorded when an operand depends on an input or a
parameter ("traced"); any other call just runs, and its result, if a
recorded call uses it, becomes a constant leaf holding its value.

Traced values are meta tensors (shapes and dtypes, no storage): the
importer hands the module meta copies of its inputs and parameters, so no
activation is ever allocated. Constants are real CPU tensors, since their
values enter the IR: an untraced call asked for the meta device (`device=
x.device`, `.to(x.device)`) runs on the CPU instead, and a traced call that
mixes a constant with traced values gets a meta copy of the constant for the
call while the Graph keeps its value. A meta tensor that is not traced (a
buffer of a model built on the meta device, and whatever is computed from
it) has no value: it may be used for its shape, and is an error, naming the
buffer, where its value would enter the IR.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from torch.overrides import TorchFunctionMode

from .errors import TorchImportError, UnsupportedOpError


@dataclass
class Leaf:
    """A value entering the graph."""
    kind: str                 # "input", "param" or "const"
    name: str
    tensor: torch.Tensor      # its value: the example input, the module's parameter (maybe meta), the constant
    owner: str = ""           # of a parameter: the class name of the module that holds it


@dataclass
class Node:
    """One recorded call: its op name, arguments (tensors as Ref), results."""
    op: str
    args: tuple
    kwargs: dict
    outputs: List[int]        # value ids
    tensors: List[torch.Tensor]
    where: Tuple[str, str]    # (module path, module type)
    source: str = ""          # "FILE:LINE" of the user's code that made the call


@dataclass(frozen=True)
class Ref:
    """A value of the graph, where a call's arguments had a tensor."""
    id: int


@dataclass
class Meta:
    """What is known of a value: shape, dtype, and where it comes from."""
    shape: Tuple[int, ...]
    dtype: torch.dtype
    leaf: Optional[Leaf] = None
    node: Optional[int] = None     # index of the producing node


def op_name(func: Callable) -> str:
    """A readable, stable name: torch.Tensor.view, torch.nn.functional.linear, torch.cat."""
    owner = getattr(func, "__self__", None)
    if type(owner).__name__ == "getset_descriptor":            # a property: Tensor.T
        return f"torch.Tensor.{owner.__name__}"
    qual = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)
    module = getattr(func, "__module__", None) or ""
    head, _, rest = qual.partition(".")
    if head in ("_TensorBase", "TensorBase", "Tensor") and rest:     # TensorBase: PyTorch 2
        return f"torch.Tensor.{rest}"
    if head == "_VariableFunctionsClass" and rest:
        return f"torch.{rest}"
    if module in ("torch._C._nn", "torch.nn.functional"):
        return f"torch.nn.functional.{qual}"
    if module in ("torch.functional", "torch._C._VariableFunctions", "torch"):
        return f"torch.{qual}"
    return f"{module}.{qual}" if module else qual


# Calls that only read metadata: allowed on traced tensors, never recorded.
_METADATA = {f"torch.Tensor.{n}" for n in (
    "size", "dim", "ndim", "shape", "dtype", "device", "numel", "nelement", "is_contiguous", "stride",
    "element_size", "is_floating_point", "is_complex", "requires_grad", "is_leaf", "layout", "names",
    "__len__", "__repr__", "__format__", "__str__", "__hash__", "get_device", "is_cuda", "storage_offset",
    "ndimension", "dim_order", "grad_fn", "is_sparse", "is_quantized", "is_meta", "output_nr", "_version")}
# Calls that change nothing the importer models.
_IGNORED = {"torch.Tensor.requires_grad_", "torch.Tensor.retain_grad", "torch.Tensor.register_hook"}


# Frames in these directories are PyTorch's, the standard library's
# (contextlib, functools) or the importer's own; the first frame outside
# them is the user's code that made a call.
_INTERNAL_DIRS = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (torch, contextlib))
_RTX_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_internal_files: Dict[str, bool] = {}


def _internal(filename: str) -> bool:
    if filename not in _internal_files:
        path = os.path.abspath(filename)
        _internal_files[filename] = path.startswith(_INTERNAL_DIRS + (_RTX_DIR,))
    return _internal_files[filename]


def user_source() -> str:
    """"FILE:LINE" of the innermost frame of the caller's stack outside
    PyTorch (nn.Module.__call__, overrides), the standard library and rtx:
    the user's line that made the call; "" when there is none."""
    frame = sys._getframe(1)
    while frame is not None:
        if not _internal(frame.f_code.co_filename):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


META = torch.device("meta")
CPU = torch.device("cpu")


def flatten(obj: Any) -> List[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for x in obj for t in flatten(x)]
    if isinstance(obj, dict):
        return [t for x in obj.values() for t in flatten(x)]
    return []


class Graph:
    """Values (leaves and call results) and the calls that make them."""

    def __init__(self, params: Dict[int, str], values: Optional[Dict[int, torch.Tensor]] = None,
                 owners: Optional[Dict[int, str]] = None) -> None:
        self.params = params                  # id(traced parameter) -> name
        self.param_values = values or {}      # id(traced parameter) -> the module's parameter
        self.owners = owners or {}            # id(traced parameter) -> class name of its module
        self.metas: List[Meta] = []
        self.nodes: List[Node] = []
        self.ids: Dict[int, int] = {}         # id(tensor) -> value id
        self.alive: List[torch.Tensor] = []   # keeps ids unique while tracing
        self.viewed: set = set()              # ids of traced tensors that a recorded view was taken of
        self.unknown: Dict[int, str] = {}     # id(meta tensor with no value) -> what it comes from
        self.constants: Dict[tuple, List[int]] = {}   # _fingerprint -> value ids of const leaves
        self.on_zeros: List[str] = []         # ops without a meta kernel, run on zeros for their shapes
        self.where: List[Tuple[str, str]] = []
        self.busy = False                     # the tracer itself is calling torch

    @contextlib.contextmanager
    def internal(self):
        """Calls made inside are the tracer's own: not recorded."""
        busy, self.busy = self.busy, True
        try:
            yield
        finally:
            self.busy = busy

    def location(self) -> Tuple[str, str]:
        return self.where[-1] if self.where else ("", "?")

    def add_leaf(self, kind: str, name: str, t: torch.Tensor, value: Optional[torch.Tensor] = None,
                 owner: str = "") -> int:
        """A value entering the graph: tensor `t`, holding `value` (default: t)."""
        vid = len(self.metas)
        leaf = Leaf(kind, name, t if value is None else value, owner)
        self.metas.append(Meta(tuple(t.shape), t.dtype, leaf=leaf))
        self.ids[id(t)] = vid
        self.alive.append(t)
        return vid

    def mark_unknown(self, t: torch.Tensor, origin: str) -> None:
        """`t`, a meta tensor that is not traced, has no value: `origin` says
        what it is (a buffer of a model on the meta device)."""
        self.unknown[id(t)] = origin
        self.alive.append(t)

    def traced(self, t: torch.Tensor) -> bool:
        return id(t) in self.ids or id(t) in self.params

    def ref(self, t: torch.Tensor) -> Ref:
        if id(t) in self.ids:
            return Ref(self.ids[id(t)])
        if id(t) in self.params:
            return Ref(self.add_leaf("param", self.params[id(t)], t, self.param_values.get(id(t)),
                                     self.owners.get(id(t), "")))
        if t.is_meta:
            self._valueless(t)
        return Ref(self._constant(t))

    def _constant(self, t: torch.Tensor) -> int:
        """A value not derived from inputs or parameters: a constant,
        captured now (a copy: a later in-place update does not change it).
        Equal values are one constant: a rotary table unsqueezed, or a mask
        rebuilt, in every layer is written into the IR once."""
        key = _fingerprint(t)
        for vid in self.constants.get(key, ()):
            if _same_values(self.metas[vid].leaf.tensor, t):
                self.ids[id(t)] = vid
                self.alive.append(t)
                return vid
        vid = self.add_leaf("const", "", t, t.detach().clone())
        self.constants.setdefault(key, []).append(vid)
        return vid

    def _valueless(self, t: torch.Tensor) -> None:
        """A meta tensor that is not traced reached a recorded call: its value
        would enter the IR, and nobody knows it."""
        path, kind = self.location()
        source = user_source()
        where = f"in module '{path}' ({kind}){' at ' + source if source else ''}"
        origin = self.unknown.get(id(t))
        if origin is None:
            # A view of a traced tensor made by a call the tracer could not
            # see; folding it would silently freeze its values.
            raise TorchImportError(f"a view of a traced tensor was made by a call the importer cannot see "
                                   f"({where}); please report this form")
        raise TorchImportError(
            f"the value of {origin} is needed ({where}), but it is on the meta device and has no value. "
            "Materialise it before importing: create it on the CPU in the module's __init__ (e.g. "
            "register_buffer(name, tensor.to('cpu'))), or assign it after building the model on the meta "
            "device (module.NAME = value computed on the CPU); parameters may stay on the meta device")

    def replace(self, obj: Any) -> Any:
        if isinstance(obj, torch.Tensor):
            return self.ref(obj)
        if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
            return tuple(self.replace(x) for x in obj)
        if isinstance(obj, list):
            return [self.replace(x) for x in obj]
        if isinstance(obj, dict):
            return {k: self.replace(v) for k, v in obj.items()}
        return obj

    # -- running a call -------------------------------------------------------------------
    def call(self, func: Callable, args: tuple, kwargs: dict) -> Any:
        """Runs a call the module made and records it if it is traced."""
        if self.busy:
            return func(*args, **kwargs)
        tensors = flatten(args) + flatten(kwargs)
        if any(self.traced(t) for t in tensors):
            out = self._run_traced(func, args, kwargs, tensors)
            self.record(func, args, kwargs, out)
            return out
        return self._run_untraced(func, args, kwargs, tensors)

    def _run_traced(self, func: Callable, args: tuple, kwargs: dict, tensors: List[torch.Tensor]) -> Any:
        """The call on meta tensors: constants among its operands as meta
        copies, a device it asks for as the meta device."""
        op = op_name(func)
        with self.internal():
            if any(not t.is_meta for t in tensors):
                args, kwargs = _on_device(args, META), _on_device(kwargs, META)
            args, kwargs = _devices_to(op, args, kwargs, META, lambda d: d.type != "meta")
            if op in _TRACED_FORMS:
                func, args, kwargs = _TRACED_FORMS[op](func, args, kwargs)
            return self._run_on_meta(func, args, kwargs, op)

    def _run_untraced(self, func: Callable, args: tuple, kwargs: dict, tensors: List[torch.Tensor]) -> Any:
        """A constant's call, on the CPU (not on the meta device it may ask
        for); with a valueless operand, its result has no value either."""
        args, kwargs = _devices_to(op_name(func), args, kwargs, CPU, lambda d: d.type == "meta")
        valueless = [t for t in tensors if t.is_meta]
        if not valueless:
            return func(*args, **kwargs)
        origin = next((self.unknown[id(t)] for t in valueless if id(t) in self.unknown), None)
        with self.internal():
            if len(valueless) < len(tensors):
                args, kwargs = _on_device(args, META), _on_device(kwargs, META)
            out = self._run_on_meta(func, args, kwargs, op_name(func))
            for t in flatten(out):
                if t.is_meta and id(t) not in self.unknown and origin is not None:
                    self.mark_unknown(t, origin)
        return out

    def _run_on_meta(self, func: Callable, args: tuple, kwargs: dict, op: str) -> Any:
        """func on meta operands; where PyTorch has no meta kernel for it (or
        the call reads values), on zeros of the operands' shapes on the CPU,
        its tensor results then turned meta: right shapes, values unused."""
        try:
            return func(*args, **kwargs)
        except (NotImplementedError, RuntimeError, TypeError) as error:
            if _DATA_DEPENDENT_SHAPE.search(str(error)):
                # Zeros would give a shape, but not the one the values give.
                raise UnsupportedOpError(op, *self.location(), "the shape of its result depends on the values "
                                         "of its operands; data-dependent shapes cannot be imported",
                                         source=user_source()) from None
            try:
                out = func(*_zeros_for_meta(args), **_zeros_for_meta(kwargs))
            except Exception:
                raise error from None
        self.on_zeros.append(op)
        return _on_device(out, META)

    # -- recording --------------------------------------------------------------------------
    def record(self, func: Callable, args: tuple, kwargs: dict, out: Any) -> None:
        with self.internal():
            self._record(func, args, kwargs, out)

    def _record(self, func: Callable, args: tuple, kwargs: dict, out: Any) -> None:
        inputs = flatten(args) + flatten(kwargs)
        if not any(self.traced(t) for t in inputs):
            return                                      # constant: folded by running it
        op = op_name(func)
        if op in _METADATA or op in _IGNORED:
            return
        outputs = flatten(out)
        if not outputs:
            path, kind = self.location()
            raise UnsupportedOpError(op, path, kind, "it turns a traced tensor into a Python value; "
                                     "data-dependent control flow cannot be imported", source=user_source())
        if _in_place(op, kwargs):
            self._check_in_place(op, inputs, outputs)
        node = Node(op, self.replace(args), self.replace(kwargs), [], outputs, self.location(), user_source())
        index = len(self.nodes)
        for t in outputs:
            vid = len(self.metas)
            self.metas.append(Meta(tuple(t.shape), t.dtype, node=index))
            node.outputs.append(vid)
            self.ids[id(t)] = vid
            self.alive.append(t)
            if t._base is not None:
                self.viewed.add(id(t._base))
        self.nodes.append(node)

    def _check_in_place(self, op: str, inputs: List[torch.Tensor], outputs: List[torch.Tensor]) -> None:
        path, kind = self.location()
        target = inputs[0] if inputs else None
        if target is not None and not self.traced(target) and not any(t is target for t in outputs):
            raise UnsupportedOpError(op, path, kind, "an in-place update of a constant by a traced value "
                                     "cannot be imported; use the out-of-place form", source=user_source())
        for t in outputs:
            if any(t is i for i in inputs) and (t._base is not None or id(t) in self.viewed):
                raise UnsupportedOpError(op, path, kind, "an in-place update of a view (or of a tensor "
                                         "with views) cannot be imported; use the out-of-place form",
                                         source=user_source())


# The ATen ops behind calls whose result's shape depends on values (x[mask],
# nonzero, masked_select, unique, one-argument where): named by PyTorch's
# error for a meta operand.
_DATA_DEPENDENT_SHAPE = re.compile(r"aten::(nonzero|masked_select|_?unique\w*|bincount)\b")


def _fingerprint(t: torch.Tensor) -> tuple:
    """Shape, dtype and up to 64 evenly spaced elements: equal tensors have
    equal fingerprints, and most unequal ones differ."""
    flat = t.detach().reshape(-1)
    step = max(1, -(-flat.numel() // 64))
    return tuple(t.shape), t.dtype, tuple(flat[::step].tolist())


def _same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal shapes, dtypes and elements, signs of zeros included."""
    if a.shape != b.shape or a.dtype != b.dtype or not torch.equal(a, b):
        return False
    return not a.is_floating_point() or torch.equal(torch.signbit(a), torch.signbit(b))


def _in_place(op: str, kwargs: dict) -> bool:
    return (op.endswith("_") and not op.endswith("__")) or op.startswith("torch.Tensor.__i") \
        or bool(kwargs.get("inplace"))


def _map_tensors(obj: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(_map_tensors(x, fn) for x in obj)
    if isinstance(obj, list):
        return [_map_tensors(x, fn) for x in obj]
    if isinstance(obj, dict):
        return {k: _map_tensors(v, fn) for k, v in obj.items()}
    return obj


def _on_device(obj: Any, device: torch.device) -> Any:
    """obj with its tensors moved to `device` (meta: no data is copied)."""
    return _map_tensors(obj, lambda t: t if t.device == device else t.to(device))


def _zeros_for_meta(obj: Any) -> Any:
    return _map_tensors(obj, lambda t: torch.zeros(t.shape, dtype=t.dtype) if t.is_meta else t)


def _as_device(x: Any) -> Optional[torch.device]:
    if isinstance(x, torch.device):
        return x
    if isinstance(x, str):
        try:
            return torch.device(x)
        except RuntimeError:
            return None
    return None


def _devices_to(op: str, args: tuple, kwargs: dict, device: torch.device,
                which: Callable[[torch.device], bool]) -> Tuple[tuple, dict]:
    """`device=` arguments (and the positional device of Tensor.to) that
    `which` selects, replaced by `device`."""
    d = _as_device(kwargs.get("device"))
    if d is not None and which(d):
        kwargs = dict(kwargs, device=device)
    if op == "torch.Tensor.to" and len(args) > 1:
        d = _as_device(args[1])
        if d is not None and which(d):
            args = (args[0], device) + tuple(args[2:])
    return args, kwargs


def _same_tensor(func: Callable, args: tuple, kwargs: dict) -> Tuple[Callable, tuple, dict]:
    """Tensor.cpu() and .cuda() of a traced tensor: itself (on the meta device)."""
    return (lambda t, *a, **k: t), args, kwargs


def _repeat_interleave_on_meta(func: Callable, args: tuple, kwargs: dict) -> Tuple[Callable, tuple, dict]:
    """PyTorch 1.13's meta repeat_interleave needs output_size; an integer
    number of repeats along a dimension gives it."""
    names = ("input", "repeats", "dim")
    given = dict(zip(names, args), **kwargs)
    x, repeats, dim = given.get("input"), given.get("repeats"), given.get("dim")
    if isinstance(x, torch.Tensor) and isinstance(repeats, int) and isinstance(dim, int) \
            and "output_size" not in kwargs:
        kwargs = dict(kwargs, output_size=x.shape[dim] * repeats)
    return func, args, kwargs


_CROSS_ENTROPY_ARGS = ("input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction",
                       "label_smoothing")


def _cross_entropy_on_meta(func: Callable, args: tuple, kwargs: dict) -> Tuple[Callable, tuple, dict]:
    """PyTorch 1.13 has no meta kernel for the loss over [N, C, d...] (nll_loss2d):
    the same loss with the class dimension moved last and the rest flattened."""
    given = dict(zip(_CROSS_ENTROPY_ARGS, args), **kwargs)
    x = given.get("input")
    if not isinstance(x, torch.Tensor) or x.dim() <= 2:
        return func, args, kwargs

    def flattened(input, target, **rest):
        classes = input.shape[1]
        rows = input.movedim(1, -1).reshape(-1, classes)
        target = target.movedim(1, -1).reshape(-1, classes) if target.is_floating_point() else target.reshape(-1)
        out = func(rows, target, **rest)
        return out.reshape(input.shape[:1] + input.shape[2:]) if out.dim() else out
    return flattened, (), given


# Traced calls that need another form to run on meta tensors.
_TRACED_FORMS = {
    "torch.nn.functional.cross_entropy": _cross_entropy_on_meta,
    "torch.Tensor.cpu": _same_tensor,
    "torch.Tensor.cuda": _same_tensor,
    "torch.Tensor.repeat_interleave": _repeat_interleave_on_meta,
    "torch.repeat_interleave": _repeat_interleave_on_meta,
}


class Tracer(TorchFunctionMode):
    """Records calls. Indexing (x[i], x[i] = v) does not always reach a
    TorchFunctionMode in PyTorch 1.13 (a single index on a plain tensor, any
    index on a Parameter), so while tracing Tensor.__getitem__ and
    __setitem__ are replaced by wrappers that record (or refuse) them.
    `graph.busy` marks calls made by the tracer itself, which pass through."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self.saved: Dict[str, Any] = {}
        get_item, set_item = torch._C._TensorBase.__getitem__, torch._C._TensorBase.__setitem__

        def getitem(tensor, index):
            return graph.call(get_item, (tensor, index), {})

        def setitem(tensor, index, value):
            if not graph.busy and (graph.traced(tensor) or (isinstance(value, torch.Tensor) and graph.traced(value))):
                raise UnsupportedOpError("torch.Tensor.__setitem__", *graph.location(),
                                         "assignment into a tensor (x[i] = v) cannot be imported; "
                                         "build the value with torch.cat or torch.where", source=user_source())
            with graph.internal():
                set_item(tensor, index, value)

        self.wrappers = {"__getitem__": getitem, "__setitem__": setitem}

    def __enter__(self):
        for name, wrapper in self.wrappers.items():
            self.saved[name] = torch.Tensor.__dict__.get(name)
            setattr(torch.Tensor, name, wrapper)
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            for name, original in self.saved.items():
                if original is None:
                    delattr(torch.Tensor, name)
                else:
                    setattr(torch.Tensor, name, original)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return self.graph.call(func, args, kwargs or {})


def refs(obj: Any) -> List[Ref]:
    if isinstance(obj, Ref):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [r for x in obj for r in refs(x)]
    if isinstance(obj, dict):
        return [r for x in obj.values() for r in refs(x)]
    return []


def users(graph: "Graph") -> Dict[int, List[int]]:
    """value id -> indices of the nodes that read it."""
    result: Dict[int, List[int]] = {}
    for index, node in enumerate(graph.nodes):
        for r in refs((node.args, node.kwargs)):
            result.setdefault(r.id, []).append(index)
    return result
