"""Pictures of pipeline schedules: ``rtx-schedule --timeline FILE`` -> PNG.

    python3 -m rtx.schedule_plot TIMELINE.json OUT.png [--title TEXT]

One row per rank; forwards, backwards (input gradients) and weight
gradients as boxes labelled with their micro-batch, coloured by kind, at the
times the simulator gave them. Sends and receives take no time and are not
drawn. docs/pipeline.md shows the pictures.
"""
from __future__ import annotations

import argparse
import json
import re
import sys

COLORS = {"F": "#4c72b0", "B": "#55a868", "W": "#dd8452"}
ACTION = re.compile(r"^(\d+)([FBW])(\d+)$")


def plot(timeline: dict, out: str, title: str = "") -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ranks = int(timeline["ranks"])
    fig, ax = plt.subplots(figsize=(max(6.0, timeline["makespan"] * 0.28), 0.5 * ranks + 1.2))
    for rank, name, start, end in timeline["actions"]:
        match = ACTION.match(name)
        if not match or end <= start:
            continue
        stage, kind, micro_batch = match.groups()
        ax.broken_barh([(start, end - start)], (rank - 0.4, 0.8), facecolors=COLORS[kind],
                       edgecolors="white")
        label = micro_batch if stage == str(rank) else f"{micro_batch}'"
        ax.text((start + end) / 2, rank, label, ha="center", va="center", fontsize=7, color="white")
    ax.set_yticks(range(ranks))
    ax.set_yticklabels([f"rank {r}" for r in range(ranks)])
    ax.invert_yaxis()
    ax.set_xlim(0, timeline["makespan"])
    ax.set_xlabel("time (forward = 1)")
    ax.set_title((title + "\n" if title else "") + "forward (blue), backward (green), weight gradient (orange)"
                 + ("; ' = a rank's later virtual stage" if any(
                     ACTION.match(a[1]) and ACTION.match(a[1]).group(1) != str(a[0])
                     for a in timeline["actions"]) else ""), fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m rtx.schedule_plot", description=__doc__.split("\n\n")[0])
    parser.add_argument("timeline", help="rtx-schedule --timeline FILE")
    parser.add_argument("out", help="the PNG to write")
    parser.add_argument("--title", default="")
    args = parser.parse_args(argv)
    try:
        with open(args.timeline) as f:
            timeline = json.load(f)
    except (OSError, ValueError) as error:
        print(f"rtx.schedule_plot: error: cannot read {args.timeline}: {error}", file=sys.stderr)
        return 1
    plot(timeline, args.out, args.title)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
