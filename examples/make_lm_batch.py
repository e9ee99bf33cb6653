"""Writes a next-token batch for a language model: tokens.npy [B, S] and
labels.npy [B, S] with labels[b, t] = tokens[b, t + 1] (one extra token at
the end), as nanoGPT's get_batch does."""
import sys

import numpy as np

out, batch, seq, vocab = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(0)
data = rng.integers(0, vocab, (batch, seq + 1)).astype(np.int32)
np.save(f"{out}/tokens.npy", data[:, :-1])
np.save(f"{out}/labels.npy", data[:, 1:])
