"""Helpers shared by the Python tests."""
from pathlib import Path
from typing import Dict, Sequence

import numpy as np

from rtx import driver

ROOT = Path(__file__).resolve().parents[2]
TORCH_SKIP_REASON = ("PyTorch is not installed for this Python (Debian: apt-get install python3-torch, "
                     "then run /usr/bin/python3 -m pytest); the PyTorch tests are skipped")


def random_batch(program, seed: int = 0) -> Dict[str, np.ndarray]:
    """Seeded inputs for every input of `program`'s step: integers in [0, 10)
    for integer inputs (token ids, labels), standard normals otherwise."""
    rng = np.random.default_rng(seed)
    batch = {}
    for spec in program.inputs:
        if spec.dtype.startswith("i"):
            batch[spec.name] = rng.integers(0, 10, spec.shape).astype(np.int32)
        else:
            batch[spec.name] = rng.standard_normal(spec.shape).astype(np.float32)
    return batch


def rel_err(actual, expected) -> float:
    """‖actual − expected‖ / ‖expected‖ (design.md §5); NaN never passes."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    if not np.all(np.isfinite(actual)):
        return float("inf")
    norm = np.linalg.norm(expected)
    return float(np.linalg.norm(actual - expected) / (norm if norm > 0 else 1.0))


def run_text(text: str, tmp: Path, passes: Sequence[str] = (), **kwargs) -> driver.RunResult:
    """Runs rtx-opt (with `passes`) then rtx-run on MLIR text."""
    program = tmp / "program.mlir"
    if passes:
        driver.opt(text, list(passes), output=program)
    else:
        program.write_text(text)
    return driver.run(program, **kwargs)


def save_arrays(directory: Path, arrays: Dict[str, np.ndarray]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, array in arrays.items():
        np.save(directory / f"{name}.npy", array)
    return directory
