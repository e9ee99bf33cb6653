"""Configuration: every option is validated; options that later versions
implement are accepted and refused by compile with an error naming them."""
import pytest

import rtx
from rtx import models
from rtx.config import (AdamW, ConfigError, ElasticConfig, NotYetSupportedError, ParallelConfig, SGD,
                        ShardingConfig, init)


# --- init ------------------------------------------------------------------------------

def test_init_single_process():
    group = init("cpu", 1, env={})
    assert (group.backend, group.devices, group.rank, group.world_size, group.launcher) == \
        ("cpu", ("cpu",), 0, 1, "single")
    assert group.size == 1 and group.unsupported() == []


@pytest.mark.parametrize("env, launcher, rank, world, local", [
    ({"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1"}, "torchrun", 3, 8, 1),
    ({"SLURM_PROCID": "5", "SLURM_NTASKS": "6", "SLURM_LOCALID": "2"}, "slurm", 5, 6, 2),
    ({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "1"},
     "mpirun", 1, 2, 1),
])
def test_init_reads_the_launcher_environment(env, launcher, rank, world, local):
    group = init("nccl", ["cuda:0"], env=env)
    assert (group.backend, group.launcher, group.rank, group.world_size, group.local_rank) == \
        ("cuda", launcher, rank, world, local)


@pytest.mark.parametrize("kwargs, message", [
    (dict(backend="mpi"), "backend must be one of"),
    (dict(devices=0), "devices must be a positive integer"),
    (dict(devices=True), "devices must be a positive count"),
    (dict(devices=["cuda:0"]), "'cuda:0' is not a cpu device"),
    (dict(backend="cuda", devices=["cuda:0", "cuda:0"]), "names a device twice"),
    (dict(env={"RANK": "4", "WORLD_SIZE": "4"}), "rank 4 is not within a world of 4"),
    (dict(env={"RANK": "x", "WORLD_SIZE": "4"}), "RANK='x' is not an integer"),
])
def test_init_rejects_bad_values(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        init(**{"env": {}, **kwargs})


# --- the option groups --------------------------------------------------------------------

@pytest.mark.parametrize("make, message", [
    (lambda: ParallelConfig(dp=0), "parallel.dp must be a positive integer"),
    (lambda: ParallelConfig(tp=1.5), "parallel.tp must be a positive integer"),
    (lambda: ParallelConfig(micro_batch="2"), "parallel.micro_batch must be a positive integer"),
    (lambda: ParallelConfig(bucket_bytes=-1), "parallel.bucket_bytes must be a positive integer"),
    (lambda: ShardingConfig(shard_strategy="zero4"), "sharding.shard_strategy must be one of"),
    (lambda: ShardingConfig(offload="disk"), "sharding.offload must be one of"),
    (lambda: ShardingConfig(offload="cpu"), "needs a shard_strategy other than 'none'"),
    (lambda: ShardingConfig("zero2", "cpu", offload_dir="/tmp/x"), "it needs offload 'nvme'"),
    (lambda: ShardingConfig("zero2", "nvme", offload_dir=""), "offload_dir must be a folder path"),
    (lambda: ShardingConfig(shard_strategy="zero2", auto_wrap=1000), "needs shard_strategy 'zero3', 'fsdp' or 'hsdp'"),
    (lambda: ShardingConfig(shard_strategy="fsdp", auto_wrap=[]), "must name module classes"),
    (lambda: ShardingConfig(shard_strategy="hsdp"), "'hsdp' needs shard_group"),
    (lambda: ShardingConfig(shard_strategy="fsdp", shard_group=2), "needs shard_strategy 'hsdp'"),
    (lambda: ShardingConfig(shard_strategy="hsdp", shard_group=0), "sharding.shard_group must be a positive"),
    (lambda: ShardingConfig("hsdp", shard_group=3).mesh(ParallelConfig(dp=4)), "must divide parallel.dp=4"),
    (lambda: ShardingConfig("hsdp", shard_group=4).mesh(ParallelConfig(dp=4)), "shard_group == dp is 'fsdp'"),
    (lambda: ShardingConfig(shard_strategy="fsdp", auto_wrap=0), "sharding.auto_wrap must be a positive"),
    (lambda: ShardingConfig(tp_hints={"q_proj": "col"}), r"sharding.tp_hints\['q_proj'\] must be 'column' or 'row', "
                                                         "got 'col'"),
    (lambda: ShardingConfig(tp_hints={"o_proj": None}), r"sharding.tp_hints\['o_proj'\] must be 'column' or 'row'"),
    (lambda: ShardingConfig(tp_hints={"q,k": "row"}), "'q,k' is not a parameter-name suffix"),
    (lambda: ShardingConfig(tp_hints={"q:x": "row"}), "'q:x' is not a parameter-name suffix"),
    (lambda: ShardingConfig(tp_hints={"": "row"}), "'' is not a parameter-name suffix"),
    (lambda: ShardingConfig(tp_hints={3: "row"}), "3 is not a parameter-name suffix"),
    (lambda: ShardingConfig(tp_hints=["q_proj"]), "sharding.tp_hints must map parameter-name suffixes"),
    (lambda: ElasticConfig(rendezvous="etcd://host:2379"), "elastic.rendezvous must be"),
    (lambda: ElasticConfig(rendezvous="redis://host"), "needs redis://HOST:PORT"),
    (lambda: ElasticConfig(preempt_policy="ignore"), "elastic.preempt_policy must be one of"),
    (lambda: ElasticConfig(preempt_policy="resume"), "elastic.preempt_policy must be one of 'fail', 'save'"),
    (lambda: ElasticConfig(max_restarts=True), "elastic.max_restarts must be a whole number"),
    (lambda: ElasticConfig(restart_window=0), "elastic.restart_window must be a number > 0"),
    (lambda: ElasticConfig(checkpoint_interval=0), "elastic.checkpoint_interval must be a positive"),
    (lambda: AdamW(lr=0), "optimizer.lr must be a number > 0"),
    (lambda: AdamW(betas=(0.9, 1.0)), "optimizer.betas"),
    (lambda: SGD(weight_decay=-1), "optimizer.weight_decay must be a number >= 0"),
])
def test_options_are_validated(make, message):
    with pytest.raises(ConfigError, match=message):
        make()


def test_valid_future_options_are_accepted():
    assert ParallelConfig(dp=2, tp=4, pp=2, sp=2, micro_batch=8, bucket_bytes=1 << 25).ranks == 32
    assert ShardingConfig("fsdp", "nvme", {"Block"}).auto_wrap == frozenset({"Block"})
    assert ElasticConfig("file:///tmp/rdzv", "save", 100).checkpoint_interval == 100
    assert ElasticConfig("redis://10.0.0.1:6379", "save").store() == "redis://10.0.0.1:6379"


# --- compile refuses what it cannot do yet -------------------------------------------------

@pytest.mark.parametrize("kwargs, option", [
    # Several processes work (test_torchrun.py), but each drives one device.
    (dict(group=init("cpu", 2, env={"WORLD_SIZE": "2", "RANK": "0"}), parallel=ParallelConfig(dp=4)),
     "devices=['cpu', 'cpu']"),
])
def test_compile_names_options_not_yet_supported(kwargs, option):
    with pytest.raises(NotYetSupportedError) as info:
        rtx.compile(models.mlp(), **kwargs)
    assert option in str(info.value) and "not yet supported" in str(info.value)


def test_compile_checks_ranks_against_the_group():
    with pytest.raises(ConfigError, match=r"dp\*tp\*pp\*sp = 4 ranks, but the group has 1"):
        rtx.compile(models.mlp(), parallel=ParallelConfig(dp=2, tp=2))


def test_compile_rejects_wrong_option_types():
    with pytest.raises(ConfigError, match="parallel must be a ParallelConfig"):
        rtx.compile(models.mlp(), parallel={"dp": 1})


def test_optimizer_pass_options():
    assert AdamW(lr=0.01, weight_decay=0.0).pass_options() == \
        "kind=adamw lr=0.01 beta1=0.9 beta2=0.999 eps=1e-08 weight-decay=0.0 clip-norm=0.0"
    assert SGD(lr=0.5).pass_options() == "kind=sgd lr=0.5 weight-decay=0.0 clip-norm=0.0"


# --- tensor-parallel seeding hints ---------------------------------------------------------------

def test_tp_hints_are_checked_frozen_and_become_rtx_distributes_seed_hints():
    config = ShardingConfig(tp_hints={"q_proj": "column", "o_proj": "row"})
    assert dict(config.tp_hints) == {"q_proj": "column", "o_proj": "row"}
    assert config.distribute_options() == "seed-hints=q_proj:column,o_proj:row"     # in the order given
    assert config == ShardingConfig(tp_hints={"o_proj": "row", "q_proj": "column"})
    assert hash(config) == hash(ShardingConfig(tp_hints={"o_proj": "row", "q_proj": "column"}))
    with pytest.raises(TypeError):
        config.tp_hints["k_proj"] = "column"
    assert ShardingConfig().tp_hints == {} and ShardingConfig().distribute_options() == ""
    assert ShardingConfig(tp_hints=None).tp_hints == {} and config.unsupported() == []


def test_compile_hands_the_hints_to_rtx_distribute(monkeypatch):
    from rtx import driver
    seen = []
    real_opt = driver.opt

    def opt(source, passes=(), **kwargs):
        seen.append(list(passes))
        return real_opt(source, [p.replace(" seed-hints=fc1:column,fc2:row", "") for p in passes], **kwargs)

    monkeypatch.setattr(driver, "opt", opt)
    hints = ShardingConfig(tp_hints={"fc1": "column", "fc2": "row"})
    rtx.compile(models.mlp(), group=init("cpu", 2, env={}), parallel=ParallelConfig(tp=2), sharding=hints)
    assert len(seen) == 1 and len(seen[0]) == 1
    assert seen[0][0].startswith("-rtx-distribute=mesh=tp:2 ")
    assert seen[0][0].endswith(" seed-hints=fc1:column,fc2:row"), seen
    rtx.compile(models.mlp(), group=init("cpu", 2, env={}), parallel=ParallelConfig(tp=2))
    assert "seed-hints" not in seen[1][0]


def test_shard_strategies_become_zero_stages():
    assert ShardingConfig("zero1").distribute_options() == "shard-state=1"
    assert ShardingConfig("zero2").distribute_options() == "shard-state=2"
    assert ShardingConfig("zero3").distribute_options() == "shard-state=3"
    assert ShardingConfig("fsdp").distribute_options() == "shard-state=3"
    assert ShardingConfig("hsdp", shard_group=2).distribute_options() == "shard-state=3"
    assert ShardingConfig("hsdp", shard_group=2).mesh(ParallelConfig(dp=8, tp=2)) == "dp_replicate:4,dp:2,tp:2"
    assert ShardingConfig("zero3").mesh(ParallelConfig(dp=4)) == "dp:4"
    assert ShardingConfig().distribute_options() == ""
    assert ShardingConfig("zero2", tp_hints={"q": "column"}).distribute_options() == \
        "shard-state=2 seed-hints=q:column"
