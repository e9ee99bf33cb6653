"""A program's parameters: their names and shapes, and the checks that a
value set for them (Program.params) names each of them exactly.

The names come from the model's `rtx.param "NAME" ... : tensor<...>` ops;
check_params turns what a user gives (arrays or tensors by name) into the
numpy arrays rtx-run's and an emitted program's --params read, or raises
UnknownParameterError / ConfigError naming the parameter, with the names
closest to a misspelt one. numpy is imported on first use.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Tuple

from .batch import NUMPY_DTYPES, InputSpec, as_array
from .config import ConfigError

__all__ = ["Part", "UnknownParameterError", "assemble_parts", "check_params", "param_specs", "parts_of"]

_PARAM = re.compile(r'rtx\.param "([^"]+)"[^\n]*?: tensor<((?:\d+x)*)(\w+)>')
# An rtx.param op's or a parameter argument's name, and rtx.part_of's
# dictionary (its fields in any order).
_PARAM_NAME = re.compile(r'rtx\.param(?: =)? "([^"]+)"')
_PART_OF = re.compile(r'rtx\.part_of = \{([^{}]*)\}')
_PART_FIELDS = {field: re.compile(pattern) for field, pattern in (
    ("name", r'name = "([^"]+)"'), ("dim", r'dim = (\d+)'), ("offset", r'offset = (\d+)'))}


@dataclass(frozen=True)
class Part:
    """A parameter that is a block of a user's tensor (`rtx.part_of`): the
    block [offset, offset + its size) of dimension `dim` of tensor `name`."""
    name: str
    dim: int
    offset: int


def parts_of(text: str) -> Dict[str, Part]:
    """The parameters of an IR (a model or a training step) that are parts
    of a user's tensor, by their IR name (`c_attn.weight@0`)."""
    parts: Dict[str, Part] = {}
    for m in _PART_OF.finditer(text):
        names = list(_PARAM_NAME.finditer(text, 0, m.start()))
        fields = {f: r.search(m.group(1)) for f, r in _PART_FIELDS.items()}
        if not names or not all(fields.values()):
            continue
        parts[names[-1].group(1)] = Part(fields["name"].group(1), int(fields["dim"].group(1)),
                                         int(fields["offset"].group(1)))
    return parts


def assemble_parts(arrays: Mapping[str, Any], parts: Mapping[str, Part]) -> Dict[str, Any]:
    """`arrays` with the parts of each user tensor (all of them given)
    replaced by that tensor; raises ConfigError when they do not tile it."""
    import numpy as np
    groups: Dict[str, List[Tuple[Part, Any]]] = {}
    for name, part in parts.items():
        groups.setdefault(part.name, []).append((part, arrays.get(name)))
    out = {name: value for name, value in arrays.items() if name not in parts}
    for user, members in groups.items():
        if any(value is None for _, value in members):
            continue
        members.sort(key=lambda m: m[0].offset)
        dim, end = members[0][0].dim, 0
        for part, value in members:
            if part.offset != end:
                raise ConfigError(f"the parts of parameter {user!r} do not tile it along dimension {dim}: one "
                                  f"begins at {part.offset}, the parts before end at {end}")
            end += np.shape(value)[dim]
        out[user] = np.concatenate([np.asarray(value) for _, value in members], axis=dim)
    return out


class UnknownParameterError(ConfigError, KeyError):
    """A parameter name the program does not have, or one it lacks. A
    ConfigError (ValueError) and a KeyError, so `except KeyError` works as
    for a dict; its message is the plain sentence, not KeyError's repr."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def param_specs(text: str) -> List[InputSpec]:
    """The parameters of a model's IR in the user's names, in declaration
    order (a parameter read twice, as tied weights are, once; the parts of
    a user's tensor, rtx.part_of, as that tensor)."""
    specs: Dict[str, InputSpec] = {}
    parts = parts_of(text)
    for m in _PARAM.finditer(text):
        shape = tuple(int(d) for d in m.group(2).split("x") if d)
        name, part = m.group(1), parts.get(m.group(1))
        if part is not None:
            whole = specs.get(part.name, InputSpec(part.name, shape, m.group(3))).shape
            end = max(whole[part.dim], part.offset + shape[part.dim])
            shape, name = whole[:part.dim] + (end,) + whole[part.dim + 1:], part.name
            specs[name] = InputSpec(name, shape, m.group(3))
        specs.setdefault(name, InputSpec(name, shape, m.group(3)))
    return list(specs.values())


def _close(name: str, names: List[str]) -> str:
    matches = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    return f"; did you mean {', '.join(repr(m) for m in matches)}?" if matches else ""


def check_params(params: Mapping[str, Any], specs: List[InputSpec]) -> Dict[str, Any]:
    """The arrays of `params` by name, checked against `specs`: every
    parameter given, no other name, each with its shape; floats of another
    precision are converted."""
    import numpy as np
    if not isinstance(params, Mapping):
        raise ConfigError(f"params must be a mapping from parameter name to array, got {type(params).__name__}")
    names = [s.name for s in specs]
    for name in params:
        if name not in names:
            raise UnknownParameterError(
                f"the program has no parameter {name!r}{_close(str(name), names)} "
                f"(its parameters: {', '.join(names) if names else 'none'})")
    arrays = {}
    for spec in specs:
        if spec.name not in params:
            raise UnknownParameterError(
                f"params lacks parameter {spec.name!r} {list(spec.shape)} {spec.dtype}; give every parameter "
                f"(program.params holds them all after a train call), or None for the model's initializers")
        array = as_array(params[spec.name])
        if tuple(array.shape) != spec.shape:
            raise ConfigError(f"parameter {spec.name!r} has shape {list(array.shape)}; the program expects "
                              f"{list(spec.shape)}")
        want = np.dtype(NUMPY_DTYPES.get(spec.dtype, "float32"))
        if array.dtype.kind != want.kind:
            raise ConfigError(f"parameter {spec.name!r} has dtype {array.dtype}; the program expects {want}")
        arrays[spec.name] = array.astype(want, copy=False)
    return arrays
