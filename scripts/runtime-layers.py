#!/usr/bin/env python3
"""The runtime's layers, read from the build and checked against the code.

runtime/CMakeLists.txt declares each layer once: `rtxrt_layer(NAME DEPENDS
A B SOURCES ...)`. This script reads those declarations, gives every file
under runtime/include/rtxrt/LAYER/ and runtime/lib/LAYER/ its layer, walks
each file's `#include "..."` lines, and fails when a file includes a header
of a layer that its own layer does not depend on (directly or through
others): dependencies point down only. It also fails on a cycle in the
declarations, and on a source file outside every layer's folder.

  scripts/runtime-layers.py [--root DIR] [--plot PNG] [--dot]

--plot draws the layer graph (docs/runtime.md's picture); --dot prints it
in Graphviz's language. Exit status 1 names each wrong include.
"""

import argparse
import re
import sys
from pathlib import Path

# Folders of runtime/lib that belong to a layer of another name: the GPU
# runtime and the element formulas it shares with the CPU kernels are the
# kernels' (they build into their own libraries, rtxrt_gpu_*, on top of
# the layers).
FOLDER_LAYER = {"gpu": "gpu", "common": "kernels"}
# Targets that live in another layer's folder (lib/observe/Prometheus.cpp
# is the prometheus target: the endpoint links httplib, the traces do not).
FILE_LAYER = {"lib/observe/Prometheus.cpp": "prometheus",
              "lib/observe/Prometheus.h": "prometheus"}
# The GPU runtime sits above the program's device interface.
GPU_DEPENDS = ["core", "kernels", "comm", "device", "program"]

LAYER_CALL = re.compile(r"rtxrt_layer\((\w+)(.*?)\)", re.S)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_layers(cmake_text):
    """{layer: [layers it depends on]} from rtxrt_layer(...) calls."""
    layers = {}
    for name, body in LAYER_CALL.findall(cmake_text):
        words = body.split()
        deps = []
        if "DEPENDS" in words:
            for word in words[words.index("DEPENDS") + 1:]:
                if word.isupper():
                    break
                deps.append(word)
        layers[name] = deps
    # The GPU runtime's own libraries (lib/gpu/*/CMakeLists.txt).
    layers["gpu"] = GPU_DEPENDS
    return layers


def closure(layers):
    """{layer: every layer below it}; raises on a cycle."""
    below = {}

    def visit(name, path):
        if name in path:
            raise SystemExit("runtime-layers: a cycle: " + " -> ".join(path + [name]))
        if name not in below:
            found = set()
            for dep in layers.get(name, []):
                found |= {dep} | visit(dep, path + [name])
            below[name] = found
        return below[name]

    for name in layers:
        visit(name, [])
    return below


def layer_of(path, runtime):
    """The layer of a file under runtime/, or None."""
    rel = path.relative_to(runtime).as_posix()
    if rel in FILE_LAYER:
        return FILE_LAYER[rel]
    parts = rel.split("/")
    if parts[0] == "include" and len(parts) > 3 and parts[1] == "rtxrt":
        return parts[2]
    if parts[0] == "lib" and len(parts) > 2:
        return FOLDER_LAYER.get(parts[1], parts[1])
    return None


def resolve(include, source, runtime):
    """The file an include names: public (rtxrt/...), beside the source, or
    relative to runtime/lib (a layer's private header)."""
    for base in (runtime / "include", source.parent, runtime / "lib"):
        candidate = (base / include).resolve()
        if candidate.is_file() and runtime in candidate.parents:
            return candidate
    return None


def check(runtime, layers):
    below = closure(layers)
    errors, edges = [], set()
    files = [p for p in sorted(runtime.rglob("*"))
             if p.suffix in (".h", ".cpp", ".cu", ".def")
             and "build" not in p.relative_to(runtime).parts]
    for source in files:
        own = layer_of(source, runtime)
        if own is None:
            errors.append(f"{source.relative_to(runtime)}: in no layer's folder")
            continue
        if own not in layers:
            errors.append(f"{source.relative_to(runtime)}: layer '{own}' is not "
                          "declared in runtime/CMakeLists.txt")
            continue
        text = source.read_text(errors="replace")
        for match in INCLUDE.finditer(text):
            target = resolve(match.group(1), source, runtime)
            if target is None:
                continue
            theirs = layer_of(target, runtime)
            if theirs is None or theirs == own:
                continue
            edges.add((own, theirs))
            if theirs not in below[own]:
                line = text.count("\n", 0, match.start()) + 1
                errors.append(f"{source.relative_to(runtime)}:{line}: layer '{own}' "
                              f"includes {match.group(1)} of layer '{theirs}', which "
                              f"'{own}' does not depend on (it depends on: "
                              f"{', '.join(sorted(below[own])) or 'nothing'})")
    return errors, edges, len(files)


def order(layers):
    """Layers bottom first (each after everything below it)."""
    below = closure(layers)
    return sorted(layers, key=lambda n: (len(below[n]), n))


def dot(layers):
    lines = ["digraph runtime {", "  rankdir=BT;"]
    for name in order(layers):
        for dep in layers[name]:
            lines.append(f"  {name} -> {dep};")
    lines.append("}")
    return "\n".join(lines)


def plot(layers, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    below = closure(layers)
    # Each layer's row: one above the highest layer it depends on.
    row = {}
    for name in order(layers):
        row[name] = 1 + max((row[d] for d in layers[name]), default=-1)
    rows = {}
    for name in order(layers):
        rows.setdefault(row[name], []).append(name)
    pos = {}
    for r, names in rows.items():
        for i, name in enumerate(names):
            pos[name] = ((i + 1) / (len(names) + 1), r)
    fig, ax = plt.subplots(figsize=(8, 1.2 + 1.1 * len(rows)))
    for name in layers:
        # Only the edges that are not implied by others (the picture stays
        # readable; the check uses the whole closure).
        direct = [d for d in layers[name]
                  if not any(d in below[o] for o in layers[name] if o != d)]
        for dep in direct:
            (x0, y0), (x1, y1) = pos[name], pos[dep]
            ax.annotate("", xy=(x1, y1 + 0.18), xytext=(x0, y0 - 0.18),
                        arrowprops=dict(arrowstyle="->", color="#667", lw=1))
    for name, (x, y) in pos.items():
        ax.text(x, y, name, ha="center", va="center", fontsize=11,
                bbox=dict(boxstyle="round,pad=0.4", fc="#e8eef8", ec="#35507a"))
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.6, max(rows) + 0.6)
    ax.axis("off")
    ax.set_title("librtxrt's layers (arrows: depends on), from runtime/CMakeLists.txt")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=Path(__file__).resolve().parent.parent,
                        type=Path, help="the repository (default: this one)")
    parser.add_argument("--plot", type=Path, help="draw the layer graph to PNG")
    parser.add_argument("--dot", action="store_true", help="print the graph as DOT")
    args = parser.parse_args()
    runtime = (args.root / "runtime").resolve()
    cmake = runtime / "CMakeLists.txt"
    if not cmake.is_file():
        sys.exit(f"runtime-layers: no {cmake}")
    layers = read_layers(cmake.read_text())
    if args.dot:
        print(dot(layers))
    if args.plot:
        plot(layers, args.plot)
    errors, edges, count = check(runtime, layers)
    for error in errors:
        print("error: " + error)
    print(f"runtime-layers: {len(layers)} layers, {count} files, {len(edges)} "
          f"layer-to-layer include edges, {len(errors)} wrong")
    print("layers, bottom first: " + " < ".join(order(layers)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
