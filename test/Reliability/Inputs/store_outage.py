"""The rendezvous store (Redis) dies mid-run and comes back, then a rank dies.

    store_outage.py WORKDIR -- RTX-LAUNCH-ARGS -- PROGRAM ARGS...

Starts a redis-server on a free loopback port and `rtx-launch --store
redis://127.0.0.1:PORT RTX-LAUNCH-ARGS -- PROGRAM ARGS...` (each rank's pid
in WORKDIR/pid.RANK.ROUND, as chaos.py does). Once the checkpoint of step 2
is committed (WORKDIR/ck/step-00000002/manifest.json), kills the server with
SIGKILL (its keys are lost: it keeps nothing on disk), starts a new one on
the same port half a second later, and once the checkpoint of step 6 is
committed kills rank 1: the restarted round must meet through the new
server. Prints `exit N` with rtx-launch's exit status; its output goes to
WORKDIR/launch.out and launch.err. A safety limit ends a job that hangs.
"""
import os
import signal
import socket
import subprocess
import sys
import time

from chaos_steps import finish, split_args, wait_for_file


def start_redis(work, port):
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--dir", work],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True).returncode == 0:
            return server
        time.sleep(0.05)
    sys.exit("redis-server did not start")


def main():
    work, launch_args, program = split_args(sys.argv)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = start_redis(work, port)
    wrapped = ["sh", "-c", 'echo $$ > "$0/pid.$RANK.$RTX_RESTART_ROUND"; exec "$@"', work, *program]
    deadline = time.time() + 300
    try:
        with open(os.path.join(work, "launch.out"), "w") as out, \
                open(os.path.join(work, "launch.err"), "w") as err:
            launch = subprocess.Popen(["rtx-launch", "--store", f"redis://127.0.0.1:{port}", *launch_args,
                                       "--", *wrapped], stdout=out, stderr=err)
            wait_for_file(os.path.join(work, "ck", "step-00000002", "manifest.json"), launch, deadline)
            server.kill()
            server.wait()
            time.sleep(0.5)
            server = start_redis(work, port)
            wait_for_file(os.path.join(work, "ck", "step-00000006", "manifest.json"), launch, deadline)
            os.kill(int(open(os.path.join(work, "pid.1.0")).read()), signal.SIGKILL)
            code = finish(launch, deadline, "the failure")
    finally:
        server.kill()
        server.wait()
    print(f"exit {code}")


if __name__ == "__main__":
    main()
