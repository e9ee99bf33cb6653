"""The package's structure: no module of python/rtx imports another that
imports it back (directly or through others, at the top or inside a
function), and each module imports on its own in a fresh interpreter,
needing only the modules the import graph says."""
import ast
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Set

import pytest

from util import ROOT, TORCH_SKIP_REASON

PACKAGE = ROOT / "python" / "rtx"
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py"))
TORCH_MODULES = {"importer", "torch_export", "torch_fusion", "torch_graph", "torch_ops"}


def imports_of(path: Path) -> Set[str]:
    """The rtx modules that `path` imports anywhere in its text: at the top,
    inside functions, under `if TYPE_CHECKING:`. `from . import X` counts as
    X when X is a module, else as the package itself ("__init__")."""
    found: Set[str] = set()

    def package_names(names: List[ast.alias]) -> None:
        for alias in names:
            found.add(alias.name if alias.name in MODULES else "__init__")

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level == 1 or (node.level == 0 and (module == "rtx" or module.startswith("rtx."))):
                inner = module[len("rtx"):].lstrip(".") if node.level == 0 else module
                if inner:
                    found.add(inner.split(".")[0])
                else:
                    package_names(node.names)
            elif node.level > 1:
                raise AssertionError(f"{path.name}: relative import beyond the package: {ast.dump(node)}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "rtx":
                    found.add("__init__")
                elif alias.name.startswith("rtx."):
                    found.add(alias.name.split(".")[1])
    return found


def import_graph() -> Dict[str, Set[str]]:
    return {name: imports_of(PACKAGE / f"{name}.py") for name in MODULES}


def find_cycle(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
    """A cycle of `graph` as a path (first == last), or None."""
    state: Dict[str, int] = {}            # 1: on the current path, 2: done
    path: List[str] = []

    def visit(node: str) -> Optional[List[str]]:
        state[node] = 1
        path.append(node)
        for succ in sorted(graph.get(node, ())):
            if state.get(succ) == 1:
                return path[path.index(succ):] + [succ]
            if succ not in state:
                cycle = visit(succ)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def closure(graph: Dict[str, Set[str]], start: str) -> Set[str]:
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return seen


def test_the_import_graph_reads_every_kind_of_import(tmp_path):
    source = tmp_path / "example.py"
    source.write_text("from __future__ import annotations\nimport os\nfrom typing import TYPE_CHECKING\n"
                      "from . import driver, native\nfrom .config import ConfigError\n"
                      "from rtx.batch import InputSpec\nimport rtx.results\nfrom rtx import tools\n"
                      "from . import ToolError\n"
                      "if TYPE_CHECKING:\n    from .program import Program\n"
                      "def f():\n    from .importer import import_module\n")
    assert imports_of(source) == {"driver", "native", "config", "batch", "results", "tools", "__init__",
                                  "program", "importer"}


def test_cycle_finder_finds_a_cycle_and_only_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_module_of_rtx_imports_itself_through_others():
    graph = import_graph()
    assert {"native", "program", "results", "batch", "tools", "driver"} <= set(graph)
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)
    # The package imports its modules; none imports the package back.
    assert not [name for name, deps in graph.items() if "__init__" in deps], graph


_IMPORT_ALONE = """
import importlib, sys, types
package = types.ModuleType("rtx")          # the package without running __init__.py
package.__path__ = [{package!r}]
sys.modules["rtx"] = package
importlib.import_module("rtx.{name}")
print(" ".join(sorted(m[len("rtx."):] for m in sys.modules if m.startswith("rtx."))))
print("torch" in sys.modules, "numpy" in sys.modules)
"""


@pytest.mark.parametrize("name", MODULES)
def test_each_module_imports_alone_in_a_fresh_interpreter(name):
    if name in TORCH_MODULES:
        pytest.importorskip("torch", reason=TORCH_SKIP_REASON)
    if name == "__init__":
        code = "import sys, rtx\nprint(' '.join(sorted(m[4:] for m in sys.modules if m.startswith('rtx.'))))\n" \
               "print('torch' in sys.modules, 'numpy' in sys.modules)"
    else:
        code = _IMPORT_ALONE.format(package=str(PACKAGE), name=name)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    modules_line, heavy_line = done.stdout.splitlines()
    loaded = set(modules_line.split())
    # What ran at import is within what the graph says (nothing it misses).
    assert loaded <= closure(import_graph(), name) - {"__init__"}, loaded
    if name not in TORCH_MODULES:
        assert heavy_line == "False False", f"rtx.{name} imports torch or numpy at import time: {heavy_line}"
