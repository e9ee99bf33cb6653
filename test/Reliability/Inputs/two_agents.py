"""Two rtx-launch agents, as on two nodes (one rank each, on loopback), that
restart together through their store, and a failure injected into one.

    two_agents.py WORKDIR EVENT -- RTX-LAUNCH-ARGS -- PROGRAM ARGS...

Starts, for node I = 0 and 1,
`rtx-launch --nnodes 2 --node-rank I -n 1 RTX-LAUNCH-ARGS -- sh -c '...' PROGRAM ARGS...`
(each rank writes its pid to WORKDIR/pid.RANK.ROUND, then execs PROGRAM),
with RTX_BIND_ADDR=127.0.0.1 and the agent's output in WORKDIR/node-I.out and
node-I.err. EVENT, once its FILE exists (a checkpoint's manifest):
  rank-kill:FILE  kill -9 rank 1 (node 1's rank of the first round);
  rank-kill=R:FILE  kill -9 rank R (0 or 1) instead;
  node-loss:FILE  kill -9 node 1's agent (its rank ends with it), then, a
                  second later, start node 1's agent again, as an outer
                  launcher brings a lost node back (WORKDIR/node-1b.*);
  node-loss:FILE@BACK  the same, but node 1's agent starts again only once
                  BACK exists (a later checkpoint of the shrunk job);
  node-gone:FILE  kill -9 node 1's agent for good;
  node-late:FILE  start node 1's agent only then (a job that started on
                  fewer nodes, and a new node that joins it).
Prints one line `node I exit N` per agent (node 1: its last one). A safety
limit ends agents that hang (a defect) instead of hanging the suite.
"""
import os
import signal
import subprocess
import sys
import time


def main():
    work, event = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    assert rest[0] == "--" and "--" in rest[1:], "usage: see the docstring"
    split = rest.index("--", 1)
    launch_args, program = rest[1:split], rest[split + 1:]
    kind, _, trigger = event.partition(":")
    trigger, _, back = trigger.partition("@")
    kind, _, victim = kind.partition("=")
    victim = victim or "1"
    assert kind in ("rank-kill", "node-loss", "node-gone", "node-late") and \
        victim in ("0", "1"), \
        "EVENT is rank-kill[=R]:FILE, node-loss:FILE[@BACK], node-gone:FILE or node-late:FILE"
    wrapped = ["sh", "-c", 'echo $$ > "$0/pid.$RANK.$RTX_RESTART_ROUND"; exec "$@"', work,
               *program]
    env = dict(os.environ, RTX_BIND_ADDR="127.0.0.1")
    files = []

    def agent(node, name):
        out = open(os.path.join(work, f"{name}.out"), "w")
        err = open(os.path.join(work, f"{name}.err"), "w")
        files.extend([out, err])
        return subprocess.Popen(
            ["rtx-launch", "--nnodes", "2", "--node-rank", str(node), "-n", "1",
             *launch_args, "--", *wrapped], stdout=out, stderr=err, env=env)

    late = kind == "node-late"
    agents = [agent(0, "node-0"), None if late else agent(1, "node-1")]
    deadline = time.time() + 300
    while not os.path.exists(trigger):
        if any(a.poll() is not None for a in agents if a) or time.time() > deadline:
            sys.exit(f"the job ended or hung before {trigger} existed: "
                     f"exits {[a.poll() for a in agents]}")
        time.sleep(0.02)
    if late:
        agents[1] = agent(1, "node-1")
    elif kind == "rank-kill":
        os.kill(int(open(os.path.join(work, f"pid.{victim}.0")).read()), signal.SIGKILL)
    else:
        agents[1].kill()
        agents[1].wait()
        if kind == "node-loss":
            time.sleep(1.0)
            while back and not os.path.exists(back):
                if agents[0].poll() is not None or time.time() > deadline:
                    sys.exit(f"node 0 ended or hung before {back} existed: "
                             f"exit {agents[0].poll()}")
                time.sleep(0.02)
            agents[1] = agent(1, "node-1b")
    for node, a in enumerate(agents):
        try:
            code = a.wait(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            for b in agents:
                b.kill()
            sys.exit("the agents hung after the failure (stopped by the safety limit)")
        print(f"node {node} exit {code}")
    for f in files:
        f.close()


if __name__ == "__main__":
    main()
