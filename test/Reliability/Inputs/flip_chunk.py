"""Flips one byte of the first chunk of a checkpoint: a bad disk.

Usage: flip_chunk.py CHECKPOINT_DIR
"""
import json
import sys


def main() -> None:
    folder = sys.argv[1]
    chunk = json.load(open(folder + "/manifest.json"))["chunks"][0]
    with open(folder + "/" + chunk["file"], "r+b") as f:
        f.seek(chunk["byte_offset"] + 5)
        byte = f.read(1)
        f.seek(chunk["byte_offset"] + 5)
        f.write(bytes([byte[0] ^ 0x40]))


if __name__ == "__main__":
    main()
