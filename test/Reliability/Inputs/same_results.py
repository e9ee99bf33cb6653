"""Compares the --out directories of two runs (resultN.npy each).

    same_results.py EXPECTED_DIR ACTUAL_DIR [--rtol R]

Without --rtol every result must be equal bit for bit (the same plan: an
interrupted run that recovered ends in the state of an uninterrupted one);
with it, within R in relative norm ||a - b|| / ||b|| (another plan). NaN never
passes. Prints one line; exits 1 naming the first result that differs.
"""
import glob
import os
import sys

import numpy as np


def main():
    args = sys.argv[1:]
    rtol = None
    if "--rtol" in args:
        i = args.index("--rtol")
        rtol = float(args[i + 1])
        del args[i:i + 2]
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(args[0], "result*.npy")))
    if not names:
        sys.exit(f"no results in {args[0]}")
    for name in names:
        a, b = np.load(os.path.join(args[1], name)), np.load(os.path.join(args[0], name))
        if a.shape != b.shape or np.isnan(a).any():
            sys.exit(f"{name}: shape {a.shape} vs {b.shape}, or NaN")
        if rtol is None:
            if a.tobytes() != b.tobytes():
                sys.exit(f"{name}: not bit for bit equal")
        else:
            scale = np.linalg.norm(b.astype(np.float64))
            error = np.linalg.norm((a - b).astype(np.float64)) / (scale if scale else 1.0)
            if error > rtol:
                sys.exit(f"{name}: relative error {error:.3g} > {rtol}")
    print(f"{len(names)} results {'equal bit for bit' if rtol is None else 'within ' + repr(rtol)}")


if __name__ == "__main__":
    main()
