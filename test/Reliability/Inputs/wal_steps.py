"""Prints the steps a write-ahead log holds (docs/checkpoint.md, "The log").

    wal_steps.py WAL

One line: `steps S1 S2 ... hashed` when every record carries a state hash
(--deterministic), `... unhashed` otherwise. Reads the records as the
documented format says (48 bytes each, little-endian), independently of
rtx's reader, and checks each record's magic and size.
"""
import struct
import sys


def main():
    data = open(sys.argv[1], "rb").read()
    steps, hashed = [], True
    for at in range(0, len(data) - len(data) % 48, 48):
        magic, version, payload = struct.unpack_from("<4sHH", data, at)
        if magic != b"RWAL" or version != 1 or payload != 36:
            sys.exit(f"record at byte {at}: magic {magic!r} version {version} payload {payload}")
        step, position, rng, scale, state_hash = struct.unpack_from("<qqQfQ", data, at + 8)
        steps.append(step)
        hashed = hashed and state_hash != 0
    print("steps", *steps, "hashed" if hashed else "unhashed")


if __name__ == "__main__":
    main()
