"""RedisEventLog on a real three-master Redis Cluster, beyond the shared contract (which runs on
the cluster in test_event_log_conformance.py): the key layout (a run's keys, its bucket's
indexes and streams in one slot, buckets on every master, one-node names unchanged), runs
followed on every master at once from one process, the conversation's active set kept apart, an
unreachable cluster (or node) as a typed error from every call, ``rxreact serve
--redis-cluster``, a claimed run kept alive until it is resumed, and the due index: a claim
tick costs the same number of Redis commands however many parked runs wait (on one node and on
the cluster)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from redis_cluster import LocalCluster
from redis_server import RedisServer, free_port
from test_event_log_writes import until
from test_runs_garbage import next_heartbeat

from benchmarks.due_claims import park_runs, tick_cost
from rxreact import RedisEventLog, RunError
from rxreact.events import FinalAnswer, TextDelta
from rxreact.runs.redis._keys import CLUSTER_BUCKETS, Keys
from rxreact.runs.redis._takeover import claim_lost
from rxreact.testing.conformance._event_log import Collected, wait_until


@pytest.fixture
def cluster(redis_cluster: LocalCluster) -> LocalCluster:
    redis_cluster.flush()
    return redis_cluster


@pytest.fixture
def logs(cluster: LocalCluster, redis_cluster_client: Any) -> Iterator[Any]:
    made: list[RedisEventLog] = []

    def make(**options: Any) -> RedisEventLog:
        made.append(RedisEventLog(redis_cluster_client, **options))
        return made[-1]

    yield make
    for log in made:
        log.close()


def masters(cluster: LocalCluster) -> list[Any]:
    import redis

    return [redis.Redis(host="127.0.0.1", port=node.port) for node in cluster.nodes]


def test_one_node_keeps_its_key_names() -> None:
    keys = Keys("app:")
    assert (keys.run("r"), keys.meta("r"), keys.owner("r")) == (
        "app:run:r",
        "app:run:r:meta",
        "app:run:r:owner",
    )
    assert (keys.running(0), keys.cancels(0), keys.active("c")) == (
        "app:running",
        "app:cancels",
        "app:active:c",
    )
    assert keys.buckets == 1 and keys.bucket("anything") == 0


def test_a_runs_keys_share_its_buckets_slot_and_buckets_use_every_master(
    redis_cluster_client: Any,
) -> None:
    keys = Keys("app:", cluster=True)
    slot = redis_cluster_client.keyslot
    for run_id in ("r1", "", "a}b", "{x}", "北京"):
        bucket = keys.bucket(run_id)
        names = [keys.run(run_id), keys.meta(run_id), keys.checkpoints(run_id)]
        names += [keys.owner(run_id), keys.decided(run_id), keys.running(bucket)]
        names += [keys.woken(bucket), keys.cancels(bucket), keys.decisions(bucket)]
        names.append(keys.wake("hub", bucket))
        assert len({slot(name) for name in names}) == 1, names
    bucket_slots = [slot(keys.running(b)) for b in range(CLUSTER_BUCKETS)]
    assert len(set(bucket_slots)) == CLUSTER_BUCKETS
    nodes = {redis_cluster_client.get_node_from_key(keys.running(b)).name for b in range(16)}
    assert len(nodes) == 3  # spread evenly over the slots: every master has buckets
    # Stored names: every process and version on one cluster must compute the same ones.
    assert keys.running(3) == "app:{b3.62}running" and keys.bucket("r1") == 1
    assert keys.run("r1") == "app:{b1.1}run:r1"


def test_runs_on_every_master_are_followed_at_once_from_another_log(
    logs: Any, cluster: LocalCluster
) -> None:
    owner, reader = logs(), logs()
    run_ids = [f"run-{i}" for i in range(24)]  # in most of the 16 buckets
    writers = [owner.begin(run_id, f"conv-{run_id}", lambda: None) for run_id in run_ids]
    followed = [Collected(reader.read(run_id)) for run_id in run_ids]
    for writer in writers:
        for seq in range(1, 6):
            writer.append(TextDelta(seq=seq, round=1, delta=f"d{seq}"))
        writer.append(FinalAnswer(seq=6, round=1, text="done", rounds=1))
        writer.end()
    for each in followed:
        assert each.wait().error is None and each.seqs == list(range(1, 7))
    stored = [set(direct.keys("*run:run-*:meta")) for direct in masters(cluster)]
    assert all(stored), stored  # the runs landed on all three masters
    # Ended runs are off their conversations' active sets (their own slots, tidied apart).
    assert all(owner.active_run(f"conv-{run_id}") is None for run_id in run_ids)
    assert until(lambda: not any(direct.keys("*active:*") for direct in masters(cluster)))


def test_a_parked_runs_conversation_stays_active_without_expiry(
    logs: Any, redis_cluster_client: Any
) -> None:
    log = logs()
    writer = log.begin("p", "conv", lambda: None)
    writer.park(None)
    writer.append(TextDelta(seq=1, round=1, delta="waiting"))
    assert log.flush()
    key = Keys("rxreact:", cluster=True).active("conv")
    assert redis_cluster_client.pttl(key) == -1  # kept as long as the run waits
    assert log.active_run("conv") == "p"


def test_a_claimed_run_is_kept_alive_until_it_is_resumed(logs: Any) -> None:
    dying = logs(lost_after=0.3)
    writer = dying.begin("r1", "c1", lambda: None)
    writer.append(TextDelta(seq=1, round=1, delta="d1"))
    assert dying.flush()
    dying.close()  # no more beats: lost 0.3 s after the last one
    claimant, other = logs(lost_after=0.3), logs(lost_after=0.3)
    claimed: list[Any] = []
    assert wait_until(lambda: bool(claimed.extend(claimant.claim_lost()) or claimed))
    for _ in range(4):  # more than lost_after: the claim would have lapsed, unbeaten
        assert next_heartbeat(claimant).wait(10)
    assert other.claim_lost() == []  # its resume may wait (a busy conversation): still its
    resumed = claimant.resume(claimed[0], lambda: None)
    resumed.append(FinalAnswer(seq=2, round=1, text="done", rounds=1))
    resumed.end()
    followed = Collected(other.read("r1")).wait()
    assert followed.error is None and followed.seqs == [1, 2]


def test_a_cluster_that_cannot_be_reached_is_a_run_error() -> None:
    from redis.exceptions import RedisClusterException  # not a RedisError

    with pytest.raises(RunError, match="could not connect") as caught:
        RedisEventLog(f"redis://127.0.0.1:{free_port()}/0", cluster=True)
    assert isinstance(caught.value.__cause__, RedisClusterException)


def test_redis_out_of_reach_is_a_run_error_from_every_call() -> None:
    log = RedisEventLog(f"redis://127.0.0.1:{free_port()}/0")  # connects on first use
    try:
        calls = [
            lambda: log.active_run("c"),
            lambda: log.request_cancel("r"),
            lambda: log.decide("r", "k", True),
            log.claim_lost,
        ]
        for call in calls:
            with pytest.raises(RunError, match="could not") as caught:
                call()
            assert caught.value.__cause__ is not None  # redis-py's error, kept
    finally:
        log.close()


def _claim_tick_costs(make_log: Any, clients: list[Any], tag: str) -> list[int]:
    """Commands of a claim tick with few, then many more, ownerless undecided parked runs.

    The ticks are the log's claim itself without its readers (started by its
    ``claim_lost``), whose blocking reads would be counted too."""
    costs = []
    for count in (5, 150):
        # A store of its own: the run claimed in the end stays woken until it is resumed.
        prefix = f"{tag}{count}:"
        owner = make_log(lost_after=30, prefix=prefix)
        park_runs(owner, [f"{tag}{count}-{i}" for i in range(count)])
        owner.close()  # lets its parked runs go: nobody beats for them
        decider = make_log(prefix=prefix)

        def tick(log: RedisEventLog = decider) -> list[str]:
            claimed = claim_lost(log._client, log._keys, "me", 30_000, 100)
            return [lost.run_id for lost in claimed]

        assert tick() == []  # the first look scores what it sees
        costs.append(tick_cost(tick, clients))
        decider.decide(f"{tag}{count}-3", "k1", True)
        assert tick() == [f"{tag}{count}-3"]  # what is due is still found
    return costs


def test_a_claim_tick_costs_the_same_however_many_runs_are_parked_on_one_node(
    redis_server: RedisServer,
) -> None:
    import redis

    made: list[RedisEventLog] = []

    def make(**options: Any) -> RedisEventLog:
        made.append(RedisEventLog(redis_server.url, **options))
        return made[-1]

    with redis.Redis.from_url(redis_server.url) as direct:
        direct.flushdb()
        try:
            few, many = _claim_tick_costs(make, [direct], "p")
        finally:
            for log in made:
                log.close()
    assert few == many, (few, many)


def test_a_claim_tick_costs_the_same_however_many_runs_are_parked_on_the_cluster(
    logs: Any, cluster: LocalCluster
) -> None:
    few, many = _claim_tick_costs(logs, masters(cluster), "c")
    assert few == many, (few, many)


def test_serve_with_redis_cluster_keeps_conversations_and_runs_on_the_cluster(
    cluster: LocalCluster, redis_cluster_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("uvicorn")
    import gc
    import json

    from rxreact.serve.cli import CONFIG_ENV, app_from_env
    from rxreact.testing import MockOpenAIServer, weather_desk

    server = MockOpenAIServer(weather_desk).start()
    config = {"model": "mock", "base_url": server.base_url}
    config |= {"redis": cluster.url, "redis_cluster": True}  # rxreact serve --redis-cluster
    monkeypatch.setenv(CONFIG_ENV, json.dumps(config))
    app = app_from_env()
    gc.unfreeze()  # app_from_env freezes what a worker made; a test process goes on
    agent = app.state.runs.agent
    try:
        run = agent.start("What is the weather in Paris?", "user-1")
        assert run.result(timeout=30).answer
        assert agent.event_log.flush()
        run_keys = Keys("rxreact:", cluster=True)
        assert redis_cluster_client.get(run_keys.meta(run.id)) == b"ended"
        assert redis_cluster_client.exists("rxreact:{c:user-1}:turns")
    finally:
        app.state.runs_keeper.close()  # as a worker stopping does (it resumes lost runs)
        agent.event_log.close()
        agent.memory.close()
        server.stop()
