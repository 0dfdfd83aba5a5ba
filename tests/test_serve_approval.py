"""Approval over HTTP: the UI message stream's tool-approval-request and preliminary outputs,
and POST /api/chat/{id}/approve, against create_app on a real socket."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from serve_helpers import parse_sse, serving

from rxreact import InMemoryChatMemory, OpenAIChatModel, ReactAgent, tool
from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.serve import create_app
from rxreact.testing import MockOpenAIServer

pytestmark = pytest.mark.integration


@tool(requires_approval=True)
def delete_file(path: str, progress: Callable[[Any], None]) -> str:
    """Deletes a file."""
    progress("found it")
    return f"deleted {path}"


@pytest.fixture
def url() -> Iterator[str]:
    script = [tool_call_reply(("delete_file", {"path": "/tmp/a"})), text_reply("Deleted.")] * 2
    with MockOpenAIServer(script) as mock:
        model = OpenAIChatModel("mock", base_url=mock.base_url)
        agent = ReactAgent(model, [delete_file], memory=InMemoryChatMemory())
        with serving(create_app(agent)) as base:
            yield base
        model.close()


def body(conversation: str) -> dict[str, Any]:
    return {
        "id": conversation,
        "messages": [{"id": "m", "role": "user", "parts": [{"type": "text", "text": "rm"}]}],
    }


def parts_until(items: Iterator[Any], kind: str) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, str) or item.data == "[DONE]":
            continue
        seen.append(item.part)
        if item.part["type"] == kind:
            return seen
    raise AssertionError(f"the stream ended before {kind}: {seen}")


@pytest.mark.parametrize("approved", [True, False])
def test_a_person_answers_the_approval_request_over_http(url: str, approved: bool) -> None:
    conversation = f"c-{approved}"
    with httpx.stream("POST", f"{url}/api/chat", json=body(conversation), timeout=30) as stream:
        items = parse_sse(stream.iter_lines())
        request = parts_until(items, "tool-approval-request")[-1]
        assert request == {
            "type": "tool-approval-request",
            "approvalId": request["toolCallId"],
            "toolCallId": request["toolCallId"],
        }
        answer = {"approvalId": request["approvalId"], "approved": approved, "reason": "no"}
        decided = httpx.post(f"{url}/api/chat/{conversation}/approve", json=answer)
        assert decided.status_code == 202
        rest = parts_until(items, "finish")
    outputs = [p for p in rest if p["type"] == "tool-output-available"]
    if approved:
        assert outputs == [
            {"type": "tool-output-available", "toolCallId": request["toolCallId"],
             "output": "found it", "preliminary": True},
            {"type": "tool-output-available", "toolCallId": request["toolCallId"],
             "output": "deleted /tmp/a"},
        ]  # fmt: skip
    else:
        (output,) = outputs
        assert "denied" in output["output"]
        assert "no" in output["output"]


def test_an_unknown_approval_is_404(url: str) -> None:
    answer = {"approvalId": "call_x", "approved": True}
    response = httpx.post(f"{url}/api/chat/nobody/approve", json=answer)
    assert response.status_code == 404
    assert response.json()["error"] == "unknown_approval"
    bad = httpx.post(f"{url}/api/chat/nobody/approve", json={"approved": True})
    assert bad.status_code == 422


def test_the_ai_sdk_client_reads_approval_and_progress_parts() -> None:
    """The ``ai`` npm package's own transport and ``readUIMessageStream`` (chunk schemas
    validated) read a run whose tool asked for approval (answered by the agent's approver)
    and reported progress."""
    from serve_helpers import require_executable, unavailable
    from test_serve_ai_client import CLIENT_DIR, read

    node = require_executable("node")
    if not (CLIENT_DIR / "node_modules" / "ai").is_dir():
        unavailable("tests/ui_client has no node_modules (run `npm ci` there)")
    script = [tool_call_reply(("delete_file", {"path": "/tmp/a"})), text_reply("Deleted.")]
    with MockOpenAIServer(script) as mock:
        model = OpenAIChatModel("mock", base_url=mock.base_url)
        agent = ReactAgent(
            model, [delete_file], memory=InMemoryChatMemory(), approver=lambda request: True
        )
        with serving(create_app(agent)) as base:
            result = read(node, base, "send", "c-ai", "rm")
        model.close()

    assert result["errors"] == []
    kinds = [c["type"] for c in result["chunks"]]
    assert "tool-approval-request" in kinds
    assert kinds.index("tool-approval-request") < kinds.index("tool-output-available")
    (tool_part,) = [p for p in result["message"]["parts"] if p["type"].startswith("tool-")]
    assert tool_part["state"] == "output-available"
    assert tool_part["output"] == "deleted /tmp/a"
    assert tool_part["approval"]["id"] == tool_part["toolCallId"]
