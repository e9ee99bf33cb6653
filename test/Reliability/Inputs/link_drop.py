"""A dropped link between two ranks: each rank of a dp=2 job runs in its own
network namespace, the two joined by a veth pair, and the pair is taken down
mid-run, then brought back once rtx-launch restarts the job.

    link_drop.py WORKDIR -- RTX-LAUNCH-ARGS -- PROGRAM ARGS...

Makes namespaces rtxlA<pid> and rtxlB<pid> (10.78.0.1/24 and 10.78.0.2/24)
and starts `rtx-launch RTX-LAUNCH-ARGS -- PROGRAM ARGS...` in the root
namespace with rank R wrapped as `ip netns exec NS_R env
RTX_SOCKET_IFNAME=IF_R PROGRAM ...` (the store must be a file: store, which
both namespaces see). Once WORKDIR/ck/step-00000002/manifest.json exists the
link goes down; once launch.err says the job restarts, it comes back up.
Prints `exit N` with rtx-launch's status (output in WORKDIR/launch.out and
launch.err). Namespaces and the link are removed on any exit; a safety limit
ends a job that hangs.
"""
import os
import subprocess
import sys
import time

from chaos_steps import finish, split_args, wait_for_file, wait_until


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True)


def main():
    work, launch_args, program = split_args(sys.argv)
    tag = os.getpid()
    spaces = [f"rtxlA{tag}", f"rtxlB{tag}"]
    links = [f"la{tag}", f"lb{tag}"]
    code = None
    try:
        for ns in spaces:
            ip("netns", "add", ns)
        ip("link", "add", links[0], "netns", spaces[0], "type", "veth", "peer", "name", links[1],
           "netns", spaces[1])
        for i, (ns, link) in enumerate(zip(spaces, links)):
            ip("-n", ns, "addr", "add", f"10.78.0.{i + 1}/24", "dev", link)
            ip("-n", ns, "link", "set", "lo", "up")
            ip("-n", ns, "link", "set", link, "up")
        # $RANK picks the namespace and the interface of each rank.
        wrapper = ('ns=$0; link=$1; shift; if [ "$RANK" = 1 ]; then ns=${ns%%,*}; link=${link%%,*}; '
                   'else ns=${ns##*,}; link=${link##*,}; fi; '
                   'exec ip netns exec "$ns" env RTX_SOCKET_IFNAME="$link" "$@"')
        wrapped = ["sh", "-c", wrapper, f"{spaces[1]},{spaces[0]}", f"{links[1]},{links[0]}", *program]
        deadline = time.time() + 300
        with open(os.path.join(work, "launch.out"), "w") as out, \
                open(os.path.join(work, "launch.err"), "w") as err:
            launch = subprocess.Popen(["rtx-launch", *launch_args, "--", *wrapped], stdout=out, stderr=err)
            manifest = os.path.join(work, "ck", "step-00000002", "manifest.json")
            wait_for_file(manifest, launch, deadline)
            ip("-n", spaces[1], "link", "set", links[1], "down")
            wait_until(lambda: "restart 1" in open(os.path.join(work, "launch.err")).read(), launch, deadline,
                       "the restart after the link went down")
            ip("-n", spaces[1], "link", "set", links[1], "up")
            code = finish(launch, deadline, "the link came back")
    finally:
        for ns in spaces:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), 9)
                except OSError:
                    pass
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True)
    print(f"exit {code}")


if __name__ == "__main__":
    main()
