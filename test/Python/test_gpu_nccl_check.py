"""bench/gpu/nccl_in_job.py, the NCCL in-job recovery check a GPU session
runs in its one short device call, keeps working: `prepare` then `run` with
the CUDA program built for the host emulation of the GPU runtime (its
process groups are Gloo's there, so the flow is checked, not NCCL)."""
import subprocess
import sys
from pathlib import Path

from rtx import driver
from util import ROOT


def test_prepare_then_run_with_the_emulated_gpu(tmp_path):
    build = str(Path(driver.find_tool("rtx-translate")).resolve().parents[1])
    out = tmp_path / "prepared"
    script = str(ROOT / "bench" / "gpu" / "nccl_in_job.py")
    prepared = subprocess.run([sys.executable, script, "prepare", "--emulate", "--build", build, "--out", str(out)],
                              capture_output=True, text=True)
    assert prepared.returncode == 0, prepared.stdout[-2000:] + prepared.stderr[-2000:]
    done = subprocess.run([sys.executable, script, "run", "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = (out / "result.txt").read_text().splitlines()
    assert [line.split(":")[0] for line in result] == [
        "PASS nccl-vs-cpu", "PASS uninterrupted", "PASS deterministic", "PASS in-job-kill", "PASS in-job-stop",
        "PASS in-job-kill-again", "PASS in-job-stop-again"], result
