"""The main job's data: English prose from a Debian package, split into train
and held-out parts, tokenized by a byte-level BPE trained on the train part.

The text is the fortune-cookie collections of Debian's `fortunes` package
(about 2.5 MB of quotations, jokes, poems and definitions, one cookie between
`%` lines). Every 20th cookie (by a hash of its text, so the split does not
depend on the files' order) is held out. The tokenizer is Hugging Face's
`tokenizers` ByteLevelBPETokenizer (GPT-2's byte-level BPE), trained on the
train part only; cookies are separated by GPT-2's `<|endoftext|>` token. The
token files are llm.c's `.bin` format (a 256-int32 header, magic 20240520,
version 1, uint16 tokens), which the training programs read with `--data`.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import List, Sequence

import numpy as np

FORTUNES = Path("/usr/share/games/fortunes")
# Not prose: pictures drawn with characters, and cookies in other languages.
NOT_PROSE = {"ascii-art", "art", "translate-me"}
END_OF_TEXT = "<|endoftext|>"
HELD_OUT_EVERY = 20


@dataclass
class TokenFiles:
    """What `prepare` made: the token files and the facts the job prints."""
    train: Path
    held_out: Path
    tokenizer: Path
    vocab_size: int
    train_tokens: int
    held_out_tokens: int
    text_bytes: int
    cookies: int
    unigram_entropy: float  # nats per token of the train part's unigram distribution
    unigram_held_out: float  # nats per held-out token under the train part's unigram model


def read_cookies(root: Path = FORTUNES) -> List[str]:
    """Every cookie of the package's collections, in file order."""
    files = sorted(p for p in root.iterdir()
                   if p.is_file() and not p.is_symlink() and p.suffix == "" and p.name not in NOT_PROSE)
    if not files:
        raise FileNotFoundError(f"{root} holds no fortune collections: install Debian's "
                                "`fortunes` package (scripts/setup.sh does)")
    cookies = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        cookies += [c.strip("\n") for c in text.split("\n%\n") if c.strip()]
    return cookies


def is_held_out(cookie: str) -> bool:
    digest = hashlib.sha256(cookie.encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "little") % HELD_OUT_EVERY == 0


def write_llmc_bin(path: Path, tokens: Sequence[int]) -> None:
    """llm.c's token file: header[0] magic, [1] version 1 (uint16), [2] count."""
    header = np.zeros(256, dtype=np.int32)
    header[:3] = (20240520, 1, len(tokens))
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.asarray(tokens, dtype=np.uint16).tobytes())


def read_llmc_bin(path: Path) -> np.ndarray:
    """The tokens of a file write_llmc_bin wrote, as int64."""
    header = np.fromfile(path, dtype=np.int32, count=256)
    if header[0] != 20240520 or header[1] != 1:
        raise ValueError(f"{path} is not an llm.c token file of uint16 tokens")
    return np.fromfile(path, dtype=np.uint16, offset=256 * 4).astype(np.int64)


def unigram_entropies(train: Sequence[int], held_out: Sequence[int], vocab: int):
    """The entropy of the train part's token distribution, and the cross-entropy
    of the held-out tokens under it (add-one smoothed, so that a token unseen in
    training has a finite cost): the loss of the best model that ignores context."""
    counts = np.bincount(np.asarray(train), minlength=vocab).astype(np.float64)
    p = counts / counts.sum()
    entropy = float(-(p[p > 0] * np.log(p[p > 0])).sum())
    smoothed = (counts + 1) / (counts.sum() + vocab)
    cross = float(-np.log(smoothed[np.asarray(held_out)]).mean())
    return entropy, cross


def train_tokenizer(texts: List[str], vocab_size: int, path: Path):
    from tokenizers import ByteLevelBPETokenizer
    tokenizer = ByteLevelBPETokenizer()
    tokenizer.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=2,
                                  special_tokens=[END_OF_TEXT], show_progress=False)
    tokenizer.save(str(path))
    return tokenizer


def encode(tokenizer, cookies: List[str]) -> List[int]:
    eot = tokenizer.token_to_id(END_OF_TEXT)
    tokens: List[int] = []
    for encoding in tokenizer.encode_batch(cookies):
        tokens += encoding.ids
        tokens.append(eot)
    return tokens


def prepare(directory: Path, vocab_size: int) -> TokenFiles:
    """Writes train.bin, held_out.bin and tokenizer.json into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    cookies = read_cookies()
    train = [c for c in cookies if not is_held_out(c)]
    held_out = [c for c in cookies if is_held_out(c)]
    tokenizer = train_tokenizer(train, vocab_size, directory / "tokenizer.json")
    train_ids, held_out_ids = encode(tokenizer, train), encode(tokenizer, held_out)
    vocab = tokenizer.get_vocab_size()
    write_llmc_bin(directory / "train.bin", train_ids)
    write_llmc_bin(directory / "held_out.bin", held_out_ids)
    entropy, cross = unigram_entropies(train_ids, held_out_ids, vocab)
    return TokenFiles(train=directory / "train.bin", held_out=directory / "held_out.bin",
                      tokenizer=directory / "tokenizer.json", vocab_size=vocab,
                      train_tokens=len(train_ids), held_out_tokens=len(held_out_ids),
                      text_bytes=sum(len(c.encode("utf-8")) for c in cookies), cookies=len(cookies),
                      unigram_entropy=entropy, unigram_held_out=cross)
