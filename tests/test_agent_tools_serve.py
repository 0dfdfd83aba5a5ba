"""An agent tool's run in the UI message stream: the child's text and tools as the calling
tool's preliminary output, and a child's approval request as a card the page answers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from reactivex.testing import TestScheduler
from serve_helpers import parse_sse, serving

from rxreact import InMemoryChatMemory, OpenAIChatModel, ReactAgent, tool
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.serve import create_app
from rxreact.serve.ui_stream import UIChunk, to_ui_message_stream
from rxreact.testing import MockOpenAIServer


@tool
def search(topic: str) -> str:
    """Search the web for a topic."""
    return f"3 pages about {topic}"


@tool(requires_approval=True)
def pay(amount: int) -> str:
    """Pay an amount."""
    return f"paid {amount}"


def test_a_childs_run_is_the_preliminary_output_of_its_call() -> None:
    scheduler = TestScheduler()
    researcher = ReactAgent(
        ScriptedModel(
            [tool_call_reply(("search", {"topic": "rx"}), ids=["r1"]), text_reply("Rx is streams.")]
        ),
        [search],
        name="researcher",
        scheduler=scheduler,
    )
    planner = ReactAgent(
        ScriptedModel(
            [tool_call_reply(("researcher", {"question": "rx?"}), ids=["p1"]), text_reply("Ok.")]
        ),
        [researcher.as_tool()],
        scheduler=scheduler,
    )
    chunks: list[UIChunk] = []
    planner.stream("q").pipe(to_ui_message_stream()).subscribe(chunks.append)
    scheduler.start()

    card = [c.part for c in chunks if c.part.get("toolCallId") == "p1"]
    preliminary = [p["output"] for p in card if p.get("preliminary")]
    assert preliminary[0] == {
        "agent": "researcher",
        "tools": [{"name": "search", "state": "running"}],
        "text": "",
    }
    assert preliminary[-1] == {
        "agent": "researcher",
        "tools": [{"name": "search", "state": "done"}],
        "text": "Rx is streams.",
    }
    assert card[-1] == {
        "type": "tool-output-available",
        "toolCallId": "p1",
        "output": "Rx is streams.",
    }
    # nothing of the child's inside opens parts of the root's message
    assert not any(c.part.get("toolCallId") == "r1" for c in chunks)
    texts = [c.part["delta"] for c in chunks if c.part["type"] == "text-delta"]
    assert texts == ["Ok."]
    assert [c.seq for c in chunks] == sorted(c.seq for c in chunks)


@pytest.fixture
def url() -> Iterator[str]:
    with (
        MockOpenAIServer(
            [tool_call_reply(("pay", {"amount": 5}), ids=["pay1"]), text_reply("Paid 5.")]
        ) as child_mock,
        MockOpenAIServer(
            [tool_call_reply(("billing", {"question": "pay 5"}), ids=["b1"]), text_reply("Done.")]
        ) as root_mock,
    ):
        child_model = OpenAIChatModel("mock", base_url=child_mock.base_url)
        root_model = OpenAIChatModel("mock", base_url=root_mock.base_url)
        billing = ReactAgent(child_model, [pay], name="billing")
        root = ReactAgent(root_model, [billing.as_tool()], memory=InMemoryChatMemory())
        with serving(create_app(root)) as base:
            yield base
        child_model.close()
        root_model.close()


@pytest.mark.integration
def test_a_person_approves_a_childs_call_on_the_page(url: str) -> None:
    body = {
        "id": "c1",
        "messages": [{"id": "m", "role": "user", "parts": [{"type": "text", "text": "pay"}]}],
    }
    seen: list[dict[str, Any]] = []
    with httpx.stream("POST", f"{url}/api/chat", json=body, timeout=30) as stream:
        items = parse_sse(stream.iter_lines())
        for item in items:
            if isinstance(item, str) or item.data == "[DONE]":
                continue
            seen.append(item.part)
            if item.part["type"] == "tool-approval-request":
                break
        assert seen[-1] == {
            "type": "tool-approval-request",
            "approvalId": "pay1",
            "toolCallId": "pay1",
        }
        assert seen[-2]["type"] == "tool-input-available" and seen[-2]["input"] == {"amount": 5}
        answer = {"approvalId": "pay1", "approved": True}
        assert httpx.post(f"{url}/api/chat/c1/approve", json=answer).status_code == 202
        for item in items:
            if isinstance(item, str) or item.data == "[DONE]":
                continue
            seen.append(item.part)
    outputs = {
        p["toolCallId"]: p["output"]
        for p in seen
        if p["type"] == "tool-output-available" and not p.get("preliminary")
    }
    assert outputs == {"pay1": "paid 5", "b1": "Paid 5."}
    assert seen[-1]["type"] == "finish"


@pytest.mark.integration
def test_the_ai_sdk_client_reads_a_nested_run() -> None:
    """The ``ai`` package's own reader (chunk schemas validated, the useChat state machine)
    takes the preliminary outputs and the child's approval card."""
    from serve_helpers import require_executable, unavailable
    from test_serve_ai_client import CLIENT_DIR, read

    node = require_executable("node")
    if not (CLIENT_DIR / "node_modules" / "ai").is_dir():
        unavailable("tests/ui_client has no node_modules (run `npm ci` there)")
    with (
        MockOpenAIServer(
            [tool_call_reply(("pay", {"amount": 5}), ids=["pay1"]), text_reply("Paid 5.")]
        ) as child_mock,
        MockOpenAIServer(
            [tool_call_reply(("billing", {"question": "pay 5"}), ids=["b1"]), text_reply("Done.")]
        ) as root_mock,
    ):
        child_model = OpenAIChatModel("mock", base_url=child_mock.base_url)
        root_model = OpenAIChatModel("mock", base_url=root_mock.base_url)
        billing = ReactAgent(child_model, [pay], name="billing")
        root = ReactAgent(
            root_model,
            [billing.as_tool()],
            memory=InMemoryChatMemory(),
            approver=lambda request: True,
        )
        with serving(create_app(root)) as base:
            result = read(node, base, "send", "c-nested", "pay")
        child_model.close()
        root_model.close()

    assert result["errors"] == []
    tools = {
        p["toolCallId"]: p for p in result["message"]["parts"] if p["type"].startswith("tool-")
    }
    assert tools["b1"]["state"] == "output-available" and tools["b1"]["output"] == "Paid 5."
    assert tools["pay1"]["output"] == "paid 5"
    assert tools["pay1"]["approval"]["id"] == "pay1"
    kinds = [c["type"] for c in result["chunks"]]
    assert kinds[-1] == "finish"


@pytest.mark.integration
def test_the_chat_page_shows_a_childs_run_inside_its_tool_row() -> None:
    from browser_page import Page, chromium
    from serve_helpers import Gate

    child_gate, root_gate = Gate(), Gate()
    child_reply = text_reply("Rx is streams.")
    root_reply = text_reply("Use Rx.")
    try:
        with (
            chromium() as browser,
            MockOpenAIServer(
                [
                    tool_call_reply(("search", {"topic": "rx"})),
                    child_gate.reply(child_reply[:3], child_reply[3:]),
                ]
            ) as child_mock,
            MockOpenAIServer(
                [
                    tool_call_reply(("researcher", {"question": "What is Rx?"})),
                    root_gate.reply(root_reply[:1], root_reply[1:]),
                ]
            ) as root_mock,
        ):
            child_model = OpenAIChatModel("mock", base_url=child_mock.base_url)
            root_model = OpenAIChatModel("mock", base_url=root_mock.base_url)
            researcher = ReactAgent(child_model, [search], name="researcher")
            root = ReactAgent(root_model, [researcher.as_tool()], memory=InMemoryChatMemory())
            with serving(create_app(root)) as url:
                page = Page(browser, url)
                page.ask("Tell me about Rx")
                running = page.until(lambda a: a["tools"] and a["tools"][0]["result"])
                assert running["tools"][0]["state"] == "output-streaming"
                assert running["tools"][0]["name"] == "researcher"
                assert running["tools"][0]["result"] == "researcher [search ✓]: Rx is "
                child_gate.open()
                answered = page.until(lambda a: a["tools"][0]["state"] == "output-available")
                assert answered["tools"][0]["result"] == "Rx is streams."
                assert answered["text"] == ""  # the child's text is in its row, not the answer
                root_gate.open()
                done = page.until(lambda a: a["state"] == "done")
                assert done["text"] == "Use Rx."
            child_model.close()
            root_model.close()
    finally:
        Gate.open_all()
