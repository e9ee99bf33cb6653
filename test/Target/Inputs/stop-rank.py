"""Starts a 2-rank program under rtx-launch, SIGSTOPs rank 1 once rank 0 has
finished a step, and prints rtx-launch's status and error output, then how
the step the report gives rank 1 compares with the last one rank 0 finished
(from rank 0's --metrics lines): rank 1 took part in that step's
collectives, so it reached it or the one before; a few more allow for its
heartbeat thread scheduled late on a loaded machine.

    stop-rank.py WORKDIR STORE [--after-step N] PROGRAM ARGS...

Each rank runs through `sh -c 'echo $$ > WORKDIR/pid.$RANK; exec PROGRAM'`, so
the pid file names the program itself. A safety limit ends a run that hangs
(the defect this checks for) instead of hanging the test suite.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

work, store, program = sys.argv[1], sys.argv[2], sys.argv[3:]
# --after-step N: stop rank 1 once rank 0 has finished N steps (default 1).
after_step = 1
if program[:1] == ['--after-step']:
    after_step, program = int(program[1]), program[2:]
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
            len(open(metrics).readlines()) >= after_step:
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
lines = [line for line in open(metrics) if line.strip()]
last = json.loads(lines[-1])['step'] if lines else -1
said = re.search(r'stalled after step (\d+)', err)
if said:
    reached = int(said.group(1))
    verdict = 'within 5 steps' if last - 5 <= reached <= last else 'stale'
    print('rank 1 reported after step', reached, 'rank 0 finished step', last,
          verdict)
