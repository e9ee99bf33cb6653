"""rtx report's analysis on hand-made traces whose verdict is known: each
case is a few spans per rank and step, in the format the programs write
(docs/observability.md). Real runs are test/Observability/verdicts.test."""
import json

import pytest

from rtx import report, speed
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


# --- speed in view: the per-op roofline table and MFU (rtx/speed.py) ---------------------------

def speed_trace(peaks=True):
    """2 ranks x 2 steps of 10 ms on a device of 100 TFLOP/s and 1000 GB/s
    (ridge: 100 FLOP/B). Per step and rank: a matmul of 2e11 FLOPs over 1e9
    bytes in 4 ms, a GELU of 1e9 FLOPs over 2e9 bytes in 4 ms, a reshape
    moving 1e9 bytes in 2 ms, and a started all-reduce of 4e8 bytes in 1 ms."""
    events = []
    for step in (1, 2):
        for rank in (0, 1):
            t0 = step * 1e6
            events += [
                span(rank, step, f"step {step}", "step", t0, 10_000),
                span(rank, step, "rtx.matmul", "op", t0, 4_000, tid=4, flops=2e11, bytes=1e9,
                     kind="matmul"),
                span(rank, step, "rtx.gelu", "op", t0 + 4_000, 4_000, tid=4, flops=1e9, bytes=2e9,
                     kind="elementwise"),
                span(rank, step, "rtx.reshape", "op", t0 + 8_000, 2_000, tid=4, flops=0, bytes=1e9,
                     kind="layout"),
                span(rank, step, "all_reduce", "collective", t0 + 8_000, 1_000, tid=1, group=[0, 1],
                     bytes=4e8, op="rtx.all_reduce_start"),
            ]
    other = {"mesh": "dp:2", "op_clock": "device: CUDA events on the compute stream"}
    if peaks:
        other.update(peak_flops=100e12, peak_bytes_per_s=1000e9,
                     peak_source="the program's --peak-tflops/--peak-gbps")
    return {"traceEvents": events, "otherData": other}


def speed_of(trace, **kw):
    analysis = report.analyze(trace)
    peaks = speed.choose_peaks(trace, **kw)
    return speed.analyze(trace, report.traced_steps(analysis), peaks)


def test_speed_table_has_the_known_rates_and_bounds():
    s = speed_of(speed_trace())
    assert (s.step_ms, s.ranks, s.op_clock.startswith("device")) == (10.0, 2, True)
    rows = {r.name: r for r in s.ops}
    assert [r.name for r in s.ops] == ["rtx.matmul", "rtx.gelu", "rtx.reshape", "all_reduce"]
    approx = lambda x: pytest.approx(x, rel=1e-12)  # noqa: E731
    mm = rows["rtx.matmul"]
    # 2e11 FLOPs in 4 ms: 50 TFLOP/s; 1e9 B: 250 GB/s; 200 FLOP/B is past the
    # ridge, so the bound is the 100 TFLOP/s peak: half of it achieved.
    assert (mm.calls, mm.ms, mm.share) == (1.0, 4.0, 0.4)
    assert (mm.tflops, mm.gbps, mm.intensity) == (approx(50), approx(250), approx(200))
    assert (mm.bound_tflops, mm.of_bound) == (approx(100), approx(0.5))
    gelu = rows["rtx.gelu"]
    # 0.5 FLOP/B: memory-bound, 0.5 x 1000 GB/s = 0.5 TFLOP/s; 0.25 achieved.
    assert (gelu.tflops, gelu.gbps, gelu.intensity) == (approx(0.25), approx(500), approx(0.5))
    assert (gelu.bound_tflops, gelu.of_bound) == (approx(0.5), approx(0.5))
    copy = rows["rtx.reshape"]
    # No FLOPs: the share of peak bandwidth, 500 of 1000 GB/s.
    assert (copy.gbps, copy.bound_tflops, copy.of_bound) == (approx(500), None, approx(0.5))
    ar = rows["all_reduce"]
    assert (ar.kind, ar.gbps, ar.bound_tflops, ar.of_bound) == ("collective", approx(400), None, None)
    kinds = {r.name: r for r in s.kinds}
    assert set(kinds) == {"matmul", "elementwise", "layout", "collective"}
    assert kinds["matmul"].ms == 4.0 and kinds["matmul"].of_bound == approx(0.5)
    # MFU from the ops' FLOPs: (2e11 + 1e9) per 10 ms step and rank over 100 TFLOP/s.
    assert s.flops_per_step == approx(2.01e11)
    assert s.mfu == approx(0.201)
    text = speed.format_speed(s)
    assert "MFU: 20.10% = 0.201 TFLOP per step and rank (the ops' FLOPs (cost interface))" in text
    assert "100 TFLOP/s (the program's --peak-tflops/--peak-gbps)" in text
    assert "op times from device events" in text


def test_mfu_from_the_model_flops_counts_every_rank():
    trace = speed_trace()
    analysis = report.analyze(trace)
    s = speed.analyze(trace, report.traced_steps(analysis), speed.choose_peaks(trace),
                      model_flops=8e11)
    # 8e11 per step over 2 ranks: 4e11 per rank in 10 ms over 100 TFLOP/s.
    assert s.mfu == pytest.approx(0.4, rel=1e-12)
    assert s.flops_source == "--model-flops 8e+11 per step over 2 rank(s)"


def test_peaks_come_from_the_flags_then_the_profile_then_the_trace():
    trace = speed_trace()
    p = speed.choose_peaks(trace, peak_tflops=50)
    assert (p.flops, p.flops_source) == (50e12, "--peak-tflops")
    assert (p.bytes_per_s, p.bytes_source) == (1000e9, "the program's --peak-tflops/--peak-gbps")
    p = speed.choose_peaks(trace, profile="hgx-h200")
    # lib/Analysis/profiles/hgx-h200.json: dense bf16 989.4 TFLOP/s, 4.8 TB/s.
    assert (p.flops, p.bytes_per_s) == (989.4e12, 4.8e12)
    assert p.flops_source == "hardware profile hgx-h200, bf16"
    assert speed.choose_peaks(trace, profile="hgx-h200", dtype="f32").flops == 67e12
    none = speed.choose_peaks(speed_trace(peaks=False))
    assert (none.flops, none.bytes_per_s) == (0, 0) and "no roofline, no MFU" in none.describe()
    with pytest.raises(speed.SpeedError, match="cannot read the hardware profile nope"):
        speed.choose_peaks(trace, profile="nope")


def test_without_peaks_the_table_has_rates_but_no_bounds():
    s = speed_of(speed_trace(peaks=False))
    mm = next(r for r in s.ops if r.name == "rtx.matmul")
    assert mm.tflops == pytest.approx(50) and (mm.bound_tflops, mm.of_bound, s.mfu) == (None, None, None)
    assert "MFU: needs a peak FLOP/s" in speed.format_speed(s)


def test_cli_prints_the_speed_and_draws_the_roofline(tmp_path, capsys):
    (tmp_path / "trace.json").write_text(json.dumps(speed_trace()))
    assert cli(["report", str(tmp_path), "--json", "--no-plots"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["speed"]["mfu"] == pytest.approx(0.201)
    assert out["speed"]["ops"][0]["name"] == "rtx.matmul"
    assert cli(["report", str(tmp_path), "--peak-tflops", "-1", "--no-plots"]) == 1
    assert "--peak-tflops must be a positive number" in capsys.readouterr().err
    pytest.importorskip("matplotlib")
    assert cli(["report", str(tmp_path), "--peak-tflops", "200", "--out", str(tmp_path / "plots")]) == 0
    text = capsys.readouterr().out
    assert "MFU: 10.05%" in text and "200 TFLOP/s (--peak-tflops)" in text
    assert (tmp_path / "plots" / "roofline.png").stat().st_size > 0
