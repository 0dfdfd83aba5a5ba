"""Where rxreact's per-chunk time goes: ``python -m benchmarks.profile [--sessions N]``.

Two views of workload 1, against the loopback mock:

- **stages**, no profiler: the answer stream (2,000 chunks) read by ever more of the stack,
  process CPU per chunk at each step (median of ``--sessions`` runs); the difference between
  two lines is what the added layer costs, with nothing distorting it;
- **cProfile in every thread** (installed with ``threading.setprofile`` before any thread
  starts, merged at the end) over whole conversations, top functions by own time. A
  deterministic profiler inflates cheap, frequent calls, so read its shares, not its times.

``--fixed`` profiles 10-chunk conversations instead (the fixed cost of workload 2).
``--pyinstrument`` renders the consumer side with pyinstrument instead (the profiler samples
only the thread it runs on, so the agent's delivery is driven on that thread there).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from benchmarks._harness import MODEL, mock_headers, mock_server


def _answer_request() -> Any:
    from rxreact.messages import AssistantMessage, ChatRequest, ToolCall, ToolMessage, UserMessage

    call = ToolCall(id="call_0", name="get_weather", arguments='{"city":"Beijing"}')
    return ChatRequest(
        messages=(
            UserMessage(content="q"),
            AssistantMessage(content=None, tool_calls=(call,)),
            ToolMessage(tool_call_id="call_0", content="sunny"),
        )
    )


def stages(url: str, chunks: int, sessions: int) -> list[tuple[str, float]]:
    """Per-chunk CPU of the answer stream read by more and more of the stack."""
    from rxreact import ReactAgent, tool
    from rxreact.agent.round import RoundState
    from rxreact.events import TextDelta
    from rxreact.model.http.sse import SSEDecoder
    from rxreact.model.openai.client import OpenAIChatModel
    from rxreact.model.openai.wire import DONE, parse_chunk
    from rxreact.operators import deliver_on, finish_round, process_chunk
    from rxreact.scheduling import ElasticScheduler

    headers = mock_headers(chunks)
    body = json.dumps(
        {
            "model": MODEL,
            "stream": True,
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "tool", "tool_call_id": "call_0", "content": "x"},
            ],
        }
    ).encode()
    client = httpx.Client(headers={"content-type": "application/json", **headers})
    model = OpenAIChatModel(MODEL, base_url=url, api_key="sk-x", headers=headers)
    request = _answer_request()
    pool = ElasticScheduler(8, name="profile")

    def raw() -> None:
        with client.stream("POST", f"{url}/chat/completions", content=body) as r:
            for _ in r.iter_raw():
                pass

    def sse_parse() -> None:
        with client.stream("POST", f"{url}/chat/completions", content=body) as r:
            decoder = SSEDecoder()
            for piece in r.iter_raw():
                for event in decoder.feed(piece):
                    if event.data != DONE:
                        parse_chunk(event.data, event.event)

    def fast_sse_parse() -> None:
        from rxreact.model.http._chunked import chunked_body

        with client.stream("POST", f"{url}/chat/completions", content=body) as r:
            decoder = SSEDecoder()
            pieces = chunked_body(r, 60.0)
            assert pieces is not None, "the chunked fast path does not apply"
            for piece in pieces:
                for event in decoder.feed(piece):
                    if event.data != DONE:
                        parse_chunk(event.data, event.event)

    def observed(build: Callable[[Any], Any]) -> Callable[[], None]:
        def once() -> None:
            done = threading.Event()
            build(model.stream(request)).subscribe(lambda _: None, lambda e: done.set(), done.set)
            done.wait(60)

        return once

    def with_round(source: Any) -> Any:
        state = RoundState(2)
        return source.pipe(deliver_on(pool), process_chunk(state), finish_round(state))

    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return "sunny"

    # Private pools: the default shared ones must start their threads under the profiler.
    tools_pool = ElasticScheduler(16, name="profile-tools")
    agent = ReactAgent(model, [tool(get_weather)], scheduler=pool, tools_scheduler=tools_pool)

    def full() -> None:
        done = threading.Event()
        texts: list[str] = []

        def on_next(event: Any) -> None:
            if type(event) is TextDelta:
                texts.append(event.delta)

        agent.stream("q").subscribe(on_next, lambda e: done.set(), done.set)
        done.wait(60)

    steps: list[tuple[str, Callable[[], None]]] = [
        ("httpx iter_raw (answer request only)", raw),
        ("+ SSEDecoder.feed + parse_chunk", sse_parse),
        ("chunked_body (socket reads) + SSEDecoder + parse_chunk", fast_sse_parse),
        ("OpenAIChatModel.stream (reader thread, ModelCall)", observed(lambda s: s)),
        ("+ deliver_on(pool)", observed(lambda s: s.pipe(deliver_on(pool)))),
        ("+ process_chunk + finish_round (events)", observed(with_round)),
        ("ReactAgent.stream: both rounds, whole loop", full),
    ]
    out = []
    for name, step in steps:
        step()  # warm-up
        runs = []
        for _ in range(sessions):
            c0 = time.process_time()
            step()
            runs.append(time.process_time() - c0)
        out.append((name, statistics.median(runs) / chunks * 1e6))
    model.close()
    client.close()
    pool.shutdown()
    tools_pool.shutdown()
    return out


def profile_all_threads(url: str, chunks: int, sessions: int, top: int) -> None:
    """cProfile every thread during ``sessions`` whole conversations; print the top functions."""
    profiles: list[cProfile.Profile] = []
    lock = threading.Lock()

    def start_in_thread(*_: Any) -> None:
        profile = cProfile.Profile()
        with lock:
            profiles.append(profile)
        profile.enable()

    from benchmarks._stacks import rxreact_session_factory

    session, close = rxreact_session_factory(url, chunks)
    threading.setprofile(start_in_thread)  # before the first session starts any thread
    main = cProfile.Profile()
    profiles.append(main)
    main.enable()
    for _ in range(sessions):
        session()
    main.disable()
    threading.setprofile(None)  # type: ignore[arg-type]
    for profile in profiles:
        profile.disable()
    close()
    stats = pstats.Stats(profiles[0])
    for profile in profiles[1:]:
        stats.add(profile)
    stats.strip_dirs().sort_stats("tottime").print_stats(top)


def pyinstrument_consumer(url: str, chunks: int, sessions: int) -> None:
    """pyinstrument over the model stream with the agent's round operators on one thread."""
    from pyinstrument import Profiler
    from reactivex.scheduler import CurrentThreadScheduler

    from rxreact.agent.round import RoundState
    from rxreact.model.openai.client import OpenAIChatModel
    from rxreact.operators import deliver_on, finish_round, process_chunk

    model = OpenAIChatModel(MODEL, base_url=url, api_key="sk-x", headers=mock_headers(chunks))
    request = _answer_request()
    here = CurrentThreadScheduler()
    profiler = Profiler(interval=0.0002)
    profiler.start()
    for _ in range(sessions):
        finished = threading.Event()
        state = RoundState(2)
        events = model.stream(request).pipe(
            deliver_on(here, None), process_chunk(state), finish_round(state)
        )
        events.subscribe(lambda _: None, lambda _: finished.set(), finished.set)  # noqa: B023
        finished.wait(60)
    profiler.stop()
    print(profiler.output_text(unicode=False, color=False, show_all=False))
    model.close()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile", description=__doc__)
    parser.add_argument("--sessions", type=int, default=15)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--fixed", action="store_true", help="10-chunk conversations")
    parser.add_argument("--pyinstrument", action="store_true")
    args = parser.parse_args()
    chunks = 10 if args.fixed else 2000
    with mock_server() as url:
        if args.pyinstrument:
            pyinstrument_consumer(url, chunks, args.sessions)
            return
        # The stages first: cProfile cannot be switched off in other threads afterwards.
        if not args.fixed:
            print(f"{'stage':58s} cpu us/chunk")
            for name, cost in stages(url, chunks, args.sessions):
                print(f"{name:58s} {cost:8.2f}")
            print()
        profile_all_threads(url, chunks, args.sessions, args.top)


if __name__ == "__main__":
    main()
