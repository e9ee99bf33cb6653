"""The held-out evaluations of --metrics files (their eval_step lines).

    eval_lines.py steps FILE                 prints "eval steps [S, ...] tokens [N, ...]"
    eval_lines.py same FILE OTHER [--rtol R] prints "evaluations equal" when both files
                                             evaluate the same steps with losses within
                                             R (default 0: bit for bit as printed)
    eval_lines.py mean FILE STEP REF...      prints "held-out loss matches" when the
                                             evaluation of STEP is the mean of the losses
                                             of the --metrics files REF (rtx-run on each
                                             held-out batch) within 1e-5

A step evaluated twice (a restart or an in-job recovery appends its lines) counts
once, by its last line.
"""
import json
import sys


def evaluations(path):
    last = {}
    for line in open(path):
        row = json.loads(line)
        if "eval_step" in row:
            last[row["eval_step"]] = row
    return last


def close(a, b, rtol):
    return a == b if rtol == 0 else abs(a - b) <= rtol * abs(b)


def main():
    command, path = sys.argv[1], sys.argv[2]
    mine = evaluations(path)
    if command == "steps":
        steps = sorted(mine)
        print("eval steps", steps, "tokens", [mine[s]["eval_tokens"] for s in steps])
    elif command == "same":
        other = evaluations(sys.argv[3])
        rtol = float(sys.argv[sys.argv.index("--rtol") + 1]) if "--rtol" in sys.argv else 0.0
        ok = sorted(mine) == sorted(other) and all(
            close(mine[s]["eval_loss"], other[s]["eval_loss"], rtol) for s in mine)
        print("evaluations equal" if ok else f"evaluations DIFFER: {mine} vs {other}")
    elif command == "mean":
        step, refs = int(sys.argv[3]), sys.argv[4:]
        losses = [json.loads(open(ref).readline())["loss"] for ref in refs]
        expected = sum(losses) / len(losses)
        got = mine[step]["eval_loss"]
        ok = close(got, expected, 1e-5)
        print("held-out loss matches" if ok else f"held-out loss {got} DIFFERS from {expected} ({losses})")
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main()
