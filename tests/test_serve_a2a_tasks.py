"""A2A tasks as the official ``a2a-sdk`` client reads them: ``historyLength`` honoured by
SendMessage and GetTask, GetTask's history keeping the user's message, and a message to a
context whose task is still running answered busy (409), creating nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from serve_helpers import Gate, get_weather, serving

from rxreact import InMemoryChatMemory, OpenAIChatModel, ReactAgent
from rxreact.messages import ToolMessage, content_text
from rxreact.model.scripted.replies import Reply, text_reply, tool_call_reply
from rxreact.serve import create_app
from rxreact.testing import MockOpenAIServer

pytest.importorskip("a2a")

from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)

GATES: list[Gate] = []  # the test's own (another module's teardown opens every gate made)


def reply(request: Any) -> Reply:
    """The model: a weather round then its answer; ``wait`` answers once the gate opens."""
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        return text_reply("Sunny in Paris.")
    if content_text(last.content) == "wait":
        answer = text_reply("Waited.")
        return GATES[-1].reply(answer[:2], answer[2:])
    return tool_call_reply(("get_weather", {"city": "Paris"}))


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, MockOpenAIServer]]:
    mock = MockOpenAIServer(reply).start()
    model = OpenAIChatModel("mock", base_url=mock.base_url, api_key="sk-test")
    agent = ReactAgent(model, [get_weather], memory=InMemoryChatMemory(), on_busy="reject")
    try:
        with serving(create_app(agent, protocols=["a2a"])) as url:
            yield url, mock
    finally:
        Gate.open_all()
        mock.stop()
        model.close()


def ask(text: str, context_id: str, history_length: int | None = None) -> SendMessageRequest:
    message = Message(role=Role.ROLE_USER, message_id="m-1", parts=[Part(text=text)])
    message.context_id = context_id
    configuration = SendMessageConfiguration()
    if history_length is not None:
        configuration.history_length = history_length
    return SendMessageRequest(message=message, configuration=configuration)


def said(task: Task) -> list[str]:
    return [p.text for m in task.history for p in m.parts if p.HasField("text")]


def test_history_length_and_the_users_message_in_get_task(
    server: tuple[str, MockOpenAIServer],
) -> None:
    url, _ = server

    async def main() -> tuple[list[Task], list[Task]]:
        async with httpx.AsyncClient(timeout=30) as http:
            config = ClientConfig(streaming=False, httpx_client=http)
            async with await create_client(url, config) as client:
                sent = [
                    (await anext(client.send_message(ask("Paris?", f"h{n}", n)))).task
                    for n in (None, 1, 0)
                ]
                task_id = sent[0].id
                got = [
                    await client.get_task(GetTaskRequest(id=task_id)),
                    await client.get_task(GetTaskRequest(id=task_id, history_length=2)),
                    await client.get_task(GetTaskRequest(id=task_id, history_length=0)),
                ]
        return sent, got

    sent, got = asyncio.run(main())
    full = ["Paris?", '→ get_weather({"city": "Paris"})\n', "← get_weather: Paris: sunny, 21°C\n"]
    assert all(t.status.state == TaskState.TASK_STATE_COMPLETED for t in sent)
    assert said(sent[0]) == full
    assert said(sent[1]) == full[-1:] and said(sent[2]) == []
    assert said(got[0]) == full  # the question is kept with the task
    assert said(got[1]) == full[-2:] and said(got[2]) == []


def test_a_message_to_a_busy_context_is_refused_and_creates_nothing(
    server: tuple[str, MockOpenAIServer],
) -> None:
    url, mock = server
    gate = Gate()
    GATES.append(gate)
    message = {
        "role": "ROLE_USER",
        "messageId": "m",
        "contextId": "busy",
        "parts": [{"text": "wait"}],
    }
    stream = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
              "params": {"message": message}}  # fmt: skip
    send = {**stream, "method": "SendMessage"}
    headers = {"a2a-version": "1.0"}
    with httpx.stream("POST", f"{url}/a2a", json=stream, headers=headers, timeout=30) as first:
        events = (line for line in first.iter_lines() if line.startswith("data:"))
        assert "artifactUpdate" in next(e for e in events if "artifactUpdate" in e)  # going
        requests = len(mock.requests)
        busy = httpx.post(f"{url}/a2a", json=send, headers=headers, timeout=30)
        assert busy.status_code == 409 and busy.json()["error"] == "conversation_busy"
        gate.open()
        assert "TASK_STATE_COMPLETED" in list(events)[-1]
    assert len(mock.requests) == requests  # the refused message never reached the model
