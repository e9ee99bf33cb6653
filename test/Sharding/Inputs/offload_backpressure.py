#!/usr/bin/env python3
"""Offload to files under a slow disk and a full disk, in real processes.

Builds the GPT-2 example with ZeRO-3 and offload=nvme on dp=2 and runs it
under rtx-launch:
  1. normally, 3 steps, saving its state (the committed checkpoint);
  2. with every offload read and write slowed (RTX_FAULT_OFFLOAD_DELAY_MS,
     the test-only slow disk): the same losses, the same step peak of the
     allocator (memory does not grow while the disk is slow), bytes in
     flight under the store's bound, and each step at least as long as its
     transfers take on a disk that serves one at a time;
  3. resumed from the saved state with the offload folder on a full disk
     (a 64 KiB tmpfs in a mount namespace of its own): the run stops with
     the file, the key and "No space left on device", and the saved state
     is byte for byte what it was;
  4. resumed from that state on a good disk: its step equals step 4 of an
     uninterrupted 4-step run, so nothing committed was lost.
Prints one line per check; exits non-zero when one fails.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

DELAY_MS = 20


def run(cmd, env=None, check=True):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if check and result.returncode != 0:
        sys.exit(f"offload-backpressure: {' '.join(map(str, cmd))} failed "
                 f"({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def metrics(path):
    return [json.loads(line) for line in open(path)]


def tree_hash(directory):
    digest = hashlib.sha256()
    for path in sorted(Path(directory).rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(directory)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", required=True)
    parser.add_argument("--model", required=True)
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    train = work / "z3-nvme.mlir"
    run(["rtx-opt", args.model,
         "-rtx-distribute=mesh=dp:2 lr=0.01 eps=1e-5 shard-state=3 offload=nvme",
         "-o", train])
    source = work / "program.cpp"
    run(["rtx-translate", "--emit=cpp", train, "-o", source,
         "--build-script", work / "build.sh"])
    run(["sh", work / "build.sh", source, work / "program"])

    def launch(name, steps, extra, env=None, check=True, prefix=()):
        d = work / name
        run(["rm", "-rf", d])
        d.mkdir()
        cmd = [*prefix, "rtx-launch", "-n", "2", "--store", f"file:{d}/store",
               "--", work / "program", "--steps", str(steps),
               "--metrics", d / "metrics.jsonl", *extra]
        return d, run([str(c) for c in cmd], env=env, check=check)

    failures = 0

    def check(ok, what):
        nonlocal failures
        print(("ok: " if ok else "FAIL: ") + what)
        failures += 0 if ok else 1

    base, _ = launch("base", 3, ["--offload-dir", work / "base" / "offload",
                                 "--save-state", work / "base" / "state"])
    fast = metrics(base / "metrics.jsonl")
    slow_env = dict(os.environ, RTX_FAULT_OFFLOAD_DELAY_MS=str(DELAY_MS))
    slow_dir, _ = launch("slow", 3, ["--offload-dir", work / "slow" / "offload"],
                         env=slow_env)
    slow = metrics(slow_dir / "metrics.jsonl")
    check([m["loss"] for m in slow] == [m["loss"] for m in fast],
          "a slow disk gives the same losses")
    check([m["step_peak_bytes"] for m in slow] ==
          [m["step_peak_bytes"] for m in fast],
          f"the step peak does not grow while the disk is slow "
          f"({fast[-1]['step_peak_bytes']} bytes)")
    bound = slow[-1]["offload_bound_bytes"]
    peak = max(m["offload_peak_inflight_bytes"] for m in slow)
    check(0 < peak <= bound,
          f"bytes in flight stay under the store's bound ({peak} <= {bound})")
    slowed = all(m["step_time_ms"] >= m["offload_transfers"] * DELAY_MS
                 for m in slow)
    check(slowed, f"each slow step lasts at least its transfers x {DELAY_MS} ms "
          f"(step 3: {slow[-1]['step_time_ms']:.0f} ms for "
          f"{slow[-1]['offload_transfers']} transfers)")
    check(all(m["offload_wait_ms"] > 0 for m in slow),
          "the slow steps waited for the tier (backpressure)")

    saved = work / "base" / "state"
    before = tree_hash(saved)
    full = work / "full"
    full.mkdir(exist_ok=True)
    mount = (f"mount -t tmpfs -o size=64k tmpfs {full} && exec \"$@\"")
    _, result = launch("disk-full", 1,
                       ["--state", saved, "--offload-dir", full,
                        "--save-state", work / "disk-full" / "state"],
                       check=False,
                       prefix=("unshare", "-m", "sh", "-c", mount, "sh"))
    err = result.stderr + result.stdout
    check(result.returncode != 0, "a full disk stops the run (non-zero exit)")
    # The ranks share the 64 KiB disk: the rank that finds it full names the
    # file and key it was writing; on a loaded machine the other rank may
    # fill it before the first has even probed its folder, and that rank's
    # error names the probe file instead.
    check("No space left on device" in err and
          ("offload: writing '" in err or "offload: cannot use " in err),
          "its error names the file, the key and the reason")
    # The writer's line when there is one, else the probe's.
    full_lines = [line for line in err.splitlines()
                  if "No space left on device" in line]
    full_lines.sort(key=lambda line: "offload: writing '" not in line)
    if full_lines:
        print("  " + full_lines[0].strip())
    check(not (work / "disk-full" / "state").exists(),
          "the failed run saved no state")
    check(tree_hash(saved) == before, "the committed state is unchanged")

    resumed, _ = launch("resumed", 1, ["--state", saved, "--offload-dir",
                                       work / "resumed" / "offload"])
    whole, _ = launch("whole", 4, ["--offload-dir", work / "whole" / "offload"])
    step4 = metrics(whole / "metrics.jsonl")[-1]["loss"]
    again = metrics(resumed / "metrics.jsonl")[-1]["loss"]
    check(abs(again - step4) <= 1e-5 * abs(step4),
          f"resumed from it, step 4 equals the uninterrupted run's "
          f"({again:.6f} vs {step4:.6f})")
    print("offload-backpressure: " + ("pass" if failures == 0 else
                                      f"{failures} checks failed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
