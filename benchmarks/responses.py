"""The Responses adapter: CPU per streamed chunk and fixed cost per run, against the floor.

The bench conversation (user -> two parallel ``get_weather`` calls -> an answer of N one-word
text deltas) in the Responses wire format (:mod:`benchmarks._responses_mock`), through:

- ``OpenAIResponsesModel.stream`` driven by hand (the adapter alone), in each I/O mode;
- ``ReactAgent`` on ``OpenAIResponsesModel`` (the full loop, default I/O mode);
- the floor: a hand-written async httpx reader of the Responses SSE (``aiter_lines``,
  ``json.loads`` per event, a dispatch on ``type`` keeping call arguments and text);
- the ``openai`` SDK's own helper, ``client.responses.stream(...)`` (the ``bench`` extra),
  when it is installed.

Each stack runs in its own process (one warm-up session, then ``sessions``), round-robin
``repeats`` times; a row is the median. ``us/chunk`` is the marginal CPU per text delta,
(cpu at N=2000 - cpu at N=10) / 1990; ``fixed`` is the CPU of the N=10 conversation; ``ttft``
the time from the session's start to its first answer delta at N=10. Targets: per chunk at
most 0.7x the floor, fixed cost at most 1.25x, first token within 2 ms.

Usage: ``python -m benchmarks.responses [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from benchmarks._harness import MODEL, PROMPT, Table, emit, mock_server, run_child

STACKS = ("adapter_loop", "adapter_thread", "agent", "floor", "sdk")
LABELS = {
    "adapter_loop": 'OpenAIResponsesModel.stream, io="loop"',
    "adapter_thread": 'OpenAIResponsesModel.stream, io="thread"',
    "agent": "ReactAgent on OpenAIResponsesModel (full loop)",
    "floor": "httpx async, aiter_lines + json.loads (floor)",
    "sdk": "openai SDK, client.responses.stream",
}
TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": False,
}


def weather(arguments: str) -> str:
    return f"{json.loads(arguments)['city']}: sunny"


# -- the stacks (each gives a session function, () -> ttft seconds, and a close) --------------

Session = tuple[Callable[[], float], Callable[[], None]]


def _adapter(url: str, chunks: int, io: str) -> Session:
    from rxreact import OpenAIResponsesModel
    from rxreact.messages import AssistantMessage, ChatRequest, ToolMessage, ToolSpec, UserMessage
    from rxreact.model.assembly import ResponseAssembler

    model = OpenAIResponsesModel(MODEL, base_url=url, io=io, headers={"X-Mock-Chunks": str(chunks)})  # type: ignore[arg-type]
    spec = ToolSpec(
        name="get_weather", description=TOOL["description"], parameters=TOOL["parameters"]
    )

    def stream(request: ChatRequest, start: float) -> tuple[Any, float]:
        assembler, done, first = ResponseAssembler(), threading.Event(), [0.0]

        def on_next(chunk: Any) -> None:
            if chunk.text and not first[0]:
                first[0] = time.perf_counter() - start
            assembler.add(chunk)

        model.stream(request).subscribe(on_next, lambda e: done.set(), done.set)
        done.wait()
        return assembler.response(), first[0]

    def session() -> float:
        start = time.perf_counter()
        user = UserMessage(content=PROMPT)
        calls, _ = stream(ChatRequest(messages=(user,), tools=(spec,)), start)
        results = tuple(
            ToolMessage(tool_call_id=c.id, content=weather(c.arguments)) for c in calls.tool_calls
        )
        history = (user, AssistantMessage(tool_calls=calls.tool_calls), *results)
        answer, ttft = stream(ChatRequest(messages=history, tools=(spec,)), start)
        assert answer.content and answer.content.count(" ") == chunks
        return ttft

    return session, model.close


def _agent(url: str, chunks: int) -> Session:
    from rxreact import OpenAIResponsesModel, ReactAgent, tool

    @tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return f"{city}: sunny"

    model = OpenAIResponsesModel(MODEL, base_url=url, headers={"X-Mock-Chunks": str(chunks)})
    agent = ReactAgent(model, [get_weather])

    def session() -> float:
        start, ttft = time.perf_counter(), 0.0
        for event in agent.iter(PROMPT):
            if event.type == "text_delta" and not ttft:
                ttft = time.perf_counter() - start
        return ttft

    return session, model.close


def _floor(url: str, chunks: int) -> Session:
    import httpx

    loop = asyncio.new_event_loop()
    client = httpx.AsyncClient(headers={"X-Mock-Chunks": str(chunks)})

    async def read(body: dict[str, Any], start: float) -> tuple[dict[int, list[Any]], str, float]:
        calls: dict[int, list[Any]] = {}
        text: list[str] = []
        ttft = 0.0
        async with client.stream("POST", f"{url}/responses", json=body) as response:
            async for line in response.aiter_lines():
                if not line.startswith("data: "):
                    continue
                event = json.loads(line[6:])
                kind = event["type"]
                if kind == "response.output_text.delta":
                    if not ttft:
                        ttft = time.perf_counter() - start
                    text.append(event["delta"])
                elif kind == "response.function_call_arguments.delta":
                    calls[event["output_index"]][2].append(event["delta"])
                elif (
                    kind == "response.output_item.added"
                    and event["item"]["type"] == "function_call"
                ):
                    item = event["item"]
                    calls[event["output_index"]] = [item["call_id"], item["name"], []]
                elif kind in (
                    "response.completed",
                    "response.incomplete",
                    "response.failed",
                    "error",
                ):
                    break
        return calls, "".join(text), ttft

    async def session() -> float:
        start = time.perf_counter()
        items: list[Any] = [{"role": "user", "content": PROMPT}]
        body = {"model": MODEL, "input": items, "tools": [TOOL], "stream": True}
        calls, _, _ = await read(body, start)
        for call_id, name, parts in calls.values():
            arguments = "".join(parts)
            items.append(
                {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}
            )
            items.append(
                {"type": "function_call_output", "call_id": call_id, "output": weather(arguments)}
            )
        _, text, ttft = await read(body, start)
        assert text.count(" ") == chunks
        return ttft

    def close() -> None:
        loop.run_until_complete(client.aclose())
        loop.close()

    return lambda: loop.run_until_complete(session()), close


def _sdk(url: str, chunks: int) -> Session:
    import openai

    loop = asyncio.new_event_loop()
    client = openai.AsyncOpenAI(
        base_url=url, api_key="bench", default_headers={"X-Mock-Chunks": str(chunks)}
    )

    async def session() -> float:
        start, ttft = time.perf_counter(), 0.0
        items: list[Any] = [{"role": "user", "content": PROMPT}]
        async with client.responses.stream(model=MODEL, input=items, tools=[TOOL]) as stream:  # type: ignore[list-item]
            calls = [
                i for i in (await stream.get_final_response()).output if i.type == "function_call"
            ]
        for call in calls:
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.call_id,
                    "name": call.name,
                    "arguments": call.arguments,
                }
            )
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": weather(call.arguments),
                }
            )
        text: list[str] = []
        async with client.responses.stream(model=MODEL, input=items, tools=[TOOL]) as stream:  # type: ignore[list-item]
            async for event in stream:
                if event.type == "response.output_text.delta":
                    if not ttft:
                        ttft = time.perf_counter() - start
                    text.append(event.delta)
        assert "".join(text).count(" ") == chunks
        return ttft

    def close() -> None:
        loop.run_until_complete(client.close())
        loop.close()

    return lambda: loop.run_until_complete(session()), close


def make_session(stack: str, url: str, chunks: int) -> Session:
    """The session of ``stack`` on the mock at ``url`` (answers of ``chunks`` deltas)."""
    if stack.startswith("adapter_"):
        return _adapter(url, chunks, stack.removeprefix("adapter_"))
    return {"agent": _agent, "floor": _floor, "sdk": _sdk}[stack](url, chunks)


def child(stack: str, url: str, chunks: int, sessions: int) -> None:
    session, close = make_session(stack, url, chunks)
    session()  # warm-up: imports, pools, connections
    runs = []
    for _ in range(sessions):
        c0, t0 = time.process_time(), time.perf_counter()
        ttft = session()
        runs.append((time.process_time() - c0, time.perf_counter() - t0, ttft))
    close()
    cpu, wall, ttft = (statistics.median(r[i] for r in runs) for i in range(3))
    emit({"cpu_s": cpu, "wall_s": wall, "ttft_s": ttft})


# -- the parent ---------------------------------------------------------------------------------


def responses_mock() -> contextlib.AbstractContextManager[str]:
    """Start :mod:`benchmarks._responses_mock` in a child process; yield its ``/v1`` URL."""
    return mock_server("benchmarks._responses_mock")


def available(stack: str) -> bool:
    if stack != "sdk":
        return True
    try:
        import openai  # noqa: F401
    except ImportError:
        return False
    return True


def run(quick: bool) -> Table:
    sessions, repeats, big = (5, 1, 2000) if quick else (20, 3, 2000)
    stacks = [s for s in STACKS if available(s)]
    results: dict[str, dict[int, list[dict[str, Any]]]] = {s: {10: [], big: []} for s in stacks}
    with responses_mock() as url:
        for _ in range(repeats):
            for stack in stacks:
                for n in (10, big):
                    results[stack][n].append(
                        run_child("responses", [stack, url, str(n), str(sessions)])
                    )
    med = {
        s: {n: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for n, rs in by_n.items()}
        for s, by_n in results.items()
    }
    floor = med["floor"]
    table = Table(
        f"Responses adapter (N={big} and 10; {sessions} sessions x {repeats} repeats)",
        ["stack", "us/chunk", "x floor", "fixed cpu ms", "x floor", "ttft ms", "ttft - floor ms"],
    )

    def per_chunk(m: dict[int, dict[str, float]]) -> float:
        return (m[big]["cpu_s"] - m[10]["cpu_s"]) / (big - 10) * 1e6

    for stack in stacks:
        m = med[stack]
        table.add(
            LABELS[stack],
            per_chunk(m),
            f"{per_chunk(m) / per_chunk(floor):.2f}",
            m[10]["cpu_s"] * 1e3,
            f"{m[10]['cpu_s'] / floor[10]['cpu_s']:.2f}",
            m[10]["ttft_s"] * 1e3,
            f"{(m[10]['ttft_s'] - floor[10]['ttft_s']) * 1e3:+.2f}",
        )
    table.notes.append(
        "process CPU time (all threads) per conversation; the mock is another process"
    )
    table.data = {"sessions": sessions, "repeats": repeats, "stacks": med}
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", nargs=4, metavar=("STACK", "URL", "CHUNKS", "SESSIONS"))
    args = parser.parse_args()
    if args.child:
        stack, url, chunks, sessions = args.child
        child(stack, url, int(chunks), int(sessions))
        return
    print(run(args.quick).render())


if __name__ == "__main__":
    main()
