"""The whole agent loop over real HTTP and real SSE against the loopback mock server."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from cancellable import SlowTool

from rxreact import CancellationToken, InMemoryChatMemory, ReactAgent, tool
from rxreact.messages import ChatRequest
from rxreact.model.scripted.replies import Hang, text_reply, tool_call_reply

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("io_mode")]


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


def test_max_rounds_over_http_never_sends_an_invalid_history(serve_model: Any) -> None:
    def script(request: ChatRequest) -> Any:
        if request.tool_choice == "none":
            return text_reply("Best answer from what I have.")
        return tool_call_reply(("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Rome"}))

    server, model = serve_model(script)  # validates every history like the real API (400 otherwise)
    result = ReactAgent(model, [get_weather], max_rounds=2).run("weather?")

    assert (result.answer, result.rounds, result.forced) == (
        "Best answer from what I have.",
        3,
        True,
    )
    last = server.requests[-1]
    assert last["tool_choice"] == "none"
    assert [t["function"]["name"] for t in last["tools"]] == ["get_weather"]
    roles = [m["role"] for m in last["messages"]]
    assert roles == ["user", "assistant", "tool", "tool", "assistant", "tool", "tool", "user"]


def test_every_bad_call_kind_over_http_is_read_by_the_model(serve_model: Any) -> None:
    @tool(timeout=0.2)
    def stuck(token: CancellationToken) -> str:
        """Never finishes in time."""
        token.wait(10)
        return "too late"

    @tool
    def boom() -> str:
        """Raises."""
        raise RuntimeError("exploded")

    server, model = serve_model(
        [
            tool_call_reply(
                ("nope", {}),
                ("get_weather", "{not json"),
                ("get_weather", {"town": "x"}),
                ("boom", {}),
                ("stuck", {}),
            ),
            text_reply("I will explain the failures."),
        ]
    )
    events: list[Any] = []
    done = threading.Event()
    ReactAgent(model, [get_weather, boom, stuck]).stream("q").subscribe(
        events.append, lambda e: done.set(), done.set
    )
    assert done.wait(20)
    results = {e.call_id: e for e in events if e.type == "tool_result"}
    assert all(r.is_error for r in results.values())
    tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    texts = [m["content"] for m in tool_messages]
    assert "Valid tools: boom, get_weather, stuck" in texts[0]
    assert "not valid JSON" in texts[1]
    assert "city: Field required" in texts[2]
    assert "RuntimeError: exploded" in texts[3]
    assert "timed out after 0.2 s" in texts[4]
    assert events[-1].text == "I will explain the failures."


def test_dispose_closes_the_http_stream_and_cancels_tools(serve_model: Any) -> None:
    slow = SlowTool()
    memory = InMemoryChatMemory()
    server, model = serve_model([tool_call_reply(("slow", {})), text_reply("never")])
    agent = ReactAgent(model, [slow.tool], memory=memory)
    events: list[Any] = []
    subscription = agent.stream("q", conversation_id="c").subscribe(events.append)
    assert slow.running.wait(10)
    subscription.dispose()
    assert slow.tokens[0].cancelled
    assert len(server.requests) == 1  # no further round
    assert memory.load("c") == []
    assert "tool_result" not in [e.type for e in events]

    # while the model is silent mid-answer: the server sees the connection close
    server2, model2 = serve_model([[*text_reply("partial")[:2], Hang()]])
    seen = threading.Event()
    sub = (
        ReactAgent(model2)
        .stream("q")
        .subscribe(lambda e: seen.set() if e.type == "text_delta" else None)
    )
    assert seen.wait(10)
    sub.dispose()
    assert server2.wait_for_disconnects(1, timeout=2.0)


def test_memory_over_http_carries_the_conversation(serve_model: Any) -> None:
    server, model = serve_model(
        [
            tool_call_reply(("get_weather", {"city": "Oslo"})),
            text_reply("Oslo is sunny."),
            text_reply("You asked about Oslo."),
        ]
    )
    agent = ReactAgent(model, [get_weather], memory=InMemoryChatMemory())
    assert agent.call("Weather in Oslo?", conversation_id="x") == "Oslo is sunny."
    assert agent.call("What did I ask?", conversation_id="x") == "You asked about Oslo."
    roles = [m["role"] for m in server.requests[2]["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
