"""Imports a PyTorch nn.Module into rtx IR.

The module runs once, eagerly, on its example inputs while a
TorchFunctionMode records every torch-level call (F.linear, Tensor.view,
F.softmax, ...) whose operands depend on an input or a parameter. Calls on
anything else (positions from torch.arange, causal masks from buffers,
rotary tables) simply run: their results become rtx.constant values where a
recorded call uses them. Shapes come from the run, so Python code that reads
sizes, unpacks tuples or branches on shapes works unchanged.

The recorded calls whose results reach the outputs are then lowered, one
by one, onto the builder (rtx.builder), after attention written out op by
op has been recognised as one rtx.attention (rtx.torch_fusion). The record
is rtx.torch_graph; the converter of each call, rtx.torch_ops. Parameters
keep their module paths as names (`transformer.h.0.attn.c_attn.weight`); a
call with no rtx mapping raises UnsupportedOpError naming the op and the
module that made it.

    imported = import_module(model, (tokens, targets))
    imported.save("model.mlir")
    imported.save_params("params/")     # NAME.npy: PyTorch's exact weights
    imported.save_inputs("inputs/")     # NAME.npy: the example inputs
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import torch

from .builder import BuildError, Function, Init, Module, Value, constant, normal, ones, zeros
from .errors import TorchImportError, UnsupportedOpError
from .torch_export import capture as capture_with_export, uses_export
from .torch_fusion import fuse_attention, fuse_swiglu
from .torch_graph import Graph, Leaf, Meta, Node, Ref, Tracer, flatten, refs
from .torch_ops import CONVERTERS, DTYPES, Operand, Unsupported, rtx_dtype, supported_ops

__all__ = ["ImportedModel", "TorchImportError", "UnsupportedOpError", "import_module", "supported_ops"]


# --- lowering onto the builder ------------------------------------------------------------

class _Lowering:
    """Lowers the live calls, in order, onto builder function `f`; the
    converters (rtx.torch_ops) receive it as `ctx`."""

    def __init__(self, graph: Graph, f: Function) -> None:
        self.graph, self.f = graph, f
        self.values: Dict[int, Optional[Value]] = {}
        self.splats: Dict[Tuple[int, Tuple[int, ...], str], Value] = {}
        self.node: Optional[Node] = None
        self.dropout_seed = 0
        self.declared: List[Leaf] = []      # inputs and parameters, in declaration order

    # -- operands ------------------------------------------------------------------------
    def wrap(self, obj: Any) -> Any:
        if isinstance(obj, Ref):
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
                                         "this result of it is used, and rtx cannot compute it",
                                         source=producer.source)
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
    def out(self) -> List[Meta]:
        return [self.graph.metas[i] for i in self.node.outputs]

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return self.out[0].shape

    @property
    def out_dtype(self) -> str:
        return rtx_dtype(self.out[0].dtype)

    def lower(self, node: Node) -> None:
        self.node = node
        converter = CONVERTERS.get(node.op)
        try:
            if converter is None:
                raise Unsupported("")
            result = converter(self, *self.wrap(node.args), **self.wrap(node.kwargs))
        except Unsupported as error:
            raise UnsupportedOpError(node.op, *node.where, str(error), source=node.source) from None
        except BuildError as error:
            at = f" at {node.source}" if node.source else ""
            raise TorchImportError(f"{node.op} in module '{node.where[0]}' ({node.where[1]}){at}: {error}") \
                from None
        except TypeError as error:   # the call's arguments do not match the converter's signature
            raise UnsupportedOpError(node.op, *node.where, f"this form of the call is not supported ({error})",
                                     source=node.source) from None
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
    else a normal distribution with its mean and standard deviation. A
    tensor on the meta device has no values (its weights come with --params):
    GPT-2's normal(0, 0.02)."""
    if t.is_meta:
        return normal(0.0, 0.02)
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

    def param_arrays(self) -> Dict[str, Any]:
        """The parameters' current values as numpy arrays (16-bit floats as float32)."""
        return {name: _to_numpy(p) for name, p in self.params.items()}

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


def _to_numpy(t: Any) -> Any:
    """A copy as a numpy array; bfloat16 (which .npy lacks) as float32, which
    rtx-run accepts for 16-bit parameters and inputs."""
    import numpy as np
    if not isinstance(t, torch.Tensor):
        return np.asarray(t)
    t = t.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy().copy()


def _save_arrays(directory: Union[str, Path], tensors: Mapping[str, Any]) -> Path:
    import numpy as np
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, t in tensors.items():
        np.save(directory / f"{name}.npy", np.ascontiguousarray(_to_numpy(t)))
    return directory


def import_module(model: torch.nn.Module, example_inputs: Union[Sequence[Any], Mapping[str, Any]], *,
                  loss: Optional[Callable[[Any], torch.Tensor]] = None,
                  name: Optional[str] = None, fuse: bool = True) -> ImportedModel:
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

    With `fuse`, attention written op by op (q @ k^T, scale, causal mask,
    softmax, @ v) becomes one rtx.attention (rtx.torch_fusion).
    """
    if not isinstance(model, torch.nn.Module):
        raise TorchImportError(f"expected a torch.nn.Module, got {type(model).__name__}")
    args, kwargs = (list(example_inputs), {}) if not isinstance(example_inputs, Mapping) \
        else ([], dict(example_inputs))
    try:
        bound = inspect.signature(model.forward).bind(*args, **kwargs)
    except TypeError as error:
        raise TorchImportError(f"example inputs do not match {type(model).__name__}.forward: {error}") from None

    capture = capture_with_export if uses_export() else trace     # PyTorch >= 2.6: rtx.torch_export
    graph, out = capture(model, bound, loss)

    results = _select_outputs(graph, out)
    if fuse:
        returned = tuple(graph.ids[id(t)] for t in results)
        fuse_attention(graph, returned)
        fuse_swiglu(graph, returned)
    module = Module()
    module.comment(f"Imported from PyTorch: {type(model).__module__}.{type(model).__qualname__}.")
    fname = name or _identifier(type(model).__name__.lower())
    f = module.function(fname)
    lowering = _Lowering(graph, f)
    live = _live_nodes(graph, [graph.ids[id(t)] for t in results])
    for index, node in enumerate(graph.nodes):
        if index in live:
            lowering.lower(node)
    f.ret(*[lowering.v(lowering.wrap(Ref(graph.ids[id(t)]))) for t in results])

    params_out = {leaf.name: leaf.tensor for leaf in lowering.declared if leaf.kind == "param"}
    inputs_out = {leaf.name: leaf.tensor for leaf in lowering.declared if leaf.kind == "input"}
    returns_loss = len(results) == 1 and results[0].dim() == 0 and results[0].is_floating_point()
    return ImportedModel(module, fname, params_out, inputs_out, returns_loss, out)


def trace(model: torch.nn.Module, bound: inspect.BoundArguments,
          loss: Optional[Callable[[Any], torch.Tensor]] = None) -> Tuple[Graph, Any]:
    """Runs `model` on the bound example inputs (then `loss`) while the
    TorchFunctionMode tracer records its calls: (the Graph, what the model
    (and loss) returned)."""
    params = {id(p): n for n, p in model.named_parameters() if p.requires_grad}
    graph = Graph(params)
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
    handles = []
    for path, sub in model.named_modules():
        handles.append(sub.register_forward_pre_hook(_enter(graph, path)))
        handles.append(sub.register_forward_hook(_leave(graph)))
    try:
        with torch.no_grad(), Tracer(graph):
            out = model(*bound.args, **bound.kwargs)
            if loss is not None:
                graph.where.append(("<loss>", "loss function"))
                out = loss(out)
                graph.where.pop()
    finally:
        for h in handles:
            h.remove()
    return graph, out


def _enter(graph: Graph, path: str):
    def hook(module, args):
        graph.where.append((path, type(module).__name__))
    return hook


def _leave(graph: Graph):
    def hook(module, args, output):
        if graph.where:
            graph.where.pop()
    return hook


def _select_outputs(graph: Graph, out: Any) -> List[torch.Tensor]:
    tensors = flatten(out)
    if not tensors:
        raise TorchImportError("the model returned no tensors")
    scalars = [t for t in tensors if t.dim() == 0 and t.is_floating_point()]
    chosen = scalars if len(scalars) == 1 and len(tensors) > 1 else tensors
    for t in chosen:
        if id(t) not in graph.ids:
            raise TorchImportError("an output does not depend on the inputs or parameters "
                                   "(it would be a constant)")
    return chosen


def _live_nodes(graph: Graph, outputs: List[int]) -> set:
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
        stack.extend(r.id for r in refs((node.args, node.kwargs)))
    return live


def _identifier(text: str) -> str:
    ident = "".join(c if c.isalnum() or c == "_" else "_" for c in text)
    return ident if ident and not ident[0].isdigit() else f"m_{ident}"
