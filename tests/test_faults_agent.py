"""Faults the agent must survive over real HTTP (issue 11): never crash, never store a broken
answer, every failure typed. Each test runs in both I/O modes against the loopback mock."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from rxreact import InMemoryChatMemory, OpenAIChatModel, ReactAgent, tool
from rxreact.errors import ProviderStreamError
from rxreact.model.script import RawSSE, Script, text_reply, tool_call_reply
from rxreact.testing import MockOpenAIServer

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("io_mode")]


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[MockOpenAIServer] = []
    models: list[OpenAIChatModel] = []

    def start(script: Script) -> tuple[MockOpenAIServer, OpenAIChatModel]:
        server = MockOpenAIServer(script).start()
        servers.append(server)
        model = OpenAIChatModel("mock", base_url=server.base_url, api_key="sk-test", max_retries=0)
        models.append(model)
        return server, model

    yield start
    for model in models:
        model.close()
    for server in servers:
        server.stop()


def sse(*objects: Any) -> bytes:
    return b"".join(b"data: " + json.dumps(o).encode() + b"\n\n" for o in objects)


def choice(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish, **extra}]}


@pytest.mark.parametrize(
    "last",
    [
        choice({}, "error"),
        choice({}, None, error={"message": "model crashed", "code": 500}),
    ],
    ids=["finish_reason_error", "error_in_choice"],
)
def test_a_stream_that_ends_in_error_is_a_provider_error_and_nothing_is_stored(
    serve: Any, last: dict[str, Any]
) -> None:
    body = sse(choice({"role": "assistant", "content": "The answer is 4"}), last) + b"data: [DONE]\n\n"
    _, model = serve([RawSSE(body)])
    memory = InMemoryChatMemory()
    agent = ReactAgent(model, [get_weather], memory=memory)

    with pytest.raises(ProviderStreamError):
        agent.run("2+2?", conversation_id="c1")
    assert memory.load("c1") == []


def test_arguments_nested_too_deep_become_an_error_result(serve: Any) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    server, model = serve(
        [tool_call_reply(("get_weather", deep), arg_piece=1 << 16), text_reply("Sorry.")]
    )
    result = ReactAgent(model, [get_weather]).run("weather?")

    assert result.answer == "Sorry."
    tool_message = server.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert "nested too deeply" in tool_message["content"]


def test_a_surrogate_pair_split_across_deltas_streams_as_one_character(serve: Any) -> None:
    body = (
        sse(
            choice({"role": "assistant", "content": "Hello \ud83d"}),
            choice({"content": "\ude00!"}),
            choice({}, "stop"),
        )
        + b"data: [DONE]\n\n"
    )
    server, model = serve([RawSSE(body), text_reply("ok")])
    agent = ReactAgent(model, [get_weather], memory=InMemoryChatMemory())

    assert agent.run("smile", conversation_id="c").answer == "Hello \U0001f600!"
    assert agent.run("again", conversation_id="c").answer == "ok"  # the history re-encodes
    assert server.requests[1]["messages"][1]["content"] == "Hello \U0001f600!"
