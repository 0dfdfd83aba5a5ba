"""Agents as tools over real HTTP (loopback mock servers, both I/O modes): a planner calling a
researcher and a coder, each with its own tool; disposing the planner closes both children's
streams."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from rxreact import ReactAgent, tool
from rxreact.events import FinalAnswer, ToolResult
from rxreact.messages import Usage
from rxreact.model.scripted.replies import Hang, text_reply, tool_call_reply

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("io_mode")]


def usage(total: int) -> Usage:
    return Usage(prompt_tokens=total - 1, completion_tokens=1, total_tokens=total)


@tool
def search(topic: str) -> str:
    """Search the web for a topic."""
    return f"3 pages about {topic}"


@tool
def run_code(source: str) -> str:
    """Run a snippet of Python."""
    return f"ran {len(source)} characters"


def plan_script(*, usage_each: bool = True) -> list[Any]:
    return [
        tool_call_reply(
            ("researcher", {"question": "What is Rx?"}),
            ("coder", {"question": "What does print(1) print?"}),
            ids=["p1", "p2"],
            usage=usage(100) if usage_each else None,
        ),
        text_reply("Use Rx; it prints 1.", usage=usage(200) if usage_each else None),
    ]


def test_a_planner_with_two_agent_tools_over_http(serve_model: Any) -> None:
    _, researcher_model = serve_model(
        [
            tool_call_reply(("search", {"topic": "rx"}), ids=["r1"], usage=usage(10)),
            text_reply("Rx is streams.", usage=usage(20)),
        ]
    )
    _, coder_model = serve_model(
        [
            tool_call_reply(("run_code", {"source": "print(1)"}), ids=["k1"], usage=usage(30)),
            text_reply("It prints 1.", usage=usage(40)),
        ]
    )
    planner_server, planner_model = serve_model(plan_script())
    researcher = ReactAgent(researcher_model, [search], name="researcher")
    coder = ReactAgent(coder_model, [run_code], name="coder")
    planner = ReactAgent(planner_model, [researcher.as_tool(), coder.as_tool()], name="planner")

    events = list(planner.iter("plan"))

    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    for child, call_id in (("researcher", "p1"), ("coder", "p2")):
        own = [e for e in events if e.agent == child]
        assert {e.path for e in own} == {(call_id,)}
        assert [e.type for e in own if e.type in ("round_started", "final_answer")] == [
            "round_started",
            "round_started",
            "final_answer",
        ]
    results = {e.call_id: e.content for e in events if isinstance(e, ToolResult) and not e.path}
    assert results == {"p1": "Rx is streams.", "p2": "It prints 1."}
    final = events[-1]
    assert isinstance(final, FinalAnswer) and final.agent == "planner" and final.path == ()
    assert final.usage is not None and final.usage.total_tokens == 400
    assert set(final.usage_by_agent) == {"planner", "researcher", "coder"}
    # the planner's second request carries both children's answers as tool results
    tool_messages = [m for m in planner_server.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ["Rx is streams.", "It prints 1."]


def test_disposing_the_planner_closes_both_childrens_http_streams(serve_model: Any) -> None:
    researcher_server, researcher_model = serve_model([[*text_reply("Looking")[:2], Hang()]])
    coder_server, coder_model = serve_model([[*text_reply("Coding")[:2], Hang()]])
    _, planner_model = serve_model(plan_script(usage_each=False))
    researcher = ReactAgent(researcher_model, name="researcher")
    coder = ReactAgent(coder_model, name="coder")
    planner = ReactAgent(planner_model, [researcher.as_tool(), coder.as_tool()])

    writing: set[str] = set()
    both = threading.Event()

    def on_next(event: Any) -> None:
        if event.type == "text_delta" and event.path:
            writing.add(event.agent)
            if len(writing) == 2:
                both.set()

    subscription = planner.stream("plan").subscribe(on_next)
    assert both.wait(10)  # both children are mid-answer, their servers silent
    subscription.dispose()
    assert researcher_server.wait_for_disconnects(1, timeout=5.0)
    assert coder_server.wait_for_disconnects(1, timeout=5.0)


def test_a_run_with_an_agent_tool_leaves_no_cycles(serve_model: Any) -> None:
    from test_no_cycles import cyclic_garbage

    _, child_model = serve_model([text_reply("Rx is streams.")] * 2)
    _, model = serve_model(
        [tool_call_reply(("researcher", {"question": "Rx?"})), text_reply("Done.")] * 2
    )
    researcher = ReactAgent(child_model, name="researcher")
    planner = ReactAgent(model, [researcher.as_tool()], name="planner")
    assert planner.call("warm up") == "Done."
    assert cyclic_garbage(lambda: planner.call("plan")) == []
