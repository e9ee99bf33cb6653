"""Stages of the main job: each prints its title when it starts and its time
when it ends, and the job prints every stage's time at the end."""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, List, Tuple


@dataclass
class Stages:
    total: int
    times: List[Tuple[str, float]] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    @contextmanager
    def stage(self, title: str) -> Iterator[None]:
        number = len(self.times) + 1
        say(f"\n== {number}/{self.total} {title}")
        start = time.monotonic()
        yield
        seconds = time.monotonic() - start
        self.times.append((title.split(":")[0], seconds))
        say(f"   ({title.split(':')[0]}: {seconds:.1f} s)")

    def summary(self) -> str:
        lines = [f"   {name:<28} {seconds:7.1f} s" for name, seconds in self.times]
        lines.append(f"   {'all':<28} {time.monotonic() - self.started:7.1f} s")
        return "\n".join(lines)


def say(text: str) -> None:
    print(text, flush=True)


def warn(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
