"""Randomly timed kills of random ranks: every run must end in the state of
an uninterrupted one, bit for bit (the acceptance of issue 18).

    random_kills.py [--kills N] [--seed S] [--steps K] [--recover restart|in-job] [--work DIR]

Builds the dp=2 GPT-2 tiny program once (cached in --work, shared with
recovery_time.py), runs it once uninterrupted for K steps (--out), then N
times: starts `rtx-launch -n 2 --max-restarts 3 -- dp2 --until-step K
--checkpoint CK --checkpoint-every 2 --deterministic --timeout auto --out OUT`
with rank 0 made 150 ms slower per step (RTX_FAULT_SLOW_RANK, so that a kill
lands mid-run), sends SIGKILL to a random rank at a random time (seeded), and
compares every result of OUT with the uninterrupted run's, bit for bit. A
kill before the first checkpoint restarts from the initializers; after it,
from the checkpoint, with the logged steps replayed and their state hashes
checked (--deterministic). Prints each trial and a summary; exits 1 if any
run did not end bit for bit equal.

With --recover in-job (rtx-launch --recover in-job) the killed rank is
replaced while the other keeps its process and state; a kill before the
first rendezvous met, or of a replacement before its epoch met, restarts
every rank. The summary counts the in-job recoveries.
"""
import argparse
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recovery_time import prepare, tool  # noqa: E402


def launch(work, program, run, steps, extra, env=None, recover="restart"):
    wrapped = ["sh", "-c", 'echo $$ > "$0/pid.$RANK.$RTX_RESTART_ROUND"; exec "$@"', str(run),
               str(program), "--data", str(work / "text.bin"), "--until-step", str(steps),
               "--out", str(run / "out"), *extra]
    return subprocess.Popen([tool("rtx-launch"), "-n", "2", "--store", f"file:{run / 'store'}",
                             "--max-restarts", "3", "--recover", recover, "--", *wrapped],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, **(env or {})))


def same_results(a, b):
    names = sorted(p.name for p in a.glob("result*.npy"))
    return bool(names) and all(np.load(a / n).tobytes() == np.load(b / n).tobytes() for n in names)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--recover", choices=("restart", "in-job"), default="restart",
                        help="rtx-launch --recover: restart every rank, or replace the killed one in the job")
    parser.add_argument("--work", default="/tmp/rtx-bench-recovery")
    args = parser.parse_args()
    work, program = prepare(args.work)
    reference = work / "uninterrupted"
    subprocess.run(["rm", "-rf", str(reference)])
    reference.mkdir()
    done = launch(work, program, reference, args.steps, [])
    done.communicate()
    if done.returncode != 0:
        sys.exit("the uninterrupted run failed")
    rng = random.Random(args.seed)
    equal = from_checkpoint = replayed = landed = in_job = 0
    started = time.monotonic()
    for i in range(args.kills):
        run = work / f"kill{i}"
        subprocess.run(["rm", "-rf", str(run)])
        run.mkdir()
        rank, after = rng.randrange(2), rng.uniform(0.2, 2.0)
        job = launch(work, program, run, args.steps,
                     ["--checkpoint", str(run / "ck"), "--checkpoint-every", "2", "--deterministic",
                      "--timeout", "auto"], env={"RTX_FAULT_SLOW_RANK": "0:150"}, recover=args.recover)
        time.sleep(after)
        killed = False
        try:
            os.kill(int((run / f"pid.{rank}.0").read_text()), signal.SIGKILL)
            killed = True
        except (OSError, ValueError):
            pass  # not started yet, or already done: a trial without a kill
        output, _ = job.communicate(timeout=300)
        ok = job.returncode == 0 and same_results(reference / "out", run / "out")
        resumed = "resume: from" in output
        equal += ok
        landed += killed
        from_checkpoint += resumed
        replayed += "wal: replayed" in output
        healed = "in-job recovery: epoch" in output
        in_job += healed
        print(f"kill {i}: rank {rank} at {after:.2f} s ({'killed' if killed else 'missed'}), "
              f"{'recovered in the job' if healed else 'resumed from a checkpoint' if resumed else 'restarted from the initializers'}: "
              f"{'bit for bit equal' if ok else 'DIFFERENT (exit %d)' % job.returncode}", flush=True)
        if not ok:
            print(output[-3000:])
    print(f"{equal} of {args.kills} runs ({landed} kills landed) ended bit for bit in the uninterrupted "
          f"state ({from_checkpoint} resumed from a checkpoint, {replayed} replayed logged steps with matching "
          f"hashes, {in_job} recovered in the job); {time.monotonic() - started:.0f} s, seed {args.seed}, "
          f"--recover {args.recover}")
    sys.exit(0 if equal == args.kills else 1)


if __name__ == "__main__":
    main()
