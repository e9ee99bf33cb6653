"""Program.build: the training step as a native program (rtx-translate, the
build script it writes, rtx-launch), compared with Program.train, which runs
the same step in rtx-run. CUDA programs are built against the host
emulation of the GPU runtime here (no GPU in CI); bench/gpu/ runs the real
one."""
import json
import math

import numpy as np
import pytest

import rtx
from rtx import models
from rtx.config import ParallelConfig, init
from util import TORCH_SKIP_REASON, random_batch, rel_err


def _assert_same_training(got, expected):
    np.testing.assert_allclose(got.losses, expected.losses, rtol=1e-5)
    assert set(got.params) == set(expected.params)
    for name, value in expected.params.items():
        assert rel_err(got.params[name], value) <= 1e-5, name


@pytest.mark.parametrize("device, emulate", [("cpu", False), ("cuda", True)])
def test_native_program_trains_as_rtx_run(tmp_path, device, emulate):
    """dp=2 with AdamW: two processes under rtx-launch give rtx-run's losses
    and parameters, and a second call continues from the trained ones."""
    parallel, optimizer = ParallelConfig(dp=2), rtx.AdamW(lr=1e-2)
    reference = rtx.compile(models.mlp(), group=init("cpu", 2, env={}), parallel=parallel, optimizer=optimizer)
    program = rtx.compile(models.mlp(), group=init(device, 2, env={}), parallel=parallel, optimizer=optimizer)
    native = program.build(tmp_path / device, emulate=emulate)
    assert native.path.is_file() and native.ranks == 2 and native.device == device
    assert native.source.suffix == (".cu" if device == "cuda" else ".cpp")
    batch = random_batch(program)
    got = native.train(batch, steps=4)
    _assert_same_training(got, reference.train(batch, steps=4))
    # The losses are the program's --metrics lines, with the step's measurements.
    assert [m.step for m in got.metrics] == [1, 2, 3, 4] and [m.loss for m in got.metrics] == got.losses
    assert all(m.step_time_ms > 0 and 0 <= m.collective_ms <= m.step_time_ms for m in got.metrics)


def test_calls_continue_one_run(tmp_path):
    """Two calls of 3 AdamW steps equal one of 6 (the moments and step count
    carry over); after program.params is set, training starts afresh from
    those parameters, as Program.train does."""
    def compiled():
        return rtx.compile(models.mlp(), group=init("cpu", 2, env={}), parallel=ParallelConfig(dp=2),
                           optimizer=rtx.AdamW(lr=1e-2))
    program, whole = compiled(), compiled()
    native, once = program.build(tmp_path / "a"), whole.build(tmp_path / "b")
    batch = random_batch(program)
    first, second = native.train(batch, steps=3), native.train(batch, steps=3)
    six = once.train(batch, steps=6)
    np.testing.assert_allclose(first.losses + second.losses, six.losses, rtol=1e-6)
    for name, value in six.params.items():
        assert rel_err(second.params[name], value) <= 1e-6, name
    program.params = {name: value.copy() for name, value in second.params.items()}
    reference = compiled()
    reference.params = dict(program.params)
    _assert_same_training(native.train(batch, steps=2), reference.train(batch, steps=2))


def test_cuda_group_trains_through_build_only():
    program = rtx.compile(models.mlp(), group=init("cuda", 1, env={}), optimizer=rtx.SGD())
    with pytest.raises(rtx.NotYetSupportedError, match=r"Program\.build"):
        program.train(random_batch(program))


def test_build_and_train_check_their_arguments(tmp_path, capfd):
    program = rtx.compile(models.mlp(), optimizer=rtx.SGD())
    with pytest.raises(rtx.ConfigError, match="device must be one of 'cpu', 'cuda'; got 'tpu'"):
        program.build(tmp_path, device="tpu")
    with pytest.raises(rtx.ConfigError, match="emulate=True .* needs device='cuda'"):
        program.build(tmp_path, emulate=True)
    native = program.build(tmp_path)
    with pytest.raises(rtx.ConfigError, match="steps must be a positive integer"):
        native.train(random_batch(program), steps=0)
    with pytest.raises(rtx.ConfigError, match="timeout must be a positive number"):
        native.train(random_batch(program), timeout=0)
    with pytest.raises(rtx.ConfigError, match="the batch lacks input 'labels'"):
        native.train({"x": random_batch(program)["x"]})
    capfd.readouterr()
    result = native.train(random_batch(program), steps=2, progress=True)
    echoed = capfd.readouterr().err
    assert len(result.losses) == 2 and "step 1/2: loss=" in echoed and "step 2/2: loss=" in echoed


def test_a_failing_program_raises_with_its_diagnostic(tmp_path):
    program = rtx.compile(models.mlp(), group=init("cpu", 2, env={}), parallel=ParallelConfig(dp=2),
                          optimizer=rtx.SGD())
    native = program.build(tmp_path)
    (tmp_path / "state").mkdir()
    # Resume from an empty state directory (params bypassed: {} names none).
    native._state_params = program._params = {}
    # Every rank fails alike; rtx-launch reports the first to exit, either one.
    with pytest.raises(rtx.ToolError, match=r"program failed \(exit 1\):\n(.|\n)*rank [01]: error: --state .* "
                                            r"lacks 'param:fc1.weight'"):
        native.train(random_batch(program), steps=1)


def test_buckets_and_overlap_reach_rtx_distribute():
    """bucket_bytes splits the gradient all-reduce into several buckets and
    overlap turns them into started all-reduces; the training is the same."""
    config = models.GPTConfig(layers=1, batch=2, heads=2)
    group, optimizer = init("cpu", 2, env={}), rtx.SGD(lr=0.1)
    default = rtx.compile(models.gpt2(config), group=group, parallel=ParallelConfig(dp=2), optimizer=optimizer)
    small = rtx.compile(models.gpt2(config), group=group, optimizer=optimizer,
                        parallel=ParallelConfig(dp=2, bucket_bytes=4096, overlap=True))
    assert default.train_ir.count("rtx.all_reduce ") == 1 and "all_reduce_start" not in default.train_ir
    assert small.train_ir.count("rtx.all_reduce_start") > 1
    batch = random_batch(default)
    _assert_same_training(small.train(batch, steps=3), default.train(batch, steps=3))
    with pytest.raises(rtx.ConfigError, match="parallel.overlap must be True or False"):
        ParallelConfig(overlap="yes")


def test_token_file_feeds_tokens_and_labels(tmp_path):
    """data= trains on a token file; its first step reads the first windows,
    so its loss is Program.train's on those windows. dp=2 splits the batch."""
    config = models.GPTConfig()
    text = np.tile(np.arange(config.vocab, dtype=np.uint16), 20)
    text.tofile(tmp_path / "text.bin")
    group, parallel, optimizer = init("cpu", 2, env={}), ParallelConfig(dp=2), rtx.SGD(lr=0.1)
    native = rtx.compile(models.gpt2(config), group=group, parallel=parallel, optimizer=optimizer).build(
        tmp_path / "gpt2")
    result = native.train(data=tmp_path / "text.bin", steps=3)
    assert len(result.losses) == 3 and np.all(np.isfinite(result.losses))
    seq = config.seq
    windows = np.stack([text[b * seq:b * seq + seq + 1] for b in range(config.batch)]).astype(np.int32)
    reference = rtx.compile(models.gpt2(config), group=group, parallel=parallel, optimizer=optimizer)
    first = reference.train({"tokens": windows[:, :-1], "labels": windows[:, 1:]}, steps=1)
    assert abs(result.losses[0] - first.losses[0]) <= 1e-5 * abs(first.losses[0])
    with pytest.raises(rtx.ConfigError, match="a batch or a token file"):
        native.train(random_batch(reference), data=tmp_path / "text.bin")
    with pytest.raises(rtx.ConfigError, match="no such token file"):
        native.train(data=tmp_path / "missing.bin")
    mlp = rtx.compile(models.mlp(), optimizer=rtx.SGD()).build(tmp_path / "mlp")
    with pytest.raises(rtx.ConfigError, match=r"data= feeds the inputs 'tokens' and 'labels', 'idx' and 'targets', "
                                              r"or 'input_ids' and 'labels'; this program takes labels, x \(name its "
                                              r"own with data_inputs=\(TOKENS, LABELS\)\)"):
        mlp.train(data=tmp_path / "text.bin")
    with pytest.raises(rtx.ConfigError, match="eval_data evaluates held-out batches of a token file: it needs data="):
        native.train(random_batch(reference), eval_data=tmp_path / "text.bin")
    with pytest.raises(rtx.ConfigError, match="eval_every needs eval_data=FILE"):
        native.train(data=tmp_path / "text.bin", eval_every=2)
    with pytest.raises(rtx.ConfigError, match="eval_batches needs eval_data=FILE"):
        native.train(data=tmp_path / "text.bin", eval_batches=8)
    with pytest.raises(rtx.ConfigError, match="eval_batches must be a positive integer, got 0"):
        native.train(data=tmp_path / "text.bin", eval_data=tmp_path / "text.bin", eval_batches=0)


def _held_out_windows(held, batch, rows, seq):
    """The windows of held-out batch `batch`, as the programs cut them."""
    start = batch * rows * seq
    return np.stack([held[start + r * seq:start + r * seq + seq + 1] for r in range(rows)]).astype(np.int64)


def test_held_out_loss_of_an_imported_nanogpt(tmp_path):
    """eval_data= on nanoGPT's GPT imported from PyTorch (inputs idx and
    targets) and trained from a token file: the held-out losses come after
    steps 2 and 4, the training is bit for bit that of the run without them,
    and the last is PyTorch's loss of the trained module (its parameters
    exported) on the same held-out batches."""
    torch = pytest.importorskip("torch", reason=TORCH_SKIP_REASON)
    import torch_models
    model, example = torch_models.gpt2(layers=1, vocab=37, seq=8, batch=2)
    rng = np.random.default_rng(0)
    rng.integers(0, 37, 2000).astype(np.uint16).tofile(tmp_path / "train.bin")
    held = rng.integers(0, 37, 300).astype(np.uint16)
    held.tofile(tmp_path / "held.bin")
    program = rtx.compile(model, example, optimizer=rtx.AdamW(lr=1e-2))
    assert {s.name for s in program.inputs} == {"idx", "targets"}
    initial = dict(program.params)
    native = program.build(tmp_path / "gpt")
    evaluated = native.train(data=tmp_path / "train.bin", steps=4, eval_data=tmp_path / "held.bin", eval_every=2,
                             eval_batches=3)
    assert [step for step, _ in evaluated.eval_losses] == [2, 4]
    assert [m.step for m in evaluated.metrics] == [1, 2, 3, 4]
    program.params = initial                  # afresh, without evaluation
    plain = native.train(data=tmp_path / "train.bin", steps=4)
    assert plain.losses == evaluated.losses and plain.eval_losses == []
    for name, value in plain.params.items():
        assert np.array_equal(evaluated.params[name], value), name

    buffers = {n: b for n, b in model.named_buffers()}
    model.load_state_dict({**buffers, **program.state_dict()}, strict=True)
    model.eval()
    with torch.no_grad():
        losses = [model(torch.from_numpy(w[:, :-1].copy()), torch.from_numpy(w[:, 1:].copy()))[1].item()
                  for w in (_held_out_windows(held, k, 2, 8) for k in range(3))]
    step, loss = evaluated.eval_losses[-1]
    assert abs(loss - np.mean(losses)) <= 1e-5 * abs(np.mean(losses)), (loss, losses)


def test_trace_writes_a_merged_trace_that_report_reads(tmp_path):
    program = rtx.compile(models.mlp(), group=init("cpu", 2, env={}), parallel=ParallelConfig(dp=2),
                          optimizer=rtx.SGD())
    native = program.build(tmp_path / "build")
    with pytest.raises(rtx.ConfigError, match="trace_steps needs trace=DIR"):
        native.train(random_batch(program), trace_steps="2:3")
    with pytest.raises(rtx.ConfigError, match="trace_steps must be"):
        native.train(random_batch(program), trace=tmp_path / "run", trace_steps="two")
    native.train(random_batch(program), steps=3, trace=tmp_path / "run", trace_steps="2:3")
    trace = json.loads((tmp_path / "run" / "trace.json").read_text())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert {e["pid"] for e in spans} == {0, 1}
    assert {e["args"]["step"] for e in spans if e["cat"] == "step"} == {2, 3}
    from rtx import report
    verdict = json.loads(report.run(str(tmp_path / "run"), plots=False, as_json=True))
    assert verdict["bound"] in ("compute", "network", "straggler", "input") and verdict["figures"]["ranks"] == 2

    # Speed in view: each op span carries its kind, FLOPs and bytes from the
    # cost interface, at the rank's shapes (dp=2: 8 of the 16 rows). The
    # backward's matmuls are dY W2 ([8, 10] x [10, 64]), dY^T H ([10, 8] x
    # [8, 64]) and dH^T X ([64, 8] x [8, 32]): 2*M*N*K each.
    ops = [e for e in spans if e["cat"] == "op"]
    assert all({"kind", "flops", "bytes"} <= set(e["args"]) for e in ops)
    assert sorted(e["args"]["flops"] for e in ops if e["name"] == "rtx.matmul" and e["pid"] == 0
                  and e["args"]["step"] == 2) == [2 * 8 * 64 * 10, 2 * 10 * 64 * 8, 2 * 64 * 32 * 8]
    assert trace["otherData"]["op_clock"] == "host"
    speed = json.loads(report.run(str(tmp_path / "run"), plots=False, as_json=True, peak_tflops=0.1,
                                  peak_gbps=10))["speed"]
    names = {r["name"]: r for r in speed["ops"]}
    kinds = {r["name"] for r in speed["kinds"]}
    assert {"rtx.linear", "rtx.matmul", "rtx.gelu", "rtx.sgd_update"} <= set(names)
    assert {"matmul", "elementwise", "loss", "optimizer", "collective"} <= kinds
    # One step: 2 linears forward and 3 matmuls backward per rank.
    assert (names["rtx.linear"]["calls"], names["rtx.matmul"]["calls"]) == (2, 3)
    assert names["rtx.matmul"]["flops"] == 2 * 8 * 64 * 10 + 2 * 10 * 64 * 8 + 2 * 64 * 32 * 8
    for row in speed["ops"] + speed["kinds"]:
        for column in ("ms", "share", "tflops", "gbps", "intensity", "bound_tflops", "of_bound"):
            assert row[column] is None or math.isfinite(row[column]), (row["name"], column)
    assert names["rtx.matmul"]["bound_tflops"] > 0 and names["rtx.matmul"]["of_bound"] > 0
    assert 0 < speed["mfu"] < 1 and speed["flops_per_step"] == sum(r["flops"] for r in speed["kinds"])
