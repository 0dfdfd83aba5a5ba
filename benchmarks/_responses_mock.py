"""The bench's deterministic Responses API mock (``POST /v1/responses``): stdlib only, loopback.

The bench conversation of :mod:`benchmarks._mock_server` in the Responses wire format, written
as OpenAI writes it (``sequence_number``, ``item_id``, ``output_index``, ``logprobs`` and the
``obfuscation`` padding on every delta, ``response.created`` / ``in_progress`` /
``completed`` carrying the response object):

- last input item a user message -> ``k`` parallel ``get_weather`` function calls
  (``call_0`` ..., arguments in ~4-char deltas);
- last input item a ``function_call_output`` -> an answer of ``n`` one-word text deltas
  ``w0 `` ..., then ``response.completed`` with usage.

``X-Mock-Chunks`` (``n``, default 2000) and ``X-Mock-Tool-Calls`` (``k``, default 2) choose
the sizes. HTTP/1.1 keep-alive, chunked transfer encoding, one HTTP chunk per SSE event, all
written at once; each body is serialized once and cached.

Usage: ``python -m benchmarks._responses_mock [PORT]`` (0 = a free port); prints ``PORT n``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
from typing import Any

from benchmarks._mock_server import city

HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
    b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
)
USAGE = {
    "input_tokens": 120,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 40,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 160,
}


class _Events:
    def __init__(self, number: str) -> None:
        self.id = f"resp_bench_{number}"
        self.sequence = 0
        self.out: list[bytes] = []

    def add(self, kind: str, **fields: Any) -> None:
        obj = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        data = json.dumps(obj, separators=(",", ":"))
        event = f"event: {kind}\ndata: {data}\n\n".encode()
        self.out.append(b"%x\r\n%s\r\n" % (len(event), event))

    def response(self, status: str, output: list[Any], usage: Any = None) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "response",
            "created_at": 1700000000,
            "status": status,
            "model": "mock-model",
            "output": output,
            "parallel_tool_calls": True,
            "usage": usage,
        }

    def body(self) -> bytes:
        return HEAD + b"".join(self.out) + b"0\r\n\r\n"


@functools.cache
def tool_calls(k: int) -> bytes:
    events = _Events("calls")
    events.add("response.created", response=events.response("in_progress", []))
    events.add("response.in_progress", response=events.response("in_progress", []))
    output = []
    for i in range(k):
        args = json.dumps({"city": city(i)})
        item = {"id": f"fc_{i}", "type": "function_call", "status": "in_progress"}
        item |= {"arguments": "", "call_id": f"call_{i}", "name": "get_weather"}
        events.add("response.output_item.added", output_index=i, item=item)
        for p in range(0, len(args), 4):
            events.add(
                "response.function_call_arguments.delta",
                item_id=f"fc_{i}",
                output_index=i,
                delta=args[p : p + 4],
                obfuscation="a1b2c3d4",
            )
        events.add(
            "response.function_call_arguments.done",
            item_id=f"fc_{i}",
            output_index=i,
            arguments=args,
        )
        done = {**item, "status": "completed", "arguments": args}
        events.add("response.output_item.done", output_index=i, item=done)
        output.append(done)
    events.add("response.completed", response=events.response("completed", output, USAGE))
    return events.body()


@functools.cache
def answer(n: int) -> bytes:
    events = _Events("answer")
    events.add("response.created", response=events.response("in_progress", []))
    events.add("response.in_progress", response=events.response("in_progress", []))
    item = {"id": "msg_0", "type": "message", "status": "in_progress", "content": []}
    item |= {"role": "assistant"}
    events.add("response.output_item.added", output_index=0, item=item)
    part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
    events.add(
        "response.content_part.added", item_id="msg_0", output_index=0, content_index=0, part=part
    )
    text = "".join(f"w{i} " for i in range(n))
    for i in range(n):
        events.add(
            "response.output_text.delta",
            item_id="msg_0",
            output_index=0,
            content_index=0,
            delta=f"w{i} ",
            logprobs=[],
            obfuscation="x9y8z7",
        )
    events.add(
        "response.output_text.done", item_id="msg_0", output_index=0, content_index=0, text=text
    )
    part = {**part, "text": text}
    events.add(
        "response.content_part.done", item_id="msg_0", output_index=0, content_index=0, part=part
    )
    done = {**item, "status": "completed", "content": [part]}
    events.add("response.output_item.done", output_index=0, item=done)
    events.add("response.completed", response=events.response("completed", [done], USAGE))
    return events.body()


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            headers = {}
            for line in head.decode("latin-1").split("\r\n")[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            body = json.loads(await reader.readexactly(int(headers.get("content-length", 0))))
            last = body["input"][-1]
            if last.get("type") == "function_call_output":
                writer.write(answer(int(headers.get("x-mock-chunks", 2000))))
            else:
                writer.write(tool_calls(int(headers.get("x-mock-tool-calls", 2))))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(port: int) -> None:
    server = await asyncio.start_server(_serve, "127.0.0.1", port)
    print("PORT", server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 0))
