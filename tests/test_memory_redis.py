"""RedisChatMemory against a real redis-server: keys, ttl, prefixes, failures, the lazy import."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
import reactivex
from redis_server import RedisServer, free_port

from rxreact import ChatMemoryError, ConfigurationError
from rxreact.memory import RedisChatMemory
from rxreact.messages import AssistantMessage, UserMessage
from rxreact.model.retry_policy import Backoff
from rxreact.operators import with_lease


@pytest.fixture
def client(redis_server: RedisServer) -> Iterator[Any]:
    """A client of an empty database."""
    import redis

    with redis.Redis.from_url(redis_server.url) as client:
        client.flushdb()
        yield client


def qa(tag: str) -> list[UserMessage | AssistantMessage]:
    return [UserMessage(content=f"{tag}?"), AssistantMessage(content=f"{tag}.")]


def test_one_list_element_per_turn_under_the_prefix(client: Any) -> None:
    memory = RedisChatMemory(client, prefix="app:")
    memory.append("c", qa("one"))
    memory.append("c", qa("two"))
    assert client.keys("*") == [b"app:turns:c"]
    assert client.llen("app:turns:c") == 2
    assert client.ttl("app:turns:c") == -1  # no ttl: kept until cleared


def test_prefixes_keep_memories_apart(client: Any) -> None:
    first, second = RedisChatMemory(client, prefix="a:"), RedisChatMemory(client, prefix="a*[")
    first.append("c", qa("first"))
    second.append("c", qa("second"))
    second.append("d", qa("second"))
    assert first.load("c") == qa("first")
    assert second.load("c") == qa("second")
    assert first.conversation_ids() == ["c"]  # the glob characters in "a*[" match nothing else
    assert second.conversation_ids() == ["c", "d"]
    second.clear()
    assert first.load("c") == qa("first")
    assert second.conversation_ids() == []


def test_clear_all_goes_past_one_batch(client: Any) -> None:
    memory = RedisChatMemory(client)
    for i in range(1200):
        client.rpush(f"rxreact:turns:{i}", b"[]")
    client.set("other", b"kept")
    memory.clear()
    assert client.keys("*") == [b"other"]


@pytest.mark.parametrize("ttl", [30, 30.0, timedelta(seconds=30)])
def test_ttl_is_set_and_refreshed_by_each_turn(client: Any, ttl: Any) -> None:
    memory = RedisChatMemory(client, ttl=ttl)
    memory.append("c", qa("one"))
    assert 0 < client.pttl("rxreact:turns:c") <= 30_000
    client.pexpire("rxreact:turns:c", 5_000)
    memory.append("c", qa("two"))
    assert 5_000 < client.pttl("rxreact:turns:c") <= 30_000


def test_lease_keys_expire_and_the_fence_key_lives_as_long_as_the_conversation(
    client: Any,
) -> None:
    forever, forgetful = (
        RedisChatMemory(client, prefix="a:"),
        RedisChatMemory(client, prefix="b:", ttl=60),
    )
    for memory, prefix in ((forever, "a:"), (forgetful, "b:")):
        lease = memory.try_acquire("c", "run", 2.5)
        assert 0 < client.pttl(f"{prefix}lease:c") <= 2_500
        assert client.get(f"{prefix}lease:c") == f"{lease.token}:run".encode()
        memory.release(lease)
        assert client.exists(f"{prefix}lease:c") == 0
    assert client.pttl("a:fence:c") == -1  # no conversation ttl: kept
    assert 2_500 < client.pttl("b:fence:c") <= 60_000
    assert client.get("b:fence:c") == b"1"


def test_ttl_and_max_turns_must_be_positive() -> None:
    with pytest.raises(ValueError, match="ttl"):
        RedisChatMemory("redis://127.0.0.1:1/0", ttl=0)
    with pytest.raises(ValueError, match="max_turns"):
        RedisChatMemory("redis://127.0.0.1:1/0", max_turns=0)


def test_a_client_from_a_url_is_closed_a_given_one_is_not(redis_server: RedisServer) -> None:
    import redis

    with redis.Redis.from_url(redis_server.url) as client:
        with RedisChatMemory(client) as memory:
            memory.append("closing", qa("one"))
        assert client.ping()  # still usable
        with RedisChatMemory(redis_server.url) as memory:
            assert memory.load("closing") == qa("one")
        client.delete("rxreact:turns:closing")


def test_a_client_that_decodes_responses_works_too(redis_server: RedisServer) -> None:
    import redis

    with redis.Redis.from_url(redis_server.url, decode_responses=True) as client:
        memory = RedisChatMemory(client, prefix="decoded:")
        memory.append("c", qa("one"))
        assert memory.load("c") == qa("one")
        assert memory.conversation_ids() == ["c"]
        memory.clear()


def test_a_corrupt_element_is_a_clear_error(client: Any) -> None:
    memory = RedisChatMemory(client)
    memory.append("c", qa("one"))
    client.rpush("rxreact:turns:c", b"{not json")
    with pytest.raises(ChatMemoryError, match=r"turn 1 .*corrupt"):
        memory.load("c")


def test_a_refused_connection_is_a_chat_memory_error() -> None:
    import redis

    memory = RedisChatMemory(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    with pytest.raises(ChatMemoryError, match="could not load") as caught:
        memory.load("c")
    assert isinstance(caught.value.__cause__, redis.ConnectionError)
    with pytest.raises(ChatMemoryError, match="could not store") as caught:
        memory.append("c", qa("one"))
    assert isinstance(caught.value.__cause__, redis.ConnectionError)
    memory.close()


def test_without_redis_py_the_package_imports_and_construction_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['redis'] = None\n"  # makes `import redis` fail
        "import rxreact, rxreact.memory\n"
        "from rxreact.memory import RedisChatMemory\n"
        "try:\n"
        "    RedisChatMemory('redis://127.0.0.1:1/0')\n"
        "except rxreact.ConfigurationError as error:\n"
        "    print(error)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert "pip install 'rxreact[redis]'" in result.stdout


def test_missing_redis_py_raises_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)
    with pytest.raises(ConfigurationError, match=r"rxreact\[redis\]"):
        RedisChatMemory("redis://127.0.0.1:1/0")


def _subscribers_until(client: Any, channel: str, ok: Callable[[int], bool]) -> bool:
    poll = threading.Event()
    for _ in range(2000):
        if ok(dict(client.pubsub_numsub(channel)).get(channel.encode(), 0)):
            return True
        poll.wait(0.005)
    return False


def subscribed(client: Any, channel: str) -> bool:
    """Until the channel has a subscriber on the server (a notice sent before is lost)."""
    return _subscribers_until(client, channel, lambda n: n >= 1)


def unsubscribed(client: Any, channel: str) -> bool:
    """Until the channel has no subscriber (the server sees a closed connection a moment late)."""
    return _subscribers_until(client, channel, lambda n: n == 0)


def test_a_release_is_announced_to_every_process(client: Any) -> None:
    here, there = RedisChatMemory(client, prefix="app:"), RedisChatMemory(client, prefix="app:")
    heard: list[str] = []
    got = threading.Event()

    def hear(conversation_id: str) -> None:
        heard.append(conversation_id)
        got.set()

    subscription = here.releases().subscribe(hear)
    try:
        assert subscribed(client, "app:lease-released")
        lease = there.try_acquire("c", "elsewhere", 30)
        there.release(lease)
        there.release(lease)  # a second release of the same lease announces nothing
        assert got.wait(10)
        assert heard == ["c"]
    finally:
        subscription.dispose()


def test_close_waits_for_a_stopped_listener_to_hand_its_connection_back(client: Any) -> None:
    # A stopped listener returns its connection to the pool under the pool's lock; a daemon
    # thread frozen there at interpreter exit deadlocked the client's __del__ (seen in CI).
    # Only this memory's listener counts: a listener an earlier test stopped may still be
    # finishing its last one-second wait (CI once failed on exactly that).
    def pubsub_threads() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if type(t).__name__ == "PubSubWorkerThread"}

    before = pubsub_threads()
    memory = RedisChatMemory(client, prefix="closing:")
    memory.releases().subscribe(lambda _: None).dispose()  # stopped, still finishing
    listeners = pubsub_threads() - before
    assert listeners
    memory.close()
    assert not any(t.is_alive() for t in listeners)
    assert unsubscribed(client, "closing:lease-released")


def test_a_waiter_in_another_process_starts_on_the_notice_not_its_poll(client: Any) -> None:
    here, there = RedisChatMemory(client, prefix="app:"), RedisChatMemory(client, prefix="app:")
    held = there.try_acquire("c", "another process", 30)
    started = threading.Event()

    def body(lease: Any) -> reactivex.Observable[Any]:
        started.set()
        return reactivex.never()

    # polls only every minute: only the notice can start the body within the test's wait
    waiting = with_lease(
        here, "c", body, owner="me", ttl=30, poll=Backoff(base=60.0, cap=60.0)
    ).subscribe(on_error=lambda e: started.set())
    try:
        assert subscribed(client, "app:lease-released")
        assert not started.is_set()
        there.release(held)
        assert started.wait(10)
        assert here.try_acquire("c", "third", 30) is None  # the waiter holds it now
    finally:
        waiting.dispose()
    assert here.try_acquire("c", "third", 30) is not None  # and let it go when disposed
