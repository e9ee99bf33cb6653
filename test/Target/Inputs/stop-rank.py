"""Starts a 2-rank program under rtx-launch, SIGSTOPs rank 1 once rank 0 has
finished a step, and prints rtx-launch's status and error output.

    stop-rank.py WORKDIR STORE PROGRAM ARGS...

Each rank runs through `sh -c 'echo $$ > WORKDIR/pid.$RANK; exec PROGRAM'`, so
the pid file names the program itself. A safety limit ends a run that hangs
(the defect this checks for) instead of hanging the test suite.
"""
import os
import signal
import subprocess
import sys
import time

work, store, program = sys.argv[1], sys.argv[2], sys.argv[3:]
metrics = os.path.join(work, "metrics.jsonl")
wrapped = ['sh', '-c', 'echo $$ > "$0/pid.$RANK"; exec "$@"', work, *program,
           '--metrics', metrics]
launch = subprocess.Popen(['rtx-launch', '-n', '2', '--store', store, '--',
                           *wrapped], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
deadline = time.time() + 120
pid_file = os.path.join(work, 'pid.1')
while time.time() < deadline and launch.poll() is None:
    if os.path.exists(pid_file) and os.path.exists(metrics) and \
            os.path.getsize(metrics) > 0:
        break
    time.sleep(0.05)
os.kill(int(open(pid_file).read()), signal.SIGSTOP)
try:
    _, err = launch.communicate(timeout=120)
    print('status', launch.returncode)
except subprocess.TimeoutExpired:
    launch.kill()
    _, err = launch.communicate()
    print('HANG')
print(err)
