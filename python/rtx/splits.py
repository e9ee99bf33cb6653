"""What the partitioned step does to each parameter: the split table.

For every parameter of the model, in the user's names (the parts that
rtx-split-fused-projections makes of a fused q | k | v projection are shown
as their user tensor), its global shape and, for each mesh axis, what the
axis does to it: "dim D / N" (dimension D split into N blocks, one per
rank along the axis), "parts by head" (a fused projection stored as
blocks, each split by head), or "whole" (every rank along the axis holds
all of it). ZeRO shards of flat buffers count as splits of the axis they
shard over.

    table = SplitTable.from_description(driver.describe("train.mlir"))
    print(table)              # also Program.splits

The description is rtx-translate --emit=description's JSON.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Tuple

__all__ = ["ParamSplit", "SplitTable", "split_table"]

_SHARDING = re.compile(r"#rtx\.sharding<@[\w.]+,\s*(\[.*\])\s*(?:,\s*partial.*)?>")
_TYPE = re.compile(r"tensor<((?:\d+x)*)\w+>")


@dataclass
class ParamSplit:
    """One user parameter: its global shape and, per mesh axis, what the
    axis does to it ("dim D / N", "parts by head" or "whole")."""
    name: str
    shape: Tuple[int, ...]
    axes: Dict[str, str] = field(default_factory=dict)
    parts: int = 1

    def split_on(self, axis: str) -> bool:
        return self.axes.get(axis, "whole") != "whole"


def _dims(sharding: str) -> List[List[str]]:
    """The axes of each dimension of an #rtx.sharding (empty: replicated)."""
    m = _SHARDING.match(sharding or "")
    return json.loads(m.group(1)) if m else []


def _local_shape(type_: str) -> Tuple[int, ...]:
    m = _TYPE.match(type_ or "")
    return tuple(int(d) for d in m.group(1).split("x") if d) if m else ()


def _parameters(arguments: Iterable[Mapping]) -> Iterable[Mapping]:
    """The parameter arguments, flat buffers' members included."""
    for argument in arguments:
        if argument.get("role") == "parameter":
            yield argument
        for member in argument.get("members", []) or []:
            if member.get("role") == "parameter":
                yield member


class SplitTable:
    """The split table of a partitioned step (see the module's docstring)."""

    def __init__(self, axes: List[Tuple[str, int]], params: List[ParamSplit]) -> None:
        self.axes = axes
        self.params = params

    def __getitem__(self, name: str) -> ParamSplit:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def whole_on(self, axis: str) -> List[str]:
        """The parameters `axis` leaves whole."""
        return [p.name for p in self.params if not p.split_on(axis)]

    @classmethod
    def from_description(cls, description: Mapping) -> "SplitTable":
        mesh = description.get("mesh") or {}
        axes = [(a["name"], int(a["size"])) for a in mesh.get("axes", [])]
        sizes = dict(axes)
        params: Dict[str, ParamSplit] = {}
        seen = set()        # a weight two pipeline stages tie appears in both
        for stage in description.get("stages", []):
            for arg in _parameters(stage.get("arguments", [])):
                if arg["name"] in seen:
                    continue
                seen.add(arg["name"])
                dims = _dims(arg.get("sharding", ""))
                local = _local_shape(arg.get("type", ""))
                shape = tuple(d * _product(sizes, dims[i] if i < len(dims) else []) for i, d in enumerate(local))
                part = arg.get("part_of")
                name = part["name"] if part else arg["name"]
                if name not in params:
                    params[name] = ParamSplit(name, shape, {axis: "whole" for axis, _ in axes}, parts=0)
                split = params[name]
                if part and split.parts:    # the parts stack along part_of's dimension
                    split.shape = tuple(s + shape[i] if i == part["dim"] else s for i, s in enumerate(split.shape))
                split.parts += 1
                for i, dim_axes in enumerate(dims):
                    for axis in dim_axes:
                        split.axes[axis] = ("parts, " if part else "") + f"dim {i} / {sizes.get(axis, '?')}"
        return cls(axes, list(params.values()))

    def __str__(self) -> str:
        header = ["parameter", "shape"] + [f"{a} ({n})" for a, n in self.axes]
        rows = [[p.name, "x".join(str(d) for d in p.shape) or "scalar"]
                + [p.axes.get(a, "whole") + (f" ({p.parts} parts)" if p.parts > 1 and p.split_on(a) else "")
                   for a, _ in self.axes]
                for p in self.params]
        widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
        line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
        split_counts = ", ".join(f"{a}: {sum(p.split_on(a) for p in self.params)} of {len(self.params)} split"
                                 for a, _ in self.axes)
        title = f"what each mesh axis does to each parameter ({split_counts or 'one rank'}):"
        return "\n".join([title, line(header)] + [line(r) for r in rows]) + "\n"


def _product(sizes: Mapping[str, int], axes: Iterable[str]) -> int:
    n = 1
    for a in axes:
        n *= sizes.get(a, 1)
    return n


def split_table(train_ir: str) -> SplitTable:
    """The split table of a partitioned step's IR text (rtx-translate
    --emit=description reads it)."""
    import tempfile
    from pathlib import Path

    from . import driver
    with tempfile.TemporaryDirectory(prefix="rtx-splits-") as tmp:
        path = Path(tmp) / "train.mlir"
        path.write_text(train_ir)
        return SplitTable.from_description(driver.describe(path))
