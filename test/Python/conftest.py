"""pytest configuration for rtx's Python tests: the package (python/) and
the examples (examples/) are importable from the source tree, and the tools
are found by rtx.driver (build/bin, $RTX_BUILD_DIR/bin, or PATH).

    /usr/bin/python3 -m pytest -q test/Python
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for path in (ROOT / "python", ROOT / "examples", Path(__file__).resolve().parent):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
