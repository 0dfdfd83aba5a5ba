"""The stacks under test, each running the bench conversation one session at a time.

- ``rxreact``: :class:`~rxreact.ReactAgent` over
  :class:`~rxreact.model.openai.client.OpenAIChatModel`, the full agent loop; the subscriber
  gets every event on the agent's threads and keeps every text delta. The model reads in its
  default I/O mode (loop mode; ``RXREACT_IO=thread`` picks a thread per request).
- ``rxreact_loop``: the same with ``OpenAIChatModel(io="loop")`` (every stream read on the
  shared asyncio loop).
- ``httpx_async``: the floor, the peer harness's ``raw_httpx`` (``peers/raw_httpx.py`` and
  ``peers/_common.py``, copied, not imported): ``httpx.AsyncClient.stream`` + ``aiter_lines``
  + ``json.loads`` per chunk + dict assembly of tool calls + ``asyncio.gather`` of the tools.
- ``httpx_sync_lines``: the same by hand on a sync ``httpx.Client`` (``iter_lines``).
- ``httpx_sync_read``: a sync ``httpx.Client`` reading both responses with ``iter_raw`` and
  parsing nothing: the floor of any httpx client (its answer is not checked: it has none).

A session returns ``wall_s``, ``cpu_s`` (process time, all threads), ``ttft_s`` (start to the
first non-empty answer delta), ``tool_span_s`` (first tool start to last tool end), ``deltas``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx

from benchmarks._harness import MODEL, PROMPT, TOOLS, BenchError, check_answer, mock_headers
from benchmarks._mock_server import city

STACKS = ("rxreact", "rxreact_loop", "httpx_async", "httpx_sync_lines", "httpx_sync_read")

Session = Callable[[], dict[str, Any]]


class _ToolLog:
    """(city, start, end) of each ``get_weather`` call of the current session."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, float, float]] = []

    def async_tool(self, sleep_s: float) -> Callable[[str], Awaitable[str]]:
        """The bench's ``get_weather`` as a coroutine function that logs its calls here."""

        async def get_weather(city: str) -> str:
            """Get the current weather for a city."""
            start = time.perf_counter()
            if sleep_s:
                await asyncio.sleep(sleep_s)
            self.calls.append((city, start, time.perf_counter()))
            return f"The weather in {city} is sunny, 25 C."

        return get_weather

    def sync_tool(self, sleep_s: float) -> Callable[[str], str]:
        """The bench's ``get_weather`` as a plain function that logs its calls here."""

        def get_weather(city: str) -> str:
            """Get the current weather for a city."""
            start = time.perf_counter()
            if sleep_s:
                time.sleep(sleep_s)
            self.calls.append((city, start, time.perf_counter()))
            return f"The weather in {city} is sunny, 25 C."

        return get_weather

    def span(self, expected: int) -> float:
        if len(self.calls) != expected:
            raise BenchError(f"{len(self.calls)} tool calls ran, expected {expected}")
        return max(e for *_, e in self.calls) - min(s for _, s, _ in self.calls)


def _result(t0: float, c0: float, ttft: float | None, deltas: int, span: float) -> dict[str, Any]:
    return {
        "wall_s": time.perf_counter() - t0,
        "cpu_s": time.process_time() - c0,
        "ttft_s": ttft if ttft is not None else float("nan"),
        "tool_span_s": span,
        "deltas": deltas,
    }


def rxreact_session_factory(
    url: str,
    chunks: int,
    *,
    tool_calls: int = 2,
    tool_sleep_s: float = 0.0,
    async_tool: bool = False,
    timeout_s: float = 120.0,
    io: str | None = None,
    tracer_provider: Any = None,
) -> tuple[Session, Callable[[], None]]:
    """A session of the full rxreact agent loop (sync tool on the tools pool, or async);
    returns ``(session, close)``."""
    from rxreact import ReactAgent, tool
    from rxreact.events import TextDelta
    from rxreact.model.openai.client import OpenAIChatModel

    log = _ToolLog()

    get_weather = log.async_tool(tool_sleep_s) if async_tool else log.sync_tool(tool_sleep_s)

    model = OpenAIChatModel(
        MODEL, base_url=url, api_key="sk-x", headers=mock_headers(chunks, tool_calls), io=io
    )
    agent = ReactAgent(model, [tool(get_weather)], tracer_provider=tracer_provider)

    def session() -> dict[str, Any]:
        log.calls.clear()
        deltas: list[str] = []
        first: list[float] = []
        failure: list[Exception] = []
        done = threading.Event()

        def on_next(event: Any) -> None:
            if type(event) is TextDelta and event.delta:
                if not first:
                    first.append(time.perf_counter())
                deltas.append(event.delta)

        def on_error(error: Exception) -> None:
            failure.append(error)
            done.set()

        t0, c0 = time.perf_counter(), time.process_time()
        subscription = agent.stream(PROMPT).subscribe(on_next, on_error, done.set)
        finished = done.wait(timeout_s)
        result = _result(t0, c0, first[0] - t0 if first else None, len(deltas), 0.0)
        subscription.dispose()
        if not finished:
            raise BenchError(f"rxreact session did not finish in {timeout_s} s")
        if failure:
            raise BenchError(f"rxreact session failed: {failure[0]!r}")
        check_answer("".join(deltas), chunks)
        result["tool_span_s"] = log.span(tool_calls)
        return result

    return session, model.close


def _body(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": MODEL,
        "messages": messages,
        "tools": TOOLS,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def _assistant(calls: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for c in calls
        ],
    }


async def async_chat(
    client: httpx.AsyncClient, messages: list[dict[str, Any]], calls: dict[int, dict[str, str]]
) -> AsyncIterator[str]:
    """Stream one completion: yield text deltas, collect tool calls into ``calls`` by index."""
    async with client.stream("POST", "/chat/completions", json=_body(messages)) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                break
            for choice in json.loads(line[6:])["choices"]:
                delta = choice["delta"]
                if delta.get("content"):
                    yield delta["content"]
                for tc in delta.get("tool_calls") or ():
                    call = calls.setdefault(tc["index"], {"id": "", "name": "", "arguments": ""})
                    call["id"] = tc.get("id") or call["id"]
                    fn = tc.get("function") or {}
                    call["name"] += fn.get("name") or ""
                    call["arguments"] += fn.get("arguments") or ""


async def async_react(
    client: httpx.AsyncClient, prompt: str, get_weather: Callable[..., Awaitable[str]]
) -> AsyncIterator[str]:
    """The hand-written ReAct loop of the peer harness: yields every text delta."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    while True:
        found: dict[int, dict[str, str]] = {}
        async for text in async_chat(client, messages, found):
            yield text
        if not found:
            return
        calls = [found[i] for i in sorted(found)]
        messages.append(_assistant(calls))
        results = await asyncio.gather(*(get_weather(**json.loads(c["arguments"])) for c in calls))
        messages += [
            {"role": "tool", "tool_call_id": c["id"], "content": r}
            for c, r in zip(calls, results, strict=True)
        ]


def httpx_async_session_factory(
    url: str, chunks: int, *, tool_calls: int = 2, tool_sleep_s: float = 0.0
) -> tuple[Session, Callable[[], None]]:
    """The async floor; returns ``(session, close)``. Sessions run on one private event loop."""
    loop = asyncio.new_event_loop()
    log = _ToolLog()
    client = httpx.AsyncClient(
        base_url=url,
        headers={"Authorization": "Bearer sk-mock", **mock_headers(chunks, tool_calls)},
        timeout=60,
    )

    get_weather = log.async_tool(tool_sleep_s)

    async def measure() -> dict[str, Any]:
        log.calls.clear()
        deltas: list[str] = []
        ttft = None
        t0, c0 = time.perf_counter(), time.process_time()
        async for text in async_react(client, PROMPT, get_weather):
            if text:
                if ttft is None:
                    ttft = time.perf_counter() - t0
                deltas.append(text)
        result = _result(t0, c0, ttft, len(deltas), 0.0)
        check_answer("".join(deltas), chunks)
        result["tool_span_s"] = log.span(tool_calls)
        return result

    def close() -> None:
        loop.run_until_complete(client.aclose())
        loop.close()

    return (lambda: loop.run_until_complete(measure())), close


def httpx_sync_session_factory(
    url: str, chunks: int, *, tool_calls: int = 2, parse: bool = True
) -> tuple[Session, Callable[[], None]]:
    """A sync ``httpx.Client`` session, hand-written (``parse``) or a bare ``iter_raw`` read;
    returns ``(session, close)``."""
    client = httpx.Client(
        base_url=url,
        headers={"Authorization": "Bearer sk-mock", **mock_headers(chunks, tool_calls)},
        timeout=60,
    )

    def read_only() -> dict[str, Any]:
        t0, c0 = time.perf_counter(), time.process_time()
        ttft = None
        calls = [
            {"id": f"call_{i}", "name": "get_weather", "arguments": json.dumps({"city": city(i)})}
            for i in range(tool_calls)
        ]
        tool_messages = [
            {"role": "tool", "tool_call_id": c["id"], "content": "sunny"} for c in calls
        ]
        user = {"role": "user", "content": PROMPT}
        for messages in ([user], [user, _assistant(calls), *tool_messages]):
            with client.stream("POST", "/chat/completions", json=_body(messages)) as r:
                for piece in r.iter_raw():
                    if ttft is None and len(messages) > 1 and piece:
                        ttft = time.perf_counter() - t0
        return _result(t0, c0, ttft, 0, 0.0)

    def hand_written() -> dict[str, Any]:
        t0, c0 = time.perf_counter(), time.process_time()
        ttft = None
        deltas: list[str] = []
        messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
        span = 0.0
        while True:
            found: dict[int, dict[str, str]] = {}
            with client.stream("POST", "/chat/completions", json=_body(messages)) as r:
                r.raise_for_status()
                for line in r.iter_lines():
                    if not line.startswith("data: "):
                        continue
                    if line == "data: [DONE]":
                        break
                    for choice in json.loads(line[6:])["choices"]:
                        delta = choice["delta"]
                        if delta.get("content"):
                            if ttft is None:
                                ttft = time.perf_counter() - t0
                            deltas.append(delta["content"])
                        for tc in delta.get("tool_calls") or ():
                            call = found.setdefault(
                                tc["index"], {"id": "", "name": "", "arguments": ""}
                            )
                            call["id"] = tc.get("id") or call["id"]
                            fn = tc.get("function") or {}
                            call["name"] += fn.get("name") or ""
                            call["arguments"] += fn.get("arguments") or ""
            if not found:
                break
            calls = [found[i] for i in sorted(found)]
            messages.append(_assistant(calls))
            start = time.perf_counter()
            for c in calls:
                weather = f"The weather in {json.loads(c['arguments'])['city']} is sunny, 25 C."
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": weather})
            span = time.perf_counter() - start
        result = _result(t0, c0, ttft, len(deltas), span)
        check_answer("".join(deltas), chunks)
        return result

    return (hand_written if parse else read_only), client.close


def make_session(
    stack: str, url: str, chunks: int, **options: Any
) -> tuple[Session, Callable[[], None]]:
    """``(session, close)`` for one of :data:`STACKS`, or ``rxreact_otel`` (the ``rxreact``
    stack with OpenTelemetry spans recorded by the SDK, for :mod:`benchmarks.tracing_cost`)."""
    if stack == "rxreact":
        return rxreact_session_factory(url, chunks, **options)
    if stack == "rxreact_loop":
        return rxreact_session_factory(url, chunks, io="loop", **options)
    if stack == "rxreact_otel":
        return rxreact_session_factory(url, chunks, tracer_provider=_span_sink(), **options)
    if stack == "httpx_async":
        options.pop("async_tool", None)
        return httpx_async_session_factory(url, chunks, **options)
    if stack in ("httpx_sync_lines", "httpx_sync_read"):
        tool_calls = options.get("tool_calls", 2)
        parse = stack == "httpx_sync_lines"
        return httpx_sync_session_factory(url, chunks, tool_calls=tool_calls, parse=parse)
    raise BenchError(f"unknown stack {stack!r}")


def _span_sink() -> Any:
    """An SDK tracer provider that keeps the last session's spans in memory."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    class _Bounded(InMemorySpanExporter):
        def export(self, spans: Any) -> Any:
            if len(self.get_finished_spans()) > 1000:
                self.clear()
            return super().export(spans)

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Bounded()))
    return provider
