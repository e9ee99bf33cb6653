"""The steps the chaos drivers (store_outage.py, link_drop.py) share: their
command line, waiting for a moment of the job, and waiting for its end
under a safety limit, so that a job that hangs (a defect) fails the test
instead of hanging the suite."""
import os
import subprocess
import sys
import time


def split_args(argv):
    """WORKDIR -- RTX-LAUNCH-ARGS -- PROGRAM ARGS... as (work, launch args, program)."""
    work, rest = argv[1], argv[2:]
    assert rest and rest[0] == "--" and "--" in rest[1:], "usage: WORKDIR -- RTX-LAUNCH-ARGS -- PROGRAM ARGS..."
    split = rest.index("--", 1)
    return work, rest[1:split], rest[split + 1:]


def wait_until(condition, launch, deadline, what):
    """Polls `condition` until it holds; exits naming `what` if the job ends or the deadline passes first."""
    while not condition():
        if launch.poll() is not None or time.time() > deadline:
            sys.exit(f"the job ended or hung before {what}: exit {launch.poll()}")
        time.sleep(0.01)


def wait_for_file(path, launch, deadline):
    wait_until(lambda: os.path.exists(path), launch, deadline, path)


def finish(launch, deadline, after):
    """rtx-launch's exit status; exits if it hangs `after` the failure."""
    try:
        return launch.wait(timeout=max(1, deadline - time.time()))
    except subprocess.TimeoutExpired:
        launch.kill()
        sys.exit(f"the job hung after {after} (stopped by the safety limit)")
