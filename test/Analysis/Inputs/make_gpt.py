"""Writes a GPT model (rtx's builder) of the given shape to stdout:
make_gpt.py LAYERS HEADS WIDTH SEQ BATCH VOCAB [DTYPE]."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python"))
from rtx.models import GPTConfig, gpt2  # noqa: E402

layers, heads, width, seq, batch, vocab = (int(a) for a in sys.argv[1:7])
dtype = sys.argv[7] if len(sys.argv) > 7 else "f32"
print(gpt2(GPTConfig(vocab=vocab, seq=seq, batch=batch, layers=layers, heads=heads, width=width,
                     qkv_layout="heads", dtype=dtype)).text())
