"""The stacks of :mod:`benchmarks.bedrock_adapter`, each running the bench conversation in
Bedrock's Converse format one session at a time (see that module for what each is)."""

from __future__ import annotations

import asyncio
import json
import struct
import time
import zlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from benchmarks._agent_session import agent_session
from benchmarks._harness import MODEL, PROMPT, BenchError, check_answer, mock_headers
from benchmarks._stacks import Session, _result, _ToolLog

TOOL = {
    "toolSpec": {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "inputSchema": {
            "json": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            }
        },
    }
}
STREAM_PATH = f"/model/{MODEL}/converse-stream"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "AKIABENCH0000000000", "AWS_SECRET_ACCESS_KEY": "bench"}


def rxreact_session(url: str, chunks: int, io: str) -> tuple[Session, Callable[[], None]]:
    import os

    from rxreact import BedrockModel

    os.environ.update(CREDENTIALS)  # signed like production: the mock does not check
    model = BedrockModel(
        MODEL,
        region="us-east-1",
        base_url=url,
        headers=mock_headers(chunks),
        io=io,  # type: ignore[arg-type]
    )
    return agent_session(model, chunks)


def _frames(buffer: bytearray) -> list[tuple[str, dict[str, Any]]]:
    """The whole frames at the head of ``buffer`` (removed), as (event type, payload)."""
    out = []
    while len(buffer) >= 12:
        total, headers_length, prelude_crc = struct.unpack_from(">III", buffer)
        if zlib.crc32(buffer[:8]) != prelude_crc:
            raise BenchError("bad prelude CRC")
        if len(buffer) < total:
            break
        if zlib.crc32(buffer[: total - 4]) != struct.unpack_from(">I", buffer, total - 4)[0]:
            raise BenchError("bad message CRC")
        headers, at = {}, 12
        while at < 12 + headers_length:
            n = buffer[at]
            name = buffer[at + 1 : at + 1 + n].decode()
            (length,) = struct.unpack_from(">H", buffer, at + 2 + n)
            headers[name] = buffer[at + 4 + n : at + 4 + n + length].decode()
            at += 4 + n + length
        payload = json.loads(buffer[12 + headers_length : total - 4])
        out.append((headers.get(":event-type", ""), payload))
        del buffer[:total]
    return out


async def _stream(
    client: httpx.AsyncClient, messages: list[dict[str, Any]], calls: list[dict[str, Any]]
) -> AsyncIterator[str]:
    """One streamed response: yield its text, collect its tool calls into ``calls``."""
    body = {"messages": messages, "toolConfig": {"tools": [TOOL]}}
    buffer = bytearray()
    async with client.stream("POST", STREAM_PATH, json=body) as r:
        r.raise_for_status()
        async for piece in r.aiter_raw():
            buffer += piece
            for kind, event in _frames(buffer):
                if kind == "contentBlockDelta":
                    delta = event["delta"]
                    if "text" in delta:
                        yield delta["text"]
                    elif "toolUse" in delta:
                        calls[-1]["input"] += delta["toolUse"]["input"]
                elif kind == "contentBlockStart":
                    calls.append({**event["start"]["toolUse"], "input": ""})
                elif kind.endswith("Exception"):
                    raise BenchError(f"exception event: {event}")


def httpx_async_session(url: str, chunks: int) -> tuple[Session, Callable[[], None]]:
    loop = asyncio.new_event_loop()
    log = _ToolLog()
    get_weather = log.async_tool(0.0)
    client = httpx.AsyncClient(base_url=url, headers=mock_headers(chunks), timeout=60)

    async def measure() -> dict[str, Any]:
        log.calls.clear()
        deltas: list[str] = []
        ttft = None
        t0, c0 = time.perf_counter(), time.process_time()
        messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": PROMPT}]}]
        while True:
            calls: list[dict[str, Any]] = []
            async for text in _stream(client, messages, calls):
                if ttft is None:
                    ttft = time.perf_counter() - t0
                deltas.append(text)
            if not calls:
                break
            arguments = [json.loads(c["input"]) for c in calls]
            results = await asyncio.gather(*(get_weather(**a) for a in arguments))
            uses = [
                {"toolUse": {"toolUseId": c["toolUseId"], "name": c["name"], "input": a}}
                for c, a in zip(calls, arguments, strict=True)
            ]
            answers = [
                {"toolResult": {"toolUseId": c["toolUseId"], "content": [{"text": r}]}}
                for c, r in zip(calls, results, strict=True)
            ]
            messages += [
                {"role": "assistant", "content": uses},
                {"role": "user", "content": answers},
            ]
        result = _result(t0, c0, ttft, len(deltas), 0.0)
        check_answer("".join(deltas), chunks)
        result["tool_span_s"] = log.span(2)
        return result

    def close() -> None:
        loop.run_until_complete(client.aclose())
        loop.close()

    return (lambda: loop.run_until_complete(measure())), close


def sdk_session(url: str, chunks: int) -> tuple[Session, Callable[[], None]]:
    import boto3

    log = _ToolLog()
    get_weather = log.sync_tool(0.0)
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )
    extra = mock_headers(chunks)

    def add_headers(request: Any, **_: Any) -> None:
        for name, value in extra.items():
            request.headers[name] = value

    client.meta.events.register("before-sign.bedrock-runtime.ConverseStream", add_headers)

    def session() -> dict[str, Any]:
        log.calls.clear()
        deltas: list[str] = []
        ttft = None
        t0, c0 = time.perf_counter(), time.process_time()
        messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": PROMPT}]}]
        while True:
            calls: list[dict[str, Any]] = []
            response = client.converse_stream(
                modelId=MODEL, messages=messages, toolConfig={"tools": [TOOL]}
            )
            for event in response["stream"]:
                if "contentBlockDelta" in event:
                    delta = event["contentBlockDelta"]["delta"]
                    if "text" in delta:
                        if ttft is None:
                            ttft = time.perf_counter() - t0
                        deltas.append(delta["text"])
                    elif "toolUse" in delta:
                        calls[-1]["input"] += delta["toolUse"]["input"]
                elif "contentBlockStart" in event:
                    calls.append({**event["contentBlockStart"]["start"]["toolUse"], "input": ""})
            if not calls:
                break
            arguments = [json.loads(c["input"]) for c in calls]
            results = [get_weather(**a) for a in arguments]
            uses = [
                {"toolUse": {"toolUseId": c["toolUseId"], "name": c["name"], "input": a}}
                for c, a in zip(calls, arguments, strict=True)
            ]
            answers = [
                {"toolResult": {"toolUseId": c["toolUseId"], "content": [{"text": r}]}}
                for c, r in zip(calls, results, strict=True)
            ]
            messages += [
                {"role": "assistant", "content": uses},
                {"role": "user", "content": answers},
            ]
        result = _result(t0, c0, ttft, len(deltas), 0.0)
        check_answer("".join(deltas), chunks)
        result["tool_span_s"] = log.span(2)
        return result

    return session, client.close


def make_session(stack: str, url: str, chunks: int) -> tuple[Session, Callable[[], None]]:
    """``(session, close)`` for one of the module's stacks."""
    if stack in ("rxreact", "rxreact_loop"):
        return rxreact_session(url, chunks, "loop" if stack == "rxreact_loop" else "thread")
    if stack == "httpx_async":
        return httpx_async_session(url, chunks)
    if stack == "boto3":
        return sdk_session(url, chunks)
    raise ValueError(f"unknown stack {stack!r}")
