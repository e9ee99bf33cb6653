"""What the job shows at the end: the loss curves as a PNG, the final state
compared with the uninterrupted run's, and the checkpoints on disk."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np


@dataclass
class Curves:
    train: List[Tuple[int, float]]      # (global step, loss), the newest line per step
    held_out: List[Tuple[int, float]]   # (step, held-out loss)


def read_curves(metrics: Path) -> Curves:
    """Rank 0's metrics lines. A step done again after a recovery is written
    again; its newest line counts (a replay ends in the same loss anyway)."""
    train: Dict[int, float] = {}
    held_out: Dict[int, float] = {}
    for line in metrics.read_text().splitlines():
        record = json.loads(line)
        if "eval_loss" in record:
            held_out[int(record["eval_step"])] = float(record["eval_loss"])
        elif record.get("loss") is not None:
            train[int(record.get("global_step", record["step"]))] = float(record["loss"])
    return Curves(sorted(train.items()), sorted(held_out.items()))


def plot_losses(curves: Curves, unigram: float, path: Path, kill_step: Optional[int]) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.5))
    steps, losses = zip(*curves.train)
    ax.plot(steps, losses, lw=1, color="tab:blue", label="train (each step's batch)")
    if curves.held_out:
        s, h = zip(*curves.held_out)
        ax.plot(s, h, "o-", color="tab:orange", label="held-out")
    ax.axhline(unigram, ls="--", color="gray", label=f"unigram entropy ({unigram:.2f})")
    if kill_step:
        ax.axvline(kill_step, ls=":", color="tab:red", label=f"rank killed after step {kill_step}")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats per token)")
    ax.set_title("GPT on Debian's fortunes: train and held-out loss")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


@dataclass
class StateComparison:
    arrays: int
    bytes: int
    differing: List[str]
    largest_relative: float

    @property
    def bit_for_bit(self) -> bool:
        return not self.differing


def compare_states(a: Path, b: Path) -> StateComparison:
    """Every array of two --save-state directories: parameters, AdamW's
    moments and the step count, compared byte for byte."""
    names_a = sorted(p.name for p in a.glob("*.npy"))
    names_b = sorted(p.name for p in b.glob("*.npy"))
    if names_a != names_b:
        raise ValueError(f"the saved states hold other arrays: {set(names_a) ^ set(names_b)}")
    differing, size, worst = [], 0, 0.0
    for name in names_a:
        x, y = np.load(a / name), np.load(b / name)
        size += x.nbytes
        if x.tobytes() != y.tobytes():
            differing.append(name[:-4])
            scale = float(np.abs(x).max()) or 1.0
            worst = max(worst, float(np.abs(x.astype(np.float64) - y).max()) / scale)
    return StateComparison(len(names_a), size, differing, worst)


def checkpoint_list(directory: Path) -> List[str]:
    """One line per committed checkpoint: its step, files and size."""
    lines = []
    for ck in sorted(directory.glob("step-*")):
        if not ck.is_dir():
            continue
        files = [p for p in ck.rglob("*") if p.is_file()]
        size = sum(p.stat().st_size for p in files)
        ranks = sorted({p.name.split(".")[0] for p in files if p.name.startswith("rank")})
        shards = f", {len(ranks)} rank shard(s)" if ranks else ""
        lines.append(f"{ck}  {len(files)} files, {size / 1e6:.2f} MB{shards}")
    return lines
