"""One bench session through rxreact's full agent loop, for the adapter benchmarks: a
:class:`~rxreact.ReactAgent` on the given model with the bench's ``get_weather``, every event
to a subscriber, the answer checked word by word."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from benchmarks._harness import PROMPT, BenchError, check_answer
from benchmarks._stacks import Session, _result, _ToolLog


def agent_session(model: Any, chunks: int) -> tuple[Session, Callable[[], None]]:
    """``(session, close)`` running the bench conversation on ``model`` (closed by ``close``)."""
    from rxreact import ReactAgent, tool
    from rxreact.events import TextDelta

    log = _ToolLog()
    agent = ReactAgent(model, [tool(log.sync_tool(0.0))])

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
        finished = done.wait(120)
        result = _result(t0, c0, first[0] - t0 if first else None, len(deltas), 0.0)
        subscription.dispose()
        if not finished or failure:
            raise BenchError(f"rxreact session failed: {failure[:1] or 'timeout'}")
        check_answer("".join(deltas), chunks)
        result["tool_span_s"] = log.span(2)
        return result

    return session, model.close
