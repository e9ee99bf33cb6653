"""Text from the trained model: its parameters, saved by the training
program (`--save-state`), loaded into the PyTorch module it was compiled
from, and sampled with PyTorch (nanoGPT's sampling: temperature and top-k)."""
from __future__ import annotations

from pathlib import Path
from typing import List

import torch
import torch.nn.functional as F

from rtx import results


def load_trained(program, module: torch.nn.Module, state_dir: Path) -> torch.nn.Module:
    """The module with the parameters of a `--save-state` directory: the
    program maps its names and layouts back to the module's (state_dict())."""
    program.params = results.params_of(results.read_state(state_dir))
    module.load_state_dict({**module.state_dict(), **program.state_dict()}, strict=True)
    return module.eval()


@torch.no_grad()
def generate(module: torch.nn.Module, prompt: List[int], tokens: int, block_size: int,
             temperature: float = 0.8, top_k: int = 40) -> List[int]:
    idx = torch.tensor([prompt], dtype=torch.long)
    for _ in range(tokens):
        logits, _ = module(idx[:, -block_size:])
        logits = logits[:, -1, :] / temperature
        kth = torch.topk(logits, min(top_k, logits.size(-1))).values[:, [-1]]
        logits[logits < kth] = -float("inf")
        idx = torch.cat([idx, torch.multinomial(F.softmax(logits, dim=-1), 1)], dim=1)
    return idx[0, len(prompt):].tolist()


def samples(module: torch.nn.Module, tokenizer_path: Path, block_size: int, count: int = 3,
            tokens: int = 48, seed: int = 1337) -> List[str]:
    """`count` samples started from the end-of-text token: the longest cookie
    of each (the model writes the end-of-text token between cookies)."""
    from tokenizers import Tokenizer
    from textdata import END_OF_TEXT
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    eot = tokenizer.token_to_id(END_OF_TEXT)
    torch.manual_seed(seed)
    texts = []
    for _ in range(count):
        ids = generate(module, [eot], tokens, block_size)
        # The model ends cookies too: keep the longest one it wrote.
        pieces, piece = [], []
        for token in ids + [eot]:
            if token == eot:
                pieces.append(piece)
                piece = []
            else:
                piece.append(token)
        texts.append(tokenizer.decode(max(pieces, key=len)).strip())
    return texts


@torch.no_grad()
def held_out_loss(module: torch.nn.Module, held_out: Path, batch: int, block_size: int,
                  batches: int) -> float:
    """PyTorch's loss of the module on the held-out batches the program
    evaluates (--eval-data: row b of batch k is the window at (k * batch + b)
    * block_size, the labels shifted by one): the exported weights checked
    against the program's own last held-out loss."""
    from textdata import read_llmc_bin
    tokens = torch.from_numpy(read_llmc_bin(held_out))
    losses = []
    for k in range(batches):
        starts = [(k * batch + b) * block_size for b in range(batch)]
        x = torch.stack([tokens[s:s + block_size] for s in starts])
        y = torch.stack([tokens[s + 1:s + block_size + 1] for s in starts])
        losses.append(module(x, y)[1].item())
    return sum(losses) / len(losses)
