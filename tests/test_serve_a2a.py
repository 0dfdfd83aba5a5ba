"""The agent as an A2A server, through the official ``a2a-sdk`` client: the agent card, send,
stream, get, cancel, resubscribe after a dropped stream, and users who cannot reach each
other's tasks (the unauthenticated one not at all)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from serve_helpers import Gate, chat_servers

from rxreact.model.scripted.replies import Hang, text_reply, tool_call_reply
from rxreact.serve.auth import TokenAuthenticator

pytest.importorskip("a2a")

from a2a.client import A2AClientError, ClientCallContext, ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError

from rxreact.serve.a2a import apply_update

ALICE, BOB = "alice-token-0123456789", "bob-token-0123456789"
USERS = TokenAuthenticator({ALICE: "alice", BOB: "bob"})
ANSWER = "Sunny in Paris."


@pytest.fixture
def make_server() -> Iterator[Any]:
    with chat_servers() as start:
        yield start


def weather_script() -> list[Any]:
    return [tool_call_reply(("get_weather", {"city": "Paris"})), text_reply(ANSWER, pieces=3)]


@asynccontextmanager
async def connected(
    url: str, token: str | None = ALICE, *, streaming: bool = True
) -> AsyncIterator[Any]:
    """An official A2A client of the agent at ``url``, with ``token`` (``None``: none)."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        config = ClientConfig(streaming=streaming, httpx_client=http)
        async with await create_client(url, config) as client:
            yield client


def ask(text: str, context_id: str = "") -> SendMessageRequest:
    message = Message(role=Role.ROLE_USER, message_id="m-1", parts=[Part(text=text)])
    message.context_id = context_id
    return SendMessageRequest(message=message)


def fold(responses: list[StreamResponse], task: Task | None = None) -> Task:
    """The task a client ends with: the first task, every update applied."""
    task = task or Task()
    for response in responses:
        kind = response.WhichOneof("payload")
        assert kind in ("task", "status_update", "artifact_update")
        apply_update(task, getattr(response, kind))
    return task


def answer_of(task: Task) -> str:
    (artifact,) = task.artifacts
    return "".join(p.text for p in artifact.parts)


def seq_of(response: StreamResponse) -> int:
    update = getattr(response, response.WhichOneof("payload"))
    return int(update.metadata.fields["seq"].number_value)


async def collect(stream: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    return [response async for response in stream]


def test_the_card_is_public_and_names_skills_streaming_and_bearer(make_server: Any) -> None:
    url, _, _ = make_server([], authenticate=USERS)
    response = httpx.get(f"{url}/.well-known/agent-card.json")  # no token: discovery first
    assert response.status_code == 200
    card = response.json()
    assert card["capabilities"]["streaming"] is True
    assert card["supportedInterfaces"] == [
        {"url": f"{url}/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ]
    skills = {s["id"]: s for s in card["skills"]}
    assert skills["tool:get_weather"]["description"] == "Current weather for a city."
    assert "get_weather" in skills["answer"]["description"]
    scheme = card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]
    assert scheme["scheme"] == "Bearer" and card["securityRequirements"] == [
        {"schemes": {"bearer": {}}}
    ]
    cached = httpx.get(response.url, headers={"if-none-match": response.headers["etag"]})
    assert cached.status_code == 304
    anonymous = httpx.get(f"{make_server([]).url}/.well-known/agent-card.json").json()
    assert "securitySchemes" not in anonymous  # loopback without users: nothing to bring


def test_send_waits_for_the_task_and_the_context_is_the_conversation(make_server: Any) -> None:
    script = [*weather_script(), text_reply("Still sunny.")]
    url, mock, app = make_server(script, authenticate=USERS)

    async def main() -> tuple[Task, Task, Task]:
        async with connected(url, streaming=False) as client:
            (first,) = await collect(client.send_message(ask("Paris?", "trip")))
            (again,) = await collect(client.send_message(ask("And now?", "trip")))
            got = await client.get_task(GetTaskRequest(id=first.task.id))
        return first.task, again.task, got

    task, again, got = asyncio.run(main())
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert task.context_id == "trip" and answer_of(task) == ANSWER
    said = [p.text for m in task.history for p in m.parts if p.HasField("text")]
    assert said[0] == "Paris?"  # the user's message, then the tool activity
    assert said[1:] == ['→ get_weather({"city": "Paris"})\n', "← get_weather: Paris: sunny, 21°C\n"]
    # the same contextId is the same conversation: the agent's memory has the first turn
    assert answer_of(again) == "Still sunny." and again.id != task.id
    assert {"role": "assistant", "content": ANSWER} in mock.requests[2]["messages"]
    assert app.state.runs.agent.memory.conversation_ids() == ["alice/trip"]
    # GetTask folds the run's log into the same task
    assert got.status.state == TaskState.TASK_STATE_COMPLETED and answer_of(got) == ANSWER


def test_stream_maps_events_to_task_updates(make_server: Any) -> None:
    url, _, _ = make_server(weather_script(), authenticate=USERS)

    async def main() -> list[StreamResponse]:
        async with connected(url) as client:
            return await collect(client.send_message(ask("Paris?")))

    responses = asyncio.run(main())
    kinds = [r.WhichOneof("payload") for r in responses]
    assert kinds[0] == "task" and responses[0].task.status.state == TaskState.TASK_STATE_WORKING
    assert responses[0].task.context_id  # a new conversation, named by the server
    assert kinds[1:3] == ["status_update", "status_update"]  # the tool call, its result
    assert kinds[-2:] == ["artifact_update", "status_update"]
    assert kinds.count("artifact_update") == 4  # three deltas appended, the answer replaced
    seqs = [seq_of(r) for r in responses[1:]]
    assert seqs == sorted(seqs)
    task = fold(responses)
    assert task.status.state == TaskState.TASK_STATE_COMPLETED and answer_of(task) == ANSWER


def test_cancel_stops_the_run_and_the_stream_ends_canceled(make_server: Any) -> None:
    hanging = [*text_reply("Going on and on")[:2], Hang()]
    url, mock, _ = make_server([hanging], authenticate=USERS)

    async def main() -> tuple[Task, list[StreamResponse]]:
        seen: list[StreamResponse] = []
        cancelled = Task()
        async with connected(url) as client:
            async for response in client.send_message(ask("Go")):
                seen.append(response)
                if response.HasField("artifact_update") and not cancelled.id:
                    task_id = seen[0].task.id
                    cancelled = await client.cancel_task(CancelTaskRequest(id=task_id))
            with pytest.raises(TaskNotCancelableError, match="has ended"):
                await client.cancel_task(CancelTaskRequest(id=cancelled.id))
        return cancelled, seen

    cancelled, seen = asyncio.run(main())
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert seen[-1].status_update.status.state == TaskState.TASK_STATE_CANCELED
    assert mock.wait_for_disconnects(1, timeout=10)  # the model stream was closed


def test_resubscribe_after_a_dropped_stream_resumes_from_last_event_id(
    make_server: Any,
) -> None:
    gate = Gate()
    reply = text_reply("Started, dropped, and resumed.", pieces=4)
    url, _, _ = make_server([gate.reply(reply[:3], reply[3:])], authenticate=USERS)

    async def main() -> tuple[list[StreamResponse], list[StreamResponse], list[StreamResponse]]:
        seen: list[StreamResponse] = []
        rest: list[StreamResponse] = []
        async with connected(url) as client:
            stream = client.send_message(ask("Go"))
            async for response in stream:
                seen.append(response)
                if response.HasField("artifact_update"):
                    break
            await stream.aclose()  # the connection drops; the task goes on
            request = SubscribeToTaskRequest(id=seen[0].task.id)
            after = {"Last-Event-ID": str(seq_of(seen[-1]))}
            resume = ClientCallContext(service_parameters=after)
            async for response in client.subscribe(request, context=resume):
                rest.append(response)
                if len(rest) == 1:
                    gate.open()
            ended = await collect(client.subscribe(request))
        return seen, rest, ended

    seen, rest, ended = asyncio.run(main())
    # the resubscription starts with the task as the client had it, then what came after
    first = rest[0].task
    assert answer_of(first) == answer_of(fold(seen)) and answer_of(first)
    assert all(seq_of(r) > seq_of(seen[-1]) for r in rest[1:])
    task = fold(rest)
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert answer_of(task) == "Started, dropped, and resumed."
    # without Last-Event-ID a resubscription replays the task from its start, ended or not
    assert ended[0].task.status.state == TaskState.TASK_STATE_WORKING
    assert not ended[0].task.artifacts
    replayed = fold(ended)
    assert replayed.status.state == TaskState.TASK_STATE_COMPLETED
    assert answer_of(replayed) == answer_of(task)


def test_unauthenticated_calls_are_refused_and_tasks_are_private(make_server: Any) -> None:
    url, mock, _ = make_server([text_reply("For Alice.")], authenticate=USERS)

    async def main() -> None:
        # The card is public (the client reads it first), the calls are not.
        async with connected(url, token=None) as stranger:
            with pytest.raises(A2AClientError, match="401"):
                await collect(stranger.send_message(ask("Hi")))
            async with connected(url, streaming=False) as alice:
                (sent,) = await collect(alice.send_message(ask("Hi", "mine")))
                task_id = sent.task.id
                assert (await alice.get_task(GetTaskRequest(id=task_id))).id == task_id
            with pytest.raises(A2AClientError, match="401"):
                await stranger.get_task(GetTaskRequest(id=task_id))
        async with connected(url, BOB) as bob:  # another user's task is not found
            with pytest.raises(TaskNotFoundError):
                await bob.get_task(GetTaskRequest(id=task_id))
            with pytest.raises(TaskNotFoundError):
                await bob.cancel_task(CancelTaskRequest(id=task_id))
            with pytest.raises(TaskNotFoundError):
                await collect(bob.subscribe(SubscribeToTaskRequest(id=task_id)))
            forged = task_id.rsplit(".", 1)[0] + ".AAAAAAAAAAAAAAAAAAAA"
            with pytest.raises(TaskNotFoundError):
                await bob.get_task(GetTaskRequest(id=forged))

    asyncio.run(main())
    assert len(mock.requests) == 1


def test_the_0_3_method_names_and_the_run_limit(make_server: Any) -> None:
    gate = Gate()
    reply = text_reply("One at a time.")
    url, _, _ = make_server(
        [gate.reply(reply[:2], reply[2:])], authenticate=USERS, max_runs_per_user=1
    )
    headers = {"authorization": f"Bearer {ALICE}"}
    message = {"kind": "message", "role": "user", "messageId": "m", "parts": []}
    message["parts"] = [{"kind": "text", "text": "Go"}]
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
    body["params"]["configuration"] = {"blocking": False}
    started = httpx.post(f"{url}/a2a", json=body, headers=headers, timeout=30)
    task = started.json()["result"]
    assert task["kind"] == "task" and task["status"]["state"] == "working"
    busy = httpx.post(f"{url}/a2a", json=body, headers=headers, timeout=30)
    assert busy.status_code == 429 and busy.headers["retry-after"]
    assert busy.json()["error"] == "too_many_runs"
    gate.open()
    follow = {"jsonrpc": "2.0", "id": 2, "method": "tasks/resubscribe", "params": {}}
    follow["params"] = {"id": task["id"]}
    with httpx.stream("POST", f"{url}/a2a", json=follow, headers=headers, timeout=30) as stream:
        states = [
            line for line in stream.iter_lines() if line.startswith("data:") and '"final"' in line
        ]
    assert '"completed"' in states[-1]
    get = {"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"id": task["id"]}}
    got = httpx.post(f"{url}/a2a", json=get, headers=headers, timeout=30).json()["result"]
    assert got["status"]["state"] == "completed"
    assert got["artifacts"][0]["parts"] == [{"kind": "text", "text": "One at a time."}]


def test_messages_the_server_cannot_take_are_json_rpc_errors(make_server: Any) -> None:
    url, mock, _ = make_server([], authenticate=USERS, max_message_chars=50)
    headers = {"authorization": f"Bearer {ALICE}", "a2a-version": "1.0"}

    def send(**message: Any) -> dict[str, Any]:
        message = {"role": "ROLE_USER", "messageId": "m", **message}
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
        response = httpx.post(f"{url}/a2a", json=body, headers=headers, timeout=30)
        assert response.status_code == 200
        error: dict[str, Any] = response.json()["error"]
        return error

    text = [{"text": "Hi"}]
    assert "ends with its run" in send(parts=text, taskId="some-task")["message"]
    assert "with text or files" in send(parts=[{"text": "  "}])["message"]
    assert "not 'file:'" in send(parts=[{"url": "file:///etc/passwd"}])["message"]
    assert "over 50 characters" in send(parts=[{"text": "x" * 51}])["message"]
    assert "contextId" in send(parts=text, contextId="bad\nid")["message"]
    assert mock.requests == []  # nothing reached the model


def test_without_the_sdk_a2a_is_left_out_unless_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util
    import sys

    from starlette.routing import Route

    from rxreact import OpenAIChatModel, ReactAgent
    from rxreact.errors import ConfigurationError
    from rxreact.serve import create_app

    agent = ReactAgent(OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", api_key="k"), [])
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "a2a" else find_spec(name, *a)
    )
    monkeypatch.setitem(sys.modules, "a2a", None)  # "import a2a" fails as if not installed
    paths = {r.path for r in create_app(agent).routes if isinstance(r, Route)}
    assert "/v1/chat/completions" in paths and "/a2a" not in paths
    with pytest.raises(ConfigurationError, match=r"rxreact\[a2a\]"):
        create_app(agent, protocols=("ui", "a2a"))
    agent.model.close()
