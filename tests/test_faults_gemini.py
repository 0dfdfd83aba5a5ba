"""The fault matrix on GeminiModel, in both I/O modes, against the mock's Gemini dialect: a
429 or a 5xx (or Gemini's ``UNAVAILABLE`` event) before the first chunk is retried, a stream
cut mid-answer is an error that is not retried and stores nothing, a slow first byte within
the limit is waited for and past it times out, a stalled stream times out between chunks,
and disposing closes the socket. Nothing waits by sleeping: the tests wait on the
observer's terminal event and on the server's counters."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from test_openai_model import Recorder, collect

from rxreact import GeminiModel, InMemoryChatMemory, ReactAgent
from rxreact.errors import (
    ModelConnectionError,
    ModelTimeoutError,
    ProviderStreamError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
)
from rxreact.messages import ChatRequest, UserMessage
from rxreact.model.assembly import assemble
from rxreact.model.chunks import ChatChunk
from rxreact.model.retry_policy import Backoff
from rxreact.model.scripted.replies import (
    Disconnect,
    Fail,
    Hang,
    HTTPErrorReply,
    Pause,
    Script,
    text_reply,
)
from rxreact.testing import MockOpenAIServer

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("io_mode")]

FAST = Backoff(base=0.01, cap=0.05)
REQUEST = ChatRequest(messages=(UserMessage(content="hi"),))
UNAVAILABLE = ProviderStreamError("The model is overloaded.", code=503)


@contextmanager
def serving(script: Script, **options: Any) -> Iterator[tuple[MockOpenAIServer, GeminiModel]]:
    options = {"max_retries": 0, "backoff": FAST, **options}
    with (
        MockOpenAIServer(script) as server,
        GeminiModel("gemini-3-flash", base_url=server.origin, **options) as model,
    ):
        yield server, model


def result(model: GeminiModel) -> Recorder:
    return collect(model.stream(REQUEST), timeout=10.0)


@pytest.mark.parametrize("status", [429, 500, 503])
def test_an_error_status_before_the_first_chunk_is_retried(status: int) -> None:
    script = [HTTPErrorReply(status, "busy", {"retry-after": "0"}), text_reply("Back.")]
    with serving(script, max_retries=1) as (server, model):
        outcome = result(model)
    assert outcome.completed and assemble(outcome.items).content == "Back."
    assert len(server.requests) == 2


def test_an_error_status_with_no_retries_left_is_typed() -> None:
    with serving([HTTPErrorReply(429, "Resource has been exhausted")]) as (_, model):
        error = result(model).error
    assert isinstance(error, RateLimitError) and "exhausted" in error.provider_message
    with serving([HTTPErrorReply(503, "The model is overloaded.")]) as (_, model):
        assert isinstance(result(model).error, ServerError)


def test_an_unavailable_event_before_the_first_chunk_is_retried() -> None:
    with serving([[Fail(UNAVAILABLE)], text_reply("Back.")], max_retries=1) as (server, model):
        outcome = result(model)
    assert outcome.completed and assemble(outcome.items).content == "Back."
    assert len(server.requests) == 2


def test_an_error_event_after_the_first_chunk_is_not_retried() -> None:
    script = [[ChatChunk(text="Hel"), Fail(UNAVAILABLE)], text_reply("never")]
    with serving(script, max_retries=2) as (server, model):
        outcome = result(model)
    assert isinstance(outcome.error, ProviderStreamError)
    assert outcome.error.error_type == "UNAVAILABLE"
    assert [c.text for c in outcome.items] == ["Hel"] and len(server.requests) == 1


def test_a_stream_cut_mid_answer_is_an_error_not_retried_and_nothing_is_stored() -> None:
    script = [[ChatChunk(text="Partial"), Disconnect()], text_reply("never")]
    memory = InMemoryChatMemory()
    with (
        serving(script, max_retries=2) as (server, model),
        pytest.raises((StreamInterruptedError, ModelConnectionError)),
    ):
        ReactAgent(model, memory=memory).call("hi", conversation_id="c")
    assert len(server.requests) == 1
    assert list(memory.load("c")) == []


def test_a_cut_before_the_first_chunk_is_retried() -> None:
    with serving([[Disconnect()], text_reply("Second try.")], max_retries=1) as (server, model):
        outcome = result(model)
    assert assemble(outcome.items).content == "Second try."
    assert len(server.requests) == 2


def test_a_slow_first_byte_within_the_limit_is_waited_for() -> None:
    with serving([[Pause(0.2), *text_reply("Slow.")]], first_chunk_timeout=5) as (_, model):
        outcome = result(model)
    assert outcome.completed and assemble(outcome.items).content == "Slow."


def test_a_first_byte_past_the_limit_times_out() -> None:
    with serving([[Hang()]], first_chunk_timeout=0.3) as (server, model):
        outcome = result(model)
        assert isinstance(outcome.error, ModelTimeoutError)
        assert outcome.error.phase == "first_chunk"
        assert server.wait_for_disconnects(1)  # the socket was closed, not left hanging


def test_a_stalled_stream_times_out_between_chunks() -> None:
    with serving([[ChatChunk(text="Hel"), Hang()]], chunk_timeout=0.3) as (server, model):
        outcome = result(model)
        assert isinstance(outcome.error, ModelTimeoutError)
        assert outcome.error.phase == "between_chunks"
        assert server.wait_for_disconnects(1)


def test_disposing_closes_the_socket() -> None:
    with serving([[ChatChunk(text="x"), Hang()]]) as (server, model):
        recorder = Recorder(then=lambda r, _: r.done.set())
        subscription = recorder.subscribe(model.stream(REQUEST))
        assert recorder.done.wait(5)
        subscription.dispose()
        assert server.wait_for_disconnects(1)
    assert recorder.error is None and not recorder.completed
