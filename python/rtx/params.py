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
from typing import Any, Dict, List, Mapping

from .batch import NUMPY_DTYPES, InputSpec, as_array
from .config import ConfigError

__all__ = ["UnknownParameterError", "check_params", "param_specs"]

_PARAM = re.compile(r'rtx\.param "([^"]+)"[^\n]*?: tensor<((?:\d+x)*)(\w+)>')


class UnknownParameterError(ConfigError, KeyError):
    """A parameter name the program does not have, or one it lacks. A
    ConfigError (ValueError) and a KeyError, so `except KeyError` works as
    for a dict; its message is the plain sentence, not KeyError's repr."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def param_specs(text: str) -> List[InputSpec]:
    """The parameters of a model's IR, in declaration order (a parameter
    read twice, as tied weights are, once)."""
    specs: Dict[str, InputSpec] = {}
    for m in _PARAM.finditer(text):
        specs.setdefault(m.group(1), InputSpec(m.group(1), tuple(int(d) for d in m.group(2).split("x") if d),
                                               m.group(3)))
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
