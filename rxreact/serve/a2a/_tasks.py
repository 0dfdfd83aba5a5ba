"""What an A2A task keeps beside its run: the message that asked it, its history cut to what a
client asked for, and a refusal at start (a busy context) told apart from a task that failed."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import OrderedDict
from typing import Any

from a2a.types.a2a_pb2 import Message, Task
from reactivex import operators as ops

from rxreact.errors import ConversationBusyError
from rxreact.runs import AgentRun

__all__ = ["AskedMessages", "busy_at_start", "with_history_length"]


class AskedMessages:
    """The user's message of each task this process started, by run id (the newest
    ``keep``): a task folded from its run's events gets its question back in its history.

    A run's events do not carry the question, so a task started by another worker is read
    without it (its history has the agent's messages only).
    """

    def __init__(self, keep: int = 1024) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._asked: OrderedDict[str, Message] = OrderedDict()

    def keep(self, run_id: str, message: Message) -> None:
        with self._lock:
            self._asked[run_id] = message
            while len(self._asked) > self._keep:
                self._asked.popitem(last=False)

    def get(self, run_id: str) -> Message | None:
        with self._lock:
            return self._asked.get(run_id)


def with_history_length(task: Task, params: Any) -> Task:
    """``task`` with at most ``params.history_length`` of its newest history messages, when the
    request sets it (the spec: a server must not return more; ``0``: none)."""
    if params.HasField("history_length"):
        length = max(0, params.history_length)
        del task.history[: max(0, len(task.history) - length)]
    return task


async def busy_at_start(run: AgentRun) -> ConversationBusyError | None:
    """The :class:`~rxreact.ConversationBusyError` ``run`` failed with before any event (its
    context has a run going and the agent rejects a second), else ``None`` once it began."""
    loop = asyncio.get_running_loop()
    outcome: asyncio.Future[BaseException | None] = loop.create_future()

    def settle(value: BaseException | None) -> None:
        def set_once() -> None:
            if not outcome.done():
                outcome.set_result(value)

        with contextlib.suppress(RuntimeError):  # a closed loop: the server is shutting down
            loop.call_soon_threadsafe(set_once)

    subscription = (
        run.events()
        .pipe(ops.take(1))
        .subscribe(lambda _: settle(None), settle, lambda: settle(None))
    )
    try:
        error = await outcome
    finally:
        subscription.dispose()
    return error if isinstance(error, ConversationBusyError) else None
