"""The bench's deterministic OpenAI-compatible mock: stdlib only, loopback only.

The script and the bytes on the wire are those of ``shared/bench/mock_server.py`` (the peer
harness's mock), so every stack reads exactly what the peers read:

- last message ``user`` -> ``k`` parallel ``get_weather`` tool calls (``call_0`` ...,
  arguments in ~4-char pieces, ``index`` on every delta, id/name only on a call's first
  delta, ``finish_reason: "tool_calls"`` in a final chunk);
- last message ``tool`` -> an answer of ``n`` one-word content chunks ``w0 `` ... then
  ``finish_reason: "stop"``;
- a usage chunk with empty ``choices`` when ``stream_options.include_usage`` is set;
- HTTP/1.1 chunked transfer encoding, one HTTP chunk per SSE event, bodies serialized once.

Differences, all opt-in per request so one server serves every workload:

- headers ``X-Mock-Chunks`` (``n``, default 2000, or ``$MOCK_CHUNKS``), ``X-Mock-Tool-Calls``
  (``k``, default 2; ``0`` answers the user's message at once, with no tool round)
  and ``X-Mock-Delay-Ms`` (pace: one write per event, event ``i`` due ``i * delay`` after
  the headers, on an absolute schedule so the server's own lag does not accumulate; default
  ``$MOCK_DELAY_MS`` or 0);
- a paced answer records the ``time.monotonic()`` at which each event was written, keyed by
  the ``[run ID]`` tag of the first user message; ``GET /v1/_sent`` returns and clears them
  (the scale workload's latency = subscriber receive time - server send time; both clocks
  are the system-wide monotonic clock);
- it runs on asyncio (one thread) and one pacer task writes every paced stream's events when
  due, so 1,000 paced streams cost the mock a fraction of a core, not 1,000 threads.

Usage: ``python -m benchmarks._mock_server [PORT]`` (0 = a free port); prints ``PORT n``.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import json
import os
import re
import sys
import time
from typing import Any

MODEL = "mock-model"
CREATED = 1700000000
CITIES = ("Beijing", "Shanghai")
DEFAULT_CHUNKS = int(os.environ.get("MOCK_CHUNKS", "2000"))
DEFAULT_DELAY_MS = os.environ.get("MOCK_DELAY_MS", "0")
"""The pace of a request without ``X-Mock-Delay-Ms`` (``rxreact serve`` sends no headers)."""

STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
    b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
)
_RUN_TAG = re.compile(r"\[run (\S+)\]")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


def city(i: int) -> str:
    """The city of tool call ``i`` (the peers' two cities first)."""
    return CITIES[i] if i < len(CITIES) else f"City{i}"


def _chunk(cid: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": MODEL,
        "system_fingerprint": "fp_mock",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def _tool_round(cid: str, calls: int) -> list[dict[str, Any]]:
    out = []
    for i in range(calls):
        args = _dumps({"city": city(i)})
        pieces = [args[j : j + 4] for j in range(0, len(args), 4)]
        first = {
            "index": i,
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "get_weather", "arguments": ""},
        }
        delta: dict[str, Any] = {"tool_calls": [first]}
        if i == 0:
            delta = {"role": "assistant", "content": None, **delta}
        out.append(_chunk(cid, delta))
        out += [
            _chunk(cid, {"tool_calls": [{"index": i, "function": {"arguments": p}}]})
            for p in pieces
        ]
    out.append(_chunk(cid, {}, "tool_calls"))
    return out


def _answer(cid: str, n: int) -> list[dict[str, Any]]:
    out = [_chunk(cid, {"role": "assistant", "content": "", "refusal": None})]
    out += [_chunk(cid, {"content": f"w{i} "}) for i in range(n)]
    out.append(_chunk(cid, {}, "stop"))
    return out


_CACHE: dict[tuple[str, int, bool], list[bytes]] = {}


def stream_parts(kind: str, size: int, usage: bool) -> list[bytes]:
    """The streamed response as raw HTTP pieces: the head, one HTTP chunk per SSE event, the end.

    ``size`` is the answer's chunk count (``kind == "answer"``) or the tool-call count.
    """
    key = (kind, size, usage)
    if key not in _CACHE:
        cid = f"chatcmpl-mock-{kind}"
        objs = _tool_round(cid, size) if kind == "tool" else _answer(cid, size)
        if usage:
            n = 20 if kind == "tool" else size
            objs.append(
                {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": CREATED,
                    "model": MODEL,
                    "system_fingerprint": "fp_mock",
                    "choices": [],
                    "usage": {"prompt_tokens": 50, "completion_tokens": n, "total_tokens": 50 + n},
                }
            )
        events = [b"data: " + _dumps(o).encode() + b"\n\n" for o in objs]
        events.append(b"data: [DONE]\n\n")
        parts = [STREAM_HEAD] + [b"%x\r\n%s\r\n" % (len(e), e) for e in events] + [b"0\r\n\r\n"]
        _CACHE[key] = parts
    return _CACHE[key]


class MockServer:
    """The asyncio server; ``sent`` holds the send times of paced, tagged answers."""

    def __init__(self) -> None:
        self.sent: dict[str, list[float]] = {}
        self.pacer = Pacer()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self._one_request(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _one_request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        head = await reader.readuntil(b"\r\n\r\n")
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, path, _ = request_line.split(" ", 2)
        headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        if method == "GET" and path.rstrip("/").endswith("/_sent"):
            payload = _dumps({"sent": self.sent, "cpu_s": time.process_time()}).encode()
            self.sent = {}
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)
            )
            await writer.drain()
            return True
        if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
            writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            return True
        req = json.loads(body)
        answer = req["messages"][-1]["role"] == "tool" or headers.get("x-mock-tool-calls") == "0"
        size = int(
            headers.get("x-mock-chunks", DEFAULT_CHUNKS)
            if answer
            else headers.get("x-mock-tool-calls", "2")
        )
        usage = bool((req.get("stream_options") or {}).get("include_usage"))
        if not req.get("stream"):
            writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            return True
        parts = stream_parts("answer" if answer else "tool", size, usage)
        delay = float(headers.get("x-mock-delay-ms", DEFAULT_DELAY_MS)) / 1000
        if not delay:
            writer.write(b"".join(parts))
            await writer.drain()
            return True
        tag = _RUN_TAG.search(str(req["messages"][0].get("content", "")))
        times = self.sent.setdefault(tag.group(1), []) if tag and answer else None
        done = asyncio.get_running_loop().create_future()
        self.pacer.add(writer, parts, delay, times, done)
        await done
        return True


class Pacer:
    """Writes the events of every paced stream when due, from one loop over a heap.

    One task for all streams instead of a sleeping coroutine per stream: a write costs a
    heap operation and a ``send``, so 1,000 streams paced at 20 ms cost the mock a fraction of
    a core rather than the whole machine.
    """

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, _Paced]] = []
        self._seq = 0
        self._wake = asyncio.Event()

    def add(
        self,
        writer: asyncio.StreamWriter,
        parts: list[bytes],
        delay: float,
        times: list[float] | None,
        done: asyncio.Future[None],
    ) -> None:
        writer.write(parts[0])
        paced = _Paced(writer, parts, delay, times, done, time.monotonic())
        self._push(paced.start, paced)
        self._wake.set()

    def _push(self, due: float, paced: _Paced) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (due, self._seq, paced))

    async def run(self) -> None:
        heap = self._heap
        while True:
            if not heap:
                self._wake.clear()
                await self._wake.wait()
                continue
            now = time.monotonic()
            if heap[0][0] > now:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), heap[0][0] - now)
                continue
            while heap and heap[0][0] <= now:
                _, _, paced = heapq.heappop(heap)
                paced.next += 1
                if paced.writer.is_closing():
                    paced.finish()
                    continue
                if paced.times is not None:
                    paced.times.append(time.monotonic())
                paced.writer.write(paced.parts[paced.next])
                if paced.next + 1 < len(paced.parts):
                    self._push(paced.start + paced.next * paced.delay, paced)
                else:
                    paced.finish()
            await asyncio.sleep(0)  # let the connections read and write


class _Paced:
    __slots__ = ("delay", "done", "next", "parts", "start", "times", "writer")

    def __init__(
        self,
        writer: asyncio.StreamWriter,
        parts: list[bytes],
        delay: float,
        times: list[float] | None,
        done: asyncio.Future[None],
        start: float,
    ) -> None:
        self.writer, self.parts, self.delay, self.times = writer, parts, delay, times
        self.done, self.start, self.next = done, start, 0

    def finish(self) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def serve(port: int) -> None:
    """Listen on 127.0.0.1:``port`` forever; print ``PORT n`` once ready."""
    mock = MockServer()
    pacer = asyncio.create_task(mock.pacer.run())
    for kind, size in (("tool", 2), ("answer", DEFAULT_CHUNKS)):
        for usage in (True, False):
            stream_parts(kind, size, usage)
    server = await asyncio.start_server(mock.handle, "127.0.0.1", port, backlog=4096)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()
    pacer.cancel()


def main() -> None:
    port = int(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MOCK_PORT", "0"))
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(port))


if __name__ == "__main__":
    main()
