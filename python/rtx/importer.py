"""Imports a PyTorch nn.Module into rtx IR.

The module runs once on meta copies of its example inputs and trainable
parameters (shapes and dtypes, no storage: no activation is allocated, and
a model built on the meta device imports too) while a TorchFunctionMode
records every torch-level call (F.linear, Tensor.view, F.softmax, ...)
whose operands depend on an input or a parameter. Calls on anything else
(positions from torch.arange, causal masks from buffers, rotary tables)
run for real on the CPU: their results become rtx.constant values where a
recorded call uses them. Shapes come from the run, so Python code that reads
sizes, unpacks tuples or branches on shapes works unchanged.

The recorded calls whose results reach the outputs are then lowered, one
by one, onto the builder (rtx.builder), after attention written out op by
op has been recognised as one rtx.attention (rtx.torch_fusion). The record
is rtx.torch_graph; the converter of each call, rtx.torch_ops. Parameters
keep their module paths as names (`transformer.h.0.attn.c_attn.weight`); a
call with no rtx mapping raises UnsupportedOpError naming the op and the
module that made it. Parameter values never enter the IR: each rtx.param
gets an initializer (from a sample of its values, or by its module's type
when it is on the meta device), and save_params writes the module's values
one parameter at a time.

    imported = import_module(model, (tokens, targets))
    imported.save("model.mlir")
    imported.save_params("params/")     # NAME.npy: PyTorch's exact weights
    imported.save_inputs("inputs/")     # NAME.npy: the example inputs
"""
from __future__ import annotations

import contextlib
import inspect
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import torch

from .builder import BuildError, Function, Init, Module, Value, constant, normal, ones, zeros
from .errors import TorchImportError, UnsupportedOpError
from .torch_export import capture as capture_with_export, uses_export
from .torch_fusion import fuse_attention, fuse_swiglu
from .torch_graph import META, Graph, Leaf, Meta, Node, Ref, Tracer, flatten, refs
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
            value = self.f.param(leaf.name, t.shape, _initializer(leaf), dtype=t.dtype)
        else:
            value = self.constant(leaf.tensor, t)
        if leaf.kind != "const":
            self.declared.append(leaf)
        self.values[t.ref] = value
        return value

    def constant(self, value: torch.Tensor, t: "Operand") -> Value:
        """A constant's rtx.constant: a splat, decimal elements, or (large:
        rotary tables, masks) its raw bytes in hex."""
        splat = _splat(value)
        if splat is not None:
            return self.f.constant(splat, t.shape, t.dtype)
        if value.numel() > _HEX_ABOVE:
            return self.f.dense_bytes(_raw_bytes(value), t.shape, t.dtype)
        return self.f.dense(value.reshape(-1).tolist(), t.shape, t.dtype)

    def splat(self, t: "Operand") -> Optional[Union[int, float, bool]]:
        """The value of a constant whose elements are all equal, else None."""
        return None if t.const is None else _splat(t.const)

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


def _splat(t: torch.Tensor) -> Optional[Union[int, float, bool]]:
    """The value of a tensor whose elements are all equal (NaN never is), else None."""
    if t.numel() == 0:
        return None
    flat = t.detach().reshape(-1)
    first = flat[0]
    return first.item() if bool((flat == first).all()) else None


# Constants with more elements are written as raw bytes in hex.
_HEX_ABOVE = 1024


def _raw_bytes(t: torch.Tensor) -> bytes:
    """The little-endian buffer MLIR's dense<"0x..."> reads: row-major
    elements, booleans packed eight to a byte from the low bit."""
    flat = t.detach().contiguous().reshape(-1)
    if flat.dtype == torch.bool:
        import numpy as np
        return np.packbits(flat.numpy(), bitorder="little").tobytes()
    assert sys.byteorder == "little", "raw constants are written in the host's byte order"
    return flat.view(torch.uint8).numpy().tobytes()


# A parameter's initializer is computed from at most this many of its
# values (evenly spaced): cheap on a 50k x 768 embedding, and every value of
# a small parameter.
_INIT_SAMPLE = 1 << 20


def _initializer(leaf: Leaf) -> Init:
    """An initializer that resembles the parameter: its value when constant,
    else a normal distribution with its mean and standard deviation. A
    parameter on the meta device has no values: see _meta_initializer."""
    t = leaf.tensor.detach()
    if t.is_meta:
        return _meta_initializer(leaf)
    if t.numel() == 0:
        return zeros()
    low, high = torch.aminmax(t.reshape(-1)) if t.is_floating_point() else (t.min(), t.max())
    if low.item() == high.item():
        first = low.item()
        return zeros() if first == 0 else ones() if first == 1 else constant(first)
    flat = t.reshape(-1)
    if flat.numel() > _INIT_SAMPLE:
        flat = flat[::-(-flat.numel() // _INIT_SAMPLE)]
    flat = flat.double()
    return normal(flat.mean().item(), flat.std().item())


def _meta_initializer(leaf: Leaf) -> Init:
    """The initializer of a parameter whose values are unknown (on the meta
    device), by its module's type and its name, as GPT-2 and Llama
    initialise: ones for a norm's weight (a module class named *Norm*),
    zeros for biases, normal(0, 0.02) for matrices and other tensors of two
    or more dimensions, ones for other vectors and scalars (scales, gains)."""
    short = leaf.name.rsplit(".", 1)[-1]
    if "norm" in leaf.owner.lower() and short == "weight":
        return ones()
    if short == "bias" or short.endswith("_bias"):
        return zeros()
    return normal(0.0, 0.02) if leaf.tensor.dim() >= 2 else ones()


# --- the entry point ------------------------------------------------------------------------

@dataclass
class ImportedModel:
    """The result of import_module."""
    module: Module                          # the rtx IR (builder)
    function: str                           # its function's name
    params: Dict[str, torch.Tensor]         # parameter name -> the module's nn.Parameter, declaration order
    inputs: Dict[str, torch.Tensor]         # input name -> the example input tensor
    returns_loss: bool                      # the function returns one scalar: a loss to train on
    output: Any = field(default=None, repr=False)   # what the traced call returned (meta tensors)

    def text(self) -> str:
        return self.module.text()

    def save(self, path: Union[str, Path]) -> Path:
        path = Path(path)
        path.write_text(self.text())
        return path

    def param_arrays(self) -> Optional[Mapping[str, Any]]:
        """The parameters' current values as numpy arrays (16-bit floats as
        float32), each converted when it is read; None when every parameter
        is on the meta device (no values: programs start from the IR's
        initializers). Reading a parameter on the meta device is an error."""
        if self.params and all(p.is_meta for p in self.params.values()):
            return None
        return _ParamArrays(self.params)

    def save_params(self, directory: Union[str, Path]) -> Path:
        """Writes NAME.npy for every parameter (rtx-run --params DIR), one at a time."""
        return _save_arrays(directory, self.params, "parameter")

    def save_inputs(self, directory: Union[str, Path],
                    values: Optional[Mapping[str, torch.Tensor]] = None) -> Path:
        """Writes NAME.npy for every input (rtx-run --inputs DIR): the
        example inputs, or other `values` of the same names."""
        values = self.inputs if values is None else values
        missing = set(self.inputs) - set(values)
        if missing:
            raise TorchImportError(f"no value for input(s) {', '.join(sorted(missing))}")
        return _save_arrays(directory, {n: values[n] for n in self.inputs}, "input")


class _ParamArrays(Mapping):
    """Parameter name -> its value as a numpy array, converted when read."""

    def __init__(self, params: Mapping[str, torch.Tensor]) -> None:
        self._params = params

    def __getitem__(self, name: str) -> Any:
        return _to_numpy(self._params[name], name, "parameter").copy()

    def __iter__(self) -> Iterator[str]:
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)


def _to_numpy(t: Any, name: str = "", what: str = "tensor") -> Any:
    """A numpy array of t's values (sharing its memory where it can);
    bfloat16 (which .npy lacks) as float32, which rtx-run accepts for 16-bit
    parameters and inputs."""
    import numpy as np
    if not isinstance(t, torch.Tensor):
        return np.asarray(t)
    if t.is_meta:
        raise TorchImportError(
            f"{what} '{name}' is on the meta device and has no value to write. Materialise the model first "
            "(e.g. model.to_empty(device='cpu') then initialise or load its weights); without values, "
            "rtx-run and rtx programs start from the IR's initializers")
    t = t.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


def _save_arrays(directory: Union[str, Path], tensors: Mapping[str, Any], what: str) -> Path:
    """NAME.npy for each tensor, converted and written one at a time."""
    import numpy as np
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, t in tensors.items():
        np.save(directory / f"{name}.npy", np.ascontiguousarray(_to_numpy(t, name, what)))
    return directory


def import_module(model: torch.nn.Module, example_inputs: Union[Sequence[Any], Mapping[str, Any]], *,
                  loss: Optional[Callable[[Any], torch.Tensor]] = None,
                  name: Optional[str] = None, fuse: bool = True) -> ImportedModel:
    """Imports `model` called on `example_inputs` (positional arguments, or
    keyword arguments by name) into rtx IR, without running it: the calls
    see meta tensors of the inputs' and parameters' shapes and dtypes.

    Inputs are named after the forward method's parameters (`idx`,
    `targets`); parameters after their module paths. The function returns
    `loss(output)` when `loss` is given, else the model's output: its one
    scalar floating-point tensor when it has one (nanoGPT returns
    `(logits, loss)`), else every tensor it returns.

    Dropout is imported as rtx.dropout with rtx's own generator when the
    module is in training mode with p > 0 (masks differ from PyTorch's); in
    eval mode, or with p = 0, it is the identity. Parameters with
    requires_grad=False and buffers become constants; one on the meta device
    whose value a constant needs is an error that names it.

    A model built on the meta device imports: its parameters get
    initializers by module type (_meta_initializer), and save_params and
    param_arrays have no values to give.

    With `fuse`, attention written op by op (q @ k^T, scale, causal mask,
    softmax, @ v) becomes one rtx.attention (rtx.torch_fusion).
    """
    if not isinstance(model, torch.nn.Module):
        raise TorchImportError(f"expected a torch.nn.Module, got {type(model).__name__}")
    bound = _bind(model, example_inputs)
    # torch.export on PyTorch 2 (rtx.torch_export), the tracer on 1.13:
    # both make the same record.
    graph, out = (capture_with_export if uses_export() else trace)(model, bound, loss)
    return _lower_graph(graph, out, name or _identifier(type(model).__name__.lower()), fuse,
                        f"{type(model).__module__}.{type(model).__qualname__}")


def _bind(model: torch.nn.Module, example_inputs: Union[Sequence[Any], Mapping[str, Any]]) -> inspect.BoundArguments:
    args, kwargs = (list(example_inputs), {}) if not isinstance(example_inputs, Mapping) \
        else ([], dict(example_inputs))
    try:
        return inspect.signature(model.forward).bind(*args, **kwargs)
    except TypeError as error:
        raise TorchImportError(f"example inputs do not match {type(model).__name__}.forward: {error}") from None


# --- capture with the TorchFunctionMode tracer (PyTorch 1.13 and later) ---------------------

def trace(model: torch.nn.Module, bound: inspect.BoundArguments,
          loss: Optional[Callable[[Any], torch.Tensor]] = None) -> Tuple[Graph, Any]:
    """Runs `model` on meta copies of the bound example inputs and of its
    trainable parameters, recording its calls: (the Graph, what the model
    (and loss) returned, as meta tensors). The Graph's input leaves hold the
    example values, its parameter leaves the module's parameters."""
    with _meta_parameters(model) as (params, values, owners):
        graph = Graph(params, values, owners)
        _mark_valueless(graph, model)
        _meta_inputs(graph, model, bound)
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


@contextlib.contextmanager
def _meta_parameters(model: torch.nn.Module) -> Iterator[Tuple[Dict[int, str], Dict[int, torch.Tensor],
                                                               Dict[int, str]]]:
    """While inside, each trainable parameter of `model` is replaced, in
    every module that holds it (tied weights stay tied), by a meta Parameter
    of its shape and dtype. Yields, keyed by id(meta copy): the parameter's
    name, the module's parameter, and the class name of its module."""
    names = {id(p): n for n, p in model.named_parameters() if p.requires_grad}
    copies: Dict[int, torch.nn.Parameter] = {}
    params: Dict[int, str] = {}
    values: Dict[int, torch.Tensor] = {}
    owners: Dict[int, str] = {}
    swapped: List[Tuple[torch.nn.Module, str, torch.nn.Parameter]] = []
    try:
        for module in model.modules():
            for key, p in list(module._parameters.items()):
                if p is None or id(p) not in names:
                    continue
                if id(p) not in copies:
                    copy = torch.nn.Parameter(p.detach().to(META), requires_grad=True)
                    copies[id(p)] = copy
                    params[id(copy)], values[id(copy)] = names[id(p)], p
                    owners[id(copy)] = type(module).__name__
                module._parameters[key] = copies[id(p)]
                swapped.append((module, key, p))
        yield params, values, owners
    finally:
        for module, key, p in reversed(swapped):
            module._parameters[key] = p


def _mark_valueless(graph: Graph, model: torch.nn.Module) -> None:
    """Buffers and frozen parameters on the meta device: constants without a
    value, named in the error if a value of theirs is needed."""
    for name, b in model.named_buffers():
        if b.is_meta:
            graph.mark_unknown(b, f"buffer '{name}'")
    for name, p in model.named_parameters():
        if p.is_meta and not p.requires_grad:
            graph.mark_unknown(p, f"parameter '{name}' (requires_grad=False: a constant)")


def _meta_inputs(graph: Graph, model: torch.nn.Module, bound: inspect.BoundArguments) -> None:
    """Replaces each tensor among the bound arguments by a meta copy, an
    input leaf of the graph holding the example value."""
    signature = inspect.signature(model.forward).parameters
    params = {id(p) for p in model.parameters()}
    seen: set = set()

    def leaf(input_name: str, value: Any) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        if id(value) in seen or id(value) in params:
            raise TorchImportError(f"input '{input_name}' is the same tensor as another input "
                                   "or a parameter; pass a copy")
        seen.add(id(value))
        copy = value.detach().to(META)
        graph.add_leaf("input", input_name, copy, value)
        return copy

    for arg_name, value in list(bound.arguments.items()):
        kind = signature[arg_name].kind
        if kind == inspect.Parameter.VAR_POSITIONAL:
            bound.arguments[arg_name] = tuple(leaf(f"{arg_name}_{i}", x) for i, x in enumerate(value))
        elif kind == inspect.Parameter.VAR_KEYWORD:
            bound.arguments[arg_name] = {k: leaf(f"{arg_name}_{k}", x) for k, x in value.items()}
        else:
            bound.arguments[arg_name] = leaf(arg_name, value)


# --- from the record to the IR ---------------------------------------------------------------

def _lower_graph(graph: Graph, out: Any, fname: str, fuse: bool, origin: str) -> ImportedModel:
    """Fuses and lowers the calls of `graph` that `out` (tensors the graph
    traced) depends on into a function `fname` of a new module; `origin`
    names the model in the module's comment. Every capture path ends here."""
    results = _select_outputs(graph, out)
    returned = [graph.ids[id(t)] for t in results]
    if fuse:
        fuse_attention(graph, tuple(returned))
        fuse_swiglu(graph, tuple(returned))
    module = Module()
    module.comment(f"Imported from PyTorch: {origin}.")
    f = module.function(fname)
    lowering = _Lowering(graph, f)
    live = _live_nodes(graph, returned)
    for index, node in enumerate(graph.nodes):
        if index in live:
            lowering.lower(node)
    f.ret(*[lowering.v(lowering.wrap(Ref(vid))) for vid in returned])

    params_out = {leaf.name: leaf.tensor for leaf in lowering.declared if leaf.kind == "param"}
    inputs_out = {leaf.name: leaf.tensor for leaf in lowering.declared if leaf.kind == "input"}
    returns_loss = len(results) == 1 and results[0].dim() == 0 and results[0].is_floating_point()
    return ImportedModel(module, fname, params_out, inputs_out, returns_loss, out)


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
