"""The inputs of a training step, and arrays on disk as the tools read them.

A step's inputs are described by InputSpec (name, shape, rtx element type);
check_batch turns what a user passes (arrays or tensors, by name or in
order) into exactly the numpy arrays the step takes, and save_arrays writes
them as NAME.npy, the layout rtx-run's --inputs/--params and an emitted
program's --inputs/--params read. numpy is imported on first use.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Sequence, Tuple, Union

from .config import ConfigError

# rtx element types and the numpy dtypes their .npy files hold.
NUMPY_DTYPES = {"f32": "float32", "f64": "float64", "f16": "float16", "i32": "int32", "i64": "int64",
                "i1": "bool"}

Batch = Union[Mapping[str, Any], Sequence[Any]]


@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: Tuple[int, ...]
    dtype: str               # rtx element type: f32, i32, ...


def as_array(value: Any) -> Any:
    """`value` as a numpy array (a torch tensor without importing torch)."""
    import numpy as np
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def check_batch(batch: Batch, specs: List[InputSpec]) -> Dict[str, Any]:
    """The arrays of `batch` by input name, checked against `specs` (names,
    shapes, dtypes; integer inputs are converted between integer dtypes)."""
    import numpy as np
    if not isinstance(batch, Mapping):
        if len(batch) != len(specs):
            raise ConfigError(f"the batch has {len(batch)} arrays; the program takes {len(specs)}: "
                              f"{', '.join(s.name for s in specs)}")
        batch = {s.name: v for s, v in zip(specs, batch)}
    unknown = set(batch) - {s.name for s in specs}
    if unknown:
        raise ConfigError(f"the program has no input(s) {', '.join(sorted(unknown))}; "
                          f"its inputs are {', '.join(s.name for s in specs)}")
    arrays = {}
    for spec in specs:
        if spec.name not in batch:
            raise ConfigError(f"the batch lacks input '{spec.name}' {list(spec.shape)} {spec.dtype}")
        array = as_array(batch[spec.name])
        if tuple(array.shape) != spec.shape:
            raise ConfigError(f"input '{spec.name}' has shape {list(array.shape)}; the program expects "
                              f"{list(spec.shape)}")
        want = np.dtype(NUMPY_DTYPES.get(spec.dtype, "float32"))
        if array.dtype != want:
            if array.dtype.kind != want.kind and not (array.dtype.kind in "iu" and want.kind in "iu"):
                raise ConfigError(f"input '{spec.name}' has dtype {array.dtype}; the program expects {want}")
            array = array.astype(want)
        arrays[spec.name] = array
    return arrays


def save_arrays(directory: Path, arrays: Mapping[str, Any]) -> Path:
    """Writes each array as directory/NAME.npy and returns the directory."""
    import numpy as np
    directory.mkdir(parents=True, exist_ok=True)
    for name, array in arrays.items():
        np.save(directory / f"{name}.npy", np.asarray(array, order="C"))   # C order; 0-d stays 0-d
    return directory
