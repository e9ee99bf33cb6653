"""AdamW's learning-rate schedule (warm-up, then cosine decay to min_lr),
compiled into the step, equals torch.optim.AdamW driven by a
torch.optim.lr_scheduler.LambdaLR with the same schedule, step by step
(losses and final parameters within design.md's tolerance after a few
steps, 1e-4), through a step past decay_steps. The reference writes the
formula itself: it shares no code with rtx's (rtxrt/kernels/LrSchedule.h)."""
import math

import pytest

from util import TORCH_SKIP_REASON, rel_err

torch = pytest.importorskip("torch", reason=TORCH_SKIP_REASON)

import torch_models  # noqa: E402

import rtx  # noqa: E402
from rtx.config import ConfigError  # noqa: E402

TOL = 1e-4
LR, MIN_LR, WARMUP, DECAY, STEPS = 1e-2, 1e-3, 2, 5, 7


def nanogpt_lr(step: int) -> float:
    """The rate of 1-based step `step`: nanoGPT's get_lr(it) at it = step
    (linear warm-up to LR at step WARMUP, cosine to MIN_LR at step DECAY)."""
    if step <= WARMUP:
        return LR * step / WARMUP
    if step > DECAY:
        return MIN_LR
    ratio = (step - WARMUP) / (DECAY - WARMUP)
    return MIN_LR + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (LR - MIN_LR)


def torch_run(model, batch, schedule: bool):
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.1)
    # LambdaLR's epoch counts the steps already taken (0 for the first).
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda done: nanogpt_lr(done + 1) / LR if schedule else 1.0)
    losses, rates = [], []
    for _ in range(STEPS):
        optimizer.zero_grad()
        out = model(*batch)
        loss = out[1] if isinstance(out, tuple) else out
        loss.backward()
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    return losses, rates


def test_schedule_matches_pytorch_lambdalr():
    model, batch = torch_models.mlp()
    ours = rtx.AdamW(lr=LR, weight_decay=0.1, warmup_steps=WARMUP, decay_steps=DECAY, min_lr=MIN_LR)
    program = rtx.compile(model, batch, optimizer=ours)
    names = [s.name for s in program.model_inputs]
    result = program.train(dict(zip(names, batch)), steps=STEPS)
    expected, rates = torch_run(model, batch, schedule=True)
    # The reference does schedule: warm-up, the decay, and min_lr past it.
    assert rates[0] == pytest.approx(LR / 2) and rates[WARMUP - 1] == pytest.approx(LR)
    assert rates[DECAY - 1] == pytest.approx(MIN_LR) and rates[-1] == pytest.approx(MIN_LR)
    assert rel_err(result.losses, expected) <= TOL, (result.losses, expected)
    for n, p in model.named_parameters():
        assert rel_err(result.params[n], p.detach().numpy()) <= TOL, n
    # A constant rate ends elsewhere: the comparison above can fail.
    constant, _ = torch_run(torch_models.mlp()[0], batch, schedule=False)
    assert rel_err(result.losses, constant) > 100 * TOL


@pytest.mark.parametrize("kwargs, message", [
    (dict(warmup_steps=-1), "optimizer.warmup_steps must be an integer >= 0, got -1"),
    (dict(warmup_steps=1.5), "optimizer.warmup_steps must be an integer >= 0, got 1.5"),
    (dict(warmup_steps=10, decay_steps=10),
     "optimizer.decay_steps=10 must be 0 (no decay) or greater than warmup_steps=10"),
    (dict(decay_steps=10, min_lr=0.1), "optimizer.min_lr=0.1 must not exceed lr=0.001"),
    (dict(decay_steps=10, min_lr=-1.0), "optimizer.min_lr must be a number >= 0.0, got -1.0"),
    (dict(warmup_steps=10, min_lr=1e-4), "optimizer.min_lr=0.0001 needs decay_steps"),
])
def test_invalid_schedules_are_refused(kwargs, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        rtx.AdamW(**kwargs)


def test_pass_options_carry_the_schedule_only_when_set():
    assert "warmup-steps" not in rtx.AdamW().pass_options()
    options = rtx.AdamW(lr=6e-4, warmup_steps=100, decay_steps=5000, min_lr=6e-5).pass_options()
    assert options.endswith(" warmup-steps=100 decay-steps=5000 min-lr=6e-05"), options


def test_cli_takes_the_schedule(tmp_path):
    """python -m rtx opt --train: the schedule reaches every update; SGD
    refuses it."""
    import subprocess
    import sys
    from util import ROOT
    out = tmp_path / "train.mlir"
    model = str(ROOT / "examples" / "mlp.mlir")
    done = subprocess.run([sys.executable, "-m", "rtx", "opt", model, "--train", "--warmup-steps", "2",
                           "--decay-steps", "5", "--min-lr", "1e-4", "-o", str(out)],
                          capture_output=True, text=True, cwd=ROOT / "python")
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text.count("rtx.adamw_update") == text.count("warmup_steps 2 decay_steps 5 min_lr 1.000000e-04") > 0
    bad = subprocess.run([sys.executable, "-m", "rtx", "opt", model, "--train", "--optimizer", "sgd",
                          "--warmup-steps", "2"], capture_output=True, text=True, cwd=ROOT / "python")
    assert bad.returncode != 0 and "--optimizer sgd has no step count" in bad.stderr
