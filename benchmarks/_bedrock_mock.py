"""The bench's deterministic Bedrock mock (``POST /model/{modelId}/converse-stream``): stdlib
only, loopback only, the bench conversation in Converse's events, each an AWS event-stream
frame with its two CRCs.

- last user message without ``toolResult`` blocks -> ``k`` parallel ``get_weather`` calls
  (``contentBlockStart`` with the id and name, one ``toolUse`` input delta each),
  ``messageStop`` ``tool_use``, ``metadata``;
- otherwise -> ``n`` ``contentBlockDelta`` text events ``w0 `` ..., ``contentBlockStop``,
  ``messageStop`` ``end_turn``, ``metadata`` with the usage.

HTTP/1.1 chunked, one HTTP chunk per frame, the body serialized once and written in one go.
Headers ``X-Mock-Chunks`` (``n``, default 2000) and ``X-Mock-Tool-Calls`` (``k``, default 2)
choose the script.

Usage: ``python -m benchmarks._bedrock_mock [PORT]`` (0 = a free port); prints ``PORT n``.
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

from benchmarks._mock_server import city
from benchmarks._sse_mock import serve

HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.amazon.eventstream\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)


def frame(event_type: str, payload: dict[str, Any]) -> bytes:
    """One event-stream frame (the headers Bedrock sends on every event)."""
    headers = b""
    for name, value in (
        (":event-type", event_type),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ):
        headers += struct.pack(">B", len(name)) + name.encode()
        headers += struct.pack(">BH", 7, len(value)) + value.encode()
    data = json.dumps(payload, separators=(",", ":")).encode()
    prelude = struct.pack(">II", 16 + len(headers) + len(data), len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + headers + data
    return message + struct.pack(">I", zlib.crc32(message))


def events(answering: bool, chunks: int, tool_calls: int) -> list[bytes]:
    """The frames of one response of the bench conversation."""
    out = [frame("messageStart", {"role": "assistant"})]
    if not answering:
        for i in range(tool_calls):
            start = {"toolUse": {"toolUseId": f"tooluse_{i}", "name": "get_weather"}}
            out.append(frame("contentBlockStart", {"contentBlockIndex": i, "start": start}))
            piece = {"toolUse": {"input": json.dumps({"city": city(i)})}}
            out.append(frame("contentBlockDelta", {"contentBlockIndex": i, "delta": piece}))
            out.append(frame("contentBlockStop", {"contentBlockIndex": i}))
        stop, tokens = "tool_use", tool_calls * 8
    else:
        for i in range(chunks):
            delta = {"contentBlockIndex": 0, "delta": {"text": f"w{i} "}}
            out.append(frame("contentBlockDelta", delta))
        out.append(frame("contentBlockStop", {"contentBlockIndex": 0}))
        stop, tokens = "end_turn", chunks
    out.append(frame("messageStop", {"stopReason": stop}))
    usage = {"inputTokens": 120, "outputTokens": tokens, "totalTokens": 120 + tokens}
    out.append(frame("metadata", {"usage": usage, "metrics": {"latencyMs": 1}}))
    return out


def body(answering: bool, chunks: int, tool_calls: int) -> bytes:
    """The whole chunked HTTP body of one response."""
    parts = events(answering, chunks, tool_calls)
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def _answering(request: dict[str, Any]) -> bool:
    return any("toolResult" in block for block in request["messages"][-1]["content"])


def respond(request: dict[str, Any], headers: dict[str, str]) -> bytes:
    """The whole HTTP response to one request (:mod:`benchmarks._sse_mock`)."""
    chunks = int(headers.get("x-mock-chunks", 2000))
    calls = int(headers.get("x-mock-tool-calls", 2))
    return HEAD + body(_answering(request), chunks, calls)


if __name__ == "__main__":
    serve(respond)
