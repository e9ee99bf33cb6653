"""Checks that every rank's trace (DIR/rank-R.trace.json) shows the actions of
its line of the pipeline schedule in TRAIN.mlir, in order, once per traced
step; prints one line per rank.
    check_actions.py TRAIN.mlir TRACE_DIR"""
import json
import re
import sys

train, trace_dir = sys.argv[1], sys.argv[2]
lines = re.search(r"rtx\.pipeline_schedule = \[([^\]]*)\]", open(train).read()).group(1)
schedule = [line.split(": ", 1)[1].split() for line in re.findall(r'"(rank \d+: [^"]*)"', lines)]
for rank, expected in enumerate(schedule):
    events = json.load(open(f"{trace_dir}/rank-{rank}.trace.json"))["traceEvents"]
    steps = [e for e in events if e.get("cat") == "step"]
    actions = [e for e in sorted(events, key=lambda e: e.get("ts", 0)) if e.get("cat") == "action"]
    names = [e["name"] for e in actions]
    assert names == expected * len(steps), (rank, names[:8], expected[:8])
    # Each action encloses its ops: a span never ends after the step's.
    assert all(s["ts"] <= a["ts"] and a["ts"] + a["dur"] <= s["ts"] + s["dur"] + 1
               for a in actions for s in steps if s["ts"] <= a["ts"] < s["ts"] + s["dur"])
    print(f"rank {rank}: {len(names)} action spans in schedule order")
