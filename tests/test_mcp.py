"""MCP servers as tool sources: real servers (the SDK's MCPServer) over stdio and streamable
HTTP, whole agent runs against the loopback OpenAI mock."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from mcp_fixtures import SERVER_SCRIPT, HTTPServerProcess
from reactivex import operators as ops

from rxreact import OpenAIChatModel, ReactAgent, tool
from rxreact.errors import ConfigurationError, ToolDefinitionError, ToolSourceError
from rxreact.events import ToolApprovalRequested, ToolProgress, ToolResult
from rxreact.mcp import MCPServer
from rxreact.model.scripted.replies import text_reply, tool_call_reply

pytestmark = pytest.mark.integration


@tool
def local_time(city: str) -> str:
    """The local time in a city."""
    return f"12:00 in {city}"


@pytest.fixture(scope="module")
def http_process() -> Iterator[HTTPServerProcess]:
    process = HTTPServerProcess()
    yield process
    process.stop()


@pytest.fixture(scope="module", params=["stdio", "http"])
def weather(request: pytest.FixtureRequest) -> Iterator[MCPServer]:
    if request.param == "stdio":
        server = MCPServer.stdio(sys.executable, [SERVER_SCRIPT, "stdio"])
    else:
        server = MCPServer.http(
            request.getfixturevalue("http_process").url, headers={"X-Client": "tests"}
        )
    with server:
        yield server


def _tool_messages(request: dict[str, Any]) -> dict[str, str]:
    calls = {
        c["id"]: c["function"]["name"]
        for m in request["messages"]
        for c in m.get("tool_calls") or ()
    }
    return {
        calls[m["tool_call_id"]]: m["content"] for m in request["messages"] if m["role"] == "tool"
    }


@pytest.mark.usefixtures("io_mode")
def test_a_run_calls_mcp_tools_beside_local_ones(weather: MCPServer, serve_model: Any) -> None:
    server, model = serve_model(
        [
            tool_call_reply(
                ("get_weather", {"city": "Oslo"}),
                ("local_time", {"city": "Oslo"}),
                ("picture", {}),
                ("fail", {"reason": "no such city"}),
            ),
            text_reply("Sunny, noon."),
        ]
    )
    result = ReactAgent(model, [local_time, weather]).run("Weather and time in Oslo?")

    assert result.answer == "Sunny, noon."
    offered = {t["function"]["name"]: t["function"] for t in server.requests[0]["tools"]}
    assert offered["get_weather"]["description"] == "The current weather in a city."
    assert offered["get_weather"]["parameters"]["properties"]["city"]["type"] == "string"
    assert offered["get_weather"]["parameters"]["required"] == ["city"]
    assert {"local_time", "count", "slow", "pid"} <= set(offered)
    results = _tool_messages(server.requests[1])
    assert results["get_weather"] == "sunny in Oslo, 21 C"
    assert results["local_time"] == "12:00 in Oslo"
    # An image block reaches the model as an image: chat completions takes none in a tool
    # message, so it follows in a user message after the round's tool messages.
    assert results["picture"] == "a red square\n[image attached below]"
    follow_up = server.requests[1]["messages"][-1]
    assert follow_up["role"] == "user"
    image = base64.b64encode(b"\x89PNG....").decode()
    assert follow_up["content"][-1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{image}"},
    }
    assert "no such city" in results["fail"]  # isError: the model reads the server's text
    assert results["fail"].startswith("Error")


def test_two_servers_with_one_tool_name_need_a_prefix(
    http_process: HTTPServerProcess, serve_model: Any
) -> None:
    with (
        MCPServer.http(http_process.url) as first,
        MCPServer.http(http_process.url) as second,
        MCPServer.http(http_process.url, prefix="backup_") as prefixed,
    ):
        with pytest.raises(ToolDefinitionError, match=r"get_weather.*prefix="):
            ReactAgent(
                OpenAIChatModel("m", base_url="http://127.0.0.1:9", api_key="k"), [first, second]
            )
        _, model = serve_model(
            [tool_call_reply(("backup_get_weather", {"city": "Rome"})), text_reply("ok")]
        )
        result = ReactAgent(model, [first, prefixed]).run("Rome?")
        assert result.messages[2].content == "sunny in Rome, 21 C"  # the server's own name called
        assert prefixed.call_tool("get_weather", {"city": "Oslo"}) == "sunny in Oslo, 21 C"


def test_a_restarted_server_is_reconnected_and_a_dead_one_is_an_error_result(
    serve_model: Any,
) -> None:
    process = HTTPServerProcess()
    try:
        # legacy: the initialize handshake gives a session id that the restarted server
        # does not know (HTTP 404); MCP 2026-07-28 connections have no session to lose.
        with MCPServer.http(process.url, mode="legacy") as weather:
            call = tool_call_reply(("get_weather", {"city": "Rome"}))
            _, model = serve_model(
                [call, text_reply("ok"), call, text_reply("ok"), call, text_reply("no")]
            )
            agent = ReactAgent(model, [weather])
            assert agent.run("Rome?").messages[2].content == "sunny in Rome, 21 C"
            process.restart()  # reconnected once, the call retried
            assert agent.run("Rome again?").messages[2].content == "sunny in Rome, 21 C"
            process.stop()  # now nobody listens: an error result, and the run goes on
            result = agent.run("And now?")
            assert result.answer == "no"
            assert result.messages[2].content.startswith("Error")
            assert "cannot connect" in result.messages[2].content
    finally:
        if process.process.poll() is None:
            process.stop()


def test_a_killed_stdio_server_is_started_again_and_closing_stops_it() -> None:
    with MCPServer.stdio(sys.executable, [SERVER_SCRIPT, "stdio"]) as weather:
        first = int(weather.call_tool("pid"))
        os.kill(first, 9)
        second = int(weather.call_tool("pid"))  # found the connection lost: reconnected
        assert second != first
        assert os.path.exists(f"/proc/{second}")
    assert not os.path.exists(f"/proc/{second}")  # stopped and reaped when the block ended
    with pytest.raises(ToolSourceError, match="closed"):
        weather.call_tool("get_weather", {"city": "x"})


def test_a_program_that_never_closes_leaves_no_server_process() -> None:
    program = textwrap.dedent(
        f"""
        import sys
        from rxreact.mcp import MCPServer
        server = MCPServer.stdio(sys.executable, [{SERVER_SCRIPT!r}, "stdio"])
        server.as_tools()
        print(server.call_tool("pid"), flush=True)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=30, check=True
    )
    pid = int(done.stdout.split()[-1])
    assert not os.path.exists(f"/proc/{pid}")


def test_without_the_mcp_package_the_error_says_which_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "mcp.client.stdio", None)
    with pytest.raises(ConfigurationError, match=r"rxreact\[mcp\]"):
        MCPServer.stdio("anything")


def test_tool_schema_is_the_servers_own(weather: MCPServer) -> None:
    tools = {t.name: t for t in weather.as_tools()}
    assert json.dumps(tools["count"].parameters, sort_keys=True) == json.dumps(
        {
            "properties": {"n": {"title": "N", "type": "integer"}},
            "required": ["n"],
            "type": "object",
        },
        sort_keys=True,
    )


@pytest.mark.usefixtures("io_mode")
def test_mcp_progress_is_tool_progress_events(weather: MCPServer, serve_model: Any) -> None:
    _, model = serve_model([tool_call_reply(("count", {"n": 3})), text_reply("done")])
    events = ReactAgent(model, [weather]).stream("count").pipe(ops.to_list()).run()

    progress = [e for e in events if isinstance(e, ToolProgress)]
    assert [e.value for e in progress] == [
        {"progress": float(i), "total": 3.0, "message": f"step {i}"} for i in (1, 2, 3)
    ]
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert result.content == "counted to 3"


def test_disposing_a_run_cancels_the_mcp_call_on_the_server(
    weather: MCPServer, serve_model: Any
) -> None:
    _, model = serve_model([tool_call_reply(("slow", {})), text_reply("never")])
    running = threading.Event()
    subscription = (
        ReactAgent(model, [weather])
        .stream("wait")
        .subscribe(lambda e: running.set() if isinstance(e, ToolProgress) else None)
    )
    assert running.wait(20)  # the server reported that the tool started
    subscription.dispose()
    assert weather.call_tool("was_cancelled") == "true"  # the server's handler was cancelled


def test_mcp_tools_can_require_approval(http_process: HTTPServerProcess, serve_model: Any) -> None:
    asked: list[str] = []

    def approver(request: ToolApprovalRequested) -> bool:
        asked.append(request.name)
        return False

    _, model = serve_model(
        [tool_call_reply(("get_weather", {"city": "Oslo"}), ("pid", {})), text_reply("ok")]
    )
    with MCPServer.http(http_process.url, requires_approval={"get_weather"}) as weather:
        result = ReactAgent(model, [weather], approver=approver).run("go")
    weather_result, pid_result = (m.content for m in result.messages if m.role == "tool")
    assert asked == ["get_weather"]
    assert "denied" in weather_result
    assert pid_result.isdigit()


def test_the_trace_continues_on_the_mcp_server(weather: MCPServer, serve_model: Any) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _, model = serve_model([tool_call_reply(("traceparent", {})), text_reply("ok")])
    result = ReactAgent(model, [weather], tracer_provider=provider).run("trace?")

    (tool_span,) = [s for s in exporter.get_finished_spans() if s.name.startswith("execute_")]
    _, trace_id, parent_id, _ = result.messages[2].content.split("-")  # what the server got
    assert int(trace_id, 16) == tool_span.context.trace_id
    assert int(parent_id, 16) == tool_span.context.span_id
