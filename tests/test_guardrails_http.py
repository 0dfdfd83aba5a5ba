"""Guardrails over real HTTP (loopback mock server, both I/O modes): a trip closes the model's
stream, and with ``hold="sentence"`` the tripped sentence never reaches ``text()``."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from rxreact import GuardrailResult, GuardrailTrippedError, InMemoryChatMemory, ReactAgent
from rxreact.messages import Message
from rxreact.model.scripted.replies import Hang, text_reply

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("io_mode")]


def collect_text(agent: ReactAgent, conversation_id: str) -> tuple[str, Exception | None]:
    pieces: list[str] = []
    failed: list[Exception] = []
    done = threading.Event()

    def on_error(error: Exception) -> None:
        failed.append(error)
        done.set()

    subscription = agent.text("question", conversation_id).subscribe(
        pieces.append, on_error, done.set
    )
    assert done.wait(10)
    subscription.dispose()
    return "".join(pieces), failed[0] if failed else None


def test_an_output_guardrail_trips_mid_answer_over_http(serve_model: Any) -> None:
    answer = text_reply("All fine here. The secret is 42. And more follows", pieces=None)
    server, model = serve_model([[*answer[:-1], Hang()]])  # the stream stays open

    def no_secrets(text_so_far: str) -> GuardrailResult:
        return GuardrailResult(tripped="secret" in text_so_far, reason="a secret")

    memory = InMemoryChatMemory()
    agent = ReactAgent(model, output_guardrails=[no_secrets], memory=memory)
    text, error = collect_text(agent, "c1")
    assert isinstance(error, GuardrailTrippedError) and error.reason == "a secret"
    assert text == "All fine here. "
    assert server.wait_for_disconnects(1, timeout=5.0)  # the trip closed the stream
    assert memory.load("c1") == []


def test_an_input_guardrail_trip_closes_round_1s_stream_over_http(serve_model: Any) -> None:
    server, model = serve_model([[*text_reply("Sure, here it comes")[:3], Hang()]])

    def on_topic(question: str, history: list[Message]) -> GuardrailResult:
        # a slow check: the answer has begun streaming by the time it trips
        assert server.wait_for_requests(1, timeout=5.0)
        return GuardrailResult(tripped=True, reason="off topic")

    memory = InMemoryChatMemory()
    agent = ReactAgent(model, input_guardrails=[on_topic], memory=memory)
    text, error = collect_text(agent, "c1")
    assert isinstance(error, GuardrailTrippedError) and error.guardrail == "on_topic"
    assert text == ""  # held until the check, which tripped
    assert server.wait_for_disconnects(1, timeout=5.0)
    assert memory.load("c1") == []


def test_a_guarded_run_leaves_no_cycles(serve_model: Any) -> None:
    from test_no_cycles import cyclic_garbage

    _, model = serve_model([text_reply("It is sunny. Enjoy.")] * 2)
    agent = ReactAgent(
        model,
        input_guardrails=[lambda question, history: GuardrailResult(tripped=False)],
        output_guardrails=[lambda text: GuardrailResult(tripped=False)],
    )
    assert agent.call("warm up") == "It is sunny. Enjoy."
    assert cyclic_garbage(lambda: agent.call("weather?")) == []
