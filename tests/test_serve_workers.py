"""Two ``rxreact serve`` processes on one real redis-server (or one real postgres): a run
started through one is resumed (and followed to its end) through the other, the conversation
goes on there, and a run one owns is cancelled through the other.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis_server import running_redis_server
from serve_helpers import Gate, SSEEvent, parse_sse, read_until_text, serve_process, text_of

from rxreact.model.scripted.replies import Hang, text_reply
from rxreact.testing import MockOpenAIServer

ANSWER = "Started on one worker and finished on the other."


@contextmanager
def rxreact_serve(env: dict[str, str], *options: str) -> Iterator[str]:
    """An ``rxreact serve`` process on a free port; yields its URL once it listens."""
    with serve_process(env, *options) as (url, _):
        yield url


def body(conversation: str, question: str) -> dict[str, Any]:
    parts = [{"type": "text", "text": question}]
    return {"id": conversation, "messages": [{"id": "u", "role": "user", "parts": parts}]}


@contextmanager
def shared_store(kind: str, request: pytest.FixtureRequest) -> Iterator[list[str]]:
    """The ``rxreact serve`` options of a store that several workers share."""
    if kind == "redis":
        with running_redis_server() as redis:
            yield ["--redis", redis.url]
        return
    server = request.getfixturevalue("postgres_server")
    dsn = server.dsn(server.new_database())  # the default table names, in a database of its own
    yield ["--event-log", dsn, "--memory", dsn]


@pytest.mark.parametrize("kind", ["redis", "postgres"])
def test_a_run_started_through_one_worker_is_resumed_through_the_other(
    kind: str, request: pytest.FixtureRequest
) -> None:
    gate = Gate()
    reply = text_reply(ANSWER)
    with (
        shared_store(kind, request) as store,
        MockOpenAIServer(
            [
                gate.reply(reply[:4], reply[4:]),
                text_reply("Yes, I remember."),
                [*text_reply("Going on and on")[:2], Hang()],
            ]
        ) as mock,
    ):
        env = {**os.environ, "OPENAI_BASE_URL": mock.base_url, "OPENAI_API_KEY": "sk-test",
               "RXREACT_MODEL": "mock"}  # fmt: skip
        try:
            with (
                # Postgres: two single-worker processes. uvicorn's supervisor kills a spawned
                # worker that has not answered its ping within 5 s, which a worker still
                # importing on a loaded 2-core machine may not (it would start it again).
                rxreact_serve(env, *store, "--workers", "2" if kind == "redis" else "1") as first,
                rxreact_serve(env, *store) as second,
            ):
                with httpx.stream("POST", f"{first}/api/chat", json=body("shared", "Go")) as r:
                    assert r.status_code == 200
                    seen = read_until_text(parse_sse(r.iter_lines()), "Started on one ")
                last_id = seen[-1].id
                assert last_id is not None
                with httpx.stream(
                    "GET", f"{second}/api/chat/shared/stream", headers={"Last-Event-ID": last_id}
                ) as r:
                    assert r.status_code == 200
                    gate.open()
                    rest = [e for e in parse_sse(r.iter_lines()) if isinstance(e, SSEEvent)]
                assert rest[-1].data == "[DONE]"
                parts = [e.part for e in rest[:-1]]
                assert text_of([e.part for e in seen]) + text_of(parts) == ANSWER
                assert parts[-1] == {"type": "finish", "finishReason": "stop"}

                # The turn was committed to the shared memory: the other worker goes on with it.
                with httpx.stream(
                    "POST", f"{second}/api/chat", json=body("shared", "Remember?")
                ) as r:
                    follow_up = [e for e in parse_sse(r.iter_lines()) if isinstance(e, SSEEvent)]
                assert text_of([e.part for e in follow_up[:-1]]) == "Yes, I remember."
                history = mock.requests[1]["messages"]
                assert {"role": "assistant", "content": ANSWER} in history

                # A run owned by one worker is cancelled through the other.
                with httpx.stream("POST", f"{first}/api/chat", json=body("other", "Go")) as r:
                    items = parse_sse(r.iter_lines())
                    read_until_text(items, "Going ")
                    cancelled = httpx.post(f"{second}/api/chat/other/cancel")
                    assert cancelled.status_code == 202
                    ending = [e for e in items if isinstance(e, SSEEvent)]
                assert ending[-2].part == {"type": "abort", "reason": "cancelled"}
                assert mock.wait_for_disconnects(1, timeout=10)  # its model stream was closed
        finally:
            Gate.open_all()


def test_one_worker_keeps_conversations_in_sqlite(tmp_path: Path) -> None:
    script = [text_reply("First answer."), text_reply("Second answer.")]
    with MockOpenAIServer(script) as mock:
        env = {**os.environ, "OPENAI_BASE_URL": mock.base_url, "OPENAI_API_KEY": "sk-test",
               "RXREACT_MODEL": "mock"}  # fmt: skip
        memory = tmp_path / "chats.sqlite3"
        with rxreact_serve(env, "--memory", str(memory)) as url:
            for question in ("One", "Two"):
                with httpx.stream("POST", f"{url}/api/chat", json=body("local", question)) as r:
                    events = [e for e in parse_sse(r.iter_lines()) if isinstance(e, SSEEvent)]
                assert events[-1].data == "[DONE]"
            page = httpx.get(f"{url}/")
        assert page.status_code == 200 and "rxreact chat" in page.text
        assert {"role": "assistant", "content": "First answer."} in mock.requests[1]["messages"]
        assert memory.is_file()


def test_several_workers_without_redis_are_refused() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rxreact.cli", "serve", "--workers", "2"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--redis" in done.stderr
