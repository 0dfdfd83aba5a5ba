"""Helpers for the web-server tests: the app on a real loopback socket, gated mock replies,
SSE parsing, and the browser/node requirement switch.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, NoReturn

import pytest

from rxreact import InMemoryChatMemory, OpenAIChatModel, ReactAgent, tool
from rxreact.model.scripted.replies import Pause, ReplyItem, Script
from rxreact.testing import MockOpenAIServer

REQUIRE_BROWSER_ENV = "RXREACT_REQUIRE_BROWSER"


def unavailable(reason: str) -> NoReturn:
    """Skip, or fail where ``RXREACT_REQUIRE_BROWSER=1`` (CI) requires node and Chromium."""
    if os.environ.get(REQUIRE_BROWSER_ENV) == "1":
        pytest.fail(f"{reason}, and {REQUIRE_BROWSER_ENV}=1 requires these tests to run")
    pytest.skip(f"{reason} (set {REQUIRE_BROWSER_ENV}=1 to make this a failure)")


def require_executable(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        unavailable(f"{name} is not installed")
    return path


@contextmanager
def serving(app: Any, port: int = 0) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a loopback port (default: a free one) in a thread; yields
    the base URL.

    The socket listens before the server starts, so a request made at once waits in the
    backlog instead of failing: nothing has to poll for readiness.
    """
    import uvicorn

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart on the same port
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny, 21°C"


class Served(NamedTuple):
    url: str
    mock: MockOpenAIServer
    app: Any


@contextmanager
def chat_servers() -> Iterator[Any]:
    """Yields ``start(script, **app_options) -> Served``: a mock model playing ``script``, an
    agent (``get_weather``, in-memory chat memory) and its app on a socket; all closed on exit,
    every :class:`Gate` opened first so the mock's replies can finish."""
    opened: list[tuple[Any, MockOpenAIServer, OpenAIChatModel]] = []

    def start(
        script: Script, *, agent_options: dict[str, Any] | None = None, **app_options: Any
    ) -> Served:
        from rxreact.serve import create_app

        mock = MockOpenAIServer(script).start()
        model = OpenAIChatModel("mock", base_url=mock.base_url, api_key="sk-test")
        memory = InMemoryChatMemory()
        agent = ReactAgent(model, [get_weather], memory=memory, **(agent_options or {}))
        app = create_app(agent, **app_options)
        serve = serving(app)
        opened.append((serve, mock, model))
        return Served(serve.__enter__(), mock, app)

    try:
        yield start
    finally:
        Gate.open_all()
        for serve, mock, model in reversed(opened):
            serve.__exit__(None, None, None)
            mock.stop()
            model.close()


class Gate:
    """A point in a mock reply the test opens: the reply stops there until :meth:`open`."""

    _all: ClassVar[list[Gate]] = []

    def __init__(self) -> None:
        self._event = threading.Event()
        Gate._all.append(self)

    @classmethod
    def open_all(cls) -> None:
        """Open every gate (test teardown: a mock server waits for its replies to finish)."""
        for gate in cls._all:
            gate.open()
        cls._all.clear()

    def open(self) -> None:
        self._event.set()

    def reply(self, before: Sequence[ReplyItem], after: Sequence[ReplyItem]) -> Iterator[ReplyItem]:
        """The items of ``before``, then (once opened) those of ``after``: a mock reply."""

        def items() -> Iterator[ReplyItem]:
            yield from before
            yield Pause(0)  # the mock sends what it holds at a pause
            self._event.wait(30)
            yield from after

        return items()


@dataclass
class SSEEvent:
    id: str | None
    data: str

    @property
    def part(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.data)
        return value


def parse_sse(lines: Iterator[str]) -> Iterator[SSEEvent | str]:
    """SSE events from text lines; comments are yielded as their text (``": keep-alive"``)."""
    event_id: str | None = None
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                yield SSEEvent(event_id, "\n".join(data))
            event_id, data = None, []
        elif line.startswith(":"):
            yield line
        elif line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))


def read_until_text(items: Iterator[SSEEvent | str], text: str) -> list[SSEEvent]:
    """The SSE events of ``parse_sse(...)`` up to the one after which the streamed text is
    ``text``; the rest stays in ``items``."""
    seen: list[SSEEvent] = []
    for item in items:
        if isinstance(item, SSEEvent) and item.data != "[DONE]":
            seen.append(item)
            if item.part["type"] == "text-delta" and text_of([e.part for e in seen]) == text:
                return seen
    raise AssertionError(f"the stream ended before its text was {text!r}")


def text_of(parts: Sequence[dict[str, Any]]) -> str:
    return "".join(p["delta"] for p in parts if p["type"] == "text-delta")


@contextmanager
def serve_process(
    env: dict[str, str], *options: str, port: int = 0
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """An ``rxreact serve`` process on ``port`` (0: a free one); yields its URL once it
    listens (read from its log, no polling), and the process (a test may kill it first)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "rxreact.cli", "serve", "--port", str(port), *options],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    listening = threading.Event()
    log: list[str] = []

    def read_log() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            log.append(line)
            if line.startswith("rxreact serve: listening on "):
                listening.set()
        listening.set()  # the process ended: stop waiting

    reader = threading.Thread(target=read_log, daemon=True)
    reader.start()
    try:
        assert listening.wait(30) and process.poll() is None, "".join(log)
        yield next(line for line in log if "listening on" in line).split()[-1], process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        reader.join(5)
        if process.stderr is not None:
            process.stderr.close()


def deps_for_request(request: Any, user: str) -> dict[str, str]:
    """A ``--deps-factory`` for the tests: the request's ``x-tenant`` header and the user."""
    return {"tenant": request.headers.get("x-tenant", ""), "user": user}
