"""AG-UI through real ``rxreact serve`` processes on one redis-server: the official client
reads an answer, a stream dropped on one worker is resumed through the other by its
``Last-Event-ID``, and a run one worker owns is cancelled through the other.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import httpx
import pytest
from redis_server import running_redis_server
from serve_helpers import Gate, SSEEvent, parse_sse, require_executable, unavailable
from test_serve_ag_ui import CLIENT_DIR
from test_serve_workers import rxreact_serve

from rxreact.model.scripted.replies import Hang, text_reply
from rxreact.testing import MockOpenAIServer

pytest.importorskip("ag_ui")

ANSWER = "Started on one worker and finished on the other."


def run_body(thread: str, question: str) -> dict[str, Any]:
    message = {"id": "u1", "role": "user", "content": question}
    return {"threadId": thread, "runId": "r1", "messages": [message], "tools": []}


def parts_of(events: list[SSEEvent | str]) -> list[dict[str, Any]]:
    return [json.loads(e.data) for e in events if isinstance(e, SSEEvent)]


def deltas(parts: list[dict[str, Any]]) -> str:
    return "".join(p["delta"] for p in parts if p["type"] == "TEXT_MESSAGE_CONTENT")


def test_resume_and_cancel_across_two_workers() -> None:
    node = require_executable("node")
    if not (CLIENT_DIR / "node_modules" / "@ag-ui" / "client").is_dir():
        unavailable("tests/ui_client has no node_modules/@ag-ui/client (run `npm ci` there)")
    gate = Gate()
    reply = text_reply(ANSWER)
    script = [
        text_reply("Read by HttpAgent."),
        gate.reply(reply[:4], reply[4:]),
        [*text_reply("Going on and on")[:2], Hang()],
    ]
    with running_redis_server() as redis, MockOpenAIServer(script) as mock:
        env = {**os.environ, "OPENAI_BASE_URL": mock.base_url, "OPENAI_API_KEY": "sk-test",
               "RXREACT_MODEL": "mock"}  # fmt: skip
        try:
            with (
                rxreact_serve(env, "--redis", redis.url) as first,
                rxreact_serve(env, "--redis", redis.url) as second,
            ):
                done = subprocess.run(
                    [node, str(CLIENT_DIR / "ag_ui_agent.mjs"), f"{first}/ag-ui", "t0", "Hi"],
                    capture_output=True, text=True, timeout=30, check=False,
                )  # fmt: skip
                assert done.returncode == 0, done.stderr
                record, state = (json.loads(line) for line in done.stdout.splitlines())
                assert record["error"] is None
                assert state["messages"][-1]["content"] == "Read by HttpAgent."

                # A stream dropped on the first worker resumes through the second.
                with httpx.stream("POST", f"{first}/ag-ui", json=run_body("shared", "Go")) as r:
                    seen: list[SSEEvent | str] = []
                    for event in parse_sse(r.iter_lines()):
                        seen.append(event)
                        if deltas(parts_of(seen)):
                            break
                last = max(int(e.id) for e in seen if isinstance(e, SSEEvent) and e.id)
                resumed = run_body("shared", "Go")
                with httpx.stream(
                    "POST", f"{second}/ag-ui", json=resumed, headers={"last-event-id": str(last)}
                ) as r:
                    assert r.status_code == 200
                    gate.open()
                    rest = parts_of(list(parse_sse(r.iter_lines())))
                assert deltas(parts_of(seen)) + deltas(rest) == ANSWER
                assert rest[-1]["type"] == "RUN_FINISHED"
                assert rest[-1]["outcome"] == {"type": "success"}

                # A run the first worker owns is cancelled through the second.
                with httpx.stream("POST", f"{first}/ag-ui", json=run_body("other", "Go")) as r:
                    items = parse_sse(r.iter_lines())
                    head: list[SSEEvent | str] = []
                    for event in items:
                        head.append(event)
                        if deltas(parts_of(head)):
                            break
                    assert httpx.post(f"{second}/api/chat/other/cancel").status_code == 202
                    ending = parts_of(list(items))
                assert ending[-1]["type"] == "RUN_FINISHED"
                assert ending[-1]["outcome"] == {"type": "cancelled"}
                assert mock.wait_for_disconnects(1, timeout=10)
        finally:
            Gate.open_all()
