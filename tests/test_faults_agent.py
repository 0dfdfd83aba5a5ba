"""Faults the agent must survive over real HTTP (issue 11): never crash, never store a broken
answer, every failure typed. Each test runs in both I/O modes against the loopback mock."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from rxreact import InMemoryChatMemory, OpenAIChatModel, ReactAgent, tool
from rxreact.errors import ProviderStreamError, ResponseTooLargeError
from rxreact.model.http._aio import io_loop
from rxreact.model.scripted.replies import RawSSE, text_reply, tool_call_reply
from rxreact.testing import MockOpenAIServer

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("io_mode")]


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


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
    serve_model: Any, last: dict[str, Any]
) -> None:
    body = (
        sse(choice({"role": "assistant", "content": "The answer is 4"}), last) + b"data: [DONE]\n\n"
    )
    _, model = serve_model([RawSSE(body)])
    memory = InMemoryChatMemory()
    agent = ReactAgent(model, [get_weather], memory=memory)

    with pytest.raises(ProviderStreamError):
        agent.run("2+2?", conversation_id="c1")
    assert memory.load("c1") == []


def test_arguments_nested_too_deep_become_an_error_result(serve_model: Any) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    server, model = serve_model(
        [tool_call_reply(("get_weather", deep), arg_piece=1 << 16), text_reply("Sorry.")]
    )
    result = ReactAgent(model, [get_weather]).run("weather?")

    assert result.answer == "Sorry."
    tool_message = server.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert "nested too deeply" in tool_message["content"]


def test_a_surrogate_pair_split_across_deltas_streams_as_one_character(serve_model: Any) -> None:
    body = (
        sse(
            choice({"role": "assistant", "content": "Hello \ud83d"}),
            choice({"content": "\ude00!"}),
            choice({}, "stop"),
        )
        + b"data: [DONE]\n\n"
    )
    server, model = serve_model([RawSSE(body), text_reply("ok")])
    agent = ReactAgent(model, [get_weather], memory=InMemoryChatMemory())

    assert agent.run("smile", conversation_id="c").answer == "Hello \U0001f600!"
    assert agent.run("again", conversation_id="c").answer == "ok"  # the history re-encodes
    assert server.requests[1]["messages"][1]["content"] == "Hello \U0001f600!"


class Custom(BaseException):
    """Neither an Exception nor an interpreter signal."""


@tool(timeout=5)
def exits() -> str:
    """Calls sys.exit."""
    raise SystemExit(3)


@tool(timeout=5)
def interrupted() -> str:
    """Raises KeyboardInterrupt."""
    raise KeyboardInterrupt


@tool(timeout=5)
def odd() -> str:
    """Raises a bare BaseException subclass."""
    raise Custom("odd")


@tool(timeout=5)
async def exits_async() -> str:
    """An async tool calling sys.exit."""
    raise SystemExit(4)


@tool(timeout=5)
async def cancels_itself() -> str:
    """An async tool raising its own CancelledError."""
    raise asyncio.CancelledError


def tool_messages(server: MockOpenAIServer) -> dict[str, str]:
    return {
        m["tool_call_id"]: m["content"]
        for m in server.requests[-1]["messages"]
        if m["role"] == "tool"
    }


def test_tools_raising_base_exceptions_give_error_results_not_hangs(serve_model: Any) -> None:
    names = ["exits", "interrupted", "odd", "exits_async", "cancels_itself"]
    server, model = serve_model([tool_call_reply(*((n, {}) for n in names)), text_reply("Noted.")])
    agent = ReactAgent(model, [exits, interrupted, odd, exits_async, cancels_itself])
    result = agent.run("go")

    assert result.answer == "Noted."
    contents = tool_messages(server)
    assert contents["call_0"] == "Error: tool 'exits' raised SystemExit(3)."
    assert contents["call_1"] == "Error: tool 'interrupted' raised KeyboardInterrupt()."
    assert contents["call_2"] == "Error: tool 'odd' raised Custom(odd)."
    assert contents["call_3"] == "Error: tool 'exits_async' raised SystemExit(4)."
    assert "cancelled" in contents["call_4"]
    # The shared I/O loop (async tools run there) survived the SystemExit raised on it.
    alive = asyncio.run_coroutine_threadsafe(_later(), io_loop())
    assert alive.result(5) == {"n": 1}


@tool
def gives_bytes() -> bytes:
    """UTF-8 bytes."""
    return "héllo".encode()


@tool
def gives_bad_bytes() -> bytes:
    """Not UTF-8."""
    return b"\xff"


@tool
def gives_none() -> None:
    """Nothing."""


@tool
def gives_generator() -> Any:
    """A generator."""
    yield 1


async def _later() -> dict[str, int]:
    await asyncio.sleep(0)
    return {"n": 1}


@tool
def gives_coroutine() -> Any:
    """A sync function returning a coroutine."""
    return _later()


@tool(max_result_chars=10)
def gives_a_lot() -> str:
    """Too long."""
    return "z" * 1000


def test_return_values_follow_the_documented_rules(serve_model: Any) -> None:
    tools = [gives_bytes, gives_bad_bytes, gives_none, gives_generator, gives_coroutine]
    tools.append(gives_a_lot)
    server, model = serve_model(
        [tool_call_reply(*((t.name, {}) for t in tools)), text_reply("Done.")]
    )
    assert ReactAgent(model, tools).run("go").answer == "Done."

    contents = tool_messages(server)
    assert contents["call_0"] == "héllo"
    assert "not UTF-8" in contents["call_1"]
    assert contents["call_2"] == "null"
    assert "generator" in contents["call_3"]
    assert contents["call_4"] == '{"n":1}'
    assert contents["call_5"].startswith("zzzzzzzzzz\n[truncated: the result was 1000 characters")


def test_two_tool_calls_with_one_id_each_get_their_own_result(serve_model: Any) -> None:
    reply = tool_call_reply(
        ("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Rome"}), ids=["same", "same"]
    )
    # The mock validates each history like the real API: every call answered, once.
    server, model = serve_model([reply, text_reply("Cold and warm.")])
    assert ReactAgent(model, [get_weather]).run("weather?").answer == "Cold and warm."

    sent = server.requests[1]["messages"]
    assert [c["id"] for c in sent[1]["tool_calls"]] == ["same", "same_2"]
    assert tool_messages(server) == {"same": "Oslo: sunny", "same_2": "Rome: sunny"}


def test_a_line_past_the_cap_ends_the_stream_with_a_typed_error(serve_model: Any) -> None:
    huge = sse(choice({"role": "assistant", "content": "x" * 5000}))
    server, _ = serve_model([RawSSE(huge)])
    model = OpenAIChatModel("mock", base_url=server.base_url, max_retries=0, max_line_bytes=1000)
    memory = InMemoryChatMemory()
    try:
        with pytest.raises(ResponseTooLargeError) as caught:
            ReactAgent(model, memory=memory).run("hi", conversation_id="c")
    finally:
        model.close()
    assert caught.value.what == "sse_line"
    assert memory.load("c") == []


def test_tool_arguments_past_the_cap_end_the_run_before_anything_is_stored(
    serve_model: Any,
) -> None:
    server, _ = serve_model([tool_call_reply(("get_weather", {"city": "x" * 500}), arg_piece=50)])
    model = OpenAIChatModel("mock", base_url=server.base_url, max_retries=0, max_tool_arguments=200)
    memory = InMemoryChatMemory()
    try:
        with pytest.raises(ResponseTooLargeError) as caught:
            ReactAgent(model, [get_weather], memory=memory).run("hi", conversation_id="c")
    finally:
        model.close()
    assert (caught.value.what, caught.value.limit) == ("tool_arguments", 200)
    assert memory.load("c") == []


def test_the_default_caps_are_documented_and_sane() -> None:
    from rxreact.model.http.limits import DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_TOOL_ARGUMENTS
    from rxreact.tools.results import DEFAULT_MAX_RESULT_CHARS

    assert (DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_TOOL_ARGUMENTS) == (8 << 20, 1 << 20)
    assert DEFAULT_MAX_RESULT_CHARS == 100_000
    assert get_weather.max_result_chars == DEFAULT_MAX_RESULT_CHARS
