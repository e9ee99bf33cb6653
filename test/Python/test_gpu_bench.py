"""bench/gpu/gpt2_cuda_vs_cpu.py, the script a GPU session runs in its one
short device call, keeps working: `prepare` then `run` on a tiny GPT-2 with
the CUDA program built for the host emulation of the GPU runtime."""
import json
import subprocess
import sys
from pathlib import Path

from rtx import driver
from util import ROOT


def test_prepare_then_run_with_the_emulated_gpu(tmp_path):
    build = Path(driver.find_tool("rtx-translate")).resolve().parents[1]
    out = tmp_path / "prepared"
    model = ["--layers", "1", "--width", "32", "--heads", "2", "--seq", "8", "--batch", "2", "--vocab", "37",
             "--steps", "3", "--warmup", "1"]
    script = str(ROOT / "bench" / "gpu" / "gpt2_cuda_vs_cpu.py")
    prepared = subprocess.run([sys.executable, script, "prepare", "--emulate", "--build", str(build), "--out",
                               str(out), *model], capture_output=True, text=True)
    assert prepared.returncode == 0, prepared.stdout[-2000:] + prepared.stderr[-2000:]
    bench = json.loads((out / "bench.json").read_text())
    assert len(bench["cpu_losses_here"]) == 3 and bench["emulated"]
    done = subprocess.run([sys.executable, script, "run", "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = (out / "result.txt").read_text()
    assert "PASS" in result and "tokens/s on this machine" in result
