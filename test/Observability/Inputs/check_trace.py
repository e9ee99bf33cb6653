"""Checks a merged trace (rtx-launch --trace DIR: DIR/trace.json).

    check_trace.py TRACE.json PROGRAM.mlir --ranks N --steps A:B

- the file is valid JSON of the Chrome trace event format (a JSON Schema of
  the object form and of its complete "X" and metadata "M" events);
- every rank 0..N-1 is there, with only the traced steps A..B;
- each traced step of each rank has a span for every collective of the step
  function in PROGRAM.mlir (synchronous on the compute lane, started ones on
  the communication lane, each started one with its wait);
- on every (rank, lane) the spans nest: two spans either are disjoint or one
  holds the other;
- the clock offsets are stated, each within its error bound of 0 (all ranks
  run on this machine, whose monotonic clock they share).
Prints one line per fact it checked.
"""
import argparse
import collections
import json
import re
import sys

import jsonschema

EVENT = {
    "type": "object",
    "required": ["name", "ph", "pid", "tid"],
    "properties": {
        "name": {"type": "string"},
        "ph": {"enum": ["X", "M"]},
        "pid": {"type": "integer", "minimum": 0},
        "tid": {"type": "integer", "minimum": 0},
        "args": {"type": "object"},
    },
    "if": {"properties": {"ph": {"const": "X"}}},
    "then": {
        "required": ["cat", "ts", "dur", "args"],
        "properties": {
            "cat": {"type": "string"},
            "ts": {"type": "number", "minimum": 0},
            "dur": {"type": "number", "minimum": 0},
            "args": {"type": "object", "required": ["step"],
                     "properties": {"step": {"type": "integer", "minimum": 0}}},
        },
    },
}
SCHEMA = {
    "type": "object",
    "required": ["traceEvents", "otherData"],
    "properties": {
        "traceEvents": {"type": "array", "items": EVENT},
        "displayTimeUnit": {"enum": ["ms", "ns"]},
        "otherData": {"type": "object",
                      "required": ["clock_offsets_us", "clock_offset_errors_us", "ranks"]},
    },
}
COLLECTIVE = re.compile(r"= rtx\.(all_reduce|all_gather|reduce_scatter|all_to_all|broadcast_from|"
                        r"permute)(_start)?\b")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trace")
    parser.add_argument("program")
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--steps", required=True)
    args = parser.parse_args()
    first, last = (int(s) for s in args.steps.split(":"))
    trace = json.load(open(args.trace))
    jsonschema.validate(trace, SCHEMA)
    print("schema: valid")

    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    ranks = sorted({e["pid"] for e in spans})
    assert ranks == list(range(args.ranks)), ranks
    print(f"ranks: {ranks}")
    steps = sorted({e["args"]["step"] for e in spans if e["args"]["step"] > 0})
    assert steps == list(range(first, last + 1)), steps
    print(f"steps: {steps}")

    ops = collections.Counter(
        (m.group(1), bool(m.group(2))) for m in COLLECTIVE.finditer(open(args.program).read()))
    assert ops, "the program has no collectives"
    sync = sum(n for (_, started), n in ops.items() if not started)
    started = sum(n for (_, s), n in ops.items() if s)
    for rank in ranks:
        for step in steps:
            mine = [e for e in spans if e["pid"] == rank and e["args"]["step"] == step]
            on_compute = [e for e in mine if e["cat"] == "collective" and e["tid"] == 0]
            on_comm = [e for e in mine if e["cat"] == "collective" and e["tid"] == 1]
            waits = [e for e in mine if e["cat"] == "wait" and e["name"] == "wait"]
            assert len(on_compute) == sync, (rank, step, len(on_compute), sync)
            assert len(on_comm) == started, (rank, step, len(on_comm), started)
            assert len(waits) == started, (rank, step, len(waits), started)
            for e in on_compute + on_comm:
                a = e["args"]
                assert a["group"] and a["bytes"] > 0 and a["algorithm"] and a["op"], e
            assert sum(1 for e in mine if e["cat"] == "step") == 1
            assert sum(1 for e in mine if e["cat"] == "op") > 0
    print(f"collectives: {sync} synchronous and {started} started (each with its wait) "
          f"in every traced step of every rank")

    lanes = collections.defaultdict(list)
    for e in spans:
        lanes[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"], e["name"]))
    eps = 0.01  # us: float rounding of the merge's shifts
    for key, intervals in lanes.items():
        intervals.sort(key=lambda i: (i[0], -i[1]))
        open_spans = []
        for start, end, name in intervals:
            while open_spans and open_spans[-1][1] <= start + eps:
                open_spans.pop()
            if open_spans:
                assert end <= open_spans[-1][1] + eps, (key, name, open_spans[-1])
            open_spans.append((start, end, name))
    print(f"nesting: the spans of {len(lanes)} lanes nest")

    other = trace["otherData"]
    for rank in ranks:
        offset = other["clock_offsets_us"][str(rank)]
        error = other["clock_offset_errors_us"][str(rank)]
        assert abs(offset) <= error + 1.0, (rank, offset, error)
    print("clocks: every offset is stated and within its error bound of 0")


if __name__ == "__main__":
    sys.exit(main())
