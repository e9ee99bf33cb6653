"""Compares the losses two runs printed.

    same_losses.py EXPECTED ACTUAL [--rtol R]

Each file holds lines `loss=X` (grep -o 'loss=[^ ]*' of a program's
output). Without --rtol the losses must be equal as printed (the same plan
resumed: the same operations in the same order); with it, within R relative
(another plan: other reduction orders). Prints one line and exits 1 on a
difference, naming the step.
"""
import sys


def losses(path):
    return [float(line.split("=", 1)[1]) for line in open(path) if line.startswith("loss=")]


def main():
    args = sys.argv[1:]
    rtol = None
    if "--rtol" in args:
        i = args.index("--rtol")
        rtol = float(args[i + 1])
        del args[i:i + 2]
    expected, actual = losses(args[0]), losses(args[1])
    if not expected or len(expected) != len(actual):
        sys.exit(f"losses: {len(expected)} expected, {len(actual)} printed: {expected} {actual}")
    for i, (e, a) in enumerate(zip(expected, actual)):
        if (a != e) if rtol is None else (abs(a - e) > rtol * abs(e)) or a != a:
            sys.exit(f"losses differ at step {i + 1} of {len(expected)}: expected {e}, got {a}")
    print(f"{len(actual)} losses {'equal' if rtol is None else 'within ' + repr(rtol)}")


if __name__ == "__main__":
    main()
