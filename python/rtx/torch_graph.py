"""The importer's record of a PyTorch run: values (inputs, parameters,
constants, call results) and the torch calls that made them.

Tracer, a TorchFunctionMode, fills a Graph while the module runs on its
example inputs. A call is recorded when an operand depends on an input or a
parameter ("traced"); any other call just runs, and its result, if a
recorded call uses it, becomes a constant leaf holding its value.
"""
from __future__ import annotations

import contextlib
import os
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
    tensor: torch.Tensor


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

    def __init__(self, params: Dict[int, str]) -> None:
        self.params = params                  # id(parameter) -> name
        self.metas: List[Meta] = []
        self.nodes: List[Node] = []
        self.ids: Dict[int, int] = {}         # id(tensor) -> value id
        self.alive: List[torch.Tensor] = []   # keeps ids unique while tracing
        self.storages: set = set()            # storages of traced tensors
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

    def add_leaf(self, kind: str, name: str, t: torch.Tensor, value: Optional[torch.Tensor] = None) -> int:
        """A value entering the graph: tensor `t`, holding `value` (default: t)."""
        vid = len(self.metas)
        self.metas.append(Meta(tuple(t.shape), t.dtype, leaf=Leaf(kind, name, t if value is None else value)))
        self.ids[id(t)] = vid
        self.alive.append(t)
        if kind != "const":
            self.storages.add(_storage(t))
        return vid

    def traced(self, t: torch.Tensor) -> bool:
        return id(t) in self.ids or id(t) in self.params

    def ref(self, t: torch.Tensor) -> Ref:
        if id(t) in self.ids:
            return Ref(self.ids[id(t)])
        if id(t) in self.params:
            return Ref(self.add_leaf("param", self.params[id(t)], t))
        # Not derived from inputs or parameters: a constant, captured now. A
        # view of a traced tensor that reached here was made by a call the
        # tracer could not see; folding it would silently freeze its values.
        if _storage(t) in self.storages:
            path, kind = self.location()
            source = user_source()
            raise TorchImportError(f"a view of a traced tensor was made by a call the importer cannot see "
                                   f"(in module '{path}' ({kind}){' at ' + source if source else ''}); "
                                   "please report this form")
        return Ref(self.add_leaf("const", "", t, t.detach().clone()))

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
        mutated = [t for t in outputs if any(t is i for i in inputs)]
        if mutated and (op.endswith("_") and not op.endswith("__") or op.startswith("torch.Tensor.__i")
                        or kwargs.get("inplace")):
            for t in mutated:
                if t._base is not None or any(a._base is t for a in self.alive):
                    path, kind = self.location()
                    raise UnsupportedOpError(op, path, kind, "an in-place update of a view (or of a tensor "
                                             "with views) cannot be imported; use the out-of-place form",
                                             source=user_source())
        node = Node(op, self.replace(args), self.replace(kwargs), [], outputs, self.location(), user_source())
        index = len(self.nodes)
        for t in outputs:
            vid = len(self.metas)
            self.metas.append(Meta(tuple(t.shape), t.dtype, node=index))
            node.outputs.append(vid)
            self.ids[id(t)] = vid
            self.alive.append(t)
            self.storages.add(_storage(t))
        self.nodes.append(node)


def _storage(t: torch.Tensor) -> int:
    ptr = t.storage().data_ptr() if t.numel() else 0
    return ptr if ptr else -id(t)


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
            if graph.busy:
                return get_item(tensor, index)
            with graph.internal():
                out = get_item(tensor, index)
            graph.record(get_item, (tensor, index), {}, out)
            return out

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
        kwargs = kwargs or {}
        if self.graph.busy:
            return func(*args, **kwargs)
        out = func(*args, **kwargs)
        self.graph.record(func, args, kwargs, out)
        return out


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
