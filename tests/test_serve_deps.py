"""``create_app(agent, deps_factory=fn(request, user))``: every protocol's runs get the deps
made for their request and user (the tools read them), over real sockets."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from serve_helpers import serving

from rxreact import InMemoryChatMemory, OpenAIChatModel, ReactAgent, RunContext, tool
from rxreact.messages import ChatRequest
from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.serve.auth import TokenAuthenticator
from rxreact.testing import MockOpenAIServer

pytestmark = pytest.mark.integration

TOKEN = "alice-token-0123456789"
AUTH = {"authorization": f"Bearer {TOKEN}", "x-tenant": "acme"}


@dataclass
class Tenant:
    user: str
    tenant: str


@tool
def whoami(ctx: RunContext[Tenant]) -> str:
    """Says who asks."""
    return f"{ctx.deps.user}@{ctx.deps.tenant}"


def script(request: ChatRequest) -> Any:
    last = request.messages[-1]
    if last.role == "tool":
        return text_reply(f"You are {last.content}.")
    return tool_call_reply(("whoami", {}))


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    from rxreact.serve import create_app

    async def deps_factory(request: Any, user: str) -> Tenant:  # async: awaited on the loop
        return Tenant(user, request.headers["x-tenant"])

    mock = MockOpenAIServer(script).start()
    model = OpenAIChatModel("mock", base_url=mock.base_url, api_key="sk-test", max_retries=0)
    agent = ReactAgent[Tenant](model, [whoami], memory=InMemoryChatMemory(), deps_type=Tenant)
    app = create_app(
        agent, authenticate=TokenAuthenticator({TOKEN: "alice"}), deps_factory=deps_factory
    )
    with serving(app) as served:
        yield served
    model.close()
    mock.stop()


ANSWER = "You are alice@acme."


def test_the_chat_stream(url: str) -> None:
    body = {
        "id": "c1",
        "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}],
        "trigger": "submit-message",
    }
    with httpx.stream("POST", f"{url}/api/chat", json=body, headers=AUTH, timeout=30) as r:
        text = "".join(r.iter_text())
    assert "alice@acme" in text and r.status_code == 200


def test_the_openai_compatible_endpoint(url: str) -> None:
    body = {"model": "rxreact", "messages": [{"role": "user", "content": "Who am I?"}]}
    done = httpx.post(f"{url}/v1/chat/completions", json=body, headers=AUTH, timeout=30)
    assert done.json()["choices"][0]["message"]["content"] == ANSWER


def test_ag_ui(url: str) -> None:
    pytest.importorskip("ag_ui")
    body = {
        "threadId": "t1",
        "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": "Who am I?"}],
        "tools": [],
        "state": {},
        "context": [],
        "forwardedProps": {},
    }
    with httpx.stream("POST", f"{url}/ag-ui", json=body, headers=AUTH, timeout=30) as r:
        text = "".join(r.iter_text())
    assert "alice@acme" in text


def test_a2a(url: str) -> None:
    pytest.importorskip("a2a")
    message = {"kind": "message", "role": "user", "messageId": "m", "parts": []}
    message["parts"] = [{"kind": "text", "text": "Who am I?"}]
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
    task = httpx.post(f"{url}/a2a", json=body, headers=AUTH, timeout=30).json()["result"]
    assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": ANSWER}]
