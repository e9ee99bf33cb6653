"""ElasticConfig drives a native program's failure handling
(docs/checkpoint.md): checkpoints, rtx-launch restarts from them (also onto
fewer ranks), and pre-emption. Each case compares with an uninterrupted
native run of the same steps; failures are injected with the checkpoint
failpoints (RTX_FAULT_CHECKPOINT_CRASH_AT) and a real SIGTERM."""
import os
import signal
import threading
import time
import warnings

import numpy as np
import pytest

import rtx
from rtx import models
from rtx.config import ConfigError, NotYetSupportedError, ParallelConfig, init
from util import random_batch, rel_err


def _compiled(elastic=None, dp=2):
    return rtx.compile(models.mlp(), group=init("cpu", dp, env={}), parallel=ParallelConfig(dp=dp),
                       optimizer=rtx.AdamW(lr=1e-2), elastic=elastic)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted dp=2 run of 6 steps, without ElasticConfig."""
    program = _compiled()
    native = program.build(tmp_path_factory.mktemp("reference"))
    batch = random_batch(program)
    return batch, native.train(batch, steps=6)


def _train_through_a_crash(native, batch, monkeypatch, warning):
    """Trains 6 steps with rank 0 killed right after committing the
    checkpoint of step 2 (failpoint); the recovery must warn `warning`.
    Returns the result and the warnings."""
    monkeypatch.setenv("RTX_FAULT_CHECKPOINT_CRASH_AT", "after-commit@2")
    with pytest.warns(rtx.RtxToolWarning, match=warning) as warned:
        got = native.train(batch, steps=6)
    return got, warned


def _assert_same_run(got, expected):
    """Losses and parameters bit for bit (the same plan recovered)."""
    np.testing.assert_array_equal(got.losses, expected.losses)
    for name, value in expected.params.items():
        np.testing.assert_array_equal(got.params[name], value, err_msg=name)


def _assert_close_run(got, expected):
    """Within the design tolerance (another plan sums in another order)."""
    np.testing.assert_allclose(got.losses, expected.losses, rtol=1e-4)
    for name, value in expected.params.items():
        assert rel_err(got.params[name], value) <= 1e-4, name


def test_a_killed_rank_restarts_from_the_checkpoint(tmp_path, monkeypatch, reference):
    """Rank 0 is killed right after committing the checkpoint of step 2
    (failpoint); rtx-launch restarts both ranks from it and the call returns
    the losses of steps 1-6 and the parameters of the uninterrupted run, bit
    for bit, with every step replayed against the log (deterministic)."""
    batch, expected = reference
    elastic = rtx.ElasticConfig(max_restarts=1, checkpoint_interval=2, deterministic=True,
                                checkpoint_dir=str(tmp_path / "ck"))
    native = _compiled(elastic).build(tmp_path / "build")
    got, _ = _train_through_a_crash(native, batch, monkeypatch, "restart 1")
    assert not got.preempted
    assert [m.global_step for m in got.metrics] == [1, 2, 3, 4, 5, 6]
    _assert_same_run(got, expected)
    assert (tmp_path / "ck" / "wal.log").is_file()


def test_in_job_recovery_replaces_only_the_failed_rank(tmp_path, monkeypatch, reference):
    """recover="in-job": rank 0 dies right after committing the checkpoint
    of step 2; rank 1 keeps its process and state, a replacement rank 0
    takes rank 1's state, and the call returns the uninterrupted run's
    losses and parameters bit for bit. No restart of every rank happens."""
    batch, expected = reference
    elastic = rtx.ElasticConfig(max_restarts=1, checkpoint_interval=2, recover="in-job",
                                checkpoint_dir=str(tmp_path / "ck"))
    native = _compiled(elastic).build(tmp_path / "build")
    got, warned = _train_through_a_crash(native, batch, monkeypatch,
                                         "in-job recovery: epoch 1: replaced rank 0")
    assert not any("restart 1" in str(w.message) for w in warned)
    assert [m.global_step for m in got.metrics] == [1, 2, 3, 4, 5, 6]
    _assert_same_run(got, expected)


def test_a_restart_shrinks_to_min_ranks(tmp_path, monkeypatch, reference):
    """min_ranks=1: the restart runs the program built for one rank (the
    same global batch); the losses match the uninterrupted dp=2 run within
    the design tolerance (another plan sums in another order)."""
    batch, expected = reference
    elastic = rtx.ElasticConfig(max_restarts=1, min_ranks=1, checkpoint_interval=2,
                                checkpoint_dir=str(tmp_path / "ck"))
    native = _compiled(elastic).build(tmp_path / "build")
    got, _ = _train_through_a_crash(native, batch, monkeypatch, r"with 1 rank\(s\)")
    assert (tmp_path / "build" / "world-1" / "program").is_file()
    _assert_close_run(got, expected)


def test_in_job_recovery_with_min_ranks_shrinks_the_job(tmp_path, monkeypatch, reference):
    """recover="in-job" with min_ranks=1: rank 0 dies after the commit of
    step 2; the survivor does not wait for a replacement but saves what it
    holds (here step 2 is committed already) and the job goes on in the
    one-rank program, within the design tolerance of the dp=2 run."""
    batch, expected = reference
    elastic = rtx.ElasticConfig(max_restarts=1, min_ranks=1, checkpoint_interval=2, recover="in-job",
                                checkpoint_dir=str(tmp_path / "ck"))
    native = _compiled(elastic).build(tmp_path / "build")
    got, warned = _train_through_a_crash(native, batch, monkeypatch, r"shrinking to 1 rank\(s\)")
    assert any("restart 1 with 1 rank(s) (shrunk)" in str(w.message) for w in warned)
    assert not any("replaced rank" in str(w.message) for w in warned)
    assert [m.global_step for m in got.metrics][-1] == 6
    _assert_close_run(got, expected)


def test_a_job_grows_when_a_node_offers_ranks(tmp_path, monkeypatch):
    """max_ranks=3: an offer of two ranks (rtx.offer_ranks, made before the
    call) grows the dp=2 job at a step boundary to three, its limit, in the
    program built for three ranks (the MLP at a global batch of 12, which
    2 and 3 divide). Every step runs once, within the design tolerance of
    the uninterrupted dp=2 run; the offer is taken once, so the next call
    of the same run id starts with two ranks and stays at two."""
    def compiled(elastic=None):
        return rtx.compile(models.mlp(batch=12), group=init("cpu", 2, env={}), parallel=ParallelConfig(dp=2),
                           optimizer=rtx.AdamW(lr=1e-2), elastic=elastic)
    program = compiled()
    batch = random_batch(program)
    expected = program.build(tmp_path / "reference").train(batch, steps=12)

    elastic = rtx.ElasticConfig(rendezvous=f"file://{tmp_path / 'store'}", run_id="grow", max_ranks=3,
                                preempt_policy="save", checkpoint_dir=str(tmp_path / "ck"))
    native = compiled(elastic).build(tmp_path / "build")
    assert rtx.offer_ranks(elastic, 2) == 0
    # Rank 0 takes 150 ms a step, so the launch sees the offer mid-run.
    monkeypatch.setenv("RTX_FAULT_SLOW_RANK", "0:150")
    with pytest.warns(rtx.RtxToolWarning, match="growing: a node offered 2 rank") as warned:
        first = native.train(batch, steps=6)
    assert any("with 3 rank(s) (grown)" in str(w.message) for w in warned)
    assert (tmp_path / "build" / "world-3" / "program").is_file()
    assert [m.global_step for m in first.metrics] == [1, 2, 3, 4, 5, 6]
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        second = native.train(batch, steps=6)
    assert not any("growing" in str(w.message) for w in again), [str(w.message) for w in again]
    assert [m.global_step for m in second.metrics] == [7, 8, 9, 10, 11, 12]
    np.testing.assert_allclose(first.losses + second.losses, expected.losses, rtol=1e-4)
    for name, value in expected.params.items():
        assert rel_err(second.params[name], value) <= 1e-4, name


def test_an_auto_planned_job_is_planned_again_when_it_shrinks(tmp_path, monkeypatch):
    """parallel="auto" with min_ranks=1: the program for one rank comes from
    the planner (asked for 1 device on the same profile), not from the
    shrink-dp rule; the restarted run matches the uninterrupted one within
    the design tolerance."""
    def compiled(elastic=None):
        return rtx.compile(models.mlp(), group=init("cpu", 2, env={}), parallel="auto", hardware="cpu-host",
                           optimizer=rtx.AdamW(lr=1e-2), elastic=elastic)
    plain = compiled()
    batch = random_batch(plain)
    expected = plain.build(tmp_path / "plain").train(batch, steps=6)
    planned_for = []
    real_plan = rtx.planner.plan

    def spy(model_ir, devices, *args, **kwargs):
        planned_for.append((devices, args[0] if args else kwargs.get("hardware")))
        return real_plan(model_ir, devices, *args, **kwargs)
    monkeypatch.setattr(rtx.planner, "plan", spy)
    elastic = rtx.ElasticConfig(max_restarts=1, min_ranks=1, checkpoint_interval=2,
                                checkpoint_dir=str(tmp_path / "ck"))
    native = compiled(elastic).build(tmp_path / "build")
    got, _ = _train_through_a_crash(native, batch, monkeypatch, r"with 1 rank\(s\)")
    assert (1, "cpu-host") in planned_for
    assert (tmp_path / "build" / "world-1" / "program").is_file()
    _assert_close_run(got, expected)


def test_sigterm_preempts_and_the_next_call_continues(tmp_path, reference):
    """preempt_policy="save": a SIGTERM to this process once the checkpoint
    of step 2 is committed reaches rtx-launch, the ranks stop after a step
    they agree on, and the call returns early with preempted=True; the next
    call finishes the 6 steps, and together they equal the uninterrupted
    run bit for bit."""
    batch, expected = reference
    ck = tmp_path / "ck"
    elastic = rtx.ElasticConfig(preempt_policy="save", checkpoint_interval=2, checkpoint_dir=str(ck))
    native = _compiled(elastic).build(tmp_path / "build")
    stop = threading.Event()

    def preempt():
        while not stop.is_set() and not (ck / "step-00000002" / "manifest.json").exists():
            time.sleep(0.01)
        if not stop.is_set():
            os.kill(os.getpid(), signal.SIGTERM)

    os.environ["RTX_FAULT_SLOW_RANK"] = "0:300"   # the signal lands before step 6
    watcher = threading.Thread(target=preempt)
    watcher.start()
    try:
        first = native.train(batch, steps=6)
    finally:
        stop.set()
        watcher.join()
        del os.environ["RTX_FAULT_SLOW_RANK"]
    assert first.preempted and 2 <= len(first.losses) < 6
    second = native.train(batch, steps=6 - len(first.losses))
    assert not second.preempted
    np.testing.assert_array_equal(first.losses + second.losses, expected.losses)
    for name, value in expected.params.items():
        np.testing.assert_array_equal(second.params[name], value, err_msg=name)


def test_elastic_options_are_checked():
    with pytest.raises(ConfigError, match="needs max_restarts >= 1"):
        rtx.ElasticConfig(min_ranks=1)
    with pytest.raises(ConfigError, match="elastic.max_restarts must be a whole number"):
        rtx.ElasticConfig(max_restarts=-1)
    with pytest.raises(ConfigError, match="elastic.deterministic checks resumes from checkpoints"):
        rtx.ElasticConfig(deterministic=True)
    with pytest.raises(ConfigError, match="elastic.timeout"):
        rtx.ElasticConfig(timeout="soon")
    with pytest.raises(ConfigError, match="elastic.recover must be one of"):
        rtx.ElasticConfig(max_restarts=1, recover="sometimes")
    with pytest.raises(ConfigError, match="it needs max_restarts >= 1"):
        rtx.ElasticConfig(recover="in-job")
    with pytest.raises(ConfigError, match="max_ranks grows the job when a node offers ranks"):
        rtx.ElasticConfig(max_ranks=4, preempt_policy="save")
    with pytest.raises(ConfigError, match="it needs preempt_policy='save'"):
        rtx.ElasticConfig(max_ranks=4, rendezvous="file:///tmp/r", run_id="job")
    with pytest.raises(ConfigError, match="elastic.run_id must be"):
        rtx.ElasticConfig(run_id="a b")
    with pytest.raises(ConfigError, match="needs rendezvous and run_id"):
        rtx.offer_ranks(rtx.ElasticConfig(), 1)
    assert not rtx.ElasticConfig().checkpoints and rtx.ElasticConfig(preempt_policy="save").checkpoints
    assert rtx.ElasticConfig(rendezvous="file:///tmp/r").store() == "file:/tmp/r"
    program = _compiled(rtx.ElasticConfig(max_restarts=1))
    with pytest.raises(NotYetSupportedError, match="build the native program"):
        program.train(random_batch(program), steps=1)
