"""The stream read by the real client: the ``ai`` npm package's own transport and
``readUIMessageStream`` (tests/ui_client/read_stream.mjs) against the running server.

Each test compares what the client assembled with what rxreact's run produced (its events,
replayed from the server's hot run), not with strings written here.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reactivex import operators as ops
from serve_helpers import Gate, chat_servers, require_executable, unavailable

from rxreact.events import FinalAnswer, ToolCallStarted, ToolResult
from rxreact.model.scripted.replies import HTTPErrorReply, text_reply, tool_call_reply

CLIENT_DIR = Path(__file__).parent / "ui_client"


@pytest.fixture(scope="module")
def node() -> str:
    path = require_executable("node")
    if not (CLIENT_DIR / "node_modules" / "ai").is_dir():
        unavailable("tests/ui_client has no node_modules (run `npm ci` there)")
    return path


@pytest.fixture
def server() -> Iterator[Any]:
    with chat_servers() as start:
        yield start


def read(node: str, url: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [node, str(CLIENT_DIR / "read_stream.mjs"), f"{url}/api/chat", *args],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def run_events(app: Any, run_id: str) -> list[Any]:
    events: list[Any] = app.state.runs.events(run_id).pipe(ops.to_list()).run()
    return events


def tool_parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in message["parts"] if p["type"].startswith("tool-")]


def text_parts(message: dict[str, Any]) -> list[str]:
    return [p["text"] for p in message["parts"] if p["type"] == "text"]


def test_plain_answer(node: str, server: Any) -> None:
    url, _, app = server([text_reply("Hello from rxreact, read by the ai package.")])
    result = read(node, url, "send", "chat-1", "Hi")
    message = result["message"]
    events = run_events(app, message["id"])

    assert result["errors"] == []
    assert message["role"] == "assistant"
    assert text_parts(message) == [events[-1].text]
    assert all(p["state"] == "done" for p in message["parts"] if p["type"] == "text")


def test_tool_round(node: str, server: Any) -> None:
    url, _, app = server(
        [
            tool_call_reply(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})),
            text_reply("Paris and Oslo are sunny.", reasoning="Both answered."),
        ]
    )
    result = read(node, url, "send", "chat-2", "Paris and Oslo?")
    message = result["message"]
    events = run_events(app, message["id"])
    calls = [e for e in events if isinstance(e, ToolCallStarted)]
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}

    assert result["errors"] == []

    def streamed_args(call: ToolCallStarted) -> Any:
        pieces = [
            e.delta for e in events if e.type == "tool_call_args_delta" and e.index == call.index
        ]
        return json.loads("".join(pieces))

    assert [
        (p["type"], p["toolCallId"], p["state"], p["input"], p["output"])
        for p in tool_parts(message)
    ] == [
        (
            f"tool-{c.name}",
            c.call_id,
            "output-available",
            streamed_args(c),
            results[c.call_id].content,
        )
        for c in calls
    ]
    final = next(e for e in events if isinstance(e, FinalAnswer))
    assert text_parts(message) == [final.text]
    assert [p["type"] for p in message["parts"]].count("step-start") == 2
    (reasoning,) = [p for p in message["parts"] if p["type"] == "reasoning"]
    assert reasoning["text"] == "".join(e.delta for e in events if e.type == "reasoning_delta")


def test_error(node: str, server: Any) -> None:
    url, _, _ = server([HTTPErrorReply(400, "context too long")])
    result = read(node, url, "send", "chat-3", "Hi")
    assert len(result["errors"]) == 1 and result["errors"][0].startswith("BadRequestError")
    assert result["chunks"][-1] == {"type": "finish", "finishReason": "error"}


def test_resume_after_the_reader_left(node: str, server: Any) -> None:
    gate = Gate()
    reply = text_reply("A resumed answer arrives whole.")
    url, _, app = server([gate.reply(reply[:3], reply[3:])])
    left = read(node, url, "send", "chat-4", "Go", "5")  # start, start-step, text-start, 2 deltas
    assert [c["type"] for c in left["chunks"]][-1] == "text-delta"

    resumer = subprocess.Popen(
        [node, str(CLIENT_DIR / "read_stream.mjs"), f"{url}/api/chat", "resume", "chat-4"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    # The reader says when the server answered the resume: only then may the run go on, so
    # the resume certainly finds it active.
    assert resumer.stderr is not None
    assert resumer.stderr.readline().strip() == "attached"
    gate.open()
    out, err = resumer.communicate(timeout=30)
    assert resumer.returncode == 0, err
    result = json.loads(out)
    events = run_events(app, left["message"]["id"])
    assert result["errors"] == []
    assert result["message"]["id"] == left["message"]["id"]
    assert text_parts(result["message"]) == [events[-1].text]
    assert text_parts(left["message"])[0] == events[-1].text[: len(text_parts(left["message"])[0])]


def test_resume_of_a_brand_new_chat_is_no_error(node: str, server: Any) -> None:
    # useChat({resume: true}) reconnects as it mounts, before the chat ever sent anything
    url, _, _ = server([])
    assert read(node, url, "resume", "never-seen") == {"resumed": False}
