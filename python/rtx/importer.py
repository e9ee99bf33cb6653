"""Imports a PyTorch nn.Module into rtx IR.

The module runs once, eagerly, on its example inputs while a
TorchFunctionMode records every torch-level call (F.linear, Tensor.view,
F.softmax, ...) whose operands depend on an input or a parameter. Calls on
anything else (positions from torch.arange, causal masks from buffers,
rotary tables) simply run: their results become rtx.constant values where a
recorded call uses them. Shapes come from the run, so Python code that reads
sizes, unpacks tuples or branches on shapes works unchanged.

The recorded calls whose results reach the outputs are then lowered, one
by one, onto the builder (rtx.builder). Parameters keep their module paths
as names (`transformer.h.0.attn.c_attn.weight`); a call with no rtx mapping
raises UnsupportedOpError naming the op and the module that made it.

    imported = import_module(model, (tokens, targets))
    imported.save("model.mlir")
    imported.save_params("params/")     # NAME.npy: PyTorch's exact weights
    imported.save_inputs("inputs/")     # NAME.npy: the example inputs
"""
from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import torch
from torch.overrides import TorchFunctionMode

from .builder import BuildError, Function, Init, Module, Value, constant, normal, ones, zeros
from .errors import TorchImportError, UnsupportedOpError
from .torch_ops import CONVERTERS, DTYPES, Operand, Unsupported, rtx_dtype, supported_ops

__all__ = ["ImportedModel", "TorchImportError", "UnsupportedOpError", "import_module", "supported_ops"]


# --- the recorded graph ----------------------------------------------------------------

@dataclass
class _Leaf:
    kind: str                 # "input", "param" or "const"
    name: str
    tensor: torch.Tensor


@dataclass
class _Node:
    op: str
    args: tuple
    kwargs: dict
    outputs: List[int]        # value ids
    tensors: List[torch.Tensor]
    where: Tuple[str, str]    # (module path, module type)


@dataclass(frozen=True)
class _Ref:
    id: int


@dataclass
class _Meta:
    shape: Tuple[int, ...]
    dtype: torch.dtype
    leaf: Optional[_Leaf] = None
    node: Optional[int] = None     # index of the producing node


def _op_name(func: Callable) -> str:
    """A readable, stable name: torch.Tensor.view, torch.nn.functional.linear, torch.cat."""
    owner = getattr(func, "__self__", None)
    if type(owner).__name__ == "getset_descriptor":            # a property: Tensor.T
        return f"torch.Tensor.{owner.__name__}"
    qual = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)
    module = getattr(func, "__module__", None) or ""
    head, _, rest = qual.partition(".")
    if head in ("_TensorBase", "Tensor") and rest:
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


def _flatten(obj: Any) -> List[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for x in obj for t in _flatten(x)]
    if isinstance(obj, dict):
        return [t for x in obj.values() for t in _flatten(x)]
    return []


class _Graph:
    """Values (leaves and call results) and the calls that make them."""

    def __init__(self, params: Dict[int, str]) -> None:
        self.params = params                  # id(parameter) -> name
        self.metas: List[_Meta] = []
        self.nodes: List[_Node] = []
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
        self.metas.append(_Meta(tuple(t.shape), t.dtype, leaf=_Leaf(kind, name, t if value is None else value)))
        self.ids[id(t)] = vid
        self.alive.append(t)
        if kind != "const":
            self.storages.add(_storage(t))
        return vid

    def traced(self, t: torch.Tensor) -> bool:
        return id(t) in self.ids or id(t) in self.params

    def ref(self, t: torch.Tensor) -> _Ref:
        if id(t) in self.ids:
            return _Ref(self.ids[id(t)])
        if id(t) in self.params:
            return _Ref(self.add_leaf("param", self.params[id(t)], t))
        # Not derived from inputs or parameters: a constant, captured now. A
        # view of a traced tensor that reached here was made by a call the
        # tracer could not see; folding it would silently freeze its values.
        if _storage(t) in self.storages:
            path, kind = self.location()
            raise TorchImportError(f"a view of a traced tensor was made by a call the importer cannot see "
                                   f"(in module '{path}' ({kind})); please report this form")
        return _Ref(self.add_leaf("const", "", t, t.detach().clone()))

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
        inputs = _flatten(args) + _flatten(kwargs)
        if not any(self.traced(t) for t in inputs):
            return                                      # constant: folded by running it
        op = _op_name(func)
        if op in _METADATA or op in _IGNORED:
            return
        outputs = _flatten(out)
        if not outputs:
            path, kind = self.location()
            raise UnsupportedOpError(op, path, kind, "it turns a traced tensor into a Python value; "
                                     "data-dependent control flow cannot be imported")
        mutated = [t for t in outputs if any(t is i for i in inputs)]
        if mutated and (op.endswith("_") and not op.endswith("__") or op.startswith("torch.Tensor.__i")
                        or kwargs.get("inplace")):
            for t in mutated:
                if t._base is not None or any(a._base is t for a in self.alive):
                    path, kind = self.location()
                    raise UnsupportedOpError(op, path, kind, "an in-place update of a view (or of a tensor "
                                             "with views) cannot be imported; use the out-of-place form")
        node = _Node(op, self.replace(args), self.replace(kwargs), [], outputs, self.location())
        index = len(self.nodes)
        for t in outputs:
            vid = len(self.metas)
            self.metas.append(_Meta(tuple(t.shape), t.dtype, node=index))
            node.outputs.append(vid)
            self.ids[id(t)] = vid
            self.alive.append(t)
            self.storages.add(_storage(t))
        self.nodes.append(node)


def _storage(t: torch.Tensor) -> int:
    ptr = t.storage().data_ptr() if t.numel() else 0
    return ptr if ptr else -id(t)


class _Tracer(TorchFunctionMode):
    """Records calls. Indexing (x[i], x[i] = v) does not always reach a
    TorchFunctionMode in PyTorch 1.13 (a single index on a plain tensor, any
    index on a Parameter), so while tracing Tensor.__getitem__ and
    __setitem__ are replaced by wrappers that record (or refuse) them.
    `graph.busy` marks calls made by the tracer itself, which pass through."""

    def __init__(self, graph: _Graph) -> None:
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
                                         "build the value with torch.cat or torch.where")
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


# --- lowering onto the builder ------------------------------------------------------------

class _Lowering:
    def __init__(self, graph: _Graph, f: Function) -> None:
        self.graph, self.f = graph, f
        self.values: Dict[int, Optional[Value]] = {}
        self.splats: Dict[Tuple[int, Tuple[int, ...], str], Value] = {}
        self.node: Optional[_Node] = None
        self.dropout_seed = 0
        self.declared: List[_Leaf] = []      # inputs and parameters, in declaration order

    # -- operands ------------------------------------------------------------------------
    def wrap(self, obj: Any) -> Any:
        if isinstance(obj, _Ref):
            m = self.graph.metas[obj.id]
            const = m.leaf.tensor if m.leaf is not None and m.leaf.kind == "const" else None
            return Operand(obj.id, m.shape, m.dtype, const)
        if isinstance(obj, tuple):
            return tuple(self.wrap(x) for x in obj)
        if isinstance(obj, list):
            return [self.wrap(x) for x in obj]
        if isinstance(obj, dict):
            return {k: self.wrap(v) for k, v in obj.items()}
        return obj

    def v(self, t: "Operand") -> Value:
        """The builder value of an operand (declaring leaves on first use)."""
        if t.ref in self.values:
            value = self.values[t.ref]
            if value is None:
                producer = self.graph.nodes[self.graph.metas[t.ref].node]
                raise UnsupportedOpError(producer.op, *producer.where,
                                         "this result of it is used, and rtx cannot compute it")
            return value
        leaf = self.graph.metas[t.ref].leaf
        assert leaf is not None, "a node result is used before its node was lowered"
        if leaf.kind == "input":
            value = self.f.input(leaf.name, t.shape, t.dtype)
        elif leaf.kind == "param":
            value = self.f.param(leaf.name, t.shape, _initializer(leaf.tensor), dtype=t.dtype)
        else:
            flat = leaf.tensor.reshape(-1).tolist()
            value = self.f.dense(flat, t.shape, t.dtype)
        if leaf.kind != "const":
            self.declared.append(leaf)
        self.values[t.ref] = value
        return value

    def splat(self, t: "Operand") -> Optional[Union[int, float, bool]]:
        """The value of a constant whose elements are all equal, else None."""
        if t.const is None or t.const.numel() == 0:
            return None
        flat = t.const.reshape(-1)
        first = flat[0]
        return first.item() if bool((flat == first).all()) else None

    def operand(self, x: Any, shape: Sequence[int], dtype: str) -> Value:
        """x (an Operand or a Python number) converted to dtype and broadcast to shape."""
        shape = tuple(shape)
        if isinstance(x, (bool, int, float)):
            return self.f.constant(x, shape, dtype)
        if not isinstance(x, Operand):
            raise Unsupported(f"operand {x!r} is neither a tensor nor a number")
        s = self.splat(x)
        if s is not None and len(shape) >= x.rank:
            key = (x.ref, shape, dtype)
            if key not in self.splats:
                self.splats[key] = self.f.constant(s, shape, dtype)
            return self.splats[key]
        value = self.v(x)
        if value.dtype != dtype:
            value = self.f.convert(value, dtype)
        return self.broadcast(value, shape)

    def broadcast(self, value: Value, shape: Sequence[int]) -> Value:
        shape = tuple(shape)
        if value.shape == shape:
            return value
        if value.rank > len(shape):
            raise Unsupported(f"cannot broadcast {value.type} to {list(shape)}")
        return self.f.broadcast(value, shape, list(range(len(shape) - value.rank, len(shape))))

    def convert(self, value: Value, dtype: str) -> Value:
        return value if value.dtype == dtype else self.f.convert(value, dtype)

    def reshape(self, value: Value, shape: Sequence[int]) -> Value:
        return value if value.shape == tuple(shape) else self.f.reshape(value, shape)

    # -- the node being lowered ------------------------------------------------------------
    @property
    def out(self) -> List[_Meta]:
        return [self.graph.metas[i] for i in self.node.outputs]

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return self.out[0].shape

    @property
    def out_dtype(self) -> str:
        return rtx_dtype(self.out[0].dtype)

    def lower(self, node: _Node) -> None:
        self.node = node
        converter = CONVERTERS.get(node.op)
        try:
            if converter is None:
                raise Unsupported("")
            result = converter(self, *self.wrap(node.args), **self.wrap(node.kwargs))
        except Unsupported as error:
            raise UnsupportedOpError(node.op, *node.where, str(error)) from None
        except BuildError as error:
            raise TorchImportError(f"{node.op} in module '{node.where[0]}' ({node.where[1]}): {error}") from None
        except TypeError as error:   # the call's arguments do not match the converter's signature
            raise UnsupportedOpError(node.op, *node.where, f"this form of the call is not supported ({error})") \
                from None
        results = list(result) if isinstance(result, (list, tuple)) else [result]
        if len(results) != len(node.outputs):
            raise TorchImportError(f"internal error: {node.op} gave {len(results)} results, "
                                   f"torch gave {len(node.outputs)}")
        for vid, value in zip(node.outputs, results):
            m = self.graph.metas[vid]
            if value is not None and (value.shape != m.shape or value.dtype != DTYPES.get(m.dtype)):
                raise TorchImportError(
                    f"internal error: {node.op} in module '{node.where[0]}' lowered to {value.type}, "
                    f"but torch computed {list(m.shape)} {m.dtype}")
            self.values[vid] = value


def _initializer(t: torch.Tensor) -> Init:
    """An initializer that resembles the tensor: its value when constant,
    else a normal distribution with its mean and standard deviation."""
    flat = t.detach().reshape(-1).double()
    if flat.numel() == 0:
        return zeros()
    first = flat[0].item()
    if bool((flat == first).all()):
        return zeros() if first == 0 else ones() if first == 1 else constant(first)
    return normal(flat.mean().item(), flat.std().item())


# --- the entry point ------------------------------------------------------------------------

@dataclass
class ImportedModel:
    """The result of import_module."""
    module: Module                          # the rtx IR (builder)
    function: str                           # its function's name
    params: Dict[str, torch.Tensor]         # parameter name -> the module's nn.Parameter, declaration order
    inputs: Dict[str, torch.Tensor]         # input name -> the example input tensor
    returns_loss: bool                      # the function returns one scalar: a loss to train on
    output: Any = field(default=None, repr=False)   # what the traced call returned (torch values)

    def text(self) -> str:
        return self.module.text()

    def save(self, path: Union[str, Path]) -> Path:
        path = Path(path)
        path.write_text(self.text())
        return path

    def save_params(self, directory: Union[str, Path]) -> Path:
        """Writes NAME.npy for every parameter (rtx-run --params DIR)."""
        return _save_arrays(directory, self.params)

    def save_inputs(self, directory: Union[str, Path],
                    values: Optional[Mapping[str, torch.Tensor]] = None) -> Path:
        """Writes NAME.npy for every input (rtx-run --inputs DIR): the
        example inputs, or other `values` of the same names."""
        values = self.inputs if values is None else values
        missing = set(self.inputs) - set(values)
        if missing:
            raise TorchImportError(f"no value for input(s) {', '.join(sorted(missing))}")
        return _save_arrays(directory, {n: values[n] for n in self.inputs})


def _save_arrays(directory: Union[str, Path], tensors: Mapping[str, Any]) -> Path:
    import numpy as np
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, t in tensors.items():
        array = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
        np.save(directory / f"{name}.npy", np.ascontiguousarray(array))
    return directory


def import_module(model: torch.nn.Module, example_inputs: Union[Sequence[Any], Mapping[str, Any]], *,
                  loss: Optional[Callable[[Any], torch.Tensor]] = None,
                  name: Optional[str] = None) -> ImportedModel:
    """Imports `model` called on `example_inputs` (positional arguments, or
    keyword arguments by name) into rtx IR.

    Inputs are named after the forward method's parameters (`idx`,
    `targets`); parameters after their module paths. The function returns
    `loss(output)` when `loss` is given, else the model's output: its one
    scalar floating-point tensor when it has one (nanoGPT returns
    `(logits, loss)`), else every tensor it returns.

    Dropout is imported as rtx.dropout with rtx's own generator when the
    module is in training mode with p > 0 (masks differ from PyTorch's); in
    eval mode, or with p = 0, it is the identity. Parameters with
    requires_grad=False and buffers become constants.
    """
    if not isinstance(model, torch.nn.Module):
        raise TorchImportError(f"expected a torch.nn.Module, got {type(model).__name__}")
    args, kwargs = (list(example_inputs), {}) if not isinstance(example_inputs, Mapping) \
        else ([], dict(example_inputs))
    try:
        bound = inspect.signature(model.forward).bind(*args, **kwargs)
    except TypeError as error:
        raise TorchImportError(f"example inputs do not match {type(model).__name__}.forward: {error}") from None

    params = {id(p): n for n, p in model.named_parameters() if p.requires_grad}
    graph = _Graph(params)
    inputs: Dict[str, torch.Tensor] = {}
    for arg_name, value in bound.arguments.items():
        kind = inspect.signature(model.forward).parameters[arg_name].kind
        items = (list(enumerate(value)) if kind == inspect.Parameter.VAR_POSITIONAL else
                 list(value.items()) if kind == inspect.Parameter.VAR_KEYWORD else [(None, value)])
        for key, item in items:
            if isinstance(item, torch.Tensor):
                input_name = arg_name if key is None else f"{arg_name}_{key}"
                if id(item) in graph.ids or id(item) in params:
                    raise TorchImportError(f"input '{input_name}' is the same tensor as another input "
                                           "or a parameter; pass a copy")
                graph.add_leaf("input", input_name, item)
                inputs[input_name] = item

    handles = []
    for path, sub in model.named_modules():
        handles.append(sub.register_forward_pre_hook(_enter(graph, path)))
        handles.append(sub.register_forward_hook(_leave(graph)))
    try:
        with torch.no_grad(), _Tracer(graph):
            out = model(*bound.args, **bound.kwargs)
            if loss is not None:
                graph.where.append(("<loss>", "loss function"))
                out = loss(out)
                graph.where.pop()
    finally:
        for h in handles:
            h.remove()

    results = _select_outputs(graph, out)
    module = Module()
    module.comment(f"Imported from PyTorch: {type(model).__module__}.{type(model).__qualname__}.")
    fname = name or _identifier(type(model).__name__.lower())
    f = module.function(fname)
    lowering = _Lowering(graph, f)
    live = _live_nodes(graph, [graph.ids[id(t)] for t in results])
    for index, node in enumerate(graph.nodes):
        if index in live:
            lowering.lower(node)
    f.ret(*[lowering.v(lowering.wrap(_Ref(graph.ids[id(t)]))) for t in results])

    params_out = {leaf.name: leaf.tensor for leaf in lowering.declared if leaf.kind == "param"}
    inputs_out = {leaf.name: leaf.tensor for leaf in lowering.declared if leaf.kind == "input"}
    returns_loss = len(results) == 1 and results[0].dim() == 0 and results[0].is_floating_point()
    return ImportedModel(module, fname, params_out, inputs_out, returns_loss, out)


def _enter(graph: _Graph, path: str):
    def hook(module, args):
        graph.where.append((path, type(module).__name__))
    return hook


def _leave(graph: _Graph):
    def hook(module, args, output):
        if graph.where:
            graph.where.pop()
    return hook


def _select_outputs(graph: _Graph, out: Any) -> List[torch.Tensor]:
    tensors = _flatten(out)
    if not tensors:
        raise TorchImportError("the model returned no tensors")
    scalars = [t for t in tensors if t.dim() == 0 and t.is_floating_point()]
    chosen = scalars if len(scalars) == 1 and len(tensors) > 1 else tensors
    for t in chosen:
        if id(t) not in graph.ids:
            raise TorchImportError("an output does not depend on the inputs or parameters "
                                   "(it would be a constant)")
    return chosen


def _live_nodes(graph: _Graph, outputs: List[int]) -> set:
    live, stack = set(), list(outputs)
    seen = set()
    while stack:
        vid = stack.pop()
        if vid in seen:
            continue
        seen.add(vid)
        node_index = graph.metas[vid].node
        if node_index is None or node_index in live:
            continue
        live.add(node_index)
        node = graph.nodes[node_index]
        stack.extend(r.id for r in _refs((node.args, node.kwargs)))
    return live


def _refs(obj: Any) -> List[_Ref]:
    if isinstance(obj, _Ref):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [r for x in obj for r in _refs(x)]
    if isinstance(obj, dict):
        return [r for x in obj.values() for r in _refs(x)]
    return []


def _identifier(text: str) -> str:
    ident = "".join(c if c.isalnum() or c == "_" else "_" for c in text)
    return ident if ident and not ident[0].isdigit() else f"m_{ident}"
