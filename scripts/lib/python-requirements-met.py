"""Exits 0 when every `name==version` line of a requirements file is
installed at that version in the running Python (PEP 440 local versions
such as 2.11.0+cu130 count as 2.11.0); else prints what differs and exits 1.
Reads package metadata only: nothing is imported, so it takes milliseconds.

    .venv/bin/python scripts/lib/python-requirements-met.py scripts/python-requirements.txt
"""
import sys
from importlib import metadata


def wanted(path):
    for line in open(path, encoding="utf-8"):
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            if not sep:
                sys.exit(f"{path}: expected name==version, got '{line}'")
            yield name.strip(), version.strip()


def main(path):
    differ = []
    for name, version in wanted(path):
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = None
        if have is None or have.split("+", 1)[0] != version:
            differ.append(f"{name} {have or '(not installed)'}, wanted {version}")
    for line in differ:
        print(f"rtx setup: venv: {line}", file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
