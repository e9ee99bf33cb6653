"""Time from a failure to resumed training, with rtx-launch --max-restarts.

    recovery_time.py [--trials N] [--failure kill|stop] [--timeout S|auto]
                     [--recover restart|in-job] [--shrink] [--work DIR]

Builds the dp=2 GPT-2 tiny program once (cached in --work), then, N times:
starts `rtx-launch -n 2 --max-restarts 1 -- dp2 --data text.bin --until-step 400
--checkpoint CK --checkpoint-every 5 --timeout S` (default auto), waits until the checkpoint
of step 10 is committed and step 12 is done, sends SIGKILL (or SIGSTOP: a hung rank, found by the
collective timeout) to rank 1, and measures the wall time from the signal to
the first step line that the restarted job prints. That time is detection +
stopping the ranks + rtx-launch's backoff (0.5 s) + start and rendezvous +
reading the checkpoint + one step. The ranks trace (rtx-launch --trace, each
round's traces kept in round-K/), and the time from detection (the end of
the surviving rank's "error" event) to the start of the first resumed
step is read from the traces too. Prints each trial and the medians.

With --recover in-job (rtx-launch --recover in-job) rank 0 keeps its
process: the time ends at its first step line after "recover: epoch 1", and
the traced time runs from its "error" event to its next step, in its one
trace.

With --shrink (rtx-launch --min-ranks 1, the dp=1 program built too) the
job goes on with one rank: with --recover restart from the newest periodic
checkpoint, with --recover in-job from the step the survivor holds (it saves
it first). Each trial also counts the steps redone: the last step printed
before the signal minus the step the job resumed from.

The peer: none in the same run; the issue's target is 5 s on loopback, and
TorchElastic with PyTorch's defaults notices a hung rank only after its
10-minute NCCL/Gloo timeout.
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("RTX_BUILD_DIR", ROOT / "build"))


def tool(name):
    return str(BUILD / "bin" / name)


def build(work, ranks=2):
    program = work / f"dp{ranks}"
    # Cached, unless the runtime it links is newer (a rebuilt rtx).
    runtime = BUILD / "runtime" / "librtxrt.a"
    if program.exists() and (not runtime.exists() or program.stat().st_mtime > runtime.stat().st_mtime):
        return program
    subprocess.run([tool("rtx-opt"), str(ROOT / "examples/gpt2-tiny.mlir"),
                    f"-rtx-distribute=mesh=dp:{ranks} lr=0.01", "-o", str(work / f"dp{ranks}.mlir")],
                   check=True)
    subprocess.run([tool("rtx-translate"), str(work / f"dp{ranks}.mlir"), "-o", str(work / f"dp{ranks}.cpp"),
                    "--build-script", str(work / "build.sh")], check=True)
    subprocess.run(["sh", str(work / "build.sh"), str(work / f"dp{ranks}.cpp"), str(program)], check=True)
    return program


def prepare(directory):
    """The work folder, with the token file and the built dp=2 program."""
    work = Path(directory)
    work.mkdir(parents=True, exist_ok=True)
    import numpy as np
    np.tile(np.arange(37, dtype=np.uint16), 500).tofile(work / "text.bin")
    return work, build(work)


def trial(work, program, failure, timeout, recover, shrink, index):
    run = work / f"trial{index}"
    subprocess.run(["rm", "-rf", str(run)])
    run.mkdir()
    ck = run / "ck"
    wrapped = ["sh", "-c", 'echo $$ > "$0/pid.$RANK.$RTX_RESTART_ROUND"; exec "$@"', str(run),
               str(program), "--data", str(work / "text.bin"), "--until-step", "400",
               "--checkpoint", str(ck), "--checkpoint-every", "5", "--timeout", str(timeout)]
    if shrink:
        wrapped[wrapped.index(str(program))] = str(work / "dp{world}")
    launch = subprocess.Popen([tool("rtx-launch"), "-n", "2", "--store", f"file:{run / 'store'}",
                               "--max-restarts", "1", "--recover", recover,
                               *(["--min-ranks", "1"] if shrink else []),
                               "--trace", str(run / "trace"), "--", *wrapped],
                              stdout=subprocess.PIPE, stderr=open(run / "launch.err", "w"), text=True)
    resumed_at, steps = [], {"last": 0, "resumed": None}
    seen_resume = threading.Event()
    signalled_event = threading.Event()

    def read():
        for line in launch.stdout:
            if "resume: from" in line or "recover: epoch" in line:
                if signalled_event.is_set():
                    seen_resume.set()
                    words = line.replace("(", " ").replace(")", " ").split()
                    if "step" in words:
                        steps["resumed"] = int(words[words.index("step") + 1])
            elif seen_resume.is_set() and "] step " in line and not resumed_at:
                resumed_at.append(time.monotonic())
            elif "] step " in line and not signalled_event.is_set():
                steps["last"] = int(line.split("] step ")[1].split("/")[0].split()[0])
    reader = threading.Thread(target=read)
    reader.start()
    manifest = ck / "step-00000010" / "manifest.json"
    deadline = time.monotonic() + 120
    while not manifest.exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    # Two steps past that checkpoint: what a restart from it redoes.
    while steps["last"] < 12 and time.monotonic() < deadline:
        time.sleep(0.005)
    signalled = time.monotonic()
    signalled_event.set()
    os.kill(int((run / "pid.1.0").read_text()), signal.SIGKILL if failure == "kill" else signal.SIGSTOP)
    while not resumed_at and time.monotonic() < deadline:
        time.sleep(0.005)
    launch.terminate()
    launch.wait()
    reader.join()
    if not resumed_at:
        sys.exit(f"trial {index}: the job did not resume (its stderr: {run / 'launch.err'})")
    redone = steps["last"] - steps["resumed"] if steps["resumed"] is not None else 0
    return resumed_at[0] - signalled, from_traces(run / "trace", recover, shrink), max(0, redone)


def from_traces(trace, recover, shrink=False):
    """Detection to resumed training, from the ranks' traces (part 3):
    the "error" event of rank 0 in the failed round (written when its
    collective failed; rtx-launch keeps that round's traces in round-0/) to
    the start of the first step in the next round's trace of rank 0. Both
    are steady-clock microseconds of one machine."""
    import json
    resumed = json.load(open(trace / "rank-0.trace.json"))["traceEvents"]
    failed = resumed if recover == "in-job" and not shrink else \
        json.load(open(trace / "round-0" / "rank-0.trace.json"))["traceEvents"]
    detected = min(e["ts"] for e in failed if e.get("cat") == "error")
    first_step = min(e["ts"] for e in resumed
                     if e.get("cat") == "step" and "ts" in e and e["ts"] > detected)
    return (first_step - detected) / 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--failure", choices=("kill", "stop"), default="kill")
    parser.add_argument("--timeout", default="auto",
                        help="the programs' --timeout: seconds, or auto (10x the p99 step time, at least 2 s)")
    parser.add_argument("--recover", choices=("restart", "in-job"), default="restart",
                        help="rtx-launch --recover: restart every rank, or replace the lost one in the job")
    parser.add_argument("--shrink", action="store_true",
                        help="go on with one rank (--min-ranks 1): the dp=1 program takes over")
    parser.add_argument("--work", default="/tmp/rtx-bench-recovery")
    args = parser.parse_args()
    work, program = prepare(args.work)
    if args.shrink:
        build(work, ranks=1)
    times, traced, redone = [], [], []
    for i in range(args.trials):
        seconds, detected_to_step, again = trial(work, program, args.failure, args.timeout, args.recover,
                                                 args.shrink, i)
        times.append(seconds)
        traced.append(detected_to_step)
        redone.append(again)
        print(f"trial {i}: {args.failure} of rank 1 -> resumed training in {seconds:.2f} s "
              f"(traces: {detected_to_step:.2f} s from detection to the first resumed step), "
              f"{again} step(s) redone")
    print(f"median: {statistics.median(times):.2f} s from the signal, {statistics.median(traced):.2f} s from "
          f"detection (traces), over {len(times)} trials ({args.failure}, --timeout {args.timeout}, "
          f"--recover {args.recover}{' --shrink' if args.shrink else ''}; "
          f"steps redone: median {statistics.median(redone)}; "
          "target <= 5 s)")


if __name__ == "__main__":
    main()
