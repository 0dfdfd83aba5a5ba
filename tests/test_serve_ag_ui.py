"""``POST /ag-ui`` over real sockets: read by the official client (@ag-ui/client's HttpAgent,
tests/ui_client/ag_ui_agent.mjs) for a plain answer, a tool round, an error, a client-side
tool and approvals; and with httpx for a resumed stream, two users, and bodies of the wrong
shape.

The client verifies every stream as it reads it (RUN_STARTED first, messages and steps
closed before RUN_FINISHED...): a test that gets its messages got a valid stream. What it
assembled is compared with what rxreact's run produced, replayed from the server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from reactivex import operators as ops
from serve_helpers import (
    Gate,
    SSEEvent,
    get_weather,
    parse_sse,
    require_executable,
    serving,
    unavailable,
)

from rxreact import InMemoryChatMemory, OpenAIChatModel, ReactAgent, tool
from rxreact.events import FinalAnswer, ToolCallStarted, ToolResult
from rxreact.model.scripted.replies import HTTPErrorReply, Script, text_reply, tool_call_reply
from rxreact.serve.auth import TokenAuthenticator
from rxreact.testing import MockOpenAIServer

pytest.importorskip("ag_ui")

CLIENT_DIR = Path(__file__).parent / "ui_client"
ALICE, BOB = "alice-token-0123456789", "bob-token-9876543210xx"
CONFIRM = {
    "name": "confirm",
    "description": "Ask the user to confirm something.",
    "parameters": {"type": "object", "properties": {"what": {"type": "string"}}},
}


@tool(requires_approval=True)
def deploy(target: str) -> str:
    """Deploy the service."""
    return f"deployed to {target}"


@pytest.fixture(scope="module")
def node() -> str:
    path = require_executable("node")
    if not (CLIENT_DIR / "node_modules" / "@ag-ui" / "client").is_dir():
        unavailable("tests/ui_client has no node_modules/@ag-ui/client (run `npm ci` there)")
    return path


class Server:
    def __init__(self, url: str, mock: MockOpenAIServer, app: Any) -> None:
        self.url, self.mock, self.app = url, mock, app

    def events(self, run_id: str) -> list[Any]:
        """The run's agent events, replayed from the server's event log."""
        events: list[Any] = self.app.state.runs.events(run_id).pipe(ops.to_list()).run()
        return events


@pytest.fixture
def server() -> Iterator[Any]:
    """``start(script, **app_options) -> Server``: get_weather and deploy, in-memory memory."""
    with ExitStack() as stack:

        def start(script: Script, **app_options: Any) -> Server:
            from rxreact.serve import create_app

            mock = MockOpenAIServer(script).start()
            stack.callback(mock.stop)
            model = OpenAIChatModel("mock", base_url=mock.base_url, api_key="sk-test")
            stack.callback(model.close)
            agent = ReactAgent(model, [get_weather, deploy], memory=InMemoryChatMemory())
            app = create_app(agent, **app_options)
            url = stack.enter_context(serving(app))
            return Server(url, mock, app)

        stack.callback(Gate.open_all)
        yield start


def run_client(node: str, url: str, thread: str, question: str, **options: Any) -> list[Any]:
    """What the client printed: one record per AG-UI run, then ``{"messages": ...}``."""
    done = subprocess.run(
        [node, str(CLIENT_DIR / "ag_ui_agent.mjs"), f"{url}/ag-ui", thread, question,
         json.dumps(options)],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def run_body(thread: str, run: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": run, "messages": messages, "tools": [], **extra}


def question(text: str) -> dict[str, Any]:
    return {"id": "u1", "role": "user", "content": text}


def sse(response: httpx.Response) -> list[SSEEvent]:
    return [e for e in parse_sse(response.iter_lines()) if isinstance(e, SSEEvent)]


def test_plain_answer(node: str, server: Any) -> None:
    served = server([text_reply("Hello from rxreact, read by HttpAgent.")])
    (record, state) = run_client(node, served.url, "thread-1", "Hi")
    (user, answer) = state["messages"]
    final = served.events(run_of(state))[-1]

    assert record["error"] is None and record["outcome"]["outcome"] == "success"
    assert user == {"id": "user-1", "role": "user", "content": "Hi"}
    assert answer["role"] == "assistant"
    assert isinstance(final, FinalAnswer) and answer["content"] == final.text
    kinds = [e["type"] for e in record["events"]]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    assert kinds.count("STEP_STARTED") == 1


def test_tool_round(node: str, server: Any) -> None:
    served = server(
        [
            tool_call_reply(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})),
            text_reply("Paris and Oslo are sunny.", reasoning="Both answered."),
        ]
    )
    (record, state) = run_client(node, served.url, "thread-2", "Paris and Oslo?")
    messages = state["messages"]
    events = served.events(run_of(state))
    calls = [e for e in events if isinstance(e, ToolCallStarted)]
    results = {e.call_id: e.content for e in events if isinstance(e, ToolResult)}
    final = next(e for e in events if isinstance(e, FinalAnswer))

    assert record["error"] is None
    (asked,) = [m for m in messages if m.get("toolCalls")]
    cities = ("Paris", "Oslo")
    assert [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in asked["toolCalls"]] == [
        (c.call_id, c.name, {"city": city}) for c, city in zip(calls, cities, strict=True)
    ]  # fmt: skip
    tool_messages = {m["toolCallId"]: m["content"] for m in messages if m["role"] == "tool"}
    assert tool_messages == results
    (reasoning,) = [m for m in messages if m["role"] == "reasoning"]
    assert reasoning["content"] == "Both answered."
    assert messages[-1] == {"id": messages[-1]["id"], "role": "assistant", "content": final.text}
    kinds = [e["type"] for e in record["events"]]
    assert kinds.count("STEP_STARTED") == kinds.count("STEP_FINISHED") == 2


def run_of(state: dict[str, Any]) -> str:
    """The rxreact run behind the client's messages: their ids are ``<run id>-<round>...``
    (the anonymous user's public run id is the run id)."""
    assistant = next(m for m in state["messages"] if m["role"] == "assistant")
    run_id: str = assistant["id"].split("-")[0]
    return run_id


def test_error(node: str, server: Any) -> None:
    served = server([HTTPErrorReply(400, "context too long")])
    (record, state) = run_client(node, served.url, "thread-3", "Hi")

    assert record["error"].startswith("BadRequestError")
    assert record["events"][-1]["type"] == "RUN_ERROR"
    assert record["events"][-1]["code"] == "BadRequestError"
    assert state["messages"] == [{"id": "user-1", "role": "user", "content": "Hi"}]


def test_client_side_tool(node: str, server: Any) -> None:
    served = server([tool_call_reply(("confirm", {"what": "the order"})), text_reply("Confirmed.")])
    first, second, state = run_client(
        node, served.url, "thread-4", "Place the order", tools=[CONFIRM], toolResult="yes, go"
    )
    events = served.events(run_of(state))
    (call,) = [e for e in events if isinstance(e, ToolCallStarted)]

    assert first["error"] is None and first["outcome"]["pendingToolCallIds"] == [call.call_id]
    assert [e["type"] for e in first["events"]][-2:] == ["STEP_FINISHED", "RUN_FINISHED"]
    assert second["error"] is None and second["outcome"]["pendingToolCallIds"] == []
    # the model was offered the front end's tool and read the front end's result
    offered = {t["function"]["name"] for t in served.mock.requests[0]["tools"]}
    assert offered == {"get_weather", "deploy", "confirm"}
    tool_turn = served.mock.requests[1]["messages"][-1]
    assert tool_turn["role"] == "tool" and tool_turn["tool_call_id"] == call.call_id
    assert tool_turn["content"] == "yes, go"
    assert [m["role"] for m in state["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert state["messages"][-1]["content"] == "Confirmed."
    # the client's own result is not sent back to it
    assert not any(e["type"] == "TOOL_CALL_RESULT" for e in second["events"])


@pytest.mark.parametrize("approve", [True, False])
def test_approval_is_an_interrupt_answered_by_resume(node: str, server: Any, approve: bool) -> None:
    served = server([tool_call_reply(("deploy", {"target": "prod"})), text_reply("Done.")])
    first, second, state = run_client(node, served.url, "thread-5", "Deploy", approve=approve)
    (interrupt,) = first["outcome"]["interrupts"]
    events = served.events(run_of(state))
    (result,) = [e for e in events if isinstance(e, ToolResult)]

    assert first["outcome"]["outcome"] == "interrupt"
    assert interrupt["reason"] == "tool_approval"
    assert interrupt["metadata"] == {"toolName": "deploy", "arguments": {"target": "prod"}}
    assert second["error"] is None and second["outcome"]["outcome"] == "success"
    assert result.call_id == interrupt["toolCallId"]
    if approve:
        assert result.content == "deployed to prod"
    else:
        assert "denied" in result.content
    (tool_message,) = [m for m in state["messages"] if m["role"] == "tool"]
    assert tool_message["content"] == result.content
    assert state["messages"][-1]["content"] == "Done."


def test_a_round_with_an_approval_and_a_client_side_tool(node: str, server: Any) -> None:
    served = server(
        [
            tool_call_reply(("deploy", {"target": "prod"}), ("confirm", {"what": "deploy"})),
            text_reply("Deployed, as you confirmed."),
        ]
    )
    asked, pending, answered, state = run_client(
        node, served.url, "thread-7", "Deploy", tools=[CONFIRM], approve=True, toolResult="ok"
    )
    events = served.events(run_of(state))
    deploy_call, confirm_call = [e.call_id for e in events if isinstance(e, ToolCallStarted)]

    # the approval first; its answer leaves the front end's call pending; then the answer
    assert [i["id"] for i in asked["outcome"]["interrupts"]] == [deploy_call]
    assert pending["outcome"] == {
        "outcome": "success", "pendingToolCallIds": [confirm_call], "interrupts": [],
    }  # fmt: skip
    assert answered["error"] is None and answered["outcome"]["pendingToolCallIds"] == []
    results = {m["tool_call_id"]: m["content"] for m in served.mock.requests[1]["messages"]
               if m["role"] == "tool"}  # fmt: skip
    assert results == {deploy_call: "deployed to prod", confirm_call: "ok"}
    assert state["messages"][-1]["content"] == "Deployed, as you confirmed."


def test_an_agent_tools_approval_is_an_interrupt(node: str) -> None:
    from rxreact.serve import create_app

    with (
        MockOpenAIServer(
            [tool_call_reply(("deploy", {"target": "prod"}), ids=["d1"]), text_reply("Shipped.")]
        ) as child_mock,
        MockOpenAIServer(
            [tool_call_reply(("ops", {"question": "ship"}), ids=["o1"]), text_reply("Done.")]
        ) as root_mock,
    ):
        child_model = OpenAIChatModel("mock", base_url=child_mock.base_url, api_key="k")
        root_model = OpenAIChatModel("mock", base_url=root_mock.base_url, api_key="k")
        ops_agent = ReactAgent(child_model, [deploy], name="ops", description="Runs deploys.")
        root = ReactAgent(root_model, [ops_agent.as_tool()], memory=InMemoryChatMemory())
        try:
            with serving(create_app(root)) as url:
                asked, answered, state = run_client(node, url, "nested", "Ship", approve=True)
        finally:
            child_model.close()
            root_model.close()

    (interrupt,) = asked["outcome"]["interrupts"]
    assert interrupt["id"] == "d1" and interrupt["metadata"]["toolName"] == "deploy"
    assert answered["error"] is None and answered["outcome"]["outcome"] == "success"
    messages = state["messages"]
    tool_messages = {m["toolCallId"]: m["content"] for m in messages if m["role"] == "tool"}
    assert tool_messages == {"o1": "Shipped."}  # the agent tool's answer; its own calls inside
    assert state["messages"][-1]["content"] == "Done."
    assert child_mock.requests[1]["messages"][-1]["content"] == "deployed to prod"


def test_a_dropped_stream_resumes_after_its_last_event_id(server: Any) -> None:
    gate = Gate()
    slow = text_reply("one two three four", pieces=4)
    served = server([gate.reply(slow[:3], slow[3:])])
    body = run_body("thread-6", "r1", [question("Count")])
    with httpx.stream("POST", f"{served.url}/ag-ui", json=body) as response:
        seen: list[SSEEvent] = []
        for event in parse_sse(response.iter_lines()):
            if isinstance(event, SSEEvent):
                seen.append(event)
                if json.loads(event.data)["type"] == "TEXT_MESSAGE_CONTENT":
                    break  # the connection drops mid-answer
    last = max(int(e.id) for e in seen if e.id)
    resumed_body = run_body("thread-6", "r1", [question("Count")])
    with httpx.stream(
        "POST", f"{served.url}/ag-ui", json=resumed_body, headers={"last-event-id": str(last)}
    ) as response:
        assert response.status_code == 200
        gate.open()
        rest = sse(response)
    parts = [json.loads(e.data) for e in rest]

    assert [p["type"] for p in parts[:3]] == ["RUN_STARTED", "STEP_STARTED", "TEXT_MESSAGE_START"]
    assert all(int(e.id) > last for e in rest if e.id)
    text = [json.loads(e.data) for e in seen] + parts[3:]
    deltas = "".join(p["delta"] for p in text if p["type"] == "TEXT_MESSAGE_CONTENT")
    assert deltas == "one two three four"
    assert parts[-1]["type"] == "RUN_FINISHED"


def test_users_cannot_continue_or_resume_each_others_threads(server: Any) -> None:
    served = server(
        [tool_call_reply(("confirm", {"what": "x"})), text_reply("Alice's answer.")],
        authenticate=TokenAuthenticator({ALICE: "alice", BOB: "bob"}),
    )
    alice = {"authorization": f"Bearer {ALICE}"}
    bob = {"authorization": f"Bearer {BOB}"}
    start = run_body("shared-id", "r1", [question("Confirm?")], tools=[CONFIRM])
    assert httpx.post(f"{served.url}/ag-ui", json=start).status_code == 401
    with httpx.stream("POST", f"{served.url}/ag-ui", json=start, headers=alice) as response:
        finished = json.loads(sse(response)[-1].data)
    (call_id,) = finished["outcome"]["pendingToolCallIds"]
    answer = {"id": "t1", "role": "tool", "toolCallId": call_id, "content": "yes"}
    continuation = run_body("shared-id", "r2", [question("Confirm?"), answer], tools=[CONFIRM])

    by_bob = httpx.post(f"{served.url}/ag-ui", json=continuation, headers=bob)
    assert by_bob.status_code == 409 and by_bob.json()["error"] == "not_waiting"
    resumed = httpx.post(f"{served.url}/ag-ui", json=start, headers={**bob, "last-event-id": "1"})
    assert resumed.status_code == 404
    with httpx.stream("POST", f"{served.url}/ag-ui", json=continuation, headers=alice) as r:
        parts = [json.loads(e.data) for e in sse(r)]
    assert "".join(p.get("delta", "") for p in parts) == "Alice's answer."


@pytest.mark.parametrize(
    ("body", "headers", "status", "error"),
    [
        (b"{not json", {}, 400, "malformed_json"),
        (b'{"runId": "r", "messages": []}', {}, 422, "invalid_body"),
        (json.dumps(run_body("t", "r", [])).encode(), {}, 422, "invalid_body"),
        (
            json.dumps(run_body("t", "r", [{"id": "a", "role": "assistant", "content": "x"}])),
            {}, 422, "invalid_body",
        ),
        (
            json.dumps(run_body("t", "r", [{"id": "t", "role": "tool", "toolCallId": "c",
                                            "content": "x"}])),
            {}, 409, "not_waiting",
        ),
        (json.dumps(run_body("t", "r", [question("hi")])), {"last-event-id": "-1"}, 400,
         "invalid_last_event_id"),
        (json.dumps(run_body("t", "r", [question("hi")])), {"last-event-id": "3"}, 404,
         "no_active_run"),
        (
            json.dumps(run_body("t", "r", [question("hi")], tools=[{**CONFIRM, "name": "a b"}])),
            {}, 422, "invalid_body",
        ),
    ],
)  # fmt: skip
def test_requests_of_the_wrong_shape_are_refused(
    server: Any, body: bytes, headers: dict[str, str], status: int, error: str
) -> None:
    served = server([])
    response = httpx.post(
        f"{served.url}/ag-ui",
        content=body,
        headers={"content-type": "application/json", **headers},
    )
    assert (response.status_code, response.json()["error"]) == (status, error)


def test_protocols_choose_whether_ag_ui_is_mounted(server: Any) -> None:
    without = server([], protocols=("ui",))
    body = run_body("t", "r", [question("hi")])
    assert httpx.post(f"{without.url}/ag-ui", json=body).status_code == 404
    alone = server([text_reply("Only AG-UI.")], protocols=("ag-ui",))
    assert httpx.post(f"{alone.url}/api/chat", json={}).status_code == 404
    with httpx.stream("POST", f"{alone.url}/ag-ui", json=body) as response:
        assert json.loads(sse(response)[-1].data)["type"] == "RUN_FINISHED"


def test_without_the_extra_ag_ui_is_left_out_unless_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    from starlette.routing import Route

    from rxreact.errors import ConfigurationError
    from rxreact.serve import create_app

    agent = ReactAgent(OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", api_key="k"), [])
    find_spec = importlib.util.find_spec

    def hidden(name: str, *args: Any) -> Any:
        return None if name == "ag_ui" else find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", hidden)
    monkeypatch.setitem(sys.modules, "ag_ui", None)  # "import ag_ui" fails as if not installed
    paths = {r.path for r in create_app(agent).routes if isinstance(r, Route)}
    assert "/v1/chat/completions" in paths and "/ag-ui" not in paths
    with pytest.raises(ConfigurationError, match=r"rxreact\[ag-ui\]"):
        create_app(agent, protocols=("ui", "ag-ui"))
    agent.model.close()
