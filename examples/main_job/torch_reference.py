"""The same training in PyTorch, as the independent reference: the module
from the same initial weights, on the same batches of the same token file,
with torch.optim.AdamW, the same gradient clipping and the same learning
rate per step (the warm-up and cosine written out here again, as a PyTorch
user writes it for LambdaLR), in eager mode in this process."""
from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Dict

import torch

from textdata import read_llmc_bin


def lr_at(step: int, lr: float, warmup: int, decay: int, min_lr: float) -> float:
    """nanoGPT's get_lr at the 1-based step (rtx's convention, docs/training.md)."""
    if step <= warmup:
        return lr * step / warmup
    if step > decay:
        return min_lr
    ratio = (step - warmup) / (decay - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)


def train(module: torch.nn.Module, data: Path, size, *, threads: int) -> Dict[int, float]:
    """Each step's loss. Batch row b of step t is the window at
    ((t - 1) * batch + b) * block_size of the file, modulo its length, and
    its labels the same window shifted by one (the programs' --data rule)."""
    torch.set_num_threads(threads)
    model = copy.deepcopy(module).train()
    tokens = torch.from_numpy(read_llmc_bin(data))
    optimizer = torch.optim.AdamW(model.parameters(), lr=size.lr, betas=(0.9, 0.95), weight_decay=0.1)
    T, B = size.block_size, size.batch
    losses = {}
    for step in range(1, size.steps + 1):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, size.lr, size.warmup, size.steps, size.lr / 10)
        starts = [((step - 1) * B + b) * T % len(tokens) for b in range(B)]
        x = torch.stack([window(tokens, s, T) for s in starts])
        y = torch.stack([window(tokens, s + 1, T) for s in starts])
        _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses[step] = loss.item()
    return losses


def window(tokens: torch.Tensor, start: int, length: int) -> torch.Tensor:
    index = (torch.arange(length) + start) % len(tokens)
    return tokens[index]
