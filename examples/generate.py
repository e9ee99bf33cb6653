#!/usr/bin/env python3
"""Writes the example models of this folder from python/rtx/models.py.

    python3 examples/generate.py        # rewrite examples/*.mlir
    python3 examples/generate.py --check  # fail if a file is out of date
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

from rtx import models  # noqa: E402

EXAMPLES = {
    "gpt2-tiny.mlir": lambda: models.gpt2(models.GPTConfig(layers=2)),
    "mlp.mlir": lambda: models.mlp(),
    "llama-block.mlir": lambda: models.llama_block(),
    "vit-block.mlir": lambda: models.vit(),
}


def main() -> int:
    check = "--check" in sys.argv
    stale = []
    for name, build in EXAMPLES.items():
        path = os.path.join(HERE, name)
        text = build().text()
        if check:
            with open(path) as f:
                if f.read() != text:
                    stale.append(name)
        else:
            with open(path, "w") as f:
                f.write(text)
    if stale:
        print("out of date (run python3 examples/generate.py):", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
