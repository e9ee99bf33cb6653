"""Running the training program under rtx-launch: the command line a user
would type, its progress shown as it comes, one rank killed on purpose
partway, and a look at the Prometheus endpoint while the job runs.

Each rank is started through `sh -c 'echo $$ >> PIDS/rank-R.ROUND; exec
PROGRAM ...'`, so that the job knows the pid of the process that is rank R
(rtx-launch does not publish its ranks' pids) and can kill exactly it."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

from stages import say

# Progress lines worth a user's eye: every `every`-th step, held-out losses,
# and everything about the failure and the recovery.
RECOVERY = re.compile(r"killed|in-job recovery|recover:|lost a peer|resum|restart|heal", re.I)
STEP = re.compile(r"step (\d+)/(\d+): loss=(\S+)")


@dataclass
class Kill:
    rank: int
    after_step: int
    done_at: Optional[float] = None  # time.monotonic() when the signal was sent


@dataclass
class LaunchResult:
    argv: List[str]
    returncode: int
    lines: List[str] = field(default_factory=list)
    scrape: List[str] = field(default_factory=list)


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def steps_logged(metrics: Path) -> int:
    """The newest global step rank 0 has written into the metrics file."""
    newest = 0
    try:
        with open(metrics) as f:
            for line in f:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line being written
                newest = max(newest, int(record.get("global_step", record.get("step", 0)) or 0))
    except FileNotFoundError:
        pass
    return newest


def scrape(port: int) -> List[str]:
    """The endpoint's step and loss samples (a few lines of the exposition)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    wanted = ('step_time_ms{', 'loss{', 'lr{', 'tokens_per_s{', 'eval_loss{', 'collective_pct{')
    return [line for line in text.splitlines()
            if line.startswith(wanted) and 'quantile="0.95"' not in line
            and 'quantile="0.99"' not in line][:6]


class Watcher(threading.Thread):
    """Kills `kill.rank` once the metrics say `kill.after_step` is done, and
    scrapes the metrics endpoint once at `scrape_step`."""

    def __init__(self, pids: Path, metrics: Path, kill: Optional[Kill], port: Optional[int],
                 scrape_step: int, result: LaunchResult, proc: subprocess.Popen) -> None:
        super().__init__(daemon=True)
        self.pids, self.metrics, self.kill, self.port = pids, metrics, kill, port
        self.scrape_step, self.result, self.proc = scrape_step, result, proc

    def run(self) -> None:
        scraped = self.port is None
        while self.proc.poll() is None and not (scraped and self.kill_done()):
            step = steps_logged(self.metrics)
            if not scraped and step >= self.scrape_step:
                scraped = True
                try:
                    self.result.scrape = scrape(self.port)
                except OSError as e:
                    self.result.scrape = [f"(the endpoint did not answer: {e})"]
            if self.kill and self.kill.done_at is None and step >= self.kill.after_step:
                pid = int((self.pids / f"rank-{self.kill.rank}.0").read_text().split()[0])
                say(f"   >>> killing rank {self.kill.rank} (pid {pid}, SIGKILL) after step {step}")
                os.kill(pid, signal.SIGKILL)
                self.kill.done_at = time.monotonic()
            time.sleep(0.05)

    def kill_done(self) -> bool:
        return self.kill is None or self.kill.done_at is not None


def run(launch_argv: List[str], program_argv: List[str], logs: Path, metrics: Path, *, every: int,
        kill: Optional[Kill] = None, metrics_port: Optional[int] = None, scrape_step: int = 0,
        echo: bool = True) -> LaunchResult:
    """Runs `rtx-launch LAUNCH_ARGV -- PROGRAM_ARGV`, streams its output and
    keeps it in LOGS/launch.log. `metrics` is the program's --metrics file,
    which says when to kill and to scrape."""
    pids = logs / "pids"
    pids.mkdir(parents=True, exist_ok=True)
    # Appended, not written: a replacement started for a killed rank adds its
    # own pid below the first.
    wrapped = ["sh", "-c", 'echo $$ >> "$0/rank-$RANK.${RTX_RESTART_ROUND:-0}"; exec "$@"', str(pids),
               *program_argv]
    argv = [*launch_argv, "--", *wrapped]
    result = LaunchResult(argv=[*launch_argv, "--", *program_argv], returncode=-1)
    with open(logs / "launch.log", "w") as log:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                bufsize=1)
        watcher = Watcher(pids, metrics, kill, metrics_port, scrape_step, result, proc)
        watcher.start()
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            result.lines.append(line.rstrip("\n"))
            if echo and shown(line, every):
                say("   " + line.rstrip("\n"))
        result.returncode = proc.wait()
        watcher.join(timeout=5)
    return result


def shown(line: str, every: int) -> bool:
    if "error" in line.lower() or "held-out" in line or RECOVERY.search(line):
        return True
    match = STEP.search(line)
    if match and line.startswith("[rank 0]"):
        step, total = int(match.group(1)), int(match.group(2))
        return step == 1 or step % every == 0 or step == total
    return False
