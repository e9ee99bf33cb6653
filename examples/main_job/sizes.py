"""The job's model and run, sized for the machine it runs on.

A GPT (nanoGPT's module) whose step takes a fraction of a second on the
devices present, so that a few hundred steps fit in minutes: on CPUs the
global batch grows with the ranks (8 sequences each) and the width with the
cores; on GPUs a GPT-2-like model of 8 layers. `small` is the suite's
end-to-end test: the same job in well under a minute."""
from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class JobSize:
    vocab: int           # the BPE's vocabulary
    n_layer: int
    n_head: int
    n_embd: int
    block_size: int      # tokens per sequence
    batch: int           # sequences per global step
    steps: int
    lr: float
    warmup: int          # steps of linear warm-up, then cosine down to lr / 10
    eval_every: int      # steps between held-out evaluations
    eval_batches: int
    checkpoint_every: int

    @property
    def kill_after(self) -> int:
        """The step after which a rank is killed: a little after the middle
        checkpoint, so that the job has both a checkpoint and steps after it."""
        return (self.steps // 2 // self.checkpoint_every) * self.checkpoint_every + self.checkpoint_every // 2

    @property
    def trace_steps(self) -> str:
        return f"{self.warmup + 2}:{self.warmup + 4}"

    def describe(self) -> str:
        return (f"GPT {self.n_layer} layers x {self.n_embd} wide, {self.n_head} heads, "
                f"{self.block_size} tokens per sequence, vocabulary {self.vocab}; "
                f"{self.batch} sequences per step, {self.steps} steps")


def for_cpu(ranks: int, cores: int) -> JobSize:
    width = 128 if cores <= 4 else 192 if cores <= 16 else 256
    return JobSize(vocab=1024, n_layer=4, n_head=4, n_embd=width, block_size=64,
                   batch=8 * ranks, steps=500, lr=3e-3, warmup=40, eval_every=50,
                   eval_batches=4, checkpoint_every=100)


def for_gpu(gpus: int) -> JobSize:
    return JobSize(vocab=8192, n_layer=8, n_head=8, n_embd=512, block_size=256,
                   batch=32 * gpus, steps=1000, lr=1e-3, warmup=100, eval_every=100,
                   eval_batches=8, checkpoint_every=200)


def small(ranks: int) -> JobSize:
    return JobSize(vocab=512, n_layer=2, n_head=2, n_embd=64, block_size=32,
                   batch=8 * ranks, steps=300, lr=5e-3, warmup=30, eval_every=50,
                   eval_batches=4, checkpoint_every=50)


def with_steps(size: JobSize, steps: int) -> JobSize:
    """Another length of run: evaluations and checkpoints keep their count."""
    scale = steps / size.steps
    return replace(size, steps=steps, warmup=max(1, round(size.warmup * scale)),
                   eval_every=max(1, round(size.eval_every * scale)),
                   checkpoint_every=max(2, round(size.checkpoint_every * scale)))
