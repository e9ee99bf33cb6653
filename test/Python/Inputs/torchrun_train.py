"""A training script as users write it for torchrun: every process runs it,
rtx.init reads torchrun's variables, and Program.train trains this
process's rank. Writes OUT/rankN.json: the launcher, rank, losses and the
final parameters.   torchrun --nproc_per_node 2 torchrun_train.py OUT"""
import json
import sys
from pathlib import Path

import rtx
from rtx import models
from rtx.config import ParallelConfig
from util import random_batch

out = Path(sys.argv[1])
group = rtx.init("cpu")
program = rtx.compile(models.mlp(), group=group, parallel=ParallelConfig(dp=group.world_size),
                      optimizer=rtx.AdamW(lr=1e-2))
batch = random_batch(program)
first = program.train(batch, steps=3)
second = program.train(batch, steps=2)       # continues the run
(out / f"rank{group.rank}.json").write_text(json.dumps({
    "launcher": group.launcher, "rank": group.rank, "world_size": group.world_size,
    "losses": first.losses + second.losses,
    "params": {name: value.tolist() for name, value in second.params.items()}}))
