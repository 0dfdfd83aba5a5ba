"""A run that fails early never holds its conversation: the next run starts at once.

Each case fails one way before (or just as) a run would hold the conversation's lease; the
next run on the same conversation uses ``on_busy="reject"``, which fails at once on a held
lease, so "it starts at once" is checked without any clock: it answers instead of raising
:class:`~rxreact.ConversationBusyError`. Before, an ``int`` conversation id failed inside the
lease and left the conversation held for ``lease_ttl`` (the next call waited 10 s).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from reactivex import Observable

from rxreact import (
    ChatMemoryError,
    InMemoryChatMemory,
    InvalidArgumentError,
    ReactAgent,
    ScriptedModel,
    ServerError,
    SQLiteChatMemory,
)
from rxreact.memory.lease import Lease
from rxreact.messages import ChatRequest
from rxreact.model.chunks import ChatChunk
from rxreact.model.scripted.replies import Fail, text_reply
from rxreact.operators import with_lease


def answering() -> ScriptedModel:
    return ScriptedModel(lambda request: text_reply("fine"))


def next_run_starts_at_once(memory: Any, conversation_id: str = "c") -> None:
    agent = ReactAgent(answering(), memory=memory, on_busy="reject")
    assert agent.call("and now?", conversation_id) == "fine"


class FailingOnce:
    """An in-memory memory whose ``name`` method fails the first time it is called."""

    def __init__(self, name: str) -> None:
        self.memory = InMemoryChatMemory()
        self.name = name
        self.failed = False

    def __getattr__(self, attribute: str) -> Any:
        method = getattr(self.memory, attribute)
        if attribute != self.name or self.failed:
            return method

        def fail(*args: Any, **kwargs: Any) -> Any:
            self.failed = True
            raise OSError(f"{attribute} failed")

        return fail


@pytest.mark.parametrize("conversation_id", [123, "", "x" * 201, "a\nb", "a\x00b", "\ud800"])
def test_a_bad_conversation_id_fails_at_the_call_and_takes_nothing(conversation_id: Any) -> None:
    memory = InMemoryChatMemory()
    agent = ReactAgent(answering(), memory=memory)
    with pytest.raises(InvalidArgumentError, match=r"^conversation_id must"):
        agent.run("q", conversation_id)
    with pytest.raises(InvalidArgumentError, match=r"^conversation_id must"):
        agent.stream("q", conversation_id)
    with pytest.raises(InvalidArgumentError, match=r"^conversation_id must"):
        agent.start("q", conversation_id)
    next_run_starts_at_once(memory, "123")


def test_an_int_id_given_to_the_memory_itself_takes_no_lease(tmp_path: Path) -> None:
    # The Lease is made before anything is written: SQLite would have kept a grant on '123'.
    for memory in (InMemoryChatMemory(), SQLiteChatMemory(tmp_path / "chat.db")):
        with pytest.raises(ValueError, match="conversation_id"):
            memory.try_acquire(123, "owner", ttl=30)  # type: ignore[arg-type]
        next_run_starts_at_once(memory, "123")


@pytest.mark.parametrize(
    ("run", "error"),
    [
        (lambda agent: agent.run(None, "c"), "^question must be a str"),
        (lambda agent: agent.run("q", "c", options=["temperature"]), "^options must be a dict"),
        (lambda agent: agent.run("q", "c", options={1: 2}), "^options keys must be str"),
        (lambda agent: agent.stream("q", "c", output_type=3), "^output_type must be"),
        (lambda agent: agent.start("q", "c", output_type=threading.Event), "^output_type must be"),
    ],
)
def test_bad_run_arguments_fail_at_the_call(run: Callable[[ReactAgent], Any], error: str) -> None:
    memory = InMemoryChatMemory()
    with pytest.raises(InvalidArgumentError, match=error):
        run(ReactAgent(answering(), memory=memory))
    next_run_starts_at_once(memory)


@pytest.mark.parametrize("method", ["try_acquire", "load"])
def test_a_memory_that_fails_to_lease_or_load_leaves_the_conversation_free(method: str) -> None:
    memory = FailingOnce(method)
    with pytest.raises(ChatMemoryError, match=f"{method} failed"):
        ReactAgent(answering(), memory=memory).run("q", "c")
    next_run_starts_at_once(memory)


def test_a_first_request_that_fails_leaves_the_conversation_free() -> None:
    memory = InMemoryChatMemory()
    model = ScriptedModel([[Fail(ServerError(500, "down"))]])
    with pytest.raises(ServerError):
        ReactAgent(model, memory=memory).run("q", "c")
    next_run_starts_at_once(memory)
    assert [m.content for m in memory.load("c")] == ["and now?", "fine"]


def test_a_model_whose_stream_raises_leaves_the_conversation_free() -> None:
    class Broken:
        def stream(self, request: ChatRequest) -> Observable[ChatChunk]:
            raise RuntimeError("cannot even start")

        def complete(self, request: ChatRequest) -> Any:
            raise RuntimeError("cannot even start")

    memory = InMemoryChatMemory()
    with pytest.raises(RuntimeError, match="cannot even start"):
        ReactAgent(Broken(), memory=memory).run("q", "c")
    next_run_starts_at_once(memory)


def test_a_body_that_cannot_start_gives_the_lease_back() -> None:
    memory = InMemoryChatMemory()

    def body(lease: Lease) -> Observable[Any]:
        raise RuntimeError("no body")

    ended = threading.Event()
    errors: list[Exception] = []
    with_lease(memory, "c", body, owner="me", ttl=30).subscribe(
        on_error=lambda e: (errors.append(e), ended.set())
    )
    assert ended.wait(10)
    assert str(errors[0]) == "no body"
    assert memory.try_acquire("c", "next", ttl=30) is not None
