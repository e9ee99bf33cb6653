"""Captures a module with torch.export (PyTorch 2) into the importer's record.

On PyTorch >= 2.6, `import_module` captures with `torch.export.export`
(non-strict, training IR: ATen ops before decomposition, so F.linear,
layer_norm, softmax, cross_entropy and scaled_dot_product_attention arrive
as themselves). The exported graph is traced with fake tensors: no
activation is allocated, and a module whose parameters are on the meta
device is captured as well. Its nodes are then written into the same record
the PyTorch 1.13 tracer fills (rtx.torch_graph.Graph), under the torch-level
op names and argument conventions of the converters (rtx.torch_ops; the
mapping is rtx.torch_aten), so attention recognition (rtx.torch_fusion) and
lowering are shared:

    aten.linear.default(x, w, b)         -> torch.nn.functional.linear(x, w, b)
    aten.embedding.default(w, ids)       -> torch.nn.functional.embedding(ids, w)
    aten.slice.Tensor(x, 2, 0, 8, 2)     -> torch.Tensor.__getitem__(x, (:, :, 0:8:2))
    aten.split.Tensor + getitem          -> torch.Tensor.split with one result per part

- Parameters are named by the graph signature's module paths
  (`transformer.h.0.attn.c_attn.weight`), tied weights under their first
  name; frozen parameters, buffers and tensor constants become constants.
- Nodes that depend on no input or parameter (torch.arange, causal masks,
  rotary tables) are evaluated for real, on the CPU, into constant leaves;
  so are `ones_like` and friends, whose values depend on a shape only.
- In-place updates (`x.relu_()`) are imported out of place, unless the
  memory they change is read afterwards under another name (the tensor a
  view views, another view of it): then they are refused.
- Each node's module path and type come from its `nn_module_stack`, its
  source line from its `stack_trace` (the innermost frame outside PyTorch
  and rtx), so errors name the module and line as the 1.13 path does.
- An ATen op with no mapping keeps its name (`aten.cumsum.default`) and is
  refused by lowering with UnsupportedOpError, if the loss needs it.
- A module that torch.export cannot capture (data-dependent control flow:
  `if x.sum() > 0`, `.item()`, `.tolist()`) is refused with the user's line.
"""
from __future__ import annotations

import contextlib
import inspect
import operator
import os
import re
import traceback
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
import torch.fx
from torch.utils import _pytree as pytree

from .errors import TorchImportError, UnsupportedOpError
from .torch_aten import ALIASES, CALLS, CHECKS, SHAPE_ONLY, VIEWS, inplace, packet
from .torch_graph import Graph, Meta, Node, Ref

__all__ = ["capture", "uses_export"]

# PyTorch 2.6 made torch.export's default the training IR (ops before
# decomposition, F.linear and SDPA whole), on which the mapping below is built.
MINIMUM_VERSION = (2, 6)


def _version(text: str) -> Tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text.split("+")[0])[:2])


def uses_export() -> bool:
    """Whether import_module captures with torch.export (PyTorch >= 2.6)."""
    return _version(torch.__version__) >= MINIMUM_VERSION and hasattr(torch, "export")


# --- the user's code in a stack --------------------------------------------------------------

_INTERNAL = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (torch, contextlib)) + \
    (os.path.dirname(os.path.abspath(__file__)) + os.sep,)
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _is_user_file(filename: str) -> bool:
    return not os.path.abspath(filename).startswith(_INTERNAL)


def _user_line(stack_trace: Optional[str]) -> str:
    """"FILE:LINE" of the innermost frame of an FX node's stack trace outside
    PyTorch and rtx (the user's line that made the call); "" when none."""
    frames = _FRAME.findall(stack_trace or "")
    for filename, line in reversed(frames):
        if _is_user_file(filename):
            return f"{filename}:{line}"
    return ""


# --- capture -----------------------------------------------------------------------------------

class _WithLoss(torch.nn.Module):
    """model followed by import_module's `loss`: one module to export."""

    def __init__(self, model: torch.nn.Module, loss: Callable[[Any], torch.Tensor]) -> None:
        super().__init__()
        self.model = model
        self.loss = loss

    def forward(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        return self.loss(self.model(*args, **kwargs))


def capture(model: torch.nn.Module, bound: inspect.BoundArguments,
            loss: Optional[Callable[[Any], torch.Tensor]] = None) -> Tuple[Graph, Any]:
    """Exports `model` called on the bound example inputs (then `loss` of its
    output) and writes it into a new Graph: (the Graph, what the model (and
    loss) returned, fake tensors the Graph knows). Input leaves hold the
    example values; parameter leaves the module's parameters."""
    graph = Graph({id(p): n for n, p in model.named_parameters() if p.requires_grad})
    _declare_inputs(graph, model, bound)
    args, kwargs = list(bound.args), dict(bound.kwargs)
    tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    root = _WithLoss(model, loss) if loss is not None else model
    with _on_fake_device(model, tensors) as fake:
        if fake is not None:
            args, kwargs = pytree.tree_map_only(torch.Tensor, fake, (args, kwargs))
        exported = _export(root, model, tuple(args), kwargs)
    with warnings.catch_warnings():
        # rtx.torch_graph reads storages the PyTorch 1.13 way (Tensor.storage),
        # also of meta parameters, which have none.
        warnings.filterwarnings("ignore", "TypedStorage is deprecated", UserWarning)
        warnings.filterwarnings("ignore", "Accessing the data pointer of FakeTensor", UserWarning)
        out = _Translator(graph, root, exported, tensors, prefix="model." if loss is not None else "").run()
    return graph, out


def _declare_inputs(graph: Graph, model: torch.nn.Module, bound: inspect.BoundArguments) -> None:
    """An input leaf for each tensor argument, named as the 1.13 path names
    it: after forward's parameter (`idx`), `args_0` for *args, `kw_key` for
    **kw."""
    signature = inspect.signature(model.forward).parameters
    params = {id(p) for p in model.parameters()}
    for arg_name, value in bound.arguments.items():
        kind = signature[arg_name].kind
        items = (list(enumerate(value)) if kind == inspect.Parameter.VAR_POSITIONAL else
                 list(value.items()) if kind == inspect.Parameter.VAR_KEYWORD else [(None, value)])
        for key, item in items:
            if isinstance(item, torch.Tensor):
                name = arg_name if key is None else f"{arg_name}_{key}"
                if id(item) in graph.ids or id(item) in params:
                    raise TorchImportError(f"input '{name}' is the same tensor as another input or a parameter; "
                                           "pass a copy")
                graph.add_leaf("input", name, item)


def _export(root: torch.nn.Module, model: torch.nn.Module, args: tuple, kwargs: dict):
    try:
        return torch.export.export(root, args, kwargs, strict=False)
    except Exception as error:        # torch.export reports many kinds; all stop the import
        raise _capture_error(error, model) from None


@contextlib.contextmanager
def _on_fake_device(model: torch.nn.Module, inputs: List[torch.Tensor]):
    """For a module or inputs with tensors on the meta device: while inside,
    the module's meta parameters and buffers are fake tensors on the device
    of its other tensors (the inputs', else the module's, else the CPU), and
    the context gives the function that makes the inputs fake tensors of the
    same mode; torch.export takes that mode. So
    the module's code runs as on a real device (a table built in forward
    with torch.arange(T) is on the CPU, as on a real model), without a byte
    allocated. Otherwise it gives None and changes nothing."""
    saved = [(table, name, t) for sub in model.modules() for table in (sub._parameters, sub._buffers)
             for name, t in table.items() if t is not None and t.is_meta]
    if not saved and not any(t.is_meta for t in inputs):
        yield None
        return
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    real = [t for t in inputs + list(model.parameters()) + list(model.buffers()) if not t.is_meta]
    device = real[0].device if real else torch.device("cpu")

    def fake(t: torch.Tensor) -> torch.Tensor:
        return FakeTensor(mode, t, device) if t.is_meta else mode.from_tensor(t)

    try:
        for table, name, t in saved:
            table[name] = torch.nn.Parameter(fake(t.data), requires_grad=t.requires_grad) \
                if isinstance(t, torch.nn.Parameter) else fake(t)
        yield fake
    finally:
        for table, name, t in saved:
            table[name] = t


def _capture_error(error: Exception, model: torch.nn.Module) -> TorchImportError:
    """The reason torch.export failed, with the user's line and module."""
    frame = None
    for f, line in traceback.walk_tb(error.__traceback__):
        if _is_user_file(f.f_code.co_filename):
            frame = (f, line)
    source, path, kind = "", "", type(model).__name__
    if frame is not None:
        f, line = frame
        source = f"{f.f_code.co_filename}:{line}"
        owner = f.f_locals.get("self")
        for name, sub in model.named_modules():
            if sub is owner:
                path, kind = name, type(sub).__name__
                break
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    data_dependent = "data-dependent" in str(error) or type(error).__name__ in (
        "GuardOnDataDependentSymNode", "DataDependentOutputException")
    if data_dependent:
        return UnsupportedOpError("aten.item.default", path, kind,
                                  "it turns a traced tensor into a Python value; data-dependent control flow "
                                  f"cannot be imported (torch.export: {first})", source=source)
    at = f" at {source}" if source else ""
    where = f" in module '{path}' ({kind})" if path else ""
    return TorchImportError(f"torch.export could not capture {type(model).__name__}{where}{at}: "
                            f"{type(error).__name__}: {first}")


# --- values while translating ------------------------------------------------------------------

class _Unknown:
    """The value of a tensor on the meta device that a constant needs."""

    def __init__(self, what: str) -> None:
        self.what = what


def _first_unknown(obj: Any) -> Optional[_Unknown]:
    for leaf in pytree.tree_leaves(obj):
        if isinstance(leaf, _Unknown):
            return leaf
    return None


def _on_cpu(obj: Any) -> Any:
    """Factory arguments of a constant (device=idx.device may be meta) on the CPU."""
    if isinstance(obj, torch.device):
        return torch.device("cpu")
    return obj


# Higher-order ops that call a subgraph of the exported program.
_REGIONS = {"wrap_with_set_grad_enabled", "wrap_with_autocast"}


# --- translation ---------------------------------------------------------------------------------

class _Translator:
    """Walks the exported graph in order; each FX node's value is a Ref (a
    value of `graph` that depends on an input or a parameter), a list of them
    (split), or a real tensor / Python value (a constant)."""

    def __init__(self, graph: Graph, root: torch.nn.Module, exported: Any, tensors: List[torch.Tensor],
                 prefix: str) -> None:
        self.graph, self.root, self.exported = graph, root, exported
        self.tensors, self.prefix = tensors, prefix
        self.values: Dict[torch.fx.Node, Any] = {}
        self.consts: Dict[tuple, List[Ref]] = {}  # (shape, dtype) -> constant leaves
        self.memory: Dict[torch.fx.Node, torch.fx.Node] = {}   # a view -> the node whose memory it shares
        self.state: Dict[torch.fx.Node, str] = {}      # placeholders of the module's own tensors -> what they are
        self.live: set = set()                     # the FX nodes the outputs need
        self.order: Dict[torch.fx.Node, int] = {}

    def run(self) -> Any:
        fx_graph = self.exported.graph
        # Refused before any constant is evaluated: evaluating an update of a
        # buffer would change the module's own.
        outputs = self._user_outputs(next(n for n in reversed(fx_graph.nodes) if n.op == "output"))
        self._placeholders([n for n in fx_graph.nodes if n.op == "placeholder"])
        self.live = _live(fx_graph)
        self.order = {node: index for index, node in enumerate(fx_graph.nodes)}
        self._translate(fx_graph)
        results = [self._result(self.values[n] if isinstance(n, torch.fx.Node) else n) for n in outputs]
        return pytree.tree_unflatten(results, self.exported.call_spec.out_spec)

    def _translate(self, fx_graph: torch.fx.Graph) -> None:
        """The live calls of fx_graph, in order."""
        for node in fx_graph.nodes:
            if node.op == "call_function" and node in self.live:
                name = packet(node.target)
                self.values[node] = self._region(node, name) if name in _REGIONS else self._call(node)
                operand = node.args[0] if node.args else None
                if (name in VIEWS or inplace(name)) and isinstance(operand, torch.fx.Node):
                    self.memory[node] = self.memory.get(operand, operand)

    def _region(self, node: torch.fx.Node, name: str) -> Any:
        """`with torch.no_grad():` / `with torch.autocast(..., enabled=False):`
        in forward, which torch.export keeps as a call of a subgraph: its
        calls, inlined. A no-grad region that computes from traced values
        (PyTorch gives them no gradient; rtx would), and autocast (which
        changes the ops' element types), are refused."""
        enabled, submodule, operands = (node.args[0], node.args[1], node.args[2:]) \
            if name == "wrap_with_set_grad_enabled" else (node.args[2], node.args[4], node.args[5:])
        sub = getattr(self.exported.graph_module, submodule.target).graph
        path, kind = self._where(node)
        source = self._source(node) or next(
            (line for line in (self._source(n) for n in sub.nodes if n.op == "call_function") if line), "")
        if name == "wrap_with_autocast" and enabled:
            raise UnsupportedOpError("torch.autocast", path, kind, "autocast changes the element type of the ops "
                                     "inside it; import the model in the element type it trains in", source=source)
        placeholders = [n for n in sub.nodes if n.op == "placeholder"]
        for placeholder, operand in zip(placeholders, operands):
            self.values[placeholder] = self.values[operand] if isinstance(operand, torch.fx.Node) else operand
        live = _live(sub)
        self.live |= live
        self.order.update({n: self.order[node] for n in sub.nodes})
        self._translate(sub)
        output = next(n for n in sub.nodes if n.op == "output")
        results = torch.fx.node.map_arg(output.args[0], lambda n: self.values[n])
        if name == "wrap_with_set_grad_enabled" and not enabled and \
                any(isinstance(x, Ref) for x in pytree.tree_leaves(results)):
            raise UnsupportedOpError("torch.no_grad", path, kind, "a region without gradients computes from the "
                                     "inputs or parameters; rtx would differentiate through it (compute it "
                                     "outside torch.no_grad, or from constants only)", source=source)
        return list(results) if isinstance(results, (list, tuple)) else [results]

    def _user_outputs(self, output: torch.fx.Node) -> List[Any]:
        """The module's outputs; an update of a buffer or an input is refused."""
        from torch.export.graph_signature import OutputKind
        chosen = []
        for value, spec in zip(pytree.tree_leaves(output.args[0]), self.exported.graph_signature.output_specs):
            if spec.kind == OutputKind.USER_OUTPUT:
                chosen.append(value)
            elif spec.kind in (OutputKind.BUFFER_MUTATION, OutputKind.USER_INPUT_MUTATION):
                target = spec.target or spec.arg.name
                raise TorchImportError(f"the module updates {spec.kind.name.split('_')[0].lower()} '{target}' in "
                                       "place in forward (BatchNorm's running statistics, a cache); rtx imports "
                                       "functions of the inputs and parameters only")
        return chosen

    # -- leaves --------------------------------------------------------------------------------
    def _placeholders(self, nodes: List[torch.fx.Node]) -> None:
        from torch.export.graph_signature import InputKind, TensorArgument
        inputs = iter(self.tensors)
        specs = self.exported.graph_signature.input_specs
        for node, spec in zip(nodes, specs):
            if spec.kind == InputKind.USER_INPUT:
                if isinstance(spec.arg, TensorArgument):
                    t = next(inputs)
                    if id(t) not in self.graph.ids:
                        raise TorchImportError(f"input '{spec.arg.name}' is a tensor inside a container; pass "
                                               "tensors as arguments of forward")
                    self.values[node] = Ref(self.graph.ids[id(t)])
                else:
                    self.values[node] = spec.arg.value
            elif spec.kind == InputKind.PARAMETER:
                self.values[node] = self._parameter(spec.target)
                self.state[node] = f"parameter '{self._name(spec.target)}'"
            elif spec.kind == InputKind.BUFFER:
                self.values[node] = self._known(self.root.get_buffer(spec.target), "buffer", spec.target)
                self.state[node] = f"buffer '{self._name(spec.target)}'"
            elif spec.kind in (InputKind.CONSTANT_TENSOR, getattr(InputKind, "CUSTOM_OBJ", None)):
                self.values[node] = self._known(self.exported.constants[spec.target], "constant", spec.target)
                self.state[node] = f"tensor constant '{self._name(spec.target)}'"
            else:
                raise TorchImportError(f"torch.export gave an input of kind {spec.kind.name} ({spec.target}), "
                                       "which rtx does not import")

    def _parameter(self, target: str) -> Any:
        p = self.root.get_parameter(target)
        if id(p) in self.graph.params:            # trainable: an rtx.param named by its (first) module path
            return self.graph.ref(p)
        return self._known(p.detach(), "frozen parameter", target)

    def _name(self, target: str) -> str:
        """A module path as the user's module names it (not the loss wrapper)."""
        return target[len(self.prefix):] if target.startswith(self.prefix) else target

    def _known(self, t: torch.Tensor, kind: str, target: str) -> Any:
        return _Unknown(f"{kind} '{self._name(target)}'") if t.is_meta else t

    def _const(self, t: torch.Tensor) -> Ref:
        """The constant leaf of t's value. Equal values are one leaf: a
        rotary table or a mask rebuilt in every layer enters the IR once."""
        key = (tuple(t.shape), t.dtype)
        for ref in self.consts.get(key, ()):
            if torch.equal(self.graph.metas[ref.id].leaf.tensor, t):
                return ref
        ref = Ref(self.graph.add_leaf("const", "", t, t.detach().clone()))
        self.consts.setdefault(key, []).append(ref)
        return ref

    # -- one call ------------------------------------------------------------------------------
    def _args(self, node: torch.fx.Node) -> Tuple[tuple, dict]:
        return torch.fx.node.map_arg((node.args, node.kwargs), lambda n: self.values[n])

    def _call(self, node: torch.fx.Node) -> Any:
        args, kwargs = self._args(node)
        if node.target is operator.getitem:
            return args[0] if isinstance(args[0], _Unknown) else args[0][args[1]]
        name = packet(node.target)
        if name in CHECKS:
            return None
        dependent = any(isinstance(x, Ref) for x in pytree.tree_leaves((args, kwargs)))
        if inplace(name):
            self._refuse_state_update(node)
        if not dependent:
            return self._evaluate(node, args, kwargs)
        if name in SHAPE_ONLY:
            return self._evaluate(node, *self._placeholder_values((args, kwargs)))
        if inplace(name):
            return self._update(node, name, args, kwargs)
        if name in ALIASES and self._same_meta(args[0], node):
            return args[0]
        if name == "slice" and self._whole(args, node):
            return args[0]
        return self._record(node, name, args, kwargs)

    def _record(self, node: torch.fx.Node, name: str, args: tuple, kwargs: dict) -> Any:
        """Adds node as a call of `graph`; returns its value(s)."""
        unknown = _first_unknown((args, kwargs))
        if unknown is not None:
            path, kind = self._where(node)
            source = self._source(node)
            raise TorchImportError(
                f"the value of {unknown.what} is needed by {node.target} (in module '{path}' ({kind})"
                f"{' at ' + source if source else ''}), but it is on the meta device and has no value. "
                "Materialise it before importing: create it on the CPU in the module's __init__, or assign it "
                "after building the model on the meta device (module.NAME = value computed on the CPU); "
                "parameters may stay on the meta device")
        args, kwargs = pytree.tree_map_only(torch.Tensor, self._const, (args, kwargs))
        if name in CALLS:
            op, arguments = CALLS[name]
            args, kwargs = arguments(*args, **kwargs)
        else:
            op = str(node.target)           # no mapping: lowering refuses it if the loss needs it
        vals = node.meta.get("val")
        multiple = isinstance(vals, (list, tuple))
        outputs = list(vals) if multiple else [vals]
        self._check_results(node, outputs)
        index = len(self.graph.nodes)
        record = Node(op, args, kwargs, [], [], self._where(node), self._source(node))
        for val in outputs:
            vid = len(self.graph.metas)
            self.graph.metas.append(Meta(tuple(int(s) for s in val.shape), val.dtype, node=index))
            record.outputs.append(vid)
            record.tensors.append(val)
        self.graph.nodes.append(record)
        refs = [Ref(v) for v in record.outputs]
        return refs if multiple else refs[0]

    def _check_results(self, node: torch.fx.Node, outputs: List[Any]) -> None:
        """Results rtx can hold: tensors whose shapes do not depend on values."""
        path, kind = self._where(node)
        for val in outputs:
            if not isinstance(val, torch.Tensor):
                raise UnsupportedOpError(str(node.target), path, kind,
                                         "it turns a traced tensor into a Python value; data-dependent control "
                                         "flow cannot be imported", source=self._source(node))
            if not all(type(size) is int for size in val.shape):
                raise UnsupportedOpError(str(node.target), path, kind,
                                         "its result's shape depends on the values: data-dependent shapes cannot "
                                         "be imported", source=self._source(node))

    def _update(self, node: torch.fx.Node, name: str, args: tuple, kwargs: dict) -> Any:
        """x.op_(...) out of place. The export tracer names a tensor after its
        latest update, so the nodes after this one read the update's result,
        never x. Views are the exception: the update changes the tensor x is
        a view of and its other views, which keep their names; if any of
        them is read later, the update is refused."""
        target = args[0]
        if not isinstance(target, Ref):
            path, kind = self._where(node)
            raise UnsupportedOpError(str(node.target), path, kind, "an in-place update of a constant by a traced "
                                     "value cannot be imported; use the out-of-place form", source=self._source(node))
        if self._read_later(node):
            path, kind = self._where(node)
            raise UnsupportedOpError(str(node.target), path, kind,
                                     "assignment into a tensor (x[i] = v), or an in-place update of a view (or of "
                                     "a tensor with views) whose other names are read later, cannot be imported; "
                                     "use the out-of-place form (torch.cat, torch.where)", source=self._source(node))
        return self._record(node, name[:-1], args, kwargs)

    def _refuse_state_update(self, update: torch.fx.Node) -> None:
        """An in-place update of the module's own tensors (a buffer, as
        BatchNorm's running statistics; a parameter) is state that rtx's
        function does not have; evaluating it would also change the module."""
        target = update.args[0]
        base = self.memory.get(target, target) if isinstance(target, torch.fx.Node) else None
        if base in self.state:
            path, kind = self._where(update)
            raise UnsupportedOpError(str(update.target), path, kind,
                                     f"the module updates {self.state[base]} in place in forward (running "
                                     "statistics, a cache); rtx imports functions of the inputs and parameters "
                                     "only", source=self._source(update))

    def _read_later(self, update: torch.fx.Node) -> bool:
        """Whether a tensor that shares memory with the updated one (the
        tensor it is a view of, or another view of that), under another FX
        name, is read after the update."""
        target = update.args[0]
        base = self.memory.get(target, target)
        order = self.order[update]
        for fx_node in [base] + [n for n, b in self.memory.items() if b is base]:
            if fx_node is not target and fx_node is not update and \
                    any(self.order[user] > order and user in self.live for user in fx_node.users):
                return True
        return False

    def _evaluate(self, node: torch.fx.Node, args: tuple, kwargs: dict) -> Any:
        """Runs a call on constants, on the CPU: its value is a constant."""
        unknown = _first_unknown((args, kwargs))
        if unknown is not None:
            return unknown
        args, kwargs = pytree.tree_map(_on_cpu, (args, kwargs))
        try:
            return node.target(*args, **kwargs)
        except Exception as error:
            path, kind = self._where(node)
            source = self._source(node)
            raise TorchImportError(f"evaluating the constant {node.target} in module '{path}' ({kind})"
                                   f"{' at ' + source if source else ''} failed: {error}") from None

    def _placeholder_values(self, obj: Any) -> Any:
        """Refs replaced by zero tensors of their shape and dtype."""
        def zeros(r: Ref) -> torch.Tensor:
            m = self.graph.metas[r.id]
            return torch.zeros(m.shape, dtype=m.dtype)
        return pytree.tree_map_only(Ref, zeros, obj)

    def _same_meta(self, x: Any, node: torch.fx.Node) -> bool:
        val = node.meta.get("val")
        if not isinstance(x, Ref) or not isinstance(val, torch.Tensor):
            return False
        m = self.graph.metas[x.id]
        return m.shape == tuple(val.shape) and m.dtype == val.dtype

    def _whole(self, args: tuple, node: torch.fx.Node) -> bool:
        """A slice with step 1 that keeps the whole dimension."""
        step = args[4] if len(args) > 4 else 1
        return step == 1 and self._same_meta(args[0], node)

    def _result(self, value: Any) -> Any:
        """An output value as a tensor graph.ids knows (a constant: a real tensor)."""
        if isinstance(value, Ref):
            fake = self._fake(value)
            self.graph.ids[id(fake)] = value.id
            self.graph.alive.append(fake)
            return fake
        if isinstance(value, _Unknown):
            return torch.empty(0, device="meta")
        return value

    def _fake(self, ref: Ref) -> torch.Tensor:
        m = self.graph.metas[ref.id]
        return torch.empty(m.shape, dtype=m.dtype, device="meta")

    def _source(self, node: torch.fx.Node) -> str:
        """"FILE:LINE" of the user's code that made the call. torch.export
        keeps the frames of modules' forward methods only: a call made by
        import_module's `loss` gets the line where that function begins."""
        line = _user_line(node.meta.get("stack_trace"))
        if not line and self._where(node)[0] == "<loss>":
            code = getattr(getattr(self.root, "loss", None), "__code__", None)
            line = f"{code.co_filename}:{code.co_firstlineno}" if code is not None else ""
        return line

    def _where(self, node: torch.fx.Node) -> Tuple[str, str]:
        """(module path, module type) of the innermost module that made the call."""
        stack = node.meta.get("nn_module_stack") or {}
        if not stack:
            return ("<loss>", "loss function") if self.prefix else ("", type(self.root).__name__)
        path, kind = list(stack.values())[-1]
        kind = kind.rsplit(".", 1)[-1] if isinstance(kind, str) else getattr(kind, "__name__", str(kind))
        if self.prefix:
            if not (path + ".").startswith(self.prefix):
                return "<loss>", "loss function"
            path = path[len(self.prefix):]
        return path, kind


def _live(fx_graph: torch.fx.Graph) -> set:
    """The nodes the outputs depend on, and every in-place update (its
    operand's later readers may name the operand, not the update)."""
    output = next(n for n in reversed(fx_graph.nodes) if n.op == "output")
    todo = list(output.all_input_nodes)
    todo += [n for n in fx_graph.nodes if n.op == "call_function" and inplace(packet(n.target))]
    live: set = set()
    while todo:
        node = todo.pop()
        if node not in live:
            live.add(node)
            todo.extend(node.all_input_nodes)
    return live
