"""RedisChatMemory on a real three-master Redis Cluster: hash-tagged keys (one slot per
conversation, conversations spread over every master), listing and clearing across nodes,
release notices across nodes, the client's ownership, cluster errors typed. The ChatMemory
contract itself runs on the cluster in test_memory_contract.py (the event log's, in
test_event_log_conformance.py and test_runs_redis_cluster.py)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from redis_cluster import LocalCluster
from redis_server import free_port
from test_event_log_writes import until  # the servers see a subscription or a close late

from rxreact import ChatMemoryError
from rxreact._redis import close_redis
from rxreact.memory import RedisChatMemory
from rxreact.messages import AssistantMessage, UserMessage


@pytest.fixture
def cluster(redis_cluster: LocalCluster) -> LocalCluster:
    """The session's cluster, emptied."""
    redis_cluster.flush()
    return redis_cluster


@pytest.fixture
def client(cluster: LocalCluster, redis_cluster_client: Any) -> Any:
    return redis_cluster_client


def qa(tag: str) -> list[UserMessage | AssistantMessage]:
    return [UserMessage(content=f"{tag}?"), AssistantMessage(content=f"{tag}.")]


def keys_per_node(cluster: LocalCluster) -> list[set[bytes]]:
    return per_node(cluster, lambda direct: set(direct.keys("*")))


def test_a_conversations_keys_share_one_slot_and_conversations_use_every_master(
    cluster: LocalCluster, client: Any
) -> None:
    memory = RedisChatMemory(client, prefix="app:", ttl=60)
    ids = [f"user-{i}" for i in range(30)]
    for conversation in ids:
        lease = memory.try_acquire(conversation, "run", 30)
        assert lease is not None
        memory.append(conversation, qa(conversation), lease=lease)
        memory.release(lease)
    slots = {client.keyslot(f"app:{{c:user-3}}:{kind}") for kind in ("turns", "lease", "fence")}
    assert len(slots) == 1
    assert client.lrange("app:{c:user-3}:turns", 0, -1) != []
    assert 0 < client.pttl("app:{c:user-3}:fence") <= 60_000
    stored = keys_per_node(cluster)
    assert all(stored), stored  # thirty conversations land on all three masters
    assert memory.conversation_ids() == sorted(ids)  # SCAN visits every master
    memory.clear()
    assert memory.conversation_ids() == []
    assert set().union(*keys_per_node(cluster)) == {
        f"app:{{c:{conversation}}}:fence".encode() for conversation in ids
    }  # clear forgets histories; the token counters stay (as on one node)


@pytest.mark.parametrize("prefix", ["rxreact:", "a{b:", "}{"])
@pytest.mark.parametrize("conversation", ["", "a}b", "{x}", "user:42/chat*[1]", "北京"])
def test_leases_and_fenced_writes_for_odd_ids_and_prefixes(
    client: Any, prefix: str, conversation: str
) -> None:
    # Braces in an id or a prefix end or start the hash tag elsewhere, the same in each of a
    # conversation's keys; the empty id still has a non-empty tag.
    memory = RedisChatMemory(client, prefix=prefix)
    lease = memory.try_acquire(conversation, "first", 30)
    assert lease is not None
    memory.append(conversation, qa("one"), lease=lease)
    successor = memory.hand_over(lease, "second", 30)
    assert successor is not None and successor.token == lease.token + 1
    with pytest.raises(Exception, match="expired or was taken over"):
        memory.append(conversation, qa("stale"), lease=lease)
    memory.append(conversation, qa("two"), lease=successor)
    memory.release(successor)
    assert memory.load(conversation) == qa("one") + qa("two")
    assert memory.conversation_ids() == [conversation]
    memory.clear()


def test_a_release_is_heard_from_every_master(cluster: LocalCluster, client: Any) -> None:
    # Classic pub/sub is cluster-wide: the listener's node hears a PUBLISH run by a script on
    # whichever master holds the conversation's slot.
    here, there = RedisChatMemory(client, prefix="app:"), RedisChatMemory(client, prefix="app:")
    ids = [f"c{i}" for i in range(12)]
    masters = {client.get_node_from_key(f"app:{{c:{c}}}:lease").port for c in ids}
    assert len(masters) == 3
    heard: list[str] = []
    all_heard = threading.Event()

    def hear(conversation_id: str) -> None:
        heard.append(conversation_id)
        if len(heard) == len(ids):
            all_heard.set()

    subscription = here.releases().subscribe(hear)
    try:
        assert subscribed(cluster, "app:lease-released")
        for conversation in ids:
            lease = there.try_acquire(conversation, "elsewhere", 30)
            assert lease is not None
            there.release(lease)
        assert all_heard.wait(10), heard
        # each once; notices from different masters may arrive in another order
        assert sorted(heard) == sorted(ids)
    finally:
        subscription.dispose()
        here.close()


def per_node(cluster: LocalCluster, ask: Any) -> list[Any]:
    """``ask(client)`` on each node, on a connection of its own."""
    import redis

    answers = []
    for node in cluster.nodes:
        with redis.Redis(host="127.0.0.1", port=node.port) as direct:
            answers.append(ask(direct))
    return answers


def subscribed(cluster: LocalCluster, channel: str) -> bool:
    """Until some node has a subscriber on ``channel`` (a notice sent before is lost)."""

    def subscribers(direct: Any) -> int:
        return int(dict(direct.pubsub_numsub(channel)).get(channel.encode(), 0))

    return until(lambda: sum(per_node(cluster, subscribers)) > 0)


def clients(cluster: LocalCluster) -> int:
    """Connections to all the nodes, not counting the ones asking."""
    return sum(per_node(cluster, lambda direct: len(direct.client_list()) - 1))


def test_a_node_url_with_cluster_true_makes_a_cluster_client_it_closes(
    cluster: LocalCluster, client: Any
) -> None:
    from redis.cluster import RedisCluster

    before = clients(cluster)
    memory = RedisChatMemory(cluster.url, cluster=True, prefix="url:")
    assert isinstance(memory._client, RedisCluster)
    memory.append("c", qa("one"))
    assert client.exists("url:{c:c}:turns") == 1  # the same names as with a given client
    assert clients(cluster) > before
    memory.close()
    assert until(lambda: clients(cluster) == before)


def test_a_given_cluster_client_is_left_open_and_may_decode_responses(
    cluster: LocalCluster,
) -> None:
    from redis.cluster import RedisCluster

    decoding = RedisCluster.from_url(cluster.url, decode_responses=True)
    try:
        with RedisChatMemory(decoding, prefix="d:") as memory:
            lease = memory.try_acquire("c", "run", 30)
            assert lease is not None and lease.token == 1
            memory.append("c", qa("one"), lease=lease)
            assert memory.load("c") == qa("one")
            assert memory.conversation_ids() == ["c"]
        assert decoding.ping()  # the caller's client is still open
    finally:
        close_redis(decoding)


def test_an_unreachable_cluster_is_a_chat_memory_error_with_the_cluster_error_as_cause() -> None:
    from redis.exceptions import RedisClusterException, RedisError

    with pytest.raises(ChatMemoryError, match="could not connect") as caught:
        RedisChatMemory(f"redis://127.0.0.1:{free_port()}/0", cluster=True)  # nobody there
    cause = caught.value.__cause__
    # redis-py's cluster errors are outside its RedisError tree: mapped all the same
    assert isinstance(cause, RedisClusterException) and not isinstance(cause, RedisError)
