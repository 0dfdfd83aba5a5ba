"""The stacks of :mod:`benchmarks.gemini_adapter`, each running the bench conversation in
Gemini's native format one session at a time (see that module for what each is)."""

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

DECLARATION = {
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "parameters": {
        "type": "OBJECT",
        "properties": {"city": {"type": "STRING"}},
        "required": ["city"],
    },
}
STREAM_PATH = f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"


def rxreact_session(url: str, chunks: int, io: str) -> tuple[Session, Callable[[], None]]:
    from rxreact import GeminiModel

    model = GeminiModel(
        MODEL,
        base_url=url,
        api_key="k-x",
        headers=mock_headers(chunks),
        io=io,  # type: ignore[arg-type]
    )
    return agent_session(model, chunks)


async def _stream(
    client: httpx.AsyncClient, contents: list[dict[str, Any]], parts: list[dict[str, Any]]
) -> AsyncIterator[str]:
    """One streamed response: yield its text, collect the model's other parts into ``parts``."""
    body = {"contents": contents, "tools": [{"functionDeclarations": [DECLARATION]}]}
    async with client.stream("POST", STREAM_PATH, json=body) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            if "error" in event:
                raise BenchError(f"error event: {event}")
            candidate = event["candidates"][0]
            for part in candidate.get("content", {}).get("parts", ()):
                if "functionCall" in part:
                    parts.append(part)
                elif part.get("text"):
                    yield part["text"]
            if candidate.get("finishReason"):
                break


def _tool_turn(calls: list[dict[str, Any]], results: list[str]) -> list[dict[str, Any]]:
    answers = [
        {"functionResponse": {"name": c["functionCall"]["name"], "response": {"result": r}}}
        for c, r in zip(calls, results, strict=True)
    ]
    return [{"role": "model", "parts": calls}, {"role": "user", "parts": answers}]


def httpx_async_session(url: str, chunks: int) -> tuple[Session, Callable[[], None]]:
    loop = asyncio.new_event_loop()
    log = _ToolLog()
    get_weather = log.async_tool(0.0)
    headers = {"x-goog-api-key": "k-x", **mock_headers(chunks)}
    client = httpx.AsyncClient(base_url=url, headers=headers, timeout=60)

    async def measure() -> dict[str, Any]:
        log.calls.clear()
        deltas: list[str] = []
        ttft = None
        t0, c0 = time.perf_counter(), time.process_time()
        contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": PROMPT}]}]
        while True:
            calls: list[dict[str, Any]] = []
            async for text in _stream(client, contents, calls):
                if ttft is None:
                    ttft = time.perf_counter() - t0
                deltas.append(text)
            if not calls:
                break
            results = await asyncio.gather(
                *(get_weather(**c["functionCall"]["args"]) for c in calls)
            )
            contents += _tool_turn(calls, list(results))
        result = _result(t0, c0, ttft, len(deltas), 0.0)
        check_answer("".join(deltas), chunks)
        result["tool_span_s"] = log.span(2)
        return result

    def close() -> None:
        loop.run_until_complete(client.aclose())
        loop.close()

    return (lambda: loop.run_until_complete(measure())), close


def sdk_session(url: str, chunks: int) -> tuple[Session, Callable[[], None]]:
    from google import genai
    from google.genai import types

    loop = asyncio.new_event_loop()
    log = _ToolLog()
    get_weather = log.async_tool(0.0)
    client = genai.Client(
        api_key="k-x",
        http_options=types.HttpOptions(base_url=url, headers=mock_headers(chunks)),
    )
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[types.FunctionDeclaration(**DECLARATION)])],  # type: ignore[arg-type]
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )

    async def measure() -> dict[str, Any]:
        log.calls.clear()
        deltas: list[str] = []
        ttft = None
        t0, c0 = time.perf_counter(), time.process_time()
        contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=PROMPT)])]
        while True:
            calls: list[Any] = []
            stream = await client.aio.models.generate_content_stream(
                model=MODEL, contents=contents, config=config
            )
            async for response in stream:
                for part in response.candidates[0].content.parts or ():  # type: ignore[index, union-attr]
                    if part.function_call is not None:
                        calls.append(part)
                    elif part.text:
                        if ttft is None:
                            ttft = time.perf_counter() - t0
                        deltas.append(part.text)
            if not calls:
                break
            results = await asyncio.gather(*(get_weather(**p.function_call.args) for p in calls))
            answers = [
                types.Part.from_function_response(name=p.function_call.name, response={"result": r})
                for p, r in zip(calls, results, strict=True)
            ]
            contents += [
                types.Content(role="model", parts=calls),
                types.Content(role="user", parts=answers),
            ]
        result = _result(t0, c0, ttft, len(deltas), 0.0)
        check_answer("".join(deltas), chunks)
        result["tool_span_s"] = log.span(2)
        return result

    def close() -> None:
        loop.run_until_complete(client.aio.aclose())
        loop.close()

    return (lambda: loop.run_until_complete(measure())), close


def make_session(stack: str, url: str, chunks: int) -> tuple[Session, Callable[[], None]]:
    """``(session, close)`` for one of the module's stacks."""
    if stack in ("rxreact", "rxreact_loop"):
        return rxreact_session(url, chunks, "loop" if stack == "rxreact_loop" else "thread")
    if stack == "httpx_async":
        return httpx_async_session(url, chunks)
    if stack == "google_genai":
        return sdk_session(url, chunks)
    raise ValueError(f"unknown stack {stack!r}")
