"""Injects failures (or offers of ranks) into a running rtx-launch job and
reports how it ended.

    chaos.py WORKDIR SIGNAL TARGET WHEN [SIGNAL TARGET WHEN]... -- RTX-LAUNCH-ARGS -- PROGRAM ARGS...

Starts `rtx-launch RTX-LAUNCH-ARGS -- PROGRAM ARGS... --metrics WORKDIR/metrics.jsonl`
with each rank wrapped as `sh -c 'echo $$ > WORKDIR/pid.$RANK.$RTX_RESTART_ROUND;
exec PROGRAM ...'` (so the pid file names the program itself). For each event in
turn it waits until WHEN and sends SIGNAL (KILL, STOP, TERM) to TARGET: `rank:R`
(rank R of the first round) or `launcher` (a pre-emption notice); SIGNAL JOIN
with TARGET `ranks:K` runs `rtx-launch --join K` with the job's --store and
--run-id instead (a node offering K ranks). WHEN is `step:K` (K lines in the
metrics file: steps logged, repeats included), `step:K+MS` (MS milliseconds
after that: rank 0 writes step K's line before the ranks sum step K's state
hash together, so a kill meant to land between steps waits for it) or
`file:PATH` (PATH exists: a
checkpoint's manifest, so that the failure comes after that checkpoint was
committed). Prints the launcher's output to WORKDIR/launch.out and launch.err
and one line `exit N` on stdout. A safety limit ends a job that hangs (a
defect) instead of hanging the suite.
"""
import os
import signal
import subprocess
import sys
import time


def launch_option(args, name):
    """The value of rtx-launch option `name` in `args`."""
    assert name in args, f"JOIN needs rtx-launch {name}"
    return args[args.index(name) + 1]


def main():
    work = sys.argv[1]
    rest = sys.argv[2:]
    assert "--" in rest, "usage: see the docstring"
    split = rest.index("--")
    events, rest = rest[:split], rest[split:]
    assert events and len(events) % 3 == 0, "events are SIGNAL TARGET WHEN, one or more"
    events = [tuple(events[i:i + 3]) for i in range(0, len(events), 3)]
    for _, _, when in events:
        assert when.partition(":")[0] in ("step", "file"), "WHEN is step:K, step:K+MS or file:PATH"
    assert rest[0] == "--" and "--" in rest[1:], "usage: see the docstring"
    split = rest.index("--", 1)
    launch_args, program = rest[1:split], rest[split + 1:]
    metrics = os.path.join(work, "metrics.jsonl")
    wrapped = ["sh", "-c", 'echo $$ > "$0/pid.$RANK.$RTX_RESTART_ROUND"; exec "$@"', work,
               *program, "--metrics", metrics]
    with open(os.path.join(work, "launch.out"), "w") as out, \
            open(os.path.join(work, "launch.err"), "w") as err:
        launch = subprocess.Popen(["rtx-launch", *launch_args, "--", *wrapped],
                                  stdout=out, stderr=err)
        deadline = time.time() + 300
        for sig, target, when in events:
            kind, _, what = when.partition(":")
            what, _, delay_ms = what.partition("+") if kind == "step" else (what, "", "")
            while launch.poll() is None and time.time() < deadline:
                if kind == "file" and os.path.exists(what):
                    break
                try:
                    with open(metrics) as f:
                        if kind == "step" and sum(1 for _ in f) >= int(what):
                            break
                except FileNotFoundError:
                    pass
                time.sleep(0.02)
            if delay_ms:
                time.sleep(int(delay_ms) / 1000)
            if launch.poll() is not None:
                sys.exit(f"the job ended before {when}: exit {launch.returncode}")
            if sig == "JOIN":
                # A node offers ranks to the running job (rtx-launch --join).
                subprocess.run(["rtx-launch", "--join", target.split(":")[1], "--store",
                                launch_option(launch_args, "--store"), "--run-id",
                                launch_option(launch_args, "--run-id")],
                               stdout=out, stderr=err, check=True)
                continue
            signum = getattr(signal, "SIG" + sig)
            if target == "launcher":
                launch.send_signal(signum)
            else:
                rank = int(target.split(":")[1])
                os.kill(int(open(os.path.join(work, f"pid.{rank}.0")).read()), signum)
        try:
            code = launch.wait(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            launch.kill()
            launch.wait()
            sys.exit("the job hung after the failure (stopped by the safety limit)")
    print(f"exit {code}")


if __name__ == "__main__":
    main()
