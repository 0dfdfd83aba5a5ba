"""The bench's deterministic Anthropic Messages mock (``POST /v1/messages``): stdlib only,
loopback only, the bench conversation in Anthropic's events.

- last user message without ``tool_result`` blocks -> ``k`` parallel ``get_weather``
  ``tool_use`` blocks (``toolu_0`` ..., arguments in ~4-char ``input_json_delta`` pieces after
  an empty one, as the API sends them), ``stop_reason: "tool_use"``;
- otherwise -> one text block of ``n`` one-word ``text_delta`` s ``w0 `` ..., ``end_turn``.

Every response is ``message_start``, a ``ping`` after the first block's start, the blocks,
``message_delta`` (cumulative usage) and ``message_stop``, with the fields the real API sends
(ids, model, ``stop_sequence``, cache counts); HTTP/1.1 chunked, one HTTP chunk per event,
the body serialized once and written in one go. Headers ``X-Mock-Chunks`` (``n``, default
2000) and ``X-Mock-Tool-Calls`` (``k``, default 2) choose the script.

Usage: ``python -m benchmarks._anthropic_mock [PORT]`` (0 = a free port); prints ``PORT n``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

from benchmarks._mock_server import city

MODEL = "mock-model"
HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
    b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
)


def _event(obj: dict[str, Any]) -> bytes:
    data = json.dumps(obj, separators=(",", ":")).encode()
    return b"event: " + obj["type"].encode() + b"\ndata: " + data + b"\n\n"


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def events(answering: bool, chunks: int, tool_calls: int) -> list[dict[str, Any]]:
    """The events of one response of the bench conversation."""
    usage = {"input_tokens": 120, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    start = {
        "id": "msg_mock",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }
    out: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    if answering:
        out.append(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        )
        out.append({"type": "ping"})
        out += [_delta(0, {"type": "text_delta", "text": f"w{i} "}) for i in range(chunks)]
        out.append({"type": "content_block_stop", "index": 0})
        stop = "end_turn"
    else:
        for i in range(tool_calls):
            block = {"type": "tool_use", "id": f"toolu_{i}", "name": "get_weather", "input": {}}
            out.append({"type": "content_block_start", "index": i, "content_block": block})
            if i == 0:
                out.append({"type": "ping"})
            args = json.dumps({"city": city(i)}, separators=(",", ":"))
            pieces = ["", *(args[j : j + 4] for j in range(0, len(args), 4))]
            out += [_delta(i, {"type": "input_json_delta", "partial_json": p}) for p in pieces]
            out.append({"type": "content_block_stop", "index": i})
        stop = "tool_use"
    delta = {"stop_reason": stop, "stop_sequence": None}
    out.append(
        {"type": "message_delta", "delta": delta, "usage": {**usage, "output_tokens": chunks}}
    )
    out.append({"type": "message_stop"})
    return out


def body(answering: bool, chunks: int, tool_calls: int) -> bytes:
    """The whole chunked HTTP body of one response."""
    parts = [_event(e) for e in events(answering, chunks, tool_calls)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def _answering(request: dict[str, Any]) -> bool:
    content = request["messages"][-1]["content"]
    return isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            headers = {}
            for line in head.decode("latin-1").split("\r\n")[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            request = json.loads(await reader.readexactly(int(headers.get("content-length", 0))))
            chunks = int(headers.get("x-mock-chunks", 2000))
            calls = int(headers.get("x-mock-tool-calls", 2))
            writer.write(HEAD + body(_answering(request), chunks, calls))
            await writer.drain()
    writer.close()


async def _main(port: int) -> None:
    server = await asyncio.start_server(_serve, "127.0.0.1", port)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(_main(int(sys.argv[1]) if len(sys.argv) > 1 else 0))
