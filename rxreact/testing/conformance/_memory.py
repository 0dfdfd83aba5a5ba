"""The chat memory contract (:class:`~rxreact.memory.ChatMemory`) as pytest tests: subclass
:class:`ChatMemoryConformance` and give it a ``make_memory`` fixture (see the package doc)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from rxreact.errors import ChatMemoryError, ConversationBusyError
from rxreact.memory import ChatMemory, Lease
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

__all__ = ["ChatMemoryConformance", "MakeMemory", "acquire_eventually", "split_turns", "turn"]

MakeMemory = Callable[..., Any]
"""``make_memory(**options)``: a new, empty memory of the store under test (``max_turns=...``
among the options); the fixture closes what it made."""


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


class ChatMemoryConformance:
    """Every test a chat memory must pass. The suite reads and writes only through the
    :class:`~rxreact.memory.ChatMemory` methods (and ``conversation_ids``, ``clear``, and the
    optional ``hand_over``), so it runs on any store.

    Subclass it as ``TestSomething`` and define the fixture ``make_memory``.
    """

    def test_every_backend_is_a_chat_memory(self, make_memory: MakeMemory) -> None:
        assert isinstance(make_memory(), ChatMemory)

    def test_unknown_conversation_is_empty(self, make_memory: MakeMemory) -> None:
        assert make_memory().load("nobody") == []

    def test_every_message_kind_round_trips(self, make_memory: MakeMemory) -> None:
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

    def test_parts_and_replay_items_round_trip(self, make_memory: MakeMemory) -> None:
        memory = make_memory()
        png = Image.from_bytes(bytes(range(256)) * 40, "image/png")  # every byte value
        pdf = File.from_bytes(b"%PDF-1.4\n\x00\xff", "application/pdf", name="r\u00e9port.pdf")
        thinking = ReplayItem(
            provider="anthropic",
            data={
                "type": "thinking",
                "thinking": "weather first",
                "signature": "c2ln",
                "n": [1, 2.5],
            },
        )
        stored = [
            UserMessage(
                content=(
                    Text(text="What are these?"),
                    png,
                    pdf,
                    Image.from_url("https://x.test/a.jpg"),
                )
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

    def test_unicode_and_odd_ids_round_trip(self, make_memory: MakeMemory) -> None:
        memory = make_memory()
        question = UserMessage(content='北京天气？ 🌤 "quoted" \\ \n')
        messages = [question, AssistantMessage(content="晴")]
        for conversation in ("user:42/chat*[1]", "北京", ""):
            memory.append(conversation, messages)
            assert memory.load(conversation) == messages

    def test_conversations_are_kept_apart(self, make_memory: MakeMemory) -> None:
        memory = make_memory()
        memory.append("a", turn("a1"))
        memory.append("b", turn("b1"))
        memory.append("a", turn("a2"))
        assert memory.load("a") == [*turn("a1"), *turn("a2")]
        assert memory.load("b") == turn("b1")
        assert sorted(memory.conversation_ids()) == ["a", "b"]

    def test_clear_one_conversation_or_all(self, make_memory: MakeMemory) -> None:
        memory = make_memory()
        for conversation in ("a", "b", "c"):
            memory.append(conversation, turn(conversation))
        memory.clear("b")
        assert memory.load("b") == []
        assert sorted(memory.conversation_ids()) == ["a", "c"]
        memory.clear()
        assert memory.conversation_ids() == []
        assert memory.load("a") == []

    def test_trimming_keeps_whole_turns(self, make_memory: MakeMemory) -> None:
        memory = make_memory(max_turns=2)
        turns = [turn(f"t{i}", tools=i % 3) for i in range(5)]
        for i, messages in enumerate(turns):
            memory.append("c", messages)
            kept = memory.load("c")
            assert split_turns(kept) == turns[max(0, i - 1) : i + 1]
            assert isinstance(kept[0], UserMessage)
            assert_tool_calls_answered(kept)

    def test_max_turns_must_be_positive(self, make_memory: MakeMemory) -> None:
        with pytest.raises(ValueError, match="max_turns"):
            make_memory(max_turns=0)

    def test_concurrent_turns_never_interleave(self, make_memory: MakeMemory) -> None:
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
            tag = str(messages[0].content).split(":")[0]
            assert messages == turn(tag, tools=2)
        for w in range(writers):  # each writer's turns in the order it wrote them
            mine = [t[0].content for t in turns if str(t[0].content).startswith(f"w{w}-")]
            assert mine == [f"w{w}-{i}: question" for i in range(turns_each)]

    def test_readers_never_see_a_partial_turn_or_an_untrimmed_window(
        self, make_memory: MakeMemory
    ) -> None:
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
                assert messages == turn(str(messages[0].content).split(":")[0], tools=2)

    def test_a_conversation_id_with_a_lone_surrogate(self, make_memory: MakeMemory) -> None:
        # Text a provider or a URL decoder may produce: a store keeps it, or says it cannot in
        # the one exception tree, never with a bare UnicodeEncodeError.
        memory = make_memory()
        odd = "conv-\ud83d"
        try:
            memory.append(odd, turn("a"))
        except ChatMemoryError:
            with pytest.raises(ChatMemoryError):
                memory.load(odd)
            with pytest.raises(ChatMemoryError):
                memory.clear(odd)
            return
        assert memory.load(odd) == turn("a")

    # -- leases: one run per conversation ---------------------------------------------------

    def test_one_lease_per_conversation_and_tokens_grow(self, make_memory: MakeMemory) -> None:
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

    def test_renew_and_release_only_touch_a_live_lease(self, make_memory: MakeMemory) -> None:
        memory = make_memory()
        lease = memory.try_acquire("c", "run-1", 30)
        assert memory.renew(lease) is True
        memory.release(lease)
        assert memory.renew(lease) is False
        successor = memory.try_acquire("c", "run-2", 30)
        memory.release(lease)  # the old holder's late release must not free the new lease
        assert memory.try_acquire("c", "run-3", 30) is None
        assert memory.renew(successor) is True

    def test_a_fenced_append_writes_only_under_a_live_lease(self, make_memory: MakeMemory) -> None:
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

    def test_a_plain_append_is_not_blocked_by_a_lease(self, make_memory: MakeMemory) -> None:
        memory = make_memory()
        assert memory.try_acquire("c", "run-1", 30) is not None
        memory.append("c", turn("plain"))
        assert memory.load("c") == turn("plain")

    def test_an_expired_lease_is_fenced_out(self, make_memory: MakeMemory) -> None:
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

    def test_an_expired_lease_is_refused_even_before_anyone_takes_it(
        self, make_memory: MakeMemory
    ) -> None:
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

    def test_clearing_a_history_keeps_its_lease(self, make_memory: MakeMemory) -> None:
        memory = make_memory()
        lease = memory.try_acquire("c", "run-1", 30)
        memory.append("c", turn("t"), lease=lease)
        memory.clear("c")
        memory.clear()
        assert memory.try_acquire("c", "run-2", 30) is None
        memory.release(lease)
        assert memory.try_acquire("c", "run-2", 30).token == 2

    def test_concurrent_acquires_grant_one_lease(self, make_memory: MakeMemory) -> None:
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

    def test_a_lease_handed_over_fences_its_old_holder_out(self, make_memory: MakeMemory) -> None:
        memory = make_memory()
        hand_over = getattr(memory, "hand_over", None)
        if hand_over is None:
            pytest.skip("this store does not hand leases over (optional)")
        old = memory.try_acquire("c", "dead owner", 30)
        successor = hand_over(old, "resumed run", 30)
        assert successor is not None and successor.token == old.token + 1
        assert hand_over(old, "someone else", 30) is None  # a grant was made after it
        assert memory.renew(old) is False
        with pytest.raises(ConversationBusyError):
            memory.append("c", turn("late"), lease=old)
        memory.append("c", turn("resumed"), lease=successor)
        assert memory.load("c") == turn("resumed")

    def test_concurrent_runs_on_one_conversation_never_start_from_a_stale_history(
        self, make_memory: MakeMemory
    ) -> None:
        # The race that once gave 47 runs of 200 a history without their predecessors' turns:
        # with the lease, each run loads the history only once the one before it committed.
        from rxreact.agent.react_agent import ReactAgent
        from rxreact.model.scripted.model import ScriptedModel
        from rxreact.model.scripted.replies import text_reply

        def asked(request: Any) -> list[Any]:
            return [m.content for m in request.messages if isinstance(m, UserMessage)]

        model = ScriptedModel(lambda request: text_reply(f"seen {len(asked(request))}", 2))
        memory = make_memory()
        agent = ReactAgent(model, memory=memory, busy_timeout=None)
        runs, finished = 40, threading.Semaphore(0)
        errors: list[Exception] = []
        start = threading.Barrier(4)

        def failed(error: Exception) -> None:
            errors.append(error)
            finished.release()

        def subscribe_some(first: int) -> None:
            start.wait(timeout=10)
            for i in range(first, runs, 4):
                agent.stream(f"q{i}", "shared").subscribe(
                    on_error=failed, on_completed=finished.release
                )

        threads = [threading.Thread(target=subscribe_some, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
        assert all(finished.acquire(timeout=60) for _ in range(runs))
        assert errors == []
        # Request n carried n questions: no two runs started from the same history.
        assert sorted(len(asked(r)) for r in model.requests) == list(range(1, runs + 1))
        assert len(memory.load("shared")) == 2 * runs
