"""Workload 11: the serve path. Concurrent SSE clients through rxreact's web app against a
bare Starlette endpoint relaying the same model stream.

Each server is a process of its own (one uvicorn worker, as ``rxreact serve`` runs it):

- ``rxreact``: :func:`rxreact.serve.create_app` around a :class:`~rxreact.ReactAgent` on the
  mock model (the app ``rxreact serve`` builds, with the bench mock's script headers);
- ``relay``: the floor, a Starlette endpoint that streams the same model request with one
  shared ``httpx.AsyncClient`` and re-emits each text delta as the same UI-message-stream event
  (``data: {"type":"text-delta",...}``): what a hand-written app would do, no agent.

The mock answers at once (no tool round), ``chunks`` text chunks paced ``delay_ms`` apart. The
load generator (this process, asyncio, one ``httpx.AsyncClient``) opens ``clients`` streams
at once and counts the text deltas each receives. Reported: the server process's CPU (user +
system, from ``/proc``) per delivered chunk, and the ratio to the relay's.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from typing import Any

import httpx

from benchmarks._harness import ROOT, BenchError, Table, mock_headers

_TEXT_DELTA = b'"type":"text-delta"'


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _rxreact_app(url: str, chunks: int, delay_ms: float) -> Any:
    from rxreact import InMemoryEventLog, OpenAIChatModel, ReactAgent
    from rxreact.serve import create_app

    headers = mock_headers(chunks, tool_calls=0, delay_ms=delay_ms)
    model = OpenAIChatModel("mock-model", base_url=url, headers=headers, include_usage=False)
    agent = ReactAgent(model, event_log=InMemoryEventLog(), on_busy="reject")
    return create_app(agent)


def _relay_app(url: str, chunks: int, delay_ms: float) -> Any:
    import json

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    headers = mock_headers(chunks, tool_calls=0, delay_ms=delay_ms)
    client = httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=None))

    async def relay(request: Request) -> StreamingResponse:
        body = await request.json()
        text = body["messages"][-1]["parts"][0]["text"]
        payload = {
            "model": "mock-model",
            "stream": True,
            "messages": [{"role": "user", "content": text}],
        }

        async def events() -> Any:
            yield b'data: {"type":"start"}\n\n'
            async with client.stream(
                "POST", f"{url}/chat/completions", json=payload, headers=headers
            ) as response:
                async for line in response.aiter_lines():
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    chunk = json.loads(line[6:])
                    choices = chunk.get("choices") or ()
                    delta = choices[0].get("delta", {}).get("content") if choices else None
                    if delta:
                        out = {"type": "text-delta", "id": "t", "delta": delta}
                        yield b"data: " + json.dumps(out, separators=(",", ":")).encode() + b"\n\n"
            yield b'data: {"type":"finish"}\n\ndata: [DONE]\n\n'

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(routes=[Route("/api/chat", relay, methods=["POST"])])


def _serve(kind: str, url: str, port: int, chunks: int, delay_ms: float) -> None:
    import uvicorn

    app = (_rxreact_app if kind == "rxreact" else _relay_app)(url, chunks, delay_ms)
    # Listening before READY: a client that connects before uvicorn serves waits in the
    # backlog, so the parent needs no polling for the port.
    sock = socket.socket()
    sock.bind(("127.0.0.1", port))
    sock.listen(4096)
    print("READY", flush=True)
    config = uvicorn.Config(app, log_level="warning", backlog=4096)
    uvicorn.Server(config).run(sockets=[sock])


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _load(port: int, clients: int, chunks: int) -> tuple[int, int, float, str | None]:
    """``clients`` chat streams at once; (complete streams, chunks received, wall, an error)."""
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    errors: list[str] = []
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:

        async def one(i: int) -> int:
            body = {
                "id": f"bench-{i}",
                "messages": [
                    {"id": f"m{i}", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}
                ],
            }
            got = 0
            try:
                async with client.stream(
                    "POST", f"http://127.0.0.1:{port}/api/chat", json=body
                ) as response:
                    if response.status_code != 200:
                        await response.aread()
                        raise BenchError(f"HTTP {response.status_code}: {response.text[:200]}")
                    async for line in response.aiter_lines():
                        if _TEXT_DELTA in line.encode():
                            got += 1
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
            return got

        started = time.perf_counter()
        counts = await asyncio.gather(*(one(i) for i in range(clients)))
        wall = time.perf_counter() - started
    complete = sum(1 for c in counts if c == chunks)
    return complete, sum(counts), wall, errors[0] if errors else None


def measure(kind: str, url: str, clients: int, chunks: int, delay_ms: float) -> dict[str, Any]:
    """One server process of ``kind`` under ``clients`` concurrent streams."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.serve_path", "--child", kind, url, str(port),
         str(chunks), str(delay_ms)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "READY":
            raise BenchError(f"{kind} server did not start")
        asyncio.run(_load(port, 4, chunks))  # warm-up: imports, first connections
        cpu_before = _cpu_s(proc.pid)
        complete, received, wall, error = asyncio.run(_load(port, clients, chunks))
        cpu = _cpu_s(proc.pid) - cpu_before
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        if proc.stdout is not None:
            proc.stdout.close()
    return {
        "kind": kind,
        "complete": complete,
        "received": received,
        "wall_s": wall,
        "cpu_s": cpu,
        "us_per_chunk": cpu / max(received, 1) * 1e6,
        "error": error,
    }


def run(url: str, quick: bool, clients: int | None = None, chunks: int = 50) -> Table:
    clients = clients or (200 if quick else 1000)
    delay_ms = 200.0
    table = Table(
        f"11. The serve path ({clients} concurrent SSE clients, {chunks} chunks "
        f"{delay_ms:.0f} ms apart, one worker)",
        ["server", "complete", "chunks", "wall s", "server CPU s", "us/chunk", "x relay"],
    )
    results = {kind: measure(kind, url, clients, chunks, delay_ms) for kind in ("relay", "rxreact")}
    base = results["relay"]["us_per_chunk"]
    for kind, r in results.items():
        table.add(
            kind,
            f"{r['complete']}/{clients}",
            r["received"],
            r["wall_s"],
            r["cpu_s"],
            r["us_per_chunk"],
            f"{r['us_per_chunk'] / base:.2f}",
        )
        if r["error"]:
            table.notes.append(f"{kind}: first error: {r['error']}")
    table.notes.append("server CPU = the server process's user + system time during the load")
    table.data["results"] = results
    return table


if __name__ == "__main__":
    if sys.argv[1:2] != ["--child"]:
        sys.exit(__doc__)
    kind, url, port, n, delay = sys.argv[2:7]
    _serve(kind, url, int(port), int(n), float(delay))
