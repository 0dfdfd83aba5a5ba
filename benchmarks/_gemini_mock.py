"""The bench's deterministic Gemini mock (``POST /v1beta/models/{model}:streamGenerateContent
?alt=sse``): stdlib only, loopback only, the bench conversation in Gemini's events.

- last user content without ``functionResponse`` parts -> one event with ``k`` parallel
  ``get_weather`` ``functionCall`` parts (the first with a ``thoughtSignature``, as Gemini 3
  sends them), ``finishReason: "STOP"``;
- otherwise -> ``n`` events of one one-word ``text`` part each ``w0 `` ..., the last with
  ``finishReason: "STOP"`` and a signed empty text part.

Every event is a whole ``GenerateContentResponse`` with the fields the real API sends
(``usageMetadata`` on each, ``modelVersion``, ``responseId``); no ``[DONE]``; HTTP/1.1 chunked,
one HTTP chunk per event, the body serialized once and written in one go. Headers
``X-Mock-Chunks`` (``n``, default 2000) and ``X-Mock-Tool-Calls`` (``k``, default 2) choose the
script.

Usage: ``python -m benchmarks._gemini_mock [PORT]`` (0 = a free port); prints ``PORT n``.
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks._mock_server import city
from benchmarks._sse_mock import serve

MODEL = "mock-model"
HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
    b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
)
SIGNATURE = "CiIBjz1rX5Ai8Rjz3JrNs0Q2GkYw"


def _response(parts: list[dict[str, Any]], done: bool, tokens: int) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if done:
        candidate["finishReason"] = "STOP"
    usage = {
        "promptTokenCount": 120,
        "candidatesTokenCount": tokens,
        "totalTokenCount": 120 + tokens,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 120}],
    }
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": MODEL,
        "responseId": "mock-response",
    }


def events(answering: bool, chunks: int, tool_calls: int) -> list[dict[str, Any]]:
    """The events of one response of the bench conversation."""
    if not answering:
        calls = []
        for i in range(tool_calls):
            part: dict[str, Any] = {
                "functionCall": {"name": "get_weather", "args": {"city": city(i)}}
            }
            if i == 0:
                part["thoughtSignature"] = SIGNATURE
            calls.append(part)
        return [_response(calls, True, tool_calls * 8)]
    out = [_response([{"text": f"w{i} "}], False, i + 1) for i in range(chunks - 1)]
    last = [{"text": f"w{chunks - 1} "}, {"text": "", "thoughtSignature": SIGNATURE}]
    out.append(_response(last, True, chunks))
    return out


def body(answering: bool, chunks: int, tool_calls: int) -> bytes:
    """The whole chunked HTTP body of one response."""
    parts = [
        b"data: " + json.dumps(e, separators=(",", ":")).encode() + b"\r\n\r\n"
        for e in events(answering, chunks, tool_calls)
    ]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def _answering(request: dict[str, Any]) -> bool:
    parts = request["contents"][-1]["parts"]
    return any("functionResponse" in p for p in parts)


def respond(request: dict[str, Any], headers: dict[str, str]) -> bytes:
    """The whole HTTP response to one request (:mod:`benchmarks._sse_mock`)."""
    chunks = int(headers.get("x-mock-chunks", 2000))
    calls = int(headers.get("x-mock-tool-calls", 2))
    return HEAD + body(_answering(request), chunks, calls)


if __name__ == "__main__":
    serve(respond)
