"""The many-workers benchmark's client: ``runs`` chats through ``rxreact serve`` workers,
``concurrency`` of them in flight, round-robin over the workers' ports, following each run
through another worker when its own dies.

Each run is ``POST /api/chat`` on a conversation of its own, read as the AI SDK's UI message
stream (``id: <seq>`` + ``data: <part>``). When its connection breaks (its worker was
killed), the run goes on through the next live worker: ``GET /api/runs/{run}/stream`` with
``Last-Event-ID`` = the last ``seq`` seen, or, when the run's id never arrived,
``GET /api/chat/{conversation}/stream`` (a ``204``: the run never started, so it is posted
again). A run whose worker died before its start was committed ends with a ``RunLostError``
saying so: nothing of it can be resumed, so the question is posted again (counted in
:attr:`Run.resent`; the tool log shows whether anything of the first attempt ran).

A run is correct when it saw exactly one ``finish`` with ``finishReason: "stop"``, no
``error`` part, and its text (the parts a ``data-round-restarted`` took back removed) is the
mock's answer ``w0 .. w{n-1}``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from benchmarks._harness import PROMPT, expected_words

NOT_RECORDED = "stopped before its start was recorded"
"""The error of a run whose worker died before the run's start was committed: the run cannot
be resumed (no worker knows its question), so the client asks again."""
RUN_TIMEOUT_S = 180.0
"""A run not finished this long after it started counts as lost."""


@dataclass
class Run:
    index: int
    conversation: str
    started: float = 0.0
    run_id: str | None = None
    first_token: float | None = None
    finished: float | None = None
    finals: int = 0
    errors: list[str] = field(default_factory=list)
    parts: dict[str, list[str]] = field(default_factory=dict)
    removed: set[str] = field(default_factory=set)
    last_seq: int = 0
    broken: int = 0
    """Connections of this run that broke before its end (its worker died)."""
    posts: int = 0
    recovered: float | None = None
    """When the first event after the first break arrived (one not seen before it)."""
    seq_at_break: int = 0
    run_ids: list[str] = field(default_factory=list)
    """Every run the question was given (more than one: it was sent again, see ``resent``)."""
    trail: list[str] = field(default_factory=list)
    resent: int = 0
    """Times the run died before its start was recorded, so the question was sent again."""
    aborted: int = 0
    """``abort`` parts seen (nobody cancels in this benchmark)."""

    def send_again(self) -> None:
        self.resent += 1
        self.run_id, self.first_token, self.last_seq = None, None, 0
        self.errors, self.parts, self.removed = [], {}, set()

    def text(self) -> str:
        return "".join("".join(p) for key, p in self.parts.items() if key not in self.removed)

    def correct(self, chunks: int) -> bool:
        return not self.wrong(chunks)

    def wrong(self, chunks: int) -> str:
        """What is wrong with the run as its client saw it ("": nothing)."""
        if self.aborted:
            return f"aborted by its worker; then {self.finals} final answers"
        if self.finals != 1 or self.errors:
            return f"{self.finals} final answers, errors {self.errors[:2]}"
        words = self.text().split()
        if words != expected_words(chunks):
            return f"answer {self.text()!r} (parts {self.trail[-8:]})"
        return ""


@dataclass
class Load:
    runs: list[Run]
    wall_s: float
    killed_at: float | None = None
    notes: list[str] = field(default_factory=list)


class _Workers:
    """The live workers' base URLs, handed out round-robin."""

    def __init__(self, urls: list[str]) -> None:
        self.urls = list(urls)
        self.dead: set[str] = set()
        self._next = 0
        self.on_first_token: Callable[[], None] | None = None
        """Called when a run's answer begins (its first text delta)."""

    def pick(self, avoid: str | None = None) -> str:
        live = [url for url in self.urls if url not in self.dead and url != avoid]
        live = live or [url for url in self.urls if url not in self.dead]
        self._next += 1
        return live[self._next % len(live)]


async def _read(response: httpx.Response, run: Run, workers: _Workers) -> bool:
    """Read a UI message stream into ``run``; True once it ended with ``[DONE]``."""
    after_break = run.broken > 0
    async for line in response.aiter_lines():
        if line.startswith("id: "):
            run.last_seq = int(line[4:])
            if after_break and run.recovered is None and run.last_seq > run.seq_at_break:
                run.recovered = time.monotonic()
        elif line.startswith("data: "):
            if line == "data: [DONE]":
                return True
            answering = run.first_token is not None
            _part(json.loads(line[6:]), run)
            if not answering and run.first_token is not None and workers.on_first_token:
                workers.on_first_token()
    return False


def _part(part: dict[str, Any], run: Run) -> None:
    kind = part.get("type")
    run.trail.append(f"{run.last_seq}:{kind}")
    if kind == "text-delta":
        if run.first_token is None:
            run.first_token = time.monotonic()
        run.parts.setdefault(part["id"], []).append(part["delta"])
    elif kind == "data-round-restarted":
        run.removed.update(part["data"].get("partIds", ()))
    elif kind == "finish" and part.get("finishReason") == "stop":
        run.finals += 1
        run.finished = time.monotonic()
    elif kind == "error":
        run.errors.append(str(part.get("errorText")))
    elif kind == "abort":
        run.aborted += 1


def _chat_body(run: Run) -> dict[str, Any]:
    text = f"{PROMPT} (question {run.index})"
    message = {"id": f"m{run.index}", "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": run.conversation, "messages": [message]}


def _request(client: httpx.AsyncClient, url: str, run: Run, action: str) -> httpx.Request:
    if action == "post":
        run.posts += 1
        return client.build_request("POST", f"{url}/api/chat", json=_chat_body(run))
    if action == "conversation":
        return client.build_request("GET", f"{url}/api/chat/{run.conversation}/stream")
    headers = {"Last-Event-ID": str(run.last_seq)}
    return client.build_request("GET", f"{url}/api/runs/{run.run_id}/stream", headers=headers)


async def _one(client: httpx.AsyncClient, workers: _Workers, run: Run) -> None:
    """Drive ``run`` to its end, across broken connections."""
    run.started = time.monotonic()
    url: str | None = None
    action = "post"
    while time.monotonic() - run.started < RUN_TIMEOUT_S:
        url = workers.pick(avoid=url if run.broken else None)
        try:
            response = await client.send(_request(client, url, run, action), stream=True)
            try:
                if response.status_code == 204:  # no active run: it never started, post it
                    action = "post"
                    continue
                if response.status_code == 409 and run.resent:
                    # The lost attempt's conversation lease outlives it until its owner is
                    # declared lost; a user would try again a moment later.
                    await asyncio.sleep(0.25)
                    continue
                if response.status_code != 200:
                    body = (await response.aread()).decode(errors="replace")
                    run.errors.append(f"HTTP {response.status_code}: {body[:200]}")
                    return
                if run.run_id is None:
                    run.run_id = response.headers.get("x-rxreact-run-id")
                    run.run_ids.append(str(run.run_id))
                if await _read(response, run, workers):
                    if run.aborted == 1 and not run.finals and not run.errors:
                        # Nobody cancelled it: see once whether the run went on elsewhere (a
                        # worker whose run was taken over ends its own stream so). Still
                        # counted wrong: a client that trusts the abort stops here.
                        run.aborted, action = 2, "follow"
                        continue
                    if not any(NOT_RECORDED in error for error in run.errors):
                        return
                    run.send_again()  # nothing of it was durable: ask again, as a user would
                    action = "post"
                    continue
            finally:
                await response.aclose()
        except httpx.TransportError:
            pass
        run.broken += 1
        if run.broken == 1:
            run.seq_at_break = run.last_seq
        action = "follow" if run.run_id else "conversation"
    run.errors.append(f"not finished after {RUN_TIMEOUT_S:.0f} s")


async def drive(
    urls: list[str],
    runs: int,
    concurrency: int,
    *,
    kill_at: int | None = None,
    kill: Callable[[], str] | None = None,
    tag: str = "",
) -> Load:
    """``runs`` runs, ``concurrency`` at a time; ``kill()`` (which returns the URL of the
    worker it killed) is called once ``kill_at`` runs have finished (``0``: when the first
    answer begins, so that every run of the killed worker is in flight, mid-answer)."""
    workers = _Workers(urls)
    gate = asyncio.Semaphore(concurrency)
    done = [0]
    killed: list[float] = []
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=concurrency)
    all_runs = [Run(i, f"c{tag}-{i}") for i in range(runs)]

    def kill_now() -> None:
        if kill is not None and not killed:
            killed.append(time.monotonic())
            workers.dead.add(kill())

    if kill_at == 0:
        workers.on_first_token = kill_now
    async with httpx.AsyncClient(timeout=httpx.Timeout(60.0), limits=limits) as client:

        async def gated(run: Run) -> None:
            async with gate:
                await _one(client, workers, run)
            done[0] += 1
            if kill_at and done[0] >= kill_at:
                kill_now()

        t0 = time.monotonic()
        await asyncio.gather(*(gated(run) for run in all_runs))
        wall = time.monotonic() - t0
    return Load(all_runs, wall, killed[0] if killed else None)


def run_load(urls: list[str], runs: int, concurrency: int, **options: Any) -> Load:
    """:func:`drive` on an event loop of its own."""
    return asyncio.run(drive(urls, runs, concurrency, **options))
