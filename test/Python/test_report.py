"""rtx report's analysis on hand-made traces whose verdict is known: each
case is a few spans per rank and step, in the format the programs write
(docs/observability.md). Real runs are test/Observability/verdicts.test."""
import json

import pytest

from rtx import report
from rtx.__main__ import main as cli


def span(rank, step, name, cat, ts, dur, tid=0, **args):
    return {"name": name, "cat": cat, "ph": "X", "ts": ts, "dur": dur, "pid": rank, "tid": tid,
            "args": dict(step=step, **args)}


def run_dir(tmp_path, events, mesh="dp:2"):
    (tmp_path / "trace.json").write_text(json.dumps(
        {"traceEvents": events, "otherData": {"mesh": mesh}}))
    return tmp_path


def steps(ranks, compute_us, wait_us=0, data_us=0, all_reduces=(), steps=3, tid=0):
    """Each rank's steps: data, then compute (one op span), then its waits."""
    events = []
    for step in range(1, steps + 1):
        t0 = step * 1e6
        for rank in range(ranks):
            c = compute_us[rank] if isinstance(compute_us, (list, tuple)) else compute_us
            w = wait_us[rank] if isinstance(wait_us, (list, tuple)) else wait_us
            events.append(span(rank, step, f"step {step}", "step", t0, data_us + c + w))
            if data_us:
                events.append(span(rank, step, "data load", "data", t0, data_us, tid=2))
            events.append(span(rank, step, "rtx.matmul", "op", t0 + data_us, c, flops=2e9, bytes=1e6))
            sizes = list(all_reduces) or ([1 << 20] if w else [])
            for i, size in enumerate(sizes):
                d = w / len(sizes)
                events.append(span(rank, step, "all_reduce", "collective", t0 + data_us + c + i * d, d,
                                   tid=tid, group=list(range(ranks)), bytes=size, op="rtx.all_reduce"))
    return events


def verdict(tmp_path, events, **kw):
    return report.verdict(report.analyze(report.load_trace(run_dir(tmp_path, events, **kw))))


def test_compute_bound(tmp_path):
    v = verdict(tmp_path, steps(1, 10_000), mesh="dp:1")
    assert v.bound == "compute", v
    assert "rtx.matmul" in v.hints[0] and "GFLOP/s" in v.hints[0]


def test_network_bound_with_small_buckets_says_overlap_and_bucket_size(tmp_path):
    v = verdict(tmp_path, steps(2, 2_000, wait_us=8_000, all_reduces=[100_000] * 8))
    assert v.bound == "network", v
    assert v.figures["wait_pct"] == 80.0
    assert v.hints[0].startswith("enable overlap")
    assert any("raise bucket_bytes to" in h for h in v.hints), v.hints


def test_overlapped_collectives_do_not_ask_for_overlap(tmp_path):
    # The all-reduces ran on the communication lane and the step waited for
    # none of them: compute-bound.
    v = verdict(tmp_path, steps(2, 10_000, wait_us=0) + [
        span(r, s, "all_reduce", "collective", s * 1e6 + 100, 5_000, tid=1, group=[0, 1], bytes=4096)
        for r in range(2) for s in range(1, 4)])
    assert v.bound == "compute", v


def test_straggler_is_named(tmp_path):
    # Rank 2 computes 30 ms; the others 10 ms and wait 20 ms for it.
    v = verdict(tmp_path, steps(4, [10_000, 10_000, 30_000, 10_000],
                                wait_us=[20_000, 20_000, 100, 20_000]))
    assert (v.bound, v.straggler) == ("straggler", 2), v
    assert "rank 2 computes 30.0 ms per step, 3.0x the 10.0 ms" in v.summary


def test_a_small_imbalance_is_no_straggler(tmp_path):
    v = verdict(tmp_path, steps(2, [10_000, 11_000], wait_us=[1_100, 100]))
    assert v.bound == "compute", v


def test_input_bound(tmp_path):
    v = verdict(tmp_path, steps(2, 5_000, data_us=5_000, wait_us=100))
    assert v.bound == "input", v
    assert "data loads take 5.0 ms of the 10.1 ms step" in v.summary


def test_rank_files_are_merged_with_their_offsets(tmp_path):
    # Without trace.json the report merges rank-R.trace.json itself.
    for rank, offset in ((0, 0.0), (1, 500.0)):
        events = [e for e in steps(2, 1_000) if e["pid"] == rank]
        for e in events:
            e["ts"] += offset
        (tmp_path / f"rank-{rank}.trace.json").write_text(json.dumps(
            {"traceEvents": events, "otherData": {"rank": rank, "clock_offset_us": offset}}))
    trace = report.load_trace(tmp_path)
    starts = sorted({e["ts"] for e in trace["traceEvents"] if e["cat"] == "step" and e["args"]["step"] == 1})
    assert starts == [1e6]


def test_cli_errors(tmp_path, capsys):
    assert cli(["report", str(tmp_path / "missing")]) == 1
    assert "no such run directory" in capsys.readouterr().err
    assert cli(["report", str(tmp_path)]) == 1
    assert "has no trace.json and no rank-R.trace.json" in capsys.readouterr().err
    (tmp_path / "trace.json").write_text("{\"traceEvents\": []}")
    assert cli(["report", str(tmp_path), "--no-plots"]) == 1
    assert "the trace has no step spans" in capsys.readouterr().err
    run_dir(tmp_path, steps(1, 1_000))
    assert cli(["report", str(tmp_path), "--balance", "0.5"]) == 1
    assert "--balance must be above 1" in capsys.readouterr().err
    assert cli(["report", str(tmp_path), "--json", "--no-plots"]) == 0
    assert json.loads(capsys.readouterr().out)["bound"] == "compute"


def test_scaling_results_are_checked(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"ranks": 1}]))
    with pytest.raises(report.ReportError, match="expected a list of"):
        report.plot_scaling(bad, tmp_path / "s.png")
