"""The stacks of :mod:`benchmarks.anthropic_adapter`, each running the bench conversation in
Anthropic's Messages format one session at a time (see that module for what each is)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from benchmarks._agent_session import agent_session
from benchmarks._harness import MODEL, PROMPT, BenchError, check_answer, mock_headers
from benchmarks._stacks import Session, _result, _ToolLog

TOOLS = [
    {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
]
MAX_TOKENS = 4096


def rxreact_session(url: str, chunks: int, io: str) -> tuple[Session, Callable[[], None]]:
    from rxreact import AnthropicModel

    model = AnthropicModel(
        MODEL,
        base_url=url,
        api_key="sk-x",
        headers=mock_headers(chunks),
        io=io,  # type: ignore[arg-type]
    )
    return agent_session(model, chunks)


async def _messages(
    client: httpx.AsyncClient, messages: list[dict[str, Any]], calls: dict[int, dict[str, str]]
) -> AsyncIterator[str]:
    """One streamed message: yield text deltas, collect tool_use blocks into ``calls``."""
    body = {
        "model": MODEL,
        "max_tokens": MAX_TOKENS,
        "messages": messages,
        "tools": TOOLS,
        "stream": True,
    }
    async with client.stream("POST", "/v1/messages", json=body) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            kind = event["type"]
            if kind == "content_block_delta":
                delta = event["delta"]
                if delta["type"] == "text_delta":
                    yield delta["text"]
                elif delta["type"] == "input_json_delta":
                    calls[event["index"]]["arguments"] += delta["partial_json"]
            elif kind == "content_block_start":
                block = event["content_block"]
                if block["type"] == "tool_use":
                    calls[event["index"]] = {
                        "id": block["id"],
                        "name": block["name"],
                        "arguments": "",
                    }
            elif kind == "message_stop":
                break
            elif kind == "error":
                raise BenchError(f"error event: {event}")


def _tool_turn(calls: list[dict[str, Any]], results: list[str]) -> list[dict[str, Any]]:
    uses = [
        {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["input"]} for c in calls
    ]
    answers = [
        {"type": "tool_result", "tool_use_id": c["id"], "content": r}
        for c, r in zip(calls, results, strict=True)
    ]
    return [{"role": "assistant", "content": uses}, {"role": "user", "content": answers}]


def httpx_async_session(url: str, chunks: int) -> tuple[Session, Callable[[], None]]:
    loop = asyncio.new_event_loop()
    log = _ToolLog()
    get_weather = log.async_tool(0.0)
    headers = {"x-api-key": "sk-x", "anthropic-version": "2023-06-01", **mock_headers(chunks)}
    client = httpx.AsyncClient(base_url=url, headers=headers, timeout=60)

    async def measure() -> dict[str, Any]:
        log.calls.clear()
        deltas: list[str] = []
        ttft = None
        t0, c0 = time.perf_counter(), time.process_time()
        messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
        while True:
            found: dict[int, dict[str, str]] = {}
            async for text in _messages(client, messages, found):
                if text:
                    if ttft is None:
                        ttft = time.perf_counter() - t0
                    deltas.append(text)
            if not found:
                break
            calls = [
                {**found[i], "input": json.loads(found[i]["arguments"] or "{}")}
                for i in sorted(found)
            ]
            results = await asyncio.gather(*(get_weather(**c["input"]) for c in calls))
            messages += _tool_turn(calls, list(results))
        result = _result(t0, c0, ttft, len(deltas), 0.0)
        check_answer("".join(deltas), chunks)
        result["tool_span_s"] = log.span(2)
        return result

    def close() -> None:
        loop.run_until_complete(client.aclose())
        loop.close()

    return (lambda: loop.run_until_complete(measure())), close


def sdk_session(url: str, chunks: int) -> tuple[Session, Callable[[], None]]:
    import anthropic

    loop = asyncio.new_event_loop()
    log = _ToolLog()
    get_weather = log.async_tool(0.0)
    client = anthropic.AsyncAnthropic(
        base_url=url, api_key="sk-x", default_headers=mock_headers(chunks), max_retries=0
    )

    async def measure() -> dict[str, Any]:
        log.calls.clear()
        deltas: list[str] = []
        ttft = None
        t0, c0 = time.perf_counter(), time.process_time()
        messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
        while True:
            async with client.messages.stream(
                model=MODEL,
                max_tokens=MAX_TOKENS,
                messages=messages,
                tools=TOOLS,  # type: ignore[arg-type]
            ) as stream:
                async for event in stream:
                    if event.type == "text" and event.text:
                        if ttft is None:
                            ttft = time.perf_counter() - t0
                        deltas.append(event.text)
                message = await stream.get_final_message()
            calls = [
                {"id": b.id, "name": b.name, "input": b.input}
                for b in message.content
                if b.type == "tool_use"
            ]
            if not calls:
                break
            results = await asyncio.gather(*(get_weather(**c["input"]) for c in calls))
            messages += _tool_turn(calls, list(results))
        result = _result(t0, c0, ttft, len(deltas), 0.0)
        check_answer("".join(deltas), chunks)
        result["tool_span_s"] = log.span(2)
        return result

    def close() -> None:
        loop.run_until_complete(client.close())
        loop.close()

    return (lambda: loop.run_until_complete(measure())), close


def make_session(stack: str, url: str, chunks: int) -> tuple[Session, Callable[[], None]]:
    """``(session, close)`` for one of :data:`STACKS`."""
    if stack in ("rxreact", "rxreact_loop"):
        return rxreact_session(url, chunks, "loop" if stack == "rxreact_loop" else "thread")
    if stack == "httpx_async":
        return httpx_async_session(url, chunks)
    if stack == "anthropic_sdk":
        return sdk_session(url, chunks)
    raise ValueError(f"unknown stack {stack!r}")
