"""The main job end to end, smaller (scripts/run.sh --small without the setup
it runs first): the fortunes text tokenized by a BPE, a GPT planned with
parallel="auto" for 2 CPU ranks, trained by two processes under rtx-launch
with a learning-rate schedule, held-out evaluation and checkpoints, rank 1
killed partway and replaced in the job, the same job again without the kill
(traced), the final states compared, the loss plot, the verdict and text
sampled with PyTorch. Needs PyTorch 2's environment (tokenizers): it runs in
scripts/test.sh's PyTorch 2 stage."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "examples" / "main_job" / "job.py"

pytest.importorskip("tokenizers")
pytest.importorskip("torch")
if not Path("/usr/share/games/fortunes").is_dir():
    pytest.skip("Debian's fortunes package is not installed (scripts/setup.sh installs it)",
                allow_module_level=True)


def test_the_main_job(tmp_path):
    """One run of the job (half a minute), every claim checked on it: one
    test, not one per claim, so that pytest-xdist's workers do not each run
    the job again."""
    proc = subprocess.run([sys.executable, str(JOB), "--small", "--ranks", "2", "--work", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    job = (proc, tmp_path)
    check_it_ends_well(job)
    check_it_learned_below_the_unigram_entropy(job)
    check_a_killed_rank_was_replaced_and_the_state_is_bit_for_bit(job)
    check_it_trains_as_pytorch_does(job)
    check_it_explains_itself(job)


def check_it_ends_well(job):
    proc, work = job
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    out = proc.stdout
    # Every stage printed with its time.
    for stage in ("data", "plan", "build", "train", "reference", "pytorch", "explain", "sample"):
        assert re.search(rf"^   \({stage}: [0-9.]+ s\)$", out, re.M), stage
    # The planner chose the plan and said why the runners-up lost.
    assert "chosen: dp=" in out and "runner-up 1:" in out


def check_it_learned_below_the_unigram_entropy(job):
    proc, work = job
    match = re.search(r"held-out loss ([0-9.]+) nats/token after \d+ steps; unigram entropy of the text "
                      r"([0-9.]+)", proc.stdout)
    assert match, proc.stdout[-2000:]
    held_out, entropy = float(match.group(1)), float(match.group(2))
    assert held_out < entropy - 0.2
    # The held-out losses the summary reads are the program's own lines.
    lines = [json.loads(l) for l in (work / "run" / "metrics.jsonl").read_text().splitlines()]
    evals = [l for l in lines if "eval_loss" in l]
    assert len(evals) >= 3 and abs(evals[-1]["eval_loss"] - held_out) < 5e-4


def check_a_killed_rank_was_replaced_and_the_state_is_bit_for_bit(job):
    proc, work = job
    out = proc.stdout
    assert re.search(r">>> killing rank 1 \(pid \d+, SIGKILL\) after step \d+", out)
    assert "rank 1 was killed by signal 9; in-job recovery" in out
    assert re.search(r"recovery: rank 1 killed after step \d+; .*equals the uninterrupted run's bit for bit",
                     out)
    # Distributed for real, and healed in the job: rank 0's process lived
    # through it (one pid), rank 1 was two processes (the killed one and its
    # replacement), all of them different.
    pids = work / "run" / "pids"
    rank0 = (pids / "rank-0.0").read_text().split()
    rank1 = (pids / "rank-1.0").read_text().split()
    assert len(rank0) == 1 and len(rank1) == 2 and len(set(rank0 + rank1)) == 3, (rank0, rank1)


def check_it_trains_as_pytorch_does(job):
    proc, work = job
    # The independent reference: PyTorch's AdamW on the same module, weights
    # and batches; the first steps agree within the design's tolerance, and
    # the exported weights give the program's held-out loss in PyTorch.
    match = re.search(r"the first 5 steps within ([0-9.e+-]+) \(design tolerance 1e-4\)", proc.stdout)
    assert match and float(match.group(1)) <= 1e-4, proc.stdout[-3000:]
    match = re.search(r"PyTorch's held-out loss with the exported weights: ([0-9.]+) \(the program's after "
                      r"step \d+: ([0-9.]+)\)", proc.stdout)
    assert match and abs(float(match.group(1)) - float(match.group(2))) <= 1e-4 * float(match.group(2))


def check_it_explains_itself(job):
    proc, work = job
    out = proc.stdout
    assert (work / "loss.png").stat().st_size > 10_000
    assert (work / "plan.png").stat().st_size > 10_000
    assert re.search(r"verdict: \S+", out)
    assert (work / "reference" / "trace" / "trace.json").is_file()
    assert re.search(r"checkpoints/step-\d+ +\d+ files", out)
    chunks = out.split("== summary")[0].split("   --- sample ")[1:]
    samples = [chunk.split("\n", 1)[1].split("   (sample:")[0] for chunk in chunks]
    assert len(samples) == 3 and all(s.strip() for s in samples), samples
