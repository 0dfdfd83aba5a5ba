"""Handing a conversation lease over (``hand_over``), for every backend: in-memory, SQLite (a
file), Redis (a real server). The next owner of a run takes its stopped owner's lease at once,
with the next token, as long as nothing was granted after it; the old holder is fenced out."""

from __future__ import annotations

from typing import Any

import pytest
from test_memory_contract import MakeMemory, acquire_eventually, turn
from test_memory_contract import make_memory as each_backend  # noqa: F401 (a fixture)

from rxreact import ConversationBusyError
from rxreact.memory import Lease


@pytest.fixture
def make_memory(each_backend: MakeMemory) -> MakeMemory:  # noqa: F811 (the fixture)
    """Fresh memories of each backend, as the contract tests make them."""
    return each_backend


def lapse(memory: Any, lease: Lease) -> None:
    """Return once ``lease`` (made just now with a ttl of 50 ms) has expired, never renewed.

    A probe lease on another conversation granted after it with the same ttl expires after it,
    so once the probe can be taken again so could ``lease``: no guessed sleep, no renewal.
    """
    assert memory.try_acquire("clock", f"probe {lease.token}", lease.ttl) is not None
    memory.release(acquire_eventually(memory, "clock", "probe after", 30))


def test_a_live_lease_is_handed_over_and_its_old_holder_fenced_out(
    make_memory: MakeMemory,
) -> None:
    memory = make_memory()
    old = memory.try_acquire("c", "worker-a/run", 30)
    memory.append("c", turn("a"), lease=old)

    new = memory.hand_over(old, "worker-b/run", 30)

    assert new == Lease(conversation_id="c", owner="worker-b/run", token=old.token + 1, ttl=30)
    assert memory.renew(old) is False
    with pytest.raises(ConversationBusyError):
        memory.append("c", turn("paused"), lease=old)
    memory.release(old)  # the old holder's late release does not free the new lease
    assert memory.try_acquire("c", "third", 30) is None
    assert memory.renew(new) is True
    memory.append("c", turn("b"), lease=new)
    assert memory.load("c") == [*turn("a"), *turn("b")]
    assert memory.hand_over(old, "worker-c/run", 30) is None  # handed over once only


def test_an_expired_lease_nobody_took_is_handed_over(make_memory: MakeMemory) -> None:
    memory = make_memory()
    stale = memory.try_acquire("c", "dead", 0.05)
    lapse(memory, stale)

    new = memory.hand_over(stale, "next", 30)

    assert new is not None and new.token == stale.token + 1 and new.owner == "next"
    assert memory.try_acquire("c", "third", 30) is None  # granted for its own ttl
    with pytest.raises(ConversationBusyError):
        memory.append("c", turn("stale"), lease=stale)
    memory.append("c", turn("new"), lease=new)
    assert memory.load("c") == turn("new")


def test_a_lease_granted_again_since_is_not_handed_over(make_memory: MakeMemory) -> None:
    memory = make_memory()
    stale = memory.try_acquire("c", "dead", 0.05)
    fresh = acquire_eventually(memory, "c", "other run", 30)  # after stale expired

    assert memory.hand_over(stale, "resumer", 30) is None

    assert memory.renew(fresh) is True  # nothing changed for the run holding it now
    memory.append("c", turn("fresh"), lease=fresh)
    memory.release(fresh)
    assert memory.hand_over(stale, "resumer", 30) is None  # nor once that run let it go
    assert memory.try_acquire("c", "later", 30).token == fresh.token + 1


def test_a_released_lease_is_still_the_latest_grant(make_memory: MakeMemory) -> None:
    memory = make_memory()
    lease = memory.try_acquire("c", "run", 30)
    memory.release(lease)
    new = memory.hand_over(lease, "resumer", 30)
    assert new is not None and new.token == lease.token + 1
    assert memory.try_acquire("c", "other", 30) is None


def test_a_handed_over_lease_hands_over_again(make_memory: MakeMemory) -> None:
    memory = make_memory()
    first = memory.try_acquire("c", "a", 30)
    second = memory.hand_over(first, "b", 30)
    third = memory.hand_over(second, "c", 30)
    assert third is not None and third.token == first.token + 2
    assert memory.hand_over(first, "d", 30) is None
    assert memory.renew(second) is False and memory.renew(third) is True


def test_hand_over_of_another_owner_with_the_same_token_is_refused(
    make_memory: MakeMemory,
) -> None:
    memory = make_memory()
    lease = memory.try_acquire("c", "run", 30)
    forged = lease.model_copy(update={"owner": "someone else"})
    assert memory.hand_over(forged, "thief", 30) is None
    assert memory.renew(lease) is True


def test_hand_over_of_an_unknown_conversation_is_refused(make_memory: MakeMemory) -> None:
    memory = make_memory()
    never = Lease(conversation_id="nobody", owner="run", token=1, ttl=30)
    assert memory.hand_over(never, "resumer", 30) is None
    assert memory.try_acquire("nobody", "first", 30).token == 1


def test_renew_extends_by_the_ttl_of_the_lease_it_is_given(make_memory: MakeMemory) -> None:
    """What a parked run relies on: renewing a copy with a longer ttl keeps the lease longer."""
    memory = make_memory()
    lease = memory.try_acquire("c", "parked", 0.05)
    assert memory.renew(lease.model_copy(update={"ttl": 30})) is True
    lapse(memory, lease)  # past the lease's own 50 ms
    assert memory.try_acquire("c", "other", 30) is None
    memory.append("c", turn("parked"), lease=lease)
    assert memory.load("c") == turn("parked")


def test_redis_hands_over_a_live_lease_whose_fence_key_expired(redis_server: Any) -> None:
    """A lease renewed past the conversation ttl (a parked run) outlives its token counter:
    the live lease key alone proves it is the latest grant, and the count goes on from it."""
    import redis

    from rxreact import RedisChatMemory

    with redis.Redis.from_url(redis_server.url) as client:
        client.flushdb()
        memory = RedisChatMemory(redis_server.url, prefix="fence:", ttl=60)
        try:
            lease = memory.try_acquire("c", "parked", 30)
            client.delete("fence:fence:c")
            new = memory.hand_over(lease, "resumer", 30)
            assert new is not None and new.token == lease.token + 1
            assert int(client.get("fence:fence:c")) == new.token
            assert 0 < client.pttl("fence:fence:c") <= 60_000
            memory.release(new)
            assert memory.try_acquire("c", "later", 30).token == new.token + 1

            client.delete("fence:fence:c", "fence:lease:c")  # forgotten entirely: no proof
            assert memory.hand_over(new, "resumer 2", 30) is None
        finally:
            memory.close()
