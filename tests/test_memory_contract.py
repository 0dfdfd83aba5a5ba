"""The ChatMemory contract, once, for every backend: in-memory, SQLite (a file), Redis (real;
one node and a three-master cluster)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from redis_server import RedisServer

from rxreact import ConversationBusyError
from rxreact.errors import ChatMemoryError
from rxreact.memory import (
    ChatMemory,
    InMemoryChatMemory,
    Lease,
    RedisChatMemory,
    SQLiteChatMemory,
)
from rxreact.messages import (
    AssistantMessage,
    File,
    Image,
    Message,
    ReplayItem,
    SystemMessage,
    Text,
    ToolCall,
    ToolMessage,
    UserMessage,
)

MakeMemory = Callable[..., Any]


@pytest.fixture(params=["in_memory", "sqlite", "redis", "redis_cluster"])
def make_memory(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[MakeMemory]:
    """A factory of fresh, empty memories of one backend: ``make_memory(max_turns=...)``."""
    made: list[Any] = []
    backend = request.param
    if backend == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        import redis

        with redis.Redis.from_url(server.url) as client:
            client.flushdb()
    if backend == "redis_cluster":  # a three-master cluster, one client for the session
        request.getfixturevalue("redis_cluster").flush()
        cluster_client = request.getfixturevalue("redis_cluster_client")

    def make(**kw: Any) -> Any:
        memory: Any
        if backend == "in_memory":
            memory = InMemoryChatMemory(**kw)
        elif backend == "sqlite":
            memory = SQLiteChatMemory(tmp_path / f"memory{len(made)}.db", **kw)
        elif backend == "redis_cluster":
            memory = RedisChatMemory(cluster_client, prefix=f"test{len(made)}:", **kw)
        else:
            memory = RedisChatMemory(server.url, prefix=f"test{len(made)}:", **kw)
        made.append(memory)
        return memory

    yield make
    for memory in made:
        if hasattr(memory, "close"):
            memory.close()


def turn(tag: str, *, tools: int = 1) -> list[Message]:
    """A whole turn with every message kind: question, tool round(s), their results, answer."""
    messages: list[Message] = [UserMessage(content=f"{tag}: question")]
    calls = tuple(
        ToolCall(id=f"{tag}-call{i}", name="get_weather", arguments=f'{{"city": "{tag}{i}"}}')
        for i in range(tools)
    )
    if calls:
        messages.append(
            AssistantMessage(content=None, tool_calls=calls, reasoning=f"{tag}: need weather")
        )
        messages += [
            ToolMessage(tool_call_id=c.id, content=f"{tag}{i}: sunny", name=c.name)
            for i, c in enumerate(calls)
        ]
    messages.append(AssistantMessage(content=f"{tag}: answer", reasoning="done"))
    return messages


def split_turns(history: list[Message]) -> list[list[Message]]:
    """The history cut at each user message (where a turn starts)."""
    turns: list[list[Message]] = []
    for message in history:
        if isinstance(message, UserMessage) or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def assert_tool_calls_answered(history: list[Message]) -> None:
    """Every assistant tool call is followed by its results, every result by its call."""
    pending: set[str] = set()
    for message in history:
        if isinstance(message, AssistantMessage):
            assert not pending, f"tool calls {pending} left unanswered"
            pending = {c.id for c in message.tool_calls}
        elif isinstance(message, ToolMessage):
            assert message.tool_call_id in pending, f"orphan tool result {message.tool_call_id}"
            pending.discard(message.tool_call_id)
    assert not pending


def test_every_backend_is_a_chat_memory(make_memory: MakeMemory) -> None:
    assert isinstance(make_memory(), ChatMemory)


def test_unknown_conversation_is_empty(make_memory: MakeMemory) -> None:
    assert make_memory().load("nobody") == []


def test_every_message_kind_round_trips(make_memory: MakeMemory) -> None:
    memory = make_memory()
    first = [SystemMessage(content="be brief"), *turn("a", tools=2)]
    second = turn("b", tools=0)
    memory.append("c", first)
    memory.append("c", second)
    loaded = memory.load("c")
    assert loaded == [*first, *second]
    assert [type(m) for m in loaded] == [type(m) for m in (*first, *second)]
    assert loaded[2].tool_calls[1].arguments == '{"city": "a1"}'
    assert loaded[2].reasoning == "a: need weather"


def test_parts_and_replay_items_round_trip(make_memory: MakeMemory) -> None:
    memory = make_memory()
    png = Image.from_bytes(bytes(range(256)) * 40, "image/png")  # every byte value
    pdf = File.from_bytes(b"%PDF-1.4\n\x00\xff", "application/pdf", name="r\u00e9port.pdf")
    thinking = ReplayItem(
        provider="anthropic",
        data={"type": "thinking", "thinking": "weather first", "signature": "c2ln", "n": [1, 2.5]},
    )
    stored = [
        UserMessage(
            content=(Text(text="What are these?"), png, pdf, Image.from_url("https://x.test/a.jpg"))
        ),
        AssistantMessage(
            tool_calls=(ToolCall(id="c1", name="chart", arguments="{}"),), replay=(thinking,)
        ),
        ToolMessage(tool_call_id="c1", name="chart", content=(Text(text="chart:"), png)),
        AssistantMessage(content="A chart and a report.", replay=(thinking, thinking)),
    ]
    memory.append("c", stored)
    loaded = memory.load("c")
    assert loaded == stored
    assert loaded[0].content[1].data == bytes(range(256)) * 40
    assert loaded[1].replay[0].data["signature"] == "c2ln"


def test_unicode_and_odd_ids_round_trip(make_memory: MakeMemory) -> None:
    memory = make_memory()
    question = UserMessage(content='北京天气？ 🌤 "quoted" \\ \n')
    messages = [question, AssistantMessage(content="晴")]
    for conversation in ("user:42/chat*[1]", "北京", ""):
        memory.append(conversation, messages)
        assert memory.load(conversation) == messages


def test_conversations_are_kept_apart(make_memory: MakeMemory) -> None:
    memory = make_memory()
    memory.append("a", turn("a1"))
    memory.append("b", turn("b1"))
    memory.append("a", turn("a2"))
    assert memory.load("a") == [*turn("a1"), *turn("a2")]
    assert memory.load("b") == turn("b1")
    assert sorted(memory.conversation_ids()) == ["a", "b"]


def test_clear_one_conversation_or_all(make_memory: MakeMemory) -> None:
    memory = make_memory()
    for conversation in ("a", "b", "c"):
        memory.append(conversation, turn(conversation))
    memory.clear("b")
    assert memory.load("b") == []
    assert sorted(memory.conversation_ids()) == ["a", "c"]
    memory.clear()
    assert memory.conversation_ids() == []
    assert memory.load("a") == []


def test_trimming_keeps_whole_turns(make_memory: MakeMemory) -> None:
    memory = make_memory(max_turns=2)
    turns = [turn(f"t{i}", tools=i % 3) for i in range(5)]
    for i, messages in enumerate(turns):
        memory.append("c", messages)
        kept = memory.load("c")
        assert split_turns(kept) == turns[max(0, i - 1) : i + 1]
        assert isinstance(kept[0], UserMessage)
        assert_tool_calls_answered(kept)


def test_max_turns_must_be_positive(make_memory: MakeMemory) -> None:
    with pytest.raises(ValueError, match="max_turns"):
        make_memory(max_turns=0)


def test_concurrent_turns_never_interleave(make_memory: MakeMemory) -> None:
    memory = make_memory()
    writers, turns_each = 6, 8
    start = threading.Barrier(writers)
    errors: list[BaseException] = []

    def write(w: int) -> None:
        try:
            start.wait(timeout=10)
            for i in range(turns_each):
                memory.append("shared", turn(f"w{w}-{i}", tools=2))
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors
    turns = split_turns(memory.load("shared"))
    assert len(turns) == writers * turns_each
    for messages in turns:  # each turn whole and in order: every message carries its tag
        tag = messages[0].content.split(":")[0]
        assert messages == turn(tag, tools=2)
    for w in range(writers):  # each writer's turns in the order it wrote them
        mine = [t[0].content for t in turns if t[0].content.startswith(f"w{w}-")]
        assert mine == [f"w{w}-{i}: question" for i in range(turns_each)]


def test_readers_never_see_a_partial_turn_or_an_untrimmed_window(make_memory: MakeMemory) -> None:
    memory = make_memory(max_turns=3)
    done = threading.Event()
    seen: list[list[list[Message]]] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            while not done.is_set():
                seen.append(split_turns(memory.load("c")))
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(60):
            memory.append("c", turn(f"t{i}", tools=2))
    finally:
        done.set()
        reader.join(timeout=30)
    assert not errors
    assert seen
    for turns in seen:
        assert len(turns) <= 3
        for messages in turns:
            assert messages == turn(messages[0].content.split(":")[0], tools=2)


def test_a_conversation_id_with_a_lone_surrogate(make_memory: MakeMemory) -> None:
    # Text a provider or a URL decoder may produce; a backend that cannot store it says so in
    # the one exception tree, never with a bare UnicodeEncodeError.
    memory = make_memory()
    odd = "conv-\ud83d"
    if isinstance(memory, InMemoryChatMemory):
        memory.append(odd, turn("a"))
        assert memory.load(odd) == turn("a")
        return
    with pytest.raises(ChatMemoryError):
        memory.append(odd, turn("a"))
    with pytest.raises(ChatMemoryError):
        memory.load(odd)
    with pytest.raises(ChatMemoryError):
        memory.clear(odd)


# -- leases: one run per conversation --------------------------------------------------------


def acquire_eventually(memory: Any, conversation_id: str, owner: str, ttl: float) -> Any:
    """Ask for the lease until it is granted (a short-lived one expires), for 5 s at most."""
    deadline = time.monotonic() + 5
    poll = threading.Event()
    while time.monotonic() < deadline:
        lease = memory.try_acquire(conversation_id, owner, ttl)
        if lease is not None:
            return lease
        poll.wait(0.005)  # waiting for the condition, not for a guessed duration
    raise AssertionError(f"the lease on {conversation_id!r} was never granted")


def test_one_lease_per_conversation_and_tokens_grow(make_memory: MakeMemory) -> None:
    memory = make_memory()
    first = memory.try_acquire("c", "run-1", 30)
    assert first == Lease(conversation_id="c", owner="run-1", token=1, ttl=30)
    assert memory.try_acquire("c", "run-2", 30) is None
    assert memory.try_acquire("c", "run-1", 30) is None  # not reentrant either
    other = memory.try_acquire("elsewhere", "run-2", 30)
    assert other is not None and other.token == 1
    memory.release(first)
    second = memory.try_acquire("c", "run-2", 30)
    assert second is not None and second.token == 2


def test_renew_and_release_only_touch_a_live_lease(make_memory: MakeMemory) -> None:
    memory = make_memory()
    lease = memory.try_acquire("c", "run-1", 30)
    assert memory.renew(lease) is True
    memory.release(lease)
    assert memory.renew(lease) is False
    successor = memory.try_acquire("c", "run-2", 30)
    memory.release(lease)  # the old holder's late release must not free the new lease
    assert memory.try_acquire("c", "run-3", 30) is None
    assert memory.renew(successor) is True


def test_a_fenced_append_writes_only_under_a_live_lease(make_memory: MakeMemory) -> None:
    memory = make_memory(max_turns=2)
    lease = memory.try_acquire("c", "run-1", 30)
    memory.append("c", turn("t1"), lease=lease)
    memory.append("c", turn("t2"), lease=lease)
    memory.append("c", turn("t3"), lease=lease)
    assert split_turns(memory.load("c")) == [turn("t2"), turn("t3")]  # trimmed as usual
    memory.release(lease)
    with pytest.raises(ConversationBusyError, match="'c'") as caught:
        memory.append("c", turn("late"), lease=lease)
    assert caught.value.conversation_id == "c"
    assert split_turns(memory.load("c")) == [turn("t2"), turn("t3")]
    memory.append("c", turn("plain"))  # callers without leases write as before
    assert split_turns(memory.load("c"))[-1] == turn("plain")


def test_a_plain_append_is_not_blocked_by_a_lease(make_memory: MakeMemory) -> None:
    memory = make_memory()
    assert memory.try_acquire("c", "run-1", 30) is not None
    memory.append("c", turn("plain"))
    assert memory.load("c") == turn("plain")


def test_an_expired_lease_is_fenced_out(make_memory: MakeMemory) -> None:
    memory = make_memory()
    stale = memory.try_acquire("c", "paused", 0.05)  # never renewed: expires in 50 ms
    fresh = acquire_eventually(memory, "c", "next", 30)
    assert fresh.token == stale.token + 1
    assert memory.renew(stale) is False
    with pytest.raises(ConversationBusyError):
        memory.append("c", turn("stale"), lease=stale)
    memory.release(stale)
    assert memory.try_acquire("c", "third", 30) is None  # still held by the fresh lease
    memory.append("c", turn("fresh"), lease=fresh)
    assert memory.load("c") == turn("fresh")


def test_an_expired_lease_is_refused_even_before_anyone_takes_it(make_memory: MakeMemory) -> None:
    memory = make_memory()
    stale = memory.try_acquire("c", "paused", 0.05)
    # A lease granted after the stale one, with the same ttl, on another conversation: once it
    # can be taken again, the stale one has expired too (without anyone taking "c").
    assert memory.try_acquire("clock", "probe", 0.05) is not None
    acquire_eventually(memory, "clock", "probe 2", 30)
    with pytest.raises(ConversationBusyError):
        memory.append("c", turn("stale"), lease=stale)
    assert memory.load("c") == []
    assert memory.try_acquire("c", "next", 30).token == stale.token + 1


def test_clearing_a_history_keeps_its_lease(make_memory: MakeMemory) -> None:
    memory = make_memory()
    lease = memory.try_acquire("c", "run-1", 30)
    memory.append("c", turn("t"), lease=lease)
    memory.clear("c")
    memory.clear()
    assert memory.try_acquire("c", "run-2", 30) is None
    memory.release(lease)
    assert memory.try_acquire("c", "run-2", 30).token == 2


def test_concurrent_acquires_grant_one_lease(make_memory: MakeMemory) -> None:
    memory = make_memory()
    contenders = 8
    start = threading.Barrier(contenders)
    granted: list[Any] = []

    def contend(i: int) -> None:
        start.wait(timeout=10)
        granted.append(memory.try_acquire("c", f"run-{i}", 30))

    threads = [threading.Thread(target=contend, args=(i,)) for i in range(contenders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    winners = [lease for lease in granted if lease is not None]
    assert len(granted) == contenders and len(winners) == 1
    assert winners[0].token == 1
