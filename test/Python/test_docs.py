"""The Python examples of docs/python.md run as written."""
import os
import re
import subprocess
import sys

import pytest

from util import ROOT, TORCH_SKIP_REASON

BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "python.md").read_text(), re.S)
RUNNABLE = [b for b in BLOCKS if b.lstrip().startswith(("import rtx", "from rtx"))]


def test_the_page_has_its_examples():
    assert len(RUNNABLE) == 7 and any("rtx.compile" in b for b in RUNNABLE)


@pytest.mark.parametrize("index", range(len(RUNNABLE)))
def test_example_runs(index, tmp_path):
    code = RUNNABLE[index].replace("/tmp/", f"{tmp_path}/")
    if "torch_models" in code:
        pytest.importorskip("torch", reason=TORCH_SKIP_REASON)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "python"), str(ROOT / "examples")]))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    if "program.train" in code or "native.train" in code:
        losses = [float(x) for x in re.findall(r"[\d.]+(?:e[-+]\d+)?", done.stdout)]
        assert len(losses) == 20 and losses[-1] < 0.2 * losses[0], done.stdout
    if "RtxToolWarning" in code or "caught" in code:       # the tools' warnings, as the page shows them
        assert done.stdout.count("stays replicated") == 2 and done.stdout.startswith("rtx-opt <stdin>:"), \
            done.stdout
